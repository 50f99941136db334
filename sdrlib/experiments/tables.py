"""Paired comparison tables, one way for every notebook (03 SFT vs baselines, 04 GRPO configurations over
seeds, 05 selection methods, 06 pruning vs standard).

All rest on :func:`sdrlib.metrics.significance.paired_bootstrap` (percentile interval and two-sided p of
A - B over the same test studies, resampled with one seed); what differs between the notebooks is only
which pairs are compared and what the columns are called, so that is all the callers say:

- :func:`system_comparisons`: system A against several others on every metric both have
  (:func:`sdrlib.metrics.suite.compare_systems`, one set of resamples per comparison), with a ``B`` column;
- :func:`paired_table`: one row per (keys, A's result, B's result) in the one comparison schema
  (:data:`sdrlib.metrics.significance.COMPARISON_COLUMNS`: the keys name the systems ``A`` and ``B``), extra
  columns appended;
- :func:`significance_table`: configurations over seeds, seed ``s`` of A against seed ``s`` of B (or B's only
  run when the caller names B deterministic): one across-seed row per metric
  (:func:`sdrlib.metrics.significance.seed_study_test`: mean difference over seeds, interval and p over seeds
  and studies together, seed SD, seeds with the mean's sign), each seed's study-only p as a detail column;
- :func:`compact_significance`: a few metrics of such a table to read in a notebook, one row per comparison.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.errors import SDRError
from sdrlib.metrics.base import MetricResult
from sdrlib.metrics.significance import format_p, paired_bootstrap, seed_study_test
from sdrlib.metrics.suite import compare_systems
from sdrlib.rewards import reward_label

__all__ = ["system_comparisons", "paired_table", "seed_row", "significance_table", "metric_prefixes",
           "compact_significance", "SignificanceRequestError"]


def system_comparisons(a: Any, others: Mapping[str, Any], *, metrics: Sequence[str] | None = None,
                       n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """System ``a`` (a :class:`~sdrlib.metrics.suite.ReportScores`) against each of ``others`` (name -> scores
    on the same studies): :func:`~sdrlib.metrics.suite.compare_systems`'s columns plus ``B`` (the other's
    name), rows in the order of ``others``; ``metrics``: keep only metric names whose part before ``@`` is
    one of these prefixes."""
    out = pd.concat([compare_systems(a, b, n_resamples=n_resamples, seed=seed).assign(B=name)
                     for name, b in others.items()], ignore_index=True)
    if metrics is not None:
        out = out[out.metric.str.split("@").str[0].isin(metrics)]
    return out


def paired_table(comparisons: Iterable[tuple[Mapping[str, Any], MetricResult, MetricResult, Mapping[str, Any]]],
                 *, n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One paired bootstrap per ``(keys, a, b, extra)``: a row ``{**keys, value_a, value_b, diff, ci_low, ci_high,
    p_value, **extra}`` (:data:`~sdrlib.metrics.significance.COMPARISON_COLUMNS`). ``keys`` name the two systems
    (``"A"``, ``"B"``) and what is compared (section, metric, ...); a key missing ``A`` or ``B`` raises.
    ``a`` and ``b``: the same metric on the same studies in the same order
    (:class:`~sdrlib.metrics.base.MetricResult`)."""
    rows = []
    for keys, a, b, extra in comparisons:
        if "A" not in keys or "B" not in keys:
            raise ValueError(f"paired_table: the keys of a comparison name its systems 'A' and 'B'; got {list(keys)}")
        bs = paired_bootstrap(a, b, n_resamples=n_resamples, seed=seed)
        rows.append({**keys, "value_a": bs["value_a"], "value_b": bs["value_b"], "diff": bs["diff"],
                     "ci_low": bs["ci_low"], "ci_high": bs["ci_high"], "p_value": bs["p_value"], **extra})
    return pd.DataFrame(rows)


