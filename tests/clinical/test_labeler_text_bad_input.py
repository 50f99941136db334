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


@pytest.mark.parametrize("text", ["Pas de pneumothorax. Pas d'epanchement pleural. Silhouette cardiaque normale.",
                                  "Kein Pneumothorax.", "Large right pneumothorax. Pas d'epanchement pleural."])
def test_text_in_another_language_is_not_stated_with_a_warning_never_no_finding(text):
    """Before: a French report came back {"No Finding": 1}, a normal study, without a word."""
    from sdrlib.clinical.labeler import UnreadableTextWarning, label_mentions

    with pytest.warns(UnreadableTextWarning, match="another language"):
        labels = label_report(text)
    assert "No Finding" not in labels
    assert not any(v == 1 for k, v in labels.items() if k != "Pneumothorax")
    with pytest.warns(UnreadableTextWarning):
        label_mentions(text)


def test_english_text_keeps_its_no_finding_and_warns_nothing():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert label_report("No pneumothorax.") == {"Pneumothorax": 0, "No Finding": 1}


@pytest.mark.parametrize("text, expect", [
    ("<script>var msg = 'no'</script>Large right pneumothorax.", {"Pneumothorax": 1, "No Finding": None}),
    ("<script type='text/javascript'>if (a < b) { no(); }</script><p>Moderate cardiomegaly.</p>",
     {"Cardiomegaly": 1, "No Finding": None}),
    ("<style>.no { color: red }</style>Small left pleural effusion.", {"Pleural Effusion": 1}),
    ("<!-- no acute findings --> Mild pulmonary edema.", {"Edema": 1}),
    ("<script>pneumothorax()</script>No acute cardiopulmonary process.", {"Pneumothorax": None}),
])
def test_script_style_and_comments_go_with_their_content(text, expect):
    """Before: a script element's text was read as report text ("var msg = 'no'" negated the pneumothorax after it:
    {"No Finding": 1, "Pneumothorax": 0})."""
    labels = label_report(text)
    assert {k: labels.get(k) for k in expect} == expect, labels
