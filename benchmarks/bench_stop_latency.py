"""How fast Ctrl-C or an expired ``time_budget_s`` stops one large pair of an exact family (issue 36, item 7).

Run (repository root):

    .venv/bin/python benchmarks/bench_stop_latency.py                  # every case, Ctrl-C and budget
    .venv/bin/python benchmarks/bench_stop_latency.py --cases partial_adaptive --fire-after 0.3
    .venv/bin/python benchmarks/bench_stop_latency.py --cases hung_nn hung_pen --fire-after 5

``--fire-after`` counts from the call's start: the 3,000-sentence Hungarian cases spend ~2-3 s packing and
in the cosine product first, so time them with ``--fire-after 5`` (the interrupt then lands in the kernel).

For each case (one pair of unit Gaussian vectors, d = 64: distinct costs, long solves) it starts
``pairwise_distances([A], [B], spec)`` and, after ``--fire-after`` seconds, either raises
``KeyboardInterrupt`` in the main thread (``_thread.interrupt_main``: what Ctrl-C does) or lets a
``time_budget_s`` of that many seconds expire; it prints the seconds from then until the exception
reached the caller (``latency``), and whether the call raised at all (a solve shorter than the delay
returns a value: ``done``). Only the public API is used, so the same script measures an older
checkout (``PYTHONPATH=<old tree>``): before issue 36 the exact kernels ran to the end of the pair.
Since issue 37 these pairs are past the large-pair route's thresholds (:mod:`sdrlib.distances._large`: POT /
SciPy in a worker thread); ``--kernels-only`` keeps them on the kernels, as the table of docs/speed.md measured them.
Wall-clock times on a shared machine: they report, they do not assert.
"""

from __future__ import annotations

import _thread
import argparse
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdrlib.distances import DistanceTimeoutError, make_spec, pairwise_distances  # noqa: E402
from sdrlib.distances.synthetic import make_space, sentence_pool  # noqa: E402

#: case -> (spec, n, m)
CASES = {
    "partial_adaptive": (make_spec("partial", rho="adaptive"), 600, 700),
    "hung_nn": (make_spec("hung_nn"), 3000, 3000),
    "hung_pen": (make_spec("hung_pen", alpha=0.5), 3000, 3000),
    "ot": (make_spec("ot"), 600, 700),
    "partial_0.5": (make_spec("partial", rho=0.5), 600, 700),
}


def _pair(n: int, m: int):
    """Unit Gaussian vectors, d = 64: all costs distinct, so the assignment / transport solves are long
    (sentence-like pools with few topics are solved in about a second)."""
    rng = np.random.default_rng(n + m)
    return rng.standard_normal((n, 64)), rng.standard_normal((m, 64))


def ctrl_c(spec, A, B, after: float) -> tuple[str, float]:
    fired: list[float] = []
    timer = threading.Timer(after, lambda: (fired.append(time.monotonic()), _thread.interrupt_main()))
    timer.start()
    try:
        pairwise_distances([A], [B], spec)
        outcome = "done"
    except KeyboardInterrupt:
        outcome = "raised"
    end = time.monotonic()
    timer.cancel()
    timer.join()
    if not fired:
        return outcome, float("nan")
    if outcome == "done":  # the interrupt arrives after the call returned: swallow it here
        try:
            time.sleep(0.2)
        except KeyboardInterrupt:
            pass
    return outcome, end - fired[0]


def budget(spec, A, B, after: float) -> tuple[str, float]:
    t0 = time.monotonic()
    try:
        pairwise_distances([A], [B], spec, time_budget_s=after)
        outcome = "done"
    except DistanceTimeoutError:
        outcome = "raised"
    return outcome, time.monotonic() - t0 - after


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--modes", nargs="+", default=["ctrl_c", "budget"], choices=["ctrl_c", "budget"])
    ap.add_argument("--fire-after", type=float, default=0.3)
    ap.add_argument("--kernels-only", action="store_true",
                    help="keep every pair on the numba kernels (these pairs are past the large-pair route's "
                         "thresholds, sdrlib.distances._large, since issue 37: without this flag the route's "
                         "stopping is timed)")
    args = ap.parse_args(argv)
    if args.kernels_only:
        from sdrlib.distances import _large
        _large.POT_MIN_NM.update({k: float("inf") for k in _large.POT_MIN_NM})
    warm = [sentence_pool(np.random.default_rng(0), 3, make_space(np.random.default_rng(0), 16, topics=2))] * 2
    for name in args.cases:  # compile (or load) the kernels before timing
        pairwise_distances(warm[:1], warm[1:], CASES[name][0])
    print(f"{'case':18} {'pair':>11} {'mode':7} {'outcome':8} {'latency_s':>9}")
    for name in args.cases:
        spec, n, m = CASES[name]
        A, B = _pair(n, m)
        for mode in args.modes:
            outcome, lat = (ctrl_c if mode == "ctrl_c" else budget)(spec, A, B, args.fire_after)
            print(f"{name:18} {f'{n}x{m}':>11} {mode:7} {outcome:8} {lat:9.2f}", flush=True)


if __name__ == "__main__":
    main()
