"""The one verdict rule (sdrlib.metrics.verdict): Holm's adjustment against worked values, the detectable effect
of the combined test (both halves, the binding one named), and the verdict's conditions each able to fail."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdrlib.metrics import verdict as V


def test_holm_matches_worked_values_and_keeps_nan_out_of_the_family():
    # Holm (1979): sorted 0.005*4, 0.01*3, 0.03*2, 0.04*1 -> 0.02, 0.03, 0.06, max(0.06, 0.04)
    assert V.holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = V.holm([0.2, np.nan, 0.01])
    assert np.isnan(out[1]) and out.tolist()[0] == pytest.approx(0.2) and out[2] == pytest.approx(0.02)
    assert V.holm([0.9, 0.8, 0.7]).max() <= 1.0
    assert V.holm([]).size == 0


def test_holm_is_bonferroni_for_the_smallest_and_never_below_the_raw_p():
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 0.2, 30)
    adj = V.holm(p)
    assert adj[np.argmin(p)] == pytest.approx(min(1, p.min() * 30))
    assert (adj >= p - 1e-15).all()
    order = np.argsort(p)
    assert (np.diff(adj[order]) >= -1e-15).all()


def test_the_study_half_reads_the_bootstrap_interval_the_issue_quotes():
    se = V.interval_se(-0.012, 0.017)
    assert se == pytest.approx(0.0074, abs=5e-5)
    mde, binding = V.detectable_effect(seed_sd=0.001, n_seeds=3, study_se=se)
    assert binding == "studies" and mde == pytest.approx(0.0207, abs=5e-4)   # the README said 0.004


def test_the_seed_half_binds_when_seeds_are_noisy_and_is_the_non_central_t_power():
    mde, binding = V.detectable_effect(seed_sd=0.02, n_seeds=3, study_se=0.005)
    crit, nc = stats.t.ppf(0.975, 2), mde / 0.02 * np.sqrt(3)
    assert binding == "seeds" and stats.nct.sf(crit, 2, nc) + stats.nct.cdf(-crit, 2, nc) == pytest.approx(0.8)
    # the usual approximation (t quantiles added) is a little below it
    assert (stats.t.ppf(0.975, 2) + stats.t.ppf(0.8, 2)) * 0.02 / np.sqrt(3) < mde
    assert V.detectable_effect(seed_sd=np.nan, n_seeds=1, study_se=np.nan) == (pytest.approx(np.nan, nan_ok=True), "")
    assert V.detectable_effect(seed_sd=np.nan, n_seeds=1, study_se=0.01)[1] == "studies"


def test_seeds_and_studies_needed_reach_the_difference():
    k = V.seeds_needed(0.03, 0.02)
    assert V.detectable_effect(seed_sd=0.02, n_seeds=int(k), study_se=0)[0] <= 0.03
    assert V.detectable_effect(seed_sd=0.02, n_seeds=int(k) - 1, study_se=0)[0] > 0.03
    n = V.studies_needed(0.01, 0.0074, 100)
    assert V.detectable_effect(seed_sd=np.nan, n_seeds=1, study_se=0.0074 * np.sqrt(100 / n))[0] <= 0.01
    assert np.isnan(V.studies_needed(0.0, 0.0074, 100)) and np.isinf(V.seeds_needed(1e-6, 0.5))


@pytest.mark.parametrize("change, expect", [
    ({}, "above"),
    ({"diff": -0.03, "ci_low": -0.05, "ci_high": -0.01}, "below"),
    ({"p_adjusted": 0.06}, V.NO_DIFF),                    # not significant after the family's adjustment
    ({"ci_low": -0.001}, V.NO_DIFF),                      # the interval holds 0
    ({"diff": float("nan")}, V.NO_DIFF),
    ({"diff": 0.0}, V.NO_DIFF),
])
def test_each_condition_of_the_verdict_can_fail(change, expect):
    args = dict(diff=0.03, p_adjusted=0.01, ci_low=0.01, ci_high=0.05)
    assert V.verdict(**{**args, **change}) == expect


def test_the_rule_finds_its_own_detectable_effect_at_its_power_however_many_seeds():
    """Seeds only (no study noise), a family of 14: a true difference of the detectable effect is found by the rule
    (Holm-level t-test over seeds, interval excluding 0) about 80 % of the time at 3, 10 and 20 seeds, while
    requiring every seed's sign (the earlier rule) would find it ever more rarely as seeds are added."""
    rng, m = np.random.default_rng(0), 14
    for k in (2, 3, 10, 20):
        mde, binding = V.detectable_effect(seed_sd=1.0, n_seeds=k, study_se=0.0, alpha=0.05 / m)
        assert binding == "seeds"
        d = rng.normal(mde, 1.0, size=(4000, k))
        t = stats.ttest_1samp(d, 0.0, axis=1)
        lo, hi = t.confidence_interval(0.95)
        found = [V.verdict(diff=float(x), p_adjusted=min(1.0, float(p) * m), ci_low=float(a), ci_high=float(b))
                 != V.NO_DIFF for x, p, a, b in zip(d.mean(1), t.pvalue, lo, hi)]
        assert np.mean(found) == pytest.approx(0.8, abs=0.025)
        unanimous = np.mean(np.array(found) & (d > 0).all(1))
        assert unanimous < {2: 0.83, 3: 0.83, 10: 0.6, 20: 0.05}[k]


