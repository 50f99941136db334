"""The labeler's text units: markup stripped, tables and dashes rewritten, the text folded to ASCII
(:func:`sdrlib.reports.normalize_ascii`), then split into sentences at sentence ends and at every line break;
and which of those sentences are in another language (:func:`_foreign`, not read).

Leaves out labelling (:mod:`._sentence`).
"""

from __future__ import annotations

import html
import re

from sdrlib.clinical.labeler._rules import (_ANY_TAG, _BLOCK_TAG, _DASHES, _ENGLISH_WORDS, _ENTITY, _HIDDEN_ELEMENT,
                                            _FOREIGN_NEGATION, _FOREIGN_WORDS, _SENT_SPLIT, _TABLE_ROW_SPLIT,
                                            _TABLE_RULE)
from sdrlib.reports import normalize_ascii


def _tables(text: str) -> str:
    """Markdown / pipe table rows as ``key: value.`` sentences ("| Pneumothorax | none |" -> "Pneumothorax: none.").

    Rule rows ("|---|---|") are dropped; rows joined on one line are split; cells of a row are joined with
    ": ", so a third column reads as a sub-key's value ("| Effusion | right | small |").
    """
    if "|" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        if "|" not in line:
            lines.append(line)
            continue
        rows = []
        for row in _TABLE_ROW_SPLIT.split(line):
            cells = [c.strip().rstrip(".").strip() for c in row.split("|")]
            cells = [c for c in cells if c]
            if cells and not _TABLE_RULE.fullmatch(" ".join(cells)):
                rows.append(": ".join(cells) + ".")
        lines.append(" ".join(rows))
    return "\n".join(lines)


def _markup(text: str) -> str:
    """Markup stripped: script, style and head elements and comments go with their content; block tags (``<p>``,
    ``<br/>``, ``<li>``, ``<tr>``, ...) end a line, so a negation in one
    paragraph never reaches the next; inline tags (``<b>``, ``<span>``) go; entities (``&amp;``) are decoded.
    Text without a tag or an entity is returned as is.

    Example: ``"<p>No pneumothorax.</p><b>Small effusion</b>"`` -> ``"\nNo pneumothorax.\nSmall effusion"``."""
    if "<" not in text and "&" not in text:
        return text
    if not (_ANY_TAG.search(text) or _ENTITY.search(text) or "<!--" in text):
        return text
    text = _ANY_TAG.sub("", _BLOCK_TAG.sub("\n", _HIDDEN_ELEMENT.sub("\n", text)))
    return html.unescape(text)


def _normalize(text: str) -> str:
    """Markup stripped (:func:`_markup`), dashes unified and tables rewritten as ``key: value.`` lines, then
    :func:`sdrlib.reports.normalize_ascii`."""
    return normalize_ascii(_tables(_DASHES.sub("-", _markup(text))))


def _foreign(sentence: str) -> bool:
    """Whether a (normalised) sentence is in another language the rules cannot read: a negation cue of another
    language or two of its function words, and no English function word. Example: ``"Pas de pneumothorax."`` ->
    True; ``"No pneumothorax."`` -> False."""
    words = re.findall(r"[a-z]+", sentence.lower())
    if any(w in _ENGLISH_WORDS for w in words):
        return False
    return bool(_FOREIGN_NEGATION.search(sentence)) or sum(w in _FOREIGN_WORDS for w in words) >= 2


def _sentences(text: str) -> list[str]:
    """The labeler's units on normalised text: split at sentence ends and at **every line break**.

    Deliberately not :func:`sdrlib.reports.split_sentences`, which segments prose and reads a single newline as line
    wrapping: a structured report (``"Pneumothorax: none\nPleural effusion: small left"``, and the tables
    ``_tables`` turns into lines) would become one sentence there, and a ``key: value`` line's negation would reach
    the next line's finding. The rules were written and validated on these units
    (``tests/clinical/test_labeler.py``)."""
    out = []
    for s in _SENT_SPLIT.split(text):
        s = s.strip()
        if re.search(r"[A-Za-z]", s):
            out.append(s)
    return out
