"""Tests for the control rewards ``const`` and ``noise`` (sdrlib.rewards.methods.control)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sdrlib.rewards import parse_reward, trl_reward_functions
from sdrlib.rewards.methods.control import noise_value

GOOD = "<think> The lungs are clear. </think> <answer> Normal. </answer>"
OTHER = "<think> There is a small effusion. </think> <answer> Effusion. </answer>"


def test_controls_are_registered_with_labels():
    assert parse_reward("const").label == "C-const" and parse_reward("noise").label == "C-noise"
    assert not parse_reward("noise").needs_embedder


def _scorer(name):
    return trl_reward_functions(name)[0][0].scorer  # the weights a GRPO run uses (lambda_fmt 0)


def test_const_scores_one_for_every_completion_valid_or_not():
    b = _scorer("const").score([GOOD, "no template", None], ["F."] * 3, ["I."] * 3)
    assert b.total.tolist() == [1.0, 1.0, 1.0] and b.fmt.tolist() == [1.0, 0.0, 0.0]


def test_noise_is_deterministic_uniform_and_ignores_format():
    refs = (["The lungs are clear."] * 4, ["Normal."] * 4)
    comps = [GOOD, OTHER, "no template", "also no template"]
    a = _scorer("noise").score(comps, *refs).total
    b = _scorer("noise").score(comps, *refs).total
    assert np.array_equal(a, b) and ((a >= 0) & (a < 1)).all() and len(set(a.tolist())) == 4
    vals = [noise_value(str(k), "f", "i") for k in range(2000)]
    assert 0.45 < np.mean(vals) < 0.55 and min(vals) >= 0 and max(vals) < 1


def test_controls_give_r_fmt_weight_zero_in_trl():
    funcs, weights = trl_reward_functions("noise")
    assert [f.__name__ for f in funcs] == ["r_fmt", "r_noise"] and weights == [0.0, 1.0]


@pytest.mark.slow
def test_const_leaves_the_tiny_policy_unchanged(tmp_path, monkeypatch):
    """Zero advantages and a zero KL gradient at the reference: every weight stays as it was."""
    from safetensors.torch import load_file

    from sdrlib import training
    from sdrlib.config import load_profile
    from training_helpers import TINY_POLICY, make_records

    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    torch.set_num_threads(1)
    cfg = load_profile("smoke", {**TINY_POLICY, "sft.max_steps": 2, "sft.batch_size": 4, "grpo.max_steps": 2,
                                 "grpo.batch_size": 4, "grpo.num_generations": 2,
                                 "grpo.max_completion_length": 12, "grpo.save_steps": 5})
    recs = make_records(8, tmp_path / "img")
    sft = training.sft(cfg, recs)
    res = training.grpo(cfg, "const", sft.final, recs)
    before, after = load_file(sft.final / "model.safetensors"), load_file(res.final / "model.safetensors")
    assert before.keys() == after.keys()
    moved = [k for k in before if not torch.equal(before[k], after[k])]
    assert moved == []
