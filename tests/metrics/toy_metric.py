"""A metric group written as one module: the absolute difference in sentence count, generated vs reference.

``register()`` makes it a metric group like the built-in ones (:func:`sdrlib.metrics.registry.register_metric_group`):
``score_reports(metrics=["sentence_count"])`` scores it per section, and its paper name (``Sent-Δ``) is known to
:mod:`sdrlib.metrics.paper_names`. Nothing else in the package is edited for it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from sdrlib.metrics.base import MetricResult, mean_result
from sdrlib.metrics.registry import MetricGroup, PaperMetric, metric_group_names, register_metric_group, unregister_metric_group
from sdrlib.reports import split_sentences

NAME = "sentence_count"
METRIC = "sentence_count_diff"
PAPER_NAME = "Sent-Δ"


def sentence_count_section(predictions: Sequence[str], references: Sequence[str], defined: np.ndarray,
                           setup: Any) -> list[MetricResult]:
    """``|#sentences(prediction) - #sentences(reference)|`` per sample ``(n,)``, NaN where undefined."""
    values = np.array([abs(len(split_sentences(p)) - len(split_sentences(r))) if ok else np.nan
                       for p, r, ok in zip(predictions, references, defined)], dtype=np.float64)
    return [replace(mean_result(METRIC, "tests/metrics/toy_metric.py", values), higher_is_better=False)]


def register() -> None:
    register_metric_group(MetricGroup(
        NAME, section=sentence_count_section,
        paper_names=[PaperMetric((PAPER_NAME, "sentence count difference"), (METRIC,), NAME, "ours",
                                 "a toy metric of the test suite", label="sentence count |diff|")],
        description="absolute difference in sentence count (toy)"))


def unregister() -> None:
    if NAME in metric_group_names():
        unregister_metric_group(NAME)
