"""Layout helpers the figure modules share: point labels that avoid each other and the points, text wrapping,
and the check that a figure gets one embedding row per sentence.

Private to :mod:`sdrlib.plots`; nothing here draws a whole figure.
"""

from __future__ import annotations

import textwrap
from typing import Any, Sequence

import numpy as np

from sdrlib.results import PlotError


def _place_labels(ax: Any, xy: np.ndarray, tags: Sequence[str], colours: Sequence[str], *, fontsize: float = 10,
                  avoid: np.ndarray | None = None, gap: float = 6.0, **kw: Any) -> None:
    """Label the points ``xy`` with ``tags`` so that no two labels overlap each other or a labelled point.

    Greedy: each label tries eight positions around its point (right, up-right, up, ... in that order) and takes
    the first whose box (estimated from the font size) touches neither an earlier label's box nor any point of
    ``xy`` / ``avoid``; when every position touches something, the one with the least overlap. Works in points
    on the axes as they will be drawn (call after the limits and aspect are final).
    """
    ax.figure.canvas.draw()  # final limits / aspect (equal aspect, margins)
    to_pt = lambda P: ax.transData.transform(np.asarray(P, dtype=np.float64).reshape(-1, 2)) * 72.0 / ax.figure.dpi  # noqa: E731
    pts = to_pt(xy)
    obst = pts if avoid is None or not len(avoid) else np.vstack([pts, to_pt(avoid)])
    r_pt = 7.0  # a marker's half-size in points, with a margin
    dirs = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)]
    placed: list[tuple[float, float, float, float]] = []

    def overlap(b: tuple, c: tuple) -> float:
        w = min(b[2], c[2]) - max(b[0], c[0]); h = min(b[3], c[3]) - max(b[1], c[1])
        return max(w, 0.0) * max(h, 0.0)

    for (px, py), tag, col in zip(pts, tags, colours):
        w, h = 0.62 * fontsize * max(len(tag), 1), 1.0 * fontsize
        best = None
        for k, (dx, dy) in enumerate(dirs):
            x0 = px + (gap if dx > 0 else -gap - w if dx < 0 else -w / 2)
            y0 = py + (gap if dy > 0 else -gap - h if dy < 0 else -h / 2)
            box = (x0, y0, x0 + w, y0 + h)
            cost = sum(overlap(box, b) for b in placed)
            cost += sum(overlap(box, (ox - r_pt, oy - r_pt, ox + r_pt, oy + r_pt)) for ox, oy in obst)
            if best is None or cost < best[0] - 1e-9:
                best = (cost, box, dx, dy)
            if cost == 0:
                break
        _, box, dx, dy = best
        placed.append(box)
        off = (box[0] - px, box[1] - py)
        kw.setdefault("bbox", {"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.7})
        ax.annotate(tag, (xy[len(placed) - 1][0], xy[len(placed) - 1][1]), textcoords="offset points", xytext=off,
                    ha="left", va="bottom", fontsize=fontsize, color=col, **kw)


def _wrap(text: str, width: int) -> list[str]:
    """``text`` wrapped at ``width`` characters; an empty text is one empty line."""
    return textwrap.wrap(text, width) or [""]


def _check_rows(sentences: Sequence[str], E: Any, name: str) -> np.ndarray:
    """``E`` as a finite float array ``(len(sentences), d)``, one row per sentence; else :class:`PlotError`."""
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] != len(sentences):
        raise PlotError(f"{name}: {len(sentences)} sentences but embeddings of shape {E.shape}; "
                        f"pass one embedding row per sentence")
    if not np.isfinite(E).all():
        raise PlotError(f"{name}: embeddings contain NaN or inf")
    return E
