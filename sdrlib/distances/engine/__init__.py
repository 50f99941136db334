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
reads each set's distinct sentences, floors every entry at ``c`` times the wrong findings of its two sentences and
runs the family's own solver. A family whose cost reads presence itself
(``chamfer_recall_<alpha>``, asymmetric: the candidates are the generated sets) takes the same path with its own
kernel (``_kernels.recall_pairs``). Plain settings ignore ``presence``, so one
:func:`pairwise_distances_many` call may mix both kinds.

**Families are registrations.** Each family's kernel is named by its :class:`~sdrlib.distances.registry.Family`
(``kernel``, ``neg_kernel``) and called with a :class:`PairBatch`; the built-in ones are the ``*_kernel`` functions
of :mod:`._families` (re-exported here), which run the numba kernels of :mod:`sdrlib.distances._kernels` (and route
large pairs to :mod:`sdrlib.distances._large`).

Every value is range-checked as in the reference (:func:`sdrlib.distances.costs.check_range`):
round-off outside [0, 1] is clipped, NaN / inf or a real excursion raises
:class:`~sdrlib.distances.errors.DistanceRangeError` for the whole call.

**Long solves can be stopped.** numba's compiled loops do not look at signals, so a Sinkhorn / UOT /
GW solve on large sets used to ignore Ctrl-C and any timer until it finished (GW on two 2,000-sentence
sets: minutes; ``partial_adaptive`` on one 2,000 x 2,000 pair: ~57 s). Every CPU family (the iterative ones
and the exact ones: Chamfer, Hausdorff, Hungarian, OT, partial OT) runs in a worker thread
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

**Parts** (private modules; every name below is imported from ``sdrlib.distances.engine``):

- ``_packing``   :class:`PackedSets`, :func:`pack_sets`, :func:`unique_rows`: validation, unit rows, deduplication
- ``_presence``  the presence path's packing on (vector, presence), capped cosines and observation bit masks
- ``_device``    the cosine product (numpy / torch) and where the iterative solvers run
- ``_budget``    ``time_budget_s`` and the watchdog that makes a numba solve stoppable
- ``_batch``     :class:`PairBatch`, what a family kernel gets, and the range check of what it returns
- ``_families``  the built-in families' kernels (:func:`nn_kernel`, :func:`hung_kernel`, :func:`transport_kernel`,
  :func:`entropic_kernel`, :func:`gw_kernel`, :func:`neg_kernel`, :func:`recall_kernel`)
- ``_dispatch``  settings on pairs: one cosine product per call, shared solves, the registered kernels
- ``_entry``     the entry points :func:`pairwise_distances`, :func:`pairwise_distances_many`,
  :func:`paired_distances`
"""

from sdrlib.distances import _kernels as K  # noqa: F401  (tests patch the numba kernels through engine.K)
from sdrlib.distances.engine._batch import PairBatch
from sdrlib.distances.engine._budget import _Budget, _watched  # noqa: F401  (benchmarks/bench_gw_large.py)
from sdrlib.distances.engine._device import _cosines, _pick_solver  # noqa: F401  (tests)
from sdrlib.distances.engine._dispatch import _run, _shared_groups  # noqa: F401  (tests)
from sdrlib.distances.engine._entry import paired_distances, pairwise_distances, pairwise_distances_many
from sdrlib.distances.engine._families import (
    entropic_kernel,
    gw_kernel,
    hung_kernel,
    neg_kernel,
    nn_kernel,
    recall_kernel,
    transport_kernel,
)
from sdrlib.distances.engine._packing import PackedSets, SetsLike, pack_sets, unique_rows

__all__ = [
    "PackedSets", "SetsLike", "pack_sets", "unique_rows", "PairBatch",
    "pairwise_distances", "pairwise_distances_many", "paired_distances",
    "nn_kernel", "hung_kernel", "transport_kernel", "entropic_kernel", "gw_kernel", "neg_kernel", "recall_kernel",
]
