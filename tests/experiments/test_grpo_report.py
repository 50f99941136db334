"""sdrlib.experiments.grpo_report: notebook 04's headline.md, its conclusion sentences and run tables."""

import numpy as np
import pandas as pd

from sdrlib.experiments import grpo_report


def _run():
    return {"profile": "toy", "seed": 0, "source": "synthetic", "n_train": 4, "n_test": 2, "model": "tiny",
            "steps": 2, "n_seeds": 2, "G": 2, "lr": 2e-4, "beta": 0.04, "loss": "dr_grpo"}


def _sig():
    return pd.DataFrame([{"A": "R_Cham", "B": "SFT", "section": "findings", "metric": "bertscore_f1@x",
                          "value_a": 0.5, "value_b": 0.4, "diff": 0.1, "ci_low": 0.05, "ci_high": 0.15,
                          "p_value": 0.01, "seed_sd": 0.01, "n_same_sign": 2, "n_seeds": 2, "p_seeds": "0.01 0.02"},
                         {"A": "R_Cham", "B": "SFT", "section": "findings", "metric": "rouge_l",
                          "value_a": 0.5, "value_b": 0.4, "diff": 0.1, "ci_low": 0.05, "ci_high": 0.15,
                          "p_value": 0.01, "seed_sd": 0.01, "n_same_sign": 2, "n_seeds": 2, "p_seeds": ""}])


def test_headline_markdown_sections_and_numbers(tmp_path):
    table = pd.DataFrame({"Model": ["tiny"], "Metric": ["BERTScore F1"], "SFT": ["0.400 ±0.000"]})
    movement = pd.DataFrame({"config": ["R_Cham"], "seeds": [2], "KL": [0.5], "KL (sd)": [0.1]})
    cost = pd.DataFrame({"step_s_per_step": [1.23456]}, index=pd.Index(["R_Cham"], name="config"))
    lines = grpo_report.headline_markdown(results_dir=tmp_path, run=_run(), protocol="2 test studies",
                                          tables={("findings", "headline"): table, ("impression", "headline"): table},
                                          movement=movement, sparsity=movement, cost_per_config=cost,
                                          edit_totals=pd.DataFrame(), sig=_sig())
    text = "\n".join(lines)
    assert lines[0] == "# Headline numbers: profile `toy`, seed 0"
    assert "GRPO 2 steps x 2 seeds, G = 2, lr 0.0002, beta 0.04, loss dr_grpo." in text
    assert "sft_vs_baselines_significance.csv is missing" in text  # no notebook 03 file in tmp_path
    assert "0.500 ±0.100" in text and "1.235" in text  # mean ± sd shown; cost rounded to 3
    assert "EditGRPO edit counts" not in text  # empty section left out
    assert "| bertscore_f1 |" in text.replace("  ", " ") or "bertscore_f1" in text
    assert "rouge_l" not in text  # only the headline metrics in the significance section
    path = grpo_report.write_headline(tmp_path, lines)
    assert path.read_text() == text


def test_headline_baselines_read_from_notebook_03(tmp_path):
    pd.DataFrame([{"A": "SFT", "B": "random_train", "section": "findings", "metric": "clinical_f1_macro14@labeler",
                   "value_a": 0.1, "value_b": 0.2, "diff": -0.1, "ci_low": -0.2, "ci_high": -0.05, "p_value": 0.01,
                   "n": 16}]).to_csv(tmp_path / "sft_vs_baselines_significance.csv", index=False)
    lines = grpo_report._baselines(tmp_path)
    assert "notebook 03: 16 test studies" in lines[0]
    assert lines[2] == ("- Findings clinical_f1_macro14: SFT 0.100 vs random_train 0.200 (diff -0.100, "
                        "95% CI [-0.200, -0.050], p = 0.010)")


