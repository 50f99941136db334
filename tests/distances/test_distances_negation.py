"""Negation-aware set distances (our extension): presence, contradiction, reference = engine, rewards.

One API: every entry point takes ``presence=(P_A, P_B)``; ``set_distance`` is the per-pair reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sdrlib.distances import DistanceInputError, DistanceSpecError, get, make_spec, set_distance
from sdrlib import clinical as C
from sdrlib.distances import negation as N
from sdrlib.distances.engine import paired_distances, pairwise_distances, pairwise_distances_many
from sdrlib.distances.synthetic import random_sets

EFF = C.column("Pleural Effusion", "unspecified")
EFF_L, EFF_R = C.column("Pleural Effusion", "left"), C.column("Pleural Effusion", "right")
PTX = C.column("Pneumothorax", "unspecified")
EFF14 = C.OBSERVATIONS.index("Pleural Effusion")  # a legacy (n, 14) array's column: no side
NEG_SETTINGS = ["chamfer_neg", "hausdorff_neg", "hung_nn_neg", "hung_pen_0.1_neg", "ot_neg", "ot_raw_neg",
                "sinkhorn_0.1_neg", "uot_1.0_neg", "partial_adaptive_neg", "partial_0.8_raw_neg", "chamfer_neg_0.5"]


def test_presence_reads_polarity_side_and_hedge_and_ignores_no_finding():
    P = C.sentence_presence(["No pleural effusion.", "Small left pleural effusion.", "Possible effusion.",
                             "There is no pneumothorax or effusion.", "The lungs are clear.", "  No   pleural effusion. "])
    assert P.dtype == np.int8 and P.shape == (6, C.PRESENCE_WIDTH) and C.PRESENCE_WIDTH == 63
    assert (P[0, [EFF_L, EFF_R, EFF]] == -1).all()                     # a denial without a side: every side
    assert P[1, EFF_L] == 1 and P[1, EFF] == 0 and P[1, EFF_R] == 0      # a side: that slot only
    assert P[2, EFF] == 1                                                # uncertain reads positive (the evaluation's)
    assert P[3, EFF] == -1 and P[3, PTX] == -1
    assert C.findings_of(P[4]) == set()
    assert not P[:, 0:3].any()  # "No Finding" is never read
    np.testing.assert_array_equal(P[5], P[0])  # white space normalised: same cache entry
    info = C.presence_cache_info()
    C.sentence_presence(["No pleural effusion."])
    assert C.presence_cache_info().hits > info.hits


def test_contradiction_matrix_is_polarity_disagreement_on_a_side():
    P = C.sentence_presence(["No pleural effusion.", "Small left pleural effusion.", "Possible effusion.",
                             "Large right pneumothorax.", "No right pleural effusion."])
    X = N.contradiction_matrix(P, P)
    # the hedge is positive, so "no effusion" contradicts it; "no right effusion" contradicts neither the left
    # effusion nor the unspecified hedged one (it may be on the left)
    np.testing.assert_array_equal(X, [[0, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0],
                                      [0, 0, 0, 0, 0]])
    assert (np.diag(X) == 0).all()


def test_contradicted_finding_is_farther_than_a_paraphrase(small_encoder):
    texts = ["No pleural effusion.", "Small left pleural effusion.", "There is no effusion."]
    E = small_encoder.encode(texts, normalize_embeddings=True)
    P = C.sentence_presence(texts)
    for name in ("chamfer", "hung_nn", "ot_raw", "hausdorff"):  # not "ot": M~ of two singletons is 1
        plain_con = set_distance(E[:1], E[1:2], name)
        plain_par = set_distance(E[:1], E[2:3], name)
        neg_con = set_distance(E[:1], E[1:2], name + "_neg", presence=(P[:1], P[1:2]))
        neg_par = set_distance(E[:1], E[2:3], name + "_neg", presence=(P[:1], P[2:3]))
        assert neg_con > neg_par, name
        assert neg_par == pytest.approx(plain_par, abs=1e-12)  # no contradiction: the plain distance
        assert neg_con >= plain_con
    # this is what the extension is for: the plain cosine cost calls the contradiction the closer one
    assert set_distance(E[:1], E[1:2], "chamfer") < set_distance(E[:1], E[2:3], "chamfer")


def test_contradicted_sentences_need_the_other_set_to_disagree_and_never_agree():
    P = C.sentence_presence(["No pleural effusion.", "No pneumothorax.", "The heart is normal in size."])
    Q = C.sentence_presence(["Small left pleural effusion.", "No pneumothorax."])
    r, s = N.contradicted_sentences(P, Q)
    np.testing.assert_array_equal(r, [1, 0, 0])
    np.testing.assert_array_equal(s, [1, 0])
    # a set that states both polarities (self-contradictory) is not contradicted by itself
    R = C.sentence_presence(["No pleural effusion.", "Small left pleural effusion."])
    r, s = N.contradicted_sentences(R, R)
    assert not r.any() and not s.any()
    # against another set, a report that states a finding both ways gives no usable answer on it (issue 34):
    # every sentence about it, on either side, is floored (before, R's "No pleural effusion." escaped)
    r, s = N.contradicted_sentences(P[:1], R)
    assert r.tolist() == [1] and s.tolist() == [1, 1]
    assert N.self_contradicted(R).sum() == 1 and not N.self_contradicted(P).any()
    r, s = N.contradicted_sentences(R, R[::-1])  # both state it both ways: they agree, no floor
    assert not r.any() and not s.any()


def test_one_contradicted_sentence_of_five_is_farther_than_a_paraphrased_report(small_encoder):
    """The edit table's case: the contradicted sentence's nearest neighbour must not escape to another sentence."""
    ref = ["The heart size is normal.", "No pleural effusion.", "No pneumothorax.", "The lungs are clear.",
           "No acute osseous abnormality."]
    con = ["The heart size is normal.", "Small left pleural effusion.", "No pneumothorax.", "The lungs are clear.",
           "No acute osseous abnormality."]
    par = ["Heart size is within normal limits.", "There is no effusion.", "There is no pneumothorax.",
           "Clear lungs.", "No acute bony abnormality."]
    E = {k: small_encoder.encode(v, normalize_embeddings=True) for k, v in (("ref", ref), ("con", con), ("par", par))}
    P = {k: C.sentence_presence(v) for k, v in (("ref", ref), ("con", con), ("par", par))}
    for name in ("chamfer_neg", "hung_nn_neg", "hausdorff_neg", "ot_raw_neg", "partial_adaptive_raw_neg"):
        d_con = set_distance(E["ref"], E["con"], name, presence=(P["ref"], P["con"]))
        d_par = set_distance(E["ref"], E["par"], name, presence=(P["ref"], P["par"]))
        assert d_con > d_par, (name, d_con, d_par)
        assert set_distance(E["ref"], E["ref"][::-1], name, presence=(P["ref"], P["ref"][::-1])) == \
            pytest.approx(0, abs=1e-12)
    # chamfer_neg: the floor charges the contradicted sentence on both sides, c (1/5 + 1/5) / 2 = 0.2 at least
    assert set_distance(E["ref"], E["con"], "chamfer_neg", presence=(P["ref"], P["con"])) >= 0.2 - 1e-12


def _workload(seed=0, d=16):
    rng = np.random.default_rng(seed)
    A = random_sets(rng, 5, d, n_max=5)
    B = random_sets(rng, 5, d, n_max=5)
    B += [A[0].copy(), A[1][::-1].copy()]
    A += [A[0].copy(), A[1].copy()]
    pres = lambda s: (rng.integers(-1, 2, size=(len(s), 14)) * (rng.random((len(s), 14)) < 0.15)).astype(np.int8)
    PA = [pres(s) for s in A]
    PB = [pres(s) for s in B]
    # the last two pairs are identical and reordered *sentences*: same vectors and same presence rows
    PA[-2], PA[-1] = PA[0].copy(), PA[1].copy()
    PB[-2], PB[-1] = PA[0].copy(), PA[1][::-1].copy()
    return A, PA, B, PB


@pytest.mark.parametrize("name", NEG_SETTINGS)
def test_engine_agrees_with_reference_and_identical_sets_stay_at_zero(name):
    A, PA, B, PB = _workload()
    spec = get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = paired_distances(A, B, name, presence=(PA, PB))
        r = np.array([set_distance(a, b, name, presence=(pa, pb)) for a, b, pa, pb in zip(A, B, PA, PB)])
        D = pairwise_distances(A, B, name, presence=(PA, PB))
        plain = paired_distances(A, B, make_spec(spec.family, **spec.params), on_nonconvergence="ignore")
    np.testing.assert_allclose(d, r, atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.diag(D), d, atol=1e-12, rtol=0)
    assert ((d >= 0) & (d <= 1)).all()
    if spec.family not in ("sinkhorn", "uot"):
        assert d[-2] == pytest.approx(0, abs=1e-12) and d[-1] == pytest.approx(0, abs=1e-12)  # identical, reordered
    else:  # entropic: a small floor (the plan leaks mass off the diagonal, more so onto a set's own contradictions)
        assert (d[-2:] < 0.05).all()
    if spec.family in ("chamfer", "hausdorff", "hung_nn", "hung_pen"):
        assert (d >= plain - 1e-12).all()  # M' >= M entrywise: these are monotone in the cost


def test_a_contradiction_found_by_presence_only_moves_the_distance():
    """Same vectors, same sentence on both sides except the presence: the cost is capped from below by c."""
    A = [np.eye(4)[:2]]
    P0 = np.zeros((2, 14), np.int8)  # legacy width: read without sides
    P1 = P0.copy(); P1[0, EFF14] = 1
    P2 = P0.copy(); P2[0, EFF14] = -1
    assert paired_distances(A, A, "chamfer_neg", presence=([P1], [P1]))[0] == 0
    # M = [[0, .5], [.5, 0]] (orthogonal rows); sentence 0 of each set is wrong on one slot against the other set
    # (the denial, and the finding it denies), so an entry costs at least c times the wrong findings of its two
    # sentences: M' = [[2, 1], [1, 0]]
    # chamfer: row minima (1, 0), column minima (1, 0) -> 0.5 (the NN cannot escape to the other sentence)
    assert paired_distances(A, A, "chamfer_neg", presence=([P1], [P2]))[0] == pytest.approx(0.5)
    assert paired_distances(A, A, "chamfer_neg_0.5", presence=([P1], [P2]))[0] == pytest.approx(0.25)
    # hung_nn: both assignments cost 2 (the contradicted pair carries both wrong findings; crossed, each sentence
    # carries its own) -> 2 / 2; with c = 0.5 -> 0.5 (before wrong findings were counted: 0.5 and 0.25)
    assert paired_distances(A, A, "hung_nn_neg", presence=([P1], [P2]))[0] == pytest.approx(1.0)
    assert paired_distances(A, A, "hung_nn_neg_0.5", presence=([P1], [P2]))[0] == pytest.approx(0.5)
    assert paired_distances(A, A, "hung_nn_neg", presence=([P1], [P1]))[0] == 0


def test_negation_settings_need_presence_and_plain_settings_ignore_it():
    A = [np.eye(3)[:2]]
    for fn in (lambda: set_distance(A[0], A[0], "chamfer_neg"), lambda: paired_distances(A, A, "chamfer_neg"),
               lambda: pairwise_distances(A, A, "hung_nn_neg"),
               lambda: pairwise_distances_many(A, A, ["chamfer", "hung_nn_neg"])):
        with pytest.raises(DistanceSpecError, match="negation-aware: pass presence=.*section_presence"):
            fn()
    with pytest.raises(DistanceSpecError, match="tuple"):
        paired_distances(A, A, "chamfer_neg", presence=[np.zeros((2, 14))])
    P = [np.zeros((2, 14), np.int8)]
    P[0][0, EFF14] = 1
    Q = [P[0].copy()]
    Q[0][0, EFF14] = -1
    # a plain setting ignores presence (one call may mix plain and negation-aware settings)
    assert paired_distances(A, A, "chamfer", presence=(P, Q)).tolist() == paired_distances(A, A, "chamfer").tolist()
    assert set_distance(A[0], A[0], "chamfer", presence=(P[0], Q[0])) == set_distance(A[0], A[0], "chamfer")
    both = pairwise_distances_many(A, A, ["chamfer", "chamfer_neg"], presence=(P, Q))
    assert list(both) == ["chamfer", "chamfer_neg"]
    assert both["chamfer"][0, 0] == 0 and both["chamfer_neg"][0, 0] == pytest.approx(0.5)
    np.testing.assert_array_equal(both["chamfer_neg"], pairwise_distances(A, A, "chamfer_neg", presence=(P, Q)))


def test_packed_sets_keep_the_sentence_order_their_presence_refers_to():
    from sdrlib.distances.engine import pack_sets

    A, PA, B, PB = _workload()
    for name in ("chamfer_neg", "ot_neg", "sinkhorn_0.1_neg"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = paired_distances(A, B, name, presence=(PA, PB))
            got = paired_distances(pack_sets(A), pack_sets(B), name, presence=(PA, PB))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["gw_neg", "gw_0.05_neg", "chamfer_neg_0", "chamfer_neg_1.5", "chamfer_neg_nan"])
def test_bad_negation_settings_are_refused(name):
    from sdrlib.distances import UnknownDistanceError

    with pytest.raises((DistanceSpecError, UnknownDistanceError)):
        get(name)


@pytest.mark.parametrize("bad", [np.zeros((3, 14)), np.zeros((2, 13)), np.full((2, 14), 2), np.full((2, 14), 0.5),
                                 [[["x"] * 14] * 2]])
def test_bad_presence_arrays_are_refused(bad):
    A = [np.eye(3)[:2]]
    with pytest.raises(DistanceInputError):
        paired_distances(A, A, "chamfer_neg", presence=([bad] if not isinstance(bad, list) else bad, [np.zeros((2, 14))]))


def test_empty_sets_follow_empty_value():
    A = [np.eye(3)[:2], np.zeros((0, 3))]
    P = [np.zeros((2, 14)), np.zeros((0, 14))]
    with pytest.raises(DistanceInputError, match="empty"):
        paired_distances(A, A, "chamfer_neg", presence=(P, P))
    assert paired_distances(A, A, "chamfer_neg", presence=(P, P), empty_value=1.0).tolist() == [0.0, 1.0]


class _FakeEmbedder:
    """Each distinct sentence gets a fixed random unit vector (no model)."""

    def __init__(self, d=12):
        self.d, self.vecs, self.rng = d, {}, np.random.default_rng(0)

    def encode_sections(self, texts):
        from sdrlib.reports import split_sentences

        out = []
        for t in texts:
            ss = split_sentences(t)
            for s in ss:
                self.vecs.setdefault(s, self.rng.standard_normal(self.d))
            out.append(np.array([self.vecs[s] for s in ss]).reshape(len(ss), self.d))
        return out


def test_text_distances_and_reward_use_the_negation_cost():
    from sdrlib.experiments.text_distances import text_distances
    from sdrlib.rewards import RewardScorer

    emb = _FakeEmbedder()
    gen = ["No pleural effusion. Heart normal.", "Small pleural effusion. Heart normal.", ""]
    ref = ["Small pleural effusion. Heart normal."] * 3
    d = text_distances(gen, ref, "hung_nn_neg", emb)
    # one of two sentences contradicted: the denial and the effusion it denies are two wrong findings, 2 c over 2
    # sentences (before wrong findings were counted: 0.5); chamfer_neg charges each direction its own, c / 2 each
    assert d[1] == 0 and d[2] == 1.0 and d[0] == pytest.approx(1.0)
    assert text_distances(gen[:1], ref[:1], "chamfer_neg", emb)[0] == pytest.approx(0.5)
    sc = RewardScorer("hung_nn_neg", embedder=emb)
    comp = [f"<think> {g} </think> <answer> Normal. </answer>" for g in gen[:2]]
    out = sc.score(comp, ref[:2], ["Normal."] * 2)
    np.testing.assert_allclose(out.sem, [2 - d[0], 2.0], atol=1e-12)
    assert sc.counts["sem_failed"] == 0


@pytest.mark.parametrize("name", ["chamfer_recall_1", "chamfer_recall_0.75", "chamfer_recall_0.5"])
def test_recall_family_engine_agrees_with_reference(name):
    """``chamfer_recall_<alpha>`` (ours) is a registry family: the engine equals the per-pair reference, identical
    and reordered sets stay at 0, and it is asymmetric (the first argument is the generated set)."""
    A, PA, B, PB = _workload()
    d = paired_distances(A, B, name, presence=(PA, PB))
    r = np.array([set_distance(a, b, name, presence=(pa, pb)) for a, b, pa, pb in zip(A, B, PA, PB)])
    D = pairwise_distances(A, B, name, presence=(PA, PB))
    np.testing.assert_allclose(d, r, atol=1e-12, rtol=0)
    np.testing.assert_allclose(np.diag(D), d, atol=1e-12, rtol=0)
    assert d[-2] == pytest.approx(0, abs=1e-12) and d[-1] == pytest.approx(0, abs=1e-12)
    back = paired_distances(B, A, name, presence=(PB, PA))
    assert (not get(name).symmetric) and (name.endswith("0.5") or not np.allclose(back, d))
    with pytest.raises(DistanceSpecError, match="presence"):
        paired_distances(A, B, name)


@pytest.mark.parametrize("name", ["chamfer_recall_0.4", "chamfer_recall_1.5", "chamfer_recall_1_neg"])
def test_bad_recall_settings_are_refused(name):
    from sdrlib.distances import UnknownDistanceError

    with pytest.raises((DistanceSpecError, UnknownDistanceError)):
        get(name)


# --- wrong findings are counted, not sentences; a set is a set (findings outside the 14 cost) -------------------

NORMAL = ["The lungs are clear.", "Heart size is normal.", "No pleural effusion or pneumothorax."]
HERNIA = "Large hiatal hernia."  # outside CheXpert's 14
TWO = "Large hiatal hernia and a 9 mm right upper lobe nodule."  # two wrong findings in one sentence
#: every built-in family at a c where one wrong finding does not already reach the top of the scale
COUNTING = [s for s in NEG_SETTINGS if s != "hausdorff_neg"] + ["hausdorff_neg_0.4"]


def _unit_rows(n, d=16, seed=3):
    v = np.random.default_rng(seed).standard_normal((n, d))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _both(A, B, name, PA, PB):
    """(reference, engine) of one pair."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (set_distance(A, B, name, presence=(PA, PB)),
                paired_distances([A], [B], name, presence=([PA], [PB]))[0])


