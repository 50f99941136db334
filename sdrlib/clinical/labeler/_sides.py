"""The side a finding mention is stated on: left, right, bilateral or unspecified (point 13 of the package
docstring).

CheXpert's labeler has no side: its labels are per observation. A reward that compares a generated report with its
reference needs one, because real reports state a finding on one side and deny it on the other ("Small left pleural
effusion. No right pleural effusion."), and without sides that reads as a contradiction. The side of a mention is
read from its own noun phrase, as a radiologist reads it:

- **before the mention** ("small *left* pleural effusion", "*bibasilar* atelectasis", "*left and right* pleural
  effusions"): the words since the previous punctuation, the previous finding mention or :data:`_PRE_CHARS`
  characters, whichever is nearest;
- **after the mention** ("pneumothorax *on the right*", "consolidation in the *left* lower lobe"): at most
  :data:`_POST_WORDS` words up to the next punctuation, finding mention, trigger or conjunction ("and", "or",
  "but", "with"), except that "left and right" there is one bilateral phrase ("effusions on the left and right").

"left" and "right" together, "bilateral(ly)", "bibasilar" / "bibasal" / "biapical", "both lungs / bases / sides" and
the plurals "(lung) bases", "apices", "costophrenic angles" read **bilateral**; no side word reads **unspecified** (a positive "pleural effusion" matches either side, a negative
"no pleural effusion" denies both). A mention inside a ``key: value`` layout ("Pneumothorax: right: none, left:
small") and every observation of :data:`NO_SIDE` (the heart, the mediastinum, findings below the diaphragm) are
unspecified. "No right pleural effusion or pneumothorax": the side stays with "effusion" (the pneumothorax is
denied on both sides).
"""

from __future__ import annotations

import re
from typing import NamedTuple, Sequence

__all__ = ["Mention", "SIDES", "NO_SIDE", "with_sides", "side_of"]


class Mention(NamedTuple):
    """One finding mention: ``observation`` (a CheXpert-14 name or one of the findings outside them), ``status``
    (1 positive, 0 negative, -1 uncertain, as CheXpert) and ``side`` (one of :data:`SIDES`)."""

    observation: str
    status: int
    side: str


#: the sides a mention may be stated on
SIDES: tuple[str, ...] = ("left", "right", "bilateral", "unspecified")
#: observations without a side (always unspecified)
NO_SIDE: frozenset[str] = frozenset({"No Finding", "Cardiomegaly", "Enlarged Cardiomediastinum", "Hernia",
                                     "Pneumoperitoneum", "Pneumomediastinum", "Emphysema"})

_PRE_CHARS = 48  # characters before a mention searched for its side
_POST_WORDS = 6  # words after a mention searched for its side
_LEFT = re.compile(r"(?<![\w])left(?![\w])")
_RIGHT = re.compile(r"(?<![\w])right(?![\w])")
_BOTH = re.compile(r"(?<![\w])(?:bilateral(?:ly)?|bibasilar|bibasal|biapical|both (?:lungs?|bases|sides|hemithora\w+|"
                   r"apices|lower|upper|mid)|(?:lung )?(?:bases|apices)|costophrenic (?:angles|sulci))(?![\w])")
_PRE_STOP = re.compile(r"[,;:.()]")
_POST_STOP = re.compile(r"[,;:.()]|(?<![\w])(?:and|or|but|with|while|whereas|which)(?![\w])")
_PAIR = re.compile(r"(?<![\w])(?:left|right)(?: side)? (?:and|&) (?:the )?(?:left|right)(?![\w])")  # "on the left and right"
_WORD = re.compile(r"\w+")


def _side_words(text: str) -> str | None:
    if _BOTH.search(text) or (_LEFT.search(text) and _RIGHT.search(text)):
        return "bilateral"
    if _LEFT.search(text):
        return "left"
    if _RIGHT.search(text):
        return "right"
    return None


def side_of(low: str, start: int, end: int, spans: Sequence[tuple[int, int]], stops: Sequence[tuple[int, int]] = ()
            ) -> str:
    """The side of the mention ``low[start:end]`` (module doc). ``spans``: every finding mention of the sentence
    (a window never crosses another one); ``stops``: trigger spans, which end the window after the mention.

    Example: ``side_of("no pneumothorax on the left.", 3, 15, [(3, 15)])`` -> ``"left"``."""
    lo = max([0, start - _PRE_CHARS] + [e for s, e in spans if e <= start])
    pre = low[lo:start]
    cut = [m.end() for m in _PRE_STOP.finditer(pre)]
    if cut:
        pre = pre[cut[-1]:]
    side = _side_words(pre)
    if side is not None:
        return side
    hi = min([len(low)] + [s for s, e in spans if s >= end] + [s for s, e in stops if s >= end])
    post = low[end:hi]
    pair = _PAIR.search(post)
    if pair and len(_WORD.findall(post[:pair.start()])) < _POST_WORDS and not _POST_STOP.search(post[:pair.start()]):
        return "bilateral"
    m = _POST_STOP.search(post)
    if m:
        post = post[:m.start()]
    words = list(_WORD.finditer(post))
    if len(words) > _POST_WORDS:
        post = post[:words[_POST_WORDS - 1].end()]
    return _side_words(low[start:end] + post) or "unspecified"  # with the mention ("costophrenic" + " angles")


def with_sides(low: str, found: Sequence[tuple[str, int, int, int, bool]], trig: Sequence) -> list[Mention]:
    """``found`` (``(observation, status, start, end, in_key)`` per mention of the sentence ``low``) as
    :class:`Mention` s with their sides; ``trig``: the sentence's trigger spans (``._scopes._Span``)."""
    spans = [(s, e) for _, _, s, e, _ in found]
    stops = [(t.start, t.end) for t in trig]
    out = []
    for obs, status, s, e, in_key in found:
        side = "unspecified" if in_key or obs in NO_SIDE else side_of(low, s, e, spans, stops)
        out.append(Mention(obs, status, side))
    return out
