"""Tests of the dataset statistics behind notebook 00 (sdrlib.data.stats; its figures: tests/plots/test_plots_data.py)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from sdrlib.config import load_profile
from sdrlib.data import Record, load_split, stratum
from sdrlib.data.stats import pick_examples, pixel_probe, prevalence_table, sentence_counts, summary_table


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    import os

    root = tmp_path_factory.mktemp("sdr")
    old = os.environ.get("SDR_ROOT")
    os.environ["SDR_ROOT"] = str(root)
    try:
        cfg = load_profile("smoke", {"data.n_train": 120, "data.n_val": 4, "data.n_test": 60, "data.image_size": 32})
        yield {s: load_split(cfg, s) for s in ("train", "val", "test")}
    finally:
        if old is None:
            os.environ.pop("SDR_ROOT", None)
        else:
            os.environ["SDR_ROOT"] = old


def test_summary_and_prevalence_tables(splits):
    summ = summary_table(splits).set_index("split")
    assert summ.loc["train", "studies"] == 120 and summ.loc["val", "images"] == 4
    assert 3 <= summ.loc["train", "mean_sent_findings"] <= 7.5
    assert 1 <= summ.loc["train", "mean_sent_impression"] <= 3
    assert 0 < summ.loc["train", "unique_ratio_findings"] < 1
    assert summ.loc["train", ["no_finding", "single", "multi"]].sum() == 120
    prev = prevalence_table(splits)
    nf = sum(r.labels.get("No Finding") == 1 for r in splits["train"]) / 120 * 100
    assert prev.loc["No Finding", "train pos%"] == pytest.approx(nf)
    assert ((prev.filter(like="%") >= 0) & (prev.filter(like="%") <= 100)).all().all()
    # without labels a split has no prevalence columns
    unl = [Record("x", [], "A.", "B.", None, "train")]
    assert prevalence_table({"train": unl}).shape[1] == 0


def test_sentence_counts_and_examples(splits):
    c = sentence_counts(splits["val"])
    assert list(c.columns) == ["study_id", "findings", "impression"] and len(c) == 4
    ex = pick_examples(splits["test"], n=6, seed=0)
    assert len(ex) == 6 and len({r.study_id for r in ex}) == 6
    assert {stratum(r.labels) for r in ex} == {"no_finding", "single", "multi"}


def test_pixel_probe_reads_visible_findings_better_than_chance(splits):
    probe = pixel_probe(splits["train"], splits["test"], ["Cardiomegaly", "Support Devices"], size=16).set_index(
        "observation")
    assert set(probe.columns) == {"n_pos_train", "n_pos_test", "auroc"}
    aucs = probe["auroc"].dropna()
    assert len(aucs) >= 1 and aucs.max() > 0.7
    rare = pixel_probe(splits["train"][:10], splits["test"][:10], ["Fracture"], size=8)
    assert np.isnan(rare.loc[0, "auroc"])  # too few positives: reported as NaN, not fitted


def test_language_stats_on_a_hand_made_corpus():
    from sdrlib.data.stats import IU_XRAY_LANGUAGE, language_stats, language_table

    recs = [Record("a", [], "The lungs are clear. No effusion.", "Normal chest.", None, "train"),
            Record("b", [], "No effusion. The lungs are clear.", "Normal chest.", None, "train"),
            Record("c", [], "Right-sided effusion of 2.5 cm.", "Small effusion. Normal chest.", None, "train")]
    st = language_stats(recs)
    # sentences: 2+1, 2+1, 1+2 = 9; distinct: lungs clear, no effusion, normal chest, right-sided..., small effusion
    assert st["unique_sentence_ratio"] == pytest.approx(5 / 9)
    # words: the lungs are clear no effusion normal chest right-sided of cm small (numbers are not words)
    assert st["distinct_words"] == 12
    # Findings alone: the lungs are clear no effusion right-sided of cm (issue 26: like with like vs IU-Xray)
    assert st["distinct_words_findings"] == 9
    assert st["findings_sentences"] == pytest.approx(5 / 3) and st["impression_sentences"] == pytest.approx(4 / 3)
    assert st["top_findings_set_pct"] == pytest.approx(200 / 3)  # a and b share a set (order ignored)
    words = 4 + 2 + 2 + 2 + 4 + 2 + 4 + 2 + 2
    assert st["words_per_sentence"] == pytest.approx(words / 9)
    tab = language_table(recs)
    assert list(tab.columns) == ["statistic", "counts", "this corpus", "IU-Xray reference", "target"]
    assert list(tab["statistic"]) == list(st)
    # every IU-Xray number sits on the row counted like it; the both-sections vocabulary has none
    assert set(IU_XRAY_LANGUAGE) <= set(st)
    row = tab.set_index("statistic")
    assert row.loc["distinct_words_findings", "IU-Xray reference"] == 1321
    assert row.loc["distinct_words_findings", "counts"] == "Findings words"
    assert np.isnan(row.loc["distinct_words", "IU-Xray reference"])
    assert language_stats([])["distinct_words"] == 0
