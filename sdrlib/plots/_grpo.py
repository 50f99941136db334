"""Notebook 04's figures: GRPO training curves, the semantic reward per step, how much a group's rewards spread,
and the reward audit (what each reward pays for edited and degenerate reports).

``curves`` are TRL's logged columns per step, one row per config x seed x step
(:func:`sdrlib.training.read_curves`); the audit figure draws :func:`sdrlib.experiments.audit.relative_table` of an
audit's table. The training curves are small multiples (one column per configuration, its seeds as thin lines, their
mean thick, the first steps' level dashed); the other curves are means over seeds with a min-max band. Left out:
training, the audit itself and any statistic beyond those bands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from sdrlib.experiments.audit import CASE_LABELS, CORRECT_CASES, relative_table
from sdrlib.plots._style import PALETTE
from sdrlib.results import PlotError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_grpo_curves", "plot_semantic_reward", "plot_reward_sparsity", "plot_audit"]


#: the per-step quantities of :func:`plot_grpo_curves`, one row of panels each: (column, y label, own axis per
#: configuration?). The total rewards have different ranges (R_fmt 0-1, R_Cham 0-3, EditGRPO 0-4), so each
#: configuration gets its own reward axis; KL and length mean the same everywhere and share theirs.
_CURVE_ROWS = (("reward", "total reward", True), ("kl", "KL to SFT", False),
               ("completions/mean_length", "length (tokens)", False))

def _check_curve_args(curves: "pd.DataFrame", smooth: int, n_start: int) -> None:
    need = {"step", "config"} - set(curves.columns)
    if need:
        raise PlotError(f"plot_grpo_curves: curves lack the columns {sorted(need)}")
    if smooth < 1:
        raise PlotError(f"plot_grpo_curves: smooth must be >= 1 logged steps, got {smooth}")
    if n_start < 1:
        raise PlotError(f"plot_grpo_curves: n_start must be >= 1 logged steps, got {n_start}")


def _curve_panel(ax: Any, d: "pd.DataFrame", column: str, colour: Any, name: str, *, smooth: int,
                 n_start: int) -> None:
    """One panel of :func:`plot_grpo_curves`: the seeds thin grey, their rolling mean thick, the start level dashed."""
    from matplotlib.ticker import MaxNLocator

    per_seed = d.dropna(subset=[column]).pivot_table(index="step", columns="seed", values=column)
    if per_seed.empty:
        ax.text(0.5, 0.5, "not logged", transform=ax.transAxes, ha="center", va="center", color="0.4")
    else:
        for s in per_seed.columns:
            ax.plot(per_seed.index, per_seed[s], color="0.6", lw=0.8, label=f"_seed {s}")
        m = per_seed.mean(axis=1)
        ax.plot(m.index, m.rolling(smooth, min_periods=1, center=True).mean(), color=colour, lw=2.4,
                label=f"{name}: mean over seeds")
        if column != "kl":  # the KL starts at 0 by definition
            ax.axhline(float(m.iloc[:n_start].mean()), color="black", ls="--", lw=1.1, label="_start")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))


def plot_grpo_curves(curves: "pd.DataFrame", configs: Sequence[str], labels: Mapping[str, str] | None = None,
                     *, smooth: int = 5, n_start: int = 4, ncols: int = 4) -> "Figure":
    """GRPO training curves as small multiples: one column of panels per configuration, so no two
    configurations' lines overlap.

    ``curves``: TRL's logged columns per step (``step``, ``config``, ``seed``, ``reward``, ``kl``,
    ``completions/mean_length``), one row per config x seed x step. Per configuration (at most ``ncols`` per
    block of rows): its total reward on its own y axis (the rewards' ranges differ), then the KL to the SFT policy
    and the completion length on axes shared by every configuration (rows without a logged value are left out).
    In each panel the thin grey lines are the seeds, the thick blue line their mean per step (a centred rolling
    mean over ``smooth`` logged steps; 1 = none) and the dashed line the mean of the first ``n_start`` logged steps
    (near the SFT policy's level), so the change from the start is read against it. The reward panel's
    title gives the first and last ``n_start`` steps' mean reward as
    :func:`sdrlib.experiments.grpo_report.movement_table` computes them (the notebook's ``grpo_policy_movement``).
    One colour for every configuration (the column names it); step ticks are integers.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from sdrlib.experiments.grpo_report import movement_table

    _check_curve_args(curves, smooth, n_start)
    labels = dict(labels or {})
    if "seed" not in curves:
        curves = curves.assign(seed=0)
    rows = [r for r in _CURVE_ROWS if r[0] in curves.columns and curves[r[0]].notna().any()]
    if not rows or rows[0][0] != "reward":
        raise PlotError("plot_grpo_curves: curves lack a logged total 'reward' column")
    have = [c for c in configs if curves.loc[curves.config == c, "reward"].notna().any()]
    if not have:
        raise PlotError("plot_grpo_curves: none of the configs has a logged reward")
    ncols = max(1, min(ncols, len(have)))
    blocks = -(-len(have) // ncols)
    nq = len(rows)
    heights = ([2.0] + [1.1] * (nq - 1) + [0.75]) * blocks  # a spacer row under each block: x labels, next titles
    height = sum(heights[:-1]) * 1.2 + 1.7
    fig = plt.figure(figsize=(3.5 * ncols + 0.9, height))
    gs = fig.add_gridspec(len(heights) - 1, ncols, height_ratios=heights[:-1], hspace=0.12, wspace=0.3,
                          top=1 - 0.75 / height, bottom=0.95 / height, left=0.07, right=0.98)
    shared: dict[str, Any] = {}
    n_seeds = int(curves["seed"].nunique())
    for i, cfg_name in enumerate(have):
        b, col = divmod(i, ncols)
        d = curves[curves.config == cfg_name]
        colour = PALETTE[0]
        name = labels.get(cfg_name, cfg_name)
        top = None
        for q, (column, ylabel, own) in enumerate(rows):
            ax = fig.add_subplot(gs[b * (nq + 1) + q, col], sharex=top,
                                 sharey=None if own else shared.get(column))
            if not own:
                shared.setdefault(column, ax)
            top = top or ax
            _curve_panel(ax, d, column, colour, name, smooth=smooth, n_start=n_start)
            if col == 0:
                ax.set_ylabel(ylabel)
            if q < nq - 1:
                ax.tick_params(labelbottom=False)
            else:
                ax.set_xlabel("GRPO step")
            if q == 0:
                mv = movement_table(d, [cfg_name], n_steps=n_start).iloc[0]
                a, z = mv[f"reward first {n_start} steps"], mv[f"reward last {n_start} steps"]
                ax.set_title(f"{name}\nreward {a:.3f} \N{RIGHTWARDS ARROW} {z:.3f} ({z - a:+.3f})", fontsize=10)
    keys = [Line2D([], [], color="0.6", lw=0.8, label="one seed"),
            Line2D([], [], color=PALETTE[0], lw=2.4, label=f"mean over {n_seeds} seed(s)"
                   + (f", rolling mean of {smooth} steps" if smooth > 1 else "")),
            Line2D([], [], color="black", ls="--", lw=1.1, label=f"mean of the first {n_start} steps (start level)")]
    fig.legend(handles=keys, loc="upper center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    fig.text(0.5, 0.05 / height, f"One column per configuration. Title: mean reward "
             f"of the first and last {n_start} logged steps (as grpo_policy_movement). Reward axes are each "
             "configuration's own (the rewards' ranges differ); KL and length axes are shared.",
             ha="center", va="top", fontsize=9, color="0.3", wrap=True)
    return fig


#: the colours of the configurations in the curves drawn one per configuration: Okabe-Ito without its yellow, which
#: a thin line or a light band on white loses
CONFIG_COLOURS = tuple(c for c in PALETTE if c != "#F0E442")


def _config_colour(k: int) -> str:
    """The colour of the ``k``-th configuration (:data:`CONFIG_COLOURS`, cycled)."""
    return CONFIG_COLOURS[k % len(CONFIG_COLOURS)]


def _seed_lines(curves: "pd.DataFrame", cfg_name: str, col: str) -> "pd.DataFrame":
    """``(step, seed)`` table of one logged column for one config (one column per seed)."""
    d = curves[curves.config == cfg_name].dropna(subset=[col])
    if "seed" in d:
        return d.pivot_table(index="step", columns="seed", values=col)
    return d.groupby("step")[[col]].mean()


def _draw_mean_band(ax: Any, per_seed: "pd.DataFrame", colour: str, label: str, smooth: int) -> None:
    m = per_seed.mean(axis=1)
    ax.plot(m.index, m, color=colour, alpha=0.3, linewidth=0.8)
    ax.plot(m.index, m.rolling(smooth, min_periods=1, center=True).mean(), color=colour, linewidth=2, label=label)
    if per_seed.shape[1] > 1:
        ax.fill_between(m.index, per_seed.min(axis=1), per_seed.max(axis=1), color=colour, alpha=0.12, linewidth=0)


def plot_semantic_reward(curves: "pd.DataFrame", configs: Sequence[str], labels: Mapping[str, str] | None = None,
                         *, smooth: int = 5) -> "Figure":
    """The semantic reward per GRPO step, each configuration against its own reward's range.

    Left: ``R_sem`` in [0, 2] of the set-distance configurations (``rewards/r_sem_<distance>/mean``), on an axis
    from 0 to 2. Right (when logged): EditGRPO's ``S_neg`` (``rewards/r_sem_neg/mean``), the negation-aware
    Chamfer *similarity* in [0, 1] that is one of its three reward components, not an ``R_sem``; on its own axis
    from 0 to 1. Lines: mean over seeds (thin: every step; thick: centred rolling mean of ``smooth`` steps), band:
    min-max over seeds. Colours follow the order of ``configs`` (:data:`CONFIG_COLOURS`, no yellow); legends sit below
    the panels, never over the data.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    labels = dict(labels or {})
    if "step" not in curves or "config" not in curves:
        raise PlotError("plot_semantic_reward: curves need the columns 'step' and 'config'")
    sem, neg = {}, {}
    for cfg_name in configs:
        d = curves[curves.config == cfg_name]
        logged = [c for c in d.columns if c.startswith("rewards/r_sem_") and c.endswith("/mean") and d[c].notna().any()]
        for c in logged:
            (neg if c == "rewards/r_sem_neg/mean" else sem).setdefault(cfg_name, c)
    if not sem and not neg:
        raise PlotError("plot_semantic_reward: no configuration logs a rewards/r_sem_*/mean column")
    panels = [p for p in (("sem", sem), ("neg", neg)) if p[1]]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels), 4.2), squeeze=False)
    for ax, (kind, cols) in zip(axes[0], panels):
        for cfg_name, col in cols.items():
            k = list(configs).index(cfg_name)
            dist = col.split("/")[1].removeprefix("r_sem_")
            name = labels.get(cfg_name, cfg_name) + (f" (R_sem, {dist})" if kind == "sem" else " (S_neg)")
            _draw_mean_band(ax, _seed_lines(curves, cfg_name, col), _config_colour(k), name, smooth)
        if kind == "sem":
            # a stratum-weighted reward (chamfer_recall_<a>_bal<w>) spans 0-2w: the axis shows all of it
            top = max([2.0] + [float(np.nanmax(curves.loc[curves.config == c, col])) for c, col in cols.items()])
            ax.set_ylim(0, 2.05 if top <= 2.0 else top * 1.025)
            ax.set_ylabel("R_sem = (1 - D_F) + (1 - D_I), range 0-2")
            ax.set_title("set-distance rewards: R_sem" + (" (a _bal<w> reward: up to 2w)" if top > 2.0 else ""))
        else:
            ax.set_ylim(0, 1.025)
            ax.set_ylabel("S_neg = 1 - D_neg / 2, range 0-1")
            ax.set_title("EditGRPO: its S_neg component (not R_sem)")
        ax.set_xlabel("GRPO step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, frameon=False)
    n_seeds = int(curves["seed"].nunique()) if "seed" in curves else 1
    fig.text(0.5, 1.0, f"mean over {n_seeds} seed(s), band: min-max over seeds; thick: rolling mean of {smooth} steps",
             ha="center", va="bottom", fontsize=9, color="0.3")
    fig.tight_layout()
    return fig


#: what each configuration's ``reward_groups/content_std`` measures, by the reward column it logs
_CONTENT_NAMES = (("rewards/r_f1_14/", "F1_14 + F1_ent + S_neg, 0-3"), ("rewards/r_fact/", "w_fact R_fact + w_check R_check"),
                  ("rewards/r_exact/", "R_exact, 0-2"), ("rewards/r_sem_", "R_sem, 0-2"))


def plot_reward_sparsity(curves: "pd.DataFrame", configs: Sequence[str], labels: Mapping[str, str] | None = None,
                         *, smooth: int = 3) -> "Figure":
    """How much a GRPO group's rewards spread, per configuration.

    Top: the share of groups in which no completion matches a reference section exactly (``R_exact = 0`` for all
    G, ``reward_groups/exact_all_zero``), mean over steps, bar = mean over seeds, whisker = min-max over seeds.
    Below: one panel per configuration with its own y axis from 0: the mean within-group std of *its own* content
    reward (``reward_groups/content_std``; the panel title names that reward and its range). The rewards have
    different ranges, so the panels are not drawn on one axis; a configuration without a content reward
    (R_fmt: std 0 throughout) is left out and named in the note.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    labels = dict(labels or {})
    need = {"step", "config", "reward_groups/exact_all_zero", "reward_groups/content_std"} - set(curves.columns)
    if need:
        raise PlotError(f"plot_reward_sparsity: curves lack the columns {sorted(need)}")
    have = [c for c in configs if (curves.config == c).any()]
    if not have:
        raise PlotError("plot_reward_sparsity: none of the configs has curves")
    content = []
    for c in have:
        v = curves.loc[curves.config == c, "reward_groups/content_std"]
        if v.notna().any() and float(v.abs().max()) > 0:
            content.append(c)
    skipped = [labels.get(c, c) for c in have if c not in content]
    ncols = min(4, max(len(content), 1))
    nrows = -(-len(content) // ncols) if content else 0
    fig = plt.figure(figsize=(3.8 * ncols + 0.6, 0.32 * len(have) + 1.6 + 3.0 * nrows))
    gs = fig.add_gridspec(1 + nrows, ncols, height_ratios=[0.32 * len(have) + 0.9] + [2.2] * nrows, hspace=0.95,
                          wspace=0.32)
    ax = fig.add_subplot(gs[0, :])
    per_run = curves[curves.config.isin(have)].groupby(["config", "seed"] if "seed" in curves else ["config"])[
        "reward_groups/exact_all_zero"].mean()
    for y, c in enumerate(have):
        v = np.atleast_1d(per_run.loc[c].to_numpy(dtype=np.float64))
        m = float(np.nanmean(v))
        ax.barh(y, m, color=_config_colour(list(configs).index(c)), height=0.65)
        if len(v) > 1:
            ax.errorbar(m, y, xerr=[[m - np.nanmin(v)], [np.nanmax(v) - m]], color="black", capsize=3, linewidth=1)
        ax.text(min(float(np.nanmax(v)), 1.0) + 0.012, y, f"{m:.2f}", va="center", fontsize=9)
    ax.set_yticks(range(len(have)), [labels.get(c, c) for c in have])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("share of groups with R_exact = 0 for every completion (mean over steps; whisker: min-max over seeds)")
    ax.set_title("(a) exact match is sparse: groups in which no completion matches a reference section", loc="left")
    axes = []
    for i, c in enumerate(content):
        a = fig.add_subplot(gs[1 + i // ncols, i % ncols])
        d = curves[curves.config == c]
        logged = [col for col in d.columns if col.endswith("/mean") and d[col].notna().any()]
        what = next((n for pre, n in _CONTENT_NAMES if any(col.startswith(pre) for col in logged)), "content reward")
        _draw_mean_band(a, _seed_lines(curves, c, "reward_groups/content_std"),
                        _config_colour(list(configs).index(c)), labels.get(c, c), smooth)
        a.set_ylim(0, None)
        a.set_title(f"{labels.get(c, c)}\n({what})", fontsize=10)
        a.set_xlabel("GRPO step")
        a.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
        if i % ncols == 0:
            a.set_ylabel("within-group std")
        axes.append(a)
    if axes:
        axes[0].figure.text(0.02, axes[0].get_position().y1 + 0.62 / fig.get_figheight(),  # above 2-line titles
                            "(b) within-group std of each configuration's own content reward (own axis, from 0)",
                            fontsize=11, ha="left", va="bottom")
    n_seeds = int(curves["seed"].nunique()) if "seed" in curves else 1
    note = (f"(b): mean over {n_seeds} seed(s), band min-max over seeds, thick: rolling mean of {smooth} steps."
            + (f" Without a content reward (std 0): {', '.join(skipped)}." if skipped else ""))
    fig.text(0.02, 0.0, note, fontsize=9, color="0.3", ha="left", va="top")
    return fig


#: the silence panel's measure, in order of preference: (column of the expected-reward view, what it is)
_SILENCE = (("mixed_margin", "stating a finding minus staying silent, over the references as they come"),
            ("silence_margin", "stating a finding minus staying silent, abnormal references"),
            ("gap", "SFT samples minus the modal normal report, abnormal references"))


def _silence_panel(ax: Any, expected: "pd.DataFrame") -> None:
    """The last panel of :func:`plot_audit`: one bar per reward of the silence measure, coloured by its sign."""
    from matplotlib.patches import Patch

    col, what = next(((c, w) for c, w in _SILENCE if c in expected), (None, None))
    if col is None:
        raise PlotError(f"plot_audit: expected has none of the columns {[c for c, _ in _SILENCE]}")
    e = expected.iloc[::-1]
    v = e[col].to_numpy(float)
    y = np.arange(len(e))
    pays = v < 0
    ax.barh(y, v, height=0.6, color=[PALETTE[3] if p else PALETTE[0] for p in pays], edgecolor="black", lw=0.6)
    ax.axvline(0.0, color="0.2", lw=1.0)
    span = float(np.nanmax(np.abs(v))) if np.isfinite(v).any() else 1.0
    for yi, vi in zip(y, v):
        if np.isfinite(vi):
            ax.text(vi + (0.02 if vi >= 0 else -0.02) * span, yi, f"{vi:+.3f}", va="center",
                    ha="left" if vi >= 0 else "right", fontsize=9)
    finite = v[np.isfinite(v)]  # a reward with no sample on one side has no margin (NaN): no bar, no limit
    lo, hi = (float(min(finite.min(), 0.0)), float(max(finite.max(), 0.0))) if finite.size else (0.0, 0.0)
    span = span if np.isfinite(span) and span > 0 else 1.0
    ax.set_xlim(min(1.35 * lo, -0.25 * span), max(1.35 * hi, 0.25 * span))  # room for the value labels
    ax.set_yticks(y, e["label"], fontsize=9)
    ax.set_xlabel(f"{col}: {what}\n(mean reward of the SFT policy's own samples; not tested)", fontsize=9)
    n_pay = int(np.nansum(pays))
    ax.set_title(f"does silence pay? yes (< 0) under {n_pay} of {int(np.isfinite(v).sum())} rewards",
                 fontsize=10)
    ax.legend(handles=[Patch(facecolor=PALETTE[3], edgecolor="black", label="< 0: silence pays"),
                       Patch(facecolor=PALETTE[0], edgecolor="black", label=">= 0: stating a finding pays")],
              loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=9, frameon=False)


def plot_audit(table: "pd.DataFrame", expected: "pd.DataFrame | None" = None) -> "Figure":
    """The reward audit: what each reward pays for edited and degenerate reports, and whether it pays for silence.

    Per stratum a heatmap of :func:`sdrlib.experiments.audit.relative_table` (rows: rewards; cells: each case's mean
    reward as a share of the reference's, on viridis from 0 to 1 with a colour bar; "skip" = the case cannot be built
    there). The columns of :data:`sdrlib.experiments.audit.CORRECT_CASES` come first, a white line parts them from the edited and degenerate
    cases, and a cell of those that a reward pays at least as much as the lowest-paid correct report of its row is
    outlined in black: the reward cannot tell that error from a correct report. ``table``:
    :attr:`sdrlib.experiments.audit.AuditResult.table`.

    ``expected`` (rows of :func:`sdrlib.experiments.audit.expected_reward_view`), when given, answers the last panel's
    title, "does silence pay?": one bar per reward, the mean reward of the SFT policy's samples that state a finding
    minus those that stay silent, over the references as they come (``mixed_margin``; an older view without it:
    ``silence_margin``, then ``gap``); below 0 (vermillion) an uncertain policy earns more by staying silent, at or
    above 0 (blue) it does not. Each bar carries its value. 2 x 2 grid, each heatmap wide enough for its 13 cells'
    two-decimal values at 9 pt. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    strata = [s for s in ("no_finding", "single", "multi") if (table["stratum"] == s).any()]
    n = len(strata) + (expected is not None)
    rows = (n + 1) // 2
    fig, grid = plt.subplots(rows, 2, figsize=(16, 5.3 * rows), squeeze=False)
    axes = grid.ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    for k, (ax, st) in enumerate(zip(axes, strata)):
        rel = relative_table(table, st)
        values = rel.to_numpy(float)
        finite = values[np.isfinite(values)]
        extend = {(False, False): "neither", (True, False): "min", (False, True): "max", (True, True): "both"}[
            (bool(finite.size and finite.min() < 0.0), bool(finite.size and finite.max() > 1.0))]
        im = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        bar = fig.colorbar(im, ax=ax, fraction=0.035, pad=0.015, extend=extend)
        bar.set_label("share of the reference's reward", fontsize=9)
        correct = [j for j, c in enumerate(rel.columns) if c in CORRECT_CASES]
        for i in range(rel.shape[0]):
            paid = values[i, correct]
            floor = np.nanmin(paid) if np.isfinite(paid).any() else np.nan
            for j in range(rel.shape[1]):
                v = values[i, j]
                ax.text(j, i, "skip" if not np.isfinite(v) else f"{v:.2f}", ha="center", va="center", fontsize=9,
                        color="0.45" if not np.isfinite(v) else "black" if v > 0.6 else "white")
                if j not in correct and np.isfinite(v) and np.isfinite(floor) and v >= floor - 1e-9:
                    ax.add_patch(Rectangle((j - 0.46, i - 0.44), 0.92, 0.88, fill=False, edgecolor="black", lw=1.6,
                                           label="_paid like a correct report"))
        if correct and len(correct) < rel.shape[1]:
            ax.axvline(max(correct) + 0.5, color="white", lw=3)
        ax.grid(False)
        ax.set_xticks(range(rel.shape[1]), [CASE_LABELS[c] for c in rel.columns], rotation=35, ha="right", fontsize=9)
        ax.set_yticks(range(rel.shape[0]), rel.index, fontsize=9)
        n_ref = int(table[(table["stratum"] == st) & (table["case"] == "reference")]["n"].max())
        ax.set_title(f"{st.replace('_', ' ')} references (n = {n_ref}): share of the reference's reward",
                     fontsize=10)
    if expected is not None:
        _silence_panel(axes[n - 1], expected)
    fig.suptitle("Reward audit: mean reward of edited / degenerate completions as a share of the reference's\n"
                 "left of the white line: correct reports; outlined: an error paid at least as much as a correct "
                 "report of its row", fontsize=11)
    fig.tight_layout()
    return fig
