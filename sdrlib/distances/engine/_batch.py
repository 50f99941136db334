"""The family kernels' interface: :class:`PairBatch`, the pairs of one setting with everything a kernel reads
(cosine block, packed sets, presence, solver, budget) and the engine's range check of what it returns
(:meth:`PairBatch.finish`). Leaves out the kernels (:mod:`sdrlib.distances.engine._families`) and how batches are
made (:mod:`sdrlib.distances.engine._dispatch`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from sdrlib.distances.costs import check_range, cosine_cost
from sdrlib.distances.engine._budget import _Budget, _watched
from sdrlib.distances.engine._packing import PackedSets
from sdrlib.distances.engine._presence import _capped_cosines, _masks
from sdrlib.distances.errors import DistanceSpecError
from sdrlib.distances.negation import negation_cost, unique_sentences
from sdrlib.distances.registry import DistanceSpec


@dataclass
class PairBatch:
    """What a family's engine kernel gets: the P pairs (candidate set ``pk[p]``, bank set ``pj[p]``) of one setting.

    A kernel (:attr:`sdrlib.distances.registry.Family.kernel` / ``neg_kernel``) is ``kernel(batch) -> (values
    (P,), converged (P,) bool)``; the engine range-checks the values (:meth:`finish`). Candidates are the first
    argument of a distance (the generated side of an asymmetric family), the bank the second.

    Attributes: ``spec`` (the setting: ``spec.params``, ``spec.contradiction``); ``cand`` / ``bank``
    (:class:`PackedSets`: unique unit rows, per-set row indices and offsets); ``pk`` / ``pj`` (P,) int64 set ids;
    ``G`` the (U_bank, U_cand) cosines of the unique rows on the plain path (None for a family that does not
    read them, and on the presence path); ``grid`` bank set ids when the pairs are the full bank-major grid
    (``pj = repeat(grid, K)``), else None; ``solver`` ``"cpu"`` or the CUDA device of a ``cuda`` family;
    ``presence`` ``(P_cand, P_bank)``, (U, 14) int8 presence of the unique rows, on the presence path
    (``_neg`` settings, families with ``presence="required"``), else None.

    A kernel in Python can simply loop: ``for p in range(batch.P): M = batch.cost_block(p)`` (the pair's cost:
    the cosine cost of eq. 11, or ``M'`` of :mod:`sdrlib.distances.negation` on the presence path of a ``_neg``
    setting); :meth:`check_time` lets Ctrl-C and the caller's budget through between pairs. The built-in
    kernels run numba over all pairs (:meth:`watched` makes such a kernel stoppable).
    """

    spec: DistanceSpec
    cand: PackedSets
    bank: PackedSets
    pk: np.ndarray
    pj: np.ndarray
    budget: _Budget
    G: "np.ndarray | None" = None
    grid: "np.ndarray | None" = None
    solver: str = "cpu"
    presence: "tuple[np.ndarray, np.ndarray] | None" = None

    @property
    def P(self) -> int:
        """The number of pairs."""
        return len(self.pk)

    @property
    def sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """(n (P,), m (P,)): the sentence counts of each pair's candidate and bank set."""
        return self.cand.sizes[self.pk], self.bank.sizes[self.pj]

    @property
    def nmax(self) -> int:
        """The largest set of any pair (the kernels' scratch size)."""
        n, m = self.sizes
        return int(max(n.max(), m.max()))

    @property
    def args(self) -> tuple:
        """The arguments every built-in kernel starts with: ``(G, ci, co, bi, bo, pk, pj)``."""
        return (self.G, self.cand.index, self.cand.offsets, self.bank.index, self.bank.offsets, self.pk, self.pj)

    def subset(self, idx: np.ndarray) -> "PairBatch":
        """The pairs ``idx`` only (no longer a grid)."""
        return PairBatch(self.spec, self.cand, self.bank, self.pk[idx], self.pj[idx], self.budget, self.G, None,
                         self.solver, self.presence)

    def rows(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """The unit-row sets ``(A (n, d), B (m, d))`` of pair ``p``, sentences in the sets' order."""
        c, b = self.cand, self.bank
        k, j = self.pk[p], self.pj[p]
        return c.unique[c.index[c.offsets[k]:c.offsets[k + 1]]], b.unique[b.index[b.offsets[j]:b.offsets[j + 1]]]

    def pair_presence(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """``(P_A (n, 14), P_B (m, 14))`` of pair ``p`` (presence path only)."""
        if self.presence is None:
            raise DistanceSpecError(f"{self.spec.name}: no presence on this path")
        c, b = self.cand, self.bank
        k, j = self.pk[p], self.pj[p]
        return (self.presence[0][c.index[c.offsets[k]:c.offsets[k + 1]]],
                self.presence[1][b.index[b.offsets[j]:b.offsets[j + 1]]])

    def cost_block(self, p: int) -> np.ndarray:
        """Pair ``p``'s cost (n, m): ``clip(0.5 (1 - cos), 0, 1)``, or with ``spec.contradiction > 0`` the
        negation-aware ``M'`` (:func:`sdrlib.distances.negation.negation_cost`) of each set's distinct sentences
        ((n', m'), a sentence repeated verbatim once: :func:`~sdrlib.distances.negation.unique_sentences`)."""
        A, B = self.rows(p)
        if self.spec.negation_aware:
            PA, PB = self.pair_presence(p)
            (A, PA), (B, PB) = unique_sentences(A, PA), unique_sentences(B, PB)
            return negation_cost(A, B, PA, PB, self.spec.contradiction)
        return cosine_cost(A, B)

    def capped_cosines(self, c: float) -> np.ndarray:
        """(U_bank, U_cand) cosines with contradicted pairs capped, ``cost = max(M, c X)`` (presence path)."""
        return _capped_cosines(self.bank, self.presence[1], self.cand, self.presence[0], c)

    def masks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(crow, brow, cset, bset)``: (positive, negative) observation bit masks per unique row and per set."""
        crow, cset = _masks(self.cand, self.presence[0])
        brow, bset = _masks(self.bank, self.presence[1])
        return crow, brow, cset, bset

    def watched(self, kernel: Callable, args: tuple, work: float = np.inf) -> None:
        """Run a ``*_stoppable`` numba kernel ``kernel(*args, stop)`` so that Ctrl-C and the budget stop it."""
        _watched(kernel, args, self.budget, self.spec.name, work)

    def check_time(self) -> None:
        """Raise :class:`DistanceTimeoutError` once the caller's budget is spent."""
        self.budget.check(self.spec.name)

    def finish(self, out: np.ndarray, conv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The kernel's values range-checked (:func:`sdrlib.distances.costs.check_range`) and its flags; a
        negation-aware setting's values first clipped to its upper end (its floors count wrong findings and may
        take a family's value above 1, as :meth:`DistanceSpec.reference` clips it)."""
        out = np.asarray(out, dtype=np.float64)
        conv = np.asarray(conv, dtype=np.bool_)
        if out.shape != (self.P,) or conv.shape != (self.P,):
            raise DistanceSpecError(f"{self.spec.name}: the family's kernel returned shapes {out.shape} / "
                                    f"{conv.shape} for {self.P} pairs")
        if self.spec.negation_aware and self.spec.upper is not None:
            # more wrong findings than the scale holds: the top (sdrlib.distances.negation, "Scale"); NaN stays
            out = np.minimum(out, self.spec.upper)
        return check_range(out, self.spec.name, self.spec.upper), conv
