"""README claims written from result tables (sdrlib.experiments.claims and its command line), on small
synthetic tables written with save_table: directions per configuration, the round trip through the check, and
hand-written claims that outrun the tables failing it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from claims_helpers import without_missing_groups

from sdrlib.experiments import claims
from sdrlib.experiments.claims import cli
from sdrlib.results import read_result_table, save_table

MACHINE = {"cpu_model": "AMD EPYC", "avx512": False, "kernel_path": "avx2", "torch_cpu_capability": "AVX2",
           "logical_cpus": 2, "versions": {"torch": "2.13.0+cpu", "transformers": "5.24.0", "numpy": "2.4.6"}}


def _cells(wide: pd.DataFrame) -> pd.DataFrame:
    """A paper-style table written in the test as notebook 04 shows it, stored as notebook 04 stores it: one row per
    cell, numbers as numbers (``sdrlib.results.CELL_COLUMNS``)."""
    rows = []
    for _, r in wide.iterrows():
        for c in wide.columns[2:]:
            s = str(r[c]).replace("**", "")
            if "±" in s:
                m, sd = s.split("±")
                rows.append((r.Model, r.Metric, c, float(m), float(sd), 3, str(r[c]).startswith("**"), ""))
            else:
                rows.append((r.Model, r.Metric, c, float("nan"), float("nan"), 0, False, s))
    return pd.DataFrame(rows, columns=["Model", "Metric", "config", "mean", "sd", "n", "best", "note"])


def _mean_sd(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns of ``"mean ±sd"`` strings as notebook 04 stores them: the mean, and ``"<name> (sd)"`` beside it."""
    out = frame.copy()
    for c in frame.columns:
        if frame[c].astype(str).str.contains("±").any():
            parts = frame[c].str.split("±")
            i = list(out.columns).index(c)
            out[c] = parts.str[0].astype(float)
            out.insert(i + 1, f"{c} (sd)", parts.str[1].astype(float))
    return out


