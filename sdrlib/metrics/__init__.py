"""Metrics: the paper's NLG suite, clinical label F1, strata and paired significance.

Importing this package is cheap: names below are loaded on first use, so
``import sdrlib.metrics`` pulls in neither torch, bert-score nor `evaluate`.

- :func:`evaluate_reports` / :func:`score_reports`: every metric on generated vs
  reference reports, per section, as a tidy table (:mod:`sdrlib.metrics.suite`);
- :func:`compare_systems` / :func:`compare_frames`: paired bootstrap CI and
  p-value of A - B for every metric (:mod:`sdrlib.metrics.significance`);
- :mod:`sdrlib.metrics.registry`: the metric groups the suite scores, one
  :func:`register_metric_group` each; the built-in ones are :mod:`sdrlib.metrics.groups`
  (BLEU, ROUGE, METEOR, chrF++, BERTScore, COMET via `evaluate` modules shipped in
  ``evaluate_modules/``; clinical label F1; RadGraph F1);
- :mod:`sdrlib.metrics.nlg` (the text groups on one section),
  :mod:`sdrlib.metrics.clinical` (CheXbert-style F1, strata),
  :mod:`sdrlib.clinical.labeler` (offline CheXpert-14 labeler),
  :mod:`sdrlib.metrics.wordnet`, :mod:`sdrlib.metrics.backends`;
- :mod:`sdrlib.metrics.paper_names`: the one map from the paper's metric names (RG-E, RG-ER,
  RadGraph F1, CXB-14, BERTScore F1, ...) to suite metric names, used by every table.

Example (one generated report in the paper's template against its reference: clinical label F1 from the
offline labeler, and the study's ground-truth stratum)::

    >>> from sdrlib.metrics import score_reports
    >>> scores = score_reports(["<think> Small left pleural effusion. </think> <answer> Pleural effusion. </answer>"],
    ...                        [{"findings": "Small left pleural effusion.", "impression": "No acute disease."}],
    ...                        metrics=["clinical"], settings={"clinical": {"backend": "labeler"}})
    >>> [scores.result(s, "clinical_f1_sample@labeler").corpus for s in ("findings", "impression")]
    [1.0, 0.0]
    >>> scores.strata.tolist()
    ['single']

Two systems on the same studies, compared by a paired bootstrap (A - B, every metric, per section)::

    >>> from sdrlib.metrics import compare_systems
    >>> refs = [{"findings": "Small left pleural effusion.", "impression": "Pleural effusion."},
    ...         {"findings": "Mild cardiomegaly.", "impression": "Cardiomegaly."}]
    >>> def system(reports):
    ...     return score_reports(reports, refs, metrics=["clinical"], settings={"clinical": {"backend": "labeler"}})
    >>> a = system([f"<think> {r['findings']} </think> <answer> {r['impression']} </answer>" for r in refs])
    >>> b = system(["<think> Lungs clear. </think> <answer> No acute disease. </answer>"] * 2)
    >>> t = compare_systems(a, b, n_resamples=200, seed=0)
    >>> t[t.metric == "clinical_f1_sample@labeler"][["section", "value_a", "value_b", "diff"]].to_dict("records")
    [{'section': 'findings', 'value_a': 1.0, 'value_b': 0.0, 'diff': 1.0}, {'section': 'impression', 'value_a': 1.0, 'value_b': 0.0, 'diff': 1.0}]
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
    "register_metric_group": "registry", "unregister_metric_group": "registry", "metric_group": "registry",
    "metric_group_names": "registry", "MetricUnavailable": "registry", "ScoreContext": "registry",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
