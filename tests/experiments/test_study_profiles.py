"""The GRPO study's two profiles: ``study_blind_start`` (the study on record in docs/evidence/study/, its values
unchanged) and ``study`` (from the SFT start that reads the image; docs/evidence/study_seeing_start/), each command's
default evidence folder following the profile, and the record's run files still read under its profile (a setting
added to the schema after a run, at its default, is no other setting)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_record_profile_keeps_the_values_its_runs_were_trained_with():
    from sdrlib.config import load_profile

    cfg = load_profile("study_blind_start")
    assert (cfg.sft.batch_size, cfg.sft.processes, cfg.sft.max_steps, cfg.sft.aux_label_weight) == (16, 1, 1000, 0.0)
    assert (cfg.sft.tiny_tower_epochs, cfg.sft.balanced_sampling, cfg.data.n_train, cfg.data.n_test) == (0, 0.0, 2000,
                                                                                                        400)
    assert cfg.grpo.rewards == ["exact", "chamfer", "hausdorff", "chamfer_recall_1"]
    assert (cfg.grpo.seeds, cfg.grpo.eval_draws, cfg.grpo.eval_n, cfg.grpo.max_steps) == (22, 1, 0, 128)
    assert cfg.metrics.bootstrap == 1000  # the record's table: 1,000 resamples


def test_the_new_study_profile_takes_the_seeing_starts_recipe():
    from sdrlib.config import load_profile

    cfg, cpu = load_profile("study"), load_profile("cpu")
    s = cfg.sft
    assert (s.max_steps, s.aux_label_weight, s.balanced_sampling, s.tiny_tower_epochs) == (2000, 1.0, 0.5, 6)
    assert (s.processes, s.batch_size) == (cpu.sft.processes, cpu.sft.batch_size) == (2, 8)
    assert (cfg.data.n_train, cfg.data.n_test) == (4000, 400)
    assert cfg.grpo.rewards == ["fmt", "noise", "exact", "chamfer", "hausdorff", "chamfer_recall_1"]
    assert (cfg.grpo.seeds, cfg.grpo.eval_draws, cfg.grpo.eval_n, cfg.metrics.bootstrap) == (22, 1, 0, 10000)
    # chosen on validation from the new start (docs/evidence/study_seeing_start, "Setup"): the paper's learning rate,
    # the grid's larger beta, the record's steps
    assert (cfg.grpo.max_steps, cfg.grpo.learning_rate, cfg.grpo.beta) == (128, 2.0e-5, 0.4)
    text = (ROOT / "configs" / "study.yaml").read_text(encoding="utf-8")
    assert "pending" not in text and text.count("docs/evidence/study_seeing_start") >= 3

    assert (ROOT / "docs" / "evidence" / "study_seeing_start" / "README.md").is_file()


@pytest.mark.parametrize("profile, folder", [("study", "docs/evidence/study_seeing_start"),
                                             ("study_blind_start", "docs/evidence/study")])
def test_the_default_evidence_folder_follows_the_profile(profile, folder):
    from sdrlib.config import load_profile
    from sdrlib.experiments.study import cli

    ap = cli._parser()
    args = ap.parse_args(["status", "--profile", profile])
    assert cli._evidence(args, load_profile(profile), ap) == Path(folder)
    args = ap.parse_args(["status", "--profile", profile, "--evidence", "/tmp/elsewhere"])
    assert cli._evidence(args, load_profile(profile), ap) == Path("/tmp/elsewhere")


def test_a_profile_without_its_own_evidence_folder_needs_one(capsys, tmp_path, monkeypatch):
    """Before: every profile defaulted to docs/evidence/study, so ``run --profile cpu`` would have written its runs
    beside the study on record."""
    from sdrlib.experiments.study import cli

    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    with pytest.raises(SystemExit) as e:
        cli.main(["status", "--profile", "smoke"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "profile smoke has no evidence folder of its own" in err
    assert len(err.strip().splitlines()) == 1


def test_a_setting_added_after_a_run_at_its_default_is_no_other_setting():
    """The record's GRPO keys lack ``grpo.effective_batch`` (added later, default 0 = grad_accum as before): before,
    every run read as made under other settings and ``table --profile study_blind_start`` refused the record. A
    profile that sets an added setting otherwise still differs from such a file."""
    from sdrlib.config import load_profile
    from sdrlib.experiments.study.evidence import profile_settings, setting_defaults, settings_differences

    cfg = load_profile("smoke")
    want = profile_settings(cfg, "chamfer")
    old = {**want, "grpo": {k: v for k, v in want["grpo"].items() if k != "effective_batch"}}
    assert settings_differences(want, old) == []
    assert settings_differences(want, old, defaults={}) == ["grpo.effective_batch: None (profile 0)"]
    other = load_profile("smoke", {"grpo.effective_batch": 8, "grpo.batch_size": 4})
    assert settings_differences(profile_settings(other, "chamfer"), old) == ["grpo.effective_batch: None (profile 8)"]
    assert setting_defaults()["sft"]["tiny_tower_epochs"] == 0
    sft = profile_settings(load_profile("study"), "sft")
    old_sft = {**sft, "sft": {k: v for k, v in sft["sft"].items() if k != "tiny_tower_epochs"}}
    assert settings_differences(sft, old_sft) == ["sft.tiny_tower_epochs: None (profile 6)"]


def test_the_record_passes_the_tables_checks_under_its_profile():
    """One seed of the committed record (5 run files) against the record's profile: the table's checks (test
    studies by id, settings, copies, pairs) pass on the test split as generated now (SynthCXR 2.3.0 images; the
    reports are 2.2.0's)."""
    import gzip
    import json

    from sdrlib.config import load_profile
    from sdrlib.experiments.study.evidence import profile_settings, settings_differences

    cfg = load_profile("study_blind_start")
    runs = ROOT / "docs" / "evidence" / "study" / "runs"
    for f in sorted(runs.glob("*_s0.json.gz")):
        rec = json.loads(gzip.decompress(f.read_bytes()))
        assert settings_differences(profile_settings(cfg, rec["config"]), rec["key"]) == [], f.name
