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
    for cfg_name, base in (("fmt", 0.5), ("chamfer", 2.0), ("noise", 0.5)):
        for seed in (0, 1):
            for step in range(1, 11):
                r = {"config": cfg_name, "seed": seed, "step": step, "rewards/r_fmt/mean": 0.5 + 0.04 * step,
                     "reward": base + 0.05 * step + 0.01 * seed, "kl": 0.01 * step, "completions/mean_length": 80 - step}
                if cfg_name == "chamfer":
                    r["rewards/r_sem_chamfer/mean"] = 1.0 + 0.05 * step + 0.01 * seed
                rows.append(r)
    return pd.DataFrame(rows)


def _panels(fig):
    """The reward / KL / length axes of each configuration column, by the column's title."""
    axes = fig.axes
    return {axes[k].get_title().split("\n")[0]: axes[k: k + 3] for k in range(0, len(axes), 3)}


def test_grpo_curves_give_each_configuration_its_own_column_of_panels():
    with style():
        fig = plot_grpo_curves(_grpo_curves(), ["fmt", "chamfer", "noise"], {"fmt": "R_fmt", "chamfer": "R_Cham"},
                               smooth=3, ncols=2)
    panels = _panels(fig)
    # one column per configuration (small multiples, 2 per block here), each with reward, KL and length
    assert list(panels) == ["R_fmt", "R_Cham", "noise"] and len(fig.axes) == 3 * 3
    assert [a.get_ylabel() for a in panels["R_fmt"]] == ["total reward", "KL to SFT", "length (tokens)"]
    for reward, kl, length in panels.values():
        # one line per seed, then the mean: no two configurations draw in one panel
        assert len([ln for ln in reward.lines if ln.get_label().startswith("_seed")]) == 2
        assert kl.get_shared_y_axes().joined(kl, panels["R_fmt"][1])  # KL on one scale for all
        assert all(float(t).is_integer() for t in length.get_xticks())
    # the rewards' ranges differ: each configuration's reward axis is its own
    assert not panels["R_Cham"][0].get_shared_y_axes().joined(panels["R_Cham"][0], panels["R_fmt"][0])
    assert panels["R_Cham"][0].get_ylim()[0] > 1.5 and panels["R_fmt"][0].get_ylim()[1] < 1.5
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["one seed", "mean over 2 seed(s), rolling mean of 3 steps",
                      "mean of the first 4 steps (start level)"]
    with pytest.raises(PlotError, match="lack the columns"):
        plot_grpo_curves(_grpo_curves().drop(columns="step"), ["fmt"])
    with pytest.raises(PlotError, match="smooth"):
        plot_grpo_curves(_grpo_curves(), ["fmt"], smooth=0)
    with pytest.raises(PlotError, match="'reward'"):
        plot_grpo_curves(_grpo_curves().drop(columns="reward"), ["fmt"])


def test_grpo_curves_show_the_change_from_the_first_steps():
    curves = _grpo_curves()
    with style():
        fig = plot_grpo_curves(curves, ["fmt", "chamfer"], {"chamfer": "R_Cham"}, smooth=1, n_start=4)
    reward, kl, length = _panels(fig)["R_Cham"]
    d = curves[curves.config == "chamfer"]
    # the thick line is the mean over seeds per step
    mean = [ln for ln in reward.lines if not ln.get_label().startswith("_")][0]
    want = d.groupby("step")["reward"].mean()
    assert list(mean.get_xdata()) == list(want.index) and np.allclose(mean.get_ydata(), want.to_numpy())
    # the dashed line sits at the first 4 steps' level; the title gives first -> last 4 steps as movement_table
    start = [ln for ln in reward.lines if ln.get_linestyle() == "--"]
    assert len(start) == 1 and np.isclose(start[0].get_ydata()[0], want.iloc[:4].mean())
    first, last = want.iloc[:4].mean(), want.iloc[-4:].mean()
    assert f"{first:.3f} \N{RIGHTWARDS ARROW} {last:.3f} ({last - first:+.3f})" in reward.get_title()
    assert [ln for ln in length.lines if ln.get_linestyle() == "--"]  # length against its start too
    assert not [ln for ln in kl.lines if ln.get_linestyle() == "--"]  # the KL starts at 0 anyway


def test_grpo_curves_draw_no_yellow_and_no_faint_bands():
    with style():
        fig = plot_grpo_curves(_grpo_curves(), ["fmt", "chamfer", "noise"])
    from matplotlib.colors import to_hex
    colours = {to_hex(ln.get_color()) for ax in fig.axes for ln in ax.lines}
    assert "#f0e442" not in colours and not any(ax.collections for ax in fig.axes)


def _audit_table():
    rows = [{"reward": "r", "label": lab, "stratum": st, "case": c, "n": 2, "n_skipped": 0,
             "mean": np.nan if (st, c) == ("no_finding", "omitted") else 2.0 - 0.1 * k - 0.5 * li,
             "sem": 0.0, "content": 1.0}
            for li, lab in enumerate(("R", "S")) for st in ("no_finding", "single") for k, c in enumerate(audit.CASES)]
    return pd.DataFrame(rows)


