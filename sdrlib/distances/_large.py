"""Large pairs on the reference's own solvers: exact OT, partial OT, UOT and Hungarian past a measured size.

The numba kernels (:mod:`sdrlib.distances._kernels`) are the fast way for what a radiology report
bank holds: thousands of 2 x 2 to 15 x 15 pairs, run side by side. On one *large* pair they are not:
exact OT on unequal sets runs successive shortest paths, O(n m (n + m)) scalar work (1,000 x 1,001:
~40 s where POT's network simplex takes ~0.4 s); partial OT is the same solver; UOT's scaling loops
are single-threaded where POT's matrix-vector products go through BLAS. The engine
(:mod:`sdrlib.distances.engine`) therefore sends a pair with ``n * m >= POT_MIN_NM[family]`` here,
where the reference itself (:mod:`sdrlib.distances.reference`: ``ot.emd2``,
``ot.partial.partial_wasserstein2``, SciPy's ``linear_sum_assignment``) solves it on the engine's cost
block, and UOT runs :func:`uot_replay`, POT's ``sinkhorn_knopp_unbalanced`` loop operation for operation
(the reference's bits on a given block, and a stop check per iteration). The value is the reference's up to
the cosine product's round-off (the block comes from the engine's one matrix product, not from the
reference's per-pair one). The
thresholds are measured crossovers (``benchmarks/bench_large_pairs.py --crossover``); below them
the kernels win or tie and keep their parallelism over pairs.

**Stopping.** POT's network simplex and SciPy's assignment are C code that releases the GIL but never
looks at a flag. :func:`solve` runs the large pairs one after the other in a worker thread; the calling
thread waits in slices (``_POLL_S``), so Ctrl-C, a signal handler's exception or the caller's time budget
lands at once and is raised there. The worker sees the stop between pairs, and UOT's replay once per
iteration; an exact solve under way finishes in the background (at most one: ~0.4 s for OT at
1,000 x 1,001, ~3 s for partial OT at 2,000 x 2,100) and its value is dropped.

Scope: float64, uniform weights; the plain (not negation-aware) ``ot``, ``partial``, ``uot``, ``hung_nn``
and ``hung_pen`` settings, ``rescale`` / ``clip`` on or off; CPU only (``device="cuda"`` keeps its kernels).
Sinkhorn, GW (:mod:`._blas` has its own large-pair path), Chamfer and Hausdorff are not routed: measured
at 64 to 2,000 sentences, the kernels are at or below POT's time for those families (Sinkhorn 0.05-0.17x;
``benchmarks/bench_large_pairs.py``).
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from sdrlib.distances import reference as R

#: per family: pairs with at least this many cells (n * m) are solved by POT / SciPy (the reference's call).
#: Measured on the 2-core box (``benchmarks/bench_large_pairs.py --crossover [--square]``: batches of 8 equal
#: pairs, the kernel parallel over them, POT one after the other), POT's time over the kernel's per entry.
#: Report sets (2-15 sentences: at most a few hundred cells) never reach these, so the default run is unchanged.
POT_MIN_NM: dict[str, float] = {
    "ot": 32 * 32,          # n != m: POT / kernel 0.80 at 32 x 33, 0.51 at 64 x 65, 0.20 at 128 x 129 (1.83 at 16)
    "ot_square": 384 * 384,  # n = m: the kernel's assignment; POT / kernel 1.08-1.86 from 32 x 32 to 256 x 256
    "partial": 48 * 48,     # 0.87 (rho 0.8) / 0.68 (adaptive) at 48 x 49, 0.20-0.38 at 128; 1.3-1.8 at 16-32
    "uot": 192 * 192,       # uot_replay: 0.95 at 192 x 193, 0.50-1.01 at 256; 1.1-8 below 192 (tau 1, 0.5)
    "hung": 256 * 256,      # hung_nn / hung_pen on SciPy: 1.05-1.3 up to 128, 0.82-1.03 at 256
}

#: the families routed here
FAMILIES = ("ot", "partial", "uot", "hung_nn", "hung_pen")


def route_key(family: str, n: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Boolean mask of the pairs (sizes ``n``, ``m``) that :func:`solve` takes for ``family``."""
    n = np.asarray(n)
    m = np.asarray(m)
    if family not in FAMILIES:
        return np.zeros(n.shape, dtype=bool)
    cells = n.astype(np.float64) * m
    if family == "ot":
        return np.where(n == m, cells >= POT_MIN_NM["ot_square"], cells >= POT_MIN_NM["ot"])
    return cells >= POT_MIN_NM["hung" if family.startswith("hung") else family]


def cost_block(G: np.ndarray, ci: np.ndarray, co: np.ndarray, bi: np.ndarray, bo: np.ndarray, k: int,
               j: int) -> np.ndarray:
    """The cosine cost block of pair (candidate set k, bank set j), shape (n, m): what ``_kernels._gather``
    fills, ``clip(0.5 (1 - cos), 0, 1)`` from the engine's cosine matrix ``G`` (shape (U_bank, U_cand))."""
    rows = ci[co[k]:co[k + 1]]
    cols = bi[bo[j]:bo[j + 1]]
    return np.clip(0.5 * (1.0 - G[np.ix_(cols, rows)].T), 0.0, 1.0)


