"""Registry, reference implementation (POT / SciPy) and the documented edge cases of sdrlib.distances."""

from __future__ import annotations

import warnings

import numpy as np
import ot
import pytest

from sdrlib.distances import (
    REGISTRY,
    ConvergenceError,
    ConvergenceWarning,
    DistanceInputError,
    available_distances,
    get,
    make_spec,
    reward,
    set_distance,
)
from sdrlib.distances.reference import partial_mass

PAPER_NAMES = ["chamfer", "hausdorff", "ot", "sinkhorn_0.01", "sinkhorn_0.1", "sinkhorn_0.5", "uot_0.5", "uot_1.0",
               "gw", "hung_nn", "hung_pen_0.1", "hung_pen_0.5", "partial_adaptive", "partial_0.5", "partial_0.8"]
EXACT = ["chamfer", "hausdorff", "ot", "hung_nn", "hung_pen_0.1", "hung_pen_0.5", "partial_adaptive",
         "partial_0.5", "partial_0.8"]
E = np.eye(4)


def _sets(seed: int, n: int, m: int, d: int = 8):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(m, d))


# ----------------------------------------------------------------------------- registry

def test_registry_holds_exactly_the_paper_settings():
    assert available_distances() == PAPER_NAMES
    for name, spec in REGISTRY.items():
        assert spec.name == name and spec.exact and spec.description
        assert get(name) is spec
    assert get("uot_0.5").params["eps"] == 0.1 and get("uot_0.5").params["tau"] == 0.5
    assert get("gw").params["eps"] == 0.1
    assert get("partial_adaptive").params["rho"] == "adaptive"
    assert get("hung_pen_0.5").params == {"alpha": 0.5, "clip": True}


def test_new_settings_by_parameter():
    s = make_spec("sinkhorn", eps=0.05)
    assert s.name == "sinkhorn_0.05" and s.params["eps"] == 0.05 and s.family == "sinkhorn"
    assert get("sinkhorn_0.05") == s
    assert get("partial_0.3").params["rho"] == 0.3
    assert get("hung_pen_2.0").params["alpha"] == 2.0
    assert get("gw_0.05").params["eps"] == 0.05
    assert make_spec("sinkhorn", eps=0.1, max_iter=50).name == "sinkhorn_0.1[max_iter=50]"
    assert make_spec("hung_pen", alpha=0.1, clip=False).name == "hung_pen_0.1[clip=False]"


@pytest.mark.parametrize("family, params", [
    ("sinkhorn", {"eps": 0.0}), ("sinkhorn", {"eps": -1.0}), ("sinkhorn", {"max_iter": 0}),
    ("partial", {"rho": 1.5}), ("partial", {"rho": 0.0}), ("partial", {"rho": "half"}),
    ("uot", {"eps": 1e-4}), ("hung_pen", {"clip": "yes"}), ("chamfer", {"eps": 0.1}), ("nope", {}),
])
def test_bad_parameters_are_rejected(family, params):
    with pytest.raises(ValueError):
        make_spec(family, **params)


def test_unknown_name_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown distance"):
        get("sinkhorn_fast")


# ----------------------------------------------------------------------------- hand-computed values

def test_values_on_a_hand_computed_pair():
    # A = {e1}, B = {e1, e2}: M = [[0, 0.5]], M~ = [[0, 1]]
    A, B = E[:1], E[:2]
    assert set_distance(A, B, "chamfer") == pytest.approx(0.5 * (0.0 + 0.25))
    assert set_distance(A, B, "hausdorff") == pytest.approx(0.5)
    assert set_distance(A, B, "ot") == pytest.approx(0.5)            # half the mass moves at M~ = 1
    assert set_distance(A, B, "hung_nn") == pytest.approx(0.5 / 2)   # matched 0, unmatched NN 0.5, / max(n,m)
    assert set_distance(A, B, "hung_pen_0.1") == pytest.approx(0.1)
    assert set_distance(A, B, "partial_adaptive") == pytest.approx(0.0)  # rho = 1/2 moves at cost 0
    assert set_distance(A, B, "partial_0.8") == pytest.approx(0.3)       # 0.5 at 0, 0.3 at 1
    assert set_distance(A, B, "gw") == 1.0                                # min(n, m) < 2


