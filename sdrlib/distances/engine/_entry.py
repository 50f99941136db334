"""The engine's entry points: :func:`pairwise_distances` (K x N), :func:`pairwise_distances_many` (several settings,
one packing and cosine product) and :func:`paired_distances` (zipped pairs), with their option checks and the
plain / presence split of a call's settings. Leaves out how pairs are solved (:mod:`sdrlib.distances.engine._dispatch`).
"""

from __future__ import annotations

from typing import Literal, Sequence, overload

import numpy as np

from sdrlib.distances.engine._budget import _Budget, _check_budget
from sdrlib.distances.engine._device import _pick_solver, _resolve_device
from sdrlib.distances.engine._dispatch import _run, _run_presence
from sdrlib.distances.engine._packing import (
    PackedSets,
    SetsLike,
    _check_empty,
    _check_empty_value,
    _representatives,
    pack_sets,
)
from sdrlib.distances.engine._presence import _pack_presence
from sdrlib.distances.errors import DistanceInputError, DistanceSpecError
from sdrlib.distances.negation import presence_pair
from sdrlib.distances.registry import DistanceSpec, get
from sdrlib.distances.registry.per_pair import check_mode, handle_nonconvergence


#: upper bound on the cosine block held at once (float64 entries): 64 MiB
_MAX_BLOCK = 8 * 1024 * 1024


@overload
def pairwise_distances(cands: SetsLike, bank: SetsLike, name: "str | DistanceSpec", *, presence: "tuple | None" = ...,
                       device: str = ..., on_nonconvergence: str = ..., empty_value: float | None = ...,
                       return_converged: Literal[False] = ..., time_budget_s: float | None = ...) -> np.ndarray: ...
@overload
def pairwise_distances(cands: SetsLike, bank: SetsLike, name: "str | DistanceSpec", *, presence: "tuple | None" = ...,
                       device: str = ..., on_nonconvergence: str = ..., empty_value: float | None = ...,
                       return_converged: Literal[True], time_budget_s: float | None = ...
                       ) -> tuple[np.ndarray, np.ndarray]: ...


def pairwise_distances(cands: SetsLike, bank: SetsLike, name: "str | DistanceSpec", *, presence: "tuple | None" = None,
                       device: str = "cpu", on_nonconvergence: str = "warn", empty_value: float | None = None,
                       return_converged: bool = False, time_budget_s: float | None = None
                       ) -> "np.ndarray | tuple[np.ndarray, np.ndarray]":
    """All distances between K candidate sets and N bank sets: a (K, N) float64 matrix
    (``(values, converged)``, two (K, N) arrays, with ``return_converged=True``).

    Parameters
    ----------
    cands, bank : PackedSets, (matrix, offsets) or sequence of (n_t, d) arrays
        Pack the bank once with :func:`pack_sets` to reuse its deduplication across calls.
    name : str or DistanceSpec
        Setting (see :func:`sdrlib.distances.get`).
    presence : pair (cand_presence, bank_presence), optional
        Per-sentence presence of both sides (:func:`sdrlib.clinical.section_presence`): per side a list of
        (n_t, 14) arrays, one per set in the set's row order, or one stacked (S, 14) array. Required by a
        negation-aware setting (``chamfer_neg``; :mod:`sdrlib.distances.negation`), which then runs on the
        CPU whatever ``device`` says; ignored by plain settings. Missing: :class:`DistanceSpecError`.
    device : {"cpu", "cuda", "cuda:i", "auto"}
        Where the cosine matrix product and the Sinkhorn / UOT / GW solvers run (the other
        solvers run on the CPU); see :mod:`sdrlib.distances.engine` for what happens without a usable GPU.
    on_nonconvergence : {"warn", "raise", "ignore"}
        Reaction to iterative solvers stopping at ``max_iter``.
    empty_value : float in [0, 1], optional
        Value for pairs with an empty set; by default empty sets raise.
    return_converged : bool
        Also return the (K, N) boolean convergence flags.
    time_budget_s : float, optional
        Seconds the call may take; past them the solve is stopped and
        :class:`~sdrlib.distances.errors.DistanceTimeoutError` raised (checked inside the Sinkhorn /
        UOT / GW solvers, between calls of the others; see :mod:`sdrlib.distances.engine`). Ctrl-C stops a
        long solve either way.

    Example: ``pairwise_distances([A1, A2], [B1, B2, B3], "chamfer").shape -> (2, 3)``.
    """
    spec = get(name)
    res = pairwise_distances_many(cands, bank, [spec], presence=presence, device=device,
                                  on_nonconvergence=on_nonconvergence,
                                  empty_value=empty_value, return_converged=True,
                                  time_budget_s=time_budget_s)[spec.name]
    return res if return_converged else res[0]