@pytest.fixture()
def results(tmp_path):
    cfg = SimpleNamespace(name="smoke", seed=0, embedding=SimpleNamespace(encoder="enc"),
                          data=SimpleNamespace(source="synthetic"), results_dir=tmp_path / "results",
                          figures_dir=tmp_path / "figures")
    cfg.results_dir.mkdir()
    t = {
        "grpo_headline_findings": _cells(pd.DataFrame({
            "Model": ["tiny"] * 3, "Metric": ["BERTScore F1", "COMET", "CheXpert-14 macro F1 (labeler)"],
            "SFT": ["0.556 ±0.002", "not computed: no checkpoint", "**0.223 ±0.034**"],
            "R_fmt": ["0.546 ±0.012", "not computed", "0.137 ±0.012"],
            "R_Cham": ["**0.566 ±0.010**", "not computed", "0.083 ±0.053"],
            "Abl": ["0.570 ±0.000", "not computed", "0.301 ±0.000"]})),
        "grpo_policy_movement": _mean_sd(pd.DataFrame({
            "config": ["R_fmt", "R_Cham", "Abl"], "seeds": [3, 3, 1],
            "reward first 4 steps": ["0.969 ±0.016", "2.313 ±0.021", "2.586 ±0.000"],
            "reward last 4 steps": ["0.943 ±0.018", "2.370 ±0.106", "2.561 ±0.000"],
            "KL last 4 steps": ["0.059 ±0.006", "0.109 ±0.009", "0.045 ±0.000"]})),
        "grpo_positive_findings": pd.DataFrame({
            "config": ["reference", "SFT", "R_fmt", "R_Cham", "Abl"], "seeds": [1, 3, 3, 3, 1],
            "positives per report": [0.88, 0.54, 0.38, 0.66, 0.6],
            "share with no positive finding": [0.5, 0.663333, 0.743333, 0.636667, 0.64]}),
        "grpo_significance": pd.DataFrame({
            "A": ["R_fmt", "R_Cham"], "B": ["SFT", "SFT"], "section": ["findings"] * 2,
            "metric": ["clinical_f1_macro14@labeler"] * 2, "mean_diff": [-0.0862, 0.0123],
            "p_values": ["0.001 0.009 0.001", "0.300 0.020 0.500"], "n_seeds": [3, 3], "n_sig": [3, 1],
            "p_across": [0.004, 0.41]}),
        "sft_vs_baselines_significance": pd.DataFrame({
            "section": ["findings"], "metric": ["clinical_f1_macro14@labeler"], "value_a": [0.274699],
            "value_b": [0.0969438], "diff": [0.177755], "ci_low": [0.109552], "ci_high": [0.234418],
            "p_value": [0.000999], "n": [200], "n_resamples": [1000], "B": ["random_train"]}),
        "05_headline_findings": pd.DataFrame({
            "policy": ["SFT", "R_Cham", "SFT"], "metric": ["BS-F1", "BS-F1", "CXB-14"],
            "best_method": ["ot+knn", "ot+avg", "ot+min"], "best": [0.57628, 0.556396, 0.221064],
            "random": [0.552727, 0.530707, 0.227113], "improvement_pct": [4.26108, 4.84065, -2.66312]}),
        "05_headline_findings_val": pd.DataFrame({
            "policy": ["SFT", "R_Cham"], "metric": ["BS-F1", "BS-F1"], "picked_on_val": ["ot+avg", "ot+avg"],
            "val": [0.58, 0.56], "test": [0.550001, 0.556396], "random": [0.552727, 0.530707],
            "improvement_pct": [-0.493, 4.84065]}),
        "00_report_language": pd.DataFrame({
            "statistic": ["distinct_words", "distinct_words_findings"], "this corpus": [1006, 806],
            "IU-Xray reference": [None, 1321], "counts": ["Findings + Impression words", "Findings words"]}),
        "06_tokens": pd.DataFrame({
            "policy": ["SFT", "SFT"], "distance": ["chamfer", "hausdorff"], "source": ["live", "replay"],
            "standard tokens / study": [295.917, 295.917], "pruning tokens / study": [134.958, 123.333],
            "tokens saved %": [54.3931, 58.3216]}),
        "06_pruning_vs_standard": pd.DataFrame({
            "policy": ["SFT"], "distance": ["chamfer"], "section": ["findings"], "metric": ["BS-F1"],
            "value_a": [0.561], "value_b": [0.558], "diff": [0.003], "ci_low": [-0.004], "ci_high": [0.0101],
            "p_value": [0.41]}),
        "06_survivor_vs_standard_pick": pd.DataFrame({
            "policy": ["SFT"], "distance": ["chamfer"], "same": [1], "n": [24], "rate": [1 / 24], "chance": [0.2],
            "p_value": [0.0692316]}),
    }
    for name, df in t.items():
        save_table(df, name, cfg)
    return cfg.results_dir


def test_directions_per_configuration_never_a_sweeping_every(results):
    (mv,) = claims.policy_movement(results)
    assert "not tested): higher at the end for 1 of 3 configurations (R_Cham (2.313 -> 2.370))" in mv
    assert "lower for 2 (R_fmt (0.969 -> 0.943), Abl (1 seed) (2.586 -> 2.561))" in mv
    assert "rises" not in mv and "falls" not in mv  # no direction word without a test
    (pf,) = claims.positive_findings(results)
    assert "SFT 66 %" in pf and "more often than SFT (1 of 3): R_fmt 74 %" in pf
    assert "less often (2): R_Cham 64 %, Abl (1 seed) 64 %" in pf
    text = "\n".join(claims.results_section(results).splitlines())
    assert "every configuration" not in text.lower() and "most " not in text.lower()


def test_headline_marks_one_seed_columns_and_drops_bold(results):
    lines = claims.grpo_headline(results)
    table = "\n".join(lines)
    assert "| Abl (1 seed) |" in table and "**" not in table
    assert "Not computed on this run: COMET" in table
    (macro,) = [x for x in lines if x.startswith("- CheXpert-14")]
    assert "higher mean than SFT: Abl (1 seed) 0.301; lower: R_fmt 0.137, R_Cham 0.083 (2 of 3 configurations lower)" in macro
    # the one-seed ablation is not called the best
    assert macro.endswith("Highest mean of SFT and the configurations with more than one seed: SFT.")


