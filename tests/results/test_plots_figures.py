"""The figure helpers issue 26 asked to fix: what each draws (ranges, legends, labels, merged panels, intervals)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib import plots  # noqa: E402
from sdrlib.metrics.base import mean_result  # noqa: E402
from sdrlib.plots import PlotError, style  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _curves():
    rows = []
    for cfg_name in ("fmt", "chamfer", "editgrpo"):
        for seed in (0, 1):
            for step in range(1, 7):
                r = {"config": cfg_name, "seed": seed, "step": step, "reward_groups/exact_all_zero": 1.0,
                     "reward_groups/content_std": 0.0 if cfg_name == "fmt" else 0.2}
                if cfg_name == "chamfer":
                    r["rewards/r_sem_chamfer/mean"] = 1.4
                if cfg_name == "editgrpo":
                    r["rewards/r_f1_14/mean"] = 0.3
                    r["rewards/r_sem_neg/mean"] = 0.7
                rows.append(r)
    return pd.DataFrame(rows)


def test_semantic_reward_puts_editgrpo_s_neg_on_its_own_0_1_axis_with_axes_from_0():
    with style():
        fig = plots.plot_semantic_reward(_curves(), ["fmt", "chamfer", "editgrpo"],
                                         {"chamfer": "R_Cham", "editgrpo": "EditGRPO"})
    sem, neg = fig.axes
    assert sem.get_ylim()[0] == 0 and sem.get_ylim()[1] >= 2.0 and "R_sem" in sem.get_ylabel()
    assert neg.get_ylim() == (0, 1.025) and "S_neg" in neg.get_ylabel() and "not R_sem" in neg.get_title()
    names = lambda ax: {t.get_text() for t in ax.get_legend().get_texts()}  # noqa: E731
    assert names(sem) == {"R_Cham (R_sem, chamfer)"} and names(neg) == {"EditGRPO (S_neg)"}
    for ax in fig.axes:  # legends sit below the axes, not over the data
        fig.canvas.draw()
        assert ax.get_legend().get_window_extent().y1 <= ax.get_window_extent().y0


def test_reward_sparsity_gives_each_content_reward_its_own_axis_and_names_the_skipped():
    with style():
        fig = plots.plot_reward_sparsity(_curves(), ["fmt", "chamfer", "editgrpo"], {"fmt": "R_fmt"})
    bars, *panels = fig.axes
    assert bars.get_xlim()[0] == 0 and "R_exact = 0" in bars.get_xlabel()
    assert [p.get_title().split("\n")[0] for p in panels] == ["chamfer", "editgrpo"]  # R_fmt: no content reward
    assert "F1_14 + F1_ent + S_neg" in panels[1].get_title() and all(p.get_ylim()[0] == 0 for p in panels)
    assert any("Without a content reward (std 0): R_fmt" in t.get_text() for t in fig.texts)
    with pytest.raises(PlotError, match="lack the columns"):
        plots.plot_reward_sparsity(_curves().drop(columns="reward_groups/content_std"), ["fmt"])


def test_value_heatmap_shares_one_scale_unless_asked_per_column():
    t = pd.DataFrame({"a": [0.0, 0.08], "b": [0.0, 0.47]})
    with style():
        shared = plots.plot_value_heatmap(t)
        column = plots.plot_value_heatmap(t, scale="column")
    assert np.allclose(shared.axes[0].images[0].get_array(), t.to_numpy())
    assert shared.axes[0].images[0].get_clim() == (0.0, 0.47)
    assert np.allclose(column.axes[0].images[0].get_array(), [[0, 0], [1, 1]])
    with pytest.raises(PlotError, match="scale"):
        plots.plot_value_heatmap(t, scale="row")


def _boxes(ax, texts):
    ax.figure.canvas.draw()
    r = ax.figure.canvas.get_renderer()
    return [t.get_window_extent(r) for t in ax.texts if t.get_text() in texts]


def test_labels_of_coincident_points_do_not_overlap():
    rng = np.random.default_rng(0)
    v = rng.normal(size=16)
    F = np.vstack([v, rng.normal(size=16)])
    I = np.vstack([v + 1e-3, rng.normal(size=16)])  # I1 sits on F1
    F, I = (X / np.linalg.norm(X, axis=1, keepdims=True) for X in (F, I))
    with style():
        fig = plots.plot_report_embedding(["a.", "b."], ["c.", "d."], F, I)
    ax = next(a for a in fig.axes if a.get_title(loc="left").startswith("(c)"))
    boxes = _boxes(ax, {"F1", "F2", "I1", "I2"})
    assert len(boxes) == 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_selection_space_has_axis_labels_and_the_legend_below():
    rng = np.random.default_rng(1)
    with style():
        fig = plots.plot_selection_space(rng.normal(size=(50, 2)), rng.normal(size=(5, 2)), 3, xlabel="PC 1 x")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "PC 1 x" and ax.get_ylabel() == "PC 2"
    fig.canvas.draw()
    assert ax.get_legend().get_window_extent().y1 <= ax.get_window_extent().y0
    assert {f"#{j}" for j in range(5)} <= {t.get_text() for t in ax.texts}
    with pytest.raises(PlotError, match="chosen = 7"):
        plots.plot_selection_space(rng.normal(size=(50, 2)), rng.normal(size=(5, 2)), 7)


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
        fig = plots.plot_pruning_sweep(_sweep(same=True), "BS-F1", k=5, n_studies=24)
    titles = [a.get_title() for a in fig.axes if a.get_title()]
    assert titles == ["SFT · chamfer\nhung_nn: same picks", "SFT · hausdorff"]
    assert any("95% bootstrap CI" in t.get_text() for t in fig.texts)
    with style():
        fig = plots.plot_pruning_sweep(_sweep(same=False), "BS-F1", k=5, n_studies=24)
    assert "hung_nn: same except 1 of 2 (hollow)" in fig.axes[0].get_title()
    assert fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[1])


def test_result_ci_brackets_the_corpus_value():
    r = mean_result("x", "test", np.linspace(0, 1, 40))
    lo, hi = plots.result_ci(r, n_resamples=500, seed=0)
    assert lo < r.corpus < hi and hi - lo < 0.4


def test_gallery_keeps_figures_near_their_own_size(tmp_path):
    paths = []
    for i, size in enumerate(((4, 3), (16, 4))):
        with style():
            f, ax = plt.subplots(figsize=size)
            ax.plot([0, 1])
            f.savefig(tmp_path / f"{i}.png", dpi=100)
        paths.append(tmp_path / f"{i}.png")
    with style():
        g = plots.plot_gallery(paths, ["small", "wide"], row_px=1700)
    small, wide = g.axes
    assert small.get_position().y0 > wide.get_position().y1  # the wide figure gets a row of its own
    assert wide.get_position().width == pytest.approx(1600 / 1700, rel=1e-6)
