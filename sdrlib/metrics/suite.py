"""One entry point for every notebook: score generated reports against references.

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
``reference_labels`` (or the      checked by :func:`~sdrlib.metrics.clinical.normalise_labels`:
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

All of these checks live in :func:`normalise_inputs`, which both entry points call first.
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
    ...                       metrics=["rouge"])                                   # doctest: +SKIP
    >>> df.query("level == 'corpus' and metric == 'rouge1'")["value"].tolist()    # doctest: +SKIP
    [1.0, 1.0]
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from sdrlib.metrics import radgraph_compat
from sdrlib.metrics.backends import (BackendUnavailable, comet_checkpoint, package_version, radgraph_model_dir,
                                     radgraph_unavailable_reason, resolve_bertscore_backbone, why_unavailable)
from sdrlib.metrics.base import EvaluationInputError, MetricResult, mean_result
from sdrlib.metrics.clinical import STRATA, clinical_results, get_labeler, normalise_labels, strata_from_labels
from sdrlib.metrics.nlg import NLG_GROUPS, bertscore_f1, bertscore_result, nlg_results
from sdrlib.metrics.significance import bootstrap_weights, paired_bootstrap
from sdrlib.metrics.wordnet import load_wordnet
from sdrlib.reports import is_blank, parse_template, split_report
from sdrlib.results import library_versions, save_table

__all__ = ["evaluate_reports", "score_reports", "ReportScores", "compare_systems", "compare_frames",
           "write_results", "EvaluationInputError", "METRIC_GROUPS", "SECTION_NAMES", "ISSUE_KINDS",
           "metric_kwargs", "normalise_inputs", "NormalisedInputs", "TemplateFormatWarning",
           "TemplateTagsInReportWarning"]

SECTION_NAMES = ("findings", "impression", "report")
ISSUE_KINDS = ("invalid_template", "empty_prediction", "missing_prediction_section",
               "missing_reference_section", "non_ascii_prediction", "non_ascii_reference")
METRIC_GROUPS = NLG_GROUPS + ("clinical", "radgraph")
_VERSIONED = ("evaluate", "sacrebleu", "rouge-score", "nltk", "bert-score", "transformers", "torch",
              "unbabel-comet", "f1chexbert", "radgraph")





class TemplateFormatWarning(UserWarning):
    """Most predictions are text outside the ``<think>/<answer>`` template and were scored as empty.

    Raised (as a warning) by :func:`normalise_inputs` under ``prediction_format="template"``
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
    :func:`normalise_inputs` when more than :data:`TEMPLATE_WARN_SHARE` of the predictions parse
    as the template; the fix is ``prediction_format="template"`` (the default).

    Why warnings and not errors (both classes): a policy that did not learn the template is a
    legitimate result whose honest score is 0 (notebooks 03 / 04 evaluate such policies), and a
    free-text report may quote the tags; raising would stop a run at the evaluation of a weak model.
    Callers who want an error turn it into one:
    ``warnings.filterwarnings("error", category=TemplateFormatWarning)`` (covers both).
    """


# --------------------------------------------------------------------------- input normalisation
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


def _outside_this_module() -> int:
    """``stacklevel`` that points a warning at the first caller outside this file (either entry point)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename == __file__:
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
class NormalisedInputs:
    """What :func:`normalise_inputs` returns: checked, per-sample section texts and options.

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


def normalise_inputs(predictions: Any, references: Any, *, sections: Any = ("findings", "impression"),
                     metrics: Any = None, sample_ids: Any = None, reference_labels: Any = None,
                     prediction_format: str = "template") -> NormalisedInputs:
    """Check every input of :func:`score_reports` / :func:`evaluate_reports` in one place.

    The only function that reads the caller's predictions, references, labels, sample
    ids, sections and metric names; the rules (table in the module docstring):

    - containers: one item per sample (list, tuple, Series, array); a lone ``str`` /
      ``bytes`` / mapping is refused (it would be iterated character by character);
      lengths must match; zero samples is an error;
    - items: ``str``, UTF-8 ``bytes`` (decoded; other bytes -> error naming the index),
      mapping / Sections-like; ``None`` and NaN are a failed generation for predictions
      (scored empty) and an error for references; anything else -> error naming the index;
    - ``metrics``: ``None`` = all of :data:`METRIC_GROUPS`; a str is one group; an empty
      list is an error; unknown names are listed with the known ones;
    - ``reference_labels`` (or the references' own ``labels``): checked by
      :func:`sdrlib.metrics.clinical.normalise_labels` (the 14 CheXpert names, values
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
    if metrics is None:
        groups = tuple(METRIC_GROUPS)
    else:
        groups = _names(metrics, "metrics", METRIC_GROUPS)
        if not groups:
            raise EvaluationInputError(f"metrics=[] selects no metric; pass None for all groups or some of "
                                       f"{METRIC_GROUPS}")
        unknown = [g for g in groups if g not in METRIC_GROUPS]
        if unknown:
            raise EvaluationInputError(f"unknown metric groups {unknown}; known: {METRIC_GROUPS} (a group "
                                       "yields several metrics, e.g. 'rouge' -> rouge1/rouge2/rougeL)")
    if prediction_format not in ("template", "report"):
        raise EvaluationInputError(f"prediction_format must be 'template' or 'report', got {prediction_format!r}")
    labels_given = reference_labels is not None
    labels = None
    if labels_given:
        labels = normalise_labels(reference_labels, name="reference_labels")
        if len(labels) != n:
            raise EvaluationInputError(f"{len(labels)} reference_labels for {n} samples")
    else:  # Record-like references carry ground-truth labels: use them for strata
        found = [r.get("labels") if isinstance(r, Mapping) else getattr(r, "labels", None) for r in refs_in]
        if all(isinstance(x, Mapping) for x in found):
            labels = normalise_labels(found, name="labels of references")
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
    return NormalisedInputs(preds, refs, ids, secs, groups, labels, labels_given, issues)


# --------------------------------------------------------------------------- results
@dataclass
class ReportScores:
    """Everything :func:`score_reports` computed; ``to_frame()`` gives the tidy table."""

    sample_ids: list[str]
    sections: tuple[str, ...]
    results: dict[str, list[MetricResult]]
    defined: dict[str, np.ndarray]
    strata: np.ndarray | None
    issues: pd.DataFrame
    unavailable: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    def issue_counts(self) -> dict[str, int]:
        """Issue kind -> number of (sample, section) occurrences; every kind listed, zeros included."""
        vc = self.issues["issue"].value_counts()
        return {k: int(vc.get(k, 0)) for k in ISSUE_KINDS}

    def result(self, section: str, metric: str) -> MetricResult:
        """The :class:`MetricResult` of one section and metric name."""
        for r in self.results[section]:
            if r.name == metric:
                return r
        raise KeyError(f"no metric {metric!r} in section {section!r}")

    def to_frame(self, *, strata: bool = True) -> pd.DataFrame:
        """Tidy table (module docstring). ``strata=False`` skips per-stratum corpus rows."""
        ids = np.asarray(self.sample_ids, dtype=object)
        st = self.strata if self.strata is not None else np.full(len(ids), "all", dtype=object)
        frames = []
        for sec in self.sections:
            ok = self.defined[sec]
            for r in self.results[sec]:
                if r.sample is not None:
                    frames.append(pd.DataFrame({
                        "sample_id": ids, "section": sec, "metric": r.name, "value": r.sample,
                        "backend": r.backend, "level": "sample", "stratum": st, "n": ok.astype(int)}))
                rows = [(None, sec, r.name, r.corpus, r.backend, "corpus", "all", int(ok.sum()))]
                if strata and self.strata is not None:
                    for s in STRATA:
                        w = (self.strata == s).astype(np.float64)
                        if w.sum() == 0:
                            continue
                        v = float(r.value_for(w)[0])
                        rows.append((None, sec, r.name, v, r.backend, "corpus", s, int((ok & (w > 0)).sum())))
                frames.append(pd.DataFrame(rows, columns=["sample_id", "section", "metric", "value",
                                                          "backend", "level", "stratum", "n"]))
        counts = self.issues.groupby(["section", "issue"]).size() if len(self.issues) else pd.Series(dtype=int)
        irows = [(None, sec, f"issue/{kind}", float(c), "input check", "issue", "all", int(c))
                 for (sec, kind), c in counts.items()]
        irows += [(None, "all", f"unavailable/{g}", np.nan, why, "issue", "all", 0)
                  for g, why in sorted(self.unavailable.items())]
        frames.append(pd.DataFrame(irows, columns=["sample_id", "section", "metric", "value", "backend",
                                                   "level", "stratum", "n"]))
        frames = [f for f in frames if len(f)]
        df = (pd.concat(frames, ignore_index=True) if frames else
              pd.DataFrame(columns=["sample_id", "section", "metric", "value", "backend", "level", "stratum", "n"]))
        df.attrs.update(issue_counts=self.issue_counts(), unavailable=dict(self.unavailable),
                        versions=dict(self.versions))
        return df

    def summary(self) -> pd.DataFrame:
        """Corpus values, one row per metric, one column per section (+ backend)."""
        df = self.to_frame(strata=False)
        corp = df[df.level == "corpus"]
        wide = corp.pivot_table(index=["metric", "backend"], columns="section", values="value",
                                aggfunc="first", sort=False).reset_index()
        wide.columns.name = None
        return wide[["metric", *[s for s in self.sections if s in wide.columns], "backend"]]

    def strata_table(self) -> pd.DataFrame:
        """Corpus values per ground-truth stratum: rows metric x section, columns strata (+ n)."""
        df = self.to_frame()
        corp = df[df.level == "corpus"]
        wide = corp.pivot_table(index=["section", "metric"], columns="stratum", values="value",
                                aggfunc="first", sort=False)
        cols = [c for c in ("all", *STRATA) if c in wide.columns]
        out = wide[cols].reset_index()
        out.columns.name = None
        return out

    def per_observation(self) -> pd.DataFrame:
        """Per-observation clinical F1: rows observation, columns sections."""
        rows = []
        for sec in self.sections:
            for r in self.results[sec]:
                if r.extra.get("kind") == "per_observation":
                    rows.append((r.extra["observation"], sec, r.corpus, r.name.split("@")[-1]))
        df = pd.DataFrame(rows, columns=["observation", "section", "f1", "backend"])
        if df.empty:
            return df
        out = df.pivot_table(index=["observation", "backend"], columns="section", values="f1",
                             sort=False).reset_index()
        out.columns.name = None
        return out


class RadGraphOutputError(RuntimeError):
    """``F1RadGraph`` returned per-sample rewards in a layout other than the documented level-major one."""


RADGRAPH_LEVELS = ("simple", "partial", "complete")


def _radgraph_scorer(model_type: str, model_dir: Path) -> Any:
    """The package's ``F1RadGraph(reward_level="all")`` on the model folder the probe found, built once per
    :func:`score_reports` call.

    Under transformers 5 :func:`sdrlib.metrics.radgraph_compat.install` first gives radgraph 0.1.18's bundled
    allennlp the tokenizer methods it calls (a radgraph release it was not tested with is refused with
    :class:`~sdrlib.metrics.radgraph_compat.RadGraphVersionError`; :func:`score_reports` records it).
    """
    radgraph_compat.install()
    from radgraph import F1RadGraph

    try:
        return F1RadGraph(reward_level="all", model_type=model_type, model_cache_dir=str(model_dir.parent))
    except Exception as e:  # noqa: BLE001 - re-raised with what failed; score_reports records it
        raise RuntimeError(f"radgraph could not build its {model_type!r} annotator: {type(e).__name__}: {e}") from e


def _radgraph(scorer: Any, preds: list[str], refs: list[str], ok: np.ndarray, model_type: str) -> list[MetricResult]:
    """RadGraph F1 per sample and level via ``radgraph.F1RadGraph(reward_level="all")``.

    The package (0.1.18) returns ``(mean_reward, reward_list, hyp_annotations, ref_annotations)`` with
    ``reward_list`` **level-major**: a tuple of three lists (``simple``, ``partial``, ``complete``), each
    with one value per report pair, so sample ``i`` of level ``j`` is ``reward_list[j][i]`` (its shape is
    checked, then transposed to samples x levels). Which paper name each level answers to (RG-E, RG-ER,
    RadGraph F1) lives in :data:`sdrlib.metrics.paper_names.PAPER_METRICS`.

    Only samples with a reference section are passed (``ok``; the others stay NaN, as for every metric).
    An empty prediction gets the package's own value for an empty report, 0 at every level; so does a
    report in which the annotator finds no entity (``compute_reward``). Tested against the real package
    with only its neural annotator replaced by a deterministic stand-in (tests/radgraph_standin.py).
    """
    idx = np.flatnonzero(ok)
    vals = np.full((len(preds), 3), np.nan)
    if len(idx):
        _, rewards, _, _ = scorer(refs=[refs[i] for i in idx], hyps=[preds[i] for i in idx])
        r = np.asarray(rewards, dtype=np.float64)
        if r.shape != (3, len(idx)):
            raise RadGraphOutputError(f"F1RadGraph(reward_level='all') returned rewards of shape {r.shape}; "
                                      f"expected level-major (3, {len(idx)}) as radgraph 0.1.18 documents")
        vals[idx] = r.T
    backend = f"radgraph=={package_version('radgraph')} {model_type}"
    return [mean_result(f"radgraph_{lvl}@{model_type}", backend, vals[:, j])
            for j, lvl in enumerate(RADGRAPH_LEVELS)]


def _versions(wordnet) -> dict[str, str]:
    v = library_versions(_VERSIONED, missing="absent")
    v["wordnet"] = wordnet.get_version() if wordnet is not None else "absent"
    return v


# --------------------------------------------------------------------------- entry points
def score_reports(predictions: Sequence[Any], references: Sequence[Any], *,
                  sections: Sequence[str] = ("findings", "impression"),
                  metrics: Sequence[str] | None = None,
                  sample_ids: Sequence[str] | None = None,
                  reference_labels: Sequence[Mapping[str, int]] | None = None,
                  prediction_format: str = "template",
                  bertscore_model: str = "auto", bertscore_batch_size: int = 64, device: str = "cpu",
                  clinical_backend: str = "auto", uncertain: str = "positive",
                  wordnet_dir: str | None = "auto", comet_model: str | None = None,
                  radgraph_model: str = "radgraph") -> ReportScores:
    """Score ``predictions`` against ``references`` (see the module docstring for inputs).

    Parameters
    ----------
    sections : subset of ``("findings", "impression", "report")``; ``report`` is
        Findings and Impression joined (the paper's strata tables use it).
    metrics : metric groups, default all of :data:`METRIC_GROUPS`. Groups whose
        backend is not installed (COMET, RadGraph, a BERTScore backbone) are
        skipped and listed in ``unavailable`` instead of failing.
    reference_labels : ground-truth CheXpert labels per sample used for the
        strata; default: the references' own ``labels`` (``Record.labels`` or a
        ``"labels"`` key) when every reference has them, else the clinical
        backend's labels of the joined reference report.
        ``versions["strata_source"]`` records which.
    wordnet_dir : ``"auto"``, a folder, or ``None`` to force ``meteor_exact_stem``.
    """
    if uncertain not in ("positive", "negative"):
        raise EvaluationInputError(f"uncertain must be 'positive' or 'negative', got {uncertain!r}")
    inp = normalise_inputs(predictions, references, sections=sections, metrics=metrics,
                           sample_ids=sample_ids, reference_labels=reference_labels,
                           prediction_format=prediction_format)
    n, sections, groups = len(inp.predictions), inp.sections, inp.groups
    preds, refs, ids, issues = inp.predictions, inp.references, inp.sample_ids, inp.issues
    reference_labels = inp.reference_labels
    strata_source = "reference_labels"
    text_p: dict[str, list[str]] = {s: [d[s].strip() for d in preds] for s in sections}
    text_r: dict[str, list[str]] = {s: [d[s].strip() for d in refs] for s in sections}
    defined: dict[str, np.ndarray] = {}
    for s in sections:
        defined[s] = np.array([bool(t) for t in text_r[s]])
        for i in range(n):
            if not text_p[s][i]:
                issues.append((i, s, "empty_prediction"))
            if not text_r[s][i]:
                issues.append((i, s, "missing_reference_section"))
            if any(ord(c) > 127 for c in text_p[s][i]):
                issues.append((i, s, "non_ascii_prediction"))
            if any(ord(c) > 127 for c in text_r[s][i]):
                issues.append((i, s, "non_ascii_reference"))

    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    unavailable: dict[str, str] = {}
    wordnet = load_wordnet(wordnet_dir) if ("meteor" in groups and wordnet_dir is not None) else None
    if "meteor" in groups and wordnet is None:
        unavailable["meteor_wordnet"] = ("WordNet not found: METEOR reported as meteor_exact_stem "
                                         "(apt-get install --no-install-recommends wordnet-base)")
    backbone = None
    if "bertscore" in groups:
        try:
            backbone = resolve_bertscore_backbone(bertscore_model)
        except BackendUnavailable as e:
            unavailable["bertscore"] = str(e)
    ckpt = None
    if "comet" in groups:
        ckpt = comet_checkpoint(comet_model)
        if ckpt is None:
            unavailable["comet"] = why_unavailable("comet")
    rg_dir = radgraph_model_dir(radgraph_model) if "radgraph" in groups else None
    if "radgraph" in groups and rg_dir is None:
        unavailable["radgraph"] = radgraph_unavailable_reason(radgraph_model)

    results: dict[str, list[MetricResult]] = {s: [] for s in sections}
    text_groups = [g for g in groups if g in ("bleu", "rouge", "meteor", "chrf")]
    for s in sections:
        results[s] += nlg_results(text_p[s], text_r[s], groups=text_groups, defined=defined[s], wordnet=wordnet)

    if backbone is not None:  # one batched BERTScore call over all sections
        flat_p, flat_r, where = [], [], []
        for s in sections:
            for i in np.flatnonzero(defined[s]):
                flat_p.append(text_p[s][i])
                flat_r.append(text_r[s][i])
                where.append((s, i))
        f1 = bertscore_f1(flat_p, flat_r, backbone, bertscore_batch_size, device)
        per = {s: np.full(n, np.nan) for s in sections}
        for (s, i), v in zip(where, f1):
            per[s][i] = v
        for s in sections:
            results[s].append(bertscore_result(per[s], backbone))

    if ckpt is not None:
        label = comet_model if comet_model and "/" in comet_model and not str(comet_model).startswith("/") \
            else ckpt.parent.parent.name or ckpt.stem
        for s in sections:
            results[s] += nlg_results(text_p[s], text_r[s], groups=["comet"], defined=defined[s],
                                      comet_checkpoint=ckpt, comet_label=str(label))

    # Labels: generated + reference sections for clinical F1, reference reports for the strata
    # (unless ground-truth reference_labels are given). One labeler call over unique texts.
    strata = None
    want_clinical = "clinical" in groups
    if want_clinical or reference_labels is None:
        try:
            bname, label_fn, detail = get_labeler(clinical_backend)
        except (ImportError, BackendUnavailable) as e:
            if want_clinical:
                unavailable["clinical"] = f"{why_unavailable('labeler')}: {e}"
            bname = None
        if bname is not None:
            need: set[str] = set()
            if want_clinical:
                need |= {t for s in sections for t in text_p[s] + text_r[s] if t}
            if reference_labels is None:
                need |= {d["report"] for d in refs if d["report"]}
            texts = sorted(need)
            lab = dict(zip(texts, label_fn(texts)))
            if want_clinical:
                for s in sections:
                    pl = [lab[t] if t else {} for t in text_p[s]]  # empty text asserts nothing
                    rl = [lab[t] if t else {} for t in text_r[s]]
                    results[s] += clinical_results(pl, rl, bname, defined=defined[s], uncertain=uncertain,
                                                   backend_detail=detail)
            if reference_labels is None:
                strata = strata_from_labels([lab[d["report"]] if d["report"] else {} for d in refs],
                                            uncertain=uncertain)
                strata_source = f"{bname}(reference report)"
    if reference_labels is not None:
        strata = strata_from_labels(reference_labels, uncertain=uncertain)

    if rg_dir is not None:
        # All or nothing: a failure in any section (e.g. out of memory in the second) drops every
        # section's RadGraph values and names the failure, so no table mixes scored and unscored parts.
        try:
            scorer = _radgraph_scorer(radgraph_model, rg_dir)
            for s in sections:
                results[s] += _radgraph(scorer, text_p[s], text_r[s], defined[s], radgraph_model)
        except Exception as e:  # noqa: BLE001 - a broken optional scorer must not sink the run
            unavailable["radgraph"] = f"radgraph failed to run: {type(e).__name__}: {e}"
            for s in sections:
                results[s] = [r for r in results[s] if not r.name.startswith("radgraph_")]

    issue_df = pd.DataFrame([(ids[i], sec, kind) for i, sec, kind in issues],
                            columns=["sample_id", "section", "issue"])
    versions = _versions(wordnet)
    versions["strata_source"] = strata_source if strata is not None else "none"
    return ReportScores(ids, sections, results, defined, strata, issue_df, unavailable, versions)


def evaluate_reports(predictions: Sequence[Any], references: Sequence[Any], *,
                     sections: Sequence[str] = ("findings", "impression"),
                     metrics: Sequence[str] | None = None, **kwargs: Any) -> pd.DataFrame:
    """Tidy table of every metric (see module docstring); keyword arguments as :func:`score_reports`.

    ``df.attrs`` holds ``issue_counts``, ``unavailable`` (metric groups skipped
    and why) and ``versions`` (library versions, WordNet version).
    """
    return score_reports(predictions, references, sections=sections, metrics=metrics, **kwargs).to_frame()


def metric_kwargs(cfg: Any) -> dict[str, Any]:
    """:func:`score_reports` keyword arguments from a profile's ``metrics`` section.

    Example: ``score_reports(preds, refs, **metric_kwargs(load_profile("smoke")))``.
    """
    m = cfg.metrics
    kw: dict[str, Any] = {}
    for key in ("bertscore_model", "bertscore_batch_size", "clinical_backend", "wordnet_dir", "device"):
        if hasattr(m, key):
            kw[key] = getattr(m, key)
    if getattr(m, "comet_model", ""):
        kw["comet_model"] = m.comet_model
    if hasattr(m, "bertscore") and not m.bertscore:
        kw["metrics"] = [g for g in METRIC_GROUPS if g != "bertscore"]
    return kw


# --------------------------------------------------------------------------- comparisons
def compare_systems(a: ReportScores, b: ReportScores, *, n_resamples: int = 1000, seed: int = 0,
                    ci: float = 0.95) -> pd.DataFrame:
    """Paired bootstrap of A - B for every metric both systems have, per section.

    Both must cover the same ``sample_ids`` in the same order. Every metric
    uses the same resamples. Columns: ``section, metric, value_a, value_b,
    diff, ci_low, ci_high, p_value, n, n_resamples``.
    """
    if list(a.sample_ids) != list(b.sample_ids):
        raise EvaluationInputError("compare_systems needs both systems scored on the same sample_ids, same order")
    w = bootstrap_weights(len(a.sample_ids), n_resamples, seed)
    rows = []
    for sec in a.sections:
        if sec not in b.sections:
            continue
        b_names = {r.name: r for r in b.results[sec]}
        for ra in a.results[sec]:
            rb = b_names.get(ra.name)
            if rb is None:
                continue
            rows.append({"section": sec, "metric": ra.name, **paired_bootstrap(ra, rb, weights=w, ci=ci)})
    return pd.DataFrame(rows)


def compare_frames(df_a: pd.DataFrame, df_b: pd.DataFrame, *, n_resamples: int = 1000, seed: int = 0,
                   ci: float = 0.95) -> pd.DataFrame:
    """Paired bootstrap from two tidy tables (e.g. read back from CSV): sample-level metrics only.

    Samples are aligned on ``sample_id``; a sample missing from either table is
    an error (a paired test needs the same samples). The statistic is the mean
    of the sample values, so corpus-only metrics (corpus BLEU, macro F1) are
    absent and ``chrf++`` is the mean sentence chrF++ rather than corpus
    chrF++; use :func:`compare_systems` for those.
    """
    def pivot(df):
        s = df[df.level == "sample"]
        return s.pivot_table(index="sample_id", columns=["section", "metric"], values="value",
                             aggfunc="first", dropna=False)

    pa, pb = pivot(df_a), pivot(df_b)
    if set(pa.index) != set(pb.index):
        raise EvaluationInputError(f"tables cover different samples ({len(pa)} vs {len(pb)} ids)")
    pb = pb.loc[pa.index]
    w = bootstrap_weights(len(pa), n_resamples, seed)
    rows = []
    for col in pa.columns:
        if col not in pb.columns:
            continue
        ra = mean_result(col[1], "", pa[col].to_numpy(np.float64))
        rb = mean_result(col[1], "", pb[col].to_numpy(np.float64))
        rows.append({"section": col[0], "metric": col[1], **paired_bootstrap(ra, rb, weights=w, ci=ci)})
    return pd.DataFrame(rows)


def write_results(scores: ReportScores, name: str, cfg: Any) -> list:
    """Write ``<name>`` (tidy), ``<name>_summary``, ``<name>_strata``, ``<name>_issues`` to results/.

    Uses :func:`sdrlib.results.save_table` (CSV + Markdown + provenance JSON);
    backends are a column of each table, library versions go to the provenance.
    """
    extra = {f"v_{k}": v for k, v in scores.versions.items() if v != "absent"}
    extra["unavailable"] = ",".join(sorted(scores.unavailable)) or "none"
    paths = []
    paths += save_table(scores.to_frame(), name, cfg, **extra)
    paths += save_table(scores.summary(), f"{name}_summary", cfg, **extra)
    paths += save_table(scores.strata_table(), f"{name}_strata", cfg, **extra)
    counts = pd.DataFrame(list(scores.issue_counts().items()), columns=["issue", "count"])
    paths += save_table(counts, f"{name}_issues", cfg, **extra)
    return paths
