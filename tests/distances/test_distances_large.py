"""Large pairs on POT / SciPy (:mod:`sdrlib.distances._large`, issue 37 item 5) and :func:`engine.unique_rows`.

The engine sends a pair past a measured size to the reference's own solver on the engine's cost block. Checked
here: the routed values are the reference's (``set_distance``) and the kernels' to round-off, for every routed
family, both sides of each threshold, rescale on and off, ``hung_pen`` clipped and not; a mixed batch keeps
each pair in its place; Ctrl-C and an expired budget land within a second of firing on a long POT solve, and
the worker thread ends by itself; ``unique_rows`` gives ``np.unique``'s arrays bit for bit.
"""

from __future__ import annotations

import _thread
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sdrlib.distances import DistanceTimeoutError, _large, make_spec, set_distance
from sdrlib.distances.engine import paired_distances, pairwise_distances, unique_rows

ROOT = Path(__file__).resolve().parents[2]

#: one setting per routed family and option
SPECS = [make_spec("ot"), make_spec("ot", rescale=False), make_spec("partial", rho=0.8),
         make_spec("partial", rho="adaptive"), make_spec("partial", rho=0.5, rescale=False), make_spec("uot", tau=1.0),
         make_spec("hung_nn"), make_spec("hung_pen", alpha=0.5), make_spec("hung_pen", alpha=0.5, clip=False)]
IDS = [s.name + ("" if s.params.get("clip", True) else "_noclip") for s in SPECS]


pytestmark = pytest.mark.usefixtures("python_sigint")  # Ctrl-C tests: conftest.py


def _sets(rng, sizes, d=24):
    return [rng.standard_normal((n, d)) for n in sizes]


def _thresholds(monkeypatch, value: float) -> None:
    monkeypatch.setattr(_large, "POT_MIN_NM", {k: value for k in _large.POT_MIN_NM})


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_routed_pairs_are_the_reference_and_the_kernels(spec, monkeypatch):
    rng = np.random.default_rng(7)
    A = _sets(rng, [3, 12, 20, 20])
    B = _sets(rng, [4, 13, 20, 9])
    ref = np.array([[set_distance(a, b, spec, on_nonconvergence="ignore") for b in B] for a in A])
    _thresholds(monkeypatch, float("inf"))
    kern = pairwise_distances(A, B, spec)
    _thresholds(monkeypatch, 100.0)  # a mixed batch: pairs of fewer than 100 cells stay on the kernels
    mixed = pairwise_distances(A, B, spec)
    _thresholds(monkeypatch, 0.0)
    pot = pairwise_distances(A, B, spec)
    assert _large.route_key(spec.family, np.array([3, 12]), np.array([4, 13])).tolist() == [True, True]
    np.testing.assert_allclose(pot, ref, rtol=0, atol=1e-9)
    np.testing.assert_allclose(kern, ref, rtol=0, atol=1e-6 if spec.family == "uot" else 1e-9)
    small = np.multiply.outer([len(a) for a in A], [len(b) for b in B]) < 100
    np.testing.assert_array_equal(mixed[small], kern[small])
    np.testing.assert_array_equal(mixed[~small], pot[~small])
    if spec.family == "hung_pen" and not spec.params["clip"]:
        assert pot.max() > 1.0  # |n - m| = 11 unmatched rows at alpha 0.5: the unclipped value leaves [0, 1]


def test_thresholds_split_where_measured():
    T = _large.POT_MIN_NM
    side = {f: int(np.ceil(np.sqrt(T[f]))) for f in T}
    n = side["ot"]
    assert _large.route_key("ot", np.array([n, n - 2]), np.array([n + 1, n - 1])).tolist() == [True, False]
    sq = side["ot_square"]  # equal sizes go by the assignment threshold, far larger
    assert _large.route_key("ot", np.array([n + 1, sq]), np.array([n + 1, sq])).tolist() == [False, True]
    for fam, key in (("partial", "partial"), ("uot", "uot"), ("hung_nn", "hung"), ("hung_pen", "hung")):
        s = side[key]
        assert _large.route_key(fam, np.array([s, s - 2]), np.array([s, s - 2])).tolist() == [True, False]
    for fam in ("chamfer", "hausdorff", "sinkhorn", "gw"):
        assert not _large.route_key(fam, np.array([5000]), np.array([5000])).any()


