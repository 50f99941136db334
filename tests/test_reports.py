"""Sections, sentence splitting and the think/answer template (paper sec. 3.1-3.2)."""

from __future__ import annotations

import time

import pytest

from sdrlib.reports import (ReportTextError, Sections, build_template, format_reward, parse_template,
                            split_report, split_sentences)

MIMIC = """                                 FINAL REPORT
 EXAMINATION:  CHEST (PA AND LAT)

 INDICATION:  ___F with cough  // ?pna

 COMPARISON:  ___

 FINDINGS:

 PA and lateral views of the chest provided.  There is no focal consolidation,
 effusion, or pneumothorax.  The cardiomediastinal silhouette is normal.

 IMPRESSION:

 No acute intrathoracic process.
"""


# --------------------------------------------------------------------------- sections
def test_mimic_layout():
    s = split_report(MIMIC)
    assert s.impression == "No acute intrathoracic process."
    assert s.findings.startswith("PA and lateral views of the chest provided. There is no focal consolidation,")
    assert "INDICATION" not in s.findings and "___F" not in s.findings


@pytest.mark.parametrize("text, expected", [
    ("Findings: Lungs clear. Impression: Normal.", Sections("Lungs clear.", "Normal.")),
    ("FINDINGS: Lungs clear.\nIMPRESSION: Normal.", Sections("Lungs clear.", "Normal.")),
    ("findings:lungs clear. impression:normal.", Sections("lungs clear.", "normal.")),
    ("IMPRESSION: 1. No acute process. 2. Small effusion.", Sections("", "1. No acute process. 2. Small effusion.")),
    ("FINDINGS: Lungs clear.", Sections("Lungs clear.", "")),
    ("The lungs are clear.", Sections("The lungs are clear.", "")),
    ("", Sections("", "")),
    ("   \n\t ", Sections("", "")),
    ("FINDINGS AND IMPRESSION: No change.", Sections("No change.", "")),
    ("CONCLUSION: Stable.", Sections("", "Stable.")),
    ("FINDINGS: A. IMPRESSION: B. RECOMMENDATION(S): Follow-up CT.", Sections("A.", "B.")),
    ("FINDINGS: A.\nIMPRESSION:\nFINDINGS: C.", Sections("A. C.", "")),
])
def test_split_report_layouts(text, expected):
    assert split_report(text) == expected


def test_split_report_bad_input():
    with pytest.raises(ReportTextError, match="report"):
        split_report(None)  # type: ignore[arg-type]
    with pytest.raises(ReportTextError, match="not valid UTF-8"):
        split_report(b"FINDINGS: \xff\xfe clear")
    assert split_report("FINDINGS: Cl\u00e9ar. IMPRESSION: ok.".encode("utf-8")).findings == "Cl\u00e9ar."


# --------------------------------------------------------------------------- sentences
@pytest.mark.parametrize("text, expected", [
    ("The heart is enlarged. No pneumothorax.", ["The heart is enlarged.", "No pneumothorax."]),
    ("Nodule measures approx. 15.5 cm. No effusion.", ["Nodule measures approx. 15.5 cm.", "No effusion."]),
    ("There is a 1.2 cm nodule. Heart size normal.", ["There is a 1.2 cm nodule.", "Heart size normal."]),
    ("1. No acute process. 2. Small left effusion.", ["No acute process.", "Small left effusion."]),
    ("1) Mild edema. 2) Cardiomegaly.", ["Mild edema.", "Cardiomegaly."]),
    ("Dr. XXXX was notified at 3:45 p.m. on ___. Lungs are clear.",
     ["Dr. XXXX was notified at 3:45 p.m. on ___.", "Lungs are clear."]),
    ("Comparison to ___. No change.", ["Comparison to ___.", "No change."]),
    ("No pneumothorax. .", ["No pneumothorax."]),
    (". . 12.", []),
    ("", []),
    ("Lungs are clear", ["Lungs are clear"]),
    ("Heart normal.\n\nNo effusion", ["Heart normal.", "No effusion"]),
    ("The lungs\nare clear.  No\neffusion.", ["The lungs are clear.", "No effusion."]),
    ("Findings e.g. edema vs. atelectasis are noted. Stable.", ["Findings e.g. edema vs. atelectasis are noted.", "Stable."]),
    ("Épanchement pleural. 肺野清晰。", ["Épanchement pleural.", "肺野清晰。"]),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_split_sentences_long_report_is_fast_and_complete():
    text = "The lungs are clear. " * 5000  # ~100k characters
    t0 = time.process_time()
    out = split_sentences(text)
    assert len(out) == 5000 and set(out) == {"The lungs are clear."}
    assert time.process_time() - t0 < 60  # guard against pysbd's superlinear blow-up, not a benchmark


def test_split_sentences_rejects_non_text():
    with pytest.raises(ReportTextError):
        split_sentences(3.5)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- template
VALID = [
    "<think> Lungs clear. </think> <answer> Normal. </answer>",
    "<think>Lungs clear.</think><answer>Normal.</answer>",
    "\n <think>\nA.\n</think>\n\n<answer>B</answer>\n",
]
INVALID = {
    "no tags": "Lungs clear. Normal.",
    "empty string": "",
    "whitespace only": "   ",
    "only think": "<think> A </think>",
    "only answer": "<answer> B </answer>",
    "reordered": "<answer> B </answer> <think> A </think>",
    "repeated think": "<think> A </think> <think> A2 </think> <answer> B </answer>",
    "repeated answer": "<think> A </think> <answer> B </answer> <answer> C </answer>",
    "nested": "<think> A <think> x </think> </think> <answer> B </answer>",
    "answer inside think": "<think> A <answer> B </answer> </think>",
    "unclosed think": "<think> A <answer> B </answer>",
    "unclosed answer": "<think> A </think> <answer> B",
    "empty think": "<think></think> <answer> B </answer>",
    "whitespace think": "<think> \n </think> <answer> B </answer>",
    "whitespace answer": "<think> A </think> <answer>   </answer>",
    "closing before opening": "</think> A <think> <answer> B </answer>",
    "text before": "Sure! <think> A </think> <answer> B </answer>",
    "text between": "<think> A </think> and <answer> B </answer>",
    "text after": "<think> A </think> <answer> B </answer> done",
    "upper-case tags": "<THINK> A </THINK> <ANSWER> B </ANSWER>",
    "bytes not utf-8": b"<think> \xff </think> <answer> B </answer>",
    "none": None,
}


@pytest.mark.parametrize("text", VALID)
def test_valid_template(text):
    assert format_reward(text) == 1.0
    assert parse_template(text) is not None


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_template(case):
    assert format_reward(INVALID[case]) == 0.0
    assert parse_template(INVALID[case]) is None


def test_template_round_trip_normalises_whitespace():
    t = build_template("Heart  normal.\nNo effusion.", " No acute process. ")
    assert t == "<think> Heart normal. No effusion. </think> <answer> No acute process. </answer>"
    assert parse_template(t) == Sections("Heart normal. No effusion.", "No acute process.")


@pytest.mark.parametrize("f, i", [("", "x"), ("x", "  "), ("a </think> b", "x"), ("x", "<answer>")])
def test_build_template_refuses_unparseable(f, i):
    with pytest.raises(ReportTextError):
        build_template(f, i)
