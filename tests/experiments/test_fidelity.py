"""sdrlib.experiments.fidelity: label disagreement, pair sampling, the batched fidelity analysis, identical-set floors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from sdrlib.experiments.fidelity import (FidelityError, identical_floor, label_disagreement, pair_distances,
                             sample_pairs, fidelity_analysis)

OBS = ["Edema", "Pleural Effusion", "Pneumothorax", "Cardiomegaly", "Atelectasis"]
WORDS = {"Edema": "Pulmonary edema.", "Pleural Effusion": "Pleural effusion.", "Pneumothorax": "Pneumothorax.",
         "Cardiomegaly": "Cardiomegaly.", "Atelectasis": "Atelectasis."}


@dataclass
class _Rec:
    findings: str
    impression: str
    labels: dict | None


class _OneHot:
    """Each distinct sentence gets its own basis vector: set distances then track which findings differ."""

    def __init__(self):
        self.ids = {}

    def encode_sections(self, texts):
        from sdrlib.reports import split_sentences

        out = []
        for t in texts:
            ss = split_sentences(t)
            rows = np.zeros((len(ss), 64))
            for k, s in enumerate(ss):
                rows[k, self.ids.setdefault(s, len(self.ids))] = 1.0
            out.append(rows)
        return out


def _records(n=60, seed=0, labels=True):
    rng = np.random.default_rng(seed)
    recs = []
    for _ in range(n):
        pos = [o for o in OBS if rng.random() < 0.3]
        f = " ".join(WORDS[o] for o in pos) or "The lungs are clear."
        lab = {o: 1 for o in pos} or {"No Finding": 1}
        recs.append(_Rec(f, "Normal." if not pos else "", lab if labels else None))
    return recs


def test_label_disagreement_values_and_uncertain_counts_positive():
    d = label_disagreement([{"Edema": 1}, {}, {"No Finding": 1}, {"Edema": 1, "Fracture": 0}],
                           [{"Edema": -1, "Fracture": 1}, {}, {"No Finding": 1}, {"Pneumonia": 1}])
    np.testing.assert_allclose(d.jaccard, [0.5, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(d.hamming, [1 / 14, 0.0, 0.0, 2 / 14])
    with pytest.raises(FidelityError):
        label_disagreement([{}], [])


def test_sample_pairs_distinct_seeded_and_exhaustive():
    p = sample_pairs(50, 200, seed=3)
    assert p.shape == (200, 2) and (p[:, 0] < p[:, 1]).all() and len({tuple(r) for r in p}) == 200
    np.testing.assert_array_equal(p, sample_pairs(50, 200, seed=3))
    assert not np.array_equal(p, sample_pairs(50, 200, seed=4))
    assert len(sample_pairs(5, 100)) == 10
    for bad in ((1, 5), (10, 0), (10, True)):
        with pytest.raises(FidelityError):
            sample_pairs(*bad)


def test_pair_distances_sums_sections_and_handles_empty_ones():
    emb = _OneHot()
    F = emb.encode_sections(["Edema.", "Edema.", "Effusion."])
    I = emb.encode_sections(["", "", "Normal."])
    d = pair_distances(F, I, np.array([[0, 1], [0, 2]]), ["chamfer", "ot"])
    # pair (0, 1): same Findings, Impression empty in both -> 0; pair (0, 2): orthogonal (0.5) + one empty (1)
    np.testing.assert_allclose(d["chamfer"], [0.0, 1.5])
    np.testing.assert_allclose(d["ot"], [0.0, 2.0])  # M~ of orthogonal singletons is 1


def test_fidelity_analysis_tracks_labels_with_cis_and_strata():
    recs = _records()
    res = fidelity_analysis(recs, _OneHot(), ["chamfer", "hung_nn_neg", "gw"], n_pairs=400, n_boot=50, seed=0)
    assert res.labels_source == "dataset"
    t = res.table
    assert set(t.stratum) == {"all", "no_finding", "single", "multi"} and set(t.target) == {"jaccard", "hamming"}
    assert (t.labels_source == "dataset").all()
    row = t[(t.setting == "chamfer") & (t.target == "jaccard") & (t.stratum == "all")].iloc[0]
    assert row.n_pairs == 400 and row.spearman > 0.5 and row.kendall > 0.4
    assert row.spearman_lo <= row.spearman <= row.spearman_hi and row.kendall_lo <= row.kendall <= row.kendall_hi
    # a pair is in a stratum when both reports are; counts add up with the mixed pairs
    counts = t[(t.setting == "chamfer") & (t.target == "jaccard")].set_index("stratum").n_pairs
    assert counts["no_finding"] + counts["single"] + counts["multi"] + (res.pairs.stratum == "mixed").sum() == 400
    nf = res.pairs[res.pairs.stratum == "no_finding"]
    assert (nf.jaccard == 0).all()  # two normal reports agree on No Finding
    # same seed, same table
    again = fidelity_analysis(recs, _OneHot(), ["chamfer", "hung_nn_neg", "gw"], n_pairs=400, n_boot=50, seed=0)
    pd.testing.assert_frame_equal(res.table, again.table)


def test_fidelity_analysis_labels_with_the_offline_labeler_when_labels_are_missing():
    recs = _records(labels=False)
    res = fidelity_analysis(recs, _OneHot(), ["chamfer"], n_pairs=100, n_boot=0)
    assert res.labels_source.startswith("offline labeler")
    assert (res.table.labels_source == res.labels_source).all()
    assert res.table.spearman_lo.isna().all()  # n_boot = 0: no intervals
    assert res.table.query("stratum == 'all' and target == 'jaccard'").spearman.iloc[0] > 0.5


@pytest.mark.parametrize("kw", [dict(ci=1.5), dict(ci=95), dict(n_boot=-1), dict(names=[]), dict(n_pairs=0)])
def test_fidelity_analysis_refuses_bad_parameters(kw):
    with pytest.raises(FidelityError):
        fidelity_analysis(_records(10), _OneHot(), **{"names": ["chamfer"], **kw})


def test_identical_floor_zero_for_exact_families_positive_for_entropic():
    fl = identical_floor(["chamfer", "ot", "hung_nn_neg", "gw", "sinkhorn_0.5", "sinkhorn_0.1_raw"],
                         sizes=(1, 2, 6), dim=32, n_sets=5)
    m = fl.pivot(index="setting", columns="size", values="mean")
    assert (m.loc[["chamfer", "ot", "hung_nn_neg"]] < 1e-12).all().all()  # round-off of a.a = 1
    assert m.loc["gw", 1] == 1.0 and m.loc["gw", 2] == pytest.approx(0.5, abs=0.01)  # GW fallback; 2-point plan
    assert m.loc["sinkhorn_0.5", 1] == 0 and 0 < m.loc["sinkhorn_0.5", 2] < m.loc["sinkhorn_0.5", 6]
    assert m.loc["sinkhorn_0.1_raw", 6] > 0
    assert set(fl.origin) == {"paper", "sdr extension"}
    with pytest.raises(FidelityError):
        identical_floor(["ot"], sizes=(0,))
