"""Bad input to the metrics suite: one normalisation path (``normalize_inputs`` / ``normalize_labels``) gives a
defined score or an EvaluationInputError naming the input, for bytes, None / NaN, non-text items, empty metric
lists and misspelt or out-of-range CheXpert labels."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sdrlib.data import DataError
from sdrlib.data._common import read_table, resolve_data_path
from sdrlib.data.iuxray import iuxray_split_of, load_iuxray
from sdrlib.data.mimic import load_mimic
from sdrlib.data.rexgradient import load_rexgradient
from sdrlib.errors import SDRError
from sdrlib.metrics import EvaluationInputError, evaluate_reports, score_reports
from sdrlib.metrics.clinical import clinical_results, label_matrix, normalize_labels, strata_from_labels
from sdrlib.reports import build_template

CHEAP = ["bleu", "rouge", "chrf"]  # offline, fast, no model weights
REF = {"findings": "The heart is enlarged. Small left pleural effusion.", "impression": "Cardiomegaly."}
PRED = build_template("The heart is enlarged. Small left pleural effusion.", "Cardiomegaly.")
CHEXPERT_14 = ['No Finding', 'Enlarged Cardiomediastinum', 'Cardiomegaly', 'Lung Opacity', 'Lung Lesion',
               'Edema', 'Consolidation', 'Pneumonia', 'Atelectasis', 'Pneumothorax', 'Pleural Effusion',
               'Pleural Other', 'Fracture', 'Support Devices']


pytestmark = pytest.mark.usefixtures("no_network")  # tests/conftest.py


def _rouge1(df: pd.DataFrame, sample: str, section: str = "findings") -> float:
    row = df[(df.level == "sample") & (df.metric == "rouge1") & (df.section == section) & (df.sample_id == sample)]
    return float(row["value"].iloc[0])


# --------------------------------------------------------------------------- metrics: texts
def test_utf8_bytes_are_scored_like_str():
    df_s = evaluate_reports([PRED, PRED], [REF, REF], metrics=["rouge"])
    df_b = evaluate_reports([PRED.encode(), PRED], [REF, {k: v.encode() for k, v in REF.items()}], metrics=["rouge"])
    pd.testing.assert_frame_equal(df_s, df_b)
    bom = b"\xef\xbb\xbf" + PRED.encode()
    assert _rouge1(evaluate_reports([bom], [REF], metrics=["rouge"]), "0") == pytest.approx(1.0)


@pytest.mark.parametrize("preds, refs, where", [
    ([PRED, b"\xff\xfe bad"], [REF, REF], r"predictions\[1\] is bytes but not valid UTF-8"),
    ([PRED], [b"caf\xe9 latin-1"], r"references\[0\] is bytes but not valid UTF-8"),
    ([{"findings": b"\x80", "impression": "x"}], [REF], r"predictions\[0\]\['findings'\] is bytes"),
    ([PRED, PRED], [REF, {"findings": "ok", "impression": bytearray(b"\xc3")}],
     r"references\[1\]\['impression'\] is bytes"),
])
def test_undecodable_bytes_name_the_index(preds, refs, where):
    with pytest.raises(EvaluationInputError, match=where):
        evaluate_reports(preds, refs, metrics=["rouge"])


@pytest.mark.parametrize("refs, where", [
    ([REF, None], r"references\[1\] is None"),
    ([float("nan"), REF], r"references\[0\] is NaN"),
    ([REF, np.float64("nan")], r"references\[1\] is NaN"),
    ([pd.NA, REF], r"references\[0\] is NaN/NA"),
    ([REF, 3], r"references\[1\] is int"),
    ([REF, ["findings"]], r"references\[1\] is list"),
])
def test_missing_or_non_text_references_are_named(refs, where):
    with pytest.raises(EvaluationInputError, match=where):
        score_reports([PRED, PRED], refs, metrics=["rouge"])


def test_missing_predictions_are_failed_generations():
    preds = [PRED, None, float("nan"), pd.NA, {"findings": float("nan"), "impression": None}]
    df = evaluate_reports(preds, [REF] * 5, metrics=["rouge"])
    assert _rouge1(df, "0") == pytest.approx(1.0)
    assert [_rouge1(df, str(i)) for i in range(1, 5)] == [0.0] * 4
    counts = df.attrs["issue_counts"]
    assert counts["empty_prediction"] == 8 and counts["missing_prediction_section"] == 2


@pytest.mark.parametrize("preds, refs, match", [
    (PRED, REF, "predictions must be a sequence"),            # a lone str would be scored per character
    ([PRED], "a report", "references must be a sequence"),
    (PRED.encode(), [REF], "predictions must be a sequence"),
    ({"findings": "x", "impression": "y"}, [REF], "predictions must be a sequence"),
    (None, [REF], "predictions must be a sequence"),
    (5, [REF], "predictions must be a sequence"),
    ([PRED, PRED], [REF], "2 predictions but 1 references"),
    ([], [], "no samples"),
    ((), pd.Series([], dtype=object), "no samples"),
])
def test_containers_and_lengths(preds, refs, match):
    with pytest.raises(EvaluationInputError, match=match):
        evaluate_reports(preds, refs, metrics=["rouge"])


def test_series_and_tuples_are_accepted():
    df = evaluate_reports(pd.Series([PRED, None], index=[10, 20]), (REF, REF), metrics=["rouge"])
    assert _rouge1(df, "0") == pytest.approx(1.0) and _rouge1(df, "1") == 0.0


# --------------------------------------------------------------------------- metrics: metric names
def test_metric_selection_errors_and_forms():
    with pytest.raises(EvaluationInputError, match=r"metrics=\[\] selects no metric"):
        evaluate_reports([PRED], [REF], metrics=[])
    with pytest.raises(EvaluationInputError, match=r"metrics=\[\]"):
        evaluate_reports([PRED], [REF], metrics=())
    with pytest.raises(EvaluationInputError, match=r"unknown metric groups \['rouge1', 'bleurt'\]; known: "
                                                   r"\('bleu', 'rouge'"):
        evaluate_reports([PRED], [REF], metrics=["rouge1", "bleurt"])
    with pytest.raises(EvaluationInputError, match="metrics must be names"):
        evaluate_reports([PRED], [REF], metrics=["rouge", None])
    one = evaluate_reports([PRED], [REF], metrics="rouge")           # a str is one group, not letters
    listed = evaluate_reports([PRED], [REF], metrics=["rouge", "rouge"])  # repeats dropped
    pd.testing.assert_frame_equal(one, listed)
    assert set(one[one.level == "corpus"].metric) == {"rouge1", "rouge2", "rougeL"}
    assert set(evaluate_reports([PRED], [REF], metrics=["rouge"], sections="report").section) <= {"report", "all"}


# --------------------------------------------------------------------------- metrics: labels
@pytest.mark.parametrize("key, hint", [
    ("Pleural Efusion", "did you mean 'Pleural Effusion'"),
    ("edema", "did you mean 'Edema'"),
    ("Cardiomegally", "did you mean 'Cardiomegaly'"),
    ("study_id", ""),
])
def test_misspelt_observation_is_an_error_listing_all_names(key, hint):
    with pytest.raises(EvaluationInputError) as err:
        score_reports([PRED, PRED], [REF, REF], metrics=["rouge"], reference_labels=[{"Edema": 1}, {key: 1}])
    msg = str(err.value)
    assert "reference_labels[1]" in msg and repr(key) in msg and hint in msg
    assert all(o in msg for o in CHEXPERT_14)
    # the same key on Record-like references' own labels
    refs = [{**REF, "labels": {"Edema": 1}}, {**REF, "labels": {key: 0}}]
    with pytest.raises(EvaluationInputError, match=r"labels of references\[1\]"):
        score_reports([PRED, PRED], refs, metrics=["rouge"])
    # and in a DataFrame column
    with pytest.raises(EvaluationInputError, match="DataFrame column"):
        score_reports([PRED], [REF], metrics=["rouge"], reference_labels=pd.DataFrame({key: [1.0]}))


@pytest.mark.parametrize("value", [2, -2, 0.5, float("inf"), "yes", "positive", True, [1], {"v": 1}])
def test_label_values_outside_the_chexpert_set_are_errors(value):
    with pytest.raises(EvaluationInputError, match=r"reference_labels\[0\]: 'Edema' has value"):
        score_reports([PRED], [REF], metrics=["rouge"], reference_labels=[{"Edema": value}])


def test_label_forms_that_are_accepted():
    labels = [{"Edema": 1.0, "Pneumonia": "-1.0", "Fracture": float("nan")},  # multi
              {"Edema": "", "Atelectasis": None, "No Finding": "1"},          # no_finding
              {"Cardiomegaly": np.int64(-1), "Pleural Effusion": np.float32(0)}]  # single
    s = score_reports([PRED] * 3, [REF] * 3, metrics=["rouge"], reference_labels=labels)
    assert s.strata.tolist() == ["multi", "no_finding", "single"]
    frame = pd.DataFrame(labels)
    s2 = score_reports([PRED] * 3, [REF] * 3, metrics=["rouge"], reference_labels=frame)
    assert s2.strata.tolist() == ["multi", "no_finding", "single"]
    assert normalize_labels(frame) == [{"Edema": 1, "Pneumonia": -1}, {"No Finding": 1},
                                       {"Cardiomegaly": -1, "Pleural Effusion": 0}]


@pytest.mark.parametrize("labels, match", [
    ({"Edema": 1}, "one label mapping per sample"),
    ("Edema", "one label mapping per sample"),
    ([None], r"\[0\] is None"),
    ([{"Edema": 1}, "Edema"], r"\[1\] is str"),
    ([{"Edema": 1}], "1 reference_labels for 2 samples"),
])
def test_label_containers(labels, match):
    with pytest.raises(EvaluationInputError, match=match):
        score_reports([PRED, PRED], [REF, REF], metrics=["rouge"], reference_labels=labels)


def test_clinical_functions_share_the_label_checks():
    with pytest.raises(EvaluationInputError, match="Pleural Efusion"):
        strata_from_labels([{"Pleural Efusion": 1}])   # used to be dropped silently
    with pytest.raises(EvaluationInputError, match="has value 3"):
        label_matrix([{"Edema": 3}])
    with pytest.raises(EvaluationInputError, match="unknown observation 'Edemaa'"):
        clinical_results([{}], [{"Edemaa": 1}], "labeler")
    with pytest.raises(EvaluationInputError, match=r"settings\['clinical'\]\.uncertain = 'maybe'"):
        score_reports([PRED], [REF], metrics=["rouge"], settings={"clinical": {"uncertain": "maybe"}})


@pytest.mark.parametrize("settings, match", [
    ({"nope": {}}, "unknown metric group 'nope'"),
    ({"rouge": {}}, r"settings\['rouge'\]: metric group 'rouge' has no settings"),
    ({"bertscore": {"bertscore_model": "x"}}, r"settings\['bertscore'\]: unknown field\(s\) \['bertscore_model'\]; "
                                              r"BertScoreSettings has \['enabled', 'model', 'batch_size', 'device'\]"),
    ({"clinical": "labeler"}, r"settings\['clinical'\] is str; allowed: a ClinicalSettings or a mapping"),
    ({"clinical": {"backend": "chexpert"}}, r"settings\['clinical'\]\.backend = 'chexpert'; allowed: one of"),
    (["clinical"], "settings must map metric group names"),
])
def test_group_settings_the_suite_cannot_use_are_refused_before_scoring(settings, match):
    """``score_reports(settings=...)``: each group's settings object or a mapping of its fields, checked by the
    group's own dataclass (its fields and their choices) before any metric runs."""
    with pytest.raises(EvaluationInputError, match=match):
        score_reports([PRED], [REF], metrics=["rouge"], settings=settings)
    from sdrlib.metrics.groups.clinical import ClinicalSettings

    as_object = score_reports([PRED], [REF], metrics=["clinical"], settings={"clinical": ClinicalSettings("labeler")})
    as_mapping = score_reports([PRED], [REF], metrics=["clinical"], settings={"clinical": {"backend": "labeler"}})
    assert as_object.to_frame().equals(as_mapping.to_frame())


