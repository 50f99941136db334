"""Sections, sentence splitting and the think/answer template (paper sec. 3.1-3.2)."""

from __future__ import annotations

import random
import unicodedata

import pytest

from sdrlib import reports
from sdrlib.reports import (ReportTextError, Sections, build_template, is_blank, parse_template,
                            split_report, split_sentences)
from sdrlib.rewards import FORMAT_MODES, RewardError, format_reward

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


@pytest.mark.parametrize("text, expected", [
    # a header word inside a sentence is text, not a header (was: Findings "No change from", rest dropped)
    ("FINDINGS: No change from history: stable. IMPRESSION: Normal.",
     Sections("No change from history: stable.", "Normal.")),
    ("My impression: clear lungs", Sections("My impression: clear lungs", "")),  # was: Findings "My"
    ("FINDINGS: The exam: limited by motion. IMPRESSION: Clinical history: cough, no pneumonia.",
     Sections("The exam: limited by motion.", "Clinical history: cough, no pneumonia.")),
    ("Lungs clear, unlike the prior findings: stable.", Sections("Lungs clear, unlike the prior findings: stable.", "")),
    # header positions: start of text / line, after a sentence end (. ! ? ;)
    ("INDICATION: Cough.\nHISTORY: Smoker.\nTECHNIQUE: PA and lateral.\nCOMPARISON: None.\n"
     "FINDINGS: Lungs clear.\nIMPRESSION: Normal.", Sections("Lungs clear.", "Normal.")),
    ("FINDINGS:\n  Lungs clear.\n\nIMPRESSION:\n  Normal.\n", Sections("Lungs clear.", "Normal.")),
    ("Findings: Lungs clear! Impression: Normal? Conclusion: Stable.", Sections("Lungs clear!", "Normal? Stable.")),
    ("COMPARISON: None. FINDINGS: Lungs clear; IMPRESSION: Normal.", Sections("Lungs clear;", "Normal.")),
    ("COMPARISON: FINDINGS: Lungs clear.", Sections("", "")),  # not a header position: COMPARISON's text
    ("Findings and Impression: Clear lungs. Stable heart.", Sections("Clear lungs. Stable heart.", "")),
    ("findings and impressions:\nClear.", Sections("Clear.", "")),
    ("FINDINGS: Clear. History: cough.", Sections("Clear.", "")),  # "History:" at a sentence start is a header
    ("IMPRESSION: 1. No acute process. 2. Stable.", Sections("", "1. No acute process. 2. Stable.")),
])
def test_split_report_headers_only_at_header_positions(text, expected):
    assert split_report(text) == expected


def test_split_report_keeps_all_section_text():
    """Every word after FINDINGS: up to the next real header stays, whatever header words it contains."""
    words = ["history", "impression", "findings", "comparison", "technique", "exam", "indication"]
    for w in words:
        body = f"Stable compared with the {w}: no change, and the {w.upper()}: same."
        s = split_report(f"FINDINGS: {body}\nIMPRESSION: Normal.")
        assert s == Sections(body, "Normal."), w


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


def test_split_sentences_long_report_is_complete():
    text = "The lungs are clear. " * 5000  # ~100k characters
    out = split_sentences(text)
    assert len(out) == 5000 and set(out) == {"The lungs are clear."}


def _varied_text(kind: str, n: int, seed: int = 0) -> str:
    """~n characters of distinct sentences (distinct, so the chunk cache cannot hide the work)."""
    rng = random.Random(seed)
    out, size = [], 0
    while size < n:
        k = rng.randrange(10**6)
        s = {
            "report": rng.choice([f"Heart size {k} is normal. ", f"No. {k % 9 + 1} effusion. ",
                                  f"Dr. X{k} was notified at 3:45 p.m. today. ", f"Nodule approx. {k % 50}.5 cm. "]),
            "lower": f"the lung {k} is clear. ",       # no capital after a period: pysbd's worst case
            "tiny": f"a{k}. b. ",                      # very many very short sentences
            "no_punct": f"word{k} ",                   # no sentence end at all
            "no_space": f"x{k}",                       # not even a space
        }[kind]
        out.append(s)
        size += len(s)
    return "".join(out)[:n]


