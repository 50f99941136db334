"""CUDA kernels of the batched engine for the iterative families: Sinkhorn, unbalanced Sinkhorn, entropic GW.

Scope: the drivers :func:`entropic_pairs` and :func:`gw_pairs` take the same arguments as their CPU
twins in :mod:`sdrlib.distances._kernels` (plus ``device`` and an optional ``stats`` array) and fill
the same ``out`` / ``conv`` arrays, so the engine picks one or the other per call.

How: one GPU thread per pair runs the CPU kernel's scalar algorithm statement for statement
(``sinkhorn_plan_cost``, ``uot_plan_cost``, ``gw_loss`` with ``_sinkhorn_knopp_plan`` and
``_sandwich``): the same iterations, update and summation order, stopping rules, iteration caps,
"numerical errors" exits and convergence flags. Many pairs are in flight at once. Each pair's
matrices live in global memory, interleaved (``W[slot, pair]``), so the threads of a warp, which sit
at the same slot, touch adjacent words; pairs are sorted by set sizes (n, m) before the launch so
that a warp's threads share their loop bounds, and the results are scattered back to the caller's
order. Launches are cut so that the scratch stays below :data:`SCRATCH_BYTES`. Float64 throughout.

Agreement: through numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, the kernels run as Python
threads on the CPU) the values equal the CPU engine's to round-off and the flags and iteration
counts are identical (``tests/distances/test_distances_cuda.py``). On a real GPU, NVVM contracts
multiply-adds into FMAs and libdevice's ``exp`` / ``log`` / ``pow`` may differ from the CPU's libm in
the last bit; values then differ at the 1e-15 level, and a pair whose stopping error lands within
round-off of the threshold at a check could stop 10 iterations apart. ``benchmarks/gpu_check.py
--engine`` measures this on a GPU; it had not been run when this was written.

Requires numba's CUDA target (a driver and NVVM / libdevice); :func:`available` says whether it
can run here, and why not.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

#: upper bound on the per-pair scratch of one launch (bytes); larger calls run in several launches
SCRATCH_BYTES = 2 * 1024 ** 3
#: threads per block
THREADS = 128
#: True when numba.cuda is the simulator (NUMBA_ENABLE_CUDASIM=1 at its import)
SIMULATOR = cuda.is_available.__module__.endswith("simulator_init")

_INF = math.inf
_ready: "tuple[bool, str] | None" = None


# ----------------------------------------------------------------------------- shared pieces

@cuda.jit(device=True)
def _cost(g):
    c = 0.5 * (1.0 - g)
    if c < 0.0:
        return 0.0
    if c > 1.0:
        return 1.0
    return c


@cuda.jit(device=True)
def _gather(G, ci, co, bi, bo, k, j, W, p):
    """W[r * m + c, p] = cost of candidate sentence r and bank sentence c of pair (k, j); return (n, m, max)."""
    r0 = co[k]
    n = co[k + 1] - r0
    c0 = bo[j]
    m = bo[j + 1] - c0
    mx = 0.0
    for c in range(m):
        brow = bi[c0 + c]
        for r in range(n):
            v = _cost(G[brow, ci[r0 + r]])
            W[r * m + c, p] = v
            if v > mx:
                mx = v
    return n, m, mx


# ----------------------------------------------------------------------------- Sinkhorn / UOT

@cuda.jit(device=True)
def _sinkhorn_kernel_form(W, p, n, m, eps, stop_thr, max_iter):
    """``sinkhorn_plan_cost`` (kernel form) on Mt = W[0:nm]; returns (cost, converged, iterations)."""
    nm = n * m
    oK = nm
    ou = 2 * nm
    ov = ou + n
    a = 1.0 / n
    b = 1.0 / m
    for i in range(n):
        for j in range(m):
            W[oK + i * m + j, p] = math.exp(-W[i * m + j, p] / eps)
    for i in range(n):
        W[ou + i, p] = 1.0
    for j in range(m):
        W[ov + j, p] = 1.0
    converged = False
    iters = max_iter
    for ii in range(max_iter):
        for j in range(m):
            acc = 0.0
            for i in range(n):
                acc += W[oK + i * m + j, p] * W[ou + i, p]
            W[ov + j, p] = b / acc
        for i in range(n):
            acc = 0.0
            for j in range(m):
                acc += W[oK + i * m + j, p] * W[ov + j, p]
            W[ou + i, p] = a / acc
        if ii % 10 == 0:
            err = 0.0
            for j in range(m):
                acc = 0.0
                for i in range(n):
                    acc += W[ou + i, p] * W[oK + i * m + j, p]
                d = acc * W[ov + j, p] - b
                err += d * d
            if math.sqrt(err) < stop_thr:
                converged = True
                iters = ii + 1
                break
    cost = 0.0
    for i in range(n):
        for j in range(m):
            cost += W[ou + i, p] * W[oK + i * m + j, p] * W[ov + j, p] * W[i * m + j, p]
    return cost, converged, iters


@cuda.jit(device=True)
def _sinkhorn_log(W, p, n, m, eps, stop_thr, max_iter):
    """``sinkhorn_plan_cost`` (log domain, POT ``sinkhorn_log``) on Mt = W[0:nm]; (cost, converged, iterations)."""
    nm = n * m
    oR = nm
    ou = 2 * nm
    ov = ou + n
    for i in range(n):
        for j in range(m):
            W[oR + i * m + j, p] = -W[i * m + j, p] / eps
    for i in range(n):
        W[ou + i, p] = 0.0
    for j in range(m):
        W[ov + j, p] = 0.0
    la = math.log(1.0 / n)
    lb = math.log(1.0 / m)
    b = 1.0 / m
    converged = False
    iters = max_iter
    for ii in range(max_iter):
        for j in range(m):
            mxv = -_INF
            for i in range(n):
                z = W[oR + i * m + j, p] + W[ou + i, p]
                if z > mxv:
                    mxv = z
            acc = 0.0
            for i in range(n):
                acc += math.exp(W[oR + i * m + j, p] + W[ou + i, p] - mxv)
            W[ov + j, p] = lb - (mxv + math.log(acc))
        for i in range(n):
            mxv = -_INF
            for j in range(m):
                z = W[oR + i * m + j, p] + W[ov + j, p]
                if z > mxv:
                    mxv = z
            acc = 0.0
            for j in range(m):
                acc += math.exp(W[oR + i * m + j, p] + W[ov + j, p] - mxv)
            W[ou + i, p] = la - (mxv + math.log(acc))
        if ii % 10 == 0:
            err = 0.0
            for j in range(m):
                acc = 0.0
                for i in range(n):
                    acc += math.exp(W[oR + i * m + j, p] + W[ou + i, p] + W[ov + j, p])
                d = acc - b
                err += d * d
            if math.sqrt(err) < stop_thr:
                converged = True
                iters = ii + 1
                break
    cost = 0.0
    for i in range(n):
        for j in range(m):
            cost += math.exp(W[oR + i * m + j, p] + W[ou + i, p] + W[ov + j, p]) * W[i * m + j, p]
    return cost, converged, iters


@cuda.jit(device=True)
def _uot(W, p, n, m, eps, tau, stop_thr, max_iter):
    """``uot_plan_cost`` (POT ``sinkhorn_knopp_unbalanced``) on Mt = W[0:nm]; (cost, converged, iterations)."""
    nm = n * m
    oK = nm
    ou = 2 * nm
    ov = ou + n
    oup = ov + m
    ovp = oup + n
    a = 1.0 / n
    b = 1.0 / m
    fi = tau / (tau + eps)
    for i in range(n):
        for j in range(m):
            W[oK + i * m + j, p] = math.exp(-W[i * m + j, p] / eps)
    for i in range(n):
        W[ou + i, p] = 1.0
    for j in range(m):
        W[ov + j, p] = 1.0
    converged = False
    iters = max_iter
    for it in range(max_iter):
        for i in range(n):
            W[oup + i, p] = W[ou + i, p]
        for j in range(m):
            W[ovp + j, p] = W[ov + j, p]
        for i in range(n):
            acc = 0.0
            for j in range(m):
                acc += W[oK + i * m + j, p] * W[ov + j, p]
            W[ou + i, p] = (a / acc) ** fi
        bad = False
        for j in range(m):
            acc = 0.0
            for i in range(n):
                acc += W[oK + i * m + j, p] * W[ou + i, p]
            if acc == 0.0:
                bad = True
            W[ov + j, p] = (b / acc) ** fi
        for i in range(n):
            if not math.isfinite(W[ou + i, p]):
                bad = True
        for j in range(m):
            if not math.isfinite(W[ov + j, p]):
                bad = True
        if bad:  # POT: machine precision reached, keep the previous scalings and stop
            for i in range(n):
                W[ou + i, p] = W[oup + i, p]
            for j in range(m):
                W[ov + j, p] = W[ovp + j, p]
            iters = it + 1
            break
        du = 0.0
        mu = 1.0
        for i in range(n):
            du = max(du, abs(W[ou + i, p] - W[oup + i, p]))
            mu = max(mu, abs(W[ou + i, p]), abs(W[oup + i, p]))
        dv = 0.0
        mv = 1.0
        for j in range(m):
            dv = max(dv, abs(W[ov + j, p] - W[ovp + j, p]))
            mv = max(mv, abs(W[ov + j, p]), abs(W[ovp + j, p]))
        err = 0.5 * (du / mu + dv / mv)
        if err < stop_thr:
            converged = True
            iters = it + 1
            break
    cost = 0.0
    for i in range(n):
        for j in range(m):
            cost += W[ou + i, p] * W[oK + i * m + j, p] * W[ov + j, p] * W[i * m + j, p]
    return cost, converged, iters


@cuda.jit
def _entropic_kernel(G, ci, co, bi, bo, pk, pj, eps, tau, stop_thr, max_iter, log_domain, zero_atol, scale,
                     W, out, conv, stats):
    p = cuda.grid(1)
    if p >= pk.shape[0]:
        return
    n, m, mx = _gather(G, ci, co, bi, bo, pk[p], pj[p], W, p)
    if mx <= zero_atol:
        out[p] = 0.0
        conv[p] = True
        stats[p, 0] = 0
        return
    den = mx if scale else 1.0
    for x in range(n * m):
        W[x, p] = W[x, p] / den
    if tau < 0.0:
        if log_domain:
            c, ok, it = _sinkhorn_log(W, p, n, m, eps, stop_thr, max_iter)
        else:
            c, ok, it = _sinkhorn_kernel_form(W, p, n, m, eps, stop_thr, max_iter)
    else:
        c, ok, it = _uot(W, p, n, m, eps, tau, stop_thr, max_iter)
    out[p] = c
    conv[p] = ok
    stats[p, 0] = it


# ----------------------------------------------------------------------------- GW

@cuda.jit(device=True)
def _sandwich(ca, oa, cb, ob, n, m, W, oT, oX, oY, p):
    """Y = CA @ T @ CB (``_kernels._sandwich``); CA at ca[oa:], CB at cb[ob:], T / X / Y in W."""
    for i in range(n):
        for j in range(m):
            acc = 0.0
            for k in range(n):
                acc += ca[oa + i * n + k] * W[oT + k * m + j, p]
            W[oX + i * m + j, p] = acc
    for i in range(n):
        for j in range(m):
            acc = 0.0
            for l in range(m):
                acc += W[oX + i * m + l, p] * cb[ob + l * m + j]
            W[oY + i * m + j, p] = acc


@cuda.jit(device=True)
def _sinkhorn_knopp_plan(W, p, n, m, oC, oT, oK, oKp, ou, ov, oup, ovp, eps, stop_thr, max_iter):
    """``_kernels._sinkhorn_knopp_plan`` with a = 1/n, b = 1/m: plan into W[oT:]; returns (converged, iterations)."""
    a = 1.0 / n
    b = 1.0 / m
    ia = 1.0 / a
    for i in range(n):
        for j in range(m):
            kv = math.exp(W[oC + i * m + j, p] / (-eps))
            W[oK + i * m + j, p] = kv
            W[oKp + i * m + j, p] = ia * kv
    for i in range(n):
        W[ou + i, p] = a
    for j in range(m):
        W[ov + j, p] = b
    converged = False
    iters = max_iter
    for ii in range(max_iter):
        for i in range(n):
            W[oup + i, p] = W[ou + i, p]
        for j in range(m):
            W[ovp + j, p] = W[ov + j, p]
        bad = False
        for j in range(m):
            acc = 0.0
            for i in range(n):
                acc += W[oK + i * m + j, p] * W[ou + i, p]
            if acc == 0.0:
                bad = True
            W[ov + j, p] = b / acc
        for i in range(n):
            acc = 0.0
            for j in range(m):
                acc += W[oKp + i * m + j, p] * W[ov + j, p]
            W[ou + i, p] = 1.0 / acc
        for i in range(n):
            if not math.isfinite(W[ou + i, p]):
                bad = True
        for j in range(m):
            if not math.isfinite(W[ov + j, p]):
                bad = True
        if bad:
            for i in range(n):
                W[ou + i, p] = W[oup + i, p]
            for j in range(m):
                W[ov + j, p] = W[ovp + j, p]
            iters = ii + 1
            break
        if ii % 10 == 0:
            err = 0.0
            for j in range(m):
                acc = 0.0
                for i in range(n):
                    acc += W[ou + i, p] * W[oK + i * m + j, p] * W[ov + j, p]
                d = acc - b
                err += d * d
            if math.sqrt(err) < stop_thr:
                converged = True
                iters = ii + 1
                break
    for i in range(n):
        for j in range(m):
            W[oT + i * m + j, p] = W[ou + i, p] * W[oK + i * m + j, p] * W[ov + j, p]
    return converged, iters


@cuda.jit(device=True)
def _gw_loss(ca, oa, cb, ob, n, m, eps, tol, max_iter, inner_max_iter, inner_stop, W, p):
    """``_kernels.gw_loss``: (loss, converged, inner sweeps, outer iterations, inner solves capped)."""
    nm = n * m
    oC = 0          # constC
    oT = nm
    oTp = 2 * nm    # Tprev
    oG = 3 * nm     # grad
    oX = 4 * nm
    oY = 5 * nm
    oK = 6 * nm
    oKp = 7 * nm
    of1 = 8 * nm
    of2 = of1 + n
    ou = of2 + m
    ov = ou + n
    oup = ov + m
    ovp = oup + n
    pn = 1.0 / n
    qm = 1.0 / m
    for i in range(n):
        W[of1 + i, p] = 0.0
    for j in range(m):
        W[of2 + j, p] = 0.0
    for i in range(n):
        for k in range(n):
            W[of1 + i, p] += ca[oa + i * n + k] * ca[oa + i * n + k] * pn
    for j in range(m):
        for l in range(m):
            W[of2 + j, p] += cb[ob + j * m + l] * cb[ob + j * m + l] * qm
    for i in range(n):
        for j in range(m):
            W[oC + i * m + j, p] = W[of1 + i, p] + W[of2 + j, p]
    for i in range(n):
        for j in range(m):
            W[oT + i * m + j, p] = pn * qm
    cpt = 0
    err = 1.0
    inner_ok = True
    sweeps = 0
    capped = 0
    while err > tol and cpt < max_iter:
        for x in range(nm):
            W[oTp + x, p] = W[oT + x, p]
        _sandwich(ca, oa, cb, ob, n, m, W, oT, oX, oY, p)
        for x in range(nm):
            W[oG + x, p] = 2.0 * (W[oC + x, p] - 2.0 * W[oY + x, p])
        ok, it = _sinkhorn_knopp_plan(W, p, n, m, oG, oT, oK, oKp, ou, ov, oup, ovp, eps, inner_stop,
                                      inner_max_iter)
        sweeps += it
        if not ok and it >= inner_max_iter:
            capped += 1
        if not ok:
            inner_ok = False
        if cpt % 10 == 0:
            s = 0.0
            for x in range(nm):
                d = W[oT + x, p] - W[oTp + x, p]
                s += d * d
            err = math.sqrt(s)
        cpt += 1
    _sandwich(ca, oa, cb, ob, n, m, W, oT, oX, oY, p)
    loss = 0.0
    for x in range(nm):
        loss += (W[oC + x, p] - 2.0 * W[oY + x, p]) * W[oT + x, p]
    return loss, inner_ok and err <= tol, sweeps, cpt, capped


@cuda.jit
def _gw_kernel(ca, cao, cb, cbo, co, bo, pk, pj, eps, tol, max_iter, W, out, conv, stats):
    p = cuda.grid(1)
    if p >= pk.shape[0]:
        return
    k = pk[p]
    j = pj[p]
    n = co[k + 1] - co[k]
    m = bo[j + 1] - bo[j]
    if n < 2 or m < 2:
        out[p] = 1.0
        conv[p] = True
        return
    val, ok, sweeps, cpt, capped = _gw_loss(ca, cao[k], cb, cbo[j], n, m, eps, tol, max_iter, 1000, 1e-9, W, p)
    out[p] = val
    conv[p] = ok
    stats[p, 0] = sweeps
    stats[p, 1] = cpt
    stats[p, 2] = capped


# ----------------------------------------------------------------------------- host side

def available() -> tuple[bool, str]:
    """(True, "") when numba's CUDA target can compile and launch here, else (False, why); cached.

    Launches a one-thread kernel once: that needs a driver, a GPU, NVVM and libdevice. The simulator
    (``NUMBA_ENABLE_CUDASIM=1``) always can.
    """
    global _ready
    if _ready is None:
        try:
            if not cuda.is_available():
                raise RuntimeError("numba.cuda.is_available() is False (no CUDA driver or GPU visible to numba)")
            buf = cuda.to_device(np.zeros(1))
            _probe[1, 1](buf)
            cuda.synchronize()
            if buf.copy_to_host()[0] != 1.0:
                raise RuntimeError("a probe kernel did not run")
            _ready = (True, "")
        except Exception as e:  # noqa: BLE001 - any failure means "cannot run here"; the reason is reported
            _ready = (False, f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
    return _ready


@cuda.jit
def _probe(buf):
    buf[0] = 1.0


def _device_index(device: str) -> int:
    return int(device.split(":", 1)[1]) if ":" in device else 0


def _launch(kernel, before: list, pk: np.ndarray, pj: np.ndarray, after: list, slots: int, order: np.ndarray,
            out: np.ndarray, conv: np.ndarray, stats: "np.ndarray | None", device: str, scratch_bytes: int) -> None:
    """``kernel[...](*before, pk, pj, *after, W, out, conv, stats)`` over the pairs ``order``, in launches whose
    scratch ``W`` (slots x pairs float64) fits ``scratch_bytes``; results land at the pairs' places."""
    per = max(1, int(scratch_bytes // (8 * max(slots, 1))))
    with cuda.gpus[_device_index(device)]:
        d_before = [cuda.to_device(np.ascontiguousarray(a)) for a in before]
        for s in range(0, len(order), per):
            sel = order[s:s + per]
            q = len(sel)
            W = cuda.device_array((max(slots, 1), q), dtype=np.float64)
            d_out = cuda.device_array(q, dtype=np.float64)
            d_conv = cuda.device_array(q, dtype=np.bool_)
            d_stats = cuda.to_device(np.zeros((q, 3), np.int64))
            blocks = (q + THREADS - 1) // THREADS
            kernel[blocks, THREADS](*d_before, cuda.to_device(np.ascontiguousarray(pk[sel])),
                                    cuda.to_device(np.ascontiguousarray(pj[sel])), *after, W, d_out, d_conv, d_stats)
            cuda.synchronize()
            out[sel] = d_out.copy_to_host()
            conv[sel] = d_conv.copy_to_host()
            if stats is not None:
                stats[sel] = d_stats.copy_to_host()


def _size_order(n: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Pairs sorted by (n, m), stable: a warp's threads then run loops of the same lengths."""
    return np.lexsort((m, n)).astype(np.int64)


def entropic_pairs(G, ci, co, bi, bo, pk, pj, nmax, eps, tau, stop_thr, max_iter, log_domain, zero_atol, scale,
                   out, conv, *, device: str = "cuda", stats: "np.ndarray | None" = None,
                   scratch_bytes: int = SCRATCH_BYTES) -> None:
    """GPU twin of :func:`sdrlib.distances._kernels.entropic_pairs` (same arguments, same ``out`` / ``conv``).

    ``stats`` (optional, (P, 3) int64): column 0 receives each pair's iteration count (the iteration at
    which it stopped, ``max_iter`` at the cap, 0 for a zero-cost pair).
    """
    P = len(pk)
    if P == 0:
        return
    n = (co[1:] - co[:-1])[pk]
    m = (bo[1:] - bo[:-1])[pj]
    slots = 2 * nmax * nmax + 4 * nmax  # Mt, K (or Mr), u, v, u_prev, v_prev
    before = [np.asarray(G, dtype=np.float64), ci, co, bi, bo]
    after = [float(eps), float(tau), float(stop_thr), int(max_iter), bool(log_domain), float(zero_atol), bool(scale)]
    _launch(_entropic_kernel, before, pk, pj, after, slots, _size_order(n, m), out, conv, stats, device,
            scratch_bytes)


def gw_pairs(ca, cao, cb, cbo, co, bo, pk, pj, eps, tol, max_iter, out, conv, *, device: str = "cuda",
             stats: "np.ndarray | None" = None, scratch_bytes: int = SCRATCH_BYTES) -> None:
    """GPU twin of :func:`sdrlib.distances._kernels.gw_pairs` (same arguments, same ``out`` / ``conv``).

    ``stats`` (optional, (P, 3) int64) receives, per pair, the inner Sinkhorn iterations, the outer PGD
    iterations and the inner solves stopped by their cap: the counts ``_kernels.gw_loss`` returns
    (zeros for a pair with a one-sentence set, whose value is 1 by definition).
    """
    P = len(pk)
    if P == 0:
        return
    n = (co[1:] - co[:-1])[pk]
    m = (bo[1:] - bo[:-1])[pj]
    nmax = int(max(n.max(), m.max()))
    slots = 8 * nmax * nmax + 6 * nmax  # constC, T, T_prev, grad, X, Y, K, Kp; f1, f2, u, v, u_prev, v_prev
    before = [np.asarray(ca, dtype=np.float64), cao, np.asarray(cb, dtype=np.float64), cbo, co, bo]
    _launch(_gw_kernel, before, pk, pj, [float(eps), float(tol), int(max_iter)], slots, _size_order(n, m), out,
            conv, stats, device, scratch_bytes)
