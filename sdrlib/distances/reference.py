"""Per-pair reference implementations of appendix A, eqs. (12)-(21), on POT and SciPy.

Each function takes two validated sets (float64, unit-norm rows; see
:func:`sdrlib.distances.costs.as_pair`) and returns ``(value, converged)``.
They follow the paper literally; the choices the paper leaves open are:

- **Entropic families return the linear transport cost of the regularised plan**
  (``<gamma*, M~>`` for Sinkhorn and UOT, the quadratic GW loss of ``T*`` for GW),
  which is what POT's ``sinkhorn2``, ``sinkhorn_unbalanced2(returnCost="linear")``
  and ``entropic_gromov_wasserstein2`` return. The objectives of eqs. (15)-(17)
  themselves include ``-eps H`` (and the KL terms for UOT), which can be negative
  or exceed 1; the paper states the costs lie in [0, 1], which only the linear
  cost satisfies. Consequence: for eps > 0, ``D(A, A)`` is not exactly 0 (the
  entropic plan leaks mass off the diagonal); it tends to 0 as eps -> 0.
- **UOT uses the plain entropy of eq. (16)** (POT ``reg_type="entropy"``, kernel
  ``exp(-M~/eps)``), not POT's default ``KL(gamma | p q^T)``.
- **M = 0**: when every point coincides, ``M~`` is undefined; the transport
  families return 0 (:func:`sdrlib.distances.costs.rescale`).
- **Unscaled variants (ours)**: OT, Sinkhorn, UOT and partial OT take ``rescale`` (default True, the
  paper's ``M~``); ``rescale=False`` transports ``M`` itself (the ``_raw`` settings of the registry).
  The ``M = 0`` shortcut applies to both.
- **Negation-aware variants (ours)**: every function except GW takes an optional precomputed cost
  ``M`` (default: the cosine cost of eq. 11 between A and B; when ``M`` is given, ``A`` and ``B`` are not
  read by the transport families, which the engine's large-pair route, :mod:`._large`, relies on); :func:`sdrlib.distances.set_distance`
  passes the negation-aware cost ``M'`` (``negation.negation_cost``) there. The rescaling, when on, is applied to the cost given.
- **GW** with ``min(n, m) < 2`` returns 1.0 (the paper's zero-similarity fallback).
- **Partial OT**: the transported mass is ``min(rho, sum p, sum q)``; for n = m and
  rho = 1, ``sum p`` is ``1 - 1e-16`` for some n and POT would call rho = 1 infeasible.
- **Hungarian-Pen** can exceed 1 as written (mean matched cost + alpha |n - m|);
  with ``clip=True`` (the default of every registered setting) the value is
  ``min(1, .)`` so that the reward ``1 - D`` stays in [0, 1]; ``clip=False`` keeps eq. (20) raw.
- Every returned value goes through :func:`sdrlib.distances.costs.check_range` (in
  :meth:`DistanceSpec.reference`): round-off within ``RANGE_ATOL`` = 1e-6 of [0, 1]
  (e.g. -1e-17) is clipped; NaN / inf or a larger excursion raises ``DistanceRangeError``.
  The one family that can leave [0, 1] at valid parameters is UOT: its linear cost is at
  most the plan's mass, which exceeds 1 when eps is large against tau (tau = 1, eps = 10:
  values up to ~19 on 8-sentence sets); those pairs raise rather than become a silent 1.

Iterative solvers use POT's own stopping rules; ``converged`` is False when a
solver stopped at its iteration cap above its threshold (POT itself is silent for
UOT and for the outer GW loop). Left out: the debiased Sinkhorn divergence and
the non-entropic GW (the paper uses neither).

POT is imported by the functions that call it, on their first call: importing it takes seconds (it loads torch
when torch is installed), and the engine imports this module for its large-pair route, which report-sized sets
never take.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment

from sdrlib.distances.costs import ZERO_COST_ATOL, cosine_cost, rescale


def _uniform(n: int) -> np.ndarray:
    return np.full(n, 1.0 / n)


def _cost(A: np.ndarray, B: np.ndarray, M: "np.ndarray | None") -> np.ndarray:
    """The pair's cost: ``M`` when given (negation-aware), else the cosine cost of eq. (11)."""
    return cosine_cost(A, B) if M is None else M


