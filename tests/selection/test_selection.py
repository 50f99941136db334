"""Best-of-K selection (sdrlib.selection): eqs. (7)-(10), baselines, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib import selection as sel
from sdrlib.distances import set_distance
from sdrlib.errors import SDRError

D = 16


def _unit(rng, n, d=D):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _sets(rng, count, lo=1, hi=5):
    return [_unit(rng, int(rng.integers(lo, hi + 1))) for _ in range(count)]


def _brute(cands, bank, name, how, k):
    """Eq. (8) with the per-pair reference: a (len(cands),) vector."""
    out = []
    for c in cands:
        if not len(c):
            out.append(1.0)
            continue
        d = np.array([set_distance(c, b, name) for b in bank if len(b)])
        if how == "min":
            out.append(d.min())
        elif how == "avg":
            out.append(d.mean())
        else:
            out.append(np.sort(d)[:min(k, len(d))].mean())
    return np.array(out)


@pytest.mark.parametrize("names", [["chamfer", "hausdorff"], ["ot", "hung_nn", "sinkhorn_0.1"]])
def test_aggregations_match_brute_force(names):
    rng = np.random.default_rng(1)
    S, K, N = 3, 4, 9
    cf, ci = _sets(rng, S * K), _sets(rng, S * K, 1, 3)
    bf, bi = _sets(rng, N), _sets(rng, N, 1, 3)
    res = sel.bank_distances({"findings": cf, "impression": ci}, {"findings": bf, "impression": bi}, names,
                             n_candidates=K, knn_k=3, progress=None)
    assert res.section_scores.shape == (len(names), 3, 2, S, K)
    for a, name in enumerate(names):
        for g, how in enumerate(res.aggregations):
            want = _brute(cf, bf, name, how, 3) + _brute(ci, bi, name, how, 3)
            np.testing.assert_allclose(res.total[a, g].ravel(), want, atol=1e-8)
            np.testing.assert_array_equal(res.chosen()[a, g], np.argmin(want.reshape(S, K), axis=1))
    df = res.frame()
    assert len(df) == len(names) * 3 * S * K and df.groupby(["distance", "aggregation", "study_id"]).chosen.sum().eq(1).all()


def test_aggregate_values_and_knn_clipping():
    d = np.array([[0.4, 0.1, 0.3, 0.2]])
    assert sel.aggregate(d, "min")[0] == pytest.approx(0.1)
    assert sel.aggregate(d, "avg")[0] == pytest.approx(0.25)
    assert sel.aggregate(d, "knn", 2)[0] == pytest.approx(0.15)
    assert sel.aggregate(d, "knn", 99)[0] == pytest.approx(0.25)  # k clipped to N: the mean
    for bad in (0, -1, 1.5, True):
        with pytest.raises(sel.SelectionError):
            sel.aggregate(d, "knn", bad)
    with pytest.raises(sel.SelectionError):
        sel.aggregate(d, "median")


def test_knn_k_larger_than_bank_is_clipped_and_recorded():
    rng = np.random.default_rng(2)
    cands, bank = _sets(rng, 6), _sets(rng, 3)
    res = sel.bank_distances({"findings": cands}, {"findings": bank}, ["chamfer"], n_candidates=3, knn_k=10, progress=None)
    assert res.meta["knn_k"] == {"findings": 3}
    np.testing.assert_allclose(res.total[0, 2], res.total[0, 1])  # knn over all N == avg


def test_tie_break_lowest_index_and_duplicates():
    assert sel.argmin_first(np.array([[0.3, 0.1, 0.1], [0.2, 0.2, 0.2]])).tolist() == [1, 0]
    assert sel.argmin_first(np.array([np.inf, np.inf])) == 0
    with pytest.raises(sel.SelectionError):
        sel.argmin_first(np.array([0.1, np.nan]))
    rng = np.random.default_rng(3)
    a, b = _unit(rng, 3), _unit(rng, 2)
    # study 0: candidates 1 and 2 identical (and closest: copies of a bank report); study 1: all identical
    bank = [a, _unit(rng, 4), _unit(rng, 2)]
    cands = [b, a.copy(), a[::-1].copy(), b, b, b]
    res = sel.bank_distances({"findings": cands}, {"findings": bank}, ["chamfer", "ot"], n_candidates=3, progress=None)
    assert (res.chosen()[:, :, 0] == 1).all() and (res.chosen()[:, :, 1] == 0).all()
    assert res.total[0, 0, 0, 1] == res.total[0, 0, 0, 2]


def test_unparseable_candidates_rank_last_and_are_counted():
    rng = np.random.default_rng(4)
    e = np.zeros((0, D))
    far = -_unit(rng, 2)
    bank = _sets(rng, 5)
    # study 0: candidate 0 unparseable, 1 far, 2 empty Impression only; study 1: all unparseable
    cf = [e, far, _unit(rng, 2), e, e, e]
    ci = [e, far[:1], e, e, e, e]
    res = sel.bank_distances({"findings": cf, "impression": ci}, {"findings": bank, "impression": bank},
                             ["chamfer", "hausdorff"], n_candidates=3, progress=None)
    assert res.meta["unparseable"] == 4 and res.unparseable.tolist() == [[True, False, False], [True] * 3]
    assert np.isinf(res.total[..., 0, 0]).all() and np.isfinite(res.total[..., 0, 1:]).all()
    assert (res.chosen()[..., 0] != 0).all()       # never the unparseable one
    assert (res.chosen()[..., 1] == 0).all()       # all unparseable: the first
    # an empty Impression scores the maximum 1.0 for that section
    assert (res.section_scores[:, :, 1, 0, 2] == 1.0).all()


def test_unparseable_texts_through_score_candidates(small_encoder):
    from sdrlib.embedding import ReportBank, SentenceEmbedder

    emb = SentenceEmbedder(small_encoder)
    bank = ReportBank.build(emb, ["The heart is normal. Lungs are clear.", "Small left effusion."],
                            ["No acute disease.", "Effusion."])
    good = "<think> The heart is normal. Lungs are clear. </think> <answer> No acute disease. </answer>"
    bad_texts = ["no template at all", None, "<think> x </think>", "<think> </think> <answer> </answer>"]
    cands = [[b, good] for b in bad_texts] + [[good, good]]
    res = sel.score_candidates(cands, bank, emb, ["chamfer"], study_ids=list("abcde"), progress=None)
    assert res.meta["unparseable"] == 4
    assert (res.chosen()[0, :, :4] == 1).all() and (res.chosen()[0, :, 4] == 0).all()
    assert res.total[0, 0, 4, 0] == pytest.approx(0.0, abs=1e-9)  # a copy of bank report 0
    # API-style free-text candidates
    # API-style answers (sdrlib.reports.parse_api_answer): headers and markdown parse; a failed sample ("")
    # and an answer without sections are malformed and rank last
    rep = [["", "nothing useful here", "**Findings**\nSmall left effusion.\n**Impression**\nEffusion."],
           ["FINDINGS: Small left effusion. IMPRESSION: Effusion.", "", "nothing useful here"]]
    r2 = sel.score_candidates(rep, bank, emb, ["chamfer"], candidate_format="report", progress=None)
    assert r2.chosen()[0, 0].tolist() == [2, 0] and r2.meta["unparseable"] == 4


def test_bank_from_another_encoder_is_refused(small_encoder):
    from sdrlib.embedding import ReportBank, SentenceEmbedder

    emb = SentenceEmbedder(small_encoder)
    bank = ReportBank.build(emb, ["Heart normal."], ["Normal."])
    bank.encoder_id = "other-encoder@0123456789abcdef"
    with pytest.raises(sel.SelectionError) as ei:
        sel.score_candidates([["<think> Heart normal. </think> <answer> Normal. </answer>"]], bank, emb, ["chamfer"])
    assert "other-encoder@0123456789abcdef" in str(ei.value) and emb.encoder_id in str(ei.value)
    assert isinstance(ei.value, SDRError)
    with pytest.raises(sel.SelectionError):
        sel.score_candidates([["x"]], {"findings": []}, emb, ["chamfer"])  # no encoder id at all


def test_k_equals_one_is_trivial():
    rng = np.random.default_rng(5)
    cands, bank = _sets(rng, 4), _sets(rng, 6)
    res = sel.bank_distances({"findings": cands}, {"findings": bank}, ["chamfer", "ot"], n_candidates=1, progress=None)
    assert res.chosen().shape == (2, 3, 4) and (res.chosen() == 0).all()
    mbr = sel.mbr_scores({"findings": cands}, ["chamfer"], n_candidates=1)
    assert (mbr["chamfer"] == 0).all()
    ch = sel.method_choices(res, mbr)
    ev = sel.evaluate_methods(ch, {"m": rng.random((4, 1))}, 1)
    assert np.allclose(ev.value, ev.random)  # every method is the only candidate


def test_empty_bank_sections_are_left_out():
    rng = np.random.default_rng(6)
    e = np.zeros((0, D))
    cf, ci = _sets(rng, 4), _sets(rng, 4)
    bf = _sets(rng, 5)
    bi = [e, _unit(rng, 2), e, _unit(rng, 1), _unit(rng, 3)]
    res = sel.bank_distances({"findings": cf, "impression": ci}, {"findings": bf, "impression": bi},
                             ["chamfer"], n_candidates=2, knn_k=2, progress=None)
    assert res.meta["n_bank"] == {"findings": 5, "impression": 3}
    for g, how in enumerate(res.aggregations):
        np.testing.assert_allclose(res.section_scores[0, g, 1].ravel(), _brute(ci, bi, "chamfer", how, 2), atol=1e-8)
    with pytest.raises(sel.SelectionError, match="impression"):
        sel.bank_distances({"findings": cf, "impression": ci}, {"findings": bf, "impression": [e, e]},
                           ["chamfer"], n_candidates=2, progress=None)


def test_bad_arguments_raise():
    rng = np.random.default_rng(7)
    c, b = {"findings": _sets(rng, 4)}, {"findings": _sets(rng, 3)}
    for kw in ({"n_candidates": 3}, {"n_candidates": 0}, {"n_candidates": 2, "aggregations": ["max"]},
               {"n_candidates": 2, "knn_k": 0}, {"n_candidates": 2, "study_ids": ["a"]}):
        with pytest.raises(sel.SelectionError):
            sel.bank_distances(c, b, ["chamfer"], progress=None, **kw)
    with pytest.raises(KeyError):
        sel.bank_distances(c, b, ["nope"], n_candidates=2, progress=None)
    with pytest.raises(sel.SelectionError):
        sel.score_candidates([["a"], ["b", "c"]], None, None, ["chamfer"])


def test_progress_lines_are_plain():
    rng = np.random.default_rng(8)
    lines = []
    sel.bank_distances({"findings": _sets(rng, 40)}, {"findings": _sets(rng, 7)}, ["chamfer"], n_candidates=4,
                       progress=lines.append, progress_every=25)
    assert lines and lines[-1].startswith("findings: 100.0%") and all("\r" not in x for x in lines)
    lines.clear()  # a sweep big enough to be split: several lines, increasing
    monkey = sel.scoring._MIN_CHUNK_PAIRS
    try:
        sel.scoring._MIN_CHUNK_PAIRS = 1
        sel.bank_distances({"findings": _sets(rng, 40)}, {"findings": _sets(rng, 7)}, ["chamfer"], n_candidates=4,
                           progress=lines.append, progress_every=25)
    finally:
        sel.scoring._MIN_CHUNK_PAIRS = monkey
    pct = [float(x.split("%")[0].split()[-1]) for x in lines]
    assert len(pct) >= 4 and pct == sorted(pct) and pct[-1] == 100.0


def test_mbr_matches_brute_force():
    rng = np.random.default_rng(9)
    S, K = 3, 4
    cf, ci = _sets(rng, S * K), _sets(rng, S * K, 1, 2)
    ci[5] = np.zeros((0, D))  # an empty Impression: that section scores 1.0 against every other
    names = ["chamfer", "ot"]
    got = sel.mbr_scores({"findings": cf, "impression": ci}, names, n_candidates=K)
    for name in names:
        want = np.zeros((S, K))
        for s in range(S):
            for i in range(K):
                tot = []
                for j in range(K):
                    if i == j:
                        continue
                    a, b = s * K + i, s * K + j
                    di = set_distance(ci[a], ci[b], name) if len(ci[a]) and len(ci[b]) else 1.0
                    tot.append(set_distance(cf[a], cf[b], name) + di)
                want[s, i] = np.mean(tot)
        np.testing.assert_allclose(got[name], want, atol=1e-8)
    ch = sel.method_choices(None, got)
    assert ch["mbr:chamfer"].tolist() == np.argmin(got["chamfer"], axis=1).tolist()


def test_random_is_exact_expectation_and_oracle_bounds_every_method():
    rng = np.random.default_rng(10)
    S, K = 30, 5
    vals = rng.random((S, K))
    choices = {"first": np.zeros(S, int), "a+min": rng.integers(0, K, S), "b+avg": rng.integers(0, K, S)}
    ev = sel.evaluate_methods(choices, {"m": vals}, K, strata=np.array(["x", "y", "z"] * 10))
    allr = ev[ev.stratum == "all"].set_index("method")
    assert allr.loc["random", "value"] == pytest.approx(vals.mean())
    # brute force: the exact expectation over all K^S picks is the mean of per-study means
    assert allr.loc["random", "value"] == pytest.approx(np.mean([vals[s].mean() for s in range(S)]))
    assert allr.loc["oracle", "value"] == pytest.approx(vals.max(axis=1).mean())
    assert allr.loc["first", "value"] == pytest.approx(vals[:, 0].mean())
    for g, d in ev.groupby("stratum"):
        assert (d.value <= d.oracle + 1e-12).all()
        assert d.set_index("method").loc["oracle", "oracle_share_pct"] == pytest.approx(100.0)
        assert d.set_index("method").loc["random", "oracle_share_pct"] == pytest.approx(0.0)
    x = ev[(ev.stratum == "x") & (ev.method == "random")].value.iloc[0]
    assert x == pytest.approx(vals[0::3].mean())
    imp = allr.loc["a+min"]
    assert imp.improvement_pct == pytest.approx(100 * (imp.value - imp.random) / imp.random)
    sv = sel.study_values(choices, vals)
    assert np.allclose(sv["random"], vals.mean(axis=1)) and (sv.drop(columns="random").le(sv["oracle"], axis=0)).all().all()


def test_corpus_metric_random_uses_expected_counts():
    """A ratio metric (clinical F1 counts): random = F1 of the expected counts; one-hot choices exact."""
    from sdrlib.metrics.base import stats_result

    rng = np.random.default_rng(11)
    S, K = 6, 3
    st = rng.integers(0, 4, size=(S * K, 3)).astype(float)  # tp, fp, fn

    def f1(x):
        x = np.atleast_2d(x)
        return 2 * x[:, 0] / np.maximum(2 * x[:, 0] + x[:, 1] + x[:, 2], 1e-12)

    r = stats_result("f1", "t", st, f1)
    c = rng.integers(0, K, S)
    ev = sel.evaluate_methods({"m+min": c}, {"f1": r}, K).set_index("method")
    want = f1(st.reshape(S, K, 3)[np.arange(S), c].sum(axis=0))[0]
    assert ev.loc["m+min", "value"] == pytest.approx(want)
    assert ev.loc["random", "value"] == pytest.approx(f1(st.reshape(S, K, 3).mean(axis=1).sum(axis=0))[0])
    assert "oracle" not in ev.index  # no per-sample values: no oracle
    with pytest.raises(sel.SelectionError):
        sel.evaluate_methods({"m+min": c}, {"f1": stats_result("f1", "t", st[:-1], f1)}, K)


def test_selected_result_bootstraps():
    from sdrlib.metrics.base import mean_result
    from sdrlib.metrics.significance import paired_bootstrap

    rng = np.random.default_rng(12)
    S, K = 40, 4
    v = rng.random((S, K))
    v[:, 2] += 1.0  # candidate 2 is always best
    r = mean_result("m", "t", v.ravel())
    best = sel.selected_result(r, np.full(S, 2), K)
    rnd = sel.selected_result(r, "random", K)
    assert best.corpus == pytest.approx(v[:, 2].mean()) and rnd.corpus == pytest.approx(v.mean())
    out = paired_bootstrap(best, rnd, n_resamples=200, seed=0)
    assert out["diff"] > 0.5 and out["p_value"] < 0.05
    with pytest.raises(sel.SelectionError):
        sel.selected_result(r, np.full(S, K), K)


def test_tables_best_vs_random_and_summary():
    import pandas as pd

    rng = np.random.default_rng(13)
    S, K = 20, 3
    evs = []
    for pol in ("p1", "p2"):
        vals = rng.random((S, K))
        ch = {"chamfer+min": rng.integers(0, K, S), "ot+avg": vals.argmax(axis=1), "mbr:ot": rng.integers(0, K, S)}
        evs.append(sel.evaluate_methods(ch, {"m": vals}, K).assign(policy=pol))
    ev = pd.concat(evs)
    t3 = sel.best_vs_random(ev)
    assert list(t3.best_method) == ["ot+avg", "ot+avg"] and (t3.improvement_pct > 0).all()
    summ = sel.improvement_summary(ev, ["m"])
    assert list(zip(summ.distance, summ.aggregation)) == [("chamfer", "min"), ("ot", "avg")]
    want = ev[(ev.method == "ot+avg")].improvement_pct
    assert summ.loc[1, "m"] == pytest.approx(want.mean()) and summ.loc[1, "m_std"] == pytest.approx(want.std(ddof=1))


def test_best_picked_on_val_reports_the_val_pick_on_test():
    import pandas as pd

    rng = np.random.default_rng(15)
    S, K = 30, 3

    def ev_for(good):  # `good` picks the best candidate, the other method the worst
        vals = rng.random((S, K))
        ch = {good: vals.argmax(axis=1), ("ot+avg" if good == "chamfer+min" else "chamfer+min"): vals.argmin(axis=1),
              "mbr:ot": vals.argmax(axis=1)}
        return sel.evaluate_methods(ch, {"m": vals}, K).assign(policy="p1")

    ev_val, ev_test = ev_for("chamfer+min"), ev_for("ot+avg")
    t = sel.best_picked_on_val(ev_val, ev_test, ["m"])
    row = t.iloc[0]
    assert row.picked_on_val == "chamfer+min" and row.on_test_best_method == "ot+avg"  # MBR never picked
    want = ev_test[(ev_test.method == "chamfer+min") & (ev_test.stratum == "all")].value.iloc[0]
    assert row.test == pytest.approx(want) and row.test < row.on_test_best and row.improvement_pct < 0
    same = sel.best_picked_on_val(ev_test, ev_test, ["m"]).iloc[0]
    assert same.test == same.on_test_best
    assert sel.best_picked_on_val(ev_val.iloc[:0], ev_test, ["m"]).empty


def test_pca_and_mean_vectors():
    rng = np.random.default_rng(14)
    sets = _sets(rng, 5) + [np.zeros((0, D))]
    m = sel.mean_vectors(sets)
    assert m.shape == (6, D) and np.isnan(m[5]).all() and np.allclose(m[0], sets[0].mean(axis=0))
    a, b = sel.pca_2d(m, m[:2])
    assert a.shape == (6, 2) and np.allclose(a[:2], b)


def test_pca_2d_is_the_one_pca():
    """One PCA for Fig. 2b and the embedding figures (issue 35): fit on finite rows only, signs fixed by the
    largest loading, the second axis padded when there is one direction; plots has no copy of its own."""
    import sdrlib.plots as plots

    rng = np.random.default_rng(3)
    X = rng.normal(size=(7, 5))
    a, = sel.pca_2d(X)
    W = np.linalg.lstsq(X - X.mean(axis=0), a, rcond=None)[0]  # the loadings the projection used
    assert (W[np.abs(W).argmax(axis=0), range(2)] > 0).all()
    assert np.allclose(np.abs(a), np.abs(sel.pca_2d(-X)[0]))  # the same axes up to the fixed sign
    Xn = np.vstack([X, np.full(5, np.nan)])
    b, = sel.pca_2d(Xn)
    assert np.allclose(b[:7], a) and np.isnan(b[7]).all()
    c, = sel.pca_2d(np.array([[0.0], [1.0], [3.0]]))
    assert (c[:, 1] == 0).all() and c[2, 0] > c[0, 0]
    with pytest.raises(sel.SelectionError, match="two finite rows"):
        sel.pca_2d(np.vstack([X[:1], np.full(5, np.nan)]))
    from sdrlib.plots import _distances as fig2a, _embedding as fig1  # the figure modules that project

    assert not any(hasattr(m, "_pca2") for m in (plots, fig1, fig2a))
    assert fig1.pca_2d is sel.pca_2d and fig2a.pca_2d is sel.pca_2d


# --------------------------------------------------------------------------- negation-aware settings (issue 18)
def _presence(rng, sets):
    """Random presence rows (-1 / 0 / +1 on a few observations) aligned with each set's sentences."""
    out = []
    for s in sets:
        p = np.zeros((len(s), 14), np.int8)
        for r in range(len(s)):
            obs = rng.integers(1, 14)
            p[r, obs] = rng.choice([-1, 0, 1])
        out.append(p)
    return out


