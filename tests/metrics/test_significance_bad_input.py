"""seed_study_test tells runs apart by content: copies of one stochastic B run are that one run (bad input round
five: three deep copies passed the one-run refusal, which compared object identity, and gave p = 0.005)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from sdrlib.metrics.base import mean_result
from sdrlib.metrics.significance import seed_study_test


def _runs(seed: int):
    rng = np.random.default_rng(seed)
    study = rng.normal(0, 0.1, 100)
    a = [mean_result("m", "x", 0.5 + study + rng.normal(0, 0.03) + rng.normal(0, 0.05, 100)) for _ in range(3)]
    b = mean_result("m", "x", 0.5 + study + rng.normal(0, 0.03) + rng.normal(0, 0.05, 100))
    return a, b


@pytest.mark.parametrize("make", [
    lambda b: [copy.deepcopy(b) for _ in range(3)],                         # deep copies
    lambda b: [mean_result("m", "x", b.stats[:, 0].copy()) for _ in range(3)],  # the same run re-read
    lambda b: [b, copy.deepcopy(b), copy.deepcopy(b)],
])
def test_copies_of_one_stochastic_run_are_one_run(make):
    a, b = _runs(0)
    with pytest.raises(ValueError, match=r"3 runs hold 1 distinct one\(s\).*b_deterministic=True"):
        seed_study_test(a, make(b), n_resamples=10)
    # stated deterministic, the copies are allowed and give what the single run gives
    assert (seed_study_test(a, make(b), n_resamples=50, b_deterministic=True)
            == seed_study_test(a, [b], n_resamples=50, b_deterministic=True))


def test_two_distinct_of_three_is_refused_too():
    a, b = _runs(1)
    _, other = _runs(2)
    with pytest.raises(ValueError, match="3 runs hold 2 distinct"):
        seed_study_test(a, [b, copy.deepcopy(b), other], n_resamples=10)


def test_distinct_runs_pass():
    a, b = _runs(3)
    bs = [_runs(s)[1] for s in (4, 5, 6)]
    assert seed_study_test(a, bs, n_resamples=20)["n_seeds"] == 3
