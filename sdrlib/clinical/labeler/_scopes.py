"""NegEx / ConText scopes: the trigger spans of a sentence and the status (1, 0, -1) they give a mention.

A pre-trigger's scope runs forward, a post-trigger's backward, to the sentence edge, a termination word or
:data:`~._rules._WINDOW` words; the closest trigger decides. The trigger lists are :mod:`._rules`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdrlib.clinical.labeler._rules import _ABSENT_HEDGE_BACK, _TRIGGERS, _VERSUS_BACK, _WINDOW, _WORD


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    kind: str  # neg_pre, neg_post, neg_both, neg_hedge, unc_pre, unc_post, unc_both, pseudo, unstated, term


#: the status a mention in an "unstated" scope ("no new X") gets: not stated, neither positive nor negative
UNSTATED = 2


def _triggers(sent: str) -> list[_Span]:
    """All trigger spans; a span inside or overlapping an earlier-listed or longer one is dropped."""
    found: list[_Span] = []
    for kind, rx in _TRIGGERS:
        for m in rx.finditer(sent):
            found.append(_Span(m.start(), m.end(), kind))
    # Longest first; on ties, the order of _TRIGGERS (pseudo > unc > neg > term).
    order = {k: i for i, (k, _) in enumerate(_TRIGGERS)}
    found.sort(key=lambda s: (-(s.end - s.start), order[s.kind], s.start))
    kept: list[_Span] = []
    for s in found:
        if any(s.start < k.end and k.start < s.end for k in kept):
            continue
        kept.append(s)
    return sorted(kept, key=lambda s: s.start)


def _word_count(text: str) -> int:
    return len(_WORD.findall(text))


def _status(sent: str, start: int, end: int, trig: list[_Span]) -> int:
    """Status (1, 0, -1, or :data:`UNSTATED`) of a mention at ``sent[start:end]`` given the sentence's triggers."""
    best: tuple[int, int] | None = None  # (distance in words, status)
    terms = [t for t in trig if t.kind == "term"]
    for t in trig:
        if t.kind in ("pseudo", "term"):
            continue
        status = 0 if t.kind.startswith("neg") else UNSTATED if t.kind == "unstated" else -1
        forward = t.kind in ("neg_pre", "unc_pre", "unc_both", "neg_both", "neg_hedge", "unstated")
        backward = t.kind in ("neg_post", "unc_post", "unc_both", "neg_both", "neg_hedge")
        if forward and t.end <= start:
            gap = sent[t.end:start]
            blocked = any(t.end <= x.start and x.end <= start for x in terms)
            dist = _word_count(gap)
            if not blocked and dist <= _WINDOW and (best is None or dist < best[0]):
                best = (dist, status)
        if backward and t.start >= end:
            gap = sent[end:t.start]
            blocked = any(end <= x.start and x.end <= t.start for x in terms)
            dist = _word_count(gap)
            # "A versus B": backward only over the preceding noun phrase; "X is unlikely": over a few words of
            # X's clause ("Small effusion, pneumothorax is unlikely." leaves the effusion stated)
            window = (_VERSUS_BACK if t.kind == "unc_both" else _ABSENT_HEDGE_BACK if t.kind == "neg_hedge"
                      else _WINDOW)
            if t.kind == "neg_hedge" and "," in gap:
                continue
            if not blocked and dist <= window and (best is None or dist < best[0]):
                best = (dist, status)
    return 1 if best is None else best[1]


def _trigger_status(kind: str) -> int:
    """A trigger heading a ``key: value`` value: what it says of the key ("no new" as CheXpert: negative)."""
    return 1 if kind == "pseudo" else 0 if kind.startswith("neg") or kind == "unstated" else -1
