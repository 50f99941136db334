"""GRPO runs side by side (``grpo.workers: 2``) train the same weights, byte for byte, as one after the other.

The same tiny SFT policy (100 steps, so GRPO samples completions on the template and the distance reward
really runs: real encoder, embedding cache, numba kernels) is post-trained with ``exact`` and ``chamfer`` at
two seeds, once with ``grpo.workers: 1`` (in this process, one run after the other, in the profile's order) and
once with ``grpo.workers: 2`` (two spawned worker processes sharing one cold embedding cache, the two
``chamfer`` runs started first and side by side: :func:`sdrlib.experiments.posttrain.longest_first`); the
final weights, the per-step rewards and the test generations of :func:`sdrlib.experiments.posttrain.generate_all`
must agree, whatever the order the runs started in.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from training_helpers import GRPO_TINY, TINY_POLICY, make_records

TINY = {
    **GRPO_TINY,
    "grpo.seeds": 2,
    "grpo.rewards": ["exact", "chamfer"],
    "grpo.ablations": [],
}


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(Path(folder).glob("*.safetensors")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


@pytest.mark.slow
def test_side_by_side_runs_train_the_same_weights(tmp_path, monkeypatch, grpo_tiny_sft):
    import torch

    from sdrlib import training
    from sdrlib.config import load_profile
    from sdrlib.experiments import posttrain

    before = torch.get_num_threads()
    recs = make_records(12, tmp_path / "img")
    test = make_records(4, tmp_path / "img_test", split="test", seed=1)
    got = {}
    try:
        for workers in (1, 2):
            root = tmp_path / f"w{workers}"
            monkeypatch.setenv("SDR_ROOT", str(root))
            cfg = load_profile("smoke", {**TINY_POLICY, **TINY, "grpo.workers": workers})
            # the same SFT policy (the session's run, tests/conftest.py, reused by its run key), an empty
            # embedding cache
            shutil.copytree(grpo_tiny_sft, root / "runs" / cfg.name / "sft")
            lines: list[str] = []
            policies = posttrain.train_all(cfg, recs, log=lines.append)
            runs = {k: p for k, p in policies.items() if k[0] != "sft"}
            assert len(runs) == 4 and not any("reused" in x for x in lines if x.startswith("GRPO")), lines
            gens = posttrain.generate_all(cfg, posttrain.eval_runs(cfg, policies), test)
            got[workers] = {
                "weights": {k: _digest(p) for k, p in runs.items()},
                "reward": {k: training.read_curves(p.parent / "curves.csv")["reward"].tolist() for k, p in runs.items()},
                "gens": gens,
                "log": [x.split(":")[0] for x in lines if x.startswith("GRPO")],
            }
    finally:
        torch.set_num_threads(before)
    one, two = got[1], got[2]
    assert one["weights"] == two["weights"]
    assert one["reward"] == two["reward"]
    assert one["gens"] == two["gens"] and list(one["gens"]) == list(two["gens"])
    # side by side, the log names every run when it is done, in the profile's order (not the order they started in)
    assert two["log"] == [f"GRPO {r} seed {s}" for r in TINY["grpo.rewards"] for s in (0, 1)], two["log"]
