"""Notebook 07's "this run vs the paper": each claim of the SDR paper that the notebooks reproduce, the paper's
number with where it stands, this run's number read from its result tables, and the verdict of the project's rule.

Scope (Findings section only, the paper's headline claims the default notebooks reproduce):

- **GRPO** (paper sec. 4, Tables 1-2): R_Cham and R_Haus against SFT and against R_exact, on BERTScore F1 and on
  the paper's CheXbert F1, which this run measures as CXB-14 (CheXpert-14 macro F1 from the offline labeler unless
  CheXbert is installed; notebook 04);
- **best-of-K selection vs random** (sec. 5, Table 3 and the abstract): BS-F1 and CXB-14 (notebook 05);
- **pruning** (sec. 5.1, Table 4): tokens saved, pruning vs random and pruning vs standard best-of-K, BS-F1 and
  CXB-14 (notebook 06).

Left out: RadGraph F1 and COMET (not computed on the CPU profiles), the Impression tables (5-6, 23), the API models,
the per-metric appendix tables. The paper reports means without a test; its numbers are copied by hand into
:data:`PAPER_GRPO` (:mod:`sdrlib.experiments.paper_values`, which the README and the GRPO study read too), :data:`PAPER_SELECTION_PCT`, :data:`PAPER_PRUNING` and :data:`PAPER_PRUNING_VS_RANDOM_PCT`, each
with the table or section it comes from (``tests/experiments/test_paper_comparison.py`` recomputes the derived
numbers the paper prints: Table 3's improvements from its rows, Table 4's tokens-saved range).

**This run's number** is read from the tables the notebooks wrote (:func:`comparison_table`), and **the verdict** is
the word the notebook that wrote the table uses, so notebook 07 never contradicts 04, 05 or 06: GRPO rows take
:func:`sdrlib.experiments.conclusions.conclusions` (notebook 04's answer: Holm over its family, the interval
excluding 0; with the smallest difference the run could detect), selection rows
:func:`sdrlib.metrics.verdict.family_directions` over ``05_significance`` (Holm over the table; one row per policy,
counted), pruning rows the same over ``06_pruning_vs_random`` / ``06_pruning_vs_standard`` restricted to the live
settings (notebook 06's families). Tokens saved is a count: measured, not tested. **The reading** sets the verdict
beside the paper's direction: the same direction, the opposite, or no difference detected, and then whether a
difference of the paper's size was within what this run could detect (for GRPO, the size of Tab. 1, ReXGradient).
The sizes are only roughly comparable: other models, data and metric instruments, and every row names both: the
paper's (CheXbert F1; BERTScore F1 on a backbone it does not name) and this run's (CXB-14 from the rule labeler;
BERTScore F1 on the profile's backbone, all-MiniLM-L6-v2 on the cpu profile),
:func:`~sdrlib.experiments.paper_values.metric_pair`.

:func:`comparison_answer` is notebook 07's first conclusion sentence, read back from the saved table. Example:
``comparison_table("results")`` -> one row per claim with the columns of :data:`COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdrlib import table_names
from sdrlib.experiments.paper_values import PAPER_GRPO, PAPER_TABLES, metric_pair, paper_effect
from sdrlib.metrics.verdict import METRIC_RANGE, NO_DIFF, detectable_phrase, family_directions, untested_direction
from sdrlib.results import read_result_table

__all__ = ["PAPER_GRPO", "PAPER_SELECTION_PCT", "PAPER_PRUNING", "PAPER_PRUNING_VS_RANDOM_PCT", "PAPER_TOKENS_RANGE",
           "COLUMNS", "SHOWN", "comparison_table", "comparison_view", "comparison_answer", "comparison_conclusion"]

#: SDR Table 3 (Findings): the % improvement over random of each model's best (distance, aggregation) setting,
#: picked on the test set itself, for its 13 models in the table's order (the four Qwen3-VL-4B GRPO policies, then
#: Mistral-Small, Gemini 2.5 / 3.1 Flash-Lite and GPT-4o mini with prompts p1 and p2, and GPT-5 mini p2); the
#: abstract states +16.4 % on BERTScore on average
PAPER_SELECTION_PCT: dict[str, tuple[float, ...]] = {
    "BS-F1": (7.3, 8.6, 0.0, 6.0, 13.2, 16.4, 20.6, 17.7, 5.4, 7.8, 18.7, 11.7, 22.5),
    "CXB-14": (9.7, 5.0, -0.2, 0.5, 18.5, 2.1, 5.0, 8.2, 1.6, 3.3, 3.0, 3.4, 4.3),
}
#: SDR Table 4 (Findings), its "Mean" block over the four API models, per distance (Hung: Hung-NN, our reading):
#: tokens saved % and the metric under (random, standard best-of-K, pruning); CXB-14 stands for its CheXbert F1
PAPER_PRUNING: dict[str, dict[str, float | tuple[float, float, float]]] = {
    "chamfer": {"tokens saved %": 49.9, "BS-F1": (0.212, 0.241, 0.239), "CXB-14": (0.637, 0.676, 0.667)},
    "hausdorff": {"tokens saved %": 53.8, "BS-F1": (0.212, 0.236, 0.232), "CXB-14": (0.637, 0.676, 0.667)},
    "hung_nn": {"tokens saved %": 49.9, "BS-F1": (0.212, 0.241, 0.238), "CXB-14": (0.637, 0.678, 0.671)},
}
#: SDR sec. 5.1: the tokens pruning saves over Table 4's rows ("42.1-60.1 %")
PAPER_TOKENS_RANGE: tuple[float, float] = (42.1, 60.1)
#: SDR sec. 5.1: pruning's average relative improvement over random (BS-F1 +12.7 %, CheXbert F1 +6.2 %), as the text
#: states them (the mean over Table 4's twelve rows of pruning / random - 1 gives +12.1 % and +5.7 %)
PAPER_PRUNING_VS_RANDOM_PCT: dict[str, float] = {"BS-F1": 12.7, "CXB-14": 6.2}

#: the columns of ``07_paper_comparison``: ``paper value`` / ``run value`` are the numbers the two text columns lead
#: with, in ``unit``; ``detectable`` the smallest difference the run's test could detect (GRPO rows; else empty)
COLUMNS = ["claim", "metric", "paper", "paper source", "this run", "run source", "verdict", "reading", "unit",
           "paper value", "run value", "detectable"]
_GRPO_METRICS = (("BERTScore F1", "bertscore_f1", "BERTScore F1"), ("CheXbert F1", "clinical_f1_macro14", "CXB-14"))
_NOT_RUN = "not in this run"


def _signed(x: float, digits: int = 3, unit: str = "", sign: bool = True) -> str:
    """``+0.024``, ``-1.5 %``; a value that rounds to zero is written without a sign (``0.000``, never ``-0.000``)."""
    x = 0.0 if round(float(x), digits) == 0 else float(x)
    return f"{x:{'+' if sign and x else ''}.{digits}f}{unit}"


def _range(values: Sequence[float], digits: int = 1, unit: str = " %", sign: bool = True) -> str:
    v = [float(x) for x in values if np.isfinite(x)]
    if not v:
        return "n/a"
    lo, hi = (_signed(x, digits, unit, sign) for x in (min(v), max(v)))
    return lo if lo == hi else f"{lo} to {hi}"


def _unit(claim: str) -> str:
    """What ``paper value`` / ``run value`` measure for a claim: a difference of scores, a % change against random,
    or a % of tokens."""
    if "tokens" in claim:
        return "% of tokens saved"
    return "% change vs random" if claim.endswith("vs random") else "difference of scores"


def _row(claim: str, metric: str, paper: str, source: str, paper_value: float, **run: object) -> dict:
    return {"claim": claim, "metric": metric, "paper": paper, "paper source": source, "paper value": paper_value,
            "this run": run.get("this_run", _NOT_RUN), "run source": run.get("run_source", ""),
            "verdict": run.get("verdict", _NOT_RUN), "reading": run.get("reading", ""), "unit": _unit(claim),
            "run value": run.get("run_value", np.nan), "detectable": run.get("detectable", np.nan)}


def _counts(words: Sequence[str]) -> dict[str, int]:
    return {w: sum(1 for x in words if x == w) for w in ("above", "below", NO_DIFF)}


def _verdict_words(words: Sequence[str], what: str) -> str:
    """One comparison: its word; several (policies, settings): how they split."""
    if len(words) == 1:
        return words[0]
    c = _counts(words)
    return f"{c['above']} above, {c['below']} below, {c[NO_DIFF]} {NO_DIFF}, of {len(words)} {what}"


def _reading(words: Sequence[str], paper_value: float, run_mean: float, mde: float = np.nan, digits: int = 3) -> str:
    """The verdict against the paper's direction (the sign of ``paper_value``, a mean the paper does not test); the
    run's mean is read at the ``digits`` it is shown with (a mean shown as 0.000 reads "equal means")."""
    run_mean = round(float(run_mean), digits) if np.isfinite(run_mean) else run_mean
    if not words:
        return ""
    up = 1 if paper_value > 0 else -1 if paper_value < 0 else 0
    c = _counts(words)
    same, opposite = (c["above"], c["below"]) if up >= 0 else (c["below"], c["above"])
    if same and opposite:
        return "mixed: the paper's direction for some, the opposite for others"
    if same:
        return "the paper's direction, under the rule"
    if opposite:
        return "the opposite of the paper's direction, under the rule"
    paper = {1: "higher", -1: "lower", 0: "equal"}[up]
    out = f"{NO_DIFF}; {untested_direction(run_mean)} (the paper's: {paper})"
    if np.isfinite(mde) and mde > METRIC_RANGE:
        out += f"; a difference of the paper's size ({abs(paper_value):.3f}) was {detectable_phrase(mde)}"
    elif np.isfinite(mde):
        out += (f"; the paper's difference ({abs(paper_value):.3f}) is below the smallest this run could detect "
                f"({mde:.3f})" if abs(paper_value) < mde else
                f"; a difference of the paper's size ({abs(paper_value):.3f}) was detectable here (smallest "
                f"detectable: {mde:.3f})")
    return out


