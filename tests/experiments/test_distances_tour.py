"""sdrlib.experiments.distances_tour (notebook 02's logic) and fidelity.spearman_difference."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sdrlib.experiments.distances_tour import distances_conclusion, edit_facts, explain_links, fig2_pair, links_frame
from sdrlib.experiments.fidelity import FidelityError, spearman_difference
from sdrlib.plots import set_distance_links


def _onehot(idx, d=8):
    E = np.zeros((len(idx), d))
    E[np.arange(len(idx)), idx] = 1.0
    return E


class _Emb:
    """Sentence i of the toy corpus -> the unit vector of its first word's letter (deterministic)."""

    def encode(self, sentences):
        return _onehot([ord(s.strip()[0].lower()) % 8 for s in sentences])


def test_fig2_pair_picks_the_widest_hausdorff_chamfer_gap():
    rec = lambda i, f, lab: SimpleNamespace(study_id=str(i), findings=f, labels=lab)  # noqa: E731
    test = [rec(0, "A x. B x. C x. D x.", {"Edema": 1})]
    train = [rec(1, "A x. B x. C x.", None), rec(2, "A x. B x. F x.", None), rec(3, "A x.", None)]
    p = fig2_pair(train, test, _Emb())
    assert p.reference.study_id == "0" and len(p.b_sentences) == 4
    # Hausdorff is 0.5 for both 3-sentence candidates (a reference sentence without partner); Chamfer is
    # 0.0625 for {A, B, C} (one lonely link) and 0.208 for {A, B, F} (two): the gap H - 2C picks {A, B, C}
    assert p.candidate.study_id == "1"
    assert p.a.shape == (3, 8) and p.b.shape == (4, 8)


def test_links_frame_and_explanation():
    A, B = _onehot([0, 1]), _onehot([0, 1, 2])
    L = set_distance_links(A, B)
    f = links_frame(L)
    assert len(f) == 6 and f["Hausdorff link"].sum() == 1
    assert f.loc[(f.G == "G1") & (f.R == "R1"), "cost M"].item() == pytest.approx(0.0)
    assert f["OT mass"].sum() == pytest.approx(1.0)
    text = explain_links(L, ["a", "b"], ["a", "b", "c"])
    assert "R3 'c'" in text and f"Hausdorff {L['hausdorff']:.3f}" in text


def test_edit_facts_reads_each_column():
    t = pd.DataFrame({"x": [0, 0, 0.1, 0.3, 0.05, 0.2], "y": [0.01, 0.01, 0.1, 0.01, 0.2, 0.3]},
                     index=["identical", "reordered", "paraphrase", "missing finding", "contradicted finding",
                            "extra hallucination"])
    f = edit_facts(t)
    assert f.loc["x", "farthest edit"] == "missing finding" and f.loc["y", "farthest edit"] == "extra hallucination"
    assert bool(f.loc["x", "contradiction closer than paraphrase"]) and not f.loc["y", "contradiction closer than paraphrase"]
    assert bool(f.loc["y", "forgives missing"]) and not f.loc["x", "forgives missing"]
    assert f.loc["y", "entropic floor"] == pytest.approx(0.01)


def _pairs(n=300, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(size=n)
    return pd.DataFrame({"jaccard": t, "good": t + rng.normal(0, 0.05, n), "bad": t + rng.normal(0, 1.0, n)})


def test_spearman_difference_detects_a_better_setting_and_not_a_tie():
    p = _pairs()
    r = spearman_difference(p, "good", "bad", n_boot=200, seed=0)
    assert r["A"] == "good" and r["diff"] == pytest.approx(r["value_a"] - r["value_b"])
    assert r["ci_low"] > 0 and r["p_value"] < 0.05
    same = spearman_difference(p, "good", "good", n_boot=50, seed=0)
    assert same["diff"] == 0 and same["ci_low"] == 0 == same["ci_high"]
    with pytest.raises(FidelityError):
        spearman_difference(p, "good", "missing")


def _write(d, name, df):
    df.to_csv(d / f"{name}.csv", index=False)


def test_distances_conclusion_words_follow_the_interval(tmp_path):
    assert distances_conclusion(tmp_path) == []
    _write(tmp_path, "02_fidelity", pd.DataFrame({
        "setting": ["a", "chamfer"], "origin": ["sdr extension", "paper"], "target": "jaccard", "stratum": "all",
        "n_pairs": 100, "spearman": [0.6, 0.5], "spearman_lo": [0.5, 0.4], "spearman_hi": [0.7, 0.6]}))
    row = dict(A="a", B="chamfer", value_a=0.6, value_b=0.5, diff=0.1, ci_low=-0.01, ci_high=0.2, p_value=0.2)
    _write(tmp_path, "02_fidelity_vs_chamfer", pd.DataFrame([row]))
    (line,) = distances_conclusion(tmp_path)
    assert "no difference detected at this size" in line and "more closely" not in line and "0.60" in line
    _write(tmp_path, "02_fidelity_vs_chamfer", pd.DataFrame([{**row, "ci_low": 0.05, "p_value": 0.01}]))
    (line,) = distances_conclusion(tmp_path)
    assert "a tracks label disagreement more closely than chamfer" in line and "p = 0.010" in line
    _write(tmp_path, "02_identical_floor", pd.DataFrame({"setting": ["gw", "ot"], "size": [2, 2], "mean": [0.5, 0.0]}))
    assert "gw (up to 0.500)" in distances_conclusion(tmp_path)[-1] and "ot (" not in distances_conclusion(tmp_path)[-1]


def test_distances_conclusion_opens_with_the_battery_answer(tmp_path):
    rows = [{"reward": r, "label": r, "case": f"c{i}", "category": "laterality", "passed": ok}
            for r, oks in (("chamfer", [True, False]), ("ot", [True, True]), ("chamfer_neg", [True, True]),
                           ("gcarl", [True, True])) for i, ok in enumerate(oks)]
    _write(tmp_path, "02_battery", pd.DataFrame(rows))
    (line,) = distances_conclusion(tmp_path)
    assert line.startswith("Answer: for a reward that must read real report language, use ot, chamfer_neg (2 of 2")
    assert "best of the paper's settings: ot (2 of 2 cases each); of ours: chamfer_neg" in line
    assert "gcarl" not in line  # a reward method, not a distance setting
