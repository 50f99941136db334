"""Paired comparison tables, one way for every notebook (03 SFT vs baselines, 04 GRPO configurations over
seeds, 05 selection methods, 06 pruning vs standard).

All rest on :func:`sdrlib.metrics.significance.paired_bootstrap` (percentile interval and two-sided p of
A - B over the same test studies, resampled with one seed); what differs between the notebooks is only
which pairs are compared and what the columns are called, so that is all the callers say:

- :func:`system_comparisons`: system A against several others on every metric both have
  (:func:`sdrlib.metrics.suite.compare_systems`, one set of resamples per comparison), with a ``B`` column;
- :func:`paired_table`: one row per (keys, A's result, B's result), the two values under names the caller
  picks (``value_A`` / ``value_B``, ``pruning`` / ``standard``), extra columns appended;
- :func:`significance_table`: configurations over seeds, seed ``s`` of A against seed ``s`` of B (or B's only
  run), with the mean difference over seeds, each seed's p and the number of seeds significant in the mean's
  direction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.experiments.posttrain import config_label
from sdrlib.metrics.base import MetricResult
from sdrlib.metrics.significance import paired_bootstrap
from sdrlib.metrics.suite import compare_systems

__all__ = ["system_comparisons", "paired_table", "significance_table"]


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
                 *, n_resamples: int = 1000, seed: int = 0,
                 value_names: tuple[str, str] = ("value_A", "value_B")) -> pd.DataFrame:
    """One paired bootstrap per ``(keys, a, b, extra)``: a row ``{**keys, value_names[0]: A's value,
    value_names[1]: B's value, diff, ci_low, ci_high, p_value, **extra}``. ``a`` and ``b``: the same metric
    on the same studies in the same order (:class:`~sdrlib.metrics.base.MetricResult`)."""
    rows = []
    for keys, a, b, extra in comparisons:
        bs = paired_bootstrap(a, b, n_resamples=n_resamples, seed=seed)
        rows.append({**keys, value_names[0]: bs["value_a"], value_names[1]: bs["value_b"], "diff": bs["diff"],
                     "ci_low": bs["ci_low"], "ci_high": bs["ci_high"], "p_value": bs["p_value"], **extra})
    return pd.DataFrame(rows)


def significance_table(scores: dict[tuple[str, int], Any], pairs: Sequence[tuple[str, str]],
                       metrics: Sequence[str], *, n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap of configuration A vs B on the same test studies, per seed and pooled.

    For each pair, each seed ``s`` of A is compared with seed ``s`` of B (or B's only run,
    e.g. SFT). Returns one row per (pair, section, metric) with the mean difference over
    seeds, each seed's p-value, and ``n_sig``: seeds with p < 0.05 in the direction of the
    mean difference. ``metrics`` are metric-name prefixes (the part before ``@``).
    """
    rows = []
    for a, b in pairs:
        a_runs = sorted((k for k in scores if k[0] == a), key=lambda k: k[1])
        b_runs = {k[1]: scores[k] for k in scores if k[0] == b}
        if not a_runs or not b_runs:
            continue
        per: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for key in a_runs:
            sb = b_runs.get(key[1], next(iter(b_runs.values())) if len(b_runs) == 1 else None)
            if sb is None:
                continue
            cmp = compare_systems(scores[key], sb, n_resamples=n_resamples, seed=seed)
            cmp = cmp[cmp.metric.str.split("@").str[0].isin(metrics)]
            for r in cmp.itertuples():
                per.setdefault((r.section, r.metric), []).append((r.diff, r.p_value))
        for (sec, metric), vals in per.items():
            diffs = np.array([v[0] for v in vals])
            ps = np.array([v[1] for v in vals])
            direction = np.sign(diffs.mean())
            rows.append({
                "A": config_label(a), "B": config_label(b), "section": sec, "metric": metric,
                "mean_diff": float(diffs.mean()), "p_values": " ".join(f"{p:.3f}" for p in ps),
                "n_seeds": len(vals),
                "n_sig": int(np.sum((ps < 0.05) & (np.sign(diffs) == direction) & (direction != 0))),
            })
    return pd.DataFrame(rows)