def _grpo_rows(results_dir: Path) -> list[dict]:
    from sdrlib.experiments.conclusions import conclusions

    v = conclusions([results_dir])
    names = _run_metrics(results_dir)
    rows = []
    for paper_metric, suite, label in _GRPO_METRICS:
        theirs, ours = metric_pair(names.get(suite, suite))
        for a, b in (("R_Cham", "SFT"), ("R_Haus", "SFT"), ("R_Cham", "R_exact"), ("R_Haus", "R_exact")):
            diffs = {t: paper_effect(a, b, paper_metric, t) for t in PAPER_TABLES}
            paper = ", ".join(f"{_signed(d)} ({t.split('(')[1][:-1]})" for t, d in diffs.items()) + f"; {theirs}"
            pv = float(diffs[PAPER_TABLES[0]])
            source = "Tab. 1-2, Findings, Mean block (3 models x 5 seeds); paper value: Tab. 1"
            hit = v[(v.A == a) & (v.B == b) & (v.metric == suite)] if len(v) else v
            if hit.empty:
                rows.append(_row(f"GRPO: {a} vs {b}", label, paper, source, pv))
                continue
            r = hit.iloc[0]
            seeds = f"{int(r.seeds)} seed{'s' if int(r.seeds) != 1 else ''}"
            run = (f"{_signed(r['diff'])} ({r.value_a:.3f} vs {r.value_b:.3f}, {seeds})"
                   if np.isfinite(r.value_a) else _signed(r["diff"])) + f"; {ours}"
            rows.append(_row(f"GRPO: {a} vs {b}", label, paper, source, pv, this_run=run,
                             run_source=table_names.GRPO_SIGNIFICANCE, verdict=r.verdict,
                             reading=_reading([r.verdict], pv, float(r["diff"]), float(r.mde)),
                             run_value=float(r["diff"]), detectable=float(r.mde)))
    return rows


