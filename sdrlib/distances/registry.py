"""The registry of set-distance settings: the 15 the paper evaluates, and any other by parameter.

A setting is a :class:`DistanceSpec`: a family (one of the nine of appendix A, or ours: ``chamfer_recall``)
plus its parameters. New settings are made with :func:`make_spec` or parsed from
a name by :func:`get` (``get("sinkhorn_0.05")``); nothing is copied per setting.

A family is one registration, :func:`register_family` with a :class:`Family`: its per-pair reference, its batched
engine kernel (``kernel(batch)``, :class:`sdrlib.distances.engine.PairBatch`), its parameter defaults and checks, and
whether it has negation-aware (``neg_kernel``), unscaled (``rescalable``) or CUDA variants or reads presence itself
(``presence="required"``). The built-in families are registered below; ``tests/distances/toy_family.py`` registers
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
  ``M'_ij = max(M_ij, c X_ij, c r_i, c s_j)`` with ``X_ij = 1`` when the offline labeler reads one
  observation positive in sentence i and negative in sentence j, and ``r_i`` (``s_j``) = 1 when the other
  set states a finding of sentence i (j) only with the opposite polarity (:mod:`sdrlib.distances.negation`,
  which defines X, r and s precisely). They need per-sentence presence arrays next to the embeddings: every
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
"""

from __future__ import annotations

import importlib
import math
import numbers
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from sdrlib.distances.costs import as_pair, check_range
from sdrlib.distances.errors import (
    ConvergenceError,
    ConvergenceWarning,
    DistanceInputError,
    DistanceNameTypeError,
    DistanceRangeError,
    DistanceSpecError,
    UnknownDistanceError,
)
from sdrlib.distances.negation import check_presence, negation_cost, presence_pair

#: on_nonconvergence values
NONCONVERGENCE_MODES = ("warn", "raise", "ignore")

#: -ln of the smallest normal float64: exp(-x) underflows (to subnormals, then 0) beyond this
_EXP_RANGE = -math.log(np.finfo(np.float64).tiny)  # 708.396...
#: GW's inner kernel exp(-grad / eps) has grad in [0, 2]: below this eps a kernel entry leaves the normal range
GW_MIN_EPS = 2.0 / _EXP_RANGE
#: UOT's kernel-domain solver (exp(-M~ / eps), scalings (a / Kv)^fi): the floor it has always had, with margin
#: over 1 / _EXP_RANGE = 1.4e-3 where the kernel itself underflows
UOT_MIN_EPS = 0.005
#: log-domain Sinkhorn: round-off of exponents of size 1/eps, 2^-52 / eps, must stay below the default
#: stopping threshold 1e-9
SINKHORN_MIN_EPS = 2.0 ** -52 / 1e-9
#: iteration caps above this are refused (the kernels count iterations in int64; no solve needs more)
MAX_ITER_LIMIT = 10 ** 9


def _mt(p: dict[str, Any]) -> str:
    return "M~ = M / max M" if p.get("rescale", True) else "the unscaled cost M (ours: _raw)"


def _fmt(v: Any) -> str:
    if isinstance(v, (str, bool)) or (isinstance(v, int) and not isinstance(v, bool)):
        return str(v)
    return repr(float(v))


#: :attr:`Family.presence` values
PRESENCE_MODES = ("optional", "never", "required")


