"""The auxiliary label loss of SFT (sdrlib.training.aux_labels): it reads the position where the report starts,
trains the head and reaches the decoder, leaves a plain policy behind, and is refused where it cannot run."""

from __future__ import annotations

import dataclasses
import sys

import pytest
import torch
from safetensors.torch import load_file
from transformers.trainer_utils import get_last_checkpoint

from sdrlib import training
from sdrlib.config import ConfigError, load_profile
from sdrlib.models import load_tiny_policy
from sdrlib.training.aux_labels import HEAD, AuxLabelError, start_positions
from sdrlib.training.tower import TowerInputError
from training_helpers import TINY_POLICY, make_records

#: make_records draws report 1 (right lower lobe opacity: a bright quadrant) and 2 (cardiomegaly: a wide blob)
LABELS = {0: {"No Finding": 1}, 1: {"Lung Opacity": 1, "Pneumonia": -1}, 2: {"Cardiomegaly": 1}}
TINY = {**TINY_POLICY, "sft.max_steps": 12, "sft.batch_size": 4, "sft.save_steps": 6, "sft.learning_rate": 5e-3}


def _records(tmp_path, n=16):
    recs = make_records(n, tmp_path / "img", split="train", seed=0)
    return [dataclasses.replace(r, labels=LABELS[r.labels["k"]]) for r in recs]


def test_the_start_position_is_the_last_prompt_token_and_a_row_without_report_is_named():
    labels = torch.tensor([[-100, -100, 5, 6, -100], [-100, -100, -100, 7, 8]])
    assert start_positions(labels).tolist() == [1, 2]
    with pytest.raises(AuxLabelError, match="1 row"):
        start_positions(torch.tensor([[-100, 5, 6], [-100, -100, -100]]))
    with pytest.raises(AuxLabelError, match="no report after a prompt"):
        start_positions(torch.tensor([[5, 6, 7]]))  # the completion starts at 0: no prompt position to read


def test_sft_with_the_label_loss_trains_the_head_reaches_the_decoder_and_saves_a_plain_policy(tmp_path, monkeypatch):
    torch.set_num_threads(1)
    recs = _records(tmp_path)
    finals = {}
    for w in (0.0, 1.0):
        monkeypatch.setenv("SDR_ROOT", str(tmp_path / f"w{w}"))
        res = training.sft(load_profile("smoke", {**TINY, "sft.aux_label_weight": w}), recs)
        curves = training.read_curves(res.path)
        assert res.info["aux_label_weight"] == w
        if w:
            aux = curves["aux_label_loss"].dropna()
            assert len(aux) >= 2 and aux.iloc[-1] < aux.iloc[0]  # the head learns the labels
            ckpt = get_last_checkpoint(str(res.path))  # checkpoints keep the head, for a resume
            assert any(k.startswith(HEAD) for k in load_file(f"{ckpt}/model.safetensors"))
        else:
            assert "aux_label_loss" not in curves
        model, _ = load_tiny_policy(res.final)
        assert not any(HEAD in k for k in model.state_dict()) and not hasattr(model, HEAD)
        finals[w] = model.state_dict()
    text = [k for k in finals[0.0] if "language_model" in k]
    assert any(not torch.equal(finals[0.0][k], finals[1.0][k]) for k in text)  # the loss reaches the decoder


def test_the_label_loss_is_refused_where_it_cannot_run(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="aux_label_weight"):
        load_profile("smoke", {"sft.aux_label_weight": -1.0})
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    paper = load_profile("paper", {"sft.aux_label_weight": 1.0, "metrics.allow_substitutes": True})
    monkeypatch.setattr(sys.modules["sdrlib.training.sft"], "preflight", lambda cfg: None)  # past the GPU check, as on a GPU box
    with pytest.raises(AuxLabelError, match="tiny policy only"):
        training.sft(paper, train_records=None)
    unlabelled = [dataclasses.replace(r, labels=None) for r in _records(tmp_path, 6)]
    with pytest.raises(TowerInputError, match="labelled training studies"):
        training.sft(load_profile("smoke", {**TINY, "sft.aux_label_weight": 1.0}), unlabelled)
