"""Notebook 07's overview: finished figures (PNG files) laid out near their own size, one title each.

Reads PNG files and draws them; nothing is recomputed. Left out: which files to show (the figure index,
:mod:`sdrlib.results`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from sdrlib.results import DPI, PlotError

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["plot_gallery"]


def plot_gallery(paths: Sequence[str | Path], titles: Sequence[str], *, ncols: int = 3,
                 row_px: int = 2600) -> "Figure":
    """Finished figures (PNG files) laid out near their own size, one title each: an overview of a run.

    Rows are filled in order with at most ``ncols`` figures whose widths (in pixels) add up to at most ``row_px``;
    a row wider than that is shrunk to fit, so a wide figure gets a row of its own and every figure is shown at
    no less than ``row_px`` / its own width of its size (text stays readable at the saved resolution).
    """
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt

    if len(paths) != len(titles):
        raise PlotError(f"plot_gallery: {len(paths)} paths but {len(titles)} titles")
    if not paths:
        raise PlotError("plot_gallery: no figures to show")
    imgs = []
    for p in paths:
        if not Path(p).is_file():
            raise PlotError(f"plot_gallery: {p} does not exist")
        imgs.append(mpimg.imread(str(p)))
    rows: list[list[int]] = [[]]
    for i, im in enumerate(imgs):
        cur = rows[-1]
        if cur and (len(cur) >= ncols or sum(imgs[j].shape[1] for j in cur) + im.shape[1] > row_px):
            rows.append([i])
        else:
            cur.append(i)
    title_px, pad = 60, 30
    layout, y = [], 0.0
    for row in rows:
        w = sum(imgs[j].shape[1] for j in row) + pad * (len(row) - 1)
        s = min(1.0, row_px / w)
        h = max(imgs[j].shape[0] for j in row) * s
        x = (row_px - w * s) / 2
        for j in row:
            layout.append((j, x, y + title_px, imgs[j].shape[1] * s, imgs[j].shape[0] * s))
            x += (imgs[j].shape[1] + pad) * s
        y += h + title_px + pad
    W, H = float(row_px), y
    fig = plt.figure(figsize=(W / DPI, H / DPI))
    for j, x0, y0, w, h in layout:
        ax = fig.add_axes((x0 / W, 1 - (y0 + h) / H, w / W, h / H))
        ax.imshow(imgs[j])
        ax.axis("off")
        ax.set_title(titles[j], fontsize=14)
    return fig
