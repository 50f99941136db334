"""How often a corpus uses four kinds of real report language, read from the text alone (:func:`phenomenon_rates`).

For checking SynthCXR's grammar (``report.py``, whose docstring holds the target rates and their sources) against
real reports, and for the tests that keep its rates in range. Every phenomenon is read by a regular expression over
the sentences of :func:`sdrlib.reports.split_sentences`, so the same function reads a SynthCXR corpus or any list of
records with ``findings`` / ``impression`` strings:

- ``other_side_findings`` / ``other_side_impression``: share of non-empty sections that state a finding on one side
  ("Small right pleural effusion.") and deny one on the other ("No left pleural effusion.", "The left lung is
  clear.", "No pneumothorax on the left.");
- ``bilateral_findings``: share of non-empty Findings sections stating a finding with a bilateral word
  ("bilateral(ly)", "bibasilar", "biapical", "both lungs / lung bases / lower lobes / sides", "left and right",
  "the lung bases"), not "Lungs are clear bilaterally" (a negated or finding-less sentence does not count);
- ``no_new``: share of reports with a "no new X" / "no new or worsening X" sentence;
- ``uncertain``: share of reports with an uncertain label (-1), read from the record's ``labels`` (not the text).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from sdrlib.data.records import DataError
from sdrlib.reports import split_sentences

__all__ = ["OBS_WORDS", "bilateral", "denied_side", "stated_side", "phenomenon_rates"]

#: the observation words a side-specific statement names
OBS_WORDS = r"(?:pleural effusions?|effusions?|pneumothorax|consolidation|opacity|opacities|atelectasis|pneumonia)"
_DENY = [re.compile(p, re.I) for p in (
    rf"^(?:there is )?no (?:evidence of )?(?:a )?(right|left)(?:-sided)? [a-z ]*?{OBS_WORDS}\b",
    rf"^(?:there is )?no [a-z ]*?{OBS_WORDS} (?:is seen )?(?:on the|in the) (right|left)\b",
    r"^the (right|left) (?:lung|hemithorax) is (?:clear|well aerated)",
    r"^the (right|left) costophrenic angle is sharp",
)]
_STATE = re.compile(rf"\b(right|left)\b[^.;]*\b{OBS_WORDS}|\b{OBS_WORDS}\b[^.;]*\b(right|left)\b", re.I)
_NEGATED = re.compile(r"^(?:there is )?no\b|\bnot (?:seen|identified|present|visualized)\b|\bresolved\b", re.I)
_BILATERAL = re.compile(r"\bbilateral(?:ly)?\b|\bbibasilar\b|\bbiapical\b|\bboth (?:lungs|lung bases|lower lobes|sides)\b"
                        r"|\bleft and right\b|\bright and left\b|\bthe lung bases\b", re.I)
_BIL_OBS = re.compile(rf"{OBS_WORDS}|\bedema\b|pleural (?:thickening|caps)", re.I)
_NO_NEW = re.compile(r"^(?:there is )?no new\b", re.I)


def _stated_part(sentence: str) -> str:
    """The words before "without" (what follows is denied: "Lungs are clear bilaterally without effusion.")."""
    return re.split(r"\bwithout\b", sentence, maxsplit=1, flags=re.I)[0]


def denied_side(sentence: str) -> str | None:
    """The side ("right" / "left") a sentence denies a finding on, or None.

    Example: ``denied_side("No pneumothorax on the left.")`` -> ``"left"``.
    """
    for rx in _DENY:
        m = rx.search(sentence.strip())
        if m:
            return m.group(1).lower()
    return None


def stated_side(sentence: str) -> str | None:
    """The side a sentence states a finding on (a side word beside an observation word, not negated), or None."""
    if _NEGATED.search(sentence) or denied_side(sentence):
        return None
    m = _STATE.search(_stated_part(sentence))
    return (m.group(1) or m.group(2)).lower() if m else None


def bilateral(sentence: str) -> bool:
    """Whether a sentence states a finding with a bilateral word ("Small pleural effusions on both sides.")."""
    part = _stated_part(sentence)
    return bool(_BILATERAL.search(part) and _BIL_OBS.search(part) and not _NEGATED.search(sentence))


def _other_side(section: str) -> bool:
    sents = split_sentences(section)
    stated = {stated_side(s) for s in sents} - {None}
    denied = {denied_side(s) for s in sents} - {None}
    return any({"right", "left"} == {a, b} for a in stated for b in denied)


def phenomenon_rates(records: Sequence[Any]) -> dict[str, float]:
    """Share of sections / reports of ``records`` showing each phenomenon (module doc); empty input gives zeros.
    One string instead of records raises :class:`~sdrlib.data.records.DataError`."""
    if isinstance(records, (str, bytes)):
        raise DataError("phenomenon_rates: expects records (with findings, impression, labels), not one string")
    recs = list(records)
    f_secs = [r.findings for r in recs if (r.findings or "").strip()]
    i_secs = [r.impression for r in recs if (r.impression or "").strip()]
    share = lambda hits, n: hits / n if n else 0.0  # noqa: E731
    return {
        "other_side_findings": share(sum(map(_other_side, f_secs)), len(f_secs)),
        "other_side_impression": share(sum(map(_other_side, i_secs)), len(i_secs)),
        "bilateral_findings": share(sum(any(bilateral(s) for s in split_sentences(f)) for f in f_secs), len(f_secs)),
        "no_new": share(sum(any(_NO_NEW.search(s) for s in split_sentences(f"{r.findings} {r.impression}"))
                            for r in recs), len(recs)),
        "uncertain": share(sum(-1 in (r.labels or {}).values() for r in recs), len(recs)),
    }
