"""Notebook 07's checks of the figures a run produced: their colours and what is there.

:func:`palette_share` measures, on a saved PNG, how much of its coloured area uses the Okabe-Ito palette
(:data:`OKABE_ITO`, the cycle of :func:`sdrlib.plots.style`): the claim "the figures use the Okabe-Ito palette"
is then a number per figure rather than a sentence. Greys, black and white carry no hue and are not counted;
heatmaps drawn with a sequential colour map (viridis, PuOr) score low by design, and the notebook says so.
:func:`palette_table` does it for several files; :func:`figure_conclusions` writes notebook 07's closing
sentences from ``results/figure_index.csv`` and the palette table read back from ``results/``.

Scope: RGB(A) PNG files as :func:`sdrlib.results.save_fig` writes them. Example:
``palette_share("figures/grpo_curves.png")`` -> ``{"coloured": 0.04, "okabe_ito": 0.93}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdrlib import table_names
from sdrlib.results import read_result_table

__all__ = ["OKABE_ITO", "palette_share", "palette_table", "figure_conclusions"]

#: Okabe-Ito colours (the same as :data:`sdrlib.plots.PALETTE`; plots sits above experiments, so copied here)
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")


def _rgb(hexes: Sequence[str]) -> np.ndarray:
    return np.array([[int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)] for h in hexes], float)


def palette_share(path: str | Path, *, min_chroma: float = 0.15, tol: float = 0.12) -> dict[str, float]:
    """Share of a PNG's pixels that are coloured (``coloured``: max - min of R, G, B >= ``min_chroma``, so white,
    greys and black are left out) and, among those, the share within ``tol`` (Euclidean, RGB in [0, 1]) of an
    Okabe-Ito colour (``okabe_ito``; NaN when nothing is coloured). Anti-aliased edges count as off-palette, so a
    line plot fully in the palette reads about 0.8-1, a viridis heatmap near 0."""
    import matplotlib.image as mpimg

    img = np.asarray(mpimg.imread(str(path)), float)
    if img.dtype.kind != "f" or img.max() > 1.0:  # 8-bit PNGs read as integers by some backends
        img = img / 255.0
    rgb = img[..., :3].reshape(-1, 3)
    if img.shape[-1] == 4:
        rgb = rgb[img[..., 3].reshape(-1) > 0.5]
    chroma = rgb.max(axis=1) - rgb.min(axis=1)
    col = rgb[chroma >= min_chroma]
    if not len(col):
        return {"coloured": 0.0, "okabe_ito": float("nan")}
    pal = _rgb(OKABE_ITO)
    d = np.sqrt(((col[:, None, :] - pal[None, :, :]) ** 2).sum(-1)).min(axis=1)
    return {"coloured": float(len(col) / len(rgb)), "okabe_ito": float((d <= tol).mean())}


def palette_table(paths: Sequence[str | Path], names: Sequence[str] | None = None) -> pd.DataFrame:
    """:func:`palette_share` of each file: columns ``file, coloured, okabe_ito``."""
    names = list(names) if names is not None else [str(p) for p in paths]
    return pd.DataFrame([{"file": n, **palette_share(p)} for n, p in zip(names, paths)])


def figure_conclusions(results_dir: str | Path, *, index: str = table_names.FIGURE_INDEX_TABLE,
                       palette: str = table_names.PALETTE, threshold: float = 0.5) -> list[str]:
    """Notebook 07's closing sentences from its result files: how many indexed figures and tables this run has
    and which are missing (with the notebook to run), files no index entry names, and per figure shown whether
    most of its coloured area (``okabe_ito >= threshold``) is in the Okabe-Ito palette. Missing files (or no results
    folder yet): []."""
    if not Path(results_dir).is_dir():
        return []
    t = read_result_table(results_dir, index)
    if t is None:
        return []
    n = lambda st, kind: int(((t.status == st) & (t.kind == kind)).sum())  # noqa: E731
    out = [f"- This run has {n('present', 'figure')} of {n('present', 'figure') + n('missing', 'figure')} indexed "
           f"figures and {n('present', 'table')} of {n('present', 'table') + n('missing', 'table')} indexed tables "
           f"(`results/{index}.csv`)."]
    miss = t[t.status == "missing"]
    for nb, d in miss.groupby("notebook", sort=False):
        out.append(f"- Missing, written by {nb}: {', '.join(d.file)}.")
    extra = t[t.status == "not in index"]
    if len(extra):
        out.append(f"- In the folders but in no index entry: {', '.join(extra.file)}.")
    p = read_result_table(results_dir, palette)
    if p is not None and len(p):
        ok = p[p.okabe_ito >= threshold]
        off = p[~(p.okabe_ito >= threshold)]
        out.append(f"- {len(ok)} of {len(p)} figures shown have at least {threshold:.0%} of their coloured pixels in the "
                   f"Okabe-Ito palette" + (f" ({', '.join(ok.file)})" if len(ok) else "")
                   + (f"; below that: {', '.join(f'{r.file} ({r.okabe_ito:.2f})' for r in off.itertuples())}"
                      if len(off) else "") + f" (`results/{palette}.csv`).")
    return out
