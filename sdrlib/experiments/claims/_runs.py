"""The claim groups of notebooks 00, 03, 05 and 06 and of the runner: the report language, SFT against the
image-blind baselines, best-of-K selection against random (and notebook 05's conclusion), selection with the recall
distance, pruning, and the run time.

Scope: one function per group, each returning the group's lines (an empty list when the run lacks what it reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdrlib import table_names
from sdrlib.experiments.claims._common import _count_words, _direction, _join, _meta_field, _rows, _src
from sdrlib.metrics.significance import format_p
from sdrlib.metrics.verdict import NO_DIFF, family_directions
from sdrlib.results import read_result_table


def report_language(results_dir: str | Path, *, table: str = table_names.REPORT_LANGUAGE,
                    ours: str = "this corpus", ref: str = "IU-Xray reference") -> list[str]:
    """Notebook 00's report-language statistics beside the IU-Xray reference, each with what it counts (the
    ``counts`` column when the table has one) and no comparison where the reference counts something else
    (an empty reference cell)."""
    t = read_result_table(results_dir, table)
    if t is None:
        return []
    if ours not in t.columns:
        raise KeyError(ours)  # named with its file by results_section
    parts = []
    for _, r in t.iterrows():
        what = f" ({r['counts']})" if "counts" in t.columns and pd.notna(r["counts"]) else ""
        alike = ref in t.columns and pd.notna(r[ref])
        vs = f" vs IU-Xray {r[ref]:g}" if alike else " (no IU-Xray figure counted alike)"
        parts.append(f"{r.iloc[0]}{what} {r[ours]:g}{vs}")
    return [f"- Report language, this corpus vs IU-Xray ({_src(table)}): " + "; ".join(parts) + "."]


def sft_vs_baselines(results_dir: str | Path, *, table: str = table_names.SFT_VS_BASELINES_SIGNIFICANCE,
                     p_col: str = "p_value", alpha: float = 0.05) -> list[str]:
    """SFT against each image-blind baseline, per section and metric (paired bootstrap), with the rule's word (Holm
    over the table, :func:`sdrlib.metrics.verdict.family_directions`)."""
    t = read_result_table(results_dir, table)
    if t is None:
        return []
    out = []
    t = t.reset_index(drop=True)
    words = pd.Series(_words(t, p_col, alpha), index=t.index)  # the table is one family (Holm)
    for i, r in t.iterrows():
        word = f"{words[i]} it" if words[i] != NO_DIFF else f"{NO_DIFF} at this size"
        out.append(f"- {r.section.capitalize()} {str(r.metric).split('@')[0]}: SFT {r.value_a:.3f} vs {r.B} "
                   f"{r.value_b:.3f}, {word} (diff {r['diff']:+.3f}, 95 % CI [{r.ci_low:+.3f}, {r.ci_high:+.3f}], "
                   f"{format_p(r[p_col])}; {_src(table)}).")
    return out


_SELECTION_TABLES = (
    (table_names.SELECTION_HEADLINE_FINDINGS_VAL, "picked on validation studies, scored on test"),
    (table_names.SELECTION_HEADLINE_FINDINGS, "picked and scored on the test set, as in the paper: optimistic"))


def _change_range(imp: pd.Series, what: str) -> str:
    """``"<what> -0.5 % to +4.8 %"``: the range of the finite relative changes (%) of ``imp``; ``"no relative
    change (random is 0)"`` when none is finite."""
    imp = imp[np.isfinite(imp)]
    return f"{what} {imp.min():+.1f} % to {imp.max():+.1f} %" if len(imp) else "no relative change (random is 0)"


def selection_best_vs_random(results_dir: str | Path, *,
                             tables: Sequence[tuple[str, str]] = _SELECTION_TABLES) -> list[str]:
    """Notebook 05's best setting per policy and metric against the exact random expectation: per metric, on how
    many policies it is above random and the range of the relative change. ``tables``: ``(name, how the setting
    was picked)``; the value column is ``best`` (the paper's on-test pick) or ``test`` (picked on validation)."""
    out = []
    for name, label in tables:
        t = read_result_table(results_dir, name)
        if t is None:
            continue
        col = "best" if "best" in t.columns else "test"
        t = t[pd.to_numeric(t[col], errors="coerce").notna() & pd.to_numeric(t.random, errors="coerce").notna()].copy()
        t[col], t["random"] = t[col].astype(float), t.random.astype(float)
        for m, g in t.groupby("metric", sort=False):
            above = int((g[col] > g.random).sum())
            change = _change_range(g.improvement_pct.astype(float), "change")
            out.append(f"- {m}, best setting per policy ({label}) vs random ({_src(name)}): higher mean than random "
                       f"(not tested here) for {_count_words(above, len(g))} policies; {change}.")
    return out


