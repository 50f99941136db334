"""Metrics: the paper's NLG suite, clinical label F1, strata and paired significance.

Importing this package is cheap: names below are loaded on first use, so
``import sdrlib.metrics`` pulls in neither torch, bert-score nor `evaluate`.

- :func:`evaluate_reports` / :func:`score_reports`: every metric on generated vs
  reference reports, per section, as a tidy table (:mod:`sdrlib.metrics.suite`);
- :func:`compare_systems` / :func:`compare_frames`: paired bootstrap CI and
  p-value of A - B for every metric (:mod:`sdrlib.metrics.significance`);
- :mod:`sdrlib.metrics.nlg` (BLEU, ROUGE, METEOR, chrF++, BERTScore, COMET via
  `evaluate` modules shipped in ``evaluate_modules/``),
  :mod:`sdrlib.metrics.clinical` (CheXbert-style F1, strata),
  :mod:`sdrlib.clinical.labeler` (offline CheXpert-14 labeler),
  :mod:`sdrlib.metrics.wordnet`, :mod:`sdrlib.metrics.backends`;
- :mod:`sdrlib.metrics.paper_names`: the one map from the paper's metric names (RG-E, RG-ER,
  RadGraph F1, CXB-14, BERTScore F1, ...) to suite metric names, used by every table.

Example::

    >>> from sdrlib.metrics import evaluate_reports          # no heavy import yet
    >>> df = evaluate_reports(preds, refs)                   # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "evaluate_reports": "suite", "score_reports": "suite", "ReportScores": "suite",
    "compare_systems": "suite", "compare_frames": "suite", "write_results": "suite",
    "EvaluationInputError": "suite", "METRIC_GROUPS": "suite", "metric_kwargs": "suite",
    "paired_bootstrap": "significance", "MetricResult": "base",
    "f1_counts": "clinical", "label_matrix": "clinical", "strata_from_labels": "clinical",
    "load_wordnet": "wordnet", "resolve_bertscore_backbone": "backends",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
