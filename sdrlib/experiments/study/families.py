"""The GRPO study's comparison families, by the role of each comparison, and the answer and Markdown tables read
from them (:func:`sdrlib.experiments.study.runs.study_table` computes the rows; each family has Holm over its own
rows, :func:`sdrlib.metrics.verdict.family_verdicts`).

- **primary** (:func:`study_pairs`, the metrics :data:`~sdrlib.experiments.study.runs.PRIMARY`): the paper's two
  questions only. Every trained configuration that is no control against SFT, then every one of them other than
  R_exact against R_exact (when R_exact ran). A study without controls (the study on record,
  ``configs/study_blind_start.yaml``) has exactly these comparisons.
- **secondary** (:data:`~sdrlib.experiments.study.runs.SECONDARY`, micro-14 and per-report label F1): the same
  pairs as the primary family, on other metrics. The controls' comparisons are not repeated there: they answer
  whether a reward's effect is GRPO's drift, a question of the primary metrics.
- **controls** (:func:`control_pairs`, the primary metrics): the configurations of :data:`CONTROLS` are there to
  separate a reward's effect from what GRPO does to the policy with no useful reward, so they are kept out of the
  primary family (where each would lower every paper comparison's Holm level and raise its detectable effect) and
  form a family of their own: each control against SFT (how far GRPO moves the policy without signal), then each
  reward that is no control against the noise control C-noise (does the reward's signal move the policy beyond that
  drift?); without C-noise but with R_fmt, against R_fmt.

:func:`study_answer` reads the primary family for the paper's two questions and the controls family for a third
("Is it the reward or GRPO's drift?"); :func:`study_markdown` writes one family as a Markdown table;
:func:`answer_block` is the README's and the evidence page's block (the answer, then the compact primary table and,
when controls ran, the compact controls table).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from sdrlib.experiments.paper_values import PAPER_METRIC, PAPER_TABLES, paper_effect
from sdrlib.experiments.study.evidence import StudyError
from sdrlib.rewards import reward_label

__all__ = ["CONTROLS", "CONTROL_LABELS", "FAMILIES", "CONTROLS_HEADING", "study_pairs", "control_pairs",
           "study_answer", "study_markdown", "answer_block"]

#: the control configurations (``grpo.rewards`` names): ``fmt`` (R_fmt, the format reward alone) and ``noise``
#: (C-noise, a reward of noise: GRPO's drift with no signal); compared in the controls family, never in the primary
CONTROLS: tuple[str, ...] = ("fmt", "noise")
#: their labels in the table's ``A`` and ``B`` columns (``R_fmt``, ``C-noise``)
CONTROL_LABELS: frozenset[str] = frozenset(reward_label(c) for c in CONTROLS)
#: the study table's families, in the table's order
FAMILIES: tuple[str, ...] = ("primary", "secondary", "controls")

#: the paper's set-distance rewards, first in every sentence and table
_PAPERS = ("R_Cham", "R_Haus")


def study_pairs(configs: Sequence[str]) -> list[tuple[str, str]]:
    """The primary (and secondary) family's pairs: every trained configuration that is no control (:data:`CONTROLS`)
    against SFT, then every such configuration other than R_exact against R_exact (when run). Example:
    ``study_pairs(["sft", "fmt", "exact", "chamfer"])`` -> ``[("exact", "sft"), ("chamfer", "sft"), ("chamfer",
    "exact")]``."""
    trained = [c for c in configs if c != "sft" and c not in CONTROLS]
    pairs = [(c, "sft") for c in trained]
    if "exact" in trained:
        pairs += [(c, "exact") for c in trained if c != "exact"]
    return pairs


def control_pairs(configs: Sequence[str]) -> list[tuple[str, str]]:
    """The controls family's pairs: every control of ``configs`` (:data:`CONTROLS`, in the order of ``configs``)
    against SFT, then every trained configuration that is no control against ``noise``, or against ``fmt`` when
    ``noise`` did not run; ``[]`` without controls. Example: ``control_pairs(["sft", "fmt", "noise", "chamfer"])`` ->
    ``[("fmt", "sft"), ("noise", "sft"), ("chamfer", "noise")]``."""
    controls = [c for c in configs if c in CONTROLS]
    if not controls:
        return []
    base = "noise" if "noise" in controls else "fmt"
    return [(c, "sft") for c in controls] + [(c, base) for c in configs if c != "sft" and c not in CONTROLS]


def _metric_name(metric: str) -> str:
    base = metric.split("@")[0]
    return {"bertscore_f1": "BERTScore F1", "clinical_f1_macro14": "CXB-14 macro F1",
            "clinical_f1_micro14": "CXB-14 micro F1", "clinical_f1_sample": "per-report label F1"}.get(base, base)


def _order(a: str) -> tuple[bool, str]:
    """R_Cham and R_Haus (the paper's set-distance rewards) first, then the rest by label."""
    return a not in _PAPERS, a


def _verdicts(rows: pd.DataFrame) -> str:
    """``"A: metric verdict (diff, detectable mde, k of n seeds); ...", ...`` per A of ``rows`` (:func:`_order`)."""
    parts = []
    for a in sorted(rows.A.unique(), key=_order):
        cells = [f"{_metric_name(r.metric)} {r.verdict} ({r['diff']:+.3f}, detectable {r.mde:.3f}, "
                 f"{int(r.n_same_sign)} of {int(r.n_seeds)} seeds)" for _, r in rows[rows.A == a].iterrows()]
        parts.append(f"{a}: " + "; ".join(cells))
    return ". ".join(parts)


def study_answer(table: pd.DataFrame, *, family: str = "primary", controls: str | None = "controls") -> list[str]:
    """The study's answer, one sentence per question, every direction word from the rule's ``verdict`` column of
    :func:`~sdrlib.experiments.study.runs.study_table` and the detectable effect beside each comparison:

    - the paper's two GRPO questions from ``family``'s rows (set-distance rewards vs SFT, vs R_exact), listing only
      configurations that are no control (:data:`CONTROL_LABELS`), R_Cham and R_Haus (the paper's set-distance
      rewards) first, then the others by label;
    - when the table holds rows of the ``controls`` family (None: leave it out), a third: "Is it the reward or
      GRPO's drift?", each control against SFT (how far GRPO moves the policy without signal), then each reward
      against the noise control (or R_fmt).

    :class:`StudyError` when ``table`` holds no comparison."""
    if table.empty or "verdict" not in table.columns:
        raise StudyError("study_answer needs study_table's output (no comparison in it)")
    t = table[(table.family == family) & ~table.A.isin(CONTROL_LABELS) & ~table.B.isin(CONTROL_LABELS)]
    out = []
    for b, question in (("SFT", "Do set-distance rewards beat SFT after GRPO?"),
                        ("R_exact", "Do set-distance rewards beat exact matching (R_exact)?")):
        rows = t[t.B == b]
        if not rows.empty:
            out.append(f"{question} {_verdicts(rows)}.")
    c = table[table.family == controls] if controls is not None else table.iloc[0:0]
    if not c.empty:
        parts = []
        drift = c[(c.B == "SFT") & c.A.isin(CONTROL_LABELS)]
        if not drift.empty:
            parts.append(f"The controls vs SFT: {_verdicts(drift)}.")
        for base in sorted(set(c.B) & CONTROL_LABELS):
            parts.append(f"The rewards vs {base}: {_verdicts(c[c.B == base])}.")
        out.append("Is it the reward or GRPO's drift? " + " ".join(parts))
    return out


#: the columns of :func:`study_markdown`: (header, cell of a row ``r`` and the paper's effect ``paper``, in compact)
_MARKDOWN_COLUMNS: tuple[tuple[str, Callable[[Any, Any], str], bool], ...] = (
    ("comparison", lambda r, p: f"{r.A} vs {r.B}", True),
    ("metric (ours)", lambda r, p: _metric_with_instrument(r.metric), True),
    ("mean A", lambda r, p: f"{r.value_a:.3f}", False),
    ("mean B", lambda r, p: f"{r.value_b:.3f}", False),
    ("A - B", lambda r, p: f"{r['diff']:+.3f}", True),
    ("95 % interval", lambda r, p: f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}]", True),
    ("p", lambda r, p: f"{r.p_value:.3f}", False),
    ("p (Holm)", lambda r, p: f"{r.p_holm:.3f}", True),
    ("seeds with the sign", lambda r, p: f"{int(r.n_same_sign)} of {int(r.n_seeds)}", True),
    ("detectable", lambda r, p: f"{r.mde:.3f}", True),
    ("binding half", lambda r, p: f"{r.binding}", False),
    ("paper's A - B (Tab. 1 / Tab. 2; its BERTScore F1, CheXbert F1)", lambda r, p: p, True),
    ("verdict", lambda r, p: f"{r.verdict}", True),
)