def test_untested_words():
    assert V.untested_direction(0.1) == "higher mean, not tested"
    assert V.untested_direction(-0.1) == "lower mean, not tested"
    assert V.untested_direction(0.0) == "equal means"


def test_family_verdicts_adjusts_over_the_family_and_names_what_binds():
    t = pd.DataFrame({
        "A": ["X", "Y", "Z"], "B": ["SFT"] * 3,
        "diff": [0.05, 0.004, -0.02], "p_value": [0.001, 0.625, 0.03],
        "ci_low": [0.03, -0.012, -0.04], "ci_high": [0.07, 0.017, -0.001],
        "seed_sd": [0.004, 0.002, 0.03], "n_same_sign": [5, 3, 5], "n_seeds": [5, 5, 5]})
    out = V.family_verdicts(t, n_studies=400)
    assert out.family_size.iloc[0] == 3
    assert out.p_holm.tolist() == pytest.approx([0.003, 0.625, 0.06])
    # Z alone would be "below" at p = 0.03; the family of three makes it 0.06
    assert out.verdict.tolist() == ["above", V.NO_DIFF, V.NO_DIFF]
    y = out.iloc[1]
    assert y.binding == "studies" and np.isnan(y.seeds_needed) and y.studies_needed > 400
    z = out.iloc[2]
    assert z.binding == "seeds" and z.seeds_needed > 5 and np.isnan(z.studies_needed)
    # the detectable effect is at the level Holm tests the smallest p: alpha / m
    se = V.interval_se(-0.012, 0.017)
    assert y.mde == pytest.approx(max(V.detectable_effect(seed_sd=0.002, n_seeds=5, study_se=se, alpha=0.05 / 3)[0],
                                      0))


def test_family_verdicts_prefers_the_bootstrap_interval_when_the_table_has_it():
    base = {"diff": [0.004], "p_value": [0.6], "ci_low": [-0.03], "ci_high": [0.04], "seed_sd": [0.0],
            "n_same_sign": [3], "n_seeds": [3]}
    wide = V.family_verdicts(pd.DataFrame(base), n_studies=100)
    narrow = V.family_verdicts(pd.DataFrame({**base, "boot_ci_low": [-0.01], "boot_ci_high": [0.018]}),
                               n_studies=100)
    assert narrow.mde.iloc[0] < wide.mde.iloc[0]


