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

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from sdrlib.errors import SDRError

__all__ = ["MetricResult", "mean_result", "stats_result", "mean_reducer", "EvaluationInputError", "product_cache"]


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
        return np.asarray(self.reducer(_product(w, self.stats)), dtype=np.float64)


#: the open :func:`product_cache`, or None: ``{(id(w), id(stats)): (w, stats, w @ stats)}``, least recently used first
_PRODUCTS: OrderedDict | None = None
_PRODUCTS_LIMIT = [0, 0]  # [bytes held, bytes allowed]


def _product(w: np.ndarray, stats: np.ndarray) -> np.ndarray:
    """``w @ stats``, from the open :func:`product_cache` when it holds this very pair of arrays."""
    if _PRODUCTS is None:
        return w @ stats
    key = (id(w), id(stats))
    hit = _PRODUCTS.get(key)
    if hit is not None and hit[0] is w and hit[1] is stats:
        _PRODUCTS.move_to_end(key)
        return hit[2]
    out = w @ stats
    out.flags.writeable = False  # shared by every reader of the block
    _PRODUCTS[key] = (w, stats, out)
    _PRODUCTS_LIMIT[0] += out.nbytes
    while _PRODUCTS_LIMIT[0] > _PRODUCTS_LIMIT[1] and len(_PRODUCTS) > 1:
        _PRODUCTS_LIMIT[0] -= _PRODUCTS.popitem(last=False)[1][2].nbytes
    return out


@contextmanager
def product_cache(max_bytes: int = 2**30) -> Iterator[None]:
    """Within the block, :meth:`MetricResult.value_for` computes ``weights @ stats`` once per pair of arrays (the
    very objects, not equal copies) and reuses it, up to ``max_bytes`` of products (least recently used dropped
    first). The values are the same floats as without it: one matrix product, kept. For a table that resamples
    the same runs under one weight matrix for several comparisons and metrics (the GRPO study's: SFT's runs in
    every comparison with SFT, CheXpert-14 macro and micro F1 from one count matrix; at 7 x 22 runs of 400 studies
    and 10,000 resamples its products take about 0.6 GB, under the default 1 GiB, so each is computed once). Nested
    blocks share the outer cache."""
    global _PRODUCTS
    if _PRODUCTS is not None:
        yield
        return
    _PRODUCTS, _PRODUCTS_LIMIT[:] = OrderedDict(), [0, int(max_bytes)]
    try:
        yield
    finally:
        _PRODUCTS, _PRODUCTS_LIMIT[:] = None, [0, 0]


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
