"""A GRPO run gives the same weights, byte for byte, whatever its process did before (docs/reproducibility.md).

The same tiny ``chamfer_neg`` run (negation-aware distance reward, real encoder and embedding cache) is
trained in three fresh Python processes:

- ``fresh``: alone, with an empty embedding cache (the encoder embeds every new sentence);
- ``after``: after another GRPO run (``chamfer``) in the same process;
- ``warm``: alone, on a copy of ``fresh``'s embedding cache (every reward is a cache hit).

Its final weights, per-step loss and reward, and the torch thread count it ended on must agree.
A fresh process is the point: the old failure (torch's intra-op thread count raised from the
profile's 1 to numba's thread count by the first numba kernel of the first distance reward of the
process, so a process's first such run trained on other threads than any later one) only shows
from a process that has not run numba yet. ``NUMBA_NUM_THREADS=2`` makes that switch visible on a
1-core machine too. Run as a script, this module is the child process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

#: The tiny policy trained long enough that the distance reward really runs (training_helpers.GRPO_TINY)
from training_helpers import GRPO_TINY as TINY  # noqa: E402  # on top of TINY_POLICY (the shared tiny shape), joined in _setup
N_RECORDS = 12


def _setup(root: Path):
    os.environ["SDR_ROOT"] = str(root)
    from sdrlib.config import load_profile
    from training_helpers import TINY_POLICY, make_records

    return load_profile("smoke", {**TINY_POLICY, **TINY}), make_records(N_RECORDS, root / "img")


def _weights_digest(final: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(Path(final).glob("*.safetensors")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _child(root: Path, sft_final: Path, cache_from: str, rewards: list[str]) -> None:
    """Train ``rewards`` in turn (the last is the run compared) from ``sft_final``; one JSON line per run."""
    from sdrlib import training
    from sdrlib.embedding import SentenceEmbedder
    from sdrlib.rewards import prewarm

    cfg, recs = _setup(root)
    if cache_from != "-":
        shutil.copytree(Path(cache_from) / cfg.cache_dir.relative_to(root), cfg.cache_dir)
    emb = SentenceEmbedder.from_config(cfg)  # as posttrain.train_all: one embedder, references prewarmed
    prewarm(emb, [r.findings for r in recs], [r.impression for r in recs])
    for reward in rewards:
        emb.reset_stats()
        res = training.grpo(cfg, reward, sft_final, recs, seed=cfg.seed, embedder=emb, progress=False)
        curves = training.read_curves(res.path)
        print("RUN " + json.dumps({
            "reward": reward, "weights": _weights_digest(res.final),
            "loss": curves["loss"].tolist(), "reward_mean": curves["reward"].tolist(),
            "torch_threads": res.info["torch_threads"], "counts": res.counts,
            "misses": emb.stats["misses"]}), flush=True)


def _run(root: Path, sft_final: Path, cache_from: Path | None, rewards: list[str]) -> dict:
    env = {**os.environ, "NUMBA_NUM_THREADS": "2", "PYTHONPATH": os.pathsep.join(
        [str(HERE.parent), str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}  # tests/ (helpers), the repository
    proc = subprocess.run([sys.executable, __file__, str(root), str(sft_final), str(cache_from or "-"), *rewards],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = [json.loads(line[4:]) for line in proc.stdout.splitlines() if line.startswith("RUN ")]
    assert [r["reward"] for r in runs] == rewards, proc.stdout[-2000:]
    return runs[-1]


@pytest.fixture(scope="module")
def sft_final(tmp_path_factory, grpo_tiny_sft):
    import torch

    from sdrlib import training

    root = tmp_path_factory.mktemp("sdr_det")
    mp = pytest.MonkeyPatch()
    before = torch.get_num_threads()
    try:
        cfg, recs = _setup(root)
        mp.setenv("SDR_ROOT", str(root))
        shutil.copytree(grpo_tiny_sft, cfg.runs_dir / cfg.name / "sft")  # the session's run (tests/conftest.py)
        yield training.sft(cfg, recs, progress=False).final
    finally:
        torch.set_num_threads(before)
        mp.undo()


def test_grpo_weights_do_not_depend_on_process_history(sft_final, tmp_path):
    fresh = _run(tmp_path / "fresh", sft_final, None, ["chamfer_neg"])
    after = _run(tmp_path / "after", sft_final, None, ["chamfer", "chamfer_neg"])
    warm = _run(tmp_path / "warm", sft_final, tmp_path / "fresh", ["chamfer_neg"])
    # the distance reward really ran: valid completions were scored, new sentences embedded (fresh) or not (warm)
    valid = fresh["counts"]["total"] - sum(fresh["counts"].get(k, 0) for k in
                                           ("not_text", "non_text_tokens", "too_long", "no_template", "empty_section"))
    assert valid > 0 and fresh["misses"] > 0, fresh
    assert warm["misses"] == 0, warm
    for name, run in (("after another run", after), ("with a warm cache", warm)):
        assert run["weights"] == fresh["weights"], (name, run, fresh)
        assert (run["loss"], run["reward_mean"]) == (fresh["loss"], fresh["reward_mean"]), (name, run, fresh)
        assert run["torch_threads"] == fresh["torch_threads"] == 1, (name, run, fresh)


if __name__ == "__main__":
    _child(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4:])
