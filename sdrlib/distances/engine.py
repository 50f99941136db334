"""Batched engine: distances between many candidate sets and many reference sets at once.

Input sets are *packed*: one float matrix of all sentences plus offsets, the
format of ``ReportBank.matrix(section)`` / ``.offsets(section)``. Work per call:

1. rows are validated and normalised (as in the reference) and deduplicated:
   identical vectors (repeated sentences: ~2.8 per unique one in IU-Xray) are kept once,
   and identical sets (the same multiset of vectors: repeated normal reports, a GRPO
   group's identical rollouts) are computed once;
2. one matrix product gives the cosines between all unique candidate and all unique
   bank vectors (numpy, or torch on ``device="cuda"``);
3. a compiled (numba) kernel per family reduces every pair's block to its distance,
   in parallel over pairs (see :mod:`sdrlib.distances._kernels`); a *large* exact-OT, partial-OT, UOT or
   Hungarian pair (``n * m`` past a measured crossover, :data:`sdrlib.distances._large.POT_MIN_NM`: 32 x 32
   for OT on unequal sets up to 256 x 256 for Hungarian; report sets never reach them) goes to the
   reference's own POT / SciPy call on the same cost block instead, where a single pair is faster
   (:mod:`sdrlib.distances._large`; ``benchmarks/bench_large_pairs.py``).

Every family is computed exactly as the reference computes it (same definitions,
same iterative updates and stopping rules); the tests check agreement to 1e-5
(observed: ~1e-14). :func:`pairwise_distances_many` shares steps 1-2 between settings, and step 3 where
settings solve the same problem per pair: exact OT and the partial OT masses run one successive-shortest-paths
solve per pair (a smaller mass's run is a prefix of a larger one's), the Hungarian variants one assignment
(:func:`_shared_groups`); each value is bit for bit the one its setting computes alone (tested), so a call's
settings do not change each other's values. :func:`paired_distances` scores zipped pairs (the GRPO reward).

**Presence.** Every entry point takes ``presence=(P_A, P_B)`` (per-sentence presence arrays,
:func:`sdrlib.clinical.section_presence`). Negation-aware settings (``chamfer_neg``; the cost of
:mod:`sdrlib.distances.negation`) require it and run on the CPU: sets are deduplicated on (vector,
presence), the cosine block is capped at contradicting pairs and one driver (``_kernels.neg_pairs``)
adds the sentence floors and runs the family's own solver. A family whose cost reads presence itself
(``chamfer_recall_<alpha>``, asymmetric: the candidates are the generated sets) takes the same path with its own
kernel (``_kernels.recall_pairs``). Plain settings ignore ``presence``, so one
:func:`pairwise_distances_many` call may mix both kinds.

**Families are registrations.** Each family's kernel is named by its :class:`~sdrlib.distances.registry.Family`
(``kernel``, ``neg_kernel``) and called with a :class:`PairBatch`; the built-in ones are the ``*_kernel`` functions
below, which run the numba kernels of :mod:`sdrlib.distances._kernels` (and route large pairs to :mod:`._large`).

Every value is range-checked as in the reference (:func:`sdrlib.distances.costs.check_range`):
round-off outside [0, 1] is clipped, NaN / inf or a real excursion raises
:class:`~sdrlib.distances.errors.DistanceRangeError` for the whole call.

**Long solves can be stopped.** numba's compiled loops do not look at signals, so a Sinkhorn / UOT /
GW solve on large sets used to ignore Ctrl-C and any timer until it finished (GW on two 2,000-sentence
sets: minutes; ``partial_adaptive`` on one 2,000 x 2,000 pair: ~57 s, issue 36). Every CPU family (the iterative ones
and, since issue 36, the exact ones: Chamfer, Hausdorff, Hungarian, OT, partial OT) runs in a worker thread
that releases the GIL
(``*_stoppable`` kernels; a solve bounded by ~0.1 s, :data:`_INLINE_WORK`, runs in the calling thread
when no budget is given); the calling thread waits in slices of :data:`_POLL_S` seconds, so Ctrl-C
(``KeyboardInterrupt``), a signal handler's exception (a caller's ``signal.setitimer`` timer) or the
caller's ``time_budget_s`` lands there at once; it then raises a stop flag that every running solve
reads once per (inner) iteration (exact families: per bank sentence, per augmented row of the assignment,
per augmenting path of the transport), waits for the worker (milliseconds) and re-raises (measured:
0.02-0.06 s from Ctrl-C to the exception; ``benchmarks/bench_gw_large.py --interrupt``,
``benchmarks/bench_stop_latency.py`` for the exact families). The iterations
themselves are unchanged, so the values are the same bits. Large GW pairs (``n * m >=``
:data:`~sdrlib.distances._blas.GW_BLAS_MIN_NM`) run POT's own matrix-product formulation in numpy
(:mod:`sdrlib.distances._blas`), which returns to the interpreter between BLAS calls: the reference's
value and speed (0.9-1.1x at 250 to 2,000 sentences) where the numba loops took 2.4x (250) to more
than 9x (2,000) the reference's time. Large pairs routed to POT / SciPy (step 3) run one after the other
in a worker thread (``sdr-distance-pot``) that the calling thread waits on in the same slices: Ctrl-C or
the budget lands at once, the worker stops before its next pair, and the pair it is solving (POT's C
code does not look at a flag: at most one solve, ~3 s for ``partial_adaptive`` at 2,000 x 2,100) finishes
in the background and is dropped (``tests/distances/test_distances_large.py``).
``time_budget_s`` (a positive finite number of seconds; anything else, ``10**400`` included, raises
:class:`~sdrlib.distances.errors.DistanceSpecError` naming it) is checked inside every CPU solver;
running past it raises :class:`~sdrlib.distances.errors.DistanceTimeoutError`. Not stoppable: the
negation-aware settings' driver (``_kernels.neg_pairs``), the GPU kernels (``device="cuda"``) and the
per-pair reference :func:`~sdrlib.distances.set_distance` (POT's and SciPy's C code), which finish a
call before Ctrl-C or a budget is seen.

Scope: float64 throughout (``dtype`` is not an option: the 1e-5 agreement and the
``M = 0`` tests are float64 statements). With ``device="cuda"`` step 2 runs on the GPU
(torch), and so do the iterative solvers (Sinkhorn, UOT, GW: the families registered with ``cuda=True``), one
GPU thread per pair running the CPU kernel's algorithm (:mod:`sdrlib.distances._cuda_kernels`;
same iterations, caps, stopping rules and convergence flags). That needs numba's CUDA target
(driver, NVVM, libdevice): if it cannot run, ``device="cuda"`` raises a
:class:`~sdrlib.distances.errors.DistanceSpecError` naming the device and the reason, and
``device="auto"`` runs these solvers on the CPU. Chamfer / Hausdorff / Hungarian / OT /
partial OT solvers always run on the CPU.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence, Union

import numpy as np

from sdrlib.distances import _kernels as K
from sdrlib.distances import _large
from sdrlib.distances._blas import GW_BLAS_MIN_NM, gw_loss_blas
from sdrlib.distances.costs import ZERO_COST_ATOL, _as_float_array, check_range, cosine_cost, rescale, unit_rows
from sdrlib.distances.errors import DistanceInputError, DistanceSpecError, DistanceTimeoutError
from sdrlib.distances.negation import (
    PRESENCE_WIDTH,
    check_presence,
    contradiction_matrix,
    negation_cost,
    presence_pair,
)
from sdrlib.distances.registry import FAMILIES, DistanceSpec, check_mode, get, handle_nonconvergence, resolve

#: upper bound on the cosine block held at once (float64 entries): 64 MiB
_MAX_BLOCK = 8 * 1024 * 1024


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
    _intra: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _classes: np.ndarray | None = field(default=None, repr=False)
    _checked: bool = field(default=False, repr=False)  # passed _check_packed (or built by pack_sets)

    @property
    def n_sets(self) -> int:
        return len(self.offsets) - 1

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def dim(self) -> int:
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


def pack_sets(sets: SetsLike, name: str = "sets", dim: int | None = None) -> PackedSets:
    """Validate, normalise and deduplicate sets into :class:`PackedSets`.

    Accepts a :class:`PackedSets` (returned as is), a ``(matrix, offsets)`` tuple
    (e.g. ``(bank.matrix("findings"), bank.offsets("findings"))``) or a sequence of
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
    if isinstance(sets, tuple) and len(sets) == 2 and not isinstance(sets[0], (list, tuple)) \
            and np.ndim(sets[1]) == 1 and np.ndim(sets[0]) == 2:
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
    return PackedSets(np.ascontiguousarray(unique), index.reshape(-1).astype(np.int64), offs, _checked=True)