def test_a_hallucinated_finding_outside_the_14_costs_at_least_c_whatever_its_wording():
    """"Large hiatal hernia." (not a CheXpert-14 observation) added to a normal report, on the vector of a reference
    sentence so that its wording costs nothing: under chamfer_neg it costs c against every reference sentence."""
    E = _unit_rows(3)
    A = np.vstack([E, E[2:3]])
    PA, PB = C.sentence_presence(NORMAL + [HERNIA]), C.sentence_presence(NORMAL)
    assert N.hallucinated(PA, PB).sum() == 1 and N.wrong_counts(PA, PB)[0].tolist() == [0, 0, 0, 1]
    for name, c in (("chamfer_neg", 1.0), ("chamfer_neg_0.5", 0.5)):
        assert N.negation_cost(A, E, PA, PB, c)[3].min() >= c
        ref, eng = _both(A, E, name, PA, PB)
        assert ref >= c / 8 - 1e-12 and eng == pytest.approx(ref, abs=1e-12)  # the sentence's c over 4 rows, halved


@pytest.mark.parametrize("name", NEG_SETTINGS)
def test_a_hallucinated_finding_costs_in_every_setting(name):
    """A third sentence on the same vector: "Large hiatal hernia." against one that states nothing."""
    E = _unit_rows(3)
    A = np.vstack([E[:2], E[2:3]])
    P_ok = C.sentence_presence(NORMAL[:2] + ["The bones are intact."])
    P_bad = C.sentence_presence(NORMAL[:2] + [HERNIA])
    PB = C.sentence_presence(NORMAL)
    ok, bad = _both(A, E, name, P_ok, PB), _both(A, E, name, P_bad, PB)
    assert bad[0] > ok[0] + 1e-3 and bad[1] > ok[1] + 1e-3, (ok, bad)
    assert not N.wrong_counts(P_ok, PB)[0].any()


