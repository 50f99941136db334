"""Presence with a side (issue 49): the labeler's mentions carry a side, presence rows fill side slots, and the
negation-aware cost and the recall family read a pertinent negative on the other side as agreement, a wrong side as
an omission plus a hallucination, "no new X" as nothing, a hedge as positive, and findings outside CheXpert's 14 as
findings; the bad inputs of the side reader have a defined result."""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.clinical import column, findings_of, label_mentions, label_report, sentence_presence
from sdrlib.clinical.labeler._sides import side_of
from sdrlib.distances import set_distance
from sdrlib.distances.engine import paired_distances
from sdrlib.distances.negation import check_presence, contradicted_sentences, coverage, self_contradicted
from sdrlib.distances.recall import recall_chamfer


def _sides(text: str) -> list[tuple[str, int, str]]:
    return sorted(tuple(m) for m in label_mentions(text))


@pytest.mark.parametrize("text, expected", [
    ("Small left pleural effusion.", [("Pleural Effusion", 1, "left")]),
    ("No pneumothorax on the left.", [("Pneumothorax", 0, "left")]),
    ("Consolidation in the right lower lobe.", [("Consolidation", 1, "right")]),
    ("Bibasilar atelectasis.", [("Atelectasis", 1, "bilateral")]),
    ("Small left and moderate right pleural effusions.", [("Pleural Effusion", 1, "bilateral")]),
    ("Opacities in both lungs.", [("Lung Opacity", 1, "bilateral")]),
    ("Discoid atelectasis at the lung bases.", [("Atelectasis", 1, "bilateral")]),  # the plural names both
    ("Blunting of the costophrenic angles.", [("Pleural Effusion", 1, "bilateral")]),
    ("No pleural effusion.", [("Pleural Effusion", 0, "unspecified")]),
    # the side stays with its own noun phrase
    ("No right pleural effusion or pneumothorax.", [("Pleural Effusion", 0, "right"), ("Pneumothorax", 0, "unspecified")]),
    ("Right basilar atelectasis and left pleural effusion.", [("Atelectasis", 1, "right"),
                                                             ("Pleural Effusion", 1, "left")]),
    # observations without a side stay unspecified
    ("Mild cardiomegaly on the left.", [("Cardiomegaly", 1, "unspecified")]),
    # a side the reader cannot place: unspecified, never a guess
    ("Retrocardiac opacity.", [("Lung Opacity", 1, "unspecified")]),
    ("Pleural effusion, left greater than right.", [("Pleural Effusion", 1, "unspecified")]),
])
def test_each_mention_has_its_side(text, expected):
    assert _sides(text) == sorted(expected)


@pytest.mark.parametrize("text, expected", [
    # "no new X" speaks of change: nothing for presence; the labels keep CheXpert's negative
    ("No new consolidation.", []),
    ("No new or worsening effusion.", []),
    ("No interval development of pneumothorax.", []),
    ("Persistent left lower lobe consolidation.", [("Consolidation", 1, "left")]),
    ("Stable mild cardiomegaly.", [("Cardiomegaly", 1, "unspecified")]),
    ("Interval decrease in right pleural effusion.", [("Pleural Effusion", 1, "right")]),
    ("Redemonstrated left basilar opacity.", [("Lung Opacity", 1, "left")]),
    ("Right pleural effusion has resolved.", [("Pleural Effusion", 0, "right")]),
    ("Resolution of the left pneumothorax.", [("Pneumothorax", 0, "left")]),
])
def test_temporal_phrases(text, expected):
    assert _sides(text) == sorted(expected)


def test_no_new_keeps_chexperts_negative_label_and_a_stated_finding_wins_at_report_level():
    assert label_report("No new consolidation.")["Consolidation"] == 0
    assert label_report("Persistent left lower lobe consolidation. No new consolidation.")["Consolidation"] == 1


