"""The built-in families' engine kernels, each ``kernel(batch) -> (values (P,), converged (P,))`` on a
:class:`~sdrlib.distances.engine.PairBatch` (registered by name in :mod:`sdrlib.distances.registry`):
:func:`nn_kernel` (Chamfer, Hausdorff), :func:`hung_kernel` (Hungarian-NN / -Pen), :func:`transport_kernel`
(exact and partial OT), :func:`entropic_kernel` (Sinkhorn, UOT), :func:`gw_kernel` (GW), :func:`neg_kernel`
(every ``_neg`` setting) and :func:`recall_kernel` (``chamfer_recall``). They run the numba kernels of
:mod:`sdrlib.distances._kernels` (the CUDA ones of :mod:`sdrlib.distances._cuda_kernels` on a GPU solver) and
route large pairs to POT / SciPy (:mod:`sdrlib.distances._large`) or POT's GW products
(:mod:`sdrlib.distances._blas`). Leaves out batching, sharing solves between settings and the range check
(:mod:`sdrlib.distances.engine._dispatch`, :meth:`~sdrlib.distances.engine.PairBatch.finish`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from sdrlib.distances import _kernels as K
from sdrlib.distances import _large
from sdrlib.distances._blas import GW_BLAS_MIN_NM, gw_loss_blas
from sdrlib.distances.costs import ZERO_COST_ATOL
from sdrlib.distances.engine._batch import PairBatch
from sdrlib.distances.engine._budget import _Budget, _wait, _watched
from sdrlib.distances.engine._packing import PackedSets
from sdrlib.distances.registry import DistanceSpec


def _routed(b: PairBatch, small: Callable[[PairBatch], tuple[np.ndarray, np.ndarray]]
            ) -> tuple[np.ndarray, np.ndarray]:
    """``small(b)``, except that large pairs of a family :mod:`._large` routes (CPU only) go to POT / SciPy."""
    fam, prm = b.spec.family, b.spec.params
    big = _large.route_key(fam, *b.sizes) if b.solver == "cpu" else np.zeros(b.P, dtype=bool)
    if not big.any():
        return small(b)
    out, conv = np.empty(b.P), np.ones(b.P, dtype=np.bool_)
    rest = np.flatnonzero(~big)
    if len(rest):
        out[rest], conv[rest] = small(b.subset(rest))
    ob, cb = np.empty(int(big.sum())), np.ones(int(big.sum()), dtype=np.bool_)
    _large.solve(fam, prm, b.G, b.cand.index, b.cand.offsets, b.bank.index, b.bank.offsets, b.pk[big], b.pj[big],
                 ob, cb, lambda done: _wait(done, b.budget, b.spec.name))
    out[big], conv[big] = ob, cb
    return out, conv


def _work(b: PairBatch) -> tuple[float, float]:
    """Worst-case work of the exact families: (n m summed: nearest neighbour; n m (n + m): one O((n + m)^2) path
    search per augmentation, at most n + m of them)."""
    n, m = (x.astype(float) for x in b.sizes)
    return float(np.sum(n * m)), float(np.sum(n * m * (n + m)))


def nn_kernel(b: PairBatch) -> tuple[np.ndarray, np.ndarray]:
    """Chamfer (eq. 12) and Hausdorff (eq. 13): ``_kernels.nn_grid_stoppable`` on a full grid, else per pair."""
    haus = b.spec.family == "hausdorff"
    cells, _ = _work(b)
    conv = np.ones(b.P, dtype=np.bool_)
    if b.grid is not None:
        og = np.empty((len(b.grid), b.cand.n_sets))
        b.watched(K.nn_grid_stoppable, (b.G, b.cand.index, b.cand.offsets, b.bank.index, b.bank.offsets, b.grid,
                                        haus, og), cells)
        return og.ravel(), conv
    out = np.empty(b.P)
    b.watched(K.nn_pairs_stoppable, (*b.args, haus, out), cells)
    return out, conv


def hung_kernel(b: PairBatch) -> tuple[np.ndarray, np.ndarray]:
    """Hungarian-NN (eq. 19) and Hungarian-Pen (eq. 20); large pairs on SciPy (:mod:`._large`)."""
    def small(s: PairBatch) -> tuple[np.ndarray, np.ndarray]:
        out = np.empty(s.P)
        prm = s.spec.params
        pen = s.spec.family == "hung_pen"
        s.watched(K.hung_pairs_stoppable, (*s.args, s.nmax, int(pen), float(prm["alpha"]) if pen else 0.0,
                                           bool(prm["clip"]) if pen else False, out), _work(s)[1])
        return out, np.ones(s.P, dtype=np.bool_)
    return _routed(b, small)


def transport_kernel(b: PairBatch) -> tuple[np.ndarray, np.ndarray]:
    """Exact OT (eq. 14) and partial OT (eq. 21); large pairs on POT (:mod:`._large`)."""
    def small(s: PairBatch) -> tuple[np.ndarray, np.ndarray]:
        out = np.empty(s.P)
        prm = s.spec.params
        rho = -1.0 if s.spec.family == "ot" else (0.0 if prm["rho"] == "adaptive" else float(prm["rho"]))
        s.watched(K.transport_pairs_stoppable, (*s.args, s.nmax, rho, ZERO_COST_ATOL, prm["rescale"], out),
                  _work(s)[1])
        return out, np.ones(s.P, dtype=np.bool_)
    return _routed(b, small)


def entropic_kernel(b: PairBatch) -> tuple[np.ndarray, np.ndarray]:
    """Sinkhorn (eq. 15) and UOT (eq. 16), on the CPU or a CUDA device; large UOT pairs on POT's loop."""
    def small(s: PairBatch) -> tuple[np.ndarray, np.ndarray]:
        out, conv = np.empty(s.P), np.ones(s.P, dtype=np.bool_)
        fam, prm = s.spec.family, s.spec.params
        tau = -1.0 if fam == "sinkhorn" else prm["tau"]
        log_domain = fam == "sinkhorn" and prm["eps"] < K.LOG_DOMAIN_EPS
        ent = (*s.args, s.nmax, prm["eps"], tau, prm["stop_thr"], prm["max_iter"], log_domain, ZERO_COST_ATOL,
               prm["rescale"], out, conv)
        if s.solver != "cpu":
            from sdrlib.distances import _cuda_kernels

            _cuda_kernels.entropic_pairs(*ent, device=s.solver)
        else:
            work = prm["max_iter"] * 4 * _work(s)[0] * (10 if log_domain else 1)  # log domain: an exp per entry
            s.watched(K.entropic_pairs_stoppable, ent, work)
        return out, conv
    return _routed(b, small)


