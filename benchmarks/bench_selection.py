"""Best-of-K selection sweep (sdrlib.selection.bank_distances) vs the per-pair reference loop, per setting.

Run (repository root):

    .venv/bin/python benchmarks/bench_selection.py            # 50 studies x K=5 x N=5000, all 15 settings (long)
    .venv/bin/python benchmarks/bench_selection.py --quick    # 20 studies x K=5 x N=300, six settings

For each setting: the selection sweep as notebook 05 runs it (every candidate of every study against every
bank set, Findings and Impression, all three aggregations, identical sets computed once) on a scaled-down
shape, and the reference loop (``set_distance``, one pair at a time) on a sample of the same pairs; both
are reported per candidate x bank pair and projected to the paper's shape (1000 studies x K = 5 x N = 5000
x 2 sections = :data:`sdrlib.distances.timing.SWEEP_PAIRS` pairs per setting), side by side as a ratio.
Data: ``benchmarks/bench_distances.workload`` (``structured`` by default: clustered sentence-like vectors,
set sizes 1..15, d = 768). Wall-clock on whatever else the machine does (the load average is printed).
Not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from bench_distances import workload  # noqa: E402

from sdrlib import selection as sel  # noqa: E402
from sdrlib.distances import REGISTRY, ConvergenceWarning, set_distance  # noqa: E402
from sdrlib.distances.timing import SWEEP_PAIRS  # noqa: E402

QUICK_SETTINGS = "chamfer,hausdorff,ot,sinkhorn_0.1,hung_nn,partial_adaptive"


def ref_us_per_pair(cands, bank, name: str, max_pairs: int, budget_s: float) -> float:
    """Wall microseconds per pair of the reference loop on the first pairs (bank-major), capped by count and time."""
    n, t0 = 0, time.perf_counter()
    for b in bank:
        for c in cands:
            set_distance(c, b, name, on_nonconvergence="ignore")
            n += 1
            if n >= max_pairs or (n >= 5 and time.perf_counter() - t0 > budget_s):
                return (time.perf_counter() - t0) / n * 1e6
    return (time.perf_counter() - t0) / max(n, 1) * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="20 studies, N=300, six settings, short reference loops")
    ap.add_argument("--studies", type=int, default=None)
    ap.add_argument("--K", type=int, default=5)
    ap.add_argument("--N", type=int, default=None)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--kind", default="structured", choices=("random", "structured"))
    ap.add_argument("--settings", default=None, help=f"comma list (default: all 15; --quick: {QUICK_SETTINGS})")
    ap.add_argument("--ref-pairs", type=int, default=None)
    ap.add_argument("--ref-budget", type=float, default=None, help="seconds of reference loop per setting")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    S = args.studies or (20 if args.quick else 50)
    N = args.N or (300 if args.quick else 5000)
    names = [s for s in (args.settings or (QUICK_SETTINGS if args.quick else ",".join(REGISTRY))).split(",") if s]
    ref_pairs = args.ref_pairs or (40 if args.quick else 200)
    ref_budget = args.ref_budget or (2.0 if args.quick else 8.0)
    warnings.simplefilter("ignore", ConvergenceWarning)
    K = args.K
    sections = {}
    for i, sec in enumerate(("findings", "impression")):
        sections[sec] = workload(args.kind, S * K, N, args.d, args.seed + i)
    cand_sets = {s: c for s, (c, _) in sections.items()}
    bank = {s: b for s, (_, b) in sections.items()}
    pairs = S * K * N * 2
    print(f"# bench_selection: {S} studies x K={K} x N={N} x 2 sections = {pairs:,} pairs per setting, d={args.d}, "
          f"{args.kind} sets, cpus={os.cpu_count()}, load average={os.getloadavg()[0]:.1f}; projection to "
          f"{SWEEP_PAIRS:,.0f} pairs per setting (1000 studies x 5 x 5000 x 2)")
    # warm-up: compile every kernel on a tiny problem
    tiny = {s: c[:K] for s, c in cand_sets.items()}
    sel.bank_distances(tiny, {s: b[:3] for s, b in bank.items()}, names, k=K, progress=None)
    for name in names:  # the reference's first call imports POT / SciPy: keep that out of its timing
        set_distance(cand_sets["findings"][0], bank["findings"][0], name, on_nonconvergence="ignore")

    print("| setting | sweep us/pair | ref us/pair | ratio ref/sweep | sweep h (projected) | ref h (projected) | "
          "computed pairs (after dedup) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    tot_sweep = tot_ref = 0.0
    for name in names:
        t0 = time.perf_counter()
        res = sel.bank_distances(cand_sets, bank, [name], k=K, progress=None)
        sweep_us = (time.perf_counter() - t0) / pairs * 1e6
        ref_us = np.mean([ref_us_per_pair(cand_sets[s], bank[s], name, ref_pairs // 2, ref_budget / 2)
                          for s in cand_sets])
        sh, rh = sweep_us * SWEEP_PAIRS / 3.6e9, ref_us * SWEEP_PAIRS / 3.6e9
        tot_sweep, tot_ref = tot_sweep + sh, tot_ref + rh
        print(f"| {name} | {sweep_us:.2f} | {ref_us:.1f} | {ref_us / sweep_us:.0f}x | {sh:.2f} | {rh:.1f} | "
              f"{res.meta['computed_pairs']:,} |", flush=True)
    print(f"| all {len(names)} (sum) | | | {tot_ref / tot_sweep:.0f}x | {tot_sweep:.2f} | {tot_ref:.1f} | |")
    # the settings together, as notebook 05 calls it (one packing and one cosine product per chunk)
    t0 = time.perf_counter()
    res = sel.bank_distances(cand_sets, bank, names, k=K, progress=None)
    together = time.perf_counter() - t0
    print(f"\nall {len(names)} settings in one call: {together:.1f} s = {pairs * len(names) / together:,.0f} pairs/s; "
          f"projected paper sweep {together / pairs * SWEEP_PAIRS / 3600:.2f} h")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
