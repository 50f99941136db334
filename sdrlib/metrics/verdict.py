"""The one rule that turns a family of comparisons into direction words, and what a "no difference" could see.

Every sentence that says one system is *above* or *below* another comes from :func:`verdict` (one comparison)
or :func:`family_verdicts` (the comparisons one run reports); any other mention of a difference says
"higher mean, not tested" / "lower mean, not tested" (:func:`untested_direction`) or :data:`NO_DIFF`.

**The rule.** The comparisons a run reports form one family. Their p-values (each the combined test of
:func:`sdrlib.metrics.significance.seed_study_test`: the larger of the two-level study bootstrap's p and the
t-test over seeds) are adjusted by Holm's step-down procedure (:func:`holm`; family-wise error rate ``alpha``).
A comparison is ``above`` / ``below`` only when its Holm-adjusted p is below ``alpha`` and its interval excludes
0; otherwise :data:`NO_DIFF` (in one sentence: :func:`rule_sentence`). How many seeds share the mean's sign is reported beside it, not required: the t half
already weighs the seeds' spread, and requiring every seed's sign makes the rule's power fall as seeds are added
(at the detectable effect below, in a family of 14 comparisons, all of 3 seeds share the sign with probability
1.00, of 10 with 0.54, of 20 with 0.02), so the detectable effect would not be the rule's. An earlier form of the
rule required it; at 3 seeds it never bound, and no verdict of the default run depended on it.

**What the test could detect** (:func:`detectable_effect`): the smallest true difference found with probability
``power`` (0.8) by the combined test, at the level Holm tests the family's smallest p (``alpha / m``, ``m``
comparisons: the honest level for a single real effect among nulls). The combined test rejects only when both
halves do, so it is the larger of the two halves' detectable effects:

- *studies*: ``(z_{1-a/2} + z_power) * se_study``, ``se_study`` the study bootstrap's standard error (from its
  95 % percentile interval, :func:`interval_se`); more studies shrink it as ``1 / sqrt(n)``
  (:func:`studies_needed`);
- *seeds*: the mean difference at which the t-test over ``k`` seeds rejects with probability ``power`` (the
  non-central t, exact; the usual ``(t_{1-a/2, k-1} + t_{power, k-1}) * seed_sd / sqrt(k)`` is a little low: at
  3 seeds and a family of 14 its power is 0.68, not 0.8); more seeds shrink it (:func:`seeds_needed`).

The larger one is the *binding* half: "needs k seeds" is said only when seeds bind, "needs n studies" otherwise.
Every seed shares the test studies, so seeds cannot remove the study half.

Assumptions: normal seed effects (the t half); a normal study bootstrap distribution (the z half); power at the
observed seed SD and study SE (rough with 3 seeds). Holm is written here (ten lines) rather than taken from
statsmodels, which the package does not otherwise need; the test checks it against worked values.

Example:

>>> holm([0.01, 0.04, 0.03, 0.005]).round(3).tolist()
[0.03, 0.06, 0.06, 0.02]
>>> verdict(diff=0.03, p_adjusted=0.01, ci_low=0.01, ci_high=0.05)
'above'
>>> round(detectable_effect(seed_sd=0.0, n_seeds=5, study_se=0.0074, alpha=0.05)[0], 3)
0.021
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import optimize, stats

from sdrlib.errors import SDRError

__all__ = ["ALPHA", "POWER", "NO_DIFF", "VerdictInputError", "holm", "interval_se", "detectable_effect", "seeds_needed",
           "studies_needed", "verdict", "untested_direction", "study_se_column", "family_verdicts",
           "family_directions", "rule_sentence", "METRIC_RANGE", "detectable_phrase"]

ALPHA, POWER = 0.05, 0.8
NO_DIFF = "no difference detected"


class VerdictInputError(SDRError, ValueError):
    """A p-value, standard error, level or table the rule cannot read; the message names it."""


def _level(value: float, what: str) -> float:
    if not isinstance(value, (int, float, np.floating)) or isinstance(value, bool) or not 0 < value < 1:
        raise VerdictInputError(f"{what} = {value!r}: a probability in (0, 1)")
    return float(value)


def _spread(value: float, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise VerdictInputError(f"{what} = {value!r}: a standard deviation or error, a finite number >= 0 "
                                "(NaN: unknown)")
    v = float(value)
    if v < 0 or np.isinf(v):
        raise VerdictInputError(f"{what} = {value!r}: a standard deviation or error is finite and >= 0 (NaN: unknown)")
    return v


def _whole(value, what: str, least: int = 1) -> int:
    """A count (seeds, studies): an integer >= ``least``; an integral float (2.0, as a CSV reads it) is that
    integer. ``True``, 2.5, -3, NaN and text are refused (2.5 seeds were read as 2, True as 1)."""
    if isinstance(value, (bool, np.bool_)):
        raise VerdictInputError(f"{what} = {value!r}: a whole number >= {least}, not a bool")
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        value = int(value)
    if not isinstance(value, (int, np.integer)) or value < least:
        raise VerdictInputError(f"{what} = {value!r}: a whole number >= {least}")
    return int(value)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the input order: the ``i``-th smallest p times ``m - i + 1``,
    made non-decreasing in that order, capped at 1. NaN p-values are left out of the family and stay NaN.

    Example: ``holm([0.01, 0.04, 0.03, 0.005])`` -> ``[0.03, 0.06, 0.06, 0.02]``.
    """
    try:
        p = np.asarray(p_values, float)
    except (TypeError, ValueError):
        raise VerdictInputError(f"holm needs p-values (numbers in [0, 1], NaN for none), got {p_values!r}") from None
    bad = p[~np.isnan(p) & ((p < 0) | (p > 1))]
    if bad.size:
        raise VerdictInputError(f"holm: p-values lie in [0, 1] (NaN for none); got {bad[:3].tolist()}")
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out[order] = adjusted
    return out


