"""The recall-weighted negation-aware Chamfer reward (``chamfer_recall_<alpha>``, ours; issue 27)."""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.clinical import sentence_presence
from sdrlib.config import ConfigError, load_profile
from sdrlib.reports import build_template
from sdrlib.rewards import RewardError, RewardScorer, parse_reward, trl_reward_functions
from sdrlib.distances import set_distance
from sdrlib.distances.engine import paired_distances
from sdrlib.distances.recall import recall_terms

REF = ["The heart size is normal.", "There is a small left pleural effusion.", "No pneumothorax is seen.",
       "The lungs are otherwise clear."]
EDITS = {
    "identical": list(REF),
    "reordered": [REF[i] for i in (2, 0, 3, 1)],
    "paraphrase": ["Heart size is within normal limits.", "A small effusion is present on the left.",
                   "There is no pneumothorax.", "Otherwise, the lungs are clear."],
    "omitted": [REF[0], REF[2], REF[3]],
    "contradicted": [REF[0], "There is no pleural effusion.", REF[2], REF[3]],
    "hallucinated": REF + ["There is a large right upper lobe consolidation."],
}


@pytest.fixture(scope="module")
def emb(tmp_path_factory):
    from sdrlib.embedding import SentenceEmbedder

    return SentenceEmbedder("all-MiniLM-L6-v2", cache_dir=tmp_path_factory.mktemp("emb"))


def _findings_distance(emb, name):
    sc = RewardScorer(name, emb)
    comps = [build_template(" ".join(v), "Small left pleural effusion.") for v in EDITS.values()]
    b = sc.score(comps, [" ".join(REF)] * len(EDITS), ["Small left pleural effusion."] * len(EDITS))
    return dict(zip(EDITS, 1.0 - b.sem_findings))


def test_name_grammar_label_and_tags():
    spec = parse_reward("chamfer_recall_0.8")
    assert (spec.method, spec.opts["alpha"], spec.label) == ("chamfer_recall", 0.8, "R_Cham_rec0.8")
    assert spec.distance == "chamfer_recall_0.8" and {"ours", "negation_aware"} <= spec.tags and spec.trains
    assert parse_reward("chamfer_recall_1_bal2").distance == "chamfer_recall_1"  # the weight is not the distance
    assert parse_reward("chamfer_recall_1").opts["alpha"] == 1.0


@pytest.mark.parametrize("bad", ["chamfer_recall", "chamfer_recall_", "chamfer_recall_x", "chamfer_recall_0.3",
                                 "chamfer_recall_1.5", "chamfer_recall_0.8_neg", "chamfer_", "chamfer_recal"])
def test_unknown_or_half_specified_names_fail_naming_the_valid_names(bad):
    with pytest.raises(RewardError, match=r"chamfer_recall_<alpha>|alpha must be in"):
        parse_reward(bad)
    with pytest.raises(RewardError):  # the scorer a run builds, and the TRL functions, fail the same way
        RewardScorer(bad)
    with pytest.raises(RewardError):
        trl_reward_functions(bad)


def test_from_profile_refuses_a_half_specified_name_and_builds_a_valid_one():
    cfg = load_profile("smoke")
    with pytest.raises(RewardError, match="chamfer_recall_<alpha>"):
        RewardScorer.from_profile("chamfer_recall", None, cfg.grpo)
    sc = RewardScorer.from_profile("chamfer_recall_0.8", None, cfg.grpo)
    assert sc.method == "chamfer_recall" and sc.lambda_fmt == cfg.grpo.lambda_fmt
    with pytest.raises(ConfigError, match="chamfer_recall"):
        load_profile("smoke", {"grpo.rewards": ["fmt", "chamfer", "chamfer_recall"]})
    ok = load_profile("smoke", {"grpo.rewards": ["fmt", "chamfer", "chamfer_recall_0.8"]})
    assert ok.grpo.rewards[-1] == "chamfer_recall_0.8"


