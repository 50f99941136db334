"""sdrlib.experiments.tables: the one way notebooks 03-06 build paired comparison tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdrlib.experiments import tables
from sdrlib.metrics.significance import COMPARISON_COLUMNS, paired_bootstrap
from sdrlib.metrics.suite import compare_systems, score_reports


def _refs(n=12):
    return [{"findings": f"Finding number {i} is present.", "impression": "Normal."} for i in range(n)]


def _scores(preds, refs):
    return score_reports(preds, refs, metrics=["rouge"])


GOOD = [f"<think> Finding number {i} is present. </think> <answer> Normal. </answer>" for i in range(12)]
HALF = [GOOD[i] if i % 2 else "<think> Something else. </think> <answer> Normal. </answer>" for i in range(12)]
BAD = ["<think> Something else entirely. </think> <answer> Abnormal. </answer>"] * 12


def test_paired_table_rows_are_paired_bootstraps_in_the_one_schema():
    refs = _refs()
    a, b = _scores(GOOD, refs), _scores(HALF, refs)
    ra = {r.name: r for r in a.results["findings"]}
    rb = {r.name: r for r in b.results["findings"]}
    comps = [({"metric": m, "section": "findings", "A": "pruning", "B": "standard"}, ra[m], rb[m], {"note": m.upper()})
             for m in ra]
    t = tables.paired_table(comps, n_resamples=300, seed=3)
    assert list(t.columns) == ["metric", "section", *COMPARISON_COLUMNS, "note"]
    for row, (keys, x, y, _) in zip(t.itertuples(index=False), comps):
        bs = paired_bootstrap(x, y, n_resamples=300, seed=3)
        assert (row.value_a, row.value_b, row.diff, row.ci_low, row.ci_high, row.p_value) == (
            bs["value_a"], bs["value_b"], bs["diff"], bs["ci_low"], bs["ci_high"], bs["p_value"])
    assert (t["diff"] > 0).all()
    assert tables.paired_table([], n_resamples=10).empty
    with pytest.raises(ValueError, match="'A' and 'B'"):  # a comparison names its two systems
        tables.paired_table([({"metric": "m"}, ra[next(iter(ra))], rb[next(iter(rb))], {})], n_resamples=10)


def test_system_comparisons_is_compare_systems_per_other_with_a_B_column():
    refs = _refs()
    a, b, c = _scores(GOOD, refs), _scores(HALF, refs), _scores(BAD, refs)
    t = tables.system_comparisons(a, {"half": b, "bad": c}, n_resamples=200, seed=1)
    expect = pd.concat([compare_systems(a, x, n_resamples=200, seed=1).assign(B=n) for n, x in (("half", b), ("bad", c))],
                       ignore_index=True)
    pd.testing.assert_frame_equal(t, expect)
    only = tables.system_comparisons(a, {"half": b}, metrics=["rouge1"], n_resamples=200, seed=1)
    assert set(only.metric.str.split("@").str[0]) == {"rouge1"}


def test_significance_table_pairs_seeds_against_single_sft():
    refs = [{"findings": f"Finding number {i} is present.", "impression": "Normal."} for i in range(12)]
    good = [f"<think> Finding number {i} is present. </think> <answer> Normal. </answer>" for i in range(12)]
    bad = ["<think> Something else entirely. </think> <answer> Abnormal. </answer>"] * 12
    sc = lambda preds: score_reports(preds, refs, metrics=["rouge"])  # noqa: E731
    scores = {("sft", 0): sc(bad), ("chamfer", 0): sc(good), ("chamfer", 1): sc(good)}
    # fixed texts: SFT's one run has no run-to-run noise, so the caller may say so and use it for every seed; chamfer's
    # two seeds are the same fixed texts (copies of one run), declared deterministic too
    t = tables.significance_table(scores, [("chamfer", "sft")], ["rouge1"], n_resamples=200,
                                  deterministic={"sft", "chamfer"})
    assert set(t.section) == {"findings", "impression"}
    row = t[t.section == "findings"].iloc[0]
    assert row.A == "R_Cham" and row.B == "SFT" and row.n_seeds == 2 and row.n_sig == 2 and row["diff"] > 0.5
    assert row.n_same_sign == 2 and row.seed_sd == 0 and row.p_value < 0.05 and row.ci_low > 0
    assert {"value_a", "value_b", "ci_high", "p_seeds"} <= set(t.columns)
    # not declared deterministic: one stochastic SFT run is not reused for every seed, seed 0 meets seed 0 only
    single = tables.significance_table(scores, [("chamfer", "sft")], ["rouge1"], n_resamples=200)
    assert (single.n_seeds == 1).all() and len(single) == len(t)
    with pytest.raises(ValueError, match="b_deterministic=True"):
        tables.seed_row([scores[("chamfer", 0)].result("findings", row.metric)] * 2,
                        [scores[("sft", 0)].result("findings", row.metric)], n_resamples=10)


def test_significance_table_pairs_seed_with_seed_and_drops_unmatched():
    refs = [{"findings": f"Finding number {i} is present.", "impression": "Normal."} for i in range(12)]
    good = [f"<think> Finding number {i} is present. </think> <answer> Normal. </answer>" for i in range(12)]
    bad = ["<think> Something else entirely. </think> <answer> Abnormal. </answer>"] * 12
    sc = lambda preds: score_reports(preds, refs, metrics=["rouge"])  # noqa: E731
    scores = {("sft", 0): sc(bad), ("sft", 1): sc(bad), ("chamfer", 0): sc(good), ("chamfer", 2): sc(good)}
    t = tables.significance_table(scores, [("chamfer", "sft")], ["rouge1"], n_resamples=100)
    assert (t.n_seeds == 1).all()  # only seed 0 has both


@pytest.fixture(scope="module")
def seed_scores():
    refs = [{"findings": f"Finding number {i} is present.", "impression": "Normal."} for i in range(12)]
    good = [f"<think> Finding number {i} is present. </think> <answer> Normal. </answer>" for i in range(12)]
    bad = ["<think> Something else entirely. </think> <answer> Abnormal. </answer>"] * 12
    sc = lambda preds: score_reports(preds, refs, metrics=["rouge"])  # noqa: E731
    return {("sft", 0): sc(bad), ("sft", 1): sc(bad), ("chamfer", 2): sc(good), ("chamfer", 3): sc(good)}


@pytest.mark.parametrize("pairs, metrics, says", [
    ([("chamfr", "sft")], ["rouge1"], r"names \['chamfr'\], which the scores lack; configurations: \['chamfer', 'sft'\]"),
    ([("chamfer", "sft")], ["rougel"], r"metrics \['rougel'\] match no score; the scores hold \[.*'rougeL'"),
    ([("chamfer", "sft")], "rouge1", r"not one string: write \['rouge1'\]"),
    ([("chamfer", "sft")], [], r"match no score"),
    ([("chamfer", "sft")], ["rouge1"], r"chamfer \(seeds \[2, 3\]\) and sft \(seeds \[0, 1\]\) share no seed"),
])
def test_a_significance_request_that_matches_nothing_is_an_error_naming_it(seed_scores, pairs, metrics, says):
    with pytest.raises(tables.SignificanceRequestError, match=says):
        tables.significance_table(seed_scores, pairs, metrics, n_resamples=10)


def test_metric_prefixes_are_what_the_scores_hold(seed_scores):
    assert {"rouge1", "rouge2", "rougeL"} <= tables.metric_prefixes(seed_scores)
    assert "radgraph_complete" not in tables.metric_prefixes(seed_scores)


def test_compact_significance_reads_one_row_per_comparison():
    sig = pd.DataFrame([
        {"A": "R_Cham", "B": "SFT", "section": "findings", "metric": "bertscore_f1@mini", "diff": -0.0091,
         "ci_low": -0.034, "ci_high": 0.015, "p_value": 0.264},
        {"A": "R_Cham", "B": "SFT", "section": "findings", "metric": "clinical_f1_macro14@labeler", "diff": 0.05,
         "ci_low": 0.01, "ci_high": 0.09, "p_value": 0.0002},
        {"A": "R_Cham", "B": "SFT", "section": "impression", "metric": "bertscore_f1@mini", "diff": 0.5,
         "ci_low": 0.4, "ci_high": 0.6, "p_value": 0.5},
        {"A": "R_Haus", "B": "R_exact", "section": "findings", "metric": "bertscore_f1@mini", "diff": 0.001,
         "ci_low": -0.01, "ci_high": 0.012, "p_value": 0.9},
        {"A": "R_Haus", "B": "R_exact", "section": "findings", "metric": "rougeL", "diff": 0.1,
         "ci_low": 0.0, "ci_high": 0.2, "p_value": 0.05}])
    t = tables.compact_significance(sig, ["bertscore_f1", "clinical_f1_macro14"])
    assert list(t.index) == ["R_Cham vs SFT", "R_Haus vs R_exact"]
    assert list(t.columns) == ["bertscore_f1", "clinical_f1_macro14"]
    assert t.loc["R_Cham vs SFT", "bertscore_f1"] == "-0.009 [-0.034, +0.015] p = 0.264"  # Findings only
    assert t.loc["R_Cham vs SFT", "clinical_f1_macro14"] == "+0.050 [+0.010, +0.090] p < 0.001"
    assert t.loc["R_Haus vs R_exact", "clinical_f1_macro14"] == ""  # not compared on that metric
    assert max(len(line) for line in t.to_string().splitlines()) < 100  # reads without wrapping
    with pytest.raises(tables.SignificanceRequestError, match="lacks the columns"):
        tables.compact_significance(sig.drop(columns="p_value"), ["bertscore_f1"])
