"""The labeler's text units: tables and dashes rewritten, the text folded to ASCII
(:func:`sdrlib.reports.normalize_ascii`), then split into sentences at sentence ends and at every line break.

Leaves out labelling (:mod:`._sentence`).
"""

from __future__ import annotations

import re

from sdrlib.clinical.labeler._rules import _DASHES, _SENT_SPLIT, _TABLE_ROW_SPLIT, _TABLE_RULE
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


def _normalize(text: str) -> str:
    """Dashes unified and tables rewritten as ``key: value.`` lines, then :func:`sdrlib.reports.normalize_ascii`."""
    return normalize_ascii(_tables(_DASHES.sub("-", text)))


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
