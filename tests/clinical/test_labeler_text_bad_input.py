"""Report text as it arrives (bad input round five): markup is stripped before labelling, so a negation never
crosses a paragraph; text in another language is not read, so it is never a positive finding."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from sdrlib.clinical.labeler import label_report
from sdrlib.clinical.labeler._text import _foreign, _markup, _normalize, _sentences

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "labeler_sentences.csv"


@pytest.mark.parametrize("text, expect", [
    ("<p>No pneumothorax.</p><br/><b>Small left pleural effusion</b>", {"Pneumothorax": 0, "Pleural Effusion": 1}),
    ("<div>No pneumothorax</div><div>Small left pleural effusion</div>", {"Pneumothorax": 0, "Pleural Effusion": 1}),
    ("<ul><li>No edema</li><li>Mild cardiomegaly</li></ul>", {"Edema": 0, "Cardiomegaly": 1}),
    ("Heart &amp; lungs: no edema.", {"Edema": 0}),
    ("<span class='x'>Mild <i>cardiomegaly</i></span>.", {"Cardiomegaly": 1}),
])
def test_markup_is_stripped_before_labelling(text, expect):
    labels = label_report(text)
    assert {k: labels.get(k) for k in expect} == expect


def test_text_without_markup_is_untouched():
    for t in ("Nodule measures <1 cm.", "AP & lateral views.", "a < b > c"):
        assert _markup(t) == t


@pytest.mark.parametrize("text", ["Pas de pneumothorax.", "Absence d'epanchement pleural.", "Kein Pneumothorax.",
                                  "Sin cardiomegalia.", "Sem pneumotorax.", "Nessun pneumotorace.",
                                  "Geen pneumothorax.", "Le coeur est de taille normale et la cardiomegalie absente."])
def test_another_language_is_never_a_positive(text):
    labels = label_report(text)
    assert not any(v == 1 for k, v in labels.items() if k != "No Finding"), labels
    assert all(k == "No Finding" for k in labels), labels      # not stated at all


def test_english_sentences_are_never_taken_for_another_language():
    rows = list(csv.DictReader(FIXTURE.open(encoding="utf-8")))
    flagged = [r["text"] for r in rows for s in _sentences(_normalize(r["text"])) if _foreign(s)]
    assert flagged == []
    for s in ("No pneumothorax.", "Pneumothorax.", "Sine wave artifact.", "Mild cardiomegaly without edema.",
              "No pleural effusion or pneumothorax is seen.", "Et tube in good position."):
        assert not _foreign(_normalize(s)), s