@dataclass(frozen=True)
class Family:
    """One distance family, registered once (:func:`register_family`): everything the registry, the per-pair
    reference, the batched engine and the ``_neg`` / ``_raw`` grammar need to know about it.

    Attributes
    ----------
    name : str
        The family's name; settings are named ``name`` or ``name_<primary>`` (:func:`make_spec`).
    reference : callable or "module:function"
        The per-pair reference on validated sets (float64, unit rows): ``reference(A, B, **params, M=None)``
        returning ``(value, converged)``; ``M`` is the negation-aware cost when given. A family with
        ``presence="required"`` is called as ``reference(A, B, P_A, P_B, **params)`` instead. A string is
        imported on first use (the built-in references pull in POT, ~2 s, which name checks never need).
    kernel : callable or "module:function"
        The engine's batched kernel: ``kernel(batch)`` with a :class:`sdrlib.distances.engine.PairBatch`,
        returning ``(values (P,), converged (P,))``. Plain settings call it with the cosine block, a
        ``presence="required"`` family on the presence path (``batch.presence`` set).
    defaults : dict
        Every parameter with its default; a spec carries all of them.
    primary : str, optional
        The parameter written into the name (``sinkhorn_0.1``) and parsed from it.
    symmetric, iterative : bool
        ``D(A, B) = D(B, A)`` by definition; solved by an iterative method with a stopping rule.
    describe : callable
        ``describe(params) -> str``, one line.
    check : callable, optional
        ``check(params)`` raising :class:`DistanceSpecError` for a value this family's solver cannot use,
        beyond the checks every family shares (positive finite ``eps`` / ``tau`` / ``alpha`` / thresholds,
        integral ``max_iter``, boolean ``rescale``).
    presence : {"optional", "never", "required"}
        ``"optional"``: plain settings, and negation-aware ``<setting>_neg[_<c>]`` ones computed by
        ``neg_kernel``; ``"never"``: no negation-aware variant (GW); ``"required"``: the family's cost itself
        reads per-sentence presence (``chamfer_recall``), so every call needs ``presence=``.
    neg_kernel : callable or "module:function", optional
        The engine kernel of the ``_neg`` variants (presence path); ``None``: the family has none.
    rescalable : bool
        Has the unscaled ``_raw`` variant (parameter ``rescale``).
    cuda : bool
        The kernel can run its solver on a CUDA device (``batch.solver``).
    needs_cosines : bool
        The kernel reads the cross cosine block ``batch.G`` (GW does not: it compares intra-set costs).
    format_primary : callable
        How the primary value is written into a name (default ``repr(float)``: ``sinkhorn_0.1``, ``uot_1.0``).
    """

    name: str
    reference: "str | Callable"
    kernel: "str | Callable"
    defaults: dict[str, Any] = field(default_factory=dict)
    primary: str | None = None
    symmetric: bool = True
    iterative: bool = False
    describe: Callable[[dict[str, Any]], str] = lambda p: ""
    check: "Callable[[dict[str, Any]], None] | None" = None
    presence: str = "optional"
    neg_kernel: "str | Callable | None" = None
    rescalable: bool = False
    cuda: bool = False
    needs_cosines: bool = True
    format_primary: Callable[[Any], str] = _fmt

    @property
    def negatable(self) -> bool:
        """Has negation-aware ``_neg`` settings."""
        return self.presence == "optional" and self.neg_kernel is not None


def resolve(ref: "str | Callable") -> Callable:
    """A :class:`Family` function given as a callable or as ``"module:function"`` (imported here)."""
    if callable(ref):
        return ref
    module, _, attr = str(ref).partition(":")
    return getattr(importlib.import_module(module), attr)