def test_significance_column_is_a_parameter(results):
    (per_seed,) = claims.grpo_vs_sft(results, metrics=["clinical_f1_macro14"])
    assert "lower for R_fmt -0.086 (p < 0.05 in 3 of 3 seeds)" in per_seed and "higher for R_Cham +0.012" in per_seed
    (across,) = claims.grpo_vs_sft(results, metrics=["clinical_f1_macro14"], p_col="p_across")
    assert "R_fmt -0.086 (p = 0.004)" in across and "1 of 2 differences have p < 0.05" in across
    # the across-seed table's layout (diff, p_value) is read by default
    t = read_result_table(results, "grpo_significance").rename(columns={"mean_diff": "diff", "p_across": "p_value"})
    t["n_same_sign"] = [3, 1]
    t.to_csv(results / "grpo_significance.csv", index=False)
    (new,) = claims.grpo_vs_sft(results, metrics=["clinical_f1_macro14"])
    assert "R_fmt -0.086 (p = 0.004; same sign in 3 of 3 seeds)" in new and "p_value over seeds and studies" in new
    # the tables of runs before the count was a number (docs/evidence/) say "k of n"
    t.drop(columns="n_same_sign").assign(same_sign=["3 of 3", "1 of 3"]).to_csv(results / "grpo_significance.csv",
                                                                             index=False)
    assert claims.grpo_vs_sft(results, metrics=["clinical_f1_macro14"]) == [new]


def test_report_language_compares_like_with_like(results):
    (s,) = claims.report_language(results)
    assert "distinct_words (Findings + Impression words) 1006 (no IU-Xray figure counted alike)" in s
    assert "distinct_words_findings (Findings words) 806 vs IU-Xray 1321" in s


def test_selection_and_pruning_counts(results):
    sel = claims.selection_best_vs_random(results)
    assert "picked on validation" in sel[0] and "higher mean than random (not tested here) for 1 of 2 policies; change -0.5 % to +4.8 %" in sel[0]
    assert "as in the paper" in sel[1] and "higher mean than random (not tested here) for all 2 policies" in sel[1]
    assert "higher mean than random (not tested here) for none of 1 policies" in sel[2]
    pr = claims.pruning(results)
    assert any("135 tokens per study against 296" in x and "54.4 % fewer" in x for x in pr)
    # p = 0.069 (one exact test): no direction word under the rule
    assert any("1 of 24 studies (4.2 %), not distinguishable from the chance rate 20 %" in x for x in pr)


def test_generated_section_passes_its_own_check(results):
    section = claims.results_section(results)
    block = claims.marked_block(section)
    assert claims.numbers_in(block) and claims.check_block(block, results) == []


def test_claims_that_outrun_the_tables_fail(results):
    ok = "- Total reward (`results/grpo_policy_movement.csv`): R_Cham 2.313 -> 2.370, R_fmt 0.969 -> 0.943.\n"
    assert claims.check_block(ok, results) == []
    typed = "- Total reward (`results/grpo_policy_movement.csv`): R_Cham 2.31 -> 2.47.\n"
    assert [p.split(" ")[0] for p in claims.check_block(typed, results)] == ["2.47"]
    wrong_file = "- Normal reports (`results/grpo_policy_movement.csv`): SFT 66 %, R_fmt 74 %.\n"
    assert len(claims.check_block(wrong_file, results)) == 2
    assert "not in" in claims.check_block("- `results/nope.csv`: 0.5\n", results)[0]
    assert "no result file" in claims.check_block("- a loose 0.123 here\n", results)[0]
    # a table inherits its caption's file; counts, names and interval levels are not checked
    table = "Shares (`grpo_positive_findings`), 95 % CI, CheXpert-14, 3 of 3:\n\n| SFT | 0.663 |\n"
    assert claims.check_block(table, results) == []


