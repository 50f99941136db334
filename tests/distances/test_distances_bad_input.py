"""Numerics that turn into rewards: every distance is a finite value in [0, 1] or a named SDRError.

Covers parameter floors (eps below the float64 floor of its solver is refused when the
spec is made), garbage names and parameters, scale-safe normalisation (1e300 rows),
input dtypes and shapes, packed-set offsets, hand-built PackedSets, the range check of
returned values (round-off clipped, anything else raised), on both paths: the per-pair
reference (``set_distance``) and the batched engine (``pairwise_distances``,
``pairwise_distances_many``, ``paired_distances``). The last test is a hypothesis property
over arbitrary arrays and arbitrary ``family_<value>`` names.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sdrlib.distances import (
    FAMILIES,
    REGISTRY,
    ConvergenceWarning,
    DistanceInputError,
    get,
    make_spec,
    set_distance,
)
from sdrlib.distances.costs import RANGE_ATOL, check_range
from sdrlib.distances.engine import PackedSets, pack_sets, paired_distances, pairwise_distances, \
    pairwise_distances_many
from sdrlib.distances.errors import DistanceRangeError, DistanceSpecError, UnknownDistanceError
from sdrlib.distances.registry import GW_MIN_EPS, SINKHORN_MIN_EPS, UOT_MIN_EPS
from sdrlib.errors import SDRError

NAMES = list(REGISTRY)


def _sets(seed: int, n: int, m: int, d: int = 8):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(m, d))


# ----------------------------------------------------------------------------- parameter floors

@pytest.mark.parametrize("name", ["gw_1e-5", "gw_0.001", "gw_0.0028", "sinkhorn_1e-20", "sinkhorn_1e-300",
                                  "sinkhorn_1e-8", "sinkhorn_5e-324", "uot_1e-300"])
def test_eps_below_the_solver_floor_is_refused_when_the_spec_is_made(name):
    # uot_<tau> sets tau; tau = 1e-300 is a valid (tiny) weight, so that name goes through make_spec's eps check
    if name.startswith("uot"):
        with pytest.raises(DistanceSpecError, match="floor"):
            make_spec("uot", tau=1.0, eps=UOT_MIN_EPS / 2)
        return
    with pytest.raises(DistanceSpecError, match="floor") as info:
        get(name)
    assert isinstance(info.value, ValueError)  # callers catching ValueError keep working
    with pytest.raises(DistanceSpecError, match="floor"):  # before any input is looked at
        set_distance(np.eye(3), np.eye(3), name)
    with pytest.raises(DistanceSpecError, match="floor"):
        pairwise_distances([np.eye(3)], [np.eye(3)], name)


def test_the_floors_are_float64_bounds():
    tiny = np.finfo(np.float64).tiny
    # GW: the largest inner-kernel exponent is grad / eps = 2 / eps; at the floor exp(-2/eps) is still normal
    assert np.exp(-2.0 / GW_MIN_EPS) >= tiny * (1 - 1e-9)
    assert np.exp(-2.0 / (GW_MIN_EPS * 0.99)) < tiny
    assert UOT_MIN_EPS >= 1.0 / -math.log(tiny)  # the UOT kernel exp(-M~/eps), M~ <= 1, stays normal
    # Sinkhorn (log domain): round-off 2^-52 / eps of exponents of size 1/eps equals the stopping threshold 1e-9
    assert SINKHORN_MIN_EPS * 1e-9 == pytest.approx(2.0 ** -52 * 1e-18, rel=1e-12)
    assert make_spec("gw", eps=GW_MIN_EPS).params["eps"] == GW_MIN_EPS
    assert make_spec("sinkhorn", eps=SINKHORN_MIN_EPS).params["eps"] == SINKHORN_MIN_EPS


@pytest.mark.filterwarnings("ignore::sdrlib.distances.errors.ConvergenceWarning")
def test_values_at_the_floors_are_distances_not_collapses():
    A, B = _sets(0, 4, 5)
    gw_floor = set_distance(A, B, make_spec("gw", eps=GW_MIN_EPS, max_iter=20))
    gw_default = set_distance(A, B, "gw")
    assert 0.0 < gw_floor <= 1.0 and abs(gw_floor - gw_default) < 0.1  # gw_1e-5 used to give 0.0
    sk = set_distance(A, B, make_spec("sinkhorn", eps=SINKHORN_MIN_EPS, max_iter=50))
    assert 0.0 <= sk <= 1.0 and abs(sk - set_distance(A, B, "ot")) < 0.1  # sinkhorn_1e-20 used to give 1.0
    np.testing.assert_allclose(pairwise_distances([A], [B], make_spec("gw", eps=GW_MIN_EPS, max_iter=20)),
                               [[gw_floor]], atol=1e-9)


# ----------------------------------------------------------------------------- garbage parameters and names

@pytest.mark.parametrize("family, key", [("sinkhorn", "eps"), ("uot", "tau"), ("uot", "eps"), ("gw", "eps"),
                                         ("hung_pen", "alpha"), ("partial", "rho"), ("sinkhorn", "stop_thr"),
                                         ("gw", "tol")])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), -1.0, 0.0, -0.0, "0.1", None, True,
                                   10 ** 400, [0.1], complex(0.1, 0)])
def test_unusable_parameter_values_raise_a_named_error(family, key, value):
    with pytest.raises(DistanceSpecError):
        make_spec(family, **{key: value})


@pytest.mark.parametrize("value", [0, -1, 1.5, True, 10 ** 12, float("nan"), "100", None])
def test_unusable_iteration_caps_raise(value):
    with pytest.raises(DistanceSpecError, match="max_iter"):
        make_spec("sinkhorn", max_iter=value)


def test_numpy_scalars_are_accepted_and_normalised_to_python_numbers():
    s = make_spec("sinkhorn", eps=np.float32(0.25), max_iter=np.int64(50))
    assert s.params["eps"] == 0.25 and type(s.params["eps"]) is float and type(s.params["max_iter"]) is int
    assert make_spec("partial", rho=np.float64(0.5)) == get("partial_0.5")
    assert make_spec("partial", rho=1).params["rho"] == 1.0


@pytest.mark.parametrize("name", ["", "sinkhorn_", "sinkhorn_nan", "sinkhorn_inf", "sinkhorn_fast", "SINKHORN_0.1",
                                  "sinkhorn_0.1 ", "ot_0.1", "hung_pen_1.0.0", "partial_", "gw_.", "cosine"])
def test_garbage_names_are_unknown_distances(name):
    with pytest.raises(UnknownDistanceError, match="unknown distance") as info:
        get(name)
    assert isinstance(info.value, KeyError) and isinstance(info.value, SDRError)
    assert str(info.value).startswith("unknown distance")  # not KeyError's quoted repr


@pytest.mark.parametrize("name", ["gw_1e999", "sinkhorn_-0.1", "sinkhorn_0", "sinkhorn_1e-400", "partial_2",
                                  "partial_0", "partial_-0.5", "hung_pen_-1", "uot_0", "uot_1e999"])
def test_parsable_names_with_unusable_values_are_spec_errors(name):
    with pytest.raises(DistanceSpecError):
        get(name)


@pytest.mark.parametrize("name", [123, None, 0.1, ["ot"]])
def test_non_string_names_are_named_type_errors(name):
    with pytest.raises(DistanceSpecError) as info:
        get(name)
    assert isinstance(info.value, TypeError)


def test_call_options_are_checked():
    A = [np.eye(3)[:2]]
    for bad in (float("nan"), 2.0, -0.5, "1", True):
        with pytest.raises(DistanceSpecError, match="empty_value"):
            pairwise_distances(A, A, "ot", empty_value=bad)
        with pytest.raises(DistanceSpecError, match="empty_value"):
            paired_distances(A, A, "ot", empty_value=bad)
    for bad in ("shout", None, 1):
        with pytest.raises(DistanceSpecError, match="on_nonconvergence"):
            set_distance(A[0], A[0], "ot", on_nonconvergence=bad)
        with pytest.raises(DistanceSpecError, match="on_nonconvergence"):
            pairwise_distances(A, A, "ot", on_nonconvergence=bad)
    with pytest.raises(DistanceSpecError, match="device"):
        pairwise_distances(A, A, "ot", device=3)
    with pytest.raises(DistanceSpecError, match="sequence"):
        pairwise_distances_many(A, A, "ot")


# ----------------------------------------------------------------------------- magnitudes

@pytest.mark.parametrize("name", ["chamfer", "hausdorff", "ot", "sinkhorn_0.1", "uot_1.0", "gw", "hung_nn",
                                  "hung_pen_0.1", "partial_adaptive"])
def test_huge_and_small_rows_give_the_distances_of_unit_rows(name):
    A, B = _sets(1, 3, 4)
    base = set_distance(A, B, name)
    for sa, sb in [(1e300, 1.0), (1e300, 1e300), (1e-11, 1e250), (1.7e308 / 10, 1e-11)]:
        assert set_distance(sa * A, sb * B, name) == pytest.approx(base, abs=1e-12)
        np.testing.assert_allclose(pairwise_distances([sa * A], [sb * B], name), [[base]], atol=1e-12)
    # powers of two scale exactly: the same unit rows bit for bit, hence the same value
    assert set_distance(2.0 ** 1000 * A, 2.0 ** -30 * B, name) == base
    mixed = A * np.array([[1e300], [1.0], [1e-11]])  # one row huge, one tiny, in the same set
    assert set_distance(mixed, B, name) == pytest.approx(base, abs=1e-12)


def test_rows_below_the_minimum_norm_are_rejected_in_both_paths():
    A, B = _sets(2, 3, 4)
    for s in (1e-300, 1e-13, 5e-324):
        with pytest.raises(DistanceInputError, match="zero-norm"):
            set_distance(s * A, B, "ot")
        with pytest.raises(DistanceInputError, match="zero-norm"):
            pairwise_distances([B], [s * A], "ot")
    Z = A.copy()
    Z[1] = 0.0
    with pytest.raises(DistanceInputError, match=r"zero-norm rows \[1\]"):
        set_distance(Z, B, "chamfer")


# ----------------------------------------------------------------------------- dtypes and shapes

def test_integer_bool_and_float32_inputs_are_numbers():
    A = np.array([[1, 2, 0], [0, 1, 3]])
    B = np.array([[2, 0, 1]])
    ref = set_distance(A.astype(float), B.astype(float), "ot")
    for a, b in [(A, B), (A.astype(np.uint8), B.astype(np.int16)), (A.tolist(), B.tolist()),
                 (A.astype(np.float32), B)]:
        assert set_distance(a, b, "ot") == pytest.approx(ref, abs=1e-7)
        np.testing.assert_allclose(pairwise_distances([a], [b], "ot"), [[ref]], atol=1e-7)
    assert set_distance(np.array([[True, False]]), np.array([[False, True]]), "chamfer") == 0.5


@pytest.mark.parametrize("bad, match", [
    (np.array([["1.0", "2.0"]]), "numeric"), (np.array([[1 + 2j, 1.0]]), "numeric"),
    (np.array([["2020-01-01"]], dtype="datetime64[D]"), "numeric"), ([[10 ** 400, 1.0]], "numeric"),
    ([[None, 1.0]], "NaN"), ([[1.0, 2.0], [1.0]], "numeric"), (np.zeros((0, 2)), "empty"),
    (np.zeros((2, 0)), "dimension 0"), (np.ones((1, 1, 2)), "shape"), (np.float64(1.0), "shape"),
    (np.zeros(0), "shape"), (np.ones((2, 3)), "dimension"), ([[np.nan, 1.0]], "NaN"), ([[-np.inf, 1.0]], "NaN"),
    (np.array([[1e400, 1.0]], dtype=np.longdouble), "NaN"),
])
def test_unusable_sets_raise_named_errors_in_both_paths(bad, match):
    good = np.eye(2)
    with pytest.raises(DistanceInputError, match=match):
        set_distance(bad, good, "ot")
    with pytest.raises(DistanceInputError):
        pairwise_distances([good], [bad], "ot")
    with pytest.raises(DistanceInputError):
        paired_distances([bad], [good], "chamfer")


def test_one_dimensional_arrays_are_one_sentence_in_both_paths():
    a, B = np.array([1.0, 2.0, 2.0]), np.eye(3)
    v = set_distance(a, B, "ot")
    assert v == set_distance(a[None, :], B, "ot")
    np.testing.assert_allclose(pairwise_distances([a], [B], "ot"), [[v]], atol=1e-12)


# ----------------------------------------------------------------------------- packed sets

@pytest.mark.parametrize("offsets, match", [
    (np.array([0.0, 2.0, 5.0]), "integer dtype"), (np.array([0, 2.7, 5]), "integer dtype"),
    (np.array([False, True]), "integer dtype"), (np.array([1, 3, 5]), "start at 0"),
    (np.array([0, 3, 2, 5]), "non-decreasing"), (np.array([0, 2, 4]), "end at the number of rows 5"),
    (np.array([0, 2, 6]), "end at the number of rows 5"), (np.array([], dtype=np.int64), "at least one"),
    (np.array([0, 2, 2 ** 64 - 1], dtype=np.uint64), "int64"),
])
def test_packed_offsets_are_validated(offsets, match):
    mat = np.random.default_rng(0).normal(size=(5, 4))
    with pytest.raises(DistanceInputError, match=match):
        pairwise_distances([mat[:2]], (mat, offsets), "ot")
    with pytest.raises(DistanceInputError, match=match):
        pack_sets((mat, offsets))


def test_valid_packed_offsets_of_any_integer_dtype_agree():
    mat = np.random.default_rng(0).normal(size=(5, 4))
    sets = [mat[:2], mat[2:2], mat[2:5]]
    ref = pairwise_distances(sets, sets, "chamfer", empty_value=1.0)
    for dt in (np.int64, np.int32, np.uint16):
        offs = np.array([0, 2, 2, 5], dtype=dt)
        np.testing.assert_allclose(pairwise_distances((mat, offs), (mat, offs), "chamfer", empty_value=1.0), ref,
                                   atol=1e-12)


def test_hand_built_packed_sets_are_checked():
    good = pack_sets([np.eye(3)[:2], np.eye(3)[1:]])
    cases = [
        (PackedSets(good.unique, np.array([0, 1, 7, 2]), good.offsets), "index"),
        (PackedSets(good.unique, np.array([0, 1, -1, 2]), good.offsets), "index"),
        (PackedSets(good.unique * 3.0, good.index, good.offsets), "unit-norm"),
        (PackedSets(good.unique.astype(np.float32), good.index, good.offsets), "float64"),
        (PackedSets(good.unique, good.index, np.array([0, 2, 3])), "end at"),
        (PackedSets(good.unique, good.index, np.array([0.0, 2.0, 4.0])), "integer dtype"),
        (PackedSets(np.where(good.unique == 1.0, np.nan, good.unique), good.index, good.offsets), "unit-norm"),
    ]
    for ps, match in cases:
        with pytest.raises(DistanceInputError, match=match):
            pairwise_distances([np.eye(3)[:1]], ps, "ot")
    fresh = PackedSets(good.unique.copy(), good.index.copy(), good.offsets.copy())
    np.testing.assert_allclose(pairwise_distances(fresh, good, "ot"), pairwise_distances(good, good, "ot"))


# ----------------------------------------------------------------------------- range of returned values

def test_check_range_clips_round_off_and_raises_on_the_rest():
    assert check_range(-1e-17, "x") == 0.0 and check_range(1.0 + 1e-12, "x") == 1.0
    assert check_range(0.25, "x") == 0.25
    np.testing.assert_array_equal(check_range(np.array([-RANGE_ATOL, 0.5, 1 + RANGE_ATOL]), "x"), [0.0, 0.5, 1.0])
    assert check_range(7.5, "hung_pen unclipped", upper=None) == 7.5
    for bad in (float("nan"), float("inf"), -float("inf"), 1.5, -0.01, 1 + 2 * RANGE_ATOL):
        with pytest.raises(DistanceRangeError, match="not distances"):
            check_range(bad, "x")
        with pytest.raises(DistanceRangeError):
            check_range(np.array([0.5, bad]), "x")
    with pytest.raises(DistanceRangeError):
        check_range(float("nan"), "x", upper=None)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 1.3, -0.2])
def test_a_broken_solver_value_raises_instead_of_becoming_0_or_1(bad, monkeypatch):
    """Before: min(1, max(0, nan)) was a silent 0.0, and 1.3 a silent 1.0 (full or no reward)."""
    from sdrlib.distances import engine, reference

    monkeypatch.setattr(reference, "chamfer", lambda A, B: (bad, True))
    A, B = _sets(3, 2, 3)
    with pytest.raises(DistanceRangeError, match="chamfer"):
        set_distance(A, B, "chamfer")

    def broken_nn(G, ci, co, bi, bo, jl, hausdorff, out, stop):
        out[:] = bad

    monkeypatch.setattr(engine.K, "nn_grid_stoppable", broken_nn)
    with pytest.raises(DistanceRangeError, match="chamfer"):
        pairwise_distances([A], [B], "chamfer")


def test_unclipped_hung_pen_may_exceed_one_but_never_goes_non_finite_silently():
    A, B = _sets(4, 1, 5)
    spec = make_spec("hung_pen", alpha=1e300, clip=False)
    v = set_distance(A, B, spec)  # 1e300 * 4: finite, documented range [0, 1 + alpha |n - m|]
    assert v > 1.0 and math.isfinite(v)
    np.testing.assert_allclose(pairwise_distances([A], [B], spec), [[v]], rtol=1e-12)
    huge = make_spec("hung_pen", alpha=1e308, clip=False)  # 4e308 overflows to inf
    with pytest.raises(DistanceRangeError):
        set_distance(A, B, huge)
    with pytest.raises(DistanceRangeError):
        pairwise_distances([A], [B], huge)
    assert set_distance(A, B, make_spec("hung_pen", alpha=1e308)) == 1.0  # clipped by definition (eq. 20 + min)


# ----------------------------------------------------------------------------- property

_FAMILY_NAMES = ["sinkhorn", "uot", "gw", "hung_pen", "partial"]
_EXTREME = [0.0, -0.0, 1.0, -1.0, 1e-300, -1e-300, 1e300, -1e300, 5e-324, 1.7e308, np.nan, np.inf, -np.inf]


@st.composite
def _name(draw):
    kind = draw(st.sampled_from([0, 0, 0, 4, 4, 1, 2, 3]))
    if kind == 0:
        return draw(st.sampled_from(NAMES))
    if kind == 4:  # family_<positive value over 16 decades>: near, below and far above the floors
        return f"{draw(st.sampled_from(_FAMILY_NAMES))}_{10.0 ** draw(st.floats(-12.0, 4.0))!r}"
    if kind == 1:  # family_<arbitrary float, repr'd>
        v = draw(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1e-20, 1e-5, 0.003, 1e3, 1e300]))
        return f"{draw(st.sampled_from(_FAMILY_NAMES))}_{v!r}"
    if kind == 2:  # family_<arbitrary text>
        return f"{draw(st.sampled_from(_FAMILY_NAMES))}_{draw(st.text(max_size=6))}"
    return draw(st.text(max_size=12))


@st.composite
def _array(draw, d: int):
    n = draw(st.sampled_from([0, 1, 1, 2, 2, 3, 3, 3]))
    dd = draw(st.sampled_from([d] * 7 + [d + 1]))  # sometimes a mismatched width
    if draw(st.integers(0, 3)) == 0:  # arbitrary floats: mostly refused
        elems = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from(_EXTREME)
    else:  # ordinary embeddings, now and then one extreme entry: mostly answered
        ordinary = st.floats(0.01, 10.0) | st.floats(-10.0, -0.01)
        elems = st.one_of(ordinary, ordinary, ordinary, st.sampled_from(_EXTREME[:10]))
    a = draw(hnp.arrays(np.float64, (n, dd), elements=elems))
    scale = draw(st.sampled_from([1.0] * 5 + [1e300, 1e-300, 1e-150]))
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        a = a * scale
    shape = draw(st.integers(0, 5))
    if shape == 0 and n:
        return a[0]  # 1-d: one sentence
    if shape == 1:
        return np.round(a).astype(np.int64) if np.isfinite(a).all() and np.abs(a).max(initial=0) < 1e18 else a
    return a


def _is_distance(v: float) -> bool:
    return math.isfinite(v) and 0.0 <= v <= 1.0


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(d=st.integers(1, 3), data=st.data(), name=_name())
def test_property_every_call_returns_a_distance_or_a_named_error(d, data, name):
    A, B = data.draw(_array(d)), data.draw(_array(d))
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's own overflow notes on absurd inputs
        for path, call in [("ref", lambda: set_distance(A, B, name)),
                           ("engine", lambda: float(pairwise_distances([A], [B], name)[0, 0])),
                           ("paired", lambda: float(paired_distances([A], [B], name)[0]))]:
            try:
                out[path] = call()
            except SDRError as err:
                out[path] = type(err)
    event(f"outcome: {out['ref'].__name__ if isinstance(out['ref'], type) else 'value'}")
    for path, v in out.items():
        assert isinstance(v, type) or _is_distance(v), (path, name, v)
    # the three paths refuse together and agree when they answer
    kinds = {p: isinstance(v, type) for p, v in out.items()}
    assert len(set(kinds.values())) == 1, (name, out)
    if not kinds["ref"]:
        assert abs(out["ref"] - out["engine"]) < 1e-3 and abs(out["engine"] - out["paired"]) < 1e-9, (name, out)


def test_hand_built_specs_are_checked_like_made_ones():
    from sdrlib.distances import DistanceSpec

    gw = get("gw")
    bad = DistanceSpec("gw_tiny", "gw", {**gw.params, "eps": 1e-5})
    with pytest.raises(DistanceSpecError, match="floor"):
        set_distance(np.eye(3), np.eye(3), bad)
    with pytest.raises(DistanceSpecError, match="floor"):
        pairwise_distances([np.eye(3)], [np.eye(3)], bad)
    for spec in (DistanceSpec("x", "nope", {}), DistanceSpec("x", "sinkhorn", {"eps": 0.1}),
                 DistanceSpec("x", "partial", {"rho": float("nan")})):
        with pytest.raises(DistanceSpecError):
            get(spec)
    assert get(gw) is gw


def test_a_tuple_of_a_set_and_one_embedding_is_two_sets_not_packed_offsets():
    from sdrlib.distances import pairwise_distances

    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(3, 8)), rng.normal(size=(4, 8))
    as_tuple = pairwise_distances((A, B[0]), [B], "chamfer")   # was: "offsets must have an integer dtype"
    np.testing.assert_array_equal(as_tuple, pairwise_distances([A, B[0]], [B], "chamfer"))
    assert as_tuple.shape == (2, 1)
