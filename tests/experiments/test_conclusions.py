"""Conclusions that hold across runs on other kernel paths (sdrlib.experiments.conclusions) and the two modes of
``python -m sdrlib.experiments.claims --check``: exact on the README run's machine, tolerant elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from claims_helpers import without_missing_groups
from scipy import stats

from sdrlib.experiments import claims, conclusions as C
from sdrlib.experiments.claims import cli
from sdrlib.metrics import verdict as V

MACHINE = {"cpu_model": "AMD EPYC", "avx512": False, "kernel_path": "avx2", "torch_cpu_capability": "AVX2",
           "logical_cpus": 2, "versions": {"torch": "2.13.0+cpu", "transformers": "5.24.0", "numpy": "2.4.6"}}


def _run(folder: Path, rows: dict[str, tuple[float, float, str]], machine: dict | None = MACHINE,
         seed_sd: float = 0.02) -> Path:
    """A results folder with a grpo_significance table: config -> (diff, p, same_sign) against SFT."""
    folder.mkdir(parents=True)
    pd.DataFrame([dict(A=a, B="SFT", section="findings", metric="clinical_f1_macro14@labeler", value_a=0.2,
                       value_b=0.2 - d, diff=d, ci_low=d - 0.05, ci_high=d + 0.05, p_value=p, seed_sd=seed_sd,
                       n_same_sign=int(s.split()[0]), n_seeds=3) for a, (d, p, s) in rows.items()]
                 ).to_csv(folder / "grpo_significance.csv", index=False)
    pd.DataFrame({"statistic": ["distinct_words"], "this corpus": [1006], "IU-Xray reference": [None],
                  "counts": ["Findings + Impression words"]}).to_csv(folder / "00_report_language.csv", index=False)
    if machine is not None:
        (folder / "machine.json").write_text(json.dumps(machine))
    return folder


ROWS = {"G-CARL": (-0.065, 0.020, "3 of 3"), "R_exact": (0.004, 0.9, "1 of 3"), "R_Haus": (-0.07, 0.01, "2 of 3"),
        "EditGRPO": (0.06, 0.001, "3 of 3")}


def test_the_detectable_effect_is_the_combined_tests_and_names_the_half_that_binds(tmp_path):
    """Both halves (issue: the README's 0.004 beside a bootstrap interval of width 0.029 came from the t half
    alone): the interval's standard error and the seeds' spread, at the family's Holm level."""
    a = _run(tmp_path / "a", ROWS)
    t = C.conclusions([a]).set_index("A")
    r = t.loc["R_exact"]
    level = 0.05 / 4
    se = V.interval_se(r.ci_low, r.ci_high)
    assert r.mde == pytest.approx(V.detectable_effect(seed_sd=0.02, n_seeds=3, study_se=se, alpha=level)[0])
    assert r.binding == "seeds" and r.seeds_needed > 3 and np.isnan(r.studies_needed)
    assert r.family_size == 4 and r.p_holm == pytest.approx(0.9)
    # a study-bound comparison: no seed spread left
    quiet = _run(tmp_path / "q", ROWS, seed_sd=0.0)
    q = C.conclusions([quiet]).set_index("A").loc["R_exact"]
    assert q.binding == "studies" and np.isnan(q.seeds_needed)


def test_a_difference_is_stated_only_when_every_run_shows_it(tmp_path):
    a = _run(tmp_path / "a", ROWS)
    b = _run(tmp_path / "b", {**ROWS, "G-CARL": (-0.007, 0.78, "2 of 3"), "EditGRPO": (0.055, 0.004, "3 of 3")})
    one = C.conclusions([a]).set_index("A").verdict
    # Holm p < 0.05 with the interval off 0; R_Haus's one seed the other way is reported, not a condition
    assert one.to_dict() == {"G-CARL": "below", "R_exact": C.NO_DIFF, "R_Haus": "below", "EditGRPO": "above"}
    two = C.conclusions([a, b]).set_index("A")
    assert two.verdict["G-CARL"] == C.NO_DIFF  # flips on the other kernel path: no conclusion
    assert two.verdict["EditGRPO"] == "above" and two.diff_2["G-CARL"] == -0.007
    flipped = _run(tmp_path / "c", {**ROWS, "EditGRPO": (-0.05, 0.004, "3 of 3")})
    assert C.conclusions([a, flipped]).set_index("A").verdict["EditGRPO"] == C.NO_DIFF
    # a run without the comparison (stopped early, or rebuilt from fewer tables) leaves it out; two runs must have it
    partial = _run(tmp_path / "d", {**{k: v for k, v in ROWS.items() if k != "EditGRPO"},
                                    "R_exact": (0.005, 0.9, "1 of 3")})  # another run: not the same numbers
    three = C.conclusions([a, b, partial]).set_index("A")
    assert three.verdict["EditGRPO"] == "above" and three.runs["EditGRPO"] == 2
    assert C.conclusions([a, partial]).set_index("A").verdict["EditGRPO"] == C.NO_DIFF  # one run alone


