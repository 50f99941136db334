"""sdrlib.selection.pipeline: one split end to end (evaluate_split), the normal share, notebook 05's views."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdrlib import selection as sel
from sdrlib.data.records import Record

NORMAL = "<think> The heart is normal. Lungs are clear. </think> <answer> No acute disease. </answer>"
EFFUSION = "<think> Small left pleural effusion. </think> <answer> Pleural effusion. </answer>"
EDEMA = "<think> Mild pulmonary edema. The heart is enlarged. </think> <answer> Edema and cardiomegaly. </answer>"
METRICS = {"metrics": ["rouge", "clinical"], "settings": {"clinical": {"backend": "labeler"}}}


def _records():
    return [Record("s0", [], "The heart is normal. Lungs are clear.", "No acute disease.", {"No Finding": 1}, "test"),
            Record("s1", [], "Small left pleural effusion.", "Pleural effusion.", {"Pleural Effusion": 1}, "test"),
            Record("s2", [], "Mild pulmonary edema.", "Edema.", {"Edema": 1, "Cardiomegaly": 1}, "test")]


def _candidates():
    return {"A": [[NORMAL, EFFUSION, "garbage"], [EFFUSION, NORMAL, EDEMA], [EDEMA, EDEMA, NORMAL]],
            "B": [[EFFUSION, EDEMA, NORMAL], [NORMAL, NORMAL, EFFUSION], [NORMAL, EDEMA, EFFUSION]]}


@pytest.fixture(scope="module")
def split_and_parts(small_encoder):
    from sdrlib.embedding import ReportBank, SentenceEmbedder

    emb = SentenceEmbedder(small_encoder)
    bank = ReportBank.build(emb, ["The heart is normal. Lungs are clear.", "The lungs are clear.",
                                  "Small left pleural effusion."],
                            ["No acute disease.", "Normal chest.", "Effusion."])
    names = ["chamfer", "chamfer_neg"]
    recs, cands = _records(), _candidates()
    split = sel.evaluate_split(cands, recs, emb, bank, names, n_candidates=3, aggregations=("min", "avg"), knn_k=2,
                               metric_kwargs=METRICS)
    return split, recs, cands, emb, bank, names


def test_evaluate_split_is_the_pipeline_it_replaces(split_and_parts):
    split, recs, cands, emb, bank, names = split_and_parts
    bp = sel.bank_presence_of(bank)
    evs = []
    for p, cs in cands.items():
        sets = sel.candidate_sets(cs, emb)
        pres = sel.candidate_presence(cs)
        sc = sel.bank_distances(sets, bank, names, n_candidates=3, study_ids=[r.study_id for r in recs], aggregations=("min", "avg"),
                                knn_k=2, presence=pres, bank_presence=bp, progress=None)
        np.testing.assert_allclose(split.scores[p].section_scores, sc.section_scores)
        mbr = sel.mbr_scores(sets, names, n_candidates=3, presence=pres)
        for n in names:
            np.testing.assert_allclose(split.mbr[p][n], mbr[n])
        ms = sel.score_candidate_metrics(cs, recs, **METRICS)
        for section in ("findings", "impression"):
            ev = sel.evaluate_methods(sel.method_choices(sc, mbr), sel.pick_metrics(ms, section), 3,
                                      strata=ms.strata[::3])
            evs.append(ev.assign(policy=p, section=section))
    pd.testing.assert_frame_equal(split.ev, pd.concat(evs, ignore_index=True))
    assert set(split.ev.method) >= {"random", "oracle", "first", "chamfer+min", "chamfer_neg+avg", "mbr:chamfer"}
    assert split.scores["A"].meta["unparseable"] == 1 and split.n_candidates == 3
    assert split.strata("A").tolist() == ["no_finding", "single", "multi"]
    assert set(split.seconds) == {"distances", "mbr", "metrics"} and split.pairs()[0] > 0


def test_evaluate_split_refuses_a_grid_that_does_not_match_the_records(split_and_parts):
    _, recs, cands, emb, bank, names = split_and_parts
    with pytest.raises(sel.SelectionError, match="expected 3 x 3"):
        sel.evaluate_split({"A": cands["A"][:2]}, recs, emb, bank, names, n_candidates=3, metric_kwargs=METRICS)
    with pytest.raises(sel.SelectionError, match="expected 3 x 2"):
        sel.evaluate_split(cands, recs, emb, bank, names, n_candidates=2, metric_kwargs=METRICS)


def test_normal_flags_and_share():
    flags = sel.normal_flags([[NORMAL, EFFUSION, "garbage"], [EDEMA, NORMAL, NORMAL]])
    assert flags[0, :2].tolist() == [1.0, 0.0] and np.isnan(flags[0, 2]) and flags[1].tolist() == [0.0, 1.0, 1.0]
    share = sel.normal_share(flags, {"first": np.array([0, 0]), "bad": np.array([2, 1])})
    # random: study 0 -> 1/2 (two parseable), study 1 -> 2/3; first: 1 and 0; bad: NaN left out, then 1
    assert share == pytest.approx({"random": (0.5 + 2 / 3) / 2, "first": 0.5, "bad": 1.0})
    assert np.isnan(sel.normal_share(np.full((2, 2), np.nan), {})["random"])


def test_normal_share_table_counts_references_random_and_methods(split_and_parts):
    split = split_and_parts[0]
    t = sel.normal_share_table(split, ["first", "chamfer+min"])
    assert list(t.columns) == ["policy", "method", "normal_share", "n"]
    assert list(t[t.policy == "A"].method) == ["references", "random", "first", "chamfer+min"]
    ref = t[t.method == "references"]
    assert np.allclose(ref.normal_share, 1 / 3) and (ref.n == 3).all()
    first_a = t[(t.policy == "A") & (t.method == "first")].iloc[0]  # NORMAL, EFFUSION, EDEMA
    assert first_a.normal_share == pytest.approx(1 / 3) and first_a.n == 3


def test_headline_view_and_policy_grid():
    rng = np.random.default_rng(0)
    evs = []
    for pol in ("p2", "p1"):
        vals = rng.random((10, 3))
        ch = {"chamfer+min": rng.integers(0, 3, 10), "chamfer+avg": vals.argmax(axis=1),
              "hausdorff+avg": rng.integers(0, 3, 10), "mbr:chamfer": rng.integers(0, 3, 10)}
        evs.append(sel.evaluate_methods(ch, {"m": vals, "n": 1 - vals}, 3).assign(policy=pol, section="findings"))
    ev = pd.concat(evs, ignore_index=True)
    view = sel.headline_view(sel.best_vs_random(ev, ["m", "n"]), ["m"])
    assert list(view.index) == ["p2", "p1"] and list(view.columns) == [("best_method", "m"), ("improvement_pct", "m")]
    assert (view[("best_method", "m")] == "chamfer+avg").all()  # the per-study argmax of m is the best pick
    grid = sel.policy_grid(ev, "m", aggregation="avg", policies=["p1", "p2"])
    assert list(grid.index) == ["chamfer", "hausdorff"] and list(grid.columns) == ["p1", "p2"]
    want = ev[(ev.policy == "p1") & (ev.metric == "m") & (ev.method == "hausdorff+avg") & (ev.stratum == "all")]
    assert grid.loc["hausdorff", "p1"] == pytest.approx(float(want.improvement_pct.iloc[0]))
    with pytest.raises(sel.SelectionError, match="knn"):
        sel.policy_grid(ev, "m", aggregation="knn")


def test_comparison_rows_pair_the_best_method_with_random_and_its_mbr(split_and_parts):
    from sdrlib.experiments.tables import paired_table

    split = split_and_parts[0]
    rows = list(sel.comparison_rows(split, "chamfer+min", metrics=("clin-F1 (sample)",)))
    keys = [r[0] for r in rows]
    assert [(k["policy"], k["section"], k["B"]) for k in keys] == [
        (p, s, b) for p in ("A", "B") for s in ("findings", "impression") for b in ("random", "mbr:chamfer")]
    _, a, b, _ = rows[0]
    assert a.stats.shape[0] == b.stats.shape[0] == 3  # one row per study: the bootstrap pairs studies
    sig = paired_table(iter(rows), n_resamples=50, seed=0)
    assert list(sig.A.unique()) == ["chamfer+min"] and len(sig) == 8