def test_reference_is_pot_and_scipy():
    A, B = _sets(0, 4, 6)
    from scipy.optimize import linear_sum_assignment

    from sdrlib.distances.costs import as_pair, cosine_cost

    a, b = as_pair(A, B)
    M = cosine_cost(a, b)
    Mt = M / M.max()
    p, q = np.full(4, 0.25), np.full(6, 1 / 6)
    assert set_distance(A, B, "ot") == pytest.approx(ot.emd2(p, q, Mt), abs=1e-12)
    r, c = linear_sum_assignment(M)
    assert set_distance(A, B, "hung_pen_0.1") == pytest.approx(min(1, M[r, c].mean() + 0.2), abs=1e-12)
    assert set_distance(A, B, "sinkhorn_0.1") == pytest.approx(ot.sinkhorn2(p, q, Mt, 0.1, method="sinkhorn_log"),
                                                               abs=1e-9)


# ----------------------------------------------------------------------------- edge cases

@pytest.mark.parametrize("name", PAPER_NAMES)
def test_identical_single_points_M_zero(name):
    x = np.array([[0.3, -0.2, 0.9, 0.1]])
    expected = 1.0 if name == "gw" else 0.0  # GW is undefined for single-element sets: zero similarity
    assert set_distance(x, x, name) == expected
    # two copies of one point on each side: M = 0 everywhere, M~ undefined -> 0 (GW: C = 0 -> loss 0)
    xx = np.repeat(x, 2, axis=0)
    assert set_distance(xx, np.repeat(x, 3, axis=0), name) == pytest.approx(
        0.0 if not name.startswith("hung_pen") else min(1.0, float(name.split("_")[-1])), abs=1e-12)


@pytest.mark.parametrize("name", EXACT)
def test_identical_sets_are_at_distance_zero(name):
    A, _ = _sets(1, 5, 1)
    assert set_distance(A, A, name) == pytest.approx(0.0, abs=1e-12)
    assert set_distance(A, A[::-1], name) == pytest.approx(0.0, abs=1e-12)


def test_entropic_self_distance_vanishes_with_eps():
    A, _ = _sets(2, 5, 1)
    vals = [set_distance(A, A, make_spec("sinkhorn", eps=e, max_iter=20000), on_nonconvergence="ignore")
            for e in (0.002, 0.01, 0.1, 0.5)]
    assert vals[0] < 1e-6
    assert all(x <= y + 1e-12 for x, y in zip(vals, vals[1:]))  # linear cost grows with eps
    assert vals[-1] > 0.1  # the documented consequence of returning the plan's linear cost


@pytest.mark.parametrize("name", ["gw", make_spec("gw", eps=0.05)])
def test_gw_single_element_fallback(name):
    A, B = _sets(3, 1, 5)
    assert set_distance(A, B, name) == 1.0
    assert set_distance(B, A, name) == 1.0


def test_partial_rho_one_is_capped_and_equals_ot():
    # sum(1/n) < 1 in float64 for these n: POT calls rho = 1 infeasible there
    ns = [n for n in range(2, 40) if np.full(n, 1.0 / n).sum() < 1.0]
    assert ns, "expected some n with sum(1/n) < 1"
    n = ns[0]
    A, B = _sets(4, n, n)
    from sdrlib.distances.costs import as_pair, cosine_cost, rescale

    a, b = as_pair(A, B)
    with pytest.raises(ValueError, match="infeasible"):
        ot.partial.partial_wasserstein2(np.full(n, 1 / n), np.full(n, 1 / n), rescale(cosine_cost(a, b)), m=1.0)
    rho1 = make_spec("partial", rho=1.0)
    assert partial_mass(1.0, n, n) <= np.full(n, 1.0 / n).sum()
    assert set_distance(A, B, rho1) == pytest.approx(set_distance(A, B, "ot"), abs=1e-9)


