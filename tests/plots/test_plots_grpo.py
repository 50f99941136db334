"""sdrlib.plots' notebook 04 figures: GRPO curves, the semantic reward, reward sparsity (issue 26: ranges, legends,
labels) and the reward audit."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib import plots  # noqa: E402
from sdrlib.experiments import audit  # noqa: E402
from sdrlib.plots import PlotError, plot_grpo_curves, style  # noqa: E402


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


def _grpo_curves():
    rows = []
    for cfg_name, has_sem in (("fmt", False), ("chamfer", True)):
        for seed in (0, 1):
            for step in range(1, 11):
                r = {"config": cfg_name, "seed": seed, "step": step, "rewards/r_fmt/mean": 0.5 + 0.04 * step,
                     "kl": 0.01 * step, "completions/mean_length": 80 - step}
                if has_sem:
                    r["rewards/r_sem_chamfer/mean"] = 1.0 + 0.05 * step + 0.01 * seed
                rows.append(r)
    return pd.DataFrame(rows)


def test_grpo_curves_put_each_reward_range_on_its_own_axis_with_integer_steps():
    with style():
        fig = plot_grpo_curves(_grpo_curves(), ["fmt", "chamfer"], {"fmt": "R_fmt", "chamfer": "R_Cham"}, smooth=3)
    axes = fig.axes
    titles = [a.get_title() for a in axes]
    assert titles[0].startswith("R_fmt") and titles[1].startswith("content reward")
    assert axes[0].get_ylim()[1] <= 1.05 and axes[1].get_ylim()[1] >= 2.0
    # R_fmt (range 0-1) never shares the axis of the content reward (0-2): only R_Cham draws in panel 2
    assert {ln.get_label() for ln in axes[1].lines if not ln.get_label().startswith("_")} == {"R_Cham"}
    assert all(float(t).is_integer() for t in axes[0].get_xticks())
    note = " ".join(t.get_text() for t in fig.texts)
    assert "rolling mean of 3 steps" in note and "2 seed" in note
    with pytest.raises(PlotError, match="lack the columns"):
        plot_grpo_curves(_grpo_curves().drop(columns="step"), ["fmt"])
    with pytest.raises(PlotError, match="smooth"):
        plot_grpo_curves(_grpo_curves(), ["fmt"], smooth=0)


def test_grpo_curves_draw_the_mean_over_seeds_per_step():
    curves = _grpo_curves()
    with style():
        fig = plot_grpo_curves(curves, ["fmt", "chamfer"], smooth=1)
    raw = fig.axes[1].lines[0]  # the content panel: chamfer's per-step mean over its two seeds
    want = curves[curves.config == "chamfer"].groupby("step")["rewards/r_sem_chamfer/mean"].mean()
    assert list(raw.get_xdata()) == list(want.index) and np.allclose(raw.get_ydata(), want.to_numpy())


def _audit_table():
    rows = [{"reward": "r", "label": lab, "stratum": st, "case": c, "n": 2, "n_skipped": 0,
             "mean": np.nan if (st, c) == ("no_finding", "omitted") else 2.0 - 0.1 * k - 0.5 * li,
             "sem": 0.0, "content": 1.0}
            for li, lab in enumerate(("R", "S")) for st in ("no_finding", "single") for k, c in enumerate(audit.CASES)]
    return pd.DataFrame(rows)


def test_plot_audit_draws_strata_and_silence_panel():
    exp = pd.DataFrame([{"label": "R", "gap": -0.5, "silence_margin": 0.1, "mixed_margin": 0.0}])
    with style():
        fig = plots.plot_audit(_audit_table(), exp)
    visible = [a for a in fig.axes if a.get_visible()]
    assert len(visible) == 3 and visible[-1].get_title().startswith("does silence pay")
    # the bars are the gaps, in the legend's order
    assert [p.get_width() for p in visible[-1].patches] == [-0.5, 0.1, 0.0]


def test_plot_audit_cells_are_each_case_s_share_of_the_reference():
    table = _audit_table()
    with style():
        fig = plots.plot_audit(table)
    heat = fig.axes[0]
    rel = audit.relative_table(table, "no_finding")
    assert np.allclose(heat.images[0].get_array().filled(np.nan), rel.to_numpy(float), equal_nan=True)
    assert [t.get_text() for t in heat.get_yticklabels()] == ["R", "S"]
    assert [t.get_text() for t in heat.get_xticklabels()] == [audit.CASE_LABELS[c] for c in audit.CASES]
    cells = [t.get_text() for t in heat.texts]
    assert cells[:2] == ["1.00", f"{rel.iat[0, 1]:.2f}"] and cells[list(audit.CASES).index("omitted")] == "skip"
    assert "(n = 2)" in heat.get_title() and sum(a.get_visible() for a in fig.axes) == 2
