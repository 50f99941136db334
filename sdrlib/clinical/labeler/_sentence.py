"""One sentence's labels, and a report's: mentions read through their scopes or their ``key: value`` pair,
direct negative phrases, attribute anchors with their qualifiers; then merged over the report and cached.

Leaves out the tables (:mod:`._rules`), scopes (:mod:`._scopes`), layouts (:mod:`._structure`) and text units
(:mod:`._text`); evaluation against gold labels is :mod:`._evaluation`.
"""

from __future__ import annotations

import warnings
from functools import lru_cache, partial
from typing import Callable, Iterable, Sequence

from sdrlib.clinical.labeler._rules import (_ANCHOR_RE, _CLAUSE_SPLIT, _DIRECT_NEG_RE, _MENTION_RE, _NOT_MENTION_RE,
                                            _OTHER_RE, _PAST_BEFORE, _PAST_LOOKBACK, _PAST_OBSERVATIONS, _QNEG_RE,
                                            _QPOS_RE, _QUNC_RE)
from sdrlib.clinical.labeler._scopes import UNSTATED, _Span, _status, _triggers
from sdrlib.clinical.labeler._sides import Mention, with_sides
from sdrlib.clinical.labeler._structure import _carried_subkeys, _Pair, _structure
from sdrlib.clinical.labeler._text import _foreign, _normalize, _sentences
from sdrlib.vocabulary import apply_no_finding, combine_status, ordered_labels

__all__ = ["label_report", "label_reports", "label_mentions", "UnreadableTextWarning"]


class UnreadableTextWarning(UserWarning):
    """A report (or part of one) the labeler cannot read: another language. Its observations are not stated (never
    positive), and "No Finding" is not derived: the unread text may state a finding."""

TriggersAt = Callable[[int], list[_Span]]


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for s, e in spans:
        for i in range(s, e):
            chars[i] = "_"
    return "".join(chars)


def _triggers_at(trig: list[_Span], stated: list[tuple[int, int]], pos: int) -> list[_Span]:
    """The triggers that reach position ``pos``: a trigger inside a value that states its key's status
    ("no" in "Pneumothorax: no, effusion: small.") reaches nothing outside that value."""
    if not stated:
        return trig
    return [t for t in trig if not any(vs <= t.start and t.end <= ve and not vs <= pos < ve
                                       for vs, ve in stated)]


def _label_sentence(sent: str, out: dict[str, int], parent: tuple[str, ...] = (),
                    record: list[Mention] | None = None) -> tuple[str, ...]:
    """Add one sentence's labels to ``out``; returns the findings whose sub-keys may go on in the next one.

    ``record``: when a list, every mention read (CheXpert's 14 and the findings outside them, ``_OTHER_RE``) is
    appended to it with its status and side (:func:`._sides.with_sides`); ``out`` then gets the others too."""
    low = sent.lower()
    # Remove look-alike phrases ("pericardial effusion") so they do not match.
    low = _blank(low, [(m.start(), m.end()) for m in _NOT_MENTION_RE.finditer(low)])
    trig = _triggers(low)
    # "Pneumothorax: none.": a key takes its value's status; a trigger inside a value that has one
    # ("no" in "Pneumothorax: no, effusion: small.") reaches nothing outside that value.
    pairs = _structure(low, trig)
    carry = _carried_subkeys(low, pairs, parent, out) if pairs else ()
    triggers_at = partial(_triggers_at, trig, [p.value for p in pairs if p.status is not None])
    found: list[tuple[str, int, int, int, bool]] | None = [] if record is not None else None
    _mention_labels(low, trig, pairs, triggers_at, out, found)
    for obs, rx in _DIRECT_NEG_RE.items():
        for m in rx.finditer(low):
            out[obs] = combine_status(out.get(obs), 0)
            if found is not None:
                found.append((obs, 0, m.start(), m.end(), False))
    _anchor_labels(low, triggers_at, out, found)
    if record is not None:
        record.extend(with_sides(low, found, trig))
    return carry


def _mention_labels(low: str, trig: list[_Span], pairs: list[_Pair], triggers_at: TriggersAt,
                    out: dict[str, int], found: list | None = None) -> None:
    """Direct mentions: each takes its ``key: value`` pair's status, else its closest trigger's (1 without one);
    a mention in a "no new" scope is negative for the labels (CheXpert) and left out of ``found`` (point 13). ``found``: when a list, the
    findings outside CheXpert's 14 are read too and every mention is appended as ``(obs, status, start, end,
    in_key)``."""
    trig_spans = [(t.start, t.end) for t in trig if t.kind != "term"]

    def overlaps_trigger(s: int, e: int) -> bool:
        return any(s < te and ts < e for ts, te in trig_spans)

    tables = _MENTION_RE if found is None else {**_MENTION_RE, **_OTHER_RE}
    for obs, rx in tables.items():
        for m in rx.finditer(low):
            if overlaps_trigger(m.start(), m.end()):
                continue
            pair = next((p for p in pairs if p.key[0] <= m.start() and m.end() <= p.key[1]), None)
            if pair is not None and pair.status is not None:
                status = pair.status
            elif pair is not None and any(pair.value[0] <= v.start() and v.end() <= pair.value[1]
                                          for v in rx.finditer(low)):
                continue  # "Pneumothorax: no pneumothorax is seen." the value's own mention decides
            else:
                status = _status(low, m.start(), m.end(), triggers_at(m.start()))
            if status == 1 and obs in _PAST_OBSERVATIONS and _PAST_BEFORE.search(
                    low, max(0, m.start() - _PAST_LOOKBACK), m.start()):
                status = 0  # "residuals of prior granulomatous infection": not an active pneumonia
            if status == UNSTATED:  # "no new X": CheXpert's labels read a negation, reward presence nothing
                if found is not None:
                    continue
                status = 0
            if found is not None:
                found.append((obs, status, m.start(), m.end(), pair is not None))
            out[obs] = combine_status(out.get(obs), status)