@pytest.mark.parametrize("name", COUNTING)
def test_two_wrong_findings_in_one_sentence_cost_more_than_one(name):
    """The battery's out_two_in_one_sentence on fixed vectors: the wording is the same, the count differs."""
    E = _unit_rows(3)
    A = np.vstack([E[:2], E[2:3]])
    P1 = C.sentence_presence(NORMAL[:2] + [HERNIA])
    P2 = C.sentence_presence(NORMAL[:2] + [TWO])
    PB = C.sentence_presence(NORMAL)
    one, two = _both(A, E, name, P1, PB), _both(A, E, name, P2, PB)
    assert two[0] > one[0] + 1e-3 and two[1] > one[1] + 1e-3, (one, two)
    if name == "chamfer_neg":  # row minima (0, 0, k), column minima unchanged: the difference is 1 / 3, halved
        assert two[0] - one[0] == pytest.approx(1 / 6, abs=1e-12)
        # alone against one sentence, two wrong findings are past the top of the scale: 1, not 2
        assert _both(A[2:], E[2:], name, P2[2:], PB[2:]) == pytest.approx((1.0, 1.0), abs=1e-12)
    assert N.wrong_counts(P2, PB)[0].tolist() == [0, 0, 2]


def test_a_sentence_with_many_wrong_findings_keeps_sinkhorn_finite():
    """Nine hallucinated slots in one sentence floor it at 9: exp(-9 / 0.01) underflows Sinkhorn's kernel form, so
    the engine runs that pair in the log domain (as the reference, POT's sinkhorn_log, always does)."""
    E = _unit_rows(3)
    PA = np.zeros((3, C.PRESENCE_WIDTH), np.int8)
    PA[2, :27:3] = 1  # nine findings' left slots
    PB = np.zeros((3, C.PRESENCE_WIDTH), np.int8)
    ref, eng = _both(E, E, "sinkhorn_0.01_neg", PA, PB)
    assert np.isfinite(eng) and eng == pytest.approx(ref, abs=1e-7) and ref == 1.0
    assert N.wrong_counts(PA, PB)[0].tolist() == [0, 0, 9]


