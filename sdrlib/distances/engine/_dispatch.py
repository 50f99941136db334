"""Running settings on pairs: one cosine product for all settings of a call (:func:`_run`), one solve per pair
for settings that solve the same problem (:func:`_shared_groups`, :func:`_run_shared`), each family's registered
kernel otherwise (:func:`_run_kernels`), and the presence path (:func:`_run_presence`); numba runs single-threaded
below :data:`_SERIAL_BELOW` pairs. Leaves out packing, deduplication and the entry points' options
(:mod:`sdrlib.distances.engine._entry`) and the kernels themselves (:mod:`sdrlib.distances.engine._families`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from sdrlib.distances import _kernels as K
from sdrlib.distances import _large
from sdrlib.distances.costs import ZERO_COST_ATOL
from sdrlib.distances.engine._batch import PairBatch
from sdrlib.distances.engine._budget import _Budget
from sdrlib.distances.engine._device import _cosines
from sdrlib.distances.engine._families import _work, hung_kernel, transport_kernel
from sdrlib.distances.engine._packing import PackedSets
from sdrlib.distances.registry import FAMILIES, DistanceSpec, resolve


#: below this many pairs the kernels run on one thread (thread start-up and barriers cost more than they save)
_SERIAL_BELOW = 2048


def _run(specs: list[DistanceSpec], cand: PackedSets, bank: PackedSets, pk: np.ndarray, pj: np.ndarray,
         device: str, grid: np.ndarray | None = None, solver: str = "cpu",
         budget: "_Budget | None" = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Distances and convergence flags of every spec for the pairs (pk[p], pj[p]); one cosine product for all.

    ``device`` runs the cosine product, ``solver`` (``"cpu"`` or a CUDA device, :func:`_pick_solver`)
    the solvers of the ``cuda`` families. ``grid`` (bank set ids) says the pairs are the full
    bank-major grid ``pj = repeat(grid, K)``, ``pk = tile(arange(K), len(grid))``, which the
    nearest-neighbour kernel exploits. ``budget``: the caller's time budget (none by default).

    Settings that solve the same problem per pair share the solve (:func:`_shared_groups`: exact OT and the partial
    OT masses; the Hungarian variants); every value is the one its setting computes alone, bit for bit.
    """
    import numba

    budget = _Budget(None) if budget is None else budget
    threads = numba.get_num_threads()
    if len(pk) < _SERIAL_BELOW:
        numba.set_num_threads(1)
    try:
        G = None
        res: list = [None] * len(specs)
        for group in _shared_groups(specs):
            budget.check(specs[group[0]].name)
            if G is None and any(FAMILIES[specs[i].family].needs_cosines for i in group) and len(pk):
                G = np.ascontiguousarray(_cosines(bank.unique, cand.unique, device))  # (U_bank, U_cand)
            if len(group) == 1 or not len(pk):
                for i in group:
                    res[i] = _run_kernels(specs[i], G, cand, bank, pk, pj, grid, solver, budget)
            else:
                for i, r in zip(group, _run_shared([specs[i] for i in group], G, cand, bank, pk, pj, budget)):
                    res[i] = r
        return res
    finally:
        numba.set_num_threads(threads)


def _shared_key(spec: DistanceSpec) -> "tuple | None":
    """Settings with equal keys solve the same problem per pair and can share it (:func:`_run_shared`); None: alone.

    Exact OT and partial OT (the built-in ``transport_kernel``) with the same ``rescale``: one run of successive
    shortest paths gives every transported mass (``_kernels.transport_values``). Hungarian-NN and Hungarian-Pen (the
    built-in ``hung_kernel``): one assignment of the same cost block (``_kernels.hung_values``). A family registered
    with another kernel is never shared.
    """
    kernel = resolve(FAMILIES[spec.family].kernel)
    if kernel is transport_kernel and spec.family in ("ot", "partial"):
        return ("transport", bool(spec.params["rescale"]))
    if kernel is hung_kernel and spec.family in ("hung_nn", "hung_pen"):
        return ("hung",)
    return None


def _shared_groups(specs: Sequence[DistanceSpec]) -> list[list[int]]:
    """Positions of ``specs`` grouped by :func:`_shared_key` (in order of first appearance; unshared ones alone)."""
    groups: list[list[int]] = []
    by_key: dict = {}
    for i, spec in enumerate(specs):
        key = _shared_key(spec)
        if key is None:
            groups.append([i])
        elif key in by_key:
            by_key[key].append(i)
        else:
            by_key[key] = [i]
            groups.append(by_key[key])
    return groups


