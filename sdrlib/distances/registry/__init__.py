"""The registry of set-distance settings: the 15 the paper evaluates, and any other by parameter.

A setting is a :class:`DistanceSpec`: a family (one of the nine of appendix A, or ours: ``chamfer_recall``)
plus its parameters. New settings are made with :func:`make_spec` or parsed from
a name by :func:`get` (``get("sinkhorn_0.05")``); nothing is copied per setting.

A family is one registration, :func:`register_family` with a :class:`Family` (the registration pattern shared with
datasets, metric groups and reward methods: :mod:`sdrlib.extension`): its per-pair reference, its batched
engine kernel (``kernel(batch)``, :class:`sdrlib.distances.engine.PairBatch`), its parameter defaults and checks, and
whether it has negation-aware (``neg_kernel``), unscaled (``rescalable``) or CUDA variants or reads presence itself
(``presence="required"``). The built-in families are those of ``_builtin``,
registered on the first read of :data:`FAMILIES`; ``tests/distances/toy_family.py`` registers
one from a module of its own and uses it through every entry point with no other edit.

``exact`` on a spec means the batched engine (:mod:`sdrlib.distances.engine`)
computes the same quantity as the per-pair reference (agreement to 1e-5 in
float64, checked in the tests); every setting this module can build is exact.

Parameters are checked when a spec is made (:func:`make_spec`, :func:`get`), so a
setting whose solver cannot work is refused before it scores anything
(:class:`~sdrlib.distances.errors.DistanceSpecError`, also a ``ValueError``):
NaN, inf, zero, negative, non-numeric values, and ``eps`` below the float64 floor of
its solver. Costs are cosine-based and rescaled to [0, 1] (``M~``), so the floors
follow from float64 alone (``ln(1 / tiny) = 708.4``, ``tiny`` the smallest normal double):

- **GW** (:data:`GW_MIN_EPS` = 2 / 708.4 = 2.82e-3): the inner Sinkhorn runs in the kernel
  domain on ``exp(-grad / eps)`` with ``grad`` in [0, 2] (twice a mean of squared
  differences of rescaled intra costs). Below the floor a whole kernel column can
  underflow to 0, POT's solver exits on its first iteration with the plan ~ 0 and the
  GW loss comes out 0 (``gw_1e-5`` gave 0.0 where eps = 1e-3 gives 0.1) or NaN.
- **UOT** (:data:`UOT_MIN_EPS` = 0.005): also a kernel-domain solver on ``exp(-M~ / eps)``;
  the kernel entries themselves underflow below 1 / 708.4 = 1.4e-3, and its scalings
  ``(a / K v)^(tau / (tau + eps))`` overflow a little above that, so the floor keeps a margin.
- **Sinkhorn** (:data:`SINKHORN_MIN_EPS` = 2^-52 / 1e-9 = 2.2e-7): below ``LOG_DOMAIN_EPS``
  it runs in the log domain, which does not underflow; but its exponents are of size
  ``1 / eps`` and carry a float64 round-off of ``2^-52 / eps``, a relative error on every
  plan entry. Below the floor that error exceeds the default stopping threshold 1e-9, the
  solver cannot meet its stopping rule and returns a round-off-dominated iterate
  (``sinkhorn_1e-20`` gave 1.0 where OT is 0.45).

**Our extensions** (``origin="sdr extension"`` in :func:`registry_table`; the paper's 15 settings,
:data:`PAPER_SETTINGS` / :data:`REGISTRY`, keep their names and values):

- **unscaled transport** (``ot_raw``, ``sinkhorn_0.1_raw``, ``uot_1.0_raw``, ``partial_0.8_raw``,
  ``partial_adaptive_raw``; any ``<setting>_raw`` of OT, Sinkhorn, UOT, partial OT): parameter
  ``rescale=False`` transports the cosine cost ``M`` of eq. 11, in [0, 1], instead of the per-pair
  ``M~ = M / max M``. The rescaling makes the value scale-free (two reports that are far apart
  everywhere can score like two that are close everywhere); the raw cost keeps the overall distance.
  ``M <= M~`` entrywise, so every eps floor above (derived for costs in [0, 1]) holds unchanged.
  Identical points (``max M <= ZERO_COST_ATOL``) give 0 as in the rescaled settings (the raw value
  would be below 1e-9 there). There is **no** ``gw_raw``: GW never compares a sentence of A with one
  of B (it matches the *intra*-set cost matrices ``C^A``, ``C^B``), so the cross-set scale the
  rescaling erases is absent from GW either way; raw intra costs would only change how GW weighs a set's
  spread, which is not what the extension is for. ``make_spec("gw", rescale=False)`` is refused.
- **negation-aware** settings (``chamfer_neg``, ``hung_nn_neg``; any ``<non-GW setting>_neg`` or
  ``_neg_<c>``): field ``contradiction = c`` in (0, 1]; the cost becomes
  ``M'_ij = max(M_ij, c X_ij, c (k_i + k'_j))`` on each set's distinct sentences, with ``X_ij = 1`` when the
  offline labeler reads one observation positive in sentence i and negative in sentence j, and ``k_i`` (``k'_j``)
  the number of findings sentence i (j) is wrong about against the other set: contradicted, hallucinated or
  missed, on the wrong side (:mod:`sdrlib.distances.negation`, which defines X and k precisely, and the scale). They need per-sentence presence arrays next to the embeddings: every
  entry point (:func:`set_distance`, ``pairwise_distances``, ``pairwise_distances_many``, ``paired_distances``)
  takes ``presence=(P_A, P_B)`` and raises a :class:`DistanceSpecError` for a negation-aware setting without it;
  plain settings ignore ``presence``.

**GW's identical-set floor.** ``D(A, A)`` is not 0 for GW, and for 2-sentence sets it is 0.5 at *every*
eps: a 2-sentence set's rescaled intra cost is ``[[0, 1], [1, 0]]`` (two distinct sentences; the one
off-diagonal cost is its own maximum), so any two 2-sentence sets, a set with itself included, give
the same problem; at the product coupling ``p q^T`` the GW gradient of that symmetric problem is
constant, Sinkhorn returns ``p q^T`` again, and POT's iteration stays at this fixed point (a
stationary point, not the minimum 0 of the identity matching) with loss 0.5. GW therefore cannot
tell two 2-sentence reports apart; the value is POT's (pinned in ``tests/distances/test_distances_interrupt.py``),
so the engine and the reference both return it. :func:`sdrlib.experiments.fidelity.identical_floor` tabulates
``D(A, A)`` by set size for every setting.

Large parameters are valid (eps -> inf is the product plan; alpha -> inf makes any size
mismatch cost 1). A solver that still leaves [0, 1] at valid parameters (UOT with eps large
against tau: the plan carries more than unit mass) raises
:class:`~sdrlib.distances.errors.DistanceRangeError` at evaluation; see
:func:`sdrlib.distances.costs.check_range`.

**Parts** (private modules but ``per_pair``; every name below is imported from ``sdrlib.distances.registry``):

- ``_family``     :class:`Family`, :data:`FAMILIES`, :func:`unregister_family`,
  :func:`resolve`
- ``_builtin``    the built-in families and their ``eps`` floors (:data:`GW_MIN_EPS`, :data:`UOT_MIN_EPS`,
  :data:`SINKHORN_MIN_EPS`) and checks
- ``_spec``       :class:`DistanceSpec`, :func:`make_spec`, :data:`PAPER_SETTINGS` / :data:`REGISTRY`,
  :data:`EXTENSION_SETTINGS` / :data:`EXTENSIONS`
- ``_names``      :func:`get` (names to settings), :func:`distance_key`, :func:`available_distances`,
  :func:`registry_table`, :func:`register_family` (the family's checks, and that its name is no other family's
  setting)
- ``per_pair``    :func:`set_distance` (one pair, the reference), :func:`reward` (``1 - D``), :func:`check_mode`,
  :func:`handle_nonconvergence` (the ``on_nonconvergence`` policy, shared with the engine); public: importable on its
  own
"""