def _brute_neg(cands, pc, bank, pb, name, how, k):
    out = []
    for c, p in zip(cands, pc):
        d = np.array([set_distance(c, b, name, presence=(p, q)) for b, q in zip(bank, pb) if len(b)])
        out.append(d.min() if how == "min" else d.mean() if how == "avg" else np.sort(d)[:min(k, len(d))].mean())
    return np.array(out)


def test_negation_aware_settings_match_reference_and_keep_name_order():
    rng = np.random.default_rng(21)
    S, K, N = 2, 3, 6
    cf, ci = _sets(rng, S * K), _sets(rng, S * K, 1, 2)
    bf, bi = _sets(rng, N), _sets(rng, N, 1, 2)
    bi[2] = np.zeros((0, D))  # a bank report without Impression is left out of that section
    pres = {"findings": _presence(rng, cf), "impression": _presence(rng, ci)}
    bpres = {"findings": _presence(rng, bf), "impression": _presence(rng, bi)}
    names = ["chamfer_neg", "chamfer", "hung_nn_neg"]
    res = sel.bank_distances({"findings": cf, "impression": ci}, {"findings": bf, "impression": bi}, names, n_candidates=K,
                             knn_k=2, progress=None, presence=pres, bank_presence=bpres)
    assert res.names == names
    for a, name in enumerate(names):
        for g, how in enumerate(res.aggregations):
            if name.endswith("_neg"):
                want = (_brute_neg(cf, pres["findings"], bf, bpres["findings"], name, how, 2)
                        + _brute_neg(ci, pres["impression"], [b for b in bi], bpres["impression"], name, how, 2))
            else:
                want = _brute(cf, bf, name, how, 2) + _brute(ci, bi, name, how, 2)
            np.testing.assert_allclose(res.total[a, g].ravel(), want, atol=1e-8, err_msg=f"{name} {how}")


