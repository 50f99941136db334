"""``"rouge"``: ROUGE-1 / ROUGE-2 / ROUGE-L F1 per sample (rouge-score, Porter stemmer); corpus value = mean.

The shipped module ``evaluate_modules/sdr_rouge``. rouge-score drops non-ASCII letters, so such text scores low.
Leaves out ROUGE-Lsum and multi-reference scoring.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from sdrlib.metrics._evaluate import run_module, scatter
from sdrlib.metrics.backends import package_version
from sdrlib.metrics.base import MetricResult, mean_result
from sdrlib.metrics.registry import MetricGroup, PaperMetric, register_metric_group

__all__ = ["rouge_section"]


def rouge_section(predictions: Sequence[str], references: Sequence[str], defined: np.ndarray | None = None,
                  setup: Any = None) -> list[MetricResult]:
    """``rouge1``, ``rouge2``, ``rougeL`` of one section (``n`` samples; ``defined`` bool ``(n,)``)."""
    r, idx, n = run_module("sdr_rouge", predictions, references, defined)
    backend = f"rouge-score=={package_version('rouge-score')} stemmer"
    return [mean_result(t, backend, scatter(r[t] if r else [], idx, n)) for t in ("rouge1", "rouge2", "rougeL")]


PAPER_NAMES = (
    PaperMetric(("ROUGE-L", "RL-F"), ("rougeL",), "rouge", "paper", "Tabs. 8, 12, 16, 20 (RL-F), 3, 23-28"),
    PaperMetric(("ROUGE-1", "R1-F"), ("rouge1",), "rouge", "paper", "Tabs. 8, 12, 16, 20"),
    PaperMetric(("ROUGE-2", "R2-F"), ("rouge2",), "rouge", "paper", "Tabs. 8, 12, 16, 20"),
)

register_metric_group(MetricGroup("rouge", section=rouge_section, paper_names=PAPER_NAMES, versions=("rouge-score",),
                                  description="ROUGE-1 / -2 / -L F1 (rouge-score)"))