def _run_metrics(results_dir: Path) -> dict[str, str]:
    """Suite name -> the full metric name (``suite@backend``) the run's GRPO table records, for naming the
    instrument (empty where the run has no such table)."""
    t = read_result_table(results_dir, table_names.GRPO_SIGNIFICANCE)
    if t is None or "metric" not in t.columns:
        return {}
    return {m.split("@")[0]: m for m in dict.fromkeys(t.metric.astype(str))}


def _selection_rows(results_dir: Path) -> list[dict]:
    sig = read_result_table(results_dir, table_names.SELECTION_SIGNIFICANCE)
    rows = []
    if sig is not None and len(sig):
        sig = sig.reset_index(drop=True)
        words = pd.Series(family_directions(sig), index=sig.index)  # notebook 05's family: the whole table
    for metric, pct in PAPER_SELECTION_PCT.items():
        pv = float(np.mean(pct))
        paper = f"{_range(pct)} over {len(pct)} models, mean {_signed(pv, 1, ' %')} (abstract, BERTScore: +16.4 %)" \
            if metric == "BS-F1" else f"{_range(pct)} over {len(pct)} models, mean {_signed(pv, 1, ' %')}"
        source = "Tab. 3, Findings (best setting per model, picked on the test set)"
        g = sig[(sig.section == "findings") & (sig.metric == metric) & (sig.B == "random")] if sig is not None else ()
        if not len(g):
            rows.append(_row("best-of-K selection vs random", metric, paper, source, pv))
            continue
        rel = 100 * g["diff"].astype(float) / g.value_b.astype(float).abs()
        w = list(words[g.index])
        rows.append(_row("best-of-K selection vs random", metric, paper, source, pv,
                         this_run=f"{g.A.iloc[0]}: {_range(rel)} over {len(g)} policies",
                         run_source=table_names.SELECTION_SIGNIFICANCE, verdict=_verdict_words(w, "policies"),
                         reading=_reading(w, pv, float(rel.mean()), digits=1), run_value=float(rel.mean())))
    return rows


