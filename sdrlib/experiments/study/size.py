"""How large a GRPO study must be to see an effect of the paper's size: seeds and test studies, from a run's tables.

The paper's headline effects on Findings (Tab. 1, ReXGradient: SFT -> R_Cham +0.024 BERTScore F1 and +0.030 CheXbert
F1; R_Cham vs R_exact +0.020 / +0.061; :mod:`sdrlib.experiments.paper_values`) are what a study must be able to detect. A run's comparison table
(``grpo_significance``: per comparison ``diff``, the 95 % interval ``ci_low`` / ``ci_high`` of the study bootstrap,
``seed_sd`` over ``n_seeds`` seeds) gives both halves of the combined test's noise
(:mod:`sdrlib.metrics.verdict`): the study half's standard error shrinks as ``1 / sqrt(n)`` with more test studies,
the seed half's as ``1 / sqrt(k)`` with more seeds. :func:`size_study` asks, per comparison the study will report,
how many of each bring the detectable effect (80 % power, at Holm's level ``alpha / m`` for ``m`` comparisons) down
to the target, and :func:`study_plan` takes the largest over the comparisons, with floors (at least 5 seeds and 400
test studies, the plan's minimum).

Assumptions: the pilot run's standard errors stand for the study's (same policy size, same steps); the seed SD is
rough with 3 seeds; more GRPO steps may move the effects themselves, which sizing cannot know.

Example: ``size_study(table, targets={"bertscore_f1": 0.020}, n_studies=100, m=8)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

from sdrlib.experiments.paper_values import paper_effect
from sdrlib.metrics.verdict import ALPHA, POWER, VerdictInputError, interval_se, seeds_needed, study_se_column

__all__ = ["PAPER_EFFECTS", "MIN_SEEDS", "MIN_STUDIES", "size_study", "study_plan"]

#: the sizing targets, the paper's Findings effects the study must see (Tab. 1, ReXGradient: R_Cham vs R_exact on
#: BERTScore F1, R_Cham vs SFT on CheXbert F1; sdrlib.experiments.paper_values)
PAPER_EFFECTS: dict[str, float] = {
    "bertscore_f1": paper_effect("R_Cham", "R_exact", "bertscore_f1"),  # 0.020
    "clinical_f1_macro14": paper_effect("R_Cham", "SFT", "clinical_f1_macro14"),  # 0.030
}
#: floors of the plan (at least 5 seeds, at least 400 test studies)
MIN_SEEDS, MIN_STUDIES = 5, 400


def size_study(table: pd.DataFrame, *, targets: Mapping[str, float] = PAPER_EFFECTS, n_studies: int,
               m: int | None = None, alpha: float = ALPHA, power: float = POWER) -> pd.DataFrame:
    """Per comparison of ``table`` whose ``metric`` has a target: ``se_study``, ``seed_sd``, the test studies and
    seeds at which each half's detectable effect reaches the target (``studies_for_target``, ``seeds_for_target``),
    at Holm's level ``alpha / m`` (``m`` defaults to the number of comparisons sized).

    ``table``: rows with ``A, B, metric`` (a suite name, its backend after ``@`` ignored), ``ci_low, ci_high`` (or
    ``study_se``, the study bootstrap's standard error, used where finite: the interval also holds the seed half,
    so the standard error read from it is an upper bound; text or a negative value is refused,
    :func:`sdrlib.metrics.verdict.study_se_column`) and
    ``seed_sd`` (NaN for one seed: its seed half is
    unknown, ``seeds_for_target`` NaN); ``n_studies``: the test studies the table's intervals come from."""
    need = [c for c in ("A", "B", "metric", "ci_low", "ci_high") if c not in table.columns]
    if need:
        raise VerdictInputError(f"size_study: the table lacks {need}")
    if not isinstance(n_studies, (int, np.integer)) or n_studies < 1:
        raise VerdictInputError(f"size_study: n_studies = {n_studies!r}, a positive count of test studies")
    base = table.metric.astype(str).str.split("@").str[0]  # "bertscore_f1@all-mpnet-base-v2/L12" -> "bertscore_f1"
    t = table[base.isin(list(targets))].assign(metric=base[base.isin(list(targets))]).reset_index(drop=True)
    m = int(m if m is not None else len(t))
    level = alpha / max(m, 1)
    z = stats.norm.ppf(1 - level / 2) + stats.norm.ppf(power)
    study_se = study_se_column(t)
    rows = []
    for i, r in t.iterrows():
        target = float(targets[r.metric])
        se = float(study_se[i]) if np.isfinite(study_se[i]) else interval_se(float(r.ci_low), float(r.ci_high))
        sd = float(r["seed_sd"]) if "seed_sd" in t.columns else float("nan")
        studies = math.ceil(n_studies * (z * se / target) ** 2) if np.isfinite(se) and se > 0 else float("nan")
        rows.append({"A": r.A, "B": r.B, "metric": r.metric, "target": target, "se_study": se, "seed_sd": sd,
                     "mde_study_now": z * se, "studies_for_target": studies,
                     "seeds_for_target": seeds_needed(target, sd, alpha=level, power=power)})
    out = pd.DataFrame(rows)
    out["family_size"] = m
    return out


def study_plan(sized: pd.DataFrame, *, min_seeds: int = MIN_SEEDS, min_studies: int = MIN_STUDIES) -> dict[str, int]:
    """The study's size: the largest ``studies_for_target`` and ``seeds_for_target`` over the sized comparisons,
    at least ``min_studies`` / ``min_seeds``; a half no comparison could size (every value NaN) takes its floor."""
    if sized.empty:
        raise VerdictInputError("study_plan: no comparison was sized (no metric of the table has a target)")
    st = pd.to_numeric(sized.studies_for_target, errors="coerce")
    se = pd.to_numeric(sized.seeds_for_target, errors="coerce")
    studies = int(max(min_studies, st.max())) if st.notna().any() and np.isfinite(st.max()) else min_studies
    seeds = int(max(min_seeds, se.max())) if se.notna().any() and np.isfinite(se.max()) else min_seeds
    return {"n_studies": studies, "n_seeds": seeds}