def _cosines(A: np.ndarray, B: np.ndarray, device: str) -> np.ndarray:
    """(U_a, U_b) float64 cosines ``A @ B.T``, on numpy or on a torch device."""
    if device == "cpu":
        if A.shape[0] * B.shape[0] * A.shape[1] < 4_000_000:
            # small products: single-threaded einsum; a BLAS thread pool wake-up costs more here
            return np.einsum("id,jd->ij", A, B)
        return A @ B.T
    import torch

    ta = torch.as_tensor(A, device=device)
    tb = torch.as_tensor(B, device=device)
    return (ta @ tb.T).cpu().numpy()


def _resolve_device(device: str) -> str:
    if not isinstance(device, (str, type(None))):
        raise DistanceSpecError(f"device must be 'cpu', 'cuda[:i]' or 'auto', got {device!r}")
    if device in ("cpu", None):
        return "cpu"
    if device == "auto":
        try:
            import torch

            return "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            return "cpu"
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise DistanceSpecError(f"device={device!r} requested but torch sees no CUDA device; use 'cpu' or 'auto'")
        return device
    raise DistanceSpecError(f"device must be 'cpu', 'cuda[:i]' or 'auto', got {device!r}")


def _pick_solver(requested: "str | None", dev: str, specs: Sequence[DistanceSpec],
                 ready: "tuple[bool, str] | None" = None) -> str:
    """Where the iterative solvers run: ``dev`` (a CUDA device) or ``"cpu"``.

    ``requested`` is the caller's ``device``, ``dev`` its resolution (:func:`_resolve_device`),
    ``ready`` the answer of ``_cuda_kernels.available()`` (asked here when None and needed). No GPU
    solver is needed (CPU device, or no setting of a family with :attr:`~sdrlib.distances.registry.Family.cuda`):
    ``"cpu"``. Numba's CUDA
    target cannot run: ``"auto"`` falls back to ``"cpu"``, an explicit ``"cuda[:i]"`` raises
    :class:`DistanceSpecError` naming the device and the reason.
    """
    if not dev.startswith("cuda") or not any(FAMILIES[s.family].cuda for s in specs):
        return "cpu"
    if ready is None:
        from sdrlib.distances import _cuda_kernels

        ready = _cuda_kernels.available()
    if ready[0]:
        return dev
    if requested == "auto":
        return "cpu"
    raise DistanceSpecError(f"device={requested!r}: torch sees a GPU, but numba's CUDA target, which runs the "
                            f"Sinkhorn / UOT / GW solvers there, cannot ({ready[1]}); install the CUDA toolkit's "
                            "NVVM and libdevice for numba, or use device='auto' (these solvers then run on the "
                            "CPU) or device='cpu'")


