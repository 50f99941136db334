"""Hedges toward absence ("unlikely", "less likely", "doubtful", "not likely", "unlikely to represent") read as absent
under one convention shared by the labels and reward presence (point 14 of sdrlib.clinical.labeler's docstring;
docs/paper_map.md beside the hedge convention). Before: each was labelled positive (presence +1), so every reward,
G-CARL's pitfall item and the clinical F1 counted it as a finding."""

from __future__ import annotations

import pytest

from sdrlib.clinical.labeler import label_mentions, label_report
from sdrlib.clinical.presence import column, sentence_presence

ABSENT = [("Pneumothorax is unlikely.", "Pneumothorax"), ("Pneumonia is less likely.", "Pneumonia"),
          ("Doubtful small left pleural effusion.", "Pleural Effusion"),
          ("Findings unlikely to represent pneumonia.", "Pneumonia"), ("Pneumonia is not likely.", "Pneumonia"),
          ("Pneumothorax unlikely.", "Pneumothorax"), ("Edema is very unlikely.", "Edema"),
          ("Pneumothorax: unlikely.", "Pneumothorax")]


@pytest.mark.parametrize("text, finding", ABSENT)
def test_a_hedge_toward_absence_is_absent_in_labels_and_presence(text, finding):
    assert label_report(text)[finding] == 0
    assert label_report(text).get("No Finding") == 1
    row = sentence_presence([text])[0]
    f_cols = [column(finding, s) for s in ("left", "right", "unspecified")]
    assert (row[f_cols] <= 0).all() and (row[f_cols] == -1).any()      # never +1: absent on its side(s)
    assert all(m.status == 0 for m in label_mentions(text) if m.observation == finding)


@pytest.mark.parametrize("text, expect", [
    ("Pneumothorax is likely.", {"Pneumothorax": -1}),                       # toward presence: uncertain
    ("Possible pneumonia.", {"Pneumonia": -1}),
    ("Atelectasis or less likely pneumonia.", {"Atelectasis": 1, "Pneumonia": -1}),   # a differential
    ("Small left pleural effusion, pneumothorax is unlikely.", {"Pleural Effusion": 1, "Pneumothorax": 0}),
    ("Right lower lobe opacity; infection is considered less likely.", {"Lung Opacity": 1, "Pneumonia": 0}),
    ("Opacity, unlikely to represent pneumonia.", {"Lung Opacity": 1, "Pneumonia": 0}),
])
def test_the_opposites_keep_their_reading(text, expect):
    labels = label_report(text)
    assert {k: labels.get(k) for k in expect} == expect, labels
