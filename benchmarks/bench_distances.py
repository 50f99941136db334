"""Per-pair reference loop vs batched engine, side by side, for every distance setting.

Run (repository root):

    .venv/bin/python benchmarks/bench_distances.py            # K=5 candidates x N=5000 bank sets
    .venv/bin/python benchmarks/bench_distances.py --quick    # N=300, shorter reference loops

For each kind of data (``random``: i.i.d. Gaussian unit vectors; ``structured``:
clustered sentence-like vectors, cosines ~0.1-0.9, every unique sentence repeated
2.8 times in the bank) with set sizes drawn from 1..15 and d = 768, and for each
setting: microseconds per pair of the reference loop (``set_distance``) and of the
engine (``pairwise_distances`` on K x N, bank packed once beforehand, as a sweep
would), the speed-up, the agreement of the two on the reference pairs, and the
projected time of the paper's selection sweep (1000 test samples x K=5 x N=5000
x 2 sections = 5e7 pairs per setting). Also prints the FLOP floor of the Chamfer
sweep: its matrix-product FLOPs at the matmul rate measured on this machine.

Timings are wall-clock on whatever else the machine is doing (the script prints
the load average so that a reader can judge), plus process CPU time (all threads),
which other load disturbs less; the projected sweeps use wall time. Not a test.

``--device cuda`` (or ``cuda:i``) prints, instead of the reference table, the GPU table: per setting
the CPU engine and the engine on the GPU (Sinkhorn / UOT / GW solved there, one thread per pair;
Chamfer / Hausdorff / Hungarian / OT / partial OT: the cosine product on the GPU, solvers on the CPU)
on the same K x N pairs, microseconds per pair, the projected paper sweep of each, and their
agreement (max |GPU - CPU|, convergence flags that differ, non-converged pairs on each side). The
last line sums the paper's 15 settings against the issue's goal (10 minutes on one H200). Needs a GPU
that torch and numba both see; exits 2 otherwise. ``--K 100`` gives the GPU fatter launches, as a
sweep that batches 20 test studies per call would.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdrlib.config import load_profile  # noqa: E402
from sdrlib.data import load_split  # noqa: E402
from sdrlib.distances import EXTENSIONS, FAMILIES, REGISTRY, ConvergenceWarning, DistanceSpecError  # noqa: E402
from sdrlib.distances.engine import pack_sets, paired_distances, pairwise_distances  # noqa: E402
from sdrlib.distances.registry import get  # noqa: E402
from sdrlib.reports import split_sentences  # noqa: E402
from sdrlib.distances.synthetic import make_space, random_sets, structured_bank, structured_candidates  # noqa: E402
from sdrlib.distances.timing import SWEEP_PAIRS, compare, matmul_gflops  # noqa: E402


def workload(kind: str, K: int, N: int, d: int, seed: int, sizes=None):
    rng = np.random.default_rng(seed)
    if kind == "random":
        return random_sets(rng, K, d, sizes=sizes), random_sets(rng, N, d, sizes=sizes)
    space = make_space(rng, d)
    bank, pool = structured_bank(rng, N, space, sizes=sizes)
    return structured_candidates(rng, K, pool, space, sizes=sizes), bank


def corpus_sizes(profile: str) -> dict[str, np.ndarray]:
    """Sentences per non-empty Findings / Impression section in a profile's training split."""
    recs = load_split(load_profile(profile), "train")
    return {sec: np.array([len(split_sentences(getattr(r, sec))) for r in recs]) for sec in ("findings", "impression")}