def test_a_changed_reward_is_compared_in_this_run_only(tmp_path):
    # issue 34: G-CARL's reward changed (claim dedup); the label alone does not make the old run a run of it
    a = _run(tmp_path / "a", ROWS)
    b = _run(tmp_path / "b", {**ROWS, "R_exact": (0.005, 0.9, "1 of 3")})  # another run, not a copy
    both = C.conclusions([a, b]).set_index("A")
    assert both.verdict["G-CARL"] == "below" and both.runs["G-CARL"] == 2
    here = C.conclusions([a, b], only_here=["G-CARL"]).set_index("A")
    assert here.verdict["G-CARL"] == C.NO_DIFF and here.runs["G-CARL"] == 1 and pd.isna(here.diff_2["G-CARL"])
    assert here.verdict["EditGRPO"] == "above" and here.runs["EditGRPO"] == 2  # the others as before
    lines = C.conclusion_lines([a, b], labels=["new", "old"], only_here=["G-CARL"])
    assert any("Compared in this run only" in x and "G-CARL" in x for x in lines)
    assert not any("in old" in x for x in lines if "G-CARL vs" in x)


def test_lines_name_their_table_and_state_the_detectable_effect(tmp_path):
    a, b = _run(tmp_path / "a", ROWS), _run(tmp_path / "b", {**ROWS, "R_exact": (0.005, 0.9, "1 of 3")})
    lines = C.conclusion_lines([a, b], labels=["avx2", "aten default"])
    # nothing is written into a results folder it reads; the bullets name the tables they are computed from
    assert not (a / "conclusions.csv").exists() and "each of the 2 distinct runs (avx2, aten default)" in lines[0]
    assert "the 4 comparisons of a run are one family" in lines[0] and "Holm-adjusted p" in lines[0]
    assert V.rule_sentence(where="in each of the 2 distinct runs (avx2, aten default) that has the comparison (at least "
                           "two)") in lines[0]  # the rule in verdict's own words
    assert "computed from `results/grpo_significance.csv`" in lines[0]
    out = tmp_path / "evidence" / "conclusions.csv"
    out.parent.mkdir()
    written = C.conclusion_lines([a, b], labels=["avx2", "aten default"], write_to=out)
    assert out.is_file() and "`conclusions.csv`" in written[0] and written[1:] == [
        x.replace("computed from `results/grpo_significance.csv` and `results/sft_vs_baselines_significance.csv`",
                  "`conclusions.csv`") for x in lines[1:]]
    text = "\n".join(lines)
    assert "G-CARL vs SFT: below in each of 2 distinct runs" in text
    assert "R_exact vs SFT: no difference detected at this size" in text and "detectable at this size: 0." in text
    block = claims.results_section(a, also=[b], labels=["avx2", "aten default"])
    assert claims.check_block(claims.marked_block(block), a) == []
    assert C.readme_machine(block)["kernel_path"] == "avx2"


def _script():
    return cli


def test_check_is_exact_on_the_same_machine_and_tolerant_elsewhere(tmp_path, capsys):
    mod = _script()
    a, b = _run(tmp_path / "a", ROWS), _run(tmp_path / "b", ROWS)
    assert mod.main([str(a), "--also", str(b)]) == 0
    readme = tmp_path / "README.md"
    readme.write_text(without_missing_groups(capsys.readouterr().out))  # groups of tables not in _run
    # another run on the README's machine: exact (every number); its conclusions agree
    same = _run(tmp_path / "same", ROWS)
    assert mod.main([str(a), "--check", str(readme)]) == 0
    assert "exact check" in capsys.readouterr().err
    # the new run has no conclusions.csv: the conclusions' numbers are not checked, their verdicts are
    assert mod.main([str(same), "--check", str(readme)]) == 0
    # another kernel path, other numbers, the same conclusions: tolerant, and it passes
    moved = {k: (d * 1.3, p / 2, s) for k, (d, p, s) in ROWS.items()}
    other = _run(tmp_path / "other", moved, {**MACHINE, "kernel_path": "native", "cpu_model": "Intel Xeon",
                                             "avx512": True, "torch_cpu_capability": "AVX512"})
    assert mod.main([str(other), "--check", str(readme)]) == 0
    err = capsys.readouterr().err
    assert "tolerant check (CPU AMD EPYC vs Intel Xeon" in err and "kernel path avx2 vs native" in err
    assert "0 problem(s)" in err
    assert mod.main([str(other), "--check", str(readme), "--mode", "exact"]) == 1  # its numbers differ
    # tolerant still checks the corpus statistics number by number ...
    pd.DataFrame({"statistic": ["distinct_words"], "this corpus": [1007], "IU-Xray reference": [None],
                  "counts": ["Findings + Impression words"]}).to_csv(other / "00_report_language.csv", index=False)
    assert mod.main([str(other), "--check", str(readme)]) == 1
    assert "1006 is in none of" in capsys.readouterr().out


