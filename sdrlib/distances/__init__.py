"""Set-to-set distances of the paper's appendix A (nine families, 15 registered settings), plus ours.

Ours (``origin="sdr extension"`` in :func:`registry_table`, :data:`EXTENSIONS`): unscaled transport
settings (``ot_raw``, ``sinkhorn_0.1_raw``, ...), negation-aware ones (``chamfer_neg``, ...;
:mod:`~sdrlib.distances.negation`) and the asymmetric family ``chamfer_recall_<alpha>``
(:mod:`~sdrlib.distances.recall`). See :mod:`~sdrlib.distances.registry`.

Families are registrations (:class:`Family`, :func:`register_family`): one per family names its reference, its
engine kernel, its parameters and checks, and whether it has ``_neg`` / ``_raw`` settings or reads presence itself.

One API: a set may carry per-sentence presence arrays (from :func:`sdrlib.clinical.section_presence`;
the distances never see text). Every entry point takes ``presence=(P_A, P_B)``: a negation-aware setting
requires it (:class:`DistanceSpecError` without), a plain setting ignores it.

- :mod:`~sdrlib.distances.registry`  :class:`DistanceSpec`, :data:`REGISTRY`, :func:`get`,
  :func:`make_spec`; its :mod:`~sdrlib.distances.registry.per_pair`: :func:`set_distance` (per-pair reference),
  :func:`reward`, the ``on_nonconvergence`` policy
- :mod:`~sdrlib.distances.reference` the reference on POT / SciPy, eqs. (12)-(21)
- :mod:`~sdrlib.distances.engine`    the batched engine: :func:`pairwise_distances` (K x N),
  :func:`pairwise_distances_many` (several settings, one cosine product), :func:`paired_distances`
  (zip), :class:`PackedSets`
- :mod:`~sdrlib.distances.recall`    ``chamfer_recall_<alpha>``'s reference (ours; asymmetric, reads presence)
- :mod:`~sdrlib.distances.negation`  the negation-aware cost ``max(M, c X, c (k_i + k'_j))`` and presence checks
- :mod:`~sdrlib.distances.costs`     input checks and the cosine base cost (eq. 11)
- :mod:`~sdrlib.distances.synthetic` random and clustered embedding sets for tests and benchmarks

Every call returns finite values in [0, 1] (``hung_pen`` with ``clip=False``: [0, 1 + alpha |n - m|])
or raises an :class:`~sdrlib.errors.SDRError`: ``DistanceInputError`` (unusable sets or offsets),
``DistanceSpecError`` / ``UnknownDistanceError`` (unusable name, parameter or option; ``eps`` below
its solver's float64 floor), ``DistanceRangeError`` (a solver value that is NaN / inf or leaves
[0, 1] by more than round-off), ``ConvergenceError`` (only with ``on_nonconvergence="raise"``),
``DistanceTimeoutError`` (the engine ran past the caller's ``time_budget_s``).

Example (two small sets of unit sentence embeddings; no encoder needed)::

    >>> import numpy as np
    >>> from sdrlib.distances import pairwise_distances, set_distance
    >>> A = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # a report of two sentences
    >>> B = np.array([[1.0, 0.0, 0.0], [0.6, 0.0, 0.8]])  # the same first sentence, another second one
    >>> round(set_distance(A, B, "chamfer"), 4)  # one pair: the reference (POT / SciPy)
    0.175
    >>> pairwise_distances([A, B], [A, B], "chamfer").round(4)  # (K, N) = (2, 2), batched: the same values
    array([[0.   , 0.175],
           [0.175, 0.   ]])

A name is read once into its registry entry (the family and its parameters), and zipped pairs go through
:func:`paired_distances` (one distance per pair, the generated set first):

    >>> from sdrlib.distances import get, paired_distances
    >>> spec = get("sinkhorn_0.05")
    >>> spec.family, spec.params["eps"], get("chamfer_neg").family
    ('sinkhorn', 0.05, 'chamfer')
    >>> paired_distances([A], [B[:1]], "chamfer"), paired_distances([A], [B[:1]], "hausdorff")
    (array([0.125]), array([0.5]))

A negation-aware setting reads each sentence's finding presence too: ``paired_distances(A_sets, B_sets,
"chamfer_neg", presence=(section_presence(gen), section_presence(ref)))`` (:func:`sdrlib.clinical.section_presence`).
"""

from sdrlib.distances.errors import (
    ConvergenceError,
    ConvergenceWarning,
    DistanceInputError,
    DistanceRangeError,
    DistanceSpecError,
    DistanceTimeoutError,
    UnknownDistanceError,
)
from sdrlib.distances.registry import (
    EXTENSION_SETTINGS,
    EXTENSIONS,
    FAMILIES,
    PAPER_SETTINGS,
    REGISTRY,
    DistanceSpec,
    Family,
    available_distances,
    get,
    make_spec,
    register_family,
    registry_table,
    reward,
    set_distance,
    unregister_family,
)

__all__ = [
    "ConvergenceError", "ConvergenceWarning", "DistanceInputError", "DistanceRangeError", "DistanceSpecError",
    "DistanceTimeoutError", "UnknownDistanceError", "FAMILIES", "PAPER_SETTINGS", "REGISTRY", "EXTENSION_SETTINGS",
    "EXTENSIONS",
    "DistanceSpec", "Family", "available_distances", "get", "make_spec", "register_family", "registry_table", "reward",
    "set_distance", "unregister_family",
    "pairwise_distances", "pairwise_distances_many", "paired_distances", "PackedSets", "pack_sets",
]


def __getattr__(name: str) -> object:  # the engine pulls in numba: import it on first use
    if name in ("pairwise_distances", "pairwise_distances_many", "paired_distances", "PackedSets", "pack_sets"):
        from sdrlib.distances import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'sdrlib.distances' has no attribute {name!r}")
