"""The built-in families, registered on import: the nine of the paper's appendix A and ours
(``chamfer_recall``), each naming its reference (:mod:`sdrlib.distances.reference`,
:mod:`sdrlib.distances.recall`) and its engine kernels (:mod:`sdrlib.distances.engine`, by name: the engine is
imported on first use), registered on the first read of :data:`~sdrlib.distances.registry.FAMILIES` in this
order, with the float64 ``eps`` floors of the iterative solvers (the package docstring derives
them) and the families' own parameter checks. Leaves out the settings built from them
(:mod:`sdrlib.distances.registry._spec`).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from sdrlib.distances.errors import DistanceSpecError
from sdrlib.distances.registry._family import FAMILIES, Family, _is_real


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


def _mt(p: dict[str, Any]) -> str:
    """The transported cost, as a description names it."""
    return "M~ = M / max M" if p.get("rescale", True) else "the unscaled cost M (ours: _raw)"


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
    FAMILIES.register(_fam)
del _fam
