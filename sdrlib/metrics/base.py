"""The one result type every metric returns, and the statistics behind corpus values.

A :class:`MetricResult` holds, for ``n`` samples of one section,

- ``sample``: per-sample values, shape ``(n,)`` (``NaN`` where undefined, e.g.
  the reference section is missing), or ``None`` for corpus-only metrics;
- ``corpus``: the corpus value;
- ``stats`` ``(n, k)`` and ``reducer``: sufficient statistics such that the
  corpus value of any weighting ``w`` of the samples is
  ``reducer(w @ stats)``. For mean metrics ``stats = [value, defined]`` and the
  reducer is a ratio; corpus BLEU / chrF++ use sacrebleu's n-gram counts and
  clinical F1 uses per-label TP/FP/FN. Bootstrap resamples and strata are then
  just different weight vectors (``sdrlib.metrics.significance``).

Example::

    >>> r = mean_result("rouge1", "rouge-score", np.array([1.0, 0.0, np.nan]))
    >>> float(r.corpus), float(r.value_for(np.array([[1.0, 0.0, 0.0]]))[0])
    (0.5, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from sdrlib.errors import SDRError

__all__ = ["MetricResult", "mean_result", "stats_result", "mean_reducer", "EvaluationInputError"]


class EvaluationInputError(SDRError, ValueError):
    """Predictions / references / labels that cannot be scored; the message names the input.

    Defined here (and re-exported by :mod:`sdrlib.metrics.suite`) so that the clinical
    label checks and the suite raise the same class.
    """

Reducer = Callable[[np.ndarray], np.ndarray]


def mean_reducer(summed: np.ndarray) -> np.ndarray:
    """``(B, 2)`` summed ``[value, defined]`` -> ``(B,)`` means (``NaN`` when nothing is defined)."""
    summed = np.atleast_2d(summed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(summed[:, 1] > 0, summed[:, 0] / np.maximum(summed[:, 1], 1e-300), np.nan)


@dataclass
class MetricResult:
    """Scores of one metric on one section (see the module docstring)."""

    name: str
    backend: str
    sample: np.ndarray | None
    corpus: float
    stats: np.ndarray
    reducer: Reducer
    higher_is_better: bool = True
    extra: dict = field(default_factory=dict)

    def value_for(self, weights: np.ndarray) -> np.ndarray:
        """Corpus value under sample weights ``(B, n)`` (or ``(n,)``) -> ``(B,)``."""
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if w.shape[1] != self.stats.shape[0]:
            raise ValueError(f"{self.name}: weights cover {w.shape[1]} samples, stats {self.stats.shape[0]}")
        return np.asarray(self.reducer(w @ self.stats), dtype=np.float64)


def mean_result(name: str, backend: str, values: np.ndarray, **extra) -> MetricResult:
    """A metric whose corpus value is the mean of its defined per-sample values."""
    v = np.asarray(values, dtype=np.float64)
    defined = np.isfinite(v)
    stats = np.column_stack([np.where(defined, v, 0.0), defined.astype(np.float64)])
    corpus = float(mean_reducer(stats.sum(axis=0, keepdims=True))[0])
    return MetricResult(name, backend, v, corpus, stats, mean_reducer, extra=dict(extra))


def stats_result(name: str, backend: str, stats: np.ndarray, reducer: Reducer,
                 sample: np.ndarray | None = None, **extra) -> MetricResult:
    """A metric whose corpus value is ``reducer`` of summed per-sample statistics."""
    s = np.asarray(stats, dtype=np.float64)
    corpus = float(np.asarray(reducer(s.sum(axis=0, keepdims=True)))[0])
    return MetricResult(name, backend, None if sample is None else np.asarray(sample, dtype=np.float64),
                        corpus, s, reducer, extra=dict(extra))