def test_findings_outside_the_14_are_mentions_but_never_labels():
    assert _sides("Large hiatal hernia.") == [("Hernia", 1, "unspecified")]
    assert _sides("Free intraperitoneal air under the right hemidiaphragm.") == [("Pneumoperitoneum", 1, "unspecified")]
    assert _sides("No free air.") == [("Pneumoperitoneum", 0, "unspecified")]
    assert ("Device Malposition", 1, "right") in _sides("Endotracheal tube terminates in the right mainstem.")
    assert ("Subcutaneous Emphysema", 1, "left") in _sides("Subcutaneous emphysema in the left chest wall.")
    assert "Hernia" not in label_report("Large hiatal hernia.")


def test_presence_slots_and_the_hedge_convention():
    eff = [column("Pleural Effusion", s) for s in ("left", "right", "unspecified")]
    P = sentence_presence(["Small left pleural effusion.", "No right pleural effusion.", "No pleural effusion.",
                           "Possible pleural effusion.", "Bilateral pleural effusions."])
    assert P[0, eff].tolist() == [1, 0, 0] and P[1, eff].tolist() == [0, -1, 0]
    assert P[2, eff].tolist() == [-1, -1, -1] and P[3, eff].tolist() == [0, 0, 1] and P[4, eff].tolist() == [1, 1, 0]
    assert findings_of(P[0]) == {("Pleural Effusion", "left", 1)}


def test_a_pertinent_negative_on_the_other_side_is_no_contradiction_and_a_wrong_side_is_floored():
    ref = sentence_presence(["Small left pleural effusion.", "No right pleural effusion."])
    assert not self_contradicted(ref).any()
    r, s = contradicted_sentences(sentence_presence(["Small left pleural effusion."]), ref)
    assert r.tolist() == [0.0] and s.tolist() == [0.0, 0.0]
    r, s = contradicted_sentences(sentence_presence(["Small right pleural effusion."]), ref)
    assert r.tolist() == [1.0] and s.tolist() == [1.0, 1.0]  # contradicts the pertinent negative; wrong side
    r, s = contradicted_sentences(sentence_presence(["Small right pleural effusion."]),
                                  sentence_presence(["Small left pleural effusion."]))
    assert r.tolist() == [1.0] and s.tolist() == [1.0]  # no pertinent negative: still a wrong side
    # an unspecified positive matches either side; a child covers its parent
    r, s = contradicted_sentences(sentence_presence(["Pleural effusion."]), ref)
    assert r.tolist() == [0.0] and s.tolist() == [0.0, 0.0]
    cov, _ = coverage((sentence_presence(["Left basilar atelectasis."]) > 0).any(0))
    assert cov[column("Lung Opacity", "left")] and not cov[column("Lung Opacity", "right")]


def test_a_legacy_14_column_array_means_what_it_meant():
    P = np.zeros((1, 14), np.int8)
    P[0, 10] = -1  # Pleural Effusion, no side
    assert check_presence(P, 1, "P")[0, [30, 31, 32]].tolist() == [-1, -1, -1]


def _unit(n, d=8, seed=0):
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("alpha", [0.5, 0.75, 1.0])
def test_recall_repetition_never_pays_and_findings_are_counted(alpha):
    ref_txt = ["Mild cardiomegaly.", "Small left pleural effusion."]
    R, PR = _unit(2, seed=1), sentence_presence(ref_txt)
    one = sentence_presence(["Mild cardiomegaly."])
    A = R[:1]
    base, _ = recall_chamfer(A, R, one, PR, alpha)
    rep, _ = recall_chamfer(np.repeat(A, 10, 0), R, np.repeat(one, 10, 0), PR, alpha)
    assert rep == pytest.approx(base)
    # a sentence with two hallucinated findings costs more than one with one
    h1 = sentence_presence(["Large hiatal hernia."])
    h2 = sentence_presence(["Large hiatal hernia and free intraperitoneal air."])
    G = np.vstack([R, _unit(1, seed=5)])
    d1, _ = recall_chamfer(G, R, np.vstack([PR, h1]), PR, alpha)
    d2, _ = recall_chamfer(G, R, np.vstack([PR, h2]), PR, alpha)
    assert d2 > d1 > 0
    # the engine (the reward's path) agrees with the reference
    got = paired_distances([np.repeat(A, 10, 0), G], [R, R], f"chamfer_recall_{alpha:g}",
                           presence=([np.repeat(one, 10, 0), np.vstack([PR, h2])], [PR, PR]))
    assert got == pytest.approx([rep, d2], abs=1e-12)


