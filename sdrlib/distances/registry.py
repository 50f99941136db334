"""The registry of set-distance settings: the 15 the paper evaluates, and any other by parameter.

A setting is a :class:`DistanceSpec`: a family (one of the nine of appendix A)
plus its parameters. New settings are made with :func:`make_spec` or parsed from
a name by :func:`get` (``get("sinkhorn_0.05")``); nothing is copied per setting.

``exact`` on a spec means the batched engine (:mod:`sdrlib.distances.engine`)
computes the same quantity as the per-pair reference (agreement to 1e-5 in
float64, checked in the tests); every setting this module can build is exact.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from sdrlib.distances import reference as ref
from sdrlib.distances.costs import as_pair
from sdrlib.distances.errors import ConvergenceError, ConvergenceWarning

#: on_nonconvergence values
NONCONVERGENCE_MODES = ("warn", "raise", "ignore")


@dataclass(frozen=True)
class _Family:
    fn: Callable[..., tuple[float, bool]]
    defaults: dict[str, Any]
    primary: str | None          # the parameter written into the name ("sinkhorn_0.1")
    symmetric: bool
    iterative: bool
    describe: Callable[[dict[str, Any]], str]


FAMILIES: dict[str, _Family] = {
    "chamfer": _Family(ref.chamfer, {}, None, True, False,
                       lambda p: "Chamfer (eq. 12): mean of the two directed mean nearest-neighbour costs"),
    "hausdorff": _Family(ref.hausdorff, {}, None, True, False,
                         lambda p: "Hausdorff (eq. 13): worst nearest-neighbour cost in either direction"),
    "ot": _Family(ref.ot_emd, {}, None, True, False,
                  lambda p: "exact OT / Wasserstein (eq. 14) on M~ between uniform measures"),
    "sinkhorn": _Family(ref.sinkhorn, {"eps": 0.1, "stop_thr": 1e-9, "max_iter": 1000}, "eps", True, True,
                        lambda p: f"Sinkhorn (eq. 15), eps={p['eps']}: linear cost <gamma_eps, M~> of the "
                                  "entropic plan"),
    "uot": _Family(ref.uot, {"tau": 1.0, "eps": 0.1, "stop_thr": 1e-9, "max_iter": 1000}, "tau", True, True,
                   lambda p: f"unbalanced OT (eq. 16), eps={p['eps']}, tau={p['tau']}: linear cost of the "
                             "entropic KL-relaxed plan"),
    "gw": _Family(ref.gw, {"eps": 0.1, "tol": 1e-9, "max_iter": 1000}, "eps", True, True,
                  lambda p: f"entropic Gromov-Wasserstein (eq. 17), eps={p['eps']}: GW loss of the plan; "
                            "1 when a set has < 2 sentences"),
    "hung_nn": _Family(ref.hung_nn, {}, None, True, False,
                       lambda p: "Hungarian + nearest-neighbour cost for unmatched (eq. 19), / max(n, m)"),
    "hung_pen": _Family(ref.hung_pen, {"alpha": 0.1, "clip": True}, "alpha", True, False,
                        lambda p: f"Hungarian mean matched cost + alpha|n-m| (eq. 20), alpha={p['alpha']}"
                                  + (", clipped at 1" if p["clip"] else ", unclipped (can exceed 1)")),
    "partial": _Family(ref.partial, {"rho": "adaptive"}, "rho", True, False,
                       lambda p: "partial OT (eq. 21) moving mass "
                                 + ("rho=min(n,m)/max(n,m)" if p["rho"] == "adaptive" else f"rho={p['rho']}")),
}


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
    """

    name: str
    family: str
    params: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    exact: bool = True

    @property
    def symmetric(self) -> bool:
        """D(A, B) = D(B, A) by definition."""
        return FAMILIES[self.family].symmetric

    @property
    def iterative(self) -> bool:
        """Solved by an iterative method with a stopping rule (Sinkhorn, UOT, GW)."""
        return FAMILIES[self.family].iterative

    def reference(self, A: np.ndarray, B: np.ndarray) -> tuple[float, bool]:
        """Run the reference on validated sets; returns ``(value in [0, 1], converged)``."""
        val, ok = FAMILIES[self.family].fn(A, B, **self.params)
        return min(1.0, max(0.0, float(val))) if self.params.get("clip", True) else max(0.0, float(val)), ok


def _fmt(v: Any) -> str:
    if isinstance(v, (str, bool)) or (isinstance(v, int) and not isinstance(v, bool)):
        return str(v)
    return repr(float(v))


def _check_params(family: str, p: dict[str, Any]) -> None:
    def pos(key: str) -> None:
        v = p[key]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{family}: parameter {key} must be a positive finite number, got {v!r}")

    for key in ("eps", "tau", "alpha", "stop_thr", "tol"):
        if key in p:
            pos(key)
    if "max_iter" in p and (not isinstance(p["max_iter"], int) or p["max_iter"] < 1):
        raise ValueError(f"{family}: max_iter must be a positive int, got {p['max_iter']!r}")
    if family == "uot" and p["eps"] < 0.005:
        raise ValueError("uot: eps < 0.005 underflows the kernel-domain UOT solver; use eps >= 0.005")
    if family == "partial" and p["rho"] != "adaptive":
        r = p["rho"]
        if not isinstance(r, (int, float)) or isinstance(r, bool) or not (0 < r <= 1):
            raise ValueError(f"partial: rho must be 'adaptive' or in (0, 1], got {r!r}")
    if family == "hung_pen" and not isinstance(p["clip"], bool):
        raise ValueError(f"hung_pen: clip must be a bool, got {p['clip']!r}")


