"""Structured and templated reports: ``key: value`` pairs (colons, spaced dashes, sub-keys) and what each value
says of the findings its key names (docstring points 4-7 of :mod:`sdrlib.clinical.labeler`).

Leaves out prose (:mod:`._scopes`) and the merge into a report's labels (:mod:`._sentence`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sdrlib.clinical.labeler._rules import (_ANY_MENTION_RE, _KEY_COLON, _KEY_MAX_WORDS, _MENTION_RE, _SUBKEY,
                                            _VALUE_POSITIVE, _VALUE_WORDS)
from sdrlib.clinical.labeler._scopes import _Span, _trigger_status, _word_count
from sdrlib.vocabulary import combine_status


@dataclass(frozen=True)
class _Pair:
    key: tuple[int, int]  # span of the key in the sentence
    value: tuple[int, int]  # span of its value
    status: int | None  # what the value says of every finding the key names; None: read it as prose


def _head(sent: str, pos: int, end: int, trig: list[_Span]) -> tuple[int | None, int]:
    """(status, end) of a status word or trigger starting at ``pos``; ``(None, pos)`` if none does."""
    status, head_end = None, pos
    for rx, st in _VALUE_WORDS:
        m = rx.match(sent, pos, end)
        if m and m.end() > head_end:
            status, head_end = st, m.end()
    for t in trig:
        if t.start == pos and t.kind != "term" and head_end < t.end <= end:
            status, head_end = _trigger_status(t.kind), t.end
    return status, head_end


def _skip(sent: str, pos: int, end: int, chars: str = " \t") -> int:
    while pos < end and sent[pos] in chars:
        pos += 1
    return pos


def _value_status(sent: str, start: int, end: int, trig: list[_Span]) -> tuple[int | None, int]:
    """What the value ``sent[start:end]`` of a key says of the key's findings (1, 0, -1, or None), and where it ends.

    A negative or uncertain head ("none", "no", "not seen", "possible") decides when nothing after it
    (up to a termination word such as "but") mentions, negates or hedges anything ("none on the left" -> 0;
    "no pneumothorax is seen" -> None), and is positive when a size or presence word follows ("none on
    the left, small on the right" -> 1). A value without such a head is positive unless it negates or
    hedges something ("small left", "unchanged", "endotracheal tube in place" -> 1).

    A bare head followed by a comma or semicolon and another finding ends there ("no, large effusion": the
    value is "no", the effusion is read as prose); the returned end is then the head's end, else ``end``.
    """
    pos = _skip(sent, start, end)
    if not re.search(r"[a-z]", sent[pos:end]):
        return None, end
    status, head_end = _head(sent, pos, end, trig)
    inner = [t for t in trig if head_end <= t.start and t.end <= end]
    if status is not None:
        after = _skip(sent, head_end, end)
        if after < end and sent[after] in ",;" and _mentions(sent[after:end]):
            return status, head_end  # "Pneumothorax: no, large effusion."
    if status in (0, -1):
        stop = min((t.start for t in inner if t.kind == "term"), default=end)
        rest = sent[head_end:stop]
        if any(t.kind != "term" and t.end <= stop for t in inner) or _mentions(rest):
            return None, end
        return (1 if _VALUE_POSITIVE.search(rest) else status), end
    if any(t.kind not in ("term", "pseudo") for t in inner):
        return None, end
    return 1, end


def _mentions(text: str) -> bool:
    """Whether ``text`` mentions any observation (a direct mention, not an attribute anchor)."""
    return _ANY_MENTION_RE.search(text) is not None


def _is_subkey(text: str) -> bool:
    """A key that only says where ("Right", "left lung", "bilateral"): a sub-key of the finding key before it."""
    return bool(_SUBKEY.fullmatch(text.strip(" \t,;.")))


def _is_key(sent: str, start: int, end: int, trig: list[_Span]) -> bool:
    n = _word_count(sent[start:end])
    return (0 < n <= _KEY_MAX_WORDS
            and not any(t.kind != "term" and t.start < end and start < t.end for t in trig))


def _structure(sent: str, trig: list[_Span]) -> list[_Pair]:
    """The ``key: value`` pairs of a sentence, left to right.

    The text before the first colon is a key if it is short and holds no trigger; the text between two
    colons is split into the value of the first key and the next key: after a leading status ("none, ",
    "no; ", "present "), or, without one, the whole of it is the next key ("Findings: Pneumothorax: none."
    is the header "findings" with an empty value, then "pneumothorax" with "none"). The text after the
    last colon is its key's value.
    """
    colons = list(_KEY_COLON.finditer(sent))
    if not colons:
        return []
    pairs: list[_Pair] = []
    key = (0, colons[0].start()) if _is_key(sent, 0, colons[0].start(), trig) else None
    for i, c in enumerate(colons):
        vstart = c.end()
        vend = nxt = colons[i + 1].start() if i + 1 < len(colons) else len(sent)
        next_key = None
        if i + 1 < len(colons):
            status, head_end = _head(sent, _skip(sent, vstart, nxt), nxt, trig)
            sep = max(sent.rfind(",", vstart, nxt), sent.rfind(";", vstart, nxt))
            if status is not None:
                kstart = _skip(sent, head_end, nxt, " \t,;")
                if _is_key(sent, kstart, nxt, trig):
                    vend, next_key = head_end, (kstart, nxt)
            elif (sep >= 0 and not _mentions(sent[vstart:sep])
                  and _is_key(sent, _skip(sent, sep + 1, nxt), nxt, trig)):
                # "Consolidation - right lower lobe; pneumothorax - none": the value ends at the separator
                vend, next_key = sep, (_skip(sent, sep + 1, nxt), nxt)
            elif _is_key(sent, vstart, nxt, trig):
                vend, next_key = vstart, (vstart, nxt)
        if key is not None:
            status, vend = _value_status(sent, vstart, vend, trig)
            pairs.append(_Pair(key, (vstart, vend), status))
        key = next_key
    return _subkeys(sent, pairs)


def _subkeys(sent: str, pairs: list[_Pair]) -> list[_Pair]:
    """A key with an empty value followed by sub-keys ("Pneumothorax: Right: none, left: small.") takes
    the combined status of their values (positive over uncertain over negative)."""
    out = list(pairs)
    for i, p in enumerate(pairs):
        if p.status is not None or re.search(r"[a-z]", sent[p.value[0]:p.value[1]]):
            continue
        status = None
        for q in pairs[i + 1:]:
            if not _is_subkey(sent[q.key[0]:q.key[1]]):
                break
            if q.status is not None:
                status = combine_status(status, q.status)
        if status is not None:
            out[i] = _Pair(p.key, p.value, status)
    return out


def _named(text: str) -> tuple[str, ...]:
    """Observations a key names ("Effusion, pneumothorax" -> both)."""
    return tuple(obs for obs, rx in _MENTION_RE.items() if rx.search(text))


def _carried_subkeys(low: str, pairs: list[_Pair], parent: tuple[str, ...], out: dict[str, int]
                     ) -> tuple[str, ...]:
    """Sub-keys across a sentence break ("Pleural effusion: Left: none. Right: small.").

    ``parent`` names the findings of a key whose sub-keys ended the previous sentence; a sentence made only
    of sub-keys states them, and passes the parent on. Returns the findings to carry into the next sentence.
    """
    if parent and pairs and pairs[0].key[0] == 0 and all(_is_subkey(low[p.key[0]:p.key[1]]) for p in pairs):
        for p in pairs:
            if p.status is not None:
                for obs in parent:
                    out[obs] = combine_status(out.get(obs), p.status)
        return parent
    for i, p in enumerate(pairs):
        rest = pairs[i + 1:]
        if (rest and not re.search(r"[a-z]", low[p.value[0]:p.value[1]])
                and all(_is_subkey(low[q.key[0]:q.key[1]]) for q in rest)):
            return _named(low[p.key[0]:p.key[1]])
    return ()
