"""sdrlib.experiments.paper_comparison: notebook 07's "this run vs the paper" table, its answer and conclusion."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from sdrlib.experiments import paper_comparison as pc

# --------------------------------------------------------------------------------------------- the paper's numbers
#: SDR Tables 1-2 (Findings), per model (Qwen3-VL-2B, Qwen3-VL-4B, Gemma3-4B): SFT, R_exact, R_Cham, R_Haus, typed
#: from the paper's per-model rows so the Mean block in PAPER_GRPO is checked against them
PER_MODEL = {
    "Tab. 1 (ReXGradient)": {
        "BERTScore F1": [(0.339, 0.332, 0.367, 0.339), (0.332, 0.331, 0.351, 0.333), (0.315, 0.336, 0.341, 0.333)],
        "CheXbert F1": [(0.705, 0.663, 0.734, 0.686), (0.689, 0.665, 0.731, 0.726), (0.670, 0.645, 0.690, 0.687)]},
    "Tab. 2 (MIMIC-CXR)": {
        "BERTScore F1": [(0.313, 0.276, 0.320, 0.335), (0.308, 0.263, 0.341, 0.343), (0.326, 0.321, 0.340, 0.329)],
        "CheXbert F1": [(0.499, 0.469, 0.481, 0.508), (0.488, 0.469, 0.511, 0.522), (0.499, 0.482, 0.501, 0.514)]},
}
#: SDR Table 4 (Findings) per model and distance: tokens saved %, BS-F1 and CheXbert F1 as (random, standard, pruning)
TABLE_4 = {
    "chamfer": [(53.4, (0.201, 0.230, 0.228), (0.515, 0.616, 0.595)), (42.1, (0.196, 0.234, 0.236), (0.639, 0.667, 0.672)),
                (48.9, (0.244, 0.255, 0.254), (0.705, 0.706, 0.699)), (55.3, (0.206, 0.244, 0.238), (0.688, 0.714, 0.702))],
    "hausdorff": [(44.2, (0.201, 0.225, 0.224), (0.515, 0.619, 0.605)), (55.9, (0.196, 0.224, 0.218), (0.639, 0.665, 0.648)),
                  (60.1, (0.244, 0.256, 0.249), (0.705, 0.708, 0.708)), (55.0, (0.206, 0.240, 0.238), (0.688, 0.713, 0.707))],
    "hung_nn": [(53.4, (0.201, 0.230, 0.226), (0.515, 0.616, 0.599)), (42.2, (0.196, 0.235, 0.235), (0.639, 0.670, 0.667)),
                (49.0, (0.244, 0.257, 0.252), (0.705, 0.712, 0.710)), (55.2, (0.206, 0.244, 0.238), (0.688, 0.715, 0.706))],
}


def test_the_paper_grpo_means_are_the_mean_of_its_per_model_rows():
    for table, metrics in PER_MODEL.items():
        for metric, rows in metrics.items():
            means = np.mean(rows, axis=0)
            got = [pc.PAPER_GRPO[table][metric][c] for c in ("SFT", "R_exact", "R_Cham", "R_Haus")]
            # the paper averages unrounded per-model values: its Mean block may differ from these by one in the last digit
            assert np.allclose(got, means, atol=0.0011), (table, metric, got, means.round(3))


def test_the_paper_pruning_numbers_are_table_4s():
    saved = [r[0] for rows in TABLE_4.values() for r in rows]
    assert (min(saved), max(saved)) == pc.PAPER_TOKENS_RANGE  # sec. 5.1: "42.1-60.1%"
    for d, rows in TABLE_4.items():
        assert pc.PAPER_PRUNING[d]["tokens saved %"] == pytest.approx(np.mean([r[0] for r in rows]), abs=0.051)
        for k, metric in ((1, "BS-F1"), (2, "CXB-14")):
            assert np.allclose(pc.PAPER_PRUNING[d][metric], np.mean([r[k] for r in rows], axis=0), atol=0.0011)


def test_table_3s_improvements():
    assert len(pc.PAPER_SELECTION_PCT["BS-F1"]) == len(pc.PAPER_SELECTION_PCT["CXB-14"]) == 13
    assert np.mean(pc.PAPER_SELECTION_PCT["BS-F1"]) == pytest.approx(12.0, abs=0.05)
    assert min(pc.PAPER_SELECTION_PCT["CXB-14"]) == -0.2 and max(pc.PAPER_SELECTION_PCT["BS-F1"]) == 22.5


# --------------------------------------------------------------------------------------------- a run's tables
def _grpo(tmp_path, cham_bs=(0.03, 0.001, 3)):
    """grpo_significance: R_Cham vs SFT on BERTScore above (all seeds agree, tiny p), everything else a null."""
    rows = []
    for a, b in (("R_Cham", "SFT"), ("R_Haus", "SFT"), ("R_Cham", "R_exact"), ("R_Haus", "R_exact")):
        for metric in ("bertscore_f1@x", "clinical_f1_macro14@labeler"):
            diff, p, same = cham_bs if (a, b, metric) == ("R_Cham", "SFT", "bertscore_f1@x") else (-0.01, 0.5, 2)
            rows.append({"A": a, "B": b, "section": "findings", "metric": metric, "value_a": 0.5 + diff,
                         "value_b": 0.5, "diff": diff, "ci_low": diff - 0.01, "ci_high": diff + 0.01, "p_value": p,
                         "seed_sd": 0.005, "n_same_sign": same, "n_seeds": 3})
    pd.DataFrame(rows).to_csv(tmp_path / "grpo_significance.csv", index=False)
    (tmp_path / "grpo_significance.meta.json").write_text(json.dumps({"protocol": "100 test studies, 3 seed(s)"}))


def _selection(tmp_path):
    rows = [{"policy": p, "section": "findings", "metric": m, "A": "ot+avg", "B": "random", "value_a": 0.1 + d,
             "value_b": 0.1, "diff": d, "ci_low": d - 0.005, "ci_high": d + 0.005, "p_value": p_}
            for p, m, d, p_ in (("SFT", "BS-F1", 0.002, 0.6), ("R_Cham", "BS-F1", 0.001, 0.7),
                                ("SFT", "CXB-14", -0.05, 0.001), ("R_Cham", "CXB-14", -0.04, 0.001))]
    pd.DataFrame(rows).to_csv(tmp_path / "05_significance.csv", index=False)


def _pruning(tmp_path):
    pd.DataFrame([{"policy": "SFT", "distance": d, "wu": 1, "p": 0.5, "source": src, "tokens saved %": s}
                  for d, src, s in (("chamfer", "live", 52.0), ("hausdorff", "replay", 40.0))]).to_csv(
        tmp_path / "06_tokens.csv", index=False)
    for name, b in (("06_pruning_vs_random", "random"), ("06_pruning_vs_standard", "standard")):
        pd.DataFrame([{"policy": "SFT", "section": "findings", "metric": m, "distance": d, "A": "pruning", "B": b,
                       "value_a": 0.5, "value_b": 0.5, "diff": 0.01, "ci_low": -0.01, "ci_high": 0.03, "p_value": 0.3}
                      for m in ("BS-F1", "CXB-14") for d in ("chamfer", "hausdorff")]).to_csv(
            tmp_path / f"{name}.csv", index=False)


def test_the_table_reads_each_claim_from_the_run_and_words_it_by_the_rule(tmp_path):
    _grpo(tmp_path)
    _selection(tmp_path)
    _pruning(tmp_path)
    t = pc.comparison_table(tmp_path)
    assert list(t.columns) == pc.COLUMNS and len(t) == 15
    cham = t[(t.claim == "GRPO: R_Cham vs SFT") & (t.metric == "BERTScore F1")].iloc[0]
    assert cham.verdict == "above" and cham.reading == "the paper's direction, under the rule"
    # each row names both instruments: the paper's and this run's (the backend its table records)
    assert cham["this run"] == "+0.030 (0.530 vs 0.500, 3 seeds); BERTScore F1 on x"
    assert cham["run source"] == "grpo_significance"
    assert cham.paper == "+0.024 (ReXGradient), +0.017 (MIMIC-CXR); BERTScore F1 (backbone not named)"
    assert cham["paper value"] == pytest.approx(0.024)  # Tab. 1's, from sdrlib.experiments.paper_values
    null = t[(t.claim == "GRPO: R_Haus vs R_exact") & (t.metric == "CXB-14")].iloc[0]
    assert null.verdict == "no difference detected" and np.isfinite(null.detectable)
    assert null.paper.endswith("; CheXbert F1") and null["this run"].endswith("; CXB-14 (rule labeler)")
    assert null.reading.startswith("no difference detected; lower mean, not tested (the paper's: higher); ")
    sel = t[(t.claim == "best-of-K selection vs random") & (t.metric == "CXB-14")].iloc[0]
    assert sel.verdict == "0 above, 2 below, 0 no difference detected, of 2 policies"
    assert sel.reading == "the opposite of the paper's direction, under the rule" and sel.unit == "% change vs random"
    assert sel["this run"] == "ot+avg: -50.0 % to -40.0 % over 2 policies"
    tok = t[t.claim == "pruning: tokens saved"].iloc[0]  # the live setting only, as notebook 06
    assert tok["this run"] == "52.0 % (1 live settings)" and tok.reading == "within the paper's range"
    assert tok.verdict == "measured (a count, not tested)"
    vs = t[t.claim == "pruning vs standard best-of-K"]
    assert (vs.verdict == "no difference detected").all()  # one row each: its word, not a count
    assert vs.reading.str.startswith("no difference detected; higher mean, not tested (the paper's: lower)").all()


def test_the_answer_counts_directions_and_names_the_exceptions(tmp_path):
    _grpo(tmp_path)
    _selection(tmp_path)
    _pruning(tmp_path)
    answer = pc.comparison_answer(pc.comparison_table(tmp_path))
    assert answer.startswith("Answer: does this run reproduce the paper's Findings claims? Of the 14 comparisons it "
                             "tests, it shows under the project's rule the paper's direction for 1 (GRPO: R_Cham vs SFT "
                             "on BERTScore F1: above), the opposite direction for 1 (best-of-K selection vs random on "
                             "CXB-14: 0 above, 2 below")
    assert "and no difference detected for 12 (in " in answer
    assert answer.endswith("pruning saves 52.0 % of the tokens, within the paper's 42.1 % to 60.1 % "
                           "(`results/07_paper_comparison.csv`).")
    assert not re.search(r"[.?;]\s+[A-Z]", answer.split("? ", 1)[1])  # one sentence after the question


def test_a_run_without_the_tables_keeps_the_paper_columns(tmp_path):
    t = pc.comparison_table(tmp_path)
    assert len(t) == 15 and (t.verdict == "not in this run").all() and t.paper.str.len().gt(0).all()
    assert pc.comparison_answer(t).startswith("Answer: this run has none of the tables")
    assert pc.comparison_conclusion(tmp_path) == []  # nothing saved yet


def test_the_conclusion_reads_the_saved_table_back(tmp_path):
    _grpo(tmp_path, cham_bs=(-0.03, 0.001, 3))  # the opposite of the paper
    t = pc.comparison_table(tmp_path)
    t.to_csv(tmp_path / "07_paper_comparison.csv", index=False)
    lines = pc.comparison_conclusion(tmp_path)
    assert lines[0].startswith("- Answer: ") and "the opposite direction for 1 (GRPO: R_Cham vs SFT" in lines[0]
    assert [line.split(":")[0] for line in lines[1:]] == ["- GRPO", "- best-of-K selection", "- pruning"]
    assert ("R_Cham vs SFT, BERTScore F1: below: the opposite of the paper's direction (means: this run -0.030, "
            "the paper +0.024; detectable") in lines[1]
    assert lines[2] == "- best-of-K selection: vs random, BS-F1: not in this run; vs random, CXB-14: not in this run."


def test_the_view_is_one_markdown_row_per_claim(tmp_path):
    _selection(tmp_path)
    view = pc.comparison_view(pc.comparison_table(tmp_path))
    lines = view.splitlines()
    assert lines[0] == "| claim | metric | paper | this run | verdict |" and len(lines) == 2 + 15
    assert all(line.count("|") == 6 for line in lines)