def test_report_sized_sets_never_reach_pot(monkeypatch):
    calls = []
    monkeypatch.setattr(_large, "solve", lambda *a, **k: calls.append(a))
    rng = np.random.default_rng(1)
    A, B = _sets(rng, [2, 15, 30]), _sets(rng, [15, 30, 2])
    for name in ("ot", "partial_0.8", "uot_1.0", "hung_nn", "hung_pen_0.5"):
        pairwise_distances(A, B, name)
    assert calls == []


def _long_partial():
    """One partial OT pair that POT solves in ~3 s on the 2-core box (unit Gaussian rows: every cost distinct)."""
    rng = np.random.default_rng(11)
    return rng.standard_normal((2000, 32)), rng.standard_normal((2100, 32))


def _join_pot_workers() -> None:
    """The pair being solved finishes in the background, then the worker ends by itself."""
    for t in [t for t in threading.enumerate() if t.name == "sdr-distance-pot"]:
        t.join(120)
        assert not t.is_alive()


class _Started(Exception):
    pass


def _spy_solves(monkeypatch, on_start=lambda: None) -> list[float]:
    """Wrap :func:`_large.pair_value`: ``on_start()`` as a solve starts; the returned list gets its end time."""
    real, ended = _large.pair_value, []

    def spy(*args):
        on_start()
        try:
            return real(*args)
        finally:
            ended.append(time.monotonic())

    monkeypatch.setattr(_large, "pair_value", spy)
    return ended


def test_ctrl_c_lands_within_a_second_of_a_long_pot_solve(monkeypatch):
    A, B = _long_partial()
    fired: list[float] = []
    timer = threading.Timer(0.5, lambda: (fired.append(time.monotonic()), _thread.interrupt_main()))
    ended = _spy_solves(monkeypatch, timer.start)
    try:
        with pytest.raises(KeyboardInterrupt):
            pairwise_distances([A], [B], "partial_adaptive")
        landed = time.monotonic()
    finally:
        timer.cancel()
        timer.join()
    assert fired and landed - fired[0] < 1.0, landed - fired[0]
    _join_pot_workers()
    assert ended and ended[0] > landed  # raised while POT was still solving, not after it


def test_an_expired_budget_lands_within_a_second_of_a_long_pot_solve(monkeypatch):
    A, B = _long_partial()
    t0 = time.monotonic()

    def started(*args):
        raise _Started(time.monotonic() - t0)

    with monkeypatch.context() as m:  # the setup's seconds (packing, cosines), so the budget ends inside the solve
        m.setattr(_large, "pair_value", started)
        with pytest.raises(_Started) as err:
            paired_distances([A], [B], "partial_adaptive", time_budget_s=600)
    budget = float(err.value.args[0]) + 0.5
    ended = _spy_solves(monkeypatch)
    t0 = time.monotonic()
    with pytest.raises(DistanceTimeoutError, match="partial_adaptive"):
        paired_distances([A], [B], "partial_adaptive", time_budget_s=budget)
    landed = time.monotonic()
    assert landed - t0 < budget + 1.0, landed - t0
    _join_pot_workers()
    assert ended and ended[0] > landed


def test_a_stopped_uot_replay_ends_its_worker_at_once(monkeypatch):
    """UOT on the POT route runs :func:`_large.uot_replay`, which looks at the stop flag every iteration: after
    Ctrl-C the worker ends within a second, not after its 10^7 allowed iterations."""
    _thresholds(monkeypatch, 0.0)
    rng = np.random.default_rng(6)
    A, B = rng.standard_normal((300, 64)), rng.standard_normal((300, 64))
    spec = make_spec("uot", tau=1e3, eps=0.005, stop_thr=1e-300, max_iter=10 ** 7)  # > 20 s uninterrupted
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            pairwise_distances([A], [B], spec, on_nonconvergence="ignore")
    finally:
        timer.cancel()
        timer.join()
    t0 = time.monotonic()
    for t in [t for t in threading.enumerate() if t.name == "sdr-distance-pot"]:
        t.join(5)
        assert not t.is_alive()
    assert time.monotonic() - t0 < 1.0