#: below this many pairs the kernels run on one thread (thread start-up and barriers cost more than they save)
_SERIAL_BELOW = 2048
#: seconds the calling thread waits at a time for a stoppable solver (then it looks at the clock again)
_POLL_S = 0.05
#: a stoppable solve whose worst case (every iteration cap reached) is below this many multiply-adds runs in the
#: calling thread, without a budget only: at the kernels' ~1.5 GFLOP/s per core that is ~0.1 s, so Ctrl-C still
#: lands at once, and small calls (a GRPO group's rewards: 8 pairs of a few sentences) skip the worker thread,
#: which cost them 0.2-0.9 ms per call (measured on the 2-core box, ~10-30 % of such a call)
_INLINE_WORK = 2e8


class _Budget:
    """The caller's ``time_budget_s`` for one engine call: a monotonic deadline, or none."""

    def __init__(self, seconds: "float | None"):
        self.seconds = seconds
        self.t0 = time.monotonic()
        self.deadline = None if seconds is None else self.t0 + seconds

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def error(self, what: str) -> DistanceTimeoutError:
        return DistanceTimeoutError(f"{what}: time budget of {self.seconds:g} s exhausted after "
                                    f"{time.monotonic() - self.t0:.2f} s; the solve was stopped and no values are "
                                    "returned (raise time_budget_s, or score fewer / smaller sets per call)")

    def check(self, what: str) -> None:
        """Raise :class:`DistanceTimeoutError` once the deadline has passed."""
        if self.expired():
            raise self.error(what)