@pytest.mark.parametrize("kind", ["report", "lower", "tiny", "no_punct", "no_space"])
def test_split_sentences_feeds_pysbd_bounded_pieces(kind, monkeypatch):
    """Linear cost: pysbd (superlinear in its input) only sees pieces of at most _CHUNK characters,
    which together cover the whole 200 kB text (no text lost, nothing segmented twice)."""
    seen: list[str] = []
    real = reports._segmenter()

    class Recording:
        def segment(self, text):
            seen.append(text)
            return real.segment(text)

    monkeypatch.setattr(reports, "_segmenter", lambda: Recording())
    reports._segment_cached.cache_clear()
    text = _varied_text(kind, 200_000)
    out = split_sentences(text)
    assert seen and max(map(len, seen)) <= reports._CHUNK
    squeeze = lambda t: "".join(t.split()).replace(reports._DOT, ".")  # noqa: E731
    assert squeeze("".join(seen)) == squeeze(text)  # the pieces are the text, in order
    if kind in ("report", "lower", "tiny"):
        assert squeeze("".join(out)) == squeeze(text)  # every character lands in a sentence
    reports._segment_cached.cache_clear()


def test_split_sentences_chunking_does_not_change_sentences(monkeypatch):
    """On ordinary report text the pieces are cut where pysbd splits anyway: same result as one call."""
    sents = ["The lungs are clear.", "Heart size is normal.", "There is a 1.2 cm nodule in the right upper lobe.",
             "Dr. XXXX was notified at 3:45 p.m. on ___.", "Nodule measures approx. 15.5 cm.",
             "Findings e.g. edema vs. atelectasis are noted.", "Is there free air?",
             "Lines are unchanged; the ET tube tip is 4 cm above the carina.", "No. 2 rib fracture is old."]
    rng = random.Random(7)
    picked = [rng.choice(sents) for _ in range(400)]  # ~14 kB, 14+ pieces
    text = " ".join(picked)
    assert len(reports._chunks(text)) > 10
    reports._segment_cached.cache_clear()
    chunked = split_sentences(text)
    monkeypatch.setattr(reports, "_CHUNK", 10**9)
    reports._segment_cached.cache_clear()
    whole = split_sentences(text)
    reports._segment_cached.cache_clear()
    assert chunked == whole == picked


@pytest.mark.parametrize("ch", ["\ue000", "\ue001", "\udfff", "\uf8ff", "\uf900", "\U000f0000", "\U0010fffd"])
def test_split_sentences_keeps_private_use_characters(ch):
    """U+E000 was the placeholder of protected dots: in the input it came out as "." (a sentence end)."""
    text = f"Nodule approx. 15 mm {ch} stable. No effusion {ch}{ch}."
    n = unicodedata.normalize("NFC", ch)  # U+F900, a CJK compatibility ideograph, is U+8C48 in NFC
    assert split_sentences(text) == [f"Nodule approx. 15 mm {n} stable.", f"No effusion {n}{n}."]
    assert split_sentences(f"Lungs{ch}clear.") == [f"Lungs{n}clear."]


def test_split_sentences_placeholder_avoids_every_character_of_the_text(monkeypatch):
    assert reports._placeholder("No effusion.") == "\ue000"
    assert reports._placeholder("".join(map(chr, range(0xE000, 0xF900)))) == "\U000f0000"  # every BMP one taken
    monkeypatch.setattr(reports, "_DOT_CANDIDATES", (range(0xE000, 0xE003), range(0xF0000, 0xF0001)))
    reports._segment_cached.cache_clear()
    text = "Nodule approx. 15 mm \ue000\ue001\ue002 stable. No effusion."
    assert split_sentences(text) == ["Nodule approx. 15 mm \ue000\ue001\ue002 stable.", "No effusion."]
    # no private-use character left at all: no protection (pysbd decides), and still no character changed
    monkeypatch.setattr(reports, "_DOT_CANDIDATES", (range(0xE000, 0xE002),))
    reports._segment_cached.cache_clear()
    out = split_sentences("Approx. \ue000\ue001 mm. No effusion.")
    reports._segment_cached.cache_clear()
    assert "".join(out).replace(" ", "") == "Approx.\ue000\ue001mm.Noeffusion."


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
    assert format_reward(text, "paper") == 1.0
    assert parse_template(text) is not None


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_template(case):
    assert format_reward(INVALID[case], "paper") == 0.0
    assert parse_template(INVALID[case]) is None


