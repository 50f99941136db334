"""Profiles: strict validation, extends, overrides, output root."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdrlib.config import ConfigError, load_profile, profile_names


@pytest.mark.parametrize("name", ["smoke", "cpu", "paper"])
def test_shipped_profiles_validate(name):
    cfg = load_profile(name)
    assert cfg.name == name and isinstance(cfg.seed, int)


def test_profiles_listed():
    assert {"smoke", "cpu", "paper"} <= set(profile_names())


def test_smoke_extends_cpu():
    cpu, smoke = load_profile("cpu"), load_profile("smoke")
    assert smoke.data.n_train < cpu.data.n_train
    assert smoke.data.source == cpu.data.source  # inherited


def test_overrides_are_validated():
    assert load_profile("smoke", {"data.n_train": 8, "seed": 3}).data.n_train == 8
    with pytest.raises(ConfigError, match="unknown key"):
        load_profile("smoke", {"data.n_trian": 8})
    with pytest.raises(ConfigError, match="expected an integer"):
        load_profile("smoke", {"data.n_train": "8"})
    with pytest.raises(ConfigError, match="expected an integer"):
        load_profile("smoke", {"seed": True})


def test_yaml_float_pitfall(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("extends: smoke\nsft:\n  learning_rate: 1e-4\n")
    with pytest.raises(ConfigError, match="1.0e-5"):
        load_profile(str(p))


def test_unknown_section_and_missing_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("extends: smoke\nfoo:\n  bar: 1\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_profile(str(p))
    with pytest.raises(ConfigError, match="not found"):
        load_profile("no_such_profile")


def test_output_root(monkeypatch, tmp_path):
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    cfg = load_profile("smoke")
    assert cfg.results_dir == tmp_path / "results" and cfg.figures_dir == tmp_path / "figures"
    monkeypatch.delenv("SDR_ROOT")
    assert load_profile("smoke").results_dir == Path(__file__).resolve().parents[2] / "results"
