"""G-CARL's claim deduplication (Xie et al., sec. 3: "After claim deduplication, the final claim set ..."):
a report that repeats one correct sentence must not earn full coverage (sdrlib.rewards.methods.gcarl)."""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.config import ConfigError, load_profile
from sdrlib.reports import build_template
from sdrlib.rewards import RewardError, RewardScorer
from sdrlib.rewards.methods import gcarl
from sdrlib.rewards.methods.gcarl import GCARLSettings
from training_helpers import FakeEmbedder

REF_F = "The heart is enlarged. No pneumothorax."
REF_I = "Cardiomegaly."
K = 3  # the reference's sentences (claims)


def fact(completion: str, findings: str = REF_F, impression: str = REF_I, **settings) -> tuple[float, float, float]:
    """``(R_fact, P, C)`` of one completion through the scorer (FakeEmbedder: one vector per normalised sentence)."""
    out = RewardScorer("gcarl", FakeEmbedder(), settings=GCARLSettings(**settings)).score(
        [completion], [findings], [impression]).components
    return float(out["fact"][0]), float(out["precision"][0]), float(out["coverage"][0])


def test_one_true_sentence_repeated_k_times_does_not_earn_full_coverage():
    # K copies of one correct sentence, differing only in case, white space and trailing punctuation
    report = build_template("The heart is enlarged. the heart  is enlarged!", "THE HEART IS ENLARGED")
    r, p, c = fact(report)
    assert p == 1.0 and c == pytest.approx(1 / K)  # one claim after dedup: P = 1, C = 1/K
    assert r == pytest.approx(2 * (1 / K) / (1 + 1 / K)) and r < 1.0


def test_the_k_distinct_reference_sentences_still_score_one():
    assert fact(build_template(REF_F, REF_I)) == pytest.approx((1.0, 1.0, 1.0))


def test_the_reference_claim_count_k_is_deduplicated_too():
    # the reference says one thing twice: K = 2 claims, so its two distinct sentences cover it
    assert fact(build_template("The heart is enlarged.", REF_I),
                findings="The heart is enlarged. The heart is enlarged.") == pytest.approx((1.0, 1.0, 1.0))


def test_near_duplicates_by_cosine_greedy_in_order_keep_first():
    claims = ["a.", "b.", "A.", "c.", "d."]
    v = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.96, 0.28, 0.0], [0.0, 0.0, 1.0]])
    # "A." is an exact duplicate of "a." (normalised); "c." has cosine 0.96 with "a.": a near duplicate at 0.95
    assert gcarl.dedup_claims(claims, v, 0.95) == [0, 1, 4]
    assert gcarl.dedup_claims(claims, v, 0.99) == [0, 1, 3, 4]  # below the threshold: kept
    assert gcarl.dedup_claims(claims, v * 3.0, 0.99) == [0, 1, 3, 4]  # cosine, not dot product
    assert gcarl.dedup_claims([], np.zeros((0, 3)), 0.95) == []
    with pytest.raises(gcarl.GCARLError, match="dedup"):
        gcarl.dedup_claims(claims, v, 0.0)


@pytest.mark.parametrize("value", [0.0, -0.5, 1.5, float("nan"), True])
def test_dedup_threshold_is_validated(value):
    with pytest.raises(RewardError, match="dedup"):
        RewardScorer("gcarl", FakeEmbedder(), settings=GCARLSettings(dedup=value))


def test_dedup_profile_key():
    assert load_profile("smoke").grpo.gcarl.dedup == 0.95
    assert load_profile("smoke", {"grpo.gcarl.dedup": 1.0}).grpo.gcarl.dedup == 1.0
    for bad in (0.0, 1.5):
        with pytest.raises(ConfigError, match="grpo.gcarl.dedup"):
            load_profile("smoke", {"grpo.gcarl.dedup": bad})
