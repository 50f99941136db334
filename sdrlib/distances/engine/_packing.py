"""Packed sets, the engine's input format: :class:`PackedSets` and :func:`pack_sets`.

A call's sets are validated, normalised to unit rows and deduplicated once (identical vectors kept once,
:func:`unique_rows`; identical sets share a class, :meth:`PackedSets.classes`). Also here: the checks of
offsets, of a hand-built :class:`PackedSets` and of empty sets (``empty_value``), and
:func:`_representatives` (one set per class). Leaves out presence (the presence-aware packing is
:mod:`sdrlib.distances.engine._presence`) and every distance computation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, Union

import numpy as np

from sdrlib.distances.costs import _as_float_array, cosine_cost, rescale, unit_rows
from sdrlib.distances.errors import DistanceInputError, DistanceSpecError


@dataclass
class PackedSets:
    """N sets packed: set t is ``unique[index[offsets[t]:offsets[t+1]]]``.

    Attributes
    ----------
    unique : ndarray, shape (U, d), float64
        Distinct unit-norm vectors.
    index : ndarray, shape (S,), int64
        Row of ``unique`` for each of the S sentences.
    offsets : ndarray, shape (N + 1,), int64
    """

    unique: np.ndarray
    index: np.ndarray
    offsets: np.ndarray
    _intra: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False)  # cache of intra()
    _classes: np.ndarray | None = field(default=None, init=False, repr=False)  # cache of classes()
    _checked: bool = field(default=False, init=False, repr=False)  # passed _check_packed (or built by _trusted)

    @classmethod
    def _trusted(cls, unique: np.ndarray, index: np.ndarray, offsets: np.ndarray) -> "PackedSets":
        """Sets the engine packed itself (:func:`pack_sets`, the presence packing): valid by construction, so
        :func:`_check_packed` passes them without a look; a caller's hand-built ``PackedSets(...)`` is checked once."""
        ps = cls(unique, index, offsets)
        ps._checked = True
        return ps

    @property
    def n_sets(self) -> int:
        """N, the number of sets."""
        return len(self.offsets) - 1

    @property
    def sizes(self) -> np.ndarray:
        """(N,) int64: the number of sentences of each set."""
        return np.diff(self.offsets)

    @property
    def dim(self) -> int:
        """d, the embedding dimension."""
        return self.unique.shape[1]

    def set(self, t: int) -> np.ndarray:
        """Set t as an (n_t, d) array."""
        return self.unique[self.index[self.offsets[t]:self.offsets[t + 1]]]

    def subset(self, ids: np.ndarray) -> "PackedSets":
        """The sets ``ids`` (same unique table)."""
        ids = np.asarray(ids, dtype=np.int64)
        sizes = self.sizes[ids]
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        idx = np.concatenate([self.index[self.offsets[t]:self.offsets[t + 1]] for t in ids]) if len(ids) else \
            np.zeros(0, np.int64)
        return PackedSets(self.unique, idx.astype(np.int64), offs)

    def classes(self) -> np.ndarray:
        """Class id per set, shape (N,) int64: sets holding the same multiset of vectors share one id.

        Every registered distance depends on a set only through its multiset of rows
        (row order and the order of equal rows do not matter), so a distance computed for one
        member of a class holds for all of them. Ids are first-occurrence order (cached).
        """
        if self._classes is None:
            seen: dict[bytes, int] = {}
            ids = np.empty(self.n_sets, np.int64)
            for t in range(self.n_sets):
                key = np.sort(self.index[self.offsets[t]:self.offsets[t + 1]]).tobytes()
                ids[t] = seen.setdefault(key, len(seen))
            self._classes = ids
        return self._classes

    def intra(self) -> tuple[np.ndarray, np.ndarray]:
        """Flat per-set rescaled intra costs ``C`` of eq. (17) and their offsets (cached)."""
        if self._intra is None:
            sizes = self.sizes
            offs = np.concatenate([[0], np.cumsum(sizes.astype(np.int64) ** 2)]).astype(np.int64)
            flat = np.empty(int(offs[-1]))
            for t in range(self.n_sets):
                if sizes[t]:
                    X = self.set(t)
                    flat[offs[t]:offs[t + 1]] = rescale(cosine_cost(X, X)).ravel()
            self._intra = (flat, offs)
        return self._intra



SetsLike = Union[PackedSets, tuple, Sequence[np.ndarray]]


#: a hand-built PackedSets must have rows of unit norm to this tolerance (pack_sets gives ~1e-16)
_UNIT_ATOL = 1e-6