def _anchor_labels(low: str, triggers_at: TriggersAt, out: dict[str, int], found: list | None = None) -> None:
    """Attribute anchors ("heart size is normal"): the nearest qualifier in the same clause decides."""
    offset = 0
    for clause in _CLAUSE_SPLIT.split(low):
        cstart = low.find(clause, offset)
        offset = cstart + len(clause)
        quals = ([(m.start(), m.end(), "pos") for m in _QPOS_RE.finditer(clause)]
                 + [(m.start(), m.end(), "neg") for m in _QNEG_RE.finditer(clause)]
                 + [(m.start(), m.end(), "unc") for m in _QUNC_RE.finditer(clause)])
        if not quals:
            continue
        # "not enlarged" is one negative qualifier, not a positive one inside it.
        quals.sort(key=lambda q: (-(q[1] - q[0]), q[0]))
        kept_q: list[tuple[int, int, str]] = []
        for q in quals:
            if not any(q[0] < k[1] and k[0] < q[1] for k in kept_q):
                kept_q.append(q)
        for obs, rx in _ANCHOR_RE.items():
            for m in rx.finditer(clause):
                # skip anchors inside a direct mention already counted ("enlarged cardiac silhouette")
                if any(m.start() < d.end() and d.start() < m.end()
                       for d in _MENTION_RE[obs].finditer(clause)):
                    continue
                q = min(kept_q, key=lambda q: min(abs(q[0] - m.end()), abs(m.start() - q[1])))
                if q[2] == "neg":
                    status = 0
                elif q[2] == "unc":
                    status = -1
                else:
                    status = _status(low, cstart + q[0], cstart + q[1], triggers_at(cstart + q[0]))
                if status == UNSTATED:
                    if found is not None:
                        continue
                    status = 0
                if found is not None:
                    found.append((obs, status, cstart + m.start(), cstart + m.end(), False))
                out[obs] = combine_status(out.get(obs), status)


@lru_cache(maxsize=65536)
def _label_cached(text: str) -> tuple[tuple[tuple[str, int], ...], int]:
    """The labels of ``text`` and how many of its sentences are in another language (not read)."""
    out: dict[str, int] = {}
    carry: tuple[str, ...] = ()
    unread = 0
    for sent in _sentences(_normalize(text)):
        if _foreign(sent):  # another language: not read, so never a positive (and no sub-key carries past it)
            carry, unread = (), unread + 1
            continue
        carry = _label_sentence(sent, out, carry)
    # "No Finding" says the whole text states no pathology: unknown when part of it could not be read
    return tuple(ordered_labels(out if unread else apply_no_finding(out)).items()), unread


@lru_cache(maxsize=65536)
def _mentions_cached(text: str) -> tuple[tuple[Mention, ...], int]:
    found: list[Mention] = []
    unread = 0
    for sent in _sentences(_normalize(text)):
        if _foreign(sent):
            unread += 1
        else:
            _label_sentence(sent, {}, (), record=found)
    return tuple(found), unread


def _warn_unread(text: str, unread: int) -> None:
    if unread:
        warnings.warn(f"the labeler cannot read {unread} sentence(s) of {text[:60]!r}... (another language): their "
                      "findings are not stated and No Finding is not derived; translate the report to English to "
                      "label it", UnreadableTextWarning, stacklevel=3)


def label_mentions(text: str) -> tuple[Mention, ...]:
    """Every finding mention of ``text`` as ``Mention(observation, status, side)`` in reading order: CheXpert's 14
    (statuses as :func:`label_report` reads them: 1, 0, -1) and the findings outside them
    (:data:`sdrlib.clinical.labeler.OTHER_FINDINGS`); sides per :mod:`._sides` ("left", "right", "bilateral",
    "unspecified"). Mentions in a "no new" scope are left out (they state nothing). Used for reward presence
    (:mod:`sdrlib.clinical.presence`); the labels stay :func:`label_report`'s.

    Example: ``label_mentions("Small left pleural effusion. No right pleural effusion.")`` ->
    ``(Mention('Pleural Effusion', 1, 'left'), Mention('Pleural Effusion', 0, 'right'))``."""
    if not isinstance(text, str):
        raise TypeError(f"label_mentions expects a str, got {type(text).__name__}")
    found, unread = _mentions_cached(text)
    _warn_unread(text, unread)
    return found


def label_report(text: str) -> dict[str, int]:
    """CheXpert-14 labels of one free-text report (or one section).

    Parameters
    ----------
    text : str
        Report text; section headers are harmless, several sentences allowed.

    Returns
    -------
    dict[str, int]
        Observation -> 1 (positive), 0 (negative), -1 (uncertain), in ``CHEXPERT_14``
        order; observations not mentioned are absent. "No Finding" follows the
        CheXpert convention (see module docstring), except that a text with a sentence in
        another language gets none (with an :class:`UnreadableTextWarning`): the unread
        sentence may state a finding.

    Raises
    ------
    TypeError
        ``text`` is not a string.

    Example: ``label_report("No pneumothorax.")`` -> ``{"Pneumothorax": 0, "No Finding": 1}``.
    """
    if not isinstance(text, str):
        raise TypeError(f"label_report expects a str, got {type(text).__name__}")
    labels, unread = _label_cached(text)
    _warn_unread(text, unread)
    return dict(labels)


def label_reports(texts: Sequence[str]) -> list[dict[str, int]]:
    """``label_report`` over a list. Example: ``label_reports(["No edema."])`` -> ``[{...}]``."""
    return [label_report(t) for t in texts]
