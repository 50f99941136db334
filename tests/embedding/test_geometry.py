"""sdrlib.embedding.geometry and .bank_stats: notebook 01's measurements, on hand-built vectors."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sdrlib.embedding import EmbeddingError, SentenceEmbedder, bank_stats, geometry


def _unit(*rows):
    X = np.asarray(rows, dtype=np.float64)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def test_pick_figure_study_takes_the_most_sentences_within_the_limit():
    r = lambda f, i: SimpleNamespace(findings=f, impression=i)  # noqa: E731
    recs = [r("A a. B b.", "C c."),                          # 3
            r("A a. B b. C c. D d. E e.", "F f. G g. H h. I i. J j."),  # 10: over 9
            r("A a. B b. C c. D d.", "E e."),                # 5, one Impression sentence
            r("A a. B b. C c.", "D d. E e.")]                # 5, two: wins the tie
    assert geometry.pick_figure_study(recs, max_sentences=9) == 3
    assert geometry.pick_figure_study(recs, max_sentences=20) == 1
    with pytest.raises(ValueError):
        geometry.pick_figure_study([])


def test_distinct_context_draws_each_text_once_in_order():
    sents = ["a", "b", "a", "c", "b"]
    rows = np.arange(5)[:, None] * np.ones((5, 2))
    out = geometry.distinct_context(sents, rows, 10, seed=0)
    assert out[:, 0].tolist() == [0, 1, 3]  # first occurrences only, all three, in order
    assert geometry.distinct_context(sents, rows, 2, seed=0).shape == (2, 2)
    with pytest.raises(ValueError):
        geometry.distinct_context(sents, rows[:3], 2, seed=0)


def test_spread_anchor_pairs_picks_far_anchors_and_their_nearest_rows():
    # two tight clusters: rows 0, 1 near x; rows 2, 3 near y (row 2 the farther from row 0)
    U = _unit([1, 0.05, 0], [1, -0.1, 0], [0, 1, 0.05], [0.1, 1, 0])
    assert geometry.spread_anchor_pairs(U, 2) == [0, 1, 2, 3]
    assert geometry.spread_anchor_pairs(U, 1) == [0, 1]
    with pytest.raises(ValueError):
        geometry.spread_anchor_pairs(U[:1], 1)


def test_nearest_other_similarity_ignores_identical_rows():
    M = _unit([1, 0], [1, 0], [1, 1], [0, 1])
    nn = geometry.nearest_other_similarity(M, [0, 3])
    assert nn == pytest.approx([np.sqrt(0.5), np.sqrt(0.5)])  # the duplicate row 1 does not count


def test_geometry_summary_reads_pairs_and_the_rest():
    S = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .7], [.2, .4, .7, 1]])
    g = geometry.geometry_summary(S, [0.95, 0.5, 0.85]).set_index("statistic")["value"]
    assert g["paraphrase_cosine"] == pytest.approx(0.9)
    assert g["A1-N1_cosine"] == pytest.approx(0.7)
    assert g["unpaired_mean"] == pytest.approx(np.mean([.1, .2, .3, .4]))
    assert g["unpaired_max"] == pytest.approx(0.4)
    assert g["nearest_median"] == pytest.approx(0.85)
    assert g["nearest_share_ge_0.9"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        geometry.geometry_summary(np.eye(3), [0.5])


def test_impression_restatement_scores_own_findings_against_the_others():
    x, y, z = _unit([1, 0, 0], [0, 1, 0], [0, 0, 1])
    F = [np.stack([x]), np.stack([y]), np.stack([z]), np.zeros((0, 3))]
    I = [np.stack([x]), np.stack([_unit([1, 1, 0])[0]]), np.zeros((0, 3)), np.stack([z])]
    t = geometry.impression_restatement(F, I)
    assert t["report"].tolist() == [0, 1]  # report 2 has no Impression, report 3 no Findings
    assert t.loc[0, "own"] == pytest.approx(1.0) and t.loc[0, "beats_share"] == 1.0
    # report 1's Impression sits between x and y: as close to report 0's Findings as to its own
    assert t.loc[1, "own"] == pytest.approx(np.sqrt(0.5))
    assert t.loc[1, "beats_share"] == pytest.approx(0.5)  # beats z only, not x (a tie is not a win)
    with pytest.raises(ValueError):
        geometry.impression_restatement(F, I[:2])


def test_opposite_neighbours_keeps_pairs_read_with_opposite_polarity():
    sents = ["heart big", "heart normal", "lungs clear", "lungs clear too"]
    U = _unit([1, 0.2, 0], [1, -0.2, 0], [0, 0, 1], [0, 0.1, 1])
    labels = {"heart big": {"Cardiomegaly": 1}, "heart normal": {"Cardiomegaly": 0, "No Finding": 1},
              "lungs clear": {"No Finding": 1}, "lungs clear too": {"No Finding": 1, "Edema": 0}}
    out = geometry.opposite_neighbours(sents, U, labels.__getitem__)
    assert set(out["sentence"]) == {"heart big", "heart normal"}
    assert (out["observations"] == "Cardiomegaly").all()
    assert out.attrs["n_sentences"] == 4
    assert out["cosine"].is_monotonic_decreasing


def test_embedding_conclusion_reads_its_numbers_from_the_tables(tmp_path):
    pd.DataFrame([{"reports": 3, "sentences": 10, "unique sentences": 8, "sentences per unique": 1.25,
                   "encoder calls (warm)": 0}]).to_csv(tmp_path / "01_embedding_cache.csv", index=False)
    pd.DataFrame({"statistic": ["paraphrase_cosine", "nearest_median", "nearest_share_ge_0.9"],
                  "value": [0.8765, 0.5, 0.25]}).to_csv(tmp_path / "01_sentence_geometry.csv", index=False)
    pd.DataFrame([{"sentences": 7, "opposite": 2, "max_cosine": 0.777}]).to_csv(
        tmp_path / "01_opposite_neighbours.csv", index=False)
    text = "\n".join(geometry.embedding_conclusion(tmp_path))
    assert "10 sentences, 8 distinct (1.25" in text and "made 0 encoder calls" in text
    assert "cosine 0.88" in text and "25%" in text
    assert "2 of 7" in text and "0.78" in text
    assert "01_impression_restatement: not written" in text
    assert "better" not in text and "higher" not in text
    first = geometry.embedding_conclusion(tmp_path)[0]  # the answer opens the conclusion
    assert first.startswith("Answer: two unordered sets of sentence vectors, in which a paraphrase sits at cosine 0.88")
    assert "(2 of 7 distinct Findings sentences have a nearest neighbour of the opposite polarity)" in first


def test_build_cold_then_warm_encodes_once_and_tabulates(small_encoder, tmp_path):
    emb = SentenceEmbedder(small_encoder, cache_dir=tmp_path / "cache")
    bank, stats = bank_stats.build_cold_then_warm(emb, ["Heart normal. Lungs clear.", "Lungs clear."],
                                                  ["Normal.", "Normal."], ids=["a", "b"])
    s = stats.iloc[0]
    assert len(bank) == 2 and s["sentences"] == 5 and s["unique sentences"] == 3
    assert s["encoded at first build"] == 3 and s["encoder calls (warm)"] == 0
    t = bank_stats.bank_table(bank)
    assert t.loc["sentences", "findings"] == 3 and t.loc["mean per report", "impression"] == 1.0
    assert t.loc["dim", "findings"] == 384 and t.loc["empty sets"].sum() == 0


def test_build_cold_then_warm_fails_when_the_warm_build_encodes(small_encoder, tmp_path):
    class Leaky:  # an embedder whose cache never serves: every build reports encoder calls
        def __init__(self, e):
            self._e = e

        def __getattr__(self, name):
            return getattr(self._e, name)

        @property
        def stats(self):
            return {**self._e.stats, "forward_calls": 1}

    emb = Leaky(SentenceEmbedder(small_encoder, cache_dir=tmp_path / "cache"))
    with pytest.raises(EmbeddingError, match="warm re-build"):
        bank_stats.build_cold_then_warm(emb, ["Heart normal."], ["Normal."], ids=["a"])
