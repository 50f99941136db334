"""The real-language battery (sdrlib.experiments.battery): its cases are well formed and not SynthCXR's, the pass
rule reads margins as documented on real rewards, and the rewards the project adds on top of the paper's (the
negation-aware and recall settings, the two related methods) must pass every case: laterality, pertinent negatives,
temporal phrases, hedges, findings outside the 14 and repetition."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from audit_helpers import synth_record
from sdrlib.experiments import battery
from sdrlib.reports import split_sentences

GRPO = SimpleNamespace(lambda_fmt=1.0, lambda_sem=1.0, max_chars=4000)
#: the rewards that must read real reports (ours and the two related methods' stand-ins)
REQUIRED_REWARDS = ("chamfer_neg", "hung_nn_neg", "ot_neg", "chamfer_recall_1", "chamfer_recall_0.75",
                    "chamfer_recall_0.5", "editgrpo", "gcarl")
REQUIRED_CATEGORIES = ("laterality", "pertinent_negative", "temporal", "hedge")


def test_cases_are_well_formed():
    ids = [c.id for c in battery.CASES]
    assert len(ids) == len(set(ids))
    assert {c.category for c in battery.CASES} == set(battery.CATEGORIES)
    for c in battery.CASES:
        assert c.better != c.worse and c.why and all(s.strip() for s in (*c.reference, c.better, c.worse))
    assert not any(c.strict for c in battery.CASES if c.category == "repetition")


def test_no_battery_sentence_is_a_synthcxr_sentence():
    synth = set()
    for i in range(300):
        r = synth_record("train", i)
        synth.update(s.lower() for s in split_sentences(f"{r.findings} {r.impression}"))
    ours = {s.lower() for c in battery.CASES for t in (*c.reference, c.better, c.worse) for s in split_sentences(t)}
    common = ours & synth
    # generic normal sentences may coincide; every case's contrast must be written outside the grammar
    # lat_effusion_wrong_side's three plain sentences ("Small right pleural effusion.", "No left pleural effusion.",
    # ...) are now the grammar's own: it writes other-side negatives by design (issue "SynthCXR speaks it")
    spoken_by_the_grammar = {"lat_effusion_wrong_side"}
    for c in battery.CASES:
        if c.category == "outside_14" or c.category == "repetition" or c.id in spoken_by_the_grammar:
            continue
        contrast = {s.lower() for s in split_sentences(c.worse)} ^ {s.lower() for s in split_sentences(c.better)}
        assert contrast and not contrast <= common, c.id


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from sdrlib.embedding import SentenceEmbedder

    emb = SentenceEmbedder("all-MiniLM-L6-v2", cache_dir=tmp_path_factory.mktemp("emb"))
    train = [synth_record("train", i) for i in range(120)]
    from sdrlib.config import load_profile

    grpo = load_profile("smoke").grpo
    return lambda rewards: battery.run_battery(rewards, emb, grpo, train)


def test_the_pass_rule_reads_margins_on_real_rewards(run):
    t = run(["exact", "chamfer"])
    assert len(t) == 2 * len(battery.CASES)
    ex = t[t.reward == "exact"]
    # R_exact is 0 for both candidates of a wrong-side case: a tie does not pass a strict case
    lat = ex[ex.case == "lat_effusion_wrong_side"].iloc[0]
    assert lat.margin == 0 and not lat.passed
    # repetition cases are not strict: a tie passes, and Chamfer's set view cannot be fooled by repeats
    rep = t[(t.reward == "chamfer") & (t.category == "repetition")]
    assert rep.passed.all() and (rep.margin.abs() < 1e-9).all()
    s = battery.battery_summary(t)
    assert list(s.reward) == ["exact", "chamfer"]
    assert (s.passed == t.groupby("reward", sort=False).passed.sum().values).all()
    assert "lat_effusion_wrong_side" in s.loc[s.reward == "exact", "failing"].iloc[0]


def test_the_rewards_we_add_pass_every_side_negative_temporal_and_hedge_case(run):
    t = run(list(REQUIRED_REWARDS))
    req = t[t.category.isin(REQUIRED_CATEGORIES)]
    assert req.loc[~req.passed, ["reward", "case"]].apply(tuple, axis=1).tolist() == []
    # findings outside the 14 are counted, and repetition never pays, under every reward we add: the recall
    # settings, the two related methods and the negation-aware settings (which count wrong findings, not sentences,
    # and read a report's repeated sentences once)
    assert set(t.reward) == set(REQUIRED_REWARDS)
    assert t.loc[~t.passed, ["reward", "case"]].apply(tuple, axis=1).tolist() == []


def test_rewards_given_as_one_string_are_refused_not_read_as_characters():
    from sdrlib.rewards import RewardError

    with pytest.raises(RewardError, match=r"not one string: write \['chamfer'\]"):
        battery.run_battery("chamfer", None, GRPO, [])


def test_failing_lines_put_rewards_that_fail_the_same_cases_on_one_line():
    summary = pd.DataFrame({"reward": ["exact", "ot", "chamfer_neg", "sinkhorn_0.1", "gcarl", "ot_neg"],
                            "failing": ["a, b, c", "a, b", "b", "a, b", "", "b"]})
    assert battery.failing_lines(summary) == ["exact: a, b, c", "ot, sinkhorn_0.1: a, b", "chamfer_neg, ot_neg: b"]
    assert battery.failing_lines(summary.assign(failing="")) == []