def _check_offsets(offsets: object, n_rows: int, name: str) -> np.ndarray:
    """Offsets as int64 after checking: integer dtype, 1-d, start 0, non-decreasing, end ``n_rows``.

    Float offsets are refused (not truncated): ``[0, 2.7, 5]`` is a bug upstream, not a set of 2 rows.
    """
    o = np.asarray(offsets)
    if o.dtype.kind not in "iu":
        raise DistanceInputError(f"{name}: offsets must have an integer dtype, got {o.dtype} "
                                 "(float offsets would be truncated silently)")
    if o.ndim != 1 or len(o) < 1:
        raise DistanceInputError(f"{name}: offsets must be 1-d with at least one entry, got shape {o.shape}")
    if o.dtype.kind == "u" and o.max() > np.iinfo(np.int64).max:
        raise DistanceInputError(f"{name}: offsets exceed int64")
    o = o.astype(np.int64)
    if o[0] != 0:
        raise DistanceInputError(f"{name}: offsets must start at 0, got {int(o[0])}")
    if np.any(np.diff(o) < 0):
        bad = int(np.flatnonzero(np.diff(o) < 0)[0])
        raise DistanceInputError(f"{name}: offsets must be non-decreasing, but offsets[{bad + 1}] < offsets[{bad}]")
    if o[-1] != n_rows:
        raise DistanceInputError(f"{name}: offsets must end at the number of rows {n_rows}, got {int(o[-1])}")
    return o


def _check_packed(ps: PackedSets, name: str) -> PackedSets:
    """Check a caller-built :class:`PackedSets` once (the kernels index without bounds checks)."""
    if ps._checked:
        return ps
    u = np.asarray(ps.unique)
    if u.ndim != 2 or u.shape[1] == 0 or u.dtype != np.float64:
        raise DistanceInputError(f"{name}: PackedSets.unique must be a float64 (U, d) array with d >= 1, "
                                 f"got {u.dtype} {u.shape}; build it with pack_sets")
    if not np.isfinite(u).all() or (len(u) and np.abs(np.linalg.norm(u, axis=1) - 1.0).max() > _UNIT_ATOL):
        raise DistanceInputError(f"{name}: PackedSets.unique must hold finite unit-norm rows; build it with pack_sets")
    idx = np.asarray(ps.index)
    if idx.ndim != 1 or idx.dtype.kind not in "iu" or (idx.size and (idx.min() < 0 or idx.max() >= len(u))):
        raise DistanceInputError(f"{name}: PackedSets.index must be 1-d integers in [0, {len(u)})")
    offs = _check_offsets(ps.offsets, len(idx), name)
    ps.unique = np.ascontiguousarray(u)
    ps.index = idx.astype(np.int64)
    ps.offsets = offs
    ps._checked = True
    return ps


#: columns sorted on before the rows are compared whole (:func:`unique_rows`)
_PREFIX_COLS = 4


