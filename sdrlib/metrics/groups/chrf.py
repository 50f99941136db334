"""``"chrf"``: chrF++ (character 6-grams, word 2-grams, beta 2) via sacrebleu, on a 0-1 scale.

Per sample: sentence chrF++; corpus value: sacrebleu's corpus chrF++ from the summed statistics (so bootstrap
resamples recompute it exactly). The shipped module ``evaluate_modules/sdr_chrf``.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from sdrlib.metrics._evaluate import run_module, scatter, stats_full
from sdrlib.metrics.backends import package_version
from sdrlib.metrics.base import MetricResult, stats_result
from sdrlib.metrics.registry import MetricGroup, PaperMetric, register_metric_group

__all__ = ["chrf_section"]


@functools.lru_cache(maxsize=1)
def _chrf() -> Any:
    from sacrebleu.metrics import CHRF

    return CHRF(word_order=2)


def _corpus_chrf(summed) -> np.ndarray:
    """Corpus chrF++ of summed sacrebleu statistics ``(B, k)`` -> ``(B,)`` (NaN where nothing was scored); a module
    function, so the result pickles (:func:`sdrlib.experiments.scoring.score_all`)."""
    s = np.atleast_2d(summed)
    return np.asarray([_chrf()._compute_score_from_stats([int(x) for x in row]).score / 100.0
                       if row.any() else np.nan for row in s])


def chrf_section(predictions: Sequence[str], references: Sequence[str], defined: np.ndarray | None = None,
                 setup: Any = None) -> list[MetricResult]:
    """``chrf++`` of one section (``n`` samples; ``defined`` bool ``(n,)``, default all)."""
    r, idx, n = run_module("sdr_chrf", predictions, references, defined)
    k = len(r["stats"][0]) if r else 24
    stats = stats_full(r["stats"] if r else [], idx, n, k)
    backend = f"sacrebleu=={package_version('sacrebleu')} chrF++ (char 6, word 2, beta 2)"
    sample = scatter(r["sentence_chrf"] if r else [], idx, n)
    return [stats_result("chrf++", backend, stats, _corpus_chrf, sample=sample)]


PAPER_NAMES = (
    PaperMetric(("chrF++", "ChrF++"), ("chrf++",), "chrf", "paper",
                "Tabs. 9, 13, 17, 21; the paper prints it on sacrebleu's 0-100 scale, ours is 0-1"),
)

register_metric_group(MetricGroup("chrf", section=chrf_section, paper_names=PAPER_NAMES, versions=("sacrebleu",),
                                  description="chrF++ (sacrebleu), 0-1"))