def _run_shared(specs: list[DistanceSpec], G: np.ndarray, cand: PackedSets, bank: PackedSets, pk: np.ndarray,
                pj: np.ndarray, budget: _Budget) -> list[tuple[np.ndarray, np.ndarray]]:
    """Several settings of one :func:`_shared_key` on the same pairs, one solve per pair for all of them; pairs that
    any of them routes to POT / SciPy (:mod:`._large`) go through each setting's own kernel instead. Range-checked
    like :func:`_run_kernels`; the values are those of one :func:`_run_kernels` call per setting, bit for bit."""
    batches = [PairBatch(s, cand, bank, pk, pj, budget, G=G) for s in specs]
    b0 = batches[0]
    n, m = b0.sizes
    big = np.zeros(b0.P, dtype=bool)
    for s in specs:
        big |= _large.route_key(s.family, n, m)
    outs = [(np.empty(b0.P), np.ones(b0.P, dtype=np.bool_)) for _ in specs]
    rest = np.flatnonzero(~big)
    if len(rest):
        sub = b0.subset(rest) if len(rest) < b0.P else b0
        vals = np.empty((len(specs), sub.P))
        if _shared_key(specs[0])[0] == "transport":
            rhos = np.array([-1.0 if s.family == "ot" else 0.0 if s.params["rho"] == "adaptive"
                             else float(s.params["rho"]) for s in specs])
            sub.watched(K.transport_multi_pairs_stoppable, (*sub.args, sub.nmax, rhos, ZERO_COST_ATOL,
                                                             bool(specs[0].params["rescale"]), vals), _work(sub)[1])
        else:
            pen = [s.family == "hung_pen" for s in specs]
            modes = np.array(pen, dtype=np.int64)
            alphas = np.array([float(s.params["alpha"]) if p else 0.0 for s, p in zip(specs, pen)])
            clips = np.array([bool(s.params["clip"]) if p else False for s, p in zip(specs, pen)])
            sub.watched(K.hung_multi_pairs_stoppable, (*sub.args, sub.nmax, modes, alphas, clips, vals), _work(sub)[1])
        for q in range(len(specs)):
            outs[q][0][rest] = vals[q]
    if big.any():
        idx = np.flatnonzero(big)
        for q, b in enumerate(batches):
            outs[q][0][idx], outs[q][1][idx] = resolve(FAMILIES[b.spec.family].kernel)(b.subset(idx))
    return [b.finish(o, c) for b, (o, c) in zip(batches, outs)]


def _run_kernels(spec: DistanceSpec, G: np.ndarray | None, cand: PackedSets, bank: PackedSets, pk: np.ndarray,
                 pj: np.ndarray, grid: np.ndarray | None = None, solver: str = "cpu",
                 budget: "_Budget | None" = None) -> tuple[np.ndarray, np.ndarray]:
    """The family's registered kernel (:attr:`~sdrlib.distances.registry.Family.kernel`) on the pairs, range-checked."""
    budget = _Budget(None) if budget is None else budget
    if len(pk) == 0:
        return np.empty(0), np.ones(0, dtype=np.bool_)
    fam = FAMILIES[spec.family]
    b = PairBatch(spec, cand, bank, pk, pj, budget, G=G, grid=grid, solver=solver if fam.cuda else "cpu")
    return b.finish(*resolve(fam.kernel)(b))


def _run_presence(spec: DistanceSpec, cand: PackedSets, pc: np.ndarray, bank: PackedSets, pb: np.ndarray,
                  pk: np.ndarray, pj: np.ndarray, budget: "_Budget | None" = None) -> tuple[np.ndarray, np.ndarray]:
    """A setting that reads presence (``_neg``, or a ``presence="required"`` family) for the pairs (pk[p], pj[p]):
    the family's ``neg_kernel`` (``_neg``) or ``kernel``, single-threaded below :data:`_SERIAL_BELOW` pairs (as
    :func:`_run`); CPU only. Returns (values, converged)."""
    import numba

    if not len(pk):
        return np.empty(0), np.ones(0, dtype=np.bool_)
    fam = FAMILIES[spec.family]
    kernel = resolve(fam.neg_kernel if spec.negation_aware else fam.kernel)
    b = PairBatch(spec, cand, bank, pk, pj, _Budget(None) if budget is None else budget, presence=(pc, pb))
    threads = numba.get_num_threads()
    if len(pk) < _SERIAL_BELOW:
        numba.set_num_threads(1)
    try:
        return b.finish(*kernel(b))
    finally:
        numba.set_num_threads(threads)