def _check_budget(time_budget_s: object) -> "float | None":
    """``time_budget_s`` must be None or a positive finite number of seconds."""
    if time_budget_s is None:
        return None
    ok = isinstance(time_budget_s, (int, float, np.integer, np.floating)) \
        and not isinstance(time_budget_s, (bool, np.bool_))
    try:
        seconds = float(time_budget_s) if ok else math.nan  # an int beyond float range (10**400) overflows
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        raise DistanceSpecError(f"time_budget_s must be None or a positive finite number of seconds, "
                                f"got {time_budget_s!r:.60}")
    return seconds


def _wait(done: threading.Event, budget: _Budget, what: str) -> None:
    """Wait for ``done`` in :data:`_POLL_S` slices (where Python delivers signals); raise
    :class:`DistanceTimeoutError` once ``budget`` expires."""
    while not done.wait(_POLL_S):
        if budget.expired():
            raise budget.error(what)


def _watched(kernel: Callable, args: tuple, budget: _Budget, what: str, work: float = np.inf) -> None:
    """Run a ``*_stoppable`` numba kernel, ``kernel(*args, stop)``, so that it can be stopped.

    ``work``: the solve's worst-case multiply-adds; below :data:`_INLINE_WORK` and without a budget
    the kernel simply runs in this thread (bounded at ~0.1 s, no thread to start).

    The kernel runs in a worker thread (it releases the GIL) with this thread's numba thread count;
    this thread waits in :data:`_POLL_S` slices, where Python delivers signals. On any exception here
    (``KeyboardInterrupt``, a signal handler's error) or once ``budget`` expires, ``stop[0]`` is set,
    which every running solve reads once per iteration; the worker is waited for (milliseconds) and
    the exception (or :class:`DistanceTimeoutError`) propagates. The kernel's own errors propagate too.
    """
    import numba

    stop = np.zeros(1, np.int64)
    if work < _INLINE_WORK and budget.deadline is None:
        kernel(*args, stop)
        return
    threads = numba.get_num_threads()
    failed: list[BaseException] = []
    done = threading.Event()  # not Thread.join: a join interrupted by Ctrl-C can mark a running thread dead

    def work() -> None:
        try:
            numba.set_num_threads(threads)  # thread-local in numba: the caller's choice (_run) carries over
            kernel(*args, stop)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=work, name="sdr-distance-solver", daemon=True).start()
    try:
        _wait(done, budget, what)
    except BaseException:
        stop[0] = 1
        while not done.is_set():
            try:
                done.wait(_POLL_S)
            except KeyboardInterrupt:  # a second Ctrl-C while the solver winds down: it stops anyway
                continue
        raise
    if failed:
        raise failed[0]


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
        return len(self.pk)

    @property
    def sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """(n (P,), m (P,)): the sentence counts of each pair's candidate and bank set."""
        return self.cand.sizes[self.pk], self.bank.sizes[self.pj]

    @property
    def nmax(self) -> int:
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
        negation-aware ``M'`` (:func:`sdrlib.distances.negation.negation_cost`)."""
        A, B = self.rows(p)
        if self.spec.negation_aware:
            return negation_cost(A, B, *self.pair_presence(p), self.spec.contradiction)
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
        """The kernel's values range-checked (:func:`sdrlib.distances.costs.check_range`) and its flags."""
        out = np.asarray(out, dtype=np.float64)
        conv = np.asarray(conv, dtype=np.bool_)
        if out.shape != (self.P,) or conv.shape != (self.P,):
            raise DistanceSpecError(f"{self.spec.name}: the family's kernel returned shapes {out.shape} / "
                                    f"{conv.shape} for {self.P} pairs")
        return check_range(out, self.spec.name, self.spec.upper), conv


