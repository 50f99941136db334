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
    t = dec.training_table(c, n_steps=2)
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


def _chain_table(f1, chains):
    return pd.concat([dec.decomposition_table(f1, ch).assign(chain=ch[-1][1]) for ch in chains], ignore_index=True)


def test_share_view_shows_a_share_only_when_it_means_something():
    f1 = {}
    for s, (sft, noise, cham, haus) in enumerate([(0.30, 0.25, 0.10, 0.29), (0.32, 0.27, 0.12, 0.31)]):
        f1.update({("sft", s): sft, ("noise", s): noise, ("cham", s): cham, ("haus", s): haus})
    chains = [[("sft", "noise"), ("noise", "cham")], [("sft", "noise"), ("noise", "haus")]]
    t = dec.share_view(_chain_table(f1, chains), f1, chains)
    cham, haus = t[t.chain == "cham"], t[t.chain == "haus"]
    assert cham["share of drop"].tolist() == ["0.25", "0.75"] and set(cham["share shown?"]) == {"yes"}
    # haus: the steps cancel (down, then up), the raw ratio would be huge; blank with the reason
    assert set(haus["share of drop"]) == {""} and "opposite" in haus["share shown?"].iloc[0]
    one = {k: v for k, v in f1.items() if k[1] == 0}
    t1 = dec.share_view(_chain_table(one, chains[:1]), one, chains[:1])
    assert set(t1["share of drop"]) == {""} and t1["share shown?"].iloc[0].startswith("1 seed")
    noisy = {**f1, ("cham", 1): 0.60}  # totals -0.20 and +0.28: mean within its SD
    t2 = dec.share_view(_chain_table(noisy, chains[:1]), noisy, chains[:1])
    assert set(t2["share of drop"]) == {""}


def test_share_view_keeps_the_numbers_of_the_table():
    f1 = {("sft", 0): 0.3, ("fmt", 0): 0.3, ("sft", 1): 0.3, ("fmt", 1): 0.3}
    raw = _chain_table(f1, [[("sft", "fmt")]])
    t = dec.share_view(raw, f1, [[("sft", "fmt")]])
    assert t["share shown?"].iloc[0] == "total change 0" and t["change"].iloc[0] == 0.0
    assert raw["share of drop"].isna().all()  # the input frame is not modified
