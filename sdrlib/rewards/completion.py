"""Completion checks: the text of a TRL completion and whether it is a valid report (R_fmt).

One place for the rules every reward method and the EditGRPO edits share (below all of them): a
completion's text (:func:`completion_text`: plain strings, UTF-8 bytes, conversational messages,
content given as text parts) and its validity (:func:`check_completion`: not text, non-text tokens,
too long, no template, a blank section; the template itself is read by
:func:`sdrlib.reports.parse_template`, the one template parser); R_fmt itself (:func:`format_reward`, the
paper's rule or the one training applies, by name). Also the number checks of reward
weights and ``max_chars`` (:func:`check_weight`, :func:`check_max_chars`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import numpy as np

from sdrlib.reports import is_blank, parse_template, split_template
from sdrlib.rewards.spec import RewardError

__all__ = ["BAD_REASONS", "DEFAULT_MAX_CHARS", "FORMAT_MODES", "check_completion", "format_reward", "completion_text", "check_weight",
           "check_max_chars"]

#: Why a completion scored R_fmt = 0 (counted in :attr:`RewardScorer.counts`).
BAD_REASONS: tuple[str, ...] = ("not_text", "non_text_tokens", "too_long", "no_template", "empty_section")

#: Default cap on completion length in characters (a report is a few hundred).
DEFAULT_MAX_CHARS = 4000

# Chat / vision special tokens of Qwen-VL and Gemma-3 that must never appear in a report.
_SPECIAL_TOKEN_RE = re.compile(r"<\|[a-z_]+\|>|<(?:start|end)_of_(?:turn|image)>|<image_soft_token>|<bos>|<eos>|<pad>")


def check_weight(value: Any, name: str) -> float:
    """A reward weight: a real number (not bool), finite and >= 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise RewardError(f"{name} must be a non-negative finite number, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v < 0:
        raise RewardError(f"{name} must be a non-negative finite number, got {value!r}")
    return v


def check_max_chars(value: Any) -> int:
    """``max_chars``: an int (not bool) >= 1."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RewardError(f"max_chars must be a positive int, got {value!r}")
    return int(value)


def completion_text(completion: Any) -> str | None:
    """Return the text of one TRL completion, or ``None`` when it holds no text.

    Accepts a plain string (or UTF-8 bytes), a conversational completion
    ``[{"role": "assistant", "content": ...}]`` (the last assistant message is
    used) and content given as a list of parts ``[{"type": "text", "text": ...}]``.
    Anything else (``None``, numbers, image parts, undecodable bytes) gives ``None``;
    it never raises. Example: ``completion_text([{"role": "assistant", "content": "hi"}]) -> "hi"``.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (bytes, bytearray)):
        try:
            return bytes(completion).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(completion, dict):
        return _content_text(completion.get("content"))
    if isinstance(completion, (list, tuple)):
        msgs = [m for m in completion if isinstance(m, dict)]
        if not msgs or len(msgs) != len(completion):
            return None
        # isinstance first: a role that is not a str (an array, say) must not reach ``==``
        assistant = [m for m in msgs if _is(m.get("role", "assistant"), "assistant")] or msgs
        return _content_text(assistant[-1].get("content"))
    return None


def _is(value: Any, word: str) -> bool:
    return isinstance(value, str) and value == word


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and _is(part.get("type", "text"), "text") and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:  # an image / audio part in a report is not text
                return None
        return "".join(parts)
    return None


def _has_non_text(text: str) -> bool:
    if "\ufffd" in text or _SPECIAL_TOKEN_RE.search(text):
        return True
    return any(unicodedata.category(ch) in ("Cc", "Cs", "Co") and ch not in "\n\t\r" for ch in text)


def check_completion(text: Any, max_chars: int = DEFAULT_MAX_CHARS) -> tuple[Any, str | None]:
    """Validate one completion: ``(Sections, None)`` when valid, else ``(None, reason)``.

    ``reason`` is one of :data:`BAD_REASONS`, checked in that order; anything that is
    not ``str`` (``None``, numbers, lists, undecodable bytes; UTF-8 bytes are decoded)
    is ``"not_text"``. A section holding only white space or invisible characters
    (zero-width space, BOM, ...) is ``"empty_section"``. Raises :class:`RewardError`
    only for a bad ``max_chars`` (not a positive int).
    Example: ``check_completion("no tags")[1] -> "no_template"``.
    """
    max_chars = check_max_chars(max_chars)
    if isinstance(text, (bytes, bytearray)):
        text = completion_text(text)
    if not isinstance(text, str):
        return None, "not_text"
    if _has_non_text(text):
        return None, "non_text_tokens"
    if len(text) > max_chars:
        return None, "too_long"
    sections = parse_template(text)
    if sections is None:
        parts = split_template(text)  # tags once each and in order, but a section holds nothing visible
        return None, ("empty_section" if parts is not None and (is_blank(parts.findings) or is_blank(parts.impression))
                      else "no_template")
    if is_blank(sections.findings) or is_blank(sections.impression):
        return None, "empty_section"
    return sections, None


#: The two rules R_fmt can follow (:func:`format_reward`).
FORMAT_MODES: tuple[str, ...] = ("training", "paper")


def format_reward(text: Any, mode: str = "training", max_chars: int = DEFAULT_MAX_CHARS) -> float:
    """R_fmt of one completion, ``1.0`` or ``0.0``, under a named rule; never raises on the text.

    ``mode="paper"``: the paper's rule (sec. 3.2): :func:`sdrlib.reports.parse_template` accepts the text
    (each tag once, in order, around visible content, nothing outside). ``mode="training"`` (what every
    reward method scores, :class:`~sdrlib.rewards.RewardScorer`): the paper's rule and the checks of
    :func:`check_completion` on top (text, no chat / vision special tokens or control characters, at most
    ``max_chars`` characters). Every completion the training rule accepts, the paper's accepts.
    Raises :class:`RewardError` for an unknown ``mode`` or a bad ``max_chars``.
    Example: ``format_reward("<think> a <|im_end|> </think> <answer> b </answer>", "paper") -> 1.0``, and
    ``0.0`` under ``"training"`` (a chat token inside the Findings).
    """
    if mode == "paper":
        return 1.0 if parse_template(text) is not None else 0.0
    if mode != "training":
        raise RewardError(f"format_reward: mode must be one of {FORMAT_MODES}, got {mode!r}")
    return 1.0 if check_completion(text, max_chars)[0] is not None else 0.0
