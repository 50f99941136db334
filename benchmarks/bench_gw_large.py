"""Large sets: the engine against the per-pair POT reference for GW (and Sinkhorn / UOT), side by side.

Run (repository root):

    .venv/bin/python benchmarks/bench_gw_large.py                      # GW 250..2000, both paths, Sinkhorn / UOT
    .venv/bin/python benchmarks/bench_gw_large.py --sizes 2000 --numba-budget 600
    .venv/bin/python benchmarks/bench_gw_large.py --crossover           # where the matrix-product path wins
    .venv/bin/python benchmarks/bench_gw_large.py --interrupt           # how fast Ctrl-C / a time budget lands

Issue 24 (item 5): GW on two 2,000-sentence sets ran for minutes in the engine, whose numba kernel
replays POT's iterations with plain loops, while the reference (POT, matrix products through BLAS)
took 13 s. Since then a pair with ``n * m >= GW_BLAS_MIN_NM`` runs POT's own sequence of numpy
operations (:mod:`sdrlib.distances._blas`). For each size this script times, on the same pair
(sentence-like vectors of ``synthetic.sentence_pool``, d = 768, best of ``--reps``):

- ``reference``: ``set_distance(A, B, "gw")`` (POT's ``entropic_gromov_wasserstein2``);
- ``engine``: ``pairwise_distances([A], [B], "gw")`` (the path the engine picks for that size);
- ``numba kernel``: the loop kernel the engine used for every size before (``gw_pairs_stoppable``),
  stopped after ``--numba-budget`` seconds and then reported as ``> budget``;

and prints the ratios engine / reference and numba / reference, and the largest |difference| of
the values. ``--crossover`` times both paths on batches of equal-size pairs (the numba kernel in
parallel over pairs, the matrix-product path one pair after the other) around the threshold.
Sinkhorn (eps 0.1, kernel form; eps 0.01 runs POT's log-domain form in the reference) and UOT rows
show whether those families need the same treatment. Wall-clock times on a shared machine: they
report, they do not assert; ratios of runs taken side by side are what to read.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdrlib.distances import ConvergenceWarning, DistanceTimeoutError, get, make_spec, set_distance  # noqa: E402
from sdrlib.distances import _kernels as K  # noqa: E402
from sdrlib.distances._blas import GW_BLAS_MIN_NM, gw_loss_blas  # noqa: E402
from sdrlib.distances.engine import _Budget, _watched, pack_sets, pairwise_distances  # noqa: E402
from sdrlib.distances.synthetic import make_space, sentence_pool  # noqa: E402


def sentence_sets(rng: np.random.Generator, n: int, m: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Two sets of n and m distinct sentence-like unit vectors (``synthetic.sentence_pool``, one sentence space)."""
    space = make_space(rng, d)
    return sentence_pool(rng, n, space), sentence_pool(rng, m, space)