@pytest.mark.parametrize("name", NEG_SETTINGS)
def test_repeating_a_sentence_never_lowers_the_distance(name):
    """A correct sentence written five times, on either side, beside a wrong one: the same distance (a set is a
    set); and the battery's rep_one_sentence_ten_times (hung_nn_neg paid ten copies of the one correct sentence)."""
    E = _unit_rows(3)
    PB = C.sentence_presence(["Mild cardiomegaly.", "Small left pleural effusion.", "No pneumothorax."])
    A = np.vstack([E[0], _unit_rows(1, seed=9)[0]])
    PA = C.sentence_presence(["Mild cardiomegaly.", "Large right pneumothorax."])
    base = _both(A, E, name, PA, PB)
    rep = _both(A[[0, 0, 0, 0, 0, 1]], E, name, PA[[0, 0, 0, 0, 0, 1]], PB)
    back = _both(E[[0, 0, 0, 0, 0, 1, 2]], A, name, PB[[0, 0, 0, 0, 0, 1, 2]], PA)
    assert base[0] > 0.05
    np.testing.assert_allclose(rep, base, atol=1e-12, rtol=0)
    np.testing.assert_allclose(back, _both(E, A, name, PB, PA), atol=1e-12, rtol=0)
    one = _both(E[:1], E, name, PB[:1], PB)
    ten = _both(E[[0] * 10], E, name, PB[[0] * 10], PB)
    np.testing.assert_allclose(ten, one, atol=1e-12, rtol=0)