@pytest.mark.parametrize("tau", [0.1, 1.0, 1e3, float("inf")])
@pytest.mark.parametrize("rescale", [True, False])
def test_uot_replay_is_the_reference_bit_for_bit(tau, rescale):
    from sdrlib.distances import reference as R

    rng = np.random.default_rng([len(repr(tau)), int(rescale)])
    for n, m in [(1, 1), (3, 7), (40, 25), (120, 121)]:
        for eps, max_iter in [(0.005, 1000), (0.1, 1000), (0.1, 3)]:
            M = rng.random((n, m))
            assert _large.uot_replay(M, tau, eps, 1e-9, max_iter, rescale) == R.uot(
                None, None, tau, eps, 1e-9, max_iter, rescale, M=M)
    zero = np.zeros((4, 5))
    assert _large.uot_replay(zero, 1.0, 0.1, 1e-9, 1000, rescale) == R.uot(None, None, 1.0, 0.1, 1e-9, 1000, rescale,
                                                                            M=zero) == (0.0, True)


def test_a_pot_error_reaches_the_caller(monkeypatch):
    def broken(*args):
        raise RuntimeError("solver broke")

    _thresholds(monkeypatch, 0.0)
    monkeypatch.setattr(_large, "pair_value", broken)
    rng = np.random.default_rng(2)
    with pytest.raises(RuntimeError, match="solver broke"):
        pairwise_distances(_sets(rng, [3]), _sets(rng, [4]), "ot")


# --------------------------------------------------------------------------- POT on first use
def test_pot_is_imported_only_when_a_pair_is_routed_to_it():
    """Importing the package and the engine, and report-sized pairs of every routed family, leave POT (and the torch
    it loads) unimported; the first pair past a threshold imports it, and gets the reference's value."""
    code = """if True:
        import sys
        import numpy as np
        import sdrlib.distances
        assert "ot" not in sys.modules, "import sdrlib.distances"
        from sdrlib.distances import pairwise_distances, set_distance
        from sdrlib.distances import reference
        assert "ot" not in sys.modules, "import the engine and the reference"
        rng = np.random.default_rng(0)
        A, B = [rng.standard_normal((n, 8)) for n in (3, 4)]
        for name in ("ot", "partial_0.5", "uot_1.0", "hung_nn", "hung_pen_0.1"):
            pairwise_distances([A], [B], name)
        assert "ot" not in sys.modules, "report-sized pairs"
        A, B = [rng.standard_normal((n, 8)) for n in (32, 33)]
        d = pairwise_distances([A], [B], "ot")[0, 0]
        assert "ot" in sys.modules and abs(d - set_distance(A, B, "ot")) <= 1e-9
    """
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=600)


# --------------------------------------------------------------------------- unique_rows
def _cases():
    rng = np.random.default_rng(5)
    yield "distinct", rng.standard_normal((300, 16))
    dup = rng.standard_normal((40, 8))
    yield "duplicates", dup[rng.integers(0, 40, size=200)]
    tie = rng.standard_normal((60, 6))
    tie[:, :4] = np.round(tie[:, :4])  # many rows agree on the sorted prefix and differ further on
    yield "prefix ties", tie
    z = rng.standard_normal((20, 5))
    z[::3, 0] = 0.0
    z[1::3, 0] = -0.0  # equal as floats, not as bits
    z[:, 1:4] = 1.0
    yield "signed zeros", z
    yield "one row", rng.standard_normal((1, 768))
    yield "narrow", rng.integers(0, 3, size=(50, 2)).astype(np.float64)
    yield "wide", rng.standard_normal((64, 768))[rng.integers(0, 64, size=128)]


@pytest.mark.parametrize("name,mat", list(_cases()), ids=[c[0] for c in _cases()])
def test_unique_rows_is_numpys_unique_bit_for_bit(name, mat):
    u, idx = unique_rows(mat)
    nu, nidx = np.unique(mat, axis=0, return_inverse=True)
    assert u.tobytes() == nu.tobytes() and u.shape == nu.shape
    np.testing.assert_array_equal(idx, nidx.reshape(-1))
    assert idx.dtype == np.int64 and np.array_equal(u[idx], mat)