def interval_se(ci_low: float, ci_high: float, *, ci: float = 0.95) -> float:
    """The standard error a central ``ci`` interval implies under normality: width / (2 z_{(1+ci)/2}).

    Example: ``interval_se(-0.012, 0.017)`` -> 0.0074 (a comparison whose p is 0.625)."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return float("nan")
    return float((ci_high - ci_low) / (2 * stats.norm.ppf((1 + ci) / 2)))


def _seed_mde(seed_sd: float, n_seeds: int, alpha: float, power: float) -> float:
    """The t-test's detectable effect, exact: the mean difference whose non-central t (``n_seeds - 1`` degrees of
    freedom) exceeds the two-sided critical value with probability ``power``: :func:`_seed_nc` (cached per seed
    count and levels, so a family of thousands of rows solves it once per seed count) times ``seed_sd / sqrt(k)``."""
    if n_seeds < 2 or not np.isfinite(seed_sd):
        return float("nan")
    return float(_seed_nc(int(n_seeds), float(alpha), float(power)) * seed_sd / math.sqrt(n_seeds))


@lru_cache(maxsize=4096)
def _seed_nc(n_seeds: int, alpha: float, power: float) -> float:
    """The non-centrality at which the two-sided t-test over ``n_seeds`` seeds at level ``alpha`` rejects with
    probability ``power``. Beyond 1,000 (two seeds at a tiny level), where SciPy's non-central t is slow and
    inexact, the usual sum of t quantiles; a power at most alpha needs none (0)."""
    df = n_seeds - 1
    crit = stats.t.ppf(1 - alpha / 2, df)
    approx = crit + stats.t.ppf(power, df)  # the usual approximation, a little low

    def short(nc: float) -> float:  # the far tail (wrong sign) is negligible; SciPy returns NaN for it at times
        return stats.nct.sf(crit, df, nc) + np.nan_to_num(stats.nct.cdf(-crit, df, nc)) - power

    if short(0.0) >= 0:  # a power at most alpha needs no difference
        return 0.0
    hi, nc = max(approx, 1.0), approx
    while hi <= _NC_MAX and short(hi) < 0:
        hi *= 2
    if hi <= _NC_MAX:
        nc = optimize.brentq(short, 0.0, hi, xtol=1e-10)
    return float(nc)


_NC_MAX = 1000.0


def _study_mde(study_se: float, alpha: float, power: float) -> float:
    """The z test's detectable effect; a power at most alpha needs no difference (0, never negative)."""
    if not np.isfinite(study_se):
        return float("nan")
    if power <= alpha:
        return 0.0
    return float(max(0.0, stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * study_se)


def detectable_effect(*, seed_sd: float, n_seeds: int, study_se: float, alpha: float = ALPHA,
                      power: float = POWER) -> tuple[float, str]:
    """``(effect, binding)``: the smallest true difference the combined test detects with probability ``power`` at
    level ``alpha`` (module doc), and which half binds (``"seeds"`` or ``"studies"``; ``""`` when neither is
    known). One seed: the study half alone. Example: ``detectable_effect(seed_sd=0.02, n_seeds=3,
    study_se=0.005)`` -> ``(0.065, "seeds")``."""
    alpha, power = _level(alpha, "alpha"), _level(power, "power")
    seed_sd, study_se = _spread(seed_sd, "seed_sd"), _spread(study_se, "study_se")
    n_seeds = _whole(n_seeds, "n_seeds")
    seeds, studies = _seed_mde(seed_sd, n_seeds, alpha, power), _study_mde(study_se, alpha, power)
    if not np.isfinite(seeds) and not np.isfinite(studies):
        return float("nan"), ""
    if not np.isfinite(seeds) or (np.isfinite(studies) and studies >= seeds):
        return studies, "studies"
    return seeds, "seeds"


def seeds_needed(diff: float, seed_sd: float, *, alpha: float = ALPHA, power: float = POWER,
                 most: int = 200) -> float:
    """Seeds at which the seed half's detectable effect falls to ``|diff|`` (NaN when ``diff`` is 0 or the SD
    unknown; ``inf`` beyond ``most``). Example: ``seeds_needed(0.03, 0.02)`` -> 6. The detectable effect falls
    as seeds are added, so the count is found by bisection (a few solves, not one per count)."""
    alpha, power = _level(alpha, "alpha"), _level(power, "power")
    seed_sd, most = _spread(seed_sd, "seed_sd"), _whole(most, "most")
    if not (np.isfinite(diff) and np.isfinite(seed_sd)) or diff == 0:
        return float("nan")
    if most < 2 or _seed_mde(seed_sd, most, alpha, power) > abs(diff):
        return float("inf")
    lo, hi = 1, most  # mde(lo) > |diff| (one seed: none), mde(hi) <= |diff|
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _seed_mde(seed_sd, mid, alpha, power) <= abs(diff):
            hi = mid
        else:
            lo = mid
    return float(hi)


def studies_needed(diff: float, study_se: float, n_studies: int, *, alpha: float = ALPHA,
                   power: float = POWER) -> float:
    """Test studies at which the study half's detectable effect falls to ``|diff|``, scaling the standard error
    as ``1 / sqrt(n)`` from ``n_studies`` (NaN when unknown or ``diff`` is 0). Example:
    ``studies_needed(0.01, 0.0074, 100)`` -> 430."""
    alpha, power = _level(alpha, "alpha"), _level(power, "power")
    study_se, n_studies = _spread(study_se, "study_se"), _whole(n_studies, "n_studies (0: unknown)", least=0)
    mde = _study_mde(study_se, alpha, power)
    if not (np.isfinite(diff) and np.isfinite(mde)) or diff == 0 or n_studies < 1:
        return float("nan")
    return float(math.ceil(n_studies * (mde / abs(diff)) ** 2))


def verdict(*, diff: float, p_adjusted: float, ci_low: float, ci_high: float, alpha: float = ALPHA) -> str:
    """``"above"`` / ``"below"`` (A against B) under the module's rule, else :data:`NO_DIFF`: the family-adjusted p
    below ``alpha`` and the interval excluding 0 on the side of ``diff``. ``alpha`` in (0, 1)
    (:class:`VerdictInputError` otherwise: at ``alpha = 1`` every p would be "above")."""
    alpha = _level(alpha, "alpha")
    if np.isfinite(p_adjusted) and not 0 <= p_adjusted <= 1:
        raise VerdictInputError(f"p_adjusted = {p_adjusted!r}: a p-value in [0, 1] (NaN: not tested)")
    if not (np.isfinite(diff) and np.isfinite(p_adjusted)) or diff == 0:
        return NO_DIFF
    excludes = ci_low > 0 if diff > 0 else ci_high < 0
    if p_adjusted < alpha and excludes:
        return "above" if diff > 0 else "below"
    return NO_DIFF


#: the widest difference two scores in [0, 1] can have (every metric these verdicts compare: F1s, BERTScore, BLEU,
#: ROUGE, METEOR): a detectable effect beyond it is a difference the test cannot see at this size
METRIC_RANGE = 1.0


def detectable_phrase(mdes: Sequence[float] | float, bound: float = METRIC_RANGE) -> str:
    """The detectable effect(s) in words: ``"detectable at this size: 0.018"`` (one), ``"... 0.018 to 0.350"`` (a
    range), with the ones beyond ``bound`` (the metric's range) said as "not detectable at this size" instead of a
    number no difference of the metric can reach; ``""`` when none is finite.

    Example: ``detectable_phrase([0.018, 1.265])`` -> "detectable at this size: 0.018; 1 of 2 not detectable at this
    size (it would take a difference beyond the metric's range)"; ``detectable_phrase(1.3)`` -> "not detectable at
    this size (it would take a difference beyond the metric's range)".
    """
    v = np.atleast_1d(np.asarray(mdes, dtype=np.float64))
    v = v[np.isfinite(v)]
    if not len(v):
        return ""
    ok, out_of_range = v[v <= bound], int((v > bound).sum())
    beyond = "not detectable at this size (it would take a difference beyond the metric's range)"
    if not len(ok):
        return beyond
    lo, hi = f"{ok.min():.3f}", f"{ok.max():.3f}"
    words = f"detectable at this size: {lo}" + ("" if lo == hi else f" to {hi}")
    return words + (f"; {out_of_range} of {len(v)} {beyond}" if out_of_range else "")


def rule_sentence(alpha: float = ALPHA, where: str | None = None) -> str:
    """The rule of :func:`verdict` in one sentence, as docs/results.md and the README's conclusions block state it
    (a test holds the page to it). ``where``: the runs it must hold in (``"in this run (...)"``), or None.

    Example: ``rule_sentence()`` -> "a difference is stated only when its Holm-adjusted p over seeds and studies is
    below 0.05 and its interval excludes 0 (how many seeds share the mean's sign is reported beside it, not
    required)".
    """
    return (f"a difference is stated only when{f', {where},' if where else ''} its Holm-adjusted p over seeds and "
            f"studies is below {alpha:g} and its interval excludes 0 (how many seeds share the mean's sign is reported "
            "beside it, not required)")


def untested_direction(diff: float) -> str:
    """The words for a difference no test speaks for: ``"higher mean, not tested"`` / ``"lower mean, not
    tested"`` / ``"equal means"``."""
    if not np.isfinite(diff) or diff == 0:
        return "equal means"
    return "higher mean, not tested" if diff > 0 else "lower mean, not tested"


def study_se_column(table: pd.DataFrame) -> pd.Series:
    """A comparison table's ``study_se`` as floats, NaN where a row has none (or the table lacks the column): the
    row's interval then stands in. Numeric text (a CSV's) is read as its number; other text or a negative value is
    a :class:`VerdictInputError` naming the row. An infinite value is kept (not finite: the interval stands in)."""
    if "study_se" not in table:
        return pd.Series(np.nan, index=table.index)
    raw = table["study_se"]
    se = pd.to_numeric(raw, errors="coerce").astype(float)
    bad = (raw.notna() & se.isna()) | (se < 0)
    if bad.any():
        i = bad[bad].index[0]
        shown = repr(raw[i]) if isinstance(raw[i], str) else raw[i]
        raise VerdictInputError(f"study_se = {shown} (row {i}): a standard error, a number >= 0 (NaN: unknown)")
    return se


def family_verdicts(table: pd.DataFrame, *, n_studies: int, alpha: float = ALPHA,
                    power: float = POWER) -> pd.DataFrame:
    """The rule over one run's family: ``table`` rows of the comparison schema (``diff, p_value, ci_low, ci_high``
    and, over seeds, ``seed_sd, n_seeds``; optional ``boot_ci_low, boot_ci_high``, the study bootstrap's
    own interval, else the row's interval stands in: wider, so its detectable effect is an upper bound; a finite
    ``study_se``, the study bootstrap's standard error with the seeds held fixed, is used before either:
    :func:`study_se_column`). Returns a
    copy with ``p_holm``, ``verdict``, ``mde`` (at ``alpha / m``), ``binding``, ``seeds_needed``,
    ``studies_needed`` (each NaN unless its half binds and the observed difference is below ``mde``) and
    ``family_size``."""
    alpha, power = _level(alpha, "alpha"), _level(power, "power")
    n_studies = _whole(n_studies, "n_studies (0: unknown)", least=0)
    missing = [c for c in ("diff", "p_value", "ci_low", "ci_high") if c not in table.columns]
    if missing:
        raise VerdictInputError(f"family_verdicts: the table lacks {missing}; it needs diff, p_value, ci_low, ci_high "
                                "(and over seeds seed_sd, n_seeds)")
    t = table.copy().reset_index(drop=True)
    m = int(np.isfinite(t["p_value"].to_numpy(float)).sum())
    n_seeds = (pd.Series([_whole(v, f"n_seeds (row {i})") for i, v in t["n_seeds"].items()], index=t.index)
               if "n_seeds" in t else pd.Series(1, index=t.index))
    seed_sd = t["seed_sd"] if "seed_sd" in t else pd.Series(np.nan, index=t.index)
    lo = t["boot_ci_low"] if "boot_ci_low" in t else t["ci_low"]
    hi = t["boot_ci_high"] if "boot_ci_high" in t else t["ci_high"]
    study_se = study_se_column(t)
    level = alpha / max(m, 1)
    t["p_holm"] = holm(t["p_value"].to_numpy(float))
    rows = []
    for i in t.index:
        d = float(t.at[i, "diff"])
        se = float(study_se[i]) if np.isfinite(study_se[i]) else interval_se(float(lo[i]), float(hi[i]))
        sd, k = float(seed_sd[i]), int(n_seeds[i])
        mde, binding = detectable_effect(seed_sd=sd, n_seeds=k, study_se=se, alpha=level, power=power)
        v = verdict(diff=d, p_adjusted=float(t.at[i, "p_holm"]), ci_low=float(t.at[i, "ci_low"]),
                    ci_high=float(t.at[i, "ci_high"]), alpha=alpha)
        short = v == NO_DIFF and np.isfinite(mde) and abs(d) < mde
        rows.append({"verdict": v, "mde": mde, "binding": binding,
                     "seeds_needed": seeds_needed(d, sd, alpha=level, power=power)
                     if short and binding == "seeds" else np.nan,
                     "studies_needed": studies_needed(d, se, n_studies, alpha=level, power=power)
                     if short and binding == "studies" else np.nan})
    out = pd.concat([t, pd.DataFrame(rows, index=t.index)], axis=1)
    out["family_size"] = m
    return out


def family_directions(table: pd.DataFrame, *, alpha: float = ALPHA) -> list[str]:
    """The rule's word for each row of one family, in row order: ``"above"`` / ``"below"`` / :data:`NO_DIFF`, Holm
    over the rows with a finite ``p_value`` (:func:`family_verdicts` without the detectable effect, for tables that
    report none). ``table``: ``diff, p_value, ci_low, ci_high``; a row
    without a p-value is not tested (:data:`NO_DIFF`).

    Example: two rows with p = 0.01 and 0.04, both intervals above 0 -> Holm 0.02 and 0.04 -> ``["above", "above"]``;
    with p = 0.03 and 0.04 -> 0.06 and 0.06 -> both :data:`NO_DIFF`."""
    missing = [c for c in ("diff", "ci_low", "ci_high") if c not in table.columns]
    if missing:
        raise VerdictInputError(f"family_directions: the table lacks {missing}; it needs diff, p_value, ci_low, "
                                "ci_high")
    alpha = _level(alpha, "alpha")
    t = table.reset_index(drop=True)
    adj = holm(t["p_value"].tolist()) if "p_value" in t else np.full(len(t), np.nan)  # holm names text p-values
    return [verdict(diff=float(t.at[i, "diff"]), p_adjusted=float(adj[i]), ci_low=float(t.at[i, "ci_low"]),
                    ci_high=float(t.at[i, "ci_high"]), alpha=alpha)
            for i in t.index]