def _workload_counted(seed=1, d=16):
    """Side-aware (63-slot) presence dense enough for sentences with several wrong findings and hallucinations;
    sets with a sentence repeated verbatim, one with the same vector under another presence (a different sentence),
    and an identical and a reordered pair at the end."""
    rng = np.random.default_rng(seed)
    A = random_sets(rng, 8, d, n_max=6)
    B = random_sets(rng, 8, d, n_max=6)
    W = C.PRESENCE_WIDTH
    pres = lambda n: (rng.integers(-1, 2, size=(n, W)) * (rng.random((n, W)) < 0.05)).astype(np.int8)
    PA, PB = [pres(len(s)) for s in A], [pres(len(s)) for s in B]
    for S, P in ((A, PA), (B, PB)):
        for t in range(0, 8, 2):  # the first sentence again, last
            S[t], P[t] = np.vstack([S[t], S[t][:1]]), np.vstack([P[t], P[t][:1]])
    A[1], PA[1] = np.vstack([A[1], A[1][:1]]), np.vstack([PA[1], pres(1)])  # same vector, other presence
    B += [A[0].copy(), A[1][::-1].copy()]
    PB += [PA[0].copy(), PA[1][::-1].copy()]
    A += [A[0].copy(), A[1].copy()]
    PA += [PA[0].copy(), PA[1].copy()]
    return A, PA, B, PB


