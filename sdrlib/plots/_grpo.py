"""Notebook 04's figures: GRPO training curves, the semantic reward per step, how much a group's rewards spread,
and the reward audit (what each reward pays for edited and degenerate reports).

``curves`` are TRL's logged columns per step, one row per config x seed x step
(:func:`sdrlib.training.read_curves`); the audit figure draws :func:`sdrlib.experiments.audit.relative_table` of an
audit's table. Every line is a mean over seeds with a min-max band. Left out: training, the audit itself and any
statistic beyond those bands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from sdrlib.experiments.audit import CASE_LABELS, relative_table
from sdrlib.plots._style import PALETTE
from sdrlib.results import PlotError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_grpo_curves", "plot_semantic_reward", "plot_reward_sparsity", "plot_audit"]


def plot_grpo_curves(curves: "pd.DataFrame", configs: Sequence[str], labels: Mapping[str, str] | None = None,
                     *, smooth: int = 5) -> "Figure":
    """GRPO training curves, one panel per quantity so that no two reward ranges share an axis.

    ``curves``: TRL's logged columns per step (``step``, ``config``, ``seed``, ``rewards/r_fmt/mean``,
    ``rewards/r_sem_<distance>/mean``, ``rewards/r_exact/mean``, ``kl``, ``completions/mean_length``), one
    row per config x seed x step. Panels: R_fmt (range [0, 1]); the content reward (R_sem in [0, 2] for the
    set-distance configs, R_exact in [0, 2]); KL to the SFT policy; completion length. Each line is the
    mean over seeds, the band its min-max over seeds; thin lines are the raw per-step means and thick ones
    a centred rolling mean over ``smooth`` logged steps (1 = none), as the axis labels say. Step ticks are
    integers.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    need = {"step", "config"} - set(curves.columns)
    if need:
        raise PlotError(f"plot_grpo_curves: curves lack the columns {sorted(need)}")
    if smooth < 1:
        raise PlotError(f"plot_grpo_curves: smooth must be >= 1 logged steps, got {smooth}")
    labels = dict(labels or {})
    # the content reward of R_exact and of the set-distance rewards (both in [0, 2]); EditGRPO's r_sem_neg is one
    # [0, 1] component of its composite reward and G-CARL has none of these, so neither is drawn there
    content = [c for c in curves.columns if (c.startswith("rewards/r_sem_") or c == "rewards/r_exact/mean")
               and c.endswith("/mean") and c != "rewards/r_sem_neg/mean"]
    panels = [(["rewards/r_fmt/mean"], "R_fmt (format, 0-1)", (-0.03, 1.03)),
              (content, "content reward of R_exact / R_sem (0-2)", (-0.05, 2.05)),
              (["kl"], "KL to the SFT policy", None),
              (["completions/mean_length"], "completion length (tokens)", None)]
    panels = [p for p in panels if any(c in curves.columns and curves[c].notna().any() for c in p[0])]
    if not panels:
        raise PlotError("plot_grpo_curves: none of the reward / kl / length columns has a value")
    ncols = 2 if len(panels) > 2 else len(panels)  # a 2 x 2 grid stays readable when shrunk (gallery, README)
    nrows = -(-len(panels) // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.4 * nrows), squeeze=False)
    axes = list(grid.ravel())
    for ax in axes[len(panels):]:
        ax.axis("off")
    axes = axes[: len(panels)]
    for ax, (cols, name, ylim) in zip(axes, panels):
        for k, cfg_name in enumerate(configs):
            d = curves[curves.config == cfg_name]
            col = next((c for c in cols if c in d.columns and d[c].notna().any()), None)
            if col is None:
                continue
            per_seed = d.pivot_table(index="step", columns="seed", values=col) if "seed" in d else \
                d.groupby("step")[[col]].mean()
            m = per_seed.mean(axis=1)
            colour = PALETTE[k % len(PALETTE)]
            ax.plot(m.index, m, color=colour, alpha=0.3, linewidth=0.8)
            ax.plot(m.index, m.rolling(smooth, min_periods=1, center=True).mean(), color=colour, linewidth=2,
                    label=labels.get(cfg_name, cfg_name))
            if per_seed.shape[1] > 1:
                ax.fill_between(m.index, per_seed.min(axis=1), per_seed.max(axis=1), color=colour, alpha=0.08,
                                linewidth=0)
        ax.set_title(name, fontsize=11)
        ax.set_xlabel("GRPO step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if ylim:
            ax.set_ylim(*ylim)
    n_seeds = int(curves["seed"].nunique()) if "seed" in curves else 1
    fig.text(0.5, -0.02, f"Lines: mean over {n_seeds} seed(s)" + (" (band: min-max over seeds)" if n_seeds > 1 else "")
             + (f"; thin: every logged step, thick: centred rolling mean of {smooth} steps" if smooth > 1 else
                "; no smoothing"), ha="center", va="top", fontsize=9, color="0.3")
    handles, names = axes[0].get_legend_handles_labels()
    for a in axes[1:]:  # the legend of the panel with the most configs
        h, n = a.get_legend_handles_labels()
        if len(n) > len(names):
            handles, names = h, n
    fig.legend(handles, names, loc="lower center", ncol=min(len(names), 4), bbox_to_anchor=(0.5, 1.0),
               frameon=False, fontsize=10)
    fig.tight_layout()
    return fig


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
    min-max over seeds. Colours follow the order of ``configs`` (as in :func:`plot_grpo_curves`); legends sit below
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
            _draw_mean_band(ax, _seed_lines(curves, cfg_name, col), PALETTE[k % len(PALETTE)], name, smooth)
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
        ax.barh(y, m, color=PALETTE[list(configs).index(c) % len(PALETTE)], height=0.65)
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
                        PALETTE[list(configs).index(c) % len(PALETTE)], labels.get(c, c), smooth)
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


def plot_audit(table: "pd.DataFrame", expected: "pd.DataFrame | None" = None) -> "Figure":
    """Heatmaps of :func:`sdrlib.experiments.audit.relative_table` per stratum (cells of skipped cases marked "skip")
    and, when given, the expected-reward gap (policy samples - modal normal report, rows of
    :func:`sdrlib.experiments.audit.expected_reward_view`) per reward, on a 2 x 2 grid (each heatmap wide enough for
    its 10 cells' two-decimal values at 9 pt). ``table``: :attr:`sdrlib.experiments.audit.AuditResult.table`. Bars in
    the colour cycle's C0 / C1 / C3 (Okabe-Ito under :func:`style`). Returns the figure."""
    import matplotlib.pyplot as plt

    strata = [s for s in ("no_finding", "single", "multi") if (table["stratum"] == s).any()]
    n = len(strata) + (expected is not None)
    rows = (n + 1) // 2
    fig, grid = plt.subplots(rows, 2, figsize=(15, 5.0 * rows), squeeze=False)
    axes = grid.ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    for k, (ax, st) in enumerate(zip(axes, strata)):
        rel = relative_table(table, st)
        ax.imshow(rel.to_numpy(float), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        for i in range(rel.shape[0]):
            for j in range(rel.shape[1]):
                v = rel.iat[i, j]
                ax.text(j, i, "skip" if not np.isfinite(v) else f"{v:.2f}", ha="center", va="center", fontsize=9,
                        color="0.45" if not np.isfinite(v) else "black" if v > 0.6 else "white")
        ax.grid(False)
        ax.set_xticks(range(rel.shape[1]), [CASE_LABELS[c] for c in rel.columns], rotation=35, ha="right", fontsize=9)
        ax.set_yticks(range(rel.shape[0]), rel.index, fontsize=9)
        n_ref = int(table[(table["stratum"] == st) & (table["case"] == "reference")]["n"].max())
        ax.set_title(f"{st.replace('_', ' ')} references (n = {n_ref}): share of the reference's reward",
                     fontsize=10)
    if expected is not None:
        ax = axes[n - 1]
        e = expected.iloc[::-1]
        y = np.arange(len(e))
        bars = [("gap", "SFT samples - modal normal report", "C0")]
        if "silence_margin" in e:
            bars.append(("silence_margin", "SFT samples stating a finding - silent ones", "C1"))
        if "mixed_margin" in e:
            bars.append(("mixed_margin", "the same, normal references included (strata weighted)", "C3"))
        h = 0.8 / len(bars)
        for b, (col, lab, c) in enumerate(bars):
            ax.barh(y + (b - (len(bars) - 1) / 2) * h, e[col], height=h, color=c, label=lab)
        ax.axvline(0.0, color="0.3", lw=0.8)
        ax.set_yticks(y, e["label"], fontsize=9)
        ax.set_xlabel("mean reward difference (abnormal references unless said)", fontsize=9)
        ax.set_title("does silence pay? (< 0: yes)", fontsize=10)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=9, frameon=False)
    fig.suptitle("Reward audit: mean reward of edited / degenerate completions as a share of the reference's",
                 fontsize=11)
    fig.tight_layout()
    return fig
