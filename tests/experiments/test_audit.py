"""The reward audit (issue 27): cases built from real-looking references, skipped cases counted, orderings."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from audit_helpers import synth_record
from sdrlib.clinical import label_report
from sdrlib.data import stratum
from sdrlib.experiments import audit
from sdrlib.vocabulary import PATHOLOGIES


_record = synth_record


@pytest.fixture(scope="module")
def corpus():
    train = [_record("train", i) for i in range(150)]
    test = [_record("test", i) for i in range(40)]
    return train, test


def _positives(text: str) -> set[str]:
    return {p for p, v in label_report(text).items() if v == 1 and p in PATHOLOGIES}


def test_modal_normal_report_is_a_normal_training_report(corpus):
    train, _ = corpus
    f, i = audit.modal_normal_report(train)
    assert not _positives(f"{f} {i}") and any(r.findings == f for r in train)
    with pytest.raises(ValueError, match="no normal"):
        audit.modal_normal_report([r for r in train if stratum(r.labels) != "no_finding"])


def test_cases_edit_what_they_say(corpus):
    train, test = corpus
    modal, bank = audit.modal_normal_report(train), audit.sentence_bank(train)
    seen = set()
    for r in test:
        cases = audit.build_cases(r, modal=modal, bank=bank)
        assert set(cases) == set(audit.CASES) and cases["reference"] == (r.findings, r.impression)
        ref = _positives(f"{r.findings} {r.impression}")
        text = {c: f"{v[0]} {v[1]}" for c, v in cases.items() if not isinstance(v, str)}
        if not ref:  # a normal report has no finding to omit, contradict, hedge or reword: skipped with a reason
            for c in ("omitted", "contradicted", "hedged"):
                assert isinstance(cases[c], str) and "no positive finding" in cases[c]
            assert cases["paraphrase"] == "no finding sentence to reword"
            seen.add("normal")
            continue
        if "omitted" in text:
            assert len(_positives(text["omitted"])) == len(ref) - 1 and _positives(text["omitted"]) < ref
            seen.add("omitted")
        if "contradicted" in text:
            gone = ref - _positives(text["contradicted"])
            assert len(gone) == 1 and label_report(text["contradicted"])[gone.pop()] == 0
            seen.add("contradicted")
        if "hedged" in text:
            assert not _positives(text["hedged"]) and all(label_report(text["hedged"]).get(p) == -1 for p in ref)
            seen.add("hedged")
        if "hallucinated" in text:
            assert len(_positives(text["hallucinated"]) - ref) == 1
        if "paraphrase" in text:
            p = cases["paraphrase"]
            assert p[1] == r.impression and p[0] != r.findings and _positives(p[0]) == _positives(r.findings)
            seen.add("paraphrase")
        if "another_reader" in text:
            assert _positives(text["another_reader"]) == ref
        if "wrong_side" in text:  # same labels, a side word swapped
            w = cases["wrong_side"]
            assert _positives(text["wrong_side"]) == ref and w != cases["reference"]
            assert len(audit.split_sentences(w[0])) == len(audit.split_sentences(r.findings))
            seen.add("wrong_side")
        if "pertinent_negative_added" in text:  # one true negative on the other side, nothing else changed
            f, i = cases["pertinent_negative_added"]
            added = [s for s in audit.split_sentences(f) if s not in audit.split_sentences(r.findings)]
            assert i == r.impression and len(added) == 1 and audit.denied_side(added[0]) in ("right", "left")
            assert _positives(text["pertinent_negative_added"]) == ref
            seen.add("pertinent_negative_added")
        if "hedged_vs_negated" in text:  # the finding the contradiction negates, uncertain instead
            gone = ref - _positives(text["hedged_vs_negated"])
            assert len(gone) == 1 and label_report(text["hedged_vs_negated"])[gone.pop()] == -1
            if "contradicted" in text:
                assert ref - _positives(text["contradicted"]) == ref - _positives(text["hedged_vs_negated"])
            seen.add("hedged_vs_negated")
    assert {"normal", "omitted", "contradicted", "hedged", "paraphrase", "wrong_side", "pertinent_negative_added",
            "hedged_vs_negated"} <= seen


def test_mirror_swaps_sides_and_the_middle_lobe_with_the_lingula():
    assert audit._mirror("Right middle lobe opacity. No left effusion.") == "Lingula opacity. No right effusion."
    assert audit._mirror("Consolidation in the lingula.") == "Consolidation in the right middle lobe."
    assert audit._mirror("Small left pleural effusion.") == "Small right pleural effusion."


def test_new_orderings_name_cases_that_exist():
    for hi, lo, strata, _ in audit.EXPECTED_ORDERINGS:
        assert hi in audit.CASES and lo in audit.CASES and strata
    assert set(audit.CASE_LABELS) == set(audit.CASES)
    new = {(hi, lo) for hi, lo, _, _ in audit.EXPECTED_ORDERINGS}
    assert {("paraphrase", "wrong_side"), ("pertinent_negative_added", "omitted"),
            ("hedged_vs_negated", "contradicted")} <= new


def test_skipped_cases_are_counted_never_scored(corpus):
    train, test = corpus
    res = audit.reward_audit(["sft", "fmt", "exact"], test, train, None, SimpleNamespace(
        lambda_fmt=1.0, lambda_sem=1.0, max_chars=4000), scorer_for=lambda n: __import__(
            "sdrlib.rewards", fromlist=["RewardScorer"]).RewardScorer(n))
    assert set(res.table["reward"]) == {"fmt", "exact"}  # sft scores nothing
    t = res.table
    n_refs = {s: sum(stratum(r.labels) == s for r in test) for s in ("no_finding", "single", "multi")}
    n_refs["all"] = len(test)
    for _, row in t.iterrows():
        assert row["n"] + row["n_skipped"] == n_refs[row["stratum"]]
    normal = t[(t["stratum"] == "no_finding") & (t["case"].isin(["omitted", "contradicted", "hedged"]))]
    assert (normal["n"] == 0).all() and (normal["n_skipped"] == n_refs["no_finding"]).all()
    assert normal["mean"].isna().all()  # not scored as something else
    assert res.skipped[("omitted", "no positive finding to edit")] == n_refs["no_finding"]
    scored = res.scores.groupby("case").size()
    assert scored["reference"] == 2 * len(test) and scored.get("omitted", 0) == 2 * (len(test) - res.skipped_total("omitted"))
    # an empty Impression fails the template: every reward pays 0
    assert (res.scores.loc[res.scores["case"] == "empty_impression", "total"] == 0).all()
    assert (res.scores.loc[res.scores["case"] == "reference", "total"] == np.where(
        res.scores.loc[res.scores["case"] == "reference", "reward"] == "fmt", 1.0, 3.0)).all()


def test_broken_orderings_are_paired_and_marked():
    scores = pd.DataFrame([
        {"reward": "r", "label": "R", "study_id": s, "stratum": "single", "case": c, "total": v}
        for s, vals in (("a", {"paraphrase": 2.0, "omitted": 2.5, "hallucinated": 2.4}),
                        ("b", {"paraphrase": 2.0, "omitted": 2.2, "hallucinated": 2.6}),
                        ("c", {"paraphrase": 2.0}))
        for c, v in vals.items()])
    bo = audit.broken_orderings(scores).set_index("expected")
    assert bo.loc["paraphrase > omitted", "broken"] and bo.loc["paraphrase > omitted", "n"] == 2
    assert bo.loc["paraphrase > omitted", "diff"] == pytest.approx(-0.35)
    row = bo.loc["hallucinated > omitted"]
    assert not row["broken"] and row["share_broken"] == 0.5


def test_expected_reward_view_counts_silent_samples(corpus):
    from sdrlib.reports import build_template
    from sdrlib.rewards import RewardScorer

    train, test = corpus
    modal = audit.modal_normal_report(train)
    ab = [r for r in test if stratum(r.labels) != "no_finding"][:4]
    samples = {r.study_id: [build_template(r.findings, r.impression), "no template"] for r in ab}
    ex = audit.expected_reward_view(["fmt"], test, samples, modal, scorer_for=RewardScorer)
    row = ex.iloc[0]
    assert (row["n_refs"], row["n_samples"], row["sft_mean"], row["modal_normal_mean"]) == (4, 8, 0.5, 1.0)
    assert row["pays_for_silence"] and row["n_stating"] == 4 and row["n_silent"] == 4
    assert row["silence_margin"] == pytest.approx(1.0)  # the stating samples are the references, the silent ones fail


def test_recall_bank_distances_are_the_reward_distance_through_the_engine():
    """Selection with the recall distance is an ordinary engine call: the (K, N) matrix equals the reference per
    pair (candidate = generated side, bank report = reference), an empty bank report gives the empty value."""
    from sdrlib.clinical import sentence_presence
    from sdrlib.distances import set_distance
    from sdrlib.distances.engine import pairwise_distances

    rng = np.random.default_rng(0)
    bank_texts = [["No pleural effusion.", "The heart is normal."], ["Small left pleural effusion."],
                  [], ["Mild cardiomegaly.", "No pneumothorax.", "Lungs are clear."]]
    cand = ["Mild cardiomegaly.", "There is no pleural effusion."]
    vec = {s: rng.normal(size=8) for s in {*cand, *(s for b in bank_texts for s in b)}}
    B = [np.array([vec[s] for s in b]).reshape(len(b), 8) for b in bank_texts]
    PB = [sentence_presence(b) for b in bank_texts]
    A, PA = np.array([vec[s] for s in cand]), sentence_presence(cand)
    got = pairwise_distances([A, A[:1]], B, "chamfer_recall_0.8", presence=([PA, PA[:1]], PB), empty_value=1.0)
    want = [[set_distance(a, b, "chamfer_recall_0.8", presence=(pa, pb)) if len(b) else 1.0 for b, pb in zip(B, PB)]
            for a, pa in ((A, PA), (A[:1], PA[:1]))]
    assert np.allclose(got, want, atol=1e-12) and got[0, 2] == 1.0
    # asymmetric: the generated side is the first argument
    assert not np.isclose(set_distance(A, B[3], "chamfer_recall_0.8", presence=(PA, PB[3])),
                          set_distance(B[3], A, "chamfer_recall_0.8", presence=(PB[3], PA)))


def test_paired_case_means_average_over_the_same_references():
    scores = pd.DataFrame([
        {"reward": "r", "label": "R", "study_id": s, "stratum": st, "case": c, "total": v}
        for s, st, vals in (("a", "single", {"reference": 3.0, "paraphrase": 2.0}),
                            ("b", "single", {"reference": 3.0, "paraphrase": 1.0}),
                            ("n", "no_finding", {"reference": 1.0}))  # normal: no paraphrase
        for c, v in vals.items()])
    res = audit.AuditResult(table=pd.DataFrame(), scores=scores)
    t, n = audit.paired_case_means(res, cases=("reference", "paraphrase"))
    assert n == 2  # "n" has no paraphrase: left out of every column
    assert t.loc["R", "reference"] == pytest.approx(3.0)  # not (3 + 3 + 1) / 3
    assert t.loc["R", "paraphrase"] == pytest.approx(1.5)
