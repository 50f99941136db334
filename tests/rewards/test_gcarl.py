"""Tests for sdrlib.rewards.methods.gcarl (R_fact, R_check) and their TRL reward functions."""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.rewards.methods import gcarl
from sdrlib.rewards.methods.gcarl import GCARLSettings
from sdrlib.config import ConfigError, load_profile
from sdrlib.clinical import label_report
from sdrlib.reports import build_template
from sdrlib.rewards import RewardError, RewardScorer, trl_reward_functions
from training_helpers import FakeEmbedder

REF_F = "The heart is enlarged. No pneumothorax."
REF_I = "Cardiomegaly."


def test_checklist_levels_and_weights_from_reference_labels():
    items = {(i.observation, i.level, i.weight)
             for i in gcarl.build_checklist({"Cardiomegaly": 1, "Pneumothorax": 0, "Edema": -1})}
    assert items == {("Cardiomegaly", "essential", 4.0), ("Pneumothorax", "important", 2.0),
                     ("Edema", "optional", 1.0), ("Fracture", "pitfall", -2.0),
                     ("Pneumothorax", "pitfall", -2.0)}  # a pertinent negative is also a pitfall to hallucinate
    normal = gcarl.build_checklist(label_report("No acute cardiopulmonary process."))
    assert ("No Finding", "essential") in {(i.observation, i.level) for i in normal}


def test_check_reward_eq13_with_pitfall_and_clip():
    checklist = gcarl.build_checklist(label_report(f"{REF_F} {REF_I}"))  # Cardiomegaly +, Pneumothorax -
    r, vp, vn = gcarl.check_reward(label_report(f"{REF_F} {REF_I}"), checklist)
    assert (r, vp, vn) == (1.0, 1.0, 0.0)
    r, vp, vn = gcarl.check_reward(label_report("The heart is enlarged. Acute rib fracture."), checklist)
    assert vp == pytest.approx(4 / 6) and vn == pytest.approx(2 / 6) and r == pytest.approx(2 / 6)
    r, vp, vn = gcarl.check_reward(label_report("Large pneumothorax. Acute rib fracture."), checklist)
    assert vp == 0.0 and vn > 0 and r == 0.0  # clipped at 0


def test_fact_reward_is_the_harmonic_mean_of_precision_and_coverage():
    assert gcarl.fact_reward(np.array([True, True]), 4) == pytest.approx((2 * 1 * 0.5 / 1.5, 1.0, 0.5))
    assert gcarl.fact_reward(np.array([True, False, True, True]), 2) == pytest.approx((2 * 0.75 / 1.75, 0.75, 1.0))
    assert gcarl.fact_reward(np.array([False]), 2) == (0.0, 0.0, 0.0)
    assert gcarl.fact_reward(np.zeros(0, bool), 2) == (0.0, 0.0, 0.0)


def test_claims_supported_by_reference_or_bank_and_not_contradicting():
    emb = FakeEmbedder()
    ref = ["The heart is enlarged.", "No pneumothorax."]
    claims = ["The heart is enlarged.", "Small right pneumothorax.", "The lungs are clear.", "Osseous structures intact."]
    vec = lambda s: np.stack([emb.vec(x) for x in s])  # noqa: E731
    z = gcarl.claim_validity(claims, vec(claims), ref, vec(ref), vec(["The lungs are clear."]), threshold=0.9)
    # matched reference: valid; contradicts "No pneumothorax": invalid even if in the bank; generic normal filler
    # found only in the bank: not relevant (G-CARL sec. 3); nowhere: unsupported
    assert z.tolist() == [True, False, False, False]
    z = gcarl.claim_validity(claims[2:3], vec(claims[2:3]), ref + claims[2:3], vec(ref + claims[2:3]), None,
                             threshold=0.9)
    assert z.tolist() == [True]  # the same sentence is relevant when the reference says it
    z = gcarl.claim_validity(claims[1:2], vec(claims[1:2]), ref, vec(ref), vec(claims[1:2]), threshold=0.9)
    assert z.tolist() == [False]