def test_family_verdicts_reads_the_study_half_from_study_se_before_any_interval():
    """The combined interval holds the seed half too (its t part is wide with 3 seeds), so the study standard error
    read from it overstates the noise more test studies would remove; ``study_se`` (seeds held fixed) is used."""
    base = {"diff": [0.004], "p_value": [0.6], "ci_low": [-0.03], "ci_high": [0.04], "seed_sd": [0.0],
            "n_same_sign": [3], "n_seeds": [3]}
    wide = V.family_verdicts(pd.DataFrame(base), n_studies=100)
    exact = V.family_verdicts(pd.DataFrame({**base, "study_se": [0.005]}), n_studies=100)
    z = stats.norm.ppf(1 - 0.05 / 2) + stats.norm.ppf(0.8)
    assert exact.mde.iloc[0] == pytest.approx(z * 0.005) and exact.mde.iloc[0] < wide.mde.iloc[0]
    nan = V.family_verdicts(pd.DataFrame({**base, "study_se": [np.nan]}), n_studies=100)
    assert nan.mde.iloc[0] == pytest.approx(wide.mde.iloc[0])  # no study_se: the interval stands in


def test_seed_study_test_reports_the_study_half_with_seeds_held_fixed():
    from sdrlib.metrics.base import mean_result
    from sdrlib.metrics.significance import seed_study_test

    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.1, 400)
    # seeds differ by a constant each (pure seed noise), the studies carry the same noise in every seed
    a = [mean_result("m", "x", 0.6 + u + noise) for u in (0.0, 0.05, -0.05)]
    b = [mean_result("m", "x", 0.5 + noise * 0.5 + rng.normal(0, 0.05, 400)) for _ in range(3)]
    r = seed_study_test(a, b, n_resamples=400, seed=1)
    # about the paired standard error of a mean difference over 400 studies (seeds add nothing to it)
    per_seed = np.mean([np.std(np.asarray(x.sample) - np.asarray(y.sample), ddof=1) for x, y in zip(a, b)]) / 20
    assert 0.5 * per_seed < r["study_se"] < 1.2 * per_seed
    assert r["study_se"] < V.interval_se(r["ci_low"], r["ci_high"])  # the combined interval also holds seeds


@pytest.mark.parametrize("call, says", [
    (lambda: V.holm(["a", 0.1]), "needs p-values"),
    (lambda: V.holm([1.5, 0.01]), r"lie in \[0, 1\]"),
    (lambda: V.holm([-0.1, 0.01]), r"lie in \[0, 1\]"),
    (lambda: V.detectable_effect(seed_sd=0.01, n_seeds=3, study_se=-0.01), "study_se = -0.01"),
    (lambda: V.detectable_effect(seed_sd=-1, n_seeds=3, study_se=0.01), "seed_sd = -1"),
    (lambda: V.detectable_effect(seed_sd=0.01, n_seeds=3, study_se=0.01, alpha=1.5), r"alpha = 1.5: a probability"),
    (lambda: V.detectable_effect(seed_sd=0.01, n_seeds=3, study_se=0.01, power=0), "power = 0"),
    (lambda: V.family_verdicts(pd.DataFrame({"diff": [0.1]}), n_studies=10), r"lacks \['p_value', 'ci_low'"),
])
def test_inputs_the_rule_cannot_read_are_named(call, says):
    with pytest.raises(V.VerdictInputError, match=says):
        call()


def test_family_directions_holm_over_the_table_and_no_direction_without_a_test():
    import pandas as pd

    from sdrlib.metrics.verdict import NO_DIFF, family_directions

    t = pd.DataFrame({"diff": [0.02, 0.03], "ci_low": [0.01, 0.01], "ci_high": [0.03, 0.05], "p_value": [0.01, 0.04]})
    assert family_directions(t) == ["above", "above"]  # Holm: 0.02, 0.04
    assert family_directions(t.assign(p_value=[0.03, 0.04])) == [NO_DIFF, NO_DIFF]  # Holm: 0.06, 0.06
    # the interval alone is no test; a seed against the mean's sign is reported, not a condition
    assert family_directions(t.drop(columns="p_value")) == [NO_DIFF, NO_DIFF]
    assert family_directions(t.assign(n_seeds=3, n_same_sign=[3, 2])) == ["above", "above"]
    with pytest.raises(V.VerdictInputError, match="lacks"):
        family_directions(t.drop(columns="ci_low"))