def _live(results_dir: Path) -> tuple[pd.DataFrame | None, set[str] | None]:
    tok = read_result_table(results_dir, table_names.PRUNING_TOKENS)
    if tok is None or not len(tok):
        return None, None
    live = tok[tok.source == "live"] if "source" in tok.columns and (tok.source == "live").any() else tok
    return live, set(live.distance)


def _pruning_rows(results_dir: Path) -> list[dict]:
    live, names = _live(results_dir)
    saved = [float(v["tokens saved %"]) for v in PAPER_PRUNING.values()]
    paper = f"{_range(PAPER_TOKENS_RANGE, sign=False)} (Mean block per distance: {_range(saved, sign=False)})"
    row = dict(this_run=f"{_range(live['tokens saved %'], sign=False)} ({len(live)} live settings)",
               run_source=table_names.PRUNING_TOKENS, verdict="measured (a count, not tested)",
               reading=("within the paper's range" if PAPER_TOKENS_RANGE[0] <= live["tokens saved %"].min()
                        and live["tokens saved %"].max() <= PAPER_TOKENS_RANGE[1] else "outside the paper's range"),
               run_value=float(live["tokens saved %"].mean())) if live is not None else {}
    rows = [_row("pruning: tokens saved", "tokens saved %", paper, "sec. 5.1, Tab. 4", float(np.mean(saved)), **row)]
    for b, what in (("random", "vs random"), ("standard", "vs standard best-of-K")):
        name = table_names.PRUNING_VS_RANDOM if b == "random" else table_names.PRUNING_VS_STANDARD
        t = read_result_table(results_dir, name)
        if t is not None and names:
            t = t[t.distance.isin(names)].reset_index(drop=True)  # notebook 06's family: the live settings
            words = pd.Series(family_directions(t), index=t.index) if len(t) else pd.Series(dtype=str)
        for metric in ("BS-F1", "CXB-14"):
            if b == "random":
                pv = PAPER_PRUNING_VS_RANDOM_PCT[metric]
                paper, source = f"{_signed(pv, 1, ' %')} on average over models and distances", "sec. 5.1, Tab. 4"
            else:
                d = [v[metric][2] - v[metric][1] for v in PAPER_PRUNING.values()]
                pv, paper = float(np.mean(d)), f"{_range(d, 3, '')} (Mean block per distance)"
                source = "Tab. 4, sec. 5.1 (\"the gap is small\")"
            g = t[(t.section == "findings") & (t.metric == metric)] if t is not None and names else ()
            if not len(g):
                rows.append(_row(f"pruning {what}", metric, paper, source, pv))
                continue
            x = (100 * g["diff"].astype(float) / g.value_b.astype(float).abs()) if b == "random" \
                else g["diff"].astype(float)
            run = _range(x) if b == "random" else _range(x, 3, "")
            w = list(words[g.index])
            rows.append(_row(f"pruning {what}", metric, paper, source, pv,
                             this_run=f"{run} ({len(g)} policy x live-setting rows)",
                             run_source=name,
                             verdict=_verdict_words(w, "policy x setting rows"),
                             reading=_reading(w, pv, float(x.mean()), digits=1 if b == "random" else 3),
                             run_value=float(x.mean())))
    return rows