def test_claims_need_the_right_side_and_a_finding_the_case_speaks_of():
    emb = FakeEmbedder()
    vec = lambda s: np.stack([emb.vec(x) for x in s])  # noqa: E731
    ref = ["Small left pleural effusion.", "No right pleural effusion.", "No pneumothorax."]
    claims = ["Small left pleural effusion.", "No right pleural effusion.", "Small right pleural effusion.",
              "No pneumothorax.", "No pleural effusion.", "No focal consolidation.", "No acute rib fracture."]
    bank = vec(claims)
    z = gcarl.claim_validity(claims, vec(claims), ref, vec(ref), bank, threshold=0.9)
    # true pertinent negative valid; wrong side invalid; a denial of the stated effusion invalid; a generic negative
    # of a finding the case does not speak of (consolidation) not relevant; a pitfall finding (fracture) relevant
    assert z.tolist() == [True, True, False, True, False, False, True]


def test_dedup_merges_only_claims_that_state_the_same_findings_on_the_same_side():
    claims = ["Small left pleural effusion.", "Small right pleural effusion.", "small left pleural effusion",
              "Mild cardiomegaly.", "Severe cardiomegaly."]
    same = np.ones((len(claims), 4))  # every embedding identical: only presence can keep claims apart
    assert gcarl.dedup_claims(claims, same, 0.95) == [0, 1, 3]


def test_gcarl_trl_functions_sum_to_the_scorer_total():
    funcs, weights = trl_reward_functions("gcarl", FakeEmbedder(), data={"bank": ["The lungs are clear."]})
    assert [f.__name__ for f in funcs] == ["r_fmt", "r_fact", "r_check"] and weights == [0.3, 0.4, 0.3]
    cs = [build_template(REF_F, REF_I), build_template("The lungs are clear. Large pneumothorax.", "No acute process."),
          "no template"]
    kw = {"findings": [REF_F] * 3, "impression": [REF_I] * 3}
    vals = np.array([f(cs, **kw) for f in funcs])
    total = funcs[0].scorer.score(cs, kw["findings"], kw["impression"]).total
    assert np.allclose(np.array(weights) @ vals, total)
    assert np.isclose(total[0], 1.0) and total[2] == 0.0 and 0.3 <= total[1] < 0.6


@pytest.mark.parametrize("settings, data, match", [
    ({"threshold": 1.5}, None, "threshold"), ({"threshold": float("nan")}, None, "threshold"),
    ({"pitfalls": ["Pneumothorax", "Gout"]}, None, "pitfall"), ({"pitfalls": "Pneumothorax"}, None, "pitfall"),
    ({"lambda_fact": -1.0}, None, "lambda_fact"), ({"lambda_fact": 0.5}, {"bank": None}, None),
    ({}, {"banks": ["a."]}, "bank"), ({}, {"bank": ["ok.", ""]}, "bank"), ({}, {"bank": "one str"}, "bank"),
])
def test_gcarl_scorer_refuses_bad_parameters(settings, data, match):
    if match is None:  # a partly given settings object keeps the other defaults
        s = RewardScorer("gcarl", FakeEmbedder(), settings=GCARLSettings(**settings), data=data).settings
        assert (s.lambda_fact, s.lambda_check) == (0.5, 0.3)
        return
    with pytest.raises(RewardError, match=match):
        RewardScorer("gcarl", FakeEmbedder(), settings=GCARLSettings(**settings), data=data)


def test_gcarl_profile_keys_are_validated():
    cfg = load_profile("smoke", {"grpo.gcarl.pitfalls": ["Pneumothorax", "Pleural Effusion"]})
    assert cfg.grpo.gcarl.lambda_fact == 0.4 and isinstance(cfg.grpo.gcarl, GCARLSettings)
    with pytest.raises(ConfigError, match="grpo.gcarl.pitfalls"):
        load_profile("smoke", {"grpo.gcarl.pitfalls": ["Gout"]})
    with pytest.raises(ConfigError, match="grpo.gcarl.threshold"):
        load_profile("smoke", {"grpo.gcarl.threshold": 2.0})
