"""Plain-text predictions scored under the default template format: a named warning, not silent zeros."""

from __future__ import annotations

import warnings

import pytest

from sdrlib.metrics import evaluate_reports, score_reports
from sdrlib.metrics.suite import TemplateFormatWarning, normalize_inputs
from sdrlib.reports import build_template

REF = {"findings": "The heart is enlarged. Small left pleural effusion.", "impression": "Cardiomegaly."}
PLAIN = "FINDINGS: The heart is enlarged. Small left pleural effusion. IMPRESSION: Cardiomegaly."
TEMPLATED = build_template(REF["findings"], REF["impression"])


def _warned(preds, **kw) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        normalize_inputs(preds, [REF] * len(preds), **kw)
    return [w for w in rec if issubclass(w.category, TemplateFormatWarning)]


@pytest.mark.parametrize("preds, share", [
    ([PLAIN] * 4, "4 of 4 predictions (100%)"),
    ([PLAIN, PLAIN, TEMPLATED], "2 of 3 predictions (67%)"),
    ([PLAIN.encode(), "just a sentence.", None], "2 of 3 predictions (67%)"),  # bytes are text too
    (["<think> heart enlarged </think>", "<answer>x</answer>", TEMPLATED], "2 of 3 predictions (67%)"),
])
def test_mostly_untemplated_predictions_warn_with_the_fix(preds, share):
    got = _warned(preds)
    assert len(got) == 1, got
    msg = str(got[0].message)
    assert share in msg and 'prediction_format="report"' in msg and "scored as empty" in msg
    assert issubclass(TemplateFormatWarning, UserWarning)


@pytest.mark.parametrize("preds, kw", [
    ([PLAIN, TEMPLATED], {}),                                      # exactly half: not "most"
    ([TEMPLATED] * 3, {}),                                         # all in the template
    (["", "   ", None, "\u200b"], {}),                              # failed generations: nothing to reformat
    ([{"findings": "a.", "impression": "b."}] * 3, {}),             # mappings are not parsed
    ([PLAIN] * 3, {"prediction_format": "report"}),                # the fix itself
])
def test_no_warning_where_the_format_hint_does_not_apply(preds, kw):
    assert _warned(preds, **kw) == []


def test_warning_points_at_the_caller_of_either_entry_point():
    """Both public entry points attribute the warning to the user's line, not to sdrlib internals."""
    for fn in (evaluate_reports, score_reports):
        with pytest.warns(TemplateFormatWarning, match=r"prediction_format=\"report\"") as rec:
            fn([PLAIN, PLAIN], [REF, REF], metrics=["rouge"])
        assert [w.filename for w in rec if w.category is TemplateFormatWarning] == [__file__]


def test_the_suggested_format_scores_the_plain_text():
    """What the warning promises: the same plain text under prediction_format="report" is scored for real."""
    with pytest.warns(TemplateFormatWarning):
        as_template = evaluate_reports([PLAIN], [REF], metrics=["rouge"])
    as_report = evaluate_reports([PLAIN], [REF], metrics=["rouge"], prediction_format="report")

    def rouge1(df):
        return df.query("level == 'corpus' and metric == 'rouge1' and stratum == 'all'")["value"].tolist()

    assert rouge1(as_template) == [0.0, 0.0]
    assert min(rouge1(as_report)) > 0.9
