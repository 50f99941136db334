"""The verdict rule and the paired test take only what they can read: levels in (0, 1), seed counts that are whole
numbers >= 1, finite spreads; A and B are checked alike. Before: ``verdict(alpha=1)`` said "above" at p = 0.9, seed
counts 0, -3, True and 2.5 were accepted, ``detectable_effect`` could return a negative effect, copies of one run
were refused on B's side only, A and B could be scored on different metrics and an all-NaN side became "no
difference detected"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdrlib.metrics import verdict as V
from sdrlib.metrics.base import mean_result
from sdrlib.metrics.significance import SignificanceInputError, seed_study_test

ROW = {"diff": [0.03], "p_value": [0.9], "ci_low": [0.01], "ci_high": [0.05], "seed_sd": [0.01], "n_seeds": [3]}


@pytest.mark.parametrize("alpha", [1, 0, 1.5, -0.1, True, float("nan"), "0.05"])
def test_a_level_outside_zero_one_is_refused_everywhere(alpha):
    t = pd.DataFrame(ROW)
    for call in (lambda: V.verdict(diff=0.03, p_adjusted=0.9, ci_low=0.01, ci_high=0.05, alpha=alpha),
                 lambda: V.family_verdicts(t, n_studies=100, alpha=alpha),
                 lambda: V.family_directions(t, alpha=alpha),
                 lambda: V.seeds_needed(0.01, 0.02, alpha=alpha),
                 lambda: V.studies_needed(0.01, 0.005, 100, alpha=alpha),
                 lambda: V.detectable_effect(seed_sd=0.01, n_seeds=3, study_se=0.005, power=alpha)):
        with pytest.raises(V.VerdictInputError, match="alpha|power"):
            call()


@pytest.mark.parametrize("n_seeds", [0, -3, True, 2.5, float("nan"), "3"])
def test_a_seed_count_that_is_not_a_whole_number_of_at_least_one_is_refused(n_seeds):
    with pytest.raises(V.VerdictInputError, match="n_seeds"):
        V.detectable_effect(seed_sd=0.01, n_seeds=n_seeds, study_se=0.005)
    with pytest.raises(V.VerdictInputError, match="n_seeds"):
        V.family_verdicts(pd.DataFrame({**ROW, "n_seeds": [n_seeds]}), n_studies=100)


def test_an_integral_float_seed_count_is_that_count():
    assert V.detectable_effect(seed_sd=0.01, n_seeds=3.0, study_se=0.005) == \
        V.detectable_effect(seed_sd=0.01, n_seeds=3, study_se=0.005)


@pytest.mark.parametrize("kw", [{"seed_sd": float("inf")}, {"study_se": float("inf")}, {"seed_sd": -0.1},
                                {"seed_sd": "0.1"}, {"study_se": True}])
def test_a_spread_that_is_not_finite_and_non_negative_is_refused(kw):
    with pytest.raises(V.VerdictInputError, match="seed_sd|study_se"):
        V.detectable_effect(**{"seed_sd": 0.01, "n_seeds": 3, "study_se": 0.005, **kw})


@pytest.mark.parametrize("power", [0.01, 0.02, 0.05])
def test_a_detectable_effect_is_never_negative(power):
    eff, _ = V.detectable_effect(seed_sd=float("nan"), n_seeds=1, study_se=0.01, alpha=0.05, power=power)
    assert eff == 0.0                                     # a power at most alpha needs no difference


def test_n_studies_is_a_whole_number():
    for bad in (-1, 2.5, True):
        with pytest.raises(V.VerdictInputError, match="n_studies"):
            V.family_verdicts(pd.DataFrame(ROW), n_studies=bad)


def test_a_p_value_outside_zero_one_is_refused_by_verdict():
    with pytest.raises(V.VerdictInputError, match="p_adjusted"):
        V.verdict(diff=0.03, p_adjusted=1.5, ci_low=0.01, ci_high=0.05)


def _runs(k, shift=0.0, name="m", seed=0):
    rng = np.random.default_rng(seed)
    return [mean_result(name, "x", 0.5 + shift + rng.normal(0, 0.1, 40)) for _ in range(k)]


def test_copies_of_one_run_are_refused_on_either_side():
    a, b = _runs(3, 0.05), _runs(3, seed=1)
    with pytest.raises(SignificanceInputError, match="A's 3 runs hold 1 distinct"):
        seed_study_test([a[0]] * 3, b, n_resamples=50)
    with pytest.raises(SignificanceInputError, match="B's 3 runs hold 1 distinct"):
        seed_study_test(a, [b[0]] * 3, n_resamples=50)
    # a side declared deterministic may repeat its run, either side alike
    r_a = seed_study_test([a[0]] * 3, b, n_resamples=50, a_deterministic=True)
    r_b = seed_study_test(b, [a[0]] * 3, n_resamples=50, b_deterministic=True)
    assert r_a["diff"] == pytest.approx(-r_b["diff"])
    assert seed_study_test(a[:1], b, n_resamples=50, a_deterministic=True)["n_seeds"] == 3
    with pytest.raises(SignificanceInputError, match="one run of A against 3 seeds of B"):
        seed_study_test(a[:1], b, n_resamples=50)


def test_both_sides_must_hold_one_metric():
    with pytest.raises(SignificanceInputError, match="one metric"):
        seed_study_test(_runs(3, name="rougeL"), _runs(3, name="bertscore_f1", seed=1), n_resamples=50)


@pytest.mark.parametrize("side", ["A", "B"])
def test_an_all_nan_side_is_refused_not_read_as_no_difference(side):
    nan = [mean_result("m", "x", np.full(40, np.nan)) for _ in range(3)]
    for r, v in zip(nan, (1.0, 2.0, 3.0)):   # distinct runs, every value NaN
        r.stats[0, 0] = 0.0
    ok = _runs(3)
    a, b = (nan, ok) if side == "A" else (ok, nan)
    with pytest.raises(SignificanceInputError, match=f"every run of {side}.*is NaN"):
        seed_study_test(a, b, n_resamples=50, a_deterministic=True, b_deterministic=True)


@pytest.mark.parametrize("kw", [{"n_resamples": 0}, {"n_resamples": 2.5}, {"seed": -1}, {"ci": 1.0},
                                {"ci": True}])
def test_counts_and_levels_of_the_paired_test_are_checked(kw):
    with pytest.raises(SignificanceInputError):
        seed_study_test(_runs(3), _runs(3, seed=1), **{"n_resamples": 50, **kw})


def test_a_large_family_is_prompt_and_its_values_are_the_exact_ones():
    """Before: 2,000 rows took minutes (each row solved the non-central t again; seeds_needed solved it once per
    candidate count). The cached solve gives the very values a per-row solve gives."""
    rng = np.random.default_rng(0)
    n = 300
    d = rng.normal(0, 0.01, n)
    t = pd.DataFrame({"diff": d, "p_value": rng.uniform(0, 1, n), "ci_low": d - 0.02, "ci_high": d + 0.02,
                      "seed_sd": rng.uniform(0.005, 0.05, n), "n_seeds": rng.integers(2, 23, n),
                      "study_se": rng.uniform(0.002, 0.01, n)})
    out = V.family_verdicts(t, n_studies=400)
    level = 0.05 / n
    for i in (0, 7, 123):
        V._seed_nc.cache_clear()
        want = V.detectable_effect(seed_sd=float(t.seed_sd[i]), n_seeds=int(t.n_seeds[i]),
                                   study_se=float(t.study_se[i]), alpha=level)
        assert out.at[i, "mde"] == pytest.approx(want[0], rel=1e-12)
    k = out.seeds_needed.dropna()
    k = k[np.isfinite(k)]
    for i in k.index[:3]:                                 # the bisection's count is the first count that suffices
        sd, need = float(t.seed_sd[i]), int(k[i])
        assert V._seed_mde(sd, need, level, 0.8) <= abs(t["diff"][i]) < V._seed_mde(sd, need - 1, level, 0.8) \
            or need == 2
