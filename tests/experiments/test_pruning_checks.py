"""Notebook 06's added comparisons (sdrlib.experiments.pruning_checks) on hand-made picks and metric values."""

import numpy as np
import pandas as pd
import pytest

from sdrlib.experiments import pruning_checks as checks
from sdrlib.experiments.tables import paired_table
from sdrlib.pruning import PruningError
from sdrlib.metrics.base import mean_result


def test_pick_agreement_against_one_over_k():
    a = checks.pick_agreement([0] * 24, [0] + [1] * 23, 5)
    assert (a["same"], a["n"], a["chance"]) == (1, 24, 0.2)
    assert 0.05 < a["p_value"] < 0.1  # 1 of 24 against 20 %: below chance, not significant at 0.05
    assert checks.pick_agreement(list(range(5)) * 10, list(range(5)) * 10, 5)["p_value"] < 1e-6
    with pytest.raises(ValueError):
        checks.pick_agreement([0, 1], [0], 5)


def test_agreement_sentences_state_direction():
    choices = {"SFT": {"pruning:chamfer": np.zeros(30, int), "standard:chamfer": np.ones(30, int)}}
    t = checks.agreement_table(choices, ["chamfer"], 5)
    (s,) = checks.agreement_sentences(t)
    assert "0 of 30 studies (0.0 %)" in s and "below chance (p < 0.05)" in s


def test_collapse_rates_positive_labels_and_text():
    c = [["No edema.", "No pneumothorax."],           # same positive labels (No Finding), different text
         ["Mild pulmonary edema.", "No edema."],       # different
         ["Cardiomegaly.", "Cardiomegaly."]]           # same text
    r = checks.collapse_rates(c)
    assert r["studies"] == 3 and r["same labels"] == pytest.approx(2 / 3) and r["same text"] == pytest.approx(1 / 3)
    w = checks.collapse_warnings(checks.collapse_table({"R_Cham": c}), threshold=0.5)
    assert w[0].startswith("WARNING, candidates mostly alike: R_Cham") and "2 of 3 studies" in w[0]
    (full,) = checks.collapse_warnings(checks.collapse_table({"R_Cham": [c[0], c[2]]}))
    assert full.startswith("WARNING, collapsed policy: R_Cham") and "2 of 2 studies (100 %)" in full
    assert not checks.collapse_warnings(checks.collapse_table({"SFT": c}), threshold=0.9)[0].startswith("WARNING")


def test_versus_random_pairs_and_verdicts():
    rng = np.random.default_rng(0)
    S, K = 40, 5
    good = rng.normal(size=(S, K))
    best = good.argmax(axis=1)
    metrics = {"SFT": {"findings": {"A": mean_result("A", "given", good.ravel()),
                                    "B": mean_result("B", "given", (-good).ravel())}}}
    choices = {"SFT": {"pruning:chamfer": best}}
    t = paired_table(checks.versus_random(choices, metrics, ["chamfer"], K), n_resamples=200)
    assert list(t.metric) == ["A", "B"] and t["diff"].iloc[0] > 0 > t["diff"].iloc[1]
    assert (t.A == "pruning").all() and (t.B == "random").all()
    assert t.value_b.iloc[0] == pytest.approx(good.mean(axis=1).mean())
    (s,) = checks.random_verdicts(t)
    assert "higher mean on 1 of 2 metrics" in s and "the lower on 1" in s and "is not shown" in s
    (s2,) = checks.random_verdicts(t[t.metric == "A"].rename(columns={"p_value": "p_seed"}), p_col="p_seed")
    assert "holds here" in s2 and "does not" not in s2


def test_require_template_refuses_a_policy_off_the_template():
    good = "<think>Looked.</think> <answer>Findings: The lungs are clear. Impression: Normal.</answer>"
    ok = checks.require_template({"SFT": [[good, good], [good, "garbage"]]})
    assert ok.loc[0, "on template"] == 3 and ok.loc[0, "share on template"] == 0.75
    assert ok.loc[0, "first off template"] == "garbage"
    with pytest.raises(PruningError, match=r"R_Cham: 1 of 4 on template, e.g. 'pulmonary"):
        checks.require_template({"SFT": [[good, good]], "R_Cham": [[good, "pulmonary m m m"], ["x", "y"]]})


def test_a_direction_needs_the_interval_and_p_to_agree():
    # the bdbd0e1 default run: R_Cham's survivor +0.006, interval [+0.000, +0.012] (rounded; ci_low > 0), p = 0.060
    from types import SimpleNamespace

    from sdrlib.experiments import pruning_checks as pc

    boundary = SimpleNamespace(ci_low=0.0004, ci_high=0.012, p_value=0.060)
    assert pc._interval_words(boundary) == pc.NO_DIFFERENCE
    assert pc._interval_words(SimpleNamespace(ci_low=0.001, ci_high=0.037, p_value=0.042)) == "above"
    assert pc._interval_words(SimpleNamespace(ci_low=-0.03, ci_high=-0.001, p_value=0.01)) == "below"
    # a row without a p-value is not tested: no direction from the interval alone (the project's rule)
    assert pc._interval_words(SimpleNamespace(ci_low=0.001, ci_high=0.03)) == pc.NO_DIFFERENCE
