"""The across-seed test (sdrlib.metrics.significance.seed_study_test) on synthetic data where the truth is known.

Model: value of study i under system X, seed s = mu_X + u_{X,s} + v_i + e_{X,s,i}; u ~ N(0, sd_seed) is a
seed random effect (a training run that happens to be better or worse), v_i a study effect shared by every
system and seed, e sampling noise. With mu_A = mu_B and sd_seed > 0 there is no true difference, only
seed noise: the per-seed bootstrap over studies (the old table's test) calls it significant most of the
time; the across-seed test must not do so more often than alpha.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.metrics.base import mean_result, stats_result
from sdrlib.metrics.significance import format_p, paired_bootstrap, seed_study_test

ALPHA = 0.05


def _replicate(rng, delta, sd_seed, *, n=100, k=3, sd_e=0.1):
    study = rng.normal(0, 0.1, n)
    run = lambda mu: mean_result("m", "x", mu + rng.normal(0, sd_seed) + study + rng.normal(0, sd_e, n))  # noqa: E731
    return [run(0.5 + delta) for _ in range(k)], [run(0.5) for _ in range(k)]


def _rates(delta, sd_seed, reps=200):
    rng = np.random.default_rng(1)
    new = per_seed_any = per_seed_majority = 0
    for r in range(reps):
        a, b = _replicate(rng, delta, sd_seed)
        out = seed_study_test(a, b, n_resamples=200, seed=r)
        sp = np.asarray(out["seed_p"])
        new += out["p_value"] < ALPHA
        per_seed_any += (sp < ALPHA).any()
        per_seed_majority += (sp < ALPHA).sum() >= 2
    return new / reps, per_seed_any / reps, per_seed_majority / reps


def test_seed_noise_is_not_called_significant():
    # 200 replicates of pure seed noise (seed SD 0.03, per-seed study SE of the difference about 0.014)
    new, any_seed, majority = _rates(0.0, 0.03)
    assert new <= ALPHA + 0.03, f"false-positive rate {new:.3f}"  # nominal 0.05 plus Monte-Carlo slack
    assert any_seed >= 0.6 and majority >= 0.3  # the per-seed test calls it significant far more often
    assert any_seed > 5 * max(new, 0.01)


def test_consistent_difference_is_detected():
    new, _, _ = _rates(0.05, 0.005, reps=60)
    assert new >= 0.6, f"power {new:.2f}"


def test_consistent_difference_fields():
    rng = np.random.default_rng(0)
    a = [mean_result("m", "x", rng.normal(0.7 + u, 0.05, 80)) for u in (0.0, 0.01, -0.01)]
    b = [mean_result("m", "x", rng.normal(0.5 + u, 0.05, 80)) for u in (0.0, -0.01, 0.01)]
    r = seed_study_test(a, b, n_resamples=300)
    assert r["p_value"] < ALPHA and r["n_same_sign"] == 3 and r["n_seeds"] == 3
    assert r["ci_low"] > 0 and r["ci_low"] <= r["diff"] <= r["ci_high"]
    assert r["p_value"] == max(r["p_boot"], r["p_seed_t"])
    assert r["seed_sd"] == pytest.approx(np.std(r["seed_diffs"], ddof=1))


def test_single_b_run_and_single_seed():
    rng = np.random.default_rng(2)
    a = [mean_result("m", "x", rng.normal(0.6, 0.1, 50)) for _ in range(3)]
    b = mean_result("m", "x", rng.normal(0.5, 0.1, 50))
    r = seed_study_test(a, [b], n_resamples=200)
    assert r["n_seeds"] == 3 and r["value_b"] == pytest.approx(b.corpus)
    # one seed: the study bootstrap of old, no t
    one = seed_study_test(a[:1], [b], n_resamples=200, seed=3)
    old = paired_bootstrap(a[0], b, n_resamples=200, seed=3)
    assert one["p_value"] == pytest.approx(old["p_value"]) and np.isnan(one["p_seed_t"])
    with pytest.raises(ValueError):
        seed_study_test(a, [b, b], n_resamples=10)


def test_corpus_metric_is_recomputed_per_resample():
    # a ratio metric (sum TP / sum count), not a mean of per-sample values
    rng = np.random.default_rng(4)
    ratio = lambda s: s[:, 0] / s[:, 1]  # noqa: E731
    mk = lambda p: stats_result("r", "x", np.column_stack([rng.binomial(4, p, 60), np.full(60, 4.0)]), ratio)  # noqa: E731
    r = seed_study_test([mk(0.8) for _ in range(3)], [mk(0.3) for _ in range(3)], n_resamples=200)
    assert r["diff"] > 0.3 and r["p_value"] < ALPHA


def test_format_p_is_the_one_p_writer():
    """One way to print a p-value (issue 35): claims, conclusions, the pruning checks and the notebooks call it."""
    import sdrlib.experiments.claims as claims
    import sdrlib.experiments.conclusions as conclusions
    import sdrlib.experiments.pruning_checks as pruning_checks

    assert [format_p(p) for p in (0.0412, 0.0005, 0.00049, 1.0)] == ["p = 0.041", "p = 0.001", "p < 0.001", "p = 1.000"]
    assert format_p(float("nan")) == "p = nan"
    for mod in (claims, conclusions, pruning_checks):
        assert mod.format_p is format_p and not hasattr(mod, "_p") and not hasattr(mod, "_fmt_p")