def test_grpo_conclusions_rule(tmp_path):
    rows = []
    for a, diff, p, same in (("R_Cham", 0.05, 0.01, 3), ("R_Haus", 0.05, 0.3, 2), ("R_fmt", -0.002, 0.6, 1)):
        rows.append({"A": a, "B": "SFT", "section": "findings", "metric": "clinical_f1_macro14@labeler",
                     "diff": diff, "p_value": p, "ci_low": diff - 0.01, "ci_high": diff + 0.01, "seed_sd": 0.01,
                     "n_same_sign": same, "n_seeds": 3})
    pd.DataFrame(rows).to_csv(tmp_path / "grpo_significance.csv", index=False)
    pd.DataFrame([{"A": "R_Cham", "B": "SFT", "seed": 0, "diff": 0.04, "ci_low": 0.01, "ci_high": 0.07, "p_value": 0.01},
                  {"A": "R_fmt", "B": "SFT", "seed": 0, "diff": 0.0, "ci_low": -0.02, "ci_high": 0.02, "p_value": 1.0},
                  {"A": "R_Haus", "B": "SFT", "seed": 0, "diff": 0.03, "ci_low": 0.002, "ci_high": 0.06,
                   "p_value": 0.04}]
                 ).to_csv(tmp_path / "grpo_decomposition_significance.csv", index=False)
    out = grpo_report.grpo_conclusions(tmp_path)
    text = "\n".join(out)
    assert out[0].startswith("- Answer (this run is a demonstration") and "R_Cham above SFT on" in out[0]
    assert "R_Cham above SFT by +0.050" in text  # Holm p < 0.05, the interval off 0
    assert "R_Haus above" not in text  # p = 0.3 (Holm 0.6): no direction
    assert "no difference detected at this size for 2 of 3 comparisons" in text
    # Holm over the 3 rows: 0.01 x 3 = 0.03 keeps R_Cham's direction; 0.04 x 2 = 0.08 drops R_Haus's, whose
    # interval excludes 0 (the interval-only reading called it above)
    assert "1 of 3 differ: R_Cham above SFT by +0.040 in seed 0" in text and "R_Haus above SFT by +0.030" not in text


def test_run_tables_from_curves_and_runs():
    curves = pd.DataFrame({"config": ["a"] * 6, "seed": [0, 0, 0, 1, 1, 1], "step": [1, 2, 3] * 2,
                           "reward": [0.0, 1.0, 2.0, 1.0, 1.0, 1.0], "kl": [0.0, 0.1, 0.2, 0.0, 0.0, 0.4],
                           "reward_groups/exact_all_zero": [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]})
    m = grpo_report.movement_table(curves, ["a"], n_steps=1)
    assert m.loc[0, "reward first 1 steps"] == 0.5 and m.loc[0, "reward last 1 steps"] == 1.5
    assert np.isclose(m.loc[0, "reward last 1 steps (sd)"], np.std([2.0, 1.0], ddof=1))
    assert np.isclose(m.loc[0, "KL last 1 steps"], 0.3)
    s = grpo_report.sparsity_table(curves, ["a"], label=str.upper)
    assert s.loc[0, "config"] == "A" and s.loc[0, "steps x seeds"] == 6
    assert np.isclose(s.loc[0, "groups with R_exact = 0 for all G"], (2 / 3 + 1) / 2)
    c = grpo_report.cost_table({("a", 0): {"steps": 4, "step_seconds": 8.0, "reward_seconds": 2.0,
                                           "reward_share": 0.25, "counts": {"total": 16, "no_template": 3}}})
    assert c.loc[0, "step_s_per_step"] == 2.0 and c.loc[0, "reward_s_per_step"] == 0.5
    assert c.loc[0, "bad_no_template"] == 3 and c.loc[0, "bad_too_long"] == 0 and c.loc[0, "edit_s_per_step"] == 0


