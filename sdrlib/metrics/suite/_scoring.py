"""The scoring loop of the suite: checked inputs -> section texts -> every requested metric group -> strata.

:func:`score_reports` checks the inputs (:func:`._inputs.normalize_inputs`), strips the section texts and counts
the per-section issues, asks each requested group of the registry (:mod:`sdrlib.metrics.registry`) whether it can
run (``available``; a reason otherwise), runs the available ones in registration order, and derives the
ground-truth strata (given labels, else the clinical labeler on the reference reports). Leaves out the metrics
themselves (:mod:`sdrlib.metrics.groups`) and the tables (:mod:`._scores`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from sdrlib.metrics.base import EvaluationInputError, MetricResult
from sdrlib.metrics.clinical import strata_from_labels
from sdrlib.metrics.groups.clinical import labeler_setup
from sdrlib.metrics.registry import (GROUPS, MetricUnavailable, ScoreContext, group_settings, metric_group,
                                     metric_groups)
from sdrlib.metrics.suite._inputs import NormalizedInputs, normalize_inputs
from sdrlib.metrics.suite._scores import ReportScores
from sdrlib.results import library_versions

__all__ = ["evaluate_reports", "metric_kwargs", "score_reports"]

#: packages whose versions every result records, before each group's own ``versions``
_VERSIONED = ("evaluate",)


def _context(inp: NormalizedInputs, settings: Mapping[str, Any]) -> ScoreContext:
    """Stripped section texts and ``defined`` masks; appends the per-section issues to ``inp.issues``."""
    n, issues = len(inp.predictions), inp.issues
    text_p: dict[str, list[str]] = {s: [d[s].strip() for d in inp.predictions] for s in inp.sections}
    text_r: dict[str, list[str]] = {s: [d[s].strip() for d in inp.references] for s in inp.sections}
    defined: dict[str, np.ndarray] = {}
    for s in inp.sections:
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
    return ScoreContext(inp.sections, text_p, text_r, defined, settings=dict(settings))


def _setups(ctx: ScoreContext, groups: Sequence[str]) -> dict[str, Any]:
    """Each requested group's setup, in scoring order; a group that cannot run is named in ``ctx.unavailable``."""
    setups: dict[str, Any] = {}
    for g in metric_groups():
        if g.name not in groups:
            continue
        try:
            setups[g.name] = g.setup(ctx)
        except MetricUnavailable as e:
            ctx.unavailable[g.name] = str(e)
    return setups


def _group_results(name: str, per_section: Any, ctx: ScoreContext) -> dict[str, list[MetricResult]]:
    """A group's ``compute`` output checked against the contract ``{section: [MetricResult, ...]}`` (every section,
    one row of statistics per sample); :class:`EvaluationInputError` naming the group and what came back (before:
    a bare TypeError / KeyError inside the suite)."""
    n = len(next(iter(ctx.predictions.values()), []))
    if not isinstance(per_section, Mapping):
        raise EvaluationInputError(f"metric group {name!r}: compute returned {type(per_section).__name__}, not "
                                   "{section: [MetricResult, ...]} for the sections " + str(list(ctx.sections)))
    missing = [s for s in ctx.sections if s not in per_section]
    if missing:
        raise EvaluationInputError(f"metric group {name!r}: compute returned no results for section(s) {missing}; it "
                                   "returns {section: [MetricResult, ...]} for every section scored")
    out = {}
    for s in ctx.sections:
        got = per_section[s]
        if isinstance(got, MetricResult) or not isinstance(got, (list, tuple)) or not all(
                isinstance(r, MetricResult) for r in got):
            raise EvaluationInputError(f"metric group {name!r}: compute's {s!r} entry is {type(got).__name__}, not a "
                                       "list of MetricResult")
        bad = [r.name for r in got if np.ndim(r.stats) != 2 or np.shape(r.stats)[0] != n]
        if bad:
            raise EvaluationInputError(f"metric group {name!r}: result {bad[0]!r} of {s!r} holds statistics of "
                                       f"shape {np.shape(next(r for r in got if r.name == bad[0]).stats)}, not one "
                                       f"row per sample ({n}, k)")
        out[s] = list(got)
    return out


def _run_groups(ctx: ScoreContext, setups: Mapping[str, Any]) -> dict[str, list[MetricResult]]:
    """Every available group's results per section, in scoring order. A group whose ``compute`` raises
    :class:`MetricUnavailable` adds nothing to any section and is named in ``ctx.unavailable``. A group's output in
    the wrong shape, or a result named like one an earlier group (a built-in) already gave in that section (it
    would be scored twice and :meth:`ReportScores.result` would return the first), is an
    :class:`EvaluationInputError` naming both groups."""
    results: dict[str, list[MetricResult]] = {s: [] for s in ctx.sections}
    owner: dict[tuple[str, str], str] = {}
    for name, setup in setups.items():
        try:
            per_section = _group_results(name, metric_group(name).compute(ctx, setup), ctx)
        except MetricUnavailable as e:
            ctx.unavailable[name] = str(e)
            continue
        for s in ctx.sections:
            for r in per_section[s]:
                first = owner.setdefault((s, r.name), name)
                if first != name or sum(q.name == r.name for q in per_section[s]) > 1:
                    raise EvaluationInputError(
                        f"metric group {name!r}: result {r.name!r} of {s!r} is already given by group {first!r}; a "
                        "result name is scored once: name the group's results apart (e.g. 'mylab_rougeL')")
            results[s] += per_section[s]
    return results