def gw_kernel(b: PairBatch) -> tuple[np.ndarray, np.ndarray]:
    """Entropic GW (eq. 17) on the intra-set costs: a CUDA device, or the CPU (:func:`_gw_cpu`)."""
    out, conv = np.empty(b.P), np.ones(b.P, dtype=np.bool_)
    prm = b.spec.params
    if b.solver != "cpu":
        from sdrlib.distances import _cuda_kernels

        ca, cao = b.cand.intra()
        cb, cbo = b.bank.intra()
        _cuda_kernels.gw_pairs(ca, cao, cb, cbo, b.cand.offsets, b.bank.offsets, b.pk, b.pj, prm["eps"], prm["tol"],
                               prm["max_iter"], out, conv, device=b.solver)
    else:
        _gw_cpu(b.spec, b.cand, b.bank, b.pk, b.pj, out, conv, b.budget)
    return out, conv


def neg_kernel(b: PairBatch) -> tuple[np.ndarray, np.ndarray]:
    """Every built-in family but GW on the negation-aware cost (presence path): the capped cosine block, then
    the driver ``_kernels.neg_pairs`` with the sentence floors and the family's own solver; not stoppable."""
    spec = b.spec
    out, conv = np.empty(b.P), np.ones(b.P, dtype=np.bool_)
    G = b.capped_cosines(spec.contradiction)
    crow, brow, cset, bset = b.masks()
    fam, prm = spec.family, spec.params
    rho = prm.get("rho", -1.0)
    rho = 0.0 if rho == "adaptive" else float(rho)
    eps = float(prm.get("eps", 1.0))
    nmax = int(max(b.cand.sizes.max(), b.bank.sizes.max()))
    K.neg_pairs(G, b.cand.index, b.cand.offsets, b.bank.index, b.bank.offsets, b.pk, b.pj, nmax, crow, brow, cset,
                bset, float(spec.contradiction), K.NEG_FAMILY_CODES[fam], float(prm.get("alpha", 0.0)),
                bool(prm.get("clip", False)), rho, eps, float(prm.get("tau", -1.0)),
                float(prm.get("stop_thr", 1e-9)), int(prm.get("max_iter", 1000)),
                fam == "sinkhorn" and eps < K.LOG_DOMAIN_EPS, ZERO_COST_ATOL, bool(prm.get("rescale", False)),
                out, conv)
    return out, conv


