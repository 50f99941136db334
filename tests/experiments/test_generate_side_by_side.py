"""Sampling side by side in worker processes writes the same texts as one call after the other in one process.

Notebook 03 samples its test generations and the shuffled-image control side by side
(:func:`sdrlib.experiments.posttrain.generate_side_by_side`), notebook 05 every policy's K candidate columns
(:func:`sdrlib.experiments.candidates.all_local_candidates`). Each sampling call is seeded on its own and kept whole
in one process, so the texts must be those of the one-process path byte for byte: checked on a tiny SFT policy
trained long enough to write the template (so completions end at different lengths), with several batches per call.
"""

from __future__ import annotations

import shutil

import pytest

from training_helpers import GRPO_TINY, TINY_POLICY, make_records

TINY = {**TINY_POLICY, **GRPO_TINY, "sft.eval_batch_size": 3, "sft.max_new_tokens": 48, "grpo.workers": 2}


@pytest.fixture(scope="module")
def trained(tmp_path_factory, grpo_tiny_sft):
    import torch

    from sdrlib import training
    from sdrlib.config import load_profile

    root = tmp_path_factory.mktemp("side_by_side")
    mp = pytest.MonkeyPatch()
    before = torch.get_num_threads()
    try:
        mp.setenv("SDR_ROOT", str(root))
        cfg = load_profile("smoke", TINY)
        shutil.copytree(grpo_tiny_sft, cfg.runs_dir / cfg.name / "sft")  # the session's run (tests/conftest.py)
        recs = make_records(12, root / "img")
        test = make_records(7, root / "img_test", split="test", seed=1)
        yield cfg, training.sft(cfg, recs, progress=False).final, test, root
    finally:
        torch.set_num_threads(before)
        mp.undo()


@pytest.mark.slow
def test_test_generations_side_by_side_match_one_process(trained):
    from sdrlib.experiments import posttrain

    cfg, sft, test, _ = trained
    calls = [{"policy_dir": sft, "test_records": test}, {"policy_dir": sft, "test_records": test, "shuffle_images": True},
             {"policy_dir": sft, "test_records": test, "seed": cfg.seed + 1}]
    side = posttrain.generate_side_by_side(cfg, calls)  # nothing cached: three calls on two workers
    here = [posttrain.generate_test(cfg, **c, force=True) for c in calls]  # this process, one after the other
    assert side == here
    assert len(set(map(tuple, here))) == 3 and all(len(g) == len(test) for g in here)  # the calls differ


@pytest.mark.slow
def test_candidate_columns_side_by_side_match_one_process(trained):
    from sdrlib.experiments import candidates

    cfg, sft, test, root = trained
    other = root / "other" / "final"  # a second policy folder (the same weights): two policies' columns interleave
    shutil.copytree(sft, other)
    policies = {"sft": sft, "other": other}
    paths = {n: root / "sel" / f"candidates_{n}.jsonl" for n in policies}
    lines: list[str] = []
    side = candidates.all_local_candidates(cfg, policies, test, 3, paths, log=lines.append)
    here = {n: candidates.local_candidates(cfg, d, test, 3, root / "sel1" / f"{n}.jsonl", log=None)
            for n, d in policies.items()}
    assert side == here and list(side) == list(policies)
    assert all(len(c) == len(test) and all(len(row) == 3 for row in c) for c in side.values())
    assert any(len(set(row)) > 1 for row in side["sft"])  # the columns are different samples
    # the cache written side by side is the one local_candidates reads
    assert candidates.local_candidates(cfg, sft, test, 3, paths["sft"], log=lines.append) == side["sft"]
    assert all("worker-seconds" in x for x in lines[:2]) and lines[-1].endswith("reused (7 studies x 3)"), lines


def test_all_local_candidates_names_mismatched_paths(tmp_path):
    from sdrlib.config import load_profile
    from sdrlib.experiments import candidates

    cfg = load_profile("smoke")
    with pytest.raises(ValueError, match="paths names"):
        candidates.all_local_candidates(cfg, {"sft": tmp_path / "a"}, [], 2, {"chamfer": tmp_path / "a.jsonl"})


def test_side_by_side_reads_the_cache_and_runs_a_single_call_here(monkeypatch, tmp_path):
    from sdrlib.config import load_profile
    from sdrlib.experiments import posttrain

    cfg = load_profile("smoke", {"grpo.workers": 2})
    cached = {str(tmp_path / "a"): ["cached"]}
    monkeypatch.setattr(posttrain, "_generated", lambda c, p, *a, **k: cached.get(str(p)))
    monkeypatch.setattr(posttrain, "worker_pool", lambda c: pytest.fail("one call to make needs no workers"))
    here: list[str] = []
    monkeypatch.setattr(posttrain, "generate_test",
                        lambda c, policy_dir, test_records, **k: here.append(str(policy_dir)) or cached.get(
                            str(policy_dir), [f"made {policy_dir.name}"]))
    out = posttrain.generate_side_by_side(cfg, [{"policy_dir": tmp_path / "b", "test_records": []},
                                                {"policy_dir": tmp_path / "a", "test_records": []}])
    assert out == [["made b"], ["cached"]]