def seed_row(a: Sequence[MetricResult], b: Sequence[MetricResult], *, n_resamples: int = 1000,
             seed: int = 0, b_deterministic: bool = False, a_deterministic: bool = False) -> dict[str, Any]:
    """One across-seed row (:func:`~sdrlib.metrics.significance.seed_study_test`) of A's runs against B's:
    ``value_a, value_b, diff, ci_low, ci_high, p_value, seed_sd, n_same_sign`` (seeds whose difference has the
    mean's sign), ``n_seeds``, ``study_se`` (the study bootstrap's standard error, seeds held fixed) and, as
    detail, ``p_seeds`` (each seed's study-only bootstrap p) and ``n_sig`` (seeds with p < 0.05 in the mean's direction). ``b_deterministic``: as in ``seed_study_test``
    (a single B run against several seeds of A only when B has no run-to-run noise); ``a_deterministic`` the same
    for A."""
    r = seed_study_test(a, b, n_resamples=n_resamples, seed=seed, b_deterministic=b_deterministic,
                        a_deterministic=a_deterministic)
    ps, ds = np.asarray(r["seed_p"]), np.asarray(r["seed_diffs"])
    direction = np.sign(r["diff"]) if np.isfinite(r["diff"]) else 0.0
    return {"value_a": r["value_a"], "value_b": r["value_b"], "diff": r["diff"], "ci_low": r["ci_low"],
            "ci_high": r["ci_high"], "p_value": r["p_value"], "seed_sd": r["seed_sd"],
            "n_same_sign": int(r["n_same_sign"]), "n_seeds": r["n_seeds"], "study_se": r["study_se"],
            "p_seeds": " ".join(f"{p:.3f}" for p in ps),
            "n_sig": int(np.sum((ps < 0.05) & (np.sign(ds) == direction) & (direction != 0)))}


class SignificanceRequestError(SDRError, ValueError):
    """A :func:`significance_table` request that matches nothing: the message names the pair, metric or seeds."""


def metric_prefixes(scores: Mapping[tuple[str, int], Any]) -> set[str]:
    """The metric-name prefixes (before ``@``) that any score of ``scores`` holds, e.g. ``{"rouge1", "rougeL",
    "bertscore_f1"}``: what :func:`significance_table` can be asked for."""
    return {r.name.split("@")[0] for sc in scores.values() for sec in sc.sections for r in sc.results[sec]}


def _check_request(scores: Mapping[tuple[str, int], Any], pairs: Sequence[tuple[str, str]],
                   metrics: Sequence[str]) -> None:
    if isinstance(metrics, (str, bytes)):
        raise SignificanceRequestError(f"metrics must be a list of metric-name prefixes, not one string: write "
                                       f"[{metrics!r}]")
    known = metric_prefixes(scores)
    unknown = [m for m in metrics if m not in known]
    if unknown or not metrics:
        raise SignificanceRequestError(f"metrics {unknown or '[]'} match no score; the scores hold "
                                       f"{sorted(known)}")
    configs = sorted({k[0] for k in scores})
    for pair in pairs:
        missing = [c for c in pair if c not in configs]
        if missing:
            raise SignificanceRequestError(f"pair {tuple(pair)} names {missing}, which the scores lack; "
                                           f"configurations: {configs}")


def _matched_runs(scores: Mapping[tuple[str, int], Any], a: str, b: str,
                  deterministic: Collection[str]) -> list[tuple[int, Any]]:
    """``(seed of A, B's run it meets)`` pairs: B's only run for every seed when B is deterministic, else seed
    ``s`` of A with seed ``s`` of B; none raises :class:`SignificanceRequestError` naming both seed lists."""
    a_seeds = sorted(k[1] for k in scores if k[0] == a)
    b_runs = {k[1]: scores[k] for k in scores if k[0] == b}
    if len(b_runs) == 1 and b in deterministic:
        return [(s, next(iter(b_runs.values()))) for s in a_seeds]
    matched = [(s, b_runs[s]) for s in a_seeds if s in b_runs]
    if not matched:
        raise SignificanceRequestError(f"{a} (seeds {a_seeds}) and {b} (seeds {sorted(b_runs)}) share no seed; "
                                       f"name {b!r} in deterministic= if its one run has no run-to-run noise")
    return matched


