"""Entropic GW for *large* pairs: POT's own sequence of matrix products, in numpy.

The numba kernel (:func:`sdrlib.distances._kernels.gw_loss`) replays POT's iterations with plain
loops, which is the fast way for the small sets of a radiology report (thousands of 2x2 to 15x15
pairs, run side by side) but not for a large pair: at 2,000 x 2,000 its ``C_A T C_B`` loops and
its column-order Sinkhorn products are cache-hostile, single-threaded and ~O(n^2 m + n m^2) scalar
work per outer step, and the solve ran for minutes where POT took 13 s. POT computes the GW
gradient with the decomposition of Peyre et al. (2016, Prop. 1)::

    L(C_A, C_B) (x) T = f1(C_A) p 1^T + 1 q^T f2(C_B)^T - h1(C_A) T h2(C_B)^T

(square loss: ``f1(a) = a^2``, ``f2(b) = b^2``, ``h1(a) = a``, ``h2(b) = 2 b``) with matrix products,
and runs its inner Sinkhorn (``sinkhorn_knopp``) on matrix-vector products, all through BLAS.
:func:`gw_loss_blas` performs exactly those numpy operations in the same order (POT 0.9:
``ot.gromov.entropic_gromov_wasserstein2(..., solver="PGD", symmetric=True)`` with
``ot.bregman.sinkhorn_knopp`` inside), so its iterates, stopping decisions and value are POT's,
bit for bit when numpy's BLAS is the one POT uses. It returns to the interpreter between numpy
calls (milliseconds at 2,000 x 2,000), so Ctrl-C and a caller's signal-based timer land at once,
and it checks an optional deadline once per inner iteration.

The engine (:mod:`sdrlib.distances.engine`) sends a pair here when ``n * m >= GW_BLAS_MIN_NM``
(measured crossover, ``benchmarks/bench_gw_large.py``); smaller pairs stay on the numba kernel. Measured
at 250 to 2,000 sentences per set: the engine's time is the reference's (0.9-1.1x, same value bit for bit),
where the numba kernel took 2.4x to more than 9.5x.

Scope: float64, uniform weights, symmetric intra-cost matrices (the ``gw`` family's ``C^A``, ``C^B``
of eq. 17, rescaled to [0, 1]). Left out: POT's PPA solver, warm starts, non-square losses.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

#: pairs with at least this many cells (n * m) run here instead of the numba kernel. Measured on the 2-core box
#: (``benchmarks/bench_gw_large.py --crossover``): quiet, this path wins from about 64 x 64 (80 x 80 against the
#: kernel on two threads) and takes 0.13-0.26x the kernel's time at 128 x 128; with both cores loaded by other
#: jobs OpenBLAS's threaded matrix-vector products (from 96 x 96 on) made it erratic up to ~192 x 192
GW_BLAS_MIN_NM = 128 * 128


def _sinkhorn_knopp(a: np.ndarray, b: np.ndarray, M: np.ndarray, reg: float, max_iter: int, stop_thr: float,
                    check: "Callable[[], None] | None") -> tuple[np.ndarray, bool]:
    """POT ``sinkhorn_knopp`` (numpy backend, one histogram): the plan and whether it converged.

    Converged means the marginal error fell below ``stop_thr`` (checked every 10th iteration, as
    POT does); the iteration cap and POT's "numerical errors" exit (a zero column sum or a
    non-finite scaling: the previous scalings are kept) give False. ``check`` is called once per
    iteration (the caller's deadline) and may raise.
    """
    dim_a, dim_b = len(a), b.shape[0]
    u = np.ones(dim_a) / dim_a
    v = np.ones(dim_b) / dim_b
    K = np.exp(M / (-reg))
    Kp = (1 / a).reshape(-1, 1) * K
    converged = False
    for ii in range(max_iter):
        if check is not None:
            check()
        uprev = u
        vprev = v
        KtransposeU = np.dot(K.T, u)
        v = b / KtransposeU
        u = 1.0 / np.dot(Kp, v)
        if (np.any(KtransposeU == 0) or np.any(np.isnan(u)) or np.any(np.isnan(v))
                or np.any(np.isinf(u)) or np.any(np.isinf(v))):
            u = uprev
            v = vprev
            break
        if ii % 10 == 0:
            tmp2 = np.einsum("i,ij,j->j", u, K, v)
            err = np.linalg.norm(tmp2 - b)
            if err < stop_thr:
                converged = True
                break
    return u.reshape((-1, 1)) * K * v.reshape((1, -1)), converged


def gw_loss_blas(CA: np.ndarray, CB: np.ndarray, eps: float, tol: float, max_iter: int,
                 inner_max_iter: int = 1000, inner_stop: float = 1e-9,
                 check: "Callable[[], None] | None" = None) -> tuple[float, bool]:
    """POT's entropic GW loss (PGD, square loss, symmetric) of one pair, with POT's numpy operations.

    Parameters
    ----------
    CA, CB : ndarray, shape (n, n) and (m, m), float64
        Symmetric intra-set costs (``C^A``, ``C^B`` of eq. 17), n, m >= 2.
    eps, tol, max_iter : float, float, int
        The ``gw`` setting's parameters (POT's ``epsilon``, ``tol``, ``max_iter``).
    inner_max_iter, inner_stop : int, float
        The inner Sinkhorn's cap and threshold (the reference passes 1000 and 1e-9).
    check : callable, optional
        Called once per inner Sinkhorn iteration; raising from it abandons the solve (the
        engine's time budget).

    Returns
    -------
    (loss, converged): the GW loss of the final plan (``gwloss``) and whether every inner solve
    met its threshold and the outer loop stopped below ``tol`` (the reference's flag).

    Example: ``gw_loss_blas(np.array([[0., 1], [1, 0]]), np.array([[0., 1], [1, 0]]), 0.1, 1e-9, 1000)
    -> (0.5, True)`` (the identical-set floor of a 2-sentence set, see ``registry``).
    """
    n, m = CA.shape[0], CB.shape[0]
    p = np.full(n, 1.0 / n)
    q = np.full(m, 1.0 / m)
    # ot.gromov.init_matrix with _transform_matrix("square_loss")
    fC1, fC2, hC1, hC2 = CA ** 2, CB ** 2, CA, 2 * CB
    constC1 = np.dot(np.dot(fC1, np.reshape(p, (-1, 1))), np.ones((1, len(q))))
    constC2 = np.dot(np.ones((len(p), 1)), np.dot(np.reshape(q, (1, -1)), fC2.T))
    constC = constC1 + constC2
    T = np.outer(p, q)
    cpt = 0
    err = 1.0
    inner_ok = True
    while err > tol and cpt < max_iter:
        Tprev = T
        tens = 2 * (constC + -np.dot(np.dot(hC1, T), hC2.T))  # gwggrad = 2 * tensor_product
        T, ok = _sinkhorn_knopp(p, q, tens, eps, inner_max_iter, inner_stop, check)
        inner_ok = inner_ok and ok
        if cpt % 10 == 0:
            err = float(np.linalg.norm(T - Tprev))
        cpt += 1
    loss = float(np.sum((constC + -np.dot(np.dot(hC1, T), hC2.T)) * T))  # gwloss
    return loss, inner_ok and err <= tol


def deadline_check(deadline: "float | None", on_expiry: Callable[[], BaseException]) -> "Callable[[], None] | None":
    """A ``check`` for :func:`gw_loss_blas`: raises ``on_expiry()`` once ``time.monotonic()`` passes ``deadline``."""
    if deadline is None:
        return None

    def check() -> None:
        if time.monotonic() > deadline:
            raise on_expiry()

    return check