def _best(fn, reps: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def numba_gw(A: np.ndarray, B: np.ndarray, spec, budget_s: float) -> tuple[float, float | None]:
    """The numba loop kernel on one pair (as the engine ran every size before): (seconds, value or None if stopped)."""
    cp, bp = pack_sets([A]), pack_sets([B])
    ca, cao = cp.intra()
    cb, cbo = bp.intra()
    out, conv = np.empty(1), np.ones(1, dtype=np.bool_)
    pk = pj = np.zeros(1, np.int64)
    prm = spec.params
    t = time.perf_counter()
    try:
        _watched(K.gw_pairs_stoppable, (ca, cao, cb, cbo, cp.offsets, bp.offsets, pk, pj, prm["eps"], prm["tol"],
                                        prm["max_iter"], out, conv), _Budget(budget_s), spec.name)
    except DistanceTimeoutError:
        return time.perf_counter() - t, None
    return time.perf_counter() - t, float(out[0])


def gw_table(sizes, d: int, reps: int, numba_budget: float, seed: int) -> None:
    spec = get("gw")
    print(f"\n## GW (eps {spec.params['eps']}), one pair n x n, d={d}; engine path: matrix products when "
          f"n * m >= {GW_BLAS_MIN_NM}, numba kernel below (best of {reps}; numba kernel: one run, stopped after "
          f"{numba_budget:g} s)")
    print("| n = m | reference s | engine s | engine / reference | numba kernel s | numba / reference | "
          "max abs diff engine vs reference |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        A, B = sentence_sets(np.random.default_rng(seed + n), n, n, d)
        tr, vr = _best(lambda: set_distance(A, B, spec, on_nonconvergence="ignore"), reps)
        te, ve = _best(lambda: float(pairwise_distances([A], [B], spec, on_nonconvergence="ignore")[0, 0]), reps)
        tn, vn = numba_gw(A, B, spec, numba_budget) if numba_budget > 0 else (float("nan"), None)
        shown = f"{tn:.2f}" if vn is not None else f"> {tn:.0f} (stopped)"
        ratio = f"{tn / tr:.2f}x" if vn is not None else f"> {tn / tr:.1f}x"
        diff = abs(ve - vr)
        print(f"| {n} | {tr:.2f} | {te:.2f} | {te / tr:.2f}x | {shown} | {ratio} | {diff:.1e} |", flush=True)


def crossover_table(sizes, d: int, pairs: int, reps: int, seed: int) -> None:
    import numba

    spec = get("gw")
    prm = spec.params
    threads = numba.get_num_threads()
    print(f"\n## crossover: {pairs} pairs of n x n per batch; numba kernel on 1 thread (the engine below "
          f"2,048 pairs) and on {threads} (above), in parallel over pairs, vs the matrix-product path (one pair "
          f"after another, numpy's BLAS threads); best of {reps}")
    print(f"| n = m | n * m | numba 1 thread ms/pair | numba {threads} threads ms/pair | matrix products ms/pair | "
          f"matrix / numba 1 | matrix / numba {threads} |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        rng = np.random.default_rng(seed + 7 * n)
        sets = [sentence_sets(rng, n, n, d) for _ in range(pairs)]
        cp = pack_sets([a for a, _ in sets])
        bp = pack_sets([b for _, b in sets])
        ca, cao = cp.intra()
        cb, cbo = bp.intra()
        pk = pj = np.arange(pairs, dtype=np.int64)
        out, conv = np.empty(pairs), np.ones(pairs, dtype=np.bool_)
        kern = (lambda: K.gw_pairs(ca, cao, cb, cbo, cp.offsets, bp.offsets, pk, pj, prm["eps"], prm["tol"],
                                   prm["max_iter"], out, conv))
        numba.set_num_threads(1)
        try:
            t1, _ = _best(kern, reps)
        finally:
            numba.set_num_threads(threads)
        tn, _ = _best(kern, reps)
        mats = [(ca[cao[t]:cao[t + 1]].reshape(n, n), cb[cbo[t]:cbo[t + 1]].reshape(n, n)) for t in range(pairs)]
        tb, _ = _best(lambda: [gw_loss_blas(x, y, prm["eps"], prm["tol"], prm["max_iter"]) for x, y in mats], reps)
        print(f"| {n} | {n * n} | {t1 / pairs * 1e3:.2f} | {tn / pairs * 1e3:.2f} | {tb / pairs * 1e3:.2f} | "
              f"{tb / t1:.2f}x | {tb / tn:.2f}x |", flush=True)


def entropic_table(sizes, names, d: int, reps: int, seed: int) -> None:
    print(f"\n## Sinkhorn / UOT, one pair n x n, d={d} (best of {reps}): engine (numba kernel, stoppable) vs reference")
    print("| setting | n = m | reference s | engine s | engine / reference | max abs diff |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in names:
        for n in sizes:
            A, B = sentence_sets(np.random.default_rng(seed + n), n, n, d)
            tr, vr = _best(lambda: set_distance(A, B, name, on_nonconvergence="ignore"), reps)
            te, ve = _best(lambda: float(pairwise_distances([A], [B], name, on_nonconvergence="ignore")[0, 0]), reps)
            print(f"| {name} | {n} | {tr:.2f} | {te:.2f} | {te / tr:.2f}x | {abs(ve - vr):.1e} |", flush=True)


def interrupt_table(after_s: float, d: int, seed: int) -> None:
    """How long Ctrl-C (``_thread.interrupt_main``, what the notebook's interrupt button sends) and a
    ``time_budget_s`` take to stop long solves, from the interrupt / the budget's end to the exception."""
    import _thread
    import threading

    rng = np.random.default_rng(seed)
    loads = []
    cands = [sentence_pool(rng, 100, make_space(rng, 64)) for _ in range(12)]
    loads.append(("GW, 6 x 6 pairs of 100 x 100 (numba kernel), tol 1e-300, max_iter 1e5", cands[:6], cands[6:],
                  make_spec("gw", eps=0.05, tol=1e-300, max_iter=10 ** 5)))
    A, B = sentence_sets(rng, 2000, 2000, d)
    loads.append(("GW, one pair 2,000 x 2,000 (matrix products), the paper's gw", [A], [B], get("gw")))
    loads.append(("Sinkhorn eps 0.1, one pair 2,000 x 2,000, stop_thr 1e-300", [A], [B],
                  make_spec("sinkhorn", eps=0.1, stop_thr=1e-300, max_iter=10 ** 7)))
    loads.append(("UOT tau 1e3 eps 0.005, one pair 2,000 x 2,000", [A], [B],
                  make_spec("uot", tau=1e3, eps=0.005, stop_thr=1e-300, max_iter=10 ** 7)))
    print(f"\n## stopping long solves: Ctrl-C after {after_s:g} s, time_budget_s={after_s:g}; seconds from the "
          "interrupt (the budget's end) to the exception")
    print("| workload | Ctrl-C lands after s | budget error after s |")
    print("|---|---:|---:|")
    for label, X, Y, spec in loads:
        timer = threading.Timer(after_s, _thread.interrupt_main)
        t0 = time.perf_counter()
        timer.start()
        try:
            pairwise_distances(X, Y, spec, on_nonconvergence="ignore")
            lag_c = float("nan")  # finished before the interrupt
        except KeyboardInterrupt:
            lag_c = time.perf_counter() - t0 - after_s
        finally:
            timer.cancel()
        t0 = time.perf_counter()
        try:
            pairwise_distances(X, Y, spec, on_nonconvergence="ignore", time_budget_s=after_s)
            lag_b = float("nan")
        except DistanceTimeoutError:
            lag_b = time.perf_counter() - t0 - after_s
        print(f"| {label} | {lag_c:.3f} | {lag_b:.3f} |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="250,500,1000,2000", help="set sizes n (= m) of the GW table")
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--numba-budget", type=float, default=120.0,
                    help="seconds the old numba path may run per pair before it is stopped (0: skip it)")
    ap.add_argument("--entropic-sizes", default="500,1000,2000", help="sizes of the Sinkhorn / UOT table ('': skip)")
    ap.add_argument("--entropic-settings", default="sinkhorn_0.1,sinkhorn_0.01,uot_1.0")
    ap.add_argument("--crossover", action="store_true", help="only the crossover table of the two GW paths")
    ap.add_argument("--crossover-sizes", default="48,64,96,128,160,200")
    ap.add_argument("--pairs", type=int, default=8, help="pairs per batch in the crossover table")
    ap.add_argument("--interrupt", action="store_true", help="only the table of how fast Ctrl-C / a budget lands")
    ap.add_argument("--after", type=float, default=2.0, help="seconds before the interrupt / the budget's end")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    print(f"# bench_gw_large: cpus={os.cpu_count()}, numba threads="
          f"{os.environ.get('NUMBA_NUM_THREADS', os.cpu_count())}, load average {os.getloadavg()[0]:.1f}")
    A, B = sentence_sets(np.random.default_rng(1), 5, 6, 16)  # compile / warm every path before timing
    for name in ("gw", "sinkhorn_0.1", "sinkhorn_0.01", "uot_1.0"):
        pairwise_distances([A], [B], name, on_nonconvergence="ignore")
        set_distance(A, B, name, on_nonconvergence="ignore")  # the reference's first call imports POT (~2 s)
    numba_gw(A, B, get("gw"), 60.0)
    if args.interrupt:
        interrupt_table(args.after, args.d, args.seed)
        return 0
    if args.crossover:
        crossover_table([int(s) for s in args.crossover_sizes.split(",")], args.d, args.pairs, args.reps, args.seed)
        return 0
    gw_table([int(s) for s in args.sizes.split(",") if s], args.d, args.reps, args.numba_budget, args.seed)
    if args.entropic_sizes:
        entropic_table([int(s) for s in args.entropic_sizes.split(",")], args.entropic_settings.split(","), args.d,
                       args.reps, args.seed)
    print(f"\n# load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
