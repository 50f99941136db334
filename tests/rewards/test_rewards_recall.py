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
    d_gen, d_ref, wrong_gen, wrong_ref = recall_terms(A, B, PA, PB)
    assert np.allclose(d_ref, [0.0, 1.0]) and np.allclose(d_gen, [0.0])
    assert wrong_ref == 1 and wrong_gen == 0  # one missed finding (the left effusion), nothing wrong generated
    name = "chamfer_recall_0.8"
    # missed: R = (0 + 1) / 2, G = (0 + 1 missed) / (1 + 1); hallucinated (the sets swapped): the same by symmetry
    assert set_distance(A, B, name, presence=(PA, PB)) == pytest.approx(0.5)
    assert set_distance(B, A, name, presence=(PB, PA)) == pytest.approx(0.5)
    # the engine (the reward's path) agrees, and scores an empty generated set as the reward does (D = 1)
    got = paired_distances([A, B, A[:0]], [B, A, B], name, presence=([PA, PB, PA[:0]], [PB, PA, PB]), empty_value=1.0)
    assert np.allclose(got, [0.5, 0.5, 1.0])


@pytest.mark.parametrize("alpha", [0.5, 0.75, 1.0])
def test_a_hallucination_costs_at_every_alpha(emb, alpha):
    # issue 34: at alpha = 1 the old reward charged nothing for the hallucinated effusion (only the
    # reference->generated direction counted, and every normal sentence was still there)
    normal = ["The heart size is normal.", "The lungs are clear.", "No pleural effusion.", "No pneumothorax."]
    cases = {"kept": normal, "plus_effusion": normal + ["Large right pleural effusion."],
             "plus_three": normal + ["Large right pleural effusion.", "There is a right pneumothorax.",
                                     "The heart is enlarged."]}
    name = f"chamfer_recall_{alpha:g}"
    ref = emb.encode(normal)
    P = sentence_presence(normal)
    d = {k: set_distance(emb.encode(v), ref, name, presence=(sentence_presence(v), P)) for k, v in cases.items()}
    assert d["kept"] == pytest.approx(0.0, abs=1e-9)
    assert d["plus_effusion"] > 0.15 and d["plus_three"] > d["plus_effusion"]
    # the engine agrees with the reference
    gens = list(cases.values())
    got = paired_distances([emb.encode(v) for v in gens], [ref] * 3, name,
                           presence=([sentence_presence(v) for v in gens], [P] * 3))
    assert np.allclose(got, list(d.values()), atol=1e-9)


@pytest.mark.parametrize("name", ["chamfer_recall_1", "chamfer_recall_0.5", "chamfer_neg", "hung_nn_neg", "ot_neg"])
def test_a_report_that_contradicts_itself_costs_at_least_an_omission(emb, name):
    # issue 34: "No pleural effusion." and "Large right pleural effusion." in one section; against an abnormal
    # reference (the finding is there) and a normal one (it is negated)
    abnormal = ["The heart size is normal.", "There is a small right pleural effusion.", "No pneumothorax."]
    normal = ["The heart size is normal.", "No pleural effusion.", "No pneumothorax."]
    both = ["The heart size is normal.", "No pleural effusion.", "Large right pleural effusion.", "No pneumothorax."]
    for ref, omitted in ((abnormal, [abnormal[0], abnormal[2]]), (normal, [normal[0], normal[2]])):
        R, PR = emb.encode(ref), sentence_presence(ref)
        dist = {k: set_distance(emb.encode(v), R, name, presence=(sentence_presence(v), PR))
                for k, v in (("both", both), ("omitted", omitted))}
        assert dist["both"] >= dist["omitted"] - 1e-9, (ref, dist)
        assert dist["both"] > 0.1


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


def test_stratum_weight_scales_the_whole_reward_of_abnormal_references(emb):
    from sdrlib.rewards.methods.recall import abnormal_references

    normal_f, normal_i = "The heart size is normal. The lungs are clear. No pleural effusion.", "No acute process."
    abn_f, abn_i = " ".join(REF), "Small left pleural effusion."
    assert abnormal_references([normal_f, abn_f], [normal_i, abn_i]).tolist() == [False, True]
    gen = "The heart size is normal. The lungs are clear."
    comps = [build_template(gen, "No acute process.")] * 2
    plain = RewardScorer("chamfer_recall_0.8", emb).score(comps, [normal_f, abn_f], [normal_i, abn_i])
    bal = RewardScorer("chamfer_recall_0.8_bal3", emb).score(comps, [normal_f, abn_f], [normal_i, abn_i])
    # the components stay unweighted; the total (format and content) is x3 for the abnormal reference only
    assert np.allclose(bal.sem_findings, plain.sem_findings) and np.array_equal(bal.fmt, plain.fmt)
    assert bal.weight.tolist() == [1.0, 3.0] and bal.abnormal.tolist() == [False, True]
    assert bal.total[0] == pytest.approx(plain.total[0]) and bal.total[1] == pytest.approx(3 * plain.total[1])
    # the TRL functions sum to the weighted total, R_fmt included
    funcs, weights = trl_reward_functions("chamfer_recall_0.8_bal3", emb)
    logged = {}
    kw = {"findings": [normal_f, abn_f], "impression": [normal_i, abn_i], "log_metric": logged.__setitem__}
    vals = np.array([f(comps, **kw) for f in funcs])
    assert np.allclose(np.array(weights) @ vals, bal.total) and vals[0].tolist() == [1.0, 3.0]
    # the log compares like with like: the unweighted mean per stratum
    assert logged["reward_strata/abnormal"] == pytest.approx(plain.total[1])
    assert logged["reward_strata/normal"] == pytest.approx(plain.total[0])
    assert logged["reward_strata/abnormal_share"] == 0.5


def test_a_prompt_weight_under_group_scaling_is_refused():
    weighted = {"grpo.rewards": ["fmt", "chamfer", "chamfer_recall_1_bal2"], "selection.policies": ["sft", "chamfer"]}
    with pytest.raises(ConfigError, match="cancels it"):
        load_profile("smoke", {**weighted, "grpo.scale_rewards": "group"})
    with pytest.raises(ConfigError, match="cancels it"):  # an ablation trains too
        load_profile("smoke", {"grpo.scale_rewards": "group", "grpo.ablations": ["chamfer_recall_0.8_bal3"]})
    assert load_profile("smoke", {**weighted, "grpo.scale_rewards": "batch"}).grpo.scale_rewards == "batch"
    unweighted = ["fmt", "chamfer", "chamfer_recall_1"]
    ok = load_profile("smoke", {"grpo.scale_rewards": "group", "grpo.rewards": unweighted,
                                "selection.policies": ["sft", "chamfer"]})
    assert ok.grpo.rewards == unweighted
