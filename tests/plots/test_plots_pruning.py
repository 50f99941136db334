"""sdrlib.plots.plot_pruning_sweep and result_ci: notebook 06's sweep figure and its error bars."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib import plots  # noqa: E402
from sdrlib.metrics.base import mean_result  # noqa: E402
from sdrlib.plots import PlotError, style  # noqa: E402


def _sweep(same: bool):
    rows = []
    for n in ("chamfer", "hung_nn", "hausdorff"):
        for p in (0.25, 0.5):
            v = 0.6 + p / 10 + (0.01 if n == "hausdorff" or (n == "hung_nn" and not same and p == 0.5) else 0)
            rows.append({"policy": "SFT", "distance": n, "p": p, "wu": 0, "tokens saved %": 50 * p, "BS-F1": v,
                         "standard": 0.6, "random": 0.59, "BS-F1 lo": v - 0.02, "BS-F1 hi": v + 0.02})
    return pd.DataFrame(rows)


def test_pruning_sweep_merges_a_distance_that_picks_alike_and_draws_intervals():
    with style():
        fig = plots.plot_pruning_sweep(_sweep(same=True), "BS-F1", n_candidates=5, n_studies=24)
    titles = [a.get_title() for a in fig.axes if a.get_title()]
    assert titles == ["SFT · chamfer\nhung_nn: same picks", "SFT · hausdorff"]
    assert any("95% bootstrap CI" in t.get_text() for t in fig.texts)
    with style():
        fig = plots.plot_pruning_sweep(_sweep(same=False), "BS-F1", n_candidates=5, n_studies=24)
    assert "hung_nn: same except 1 of 2 (hollow)" in fig.axes[0].get_title()
    assert fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[1])


def test_pruning_sweep_points_are_the_table_s_values_and_the_legend_names_k():
    sweep = _sweep(same=False)
    with style():
        fig = plots.plot_pruning_sweep(sweep, "BS-F1", n_candidates=5, n_studies=24)
    ax = fig.axes[0]  # chamfer, with hung_nn's one differing setting drawn hollow
    points = [(float(ln.get_xdata()[0]), float(ln.get_ydata()[0])) for ln in ax.lines if ln.get_marker() == "o"]
    hollow = [ln.get_markerfacecolor() for ln in ax.lines if ln.get_marker() == "o"]
    own = sweep[sweep.distance == "chamfer"].sort_values("p")
    other = sweep[(sweep.distance == "hung_nn") & (sweep.p == 0.5)]
    expected = [(r["tokens saved %"], r["BS-F1"]) for _, r in pd.concat([own, other]).iterrows()]
    assert np.allclose(points, expected) and hollow[-1] == "white" and hollow[0] != "white"
    assert [ln.get_ydata()[0] for ln in ax.lines if ln.get_linestyle() == "--"] == [0.6]  # the standard pick
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["p = 0.25", "p = 0.5", "warm-up = 0", "standard best-of-5", "random pick"]
    with pytest.raises(PlotError, match="lacks the columns"):
        plots.plot_pruning_sweep(sweep.drop(columns="random"), "BS-F1", n_candidates=5, n_studies=24)
    with pytest.raises(PlotError, match="empty"):
        plots.plot_pruning_sweep(sweep.iloc[:0], "BS-F1", n_candidates=5, n_studies=24)


def test_result_ci_brackets_the_corpus_value():
    r = mean_result("x", "test", np.linspace(0, 1, 40))
    lo, hi = plots.result_ci(r, n_resamples=500, seed=0)
    assert lo < r.corpus < hi and hi - lo < 0.4


def test_pruning_sweep_points_are_solid_large_and_edged_with_a_legend():
    from matplotlib.colors import to_rgba

    with style():
        fig = plots.plot_pruning_sweep(_sweep(same=True), "BS-F1", n_candidates=5, n_studies=24)
    points = [ln for ax in fig.axes for ln in ax.lines if ln.get_marker() not in (None, "None", "", "_")]
    assert points
    for ln in points:  # solid, opaque, large, with a black edge: readable on the grey band and when shrunk
        assert ln.get_alpha() in (None, 1.0) and to_rgba(ln.get_markerfacecolor())[3] == 1.0
        assert ln.get_markersize() >= 10 and ln.get_markeredgewidth() >= 1.0
        assert to_rgba(ln.get_markeredgecolor()) == to_rgba("black")
    bars = [c for ax in fig.axes for c in ax.collections if c.get_linewidths().size]
    assert bars and all(min(c.get_linewidths()) >= 1.5 for c in bars)  # error bars thick enough to see
    keys = [h for h in fig.legends[0].legend_handles if h.get_label().startswith(("p = ", "warm-up = "))]
    assert [h.get_label() for h in keys] == ["p = 0.25", "p = 0.5", "warm-up = 0"]
    assert {h.get_markersize() for h in keys} == {points[0].get_markersize()}  # the legend shows the points' size