def pairwise_distances_many(cands: SetsLike, bank: SetsLike, names: "Sequence[str | DistanceSpec]", *,
                            presence: "tuple | None" = None, device: str = "cpu", on_nonconvergence: str = "warn",
                            empty_value: float | None = None, return_converged: bool = False,
                            time_budget_s: float | None = None) -> dict:
    """:func:`pairwise_distances` for several settings, sharing packing and the cosine product.

    Returns ``{spec.name: (K, N) array}`` (or ``(array, converged)`` pairs with ``return_converged``),
    in the order of ``names``. ``time_budget_s`` covers the whole call (every setting). ``presence`` as in
    :func:`pairwise_distances`: plain and negation-aware settings may be mixed in one call; the plain ones
    share one packing and cosine product (in memory-bounded candidate chunks), the negation-aware ones one
    presence-aware packing of all candidate sets.
    Example: ``pairwise_distances_many(cands, bank, ["chamfer", "ot"])["ot"].shape -> (K, N)``.
    """
    if isinstance(names, (str, DistanceSpec)):
        raise DistanceSpecError("names must be a sequence of settings; for one setting use pairwise_distances")
    specs = [get(n) for n in names]
    neg = [s for s in specs if s.needs_presence]
    plain = [s for s in specs if not s.needs_presence]
    if neg:
        presence_pair(presence, neg[0].name)
    check_mode(on_nonconvergence)
    _check_empty_value(empty_value)
    budget = _Budget(_check_budget(time_budget_s))
    outs = {}
    if plain or not neg:
        dev = _resolve_device(device)
        solver = _pick_solver(device, dev, plain)
        outs.update(_pairwise_plain(cands, bank, plain, dev, solver, empty_value, budget))
    if neg:
        outs.update(_pairwise_negation(cands, bank, neg, presence, empty_value, budget))
    outs = {s.name: outs[s.name] for s in specs}
    for spec in specs:
        conv = outs[spec.name][1]
        handle_nonconvergence(spec, int((~conv).sum()), conv.size, on_nonconvergence)
    return outs if return_converged else {k: v[0] for k, v in outs.items()}


