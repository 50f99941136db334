"""One entry point for every notebook: score generated reports against references.

A package of private parts: :mod:`._inputs` (input checks), :mod:`._scoring` (the loop over the registered
metric groups, :mod:`sdrlib.metrics.registry`, and the strata), :mod:`._scores` (:class:`ReportScores` and its
tables, :func:`pool_scores`), :mod:`._compare` (paired bootstrap comparisons); every public name is importable from here.

:func:`evaluate_reports` returns a tidy :class:`pandas.DataFrame`;
:func:`score_reports` returns the richer :class:`ReportScores` (the same table
plus the per-sample statistics that :func:`compare_systems` resamples).

Inputs
------
predictions : one per sample, any of
    - ``str``: a raw model output in the paper's template
      ``<think> F </think> <answer> I </answer>`` (parsed by
      :func:`sdrlib.reports.parse_template`); with ``prediction_format="report"``
      a free-text report split by :func:`sdrlib.reports.split_report`;
    - a mapping with ``"findings"`` / ``"impression"`` keys, or any object with
      ``.findings`` / ``.impression`` (``Sections``, ``Record``);
    - ``None``: a failed generation (scored as empty).
references : one per sample, a mapping / ``Sections`` / ``Record`` or a free-text
    report ``str`` (split by :func:`sdrlib.reports.split_report`).

Bad input: defined scores or clear errors, always counted
-----------------------------------------------------------
================================  ================================================
case                              what happens (issue kind counted in the result)
================================  ================================================
unequal list lengths, no samples  ``EvaluationInputError`` naming both lengths
a lone str / bytes / dict passed  ``EvaluationInputError`` (it would otherwise be
as predictions or references      iterated character by character)
non-text item (int, list ...)     ``EvaluationInputError`` naming the index
``bytes`` item or section         decoded as UTF-8; not UTF-8 -> ``EvaluationInputError``
                                  naming the index (and section) and the byte offset
``None`` / NaN reference          ``EvaluationInputError`` naming the index
duplicate ``sample_ids``          ``EvaluationInputError``
``metrics=[]``                    ``EvaluationInputError`` (``None`` = all groups);
                                  a single str is one group; repeats are dropped
unknown metric group              ``EvaluationInputError`` listing the known groups
``reference_labels`` (or the      checked by :func:`~sdrlib.metrics.clinical.normalize_labels`:
references' ``labels``) with an   ``EvaluationInputError`` naming the index and key,
unknown / misspelt observation,   listing the 14 CheXpert names; values 1 / 0 / -1
or a value outside 1 / 0 / -1     as int, float or ``"1.0"``; None / NaN / ``""``
                                  mean not mentioned
prediction not in the template    both sections scored as empty (``invalid_template``);
                                  when more than half of all predictions are non-blank
                                  text outside the template, a ``TemplateFormatWarning``
                                  says how many and suggests ``prediction_format="report"``
templates under                   read as free text (tags scored as words, Impression
``prediction_format="report"``    empty); when more than half of all predictions parse as
                                  the template, a ``TemplateTagsInReportWarning`` (a
                                  ``TemplateFormatWarning``) suggests ``"template"``
empty / None / NaN prediction     scored as empty: 0 for every text metric, no
                                  labels for clinical F1 (``empty_prediction``)
mapping without a section (or     that section empty (``missing_prediction_section``)
``None`` / NaN as its value)
reference section missing/empty   sample undefined for that section: NaN, zero
                                  weight in corpus values (``missing_reference_section``)
non-ASCII characters              scored as given (``non_ascii_prediction`` /
                                  ``non_ascii_reference``); rouge-score drops non-ASCII
                                  letters, so such text scores low on ROUGE
================================  ================================================

All of these checks live in :func:`normalize_inputs` (:mod:`._inputs`), which both entry points call first.
Values: every text metric and clinical F1 lies in [0, 1] or is NaN (undefined sample).

Issue counts are rows of the tidy table (``level == "issue"``), the
``issues`` table of :class:`ReportScores`, and ``df.attrs["issue_counts"]``.

Output table columns: ``sample_id, section, metric, value, backend, level,
stratum, n``. ``level`` is ``sample`` (one row per sample x metric; ``stratum``
is that sample's ground-truth stratum), ``corpus`` (one row per metric and
stratum, ``stratum == "all"`` for the whole set; ``n`` = samples used) or
``issue``. Metric names carry their backend where one exists
(``bertscore_f1@all-MiniLM-L6-v2/L6``, ``clinical_f1_macro14@labeler``).

Example::

    >>> df = evaluate_reports(["<think> Heart is normal. </think> <answer> No acute disease. </answer>"],
    ...                       [{"findings": "Heart is normal.", "impression": "No acute disease."}],
    ...                       metrics=["rouge"])
    >>> df.query("level == 'corpus' and metric == 'rouge1' and stratum == 'all'")[["section", "value"]].values.tolist()
    [['findings', 1.0], ['impression', 1.0]]
"""

from __future__ import annotations

from typing import Any

from sdrlib.metrics.base import EvaluationInputError
from sdrlib.metrics.registry import metric_group_names
from sdrlib.metrics.suite._compare import compare_frames, compare_systems
from sdrlib.metrics.suite._inputs import (SECTION_NAMES, TEMPLATE_WARN_SHARE, NormalizedInputs, TemplateFormatWarning,
                                          TemplateTagsInReportWarning, normalize_inputs)
from sdrlib.metrics.suite._scores import ISSUE_KINDS, ReportScores, pool_scores, write_results
from sdrlib.metrics.suite._scoring import evaluate_reports, metric_kwargs, score_reports

__all__ = ["evaluate_reports", "score_reports", "ReportScores", "pool_scores", "compare_systems", "compare_frames",
           "write_results", "EvaluationInputError", "METRIC_GROUPS", "SECTION_NAMES", "ISSUE_KINDS",
           "metric_kwargs", "normalize_inputs", "NormalizedInputs", "TemplateFormatWarning",
           "TemplateTagsInReportWarning", "TEMPLATE_WARN_SHARE"]


def __getattr__(name: str) -> Any:
    if name == "METRIC_GROUPS":  # the registry's groups, read each time (a group registered later is one too)
        return metric_group_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
