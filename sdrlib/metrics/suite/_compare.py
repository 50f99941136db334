"""Paired bootstrap comparisons of two systems scored by the suite: from :class:`ReportScores` (every metric,
corpus statistics resampled exactly) or from two tidy tables read back from CSV (sample-level metrics only).

The test itself is :mod:`sdrlib.metrics.significance`'s; this module aligns the two systems' metrics.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdrlib.metrics.base import EvaluationInputError, mean_result
from sdrlib.metrics.significance import bootstrap_weights, paired_bootstrap
from sdrlib.metrics.suite._scores import ReportScores

__all__ = ["compare_frames", "compare_systems"]


def compare_systems(a: ReportScores, b: ReportScores, *, n_resamples: int = 1000, seed: int = 0,
                    ci: float = 0.95) -> pd.DataFrame:
    """Paired bootstrap of A - B for every metric both systems have, per section.

    Both must cover the same ``sample_ids`` in the same order. Every metric
    uses the same resamples. Columns: ``section, metric, value_a, value_b,
    diff, ci_low, ci_high, p_value, n, n_resamples``.
    """
    if list(a.sample_ids) != list(b.sample_ids):
        raise EvaluationInputError("compare_systems needs both systems scored on the same sample_ids, same order")
    w = bootstrap_weights(len(a.sample_ids), n_resamples, seed)
    rows = []
    for sec in a.sections:
        if sec not in b.sections:
            continue
        b_names = {r.name: r for r in b.results[sec]}
        for ra in a.results[sec]:
            rb = b_names.get(ra.name)
            if rb is None:
                continue
            rows.append({"section": sec, "metric": ra.name, **paired_bootstrap(ra, rb, weights=w, ci=ci)})
    return pd.DataFrame(rows)


def compare_frames(df_a: pd.DataFrame, df_b: pd.DataFrame, *, n_resamples: int = 1000, seed: int = 0,
                   ci: float = 0.95) -> pd.DataFrame:
    """Paired bootstrap from two tidy tables (e.g. read back from CSV): sample-level metrics only.

    Samples are aligned on ``sample_id``; a sample missing from either table is
    an error (a paired test needs the same samples). The statistic is the mean
    of the sample values, so corpus-only metrics (corpus BLEU, macro F1) are
    absent and ``chrf++`` is the mean sentence chrF++ rather than corpus
    chrF++; use :func:`compare_systems` for those.
    """
    def pivot(df):
        s = df[df.level == "sample"]
        return s.pivot_table(index="sample_id", columns=["section", "metric"], values="value",
                             aggfunc="first", dropna=False)

    pa, pb = pivot(df_a), pivot(df_b)
    if set(pa.index) != set(pb.index):
        raise EvaluationInputError(f"tables cover different samples ({len(pa)} vs {len(pb)} ids)")
    pb = pb.loc[pa.index]
    w = bootstrap_weights(len(pa), n_resamples, seed)
    rows = []
    for col in pa.columns:
        if col not in pb.columns:
            continue
        ra = mean_result(col[1], "", pa[col].to_numpy(np.float64))
        rb = mean_result(col[1], "", pb[col].to_numpy(np.float64))
        rows.append({"section": col[0], "metric": col[1], **paired_bootstrap(ra, rb, weights=w, ci=ci)})
    return pd.DataFrame(rows)

