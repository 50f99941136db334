"""README sentences written from the result tables, and a check that quoted numbers come from the files named.

The README's "Expected results" quotes a run. So that no sentence outruns its table, the block between
``<!-- results:begin -->`` and ``<!-- results:end -->`` is written here from the files a run leaves in
``results/`` (``<name>.csv`` as written by :func:`sdrlib.results.save_table`), one function per claim group:

- :func:`report_language`: notebook 00's corpus statistics beside IU-Xray's, each saying what it counts;
- :func:`grpo_headline`: the GRPO headline table (``grpo_headline_findings``) as Markdown, configurations with
  one seed marked, and per row which configurations are above / below SFT;
- :func:`grpo_vs_sft`: each configuration against SFT from the paired test table (``grpo_significance`` by
  default; the p-value column is a parameter, so an across-seed test can replace the per-seed one);
- :func:`policy_movement`: the total reward's first vs last steps per configuration (rises / falls) and KL;
- :func:`positive_findings`: the share of Findings sections with no positive finding, per configuration vs SFT;
- :func:`sft_vs_baselines`: SFT against the image-blind baselines (paired bootstrap);
- :func:`selection_best_vs_random`: notebook 05's best setting per policy and metric against random;
- :func:`pruning`: tokens saved, survivor vs standard best-of-K, and (when the run wrote them) pruning vs
  random, survivor = standard pick vs 1/K, collapsed candidates.

Every sentence names the file it quotes, states a direction per configuration and says "every" / "all" only
when the count says so. :func:`results_section` joins them; :func:`check_block` verifies that every number in a
marked block appears in the files its paragraph names (``scripts/readme_numbers.py --check README.md``).

Left out: the run-time paragraph and numbers measured outside the run (they have no result file), and
claims about figures.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdrlib.experiments import conclusions as _conclusions
from sdrlib.experiments.reward_choice import REQUIRED
from sdrlib.metrics.significance import format_p, verdict
from sdrlib.results import (
    CELL_COLUMNS,
    SD_SUFFIX,
    TABLES_READ,
    ResultTableError,
    read_result_table,
    render_cell_table,
)

__all__ = ["BEGIN", "END", "report_language", "grpo_headline", "grpo_vs_sft", "policy_movement",
           "positive_findings", "sft_vs_baselines", "selection_best_vs_random", "pruning", "results_section",
           "numbers_in", "sweeping_words", "check_block", "check_tolerant", "marked_block", "GROUPS", "run_time", "reward_audit", "decomposition", "grpo_vs_rcham",
           "selection_recall", "selection_conclusion"]

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _rows(results_dir: str | Path, name: str) -> pd.DataFrame | None:
    """:func:`sdrlib.results.read_result_table`, with a table that has no rows read as missing too (its claim group writes nothing)."""
    t = read_result_table(results_dir, name)
    return t if t is not None and len(t) else None


def _src(*names: str) -> str:
    return ", ".join(f"`results/{n}.csv`" for n in names)


def _shown(x: object, digits: int = 3) -> float:
    """A table's number at the precision the tables show it (``digits`` decimals): sentences compare what a reader
    sees, so two configurations that print the same mean are neither above nor below each other. NaN stays NaN."""
    x = float(x)
    return round(x, digits) if np.isfinite(x) else float("nan")



def _direction(diff: float, digits: int = 3) -> str:
    """"above" / "below" / "equal (to 3 decimals) to". Example: ``_direction(-1e-4)`` -> "equal (to 3 decimals) to"."""
    return "equal (to 3 decimals) to" if round(diff, digits) == 0 else "above" if diff > 0 else "below"


def _name(r: pd.Series) -> str:
    """A table row's configuration, ``(1 seed)`` added when its ``seeds`` column says so."""
    one = "seeds" in r.index and pd.notna(r["seeds"]) and int(r["seeds"]) == 1
    return f"{r['config']} (1 seed)" if one else str(r["config"])


def _count_words(k: int, n: int) -> str:
    """Example: ``_count_words(8, 8)`` -> "all 8", ``_count_words(0, 8)`` -> "none of 8", else "k of n"."""
    return f"all {n}" if k == n and n > 1 else f"none of {n}" if k == 0 else f"{k} of {n}"