def _headline_cells(tmp_path, values):
    rows = [{"Model": "tiny", "Metric": "CheXpert-14 macro F1 (labeler)", "config": c, "mean": m, "sd": 0.01, "n": 3,
             "best": False, "note": ""} for c, m in values.items()]
    rows.append({"Model": "tiny", "Metric": "COMET", "config": "SFT", "mean": None, "sd": None, "n": 0, "best": False,
                 "note": "not computed"})
    pd.DataFrame(rows).to_csv(tmp_path / "grpo_headline_findings.csv", index=False)


def test_headline_notes_read_sft_and_the_drift_control_from_the_files(tmp_path):
    import json

    _headline_cells(tmp_path, {"SFT": 0.238, "R_Cham": 0.184, "G-CARL": 0.208, "C-noise": 0.199, "R_fmt": 0.202})
    pd.DataFrame([{"metric": "clinical_f1_macro14", "findings: SFT": 0.235}]).to_csv(
        tmp_path / "sft_vs_baselines.csv", index=False)
    (tmp_path / "sft_vs_baselines.meta.json").write_text(json.dumps({"protocol": "200 test studies, seed 0"}))
    (tmp_path / "grpo_significance.meta.json").write_text(json.dumps({"protocol": "100 test studies, 3 seed(s)"}))
    pd.DataFrame([{"config": c, "seeds": 3, "positives per report": k, "share with no positive finding": 0.5}
                  for c, k in (("reference", 0.88), ("SFT", 0.6), ("R_fmt", 0.41), ("R_Cham", 0.34),
                               ("G-CARL", 0.44), ("C-noise", 0.68))]).to_csv(
        tmp_path / "grpo_positive_findings.csv", index=False)
    sft, ctrl = grpo_report.headline_notes(tmp_path)
    assert sft.startswith("- SFT, Findings CheXpert-14 macro F1 (labeler): 0.238 ±0.010 here (mean ± SD over 3 "
                          "samples; 100 test studies, 3 seed(s)) and 0.235 in notebook 03 (200 test studies, seed 0;")
    assert "not a change of the policy" in sft
    (given, _) = grpo_report.headline_notes(tmp_path, protocol="the first 100 test studies")
    assert "(mean ± SD over 3 samples; the first 100 test studies) and 0.235" in given
    assert ctrl.startswith("- The drift control C-noise, Findings CheXpert-14 macro F1 (labeler): 0.199, rank 3 of 4 "
                           "GRPO configurations (highest G-CARL 0.208; SFT 0.238)")
    # the content rewards leave out SFT, R_fmt, the control and the references
    assert "C-noise 0.68, 0.34 to 0.44 for the content rewards, SFT 0.60, the references 0.88" in ctrl
    assert ctrl.endswith("higher / lower means, not tested (section 6 tests each configuration against SFT).")
    assert " above " not in ctrl and " below " not in ctrl  # no direction word without a test


def test_headline_notes_leave_out_what_the_run_lacks(tmp_path):
    assert grpo_report.headline_notes(tmp_path) == []
    _headline_cells(tmp_path, {"SFT": 0.2, "R_Cham": 0.1})  # no notebook 03 file, no control
    assert grpo_report.headline_notes(tmp_path) == []
    _headline_cells(tmp_path, {"SFT": 0.2, "R_Cham": 0.1, "C-noise": 0.3})
    (line,) = grpo_report.headline_notes(tmp_path)
    assert "rank 1 of 2 GRPO configurations (highest C-noise 0.300; SFT 0.200); higher / lower means" in line


def test_the_answer_never_prints_a_detectable_effect_beyond_the_metrics_range():
    import pandas as pd

    from sdrlib.experiments import grpo_report

    v = pd.DataFrame({"A": ["R_Cham", "R_Haus"], "B": ["SFT", "SFT"], "metric": ["bertscore_f1", "clinical_f1_macro14"],
                      "verdict": ["no difference detected"] * 2, "mde": [0.018, 1.265]})
    line = grpo_report._answer_line(v)
    assert "(detectable at this size: 0.018; 1 of 2 not detectable at this size" in line and "1.265" not in line