def test_exact_needs_the_readme_runs_cpu_vendor_and_model(tmp_path, capsys):
    # the same kernel path, AVX-512 flag, capability and library versions on another vendor's CPU: tolerant, in one
    # line that says why (an AMD EPYC and an Intel Xeon trained other numbers on the same pinned path)
    mod = _script()
    amd = {**MACHINE, "cpu_vendor": "AuthenticAMD"}
    a = _run(tmp_path / "a", ROWS, amd)
    assert mod.main([str(a)]) == 0
    block = capsys.readouterr().out
    assert "- This run: AMD EPYC (AuthenticAMD), 2 CPUs" in block
    readme = tmp_path / "README.md"
    readme.write_text(without_missing_groups(block))
    intel = _run(tmp_path / "intel", ROWS, {**MACHINE, "cpu_vendor": "GenuineIntel", "cpu_model": "Intel Xeon"})
    assert C.check_mode(claims.marked_block(readme.read_text()), intel) == ("tolerant", [
        "CPU AMD EPYC (AuthenticAMD) vs Intel Xeon (GenuineIntel): the exact check needs the README run's CPU vendor "
        "and model, as MKL's pinned AVX2 branch holds on Intel CPUs only"])
    assert mod.main([str(intel), "--check", str(readme)]) == 0
    err = capsys.readouterr().err
    assert "tolerant check (CPU AMD EPYC (AuthenticAMD) vs Intel Xeon (GenuineIntel)" in err and "0 problem(s)" in err
    # the same vendor and model: exact; a vendor alone differing (a model string two vendors share) is not the same CPU
    assert C.check_mode(claims.marked_block(readme.read_text()), _run(tmp_path / "b", ROWS, amd)) == ("exact", [])
    assert C.check_mode(claims.marked_block(readme.read_text()),
                        _run(tmp_path / "c", ROWS, {**amd, "cpu_vendor": "GenuineIntel"}))[0] == "tolerant"
    # a block written before vendors were recorded is compared by model alone
    assert C.same_cpu({"cpu_model": "AMD EPYC"}, {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD"}) == []
    assert C.same_cpu({"cpu_model": "AMD EPYC"}, {"cpu_model": "Intel Xeon", "cpu_vendor": "GenuineIntel"})


@pytest.mark.parametrize("change, problem", [
    ({"G-CARL": (-0.007, 0.78, "2 of 3")}, "G-CARL vs SFT: the README says below; this run: no difference"),
    ({"EditGRPO": (-0.06, 0.001, "3 of 3")}, "EditGRPO vs SFT: the README says above; this run: below"),
    ({"R_exact": (0.2, 0.001, "3 of 3")}, "R_exact vs SFT: the README detects no difference; this run: above"),
    ({"R_exact": (0.2, 0.001, "3 of 3")}, "larger than the detectable"),
])
def test_tolerant_check_fails_when_a_conclusion_does_not_hold(tmp_path, capsys, change, problem):
    mod = _script()
    a = _run(tmp_path / "a", ROWS)
    assert mod.main([str(a)]) == 0
    readme = tmp_path / "README.md"
    readme.write_text(without_missing_groups(capsys.readouterr().out))  # groups of tables not in _run
    other = _run(tmp_path / "other", {**ROWS, **change}, {**MACHINE, "kernel_path": "native"})
    assert mod.main([str(other), "--check", str(readme)]) == 1
    assert problem in capsys.readouterr().out


def test_a_small_significant_difference_against_no_difference_is_a_note(tmp_path, capsys):
    mod = _script()
    a = _run(tmp_path / "a", ROWS)
    mod.main([str(a)])
    readme = tmp_path / "README.md"
    readme.write_text(without_missing_groups(capsys.readouterr().out))  # groups of tables not in _run
    other = _run(tmp_path / "other", {**ROWS, "R_exact": (0.06, 0.004, "3 of 3")}, None)  # no machine record
    assert mod.main([str(other), "--check", str(readme)]) == 0
    err = capsys.readouterr().err
    assert "machine.json is missing" in err and "note: Findings clinical_f1_macro14, R_exact vs SFT" in err


def test_runs_with_the_same_trained_numbers_count_once(tmp_path):
    """Two runs that trained byte-identical numbers (the same kernel path twice) are one replication, not two."""
    a, copy = _run(tmp_path / "a", ROWS), _run(tmp_path / "copy", ROWS)
    t = C.conclusions([a, copy]).set_index("A")
    assert t.duplicate_runs.iloc[0] == "2" and (t.runs == 1).all() and "diff_2" not in t.columns
    # one distinct run: its own verdicts stand, as for one run given
    assert t.verdict.to_dict() == C.conclusions([a]).set_index("A").verdict.to_dict()
    lines = C.conclusion_lines([a, copy], labels=["box 1", "box 2"])
    assert "box 2 trained the same numbers as an earlier run and count once" in lines[0]
    assert "in this run (box 1)" in lines[0]