def _selection_answer(sig: pd.DataFrame, words: pd.Series, section: str, metrics: Sequence[str]) -> str:
    """Notebook 05's first sentence: does the picked bank setting choose better reports than a random candidate, per
    metric, counted over policies under the rule (Holm over the whole significance table)."""
    rnd = sig[(sig.section == section) & sig.metric.isin(list(metrics)) & (sig.B == "random")]
    parts = []
    for m, g in rnd.groupby("metric", sort=False):
        w = words[g.index]
        up, down = int((w == "above").sum()), int((w == "below").sum())
        parts.append(f"{m} above random for {up} of {len(g)} policies, below for {down}")
    what = "; ".join(parts) if parts else "no comparison with random in the table"
    return (f"- Answer: does best-of-K selection against the training bank pick better {section.capitalize()} than a "
            f"random candidate? Under the project's rule (Holm over the table): {what}.")


def selection_conclusion(results_dir: str | Path, *, section: str = "findings",
                         metrics: Sequence[str] = ("BS-F1", "CXB-14", "clin-F1 (sample)"),
                         headlines: Sequence[tuple[str, str]] = _SELECTION_TABLES,
                         significance: str = table_names.SELECTION_SIGNIFICANCE,
                         normal: str = table_names.NORMAL_SHARE) -> list[str]:
    """Notebook 05's conclusion, one sentence per line, every number read from its result files; the first line
    answers the notebook's question (:func:`_selection_answer`), when the significance table exists.

    1. The best bank setting per policy vs random for each of ``metrics`` (``section``), from the first of
       ``headlines`` present (picked on validation, else the paper's optimistic pick on test): the mean value over
       policies of the pick and of random and the range of the relative change; no direction (no test here).
    2. The paired bootstraps of ``significance`` (best method vs random and vs MBR, one row per policy): a policy is
       named with ``above`` / ``below`` under the project's rule (:func:`sdrlib.metrics.verdict.family_directions`:
       Holm over the whole table's comparisons, the interval excluding 0), its difference, 95 % interval and p
       (:func:`format_p`); the others are counted as "no difference detected at this size" with their smallest p.
    3. From ``normal`` (when present): the share of picks the offline labeler reads as normal, mean over policies,
       for the references, random and the best method.
    Tables that are missing give no line. Example line: ``"- Findings BS-F1, chamfer+min vs random (picked on
    validation; paired bootstrap over test studies, one row per policy): no difference detected at this size in
    all 7 policies (smallest p = 0.210) (`results/05_significance.csv`)."``
    """
    out = []
    for name, label in headlines:
        t = _rows(results_dir, name)
        if t is None:
            continue
        col = "best" if "best" in t.columns else "test"
        for m in metrics:
            g = t[t.metric == m]
            v, rnd = pd.to_numeric(g[col], errors="coerce"), pd.to_numeric(g.random, errors="coerce")
            ok = v.notna() & rnd.notna()
            if not ok.any():
                continue
            change = _change_range(pd.to_numeric(g.improvement_pct, errors="coerce")[ok], "relative change")
            out.append(f"- {section.capitalize()} {m}, best bank setting per policy ({label}): mean over "
                       f"{int(ok.sum())} policies {v[ok].mean():.3f}, random {rnd[ok].mean():.3f}; {change} "
                       f"({_src(name)}).")
        break
    sig = _rows(results_dir, significance)
    if sig is not None:
        pick = _meta_field(results_dir, significance, "pick") or "unknown split"
        sig = sig.reset_index(drop=True)
        words = pd.Series(_words(sig), index=sig.index)  # the table is one family (Holm); kept apart from its columns
        d = sig[(sig.section == section) & sig.metric.isin(list(metrics))]
        for (m, b), g in d.groupby(["metric", "B"], sort=False):
            named, rest = [], []
            for i, r in zip(g.index, g.itertuples(index=False)):
                v = words[i]
                if v == NO_DIFF:
                    rest.append(float(r.p_value))
                else:
                    named.append(f"{r.policy} {v} (diff {r.diff:+.3f}, 95 % CI [{r.ci_low:+.3f}, {r.ci_high:+.3f}], "
                                 f"{format_p(r.p_value)})")
            if rest:
                named.append(f"no difference detected at this size in {_count_words(len(rest), len(g))} policies "
                             f"(smallest {format_p(min(rest))})")
            out.append(f"- {section.capitalize()} {m}, {g.A.iloc[0]} vs {b} (picked on {pick}; paired bootstrap over "
                       f"test studies, one row per policy): {'; '.join(named)} ({_src(significance)}).")
    if sig is not None:
        out.insert(0, _selection_answer(sig, words, section, metrics))
    nt = _rows(results_dir, normal)
    if nt is not None:
        means = nt.groupby("method", sort=False).normal_share.mean()
        shown = [f"{m} {means[m]:.2f}" for m in means.index if np.isfinite(means[m])]
        if shown:
            out.append(f"- Share of reports the offline labeler reads as normal, mean over "
                       f"{nt.policy.nunique()} policies: {'; '.join(shown)} ({_src(normal)}).")
    return out