def test_plot_audit_draws_strata_and_silence_panel():
    exp = pd.DataFrame([{"label": "R", "gap": -0.5, "silence_margin": 0.1, "mixed_margin": -0.02},
                        {"label": "S", "gap": 0.3, "silence_margin": 0.2, "mixed_margin": 0.05}])
    with style():
        fig = plots.plot_audit(_audit_table(), exp)
    heat = [a for a in fig.axes if a.images]
    silence = [a for a in fig.axes if a.get_visible() and a.get_title().startswith("does silence pay")]
    assert len(heat) == 2 and len(silence) == 1
    # the panel answers its title: one bar per reward, the margin over the references as they come, read as yes / no
    ax = silence[0]
    assert [p.get_width() for p in ax.patches] == [0.05, -0.02]  # bottom-up: the table's order top-down
    assert ax.get_title() == "does silence pay? yes (< 0) under 1 of 2 rewards"
    assert "mixed_margin" in ax.get_xlabel()
    from matplotlib.colors import to_hex
    assert [to_hex(p.get_facecolor()) for p in ax.patches] == [plots.PALETTE[0].lower(), plots.PALETTE[3].lower()]
    assert {t.get_text() for t in ax.texts} == {"+0.050", "-0.020"}
    # an older view without mixed_margin falls back to silence_margin
    with style():
        fig = plots.plot_audit(_audit_table(), exp.drop(columns="mixed_margin"))
    ax = [a for a in fig.axes if a.get_title().startswith("does silence pay")][0]
    assert [p.get_width() for p in ax.patches] == [0.2, 0.1] and "silence_margin" in ax.get_xlabel()


def test_plot_audit_draws_a_silence_panel_whose_margins_are_nan():
    """A tiny run (the rehearsal profile) can leave a reward without samples on one side: NaN margins draw no bar
    and the axis keeps finite limits (was: 'Axis limits cannot be NaN or Inf')."""
    for values in ([np.nan, np.nan], [np.nan, -0.02]):
        exp = pd.DataFrame([{"label": "R", "mixed_margin": values[0]}, {"label": "S", "mixed_margin": values[1]}])
        with style():
            fig = plots.plot_audit(_audit_table(), exp)
        ax = [a for a in fig.axes if a.get_title().startswith("does silence pay")][0]
        assert all(np.isfinite(ax.get_xlim()))
        assert ax.get_title().endswith(f"under {int(np.nansum(np.array(values) < 0))} of "
                                       f"{int(np.isfinite(values).sum())} rewards")


def test_plot_audit_heatmaps_carry_a_colour_bar_and_mark_errors_paid_like_a_correct_report():
    table = _audit_table()
    # reward S pays a hallucination in a single-finding report like the reference: outlined
    hit = (table.label == "S") & (table.stratum == "single") & (table.case == "hallucinated")
    table.loc[hit, "mean"] = float(table[(table.label == "S") & (table.stratum == "single")
                                         & (table.case == "reference")]["mean"].iloc[0])
    with style():
        fig = plots.plot_audit(table)
    heat = [a for a in fig.axes if a.images]
    assert len(heat) == 2 and all(a.images[0].colorbar is not None for a in heat)
    assert "share of the reference's reward" in heat[0].images[0].colorbar.ax.get_ylabel()
    # a white line after the correct reports; the edited cases paid at least the row's lowest correct share outlined
    cases = list(audit.CASES)
    split = max(cases.index(c) for c in audit.CORRECT_CASES) + 0.5
    assert [ln.get_xdata()[0] for ln in heat[1].lines] == [split]
    rel = audit.relative_table(table, "single").to_numpy(float)
    correct = [cases.index(c) for c in audit.CORRECT_CASES]
    want = {(i, j) for i in range(rel.shape[0]) for j in range(rel.shape[1])
            if j not in correct and rel[i, j] >= np.nanmin(rel[i, correct]) - 1e-9}
    boxes = {(round(p.get_y() + 0.44), round(p.get_x() + 0.46)) for p in heat[1].patches}
    assert boxes == want == {(1, cases.index("hallucinated"))} and not heat[0].patches


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
    assert "(n = 2)" in heat.get_title() and sum(bool(a.images) for a in fig.axes) == 2


def test_semantic_reward_and_sparsity_draw_no_yellow_for_the_eighth_configuration():
    from matplotlib.colors import to_hex

    curves = pd.concat([_curves().assign(config=f"c{k}") for k in range(7)] + [_curves().query("config == 'chamfer'")],
                       ignore_index=True)
    configs = [f"c{k}" for k in range(7)] + ["chamfer"]  # chamfer is the eighth: yellow in the plain cycle
    with style():
        sem = plots.plot_semantic_reward(curves, configs)
        spread = plots.plot_reward_sparsity(curves, configs)
    drawn = {to_hex(ln.get_color()) for f in (sem, spread) for ax in f.axes for ln in ax.lines}
    drawn |= {to_hex(p.get_facecolor()) for ax in spread.axes for p in ax.patches}
    assert "#f0e442" not in drawn and to_hex(plots.PALETTE[0]) in drawn