def _metric_with_instrument(metric: str) -> str:
    """The metric's name with what measured it where the paper measures it otherwise: ``"BERTScore F1 on
    all-MiniLM-L6-v2"``, ``"CXB-14 macro F1 (rule labeler)"``; other metrics by name (:func:`_metric_name`)."""
    name = _metric_name(metric)
    base, _, backend = metric.partition("@")
    if base == "bertscore_f1" and backend:
        return f"{name} on {backend.split('/')[0]}"
    if base == "clinical_f1_macro14" and backend == "labeler":
        return f"{name} (rule labeler)"
    return name


def _paper_cell(a: str, b: str, metric: str) -> str:
    """The paper's ``a - b`` on the metric it sets beside ``metric`` (:mod:`sdrlib.experiments.paper_values`), Tab. 1
    and Tab. 2, e.g. ``"+0.024 / +0.017"``; "none (control)" for a comparison with a control (the paper's Tables
    1 and 2 report none), "none (ours)" where the paper has no such configuration, "" where it has no such metric."""
    if metric.split("@")[0] not in PAPER_METRIC:
        return ""
    if a in CONTROL_LABELS or b in CONTROL_LABELS:
        return "none (control)"
    v = [paper_effect(a, b, metric, t) for t in PAPER_TABLES]
    if any(x is None for x in v):
        return "none (ours)"
    return " / ".join(f"{x:+.3f}" if x else "0.000" for x in v)