def _transport_cost(A: np.ndarray, B: np.ndarray, M: "np.ndarray | None", scale: bool) -> np.ndarray:
    """``M~ = M / max M`` (``scale``) or ``M`` itself; all zeros when ``max M <= ZERO_COST_ATOL`` either way."""
    C = _cost(A, B, M)
    if scale:
        return rescale(C)
    return np.zeros_like(C) if float(C.max()) <= ZERO_COST_ATOL else C


def chamfer(A: np.ndarray, B: np.ndarray, M: "np.ndarray | None" = None) -> tuple[float, bool]:
    """Eq. (12): mean of the two directed mean nearest-neighbour costs (on M, not M~)."""
    M = _cost(A, B, M)
    return 0.5 * (M.min(axis=1).mean() + M.min(axis=0).mean()), True


def hausdorff(A: np.ndarray, B: np.ndarray, M: "np.ndarray | None" = None) -> tuple[float, bool]:
    """Eq. (13): the worst nearest-neighbour cost in either direction (on M)."""
    M = _cost(A, B, M)
    return max(M.min(axis=1).max(), M.min(axis=0).max()), True


def ot_emd(A: np.ndarray, B: np.ndarray, rescale: bool = True,
           M: "np.ndarray | None" = None) -> tuple[float, bool]:
    """Eq. (14): exact OT between uniform measures on ``M~`` (``ot.emd2``); on ``M`` when not ``rescale``."""
    import ot

    Mt = _transport_cost(A, B, M, rescale)
    if not Mt.any():
        return 0.0, True
    return float(ot.emd2(_uniform(Mt.shape[0]), _uniform(Mt.shape[1]), Mt)), True


def sinkhorn(A: np.ndarray, B: np.ndarray, eps: float, stop_thr: float = 1e-9,
             max_iter: int = 1000, rescale: bool = True, M: "np.ndarray | None" = None) -> tuple[float, bool]:
    """Eq. (15): ``<gamma_eps, M~>`` with POT's log-domain Sinkhorn (exact for tiny eps); ``M`` if not ``rescale``."""
    import ot

    Mt = _transport_cost(A, B, M, rescale)
    if not Mt.any():
        return 0.0, True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-convergence is reported through `converged`
        val, log = ot.sinkhorn2(_uniform(Mt.shape[0]), _uniform(Mt.shape[1]), Mt, eps, method="sinkhorn_log",
                                numItermax=max_iter, stopThr=stop_thr, log=True)
    converged = bool(log["err"]) and float(log["err"][-1]) < stop_thr
    return float(val), converged


def uot(A: np.ndarray, B: np.ndarray, tau: float, eps: float = 0.1, stop_thr: float = 1e-9,
        max_iter: int = 1000, rescale: bool = True, M: "np.ndarray | None" = None) -> tuple[float, bool]:
    """Eq. (16): linear cost ``<gamma, M~>`` of the entropic UOT plan (KL marginals, weight tau).

    POT ``sinkhorn_unbalanced2(reg_type="entropy", returnCost="linear")``; its stopping
    rule is the relative change of the scalings (``stop_thr``). The value is bounded by the
    plan's mass, not by 1: with eps large against tau it can exceed 1 (the range check of
    :meth:`DistanceSpec.reference` then raises ``DistanceRangeError``). ``M`` instead of ``M~`` if not ``rescale``.
    """
    import ot

    Mt = _transport_cost(A, B, M, rescale)
    if not Mt.any():
        return 0.0, True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # POT warns that reg_type="entropy" overrides c
        val, log = ot.unbalanced.sinkhorn_unbalanced2(
            _uniform(Mt.shape[0]), _uniform(Mt.shape[1]), Mt, eps, tau, method="sinkhorn", reg_type="entropy",
            returnCost="linear", numItermax=max_iter, stopThr=stop_thr, log=True)
    converged = bool(log["err"]) and float(log["err"][-1]) < stop_thr
    return float(val), converged


def intra_cost(A: np.ndarray) -> np.ndarray:
    """``C^A`` of eq. (17): intra-set cosine cost rescaled by its max (zeros if all points coincide)."""
    return rescale(cosine_cost(A, A))


