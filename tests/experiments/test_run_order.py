"""GRPO runs start longest first on the workers, and the start order never enters a run.

:func:`sdrlib.experiments.posttrain.train_all` with ``grpo.workers: 2`` submits runs whose reward needs the sentence
encoder before the others (:func:`~sdrlib.experiments.posttrain.longest_first`). Here the pool and the trainer are
stand-ins that record what each run is given: every run gets the same arguments as in the one-process path (profile,
reward, seed, SFT policy, records; the run key and the run's seed are computed from these alone inside
:func:`sdrlib.training.grpo`), only the start order differs, and the log and the returned runs keep the profile's
order. ``test_parallel_runs.py`` trains real runs both ways and compares the weights byte for byte.
"""

from __future__ import annotations

import contextlib
import dataclasses
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

import pytest

from sdrlib.config import load_profile
from sdrlib.experiments import posttrain

REWARDS = ["fmt", "exact", "chamfer", "noise", "gcarl", "hausdorff"]


class _Pool:
    """A stand-in executor: runs each job at once in this process and records the start order."""

    def __init__(self) -> None:
        self.started: list[tuple[str, int]] = []

    def submit(self, fn, *args):
        self.started.append((args[1], args[2]))
        fut: Future = Future()
        fut.set_result(fn(*args))
        return fut


def _train(monkeypatch, tmp_path: Path, workers: int):
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    cfg = load_profile("smoke", {"grpo.rewards": REWARDS, "grpo.seeds": 2, "grpo.ablations": [],
                                 "grpo.workers": workers})
    records = [SimpleNamespace(findings="The lungs are clear.", impression="Normal.", study_id=f"s{i}")
               for i in range(3)]
    sft_final = tmp_path / "sft" / "final"
    calls: list[dict] = []

    def fake_grpo(cfg_, reward, init_from, recs, *, seed, **_):
        profile = dataclasses.asdict(cfg_)
        profile["grpo"].pop("workers")  # how many runs go side by side; the one setting the two paths differ in
        calls.append({"profile": profile, "reward": reward, "seed": seed, "init_from": init_from, "records": list(recs)})
        return SimpleNamespace(reused=True, final=tmp_path / reward / f"seed{seed}")

    pool = _Pool()
    monkeypatch.setattr(posttrain.training, "sft", lambda *a, **k: SimpleNamespace(final=sft_final, reused=True))
    monkeypatch.setattr(posttrain.training, "grpo", fake_grpo)
    monkeypatch.setattr(posttrain, "prewarm", lambda *a, **k: {})
    monkeypatch.setattr(posttrain, "SentenceEmbedder", SimpleNamespace(from_config=lambda c: SimpleNamespace()))
    monkeypatch.setattr(posttrain, "worker_pool", lambda c: contextlib.nullcontext(pool))
    lines: list[str] = []
    out = posttrain.train_all(cfg, records, log=lines.append, embedder=object())
    return cfg, out, calls, pool.started, lines


def test_runs_start_longest_first_with_the_same_arguments(monkeypatch, tmp_path):
    _, seq_out, seq_calls, seq_started, _ = _train(monkeypatch, tmp_path, 1)
    cfg, par_out, par_calls, started, lines = _train(monkeypatch, tmp_path, 2)
    profile_order = [(r, s) for r in REWARDS for s in (cfg.seed, cfg.seed + 1)]
    assert seq_started == [] and [(c["reward"], c["seed"]) for c in seq_calls] == profile_order
    # side by side: the encoder's runs start first, each kind in the profile's order
    long = [(r, s) for r, s in profile_order if r in ("chamfer", "gcarl", "hausdorff")]
    assert started == long + [rs for rs in profile_order if rs not in long]
    assert started == posttrain.longest_first(profile_order) != profile_order
    # every run is given exactly what the one-process path gives it: the order is not among its inputs
    key = lambda c: (c["reward"], c["seed"])  # noqa: E731
    assert sorted(par_calls, key=key) == sorted(seq_calls, key=key)
    # what the caller sees keeps the profile's order
    assert list(par_out) == list(seq_out) == [("sft", cfg.seed), *profile_order]
    assert [x for x in lines if x.startswith("GRPO")] == [f"GRPO {r} seed {s}: reused" for r, s in profile_order]


@pytest.mark.parametrize("runs, expected", [
    ([], []),
    ([("fmt", 0), ("chamfer", 0)], [("chamfer", 0), ("fmt", 0)]),
    ([("exact", 1), ("noise", 0), ("exact", 0)], [("exact", 1), ("noise", 0), ("exact", 0)]),
    ([("chamfer", 2), ("fmt", 0), ("chamfer", 0)], [("chamfer", 2), ("chamfer", 0), ("fmt", 0)]),
])
def test_longest_first_is_stable_within_a_kind(runs, expected):
    assert posttrain.longest_first(runs) == expected


def test_longest_first_names_an_unknown_reward():
    with pytest.raises(ValueError, match="nonsense"):
        posttrain.longest_first([("nonsense", 0)])