def _strata(ctx: ScoreContext, inp: NormalizedInputs, setups: Mapping[str, Any]) -> tuple[np.ndarray | None, str]:
    """``(strata (n,) or None, source)``: from the given reference labels, else from the clinical labeler's labels
    of the joined reference reports (the clinical group's labeler when it ran), else none."""
    uncertain = ctx.settings_of("clinical").uncertain
    if inp.reference_labels is not None:
        return strata_from_labels(inp.reference_labels, uncertain=uncertain), "reference_labels"
    labeler = setups.get("clinical") if metric_group("clinical").available is labeler_setup else None
    if labeler is None:
        try:
            labeler = labeler_setup(ctx)
        except MetricUnavailable:
            return None, "none"
    bname, label_fn, _ = labeler
    texts = sorted({d["report"] for d in inp.references if d["report"]})
    lab = dict(zip(texts, label_fn(texts)))
    strata = strata_from_labels([lab[d["report"]] if d["report"] else {} for d in inp.references],
                                uncertain=uncertain)
    return strata, f"{bname}(reference report)"


def _versions(setups: Mapping[str, Any]) -> dict[str, str]:
    """Library versions of every registered group's packages, then each group's own provenance (WordNet)."""
    packages = tuple(dict.fromkeys(_VERSIONED + tuple(p for g in metric_groups() for p in g.versions)))
    v = library_versions(packages, missing="absent")
    for g in metric_groups():
        if g.provenance is not None:
            v.update(g.provenance(setups.get(g.name)))
    return v


def score_reports(predictions: Sequence[Any], references: Sequence[Any], *,
                  sections: Sequence[str] = ("findings", "impression"),
                  metrics: Sequence[str] | None = None,
                  sample_ids: Sequence[str] | None = None,
                  reference_labels: Sequence[Mapping[str, int]] | None = None,
                  prediction_format: str = "template",
                  settings: Mapping[str, Any] | None = None) -> ReportScores:
    """Score ``predictions`` against ``references`` (see :mod:`sdrlib.metrics.suite` for inputs).

    Parameters
    ----------
    sections : subset of ``("findings", "impression", "report")``; ``report`` is
        Findings and Impression joined (the paper's strata tables use it).
    metrics : metric groups, default every registered group
        (:func:`sdrlib.metrics.registry.metric_group_names`). Groups whose
        backend is not installed (COMET, RadGraph, a BERTScore backbone) are
        skipped and listed in ``unavailable`` instead of failing.
    reference_labels : ground-truth CheXpert labels per sample used for the
        strata; default: the references' own ``labels`` (``Record.labels`` or a
        ``"labels"`` key) when every reference has them, else the clinical
        backend's labels of the joined reference report.
        ``versions["strata_source"]`` records which.
    settings : ``{group name: settings}`` for the groups with :attr:`~sdrlib.metrics.registry.MetricGroup.settings`:
        the group's settings object (the profile's ``metrics.<group>`` sections, :func:`metric_kwargs`) or a mapping
        of some of its fields (:func:`~sdrlib.metrics.registry.group_settings`), e.g.
        ``{"clinical": {"backend": "labeler"}}``, ``{"bertscore": {"model": "all-MiniLM-L6-v2"}}``,
        ``{"meteor": {"wordnet_dir": None}}`` (``meteor_exact_stem``); a group left out runs with its defaults. The
        clinical group's ``uncertain`` also decides the strata.
    """
    settings = group_settings(settings)
    inp = normalize_inputs(predictions, references, sections=sections, metrics=metrics,
                           sample_ids=sample_ids, reference_labels=reference_labels,
                           prediction_format=prediction_format)
    ctx = _context(inp, settings)
    setups = _setups(ctx, inp.groups)
    results = _run_groups(ctx, setups)
    strata, strata_source = _strata(ctx, inp, setups)
    issue_df = pd.DataFrame([(inp.sample_ids[i], sec, kind) for i, sec, kind in inp.issues],
                            columns=["sample_id", "section", "issue"])
    versions = _versions(setups)
    versions["strata_source"] = strata_source if strata is not None else "none"
    return ReportScores(inp.sample_ids, inp.sections, results, ctx.defined, strata, issue_df, ctx.unavailable,
                        versions)


def evaluate_reports(predictions: Sequence[Any], references: Sequence[Any], *,
                     sections: Sequence[str] = ("findings", "impression"),
                     metrics: Sequence[str] | None = None, **kwargs: Any) -> pd.DataFrame:
    """Tidy table of every metric (see :mod:`sdrlib.metrics.suite`); keyword arguments as :func:`score_reports`.

    ``df.attrs`` holds ``issue_counts``, ``unavailable`` (metric groups skipped
    and why) and ``versions`` (library versions, WordNet version).
    """
    return score_reports(predictions, references, sections=sections, metrics=metrics, **kwargs).to_frame()


def metric_kwargs(cfg: Any) -> dict[str, Any]:
    """:func:`score_reports` keyword arguments from a profile's ``metrics`` section: ``settings``, the registered
    groups' own sections (``metrics.<group>``), and ``metrics``, every group but those whose settings say
    ``enabled: false`` (only when one does; else every group is scored).

    Example: ``score_reports(preds, refs, **metric_kwargs(load_profile("smoke")))``.
    """
    m = cfg.metrics
    sections = {name: getattr(m, name) for name in GROUPS.settings_sections() if hasattr(m, name)}
    kw: dict[str, Any] = {"settings": sections} if sections else {}
    off = {name for name, s in sections.items() if getattr(s, "enabled", True) is False}
    if off:
        kw["metrics"] = [g.name for g in metric_groups() if g.name not in off]
    return kw