def test_numbers_in():
    assert claims.numbers_in("SFT 0.223, 1,006 words in 3 of `grpo_x1` CheXpert-14 (95 % CI)") == ["0.223", "1006"]
    assert claims.numbers_in("diff -0.040, R_Cham_neg best-of-5 p = 0.009") == ["0.040", "0.009"]
    assert claims.numbers_in("p < 0.001, p < 0.05, p <= 0.009") == ["0.009"]


def test_sweeping_words(results):
    assert claims.sweeping_words("Every configuration moves; all 8 policies; none of 3; most reports") == [
        "Every configuration", "most reports"]
    assert claims.sweeping_words(claims.results_section(results)) == []
    assert "none" in claims.results_section(results)  # an empty list is a count, not a sweep


def test_script_prints_and_checks(results, tmp_path, capsys):
    mod = cli
    (results / "machine.json").write_text(json.dumps(MACHINE))  # the same machine: the exact check
    assert mod.main([str(results)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(claims.BEGIN) and out.rstrip().endswith(claims.END)
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n" + out + "\nafter\n")
    # the fixture lacks the tables of some groups: each is a note in the block and a problem of the check
    assert mod.main([str(results), "--check", str(readme)]) == 1
    problems = capsys.readouterr().out.splitlines()
    assert 'table run_summary missing: group "Run time" not generated' in problems
    assert all(p.startswith("table ") and " missing: group " in p for p in problems), problems
    readme.write_text(without_missing_groups(readme.read_text()))
    assert mod.main([str(results), "--check", str(readme)]) == 0
    readme.write_text(readme.read_text().replace("54.4 %", "64.4 %"))
    assert mod.main([str(results), "--check", str(readme)]) == 1
    assert "64.4" in capsys.readouterr().out
    readme.write_text("no markers\n")
    assert mod.main([str(results), "--check", str(readme)]) == 1


def test_issue27_groups_run_time_audit_and_recall_selection(tmp_path):
    cfg = SimpleNamespace(name="cpu", seed=0, embedding=SimpleNamespace(encoder="enc"),
                          data=SimpleNamespace(source="synthetic"), results_dir=tmp_path / "results",
                          figures_dir=tmp_path / "figures")
    cfg.results_dir.mkdir()
    save_table(pd.DataFrame({"notebook": ["00_data.ipynb", "04_grpo.ipynb"], "status": ["ok", "ok"],
                             "seconds": [15.2, 1500.4], "git_commit": ["abc1234"] * 2,
                             "total_seconds": [1515.6] * 2}), "run_summary", cfg)
    save_table(pd.DataFrame({"label": ["R_Cham", "R_Cham", "R_new"], "stratum": ["single", "multi", "single"],
                             "broken": [True, False, False], "reads": ["omitted ranks above paraphrase"] * 3}),
               "04_reward_audit_orderings", cfg)
    save_table(pd.DataFrame({"label": ["R_Cham", "R_new"], "n_refs": [49, 49], "sft_mean": [2.48, 1.884],
                             "modal_normal_mean": [2.5, 1.754], "pays_for_silence": [True, False],
                             "silence_margin": [0.014, 0.088]}), "04_reward_audit_expected", cfg)
    save_table(pd.DataFrame({"policy": ["SFT", "SFT"], "method": ["rec+knn", "mbr:rec"], "value": [0.167, 0.231],
                             "random": [0.227, 0.227]}), "05_selection_recall", cfg)
    text = claims.results_section(cfg.results_dir, groups={"t": claims.run_time, "a": claims.reward_audit,
                                                           "s": claims.selection_recall})
    assert "took 1516 s in all (2 of 2 notebooks ok)" in text and "04 1500" in text and "`abc1234`" in text
    assert ("- Clinician orderings each reward breaks, of those checked per stratum "
            "(`results/04_reward_audit_orderings.csv`; the first kind named): R_Cham 1 of 2 (omitted ranks above "
            "paraphrase); R_new 0 of 1.") in text
    assert "R_Cham 2.480 vs 2.500 (pays for silence); R_new 1.884 vs 1.754." in text
    assert "higher mean than random (not tested): mbr:rec (" in text
    assert claims.check_block(text, cfg.results_dir) == []
    # a resumed run (./run_all.sh --from 04) lists the notebooks it did not run without seconds: named, not "nan"
    save_table(pd.DataFrame({"notebook": ["00_data.ipynb", "04_grpo.ipynb"], "status": ["skipped: not selected", "ok"],
                             "seconds": [float("nan"), 394.5], "git_commit": ["abc1234"] * 2,
                             "total_seconds": [394.5] * 2}), "run_summary", cfg)
    (line,) = claims.run_time(cfg.results_dir)
    assert "nan" not in line and "04 394; not run in this invocation: 00 (" in line


def test_decomposition_chains_and_vs_rcham(tmp_path):
    cfg = SimpleNamespace(name="cpu", seed=0, embedding=SimpleNamespace(encoder="enc"),
                          data=SimpleNamespace(source="synthetic"), results_dir=tmp_path / "results",
                          figures_dir=tmp_path / "figures")
    cfg.results_dir.mkdir()
    save_table(pd.DataFrame({"step": ["SFT -> C-noise", "C-noise -> R_Cham"], "seeds": [3, 3],
                             "F1 from": [0.223, 0.21], "F1 to": [0.21, 0.12], "change": [-0.013, -0.09],
                             "share of drop": [0.126, 0.874], "chain": ["R_Cham", "R_Cham"]}),
               "grpo_decomposition", cfg)
    save_table(pd.DataFrame({"A": ["R_rec"], "B": ["R_Cham"], "section": ["findings"],
                             "metric": ["clinical_f1_macro14@labeler"], "diff": [0.05], "p_value": [0.03],
                             "same_sign": ["3 of 3"]}), "grpo_significance", cfg)
    text = claims.results_section(cfg.results_dir, groups={"d": claims.decomposition, "r": claims.grpo_vs_rcham})
    # no share of the change (issue 34: a ratio of two small differences carries no uncertainty we report)
    assert ("R_Cham (3 seeds): SFT -> C-noise 0.223 -> 0.210 (-0.013); C-noise -> R_Cham "
            "0.210 -> 0.120 (-0.090)") in text and "% of the change" not in text
    assert "against R_Cham" in text and "higher for R_rec +0.050 (p = 0.030; same sign in 3 of 3 seeds)" in text
    assert claims.check_block(text, cfg.results_dir) == []


def test_issue34_recall_choice_audit_and_comparisons(tmp_path):
    cfg = SimpleNamespace(name="cpu", seed=0, embedding=SimpleNamespace(encoder="enc"),
                          data=SimpleNamespace(source="synthetic"), results_dir=tmp_path / "results",
                          figures_dir=tmp_path / "figures")
    cfg.results_dir.mkdir()
    save_table(pd.DataFrame({"reward": ["chamfer_recall_1", "chamfer_recall_1_bal2"],
                             "label": ["R_Cham_rec1", "R_Cham_rec1_bal2"], "alpha": [1.0, 1.0], "weight": [1.0, 2.0],
                             "broken_required": [0, 1], "mixed_margin": [-0.285, -0.283], "sound": [True, False],
                             "chosen": [True, False], "trained": [True, False], "n_references": [40, 40],
                             "n_samples": [120, 120]}), "04_recall_choice", cfg)
    save_table(pd.DataFrame({"label": ["R_Cham_rec1"] * 3 + ["R_Cham"], "stratum": ["single", "multi", "single", "single"],
                             "expected": ["paraphrase > hallucinated", "paraphrase > hallucinated",
                                          "another_reader > hallucinated", "paraphrase > hallucinated"],
                             "n": [30, 21, 30, 30], "diff": [0.412, -0.05, 0.3, -0.2], "broken": [False, True, False, True],
                             "reads": ["x"] * 4}), "04_reward_audit_orderings", cfg)
    save_table(pd.DataFrame({"A": ["R_Cham_rec1"] * 3 + ["R_Cham"], "B": ["SFT", "EditGRPO", "R_exact", "SFT"],
                             "section": ["findings"] * 4, "metric": ["clinical_f1_macro14@labeler"] * 4,
                             "diff": [0.021, -0.013, 0.044, -0.04], "p_value": [0.41, 0.62, 0.12, 0.2],
                             "n_same_sign": [2, 2, 3, 3], "n_seeds": [3, 3, 3, 3]}), "grpo_significance", cfg)
    text = claims.results_section(cfg.results_dir, groups={"c": claims.recall_choice, "a": claims.recall_audit,
                                                           "v": claims.recall_vs_others})
    assert "1 of 2 settings of the grid keep the four required orderings" in text
    assert "picked: R_Cham_rec1; trained: R_Cham_rec1 (" in text and "not the pick" not in text
    # only the required orderings of the trained setting, stratum by stratum, a break shown as it is
    assert "R_Cham_rec1, test references: 1 of 2 required orderings kept" in text
    assert "paraphrase > hallucinated (multi, 21 references) -0.050" in text and "another_reader" not in text
    assert ("vs SFT +0.021 (p = 0.410, same sign in 2 of 3 seeds); vs EditGRPO -0.013 (p = 0.620, same sign in 2 of "
            "3 seeds); vs R_exact +0.044") in text
    assert claims.check_block(text, cfg.results_dir) == []
    # a profile that trains a setting the rule did not pick is said so, never hidden
    t = read_result_table(cfg.results_dir, "04_recall_choice").assign(chosen=[False, True])
    save_table(t, "04_recall_choice", cfg)
    (line,) = claims.recall_choice(cfg.results_dir)
    assert "picked: R_Cham_rec1_bal2; trained: R_Cham_rec1 (not the pick)" in line
    # no pick (every margin NaN: reward_choice.NO_PICK) is said so, and the margins read n/a, not +nan
    t = t.assign(chosen=[False, False], mixed_margin=[float("nan")] * 2)
    save_table(t, "04_recall_choice", cfg)
    (line,) = claims.recall_choice(cfg.results_dir)
    assert "picked: none; trained: R_Cham_rec1 (no pick: no setting has a finite mixed_margin" in line
    assert "R_Cham_rec1 n/a" in line and "nan" not in line


def _readme_numbers():
    return cli


@pytest.mark.parametrize("damage", ["binary", "empty", "no_columns_it_reads"])
def test_script_names_every_results_table_it_cannot_read(results, tmp_path, capsys, damage):
    """Each table the claims read, damaged in turn: one line naming it, exit 2 (was a bare UnicodeDecodeError,
    EmptyDataError or KeyError: 'Metric')."""
    import shutil

    mod, skipped = _readme_numbers(), []
    for table in sorted(results.glob("*.csv")):
        res = Path(shutil.copytree(results, tmp_path / f"{damage}_{table.stem}"))
        path = res / table.name
        if damage == "binary":
            path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + bytes(range(256)))
        elif damage == "empty":
            path.write_bytes(b"")
        else:  # the same rows under other column names (e.g. a table without its Metric column)
            t = pd.read_csv(table)
            t.columns = [f"x{i}" for i in range(len(t.columns))]
            t.to_csv(path, index=False)
        rc = mod.main([str(res)])
        out, err = capsys.readouterr()
        if rc == 0 and damage == "no_columns_it_reads":  # a group that checks its key column writes nothing
            assert f"results/{table.name}" not in out and not err, table.name
            skipped.append(table.stem)
            continue
        assert rc == 2, table.name
        assert err.count("\n") == 1 and err.startswith(f"{mod.PROG}: {path}") and "Traceback" not in err, err
    # these groups look for their value columns first (an older run's table) and write nothing without them
    assert set(skipped) <= {"00_report_language", "grpo_policy_movement", "grpo_positive_findings"}, skipped


def test_script_names_a_readme_or_result_file_it_cannot_read(results, tmp_path, capsys):
    mod = _readme_numbers()
    readme = tmp_path / "README.md"
    readme.write_bytes("<!-- results:begin -->\nRésumé 0.5\n".encode("cp1252"))  # not UTF-8
    assert mod.main([str(results), "--check", str(readme)]) == 2
    assert capsys.readouterr().err.startswith(f"{mod.PROG}: {readme}: not UTF-8")
    assert mod.main([str(results), "--check", str(tmp_path / "nothing.md")]) == 2
    assert "nothing.md: cannot read (No such file" in capsys.readouterr().err
    mod.main([str(results)])
    readme.write_text(capsys.readouterr().out)
    (results / "grpo_headline_findings.md").write_bytes(b"\xff\xfe\x00\xd8")  # a broken UTF-16 mark
    assert mod.main([str(results), "--check", str(readme), "--mode", "exact"]) == 2  # the exact check reads it
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"{mod.PROG}: {results / 'grpo_headline_findings.md'}: ")


