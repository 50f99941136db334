"""Candidates on disk: the local policies notebook 05 samples, K reports per study, cached as JSONL.

:func:`policy_dirs` finds the trained policies (notebooks 03 and 04), :func:`local_candidates` samples K
reports per test study from one of them (:func:`sdrlib.generation.generate_candidates`) and caches them
(:func:`write_candidates` / :func:`read_candidates`, reused when the policy, K, decoding settings, seed and
study ids match); :func:`all_local_candidates` does it for several policies, their candidate columns side by side
in ``grpo.workers`` processes. Scoring the candidates is :mod:`sdrlib.selection`'s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sdrlib.experiments.workers import worker_pool
from sdrlib.generation import generate_candidates, generate_reports, load_images
from sdrlib.io import atomic_write_text
from sdrlib.selection.errors import SelectionError
from sdrlib.training import load_policy, policy_dir

__all__ = ["policy_dirs", "api_serve_dir", "write_candidates", "read_candidates", "local_candidates",
           "all_local_candidates"]


def policy_dirs(cfg) -> dict[str, Path]:
    """The local policies notebook 05 samples: SFT (notebook 03) and every GRPO configuration (notebook 04), or
    the subset ``selection.policies``, seed ``cfg.seed`` each: ``{configuration: final policy folder}``. A missing one raises naming the notebook."""
    out = {r: policy_dir(cfg, r) for r in ["sft", *(r for r in cfg.grpo.rewards if r != "sft")]}
    if cfg.selection.policies:  # the profile's subset, in its order
        out = {r: out[r] for r in cfg.selection.policies}
    missing = {k: str(p) for k, p in out.items() if not p.is_dir()}
    if missing:
        raise SelectionError(f"trained policies not found: {missing}; run notebooks 03 (SFT) and 04 (GRPO) "
                             f"on profile {cfg.name!r} first")
    return out


def api_serve_dir(cfg) -> Path | None:
    """The policy ``selection.api_serve`` names (seed ``cfg.seed``), for :func:`sdrlib.serve.serve_policy`; ``None``
    when the profile serves none (its API models are a provider's). A missing one raises naming the notebook."""
    name = cfg.selection.api_serve
    if not name:
        return None
    path = policy_dir(cfg, name)
    if not path.is_dir():
        raise SelectionError(f"selection.api_serve = {name!r}: no trained policy at {path}; run notebooks 03 (SFT) "
                             f"and 04 (GRPO) on profile {cfg.name!r} first")
    return path


def write_candidates(path: str | Path, key: Mapping[str, Any], study_ids: Sequence[str],
                     candidates: Sequence[Sequence[str]]) -> Path:
    """JSONL: a first line ``{"key": ...}`` (what produced them), then one ``{"study_id", "candidates"}`` per study."""
    lines = [json.dumps({"key": dict(key)})]
    lines += [json.dumps({"study_id": s, "candidates": list(c)}) for s, c in zip(study_ids, candidates)]
    return atomic_write_text(Path(path), "\n".join(lines) + "\n")


def read_candidates(path: str | Path, key: Mapping[str, Any], study_ids: Sequence[str]) -> list[list[str]] | None:
    """Candidates of :func:`write_candidates` when the file's key and study ids match, else ``None``."""
    p = Path(path)
    if not p.is_file():
        return None
    try:
        lines = [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    except (OSError, ValueError):
        return None
    if not lines or lines[0].get("key") != json.loads(json.dumps(dict(key))):
        return None
    rows = lines[1:]
    if [r.get("study_id") for r in rows] != list(study_ids):
        return None
    return [list(r["candidates"]) for r in rows]


def local_candidates(cfg, policy_dir: str | Path, records: Sequence[Any], n_candidates: int, path: str | Path, *,
                     seed: int | None = None, log: Callable[[str], None] | None = print) -> list[list[str]]:
    """``n_candidates`` (K) sampled reports per study from a local policy
    (:func:`sdrlib.generation.generate_candidates`), batched, at the profile's evaluation temperature (``sft.eval_temperature``), cached in ``path`` (JSONL).

    The cache is reused when the policy folder, K, decoding settings, seed and study ids match.
    """
    s = cfg.sft
    seed = cfg.seed if seed is None else seed
    ids = [r.study_id for r in records]
    key = _key(cfg, policy_dir, n_candidates, seed)
    cached = read_candidates(path, key, ids)
    if cached is not None:
        if log:
            log(f"{Path(path).name}: reused ({len(cached)} studies x {n_candidates})")
        return cached
    t0 = time.perf_counter()
    model, processor = load_policy(cfg, policy_dir)
    images = [load_images(r.image_paths, s.max_images) for r in records]
    cands = generate_candidates(model, processor, images, n_candidates, temperature=s.eval_temperature, seed=seed,
                                max_new_tokens=s.max_new_tokens, batch_size=s.eval_batch_size)
    write_candidates(path, key, ids, cands)
    if log:
        log(f"{Path(path).name}: {len(cands)} studies x {n_candidates} sampled in {time.perf_counter() - t0:.0f} s")
    return cands


def _key(cfg, policy_dir: str | Path, n_candidates: int, seed: int) -> dict[str, Any]:
    """What :func:`local_candidates` keys a policy's cached candidates by."""
    s = cfg.sft
    return {"policy": str(Path(policy_dir).resolve()), "k": int(n_candidates), "temperature": s.eval_temperature,
            "max_new_tokens": s.max_new_tokens, "seed": int(seed)}


def all_local_candidates(cfg, policies: Mapping[str, str | Path], records: Sequence[Any], n_candidates: int,
                         paths: Mapping[str, str | Path], *, seed: int | None = None,
                         log: Callable[[str], None] | None = print) -> dict[str, list[list[str]]]:
    """:func:`local_candidates` for every ``{name: policy folder}`` of ``policies`` (cache files ``paths[name]``),
    the same candidates, with the uncached policies' K candidate columns sampled side by side in ``cfg.grpo.workers``
    processes (one column, all studies, per job). Returns ``{name: [n][K] reports}`` in the order of ``policies``.

    Why the candidates are the same as one policy after the other: column ``j`` is one
    :func:`sdrlib.generation.generate_reports` call seeded ``seed + j`` before its first batch, exactly the call
    :func:`sdrlib.generation.generate_candidates` makes, decoded on ``sft.threads`` threads wherever it runs
    (:func:`sdrlib.experiments.workers.worker_pool`); ``tests/experiments/test_generate_side_by_side.py``
    compares them. A column is never split across processes: its batches draw from one random stream in turn.
    """
    if set(paths) != set(policies):
        raise ValueError(f"paths names {sorted(paths)} but policies are {sorted(policies)}")
    seed = cfg.seed if seed is None else seed
    ids = [r.study_id for r in records]
    out = {n: read_candidates(paths[n], _key(cfg, d, n_candidates, seed), ids) for n, d in policies.items()}
    todo = [(n, j) for n, c in out.items() if c is None for j in range(n_candidates)]
    if cfg.grpo.workers <= 1 or len(todo) <= 1:
        return {n: local_candidates(cfg, d, records, n_candidates, paths[n], seed=seed, log=log)
                for n, d in policies.items()}
    with worker_pool(cfg) as pool:
        jobs = {(n, j): pool.submit(_column_job, cfg, str(policies[n]), list(records), seed + j) for n, j in todo}
        cols = {nj: job.result() for nj, job in jobs.items()}
    for n, d in policies.items():
        if out[n] is not None:
            if log:
                log(f"{Path(paths[n]).name}: reused ({len(out[n])} studies x {n_candidates})")
            continue
        columns = [cols[(n, j)] for j in range(n_candidates)]
        out[n] = [list(c) for c in zip(*(texts for texts, _ in columns))]
        write_candidates(paths[n], _key(cfg, d, n_candidates, seed), ids, out[n])
        if log:
            log(f"{Path(paths[n]).name}: {len(out[n])} studies x {n_candidates} sampled in "
                f"{sum(t for _, t in columns):.0f} worker-seconds")
    return out


_WORKER_POLICY: dict[str, Any] = {}


def _column_job(cfg, policy_dir: str, records: list, seed: int) -> tuple[list[str], float]:
    """One candidate column in a worker process (:func:`all_local_candidates`): the call
    :func:`sdrlib.generation.generate_candidates` makes for it, and its seconds. The worker keeps the policies it
    loaded (a policy is not changed by sampling from it)."""
    t0 = time.perf_counter()
    s = cfg.sft
    if policy_dir not in _WORKER_POLICY:
        _WORKER_POLICY[policy_dir] = load_policy(cfg, policy_dir)
    model, processor = _WORKER_POLICY[policy_dir]
    images = [load_images(r.image_paths, s.max_images) for r in records]
    texts = generate_reports(model, processor, images, do_sample=True, temperature=s.eval_temperature, seed=seed,
                             max_new_tokens=s.max_new_tokens, batch_size=s.eval_batch_size)
    return texts, time.perf_counter() - t0