def _words(t: pd.DataFrame, p_col: str = "p_value", alpha: float = 0.05) -> list[str]:
    """The rule's word per row, the table one family (:func:`sdrlib.metrics.verdict.family_directions`); a table
    without the columns it reads gives "no difference" words here and fails where its numbers are read (the
    scripts name the file there)."""
    if not {"diff", "ci_low", "ci_high"} <= set(t.columns):
        return [NO_DIFF] * len(t)
    return family_directions(t.rename(columns={p_col: "p_value"}) if p_col != "p_value" else t, alpha=alpha)


def pruning(results_dir: str | Path, *, metric: str = "BS-F1", p_col: str = "p_value",
            alpha: float = 0.05) -> list[str]:
    """Notebook 06: tokens saved per policy (live settings), the survivor vs standard best-of-K on ``metric``
    (above / below only under the project's rule, :func:`sdrlib.metrics.verdict.family_directions`: Holm over the
    table's comparisons at ``alpha``, the interval excluding 0),
    and, when present, pruning vs random, survivor = standard pick vs 1/K, collapsed candidates."""
    tok_t, vs_t, vr_t = table_names.PRUNING_TOKENS, table_names.PRUNING_VS_STANDARD, table_names.PRUNING_VS_RANDOM
    ag_t, co_t = table_names.SURVIVOR_VS_STANDARD_PICK, table_names.CANDIDATE_COLLAPSE
    out = []
    tok = read_result_table(results_dir, tok_t)
    if tok is not None:
        live = tok[tok.source == "live"] if "source" in tok.columns else tok
        for _, r in live.iterrows():
            out.append(f"- {r.policy}, {r.distance} (live): pruning generates {r['pruning tokens / study']:.0f} tokens "
                       f"per study against {r['standard tokens / study']:.0f} for the K full generations, "
                       f"{r['tokens saved %']:.1f} % {'fewer' if r['tokens saved %'] > 0 else 'more'} "
                       f"({_src(tok_t)}).")
        names = set(live.distance)
    else:
        names = None
    vs = read_result_table(results_dir, vs_t)
    if vs is not None:
        vs = vs.reset_index(drop=True)
        words = pd.Series(_words(vs, p_col, alpha), index=vs.index)
        g = vs[(vs.metric == metric) & (names is None or vs.distance.isin(names or []))]
        for i, r in g.iterrows():
            word = words[i] if words[i] != NO_DIFF else "not distinguishable from"
            out.append(f"- {r.policy}, {r.distance}, {r.section.capitalize()} {metric}: survivor {r.value_a:.3f}, "
                       f"{word} standard best-of-K {r.value_b:.3f} (diff {r['diff']:+.3f}, 95 % CI "
                       f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}], {format_p(r[p_col])}; {_src(vs_t)}).")
    vr = read_result_table(results_dir, vr_t)
    if vr is not None:
        vr = vr[vr.distance.isin(names)] if names else vr
        vr = vr.reset_index(drop=True)
        words = pd.Series(_words(vr, p_col, alpha), index=vr.index)
        for (policy, n, section), g in vr.groupby(["policy", "distance", "section"], sort=False):
            up, down, tie = g[g["diff"] > 0], g[g["diff"] < 0], g[g["diff"] == 0]
            sig_up, sig_down = int((words[g.index] == "above").sum()), int((words[g.index] == "below").sum())
            ties = f", equal on {len(tie)} ({_join(list(tie.metric))})" if len(tie) else ""
            out.append(f"- {policy}, {n}, {section.capitalize()}: pruning has the higher mean on {len(up)} of {len(g)} "
                       f"metrics ({_join(list(up.metric))}), the lower on {len(down)} ({_join(list(down.metric))})"
                       f"{ties}; under the rule (Holm over the table): {sig_up} above random, {sig_down} below "
                       f"({_src(vr_t)}).")
    ag = read_result_table(results_dir, ag_t)
    if ag is not None:
        ag = ag[ag.distance.isin(names)] if names else ag
        for _, r in ag.iterrows():
            tested = pd.notna(r.p_value) and r.p_value < alpha  # one exact test: a family of one
            side = ("above" if r.rate > r.chance else "below") if tested and r.rate != r.chance else \
                "not distinguishable from"
            out.append(f"- {r.policy}, {r.distance}: the survivor is standard best-of-K's pick in {int(r.same)} of "
                       f"{int(r.n)} studies ({100 * r.rate:.1f} %), {side} the chance rate {100 * r.chance:.0f} % "
                       f"(exact binomial {format_p(r.p_value)}; {_src(ag_t)}).")
    co = read_result_table(results_dir, co_t)
    if co is not None:
        for _, r in co.iterrows():
            out.append(f"- {r.policy}: the K candidates carry identical positive labels in "
                       f"{100 * r['same labels']:.0f} % of {int(r.studies)} studies and identical text in "
                       f"{100 * r['same text']:.0f} % ({_src(co_t)}).")
    return out