from sdrlib.distances.registry._builtin import GW_MIN_EPS, RECALL_ALPHA_RANGE, SINKHORN_MIN_EPS, UOT_MIN_EPS
from sdrlib.distances.registry._family import (
    FAMILIES,
    PRESENCE_MODES,
    Family,
    resolve,
    unregister_family,
)
from sdrlib.distances.registry._names import available_distances, distance_key, get, register_family, registry_table
from sdrlib.distances.registry.per_pair import (
    NONCONVERGENCE_MODES,
    check_mode,
    handle_nonconvergence,
    reward,
    set_distance,
)
from sdrlib.distances.registry._spec import (
    EXTENSION_SETTINGS,
    EXTENSIONS,
    MAX_ITER_LIMIT,
    ORIGINS,
    PAPER_SETTINGS,
    REGISTRY,
    DistanceSpec,
    make_spec,
)

__all__ = [
    "Family", "FAMILIES", "PRESENCE_MODES", "register_family", "unregister_family", "resolve",
    "GW_MIN_EPS", "UOT_MIN_EPS", "SINKHORN_MIN_EPS", "RECALL_ALPHA_RANGE",
    "DistanceSpec", "make_spec", "MAX_ITER_LIMIT", "ORIGINS", "PAPER_SETTINGS", "REGISTRY", "EXTENSION_SETTINGS",
    "EXTENSIONS", "get", "distance_key", "available_distances", "registry_table",
    "set_distance", "reward", "check_mode", "handle_nonconvergence", "NONCONVERGENCE_MODES",
]
