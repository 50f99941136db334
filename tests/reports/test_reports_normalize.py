"""The one text normaliser (``normalize_text``) and its two documented variants, each with the difference it
exists for: ``normalize_sentence`` (R_exact's comparison form) and ``normalize_ascii`` (the labeler's input)."""

from __future__ import annotations

import pytest

from sdrlib.clinical.labeler import _normalize
from sdrlib.reports import normalize_ascii, normalize_sentence, normalize_text, split_sentences
from sdrlib.rewards import exact_match_section


def test_normalize_text_is_nfc_and_white_space():
    assert normalize_text(" No\n  effusion.\u00a0") == "No effusion."
    assert normalize_text("e\u0301de\u0300me") == "\u00e9d\u00e8me"            # NFC composes
    assert normalize_text("e\u0301de\u0300me", form=None) == "e\u0301de\u0300me"  # form=None leaves it
    assert normalize_text("\tA\u2003 B\u3000", form=None) == "A B"


@pytest.mark.parametrize("a, b", [("No  effusion.", "no effusion"), ("Heart is normal;  ", "heart is normal"),
                                  ("LUNGS CLEAR!?", "lungs clear"), ("Stable.\n", "stable")])
def test_normalize_sentence_compares_case_space_and_end_punctuation_away(a, b):
    assert normalize_sentence(a) == b == normalize_sentence(b)
    assert normalize_sentence("No effusion, small.") != normalize_sentence("No effusion small.")  # inner punct stays
    assert exact_match_section(a, b) == 1.0


def test_normalize_sentence_keeps_split_sentences_output_form():
    text = "Caf\u00e9 is open. No e\u0301dema."
    for s in split_sentences(text):
        assert normalize_sentence(s) == normalize_text(s).lower().rstrip(".")


def test_normalize_ascii_keeps_lines_for_the_labeler():
    assert normalize_ascii("\u00c9panchement\u00a0 pleural\nPneumothorax:  none") == "Epanchement pleural\nPneumothorax: none"
    assert normalize_ascii("\uff25\ufb01 x") == "Efi x"                        # full-width and ligature fold
    assert _normalize("| Pneumothorax | none |\nEffusion \u2013 small") == "Pneumothorax: none.\nEffusion - small"
    assert "\n" not in normalize_text("a\nb") and "\n" in normalize_ascii("a\nb")
