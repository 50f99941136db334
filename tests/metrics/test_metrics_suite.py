"""End-to-end tests of sdrlib.metrics.evaluate_reports / score_reports, networking refused.

One fixed set of (prediction, reference) pairs with hand-checkable values:
identical texts reach each metric's maximum, disjoint texts its minimum (or,
for BERTScore without baseline rescaling, a clearly lower value), and every
kind of bad input is counted. BERTScore runs on the small local
all-MiniLM-L6-v2 backbone.
"""

from __future__ import annotations

import socket

import numpy as np
import pandas as pd
import pytest

from sdrlib.metrics import EvaluationInputError, compare_frames, compare_systems, score_reports
from sdrlib.reports import build_template

F_SAME = "The heart is enlarged. There is a small left pleural effusion."
I_SAME = "Cardiomegaly with small left pleural effusion."
F_REF2 = "Large right pneumothorax. No pleural effusion."
I_REF2 = "Right pneumothorax."
NONSENSE = "Quartz xylophones hum beneath violet zeppelins"  # no token shared with F_REF2

PREDS = [
    build_template(F_SAME, I_SAME),                              # 0 identical
    build_template(NONSENSE, "Zebra."),                          # 1 disjoint
    "FINDINGS: no template here",                                # 2 invalid template
    {"findings": "Lungs are clear."},                            # 3 mapping without impression
    {"findings": "Épanchement pleural gauche.", "impression": "Cardiomégalie."},  # 4 non-ASCII
    None,                                                        # 5 failed generation
    {"findings": F_REF2, "impression": "Whatever."},             # 6 reference impression missing
]
REFS = [
    {"findings": F_SAME, "impression": I_SAME},
    {"findings": F_REF2, "impression": I_REF2},
    {"findings": "Lungs are clear.", "impression": "No acute disease."},
    {"findings": "Lungs are clear.", "impression": "Normal chest."},
    {"findings": "Small left pleural effusion.", "impression": "Cardiomegaly."},
    {"findings": "Mild pulmonary edema.", "impression": "Edema."},
    {"findings": F_REF2, "impression": ""},
]