def uot_replay(M: np.ndarray, tau: float, eps: float, stop_thr: float, max_iter: int, scale: bool = True,
               stop: "threading.Event | None" = None) -> tuple[float, bool]:
    """:func:`sdrlib.distances.reference.uot` on cost block ``M`` (n, m): POT 0.9.7's
    ``sinkhorn_knopp_unbalanced`` (``reg_type="entropy"``, ``returnCost="linear"``), the same numpy operations in
    the same order, so the same bits (tested against the reference), plus a look at ``stop`` once per
    iteration. POT's loop is numpy calls between which nothing can stop it; a stopped UOT would otherwise run on
    in the background for up to ``max_iter`` iterations after the caller was told it stopped. Returns
    ``(value, converged)``; ``(nan, False)`` when stopped."""
    Mt = R._transport_cost(None, None, M, scale)
    if not Mt.any():
        return 0.0, True
    n, m = Mt.shape
    a, b = R._uniform(n), R._uniform(m)
    K = np.exp(-Mt / eps) * np.ones((n, m))
    fi = tau / (tau + eps) if tau != float("inf") else 1
    u, v = np.ones(n), np.ones(m)
    err = None
    for _ in range(max_iter):
        if stop is not None and stop.is_set():
            return float("nan"), False
        uprev, vprev = u, v
        u = (a / np.dot(K, v)) ** fi
        Ktu = np.dot(K.T, u)
        v = (b / Ktu) ** fi
        if np.any(Ktu == 0.0) or np.any(np.isnan(u)) or np.any(np.isnan(v)) or np.any(np.isinf(u)) or \
                np.any(np.isinf(v)):
            u, v = uprev, vprev  # POT: machine precision reached, back to the previous scalings
            break
        err_u = np.max(np.abs(u - uprev)) / max(np.max(np.abs(u)), np.max(np.abs(uprev)), 1.0)
        err_v = np.max(np.abs(v - vprev)) / max(np.max(np.abs(v)), np.max(np.abs(vprev)), 1.0)
        err = 0.5 * (err_u + err_v)
        if err < stop_thr:
            break
    plan = u[:, None] * K * v[None, :]
    return float(np.sum(plan * Mt)), err is not None and float(err) < stop_thr


def pair_value(family: str, params: dict, M: np.ndarray, stop: "threading.Event | None" = None) -> tuple[float, bool]:
    """(value, converged) of one pair with cost block ``M`` (n, m): the reference function itself (UOT: its
    stoppable replay, :func:`uot_replay`)."""
    scale = params.get("rescale", True)
    if family == "ot":
        return R.ot_emd(None, None, scale, M=M)
    if family == "partial":
        return R.partial(None, None, params["rho"], scale, M=M)
    if family == "uot":
        return uot_replay(M, params["tau"], params["eps"], params["stop_thr"], params["max_iter"], scale, stop)
    if family == "hung_nn":
        return R.hung_nn(None, None, M=M)
    if family == "hung_pen":
        return R.hung_pen(None, None, params["alpha"], params["clip"], M=M)
    raise KeyError(f"family {family!r} is not solved on POT here")


def solve(family: str, params: dict, G: np.ndarray, ci: np.ndarray, co: np.ndarray, bi: np.ndarray,
          bo: np.ndarray, pk: np.ndarray, pj: np.ndarray, out: np.ndarray, conv: np.ndarray,
          wait: Callable[[threading.Event], None]) -> None:
    """Solve the pairs (pk[p], pj[p]) with POT, one after the other in a worker thread; fill ``out``, ``conv``.

    ``wait(done)`` is the engine's waiting loop: it returns once ``done`` is set and raises (Ctrl-C, the
    time budget) otherwise; on a raise the worker stops before its next pair and the exception propagates
    at once (the pair being solved finishes in the background and is dropped). The worker's own errors
    (e.g. POT's) propagate too.
    """
    stop = threading.Event()
    done = threading.Event()
    failed: list[BaseException] = []
    res_v = np.empty(len(pk))
    res_c = np.ones(len(pk), dtype=np.bool_)

    def work() -> None:
        try:
            for p in range(len(pk)):
                if stop.is_set():
                    return
                res_v[p], res_c[p] = pair_value(family, params, cost_block(G, ci, co, bi, bo, pk[p], pj[p]), stop)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=work, name="sdr-distance-pot", daemon=True).start()
    try:
        wait(done)
    except BaseException:
        stop.set()
        raise
    if failed:
        raise failed[0]
    out[:] = res_v
    conv[:] = res_c


__all__ = ["FAMILIES", "POT_MIN_NM", "cost_block", "pair_value", "route_key", "solve", "uot_replay"]
