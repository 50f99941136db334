"""How much arithmetic entropic GW needs per pair, and what that implies for the selection sweep.

Run (repository root):

    .venv/bin/python benchmarks/gw_work.py                       # sizes 1..15, random + structured
    .venv/bin/python benchmarks/gw_work.py --sizes corpus:cpu     # set sizes of a profile's corpus

POT's entropic GW (the paper's ``gw`` setting, which the engine replays iteration for
iteration) alternates an outer projected-gradient step (the "sandwich" C_A T C_B, an
n x m kernel) with an inner Sinkhorn solve (two n x m matrix-vector products per
iteration, up to 1000 iterations, stop at 1e-9). This script runs the engine's one-pair
solver on a sample of the benchmark's pairs, counts inner and outer iterations, and turns
them into floating-point operations: 4 n m per inner iteration (two products, multiply
and add) and 2 (n^2 m + n m^2) per outer step. Everything else (divisions, exponentials,
convergence tests) is left out, so the FLOP count is a lower bound on the work.

Printed: the distribution of the counts, the FLOPs per pair, the one-pair solver's time on
the same pairs (one core) and the GFLOP/s it achieves, and the **floor** of the
paper's selection sweep for GW (5e7 pairs) if that lower-bound FLOP count ran at the float64
matrix-multiply rate of this machine, a rate that small dependent matrix-vector products
cannot reach. Not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench_distances import corpus_sizes, workload  # noqa: E402

from sdrlib.distances import ConvergenceWarning  # noqa: E402
from sdrlib.distances import _kernels as K  # noqa: E402
from sdrlib.distances.reference import intra_cost  # noqa: E402
from sdrlib.distances.registry import get  # noqa: E402
from sdrlib.distances.timing import SWEEP_PAIRS, matmul_gflops  # noqa: E402


def count_work(cands, bank, eps: float, tol: float, max_iter: int) -> tuple[np.ndarray, float]:
    """Per pair (bank-major, like the engine): n, m, inner iterations, outer iterations, FLOPs (lower bound),
    inner solves stopped at the 1000-iteration cap; and the seconds the one-pair solver took (one core)."""
    ca = [intra_cost(c) if len(c) >= 2 else None for c in cands]
    cb = [intra_cost(b) if len(b) >= 2 else None for b in bank]
    rows = []
    secs = 0.0
    for CB in cb:
        for CA in ca:
            if CA is None or CB is None:
                rows.append((0, 0, 0, 0, 0.0, 0))  # GW undefined: 1.0 without any work
                continue
            n, m = len(CA), len(CB)
            t = time.perf_counter()
            _, _, sweeps, outer, capped = K.gw_loss(CA, CB, n, m, eps, tol, max_iter, 1000, 1e-9)
            secs += time.perf_counter() - t
            rows.append((n, m, sweeps, outer, 4.0 * n * m * sweeps + 2.0 * (n * n * m + n * m * m) * outer, capped))
    return np.array(rows, dtype=np.float64), secs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, default=5)
    ap.add_argument("--N", type=int, default=400, help="bank sets sampled (pairs = K x N)")
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--kinds", default="random,structured")
    ap.add_argument("--sizes", default="uniform", help="uniform (1..15) or corpus:PROFILE (Findings sizes)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    spec = get("gw")
    eps, tol, max_iter = spec.params["eps"], spec.params["tol"], spec.params["max_iter"]
    sizes = None
    if args.sizes.startswith("corpus:"):
        sz = corpus_sizes(args.sizes.split(":", 1)[1])["findings"]
        sizes = sz[sz > 0]
    elif args.sizes != "uniform":
        ap.error("--sizes must be 'uniform' or 'corpus:PROFILE'")
    warnings.simplefilter("ignore", ConvergenceWarning)
    g64 = max(matmul_gflops(np.float64) for _ in range(2))
    print(f"# gw_work: K={args.K} x N={args.N} pairs, d={args.d}, sizes {args.sizes}, eps={eps}; "
          f"matmul {g64:.1f} GFLOP/s float64; load average {os.getloadavg()[0]:.1f}")
    print("| workload | pairs (GW defined) | outer it. median / p90 / max | inner it. per pair mean / p90 | "
          "inner it. per outer | pairs with a capped inner solve (their share of inner it.) | MFLOP/pair | "
          "solver us/pair, one core | its GFLOP/s (matmul: per core) | sweep floor at matmul rate | "
          "sweep, solver on both cores |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    K.gw_loss(np.zeros((2, 2)), np.zeros((2, 2)), 2, 2, eps, tol, 2, 2, 1e-9)  # compile
    for kind in args.kinds.split(","):
        cands, bank = workload(kind, args.K, args.N, args.d, args.seed, sizes)
        W, secs = count_work(cands, bank, eps, tol, max_iter)
        ok = W[:, 3] > 0
        one_us = secs / len(W) * 1e6
        capped = W[ok, 5].sum() * 1000 / max(1.0, W[ok, 2].sum())  # share of inner iterations in capped solves
        capped_pairs = float(np.mean(W[ok, 5] > 0)) if ok.any() else 0.0
        flops = W[:, 4].mean()
        floor_h = flops * SWEEP_PAIRS / (g64 * 1e9) / 3600
        print(f"| {kind} | {len(W)} ({ok.sum()}) | {np.median(W[ok, 3]):.0f} / {np.percentile(W[ok, 3], 90):.0f} / "
              f"{W[ok, 3].max():.0f} | {W[ok, 2].mean():.0f} / {np.percentile(W[ok, 2], 90):.0f} | "
              f"{W[ok, 2].sum() / W[ok, 3].sum():.0f} | {capped_pairs:.1%} ({capped:.1%}) | {flops / 1e6:.2f} | "
              f"{one_us:.0f} | {flops / one_us / 1e3:.2f} ({g64 / 2:.1f}) | {floor_h:.2f} h | "
              f"{one_us / 2 * SWEEP_PAIRS / 3.6e9:.2f} h |",
              flush=True)
    print("\n'sweep floor': 5e7 pairs x the FLOPs above at the float64 matmul rate (both cores). The engine runs "
          "this solver on every pair, in parallel over pairs (last column: one-core time / 2).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