@pytest.fixture(scope="module")
def offline():
    with pytest.MonkeyPatch.context() as mp:
        def refuse(*args, **kwargs):
            raise OSError("network access refused in tests")

        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("HF_DATASETS_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def scores(offline):
    return score_reports(PREDS, REFS, sections=("findings", "impression", "report"),
                         settings={"bertscore": {"model": "all-MiniLM-L6-v2"},
                                   "comet": {"model": "Unbabel/wmt22-comet-da"}})


def sample_values(scores, section, metric):
    return scores.result(section, metric).sample


def test_identical_pair_reaches_the_maximum(scores):
    for m in ("bleu_s1", "bleu_s2", "bleu_s3", "bleu_s4", "rouge1", "rouge2", "rougeL", "chrf++"):
        assert sample_values(scores, "findings", m)[0] == pytest.approx(1.0), m
    meteor = [r for r in scores.results["findings"] if r.name.startswith("meteor")][0]
    n_tok = 13  # "the heart is enlarged . there is a small left pleural effusion ."
    assert meteor.sample[0] == pytest.approx(1 - 0.5 * (1 / n_tok) ** 3)
    assert sample_values(scores, "findings", "bertscore_f1@all-MiniLM-L6-v2/L6")[0] == pytest.approx(1.0, abs=1e-5)
    assert sample_values(scores, "findings", "clinical_f1_sample@labeler")[0] == 1.0


def test_disjoint_pair_is_near_the_minimum(scores):
    for m in ("rouge1", "rouge2", "rougeL"):
        assert sample_values(scores, "findings", m)[1] == 0.0, m
    for m in ("bleu_s1", "bleu_s4"):
        assert sample_values(scores, "findings", m)[1] == 0.0, m
    assert scores.result("findings", "bleu_c4").value_for(np.eye(len(PREDS))[1])[0] < 0.1
    assert sample_values(scores, "findings", "chrf++")[1] < 0.15
    meteor = [r for r in scores.results["findings"] if r.name.startswith("meteor")][0]
    assert meteor.sample[1] == 0.0
    bs = sample_values(scores, "findings", "bertscore_f1@all-MiniLM-L6-v2/L6")
    assert bs[1] < bs[0] - 0.3  # no baseline rescaling: the floor is not 0
    assert sample_values(scores, "findings", "clinical_f1_sample@labeler")[1] == 0.0


def test_bertscore_equals_bert_score_directly(scores):
    from bert_score import BERTScorer

    from sdrlib.embedding import resolve_encoder_path

    path = str(resolve_encoder_path("all-MiniLM-L6-v2"))
    _, _, f = BERTScorer(model_type=path, num_layers=6, lang="en").score([NONSENSE], [F_REF2])
    got = sample_values(scores, "findings", "bertscore_f1@all-MiniLM-L6-v2/L6")[1]
    assert got == pytest.approx(float(f[0]), abs=1e-5)


def test_bad_input_is_scored_and_counted(scores):
    counts = scores.issue_counts()
    assert counts["invalid_template"] == 1
    assert counts["missing_prediction_section"] == 1          # sample 3 impression
    assert counts["missing_reference_section"] == 1           # sample 6 impression
    # empty: sample 2 (x3 sections), 3 (impression), 5 (x3 sections)
    assert counts["empty_prediction"] == 7
    assert counts["non_ascii_prediction"] == 3                # sample 4, all three sections
    assert counts["non_ascii_reference"] == 0
    for m in ("bleu_s1", "rouge1", "chrf++", "bertscore_f1@all-MiniLM-L6-v2/L6"):
        v = sample_values(scores, "findings", m)
        assert v[2] == 0.0 and v[5] == 0.0, m                 # empty prediction: defined, minimal
        assert np.isnan(sample_values(scores, "impression", m)[6]), m   # undefined reference
    # "Cardiomégalie." vs "Cardiomegaly.": rouge-score splits at the non-ASCII letter, chrF++ does not
    assert sample_values(scores, "impression", "rouge1")[4] == 0.0
    assert sample_values(scores, "impression", "chrf++")[4] > 0.3


def test_tidy_frame_layout(scores):
    df = scores.to_frame()
    assert list(df.columns) == ["sample_id", "section", "metric", "value", "backend", "level", "stratum", "n"]
    assert set(df.level) == {"sample", "corpus", "issue"}
    samp = df[(df.level == "sample") & (df.metric == "rouge1") & (df.section == "impression")]
    assert len(samp) == len(PREDS) and samp.value.isna().sum() == 1
    corp = df[(df.level == "corpus") & (df.metric == "rouge1") & (df.stratum == "all")]
    assert len(corp) == 3 and (corp[corp.section == "impression"].n == 6).all()
    issues = df[df.level == "issue"]
    assert issues[issues.metric == "issue/invalid_template"].value.sum() == 1
    assert {"unavailable/comet", "unavailable/radgraph"} <= set(issues.metric)   # recorded, no crash
    assert df.attrs["issue_counts"]["empty_prediction"] == 7
    assert df.attrs["versions"]["sacrebleu"] != "absent"
    # every metric row names its backend; names carry backend where one exists
    assert df[df.level != "issue"].backend.str.len().min() > 0
    names = set(df.metric)
    assert "clinical_f1_macro14@labeler" in names and "clinical_f1[Edema]@labeler" in names
    assert {"bleu_c1", "bleu_c4", "clinical_f1_micro5@labeler"} <= names


def test_strata_and_per_observation(scores):
    assert set(scores.strata) <= {"no_finding", "single", "multi"}
    assert scores.strata[0] == "multi"        # cardiomegaly + effusion
    assert scores.strata[2] == "no_finding"   # clear lungs
    st = scores.strata_table()
    assert {"section", "metric", "all"} <= set(st.columns)
    row = st[(st.section == "findings") & (st.metric == "rouge1")].iloc[0]
    multi = scores.strata == "multi"
    want = np.nanmean(sample_values(scores, "findings", "rouge1")[multi])
    assert row["multi"] == pytest.approx(want)
    per = scores.per_observation()
    assert len(per) == 14 and "findings" in per.columns


def test_meteor_and_bertscore_labels(scores):
    names = {r.name for r in scores.results["findings"]}
    from sdrlib.metrics.wordnet import load_wordnet

    assert ("meteor" in names) == (load_wordnet() is not None)
    assert ("meteor_exact_stem" in names) == (load_wordnet() is None)
    forced = score_reports(PREDS[:2], REFS[:2], metrics=["meteor"], settings={"meteor": {"wordnet_dir": None}})
    assert [r.name for r in forced.results["findings"]] == ["meteor_exact_stem"]
    assert "meteor_wordnet" in forced.unavailable


def test_input_errors_are_clear(offline):
    with pytest.raises(EvaluationInputError, match="3 predictions but 2 references"):
        score_reports(["a", "b", "c"], REFS[:2], metrics=["rouge"])
    with pytest.raises(EvaluationInputError, match="no samples"):
        score_reports([], [], metrics=["rouge"])
    with pytest.raises(EvaluationInputError, match=r"predictions\[1\] is int"):
        score_reports([PREDS[0], 7], REFS[:2], metrics=["rouge"])
    with pytest.raises(EvaluationInputError, match="duplicate sample ids"):
        score_reports(PREDS[:2], REFS[:2], metrics=["rouge"], sample_ids=["x", "x"])
    with pytest.raises(EvaluationInputError, match="sections"):
        score_reports(PREDS[:2], REFS[:2], metrics=["rouge"], sections=("finding",))
    with pytest.raises(EvaluationInputError, match="unknown metric groups"):
        score_reports(PREDS[:2], REFS[:2], metrics=["bleurt"])
    with pytest.raises(EvaluationInputError, match=r"references\[0\]\['findings'\] is int"):
        score_reports(PREDS[:1], [{"findings": 3, "impression": "x"}], metrics=["rouge"])


def test_paired_comparison_backs_a_claim(offline):
    refs = [{"findings": f, "impression": i} for f, i in [
        ("The heart is enlarged.", "Cardiomegaly."), ("Lungs are clear.", "Normal."),
        ("Small left pleural effusion.", "Effusion."), ("Right pneumothorax.", "Pneumothorax."),
        ("Mild pulmonary edema.", "Edema."), ("No focal consolidation.", "No pneumonia."),
        ("Left lower lobe atelectasis.", "Atelectasis."), ("Normal heart size.", "No acute disease.")]]
    good = [build_template(r["findings"], r["impression"]) for r in refs]
    bad = [build_template("Nothing to report here at all.", "See prior.") for _ in refs]
    kw = dict(metrics=["bleu", "rouge", "chrf", "clinical"], sample_ids=[f"s{i}" for i in range(8)])
    a, b = score_reports(good, refs, **kw), score_reports(bad, refs, **kw)
    cmp = compare_systems(a, b, n_resamples=400, seed=0)
    assert len(cmp) == sum(len(v) for v in a.results.values())
    main = cmp[cmp.metric.isin(["bleu_c4", "rouge1", "chrf++", "clinical_f1_sample@labeler"])
               & (cmp.section == "findings")]  # impressions have too few 4-grams for a stable BLEU-4
    assert (main["diff"] > 0).all() and (main["ci_low"] > 0).all() and (main["p_value"] < 0.01).all()
    same = compare_systems(a, a, n_resamples=50, seed=0)
    assert (same["diff"] == 0).all() and (same["p_value"] == 1).all()
    # the same comparison from tidy tables (e.g. read back from CSV) agrees on sample metrics
    cf = compare_frames(a.to_frame(), b.to_frame(), n_resamples=400, seed=0)
    m = cf.merge(cmp, on=["section", "metric"], suffixes=("_f", "_s"))
    assert len(m) == len(cf) > 0
    m = m[m.metric != "chrf++"]  # frames can only average sentence chrF++; systems use corpus chrF++
    np.testing.assert_allclose(m["diff_f"], m["diff_s"])
    np.testing.assert_allclose(m["ci_low_f"], m["ci_low_s"])
    with pytest.raises(EvaluationInputError, match="same sample_ids"):
        compare_systems(a, score_reports(good[:7], refs[:7], metrics=["rouge"]))


def test_write_results(sdr_root, offline):
    from sdrlib.config import load_profile
    from sdrlib.metrics import write_results

    cfg = load_profile("smoke")
    s = score_reports(PREDS[:3], REFS[:3], metrics=["bleu", "rouge", "clinical"])
    paths = write_results(s, "metrics_test", cfg)
    names = {p.name for p in paths}
    assert {"metrics_test.csv", "metrics_test_summary.md", "metrics_test_issues.csv",
            "metrics_test_strata.csv"} <= names
    back = pd.read_csv(cfg.results_dir / "metrics_test.csv")
    assert set(back.level) == {"sample", "corpus", "issue"}
    assert (cfg.results_dir / "metrics_test.meta.json").read_text().count("sacrebleu") >= 1


def test_ground_truth_labels_on_references_drive_the_strata(offline):
    from dataclasses import dataclass

    @dataclass
    class Rec:  # the fields of sdrlib.data.Record that evaluation reads
        study_id: str
        findings: str
        impression: str
        labels: dict | None

    refs = [Rec("a", "Lungs are clear.", "Normal.", {"Edema": 1, "Pneumonia": -1}),
            Rec("b", "Lungs are clear.", "Normal.", {"No Finding": 1})]
    s = score_reports([build_template("Lungs are clear.", "Normal.")] * 2, refs, metrics=["rouge"])
    assert s.sample_ids == ["a", "b"]
    assert s.strata.tolist() == ["multi", "no_finding"]     # from labels, not from the (normal) text
    assert s.versions["strata_source"] == "reference_labels"
    s2 = score_reports([build_template("Lungs are clear.", "Normal.")] * 2,
                       [{"findings": r.findings, "impression": r.impression} for r in refs], metrics=["clinical"])
    assert s2.strata.tolist() == ["no_finding", "no_finding"]
    assert s2.versions["strata_source"] == "labeler(reference report)"
    s3 = score_reports([build_template("Lungs are clear.", "Normal.")] * 2,
                       [{"findings": "Edema.", "impression": "Edema."}] * 2, metrics=["rouge"])
    assert s3.strata.tolist() == ["single", "single"]  # strata even without clinical metrics


def test_profile_settings_reach_score_reports():
    from sdrlib.config import load_profile
    from sdrlib.metrics import metric_kwargs

    cfg = load_profile("smoke")
    kw = metric_kwargs(cfg)
    settings = kw["settings"]
    assert settings["bertscore"].model == "all-MiniLM-L6-v2" and settings["bertscore"].device == "cpu"
    assert settings["comet"].model == ""  # empty in the profile = COMET off
    assert settings["clinical"] is cfg.metrics.clinical and "metrics" not in kw  # every group scored
    off = metric_kwargs(load_profile("smoke", overrides={"metrics.bertscore.enabled": False}))
    assert "bertscore" not in off["metrics"] and "rouge" in off["metrics"]


# --------------------------------------------------------------------------- optional backends (glue only)
def _fake_module(name, **attrs):
    import importlib.machinery
    import types

    mod = types.ModuleType(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
    for k, v in attrs.items():
        setattr(mod, k, v)
    return mod


def test_official_chexbert_glue_keeps_its_labels_and_convention(monkeypatch, offline):
    """With f1chexbert present, its classification-mode labels (1/0/-1/'') feed the same F1 code."""
    import sys

    from sdrlib.metrics import clinical

    class FakeF1CheXbert:  # the part of f1chexbert 0.0.2's API we use
        target_names = ["Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity", "Lung Lesion", "Edema",
                        "Consolidation", "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion",
                        "Pleural Other", "Fracture", "Support Devices", "No Finding"]

        def __init__(self, device=None):
            pass

        def get_label(self, report, mode="rrg"):
            assert mode == "classification"
            v = [""] * 14
            if "edema" in report.lower():
                v[4] = -1 if "possible" in report.lower() else 1
            return v

    monkeypatch.setitem(sys.modules, "f1chexbert", _fake_module("f1chexbert", F1CheXbert=FakeF1CheXbert))
    monkeypatch.setattr(clinical, "chexbert_available", lambda: True)
    name, fn, detail = clinical.get_labeler("auto")
    assert name == "chexbert" and fn(["Possible edema.", "Clear."]) == [{"Edema": -1}, {}]
    s = score_reports([{"findings": "Edema.", "impression": "x"}],
                      [{"findings": "Possible edema.", "impression": "y"}], metrics=["clinical"])
    assert s.result("findings", "clinical_f1[Edema]@chexbert").corpus == 1.0   # uncertain counts as positive
    assert s.result("findings", "clinical_f1_macro14@chexbert").corpus == pytest.approx(1 / 14)


def test_chexbert_requested_but_absent_is_a_clear_error():
    from sdrlib.metrics.backends import BackendUnavailable, chexbert_available
    from sdrlib.metrics.clinical import get_labeler

    if chexbert_available():
        pytest.skip("official CheXbert is installed here")
    with pytest.raises(BackendUnavailable, match="f1chexbert"):
        get_labeler("chexbert")


def test_comet_glue(monkeypatch, tmp_path, offline):
    """COMET through a fake scorer (no checkpoint here). RadGraph is tested against the real package in
    tests/metrics/test_metrics_radgraph.py (the fake that stood here had the shape the old code expected)."""
    import sys

    class FakeComet:
        def predict(self, data, batch_size=32, gpus=0, progress_bar=False):
            return type("Out", (), {"scores": [1.0 if d["mt"] == d["ref"] else 0.2 for d in data]})()

    monkeypatch.setitem(sys.modules, "comet", _fake_module("comet", load_from_checkpoint=lambda p: FakeComet()))
    ckpt = tmp_path / "wmt22-comet-da" / "checkpoints" / "model.ckpt"
    ckpt.parent.mkdir(parents=True)
    ckpt.write_text("fake")
    preds = [{"findings": "Edema.", "impression": "Edema."}, {"findings": "Clear.", "impression": ""}]
    refs = [{"findings": "Edema.", "impression": "Edema."}, {"findings": "Effusion.", "impression": "Normal."}]
    s = score_reports(preds, refs, metrics=["comet"], settings={"comet": {"model": str(ckpt)}})
    assert s.unavailable == {}
    assert s.result("findings", "comet@wmt22-comet-da").sample.tolist() == [1.0, 0.2]
    assert s.result("impression", "comet@wmt22-comet-da").sample.tolist() == [1.0, 0.2]


# --------------------------------------------------------------------------- format mix-ups (issue 16, item 8)
_FMT_REF = {"findings": "The heart is enlarged. Small left pleural effusion.", "impression": "Cardiomegaly."}


def _rouge1_corpus(df: pd.DataFrame) -> list[float]:
    return df.query("level == 'corpus' and metric == 'rouge1' and stratum == 'all'")["value"].tolist()


def test_templates_read_as_reports_warn_and_name_the_template_format():
    """The reverse mix-up: templated outputs under prediction_format="report" score the tags as text."""
    import warnings

    from sdrlib.metrics import evaluate_reports
    from sdrlib.metrics.suite import TemplateFormatWarning, TemplateTagsInReportWarning

    templated = build_template(_FMT_REF["findings"], _FMT_REF["impression"])
    assert issubclass(TemplateTagsInReportWarning, TemplateFormatWarning)
    with pytest.warns(TemplateTagsInReportWarning, match=r'prediction_format="template"') as rec:
        as_report = evaluate_reports([templated, templated.encode(), "FINDINGS: x. IMPRESSION: y."],
                                     [_FMT_REF] * 3, metrics=["rouge"], prediction_format="report")
    assert "2 of 3 predictions (67%)" in str(rec[0].message)
    assert [w.filename for w in rec] == [__file__]  # pointed at the caller's line
    as_template = evaluate_reports([templated] * 3, [_FMT_REF] * 3, metrics=["rouge"])
    # what the warning is about: the Impression read from a template-as-report is empty, the template reads it
    assert _rouge1_corpus(as_report)[1] < 0.5 and _rouge1_corpus(as_template) == [1.0, 1.0]
    # not "most": half, free text, and mappings stay silent
    with warnings.catch_warnings():
        warnings.simplefilter("error", TemplateFormatWarning)
        evaluate_reports([templated, "FINDINGS: x. IMPRESSION: y."], [_FMT_REF] * 2, metrics=["rouge"],
                         prediction_format="report")
        evaluate_reports([{"findings": "a.", "impression": "b."}] * 2, [_FMT_REF] * 2, metrics=["rouge"],
                         prediction_format="report")


def test_format_warnings_become_errors_on_request():
    """Warned, not raised, by default (a policy that never learnt the template scores 0 honestly);
    one filter turns both mix-ups into an exception for callers that want a hard stop."""
    import warnings

    from sdrlib.metrics import evaluate_reports
    from sdrlib.metrics.suite import TemplateFormatWarning

    plain = "FINDINGS: The heart is enlarged. IMPRESSION: Cardiomegaly."
    templated = build_template(_FMT_REF["findings"], _FMT_REF["impression"])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=TemplateFormatWarning)
        with pytest.raises(TemplateFormatWarning, match='prediction_format="report"'):
            evaluate_reports([plain, plain], [_FMT_REF] * 2, metrics=["rouge"])
        with pytest.raises(TemplateFormatWarning, match='prediction_format="template"'):
            evaluate_reports([templated, templated], [_FMT_REF] * 2, metrics=["rouge"], prediction_format="report")
