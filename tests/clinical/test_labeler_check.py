"""sdrlib.clinical.labeler_check: notebook 00's labeler evaluation."""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from sdrlib.clinical.labeler_check import MICRO, labeler_mistakes, labeler_summary, labeler_tables

SENTENCES = pd.DataFrame({
    "set": ["dev", "dev", "heldout", "heldout"],
    "text": ["The heart is enlarged.", "No pleural effusion.",
             "Right basilar opacity may represent pneumonia.", "Sternal wires are in place."],
    "labels": ["Cardiomegaly:1", "Pleural Effusion:0", "Lung Opacity:1;Pneumonia:-1", "Support Devices:1"],
})


def test_labeler_tables_one_table_per_source():
    recs = [SimpleNamespace(findings="The heart is enlarged.", impression="Cardiomegaly.",
                            labels={"Cardiomegaly": 1})]
    t = labeler_tables(SENTENCES, recs)
    assert list(t) == ["synthetic test", "sentences (dev)", "sentences (heldout)"]
    assert MICRO in t["sentences (dev)"].index
    assert t["sentences (dev)"].loc["Cardiomegaly", "recall_pos"] == 1.0
    assert "synthetic test" not in labeler_tables(SENTENCES)


def test_labeler_summary_leaves_the_pooled_row_out():
    t = pd.DataFrame({"accuracy": [1.0, 0.5, 0.75]}, index=["Edema", "Fracture", MICRO])
    line = labeler_summary("x", t)
    assert line == "x: mean accuracy over the 2 observations 0.750, lowest 0.500 (Fracture); 1 of 2 with an error"


def test_labeler_mistakes_lists_disagreements_whole_and_flags_missed_hedges(monkeypatch):
    import sdrlib.clinical.labeler_check as lc

    fake = {SENTENCES.text[0]: {"Cardiomegaly": 1},                     # right
            SENTENCES.text[1]: {"Pleural Effusion": 0, "No Finding": 1},  # right (No Finding by convention)
            SENTENCES.text[2]: {"Lung Opacity": 1, "Pneumonia": 1},      # hedge missed
            SENTENCES.text[3]: {"No Finding": 1}}                        # device missed
    monkeypatch.setattr(lc, "label_report", fake.__getitem__)
    m = labeler_mistakes(SENTENCES)
    assert m["text"].tolist() == [SENTENCES.text[2], SENTENCES.text[3]]  # whole texts, frame order
    assert m["hedge_missed"].tolist() == [True, False]
    assert m.loc[0, "gold"] == {"Lung Opacity": 1, "Pneumonia": -1}
