"""Label pretraining of the tiny policy's vision tower (sdrlib.training.tower): it trains the tower and nothing
else, is deterministic for a seed, refuses unlabelled studies by name, changes the SFT run key, and the tower
probe reads a finding the images carry."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from sdrlib import models
from sdrlib.config import load_profile
from sdrlib.training.policy import tiny_spec
from sdrlib.training.runkeys import run_key
from sdrlib.training.tower import TOWER_OBSERVATIONS, pretrain_tower, tower_labels, tower_probe
from training_helpers import TINY_POLICY, make_records

#: make_records draws report 1 (right lower lobe opacity: a bright quadrant) and 2 (cardiomegaly: a wide blob)
LABELS = {0: {"No Finding": 1}, 1: {"Lung Opacity": 1, "Pneumonia": -1}, 2: {"Cardiomegaly": 1}}


def _records(tmp_path, n=40, split="train", seed=0):
    recs = make_records(n, tmp_path / split, split=split, seed=seed)
    return [dataclasses.replace(r, labels=LABELS[r.labels["k"]]) for r in recs]


def _policy(recs, seed=0):
    cfg = load_profile("smoke", TINY_POLICY)
    texts = [f"<think> {r.findings} </think> <answer> {r.impression} </answer>" for r in recs]
    return models.build_tiny_policy(texts, tiny_spec(cfg), vocab_size=cfg.sft.vocab_size, seed=seed)


def _state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_labels_count_uncertain_as_positive_and_refuse_unlabelled_studies(tmp_path):
    recs = _records(tmp_path, 6)
    y = tower_labels(recs)
    assert y.shape == (6, len(TOWER_OBSERVATIONS)) and "No Finding" not in TOWER_OBSERVATIONS
    k = [r for r in recs if "Pneumonia" in r.labels]
    if k:
        assert tower_labels(k)[0, TOWER_OBSERVATIONS.index("Pneumonia")] == 1.0  # uncertain (-1) counts positive
    bad = [dataclasses.replace(recs[0], labels=None, study_id="s-unlabelled"), *recs[1:]]
    with pytest.raises(models.PolicyError, match="s-unlabelled.*tiny_tower_epochs: 0"):
        tower_labels(bad)


def test_pretraining_moves_the_tower_only_and_is_deterministic(tmp_path):
    torch.set_num_threads(1)
    recs = _records(tmp_path)
    model, proc = _policy(recs)
    vis0, text0 = _state(model.model.visual), _state(model.model.language_model)
    stats = pretrain_tower(model, proc, recs, epochs=2, learning_rate=1e-2, batch_size=8, seed=3)
    assert stats["epochs"] == 2 and stats["steps"] == 10 and stats["loss_last"] < stats["loss_first"]
    vis1, text1 = _state(model.model.visual), _state(model.model.language_model)
    assert all(torch.equal(text0[k], text1[k]) for k in text0)
    assert any(not torch.equal(vis0[k], vis1[k]) for k in vis0)
    again, proc2 = _policy(recs)
    pretrain_tower(again, proc2, recs, epochs=2, learning_rate=1e-2, batch_size=8, seed=3)
    assert all(torch.equal(vis1[k], v) for k, v in _state(again.model.visual).items())
    untouched, proc3 = _policy(recs)
    before = _state(untouched.model.visual)
    assert pretrain_tower(untouched, proc3, recs, epochs=0, learning_rate=1e-2)["steps"] == 0
    assert all(torch.equal(before[k], v) for k, v in _state(untouched.model.visual).items())


def test_probe_reads_the_blob_the_images_carry(tmp_path):
    torch.set_num_threads(1)
    fit, score = _records(tmp_path, 60, "train", 0), _records(tmp_path, 40, "val", 1)
    model, proc = _policy(fit)
    t = tower_probe(model, proc, fit, score)
    assert list(t.observation) == list(TOWER_OBSERVATIONS)
    card = t.set_index("observation").loc["Cardiomegaly"]
    assert card.n_pos_fit >= 5 and 0.8 <= card.auroc <= 1.0
    assert np.isnan(t.set_index("observation").loc["Fracture", "auroc"])  # no positive: not probed


def test_tower_epochs_are_part_of_the_sft_run_key(tmp_path):
    recs = _records(tmp_path, 4)
    a = run_key(load_profile("smoke"), "sft", recs)
    b = run_key(load_profile("smoke", {"sft.tiny_tower_epochs": 3}), "sft", recs)
    assert a["sft"]["tiny_tower_epochs"] == 0 and b["sft"]["tiny_tower_epochs"] == 3 and a != b


def test_bad_settings_are_refused(tmp_path):
    recs = _records(tmp_path, 4)
    model, proc = _policy(recs)
    with pytest.raises(ValueError, match="learning_rate > 0"):
        pretrain_tower(model, proc, recs, epochs=1, learning_rate=0.0)


def test_records_and_settings_the_tower_cannot_use_are_named(tmp_path):
    """Before: no records or none with an image crashed (numpy concatenate, IndexError), labels with unknown keys,
    text values or no positive at all trained a tower on all-zero targets without a word, and a float epoch count,
    NaN learning rate or setting out of range was a bare TypeError / ValueError."""
    from PIL import Image

    from sdrlib.training.tower import TowerInputError, tower_features

    recs = _records(tmp_path, 8)
    model, proc = _policy(recs)
    with_labels = lambda labels: [dataclasses.replace(r, labels=labels) for r in recs]  # noqa: E731
    Image.new("L", (64, 160), 128).save(tmp_path / "wide.png")
    for bad, msg in (([], "none given"), ([dataclasses.replace(r, image_paths=[]) for r in recs], "8 studies have none"),
                     (with_labels({"Effusion": 1}), "label 'Effusion'"), (with_labels({"Cardiomegaly": "1"}), "'1'"),
                     (with_labels({"Cardiomegaly": 0}), "nothing to learn"),
                     ([dataclasses.replace(recs[0], image_paths=[str(tmp_path / "wide.png")]), *recs[1:]],
                      "images of one size")):
        with pytest.raises(models.PolicyError, match=msg):
            pretrain_tower(model, proc, bad, epochs=1, learning_rate=1e-3)
    for kw in ({"epochs": 1.5}, {"epochs": -1}, {"learning_rate": float("nan")}, {"batch_size": 0}):
        with pytest.raises(TowerInputError, match="needed, got"):
            pretrain_tower(model, proc, recs, **{"epochs": 1, "learning_rate": 1e-3, **kw})
    with pytest.raises(TowerInputError, match="none given"):
        tower_features(model, proc, [])


@pytest.mark.parametrize("head", ["max", "flat+max"])
def test_the_position_tolerant_heads_train_the_tower_deterministically(tmp_path, head):
    """``head="max"`` reads the merged tokens' maximum over positions, ``"flat+max"`` adds the flat head's logits:
    each trains the tower (and only it), lowers its loss, repeats bit for bit, and differs from the flat head."""
    torch.set_num_threads(1)
    recs = _records(tmp_path)
    runs = []
    for h in (head, head, "flat"):
        model, proc = _policy(recs)
        text0 = _state(model.model.language_model)
        stats = pretrain_tower(model, proc, recs, epochs=2, learning_rate=1e-2, batch_size=8, seed=3, head=h)
        assert stats["head"] == h and stats["loss_last"] < stats["loss_first"]
        assert all(torch.equal(text0[k], v) for k, v in _state(model.model.language_model).items())
        runs.append(_state(model.model.visual))
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])
    assert any(not torch.equal(runs[0][k], runs[2][k]) for k in runs[0])


def test_an_unknown_head_is_named(tmp_path):
    recs = _records(tmp_path, 6)
    model, proc = _policy(recs)
    with pytest.raises(models.PolicyError, match="head 'mean'.*flat, max, flat\\+max.*tiny_tower_head"):
        pretrain_tower(model, proc, recs, epochs=1, learning_rate=1e-2, head="mean")
    with pytest.raises(Exception, match="tiny_tower_head"):
        load_profile("smoke", {"sft.tiny_tower_head": "mean"})
