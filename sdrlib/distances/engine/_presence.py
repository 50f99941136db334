"""The presence path's inputs: sets packed on (vector, presence) (:func:`_pack_presence`), the cosine block capped
at contradicting pairs (:func:`_capped_cosines`) and the observation bit masks per row and per set
(:func:`_masks`) that the negation-aware driver and ``chamfer_recall``'s kernel read. Leaves out the cost's
definition (:mod:`sdrlib.distances.negation`) and the kernels (:mod:`sdrlib.distances.engine._families`).
"""

from __future__ import annotations

import numpy as np

from sdrlib.distances.engine._device import _cosines
from sdrlib.distances.engine._packing import PackedSets, SetsLike, pack_sets
from sdrlib.distances.errors import DistanceInputError
from sdrlib.distances.negation import PRESENCE_WIDTH, check_presence, contradiction_matrix, coverage


def _pack_presence(sets: SetsLike, presence: object, name: str, dim: int | None = None
                   ) -> tuple[PackedSets, np.ndarray]:
    """Pack sets, then split unique rows by presence: returns (PackedSets, (U, 14) int8 presence).

    ``presence``: a list of (n_t, 14) arrays (one per set, rows as in the set) or one stacked (S, 14) array
    (rows as the packed sentences). Sets are deduplicated on (vector, presence): the contradiction is a
    property of the sentence, not of its vector. A :class:`PackedSets` keeps each set's sentence order
    (``index``), so its presence rows line up as for a list.
    """
    ps = pack_sets(sets, name, dim=dim)
    sizes = ps.sizes
    if isinstance(presence, np.ndarray) and presence.ndim == 2:
        P = check_presence(presence, int(sizes.sum()), f"{name} presence")  # stacked like the matrix
    else:
        try:
            plist = list(presence)
        except TypeError:
            raise DistanceInputError(f"{name}: presence must be a list of (n_t, 14) arrays or one stacked "
                                     "(S, 14) array") from None
        if len(plist) != ps.n_sets:
            raise DistanceInputError(f"{name}: {ps.n_sets} sets but {len(plist)} presence arrays")
        P = np.concatenate([check_presence(p, int(n), f"{name} presence[{t}]") for t, (p, n)
                            in enumerate(zip(plist, sizes))] or [np.zeros((0, PRESENCE_WIDTH), np.int8)])
    key = np.concatenate([ps.index[:, None], P.astype(np.int64)], axis=1)
    if len(key):
        ukey, inv = np.unique(key, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
    else:
        ukey, inv = np.zeros((0, 1 + PRESENCE_WIDTH), np.int64), np.zeros(0, np.int64)
    unique = np.ascontiguousarray(ps.unique[ukey[:, 0]]) if len(ukey) else ps.unique[:0]
    return PackedSets._trusted(unique, inv.astype(np.int64), ps.offsets), \
        np.ascontiguousarray(ukey[:, 1:].astype(np.int8))


def _capped_cosines(bank: PackedSets, pb: np.ndarray, cand: PackedSets, pc: np.ndarray, c: float) -> np.ndarray:
    """(U_bank, U_cand) cosines with contradicted pairs capped: ``cost(g') = max(M, c X)``."""
    G = _cosines(bank.unique, cand.unique, "cpu")
    X = contradiction_matrix(pb, pc)
    return np.ascontiguousarray(np.minimum(G, 1.0 - 2.0 * c * X))


def _bits(flags: np.ndarray) -> np.ndarray:
    """(..., W) bool as int64 bit masks (bit k = column k; W <= 63)."""
    bits = np.int64(1) << np.arange(PRESENCE_WIDTH, dtype=np.int64)
    return (flags.astype(np.int64) * bits).sum(axis=-1).astype(np.int64)


def _masks(ps: PackedSets, presence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slot bit masks (:mod:`sdrlib.distances.negation`): per unique row (U, 2) (positive, negative) and per set
    (S, 4) (positive, negative, covered, filled: :func:`~sdrlib.distances.negation.coverage` of the set's
    positives), int64."""
    row = np.ascontiguousarray(np.stack([_bits(presence > 0), _bits(presence < 0)], axis=1).astype(np.int64))
    per_sentence = presence[ps.index] if len(ps.index) else np.zeros((0, PRESENCE_WIDTH), np.int8)
    pos = np.zeros((ps.n_sets, PRESENCE_WIDTH), bool)
    neg = np.zeros((ps.n_sets, PRESENCE_WIDTH), bool)
    nonempty = np.flatnonzero(ps.sizes > 0)
    if len(nonempty):
        pos[nonempty] = np.logical_or.reduceat(per_sentence > 0, ps.offsets[:-1][nonempty], axis=0)
        neg[nonempty] = np.logical_or.reduceat(per_sentence < 0, ps.offsets[:-1][nonempty], axis=0)
    cov, fill = coverage(pos)
    sets = np.stack([_bits(pos), _bits(neg), _bits(cov), _bits(fill)], axis=1)
    return row, np.ascontiguousarray(sets.astype(np.int64))
