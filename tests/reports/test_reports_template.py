"""The one <think>/<answer> template reader (sdrlib.reports): its modes agree with the parsers it replaced.

The reference implementations below are the code pruning (``_template_sections``), apigen (``_LOOSE_TEMPLATE``),
serve (``_TAGS``) and rewards (``_tags_ok_but_empty``) held before the parsers were merged, kept verbatim so the
merged reader is checked against them on many texts, random ones included.
"""

from __future__ import annotations

import random
import re

import pytest

from sdrlib.reports import (TEMPLATE_MODES, PartialTemplate, ReportTextError, Sections, TemplateParts, is_blank,
                            normalize_text, parse_template, parse_template_partial, split_template,
                            strip_template_tags)

_TAGS = ("<think>", "</think>", "<answer>", "</answer>")


def _ref_partial(text):  # pruning._template_sections before the merge
    def strip(s):
        for t in _TAGS:
            s = s.replace(t, " ")
        return s

    f0 = text.find("<think>")
    f0 = 0 if f0 < 0 else f0 + len("<think>")
    ends = [i for i in (text.find("</think>", f0), text.find("<answer>", f0)) if i >= 0]
    f1 = min(ends) if ends else len(text)
    findings, open_sec = text[f0:f1], ("findings" if not ends else None)
    impression = ""
    a0 = text.find("<answer>", f1)
    if a0 >= 0:
        a0 += len("<answer>")
        a1 = text.find("</answer>", a0)
        impression = text[a0:a1 if a1 >= 0 else len(text)]
        open_sec = "impression" if a1 < 0 else None
    return strip(findings), strip(impression), open_sec


_REF_LOOSE = re.compile(r"<think>(.*?)</think>.*?<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def _ref_loose(body):  # apigen.parse_api_answer's loose step before the merge
    m = _REF_LOOSE.search(body)
    if m and not is_blank(m.group(1)) and not is_blank(m.group(2)):
        return normalize_text(m.group(1)), normalize_text(m.group(2))
    return None


_REF_SERVE = re.compile(r"</?(?:think|answer)>")


def _ref_tags_ok_but_empty(text):  # rewards._tags_ok_but_empty
    if any(text.count(t) != 1 for t in _TAGS):
        return False
    i0, i1, i2, i3 = (text.index(t) for t in _TAGS)
    if not i0 < i1 < i2 < i3:
        return False
    return is_blank(text[i0 + len(_TAGS[0]): i1]) or is_blank(text[i2 + len(_TAGS[2]): i3])


_PIECES = ["<think>", "</think>", "<answer>", "</answer>", "<THINK>", "</Answer>", " ", "\n", "Heart normal.",
           "Lungs", " clear", ".", "1.", "5 cm", "x", "\u200b", "Report:", "<thi", "nk>", "<", ">", "/"]


def _random_texts(n=3000, seed=0):
    rng = random.Random(seed)
    out = ["", "<think> A. </think> <answer> B. </answer>", "<think> Heart normal. Lungs",
           "<think> A. </think> <answer> B", "no tags at all.", "<think> A. <answer> B. </answer> tail"]
    for _ in range(n):
        out.append("".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 14))))
    return out


def test_partial_parse_is_prunings_reader():
    for text in _random_texts():
        got = parse_template_partial(text)
        assert isinstance(got, PartialTemplate)
        assert tuple(got) == _ref_partial(text), text


def test_partial_parse_examples():
    assert parse_template_partial("<think> Heart normal. Lungs") == (" Heart normal. Lungs", "", "findings")
    assert parse_template_partial("<think> A. </think> <answer> B") == (" A. ", " B", "impression")
    assert parse_template_partial("<think> A. </think> <answer> B. </answer> after") == (" A. ", " B. ", None)
    assert parse_template_partial("no tag yet") == ("no tag yet", "", "findings")


def test_loose_mode_is_apigens_reader():
    for text in _random_texts(seed=1):
        got = parse_template(text, mode="loose")
        want = _ref_loose(text)
        assert (None if got is None else (got.findings, got.impression)) == want, text


def test_loose_mode_accepts_what_strict_refuses():
    text = "Here it is:\n<THINK>Lungs clear.</think>\n<answer>Normal.</answer>\nHope it helps"
    assert parse_template(text) is None
    assert parse_template(text, mode="loose") == Sections("Lungs clear.", "Normal.")
    assert parse_template("<think> </think><answer>B.</answer>", mode="loose") is None
    assert parse_template(None, mode="loose") is None


def test_strict_mode_is_the_default_and_unknown_modes_are_refused():
    text = "<think> A. </think> <answer> B. </answer>"
    assert parse_template(text) == parse_template(text, mode="strict") == Sections("A.", "B.")
    assert TEMPLATE_MODES == ("strict", "loose")
    with pytest.raises(ReportTextError, match="mode"):
        parse_template(text, mode="lenient")


def test_split_template_is_the_tag_scan_of_strict_parsing():
    assert split_template("x <think> F </think> <answer> I </answer>") == TemplateParts(" F ", " I ", "x  ")
    for text in _random_texts(seed=2):
        parts = split_template(text)
        strict = parse_template(text)
        if strict is not None:
            assert parts is not None and normalize_text(parts.findings) == strict.findings
        if parts is None:
            assert strict is None
        # what rewards needs to tell an empty section from no template
        ok_but_empty = parts is not None and (is_blank(parts.findings) or is_blank(parts.impression))
        assert ok_but_empty == _ref_tags_ok_but_empty(text), text


def test_strip_template_tags_is_serves_and_prunings_rule():
    for text in _random_texts(seed=3):
        assert strip_template_tags(text) == _REF_SERVE.sub(" ", text)
        ref = text
        for t in _TAGS:
            ref = ref.replace(t, " ")
        assert strip_template_tags(text) == ref
    assert strip_template_tags("<think>A.</think>") == " A. "
