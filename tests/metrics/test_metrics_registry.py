"""Metric groups as a registry: one registration (``register_metric_group``) reaches the suite and the paper names.

``tests/metrics/toy_metric.py`` is a metric group written as one module; registered, it is scored by
``score_reports`` / ``evaluate_reports`` per section (corpus value, strata rows, paired comparison), its paper name
resolves in :mod:`sdrlib.metrics.paper_names`, and it leaves again. Bad registrations are refused by name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import toy_metric  # noqa: E402

from sdrlib.metrics import EvaluationInputError, compare_systems, evaluate_reports, score_reports  # noqa: E402
from sdrlib.metrics import paper_names  # noqa: E402
from sdrlib.metrics.nlg import nlg_groups, nlg_results  # noqa: E402
from sdrlib.metrics.suite import normalize_inputs  # noqa: E402
from sdrlib.metrics.registry import (MetricGroup, MetricUnavailable, metric_group, metric_group_names,  # noqa: E402
                                     register_metric_group, unregister_metric_group)
from sdrlib.reports import build_template  # noqa: E402

BUILTIN = ("bleu", "rouge", "meteor", "chrf", "bertscore", "comet", "clinical", "radgraph")
PREDS = [build_template("Heart is normal. Lungs are clear.", "No acute disease."),
         build_template("Small left effusion.", "Effusion. Cardiomegaly. Edema.")]
REFS = [{"findings": "Heart is normal. Lungs are clear. No effusion.", "impression": "No acute disease."},
        {"findings": "Small left effusion.", "impression": "Effusion."}]


@pytest.fixture
def toy():
    toy_metric.register()
    yield toy_metric.NAME
    toy_metric.unregister()


def test_builtin_groups_in_scoring_order():
    assert metric_group_names() == BUILTIN
    assert nlg_groups() == BUILTIN[:6]
    assert all(metric_group(g).paper_names for g in BUILTIN)


def test_a_toy_metric_is_scored_end_to_end(toy):
    assert metric_group_names() == BUILTIN + (toy,)
    scores = score_reports(PREDS, REFS, metrics=[toy, "rouge"], reference_labels=[{}, {"Pleural Effusion": 1}])
    assert [r.name for r in scores.results["findings"]] == ["rouge1", "rouge2", "rougeL", toy_metric.METRIC]
    f = scores.result("findings", toy_metric.METRIC)
    i = scores.result("impression", toy_metric.METRIC)
    assert f.sample.tolist() == [1.0, 0.0] and i.sample.tolist() == [0.0, 2.0]
    assert f.corpus == 0.5 and i.corpus == 1.0 and not f.higher_is_better
    df = evaluate_reports(PREDS, REFS, metrics=[toy], reference_labels=[{}, {"Pleural Effusion": 1}])
    corpus = df[(df.level == "corpus") & (df.metric == toy_metric.METRIC) & (df.section == "impression")]
    assert dict(zip(corpus.stratum, corpus.value)) == {"all": 1.0, "no_finding": 0.0, "single": 2.0}
    diff = compare_systems(scores, scores, n_resamples=50)
    assert (diff[diff.metric == toy_metric.METRIC]["diff"] == 0).all()
    assert nlg_results(["Heart is normal. Lungs are clear."], ["Heart is normal."], groups=[toy])[0].corpus == 1.0


def test_metrics_none_means_every_registered_group(toy):
    assert normalize_inputs(PREDS, REFS, metrics=None).groups == BUILTIN + (toy,)
    assert normalize_inputs(PREDS, REFS, metrics=toy).groups == (toy,)
    with pytest.raises(EvaluationInputError, match="sentence_count"):
        normalize_inputs(PREDS, REFS, metrics=["bleurt"])  # the message lists the registered groups


def _unavailable(ctx):
    raise MetricUnavailable("not here")


def test_the_toy_paper_name_shows_where_paper_names_show(toy):
    scores = score_reports(PREDS, REFS, metrics=[toy])
    names = [r.name for r in scores.results["findings"]]
    assert paper_names.find(toy_metric.PAPER_NAME, names) == toy_metric.METRIC
    assert paper_names.find("sentence count difference", names) == toy_metric.METRIC
    assert paper_names.row_label(toy_metric.PAPER_NAME) == "sentence count |diff|"
    assert paper_names.paper_metric(toy_metric.PAPER_NAME).group == toy
    assert toy_metric.PAPER_NAME in {n for m in paper_names.PAPER_METRICS for n in m.names}
    assert paper_names.not_computed(toy_metric.PAPER_NAME, {toy: "why"}) == "not computed: why"
    toy_metric.unregister()
    with pytest.raises(KeyError, match="unknown paper metric name"):
        paper_names.paper_metric(toy_metric.PAPER_NAME)


def test_an_unavailable_group_is_a_named_reason_not_a_failure():
    register_metric_group(MetricGroup("needs_gpu", section=toy_metric.sentence_count_section, available=_unavailable))
    try:
        scores = score_reports(PREDS, REFS, metrics=["needs_gpu", "rouge"])
        assert scores.unavailable == {"needs_gpu": "not here"}
        assert [r.name for r in scores.results["findings"]] == ["rouge1", "rouge2", "rougeL"]
        assert scores.to_frame().query("metric == 'unavailable/needs_gpu'").backend.tolist() == ["not here"]
    finally:
        unregister_metric_group("needs_gpu")


def test_bad_registrations_are_refused_by_name(toy):
    toy_metric.register()  # the same group again: no change (the rule of every registry, sdrlib.extension)
    with pytest.raises(EvaluationInputError, match="already registered; pass replace=True"):
        register_metric_group(MetricGroup(toy_metric.NAME, section=toy_metric.sentence_count_section))
    with pytest.raises(EvaluationInputError, match="already registered"):
        register_metric_group(MetricGroup("rouge", section=toy_metric.sentence_count_section))
    with pytest.raises(EvaluationInputError, match="built in and cannot be removed"):
        unregister_metric_group("rouge")
    with pytest.raises(EvaluationInputError, match="lower-case identifier"):
        register_metric_group(MetricGroup("Bad-Name", section=toy_metric.sentence_count_section))
    with pytest.raises(EvaluationInputError, match="compute= or section="):
        register_metric_group(MetricGroup("nothing"))
    with pytest.raises(EvaluationInputError, match="belongs to group 'rouge'"):
        register_metric_group(MetricGroup("clash", section=toy_metric.sentence_count_section,
                                          paper_names=[paper_names.PaperMetric(("ROUGE-L",), ("x",), "clash", "ours", "")]))
    with pytest.raises(EvaluationInputError, match="unknown metric group"):
        metric_group("bleurt")


def test_replacing_a_builtin_needs_replace_true():
    rouge = metric_group("rouge")
    register_metric_group(MetricGroup("rouge", section=toy_metric.sentence_count_section), replace=True)
    try:
        scores = score_reports(PREDS, REFS, metrics=["rouge"])
        assert [r.name for r in scores.results["findings"]] == [toy_metric.METRIC]
    finally:
        register_metric_group(rouge, replace=True)
    assert metric_group_names() == BUILTIN
    assert np.isclose(score_reports(PREDS, REFS, metrics=["rouge"]).result("findings", "rouge1").sample[1], 1.0)


@pytest.mark.parametrize("field", ["compute", "section", "available", "provenance"])
def test_a_group_function_that_is_not_a_function_is_refused(field):
    from sdrlib.metrics.registry import register_metric_group

    kw = {"section": lambda *a: [], field: 3}
    with pytest.raises(EvaluationInputError, match=f"metric group 'not_callable': {field} must be a function"):
        register_metric_group(MetricGroup("not_callable", **kw))
