"""The GPU solvers of the iterative families (Sinkhorn, UOT, GW) agree with the CPU engine.

Without a GPU the CUDA kernels run in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``: every GPU
thread is a Python thread on the CPU), set up below before ``numba.cuda`` is first imported; with a GPU
that torch sees, they run on it. The simulator is ~1000x slower than compiled code, so the sets are
tiny (1-4 sentences, d = 12) and the caps small. Checked against the CPU engine on the same pairs:
values (to 1e-12 in the simulator, which replays the CPU's floating-point operations one by one; to
1e-9 on a GPU, whose FMAs and libdevice round differently), convergence flags, non-convergence
counts, and the iteration counts, including pairs stopped by their cap.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from sdrlib.distances import ConvergenceWarning, DistanceSpecError, get, make_spec
from sdrlib.distances import _kernels as K
from sdrlib.distances.costs import ZERO_COST_ATOL
from sdrlib.distances.engine import _pick_solver, _run, pack_sets
from sdrlib.distances.registry import GW_MIN_EPS
from sdrlib.distances.synthetic import make_space, structured_bank, structured_candidates


def _torch_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def _load_kernels():
    """(module, reason): the CUDA kernels on the simulator (no GPU) or on the GPU; module None when neither runs."""
    if "numba.cuda" not in sys.modules and not _torch_gpu():
        old = os.environ.get("NUMBA_ENABLE_CUDASIM")
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        try:
            from numba.core import config

            config.reload_config()
            from sdrlib.distances import _cuda_kernels as CK
        finally:  # numba.cuda is now the simulator for this process; leave no trace for subprocesses
            if old is None:
                os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
            else:
                os.environ["NUMBA_ENABLE_CUDASIM"] = old
    else:  # our module must import wherever numba.cuda does: a failure here is a failure, not a skip
        from sdrlib.distances import _cuda_kernels as CK
    ok, why = CK.available()
    if not ok:
        return None, (f"numba.cuda was imported without the simulator before this module and cannot run "
                      f"kernels here: {why}")
    return CK, ""


CK, _WHY = _load_kernels()
needs_cuda = pytest.mark.skipif(CK is None, reason=_WHY or "no CUDA target")
#: simulator: same operations as the CPU in the same order; GPU: FMA contraction and libdevice
TOL = 1e-12 if CK is not None and CK.SIMULATOR else 1e-9


@pytest.fixture(scope="module")
def pairs():
    """4 candidate x 8 bank sets (1-4 sentences, d = 12): 32 pairs, bank-major like the engine's grid.

    Includes one-sentence sets (GW is 1 there), a zero-cost pair (identical single sentences, value 0),
    a repeated sentence and clustered sentences (cosines 0.1-0.9)."""
    rng = np.random.default_rng(0)
    space = make_space(rng, 12, topics=3)
    bank, pool = structured_bank(rng, 6, space, n_max=4)
    cands = structured_candidates(rng, 3, pool, space, n_max=4)
    bank += [pool[:1], np.repeat(pool[:1], 2, axis=0)]
    cands += [pool[:1]]
    cp, bp = pack_sets(cands), pack_sets(bank)
    pj = np.repeat(np.arange(bp.n_sets, dtype=np.int64), cp.n_sets)
    pk = np.tile(np.arange(cp.n_sets, dtype=np.int64), bp.n_sets)
    return cp, bp, pk, pj


#: the paper's Sinkhorn / UOT settings, the log-domain branch, unscaled costs, and caps small enough
#: that some pairs stop there (the ``capped`` argument: expected number of non-converged pairs > 0)
SETTINGS = [
    (get("sinkhorn_0.1"), False), (get("sinkhorn_0.01"), True),  # the paper cap 1000 stops 3 pairs
    (make_spec("sinkhorn", eps=0.01, max_iter=7), True),
    (make_spec("sinkhorn", eps=1e-3, max_iter=50), True),        # log domain
    (make_spec("sinkhorn", eps=1e-3, max_iter=300, rescale=False), True),
    (get("uot_1.0"), False), (make_spec("uot", tau=5.0, eps=0.05, rescale=False), False),
    (make_spec("uot", tau=1.0, max_iter=2), True),
    (make_spec("gw", eps=0.1, max_iter=12), True), (make_spec("gw", eps=0.05, max_iter=3), True),
    (make_spec("gw", eps=GW_MIN_EPS, max_iter=5), True),        # inner kernel near underflow
]


@needs_cuda
@pytest.mark.parametrize("spec,capped", SETTINGS, ids=lambda x: getattr(x, "name", str(x)))
def test_gpu_solvers_equal_the_cpu_engine(spec, capped, pairs):
    cp, bp, pk, pj = pairs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        (cpu, cpu_ok), = _run([spec], cp, bp, pk, pj, "cpu")
        (gpu, gpu_ok), = _run([spec], cp, bp, pk, pj, "cpu", solver="cuda")
    assert np.isfinite(gpu).all()
    np.testing.assert_allclose(gpu, cpu, atol=TOL, rtol=0)
    assert gpu_ok.tolist() == cpu_ok.tolist()
    assert int((~gpu_ok).sum()) == int((~cpu_ok).sum())
    assert (int((~cpu_ok).sum()) > 0) == capped  # the capped settings do stop some pairs at their cap
    if spec.family == "gw":  # one-sentence sets score 1 by definition
        n = cp.sizes[pk]
        m = bp.sizes[pj]
        assert (gpu[(n < 2) | (m < 2)] == 1.0).all() and ((n >= 2) & (m >= 2)).any()


def _entropic_args(cp, bp, pk, pj, spec):
    G = np.ascontiguousarray(bp.unique @ cp.unique.T)
    nmax = int(max(cp.sizes.max(), bp.sizes.max()))
    prm = spec.params
    tau = prm.get("tau", -1.0)
    log_domain = spec.family == "sinkhorn" and prm["eps"] < K.LOG_DOMAIN_EPS
    return (G, cp.index, cp.offsets, bp.index, bp.offsets, pk, pj, nmax, prm["eps"], tau, prm["stop_thr"],
            prm["max_iter"], log_domain, ZERO_COST_ATOL, prm["rescale"])


@needs_cuda
@pytest.mark.parametrize("spec", [get("sinkhorn_0.1"), make_spec("sinkhorn", eps=1e-3, max_iter=50),
                                  get("uot_1.0"), make_spec("uot", tau=1.0, max_iter=2)], ids=lambda s: s.name)
def test_entropic_iteration_counts_are_the_cpus(spec, pairs):
    """Each pair stops at the CPU's iteration: rerun on the CPU with max_iter = the GPU's count, the pair
    converges (same value); with one iteration fewer it does not. Capped pairs report max_iter."""
    cp, bp, pk, pj = pairs
    args = _entropic_args(cp, bp, pk, pj, spec)
    P = len(pk)
    out, conv, stats = np.empty(P), np.ones(P, np.bool_), np.zeros((P, 3), np.int64)
    CK.entropic_pairs(*args, out, conv, stats=stats)
    it = stats[:, 0]
    assert (it[~conv] == spec.params["max_iter"]).all()
    live = conv & (it > 0)  # it == 0: a zero-cost pair, no iteration
    assert live.any() or spec.params["max_iter"] == 2
    for p in np.flatnonzero(live):
        for cap, should in ((int(it[p]), True), (int(it[p]) - 1, False)):
            o, c = np.empty(1), np.ones(1, np.bool_)
            K.entropic_pairs(*args[:5], pk[p:p + 1], pj[p:p + 1], *args[7:11], cap, *args[12:], o, c)
            assert bool(c[0]) == should, (p, cap)
            if should:
                assert abs(o[0] - out[p]) <= TOL


@needs_cuda
def test_gw_counts_are_the_cpus(pairs):
    """Outer PGD iterations, inner Sinkhorn sweeps and capped inner solves equal ``_kernels.gw_loss``'s."""
    cp, bp, pk, pj = pairs
    ca, cao = cp.intra()
    cb, cbo = bp.intra()
    P = len(pk)
    for eps, max_iter in ((0.1, 12), (GW_MIN_EPS, 5)):
        out, conv, stats = np.empty(P), np.ones(P, np.bool_), np.zeros((P, 3), np.int64)
        CK.gw_pairs(ca, cao, cb, cbo, cp.offsets, bp.offsets, pk, pj, eps, 1e-9, max_iter, out, conv, stats=stats)
        for p in range(P):
            k, j = pk[p], pj[p]
            n, m = cp.sizes[k], bp.sizes[j]
            if n < 2 or m < 2:
                assert out[p] == 1.0 and conv[p] and (stats[p] == 0).all()
                continue
            CA = ca[cao[k]:cao[k + 1]].reshape(n, n)
            CB = cb[cbo[j]:cbo[j + 1]].reshape(m, m)
            val, ok, sweeps, cpt, capped = K.gw_loss(CA, CB, n, m, eps, 1e-9, max_iter, 1000, 1e-9)
            assert abs(out[p] - val) <= TOL and bool(conv[p]) == ok
            assert stats[p].tolist() == [sweeps, cpt, capped], (eps, p)