def _distinct_rows(a, pa):
    """The set without a sentence repeated verbatim (same vector, same presence row), first occurrences kept."""
    keep = [i for i in range(len(a)) if not any((a[q] == a[i]).all() and (pa[q] == pa[i]).all() for q in range(i))]
    return a[keep], pa[keep]


@pytest.mark.parametrize("name", NEG_SETTINGS)
def test_engine_agrees_with_reference_on_counted_findings_and_repeated_sentences(name):
    A, PA, B, PB = _workload_counted()
    spec = get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = paired_distances(A, B, name, presence=(PA, PB))
        r = np.array([set_distance(a, b, name, presence=(pa, pb)) for a, b, pa, pb in zip(A, B, PA, PB)])
        D = pairwise_distances(A, B, name, presence=(PA, PB))
        uniq = [_distinct_rows(a, pa) for a, pa in zip(A, PA)]
        d_uniq = paired_distances([u[0] for u in uniq], B, name, presence=([u[1] for u in uniq], PB))
    tol = 1e-7 if spec.family in ("sinkhorn", "uot") else 1e-9
    np.testing.assert_allclose(d, r, atol=tol, rtol=0)
    np.testing.assert_allclose(np.diag(D), d, atol=1e-12, rtol=0)
    np.testing.assert_allclose(d_uniq, d, atol=1e-12, rtol=0)  # a repeated sentence changes nothing
    assert ((d >= 0) & (d <= 1)).all()
    if spec.family not in ("sinkhorn", "uot"):
        assert d[-2] == pytest.approx(0, abs=1e-12) and d[-1] == pytest.approx(0, abs=1e-12)
    # the workload has what it is for: floors above c and hallucinations
    counts = [N.wrong_counts(N.check_presence(pa, len(pa), "A"), N.check_presence(pb, len(pb), "B"))
              for pa, pb in zip(PA, PB)]
    assert max(max(k.max(initial=0), kk.max(initial=0)) for k, kk in counts) >= 3
    assert any(N.hallucinated(pa, pb).any() for pa, pb in zip(PA, PB))