def _utf8(s: str) -> bytes:
    """UTF-8 bytes of any drawn text (hypothesis draws lone surrogates, which strict UTF-8 refuses)."""
    return s.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- metrics: properties
_text = st.one_of(st.none(), st.text(max_size=40), st.text(max_size=40).map(_utf8), st.binary(max_size=12),
                  st.just(float("nan")), st.integers(), st.sampled_from([PRED, "FINDINGS: x IMPRESSION: y"]))
_item = st.one_of(_text, st.fixed_dictionaries({}, optional={"findings": _text, "impression": _text}),
                  st.fixed_dictionaries({"findings": st.text(max_size=40), "impression": st.text(max_size=40)}))


_pairs = st.integers(0, 4).flatmap(lambda n: st.tuples(st.lists(_item, min_size=n, max_size=n),
                                                        st.lists(_item, min_size=n, max_size=n)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=_pairs, fmt=st.sampled_from(["template", "report"]))
def test_property_evaluate_reports_values_in_range_or_sdr_error(pair, fmt):
    preds, refs = pair
    try:
        df = evaluate_reports(preds, refs, metrics=CHEAP, prediction_format=fmt, reference_labels=[{}] * len(refs))
    except SDRError:
        event("refused with an SDRError")
        return
    event("scored")
    vals = df.loc[df.level.isin(["sample", "corpus"]), "value"].to_numpy(np.float64)
    assert len(vals) > 0
    finite = vals[np.isfinite(vals)]
    assert np.all(np.isnan(vals) | np.isfinite(vals))
    assert finite.min(initial=0.0) >= 0.0 and finite.max(initial=0.0) <= 1.0 + 1e-9
    issues = df[df.level == "issue"]
    assert (issues["value"].dropna() >= 0).all()


_valid_pairs = st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(st.one_of(st.none(), st.text(max_size=60), st.builds(build_template, st.just("x"), st.just("y"))),
             min_size=n, max_size=n),
    st.lists(st.fixed_dictionaries({"findings": st.text(max_size=60), "impression": st.text(max_size=60)}),
             min_size=n, max_size=n)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=_valid_pairs, fmt=st.sampled_from(["template", "report"]))