def test_a_group_whose_table_is_missing_is_a_note_and_a_problem_of_the_check(results, tmp_path, capsys):
    """A claim group whose table the run lacks is no longer an empty paragraph: the block carries a visible note
    in its place, and ``--check`` reports it (one line naming the table and the group, exit 1)."""
    note = '**Run time**\n\n- *table `run_summary` missing: group "Run time" not generated*'
    assert note in claims.results_section(results)
    assert 'table run_summary missing: group "Run time" not generated' in claims.missing_tables(results)
    # a group with all its tables has no note; pruning needs 06_tokens and 06_pruning_vs_standard
    assert not [x for x in claims.missing_tables(results) if '"Pruning (notebook 06)"' in x]
    assert "**Pruning (notebook 06)**\n\n- SFT, chamfer (live)" in claims.results_section(results)
    (results / "06_pruning_vs_standard.csv").unlink()
    text = claims.results_section(results)
    assert ('**Pruning (notebook 06)**\n\n- *table `06_pruning_vs_standard` missing: group "Pruning (notebook 06)" '
            'not generated*\n\n**') in text and "tokens per study" not in text  # not half a group
    # the check: a README written while the run lacked both pruning tables, checked once 06_tokens is back
    mod = _readme_numbers()
    (results / "machine.json").write_text(json.dumps(MACHINE))
    shutil.copy(results / "06_tokens.csv", tmp_path / "06_tokens.csv")
    (results / "06_tokens.csv").unlink()
    readme = tmp_path / "README.md"
    readme.write_text(claims.results_section(results))  # notes for both pruning tables
    shutil.copy(tmp_path / "06_tokens.csv", results / "06_tokens.csv")
    capsys.readouterr()
    assert mod.main([str(results), "--check", str(readme)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert 'table 06_pruning_vs_standard missing: group "Pruning (notebook 06)" not generated' in out
    assert not [x for x in out if "06_tokens" in x]  # the run has it now
    # a README without the group: the check does not ask for its tables
    readme.write_text(without_missing_groups(readme.read_text()))
    assert mod.main([str(results), "--check", str(readme)]) == 0


def test_clock_measurements_are_not_compared_but_noted(tmp_path):
    """A README quotes the run's times; no two runs share them, so --check notes them instead of failing a fresh
    clone on a matching machine (9 such 'problems' before)."""
    d = tmp_path / "results"
    d.mkdir()
    pd.DataFrame({"notebook": ["03_sft", "04_grpo"], "seconds": [668.0, 1343.0], "status": ["ok", "ok"]}).to_csv(
        d / "run_summary.csv", index=False)
    pd.DataFrame({"metric": ["BS-F1"], "value": [0.557]}).to_csv(d / "headline_value.csv", index=False)
    block = ("- Notebook 04 ran 1,400 s and notebook 03 700 s (`results/run_summary.csv`).\n\n"
             "- BS-F1 0.557 and 0.612 (`results/headline_value.csv`).\n")
    notes: list[str] = []
    problems = claims.check_block(block, d, notes=notes)
    assert [p.split(" is in none")[0] for p in problems] == ["0.612"]    # a value still fails
    assert sorted(n.split(" not compared")[0] for n in notes) == ["1400", "700"]
    # a number without a time unit from the same table is still a value to find
    assert claims.check_block("- 1,400 notebooks (`results/run_summary.csv`).\n", d) != []