def study_markdown(table: pd.DataFrame, *, family: str = "primary", compact: bool = False) -> str:
    """:func:`~sdrlib.experiments.study.runs.study_table`'s rows of one family (:data:`FAMILIES`) as a Markdown table
    (the README's and the evidence page's): per comparison the two means, the difference and its 95 % interval, p
    raw and Holm-corrected, the seeds sharing the mean's sign, the detectable effect (80 % power at the Holm level)
    and which half binds it, the paper's own Findings difference of the same two configurations
    (:func:`_paper_cell`: Tab. 1 ReXGradient / Tab. 2 MIMIC-CXR, on CheXbert F1 for a CXB-14 row) and the rule's
    verdict; ``compact``: without the two means, raw p and the binding half. Rows vs SFT first, then the rest (vs
    R_exact; in the controls family, vs the control); within each, R_Cham and R_Haus (the paper's), then the others
    by label, then R_exact. :class:`StudyError` when ``table`` holds no row of ``family``."""
    t = table[table.family == family] if "family" in table.columns else table.iloc[0:0]
    if t.empty:
        raise StudyError(f"study_markdown: no {family!r} row (pass study_table's output)")
    cols = [c for c in _MARKDOWN_COLUMNS if c[2] or not compact]
    rows = ["| " + " | ".join(c[0] for c in cols) + " |", "|" + "---|" * len(cols)]
    order = {"R_Cham": 0, "R_Haus": 1}  # the paper's set-distance rewards first, then ours, then R_exact
    t = t.assign(_b=t.B != "SFT", _a=[(order.get(a, 2 if a != "R_exact" else 3), a) for a in t.A])
    for _, r in t.sort_values(["_b", "_a"], kind="stable").iterrows():
        paper = _paper_cell(r.A, r.B, r.metric)
        rows.append("| " + " | ".join(c[1](r, paper) for c in cols) + " |")
    return "\n".join(rows)


#: the heading of the controls family's compact table in :func:`answer_block`
CONTROLS_HEADING = ("Controls (one Holm family of their own: each control vs SFT, each reward vs the noise control "
                    "or R_fmt):")


def answer_block(table: pd.DataFrame) -> str:
    """The block ``table --answer-block`` writes between a page's study-answer markers: :func:`study_answer`'s
    sentences, the compact primary table and, when the table holds controls rows, :data:`CONTROLS_HEADING` and the
    compact controls table."""
    block = "\n\n".join(study_answer(table))
    if (table.family == "primary").any():
        block += "\n\n" + study_markdown(table, compact=True)
    if (table.family == "controls").any():
        block += f"\n\n{CONTROLS_HEADING}\n\n" + study_markdown(table, family="controls", compact=True)
    return block