def test_negation_aware_selection_prefers_the_consistent_candidate():
    # candidate 0 states the bank's finding, candidate 1 its contradiction with (almost) the same vector
    rng = np.random.default_rng(3)
    v = _unit(rng, 1)
    near = v + 1e-3 * _unit(rng, 1)
    near /= np.linalg.norm(near)
    cands = {"findings": [near, v]}
    pos, neg = np.zeros((1, 14), np.int8), np.zeros((1, 14), np.int8)
    pos[0, 10], neg[0, 10] = 1, -1
    bank = {"findings": [v]}
    plain = sel.bank_distances(cands, bank, ["chamfer"], n_candidates=2, progress=None)
    assert plain.chosen()[0, 0, 0] == 1  # the plain distance takes the closer vector: the contradiction
    res = sel.bank_distances(cands, bank, ["chamfer_neg"], n_candidates=2, progress=None,
                             presence={"findings": [pos, neg]}, bank_presence={"findings": [pos]})
    assert res.chosen()[0, 0, 0] == 0 and res.total[0, 0, 0, 1] == pytest.approx(1.0)


def test_negation_aware_selection_needs_presence():
    rng = np.random.default_rng(4)
    c, b = {"findings": _sets(rng, 2)}, {"findings": _sets(rng, 3)}
    with pytest.raises(sel.SelectionError, match="candidate_presence"):
        sel.bank_distances(c, b, ["chamfer_neg"], n_candidates=2, progress=None)
    with pytest.raises(sel.SelectionError, match="bank_presence"):
        sel.bank_distances(c, b, ["chamfer_neg"], n_candidates=2, progress=None, presence={"findings": _presence(rng, c["findings"])})
    with pytest.raises(sel.SelectionError, match="3 arrays for 2"):
        sel.bank_distances(c, b, ["chamfer_neg"], n_candidates=2, progress=None,
                           presence={"findings": _presence(rng, c["findings"]) + [np.zeros((1, 14))]},
                           bank_presence={"findings": _presence(rng, b["findings"])})
    with pytest.raises(sel.SelectionError, match="negation-aware"):
        sel.mbr_scores(c, ["chamfer_neg"], n_candidates=2)