def test_property_arbitrary_text_is_always_scored_in_range(pair, fmt):
    """Any unicode text (or None) in the accepted shapes is scored: never an error, values in [0, 1] or NaN."""
    preds, refs = pair
    df = evaluate_reports(preds, refs, metrics=CHEAP, prediction_format=fmt, reference_labels=[{}] * len(refs))
    vals = df.loc[df.level.isin(["sample", "corpus"]), "value"].to_numpy(np.float64)
    finite = vals[np.isfinite(vals)]
    assert len(vals) > 0 and finite.min(initial=0.0) >= 0.0 and finite.max(initial=0.0) <= 1.0 + 1e-9
    # NaN exactly where the reference section is empty (undefined sample)
    s = df[(df.level == "sample") & (df.metric == "rouge1") & (df.section == "findings")]
    undefined = [not r["findings"].strip() for r in refs]
    assert s["value"].isna().tolist() == undefined


_key = st.one_of(st.sampled_from(CHEXPERT_14), st.text(max_size=12))
_val = st.one_of(st.sampled_from([1, 0, -1, 1.0, 0.0, -1.0, "1.0", "-1", "", None, float("nan")]),
                 st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=4), st.booleans())


@settings(max_examples=200, deadline=None)
@given(ref=st.lists(st.dictionaries(_key, _val, max_size=5), min_size=1, max_size=5),
       pred=st.lists(st.dictionaries(st.sampled_from(CHEXPERT_14), st.sampled_from([1, 0, -1]), max_size=5),
                     min_size=1, max_size=5),
       uncertain=st.sampled_from(["positive", "negative"]))
def test_property_clinical_labels_in_range_or_sdr_error(ref, pred, uncertain):
    pred = (pred * len(ref))[:len(ref)]
    try:
        strata = strata_from_labels(ref, uncertain=uncertain)
        results = clinical_results(pred, ref, "labeler", uncertain=uncertain)
    except SDRError as e:
        assert isinstance(e, ValueError)
        event("refused with an SDRError")
        return
    event("scored")
    assert set(strata) <= {"no_finding", "single", "multi"} and len(strata) == len(ref)
    for r in results:
        assert 0.0 <= r.corpus <= 1.0, r.name
        if r.sample is not None:
            assert np.all((r.sample >= 0) & (r.sample <= 1))