def _join(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "none"


# --------------------------------------------------------------------------- GRPO
def _seeds(results_dir: str | Path) -> dict[str, int]:
    for name in ("grpo_policy_movement", "grpo_positive_findings"):
        t = read_result_table(results_dir, name)
        if t is not None and {"config", "seeds"} <= set(t.columns):
            return {str(r.config): int(r.seeds) for r in t.itertuples()}
    return {}


def grpo_headline(results_dir: str | Path, *, table: str = "grpo_headline_findings", base: str = "SFT") -> list[str]:
    """The headline table as Markdown (bold removed; one-seed configurations marked ``(1 seed)``; rows that read
    ``not computed`` listed after it) and, per metric, the configurations above and below ``base``."""
    cells = read_result_table(results_dir, table)
    if cells is None:
        return []
    for col in CELL_COLUMNS:
        if col not in cells.columns:
            raise KeyError(col)  # named with its file by results_section
    t = render_cell_table(cells)  # the table as notebook 04 shows it (numbers in the file, formatted here)
    value = {(r.Model, r.Metric, r.config): _shown(r.mean) for r in cells.itertuples()}
    seeds = _seeds(results_dir)
    configs = [c for c in t.columns if c not in ("Model", "Metric")]
    shown = {c: f"{c} (1 seed)" if seeds.get(c) == 1 else c for c in configs}
    head = [shown[c] for c in configs]
    computed = t[~t[configs[0]].astype(str).str.startswith("not computed")]
    lines = [f"GRPO, Findings, mean ± std over seeds ({_src(table)}):", "",
             "| | " + " | ".join(head) + " |", "| --- |" + " ---: |" * len(configs) + ""]
    for _, r in computed.iterrows():
        lines.append(f"| {r['Metric']} | " + " | ".join(str(r[c]).replace("**", "") for c in configs) + " |")
    skipped = [str(m) for m in t[~t.index.isin(computed.index)].Metric]
    lines.append("")
    if skipped:
        lines.append(f"Not computed on this run: {', '.join(skipped)} (the file says why).")
    if base in configs:
        for _, r in computed.iterrows():
            v = {c: value[(r["Model"], r["Metric"], c)] for c in configs}
            b = v[base]
            others = [c for c in configs if c != base and np.isfinite(v[c])]
            up = [f"{shown[c]} {v[c]:.3f}" for c in others if v[c] > b]
            down = [f"{shown[c]} {v[c]:.3f}" for c in others if v[c] < b]
            multi = [c for c in others if seeds.get(c, 2) > 1]
            best = max(multi + [base], key=lambda c: v[c]) if multi else None
            lines.append(f"- {r['Metric']} (mean over seeds, {_src(table)}): {base} {b:.3f}; above {base}: "
                         f"{_join(up)}; below {base}: {_join(down)} ({len(down)} of {len(others)} configurations"
                         f" below)." + (f" Highest mean of {base} and the configurations with more than one seed: "
                                        f"{best}." if best else ""))
    return lines


def grpo_vs_sft(results_dir: str | Path, *, table: str = "grpo_significance", base: str = "SFT",
                section: str = "findings", metrics: Sequence[str] = ("clinical_f1_macro14", "bertscore_f1"),
                p_col: str | None = "p_value", diff_col: str | None = None, alpha: float = 0.05) -> list[str]:
    """Each configuration against ``base`` from a paired-test table with columns ``A, B, section, metric``, a
    difference (``diff_col``; default ``diff``, else ``mean_diff``) and either ``p_col`` (one p per row, the
    across-seed test) or, when the table has no such column, the per-seed ``n_sig`` / ``n_seeds`` columns.
    One sentence per metric: the configurations above and below, and how many differ significantly."""
    t = read_result_table(results_dir, table)
    if t is None:
        return []
    diff_col = diff_col or ("diff" if "diff" in t.columns else "mean_diff")
    if p_col is not None and p_col not in t.columns:
        p_col = None
    t = t[(t.B == base) & (t.section == section)]
    out = []
    for m in metrics:
        g = t[t.metric.str.split("@").str[0] == m]
        if not len(g):
            continue

        def sig(r) -> str:
            if p_col is not None:
                if "n_same_sign" in r.index and "n_seeds" in r.index and pd.notna(r["n_same_sign"]):
                    seeds = f"{int(r['n_same_sign'])} of {int(r['n_seeds'])}"
                elif "same_sign" in r.index and pd.notna(r["same_sign"]):  # runs before it was a number: "k of n"
                    seeds = str(r["same_sign"])
                else:
                    seeds = None
                return format_p(r[p_col]) + (f"; same sign in {seeds} seeds" if seeds else "")
            return f"p < {alpha:g} in {int(r.n_sig)} of {int(r.n_seeds)} seeds"

        up = [f"{r.A} {r[diff_col]:+.3f} ({sig(r)})" for _, r in g.iterrows() if r[diff_col] > 0]
        down = [f"{r.A} {r[diff_col]:+.3f} ({sig(r)})" for _, r in g.iterrows() if r[diff_col] < 0]
        if p_col is not None:
            n_sig = int(((g[p_col] < alpha) & (g[diff_col] != 0)).sum())
            sig_txt = f"{n_sig} of {len(g)} differences have p < {alpha:g}"
        else:
            all_seeds = int((g.n_sig == g.n_seeds).sum())
            sig_txt = f"{all_seeds} of {len(g)} configurations have p < {alpha:g} in each of their seeds"
        how = "mean difference over seeds" + (f", {p_col} over seeds and studies" if p_col is not None else "")
        out.append(f"- {section.capitalize()} {m} against {base} ({_src(table)}, {how}): "
                   f"higher for {_join(up)}; lower for {_join(down)}; {sig_txt}.")
    return out


def policy_movement(results_dir: str | Path, *, table: str = "grpo_policy_movement") -> list[str]:
    """Total reward over the first vs the last steps per configuration (rises / falls / unchanged) and the KL
    range, from notebook 04's movement table."""
    t = read_result_table(results_dir, table)
    if t is None:
        return []
    means = [c for c in t.columns if not c.endswith(SD_SUFFIX)]  # each mean has its "<name> (sd)" beside it
    first, last = [c for c in means if c.startswith("reward first")], [c for c in means if c.startswith("reward last")]
    kl = [c for c in means if c.startswith("KL")]
    if not first or not last:
        return []
    rows = [(_name(r), _shown(r[first[0]]), _shown(r[last[0]])) for _, r in t.iterrows()]
    up = [f"{c} ({a:.3f} -> {b:.3f})" for c, a, b in rows if b > a]
    down = [f"{c} ({a:.3f} -> {b:.3f})" for c, a, b in rows if b < a]
    same = [c for c, a, b in rows if b == a]
    s = (f"- Total reward, {first[0]} vs {last[0]} ({_src(table)}): rises for {len(up)} of {len(rows)} "
         f"configurations ({_join(up)}); falls for {len(down)} ({_join(down)})")
    s += f"; unchanged for {', '.join(same)}." if same else "."
    if kl:
        v = [_shown(x) for x in t[kl[0]]]
        s += f" {kl[0]}: {min(v):.3f} to {max(v):.3f}."
    return [s]


def positive_findings(results_dir: str | Path, *, table: str = "grpo_positive_findings", base: str = "SFT",
                      column: str = "share with no positive finding") -> list[str]:
    """The share of Findings sections with no positive finding (labeler), per configuration: more or fewer
    normal reports than ``base``, and where the references are."""
    t = read_result_table(results_dir, table)
    if t is None:
        return []
    if column not in t.columns:
        raise KeyError(column)  # named with its file by results_section
    if base not in set(t.config):  # a run without the base policy has nothing to compare against
        return []
    v = {_name(r) if r.config not in (base, "reference") else r.config: float(r[column]) for _, r in t.iterrows()}
    b = v[base]
    others = [c for c in v if c not in (base, "reference")]
    more = [f"{c} {100 * v[c]:.0f} %" for c in others if v[c] > b]
    fewer = [f"{c} {100 * v[c]:.0f} %" for c in others if v[c] < b]
    ref = f"the references {100 * v['reference']:.0f} %, " if "reference" in v else ""
    return [f"- Findings sections with no positive finding ({_src(table)}): {ref}{base} {100 * b:.0f} %; more often "
            f"than {base} ({len(more)} of {len(others)}): {_join(more)}; less often ({len(fewer)}): {_join(fewer)}."]


# --------------------------------------------------------------------------- data, SFT, selection, pruning
def report_language(results_dir: str | Path, *, table: str = "00_report_language",
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



def sft_vs_baselines(results_dir: str | Path, *, table: str = "sft_vs_baselines_significance",
                     p_col: str = "p_value", alpha: float = 0.05) -> list[str]:
    """SFT against each image-blind baseline, per section and metric (paired bootstrap), with the direction."""
    t = read_result_table(results_dir, table)
    if t is None:
        return []
    out = []
    for _, r in t.iterrows():
        word = _direction(r["diff"])
        out.append(f"- {r.section.capitalize()} {str(r.metric).split('@')[0]}: SFT {r.value_a:.3f} vs {r.B} "
                   f"{r.value_b:.3f}, {word} it (diff {r['diff']:+.3f}, 95 % CI [{r.ci_low:+.3f}, {r.ci_high:+.3f}], "
                   f"{format_p(r[p_col])}{'' if r[p_col] < alpha else ', not significant'}; {_src(table)}).")
    return out


_SELECTION_TABLES = (("05_headline_findings_val", "picked on validation studies, scored on test"),
                     ("05_headline_findings", "picked and scored on the test set, as in the paper: optimistic"))


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
            imp = g.improvement_pct.astype(float)
            imp = imp[np.isfinite(imp)]
            change = (f"change {imp.min():+.1f} % to {imp.max():+.1f} %" if len(imp)
                      else "no relative change (random is 0)")
            out.append(f"- {m}, best setting per policy ({label}) vs random ({_src(name)}): above random for "
                       f"{_count_words(above, len(g))} policies; {change}.")
    return out


def _meta_field(results_dir: str | Path, name: str, key: str) -> str | None:
    """One field of ``<results_dir>/<name>.meta.json`` (:func:`sdrlib.results.save_table`'s extras), or None."""
    import json

    p = Path(results_dir) / f"{name}.meta.json"
    try:
        return json.loads(p.read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError):
        return None


def selection_conclusion(results_dir: str | Path, *, section: str = "findings",
                         metrics: Sequence[str] = ("BS-F1", "CXB-14", "clin-F1 (sample)"),
                         headlines: Sequence[tuple[str, str]] = _SELECTION_TABLES,
                         significance: str = "05_significance", normal: str = "05_normal_share") -> list[str]:
    """Notebook 05's conclusion, one sentence per line, every number read from its result files.

    1. The best bank setting per policy vs random for each of ``metrics`` (``section``), from the first of
       ``headlines`` present (picked on validation, else the paper's optimistic pick on test): the mean value over
       policies of the pick and of random and the range of the relative change; no direction (no test here).
    2. The paired bootstraps of ``significance`` (best method vs random and vs MBR, one row per policy): a policy is
       named with ``above`` / ``below`` (:func:`sdrlib.metrics.significance.verdict`), its difference, 95 % interval
       and p (:func:`format_p`) only where the interval excludes 0; the others are counted as "no difference
       detected at this size" with their smallest p.
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
            imp = pd.to_numeric(g.improvement_pct, errors="coerce")[ok]
            imp = imp[np.isfinite(imp)]
            change = (f"relative change {imp.min():+.1f} % to {imp.max():+.1f} %" if len(imp)
                      else "no relative change (random is 0)")
            out.append(f"- {section.capitalize()} {m}, best bank setting per policy ({label}): mean over "
                       f"{int(ok.sum())} policies {v[ok].mean():.3f}, random {rnd[ok].mean():.3f}; {change} "
                       f"({_src(name)}).")
        break
    sig = _rows(results_dir, significance)
    if sig is not None:
        pick = _meta_field(results_dir, significance, "pick") or "unknown split"
        d = sig[(sig.section == section) & sig.metric.isin(list(metrics))]
        for (m, b), g in d.groupby(["metric", "B"], sort=False):
            named, rest = [], []
            for r in g.itertuples(index=False):
                v = verdict(r.ci_low, r.ci_high)
                if v == "not distinguishable from":
                    rest.append(float(r.p_value))
                else:
                    named.append(f"{r.policy} {v} (diff {r.diff:+.3f}, 95 % CI [{r.ci_low:+.3f}, {r.ci_high:+.3f}], "
                                 f"{format_p(r.p_value)})")
            if rest:
                named.append(f"no difference detected at this size in {_count_words(len(rest), len(g))} policies "
                             f"(smallest {format_p(min(rest))})")
            out.append(f"- {section.capitalize()} {m}, {g.A.iloc[0]} vs {b} (picked on {pick}; paired bootstrap over "
                       f"test studies, one row per policy): {'; '.join(named)} ({_src(significance)}).")
    nt = _rows(results_dir, normal)
    if nt is not None:
        means = nt.groupby("method", sort=False).normal_share.mean()
        shown = [f"{m} {means[m]:.2f}" for m in means.index if np.isfinite(means[m])]
        if shown:
            out.append(f"- Share of reports the offline labeler reads as normal, mean over "
                       f"{nt.policy.nunique()} policies: {'; '.join(shown)} ({_src(normal)}).")
    return out


def pruning(results_dir: str | Path, *, metric: str = "BS-F1", p_col: str = "p_value",
            alpha: float = 0.05) -> list[str]:
    """Notebook 06: tokens saved per policy (live settings), the survivor vs standard best-of-K on ``metric``
    (above / below only when the 95 % interval excludes 0, :func:`sdrlib.metrics.significance.verdict`, and p < alpha),
    and, when present, pruning vs random, survivor = standard pick vs 1/K, collapsed candidates."""
    out = []
    tok = read_result_table(results_dir, "06_tokens")
    if tok is not None:
        live = tok[tok.source == "live"] if "source" in tok.columns else tok
        for _, r in live.iterrows():
            out.append(f"- {r.policy}, {r.distance} (live): pruning generates {r['pruning tokens / study']:.0f} tokens "
                       f"per study against {r['standard tokens / study']:.0f} for the K full generations, "
                       f"{r['tokens saved %']:.1f} % {'fewer' if r['tokens saved %'] > 0 else 'more'} "
                       f"({_src('06_tokens')}).")
        names = set(live.distance)
    else:
        names = None
    vs = read_result_table(results_dir, "06_pruning_vs_standard")
    if vs is not None:
        g = vs[(vs.metric == metric) & (names is None or vs.distance.isin(names or []))]
        for _, r in g.iterrows():
            # a direction only when the interval excludes 0 and p < alpha (they can disagree at the boundary)
            word = verdict(r.ci_low, r.ci_high) if r[p_col] < alpha else "not distinguishable from"
            out.append(f"- {r.policy}, {r.distance}, {r.section.capitalize()} {metric}: survivor {r.value_a:.3f}, "
                       f"{word} standard best-of-K {r.value_b:.3f} (diff {r['diff']:+.3f}, 95 % CI "
                       f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}], {format_p(r[p_col])}; {_src('06_pruning_vs_standard')}).")
    vr = read_result_table(results_dir, "06_pruning_vs_random")
    if vr is not None:
        vr = vr[vr.distance.isin(names)] if names else vr
        for (policy, n, section), g in vr.groupby(["policy", "distance", "section"], sort=False):
            up, down, tie = g[g["diff"] > 0], g[g["diff"] < 0], g[g["diff"] == 0]
            sig_up, sig_down = int((up[p_col] < alpha).sum()), int((down[p_col] < alpha).sum())
            ties = f", equal on {len(tie)} ({_join(list(tie.metric))})" if len(tie) else ""
            out.append(f"- {policy}, {n}, {section.capitalize()}: pruning above random on {len(up)} of {len(g)} "
                       f"metrics ({_join(list(up.metric))}), below on {len(down)} ({_join(list(down.metric))}){ties}; "
                       f"p < {alpha:g}: {sig_up} above, {sig_down} below ({_src('06_pruning_vs_random')}).")
    ag = read_result_table(results_dir, "06_survivor_vs_standard_pick")
    if ag is not None:
        ag = ag[ag.distance.isin(names)] if names else ag
        for _, r in ag.iterrows():
            side = "above" if r.rate > r.chance else "below" if r.rate < r.chance else "at"
            out.append(f"- {r.policy}, {r.distance}: the survivor is standard best-of-K's pick in {int(r.same)} of "
                       f"{int(r.n)} studies ({100 * r.rate:.1f} %), {side} the chance rate {100 * r.chance:.0f} % "
                       f"(exact binomial {format_p(r.p_value)}; {_src('06_survivor_vs_standard_pick')}).")
    co = read_result_table(results_dir, "06_candidate_collapse")
    if co is not None:
        for _, r in co.iterrows():
            out.append(f"- {r.policy}: the K candidates carry identical positive labels in "
                       f"{100 * r['same labels']:.0f} % of {int(r.studies)} studies and identical text in "
                       f"{100 * r['same text']:.0f} % ({_src('06_candidate_collapse')}).")
    return out


def run_time(results_dir: str | Path, *, table: str = "run_summary") -> list[str]:
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


def reward_audit(results_dir: str | Path, *, orderings: str = "04_reward_audit_orderings",
                 expected: str = "04_reward_audit_expected") -> list[str]:
    """Notebook 04's reward audit: per reward, how many clinician orderings break (stratum by stratum), and the
    expected-reward view (the SFT policy's samples vs always the modal normal report, abnormal references)."""
    out = []
    o = _rows(results_dir, orderings)
    if o is not None:
        for label, g in o.groupby("label", sort=False):
            broken = g[g.broken.astype(str) == "True"]
            kinds = sorted(set(broken.reads))
            out.append(f"- {label}: {len(broken)} of {len(g)} checked orderings (per stratum) break"
                       + (f": {'; '.join(kinds)}" if kinds else "") + f" ({_src(orderings)}).")
    e = _rows(results_dir, expected)
    if e is not None:
        rows = [f"{r.label} {r.sft_mean:.3f} vs {r.modal_normal_mean:.3f}"
                + (" (pays for silence)" if str(r.pays_for_silence) == "True" else "") for _, r in e.iterrows()]
        n = int(e.n_refs.iloc[0]) if "n_refs" in e.columns else None
        refs = f"{n} abnormal references" if n is not None else "abnormal references"
        out.append(f"- Mean reward of the SFT policy's own samples vs always the modal normal report, {refs} "
                   f"({_src(expected)}): {'; '.join(rows)}.")
        if "silence_margin" in e.columns:
            m = [f"{r.label} {r.silence_margin:+.3f}" for _, r in e.iterrows()]
            out.append(f"- Among those samples, stating a finding minus staying silent ({_src(expected)}): "
                       f"{'; '.join(m)}.")
        if "mixed_margin" in e.columns:
            m = [f"{r.label} {r.normal_margin:+.3f} / {r.mixed_margin:+.3f}" for _, r in e.iterrows()]
            out.append(f"- The same on normal references (the price of a wrong guess) / over the references as they "
                       f"come, normal and abnormal ({_src(expected)}: normal_margin / mixed_margin; below 0 an "
                       f"uncertain policy gains by staying silent): {'; '.join(m)}.")
    return out


def _trained_recall(results_dir: str | Path, choice: str = "04_recall_choice") -> list[str]:
    """Labels of the trained ``chamfer_recall`` settings: the choice table's ``trained`` rows, else none."""
    c = _rows(results_dir, choice)
    if c is None or "trained" not in c.columns:
        return []
    return [str(x) for x in c.loc[c.trained.astype(str) == "True", "label"]]


def recall_choice(results_dir: str | Path, *, table: str = "04_recall_choice") -> list[str]:
    """Notebook 04's pick of the recall setting on validation studies (:mod:`sdrlib.experiments.reward_choice`)."""
    c = _rows(results_dir, table)
    if c is None:
        return []
    chosen = c.loc[c.chosen.astype(str) == "True", "label"]
    sound = c[c.sound.astype(str) == "True"]
    n, k = int(c.n_references.iloc[0]), int(c.n_samples.iloc[0])
    grid = "; ".join(f"{r.label} {r.mixed_margin:+.3f}" for _, r in c.iterrows())
    trained = _trained_recall(results_dir, table)
    same = bool(len(chosen)) and list(chosen) == trained
    return [f"- On {n} validation studies ({k} SFT samples), {len(sound)} of {len(c)} settings of the grid keep "
            f"the four required orderings; stating a finding minus silence over the prompts as they come "
            f"(mixed_margin): {grid}; picked: {_join(list(chosen))}; trained: {_join(trained)}"
            + ("" if same else " (not the pick)") + f" ({_src(table)})."]


def recall_audit(results_dir: str | Path, *, table: str = "04_reward_audit_orderings") -> list[str]:
    """The trained recall setting's required orderings on the test references, per abnormal stratum: paired mean
    difference of the higher case's reward minus the lower's (positive = kept)."""
    o = _rows(results_dir, table)
    labels = _trained_recall(results_dir)
    if o is None or not labels:
        return []
    want = [f"{hi} > {lo}" for hi, lo in REQUIRED]
    out = []
    for label in labels:
        g = o[(o.label == label) & o.expected.isin(want)]
        items = [f"{r.expected} ({r.stratum}, {int(r.n)} references) {r['diff']:+.3f}" for _, r in g.iterrows()]
        kept = int((g["diff"] > 0).sum())
        out.append(f"- {label}, test references: {kept} of {len(g)} required orderings kept; {'; '.join(items)} "
                   f"({_src(table)}).")
    return out


def recall_vs_others(results_dir: str | Path, *, table: str = "grpo_significance", section: str = "findings",
                     metrics: Sequence[str] = ("clinical_f1_macro14", "bertscore_f1")) -> list[str]:
    """The trained recall setting against SFT, R_Cham, EditGRPO and R_exact (across-seed test)."""
    t = read_result_table(results_dir, table)
    labels = _trained_recall(results_dir)
    if t is None or not labels:
        return []
    out = []
    for label in labels:
        for m in metrics:
            g = t[(t.A == label) & (t.section == section) & (t.metric.str.split("@").str[0] == m)
                  & t.B.isin(["SFT", "R_Cham", "EditGRPO", "R_exact"])]
            if not len(g):
                continue
            items = [f"vs {r.B} {r['diff']:+.3f} ({format_p(r.p_value)}, same sign in {int(r.n_same_sign)} of "
                     f"{int(r.n_seeds)} seeds)" for _, r in g.iterrows()]
            out.append(f"- {label}, {section.capitalize()} {m} ({_src(table)}, over seeds and studies): "
                       f"{'; '.join(items)}.")
    return out


def selection_recall(results_dir: str | Path, *, table: str = "05_selection_recall") -> list[str]:
    """Notebook 05's selection counterpart of the silence-proof reward: each method's corpus value vs random."""
    t = _rows(results_dir, table)
    if t is None:
        return []
    out = []
    for policy, g in t.groupby("policy", sort=False):
        rnd = float(g.random.iloc[0])
        items = [f"{r.method} {r.value:.3f}" for _, r in g.iterrows()]
        above = [str(r.method) for _, r in g.iterrows() if round(r.value - rnd, 3) > 0]
        out.append(f"- {policy}, Findings CheXpert-14 macro F1 of the picks, random {rnd:.3f}: {'; '.join(items)}; above random: {_join(above)} "
                   f"({_src(table)}).")
    return out

def decomposition(results_dir: str | Path, *, table: str = "grpo_decomposition") -> list[str]:
    """Notebook 04's decomposition of the Findings macro F1 change: per chain (SFT -> drift control -> reward),
    each step's mean over seeds and its change (no share of the total: see the comment)."""
    t = _rows(results_dir, table)
    if t is None:
        return []
    out = []
    for chain, g in t.groupby("chain", sort=False):
        steps = []
        for _, r in g.iterrows():
            # no "share of the change" here: a ratio of two differences of this size carries no uncertainty we
            # report (issue 34); the notebook's paired table tests each step
            steps.append(f"{r.step} {r['F1 from']:.3f} -> {r['F1 to']:.3f} ({r.change:+.3f})")
        n = int(g.seeds.max())
        out.append(f"- {chain} ({n} seed{'s' if n != 1 else ''}): {'; '.join(steps)} ({_src(table)}).")
    return out


def grpo_vs_rcham(results_dir: str | Path) -> list[str]:
    """:func:`grpo_vs_sft` against R_Cham (the related methods and our negation-aware rewards)."""
    return grpo_vs_sft(results_dir, base="R_Cham")


GROUPS: dict[str, Callable[..., list[str]]] = {
    "Report language (notebook 00)": report_language,
    "SFT vs image-blind baselines (notebook 03)": sft_vs_baselines,
    "GRPO headline (notebook 04)": grpo_headline,
    "GRPO configurations vs SFT (notebook 04)": grpo_vs_sft,
    "GRPO configurations vs R_Cham (notebook 04)": grpo_vs_rcham,
    "Decomposing the drop in Findings macro F1 (notebook 04)": decomposition,
    "Policy movement (notebook 04)": policy_movement,
    "Normal reports (notebook 04)": positive_findings,
    "Best-of-K selection vs random (notebook 05)": selection_best_vs_random,
    "Pruning (notebook 06)": pruning,
    "Reward audit (notebook 04)": reward_audit,
    "The recall setting, picked on validation (notebook 04)": recall_choice,
    "The trained recall setting's audit (notebook 04)": recall_audit,
    "The trained recall setting against SFT, R_Cham, EditGRPO and R_exact (notebook 04)": recall_vs_others,
    "Selection with the recall distance (notebook 05)": selection_recall,
    "Run time": run_time,
}


def results_section(results_dir: str | Path, *, groups: dict[str, Callable[..., list[str]]] | None = None,
                    markers: bool = True, also: Sequence[str | Path] = (),
                    labels: Sequence[str] | None = None, only_here: Sequence[str] = ()) -> str:
    """The README block: one ``**group**`` paragraph per claim group that has its files, between the markers.

    With the default ``groups`` the block opens with the run's machine (:func:`conclusions.machine_lines`) and
    the conclusions that hold in this run and every run in ``also`` (the same commit on other kernel paths;
    :func:`conclusions.conclusion_lines`, which writes ``conclusions.csv`` into ``results_dir``); ``labels`` names
    the runs (this one first); ``only_here``: configuration labels compared in this run only
    (:func:`conclusions.conclusions`)."""
    if groups is None:
        groups = {"Machine": _conclusions.machine_lines,
                  _conclusions.TITLE: lambda d: _conclusions.conclusion_lines([d, *also], labels=labels,
                                                                             only_here=only_here),
                  **GROUPS}
    parts = [BEGIN] if markers else []
    parts.append("<!-- written by scripts/readme_numbers.py from the result files; do not edit by hand -->")
    for title, fn in groups.items():
        TABLES_READ.clear()
        try:
            lines = fn(results_dir)
        except (KeyError, AttributeError) as e:  # a table without a column its paragraph reads
            read = list(dict.fromkeys(TABLES_READ))
            col = e.args[0] if isinstance(e, KeyError) and e.args else getattr(e, "name", None)
            lacking = [p for p in read if col is not None and col not in pd.read_csv(p, nrows=0).columns]
            names = ", ".join(str(p) for p in (lacking or read)) or "its tables"
            raise ResultTableError(f"{names}: no column {e} (read for the paragraph {title!r}); re-run the "
                                   "notebook that writes it") from None
        if lines:
            parts += ["", f"**{title}**", "", *lines]
    if markers:
        parts += ["", END]
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- the check
_FILE = re.compile(r"`(results/)?([\w.\-*]+?)(\.csv|\.md)?`")
_CLAIM_NUM = re.compile(r"(?<![\w.\-])[-+\u2212]?(\d[\d,]*(?:\.\d+)?)(?![\w\-]|\.\d)")


def marked_block(text: str) -> str:
    """The text between :data:`BEGIN` and :data:`END` (ValueError when the markers are missing or out of order)."""
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        raise ValueError(f"no {BEGIN} ... {END} block")
    return text[i + len(BEGIN):j]


def numbers_in(text: str, *, min_int: int = 10) -> list[str]:
    """The numbers a sentence quotes, as written: decimals always, integers from ``min_int`` on (smaller ones
    are counts such as K = 5), nor either side of a count "k of n" ("2 of 3 seeds", "0 of 31 checked orderings":
    rows counted, no value of a table); inside backticks and HTML comments nothing, nor digits that are
    part of a name (``CheXpert-14``, ``R_Cham``, ``best-of-5``), nor an interval's level ("95 % CI") or the
    significance level and the floor ("p < 0.05", "p < 0.001").
    Thousands separators are dropped.
    Example: ``numbers_in("SFT 0.223, 1,006 words in 3 of `grpo_x1` CheXpert-14")`` -> ``["0.223", "1006"]``."""
    text = re.sub(r"`[^`]*`|<!--.*?-->|\b\d+ ?% (?:CI|confidence)|p < 0\.0(?:5|01)\b|(?<![\w.])\d+ of \d[\d,]*(?![\w.])",
                  " ", text, flags=re.S)
    out = []
    for m in _CLAIM_NUM.finditer(text):
        s = m.group(1).replace(",", "")
        if "." in s or int(s) >= min_int:
            out.append(s)
    return out


_SWEEP = re.compile(r"\b(every|all|most|always|never)\b(?!\s+(?:of\s+)?\d)(\s+\w+)?", re.I)


def sweeping_words(text: str) -> list[str]:
    """Quantifiers a table must back ("every configuration", "most", "all metrics"), not followed by a count:
    the check cannot verify them, so ``--check`` lists them for a reader. ``all 8`` / ``none of 8`` pass.
    Example: ``sweeping_words("every configuration moves; all 8 policies")`` -> ``["every configuration"]``."""
    text = re.sub(r"`[^`]*`|<!--.*?-->", " ", text, flags=re.S)
    return [(m.group(1) + (m.group(2) or "")).strip() for m in _SWEEP.finditer(text)]


def _pool(paths: Iterable[Path]) -> list[float]:
    vals = []
    for p in paths:
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ResultTableError(f"{p}: not UTF-8 text (byte {e.start}); a result table is a UTF-8 CSV") from None
        vals += [float(x) for x in _NUM.findall(text)]
    return vals


def _found(num: str, pool: np.ndarray) -> bool:
    d = len(num.split(".")[1]) if "." in num else 0
    x = float(num)
    tol = 0.5 * 10 ** -d + 1e-9
    for scale in (1.0, 100.0):  # a share written as a percentage
        if np.any(np.abs(np.abs(pool * scale) - x) <= tol):
            return True
    return False


def check_block(text: str, results_dir: str | Path, *, min_int: int = 10) -> list[str]:
    """Problems with a marked block (empty list = every number checked out).

    The block is split into paragraphs (blank lines) and bullets; each names its files in backticks
    (``results/<name>.csv``, ``<name>.md`` or ``<name>``; a paragraph naming none uses the files of the one
    before, so a table inherits its caption's). Every number of :func:`numbers_in` must be, up to its written
    rounding, a value in one of those files (their CSV and Markdown text, read as numbers; a share may be written
    as a percentage; signs are ignored, so a difference may be written "+0.019" or "by 0.019"). A file named but
    absent is a problem too.
    """
    results_dir = Path(results_dir)
    problems: list[str] = []
    chunks = [c for c in re.split(r"\n\s*\n|\n(?=\s*- )", text) if c.strip()]
    files: list[Path] = []
    for chunk in chunks:
        named = _FILE.findall(chunk)
        names = sorted({p.name.rsplit(".", 2)[0] for _, n, _ in named for p in results_dir.glob(n + ".csv")}
                       | {p.stem for _, n, _ in named for p in results_dir.glob(n + ".md")})
        for pre, n, ext in named:  # written as a result file (results/..., .csv, .md, a glob) but not there
            if (pre or ext or "*" in n) and not any(results_dir.glob(n + (ext or ".csv"))):
                problems.append(f"names {pre}{n}{ext}, which is not in {results_dir}")
        if names:
            files = [p for n in names for p in (results_dir / f"{n}.csv", results_dir / f"{n}.md") if p.is_file()]
        nums = numbers_in(chunk, min_int=min_int)
        if nums and not files:
            problems.append(f"numbers {nums[:5]} with no result file named: {chunk.strip()[:80]!r}")
            continue
        if not nums:
            continue
        pool = np.array(_pool(files))
        for num in nums:
            if not _found(num, pool):
                problems.append(f"{num} is in none of {[p.name for p in files]}: {chunk.strip()[:100]!r}")
    return problems


def check_tolerant(block: str, results_dir: str | Path, *, min_int: int = 10) -> tuple[list[str], list[str]]:
    """``(problems, notes)`` of a README block against a run on another kernel path or other library versions:
    the paragraphs that do not depend on the machine (``conclusions.MACHINE_INDEPENDENT``: the corpus statistics)
    number by number (:func:`check_block`) and the conclusions by ``conclusions.check_verdicts``. Nothing else is
    compared: other numbers move with the kernel path."""
    problems: list[str] = []
    for title, text in _conclusions.split_groups(block):
        if title in _conclusions.MACHINE_INDEPENDENT:
            problems += check_block(text, results_dir, min_int=min_int)
    more, notes = _conclusions.check_verdicts(block, results_dir)
    return problems + more, notes