# --------------------------------------------------------------------------- the built-in families' kernels
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


# --------------------------------------------------------------------------- negation-aware settings
def _pack_presence(sets: SetsLike, presence: object, name: str, dim: int | None = None):
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
    return PackedSets(unique, inv.astype(np.int64), ps.offsets, _checked=True), \
        np.ascontiguousarray(ukey[:, 1:].astype(np.int8))


def _capped_cosines(bank: PackedSets, pb: np.ndarray, cand: PackedSets, pc: np.ndarray, c: float) -> np.ndarray:
    """(U_bank, U_cand) cosines with contradicted pairs capped: ``cost(g') = max(M, c X)``."""
    G = _cosines(bank.unique, cand.unique, "cpu")
    X = contradiction_matrix(pb, pc)
    return np.ascontiguousarray(np.minimum(G, 1.0 - 2.0 * c * X))


def _masks(ps: PackedSets, presence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positive, negative) observation bit masks: per unique row (U, 2) and per set (S, 2), int64."""
    bits = np.int64(1) << np.arange(PRESENCE_WIDTH, dtype=np.int64)
    row = np.stack([((presence > 0) * bits).sum(axis=1), ((presence < 0) * bits).sum(axis=1)], axis=1)
    row = np.ascontiguousarray(row.astype(np.int64))
    per_sentence = row[ps.index] if len(ps.index) else np.zeros((0, 2), np.int64)
    sets = np.zeros((ps.n_sets, 2), np.int64)
    nonempty = np.flatnonzero(ps.sizes > 0)
    if len(nonempty):
        sets[nonempty] = np.bitwise_or.reduceat(per_sentence, ps.offsets[:-1][nonempty], axis=0)
    return row, sets


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
    empty = ps.sizes == 0
    if empty.any() and empty_value is None:
        raise DistanceInputError(f"{name}: sets {np.flatnonzero(empty)[:5].tolist()} are empty; distances are "
                                 "defined for non-empty sets (pass empty_value=1.0 to score them as maximally far)")
    return empty


def pairwise_distances(cands: SetsLike, bank: SetsLike, name: "str | DistanceSpec", *, presence: "tuple | None" = None,
                       device: str = "cpu", on_nonconvergence: str = "warn", empty_value: float | None = None,
                       return_converged: bool = False, time_budget_s: float | None = None):
    """All distances between K candidate sets and N bank sets: a (K, N) float64 matrix.

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
        solvers run on the CPU); see the module docstring for what happens without a usable GPU.
    on_nonconvergence : {"warn", "raise", "ignore"}
        Reaction to iterative solvers stopping at ``max_iter``.
    empty_value : float in [0, 1], optional
        Value for pairs with an empty set; by default empty sets raise.
    return_converged : bool
        Also return the (K, N) boolean convergence flags.
    time_budget_s : float, optional
        Seconds the call may take; past them the solve is stopped and
        :class:`~sdrlib.distances.errors.DistanceTimeoutError` raised (checked inside the Sinkhorn /
        UOT / GW solvers, between calls of the others; see the module docstring). Ctrl-C stops a
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