def comparison_table(results_dir: str | Path) -> pd.DataFrame:
    """One row per paper claim of the module's scope, in the paper's order (GRPO, selection, pruning), with the
    :data:`COLUMNS`. A claim whose table this run lacks keeps its paper columns and reads "not in this run"."""
    d = Path(results_dir)
    return pd.DataFrame([*_grpo_rows(d), *_selection_rows(d), *_pruning_rows(d)], columns=COLUMNS)


#: the columns notebook 07 shows (the file keeps every column of :data:`COLUMNS`)
SHOWN = ("claim", "metric", "paper", "this run", "verdict")


def comparison_view(t: pd.DataFrame, columns: Sequence[str] = SHOWN) -> str:
    """The comparison table as a compact Markdown table of ``columns`` (no padding: it stays readable in a notebook
    cell without running over the output limit of :func:`sdrlib.utils.output_problems`)."""
    cols = list(columns)
    cell = lambda v: str(v).replace("|", "/")  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join(":--" for _ in cols) + "|"]
    lines += ["| " + " | ".join(cell(r[c]) for c in cols) + " |" for _, r in t.iterrows()]
    return "\n".join(lines)


def _tested(t: pd.DataFrame) -> pd.DataFrame:
    return t[~t.verdict.isin([_NOT_RUN]) & ~t.verdict.str.startswith("measured")]


