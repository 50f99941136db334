"""Sentences of a partial report (:func:`complete_sentences`), the token proxy (:func:`proxy_pieces`) and one
candidate's progress while it decodes (``_Track``).

Left out: scoring the sentences (:mod:`._scoring`) and deciding who is dropped (:mod:`._rounds`).
"""

from __future__ import annotations

import re

from sdrlib.pruning._params import PruningError
from sdrlib.reports import parse_template_partial, split_report, split_sentences


_TERMINAL = ".!?"
_CLOSERS = ("</think>", "<answer>", "</answer>")


# --------------------------------------------------------------------------- sentences of a partial text
def _ends_sentence(s: str) -> bool:
    s = s.rstrip()
    if not s or s[-1] not in _TERMINAL:
        return False
    return not (s[-1] == "." and len(s) > 1 and s[-2].isdigit())  # "1." may become "1.5 cm"


def complete_sentences(text: str, *, final: bool = False, candidate_format: str = "template") -> list[tuple[str, str]]:
    """The complete sentences of a (partial) report, in order: ``[(section, sentence), ...]``, Findings first.

    ``final=True`` (the candidate has finished) counts every sentence. Otherwise the last sentence of the
    section the text ends in counts only when it ends in ``.``/``!``/``?`` (not ``<digit>.``).
    Example: ``complete_sentences("<think> Heart normal. Lungs") -> [("findings", "Heart normal.")]``.
    """
    if not isinstance(text, str):
        raise PruningError(f"candidate text must be a str, got {type(text).__name__}")
    if candidate_format == "template":
        findings, impression, open_sec = parse_template_partial(text)
    elif candidate_format == "report":
        s = split_report(text)
        findings, impression = s.findings, s.impression
        open_sec = "impression" if impression.strip() else "findings"
        if text.rstrip().endswith(":"):  # a header just written closes what came before
            open_sec = None
    else:
        raise PruningError(f"candidate_format must be 'template' or 'report', got {candidate_format!r}")
    out = [("findings", x) for x in split_sentences(findings)]
    imp = [("impression", x) for x in split_sentences(impression)]
    if not final and open_sec is not None:
        body = findings if open_sec == "findings" else impression
        part = out if open_sec == "findings" else imp
        if part and not _ends_sentence(body):
            part.pop()
    return out + imp


def proxy_pieces(text: str) -> list[str]:
    """Token proxy when the generating model's tokenizer is unknown: one piece per template tag, word (a run of
    letters / digits) or other visible character, leading white space attached. Concatenated they give back
    ``text`` (trailing white space is the last piece's). Counts approximate a BPE's within a small factor; the
    savings (ratios) are what the proxy is for."""
    if not isinstance(text, str):
        raise PruningError(f"candidate text must be a str, got {type(text).__name__}")
    pieces = re.findall(r"\s*(?:<think>|</think>|<answer>|</answer>|\w+|[^\w\s])", text)
    rest = len(text) - sum(map(len, pieces))
    if rest and pieces:
        pieces[-1] += text[len(text) - rest:]
    elif rest:
        pieces = [text]
    return pieces


# --------------------------------------------------------------------------- one candidate's progress
class _Track:
    """Text decoded so far by one candidate, its complete sentences and whether it has finished."""

    __slots__ = ("text", "tokens", "done", "sents", "round_start", "fmt")

    def __init__(self, fmt: str) -> None:
        self.text, self.tokens, self.done, self.sents, self.round_start, self.fmt = "", 0, False, [], 0, fmt

    def update(self, text: str, tokens: int, done: bool) -> None:
        old = self.text
        piece = text[len(old):] if text.startswith(old) else text
        self.text, self.tokens = text, tokens
        # the complete sentences change only at punctuation, a tag, a word after a sentence end, or the end
        if done or not text.startswith(old) or any(not (c.isalnum() or c.isspace()) for c in piece) \
                or (old.rstrip()[-1:] in _TERMINAL and old.rstrip()[-1:] != ""):
            self.sents = complete_sentences(text, final=done, candidate_format=self.fmt)
        self.done = done

    def ready(self, t: int, cap: int) -> bool:
        return self.done or len(self.sents) >= t or self.tokens - self.round_start >= cap
