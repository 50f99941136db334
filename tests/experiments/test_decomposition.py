"""Tests for sdrlib.experiments.decomposition (length, cut share, stated findings, decomposition of the drop)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from sdrlib.experiments import decomposition as dec
from sdrlib.reports import build_template


@dataclass
class R:
    study_id: str
    findings: str
    impression: str
    labels: dict


RECS = [R("a", "The lungs are clear. Heart size is normal.", "Normal.", {"No Finding": 1}),
        R("b", "There is a small right pleural effusion.", "Effusion.", {"Pleural Effusion": 1}),
        R("c", "Moderate cardiomegaly. Small left pleural effusion.", "Cardiomegaly, effusion.",
          {"Cardiomegaly": 1, "Pleural Effusion": 1})]
words = lambda t: len(t.split())  # noqa: E731


def test_generation_stats_reads_strata_length_cut_and_positives():
    texts = [build_template(r.findings, r.impression) for r in RECS]
    texts[2] = "<think> cut off before the end"  # no template: invalid, 0 sentences, 0 positives
    st = dec.generation_stats(texts, RECS, count_tokens=words, limit=7)
    assert st.stratum.tolist() == ["no_finding", "single", "multi"]
    assert st.valid.tolist() == [True, True, False] and st.positives.tolist()[:2] == [0, 1]
    assert st.sentences.tolist() == [2, 1, 0] and st.cut.tolist() == [True, True, False]  # 7+ words = cut
    with pytest.raises(ValueError, match="2 generations for 3"):
        dec.generation_stats(texts[:2], RECS, count_tokens=words)


def test_stratum_table_has_reference_first_and_averages_seeds():
    normal = build_template(RECS[0].findings, RECS[0].impression)
    gens = {("x", 0): [normal] * 3, ("x", 1): [build_template(r.findings, r.impression) for r in RECS]}
    t = dec.stratum_table(gens, RECS, count_tokens=words)
    assert t.config.iloc[0] == "reference"
    row = t[(t.config == "x") & (t.stratum == "multi")].iloc[0]
    assert row.seeds == 2 and row.positives == pytest.approx(1.0)  # (0 + 2) / 2
    assert t[(t.config == "reference") & (t.stratum == "all")].iloc[0]["no positive"] == pytest.approx(1 / 3)


def test_training_table_first_and_last_steps():
    c = pd.DataFrame({"config": "fmt", "seed": 0, "step": np.arange(1, 9), "completions/clipped_ratio": 0.0,
                      "completions/mean_length": np.arange(8.0), "kl": 0.1})
    t = dec.training_table(c, k=2)
    assert t.iloc[0]["length first"] == 0.5 and t.iloc[0]["length last"] == 6.5 and "R_fmt first" not in t


def test_decomposition_shares_add_up():
    f1 = {("sft", 0): 0.3, ("noise", 0): 0.2, ("fmt", 0): 0.15, ("cham", 0): 0.1}
    t = dec.decomposition_table(f1, [("sft", "noise"), ("noise", "fmt"), ("fmt", "cham")])
    assert t.change.tolist() == pytest.approx([-0.1, -0.05, -0.05])
    assert t["share of drop"].sum() == pytest.approx(1.0) and t["share of drop"].iloc[0] == pytest.approx(0.5)


def test_paired_f1_table_matches_the_suite():
    good = [build_template(r.findings, r.impression) for r in RECS]
    normal = [build_template(RECS[0].findings, RECS[0].impression)] * 3
    t = dec.paired_f1_table({("a", 0): good, ("b", 0): normal}, RECS, [("a", "b")], n_resamples=50)
    assert len(t) == 1 and t.iloc[0]["value_a"] > t.iloc[0]["value_b"] and t.iloc[0]["diff"] > 0
    assert {"p_value", "ci_low", "ci_high", "A", "B"} <= set(t.columns)