def significance_table(scores: dict[tuple[str, int], Any], pairs: Sequence[tuple[str, str]],
                       metrics: Sequence[str], *, n_resamples: int = 1000, seed: int = 0,
                       deterministic: Collection[str] = ()) -> pd.DataFrame:
    """Configuration A vs B over seeds and test studies: one row per (pair, section, metric).

    ``scores[(config, seed)]``: :class:`~sdrlib.metrics.suite.ReportScores` on the same test studies. Seed
    ``s`` of A is paired with seed ``s`` of B (the SFT column: the SFT policy sampled with seed ``s``); A's
    seeds that B lacks are dropped. B's only run meets every seed of A only when B is in ``deterministic``
    (configurations without run-to-run noise, e.g. a fixed baseline: ``b_deterministic`` of
    :func:`~sdrlib.metrics.significance.seed_study_test`, which refuses one run of a stochastic B against
    several seeds; A in ``deterministic`` likewise: ``a_deterministic``); otherwise a single B run is paired by
    seed like several. The row is :func:`seed_row`'s:
    the mean difference over seeds with the across-seed interval and p, the seed SD, how many seeds share
    the mean's sign; per-seed p-values only as detail. ``metrics`` are metric-name prefixes (the part
    before ``@``).

    A request that would match nothing is an error (:class:`SignificanceRequestError` naming it), never an empty
    table: ``metrics`` given as one string, a metric prefix no score in ``scores`` has (a typo such as
    ``"rougel"``; filter optional metrics with :func:`metric_prefixes` first), a pair naming a configuration
    ``scores`` lacks, or a pair whose configurations share no seed (and B is not a deterministic single run).
    """
    _check_request(scores, pairs, metrics)
    rows = []
    for a, b in pairs:
        matched = _matched_runs(scores, a, b, deterministic)
        first = scores[(a, matched[0][0])]
        for sec in first.sections:
            for ra in first.results[sec]:
                if ra.name.split("@")[0] not in metrics:
                    continue
                try:
                    runs_a = [scores[(a, s)].result(sec, ra.name) for s, _ in matched]
                    runs_b = [sb.result(sec, ra.name) for _, sb in matched]
                except KeyError:
                    continue
                rows.append({"A": reward_label(a), "B": reward_label(b), "section": sec, "metric": ra.name,
                             **seed_row(runs_a, runs_b, n_resamples=n_resamples, seed=seed,
                                        b_deterministic=b in deterministic, a_deterministic=a in deterministic)})
    return pd.DataFrame(rows)


def compact_significance(sig: pd.DataFrame, metrics: Sequence[str], *, section: str = "findings") -> pd.DataFrame:
    """A comparison table cut to read in a notebook: one row per comparison (index ``"A vs B"``, in the table's
    order), one column per metric of ``metrics`` (a metric's prefix before ``@`` matches, so
    ``"clinical_f1_macro14"`` finds ``"clinical_f1_macro14@labeler"``), each cell the difference A - B with its 95 %
    interval and p as :func:`sdrlib.metrics.significance.format_p` prints it, e.g. ``"-0.009 [-0.034, +0.015]
    p = 0.264"``; blank where a comparison lacks the metric. ``sig``: rows of the comparison schema with ``A, B,
    section, metric, diff, ci_low, ci_high, p_value`` (:func:`significance_table`). The p is the comparison's own,
    before any correction over the family (:mod:`sdrlib.metrics.verdict` applies the rule)."""
    need = {"A", "B", "section", "metric", "diff", "ci_low", "ci_high", "p_value"} - set(sig.columns)
    if need:
        raise SignificanceRequestError(f"compact_significance: the table lacks the columns {sorted(need)}")
    t = sig[(sig.section == section) & sig.metric.str.split("@").str[0].isin(list(metrics))]
    t = t.assign(metric=t.metric.str.split("@").str[0], comparison=t.A + " vs " + t.B,
                 cell=[f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}] {format_p(p)}"
                       for d, lo, hi, p in zip(t["diff"], t.ci_low, t.ci_high, t.p_value)])
    order = list(dict.fromkeys(t.comparison))
    wide = t.pivot_table(index="comparison", columns="metric", values="cell", aggfunc="first", sort=False)
    wide = wide.reindex(index=order, columns=[m for m in metrics if m in set(t.metric)]).fillna("")
    wide.columns.name = None
    return wide