def test_floors_charge_a_missed_and_a_hallucinated_finding():
    # orthogonal embeddings are not needed: identical vectors isolate the floors
    A = np.ones((1, 3)) / np.sqrt(3)
    B = np.ones((2, 3)) / np.sqrt(3)
    PA = sentence_presence(["No acute process."])
    PB = sentence_presence(["No acute process.", "Small left pleural effusion."])
    d_gen, d_ref = recall_terms(A, B, PA, PB)
    assert np.allclose(d_ref, [0.0, 1.0]) and np.allclose(d_gen, [0.0])
    name = "chamfer_recall_0.8"
    assert set_distance(A, B, name, presence=(PA, PB)) == pytest.approx(0.8 * 0.5)
    assert set_distance(B, A, name, presence=(PB, PA)) == pytest.approx(0.2 * 0.5)  # the same sentence, hallucinated
    # the engine (the reward's path) agrees, and scores an empty generated set as the reward does (D = 1)
    got = paired_distances([A, B, A[:0]], [B, A, B], name, presence=([PA, PB, PA[:0]], [PB, PA, PB]), empty_value=1.0)
    assert np.allclose(got, [0.4, 0.1, 1.0])


def test_edit_orderings_clinicians_expect(emb):
    d = _findings_distance(emb, "chamfer_recall_0.8")
    assert d["identical"] == pytest.approx(0.0, abs=1e-9) and d["reordered"] == pytest.approx(0.0, abs=1e-9)
    # a missed finding costs at least a hallucinated one, and more than a paraphrase; a contradiction the most
    assert d["contradicted"] >= d["omitted"] >= d["hallucinated"]
    assert d["omitted"] > d["paraphrase"]
    plain = _findings_distance(emb, "chamfer")
    assert plain["omitted"] < plain["paraphrase"]  # what the plain Chamfer gets wrong (notebook 02)


def test_trl_functions_sum_to_the_scorer_total(emb):
    funcs, weights = trl_reward_functions("chamfer_recall_0.8", emb)
    assert [f.__name__ for f in funcs] == ["r_fmt", "r_sem_chamfer_recall_0.8"] and weights == [1.0, 1.0]
    cs = [build_template(" ".join(REF), "Small left pleural effusion."), "no template",
          build_template("The lungs are clear.", "No acute process.")]
    kw = {"findings": [" ".join(REF)] * 3, "impression": ["Small left pleural effusion."] * 3}
    vals = np.array([f(cs, **kw) for f in funcs])
    total = funcs[0].scorer.score(cs, kw["findings"], kw["impression"]).total
    assert np.allclose(np.array(weights) @ vals, total)
    assert total[0] == pytest.approx(3.0) and total[1] == 0.0 and 1.0 <= total[2] < 2.0


def test_stratum_weight_grammar_and_bad_weights():
    spec = parse_reward("chamfer_recall_1_bal2")
    assert (spec.opts["alpha"], spec.opts["weight"], spec.label) == (1.0, 2.0, "R_Cham_rec1_bal2")
    assert parse_reward("chamfer_recall_0.8").opts["weight"] == 1.0
    for bad in ("chamfer_recall_1_bal", "chamfer_recall_1_bal0.5", "chamfer_recall_1_bal11", "chamfer_recall_1_balx"):
        with pytest.raises(RewardError, match=r"chamfer_recall_<alpha>|weight after _bal"):
            parse_reward(bad)


def test_stratum_weight_scales_only_abnormal_references(emb):
    from sdrlib.rewards.methods.recall import abnormal_references

    normal_f, normal_i = "The heart size is normal. The lungs are clear. No pleural effusion.", "No acute process."
    abn_f, abn_i = " ".join(REF), "Small left pleural effusion."
    assert abnormal_references([normal_f, abn_f], [normal_i, abn_i]).tolist() == [False, True]
    gen = "The heart size is normal. The lungs are clear."
    comps = [build_template(gen, "No acute process.")] * 2
    plain = RewardScorer("chamfer_recall_0.8", emb).score(comps, [normal_f, abn_f], [normal_i, abn_i])
    bal = RewardScorer("chamfer_recall_0.8_bal3", emb).score(comps, [normal_f, abn_f], [normal_i, abn_i])
    assert bal.sem_findings[0] == pytest.approx(plain.sem_findings[0])  # normal reference: unweighted
    assert bal.sem_findings[1] == pytest.approx(3 * plain.sem_findings[1])  # abnormal reference: x3
    assert bal.sem_impression[1] == pytest.approx(3 * plain.sem_impression[1])
    assert np.array_equal(bal.fmt, plain.fmt)