#: the registered families, by name (:func:`register_family`)
FAMILIES: dict[str, Family] = {}
_BUILTIN: set[str] = set()
_FAMILY_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*$")


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Register a distance family: afterwards ``make_spec(family.name, ...)``, :func:`get` on its names, every
    distance entry point (:func:`set_distance`, the engine's ``pairwise_distances`` / ``paired_distances``),
    the rewards (a distance name is a reward name), best-of-K selection and MBR use it like a built-in one.

    Raises :class:`DistanceSpecError` for a name that is not lower-case words joined by ``_``, that ends in a
    suffix of the grammar (``raw``, ``neg``), that is taken (unless ``replace``; a built-in family is never
    replaced), or for fields that do not fit together (a ``primary`` not in ``defaults``, ``rescalable``
    without a ``rescale`` default, an unknown ``presence``). Example: ``tests/distances/toy_family.py``.
    """
    if not isinstance(family, Family):
        raise DistanceSpecError(f"register_family needs a Family, got {type(family).__name__}")
    name = family.name
    if not isinstance(name, str) or not _FAMILY_NAME.match(name) or name.split("_")[-1] in ("raw", "neg"):
        raise DistanceSpecError(f"family name {name!r}: use lower-case words joined by '_' (not ending in _raw "
                                "or _neg, which the setting grammar adds)")
    if name in FAMILIES and (not replace or name in _BUILTIN):
        raise DistanceSpecError(f"family {name!r} is already registered"
                                + (" (built in)" if name in _BUILTIN else "; pass replace=True"))
    if family.primary is not None and family.primary not in family.defaults:
        raise DistanceSpecError(f"family {name!r}: primary parameter {family.primary!r} has no default")
    if family.rescalable and "rescale" not in family.defaults:
        raise DistanceSpecError(f"family {name!r}: rescalable needs a 'rescale' default")
    if family.presence not in PRESENCE_MODES:
        raise DistanceSpecError(f"family {name!r}: presence must be one of {PRESENCE_MODES}, got "
                                f"{family.presence!r}")
    FAMILIES[name] = family
    return family


def unregister_family(name: str) -> None:
    """Remove a family registered with :func:`register_family` (tests, notebooks); built-in ones stay."""
    if name in _BUILTIN:
        raise DistanceSpecError(f"family {name!r} is built in and cannot be removed")
    FAMILIES.pop(name, None)


def _check_floor(family: str, floor: float, why: str) -> Callable[[dict[str, Any]], None]:
    def check(p: dict[str, Any]) -> None:
        if p["eps"] < floor:
            raise DistanceSpecError(f"{family}: eps={p['eps']!r} is below the float64 floor {floor:.3g} of this "
                                    f"solver (costs are rescaled to [0, 1]): {why}. Use eps >= {floor:.3g}.")
    return check


def _check_partial(p: dict[str, Any]) -> None:
    r = p["rho"]
    if r != "adaptive" and (not _is_real(r) or not (0 < r <= 1)):
        raise DistanceSpecError(f"partial: rho must be 'adaptive' or in (0, 1], got {r!r}")


def _check_hung_pen(p: dict[str, Any]) -> None:
    if not isinstance(p["clip"], bool):
        raise DistanceSpecError(f"hung_pen: clip must be a bool, got {p['clip']!r}")


def _check_recall(p: dict[str, Any]) -> None:
    lo, hi = RECALL_ALPHA_RANGE
    if not lo <= p["alpha"] <= hi:
        raise DistanceSpecError(f"chamfer_recall: alpha must be in [{lo:g}, {hi:g}] (0.5 = symmetric, 1 = the "
                                f"reference->generated embedding costs only; missed and hallucinated findings "
                                f"cost at every alpha; below 0.5 extra text would weigh more than the "
                                f"reference's content, so an uncertain policy would gain by saying less), got "
                                f"{p['alpha']!r}")


#: allowed recall weights of ``chamfer_recall_<alpha>`` (0.5 = symmetric, 1 = reference->generated embedding costs only)
RECALL_ALPHA_RANGE = (0.5, 1.0)

_REF = "sdrlib.distances.reference:"
_ENG = "sdrlib.distances.engine:"
for _fam in (
    Family("chamfer", _REF + "chamfer", _ENG + "nn_kernel", neg_kernel=_ENG + "neg_kernel",
           describe=lambda p: "Chamfer (eq. 12): mean of the two directed mean nearest-neighbour costs"),
    Family("hausdorff", _REF + "hausdorff", _ENG + "nn_kernel", neg_kernel=_ENG + "neg_kernel",
           describe=lambda p: "Hausdorff (eq. 13): worst nearest-neighbour cost in either direction"),
    Family("ot", _REF + "ot_emd", _ENG + "transport_kernel", {"rescale": True}, neg_kernel=_ENG + "neg_kernel",
           rescalable=True,
           describe=lambda p: f"exact OT / Wasserstein (eq. 14) on {_mt(p)} between uniform measures"),
    Family("sinkhorn", _REF + "sinkhorn", _ENG + "entropic_kernel",
           {"eps": 0.1, "stop_thr": 1e-9, "max_iter": 1000, "rescale": True}, "eps", iterative=True,
           neg_kernel=_ENG + "neg_kernel", rescalable=True, cuda=True,
           check=_check_floor("sinkhorn", SINKHORN_MIN_EPS, "the log-domain exponents (size 1/eps) carry a "
                              "round-off of 2^-52/eps above the stopping threshold 1e-9: the solver cannot "
                              "converge and returns a round-off-dominated value"),
           describe=lambda p: f"Sinkhorn (eq. 15), eps={p['eps']}: linear cost <gamma_eps, {_mt(p)}> of the "
                              "entropic plan"),
    Family("uot", _REF + "uot", _ENG + "entropic_kernel",
           {"tau": 1.0, "eps": 0.1, "stop_thr": 1e-9, "max_iter": 1000, "rescale": True}, "tau", iterative=True,
           neg_kernel=_ENG + "neg_kernel", rescalable=True, cuda=True,
           check=_check_floor("uot", UOT_MIN_EPS, "the kernel-domain UOT solver's exp(-M~/eps) and its scalings "
                              "leave the float64 range"),
           describe=lambda p: f"unbalanced OT (eq. 16), eps={p['eps']}, tau={p['tau']}: linear cost of the "
                              f"entropic KL-relaxed plan on {_mt(p)}"),
    Family("gw", _REF + "gw", _ENG + "gw_kernel", {"eps": 0.1, "tol": 1e-9, "max_iter": 1000}, "eps",
           iterative=True, presence="never", cuda=True, needs_cosines=False,
           check=_check_floor("gw", GW_MIN_EPS, "its inner kernel exp(-grad/eps), grad in [0, 2], underflows "
                              "float64 and the GW loss collapses to 0"),
           describe=lambda p: f"entropic Gromov-Wasserstein (eq. 17), eps={p['eps']}: GW loss of the plan; "
                              "1 when a set has < 2 sentences; 0.5 for any two 2-sentence sets, a set with "
                              "itself included, at every eps (POT's iteration stays at the product coupling)"),
    Family("hung_nn", _REF + "hung_nn", _ENG + "hung_kernel", neg_kernel=_ENG + "neg_kernel",
           describe=lambda p: "Hungarian + nearest-neighbour cost for unmatched (eq. 19), / max(n, m)"),
    Family("hung_pen", _REF + "hung_pen", _ENG + "hung_kernel", {"alpha": 0.1, "clip": True}, "alpha",
           neg_kernel=_ENG + "neg_kernel", check=_check_hung_pen,
           describe=lambda p: f"Hungarian mean matched cost + alpha|n-m| (eq. 20), alpha={p['alpha']}"
                              + (", clipped at 1" if p["clip"] else ", unclipped (can exceed 1)")),
    Family("partial", _REF + "partial", _ENG + "transport_kernel", {"rho": "adaptive", "rescale": True}, "rho",
           neg_kernel=_ENG + "neg_kernel", rescalable=True, check=_check_partial,
           describe=lambda p: f"partial OT (eq. 21) on {_mt(p)} moving mass "
                              + ("rho=min(n,m)/max(n,m)" if p["rho"] == "adaptive" else f"rho={p['rho']}")),
    Family("chamfer_recall", "sdrlib.distances.recall:recall_chamfer", _ENG + "recall_kernel", {"alpha": 0.75},
           "alpha", symmetric=False, presence="required", check=_check_recall, format_primary=lambda v: f"{v:g}",
           describe=lambda p: f"recall-weighted negation-aware Chamfer (ours), alpha={p['alpha']:g}: "
                              "alpha x reference->generated + (1 - alpha) x generated->reference on chamfer_neg's "
                              "cost, missed / hallucinated positive findings floored at 1"),
):
    register_family(_fam)
    _BUILTIN.add(_fam.name)
del _fam

#: ``DistanceSpec.origin`` values
ORIGINS = ("paper", "sdr extension")


@dataclass(frozen=True)
class DistanceSpec:
    """One distance setting.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"sinkhorn_0.1"``.
    family : str
        One of :data:`FAMILIES`.
    params : dict
        Complete parameters (family defaults filled in).
    description : str
        One line.
    exact : bool
        The batched engine reproduces the reference (no approximation).
    contradiction : float
        0 for a plain setting; c in (0, 1] for a negation-aware one (cost ``max(M, c X, c r, c s)``,
        :mod:`sdrlib.distances.negation`), which needs per-sentence presence vectors.
    """

    name: str
    family: str
    params: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    exact: bool = True
    contradiction: float = 0.0

    @property
    def negation_aware(self) -> bool:
        """A ``_neg`` setting: the cost also charges contradicted findings (needs presence vectors)."""
        return self.contradiction > 0

    @property
    def needs_presence(self) -> bool:
        """Every call needs per-sentence presence: a ``_neg`` setting, or a family whose cost reads presence
        (``chamfer_recall``; :attr:`Family.presence` ``"required"``)."""
        return self.contradiction > 0 or FAMILIES[self.family].presence == "required"

    @property
    def key(self) -> tuple:
        """The setting itself, not its spelling: ``(family, sorted params, contradiction)``, numbers as floats.

        Two names of one setting share it (``sinkhorn_0.1`` / ``sinkhorn_0.10``, ``partial_adaptive`` /
        ``partial``'s registered value); the profile's duplicate checks compare keys (:func:`distance_key`).
        """
        def norm(v: Any) -> Any:
            return float(v) if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) else v
        return (self.family, tuple(sorted((k, norm(v)) for k, v in self.params.items())), float(self.contradiction))

    @property
    def origin(self) -> str:
        """``"paper"`` for the paper's 15 settings, else ``"sdr extension"`` (ours, or a new parameter value)."""
        return "paper" if REGISTRY.get(self.name) == self else "sdr extension"

    @property
    def symmetric(self) -> bool:
        """D(A, B) = D(B, A) by definition."""
        return FAMILIES[self.family].symmetric

    @property
    def iterative(self) -> bool:
        """Solved by an iterative method with a stopping rule (Sinkhorn, UOT, GW)."""
        return FAMILIES[self.family].iterative

    @property
    def upper(self) -> "float | None":
        """Upper end of the value range: 1.0, or None for ``hung_pen`` with ``clip=False`` (eq. 20 raw)."""
        return 1.0 if self.params.get("clip", True) else None

    def reference(self, A: np.ndarray, B: np.ndarray, M: "np.ndarray | None" = None,
                  presence: "tuple | None" = None) -> tuple[float, bool]:
        """Run the reference on validated sets; returns ``(value in [0, 1], converged)``.

        ``M``: the cost to use instead of the cosine cost of eq. 11; a negation-aware setting needs it
        (``negation_cost``, :mod:`sdrlib.distances.negation`; :func:`set_distance` builds it from presence).
        ``presence``: ``(P_A, P_B)`` checked presence arrays, for a family whose cost reads them
        (``chamfer_recall``). Round-off outside [0, 1] is clipped; NaN / inf or a real excursion raises
        :class:`~sdrlib.distances.errors.DistanceRangeError` (:func:`~sdrlib.distances.costs.check_range`).
        """
        fam = FAMILIES[self.family]
        fn = resolve(fam.reference)  # the built-in references import POT and SciPy: loaded on first use
        if fam.presence == "required":
            PA, PB = presence_pair(presence, self.name)  # raises without presence
            val, ok = fn(A, B, PA, PB, **self.params)
        elif M is None:
            if self.negation_aware:
                presence_pair(None, self.name)  # raises: the negation-aware cost needs presence
            val, ok = fn(A, B, **self.params)
        else:
            val, ok = fn(A, B, **self.params, M=M)
        return check_range(float(val), self.name, self.upper), ok


def _is_real(v: Any) -> bool:
    """A real number that is not a bool (numpy scalars included)."""
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _check_params(family: str, p: dict[str, Any]) -> None:
    """Raise :class:`DistanceSpecError` for a parameter the family's solver cannot use (see the module doc)."""
    def pos(key: str) -> None:
        v = p[key]
        if not _is_real(v) or not math.isfinite(v) or v <= 0:
            raise DistanceSpecError(f"{family}: parameter {key} must be a positive finite number, got {v!r}")

    for key in ("eps", "tau", "alpha", "stop_thr", "tol"):
        if key in p:
            pos(key)
    if "max_iter" in p:
        it = p["max_iter"]
        if not isinstance(it, numbers.Integral) or isinstance(it, (bool, np.bool_)) or not 1 <= it <= MAX_ITER_LIMIT:
            raise DistanceSpecError(f"{family}: max_iter must be an int in [1, {MAX_ITER_LIMIT}], got {it!r}")
    if "rescale" in p and not isinstance(p["rescale"], (bool, np.bool_)):
        raise DistanceSpecError(f"{family}: rescale must be a bool, got {p['rescale']!r}")
    check = FAMILIES[family].check
    if check is not None:
        check(p)


def _check_contradiction(family: str, c: Any) -> float:
    """``c`` as a float in [0, 1] (0 = plain); GW cannot take it (it has no cross-set cost)."""
    if not _is_real(c) or not math.isfinite(c) or not 0 <= c <= 1:
        raise DistanceSpecError(f"contradiction weight must be a number in [0, 1] (0 = plain distance; above 1 "
                                f"the cost would leave [0, 1]), got {c!r}")
    if c > 0 and family == "gw":
        raise DistanceSpecError("gw cannot be negation-aware: GW compares the intra-set costs of A and of B and "
                                "never a sentence of A with one of B, so a cross-set contradiction has no place")
    if c > 0 and FAMILIES[family].presence == "required":
        raise DistanceSpecError(f"{family} reads presence itself (its cost already charges contradicted findings "
                                "at 1): it has no _neg variant")
    if c > 0 and not FAMILIES[family].negatable:
        raise DistanceSpecError(f"{family} has no negation-aware variant (its Family registers no neg_kernel)")
    return float(c)


def make_spec(family: str, name: str | None = None, *, contradiction: float = 0.0, **params: Any) -> DistanceSpec:
    """Build a setting of ``family`` from parameters (defaults filled in).

    The name is ``family`` or ``family_<primary>`` (``sinkhorn_0.05``), then ``_raw`` when
    ``rescale=False``, then ``[key=value,...]`` for other non-default secondary parameters, then
    ``_neg`` (``contradiction=1``) or ``_neg_<c>``, unless ``name`` is given.
    Example: ``make_spec("sinkhorn", eps=0.05).name -> "sinkhorn_0.05"``;
    ``make_spec("partial", rescale=False).name -> "partial_adaptive_raw"``;
    ``make_spec("chamfer", contradiction=1.0).name -> "chamfer_neg"``.
    """
    if not isinstance(family, str) or family not in FAMILIES:
        raise DistanceSpecError(f"unknown family {family!r}; use one of {sorted(FAMILIES)}")
    fam = FAMILIES[family]
    unknown = set(params) - set(fam.defaults)
    if unknown:
        raise DistanceSpecError(f"{family}: unknown parameters {sorted(unknown)}; known: {sorted(fam.defaults)}")
    p = {**fam.defaults, **params}
    # real numbers (ints, numpy scalars) become Python floats, iteration caps Python ints: names stay stable
    for k in ("eps", "tau", "alpha", "stop_thr", "tol", "rho"):
        if k in p and _is_real(p[k]):
            try:
                p[k] = float(p[k])
            except OverflowError:  # an int beyond float64
                raise DistanceSpecError(f"{family}: parameter {k}={p[k]!r} is beyond float64") from None
    if "max_iter" in p and isinstance(p["max_iter"], numbers.Integral) and not isinstance(p["max_iter"], bool):
        p["max_iter"] = int(p["max_iter"])
    if "rescale" in p and isinstance(p["rescale"], np.bool_):
        p["rescale"] = bool(p["rescale"])
    _check_params(family, p)
    c = _check_contradiction(family, contradiction)
    if name is None:
        name = family
        if fam.primary is not None and not (family == "gw" and p["eps"] == fam.defaults["eps"]):
            name += "_" + fam.format_primary(p[fam.primary])
        if not p.get("rescale", True):
            name += "_raw"
        extra = [f"{k}={_fmt(v)}" for k, v in p.items()
                 if k not in (fam.primary, "rescale") and v != fam.defaults[k]]
        if extra:
            name += "[" + ",".join(extra) + "]"
        if c > 0:
            name += "_neg" if c == 1.0 else f"_neg_{_fmt(c)}"
    desc = fam.describe(p)
    if c > 0:
        desc += f"; negation-aware (ours): cost max(M, {_fmt(c)} x contradiction)"
    return DistanceSpec(name=name, family=family, params=p, description=desc, exact=True, contradiction=c)


#: the 15 settings of the paper, by name
PAPER_SETTINGS: tuple[DistanceSpec, ...] = (
    make_spec("chamfer"),
    make_spec("hausdorff"),
    make_spec("ot"),
    make_spec("sinkhorn", eps=0.01),
    make_spec("sinkhorn", eps=0.1),
    make_spec("sinkhorn", eps=0.5),
    make_spec("uot", tau=0.5, eps=0.1),
    make_spec("uot", tau=1.0, eps=0.1),
    make_spec("gw", eps=0.1),
    make_spec("hung_nn"),
    make_spec("hung_pen", alpha=0.1),
    make_spec("hung_pen", alpha=0.5),
    make_spec("partial", rho="adaptive"),
    make_spec("partial", rho=0.5),
    make_spec("partial", rho=0.8),
)
REGISTRY: dict[str, DistanceSpec] = {s.name: s for s in PAPER_SETTINGS}

#: our settings registered beside the paper's (origin "sdr extension"): the unscaled transport variants of
#: the paper's OT / Sinkhorn / UOT / partial settings, and two negation-aware settings (module doc)
EXTENSION_SETTINGS: tuple[DistanceSpec, ...] = (
    make_spec("ot", rescale=False),
    make_spec("sinkhorn", eps=0.1, rescale=False),
    make_spec("uot", tau=1.0, eps=0.1, rescale=False),
    make_spec("partial", rho=0.8, rescale=False),
    make_spec("partial", rho="adaptive", rescale=False),
    make_spec("chamfer", contradiction=1.0),
    make_spec("hung_nn", contradiction=1.0),
)
EXTENSIONS: dict[str, DistanceSpec] = {s.name: s for s in EXTENSION_SETTINGS}

_RAW_RE = re.compile(r"^(.+)_raw$")
_NEG_RE = re.compile(r"^(.+)_neg(?:_([0-9.eE+-]+))?$")


def available_distances(include_extensions: bool = False) -> list[str]:
    """Names of the registered settings: the paper's 15 in paper order, then ours with ``include_extensions``."""
    return list(REGISTRY) + (list(EXTENSIONS) if include_extensions else [])


def registry_table(include_extensions: bool = True):
    """The registry as a DataFrame: name, family, origin (``paper`` / ``sdr extension``), params, description.

    Example: ``registry_table().query("origin == 'paper'").shape[0] -> 15``.
    """
    import pandas as pd

    specs = list(REGISTRY.values()) + (list(EXTENSIONS.values()) if include_extensions else [])
    return pd.DataFrame([{"name": s.name, "family": s.family, "origin": s.origin,
                          "params": ", ".join([f"{k}={v}" for k, v in s.params.items()]
                                              + ([f"contradiction={s.contradiction}"] if s.negation_aware else [])),
                          "description": s.description} for s in specs])


def distance_key(name: "str | DistanceSpec") -> tuple:
    """The canonical key of a distance name (:attr:`DistanceSpec.key`): equal for two spellings of one setting.

    Example: ``distance_key("sinkhorn_0.1") == distance_key("sinkhorn_0.10")``; raises as :func:`get`.
    """
    return get(name).key


def get(name: "str | DistanceSpec") -> DistanceSpec:
    """Look up a registered setting, or parse ``family_value`` into a new one.

    Example: ``get("sinkhorn_0.05").params["eps"] -> 0.05``.

    Raises :class:`UnknownDistanceError` (a ``KeyError``) for a name that is neither,
    :class:`DistanceSpecError` for unusable parameters (also of a hand-built spec) and
    :class:`DistanceNameTypeError` (a ``TypeError``) for a name that is not a str or spec.
    """
    if isinstance(name, DistanceSpec):
        # a hand-built spec skips make_spec: check it the same way (cheap; every call goes through here)
        fam = FAMILIES.get(name.family) if isinstance(name.family, str) else None
        if fam is None or not isinstance(name.params, dict) or set(name.params) != set(fam.defaults):
            raise DistanceSpecError(f"DistanceSpec {name.name!r}: family {name.family!r} with parameters "
                                    f"{sorted(name.params) if isinstance(name.params, dict) else name.params!r} "
                                    "is not a complete setting; build specs with make_spec()")
        _check_params(name.family, name.params)
        _check_contradiction(name.family, name.contradiction)
        return name
    if not isinstance(name, str):
        raise DistanceNameTypeError(f"distance name must be a str or DistanceSpec, got {type(name).__name__}")
    if name in REGISTRY:
        return REGISTRY[name]
    if name in EXTENSIONS:
        return EXTENSIONS[name]
    m = _NEG_RE.match(name)
    if m:  # <setting>_neg or <setting>_neg_<c>
        try:
            base = get(m.group(1))
            c = 1.0 if m.group(2) is None else float(m.group(2))
        except (UnknownDistanceError, ValueError):
            base = None
        if base is not None and not base.needs_presence:
            if c == 0:
                raise DistanceSpecError(f"{name!r}: a negation-aware setting needs a contradiction weight in "
                                        "(0, 1]; for the plain distance drop the _neg suffix")
            if base.family == "gw":
                _check_contradiction("gw", c)
            return make_spec(base.family, contradiction=c, **base.params)
    m = _RAW_RE.match(name)
    if m:  # <setting>_raw of a transport family
        try:
            base = get(m.group(1))
        except UnknownDistanceError:
            base = None
        if base is not None and base.params.get("rescale") is True and not base.negation_aware:
            return make_spec(base.family, **{**base.params, "rescale": False})
        if base is not None and not FAMILIES[base.family].rescalable:
            rescalable = [f for f, fam in FAMILIES.items() if fam.rescalable]
            raise DistanceSpecError(f"{name!r}: only {rescalable} have an unscaled (_raw) variant; "
                                    f"{base.family} " + ("compares intra-set costs only (no cross-set scale to keep)"
                                                         if base.family == "gw" else "already uses the unscaled M"))
    if name in FAMILIES and FAMILIES[name].primary is None:  # a registered family's own name
        return make_spec(name)
    for family in sorted(FAMILIES, key=len, reverse=True):  # family_<primary value>; longest name first
        prim = FAMILIES[family].primary
        m = re.fullmatch(re.escape(family) + r"_([0-9.eE+-]+)", name) if prim is not None else None
        if m:
            try:
                v = float(m.group(1))
            except ValueError:
                break
            return make_spec(family, **{prim: v})
    grammar = ", ".join(f"{f}_<{fam.primary}>" for f, fam in FAMILIES.items() if fam.primary is not None)
    raise UnknownDistanceError(f"unknown distance {name!r}; registered: {list(REGISTRY)}, ours: {list(EXTENSIONS)}; "
                               f"or use family_value ({grammar}), <setting>_raw (OT, Sinkhorn, UOT, partial), "
                               "<setting>_neg[_<c>] (not GW) or make_spec()")


def check_mode(mode: object) -> None:
    """Raise :class:`DistanceSpecError` unless ``mode`` is one of :data:`NONCONVERGENCE_MODES`."""
    if not isinstance(mode, str) or mode not in NONCONVERGENCE_MODES:
        raise DistanceSpecError(f"on_nonconvergence must be one of {NONCONVERGENCE_MODES}, got {mode!r}")


def handle_nonconvergence(spec: DistanceSpec, count: int, total: int, mode: str) -> None:
    """Warn (:class:`ConvergenceWarning`), raise (:class:`ConvergenceError`) or ignore."""
    check_mode(mode)
    if count == 0 or mode == "ignore":
        return
    p = spec.params
    limit = f"max_iter={p.get('max_iter')}, threshold={p.get('stop_thr', p.get('tol'))}"
    msg = (f"{spec.name}: {count} of {total} pair(s) did not converge ({limit}); values are those of the "
           "last iterate. Raise max_iter (make_spec(..., max_iter=...)) or eps.")
    if mode == "raise":
        raise ConvergenceError(msg)
    warnings.warn(msg, ConvergenceWarning, stacklevel=3)


def set_distance(A: object, B: object, name: "str | DistanceSpec", *, presence: "tuple | None" = None,
                 on_nonconvergence: str = "warn") -> float:
    """The reference distance ``D(A, B)`` of one pair (POT / SciPy, eqs. 12-21).

    Parameters
    ----------
    A, B : array-like, shape (n, d) and (m, d)
        Non-empty sets of sentence embeddings; rows are normalised (eq. 11).
    name : str or DistanceSpec
        A registered name, ``family_value`` or a spec from :func:`make_spec`.
    presence : pair (P_A, P_B) of array-like (n, 14), (m, 14), optional
        Per-sentence presence (:func:`sdrlib.clinical.sentence_presence`); required by a negation-aware
        setting (``chamfer_neg``: the cost ``M'`` of :mod:`sdrlib.distances.negation`) and by
        ``chamfer_recall_<alpha>`` (``A`` the generated set, ``B`` the reference), ignored by a plain one.
    on_nonconvergence : {"warn", "raise", "ignore"}
        Reaction when an iterative solver stops at its cap.

    Returns
    -------
    float in [0, 1] (``hung_pen`` with ``clip=False``: in [0, 1 + alpha |n - m|]), finite.

    Raises
    ------
    DistanceInputError
        unusable sets (empty, NaN / inf, zero rows, wrong shape or dimension, non-numeric), presence of
        the wrong shape or values.
    DistanceSpecError
        unknown name, unusable parameters (see the module doc), bad ``on_nonconvergence``, a
        negation-aware setting without ``presence``.
    DistanceRangeError
        the solver's value is NaN / inf or leaves [0, 1] by more than round-off.

    Example: ``set_distance(np.eye(3)[:2], np.eye(3)[:2], "ot") -> 0.0``;
    ``set_distance(E1, E2, "chamfer_neg", presence=(P1, P2))``.
    """
    spec = get(name)
    check_mode(on_nonconvergence)
    if spec.needs_presence:
        PA, PB = presence_pair(presence, spec.name)
        a, b = as_pair(A, B)
        pa, pb = check_presence(PA, len(a), "PA"), check_presence(PB, len(b), "PB")
        if spec.negation_aware:
            val, ok = spec.reference(a, b, M=negation_cost(a, b, pa, pb, spec.contradiction))
        else:
            val, ok = spec.reference(a, b, presence=(pa, pb))
    else:
        a, b = as_pair(A, B)
        val, ok = spec.reference(a, b)
    handle_nonconvergence(spec, int(not ok), 1, on_nonconvergence)
    return val


def reward(distance: "float | np.ndarray") -> "float | np.ndarray":
    """The similarity reward ``1 - clip(D, 0, 1)``: in [0, 1] for every setting, ``hung_pen`` unclipped too.

    Parameters
    ----------
    distance : real number or array-like of real numbers
        Distances (any shape); values above 1 (``hung_pen`` with ``clip=False``) give 0,
        values below 0 give 1.

    Returns
    -------
    float for a scalar, else an ndarray of the input's shape; every value in [0, 1].

    Raises
    ------
    DistanceInputError
        ``distance`` is not a real number or an array of them (a string, bool, None,
        complex, an object array); the message names ``distance`` and its type.
    DistanceRangeError
        A NaN or infinite distance. No setting produces one (every distance call raises
        :class:`DistanceRangeError` instead), so it can only come from a failed computation;
        mapping it to a value would hide the failure. :class:`sdrlib.rewards.RewardScorer`
        catches a distance failure on one pair itself and scores that section 0, counted
        (``counts["sem_failed"]``); this helper never chooses that value silently.

    Example: ``reward(0.25) -> 0.75``; ``reward(1.7) -> 0.0``; ``reward(float("nan"))`` raises.
    """
    try:
        arr = np.asarray(distance)
    except (TypeError, ValueError) as e:  # ragged nested lists
        raise DistanceInputError(f"reward: distance must be a real number or an array of them, got "
                                 f"{type(distance).__name__} ({e})") from None
    if arr.dtype.kind not in "iuf":
        raise DistanceInputError(f"reward: distance must be a real number or an array of them, got "
                                 f"{type(distance).__name__} of dtype {arr.dtype} ({distance!r:.80})")
    bad = ~np.isfinite(arr)
    if bad.any():
        where = "" if arr.ndim == 0 else f" at index {tuple(int(i) for i in np.argwhere(bad)[0])}"
        value = float(arr[bad].flat[0])
        raise DistanceRangeError(f"reward: distance{where} is {value!r}, not a distance (NaN / inf come only from a "
                                 "failed computation); a distance lies in [0, 1]")
    r = 1.0 - np.clip(arr, 0.0, 1.0)
    return float(r) if np.ndim(r) == 0 else r