def test_mbr_negation_aware_matches_reference():
    rng = np.random.default_rng(5)
    S, K = 2, 3
    cf = _sets(rng, S * K)
    pf = _presence(rng, cf)
    got = sel.mbr_scores({"findings": cf}, ["chamfer_neg"], n_candidates=K, presence={"findings": pf})["chamfer_neg"]
    for s in range(S):
        for i in range(K):
            a = s * K + i
            want = np.mean([set_distance(cf[a], cf[s * K + j], "chamfer_neg", presence=(pf[a], pf[s * K + j]))
                            for j in range(K) if j != i])
            assert got[s, i] == pytest.approx(want, abs=1e-8)


def test_score_candidates_labels_texts_for_negation_aware_settings(small_encoder):
    from sdrlib.embedding import ReportBank, SentenceEmbedder

    emb = SentenceEmbedder(small_encoder)
    bank = ReportBank.build(emb, ["There is a small left pleural effusion.", "The lungs are clear."],
                            ["Small left effusion.", "No acute disease."])
    yes = "<think> There is a small left pleural effusion. </think> <answer> Small left effusion. </answer>"
    no = "<think> There is no left pleural effusion. </think> <answer> No effusion. </answer>"
    pres = sel.candidate_presence([[yes, no]])
    from sdrlib.clinical.presence import PRESENCE_WIDTH, column

    eff = column("Pleural Effusion", "left")
    assert pres["findings"][0][0, eff] == 1 and pres["findings"][1][0, eff] == -1
    bp = sel.bank_presence_of(bank)
    assert bp["findings"].shape == (bank.matrix("findings").shape[0], PRESENCE_WIDTH) and bp["findings"][0, eff] == 1
    res = sel.score_candidates([[no, yes]], bank, emb, ["chamfer_neg"], progress=None, aggregations=["min"])
    assert res.chosen()[0, 0, 0] == 1  # the report agreeing with a bank report wins under the negation-aware cost
    with pytest.raises(sel.SelectionError, match="ReportBank"):
        sel.bank_presence_of({"findings": []})


