"""Paired bootstrap comparison of two systems scored on the same samples.

For every metric the statistic is the metric's own corpus value (a mean, a
corpus BLEU, a macro F1, ...), recomputed on each resample from per-sample
sufficient statistics (:class:`sdrlib.metrics.base.MetricResult`), so corpus
metrics are resampled correctly rather than approximated by means.

- confidence interval: percentile interval of the resampled difference
  ``d* = m_A(resample) - m_B(resample)`` (the same resample for both systems);
- p-value (two-sided): the shifted-null bootstrap test (Berg-Kirkpatrick et
  al. 2012; Koehn 2004): ``(1 + #{|d* - d| >= |d|}) / (1 + B)``, with ``d``
  the observed difference. Small p means the sign of ``d`` is reliable.

Leaves out multiple-comparison correction and approximate randomization.

Example::

    >>> from sdrlib.metrics.base import mean_result
    >>> a = mean_result("m", "x", np.array([1.0, 1.0, 1.0, 0.0]))
    >>> b = mean_result("m", "x", np.array([0.0, 0.0, 0.0, 0.0]))
    >>> round(paired_bootstrap(a, b, n_resamples=200, seed=0)["diff"], 2)
    0.75
"""

from __future__ import annotations

import numpy as np

from sdrlib.metrics.base import MetricResult

__all__ = ["bootstrap_weights", "paired_bootstrap"]


def bootstrap_weights(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """``(n_resamples, n)`` multinomial resample counts (each row sums to ``n``), seeded."""
    if n < 1:
        raise ValueError("bootstrap needs at least one sample")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples).astype(np.float64)


def paired_bootstrap(a: MetricResult, b: MetricResult, *, n_resamples: int = 1000, seed: int = 0,
                     ci: float = 0.95, weights: np.ndarray | None = None) -> dict[str, float]:
    """Paired bootstrap of ``a - b`` for one metric.

    Parameters
    ----------
    a, b : MetricResult
        The same metric on the same ``n`` samples (same order) for systems A and B.
    n_resamples, seed : int
        Number of resamples and RNG seed (ignored when ``weights`` is given).
    ci : float
        Confidence level of the percentile interval.
    weights : array, shape (B, n), optional
        Precomputed resample counts, so that every metric of one comparison uses
        the very same resamples.

    Returns
    -------
    dict with ``value_a, value_b, diff, ci_low, ci_high, p_value, n, n_resamples``.
    """
    if a.stats.shape[0] != b.stats.shape[0]:
        raise ValueError(f"{a.name}: systems cover {a.stats.shape[0]} vs {b.stats.shape[0]} samples")
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    n = a.stats.shape[0]
    w = bootstrap_weights(n, n_resamples, seed) if weights is None else np.asarray(weights, np.float64)
    va, vb = float(a.corpus), float(b.corpus)
    d = va - vb
    ds = a.value_for(w) - b.value_for(w)
    ds = ds[np.isfinite(ds)]
    if ds.size == 0 or not np.isfinite(d):
        return dict(value_a=va, value_b=vb, diff=d, ci_low=np.nan, ci_high=np.nan, p_value=np.nan,
                    n=n, n_resamples=int(w.shape[0]))
    lo, hi = np.quantile(ds, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    p = (1.0 + np.count_nonzero(np.abs(ds - d) >= abs(d))) / (1.0 + ds.size)
    return dict(value_a=va, value_b=vb, diff=d, ci_low=float(lo), ci_high=float(hi),
                p_value=float(min(p, 1.0)), n=n, n_resamples=int(w.shape[0]))