def test_a_study_se_column_the_rule_cannot_read_is_named_and_a_missing_one_stands_aside():
    """Before: text in ``study_se`` was read as missing without a word (family_verdicts) or a bare ValueError /
    TypeError (size_study, also for None); a negative value gave a negative detectable effect in size_study; one
    test study gave study_se 0 (no study noise) where there is no variance to measure."""
    from sdrlib.experiments.study.size import size_study
    from sdrlib.metrics.base import mean_result
    from sdrlib.metrics.significance import seed_study_test

    fam = {"diff": [0.01], "p_value": [0.2], "ci_low": [-0.01], "ci_high": [0.03], "seed_sd": [0.005],
           "n_same_sign": [3], "n_seeds": [3]}
    size = {"A": ["R_Cham"], "B": ["SFT"], "metric": ["bertscore_f1"], "ci_low": [-0.012], "ci_high": [0.017],
            "seed_sd": [0.004]}
    calls = (lambda se: V.family_verdicts(pd.DataFrame({**fam, "study_se": [se]}), n_studies=100).mde[0],
             lambda se: size_study(pd.DataFrame({**size, "study_se": [se]}), n_studies=100).studies_for_target[0])
    for call in calls:
        for bad, says in (("abc", "study_se = 'abc' \\(row 0\\)"), (-0.01, "study_se = -0.01 \\(row 0\\)")):
            with pytest.raises(V.VerdictInputError, match=says):
                call(bad)
        assert call(None) == call(np.nan) == call(np.inf)  # none finite: the interval stands in
        assert call("0.004") == call(0.004)  # a CSV's numeric text
    one = [mean_result("m", "x", np.array([0.5 + u])) for u in (0.0, 0.1, 0.2)]
    other = [mean_result("m", "x", np.array([0.4 + u])) for u in (0.05, 0.0, 0.1)]
    assert np.isnan(seed_study_test(one, other, n_resamples=50)["study_se"])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("n_seeds, alpha", [(2, 1e-8), (2, 1e-12), (3, 1e-8), (1000, 0.05 / 30)])
def test_the_seed_half_at_extreme_levels_is_finite_and_not_below_the_quantile_sum(n_seeds, alpha):
    # two seeds at a tiny level: the non-central t is slow and inexact there, so the quantile sum stands in
    mde, _ = V.detectable_effect(seed_sd=1.0, n_seeds=n_seeds, study_se=0.0, alpha=alpha)
    approx = (stats.t.ppf(1 - alpha / 2, n_seeds - 1) + stats.t.ppf(0.8, n_seeds - 1)) / np.sqrt(n_seeds)
    assert np.isfinite(mde) and mde >= approx * (1 - 1e-9)


def test_a_power_at_most_the_level_needs_no_difference():
    assert V.detectable_effect(seed_sd=1.0, n_seeds=3, study_se=np.nan, alpha=0.05, power=0.01)[0] == 0.0


def test_the_results_page_states_the_rule_this_module_applies():
    # docs/results.md says the rule in words; the words are rule_sentence's, so a change of the rule shows there
    from pathlib import Path

    page = " ".join((Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text(encoding="utf-8").split())
    assert V.rule_sentence() in page
    assert "every seed's difference has the mean's sign" not in page  # the rule's earlier form
    assert V.rule_sentence(0.01, "in this run (x)").startswith("a difference is stated only when, in this run (x), its")
    assert "below 0.01 and" in V.rule_sentence(0.01)


def test_a_detectable_effect_beyond_the_metrics_range_is_said_in_words():
    # a difference of two scores in [0, 1] cannot exceed 1: a "detectable 1.265" is a difference the test cannot see
    assert V.detectable_phrase([0.018, 0.35]) == "detectable at this size: 0.018 to 0.350"
    assert V.detectable_phrase(0.02) == "detectable at this size: 0.020"
    two = V.detectable_phrase([0.018, 1.265, np.nan])
    assert two.startswith("detectable at this size: 0.018; 1 of 2 not detectable at this size") and "1.265" not in two
    assert V.detectable_phrase([1.2, 3.0]).startswith("not detectable at this size") and V.detectable_phrase([]) == ""
