"""Notebook 06's tables and conclusion (sdrlib.experiments.pruning_checks) on hand-made runs, a character
tokenizer and a scorer that counts odd sentences, so every expected count is known."""

import numpy as np
import pandas as pd
import pytest

from sdrlib import pruning as pr
from sdrlib.experiments import pruning_checks as checks
from sdrlib.experiments.tables import paired_table
from sdrlib.metrics.base import mean_result

GOOD = "<think> The lungs are clear. Heart size is normal. </think> <answer> No acute process. </answer>"
ODD = "<think> Zebra window. Zebra teapot. </think> <answer> Zebra. </answer>"
EOS = 0


class CharTokenizer:
    """One id per character, 0 the end-of-sequence token (decoded to nothing)."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if i != EOS)


def zebra_scorer(sentence_lists, scorable=None):
    """Distance of a partial report = the number of its sentences that mention a zebra."""
    return np.array([float(sum("Zebra" in s for _, s in sents)) for sents in sentence_lists])


TOK = CharTokenizer()
PARAMS = pr.PruneParams(n_candidates=3, p=0.5, warmup=1)


def standard(texts, seconds=1.0):
    ids = [TOK.encode(t) + [EOS] for t in texts]
    return pr.StandardResult(list(texts), [len(i) for i in ids], [True] * len(texts), ids, seconds, {"forwards": 10})


def as_live(s, seconds=0.5):
    """Replay on the sampled ids as a stand-in for live decoding (the same decisions, tests/pruning), with the ids
    each candidate reached in meta, as prune_live records them."""
    q = pr.replay_prune(s.texts, zebra_scorer, PARAMS, tokenizer=TOK, token_ids=s.ids)
    q.meta["ids"] = [s.ids[j][:q.tokens[j]] for j in range(len(s.ids))]
    q.meta["forwards"], q.seconds = 6, seconds
    return q


@pytest.fixture
def runs():
    std = {"SFT": [standard([ODD, GOOD, ODD]), standard([GOOD, ODD, ODD])]}
    live = {"SFT": {"chamfer": [as_live(s) for s in std["SFT"]]}}
    rep = {"SFT": {n: [pr.replay_prune(s.texts, zebra_scorer, PARAMS, tokenizer=TOK, token_ids=s.ids)
                       for s in std["SFT"]] for n in ("chamfer", "hausdorff")}}
    return std, live, rep


def test_live_vs_replay_counts_agreement_and_sees_a_wrong_survivor(runs):
    std, live, rep = runs
    scorers = {"chamfer": zebra_scorer}
    t = checks.live_vs_replay_table(std, live, rep, scorers, PARAMS, TOK)
    assert t.loc[0, "studies"] == 2
    assert (t.drop(columns=["policy", "distance"]).iloc[0] == 2).all()
    live["SFT"]["chamfer"][0].survivor = 0  # a live run that kept another candidate than replay
    t = checks.live_vs_replay_table(std, live, rep, scorers, PARAMS, TOK)
    assert t.loc[0, "same survivor"] == 1 and t.loc[0, "same survivor, word proxy"] == 1


def test_token_and_wallclock_tables(runs):
    std, live, rep = runs
    pruned = {"SFT": {"chamfer": live["SFT"]["chamfer"], "hausdorff": rep["SFT"]["hausdorff"]}}
    t = checks.token_table(std, pruned, ["chamfer"], PARAMS)
    assert list(t.source) == ["live", "replay"] and list(t.distance) == ["chamfer", "hausdorff"]
    full = np.mean([s.total_tokens for s in std["SFT"]])
    assert t["standard tokens / study"].iloc[0] == pytest.approx(full)
    assert t["survivor tokens / study"].iloc[0] == pytest.approx(len(GOOD) + 1)  # the survivor is GOOD, to its end
    assert 0 < t["tokens saved %"].iloc[0] < 100 and t["pruning tokens / study"].iloc[0] < full
    w = checks.wallclock_table(std, live)
    assert w["wall-clock ratio (pruning / standard)"].iloc[0] == pytest.approx(0.5)
    assert w["token ratio (pruning / standard)"].iloc[0] == pytest.approx(1 - t["tokens saved %"].iloc[0] / 100)
    assert (w["standard forwards / study"].iloc[0], w["pruning forwards / study"].iloc[0]) == (10, 6)


def test_quality_table_and_view():
    ev = pd.DataFrame([{"policy": "SFT", "section": "findings", "stratum": "all", "metric": "BS-F1", "method": m,
                        "value": v, "random": 0.3} for m, v in (("standard:chamfer", 0.5), ("pruning:chamfer", 0.4))])
    tokens = pd.DataFrame([{"policy": "SFT", "distance": "chamfer", "wu": 1, "tokens saved %": 25.0}])
    t = checks.quality_table(ev, tokens, ["BS-F1"], "findings", missing={"RG-F1": "not computed: no radgraph"})
    assert t.iloc[0][["BS-F1 random", "BS-F1 standard", "BS-F1 pruning", "tok-save %"]].tolist() == [0.3, 0.5, 0.4, 25.0]
    view, gone = checks.quality_view(t)
    assert gone == ["RG-F1"] and list(view.columns) == ["SFT, chamfer"]
    assert list(view.index) == ["BS-F1 random", "BS-F1 standard", "BS-F1 pruning"]


def test_versus_standard_pairs_and_same_pick():
    vals = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # S = 4 studies, K = 2
    metrics = {"SFT": {"findings": {"A": mean_result("A", "given", vals.ravel())}}}
    choices = {"SFT": {"pruning:chamfer": np.array([1, 0, 1, 1]), "standard:chamfer": np.array([1, 0, 0, 1])}}
    t = paired_table(checks.versus_standard(choices, metrics, ["chamfer"], 2), n_resamples=200)
    r = t.iloc[0]
    assert (r.A, r.B, r["same pick %"]) == ("pruning", "standard", 75.0)
    assert (r.value_a, r.value_b) == pytest.approx((0.75, 0.5))


def test_sweep_table_rows_per_grid_point(runs):
    std, _, _ = runs
    r = mean_result("BS-F1", "given", np.array([0.1, 0.9, 0.2, 0.8, 0.3, 0.4]))
    t = checks.sweep_table(std, {"SFT": r}, {"SFT": {"chamfer": np.array([0, 1])}}, {"chamfer": zebra_scorer},
                           PARAMS, [0.34, 0.5], [0, 1], key="BS-F1", tokenizer=TOK, ci=lambda res: (0.0, 1.0))
    assert len(t) == 4 and list(t[["p", "wu"]].itertuples(index=False, name=None)) == [(0.34, 0), (0.34, 1),
                                                                                       (0.5, 0), (0.5, 1)]
    assert t["BS-F1"].iloc[0] == pytest.approx((0.9 + 0.8) / 2)  # the survivors are GOOD: candidates 1 and 0
    assert t.standard.iloc[0] == pytest.approx((0.1 + 0.3) / 2) and t.random.iloc[0] == pytest.approx(0.45) and t["BS-F1 hi"].iloc[0] == 1.0


def test_setup_helpers_refuse(tmp_path):
    with pytest.raises(pr.PruningError, match="no distance setting"):
        checks.bank_scorers(None, None, [], "avg", knn_k=1)
    checks.require_policies({"sft": tmp_path}, "smoke")
    with pytest.raises(pr.PruningError, match=r"policies not found.*'chamfer'.*notebooks 03"):
        checks.require_policies({"sft": tmp_path, "chamfer": tmp_path / "missing"}, "smoke")


def _write(d, name, rows):
    pd.DataFrame(rows).to_csv(d / f"{name}.csv", index=False)


def test_conclusion_lines_state_a_direction_only_outside_the_interval(tmp_path):
    _write(tmp_path, "06_tokens", [
        {"policy": "SFT", "distance": "chamfer", "source": "live", "standard tokens / study": 144.0,
         "pruning tokens / study": 114.0, "tokens saved %": 20.83},
        {"policy": "SFT", "distance": "hausdorff", "source": "replay", "standard tokens / study": 144.0,
         "pruning tokens / study": 100.0, "tokens saved %": 30.0}])
    cmp = {"policy": "SFT", "distance": "chamfer", "A": "pruning", "value_a": 0.40, "value_b": 0.42}
    _write(tmp_path, "06_pruning_vs_standard", [
        {**cmp, "section": "findings", "metric": "BS-F1", "diff": -0.02, "ci_low": -0.03, "ci_high": -0.01,
         "p_value": 0.002},
        {**cmp, "section": "findings", "metric": "CXB-14", "diff": 0.01, "ci_low": -0.02, "ci_high": 0.04,
         "p_value": 0.4},
        {**cmp, "distance": "hausdorff", "section": "findings", "metric": "BS-F1", "diff": 0.05, "ci_low": 0.01,
         "ci_high": 0.09, "p_value": 0.01}])
    _write(tmp_path, "06_survivor_vs_standard_pick", [
        {"policy": "SFT", "distance": "chamfer", "same": 1, "n": 3, "rate": 1 / 3, "chance": 1 / 3, "p_value": 1.0}])
    lines = checks.conclusion_lines(tmp_path)
    assert not any("hausdorff" in s for s in lines)  # only the live setting
    # the answer first: tokens saved, rows that differ under the rule (wall-clock absent: no 06_wallclock)
    assert lines[0] == ("Answer: does pruning keep best-of-K's quality with fewer tokens? SFT, chamfer: 21 % fewer "
                        "tokens, a quality difference on 1 of 2 metric x section rows.")
    lines = lines[1:]
    assert lines[0].startswith("SFT, chamfer (live): pruning generated 114 tokens per study against 144")
    assert "20.8 % fewer (06_tokens)" in lines[0] and "wall-clock" not in lines[0]  # no 06_wallclock written
    # the Holm-adjusted p the word rests on stands beside the raw p (Holm over the live rows: 0.002 x 2)
    assert "survivor 0.400 vs standard best-of-K 0.420 (diff -0.020, 95 % CI [-0.030, -0.010], p = 0.002, " \
           "Holm = 0.004): survivor below standard" in lines[1]
    assert lines[2] == ("SFT, chamfer, pruning vs standard over all 2 metric x section rows: above on 0, below on 1 "
                        "(BS-F1 findings), no difference detected at this size on 1 (06_pruning_vs_standard).")
    assert lines[3].endswith("p = 1.000): no difference detected at this size (06_survivor_vs_standard_pick).")
    assert len(lines) == 4  # no 06_pruning_vs_random: its sentences left out
    _write(tmp_path, "06_pruning_vs_standard", [{**cmp, "section": "findings", "metric": "BS-F1", "diff": 0.01,
                                                 "ci_low": -0.01, "ci_high": 0.03, "p_value": 0.3}])
    assert "p = 0.300, Holm = 0.300): no difference detected at this size" in checks.conclusion_lines(tmp_path)[2]
    # a raw p below 0.05 that Holm lifts above it: both printed, so "no difference detected" is read against Holm's
    _write(tmp_path, "06_pruning_vs_standard", [
        {**cmp, "section": "findings", "metric": "BS-F1", "diff": -0.04, "ci_low": -0.06, "ci_high": -0.02,
         "p_value": 0.03},
        {**cmp, "section": "impression", "metric": "BS-F1", "diff": -0.04, "ci_low": -0.06, "ci_high": -0.02,
         "p_value": 0.04}])
    assert "p = 0.030, Holm = 0.060): no difference detected at this size" in checks.conclusion_lines(tmp_path)[2]


def test_agreement_sentences_keep_their_default_words():
    t = pd.DataFrame([{"policy": "SFT", "distance": "chamfer", "same": 1, "n": 3, "rate": 1 / 3, "chance": 0.2,
                       "p_value": 0.5}])
    assert checks.agreement_sentences(t)[0].endswith("not distinguishable from chance (above it).")
    assert checks.agreement_sentences(t, undetected="x")[0].endswith(": x.")
