"""The batched engine agrees with the per-pair reference on every setting, edge cases included."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sdrlib.distances import (
    FAMILIES,
    REGISTRY,
    EXTENSIONS,
    ConvergenceError,
    ConvergenceWarning,
    DistanceInputError,
    make_spec,
    set_distance,
)
from sdrlib.distances.engine import PackedSets, pack_sets, paired_distances, pairwise_distances
from sdrlib.distances.synthetic import make_space, random_sets, structured_bank, structured_candidates

TOL = 1e-5
EXTRA = [make_spec("sinkhorn", eps=1e-3, max_iter=300),  # log-domain branch
         make_spec("sinkhorn", eps=0.01, max_iter=7),      # stopped early: same iterates, same value
         make_spec("partial", rho=1.0), make_spec("uot", tau=5.0, eps=0.05),
         make_spec("hung_pen", alpha=0.5, clip=False), make_spec("gw", eps=0.05, max_iter=30)]


def _workload(seed: int = 0, d: int = 24):
    """Candidates and a bank mixing random, clustered and edge-case sets (sizes 1..8)."""
    rng = np.random.default_rng(seed)
    space = make_space(rng, d, topics=4)
    bank, pool = structured_bank(rng, 8, space, n_max=8)
    bank += random_sets(rng, 3, d, n_max=6)
    cands = structured_candidates(rng, 3, pool, space, n_max=8) + random_sets(rng, 1, d, n_max=4)
    x = pool[:1]
    bank += [x, np.repeat(x, 3, axis=0), cands[0].copy(), cands[1][::-1].copy()]  # M = 0, identical, reversed
    cands += [x, np.repeat(x, 2, axis=0)]
    return cands, bank


@pytest.fixture(scope="module")
def workload():
    return _workload()


#: our unscaled transport settings (origin "sdr extension"); the negation-aware ones are checked in
#: tests/distances/test_distances_negation.py (they need presence vectors)
RAW = [s for s in EXTENSIONS.values() if not s.negation_aware] + [make_spec("sinkhorn", eps=1e-3, max_iter=300,
                                                                            rescale=False)]


@pytest.mark.parametrize("spec", list(REGISTRY.values()) + EXTRA + RAW, ids=lambda s: s.name)
def test_engine_agrees_with_reference(spec, workload):
    cands, bank = workload
    if spec.family in ("gw", "uot") or (spec.family == "sinkhorn" and spec.params["eps"] <= 0.01):
        # POT's Python loop is slow here: a smaller grid that keeps every kind of set
        cands, bank = cands[1:2] + cands[3:], bank[:3] + bank[8:9] + bank[-4:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        D = pairwise_distances(cands, bank, spec)
        R = np.array([[set_distance(a, b, spec) for b in bank] for a in cands])
    assert D.shape == (len(cands), len(bank)) == R.shape
    assert np.isfinite(D).all()
    np.testing.assert_allclose(D, R, atol=TOL, rtol=0)
    if spec.params.get("clip", True):
        assert (D >= 0).all() and (D <= 1).all()


def test_gw_at_its_eps_floor_agrees_and_below_is_refused():
    """Below GW_MIN_EPS the inner kernel exp(-grad / eps) underflows to whole zero columns and the loss
    collapses to 0 (eps = 5e-4 gave 0.0 for most pairs): refused at spec creation. At the floor the
    engine still replays POT, flags and all."""
    from sdrlib.distances.errors import DistanceSpecError
    from sdrlib.distances.reference import gw
    from sdrlib.distances.registry import GW_MIN_EPS

    for eps in (5e-4, 1e-3, GW_MIN_EPS * 0.999):
        with pytest.raises(DistanceSpecError, match="floor"):
            make_spec("gw", eps=eps)
    rng = np.random.default_rng(0)
    A = random_sets(rng, 2, 16, n_min=3, n_max=6)
    B = random_sets(rng, 3, 16, n_min=3, n_max=6)
    spec = make_spec("gw", eps=GW_MIN_EPS, max_iter=20)
    D, ok = pairwise_distances(A, B, spec, on_nonconvergence="ignore", return_converged=True)
    ref = [[gw(a, b, eps=GW_MIN_EPS, max_iter=20) for b in B] for a in A]
    np.testing.assert_allclose(D, [[v for v, _ in r] for r in ref], atol=1e-12, rtol=0)
    assert ok.tolist() == [[c for _, c in r] for r in ref]
    assert (D > 0).all() and (D <= 1).all()  # no collapse to a confident 0


#: parameters far from the paper's: kernel underflow, near-hard / near-balanced / very smooth transport,
#: tiny and full partial masses, vanishing and huge Hungarian penalties
EXTREME = [make_spec("gw", eps=0.00283, max_iter=10), make_spec("gw", eps=10.0), make_spec("uot", tau=1e-3, eps=0.1),
           make_spec("uot", tau=1e3, eps=0.1, max_iter=200), make_spec("uot", tau=1.0, eps=0.5),
           make_spec("sinkhorn", eps=10.0), make_spec("sinkhorn", eps=1e-4, max_iter=50),
           make_spec("sinkhorn", eps=0.005, max_iter=200), make_spec("partial", rho=1e-3),
           make_spec("partial", rho=0.999), make_spec("hung_pen", alpha=1e-9),
           make_spec("hung_pen", alpha=100.0, clip=False)]


@pytest.mark.parametrize("spec", EXTREME, ids=lambda s: s.name)
def test_engine_agrees_at_extreme_parameters(spec):
    rng = np.random.default_rng(1)
    space = make_space(rng, 24, topics=3)
    bank, pool = structured_bank(rng, 4, space, n_max=6)
    cands = structured_candidates(rng, 2, pool, space, n_max=6)
    bank += [pool[:1], np.repeat(pool[:1], 3, axis=0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        D = pairwise_distances(cands, bank, spec, on_nonconvergence="ignore")
        R = np.array([[set_distance(a, b, spec, on_nonconvergence="ignore") for b in bank] for a in cands])
    np.testing.assert_allclose(D, R, atol=TOL, rtol=0)
    assert (D >= 0).all() and (spec.params.get("clip", True) is False or (D <= 1).all())


def test_uot_plan_mass_above_one_raises_in_both_paths():
    """UOT's linear cost is bounded by its plan's mass, which exceeds 1 when eps is large against tau
    (tau = 1, eps = 10 gives values up to ~19): both paths raise DistanceRangeError, never a clipped 1."""
    from sdrlib.distances.errors import DistanceRangeError

    rng = np.random.default_rng(1)
    A, B = random_sets(rng, 1, 16, n_min=6, n_max=6)[0], random_sets(rng, 1, 16, n_min=7, n_max=7)[0]
    for spec in (make_spec("uot", tau=1.0, eps=10.0), make_spec("uot", tau=1e-3, eps=10.0)):
        with pytest.raises(DistanceRangeError, match="not distances"):
            set_distance(A, B, spec)
        with pytest.raises(DistanceRangeError, match="not distances"):
            pairwise_distances([A], [B], spec)


def test_every_family_has_a_kernel_and_is_registered():
    from sdrlib.distances.registry import resolve

    # the paper's families, and ours (chamfer_recall, registered beside them)
    assert {s.family for s in REGISTRY.values()} | {"chamfer_recall"} == set(FAMILIES)
    for fam in FAMILIES.values():
        assert callable(resolve(fam.kernel)) and callable(resolve(fam.reference))
        assert fam.neg_kernel is None or callable(resolve(fam.neg_kernel))


def test_input_formats_agree(workload):
    cands, bank = workload
    mat = np.concatenate(bank)
    offs = np.concatenate([[0], np.cumsum([len(b) for b in bank])])
    packed = pack_sets(bank)
    a = pairwise_distances(cands, bank, "ot")
    f32 = pairwise_distances(cands, (mat.astype(np.float32), offs), "ot")  # ReportBank stores float32
    np.testing.assert_allclose(f32, pairwise_distances(cands, [b.astype(np.float32) for b in bank], "ot"), atol=1e-12)
    np.testing.assert_allclose(pairwise_distances(cands, (mat, offs), "ot"), a, atol=1e-12)
    np.testing.assert_allclose(pairwise_distances(cands, packed, "ot"), a, atol=1e-12)
    np.testing.assert_allclose(pairwise_distances(cands[:2], packed, "hung_nn"),
                               pairwise_distances(cands, packed, "hung_nn")[:2], atol=1e-12)


@pytest.mark.filterwarnings("ignore::sdrlib.distances.errors.ConvergenceWarning")
def test_paired_is_the_diagonal(workload):
    cands, bank = workload
    k = len(cands)
    for name in ("chamfer", "sinkhorn_0.1", "gw", "partial_0.8"):
        full = pairwise_distances(cands, bank[:k], name)
        np.testing.assert_allclose(paired_distances(cands, bank[:k], name), np.diag(full), atol=1e-12)
    with pytest.raises(DistanceInputError, match="equal counts"):
        paired_distances(cands, bank, "ot")


def test_repeated_sentences_are_deduplicated():
    rng = np.random.default_rng(1)
    space = make_space(rng, 16)
    bank, pool = structured_bank(rng, 60, space, n_max=10, repeat=3.0)
    p = pack_sets(bank)
    assert isinstance(p, PackedSets)
    assert len(p.unique) == len(np.unique(np.concatenate(bank), axis=0)) < len(p.index)
    for t in (0, 17, 59):
        np.testing.assert_allclose(p.set(t), bank[t] / np.linalg.norm(bank[t], axis=1, keepdims=True), atol=1e-15)


def test_identical_sets_share_a_class_and_one_computation(workload):
    cands, bank = workload
    rng = np.random.default_rng(3)
    # the bank again with every set duplicated in shuffled row order, and a candidate repeated
    perm = [b[rng.permutation(len(b))] for b in bank]
    big_bank = bank + perm + bank[:2]
    big_cands = cands + [cands[0][::-1].copy()]
    cls = pack_sets(big_bank).classes()
    nb = len(bank)
    assert np.array_equal(cls[:nb], cls[nb:2 * nb]) and np.array_equal(cls[:2], cls[-2:])
    assert len(np.unique(cls)) == len(np.unique(cls[:nb])) < len(big_bank)
    # two different sets never share a class: a set and its strict subset
    a = cands[2]
    assert len(np.unique(pack_sets([a, a[:-1], np.concatenate([a, a[:1]])]).classes())) == 3
    for name in ("chamfer", "ot", "hung_pen_0.5", "sinkhorn_0.1", "gw", "partial_adaptive"):
        small = pairwise_distances(cands, bank, name)
        big = pairwise_distances(big_cands, big_bank, name)
        np.testing.assert_allclose(big[:len(cands), :nb], small, atol=1e-12, rtol=0)
        np.testing.assert_allclose(big[:len(cands), nb:2 * nb], small, atol=1e-12, rtol=0)
        np.testing.assert_allclose(big[-1], big[0], atol=1e-12, rtol=0)
        # the dedup'd value is still the reference's value for the permuted copy
        j = nb + 1
        assert abs(big[0, j] - set_distance(cands[0], big_bank[j], name)) < TOL


def test_repeated_pairs_are_scored_once_with_the_same_value(workload):
    cands, bank = workload
    A = [cands[0]] * 4 + [cands[1], cands[0][::-1].copy()]
    B = [bank[0]] * 4 + [bank[1], bank[0]]
    for name in ("hausdorff", "uot_0.5", "hung_nn"):
        d = paired_distances(A, B, name)
        ref = [set_distance(a, b, name) for a, b in zip(A, B)]
        np.testing.assert_allclose(d, ref, atol=TOL, rtol=0)
        assert np.all(d[:4] == d[0]) and d[5] == d[0]


def test_empty_sets_raise_unless_a_value_is_given(workload):
    cands, bank = workload
    d = bank[0].shape[1]
    bank2 = bank[:3] + [np.zeros((0, d))]
    with pytest.raises(DistanceInputError, match="empty"):
        pairwise_distances(cands, bank2, "chamfer")
    D = pairwise_distances(cands, bank2, "chamfer", empty_value=1.0)
    assert (D[:, 3] == 1.0).all()
    np.testing.assert_allclose(D[:, :3], pairwise_distances(cands, bank[:3], "chamfer"), atol=1e-12)


@pytest.mark.parametrize("bad, match", [([[np.nan] * 4], "NaN"), ([[0.0] * 4], "zero-norm"), (np.ones((2, 3)), "dimension")])
def test_bad_inputs(bad, match):
    good = [np.eye(4)[:2]]
    with pytest.raises(DistanceInputError, match=match):
        pairwise_distances(good, [np.eye(4)[:1], np.asarray(bad, dtype=float)], "ot")


def test_nonconvergence_in_the_engine(workload):
    cands, bank = workload
    spec = make_spec("uot", tau=1.0, max_iter=2)
    with pytest.raises(ConvergenceError, match="did not converge"):
        pairwise_distances(cands, bank, spec, on_nonconvergence="raise")
    with pytest.warns(ConvergenceWarning):
        D, ok = pairwise_distances(cands, bank, spec, return_converged=True)
    assert not ok.all() and ok.shape == D.shape


def test_device_argument():
    A = [np.eye(3)[:2]]
    assert pairwise_distances(A, A, "chamfer", device="auto").shape == (1, 1)
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            pairwise_distances(A, A, "chamfer", device="cuda")
    with pytest.raises(ValueError, match="device"):
        pairwise_distances(A, A, "chamfer", device="tpu")


@pytest.mark.filterwarnings("ignore::sdrlib.distances.errors.ConvergenceWarning")
def test_many_settings_share_one_pass(workload):
    from sdrlib.distances.engine import pairwise_distances_many

    cands, bank = workload
    names = ["chamfer", "gw", "hung_pen_0.1", "partial_adaptive"]
    many = pairwise_distances_many(cands, bank, names)
    assert list(many) == names
    for n in names:
        np.testing.assert_allclose(many[n], pairwise_distances(cands, bank, n), atol=1e-12)


def test_timing_helper_reports_agreement():
    from sdrlib.distances.timing import compare

    rng = np.random.default_rng(3)
    cands, bank = random_sets(rng, 2, 8, n_max=4), random_sets(rng, 5, 8, n_max=4)
    r = compare(cands, bank, "partial_0.8", ref_pairs=6)
    assert r["pairs_checked"] == 6 and r["max_abs_diff"] <= 1e-12
    assert r["ref_us"] > 0 and r["engine_us"] > 0 and r["sweep_engine_h"] > 0


#: settings that share one solve per pair in one call (engine._shared_groups), with others around them
SHARED = [make_spec("ot"), make_spec("partial", rho="adaptive"), make_spec("chamfer"), make_spec("partial", rho=0.5),
          make_spec("partial", rho=0.8), make_spec("partial", rho=1.0), make_spec("partial", rho=1e-3),
          make_spec("hung_nn"), make_spec("hung_pen", alpha=0.1), make_spec("hung_pen", alpha=0.5, clip=False),
          make_spec("ot", rescale=False), make_spec("partial", rho=0.5, rescale=False), make_spec("sinkhorn", eps=0.1)]


def _bits(a) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.filterwarnings("ignore::sdrlib.distances.errors.ConvergenceWarning")
@pytest.mark.parametrize("routed", [False, True], ids=["kernels", "some pairs routed"])
def test_shared_solves_give_each_settings_own_values_bit_for_bit(routed, workload, monkeypatch):
    """Exact OT with the partial OT masses (one run of successive shortest paths), and the Hungarian variants (one
    assignment), share their solve in one call; every value and flag is the one its setting computes alone, bit for
    bit, also when some pairs go to POT / SciPy for one family of a group and not for another."""
    from sdrlib.distances import _large
    from sdrlib.distances.engine import _shared_groups, pairwise_distances_many

    assert _shared_groups(SHARED) == [[0, 1, 3, 4, 5, 6], [2], [7, 8, 9], [10, 11], [12]]
    cands, bank = workload
    if routed:  # OT routes from 16 cells, partial OT from 30, the Hungarian variants from 24: mixed groups
        monkeypatch.setattr(_large, "POT_MIN_NM", {"ot": 16, "ot_square": 16, "partial": 30, "uot": np.inf,
                                                   "hung": 24})
    together = pairwise_distances_many(cands, bank, SHARED, return_converged=True)
    for spec in SHARED:
        alone = pairwise_distances(cands, bank, spec, return_converged=True)
        assert _bits(together[spec.name][0]) == _bits(alone[0]), spec.name
        assert np.array_equal(together[spec.name][1], alone[1])


def test_shared_transport_matches_one_target_at_a_time_on_ties_and_partial_masses():
    """``_kernels.transport_values``: every target of one successive-shortest-paths run equals its own run, on
    blocks with tied costs (repeated sentences), zero costs, n = m and n != m, and masses that end mid-path."""
    from sdrlib.distances import _kernels as K

    rng = np.random.default_rng(7)
    rhos = np.array([-1.0, 0.0, 0.5, 0.8, 1.0, 1e-3, 0.37, 0.999])
    never = np.zeros(1, np.int64)
    for trial in range(300):
        n, m = (int(x) for x in rng.integers(1, 9, size=2))
        M = np.zeros((8, 8))
        if trial % 3 == 0:  # few distinct values: many ties
            M[:n, :m] = rng.integers(0, 3, size=(n, m)) / 2.0
        else:
            M[:n, :m] = rng.random((n, m))
        mx = M[:n, :m].max()
        out = np.empty(len(rhos))
        K.transport_values(M, n, m, mx, rhos, 1e-12, trial % 2 == 0, never, out)
        for q, rho in enumerate(rhos):
            one = K.transport_value(M, n, m, mx, rho, 1e-12, trial % 2 == 0, never)
            assert _bits(out[q]) == _bits(one), (trial, n, m, rho)
