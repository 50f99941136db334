"""Tables of numbers drawn as heatmaps, each cell printed with its value: one colour scale for the whole table
(sequential, or diverging about a centre) or one per column.

Notebook 02 draws its edit-reaction tables with :func:`plot_value_heatmap`; notebook 05's improvement heatmaps
(:func:`sdrlib.plots.plot_improvement_heatmap`) are built on it. Left out: computing the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sdrlib.results import PlotError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_value_heatmap", "plot_column_heatmap"]


def plot_value_heatmap(table: "pd.DataFrame", *, title: str = "", fmt: str = ".2f", scale: str = "shared",
                       cbar_label: str | None = None, center: float | None = None) -> "Figure":
    """A heatmap of a table of numbers, each cell printed with its value.

    ``scale="shared"`` (default): one colour scale for the whole table, from 0 (or the table's minimum when it is
    negative) to its maximum, so equal values have equal colours in every column. ``scale="column"``: colour =
    value / the column's largest absolute value, for tables whose columns have unrelated units (then 0.08 in one
    column can look like 0.47 in another: say so in the title). ``center`` (shared scale only): a diverging,
    colour-blind-safe map (``PuOr``) symmetric about this value, for signed tables such as % change over a baseline,
    so that the sign reads from the colour. The colour bar names the scale.
    """
    import matplotlib.pyplot as plt

    if scale not in ("shared", "column"):
        raise PlotError(f"plot_value_heatmap: scale must be 'shared' or 'column', got {scale!r}")
    V = table.to_numpy(dtype=np.float64)
    if V.size == 0:
        raise PlotError("plot_value_heatmap: the table is empty")
    if not np.isfinite(V).all():
        raise PlotError("plot_value_heatmap: the table holds NaN or inf")
    if scale == "column":
        top = np.abs(V).max(axis=0)
        S, lo, hi = V / np.where(top > 0, top, 1.0), 0.0, 1.0
        cbar_label = cbar_label or "share of the column's largest value"
    elif center is not None:
        half = float(np.abs(V - center).max()) or 1.0
        S, lo, hi = V, center - half, center + half
        cbar_label = cbar_label or f"value (one scale, centred at {center:g})"
    else:
        S, lo, hi = V, min(0.0, float(V.min())), float(V.max()) or 1.0
        cbar_label = cbar_label or "value (one scale for the whole table)"
    fig, ax = plt.subplots(figsize=(0.78 * V.shape[1] + 3.0, 0.5 * V.shape[0] + 1.9))
    diverging = center is not None and scale == "shared"
    im = ax.imshow(S, cmap="PuOr" if diverging else "viridis_r", vmin=lo, vmax=hi, aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(V.shape[1]), [str(c) for c in table.columns], rotation=50, ha="right")
    ax.set_yticks(range(V.shape[0]), [str(i) for i in table.index])
    for (i, j), v in np.ndenumerate(V):
        t = (S[i, j] - lo) / (hi - lo)
        dark = abs(t - 0.5) > 0.3 if diverging else t > 0.55  # white text on the dark ends of the map
        ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize=9, color="white" if dark else "black")
    fig.colorbar(im, ax=ax, fraction=0.025, pad=0.02, label=cbar_label)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_column_heatmap(table: "pd.DataFrame", *, title: str = "", fmt: str = ".2f",
                        cbar_label: str = "share of the column's largest value") -> "Figure":
    """:func:`plot_value_heatmap` with the colour scaled per column (value / column max): only for tables whose
    values are comparable within a column alone. Cells show the raw values."""
    return plot_value_heatmap(table, title=title, fmt=fmt, scale="column", cbar_label=cbar_label)