def test_engine_equals_reference_on_random_side_aware_presence():
    rng = np.random.default_rng(3)
    width = sentence_presence(["x"]).shape[1]
    pres = lambda n: (rng.integers(-1, 2, size=(n, width)) * (rng.random((n, width)) < 0.05)).astype(np.int8)  # noqa
    A = [_unit(int(n), seed=10 + i) for i, n in enumerate(rng.integers(1, 6, 12))]
    B = [_unit(int(n), seed=40 + i) for i, n in enumerate(rng.integers(1, 6, 12))]
    PA, PB = [pres(len(a)) for a in A], [pres(len(b)) for b in B]
    for name in ("chamfer_neg", "hung_nn_neg", "ot_neg", "sinkhorn_0.1_neg", "chamfer_recall_0.75"):
        got = paired_distances(A, B, name, presence=(PA, PB))
        ref = [set_distance(a, b, name, presence=(pa, pb)) for a, b, pa, pb in zip(A, B, PA, PB)]
        assert got == pytest.approx(ref, abs=1e-9), name


def test_bad_side_input_has_a_defined_result():
    # "left and right" in one sentence: bilateral, for each finding that phrase governs
    assert _sides("Left and right pleural effusions.") == [("Pleural Effusion", 1, "bilateral")]
    # a side word with no finding: no mention; a side the reader cannot place: unspecified
    assert _sides("The left lung is clear.") == []
    assert side_of("effusion", 0, 8, [(0, 8)]) == "unspecified"
    # a 20 kB run-on with hundreds of sides: read, every mention placed, no hang
    runon = "Small left pleural effusion and right pneumothorax, " * 400
    assert len(runon) > 20_000
    m = label_mentions(runon)
    assert len(m) == 800 and {x.side for x in m} == {"left", "right"}
    assert sentence_presence([runon]).shape == (1, 63)


def test_probe_pass_fixes_helpers_name_bad_widths_and_values():
    """The probe pass over this wave's surfaces (tests/probes/presence_sides.py) found these; each now behaves."""
    from sdrlib.clinical import PresenceInputError, observation_presence
    from sdrlib.data.records import DataError
    from sdrlib.data.synthcxr.language import phenomenon_rates
    from sdrlib.distances.errors import DistanceInputError
    from sdrlib.distances.negation import wrong_slots
    from sdrlib.metrics.verdict import VerdictInputError, family_directions

    assert _sides("Pleural effusions on the left and right.") == [("Pleural Effusion", 1, "bilateral")]
    with pytest.raises(PresenceInputError, match="unknown side slot 'middle'"):
        column("Pleural Effusion", "middle")
    with pytest.raises(PresenceInputError, match="unknown finding"):
        column("Effusion", "left")
    legacy = np.zeros(14, np.int8)
    legacy[10] = 1  # Pleural Effusion, no side
    assert findings_of(legacy) == {("Pleural Effusion", "unspecified", 1)}
    assert observation_presence(legacy[None, :]).tolist() == legacy[None, :].tolist()
    with pytest.raises(PresenceInputError, match="63 columns"):
        observation_presence(np.ones((2, 20), np.int8))
    with pytest.raises(DistanceInputError, match="63 columns"):
        coverage(np.ones(14, bool))
    with pytest.raises(DistanceInputError, match="both sides"):
        wrong_slots(np.zeros((1, 63)), np.zeros((1, 14)))
    import pandas as pd

    with pytest.raises(VerdictInputError, match="p-values"):
        family_directions(pd.DataFrame({"diff": [0.1], "ci_low": [0.05], "ci_high": [0.2], "p_value": ["abc"]}))
    with pytest.raises(DataError, match="not one string"):
        phenomenon_rates("Small left effusion.")