def make_spec(family: str, name: str | None = None, **params: Any) -> DistanceSpec:
    """Build a setting of ``family`` from parameters (defaults filled in).

    The name is ``family`` or ``family_<primary>`` (``sinkhorn_0.05``), followed by
    ``[key=value,...]`` for non-default secondary parameters, unless ``name`` is given.
    Example: ``make_spec("sinkhorn", eps=0.05).name -> "sinkhorn_0.05"``.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; use one of {sorted(FAMILIES)}")
    fam = FAMILIES[family]
    unknown = set(params) - set(fam.defaults)
    if unknown:
        raise ValueError(f"{family}: unknown parameters {sorted(unknown)}; known: {sorted(fam.defaults)}")
    p = {**fam.defaults, **params}
    for k in ("eps", "tau", "alpha", "stop_thr", "tol"):
        if k in p and isinstance(p[k], int) and not isinstance(p[k], bool):
            p[k] = float(p[k])
    if family == "partial" and isinstance(p["rho"], int) and not isinstance(p["rho"], bool):
        p["rho"] = float(p["rho"])
    _check_params(family, p)
    if name is None:
        name = family
        if fam.primary is not None and not (family == "gw" and p["eps"] == fam.defaults["eps"]):
            name += "_" + _fmt(p[fam.primary])
        extra = [f"{k}={_fmt(v)}" for k, v in p.items()
                 if k != fam.primary and v != fam.defaults[k]]
        if extra:
            name += "[" + ",".join(extra) + "]"
    return DistanceSpec(name=name, family=family, params=p, description=fam.describe(p), exact=True)


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

_NAME_RE = re.compile(r"^(sinkhorn|uot|gw|hung_pen|partial)_([0-9.eE+-]+)$")


def available_distances() -> list[str]:
    """Names of the registered settings (the paper's 15), in paper order."""
    return list(REGISTRY)


def get(name: "str | DistanceSpec") -> DistanceSpec:
    """Look up a registered setting, or parse ``family_value`` into a new one.

    Example: ``get("sinkhorn_0.05").params["eps"] -> 0.05``.
    """
    if isinstance(name, DistanceSpec):
        return name
    if not isinstance(name, str):
        raise TypeError(f"distance name must be a str or DistanceSpec, got {type(name).__name__}")
    if name in REGISTRY:
        return REGISTRY[name]
    m = _NAME_RE.match(name)
    if m:
        family, value = m.group(1), m.group(2)
        try:
            v = float(value)
        except ValueError:
            v = None
        if v is not None:
            return make_spec(family, **{FAMILIES[family].primary: v})  # type: ignore[arg-type]
    raise KeyError(f"unknown distance {name!r}; registered: {list(REGISTRY)}; or use family_value "
                   "(sinkhorn_<eps>, uot_<tau>, gw_<eps>, hung_pen_<alpha>, partial_<rho>) or make_spec()")


def handle_nonconvergence(spec: DistanceSpec, count: int, total: int, mode: str) -> None:
    """Warn (:class:`ConvergenceWarning`), raise (:class:`ConvergenceError`) or ignore."""
    if mode not in NONCONVERGENCE_MODES:
        raise ValueError(f"on_nonconvergence must be one of {NONCONVERGENCE_MODES}, got {mode!r}")
    if count == 0 or mode == "ignore":
        return
    p = spec.params
    limit = f"max_iter={p.get('max_iter')}, threshold={p.get('stop_thr', p.get('tol'))}"
    msg = (f"{spec.name}: {count} of {total} pair(s) did not converge ({limit}); values are those of the "
           "last iterate. Raise max_iter (make_spec(..., max_iter=...)) or eps.")
    if mode == "raise":
        raise ConvergenceError(msg)
    warnings.warn(msg, ConvergenceWarning, stacklevel=3)


def set_distance(A: object, B: object, name: "str | DistanceSpec", *, on_nonconvergence: str = "warn") -> float:
    """The reference distance ``D(A, B)`` of one pair (POT / SciPy, eqs. 12-21).

    Parameters
    ----------
    A, B : array-like, shape (n, d) and (m, d)
        Non-empty sets of sentence embeddings; rows are normalised (eq. 11).
    name : str or DistanceSpec
        A registered name, ``family_value`` or a spec from :func:`make_spec`.
    on_nonconvergence : {"warn", "raise", "ignore"}
        Reaction when an iterative solver stops at its cap.

    Returns
    -------
    float in [0, 1] (``hung_pen`` with ``clip=False``: in [0, 1 + alpha |n - m|]).

    Example: ``set_distance(np.eye(3)[:2], np.eye(3)[:2], "ot") -> 0.0``.
    """
    spec = get(name)
    if on_nonconvergence not in NONCONVERGENCE_MODES:
        raise ValueError(f"on_nonconvergence must be one of {NONCONVERGENCE_MODES}, got {on_nonconvergence!r}")
    a, b = as_pair(A, B)
    val, ok = spec.reference(a, b)
    handle_nonconvergence(spec, int(not ok), 1, on_nonconvergence)
    return val


def reward(distance: "float | np.ndarray") -> "float | np.ndarray":
    """The similarity reward ``1 - clip(D, 0, 1)``: in [0, 1] for every setting, ``hung_pen`` unclipped too.

    Example: ``reward(0.25) -> 0.75``; ``reward(1.7) -> 0.0``.
    """
    r = 1.0 - np.clip(distance, 0.0, 1.0)
    return float(r) if np.ndim(r) == 0 else r