# --------------------------------------------------------------------------- eq. 20 unclipped, the random bank
def test_hung_pen_ranks_by_eq20_unclipped_where_the_clip_ties():
    """Eq. (20) has no upper bound; the reward's clip at 1 would tie every candidate whose sentence-count gap
    reaches 1 / alpha. Selection (bank and MBR) ranks by the unclipped value under the setting's own name."""
    from sdrlib.distances import make_spec, set_distance

    rng = np.random.default_rng(5)
    bank = [_unit(rng, 1) for _ in range(3)]
    far, near = _unit(rng, 5), _unit(rng, 3)  # gaps of 4 and 2 sentences to every bank report
    for c in (far, near):  # the reward's clipped value ties at 1 ...
        assert all(set_distance(c, b, "hung_pen_0.5") == 1.0 for b in bank)
    raw = make_spec("hung_pen", alpha=0.5, clip=False)
    want = [np.mean([set_distance(c, b, raw) for b in bank]) for c in (far, near)]
    assert want[1] < want[0] - 0.9  # ... eq. 20 does not
    res = sel.bank_distances({"findings": [far, near]}, {"findings": bank}, ["hung_pen_0.5", "chamfer"], n_candidates=2,
                             aggregations=["avg", "min"], progress=None)
    assert res.names == ["hung_pen_0.5", "chamfer"]
    np.testing.assert_allclose(res.total[0, 0, 0], want, atol=1e-9)
    assert res.chosen()[0, 0, 0] == 1 and res.chosen()[0, 1, 0] == 1  # the nearer count wins, not candidate 0
    spec = sel.selection_spec("hung_pen_0.5")
    assert spec.name == "hung_pen_0.5" and spec.params["clip"] is False and spec.upper is None
    # MBR: candidate 1 (3 sentences) sits between 0 (5) and 2 (1 sentence); clipped, all three tie at 1
    c3 = bank[0]
    mbr = sel.mbr_scores({"findings": [far, near, c3]}, ["hung_pen_0.5"], n_candidates=3)["hung_pen_0.5"]
    assert np.argmin(mbr[0]) == 1 and mbr[0, 1] < mbr[0, 0]
    # an empty section scores eq. 20's largest value at those sizes, 1 + alpha m, not +inf
    res = sel.bank_distances({"findings": [np.zeros((0, D)), near], "impression": [near, near]},
                             {"findings": bank, "impression": bank}, ["hung_pen_0.5"], n_candidates=2, aggregations=["avg"],
                             progress=None)
    assert res.section_scores[0, 0, 0, 0, 0] == pytest.approx(1.5) and np.isfinite(res.total).all()
    mbr = sel.mbr_scores({"findings": [np.zeros((0, D)), near]}, ["hung_pen_0.5"], n_candidates=2)["hung_pen_0.5"]
    assert mbr[0, 1] == pytest.approx(1 + 0.5 * 3)


