"""Candidates on disk (sdrlib.experiments.candidates): the JSONL cache and the policies notebook 05 samples."""

from __future__ import annotations

import pytest

from sdrlib.experiments import candidates as C


def test_candidates_cache_roundtrip(tmp_path):
    p = tmp_path / "c.jsonl"
    key = {"policy": "x", "k": 2}
    C.write_candidates(p, key, ["s1", "s2"], [["a", "b"], ["c", "d"]])
    assert C.read_candidates(p, key, ["s1", "s2"]) == [["a", "b"], ["c", "d"]]
    assert C.read_candidates(p, {"policy": "x", "k": 3}, ["s1", "s2"]) is None
    assert C.read_candidates(p, key, ["s1"]) is None
    p.write_text("not json\n")
    assert C.read_candidates(p, key, ["s1", "s2"]) is None


def test_policy_dirs_follow_selection_policies(tmp_path, monkeypatch):
    from sdrlib.config import ConfigError, load_profile

    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    cfg = load_profile("smoke", {"grpo.rewards": ["fmt", "chamfer"], "pruning.policies": ["sft"],
                                 "selection.policies": ["chamfer", "sft"]})
    for part in (("sft", "seed0"), ("grpo", "chamfer", "seed0"), ("grpo", "fmt", "seed0")):
        (tmp_path / "runs" / "smoke").joinpath(*part, "final").mkdir(parents=True)
    assert list(C.policy_dirs(cfg)) == ["chamfer", "sft"]  # the profile's subset, in its order
    everything = load_profile("smoke", {"grpo.rewards": ["fmt", "chamfer"], "pruning.policies": ["sft"]})
    assert list(C.policy_dirs(everything)) == ["sft", "fmt", "chamfer"]  # empty = all trained policies
    with pytest.raises(ConfigError, match="selection.policies"):
        load_profile("smoke", {"grpo.rewards": ["fmt"], "pruning.policies": ["sft"], "selection.policies": ["hausdorff"]})