def neg_overhead(P: int, d: int, seed: int) -> None:
    """Rows: us/pair of the plain setting against its negation-aware one (our extension) on P zipped pairs
    (the reward case), presence arrays given (the labeler's per-sentence cache is warm in training)."""
    rng = np.random.default_rng(seed + 7)
    pool = rng.standard_normal((400, d))
    ppool = (rng.integers(-1, 2, size=(400, 14)) * (rng.random((400, 14)) < 0.1)).astype(np.int8)
    ids = [rng.integers(0, 400, size=rng.integers(1, 9)) for _ in range(2 * P)]
    A, B = [pool[i] for i in ids[:P]], [pool[i] for i in ids[P:]]
    PA, PB = [ppool[i] for i in ids[:P]], [ppool[i] for i in ids[P:]]
    print(f"\n## negation-aware overhead: {P} zipped pairs, sizes 1..8, d={d} (best of 3)")
    print("| setting | plain us/pair | _neg us/pair | ratio |")
    print("|---|---:|---:|---:|")
    for name in ("chamfer", "hung_nn", "ot_raw"):
        paired_distances(A[:10], B[:10], name)
        paired_distances(A[:10], B[:10], name + "_neg", presence=(PA[:10], PB[:10]))
        tp = min(_timed(lambda: paired_distances(A, B, name)) for _ in range(3)) / P * 1e6
        tn = min(_timed(lambda: paired_distances(A, B, name + "_neg", presence=(PA, PB))) for _ in range(3)) / P * 1e6
        print(f"| {name} / {name}_neg | {tp:.2f} | {tn:.2f} | {tn / tp:.2f}x |", flush=True)


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def device_table(loads, names, args, N: int) -> int:
    """GPU rows: per setting, the CPU engine and the engine on ``args.device`` on the same K x N pairs."""
    wc, wb = workload("random", 2, 3, 16, 1)
    try:  # warm-up on the device: torch's context, numba's kernel compilation
        for name in names:
            pairwise_distances(wc, wb, name, device=args.device, on_nonconvergence="ignore")
    except (DistanceSpecError, RuntimeError) as e:
        print(f"bench_distances: device {args.device!r} unusable: {e}", file=sys.stderr)
        return 2
    try:
        import torch

        gpu = torch.cuda.get_device_name(torch.device(args.device))
    except Exception:  # noqa: BLE001 - the name is decoration
        gpu = "?"
    print(f"\n# GPU table: {args.device} = {gpu}; CPU engine with numba threads="
          f"{os.environ.get('NUMBA_NUM_THREADS', os.cpu_count())}; same pairs on both")
    paper = set(REGISTRY)
    worst, flag_diff = 0.0, 0
    sweep: dict[str, list[float]] = {}  # label -> [CPU h, GPU min] over the paper's 15 settings
    for label, kind, sizes, share in loads:
        sweep[label] = [0.0, 0.0]
        cands, bank = workload(kind, args.K, N, args.d, args.seed, sizes)
        packed = pack_sets(bank)
        print(f"\n## {label}: {args.K} x {N} pairs ({len(packed.index)} bank sentences, {len(packed.unique)} unique)")
        print("| setting | solver on GPU | CPU us/pair | GPU us/pair | speed-up | sweep CPU h | sweep GPU min | "
              "max abs diff | flags differ | not converged CPU / GPU |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for name in names:
            runs = {}
            for dev in ("cpu", args.device):
                t = time.perf_counter()
                D, ok = pairwise_distances(cands, packed, name, device=dev, on_nonconvergence="ignore",
                                           return_converged=True)
                runs[dev] = ((time.perf_counter() - t) / D.size * 1e6, D, ok)
            (tc, Dc, okc), (tg, Dg, okg) = runs["cpu"], runs[args.device]
            diff = float(np.max(np.abs(Dc - Dg)))
            nflag = int((okc != okg).sum())
            worst, flag_diff = max(worst, diff), flag_diff + nflag
            sc, sg = tc * SWEEP_PAIRS * share / 3.6e9, tg * SWEEP_PAIRS * share / 6e7
            if name in paper:
                sweep[label][0] += sc
                sweep[label][1] += sg
            print(f"| {name} | {'yes' if FAMILIES[get(name).family].cuda else 'no (cosines only)'} | {tc:.2f} | "
                  f"{tg:.3f} | {tc / tg:.1f}x | {sc:.3f} | {sg:.2f} | {diff:.1e} | {nflag} | "
                  f"{int((~okc).sum())} / {int((~okg).sum())} |", flush=True)
    kinds = args.kinds.split(",")
    for kind in kinds:  # uniform sizes: one label per kind; corpus sizes: Findings + Impression labels per kind
        cpu_h = sum(v[0] for k, v in sweep.items() if k == kind or k.startswith(kind + " "))
        gpu_min = sum(v[1] for k, v in sweep.items() if k == kind or k.startswith(kind + " "))
        print(f"\n# {kind}: the paper's {len(paper & set(names))} settings, projected sweep (1000 studies x K=5 x "
              f"N=5000 x 2 sections per setting, from these per-pair times): CPU engine {cpu_h:.2f} h, GPU engine "
              f"{gpu_min:.1f} min (goal: < 10 min on one H200)")
    print(f"# agreement GPU vs CPU engine: max |diff| = {worst:.1e}, convergence flags that differ: {flag_diff}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N=300 and short reference loops")
    ap.add_argument("--K", type=int, default=5)
    ap.add_argument("--N", type=int, default=None)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--kinds", default="random,structured")
    # the paper's 15, then our unscaled transport settings (the negation-aware ones: --neg-pairs below)
    ap.add_argument("--settings", default=",".join(list(REGISTRY) + [n for n, s in EXTENSIONS.items()
                                                                      if not s.needs_presence]))
    ap.add_argument("--neg-pairs", type=int, default=20000,
                    help="zipped pairs timed for the negation-aware overhead rows (0: skip)")
    ap.add_argument("--ref-pairs", type=int, default=None, help="max reference pairs per setting")
    ap.add_argument("--ref-budget", type=float, default=None, help="seconds of reference loop per setting")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sizes", default="uniform",
                    help="uniform (1..15, the issue's benchmark) or corpus:PROFILE (sentences per section of that "
                         "profile's training split; the sweep projection then sums Findings and Impression)")
    ap.add_argument("--device", default="cpu",
                    help="cpu (reference vs engine table) or cuda[:i] (GPU vs CPU engine table, no reference loop)")
    ap.add_argument("--sweep-K", type=int, default=100,
                    help="candidates per call in the sweep-mode Chamfer/Hausdorff line (20 test samples x K=5)")
    args = ap.parse_args(argv)
    N = args.N or (300 if args.quick else 5000)
    ref_pairs = args.ref_pairs or (60 if args.quick else 300)
    ref_budget = args.ref_budget or (2.0 if args.quick else 8.0)
    names = [s for s in args.settings.split(",") if s]
    warnings.simplefilter("ignore", ConvergenceWarning)

    # workloads: (label, kind, sizes or None, share of the sweep's pairs it stands for)
    if args.sizes == "uniform":
        loads = [(k, k, None, 1.0) for k in args.kinds.split(",")]
        size_note = "set sizes 1..15"
    elif args.sizes.startswith("corpus:"):
        prof = args.sizes.split(":", 1)[1]
        cs = corpus_sizes(prof)
        loads = []
        for sec, arr in cs.items():
            nz = arr[arr > 0]
            share = 0.5 * (len(nz) / len(arr)) ** 2  # pairs with an empty set cost nothing (empty_value)
            print(f"# {prof} train {sec}: {len(arr)} sections, {len(nz)} non-empty, mean {nz.mean():.2f} "
                  f"sentences (max {nz.max()}); share of sweep pairs computed {share:.3f}")
            loads += [(f"{k} {sec} sizes", k, nz, share) for k in args.kinds.split(",")]
        size_note = f"set sizes from profile {prof!r}"
    else:
        ap.error("--sizes must be 'uniform' or 'corpus:PROFILE'")
    print(f"# bench_distances: K={args.K} candidates x N={N} bank sets, d={args.d}, {size_note}, "
          f"numba threads={os.environ.get('NUMBA_NUM_THREADS', os.cpu_count())}, cpus={os.cpu_count()}, "
          f"load average={os.getloadavg()[0]:.1f}")
    g64, g32 = matmul_gflops(np.float64), matmul_gflops(np.float32)
    print(f"# matmul: {g64:.1f} GFLOP/s float64, {g32:.1f} GFLOP/s float32 (1024x768 @ 768x8192, best of 3)")

    # warm-up: compile / load every kernel before timing
    wc, wb = workload("random", 2, 3, 16, 1)
    for name in names:
        pairwise_distances(wc, wb, name, on_nonconvergence="ignore")
    if args.device != "cpu":
        return device_table(loads, names, args, N)

    totals: dict[str, list[float]] = {}
    checked = [0, 0.0]
    for label, kind, sizes, share in loads:
        cands, bank = workload(kind, args.K, N, args.d, args.seed, sizes)
        t = time.perf_counter()
        packed = pack_sets(bank)
        t_pack = time.perf_counter() - t
        S, U = len(packed.index), len(packed.unique)
        nbar = float(np.mean([len(c) for c in cands]))
        print(f"\n## {label}: bank {S} sentences, {U} unique ({S / U:.2f} per unique), packed once in {t_pack:.2f} s")
        # FLOP floor of the Chamfer sweep: per pair, n_cand x (unique bank sentences per bank set) x d
        # multiply-adds of the one matrix product (repeated bank sentences are computed once)
        g64 = max(g64, matmul_gflops(np.float64))
        flops_pair = 2.0 * nbar * (U / N) * args.d
        floor_h = flops_pair * SWEEP_PAIRS * share / (g64 * 1e9) / 3600
        print(f"Chamfer sweep FLOP floor at {g64:.1f} GFLOP/s float64: {floor_h * 3600:.0f} s = "
              f"{flops_pair / (g64 * 1e3):.2f} us/pair (without dedup: {floor_h * 3600 * S / U:.0f} s)")
        print("| setting | ref us/pair | engine us/pair | speed-up | ref CPU us | engine CPU us | CPU speed-up | "
              "agree (pairs, max abs diff) | sweep ref h | sweep engine h |")
        print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
        for name in names:
            r = compare(cands, packed, name, ref_pairs=ref_pairs, ref_budget_s=ref_budget)
            r["sweep_ref_h"] *= share
            r["sweep_engine_h"] *= share
            totals.setdefault(label, [0.0, 0.0])
            totals[label][0] += r["sweep_ref_h"]
            totals[label][1] += r["sweep_engine_h"]
            extra = (f" (floor {floor_h:.3f} h: {r['sweep_engine_h'] / floor_h:.1f}x)" if name == "chamfer" else "")
            print(f"| {name} | {r['ref_us']:.1f} | {r['engine_us']:.2f} | {r['speedup']:.0f}x | "
                  f"{r['ref_cpu_us']:.1f} | {r['engine_cpu_us']:.2f} | {r['cpu_speedup']:.0f}x | "
                  f"{r['pairs_checked']}, {r['max_abs_diff']:.1e} | {r['sweep_ref_h']:.2f} | "
                  f"{r['sweep_engine_h']:.3f}{extra} |", flush=True)
            checked[0] += r["pairs_checked"]
            checked[1] = max(checked[1], r["max_abs_diff"])
        # sweep mode: a sweep batches many test samples' candidates into one call (one fatter product)
        rng = np.random.default_rng(args.seed + 1)
        big = (random_sets(rng, args.sweep_K, args.d, sizes=sizes) if kind == "random" else
               structured_candidates(rng, args.sweep_K, np.unique(np.concatenate(bank), axis=0),
                                     make_space(rng, args.d), sizes=sizes))
        nb = float(np.mean([len(c) for c in big]))
        g64 = max(g64, matmul_gflops(np.float64))  # the floor uses the best rate seen (others share the CPU)
        floor_us = 2.0 * nb * (U / N) * args.d / (g64 * 1e3)
        for name in [n for n in ("chamfer", "hausdorff") if n in names]:
            runs = []  # best of 3, like the matmul rate it is compared with
            for _ in range(3):
                c0, t = time.process_time(), time.perf_counter()
                pairwise_distances(big, packed, name)
                runs.append(((time.perf_counter() - t) / (len(big) * N) * 1e6,
                             (time.process_time() - c0) / (len(big) * N) * 1e6))
            wall, cpu = min(runs)
            print(f"sweep mode {name}, K={len(big)} per call, best of 3: {wall:.2f} us/pair wall ({cpu:.2f} CPU), "
                  f"FLOP floor {floor_us:.2f} us/pair at {g64:.1f} GFLOP/s: {wall / floor_us:.1f}x the floor; "
                  f"projected sweep {wall * SWEEP_PAIRS * share / 3.6e9:.3f} h")
        print(f"| **all {len(names)}** | | | {totals[label][0] / totals[label][1]:.0f}x | | | | | "
              f"{totals[label][0]:.1f} | {totals[label][1]:.2f} |")
    if args.sizes != "uniform":
        for kind in args.kinds.split(","):
            ref = sum(v[0] for k, v in totals.items() if k.startswith(kind + " "))
            eng = sum(v[1] for k, v in totals.items() if k.startswith(kind + " "))
            print(f"\n# {kind}: whole sweep, Findings + Impression, all {len(names)} settings: "
                  f"reference {ref:.1f} h, engine {eng:.2f} h")
    if args.neg_pairs:
        neg_overhead(args.neg_pairs, args.d, args.seed)
    print(f"\n# agreement: {checked[0]} reference pairs checked, max |engine - reference| = {checked[1]:.1e}")
    print(f"# load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
