"""A metric group's results are checked where the suite reads them: one name per result, the documented shape.
Before: a plugin group returning a result named like a built-in one ("rougeL") was scored twice and
``ReportScores.result`` returned the first; a compute returning the wrong shape failed with a bare TypeError /
KeyError inside the suite."""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.metrics.base import EvaluationInputError, mean_result
from sdrlib.metrics.registry import MetricGroup, register_metric_group, unregister_metric_group
from sdrlib.metrics.suite import score_reports

PREDS = ["No pneumothorax. Small effusion.", "Mild cardiomegaly."]
REFS = ["No pneumothorax.", "Mild cardiomegaly. No edema."]


def _section_named(name):
    def section(predictions, references, defined, setup):
        return [mean_result(name, "mylab", np.ones(len(predictions)))]
    return section


@pytest.fixture
def group():
    names = []

    def register(name, **kw):
        register_metric_group(MetricGroup(name, **kw))
        names.append(name)
    yield register
    for n in names:
        unregister_metric_group(n)


def test_a_result_named_like_a_builtin_one_is_refused(group):
    group("mylab_rouge", section=_section_named("rougeL"))
    with pytest.raises(EvaluationInputError, match="'mylab_rouge': result 'rougeL' of 'findings' is already given "
                                                   "by group 'rouge'"):
        score_reports(PREDS, REFS, metrics=["rouge", "mylab_rouge"])
    scores = score_reports(PREDS, REFS, metrics=["mylab_rouge"])      # alone, its name is its own
    assert [r.name for r in scores.results["findings"]] == ["rougeL"]


def test_a_group_returning_one_name_twice_is_refused(group):
    def twice(predictions, references, defined, setup):
        return _section_named("dup")(predictions, references, defined, setup) * 2
    group("mylab_twice", section=twice)
    with pytest.raises(EvaluationInputError, match="result 'dup'"):
        score_reports(PREDS, REFS, metrics=["mylab_twice"])


@pytest.mark.parametrize("returned, says", [
    (lambda ctx: None, "compute returned NoneType"),
    (lambda ctx: [], "compute returned list"),
    (lambda ctx: {"findings": []}, r"no results for section\(s\) \['impression'\]"),
    (lambda ctx: {s: 0.5 for s in ctx.sections}, "'findings' entry is float, not a list of MetricResult"),
    (lambda ctx: {s: mean_result("x", "b", np.ones(2)) for s in ctx.sections}, "entry is MetricResult"),
    (lambda ctx: {s: [mean_result("x", "b", np.ones(5))] for s in ctx.sections}, r"shape \(5, 2\), not one row"),
])
def test_a_compute_of_the_wrong_shape_names_the_group(group, returned, says):
    group("mylab_shape", compute=lambda ctx, setup: returned(ctx))
    with pytest.raises(EvaluationInputError, match=f"metric group 'mylab_shape': .*{says}"):
        score_reports(PREDS, REFS, metrics=["mylab_shape"])
