"""Distance families as a registry: one registration (``register_family``) reaches every entry point.

``tests/distances/toy_family.py`` is a family written as one module; registered, it is computed by the reference,
the batched engine (plain and ``_neg``), scored as a reward and used by best-of-K selection and MBR, with no other
edit. Bad registrations are refused by name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import toy_family  # noqa: E402

from sdrlib.distances import get, make_spec, set_distance  # noqa: E402
from sdrlib.distances.engine import paired_distances, pairwise_distances, pairwise_distances_many  # noqa: E402
from sdrlib.distances.errors import DistanceSpecError  # noqa: E402
from sdrlib.distances.registry import FAMILIES, Family, register_family, unregister_family  # noqa: E402


@pytest.fixture
def toy():
    toy_family.register()
    yield toy_family.NAME
    unregister_family(toy_family.NAME)


def _sets(seed=0, n=6, d=8):
    rng = np.random.default_rng(seed)
    sets = [rng.normal(size=(int(rng.integers(1, 5)), d)) for _ in range(n)]
    pres = [(rng.integers(-1, 2, size=(len(s), 14)) * (rng.random((len(s), 14)) < 0.2)).astype(np.int8) for s in sets]
    return sets, pres


def test_a_toy_family_reaches_the_reference_and_the_engine(toy):
    A, PA = _sets(0)
    B, PB = _sets(1)
    spec = make_spec(toy)
    assert spec.name == toy and get(toy) == spec and spec.origin == "sdr extension"
    ref = np.array([[set_distance(a, b, toy) for b in B] for a in A])
    np.testing.assert_allclose(pairwise_distances(A, B, toy), ref, atol=1e-12)
    np.testing.assert_allclose(paired_distances(A, B, toy), np.diag(ref), atol=1e-12)
    both = pairwise_distances_many(A, B, ["chamfer", toy])
    np.testing.assert_allclose(both[toy], ref, atol=1e-12)
    np.testing.assert_array_equal(both["chamfer"], pairwise_distances(A, B, "chamfer"))
    # its negation-aware variant: the same kernel on the cost M' of sdrlib.distances.negation
    neg = get(f"{toy}_neg")
    assert neg.negation_aware and neg.family == toy
    ref_neg = np.array([[set_distance(a, b, neg, presence=(pa, pb)) for b, pb in zip(B, PB)] for a, pa in zip(A, PA)])
    np.testing.assert_allclose(pairwise_distances(A, B, neg, presence=(PA, PB)), ref_neg, atol=1e-12)
    assert (ref_neg >= ref - 1e-12).all() and (ref_neg > ref + 1e-6).any()


def test_a_toy_family_is_a_reward_and_a_selection_setting(toy):
    from sdrlib.rewards import parse_reward
    from sdrlib.selection import bank_distances, method_choices
    from sdrlib.selection.mbr import mbr_scores

    spec = parse_reward(toy)
    assert spec.method == "distance" and spec.distance == toy and spec.label == f"R_{toy}"
    S, K = 2, 3
    cands, _ = _sets(2, n=S * K)
    bank, _ = _sets(3, n=5)
    cand_sets = {"findings": cands, "impression": cands}
    banks = {"findings": bank, "impression": bank}
    sc = bank_distances(cand_sets, banks, [toy], n_candidates=K, aggregations=["min", "avg"])
    D = pairwise_distances(cands, bank, toy)
    np.testing.assert_allclose(sc.total[0, 1], (2 * D.mean(axis=1)).reshape(S, K), atol=1e-12)  # setting 0, "avg"
    mbr = mbr_scores(cand_sets, [toy], n_candidates=K)[toy]
    want = np.array([[2 * np.mean([set_distance(cands[s * K + i], cands[s * K + j], toy) for j in range(K) if j != i])
                      for i in range(K)] for s in range(S)])
    np.testing.assert_allclose(mbr, want, atol=1e-12)
    choices = method_choices(sc, {toy: mbr})
    assert {f"{toy}+min", f"{toy}+avg", f"mbr:{toy}"} <= set(choices)


def test_a_toy_reward_scores_like_a_built_in_distance_reward(toy):
    from sdrlib.embedding import SentenceEmbedder
    from sdrlib.reports import build_template
    from sdrlib.rewards import RewardScorer

    emb = SentenceEmbedder("all-MiniLM-L6-v2")
    ref_f, ref_i = "The heart is normal. No pleural effusion.", "No acute process."
    comps = [build_template(ref_f, ref_i), build_template("Small left pleural effusion.", "Effusion."), "no template"]
    b = RewardScorer(toy, emb).score(comps, [ref_f] * 3, [ref_i] * 3)
    sets = emb.encode_sections([ref_f, "Small left pleural effusion."])
    want = 1.0 - set_distance(sets[1], sets[0], toy)
    assert b.sem_findings[1] == pytest.approx(want, abs=1e-9)
    assert b.total[2] == 0.0 and b.sem_findings[0] > b.sem_findings[1]


@pytest.mark.parametrize("bad, match", [
    (Family("chamfer", lambda A, B, M=None: (0.0, True), lambda b: None), "built in"),
    (Family("Mean-Cost", lambda A, B, M=None: (0.0, True), lambda b: None), "lower-case"),
    (Family("mean_raw", lambda A, B, M=None: (0.0, True), lambda b: None), "_raw"),
    (Family("toy_p", lambda A, B, M=None: (0.0, True), lambda b: None, primary="eps"), "no default"),
    (Family("toy_r", lambda A, B, M=None: (0.0, True), lambda b: None, rescalable=True), "rescale"),
    (Family("toy_q", lambda A, B, M=None: (0.0, True), lambda b: None, presence="sometimes"), "presence"),
])
def test_bad_registrations_are_refused(bad, match):
    with pytest.raises(DistanceSpecError, match=match):
        register_family(bad)
    assert FAMILIES["chamfer"].name == "chamfer" and "toy_p" not in FAMILIES


def test_a_family_without_a_neg_kernel_has_no_neg_setting_and_built_ins_stay(toy):
    register_family(Family("toy_plain", toy_family.reference, toy_family.kernel), replace=True)
    try:
        assert get("toy_plain").family == "toy_plain"
        with pytest.raises(DistanceSpecError, match="no negation-aware variant"):
            make_spec("toy_plain", contradiction=1.0)
    finally:
        unregister_family("toy_plain")
    with pytest.raises(DistanceSpecError, match="built in"):
        unregister_family("chamfer")


def test_a_kernel_returning_the_wrong_shape_is_named(toy):
    register_family(Family("toy_bad", toy_family.reference, lambda b: (np.zeros(b.P + 1), np.ones(b.P + 1, bool))),
                    replace=True)
    try:
        A, _ = _sets(0)
        with pytest.raises(DistanceSpecError, match="toy_bad: the family's kernel returned shapes"):
            pairwise_distances(A, A, "toy_bad")
    finally:
        unregister_family("toy_bad")
