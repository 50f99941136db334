"""GRPO rewards: format, set-distance semantic and exact-match, with TRL adapters.

Paper sec. 3.1 (format reward) and 3.2 (semantic reward). For a generated report ``y_hat`` and its
reference ``y``:

- ``R_fmt(y_hat)`` in {0, 1}. The paper's format reward (sec. 3.1, "Format
  reward") requires the template ``<think> F </think> <answer> I </answer>``
  "with each tag occurring exactly once, in the specified order, and enclosing
  non-empty content". This ``R_fmt`` is **stricter than the paper**: 1 only when
  (i) each tag occurs exactly once, in that order; (ii) each pair encloses a
  *visible* character (white space or invisible characters alone count as empty);
  (iii) **no visible text lies outside the two tag pairs** (before ``<think>``,
  between ``</think>`` and ``<answer>``, after ``</answer>``), a rule the paper
  does not state; (iv) ``y_hat`` is at most ``max_chars`` characters long; and
  (v) it holds no non-text tokens (chat / vision special tokens such as
  ``<|image_pad|>``, the Unicode replacement character, control characters).
  (i)-(iii) are :func:`sdrlib.reports.parse_template`, (iv)-(v)
  :func:`check_completion`. A completion such as ``"Report: <think> F </think>
  <answer> I </answer>"`` satisfies the paper's rule but scores ``R_fmt = 0`` here.
- ``R_sem(y_hat, y) = (1 - D(E^F(y_hat), E^F(y))) + (1 - D(E^I(y_hat), E^I(y)))``
  in [0, 2] for any distance ``D`` registered in :mod:`sdrlib.distances`
  (``"chamfer"``, ``"hausdorff"``, ...); ``E^S`` is the set of sentence
  embeddings of section ``S``. ``R_sem := 0`` when ``R_fmt = 0``.
- ``R_exact(y_hat, y)`` in {0, 1, 2}: the paper's "discrete exact-match
  accuracy reward", defined here as the number of sections (Findings,
  Impression) whose *set of normalised sentences* equals the reference's.
  A sentence is normalised by lower-casing, collapsing white space and
  dropping trailing punctuation; sentence order and duplicates are ignored,
  matching the paper's view of a section as an unordered set of findings.
  ``R_exact := 0`` when ``R_fmt = 0``.
- The combined reward is ``lambda_fmt * R_fmt + lambda_sem * R_content`` with
  ``R_content`` = ``R_sem`` or ``R_exact`` (paper: both lambdas = 1), in
  ``[0, lambda_fmt + 2 * lambda_sem]``.

Ranges are guaranteed for every input: no function here returns NaN, inf or a
value outside the range above. Bad input is handled in one of three ways:

- a bad *completion* (``None``, not text, image parts, non-text tokens, too long,
  no template, blank section) is a failure: ``R_fmt = 0`` and every content
  reward 0, with the reason counted (:data:`BAD_REASONS`); it never raises.
- a bad *reference* (``None``, NaN, ``pd.NA``, not text, blank) raises
  :class:`ReferenceTextError` naming the column and row: a missing reference is
  never scored as text (``str(nan) == "nan"`` would otherwise be matchable).
- a valid completion whose sentence embeddings or distance cannot be computed
  (the encoder or :mod:`sdrlib.distances` refuses it with a named error, or a
  distance comes back non-finite) scores that section's ``R_sem`` as 0 (distance
  1, as for a section without sentences) and is counted in ``counts["sem_failed"]``.
  A reference the encoder refuses raises.

Bad parameters (unknown reward, a distance setting :mod:`sdrlib.distances`
refuses, NaN / inf / negative / bool / non-numeric weights or ``max_chars``)
raise :class:`RewardError` when the scorer is built, not at the first score.

A reward configuration is named by a string (:data:`REWARD_CONFIGS`):
``"sft"`` (no GRPO), ``"fmt"``, ``"exact"``, any registered distance name, or one of the two
related methods: ``"gcarl"`` (:mod:`sdrlib.gcarl`: ``lambda_fmt R_fmt + lambda_sem
(w_fact R_fact + w_check R_check)``, TRL functions ``r_fmt, r_fact, r_check``) and the EditGRPO
configurations ``"editgrpo"``, ``"editgrpo_para"``, ``"editgrpo_tau<t>"``, ``"editgrpo_ops<k>"`` /
``"editgrpo_opsall"``, ``"editgrpo_noedit"``
(:mod:`sdrlib.editgrpo`: its composite clinical reward ``lambda_fmt R_fmt + lambda_sem (F1_14 +
F1_ent + S_neg)``, TRL functions ``r_fmt, r_f1_14, r_f1_entity, r_sem_neg``; the edits themselves are
made by :class:`sdrlib.editgrpo.EditGRPOTrainer`, every EditGRPO name scores alike).
For these, ``content`` is the weighted sum of the components and ``total`` stays
``lambda_fmt * fmt + lambda_sem * content``, in ``[0, lambda_fmt + lambda_sem * max content]``
(max content: 3 for EditGRPO, ``w_fact + w_check`` for G-CARL).

TRL use (text or vision policy; the dataset carries ``findings`` and
``impression`` reference columns next to ``prompt``)::

    from sdrlib.rewards import trl_reward_functions
    funcs, weights = trl_reward_functions("chamfer")
    args = GRPOConfig(output_dir="out", reward_weights=weights)
    trainer = GRPOTrainer(model=model, reward_funcs=funcs, args=args, train_dataset=ds)
    trainer.train()

TRL logs each function separately (``rewards/r_fmt/mean``,
``rewards/r_sem_chamfer/mean``); the first function also reports the
per-section components, the counts of bad completions by reason and the
seconds spent computing rewards through TRL's ``log_metric`` hook.

Speed: sentences are embedded through :class:`sdrlib.embedding.SentenceEmbedder`,
whose cache means only sentences never seen before reach the encoder (one
batched encoder call per GRPO step); :func:`prewarm` embeds the reference
sentences once before training; the distances of a batch go through the
batched engine ``sdrlib.distances.paired_distances``.

Left out: reward models, length penalties, per-sentence credit assignment.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdrlib.clinical import section_presence
from sdrlib.errors import SDRError
from sdrlib.reports import ReportTextError, is_blank

__all__ = [
    "REWARD_CONFIGS",
    "BAD_REASONS",
    "RewardError",
    "ReferenceTextError",
    "RewardBreakdown",
    "RewardScorer",
    "check_completion",
    "completion_text",
    "exact_match_section",
    "normalise_sentence",
    "prewarm",
    "trl_reward_functions",
    "validate_reward_name",
    "method_of",
]

#: Non-distance reward configurations; any registered distance name is also valid.
REWARD_CONFIGS: tuple[str, ...] = ("sft", "fmt", "exact")

#: Why a completion scored R_fmt = 0 (counted in :attr:`RewardScorer.counts`).
BAD_REASONS: tuple[str, ...] = ("not_text", "non_text_tokens", "too_long", "no_template", "empty_section")

#: Default cap on completion length in characters (a report is a few hundred).
DEFAULT_MAX_CHARS = 4000

_TAGS = ("<think>", "</think>", "<answer>", "</answer>")
# Chat / vision special tokens of Qwen-VL and Gemma-3 that must never appear in a report.
_SPECIAL_TOKEN_RE = re.compile(r"<\|[a-z_]+\|>|<(?:start|end)_of_(?:turn|image)>|<image_soft_token>|<bos>|<eos>|<pad>")
_WS_RE = re.compile(r"\s+")
_TRAILING_PUNCT_RE = re.compile(r"[\s.;:,!?]+$")


class RewardError(SDRError, ValueError):
    """A reward configuration or call is unusable (unknown reward, bad weight, misaligned batch)."""


class ReferenceTextError(ReportTextError, RewardError):
    """A reference section is missing (``None``, NaN, ``pd.NA``, blank) or not text; names column and row."""


def _check_weight(value: Any, name: str) -> float:
    """A reward weight: a real number (not bool), finite and >= 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise RewardError(f"{name} must be a non-negative finite number, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v < 0:
        raise RewardError(f"{name} must be a non-negative finite number, got {value!r}")
    return v


def _check_max_chars(value: Any) -> int:
    """``max_chars``: an int (not bool) >= 1."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RewardError(f"max_chars must be a positive int, got {value!r}")
    return int(value)


def _check_weights(lambda_fmt: Any, lambda_sem: Any) -> tuple[float, float]:
    lf, ls = _check_weight(lambda_fmt, "lambda_fmt"), _check_weight(lambda_sem, "lambda_sem")
    if not np.isfinite(lf + 2.0 * ls):  # the largest total must be finite too
        raise RewardError(f"lambda_fmt + 2 * lambda_sem overflows ({lf}, {ls}); use weights of order 1")
    return lf, ls


def _is_missing(value: Any) -> bool:
    """None, a float NaN (Python or NumPy), ``pd.NA`` / ``pd.NaT`` (checked without importing pandas)."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return type(value).__name__ in ("NAType", "NaTType")


def _as_list(values: Any, what: str) -> list:
    """``list(values)`` for a sequence (list, tuple, array, Series); one string or a non-sequence raises."""
    if isinstance(values, (str, bytes, bytearray, dict)) or not hasattr(values, "__len__"):
        raise RewardError(f"{what} must be a sequence (one entry per completion), got {type(values).__name__}")
    try:
        return list(values)
    except TypeError:  # a 0-d array has __len__ but no items
        raise RewardError(f"{what} must be a sequence (one entry per completion), got {values!r:.60}") from None


def _reference_texts(values: Any, column: str) -> list[str]:
    """The reference sections of one column as ``str``; raise :class:`ReferenceTextError` for a bad one.

    ``values`` is a sequence (list, tuple, NumPy array, pandas Series) of ``str`` or
    UTF-8 ``bytes``; a missing value (``None``, NaN, ``pd.NA``), another type or a
    blank text (:func:`sdrlib.reports.is_blank`) names ``column[row]``.
    """
    values = _as_list(values, column)
    out = []
    for row, v in enumerate(values):
        if _is_missing(v):
            raise ReferenceTextError(f"reference {column}[{row}] is missing ({v!r}); drop the row or fill the section")
        if isinstance(v, (bytes, bytearray)):
            try:
                v = bytes(v).decode("utf-8")
            except UnicodeDecodeError:
                raise ReferenceTextError(f"reference {column}[{row}] is not valid UTF-8") from None
        if not isinstance(v, str):
            raise ReferenceTextError(f"reference {column}[{row}] must be text, got {type(v).__name__} {v!r:.40}")
        if is_blank(v):
            raise ReferenceTextError(f"reference {column}[{row}] is blank ({v!r:.40}); drop the row or fill the section")
        out.append(v)
    return out


def method_of(name: str) -> str | None:
    """``"gcarl"`` / ``"editgrpo"`` for a related-method configuration name, else ``None``.

    Example: ``method_of("editgrpo_tau0.3") -> "editgrpo"``, ``method_of("chamfer") -> None``.
    """
    from sdrlib.editgrpo import is_edit_name

    if name == "gcarl":
        return "gcarl"
    return "editgrpo" if is_edit_name(name) else None


def validate_reward_name(name: str) -> str:
    """Return ``name`` when it is ``"sft"``, ``"fmt"``, ``"exact"``, a distance :mod:`sdrlib.distances` knows,
    ``"gcarl"`` or an EditGRPO name (``editgrpo``, ``editgrpo_para``, ``editgrpo_tau<t>`` with t in [0, 1],
    ``editgrpo_ops<k>`` with k >= 1, ``editgrpo_opsall``, ``editgrpo_noedit``).

    Registered names (``"chamfer"``, ``"hausdorff"``, ...) and parsable settings
    (``"sinkhorn_0.05"``) are accepted; the distance's spec is built here, so a setting
    :mod:`sdrlib.distances` refuses (a bad parameter) fails now, not at the first score.
    Example: ``validate_reward_name("chamfer") -> "chamfer"``;
    ``"cosine"`` raises :class:`RewardError` (a ``ValueError``) listing the valid names.
    """
    if not isinstance(name, str) or not name:
        raise RewardError(f"reward must be a non-empty string, got {name!r}")
    if name in REWARD_CONFIGS or method_of(name) is not None:
        return name
    if name.startswith("editgrpo"):
        raise RewardError(f"unknown EditGRPO configuration {name!r}: use editgrpo, editgrpo_para, editgrpo_noedit, "
                          "editgrpo_ops<k> with k >= 1, editgrpo_opsall or editgrpo[_para|_ops<k>]_tau<t> with t in "
                          "[0, 1] (e.g. editgrpo_tau0.3)")
    from sdrlib import distances

    try:
        distances.get(name)
    except KeyError as exc:  # not a distance name at all
        raise RewardError(
            f"unknown reward {name!r}: use one of {list(REWARD_CONFIGS)} or a distance in "
            f"{distances.available_distances()} ({exc})"
        ) from exc
    except (SDRError, ValueError, TypeError) as exc:  # a distance whose parameters are refused
        raise RewardError(f"reward {name!r}: sdrlib.distances refuses this setting: {exc}") from exc
    return name


# --------------------------------------------------------------------------- completions


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


def check_completion(text: Any, max_chars: int = DEFAULT_MAX_CHARS):
    """Validate one completion: ``(Sections, None)`` when valid, else ``(None, reason)``.

    ``reason`` is one of :data:`BAD_REASONS`, checked in that order; anything that is
    not ``str`` (``None``, numbers, lists, undecodable bytes; UTF-8 bytes are decoded)
    is ``"not_text"``. A section holding only white space or invisible characters
    (zero-width space, BOM, ...) is ``"empty_section"``. Raises :class:`RewardError`
    only for a bad ``max_chars`` (not a positive int).
    Example: ``check_completion("no tags")[1] -> "no_template"``.
    """
    from sdrlib.reports import parse_template

    max_chars = _check_max_chars(max_chars)
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
        return None, ("empty_section" if _tags_ok_but_empty(text) else "no_template")
    if is_blank(sections.findings) or is_blank(sections.impression):
        return None, "empty_section"
    return sections, None


def _tags_ok_but_empty(text: str) -> bool:
    """Tags once each and in order, but a section holds nothing visible (:func:`is_blank`)."""
    if any(text.count(t) != 1 for t in _TAGS):
        return False
    i0, i1, i2, i3 = (text.index(t) for t in _TAGS)
    if not i0 < i1 < i2 < i3:
        return False
    return is_blank(text[i0 + len(_TAGS[0]) : i1]) or is_blank(text[i2 + len(_TAGS[2]) : i3])


# --------------------------------------------------------------------------- exact match


def normalise_sentence(sentence: str) -> str:
    """Lower-case, collapse white space, drop trailing punctuation.

    Example: ``normalise_sentence("  No  effusion. ") -> "no effusion"``.
    """
    return _TRAILING_PUNCT_RE.sub("", _WS_RE.sub(" ", sentence.lower()).strip())


def exact_match_section(generated: str, reference: str) -> float:
    """1.0 when both sections have the same set of normalised sentences, else 0.0.

    Empty sets never match (an empty reference section scores 0; :class:`RewardScorer`
    refuses blank references before they get here). Non-text input raises
    :class:`~sdrlib.reports.ReportTextError`. Returns 0.0 or 1.0.
    Example: ``exact_match_section("B. A.", "a. b.") -> 1.0``.
    """
    from sdrlib.reports import split_sentences

    gen = {normalise_sentence(s) for s in split_sentences(generated)} - {""}
    ref = {normalise_sentence(s) for s in split_sentences(reference)} - {""}
    return float(bool(gen) and gen == ref)


# --------------------------------------------------------------------------- scorer


@dataclass
class RewardBreakdown:
    """Per-completion reward components, arrays of shape ``(n,)`` (float64).

    ``sem_*`` / ``exact_*`` are 0 where ``fmt`` is 0 and NaN-free; ``content`` is the
    component used by the configuration (``sem`` or ``exact``; zeros for ``"fmt"``);
    ``total = lambda_fmt * fmt + lambda_sem * content``; ``reasons[i]`` is ``None`` for a
    valid completion else one of :data:`BAD_REASONS`; ``new_sentences`` is how many sentences
    the encoder had to embed for this batch (cache misses), ``seconds`` the wall time,
    ``sem_failed`` how many section distances failed (scored 0, see the module docstring) and
    ``truncated`` how many sentences the encoder reported as cut to its window for this batch
    (the embedder's ``stats["truncated"]`` when it keeps one, else 0).

    Ranges: ``fmt``, ``exact_*`` in {0, 1}; ``sem_*`` in [0, 1]; ``total`` in
    ``[0, lambda_fmt + 2 * lambda_sem]``; all finite.
    """

    fmt: np.ndarray
    sem_findings: np.ndarray
    sem_impression: np.ndarray
    exact_findings: np.ndarray
    exact_impression: np.ndarray
    content: np.ndarray
    total: np.ndarray
    reasons: list[str | None]
    seconds: float = 0.0
    new_sentences: int = 0
    sem_failed: int = 0
    truncated: int = 0
    #: related-method components, arrays of shape (n,) in [0, 1] (0 where fmt is 0): EditGRPO
    #: ``f1_14``, ``f1_entity``, ``sem_neg``; G-CARL ``fact``, ``check``, ``precision``, ``coverage``,
    #: ``v_pos``, ``v_neg``
    components: dict = field(default_factory=dict)

    @property
    def sem(self) -> np.ndarray:
        return self.sem_findings + self.sem_impression

    @property
    def exact(self) -> np.ndarray:
        return self.exact_findings + self.exact_impression


@dataclass
class RewardScorer:
    """Compute reward components for batches of completions against references.

    Parameters
    ----------
    reward : str
        ``"fmt"``, ``"exact"`` or a registered distance name (``"sft"`` is rejected:
        it means no GRPO).
    embedder : SentenceEmbedder, optional
        Needed for distance rewards; built lazily with the default encoder when
        omitted (local files only).
    lambda_fmt, lambda_sem : float
        Non-negative finite weights of the combined reward (not bool).
    max_chars : int
        Completions longer than this score 0 ("too_long"); a positive int.
    weights : dict, optional
        G-CARL component weights ``{"fact": w, "check": w}`` (default 0.4 / 0.3, the paper's).
    bank : sequence of str, optional
        G-CARL: bank sentences a claim may match (support) besides the reference's.
    threshold : float
        G-CARL: cosine a claim needs with a reference or bank sentence (in [-1, 1]).
    pitfalls : sequence of str
        G-CARL: critical findings whose hallucination is a pitfall (CheXpert-14 names).

    Bad parameters raise :class:`RewardError` here. Attributes ``counts`` (reason ->
    number of completions, plus ``"total"``, ``"new_sentences"`` (the encoder's cache
    misses), ``"sem_failed"`` (section distances that failed and scored 0) and
    ``"truncated"`` (sentences the encoder cut to its window)) and ``seconds`` (time
    spent scoring) accumulate over calls.

    Example: ``RewardScorer("fmt").score(["<think> a. </think> <answer> b. </answer>"], ["a."], ["b."]).total -> [1.]``
    """

    reward: str
    embedder: Any = None
    lambda_fmt: float = 1.0
    lambda_sem: float = 1.0
    max_chars: int = DEFAULT_MAX_CHARS
    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    weights: dict | None = None
    bank: Sequence[str] | None = field(default=None, repr=False)
    threshold: float = 0.7
    pitfalls: Sequence[str] = ("Pneumothorax", "Fracture")
    _last: tuple | None = field(default=None, repr=False)
    _bank_vecs: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from sdrlib import gcarl

        validate_reward_name(self.reward)
        if self.reward == "sft":
            raise RewardError("reward 'sft' means no GRPO: there is nothing to score")
        self.lambda_fmt, self.lambda_sem = _check_weights(self.lambda_fmt, self.lambda_sem)
        self.max_chars = _check_max_chars(self.max_chars)
        w = {"fact": gcarl.DEFAULT_LAMBDAS[1], "check": gcarl.DEFAULT_LAMBDAS[2], **(self.weights or {})}
        if set(w) != {"fact", "check"}:
            raise RewardError(f"weights must have the keys 'fact' and 'check', got {sorted(w)}")
        self.weights = {k: _check_weight(v, f"weights[{k!r}]") for k, v in w.items()}
        try:
            self.threshold = gcarl.check_threshold(self.threshold)
            self.pitfalls = gcarl.check_pitfalls(self.pitfalls)
        except gcarl.GCARLError as exc:
            raise RewardError(str(exc)) from None
        if self.bank is not None:
            bank = _as_list(self.bank, "bank")
            if not all(isinstance(b, str) and b.strip() for b in bank):
                raise RewardError("bank must be a sequence of non-blank sentences")
            self.bank = list(dict.fromkeys(bank))

    @property
    def method(self) -> str | None:
        """``"gcarl"``, ``"editgrpo"`` or ``None`` (:func:`method_of`)."""
        return method_of(self.reward)

    @property
    def is_distance(self) -> bool:
        return self.reward not in REWARD_CONFIGS and self.method is None

    def _embedder(self):
        if self.embedder is None:
            from sdrlib.embedding import SentenceEmbedder

            self.embedder = SentenceEmbedder()
        return self.embedder

    def score(
        self, completions: Sequence[Any], findings: Sequence[str], impression: Sequence[str]
    ) -> RewardBreakdown:
        """Score ``completions[i]`` against ``(findings[i], impression[i])``; all of length n.

        A bad completion scores 0 (reason in ``reasons``); a missing or blank reference
        raises :class:`ReferenceTextError` naming ``findings[i]`` / ``impression[i]``;
        sequences of different lengths (or a single string instead of a sequence) raise
        :class:`RewardError`.
        """
        completions = _as_list(completions, "completions")
        n = len(completions)
        findings = _reference_texts(findings, "findings")
        impression = _reference_texts(impression, "impression")
        if len(findings) != n or len(impression) != n:
            raise RewardError(
                f"completions ({n}), findings ({len(findings)}) and impression ({len(impression)}) differ in length"
            )
        t0 = time.perf_counter()
        misses0 = self._stat("misses")
        truncated0 = self._stat("truncated")
        failed0 = self.counts["sem_failed"]
        fmt = np.zeros(n)
        sem_f, sem_i, ex_f, ex_i = (np.zeros(n) for _ in range(4))
        reasons: list[str | None] = []
        valid: list[tuple[int, Any]] = []
        for i, c in enumerate(completions):
            sections, reason = check_completion(completion_text(c), self.max_chars)
            reasons.append(reason)
            if sections is not None:
                fmt[i] = 1.0
                valid.append((i, sections))
        if valid and self.reward == "exact":
            for i, s in valid:
                ex_f[i] = exact_match_section(s.findings, findings[i])
                ex_i[i] = exact_match_section(s.impression, impression[i])
        elif valid and self.is_distance:
            idx = [i for i, _ in valid]
            gen_f = [s.findings for _, s in valid]
            gen_i = [s.impression for _, s in valid]
            sem_f[idx] = 1.0 - self._distances(gen_f, [findings[i] for i in idx])
            sem_i[idx] = 1.0 - self._distances(gen_i, [impression[i] for i in idx])
        comps: dict[str, np.ndarray] = {}
        if self.method == "editgrpo":
            comps = self._editgrpo(valid, findings, impression, n)
            content = comps["f1_14"] + comps["f1_entity"] + comps["sem_neg"]
        elif self.method == "gcarl":
            comps = self._gcarl(valid, findings, impression, n)
            content = self.weights["fact"] * comps["fact"] + self.weights["check"] * comps["check"]
        elif self.reward == "exact":
            content = ex_f + ex_i
        elif self.is_distance:
            content = sem_f + sem_i
        else:
            content = np.zeros(n)
        total = self.lambda_fmt * fmt + self.lambda_sem * content
        seconds = time.perf_counter() - t0
        self.seconds += seconds
        self.counts["total"] += n
        self.counts.update(r for r in reasons if r is not None)
        new = self._stat("misses") - misses0
        self.counts["new_sentences"] += new
        # Sentences the encoder cut to its window are embedded from their head only; they are
        # counted here (and logged by the TRL adapter), never hidden, when the embedder counts them.
        truncated = self._stat("truncated") - truncated0
        self.counts["truncated"] += truncated
        failed = self.counts["sem_failed"] - failed0
        return RewardBreakdown(fmt, sem_f, sem_i, ex_f, ex_i, content, total, reasons, seconds, new,
                               failed, truncated, comps)

    def _editgrpo(self, valid: list, findings: list[str], impression: list[str], n: int) -> dict[str, np.ndarray]:
        """EditGRPO's composite components (:func:`sdrlib.editgrpo.clinical_components` + ``sem_neg``)."""
        from sdrlib.editgrpo import clinical_components

        out = {k: np.zeros(n) for k in ("f1_14", "f1_entity", "sem_neg")}
        if not valid:
            return out
        idx = [i for i, _ in valid]
        gf, gi = [s.findings for _, s in valid], [s.impression for _, s in valid]
        rf, ri = [findings[i] for i in idx], [impression[i] for i in idx]
        for k, v in clinical_components(gf, gi, rf, ri).items():
            out[k][idx] = v
        d = self._distances(gf, rf, "chamfer_neg") + self._distances(gi, ri, "chamfer_neg")
        out["sem_neg"][idx] = 1.0 - d / 2.0
        return out

    def _gcarl(self, valid: list, findings: list[str], impression: list[str], n: int) -> dict[str, np.ndarray]:
        """G-CARL's R_fact and R_check (:mod:`sdrlib.gcarl`) with their parts, for the parsed completions."""
        from sdrlib import gcarl
        from sdrlib.clinical import label_report
        from sdrlib.reports import split_sentences

        out = {k: np.zeros(n) for k in ("fact", "check", "precision", "coverage", "v_pos", "v_neg")}
        if not valid:
            return out
        emb = self._embedder()
        if self.bank and self._bank_vecs is None:
            self._bank_vecs = _encode_sentences(emb, self.bank)
        split = [(split_sentences(s.findings) + split_sentences(s.impression),
                  split_sentences(findings[i]) + split_sentences(impression[i])) for i, s in valid]
        flat = [x for claims, ref in split for x in claims + ref]
        vecs = _encode_sentences(emb, flat)  # one encoder call for the batch
        start = 0
        for (i, s), (claims, ref) in zip(valid, split):
            cv = vecs[start:start + len(claims)]
            rv = vecs[start + len(claims):start + len(claims) + len(ref)]
            start += len(claims) + len(ref)
            if not _usable_set(cv) or not _usable_set(rv):
                self.counts["sem_failed"] += 1
                continue
            z = gcarl.claim_validity(claims, cv, ref, rv, self._bank_vecs, self.threshold)
            out["fact"][i], out["precision"][i], out["coverage"][i] = gcarl.fact_reward(z, len(ref))
            checklist = gcarl.build_checklist(label_report(f"{findings[i]} {impression[i]}"), self.pitfalls)
            out["check"][i], out["v_pos"][i], out["v_neg"][i] = gcarl.check_reward(
                label_report(f"{s.findings} {s.impression}"), checklist)
        return out

    def _stat(self, key: str) -> int:
        stats = getattr(self.embedder, "stats", None) if self.embedder is not None else None
        return int(stats.get(key, 0)) if isinstance(stats, dict) else 0

    def _distances(self, generated: list[str], references: list[str], name: str | None = None) -> np.ndarray:
        """``D(E(generated[k]), E(references[k]))`` for each k in [0, 1], with one encoder pass for all.

        An empty sentence set (no letters) is maximally far (1). A generated section the
        encoder or the distance refuses (named error) or whose distance is not finite
        also gets 1 and is counted in ``counts["sem_failed"]``; a reference the encoder
        refuses raises (see :meth:`_encode`).
        """
        k = len(generated)
        gen_sets, ref_sets, gen_ok = self._encode(generated, references)
        out = np.ones(k)
        pairs = [j for j in range(k) if gen_ok[j] and len(gen_sets[j]) and len(ref_sets[j])]
        failed = k - int(sum(gen_ok))
        if pairs:
            d = _safe_paired_distances([gen_sets[j] for j in pairs], [ref_sets[j] for j in pairs], name or self.reward,
                                       ([generated[j] for j in pairs], [references[j] for j in pairs]))
            bad = ~np.isfinite(d)
            failed += int(bad.sum())
            out[pairs] = np.where(bad, 1.0, d)
        self.counts["sem_failed"] += failed
        return np.clip(out, 0.0, 1.0)  # 1 - clip(D, 0, 1) is sdrlib.distances.reward

    def _encode(self, generated: list[str], references: list[str]):
        """Sentence-embedding sets of both lists, one encoder pass when nothing fails.

        Returns ``(gen_sets, ref_sets, gen_ok)``; ``gen_ok[j]`` is False when generated
        section ``j`` could not be embedded (encoder error, non-finite or zero rows).
        Only when the joint pass fails is each text retried alone, to find the culprit;
        a reference that fails raises its error.
        """
        emb = self._embedder()
        k = len(generated)
        try:
            sets = emb.encode_sections(list(generated) + list(references))
            gen_sets, ref_sets = list(sets[:k]), list(sets[k:])
        except SDRError:
            ref_sets = []
            for row, text in enumerate(references):
                try:
                    ref_sets.append(emb.encode_sections([text])[0])
                except SDRError as exc:
                    raise ReferenceTextError(f"reference row {row} could not be embedded: {exc}") from exc
            gen_sets = []
            for text in generated:
                try:
                    gen_sets.append(emb.encode_sections([text])[0])
                except SDRError:
                    gen_sets.append(None)
        for row, a in enumerate(ref_sets):
            if not _usable_set(a):
                raise ReferenceTextError(f"reference row {row}: the encoder returned non-finite or zero vectors")
        gen_ok = [a is not None and _usable_set(a) for a in gen_sets]
        return gen_sets, ref_sets, gen_ok

    # -- TRL glue -------------------------------------------------------------------

    def score_cached(self, completions, findings, impression) -> tuple[RewardBreakdown, bool]:
        """:meth:`score`, reusing the previous result when called again on the same batch.

        TRL calls every reward function on the same batch in turn; the second call
        is free. Returns ``(breakdown, fresh)``.
        """
        completions = _as_list(completions, "completions")
        findings = _reference_texts(findings, "findings")
        impression = _reference_texts(impression, "impression")
        key = (tuple(map(repr, completions)), tuple(findings), tuple(impression))
        if self._last is not None and self._last[0] == key:
            return self._last[1], False
        out = self.score(completions, findings, impression)
        self._last = (key, out)
        return out, True


def _encode_sentences(embedder: Any, sentences: Sequence[str]) -> np.ndarray:
    """Embeddings of single sentences, ``(n, d)``: ``embedder.encode`` when it has one, else one
    ``encode_sections`` call with each sentence as a section."""
    if not sentences:
        return np.zeros((0, int(getattr(embedder, "dim", 1))), np.float32)
    if hasattr(embedder, "encode"):
        return np.asarray(embedder.encode(list(sentences)))
    return np.concatenate([a[:1] for a in embedder.encode_sections(list(sentences))])


def prewarm(embedder: Any, findings: Sequence[str], impression: Sequence[str]) -> dict:
    """Embed every reference sentence once, before training, so rewards only embed new sentences.

    The references are known up front (the paper caches their embeddings on disk), so this
    moves their encoder cost out of the GRPO steps. Returns the embedder's ``stats``.
    Example: ``prewarm(emb, [r.findings for r in train], [r.impression for r in train])``.
    """
    texts = [t for t in list(findings) + list(impression) if isinstance(t, str) and t.strip()]
    if texts:
        embedder.encode_sections(texts)
    return dict(getattr(embedder, "stats", {}) or {})


def _usable_set(a: Any) -> bool:
    """An embedding set the distances accept: 2-D, finite, no zero rows (an empty set is usable)."""
    a = np.asarray(a)
    if a.ndim != 2:
        return False
    if not len(a):
        return True
    return bool(np.isfinite(a).all() and (np.linalg.norm(a.astype(np.float64), axis=1) > 0).all())


def _safe_paired_distances(gen: list[np.ndarray], ref: list[np.ndarray], name: str,
                           texts: tuple[list[str], list[str]] | None = None) -> np.ndarray:
    """:func:`_paired_distances`, with a pair the distance layer refuses (named error) as NaN.

    The batch is tried at once; only if it raises is each pair retried alone, so one
    degenerate pair cannot take the others down. Callers turn NaN into a failure.
    """
    from sdrlib import distances

    # section texts are passed on only to negation-aware settings (they label the sentences)
    neg = texts is not None and distances.get(name).negation_aware
    try:
        return _paired_distances(gen, ref, name, *((texts,) if neg else ()))
    except SDRError:
        out = np.full(len(gen), np.nan)
        for j, (a, b) in enumerate(zip(gen, ref)):
            try:
                one = ([texts[0][j]], [texts[1][j]]) if neg else None
                out[j] = _paired_distances([a], [b], name, *((one,) if neg else ()))[0]
            except SDRError:
                pass
        return out


def _paired_distances(gen: list[np.ndarray], ref: list[np.ndarray], name: str,
                      texts: tuple[list[str], list[str]] | None = None) -> np.ndarray:
    """Distances between ``gen[k]`` and ``ref[k]`` through :mod:`sdrlib.distances`.

    Uses the batched engine (``paired_distances``) when it is importable, else the
    per-pair reference ``set_distance``; both agree to tolerance (tested there).
    A negation-aware setting (``chamfer_neg``) also needs the section ``texts`` (generated,
    reference), labelled per sentence by :mod:`sdrlib.distances.negation`.
    """
    from sdrlib import distances

    if texts is not None and distances.get(name).negation_aware:
        from sdrlib.distances import negation

        return negation.paired_distances_neg(gen, section_presence(texts[0]), ref,
                                             section_presence(texts[1]), name)

    try:
        batched = distances.paired_distances
    except (AttributeError, ImportError):
        batched = None
    if batched is not None:
        return np.asarray(batched(gen, ref, name), dtype=np.float64)
    return np.array([distances.set_distance(a, b, name) for a, b in zip(gen, ref)], dtype=np.float64)


def _column(kwargs: dict, *names: str) -> list[str]:
    """The first present reference column among ``names``, checked by :func:`_reference_texts`.

    Values are never converted with ``str()``: ``None`` / NaN / ``pd.NA`` / blank raise
    :class:`ReferenceTextError` naming the column and row.
    """
    for name in names:
        if name in kwargs and kwargs[name] is not None:
            return _reference_texts(kwargs[name], name)
    raise RewardError(
        f"reward function needs a reference column {names[0]!r} in the dataset "
        f"(TRL passes dataset columns as keyword arguments); got columns {sorted(kwargs)}"
    )


def trl_reward_functions(
    reward: str,
    embedder: Any = None,
    *,
    lambda_fmt: float | None = None,
    lambda_sem: float | None = None,
    max_chars: int | None = None,
    scorer: RewardScorer | None = None,
    **method_kwargs: Any,
) -> tuple[list[Callable[..., list[float]]], list[float]]:
    """Reward functions and weights for ``GRPOTrainer(reward_funcs=..., args=GRPOConfig(reward_weights=...))``.

    Returns ``([r_fmt], [lambda_fmt])`` for ``"fmt"``, ``([r_fmt, r_exact], [lambda_fmt, lambda_sem])``
    for ``"exact"``, ``([r_fmt, r_sem_<name>], [lambda_fmt, lambda_sem])`` for a distance,
    ``([r_fmt, r_fact, r_check], [lambda_fmt, lambda_sem * w_fact, lambda_sem * w_check])`` for ``"gcarl"``
    (``lambda_fmt`` defaults to G-CARL's 0.3 there) and ``([r_fmt, r_f1_14, r_f1_entity, r_sem_neg],
    [lambda_fmt, lambda_sem, lambda_sem, lambda_sem])`` for an EditGRPO name (module doc); ``method_kwargs``
    (``weights``, ``bank``, ``threshold``, ``pitfalls``) go to the :class:`RewardScorer` built here. Each
    function has TRL's signature ``f(completions, **kwargs) -> list[float]`` and reads the
    reference from the ``findings`` and ``impression`` dataset columns (``impressions`` also
    accepted). TRL sums ``weight * f`` so the trainer's reward equals ``RewardBreakdown.total``.

    ``lambda_fmt`` / ``lambda_sem`` / ``max_chars`` default to 1.0 / 1.0 /
    :data:`DEFAULT_MAX_CHARS`; with ``scorer`` given they default to the scorer's, and
    a different explicit value raises :class:`RewardError` (the weights TRL applies must be
    the scorer's). Bad values raise :class:`RewardError` here. A missing reference value
    raises :class:`ReferenceTextError` at call time; a bad completion scores 0.
    Example: ``funcs, w = trl_reward_functions("hausdorff")``.
    """
    if scorer is None:
        from sdrlib.gcarl import DEFAULT_LAMBDAS

        validate_reward_name(reward)
        default_fmt = DEFAULT_LAMBDAS[0] if method_of(reward) == "gcarl" else 1.0
        scorer = RewardScorer(
            reward, embedder, default_fmt if lambda_fmt is None else lambda_fmt,
            1.0 if lambda_sem is None else lambda_sem, DEFAULT_MAX_CHARS if max_chars is None else max_chars,
            **method_kwargs,
        )
    else:
        if method_kwargs:
            raise RewardError(f"{sorted(method_kwargs)} belong to the scorer; set them on the RewardScorer")
        if not isinstance(scorer, RewardScorer):
            raise RewardError(f"scorer must be a RewardScorer, got {type(scorer).__name__}")
        if scorer.reward != reward:
            raise RewardError(f"scorer computes {scorer.reward!r}, asked for {reward!r}")
        for key, given, have in (("lambda_fmt", lambda_fmt, scorer.lambda_fmt),
                                 ("lambda_sem", lambda_sem, scorer.lambda_sem),
                                 ("max_chars", max_chars, scorer.max_chars)):
            if given is None:
                continue
            checked = _check_max_chars(given) if key == "max_chars" else _check_weight(given, key)
            if checked != have:
                raise RewardError(f"{key}={given!r} differs from the scorer's {have!r}; set it on the scorer")
    lambda_fmt, lambda_sem = scorer.lambda_fmt, scorer.lambda_sem

    def _run(completions, kwargs) -> RewardBreakdown:
        b, fresh = scorer.score_cached(
            completions, _column(kwargs, "findings"), _column(kwargs, "impression", "impressions")
        )
        log = kwargs.get("log_metric")
        if fresh and callable(log):
            n = max(len(b.reasons), 1)
            if scorer.is_distance:
                log("reward_components/sem_findings", float(b.sem_findings.mean()))
                log("reward_components/sem_impression", float(b.sem_impression.mean()))
            if scorer.reward == "exact":
                log("reward_components/exact_findings", float(b.exact_findings.mean()))
                log("reward_components/exact_impression", float(b.exact_impression.mean()))
            for reason in BAD_REASONS:
                log(f"bad_completions/{reason}", sum(r == reason for r in b.reasons) / n)
            for name, values in b.components.items():
                log(f"reward_components/{name}", float(np.mean(values)))
            if scorer.is_distance or scorer.method:
                log("reward_components/sem_failed", float(b.sem_failed))
                log("reward_components/truncated_sentences", float(b.truncated))
            log("reward_time/seconds", b.seconds)
            log("reward_time/new_sentences", float(b.new_sentences))
        return b

    def r_fmt(completions, **kwargs) -> list[float]:
        """R_fmt per completion, stricter than the paper's (module doc): no visible text outside the tags."""
        return _run(completions, kwargs).fmt.tolist()

    funcs: list[Callable[..., list[float]]] = [r_fmt]
    weights = [float(lambda_fmt)]
    if reward == "exact":

        def r_exact(completions, **kwargs) -> list[float]:
            return _run(completions, kwargs).exact.tolist()

        funcs.append(r_exact)
        weights.append(float(lambda_sem))
    elif scorer.is_distance:

        def r_sem(completions, **kwargs) -> list[float]:
            return _run(completions, kwargs).sem.tolist()

        r_sem.__name__ = r_sem.__qualname__ = f"r_sem_{reward}"
        funcs.append(r_sem)
        weights.append(float(lambda_sem))
    elif scorer.method is not None:
        parts = ({"r_fact": ("fact", scorer.weights["fact"]), "r_check": ("check", scorer.weights["check"])}
                 if scorer.method == "gcarl" else
                 {"r_f1_14": ("f1_14", 1.0), "r_f1_entity": ("f1_entity", 1.0), "r_sem_neg": ("sem_neg", 1.0)})
        for fname, (key, w) in parts.items():

            def component(completions, _key=key, **kwargs) -> list[float]:
                return _run(completions, kwargs).components[_key].tolist()

            component.__name__ = component.__qualname__ = fname
            funcs.append(component)
            weights.append(float(lambda_sem) * w)
    for f in funcs:
        f.scorer = scorer  # type: ignore[attr-defined]
    return funcs, weights
