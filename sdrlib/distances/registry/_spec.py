"""Settings: :class:`DistanceSpec` (a family plus complete parameters), :func:`make_spec` with the checks every
family shares, and the registered settings: the paper's 15 (:data:`PAPER_SETTINGS`, :data:`REGISTRY`) and ours
(:data:`EXTENSION_SETTINGS`, :data:`EXTENSIONS`). Leaves out parsing a name into a setting
(:mod:`sdrlib.distances.registry._names`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdrlib.distances.costs import ZERO_COST_ATOL, check_range
from sdrlib.distances.errors import DistanceSpecError
from sdrlib.distances.negation import presence_pair, rescale_divisor
from sdrlib.distances.registry._family import FAMILIES, _fmt, _is_real, resolve


#: iteration caps above this are refused (the kernels count iterations in int64; no solve needs more)
MAX_ITER_LIMIT = 10 ** 9


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
        0 for a plain setting; c in (0, 1] for a negation-aware one (cost ``max(M, c X, c (k_i + k'_j))``,
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
            out = fn(A, B, PA, PB, **self.params)
        elif M is None:
            if self.negation_aware:
                presence_pair(None, self.name)  # raises: the negation-aware cost needs presence
            out = fn(A, B, **self.params)
        elif self.negation_aware and self.params.get("rescale", False):
            # c is the top of the plain cost's scale: M' / max(max M, c) over the plain cosine cost M, so that a
            # floor above c (a second wrong finding) adds cost (sdrlib.distances.negation, "Scale")
            div = rescale_divisor(A, B, self.contradiction)
            Ms = M / div if float(M.max()) > ZERO_COST_ATOL and div > ZERO_COST_ATOL else np.zeros_like(M)
            out = fn(A, B, **{**self.params, "rescale": False}, M=Ms)
        else:
            out = fn(A, B, **self.params, M=M)
        val, ok = _reference_pair(out, fam.name)
        if self.negation_aware and self.upper is not None and val > self.upper:
            val = self.upper  # more wrong findings than the scale holds: the top (sdrlib.distances.negation)
        return check_range(float(val), self.name, self.upper), ok


def _reference_pair(out: Any, family: str) -> tuple[float, bool]:
    """A family reference's answer as ``(value, converged)``, or :class:`DistanceSpecError` naming the family
    (a plugin's reference that returns a bare float is a bug of that reference, not an unpack error)."""
    if not (isinstance(out, tuple) and len(out) == 2 and _is_real(out[0])):
        raise DistanceSpecError(f"family {family!r}: its reference returned {out!r}; a reference returns "
                                "(value, converged), e.g. (0.25, True)")
    return float(out[0]), bool(out[1])


def _check_params(family: str, p: dict[str, Any]) -> None:
    """Raise :class:`DistanceSpecError` for a parameter the family's solver cannot use (the floors:
    :mod:`sdrlib.distances.registry`)."""
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
        desc += f"; negation-aware (ours): cost max(M, {_fmt(c)} x wrong findings)"
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
#: the paper's OT / Sinkhorn / UOT / partial settings, and two negation-aware settings
#: (:mod:`sdrlib.distances.registry`)
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
