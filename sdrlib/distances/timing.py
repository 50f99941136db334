"""Side-by-side timing of the per-pair reference and the batched engine (notebook 02, benchmarks).

Wall-clock measurements on a possibly shared machine: they report, they do not assert.
"""

from __future__ import annotations

import time
import warnings
from typing import Sequence

import numpy as np

from sdrlib.distances.engine import PackedSets, pack_sets, pairwise_distances
from sdrlib.distances.errors import ConvergenceWarning
from sdrlib.distances.registry import DistanceSpec, get
from sdrlib.distances.registry.per_pair import set_distance

#: the paper's selection sweep: 1000 test samples x K=5 candidates x N=5000 bank reports x 2 sections
SWEEP_PAIRS = 1000 * 5 * 5000 * 2


def matmul_gflops(dtype=np.float64, n: int = 1024, d: int = 768, m: int = 8192, reps: int = 3) -> float:
    """Best-of-``reps`` GFLOP/s of an (n, d) x (d, m) matrix product on this machine.

    Example: ``matmul_gflops(n=64, d=64, m=64) > 0``.
    """
    rng = np.random.default_rng(0)
    a = rng.normal(size=(n, d)).astype(dtype)
    b = rng.normal(size=(m, d)).astype(dtype)
    a @ b.T
    best = np.inf
    for _ in range(reps):
        t = time.perf_counter()
        a @ b.T
        best = min(best, time.perf_counter() - t)
    return 2.0 * n * d * m / best / 1e9


def compare(cands: Sequence[np.ndarray], bank: "Sequence[np.ndarray] | PackedSets", name: "str | DistanceSpec",
            ref_pairs: int = 200, ref_budget_s: float = 5.0, device: str = "cpu") -> dict:
    """Time the reference loop (first ``ref_pairs`` pairs, at most ``ref_budget_s`` s) and the engine (all K x N).

    Returns a dict: setting, ref_us, engine_us (wall microseconds per pair), speedup (wall), ref_cpu_us,
    engine_cpu_us, cpu_speedup (process CPU time, all threads: robust to other load), pairs_checked,
    max_abs_diff (engine vs reference on the reference pairs), sweep_ref_h and sweep_engine_h
    (projected hours for :data:`SWEEP_PAIRS` pairs on this machine).
    """
    spec = get(name)
    packed = pack_sets(bank, "bank")
    bank_sets = [packed.set(t) for t in range(packed.n_sets)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pairs, vals = [], []
        c0 = time.process_time()
        t0 = time.perf_counter()
        done = False
        for j in range(len(bank_sets)):
            for k in range(len(cands)):
                vals.append(set_distance(cands[k], bank_sets[j], spec, on_nonconvergence="ignore"))
                pairs.append((k, j))
                if len(pairs) >= ref_pairs or (len(pairs) >= 5 and time.perf_counter() - t0 > ref_budget_s):
                    done = True
                    break
            if done:
                break
        ref_us = (time.perf_counter() - t0) / len(pairs) * 1e6
        ref_cpu = (time.process_time() - c0) / len(pairs) * 1e6
        c0 = time.process_time()
        t0 = time.perf_counter()
        D = pairwise_distances(cands, packed, spec, device=device, on_nonconvergence="ignore")
        eng_us = (time.perf_counter() - t0) / D.size * 1e6
        eng_cpu = (time.process_time() - c0) / D.size * 1e6
    diff = float(np.max(np.abs(np.array([D[k, j] for k, j in pairs]) - np.array(vals))))
    return {"setting": spec.name, "ref_us": ref_us, "engine_us": eng_us, "speedup": ref_us / eng_us,
            "ref_cpu_us": ref_cpu, "engine_cpu_us": eng_cpu, "cpu_speedup": ref_cpu / max(eng_cpu, 1e-9),
            "pairs_checked": len(pairs), "max_abs_diff": diff,
            "sweep_ref_h": ref_us * SWEEP_PAIRS / 3.6e9, "sweep_engine_h": eng_us * SWEEP_PAIRS / 3.6e9}