def test_tiny_eps_uses_the_log_domain():
    A, B = _sets(5, 4, 6)
    from sdrlib.distances.costs import as_pair, cosine_cost, rescale

    a, b = as_pair(A, B)
    Mt = rescale(cosine_cost(a, b))
    p, q = np.full(4, 0.25), np.full(6, 1 / 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = ot.sinkhorn2(p, q, Mt, 1e-3, method="sinkhorn")  # kernel domain underflows
    tiny = set_distance(A, B, make_spec("sinkhorn", eps=1e-3, max_iter=5000), on_nonconvergence="ignore")
    exact = set_distance(A, B, "ot")
    assert not (abs(float(kernel) - exact) < 1e-2)  # the kernel domain is wrong here (0.0 or nan)
    assert tiny == pytest.approx(exact, abs=1e-2)


@pytest.mark.parametrize("spec", [make_spec("sinkhorn", eps=0.01, max_iter=2), make_spec("uot", tau=1.0, max_iter=2),
                                  make_spec("gw", max_iter=1)])
def test_nonconvergence_is_detected(spec):
    A, B = _sets(6, 5, 7)
    with pytest.raises(ConvergenceError, match="did not converge"):
        set_distance(A, B, spec, on_nonconvergence="raise")
    with pytest.warns(ConvergenceWarning):
        v = set_distance(A, B, spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert set_distance(A, B, spec, on_nonconvergence="ignore") == v
    with pytest.raises(ValueError, match="on_nonconvergence"):
        set_distance(A, B, spec, on_nonconvergence="shout")


def test_converged_solvers_do_not_warn():
    A, B = _sets(7, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("sinkhorn_0.5", "uot_0.5", "uot_1.0"):
            set_distance(A, B, name)


@pytest.mark.parametrize("bad, match", [
    (np.zeros((0, 4)), "empty"), ([[np.nan, 1, 0, 0]], "NaN"), ([[np.inf, 1, 0, 0]], "NaN"),
    ([[0.0, 0, 0, 0]], "zero-norm"), (np.ones((2, 3)), "dimension"), (np.ones((2, 2, 4)), "shape"),
    ("text", "numeric"),
])
def test_bad_inputs_raise_clear_errors(bad, match):
    with pytest.raises(DistanceInputError, match=match):
        set_distance(bad, E[:2], "chamfer")
    assert issubclass(DistanceInputError, ValueError)


def test_rows_are_normalised_not_rejected():
    A, B = _sets(8, 3, 4)
    for name in ("chamfer", "ot", "hung_nn"):
        assert set_distance(3.0 * A, B, name) == pytest.approx(set_distance(A, B, name), abs=1e-12)


def test_hung_pen_above_one_is_clipped_and_reward_stays_in_unit_interval():
    A, B = _sets(9, 2, 9)
    raw = set_distance(A, B, make_spec("hung_pen", alpha=0.5, clip=False))
    assert raw > 1.0  # eq. (20) as written: mean matched cost + 0.5 * 7
    assert set_distance(A, B, "hung_pen_0.5") == 1.0
    assert reward(raw) == 0.0 and reward(set_distance(A, B, "hung_pen_0.5")) == 0.0
    small = set_distance(A, B, "hung_pen_0.1")
    assert small == pytest.approx(min(1.0, raw - 0.5 * 7 + 0.1 * 7))
    r = reward(np.array([-0.1, 0.0, 0.4, 1.0, 3.0]))
    assert np.array_equal(r, [1.0, 1.0, 0.6, 0.0, 0.0])
    assert reward(0.25) == 0.75


@pytest.mark.parametrize("bad", [float("nan"), np.nan, np.float32("nan"), float("inf"), -np.inf,
                                 [0.2, float("nan")], np.array([[0.1, 0.2], [np.inf, 0.3]])])
def test_reward_of_a_nan_or_infinite_distance_raises(bad):
    """reward(nan) was nan although the docstring promises [0, 1]. No setting returns NaN / inf (every
    distance call raises DistanceRangeError instead), so one reaching reward() is a failed computation:
    it raises the same error, naming the argument and the place; RewardScorer scores such a pair 0, counted."""
    from sdrlib.distances import DistanceRangeError

    with pytest.raises(DistanceRangeError, match=r"reward: distance.* is (nan|inf|-inf), not a distance"):
        reward(bad)


@pytest.mark.parametrize("bad", ["0.5", b"0.5", None, True, np.bool_(False), 0.5 + 0j, [0.1, "x"], [0.1, None],
                                 object(), [[0.1], [0.2, 0.3]]])
def test_reward_of_a_non_number_names_the_argument(bad):
    """A string raised numpy's UFuncTypeError ("ufunc 'clip' did not contain a loop ..."), which names nothing."""
    from sdrlib.distances import DistanceInputError

    with pytest.raises(DistanceInputError, match=r"reward: distance must be a real number or an array of them, got"):
        reward(bad)


def test_reward_keeps_its_range_and_shapes():
    assert reward(np.int64(0)) == 1.0 and isinstance(reward(1), float)
    assert reward([0.25, 2]).tolist() == [0.75, 0.0] and reward(np.zeros((2, 3))).shape == (2, 3)
    assert reward(np.array([], dtype=np.float64)).shape == (0,)


# ----------------------------------------------------------------------------- our extensions (registry)

RAW_NAMES = ["ot_raw", "sinkhorn_0.1_raw", "uot_1.0_raw", "partial_0.8_raw", "partial_adaptive_raw"]


def test_extensions_are_listed_beside_the_paper_with_their_origin():
    from sdrlib.distances import EXTENSIONS, registry_table

    assert list(EXTENSIONS) == RAW_NAMES + ["chamfer_neg", "hung_nn_neg"]
    assert available_distances(include_extensions=True) == PAPER_NAMES + list(EXTENSIONS)
    t = registry_table()
    assert t[t.origin == "paper"].name.tolist() == PAPER_NAMES
    assert t[t.origin == "sdr extension"].name.tolist() == list(EXTENSIONS)
    assert set(t.columns) >= {"name", "family", "origin", "params", "description"}
    assert registry_table(include_extensions=False).name.tolist() == PAPER_NAMES
    # the paper's settings keep their parameters; only a new parameter value makes a setting ours
    assert get("sinkhorn_0.1").origin == "paper" and get("sinkhorn_0.05").origin == "sdr extension"
    assert all(REGISTRY[n].params.get("rescale", True) is True for n in PAPER_NAMES)


@pytest.mark.parametrize("name,family,key,value", [("ot_raw", "ot", None, None),
                                                    ("sinkhorn_0.1_raw", "sinkhorn", "eps", 0.1),
                                                    ("sinkhorn_0.05_raw", "sinkhorn", "eps", 0.05),
                                                    ("uot_0.5_raw", "uot", "tau", 0.5),
                                                    ("partial_adaptive_raw", "partial", "rho", "adaptive"),
                                                    ("partial_0.3_raw", "partial", "rho", 0.3)])
def test_raw_names_parse_and_round_trip(name, family, key, value):
    s = get(name)
    assert s.family == family and s.params["rescale"] is False and s.name == name
    assert key is None or s.params[key] == value
    assert make_spec(family, **{**s.params}).name == name
    assert "unscaled" in s.description


@pytest.mark.parametrize("name", ["gw_raw", "gw_0.05_raw", "chamfer_raw", "hung_nn_raw", "hausdorff_raw"])
def test_raw_is_refused_where_there_is_no_rescaling(name):
    from sdrlib.distances import DistanceSpecError

    with pytest.raises(DistanceSpecError, match="_raw"):
        get(name)


@pytest.mark.parametrize("bad", [1, "no", None, 0.0])
def test_rescale_must_be_a_bool(bad):
    from sdrlib.distances import DistanceSpecError

    with pytest.raises(DistanceSpecError, match="rescale"):
        make_spec("ot", rescale=bad)
    with pytest.raises(DistanceSpecError):
        make_spec("gw", rescale=False)  # GW has no rescale parameter


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("base", ["ot", "partial_0.8", "partial_adaptive", "partial_0.5"])
def test_exact_raw_transport_is_the_rescaled_value_times_max_cost(seed, base):
    """M~ = M / max M scales every plan's cost by the same factor, so for the exact (linear-programme) families the
    optimal plan is the same and D_raw = max M * D: the rescaling erases exactly the overall scale."""
    from sdrlib.distances.costs import as_pair, cosine_cost

    A, B = _sets(seed, 3 + seed, 5)
    a, b = as_pair(A, B)
    mx = cosine_cost(a, b).max()
    raw = set_distance(A, B, base + "_raw")
    assert raw == pytest.approx(mx * set_distance(A, B, base), abs=1e-12)
    assert raw < set_distance(A, B, base)  # random sets: max M < 1


def test_raw_keeps_overall_distance_that_rescaling_erases():
    """One-sentence reports: M~ = M / max M is 1 for any two distinct sentences (a paraphrase scores like a
    contradiction); the unscaled settings keep how far apart the sentences are."""
    e = np.eye(3)
    near = (e[:1], e[:1] + 0.05 * e[2:3])
    far = (e[:1], e[:1] + 2.0 * e[1:2])
    for name in ("ot", "partial_adaptive", "sinkhorn_0.1", "uot_1.0"):
        assert set_distance(*near, name) == pytest.approx(set_distance(*far, name), abs=1e-6)
    for name in RAW_NAMES:
        assert set_distance(*near, name) < 0.01 < 0.1 < set_distance(*far, name), name
    for name in RAW_NAMES:
        assert set_distance(near[0], near[0], name) <= 0.01  # identical sets stay (nearly) 0
