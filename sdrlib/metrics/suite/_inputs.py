"""Input checks of the suite: every prediction, reference, label, sample id, section and metric name, in one place.

:func:`normalize_inputs` is the only function that reads the caller's inputs of
:func:`~sdrlib.metrics.suite.score_reports` / :func:`~sdrlib.metrics.suite.evaluate_reports`; the rules are the
table of :mod:`sdrlib.metrics.suite`'s docstring. It returns one ``{"findings", "impression", "report"}`` dict of
str per sample and the issues found so far, and warns (:class:`TemplateFormatWarning`) when the prediction format
looks mixed up. Leaves out scoring (:mod:`._scoring`).
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from sdrlib.metrics.base import EvaluationInputError
from sdrlib.metrics.clinical import normalize_labels
from sdrlib.metrics.registry import metric_group_names
from sdrlib.reports import is_blank, parse_template, split_report

__all__ = ["SECTION_NAMES", "TEMPLATE_WARN_SHARE", "NormalizedInputs", "TemplateFormatWarning",
           "TemplateTagsInReportWarning", "normalize_inputs"]

SECTION_NAMES = ("findings", "impression", "report")


class TemplateFormatWarning(UserWarning):
    """Most predictions are text outside the ``<think>/<answer>`` template and were scored as empty.

    Raised (as a warning) by :func:`normalize_inputs` under ``prediction_format="template"``
    when more than :data:`TEMPLATE_WARN_SHARE` of the predictions are non-blank strings that
    :func:`sdrlib.reports.parse_template` rejects: either plain-text reports passed without
    ``prediction_format="report"``, or a model that did not learn the template.
    """


TEMPLATE_WARN_SHARE = 0.5  # warn above this share of non-blank, unparsable text predictions


class TemplateTagsInReportWarning(TemplateFormatWarning):
    """The reverse mix-up: most predictions are ``<think>/<answer>`` templates read as free-text reports.

    Under ``prediction_format="report"`` a templated output goes through
    :func:`sdrlib.reports.split_report`, which finds no ``FINDINGS:`` / ``IMPRESSION:`` header: the
    whole text, tags included, is scored as Findings and the Impression as empty. Warned by
    :func:`normalize_inputs` when more than :data:`TEMPLATE_WARN_SHARE` of the predictions parse
    as the template; the fix is ``prediction_format="template"`` (the default).

    Why warnings and not errors (both classes): a policy that did not learn the template is a
    legitimate result whose honest score is 0 (notebooks 03 / 04 evaluate such policies), and a
    free-text report may quote the tags; raising would stop a run at the evaluation of a weak model.
    Callers who want an error turn it into one:
    ``warnings.filterwarnings("error", category=TemplateFormatWarning)`` (covers both).
    """


def _is_text(x: Any) -> bool:
    return isinstance(x, str)


def _is_missing(x: Any) -> bool:
    """None, a float NaN (numpy's too) or pandas' NA: a missing value, not text."""
    if x is None or x is pd.NA:
        return True
    return isinstance(x, float) and x != x


def _decoded(x: Any, where: str) -> Any:
    """``bytes`` / ``bytearray`` as UTF-8 text (a BOM is dropped); anything else unchanged."""
    if isinstance(x, (bytes, bytearray, memoryview)):
        try:
            return bytes(x).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise EvaluationInputError(f"{where} is bytes but not valid UTF-8 ({e.reason} at byte {e.start}); "
                                       "decode it with its real encoding and pass str") from None
    return x


def _get_section(obj: Any, key: str) -> tuple[Any, bool]:
    """(value, present) from a mapping or an object with section attributes."""
    if isinstance(obj, Mapping):
        if key not in obj:
            return None, False
        return obj[key], True
    if hasattr(obj, key):
        return getattr(obj, key), True
    return None, False


def _sections_of(obj: Any, where: str, *, fmt: str, is_prediction: bool,
                 issues: list[tuple[int, str, str]], i: int) -> dict[str, str]:
    obj = _decoded(obj, where)
    if _is_missing(obj):
        if not is_prediction:
            raise EvaluationInputError(f"{where} is {'None' if obj is None else 'NaN/NA'}: every reference "
                                       "needs text (drop the sample, or pass a mapping with an empty section)")
        return {"findings": "", "impression": ""}
    if _is_text(obj):
        if is_prediction and fmt == "template":
            s = parse_template(obj)
            if s is None:
                issues.append((i, "all", "invalid_template"))
                return {"findings": "", "impression": ""}
        else:
            s = split_report(obj)
        return {"findings": s.findings, "impression": s.impression}
    if isinstance(obj, Mapping) or (hasattr(obj, "findings") or hasattr(obj, "impression")):
        out = {}
        for key in ("findings", "impression"):
            text, present = _get_section(obj, key)
            text = _decoded(text, f"{where}[{key!r}]")
            if not present or _is_missing(text):
                if is_prediction:
                    issues.append((i, key, "missing_prediction_section"))
                text = ""
            if not _is_text(text):
                raise EvaluationInputError(f"{where}[{key!r}] is {type(text).__name__}, expected str")
            out[key] = text
        return out
    raise EvaluationInputError(f"{where} is {type(obj).__name__}; expected a template str, a mapping "
                               "with 'findings'/'impression' or a Sections-like object")


def _warn_if_mostly_untemplated(preds_in: list[Any], issues: list[tuple[int, str, str]]) -> None:
    """:class:`TemplateFormatWarning` when most predictions are visible text the template parser rejected.

    Blank strings and ``None`` are failed generations, not a format mix-up, so only
    predictions with visible text count towards the share (over all predictions).
    """
    rejected = {i for i, _, kind in issues if kind == "invalid_template"}
    texts = [i for i in rejected if not is_blank(_decoded(preds_in[i], f"predictions[{i}]"))]
    n = len(preds_in)
    if n and len(texts) / n > TEMPLATE_WARN_SHARE:
        first = sorted(texts)[0]
        warnings.warn(
            f"{len(texts)} of {n} predictions ({len(texts) / n:.0%}) are text outside the "
            "'<think> ... </think> <answer> ... </answer>' template and are scored as empty reports "
            f"(all text metrics 0; e.g. predictions[{first}]). If they are plain-text reports, pass "
            "prediction_format=\"report\"; if they are model outputs, the model did not follow the template "
            "(issue kind 'invalid_template' counts them).", TemplateFormatWarning, stacklevel=_outside_this_module())


def _warn_if_mostly_templated(preds_in: list[Any]) -> None:
    """:class:`TemplateTagsInReportWarning` when most predictions, read as reports, are valid templates."""
    n = len(preds_in)
    texts = [_decoded(p, f"predictions[{i}]") for i, p in enumerate(preds_in)]  # already checked: no error
    hits = [i for i, t in enumerate(texts) if isinstance(t, str) and parse_template(t) is not None]
    if n and len(hits) / n > TEMPLATE_WARN_SHARE:
        warnings.warn(
            f"{len(hits)} of {n} predictions ({len(hits) / n:.0%}) are '<think> ... </think> <answer> ... "
            "</answer>' templates but prediction_format=\"report\" reads them as free-text reports: the tags "
            "are scored as words of the Findings and the Impression is empty (e.g. "
            f"predictions[{hits[0]}]). Pass prediction_format=\"template\" (the default) to score their "
            "sections.", TemplateTagsInReportWarning, stacklevel=_outside_this_module())


_PACKAGE_DIR = os.path.dirname(__file__)


def _outside_this_module() -> int:
    """``stacklevel`` that points a warning at the first caller outside the suite package (either entry point)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(frame.f_code.co_filename) == _PACKAGE_DIR:
        frame, level = frame.f_back, level + 1
    return level


def _joined(d: Mapping[str, str]) -> str:
    return " ".join(t.strip() for t in (d["findings"], d["impression"]) if t.strip())


def _as_list(x: Any, name: str) -> list[Any]:
    """One item per sample; a lone str / bytes / mapping / DataFrame is refused, not iterated."""
    if isinstance(x, (str, bytes, bytearray, Mapping, pd.DataFrame)) or x is None:
        raise EvaluationInputError(f"{name} must be a sequence with one item per sample (list, tuple, "
                                   f"Series), got a single {type(x).__name__}")
    try:
        return list(x)
    except TypeError:
        raise EvaluationInputError(f"{name} must be a sequence with one item per sample, "
                                   f"got {type(x).__name__}") from None


def _names(x: Any, name: str, known: Sequence[str]) -> tuple[str, ...]:
    """A str or sequence of str -> distinct names in order (a single str is one name)."""
    items = [x] if isinstance(x, str) else _as_list(x, name)
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise EvaluationInputError(f"{name} must be names from {tuple(known)}; got {bad[0]!r}")
    return tuple(dict.fromkeys(items))


def _sample_ids(references: Sequence[Any], sample_ids: Sequence[str] | None) -> list[str]:
    if sample_ids is not None:
        ids = [str(s) for s in _as_list(sample_ids, "sample_ids")]
        if len(ids) != len(references):
            raise EvaluationInputError(f"{len(ids)} sample_ids but {len(references)} references")
    else:
        ids = []
        for i, r in enumerate(references):
            sid = r.get("study_id") if isinstance(r, Mapping) else getattr(r, "study_id", None)
            ids.append(str(sid) if sid is not None else str(i))
    if len(set(ids)) != len(ids):
        dup = pd.Series(ids).value_counts()
        raise EvaluationInputError(f"duplicate sample ids, e.g. {dup[dup > 1].index[0]!r}")
    return ids


@dataclass
class NormalizedInputs:
    """What :func:`normalize_inputs` returns: checked, per-sample section texts and options.

    ``predictions`` / ``references``: one ``{"findings", "impression", "report"}`` dict of
    str per sample (``report`` = both joined); ``reference_labels``: checked label dicts or
    None; ``issues``: ``(index, section, kind)`` found so far (``invalid_template``,
    ``missing_prediction_section``).
    """

    predictions: list[dict[str, str]]
    references: list[dict[str, str]]
    sample_ids: list[str]
    sections: tuple[str, ...]
    groups: tuple[str, ...]
    reference_labels: list[dict[str, int]] | None
    labels_given: bool
    issues: list[tuple[int, str, str]]


def normalize_inputs(predictions: Any, references: Any, *, sections: Any = ("findings", "impression"),
                     metrics: Any = None, sample_ids: Any = None, reference_labels: Any = None,
                     prediction_format: str = "template") -> NormalizedInputs:
    """Check every input of :func:`score_reports` / :func:`evaluate_reports` in one place.

    The only function that reads the caller's predictions, references, labels, sample
    ids, sections and metric names; the rules (table in the module docstring):

    - containers: one item per sample (list, tuple, Series, array); a lone ``str`` /
      ``bytes`` / mapping is refused (it would be iterated character by character);
      lengths must match; zero samples is an error;
    - items: ``str``, UTF-8 ``bytes`` (decoded; other bytes -> error naming the index),
      mapping / Sections-like; ``None`` and NaN are a failed generation for predictions
      (scored empty) and an error for references; anything else -> error naming the index;
    - ``metrics``: ``None`` = all of the registered groups (:func:`sdrlib.metrics.registry.metric_group_names`); a str is one group; an empty
      list is an error; unknown names are listed with the known ones;
    - ``reference_labels`` (or the references' own ``labels``): checked by
      :func:`sdrlib.metrics.clinical.normalize_labels` (the 14 CheXpert names, values
      1 / 0 / -1 / blank).

    Raises EvaluationInputError (an :class:`~sdrlib.errors.SDRError` and ValueError).
    """
    preds_in = _as_list(predictions, "predictions")
    refs_in = _as_list(references, "references")
    n = len(preds_in)
    if len(refs_in) != n:
        raise EvaluationInputError(f"{n} predictions but {len(refs_in)} references: lengths must match")
    if n == 0:
        raise EvaluationInputError("no samples to score (empty predictions and references lists)")
    secs = _names(sections, "sections", SECTION_NAMES)
    bad = [s for s in secs if s not in SECTION_NAMES]
    if bad or not secs:
        raise EvaluationInputError(f"sections must be distinct names from {SECTION_NAMES}; got {secs}")
    known = metric_group_names()
    if metrics is None:
        groups = known
    else:
        groups = _names(metrics, "metrics", known)
        if not groups:
            raise EvaluationInputError(f"metrics=[] selects no metric; pass None for all groups or some of "
                                       f"{known}")
        unknown = [g for g in groups if g not in known]
        if unknown:
            raise EvaluationInputError(f"unknown metric groups {unknown}; known: {known} (a group "
                                       "yields several metrics, e.g. 'rouge' -> rouge1/rouge2/rougeL)")
    if prediction_format not in ("template", "report"):
        raise EvaluationInputError(f"prediction_format must be 'template' or 'report', got {prediction_format!r}")
    labels_given = reference_labels is not None
    labels = None
    if labels_given:
        labels = normalize_labels(reference_labels, name="reference_labels")
        if len(labels) != n:
            raise EvaluationInputError(f"{len(labels)} reference_labels for {n} samples")
    else:  # Record-like references carry ground-truth labels: use them for strata
        found = [r.get("labels") if isinstance(r, Mapping) else getattr(r, "labels", None) for r in refs_in]
        if all(isinstance(x, Mapping) for x in found):
            labels = normalize_labels(found, name="labels of references")
    ids = _sample_ids(refs_in, sample_ids)
    issues: list[tuple[int, str, str]] = []
    preds = [_sections_of(p, f"predictions[{i}]", fmt=prediction_format, is_prediction=True,
                          issues=issues, i=i) for i, p in enumerate(preds_in)]
    refs = [_sections_of(r, f"references[{i}]", fmt="report", is_prediction=False, issues=issues, i=i)
            for i, r in enumerate(refs_in)]
    if prediction_format == "template":
        _warn_if_mostly_untemplated(preds_in, issues)
    else:
        _warn_if_mostly_templated(preds_in)
    for d in preds + refs:
        d["report"] = _joined(d)
    return NormalizedInputs(preds, refs, ids, secs, groups, labels, labels_given, issues)