def test_rewards_keep_the_clip():
    from sdrlib.distances import get

    assert get("hung_pen_0.5").params["clip"] is True and get("hung_pen_0.5").upper == 1.0


def _bank(n):
    from sdrlib.embedding import ReportBank

    rng = np.random.default_rng(0)
    sizes = {"findings": rng.integers(0, 4, n), "impression": rng.integers(1, 3, n)}
    mats, offs, sents = {}, {}, {}
    for s, sz in sizes.items():
        offs[s] = np.concatenate([[0], np.cumsum(sz)]).astype(np.int64)
        mats[s] = _unit(rng, int(sz.sum())).astype(np.float32)
        sents[s] = [f"{s} sentence {i}." for i in range(int(sz.sum()))]
    return ReportBank(ids=[f"s{i}" for i in range(n)], section_matrices=mats, section_offsets=offs, sentences=sents,
                      encoder_id="fake", corpus_hash="h", meta={"bank_draw": {"draw": "random"}})


def test_bank_draw_is_seeded_random_and_recorded():
    a, b = sel.draw_indices(1000, 50, 3), sel.draw_indices(1000, 50, 3)
    np.testing.assert_array_equal(a, b)  # same seed, same draw
    assert len(set(a)) == 50 and (np.diff(a) > 0).all()
    assert not np.array_equal(a, np.arange(50)) and not np.array_equal(a, sel.draw_indices(1000, 50, 4))
    assert a.max() > 500  # spread over the split, not its head
    for n in (0, -1, 1000, 5000):  # 0 = all (bank_size 0); N >= the split: all of it, in order
        np.testing.assert_array_equal(sel.draw_indices(1000, n, 3), np.arange(1000))
    recs = [f"r{i}" for i in range(20)]
    got, meta = sel.draw_bank_records(recs, 5, 7)
    assert got == [recs[i] for i in sel.draw_indices(20, 5, 7)] and got != recs[:5]
    assert meta == {"bank_draw": {"draw": "random", "seed": 7, "n": 5, "of": 20}}
    got, meta = sel.draw_bank_records(recs, 50, 7)
    assert got == recs and meta["bank_draw"] == {"draw": "all", "seed": 7, "n": 20, "of": 20}
    for bad in ((10, 2, -1), (10, 2.5, 0), (-1, 2, 0), (10, 2, True)):
        with pytest.raises(sel.SelectionError):
            sel.draw_indices(*bad)


def test_sample_bank_is_the_same_draw_for_selection_and_pruning():
    bank = _bank(30)
    sub = sel.sample_bank(bank, 8, 0)
    rows = sel.draw_indices(30, 8, 0)
    assert sub.ids == [bank.ids[i] for i in rows] and sub.ids != bank.ids[:8]
    assert sub.ids == sel.sample_bank(bank, 8, 0).ids  # notebook 05 and 06 get the same reports
    for s in ("findings", "impression"):
        for j, r in enumerate(rows):
            np.testing.assert_array_equal(sub.sets(s)[j], bank.sets(s)[r])
            o, p = sub.offsets(s), bank.offsets(s)
            assert sub.sentences[s][o[j]:o[j + 1]] == bank.sentences[s][p[r]:p[r + 1]]
    assert sub.meta == {"bank_draw": {"draw": "random"},
                        "bank_sample": {"draw": "random", "seed": 0, "n": 8, "of": 30}}
    assert sel.sample_bank(bank, 0, 0) is bank and sel.sample_bank(bank, 30, 0) is bank
    assert sel.sample_bank(bank, 99, 0) is bank