def run_time(results_dir: str | Path, *, table: str = table_names.RUN_SUMMARY) -> list[str]:
    """The run's wall-clock per notebook and in all (``run_summary``, written by the runner), with its commit."""
    t = _rows(results_dir, table)
    if t is None:
        return []
    ran = t[t.seconds.notna()] if "seconds" in t.columns else t  # a resumed run (--from) lists the others unrun
    parts = [f"{str(r.notebook).split('_')[0]} {r.seconds:.0f}" for _, r in ran.iterrows()]
    total = float(t.total_seconds.iloc[0]) if "total_seconds" in t.columns else float(t.seconds.sum())
    ok = int((t.status == "ok").sum()) if "status" in t.columns else len(t)
    commit = f" of commit `{t.git_commit.iloc[0]}`" if "git_commit" in t.columns else ""
    unrun = [str(r.notebook).split("_")[0] for _, r in t.iterrows() if r.notebook not in set(ran.notebook)]
    tail = f"; not run in this invocation: {', '.join(unrun)}" if unrun else ""
    return [f"- The run{commit} took {total:.0f} s in all ({ok} of {len(t)} notebooks ok), per notebook in "
            f"seconds: {', '.join(parts)}{tail} ({_src(table)})."]


def selection_recall(results_dir: str | Path, *, table: str = table_names.SELECTION_RECALL) -> list[str]:
    """Notebook 05's selection counterpart of the silence-proof reward: each method's corpus value vs random."""
    t = _rows(results_dir, table)
    if t is None:
        return []
    out = []
    for policy, g in t.groupby("policy", sort=False):
        rnd = float(g.random.iloc[0])
        items = [f"{r.method} {r.value:.3f}" for _, r in g.iterrows()]
        above = [str(r.method) for _, r in g.iterrows() if round(r.value - rnd, 3) > 0]
        out.append(f"- {policy}, Findings CheXpert-14 macro F1 of the picks, random {rnd:.3f}: {'; '.join(items)}; "
                   f"higher mean than random (not tested): {_join(above)} ({_src(table)}).")
    return out
