"""The family registry: :class:`Family` (one registration per distance family), :data:`FAMILIES`, the checks of a
registration (:func:`_check_family`; the public :func:`~sdrlib.distances.registry.register_family`, which also
refuses a name that already means a setting, is in :mod:`._names`), :func:`unregister_family` and :func:`resolve`
(a family's ``"module:function"`` references). Leaves out the built-in families
(:mod:`sdrlib.distances.registry._builtin`) and settings (:mod:`sdrlib.distances.registry._spec`).
"""

from __future__ import annotations

import importlib
import numbers
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from sdrlib.distances.errors import DistanceSpecError
from sdrlib.extension import Registry


def _fmt(v: Any) -> str:
    """A parameter value as written into a setting's name (numbers as ``repr(float)``)."""
    if isinstance(v, (str, bool)) or (isinstance(v, int) and not isinstance(v, bool)):
        return str(v)
    return repr(float(v))


def _is_real(v: Any) -> bool:
    """A real number that is not a bool (numpy scalars included)."""
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


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


def _check_family(family: Family) -> None:
    """What every family registration must satisfy (:func:`register_family`'s checks but the setting-name one)."""
    if not isinstance(family, Family):
        raise DistanceSpecError(f"register_family needs a Family, got {type(family).__name__}")
    name = family.name
    if not isinstance(name, str) or not _FAMILY_NAME.match(name) or name.split("_")[-1] in ("raw", "neg"):
        raise DistanceSpecError(f"family name {name!r}: use lower-case words joined by '_' (not ending in _raw "
                                "or _neg, which the setting grammar adds)")
    if family.primary is not None and family.primary not in family.defaults:
        raise DistanceSpecError(f"family {name!r}: primary parameter {family.primary!r} has no default")
    if family.rescalable and "rescale" not in family.defaults:
        raise DistanceSpecError(f"family {name!r}: rescalable needs a 'rescale' default")
    if family.presence not in PRESENCE_MODES:
        raise DistanceSpecError(f"family {name!r}: presence must be one of {PRESENCE_MODES}, got "
                                f"{family.presence!r}")
    for what in ("reference", "kernel", "neg_kernel"):
        ref = getattr(family, what)
        if not (callable(ref) or (isinstance(ref, str) and _FUNCTION_REF.match(ref))
                or (what == "neg_kernel" and ref is None)):
            raise DistanceSpecError(f"family {name!r}: {what} must be a function or a 'module:function' string, "
                                    f"got {ref!r}")


_FAMILY_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*$")
_FUNCTION_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")

#: the registered families, by name (:func:`~sdrlib.distances.registry.register_family`); the built-in ones are
#: those of :mod:`sdrlib.distances.registry._builtin`, registered on the first read
FAMILIES: Registry[Family] = Registry("distance family", error=DistanceSpecError, check=_check_family,
                                      builtins=("sdrlib.distances.registry._builtin",))


def unregister_family(name: str) -> None:
    """Remove a family registered with :func:`register_family` (tests, notebooks); built-in ones stay."""
    FAMILIES.unregister(name)