def comparison_answer(t: pd.DataFrame) -> str:
    """Notebook 07's first sentence from the comparison table ``t``: of the paper's claims this run tests, how many
    it shows in the paper's direction under the project's rule, how many in the opposite one or mixed (each named
    with its verdict), how many with no difference detected and, of those with a detectable difference (the GRPO
    rows), for how many the paper's difference is smaller than this run can detect; then the tokens pruning saves
    beside the paper's range."""
    tested = _tested(t)
    if not len(tested):
        return (f"Answer: this run has none of the tables the {len(t)} paper claims compared here are read from "
                "(`results/07_paper_comparison.csv`).")
    name = lambda r: f"{r.claim} on {r.metric}: {r.verdict}"  # noqa: E731
    parts = []
    for what, key in (("the paper's direction", "the paper's direction"), ("the opposite direction", "the opposite"),
                      ("mixed directions", "mixed")):
        hit = tested[tested.reading.str.startswith(key)]
        if len(hit) or key == "the paper's direction":
            parts.append(f"{what} for {len(hit)}" + (f" ({'; '.join(name(r) for r in hit.itertuples())})"
                                                     if len(hit) else ""))
    none = tested[tested.reading.str.startswith(NO_DIFF)]
    small = none[none.reading.str.contains("is below the smallest this run could detect", regex=False)]
    sized = none[none.reading.str.contains("could detect|was detectable", regex=True)]
    parts.append(f"{NO_DIFF} for {len(none)}" + (
        f" (in {len(small)} of the {len(sized)} where the run sizes the smallest difference it could detect, the "
        "paper's difference is below it)" if len(sized) else ""))
    out = (f"Answer: does this run reproduce the paper's Findings claims? Of the {len(tested)} comparisons it tests, "
           "it shows under the project's rule " + ", ".join(parts[:-1]) + f" and {parts[-1]}")
    tok = t[t.verdict.str.startswith("measured")]
    if len(tok):
        r = tok.iloc[0]
        where = {"within the paper's range": "within", "outside the paper's range": "outside"}.get(r.reading, "beside")
        out += (f"; pruning saves {r['this run'].split(' (')[0]} of the tokens, {where} the paper's "
                f"{r.paper.split(' (')[0]}")
    return out + " (`results/07_paper_comparison.csv`)."


def _value(x: float, unit: str) -> str:
    if not np.isfinite(x):
        return "n/a"
    return _signed(x, 1, " %", sign=not unit.endswith("saved")) if unit.startswith("%") else _signed(x)


def _short(r: pd.Series) -> str:
    """One claim in a few words: the verdict, then the run's and the paper's value (and what the run could detect),
    or where it stands against the paper's direction."""
    if r.verdict == _NOT_RUN:
        return _NOT_RUN
    if r.verdict.startswith("measured"):
        return f"{r['this run']}: {r.reading or r.verdict}"
    v = f"means: this run {_value(r['run value'], r.unit)}, the paper {_value(r['paper value'], r.unit)}"
    if np.isfinite(r.detectable):
        v += f"; detectable {r.detectable:.3f}" if r.detectable <= METRIC_RANGE else "; not detectable at this size"
    if r.reading.startswith(NO_DIFF):
        return f"{r.verdict} ({v})"
    return f"{r.verdict}: {r.reading.split(',')[0]} ({v})"


def comparison_conclusion(results_dir: str | Path) -> list[str]:
    """The comparison's lines of notebook 07's conclusion, read back from ``07_paper_comparison``: the answer
    (:func:`comparison_answer`), then one line per claim group (GRPO, selection, pruning), each claim in a few words
    (:func:`_short`: the verdict, this run's and the paper's value, what the run could detect). A missing table: []."""
    t = read_result_table(results_dir, table_names.PAPER_COMPARISON)
    if t is None or not len(t):
        return []
    t = t.fillna({c: "" for c in ("this run", "verdict", "reading", "unit")})
    out = ["- " + comparison_answer(t)]
    split = t.claim.str.extract(r"^(.*?)(?::\s*|\s+(?=vs ))(.*)$")
    t = t.assign(group=split[0].fillna(t.claim), item=split[1].fillna(""))
    for name, g in t.groupby("group", sort=False):
        items = [(f"{r['item']}, {r.metric}: " if not r.metric.startswith(r["item"]) else f"{r['item']} ") + _short(r)
                 for _, r in g.iterrows()]
        out.append(f"- {name}: " + "; ".join(items) + ".")
    return out
