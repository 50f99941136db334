"""Notebook 05's figures: best-of-K selection in 2-D (paper Fig. 2b) and the tables of % improvement over a
random pick (Figs. 3-5) as diverging heatmaps.

Draws only; positions and the improvement table come from :mod:`sdrlib.selection`. Left out: the projection and
the statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sdrlib.plots._heatmap import plot_value_heatmap
from sdrlib.plots._layout import _place_labels
from sdrlib.plots._style import PALETTE
from sdrlib.results import PlotError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_selection_space", "plot_improvement_heatmap"]


def plot_selection_space(bank_xy: Any, cand_xy: Any, chosen: int, *, title: str = "",
                         xlabel: str = "PC 1", ylabel: str = "PC 2") -> "Figure":
    """Paper Fig. 2b: best-of-K selection in 2-D: the bank's reports (grey), the K candidates (numbered) and the
    chosen one (star). ``bank_xy`` ``(n, 2)``, ``cand_xy`` ``(K, 2)``: positions in one projection. The legend sits
    below the axes, the candidate numbers avoid each other and the points."""
    import matplotlib.pyplot as plt

    B, C = np.asarray(bank_xy, dtype=np.float64), np.asarray(cand_xy, dtype=np.float64)
    if B.ndim != 2 or B.shape[1] != 2 or C.ndim != 2 or C.shape[1] != 2 or not len(C):
        raise PlotError(f"plot_selection_space: need (n, 2) and (K, 2) positions, got {B.shape} and {C.shape}")
    if not 0 <= int(chosen) < len(C):
        raise PlotError(f"plot_selection_space: chosen = {chosen} is not one of the {len(C)} candidates")
    fig, ax = plt.subplots(figsize=(6.0, 5.4))
    ax.scatter(B[:, 0], B[:, 1], s=6, color="0.6", alpha=0.45, label="bank reports", zorder=1)
    ax.scatter(C[:, 0], C[:, 1], s=55, color=PALETTE[1], edgecolor="black", linewidth=0.7, label="candidates",
               zorder=3)
    ax.scatter(*C[int(chosen)], s=300, marker="*", color=PALETTE[3], edgecolor="black", linewidth=0.8,
               label="chosen candidate", zorder=4)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    fig.tight_layout()
    _place_labels(ax, C, [f"#{j}" for j in range(len(C))], ["black"] * len(C), fontsize=10, fontweight="bold",
                  zorder=5)
    return fig


def plot_improvement_heatmap(table: "pd.DataFrame", *, title: str = "") -> "Figure":
    """Notebook 05's Figs. 3-5: a table of % improvement over random (rows: selection methods or distances,
    columns: metrics or policies) drawn by :func:`plot_value_heatmap` (one diverging colour scale for the whole
    table, centred at 0 so the sign reads from the colour, one decimal). A NaN cell (random's value is 0, so no relative change exists, or no parseable candidate) is drawn
    grey with the label ``n/a``. Example: ``plot_improvement_heatmap(summary[["BS-F1", "CXB-14"]])``."""
    V = table.to_numpy(dtype=np.float64)
    ok = np.isfinite(V)
    fig = plot_value_heatmap(table.where(ok, 0.0), title=title, fmt=".1f", center=0.0,
                             cbar_label="% improvement over random (0 = random; purple above, orange below)")
    ax = fig.axes[0]
    if not ok.all():  # grey over the n/a cells, so that they do not read as 0
        from matplotlib.colors import ListedColormap

        ax.imshow(np.ma.masked_array(np.ones_like(V), mask=ok), cmap=ListedColormap(["0.85"]), aspect="auto",
                  vmin=0, vmax=1, zorder=1)
    texts = ax.texts  # one per cell, row-major (plot_value_heatmap's order)
    for (i, j), good in np.ndenumerate(ok):
        if not good:
            texts[i * V.shape[1] + j].set_text("n/a")
            texts[i * V.shape[1] + j].set_color("black")
    return fig
