"""Balanced sampling of SFT studies (sdrlib.training.sampling): the weights follow the rarest finding, the draws are
a function of the seed and the epoch, bad weights and exponents are named, and SFT trains with it."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
import torch

from sdrlib import training
from sdrlib.config import ConfigError, load_profile
from sdrlib.training.sampling import BalancedSampler, SamplingError, balanced_weights
from training_helpers import TINY_POLICY, make_records

LABELS = {0: {"No Finding": 1}, 1: {"Lung Opacity": 1, "Pneumonia": -1}, 2: {"Cardiomegaly": 1}}


def test_weights_follow_the_rarest_finding_of_each_study():
    y = np.zeros((10, 13))
    y[0, [1, 8]] = 1  # cardiomegaly and pneumothorax: its rarest finding counts
    y[1:5, 1] = 1  # four more cardiomegaly
    w = balanced_weights(y, 1.0)
    assert w[0] == pytest.approx(10.0) and w[1] == pytest.approx(2.0)  # prevalence 1/10 and 5/10
    assert w[5] == pytest.approx(2.0)  # 5 of 10 studies state no finding
    assert np.allclose(balanced_weights(y, 0.0), 1.0) and balanced_weights(y, 0.5)[0] == pytest.approx(10 ** 0.5)
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(SamplingError, match="exponent >= 0"):
            balanced_weights(y, bad)
    with pytest.raises(SamplingError, match="label matrix"):
        balanced_weights(np.zeros((0, 13)), 1.0)


def test_draws_are_a_function_of_seed_and_epoch_and_favour_heavy_studies():
    w = np.array([8.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    s = BalancedSampler(w, seed=3)
    e0 = list(s)
    assert len(e0) == len(s) == 9 and e0 == list(BalancedSampler(w, seed=3)) != list(BalancedSampler(w, seed=4))
    s.set_epoch(1)
    e1 = list(s)
    assert e1 != e0 and (s.set_epoch(0) or list(s)) == e0
    counts = Counter(i for e in range(200) for i in (s.set_epoch(e) or list(s)))
    assert counts[0] / sum(counts.values()) == pytest.approx(0.5, abs=0.05)  # 8 of 16 weight
    for bad in ([], [1.0, 0.0], [1.0, float("nan")], [[1.0]]):
        with pytest.raises(SamplingError, match="finite values > 0"):
            BalancedSampler(bad, seed=0)


@pytest.mark.parametrize("aux", [0.0, 1.0])
def test_sft_trains_with_balanced_sampling_alone_and_with_the_label_loss(tmp_path, monkeypatch, aux):
    torch.set_num_threads(1)
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    recs = [dataclasses.replace(r, labels=LABELS[r.labels["k"]]) for r in make_records(12, tmp_path / "img")]
    recs[0] = dataclasses.replace(recs[0], labels={"Pneumothorax": 1})  # one rare finding: the heaviest study
    cfg = load_profile("smoke", {**TINY_POLICY, "sft.max_steps": 4, "sft.batch_size": 4, "sft.save_steps": 2,
                                 "sft.balanced_sampling": 1.0, "sft.aux_label_weight": aux})
    seen = []
    draw = BalancedSampler.__iter__
    monkeypatch.setattr(BalancedSampler, "__iter__", lambda self: seen.append(self.weights) or draw(self))
    res = training.sft(cfg, recs)
    assert res.info["balanced_sampling"] == 1.0 and res.info["steps"] == 4
    assert seen and len(seen[0]) == 12 and seen[0].argmax() == 0 and seen[0][0] == pytest.approx(12.0)
    assert training.sft(cfg, recs).reused


def test_balanced_sampling_is_refused_where_it_cannot_run():
    with pytest.raises(ConfigError, match="balanced_sampling"):
        load_profile("smoke", {"sft.balanced_sampling": -1.0})
