"""Large pairs: the engine against the per-pair POT / SciPy reference, per family and size, side by side.

Run (repository root):

    .venv/bin/python benchmarks/bench_large_pairs.py                 # the table: every family, 64 .. 1,000
    .venv/bin/python benchmarks/bench_large_pairs.py --sizes 2000 --families partial_adaptive ot
    .venv/bin/python benchmarks/bench_large_pairs.py --crossover     # where POT starts to win, per routed family

Issue 37 (item 5): exact OT on large unequal sets (1,000 x 1,001) took the engine ~42 s against POT's
0.41 s, partial OT 15 s against 0.65 s, UOT 2.6x POT at 500. Since then the engine sends a pair with
``n * m >= _large.POT_MIN_NM[family]`` to POT itself (:mod:`sdrlib.distances._large`). For each family
and size (one pair of n x (n + 1) sentence-like unit vectors, ``synthetic.sentence_pool``, d = 768;
``--square`` adds n x n) this prints, best of ``--reps``:

- ``reference``: ``set_distance(A, B, name)`` (POT / SciPy per pair);
- ``kernel``: ``pairwise_distances([A], [B], name)`` with the routing switched off (every pair on the
  numba kernel: the engine before issue 37), stopped after ``--budget`` seconds and shown as ``>budget``;
- ``engine``: ``pairwise_distances`` as shipped (the route the engine picks for that size);

the ratios kernel / reference and engine / reference, and the largest |engine - reference|.
``--crossover`` times, per routed family, a batch of ``--batch`` equal pairs of size s x (s + 1) on the
kernel (parallel over pairs, numba's threads) and on POT (one pair after the other, as the route runs
them), which is what decides ``POT_MIN_NM``. Wall-clock times on a shared machine report, they do not
assert: read ratios of runs taken side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdrlib.distances import ConvergenceWarning, DistanceTimeoutError, set_distance  # noqa: E402
from sdrlib.distances import _large  # noqa: E402
from sdrlib.distances.engine import pairwise_distances  # noqa: E402
from sdrlib.distances.synthetic import make_space, sentence_pool  # noqa: E402

FAMILIES = ["ot", "ot_raw", "partial_0.8", "partial_adaptive", "uot_1.0", "uot_0.5", "sinkhorn_0.1",
            "sinkhorn_0.01", "hung_nn", "hung_pen_0.1", "chamfer", "hausdorff"]


@contextlib.contextmanager
def kernels_only():
    """Switch the POT route off (every pair on the numba kernels): the engine before issue 37."""
    saved = dict(_large.POT_MIN_NM)
    try:
        for key in _large.POT_MIN_NM:
            _large.POT_MIN_NM[key] = np.inf
        yield
    finally:
        _large.POT_MIN_NM.update(saved)


def _best(fn, reps: int):
    best, out = np.inf, None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def pair(seed: int, n: int, m: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    space = make_space(rng, d)
    return sentence_pool(rng, n, space), sentence_pool(rng, m, space)


def table(families: list[str], sizes: list[int], square: bool, reps: int, budget: float, d: int) -> None:
    print(f"{'family':<18}{'n x m':>12}{'reference s':>13}{'kernel s':>11}{'engine s':>11}"
          f"{'kernel/ref':>12}{'engine/ref':>12}{'max|diff|':>11}")
    shapes = [(s, s + 1) for s in sizes] + ([(s, s) for s in sizes] if square else [])
    for name in families:
        for n, m in shapes:
            A, B = pair(n * 7 + m, n, m, d)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t_ref, ref = _best(lambda: set_distance(A, B, name, on_nonconvergence="ignore"), reps)
                with kernels_only():
                    try:
                        t_k, _ = _best(lambda: pairwise_distances([A], [B], name, time_budget_s=budget), reps)
                        k_txt, k_ratio = f"{t_k:.3f}", f"{t_k / t_ref:.2f}"
                    except DistanceTimeoutError:
                        k_txt, k_ratio = f">{budget:g}", f">{budget / t_ref:.0f}"
                t_e, val = _best(lambda: pairwise_distances([A], [B], name), reps)
            diff = abs(float(val[0, 0]) - ref)
            print(f"{name:<18}{f'{n} x {m}':>12}{t_ref:>13.3f}{k_txt:>11}{t_e:>11.3f}{k_ratio:>12}"
                  f"{t_e / t_ref:>12.2f}{diff:>11.1e}", flush=True)


def crossover(families: list[str], sizes: list[int], batch: int, reps: int, d: int, square: bool) -> None:
    """Kernel (parallel over a batch of pairs) against POT (pair after pair) around the thresholds."""
    print(f"{'family':<18}{'n x m':>11}{'pairs':>7}{'kernel s':>10}{'POT s':>9}{'POT/kernel':>12}")
    for name in families:
        for s in sizes:
            sets = [pair(s * 13 + i, s, s + (0 if square else 1), d) for i in range(batch)]
            A = [a for a, _ in sets]
            B = [b for _, b in sets]
            from sdrlib.distances.engine import paired_distances
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                with kernels_only():
                    t_k, _ = _best(lambda: paired_distances(A, B, name), reps)
                saved = dict(_large.POT_MIN_NM)
                try:
                    for key in _large.POT_MIN_NM:
                        _large.POT_MIN_NM[key] = 0.0
                    t_p, _ = _best(lambda: paired_distances(A, B, name), reps)
                finally:
                    _large.POT_MIN_NM.update(saved)
            print(f"{name:<18}{f'{s} x {s + (0 if square else 1)}':>11}{batch:>7}{t_k:>10.3f}{t_p:>9.3f}{t_p / t_k:>12.2f}", flush=True)


def main(argv: "list[str] | None" = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", nargs="+", default=FAMILIES)
    ap.add_argument("--sizes", nargs="+", type=int, default=[64, 128, 250, 500, 1000])
    ap.add_argument("--square", action="store_true",
                    help="also n x n pairs (exact OT's assignment path); with --crossover: n x n instead of n x (n + 1)")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--budget", type=float, default=120.0, help="seconds before the kernel-only run is stopped")
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--crossover", action="store_true")
    ap.add_argument("--batch", type=int, default=8, help="pairs per crossover batch")
    args = ap.parse_args(argv)
    import numba
    print(f"numba threads {numba.get_num_threads()}, POT_MIN_NM {_large.POT_MIN_NM}")
    if args.crossover:
        fams = [f for f in args.families if f.split("_")[0] in ("ot", "partial", "uot", "hung")]
        crossover(fams, args.sizes, args.batch, args.reps, args.dim, args.square)
    else:
        table(args.families, args.sizes, args.square, args.reps, args.budget, args.dim)


if __name__ == "__main__":
    main()