INVISIBLE = {
    "zero-width space": "\u200b",
    "zero-width joiner": "\u200d",
    "zero-width non-joiner": "\u200c",
    "word joiner": "\u2060",
    "BOM": "\ufeff",
    "soft hyphen": "\u00ad",
    "NBSP": "\u00a0",
    "narrow NBSP + ideographic space": "\u202f\u3000",
    "RTL / LTR marks": "\u200f\u200e",
    "RTL override + pop": "\u202e\u202c",
    "tabs and newlines": "\t\n\r\t",
    "line / paragraph separator": "\u2028\u2029",
    "combining accent alone": "\u0301",
    "variation selector": "\ufe0f",
    "Hangul filler": "\u3164",
    "braille blank": "\u2800",
    "mixed": " \u200b\ufeff\u00ad\u200f\u00a0\t ",
}


@pytest.mark.parametrize("case", sorted(INVISIBLE))
def test_invisible_sections_are_empty(case):
    inv = INVISIBLE[case]
    assert is_blank(inv)
    for text in (f"<think>{inv}</think> <answer>{inv}</answer>",
                 f"<think>{inv}</think> <answer> Normal. </answer>",
                 f"<think> Lungs clear. </think> <answer>{inv}</answer>"):
        assert parse_template(text) is None and format_reward(text, "paper") == 0.0, text
    # invisible characters around visible content or outside the tags do not break a valid template
    ok = f"{inv}<think>{inv}Lungs clear.{inv}</think>{inv}<answer>Normal.{inv}</answer>{inv}"
    assert format_reward(ok, "paper") == 1.0


@pytest.mark.parametrize("text", ["a", ".", "1", "\u00e9", "\u80ba", "+", "\u200bx", "_"])
def test_is_blank_sees_visible_characters(text):
    assert not is_blank(text)
    assert format_reward(f"<think>{text}</think><answer>{text}</answer>", "paper") == 1.0


def test_template_round_trip_normalises_whitespace():
    t = build_template("Heart  normal.\nNo effusion.", " No acute process. ")
    assert t == "<think> Heart normal. No effusion. </think> <answer> No acute process. </answer>"
    assert parse_template(t) == Sections("Heart normal. No effusion.", "No acute process.")


@pytest.mark.parametrize("f, i", [("", "x"), ("x", "  "), ("a </think> b", "x"), ("x", "<answer>")])
def test_build_template_refuses_unparseable(f, i):
    with pytest.raises(ReportTextError):
        build_template(f, i)


def test_format_reward_is_one_function_with_named_modes():
    """R_fmt has one function (issue 35): the paper's rule by name, and the training rule (what every reward
    method scores) that adds text checks on top; the training rule never accepts what the paper's refuses."""
    import sdrlib.reports as reports
    from sdrlib.rewards import check_completion

    assert not hasattr(reports, "format_reward") and FORMAT_MODES == ("training", "paper")
    token = "<think> Lungs clear. <|im_end|> </think> <answer> Normal. </answer>"
    long = build_template("Lungs clear. " * 400, "Normal.")
    for text in [*VALID, *INVALID.values(), token, long]:
        paper, training = format_reward(text, "paper"), format_reward(text)
        assert paper == (parse_template(text) is not None)
        assert training == (check_completion(text)[0] is not None) and training <= paper
    assert (format_reward(token, "paper"), format_reward(token)) == (1.0, 0.0)
    assert (format_reward(long, "paper"), format_reward(long), format_reward(long, max_chars=10**5)) == (1.0, 0.0, 1.0)
    with pytest.raises(RewardError, match="mode"):
        format_reward(token, "strict")
