"""Notebook 06's figure: pruning quality against tokens saved over the (p, warm-up) sweep, with bootstrap
intervals over the studies (:func:`result_ci`, the error bars' only statistic).

Draws a table the pruning checks computed (:mod:`sdrlib.experiments.pruning_checks`); distances that picked the
same survivors share a panel. Left out: the pruning itself (:mod:`sdrlib.pruning`) and paired tests between
systems (:func:`sdrlib.metrics.significance.paired_bootstrap`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sdrlib.metrics.significance import bootstrap_weights
from sdrlib.results import PlotError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["result_ci", "plot_pruning_sweep"]

#: the sweep's points: solid (alpha 1), this many points across, with a black edge this wide (a merged distance's
#: differing points are hollow, edged in their colour)
MARKER_SIZE, MARKER_EDGE = 11.0, 1.2
#: the grey of the standard pick's interval band, light enough that the points and their bars stand out on it
_BAND = "0.9"


def result_ci(result: Any, *, n_resamples: int = 1000, seed: int = 0, ci: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of a corpus metric over its samples (studies).

    ``result``: a :class:`sdrlib.metrics.MetricResult` (``stats`` ``(n, s)`` and its ``reducer``, as for the
    paired bootstrap), so ratio metrics such as macro F1 are recomputed from resampled counts. For error bars;
    differences between two systems need the paired test (:func:`sdrlib.metrics.significance.paired_bootstrap`).
    Example: ``result_ci(r) -> (0.571, 0.604)``.
    """

    stats = np.asarray(result.stats, dtype=np.float64)
    if stats.ndim == 1:
        stats = stats[:, None]
    W = bootstrap_weights(stats.shape[0], n_resamples, seed)
    vals = np.asarray(result.reducer(W @ stats), dtype=np.float64).reshape(-1)
    vals = vals[np.isfinite(vals)]
    if not vals.size:
        return float("nan"), float("nan")
    a = (1.0 - ci) / 2
    return float(np.quantile(vals, a)), float(np.quantile(vals, 1 - a))


def _differs(a: "pd.DataFrame", b: "pd.DataFrame", cols: Sequence[str]) -> np.ndarray:
    """Per ``(p, wu)`` row of ``a``: does ``b``'s row differ in any of ``cols`` (beyond 1e-9)? Shape ``(len(a),)``."""
    m = a.merge(b, on=["p", "wu"], how="left", suffixes=("", "_b"))
    return ~np.all([np.isclose(m[c], m[f"{c}_b"], rtol=0, atol=1e-9) for c in cols], axis=0)


def _merge_alike(sweep: "pd.DataFrame", policies: Sequence[str],
                 cols: Sequence[str]) -> list[list[tuple[list[str], list["pd.DataFrame"]]]]:
    """Per policy, the panels: ``(names, frames)``; a distance that agrees with an earlier one on most settings
    (at most half of its ``(p, wu)`` rows differ) joins that one's panel. Each frame is sorted by ``p, wu``."""
    rows = []
    for pol in policies:
        groups: list[tuple[list[str], list[Any]]] = []
        for n in dict.fromkeys(sweep[sweep.policy == pol].distance):
            d = sweep[(sweep.policy == pol) & (sweep.distance == n)].sort_values(["p", "wu"])
            for names, frames in groups:
                if _differs(frames[0], d, cols).mean() <= 0.5:
                    names.append(n); frames.append(d)
                    break
            else:
                groups.append(([n], [d]))
        rows.append(groups)
    return rows


def _sweep_panel(ax: Any, title: str, names: list[str], frames: list["pd.DataFrame"], *, key: str,
                 cols: Sequence[str], colour: dict, markers: dict, has_ci: bool, has_band: bool) -> None:
    """One panel: the standard pick's line (and band), the random pick's, and one point per ``(p, wu)`` of the
    first distance; a merged distance adds (hollow) only the points where it differs, and the title says so."""
    d = frames[0]
    if has_band:
        ax.axhspan(d["standard lo"].iloc[0], d["standard hi"].iloc[0], color=_BAND, zorder=0)
    ax.axhline(d.standard.iloc[0], color="black", ls="--", lw=1.2, zorder=1)
    ax.axhline(d.random.iloc[0], color="0.4", ls=":", lw=1.2, zorder=1)
    notes = []
    for f_i, f in enumerate(frames):
        draw = f if f_i == 0 else f[_differs(f, frames[0], cols)]
        if f_i and not np.isclose(f.standard.iloc[0], d.standard.iloc[0], rtol=0, atol=1e-9):
            ax.axhline(f.standard.iloc[0], color="black", ls="--", lw=0.8, zorder=1)  # its own standard pick
        if f_i:
            notes.append(f"{names[f_i]}: same picks" if draw.empty else
                         f"{names[f_i]}: same except {len(draw)} of {len(f)} (hollow)")
        for _, row in draw.iterrows():
            yerr = [[row[key] - row[f"{key} lo"]], [row[f"{key} hi"] - row[key]]] if has_ci else None
            ax.errorbar(row["tokens saved %"], row[key], yerr=yerr, fmt=markers.get(row.wu, "o"),
                        color=colour[row.p], markersize=MARKER_SIZE, alpha=1.0,
                        markeredgecolor="black" if f_i == 0 else colour[row.p],
                        markeredgewidth=MARKER_EDGE if f_i == 0 else 2.2,
                        markerfacecolor=colour[row.p] if f_i == 0 else "white", elinewidth=1.8, capsize=3,
                        zorder=3)
    ax.set_title(title + "".join(f"\n{t}" for t in notes), fontsize=10)