def gw(A: np.ndarray, B: np.ndarray, eps: float = 0.1, tol: float = 1e-9,
       max_iter: int = 1000) -> tuple[float, bool]:
    """Eq. (17): GW loss of POT's entropic GW plan (PGD, square loss, inner Sinkhorn 1000 it, 1e-9).

    ``min(n, m) < 2`` -> 1.0 (undefined, the paper's zero-similarity fallback). Two 2-sentence
    sets, a set with itself included, give 0.5 at every eps: both rescaled intra costs are
    ``[[0, 1], [1, 0]]`` and the product coupling is a fixed point of POT's iteration for this
    symmetric problem (see :mod:`sdrlib.distances.registry`, "GW's identical-set floor").

    Convergence is not the norm here: as the plan sharpens towards a permutation, POT's
    inner Sinkhorn often stops at its 1000-iteration cap, and its result then depends on
    the exact iteration path. Measured: 14 % of Findings pairs of the default profile
    (all-mpnet-base-v2 embeddings, 40 x 300 pairs), 8-19 % of structured benchmark pairs.
    Such values are returned with ``converged=False`` (the engine replays POT's
    iterations, so it agrees with them anyway).
    """
    import ot

    if min(len(A), len(B)) < 2:
        return 1.0, True
    CA, CB = intra_cost(A), intra_cost(B)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        val, log = ot.gromov.entropic_gromov_wasserstein2(
            CA, CB, _uniform(len(A)), _uniform(len(B)), loss_fun="square_loss", epsilon=eps,
            symmetric=True, max_iter=max_iter, tol=tol, solver="PGD", log=True,
            numItermax=1000, stopThr=1e-9)
    inner_ok = not any("converge" in str(w.message) or "umerical" in str(w.message) for w in caught)
    outer_ok = bool(log["err"]) and float(log["err"][-1]) <= tol
    return float(val), inner_ok and outer_ok


def _oriented(M: np.ndarray) -> np.ndarray:
    """M with the smaller set on the rows (the paper's w.l.o.g. n <= m)."""
    return M if M.shape[0] <= M.shape[1] else M.T


def hung_nn(A: np.ndarray, B: np.ndarray, M: "np.ndarray | None" = None) -> tuple[float, bool]:
    """Eq. (19): optimal injective assignment of the smaller set + NN cost of the unmatched."""
    M = _oriented(_cost(A, B, M))
    rows, cols = linear_sum_assignment(M)
    unmatched = np.setdiff1d(np.arange(M.shape[1]), cols)
    total = M[rows, cols].sum() + M[:, unmatched].min(axis=0).sum()
    return float(total / M.shape[1]), True


def hung_pen(A: np.ndarray, B: np.ndarray, alpha: float, clip: bool = True,
             M: "np.ndarray | None" = None) -> tuple[float, bool]:
    """Eq. (20): mean matched cost + ``alpha |n - m|``; ``min(1, .)`` when ``clip``."""
    M = _oriented(_cost(A, B, M))
    rows, cols = linear_sum_assignment(M)
    val = M[rows, cols].mean() + alpha * abs(M.shape[0] - M.shape[1])
    return (min(1.0, val) if clip else float(val)), True


def partial_mass(rho: float | str, n: int, m: int) -> float:
    """The mass transported by partial OT: ``rho`` ("adaptive" = min/max), capped at the total mass.

    Example: ``partial_mass("adaptive", 3, 4) -> 0.75``.
    """
    r = min(n, m) / max(n, m) if rho == "adaptive" else float(rho)
    # sum(1/n for n rows) can be 1 - 1e-16: cap so that rho = 1 stays feasible in POT
    return min(r, float(_uniform(n).sum()), float(_uniform(m).sum()))


def partial(A: np.ndarray, B: np.ndarray, rho: float | str, rescale: bool = True,
            M: "np.ndarray | None" = None) -> tuple[float, bool]:
    """Eq. (21): exact partial OT on ``M~`` (``M`` if not ``rescale``) moving mass ``rho`` (POT)."""
    import ot

    Mt = _transport_cost(A, B, M, rescale)
    if not Mt.any():
        return 0.0, True
    n, m = Mt.shape
    mass = partial_mass(rho, n, m)
    return float(ot.partial.partial_wasserstein2(_uniform(n), _uniform(m), Mt, m=mass)), True


__all__ = ["chamfer", "hausdorff", "ot_emd", "sinkhorn", "uot", "gw", "hung_nn", "hung_pen", "partial",
           "intra_cost", "partial_mass", "ZERO_COST_ATOL"]
