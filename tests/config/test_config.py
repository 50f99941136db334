"""Profiles: strict validation, extends, overrides, output root."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdrlib.config import ConfigError, load_profile, profile_names


@pytest.mark.parametrize("name", ["smoke", "cpu", "paper", "rehearsal"])
def test_shipped_profiles_validate(name):
    cfg = load_profile(name)
    assert cfg.name == name and isinstance(cfg.seed, int)


def test_profiles_listed():
    assert {"smoke", "cpu", "paper", "rehearsal"} <= set(profile_names())


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


def test_a_mapping_for_a_section_is_merged_into_it_not_put_in_its_place():
    """``{"sft": {"max_steps": 5}}`` sets one key and keeps the profile's others (the cpu profile's SFT runs without
    gradient checkpointing, whose schema default is on), as the dotted key does; unknown keys in it are still refused."""
    cpu = load_profile("cpu")
    merged, dotted = load_profile("cpu", {"sft": {"max_steps": 5}}), load_profile("cpu", {"sft.max_steps": 5})
    assert merged == dotted and merged.sft.max_steps == 5
    assert (merged.sft.gradient_checkpointing, merged.sft.learning_rate) == (cpu.sft.gradient_checkpointing,
                                                                             cpu.sft.learning_rate) == (False, 2.0e-3)
    assert load_profile("cpu", {"grpo": {"editgrpo": {"tau": 0.5}}}).grpo.editgrpo.ops == cpu.grpo.editgrpo.ops
    with pytest.raises(ConfigError, match="unknown key"):
        load_profile("cpu", {"sft": {"max_stpes": 5}})


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


def test_rehearsal_keeps_the_paper_profiles_lists():
    """configs/rehearsal.yaml changes what a CPU box cannot do and the sizes; every list keeps the paper's shape."""
    paper, reh = load_profile("paper"), load_profile("rehearsal")
    assert reh.selection.names == paper.selection.names and len(reh.selection.names) == 15 and "gw" in reh.selection.names
    assert reh.selection.aggregations == paper.selection.aggregations == ["min", "avg", "knn"]
    assert reh.distances.names == paper.distances.names
    assert reh.grpo.rewards == paper.grpo.rewards and reh.grpo.ablations == paper.grpo.ablations
    assert (reh.pruning.names, reh.pruning.live_names, reh.pruning.policies, reh.pruning.sweep_p,
            reh.pruning.sweep_warmup) == (paper.pruning.names, paper.pruning.live_names, paper.pruning.policies,
                                          paper.pruning.sweep_p, paper.pruning.sweep_warmup)
    assert reh.grpo.seeds >= 2 and reh.grpo.editgrpo == paper.grpo.editgrpo
    # the encoder: the same code path with a 6-layer model (the paper's all-mpnet-base-v2 costs the suite minutes)
    assert (reh.sft.policy, reh.grpo.use_vllm, reh.data.source, reh.embedding.encoder) == (
        "tiny", False, "mimic", "all-MiniLM-L6-v2") and paper.embedding.encoder == "all-mpnet-base-v2"
    assert reh.data.standin_n > 0 and reh.selection.api_serve == "sft" and reh.selection.api_prompts == ["p1", "p2"]


def test_api_prompt_takes_one_prompt_or_a_list_and_api_serve_a_trained_policy():
    assert load_profile("smoke").selection.api_prompts == ["p1"]
    assert load_profile("smoke", {"selection.api_prompt": ["p2", "p1"]}).selection.api_prompts == ["p2", "p1"]
    for bad in ("p3", [], ["p1", "p1"], ["p1", "p9"]):
        with pytest.raises(ConfigError, match="selection.api_prompt = .*allowed: one of \\['p1', 'p2'\\]"):
            load_profile("smoke", {"selection.api_prompt": bad})
    assert load_profile("smoke", {"selection.api_serve": "chamfer"}).selection.api_serve == "chamfer"
    with pytest.raises(ConfigError, match="selection.api_serve = 'exact': not trained by this profile"):
        load_profile("smoke", {"selection.api_serve": "exact"})
    with pytest.raises(ConfigError, match="serves on loopback only"):
        load_profile("smoke", {"selection.api_serve": "sft", "selection.api_base_url": "https://api.openai.com/v1"})
    assert load_profile("smoke", {"selection.api_serve": "sft",
                                  "selection.api_base_url": "http://127.0.0.1:8011/v1"}).selection.api_serve == "sft"
    with pytest.raises(ConfigError, match="data.standin_n = -1: out of range"):
        load_profile("smoke", {"data.standin_n": -1})


@pytest.mark.parametrize("name", profile_names())
@pytest.mark.parametrize("section", ["selection", "pruning"])
def test_the_profile_key_k_is_the_codes_n_candidates(name, section):
    """Profiles write the paper's K as ``selection.k`` / ``pruning.k``; the code reads it as ``n_candidates``
    (``sdrlib.selection``, ``sdrlib.pruning.PruneParams``). The sections' ``n_candidates`` is the one mapping."""
    cfg = load_profile(name)
    assert getattr(cfg, section).n_candidates == getattr(cfg, section).k
    assert getattr(load_profile(name, {f"{section}.k": 7}), section).n_candidates == 7
    assert "n_candidates" not in cfg.to_dict()[section]  # one key a user writes, not two
    with pytest.raises(ConfigError, match="n_candidates"):
        load_profile(name, {f"{section}.n_candidates": 7})