def recall_kernel(b: PairBatch) -> tuple[np.ndarray, np.ndarray]:
    """``chamfer_recall_<alpha>`` (:mod:`sdrlib.distances.recall`): ``_kernels.recall_pairs`` on the cosine block
    capped at c = 1 (presence path; candidates are the generated sets); not stoppable."""
    out = np.empty(b.P)
    G = b.capped_cosines(1.0)
    crow, brow, cset, bset = b.masks()
    nmax = int(max(b.cand.sizes.max(), b.bank.sizes.max()))
    K.recall_pairs(G, b.cand.index, b.cand.offsets, b.bank.index, b.bank.offsets, b.pk, b.pj, nmax, crow, brow,
                   cset, bset, float(b.spec.params["alpha"]), out)
    return out, np.ones(b.P, dtype=np.bool_)


def _gw_cpu(spec: DistanceSpec, cand: PackedSets, bank: PackedSets, pk: np.ndarray, pj: np.ndarray,
            out: np.ndarray, conv: np.ndarray, budget: _Budget) -> None:
    """GW on the CPU: pairs with ``n * m >= GW_BLAS_MIN_NM`` on POT's matrix products (:mod:`._blas`),
    the others on the stoppable numba kernel; fills ``out`` and ``conv``."""
    prm = spec.params
    ca, cao = cand.intra()
    cb, cbo = bank.intra()
    n = cand.sizes[pk]
    m = bank.sizes[pj]
    large = (n >= 2) & (m >= 2) & (n * m >= GW_BLAS_MIN_NM)
    small = np.flatnonzero(~large)
    if len(small):
        o, c = np.empty(len(small)), np.ones(len(small), dtype=np.bool_)
        ns, ms = n[small].astype(float), m[small].astype(float)
        work = prm["max_iter"] * float(np.sum((ns >= 2) * (ms >= 2) * (1000 * 4 * ns * ms + 2 * ns * ms * (ns + ms))))
        _watched(K.gw_pairs_stoppable, (ca, cao, cb, cbo, cand.offsets, bank.offsets, pk[small], pj[small],
                                        prm["eps"], prm["tol"], prm["max_iter"], o, c), budget, spec.name, work)
        out[small], conv[small] = o, c
    check = None if budget.deadline is None else lambda: budget.check(spec.name)
    for p in np.flatnonzero(large):
        k, j = pk[p], pj[p]
        CA = ca[cao[k]:cao[k + 1]].reshape(n[p], n[p])
        CB = cb[cbo[j]:cbo[j + 1]].reshape(m[p], m[p])
        out[p], conv[p] = gw_loss_blas(CA, CB, prm["eps"], prm["tol"], prm["max_iter"], 1000, 1e-9, check)