def _sweep_handles(ps: Sequence[float], wus: Sequence[float], colour: dict, markers: dict, *, n_candidates: int,
                   has_band: bool, ci: float) -> list[Any]:
    """The legend: one entry per p (colour) and warm-up (marker), the standard and random lines, the band."""
    from matplotlib.lines import Line2D

    handles = ([Line2D([], [], marker="o", ls="", color=colour[p], markeredgecolor="black", markersize=MARKER_SIZE,
                       markeredgewidth=MARKER_EDGE, label=f"p = {p:g}") for p in ps]
               + [Line2D([], [], marker=markers.get(w, "o"), ls="", color="0.5", markeredgecolor="black",
                         markersize=MARKER_SIZE, markeredgewidth=MARKER_EDGE, label=f"warm-up = {w:g}") for w in wus]
               + [Line2D([], [], color="black", ls="--", label=f"standard best-of-{n_candidates}"),
                  Line2D([], [], color="0.4", ls=":", label="random pick")])
    if has_band:
        from matplotlib.patches import Patch
        handles.append(Patch(color=_BAND, label=f"standard: {ci:.0%} CI"))
    return handles


def plot_pruning_sweep(sweep: "pd.DataFrame", key: str, *, n_candidates: int, n_studies: int,
                       section: str = "Findings", ci: float = 0.95) -> "Figure":
    """Pruning quality vs tokens saved over the (p, warm-up) sweep, one panel per policy x distance.

    ``sweep``: one row per ``policy``, ``distance``, ``p``, ``wu`` with ``tokens saved %``, the metric ``key`` of
    the survivors and the ``standard`` / ``random`` values; optional ``<key> lo`` / ``<key> hi`` (error bars) and
    ``standard lo`` / ``standard hi`` (a band around the standard line): bootstrap intervals over the studies
    (:func:`result_ci`). ``n_candidates``: the K candidates per study of the standard best-of-K pick (the legend
    names it). Distances whose rows are identical within a policy (they picked the same survivors) share
    one panel, titled with both names. Every panel shares the y axis, so the scale of the differences is the same
    everywhere; the note under the figure says how many studies each point averages. Points are solid (alpha 1),
    :data:`MARKER_SIZE` across with a black edge, coloured by p (viridis without its faint light end) and shaped by
    warm-up, as the legend shows; error bars are 1.8 wide on a light grey band.
    """
    import matplotlib.pyplot as plt

    need = {"policy", "distance", "p", "wu", "tokens saved %", key, "standard", "random"} - set(sweep.columns)
    if need:
        raise PlotError(f"plot_pruning_sweep: sweep lacks the columns {sorted(need)}")
    if sweep.empty:
        raise PlotError("plot_pruning_sweep: the sweep is empty")
    policies = list(dict.fromkeys(sweep.policy))
    cols = ["tokens saved %", key]
    rows = _merge_alike(sweep, policies, cols)
    ncols = max(len(g) for g in rows)
    fig, axes = plt.subplots(len(rows), ncols, figsize=(4.3 * ncols + 2.2, 3.6 * len(rows)), squeeze=False,
                             sharey=True)
    ps, wus = sorted(sweep.p.unique()), sorted(sweep.wu.unique())
    cmap = plt.get_cmap("viridis")
    colour = {p: cmap(0.75 * i / max(len(ps) - 1, 1)) for i, p in enumerate(ps)}  # viridis' light end fades
    markers = dict(zip(wus, "oXsD^v"))
    has_ci = {f"{key} lo", f"{key} hi"} <= set(sweep.columns)
    has_band = {"standard lo", "standard hi"} <= set(sweep.columns)
    for r, (pol, groups) in enumerate(zip(policies, rows)):
        for c in range(ncols):
            ax = axes[r][c]
            if c >= len(groups):
                ax.axis("off")
                continue
            names, frames = groups[c]
            _sweep_panel(ax, f"{pol} · {names[0]}", names, frames, key=key, cols=cols, colour=colour,
                         markers=markers, has_ci=has_ci, has_band=has_band)
            ax.set_xlabel("tokens saved vs K full generations (%)")
            ax.set_ylabel(f"{key}, {section}" if c == 0 else "")
    handles = _sweep_handles(ps, wus, colour, markers, n_candidates=n_candidates, has_band=has_band, ci=ci)
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.suptitle(f"Pruning replayed over p x warm-up ({n_studies} studies per policy)")
    fig.tight_layout()
    note = (f"Each point: the survivors' corpus {key} over {n_studies} studies"
            + (f"; bars: {ci:.0%} bootstrap CI over studies" if has_ci else "")
            + ". The y axis is zoomed: differences smaller than the bars are noise.")
    fig.text(0.02, 0.0, note, fontsize=9, color="0.3", ha="left", va="top")
    return fig