def _pairwise_plain(cands: SetsLike, bank: SetsLike, specs: Sequence[DistanceSpec], dev: str, solver: str,
                    empty_value: float | None, budget: "_Budget") -> dict:
    """``{name: ((K, N) values, (K, N) converged)}`` of plain settings: one packing, candidates in chunks whose
    cosine block stays below :data:`_MAX_BLOCK` entries, one cosine product per chunk for all settings."""
    cp = pack_sets(cands, "cands")
    bp = pack_sets(bank, "bank", dim=cp.dim)
    Kc, N = cp.n_sets, bp.n_sets
    e_c = _check_empty(cp, "cands", empty_value)
    e_b = _check_empty(bp, "bank", empty_value)
    fill = np.nan if empty_value is None else float(empty_value)
    outs = {s.name: (np.full((Kc, N), fill), np.ones((Kc, N), dtype=bool)) for s in specs}
    # identical sets (same multiset of vectors; radiology banks repeat whole reports) are computed once:
    # kk / jj are one representative per class of the non-empty sets, kinv / jinv map every set to it
    kk_all, jj_all = np.flatnonzero(~e_c), np.flatnonzero(~e_b)
    kk, kinv = _representatives(cp.classes()[kk_all], kk_all)
    jj, jinv = _representatives(bp.classes()[jj_all], jj_all)
    if len(kk) and len(jj) and specs:
        res = {s.name: (np.empty((len(kk), len(jj))), np.ones((len(kk), len(jj)), dtype=bool)) for s in specs}
        # chunk the candidates so that one cosine block stays below _MAX_BLOCK entries
        per_set = max(1.0, cp.sizes[kk].mean())
        step = max(1, int(_MAX_BLOCK // max(1, len(bp.unique)) / per_set))
        for s in range(0, len(kk), step):
            ks = kk[s:s + step]
            sub = cp.subset(ks) if len(ks) != Kc else cp
            used = np.unique(sub.index)
            sub = PackedSets(sub.unique[used], np.searchsorted(used, sub.index).astype(np.int64), sub.offsets)
            # bank-major order: consecutive pairs share a bank set, whose cosine rows stay in cache
            pj = np.repeat(jj.astype(np.int64), len(ks))
            pk = np.tile(np.arange(len(ks), dtype=np.int64), len(jj))
            for spec, (vals, ok) in zip(specs, _run(specs, sub, bp, pk, pj, dev, grid=jj.astype(np.int64),
                                                         solver=solver, budget=budget)):
                res[spec.name][0][s:s + len(ks)] = vals.reshape(len(jj), len(ks)).T
                res[spec.name][1][s:s + len(ks)] = ok.reshape(len(jj), len(ks)).T
        for spec in specs:
            out, conv = outs[spec.name]
            out[np.ix_(kk_all, jj_all)] = res[spec.name][0][np.ix_(kinv, jinv)]
            conv[np.ix_(kk_all, jj_all)] = res[spec.name][1][np.ix_(kinv, jinv)]
    return outs


def _pairwise_negation(cands: SetsLike, bank: SetsLike, specs: Sequence[DistanceSpec], presence: object,
                       empty_value: float | None, budget: "_Budget") -> dict:
    """``{name: ((K, N) values, (K, N) converged)}`` of negation-aware settings, all candidate sets at once
    (one presence-aware packing shared by the settings; identical (vector, presence) multisets computed once)."""
    c_pres, b_pres = presence_pair(presence, specs[0].name)
    cp, pc = _pack_presence(cands, c_pres, "cands")
    bp, pb = _pack_presence(bank, b_pres, "bank", dim=cp.dim)
    e_c, e_b = _check_empty(cp, "cands", empty_value), _check_empty(bp, "bank", empty_value)
    kk_all, jj_all = np.flatnonzero(~e_c), np.flatnonzero(~e_b)
    kk, kinv = _representatives(cp.classes()[kk_all], kk_all)
    jj, jinv = _representatives(bp.classes()[jj_all], jj_all)
    outs = {}
    for spec in specs:
        budget.check(spec.name)
        out = np.full((cp.n_sets, bp.n_sets), np.nan if empty_value is None else float(empty_value))
        conv = np.ones_like(out, dtype=bool)
        if len(kk) and len(jj):
            pj = np.repeat(jj.astype(np.int64), len(kk))
            pk = np.tile(kk.astype(np.int64), len(jj))
            vals, ok = _run_presence(spec, cp, pc, bp, pb, pk, pj, budget)
            out[np.ix_(kk_all, jj_all)] = vals.reshape(len(jj), len(kk)).T[np.ix_(kinv, jinv)]
            conv[np.ix_(kk_all, jj_all)] = ok.reshape(len(jj), len(kk)).T[np.ix_(kinv, jinv)]
        outs[spec.name] = (out, conv)
    return outs


def paired_distances(A_sets: SetsLike, B_sets: SetsLike, name: "str | DistanceSpec", *,
                     presence: "tuple | None" = None, device: str = "cpu", on_nonconvergence: str = "warn",
                     empty_value: float | None = None, time_budget_s: float | None = None) -> np.ndarray:
    """``D(A_sets[k], B_sets[k])`` for each k (the GRPO reward case): shape (K,).

    ``presence=(A_presence, B_presence)``, ``time_budget_s`` as in :func:`pairwise_distances` (a
    negation-aware setting needs presence and runs on the CPU; a plain one ignores it).
    Example: ``paired_distances([A1, A2], [B1, B2], "ot").shape -> (2,)``;
    ``paired_distances(A, B, "chamfer_neg", presence=(section_presence(gen), section_presence(ref)))``.
    """
    spec = get(name)
    if spec.needs_presence:
        a_pres, b_pres = presence_pair(presence, spec.name)
    check_mode(on_nonconvergence)
    _check_empty_value(empty_value)
    budget = _Budget(_check_budget(time_budget_s))
    if spec.needs_presence:
        ap, pa = _pack_presence(A_sets, a_pres, "A_sets")
        bp, pb = _pack_presence(B_sets, b_pres, "B_sets", dim=ap.dim)
    else:
        ap = pack_sets(A_sets, "A_sets")
        bp = pack_sets(B_sets, "B_sets", dim=ap.dim)
    if ap.n_sets != bp.n_sets:
        raise DistanceInputError(f"A_sets has {ap.n_sets} sets, B_sets {bp.n_sets}: paired distances need equal counts")
    e = _check_empty(ap, "A_sets", empty_value) | _check_empty(bp, "B_sets", empty_value)
    out = np.full(ap.n_sets, np.nan if empty_value is None else float(empty_value))
    idx = np.flatnonzero(~e).astype(np.int64)
    # repeated pairs (a group's identical rollouts against one reference) are computed once
    keys = np.stack([ap.classes()[idx], bp.classes()[idx]], axis=1)
    _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    rep = idx[first]
    if spec.needs_presence:
        budget.check(spec.name)
        vals, ok = _run_presence(spec, ap, pa, bp, pb, rep, rep, budget)
    else:
        dev = _resolve_device(device)
        vals, ok = _run([spec], ap, bp, rep, rep, dev, solver=_pick_solver(device, dev, [spec]), budget=budget)[0]
    inv = inv.reshape(-1)
    out[idx] = vals[inv]
    handle_nonconvergence(spec, int((~ok[inv]).sum()), len(idx), on_nonconvergence)
    return out