@needs_cuda
def test_many_launches_and_any_pair_order_give_the_same_values(pairs):
    """A scratch budget of a few pairs per launch, pairs shuffled: every result lands at its own pair."""
    cp, bp, pk, pj = pairs
    perm = np.random.default_rng(5).permutation(len(pk))
    pk, pj = pk[perm], pj[perm]
    spec = make_spec("sinkhorn", eps=0.01, max_iter=7)
    args = _entropic_args(cp, bp, pk, pj, spec)
    P = len(pk)
    ref, ref_ok = np.empty(P), np.ones(P, np.bool_)
    K.entropic_pairs(*args, ref, ref_ok)
    out, ok = np.empty(P), np.ones(P, np.bool_)
    slots = 2 * args[7] ** 2 + 4 * args[7]
    CK.entropic_pairs(*args, out, ok, scratch_bytes=8 * slots * 5)  # 5 pairs per launch: 7 launches
    np.testing.assert_allclose(out, ref, atol=TOL, rtol=0)
    assert ok.tolist() == ref_ok.tolist() and not ok.all()


def test_solver_choice_and_a_gpu_numba_cannot_use():
    """Which solver runs the iterative families (no GPU needed): the CPU unless a CUDA device was resolved
    and one of them is asked for; numba unable to run there: 'auto' falls back to the CPU, an explicit
    'cuda[:i]' raises DistanceSpecError naming the device and numba's reason."""
    gw, chamfer = [get("gw")], [get("chamfer")]
    assert _pick_solver("cpu", "cpu", gw) == "cpu"
    assert _pick_solver("cuda", "cuda", chamfer, ready=(False, "x")) == "cpu"
    assert _pick_solver("cuda:1", "cuda:1", chamfer + gw, ready=(True, "")) == "cuda:1"
    assert _pick_solver("auto", "cuda", gw, ready=(False, "NvvmSupportError: libNVVM cannot be found")) == "cpu"
    with pytest.raises(DistanceSpecError, match=r"device='cuda:1'.*libNVVM cannot be found"):
        _pick_solver("cuda:1", "cuda:1", [get("sinkhorn_0.1")], ready=(False, "NvvmSupportError: libNVVM cannot "
                                                                            "be found"))


@pytest.mark.skipif(_torch_gpu(), reason="checks the answer on a machine without a GPU")
def test_available_says_why_not_without_a_gpu():
    """Without the simulator and without a GPU, the probe answers (False, reason) instead of raising."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    code = "from sdrlib.distances._cuda_kernels import available; ok, why = available(); print(ok); print(why)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert r.returncode == 0, r.stderr
    ok, why = r.stdout.splitlines()[:2]
    assert ok == "False" and why.strip()