def unique_rows(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(mat, axis=0, return_inverse=True)``, the same arrays, without its structured-dtype sort.

    ``mat``: finite (S, d) float64, S >= 1. numpy sorts the rows as records of d float fields (about 1 us
    per comparison at d = 768: ~30 ms for two 500-sentence sets, more than POT's whole solve of the pair).
    Here a stable :func:`numpy.lexsort` on the first :data:`_PREFIX_COLS` columns orders them; adjacent rows
    are then compared whole. Rows that agree on those columns are either equal (duplicates: the first in
    input order is kept, as numpy's stable sort keeps it) or, rarely, differ further on, when the
    lexicographic order needs every column, or agree as floats but not as bits (0.0 against -0.0, where numpy's
    unstable sort picks the representative): then this falls back to ``np.unique`` itself. Either way the
    result is numpy's, bit for bit (the tests compare them), so every downstream float is unchanged.
    Returns ``(unique (U, d), index (S,) int64)``.
    """
    k = min(_PREFIX_COLS, mat.shape[1])
    order = np.lexsort(mat[:, k - 1::-1].T)  # lexsort's last key is the primary one: column 0 first
    srt = mat[order]
    same_prefix = (srt[1:, :k] == srt[:-1, :k]).all(axis=1)
    if same_prefix.any():
        bits = srt.view(np.uint64)  # equal bits, not equal floats: 0.0 and -0.0 send this to numpy's own sort
        whole = (bits[1:][same_prefix] == bits[:-1][same_prefix]).all(axis=1)
        if not whole.all():
            unique, index = np.unique(mat, axis=0, return_inverse=True)
            return unique, index.reshape(-1).astype(np.int64)
    new = np.concatenate([[True], ~same_prefix])
    index = np.empty(len(mat), np.int64)
    index[order] = np.cumsum(new) - 1
    return srt[new], index


def _packed_form(sets: object) -> bool:
    """Whether a tuple is the ``(matrix, offsets)`` form rather than two sets. It is two sets only when its second
    item is a float vector as long as the matrix is wide (a sentence embedding, as in ``(A, B[0])``) that does not
    read as offsets (whole numbers from 0 to the matrix's row count, non-decreasing); anything else 1-D is offsets,
    checked (and float offsets refused) by :func:`_check_offsets`."""
    if not (isinstance(sets, tuple) and len(sets) == 2 and not isinstance(sets[0], (list, tuple))
            and np.ndim(sets[1]) == 1 and np.ndim(sets[0]) == 2):
        return False
    v = np.asarray(sets[1])
    n_rows, width = np.shape(sets[0])
    if v.dtype.kind != "f" or v.size != width:
        return True
    offsets_like = bool(np.all(np.isfinite(v)) and np.all(v == np.round(v)) and v[0] == 0 and v[-1] == n_rows
                        and np.all(np.diff(v) >= 0))
    return offsets_like


def pack_sets(sets: SetsLike, name: str = "sets", dim: int | None = None) -> PackedSets:
    """Validate, normalise and deduplicate sets into :class:`PackedSets`.

    Accepts a :class:`PackedSets` (returned as is), a ``(matrix, offsets)`` tuple
    (e.g. ``(bank.matrix("findings"), bank.offsets("findings"))``; a tuple whose second item is a float vector
    that does not read as offsets is two sets, :func:`_packed_form`) or a sequence of
    (n_t, d) arrays. Empty sets are allowed here (a report without an Impression)
    and rejected later unless the caller passes ``empty_value``. Offsets must have an
    integer dtype, start at 0, be non-decreasing and end at the number of rows (float
    offsets are refused, not truncated); a hand-built PackedSets is checked once
    (unit-norm finite rows, index in range, valid offsets). Any violation raises
    :class:`DistanceInputError` naming it.

    Example: ``pack_sets([np.eye(3)[:2], np.eye(3)[1:]]).unique.shape -> (3, 3)``.
    """
    if isinstance(sets, PackedSets):
        sets = _check_packed(sets, name)
        if dim is not None and sets.dim != dim:
            raise DistanceInputError(f"{name}: dimension {sets.dim}, expected {dim}")
        return sets
    if _packed_form(sets):
        mat = _as_float_array(sets[0], f"{name} matrix")
        offs = _check_offsets(sets[1], len(mat), name)
        if mat.shape[1] == 0:
            raise DistanceInputError(f"{name}: matrix has dimension 0")
    else:
        try:
            items = list(sets)
        except TypeError:
            raise DistanceInputError(f"{name}: expected PackedSets, (matrix, offsets) or a sequence of (n, d) "
                                     f"arrays, got {type(sets).__name__}") from None
        arrs = []
        for t, s in enumerate(items):
            a = _as_float_array(s, f"{name}[{t}]")
            if a.ndim == 1 and a.size:
                a = a[None, :]
            if a.ndim == 2 and a.shape[0] and a.shape[1] == 0:
                raise DistanceInputError(f"{name}[{t}] has dimension 0")
            if a.size == 0:
                a = a.reshape(0, dim if dim is not None else (a.shape[-1] if a.ndim == 2 else 0))
            if a.ndim != 2:
                raise DistanceInputError(f"{name}[{t}] must have shape (n, d), got {a.shape}")
            arrs.append(a)
        if not arrs:
            raise DistanceInputError(f"{name}: no sets given")
        d0 = dim if dim is not None else next((a.shape[1] for a in arrs if a.shape[0]), arrs[0].shape[1])
        for t, a in enumerate(arrs):
            if a.shape[0] and a.shape[1] != d0:
                raise DistanceInputError(f"{name}[{t}] has dimension {a.shape[1]}, expected {d0}")
        sizes = np.array([a.shape[0] for a in arrs], dtype=np.int64)
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        mat = np.concatenate([a for a in arrs if a.shape[0]] or [np.zeros((0, d0))], axis=0)
    if mat.ndim != 2 or (dim is not None and mat.shape[0] and mat.shape[1] != dim):
        raise DistanceInputError(f"{name}: matrix of shape {mat.shape} does not match dimension {dim}")
    if not np.isfinite(mat).all():
        bad = np.flatnonzero(~np.isfinite(mat).all(axis=1))
        raise DistanceInputError(f"{name}: rows {bad[:5].tolist()} contain NaN or inf")
    if len(mat):
        mat = unit_rows(mat, name)  # scale-safe: 1e300 rows give the same unit rows as unit ones
        unique, index = unique_rows(mat)
    else:
        unique, index = mat, np.zeros(0, np.int64)
    return PackedSets._trusted(np.ascontiguousarray(unique), index.reshape(-1).astype(np.int64), offs)


def _representatives(classes: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One id per distinct class (first occurrence) and, per input id, the position of its representative."""
    _, first, inv = np.unique(classes, return_index=True, return_inverse=True)
    return ids[first].astype(np.int64), inv.reshape(-1).astype(np.int64)


def _check_empty_value(empty_value: object) -> None:
    """``empty_value`` must be None or a finite number in [0, 1] (it stands in for a distance)."""
    if empty_value is None:
        return
    ok = isinstance(empty_value, (int, float, np.integer, np.floating)) \
        and not isinstance(empty_value, (bool, np.bool_))
    if not ok or not (0.0 <= float(empty_value) <= 1.0):
        raise DistanceSpecError(f"empty_value must be None or a number in [0, 1], got {empty_value!r}")


def _check_empty(ps: PackedSets, name: str, empty_value: float | None) -> np.ndarray:
    """(N,) bool: the empty sets of ``ps``; :class:`DistanceInputError` if any without ``empty_value``."""
    empty = ps.sizes == 0
    if empty.any() and empty_value is None:
        raise DistanceInputError(f"{name}: sets {np.flatnonzero(empty)[:5].tolist()} are empty; distances are "
                                 "defined for non-empty sets (pass empty_value=1.0 to score them as maximally far)")
    return empty
