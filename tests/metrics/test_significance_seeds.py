"""The across-seed test (sdrlib.metrics.significance.seed_study_test) on synthetic data where the truth is known.

Model: value of study i under system X, seed s = mu_X + u_{X,s} + v_i + w_{X,i} + e_{X,s,i}; u ~ N(0, sd_seed)
is a seed random effect (a training run that happens to be better or worse), v_i a study effect shared by
every system and seed, w_{X,i} a system-by-study effect (system X is better on some studies, the same in
every seed; 0 unless sd_w > 0), e sampling noise. With mu_A = mu_B there is no true difference:

- seed noise (sd_seed > 0): the per-seed bootstrap over studies (the old table's test) calls it significant
  most of the time, and so does the two-level bootstrap alone (its 3-seed level is too coarse); the t-test
  over seeds holds;
- no seed noise, study noise (sd_seed = 0, small e, sd_w > 0): the per-seed differences share
  mean_i(w_A,i - w_B,i), an accident of which studies are in the test set: the t-test over seeds (which
  holds the studies fixed) calls it significant most of the time, the bootstrap over studies holds;
- one run of a stochastic B against every seed of A: B's seed effect is shared by every difference; the
  test refuses that mode unless B is declared deterministic.

The combined test (p = the larger of the two) must not reject more often than alpha in either case.
``python tests/metrics/test_significance_seeds.py`` prints every rate quoted in seed_study_test's docstring.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.metrics.base import mean_result, stats_result
from sdrlib.metrics.significance import format_p, paired_bootstrap, seed_study_test

ALPHA = 0.05
SLACK = 0.03  # Monte-Carlo slack over alpha: 200 replicates give a binomial SD of about 0.015 at 0.05


def _replicate(rng, delta, sd_seed, *, n=100, k=3, sd_e=0.1, sd_w=0.0, b_runs=None):
    study = rng.normal(0, 0.1, n)
    w = {x: rng.normal(0, sd_w, n) if sd_w > 0 else 0.0 for x in "ab"}  # no draw when 0: same stream as before
    def run(mu, x):
        return mean_result("m", "x", mu + rng.normal(0, sd_seed) + study + w[x] + rng.normal(0, sd_e, n))

    return [run(0.5 + delta, "a") for _ in range(k)], [run(0.5, "b") for _ in range(k if b_runs is None else b_runs)]


def _rates(delta, sd_seed, reps=200, *, single_b=False, **kw):
    """Rejection rates at ALPHA over ``reps`` replicates: the test (``p_value``), its t-test half
    (``p_seed_t``), its bootstrap half (``p_boot``), and the per-seed study bootstrap in at least one seed
    (``any_seed``) and in at least two (``majority``). ``single_b``: B is one stochastic run, used against
    every seed of A (the mode the test refuses, run here with ``b_deterministic=True`` to measure it)."""
    rng = np.random.default_rng(1)
    n = dict.fromkeys(("combined", "t", "boot", "any_seed", "majority"), 0)
    for r in range(reps):
        a, b = _replicate(rng, delta, sd_seed, b_runs=1 if single_b else None, **kw)
        out = seed_study_test(a, b, n_resamples=200, seed=r, b_deterministic=single_b)
        sp = np.asarray(out["seed_p"])
        n["combined"] += out["p_value"] < ALPHA
        n["t"] += out["p_seed_t"] < ALPHA
        n["boot"] += out["p_boot"] < ALPHA
        n["any_seed"] += (sp < ALPHA).any()
        n["majority"] += (sp < ALPHA).sum() >= 2
    return {key: v / reps for key, v in n.items()}


#: the no-seed-noise case: seeds differ only by a little run noise, the systems differ study by study
NO_SEED_NOISE = dict(sd_seed=0.0, sd_e=0.01, sd_w=0.1)


def test_seed_noise_is_not_called_significant():
    # 200 replicates of pure seed noise (seed SD 0.03, per-seed study SE of the difference about 0.014)
    r = _rates(0.0, 0.03)
    assert r["combined"] <= ALPHA + SLACK, f"false-positive rate {r['combined']:.3f}"
    assert r["any_seed"] >= 0.6 and r["majority"] >= 0.3  # the per-seed test calls it significant far more often
    assert r["any_seed"] > 5 * max(r["combined"], 0.01)
    # here the t-test half carries the test: the two-level bootstrap alone rejects far too often
    assert r["t"] <= ALPHA + SLACK and r["boot"] >= 3 * ALPHA


def test_study_noise_without_seed_noise_is_not_called_significant():
    """No seed noise, study noise only: the t-test over 3 near-identical per-seed differences has a tiny
    standard error and rejects most of the time; the bootstrap half (studies resampled) holds the test at alpha."""
    r = _rates(0.0, **NO_SEED_NOISE)
    assert r["combined"] <= ALPHA + SLACK, f"false-positive rate {r['combined']:.3f}"
    assert r["boot"] <= ALPHA + SLACK
    assert r["t"] >= 0.5 and r["t"] > 5 * max(r["combined"], 0.01)  # the bootstrap half is what holds it


def test_identical_seeds_rest_on_the_bootstrap():
    # deterministic runs: every seed the same run, so the per-seed differences are identical (t's SE is 0)
    rng = np.random.default_rng(5)
    hits = 0
    for r in range(60):
        study, wa, wb = rng.normal(0, 0.1, 100), rng.normal(0, 0.1, 100), rng.normal(0, 0.1, 100)
        a, b = mean_result("m", "x", 0.5 + study + wa), mean_result("m", "x", 0.5 + study + wb)
        out = seed_study_test([a] * 3, [b], n_resamples=200, seed=r, b_deterministic=True, a_deterministic=True)
        assert out["p_seed_t"] == 0.0 and out["seed_sd"] == 0.0 and out["p_value"] == out["p_boot"]
        hits += out["p_value"] < ALPHA
    assert hits / 60 <= ALPHA + 0.05


def test_single_stochastic_b_run_is_refused():
    """One run of a stochastic B against every seed of A: B's seed effect enters all differences identically.
    The mode rejected well above alpha when it was allowed; it is refused now unless B is declared deterministic."""
    r = _rates(0.0, 0.03, single_b=True)
    assert r["combined"] >= 2 * ALPHA  # what the refused mode did (0.14 with these seeds)
    rng = np.random.default_rng(3)
    a, b = _replicate(rng, 0.0, 0.03)
    for bad in ([b[0]], [b[0]] * 3):
        with pytest.raises(ValueError, match="stochastic B.*b_deterministic=True"):
            seed_study_test(a, bad, n_resamples=10)
    ok = seed_study_test(a, b[:1], n_resamples=50, b_deterministic=True)  # stated deterministic: allowed
    assert ok == seed_study_test(a, [b[0]] * 3, n_resamples=50, b_deterministic=True)
    assert ok["n_seeds"] == 3 and ok["value_b"] == pytest.approx(b[0].corpus)
    seed_study_test(a, b, n_resamples=10)  # one B run per seed: fine
    seed_study_test(a[:1], b[:1], n_resamples=10)  # one seed each: a single run's study bootstrap, fine


def test_consistent_difference_is_detected():
    power = _rates(0.05, 0.005, reps=60)["combined"]
    assert power >= 0.6, f"power {power:.2f}"


def test_consistent_difference_fields():
    rng = np.random.default_rng(0)
    a = [mean_result("m", "x", rng.normal(0.7 + u, 0.05, 80)) for u in (0.0, 0.01, -0.01)]
    b = [mean_result("m", "x", rng.normal(0.5 + u, 0.05, 80)) for u in (0.0, -0.01, 0.01)]
    r = seed_study_test(a, b, n_resamples=300)
    assert r["p_value"] < ALPHA and r["n_same_sign"] == 3 and r["n_seeds"] == 3
    assert r["ci_low"] > 0 and r["ci_low"] <= r["diff"] <= r["ci_high"]
    assert r["p_value"] == max(r["p_boot"], r["p_seed_t"])
    assert r["seed_sd"] == pytest.approx(np.std(r["seed_diffs"], ddof=1))


def test_deterministic_b_run_and_single_seed():
    rng = np.random.default_rng(2)
    a = [mean_result("m", "x", rng.normal(0.6, 0.1, 50)) for _ in range(3)]
    b = mean_result("m", "x", rng.normal(0.5, 0.1, 50))
    r = seed_study_test(a, [b], n_resamples=200, b_deterministic=True)
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
    import sdrlib.experiments.claims._audit as claims_audit
    import sdrlib.experiments.claims._grpo as claims_grpo
    import sdrlib.experiments.claims._runs as claims_runs
    import sdrlib.experiments.conclusions as conclusions
    import sdrlib.experiments.pruning_checks as pruning_checks

    assert [format_p(p) for p in (0.0412, 0.0005, 0.00049, 1.0)] == ["p = 0.041", "p = 0.001", "p < 0.001", "p = 1.000"]
    assert format_p(float("nan")) == "p = nan"
    for mod in (claims_audit, claims_grpo, claims_runs, conclusions, pruning_checks):
        assert mod.format_p is format_p and not hasattr(mod, "_p") and not hasattr(mod, "_fmt_p")


if __name__ == "__main__":  # the rates quoted in seed_study_test's docstring
    for name, kw in (("seed noise (seed SD 0.03)", dict(sd_seed=0.03)), ("no seed noise, study noise", NO_SEED_NOISE),
                     ("single stochastic B run (seed SD 0.03)", dict(sd_seed=0.03, single_b=True))):
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in _rates(0.0, **kw).items()))
