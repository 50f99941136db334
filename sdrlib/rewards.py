"""GRPO rewards: format, set-distance semantic and exact-match, with TRL adapters.

Paper sec. 3.2. For a generated report ``y_hat`` and its reference ``y``:

- ``R_fmt(y_hat)`` in {0, 1}: 1 when ``y_hat`` is a valid
  ``<think> F </think> <answer> I </answer>`` template
  (:func:`sdrlib.reports.parse_template`) *and* passes two guards the paper
  leaves implicit: it is at most ``max_chars`` characters long and contains no
  non-text tokens (chat / vision special tokens such as ``<|image_pad|>``, the
  Unicode replacement character, control characters).
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
  ``R_content`` = ``R_sem`` or ``R_exact`` (paper: both lambdas = 1).

A reward configuration is named by a string (:data:`REWARD_CONFIGS`):
``"sft"`` (no GRPO), ``"fmt"``, ``"exact"``, or any registered distance name.

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

__all__ = [
    "REWARD_CONFIGS",
    "BAD_REASONS",
    "RewardBreakdown",
    "RewardScorer",
    "check_completion",
    "completion_text",
    "exact_match_section",
    "normalise_sentence",
    "prewarm",
    "trl_reward_functions",
    "validate_reward_name",
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


def validate_reward_name(name: str) -> str:
    """Return ``name`` when it is ``"sft"``, ``"fmt"``, ``"exact"`` or a distance :mod:`sdrlib.distances` knows.

    Registered names (``"chamfer"``, ``"hausdorff"``, ...) and parsable settings
    (``"sinkhorn_0.05"``) are accepted. Example: ``validate_reward_name("chamfer") -> "chamfer"``;
    ``"cosine"`` raises ``ValueError`` listing the valid names.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"reward must be a non-empty string, got {name!r}")
    if name in REWARD_CONFIGS:
        return name
    from sdrlib import distances

    try:
        distances.get(name)
    except (ValueError, KeyError) as exc:
        raise ValueError(
            f"unknown reward {name!r}: use one of {list(REWARD_CONFIGS)} or a distance in "
            f"{distances.available_distances()} ({exc})"
        ) from None
    return name


# --------------------------------------------------------------------------- completions


def completion_text(completion: Any) -> str | None:
    """Return the text of one TRL completion, or ``None`` when it holds no text.

    Accepts a plain string, a conversational completion
    ``[{"role": "assistant", "content": ...}]`` (the last assistant message is
    used) and content given as a list of parts ``[{"type": "text", "text": ...}]``.
    Example: ``completion_text([{"role": "assistant", "content": "hi"}]) -> "hi"``.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return _content_text(completion.get("content"))
    if isinstance(completion, (list, tuple)):
        msgs = [m for m in completion if isinstance(m, dict)]
        if not msgs or len(msgs) != len(completion):
            return None
        assistant = [m for m in msgs if m.get("role", "assistant") == "assistant"] or msgs
        return _content_text(assistant[-1].get("content"))
    return None


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:  # an image / audio part in a report is not text
                return None
        return "".join(parts)
    return None


def _has_non_text(text: str) -> bool:
    if "\ufffd" in text or _SPECIAL_TOKEN_RE.search(text):
        return True
    return any(unicodedata.category(ch) in ("Cc", "Cs", "Co") and ch not in "\n\t\r" for ch in text)


def check_completion(text: str | None, max_chars: int = DEFAULT_MAX_CHARS):
    """Validate one completion: ``(Sections, None)`` when valid, else ``(None, reason)``.

    ``reason`` is one of :data:`BAD_REASONS`, checked in that order.
    Example: ``check_completion("no tags")[1] -> "no_template"``.
    """
    from sdrlib.reports import parse_template

    if text is None:
        return None, "not_text"
    if _has_non_text(text):
        return None, "non_text_tokens"
    if len(text) > max_chars:
        return None, "too_long"
    sections = parse_template(text)
    if sections is None:
        return None, ("empty_section" if _tags_ok_but_empty(text) else "no_template")
    if not sections.findings.strip() or not sections.impression.strip():
        return None, "empty_section"
    return sections, None


def _tags_ok_but_empty(text: str) -> bool:
    """Tags once each and in order, but a section holds only white space."""
    if any(text.count(t) != 1 for t in _TAGS):
        return False
    i0, i1, i2, i3 = (text.index(t) for t in _TAGS)
    if not i0 < i1 < i2 < i3:
        return False
    return not text[i0 + len(_TAGS[0]) : i1].strip() or not text[i2 + len(_TAGS[2]) : i3].strip()


# --------------------------------------------------------------------------- exact match


def normalise_sentence(sentence: str) -> str:
    """Lower-case, collapse white space, drop trailing punctuation.

    Example: ``normalise_sentence("  No  effusion. ") -> "no effusion"``.
    """
    return _TRAILING_PUNCT_RE.sub("", _WS_RE.sub(" ", sentence.lower()).strip())


def exact_match_section(generated: str, reference: str) -> float:
    """1.0 when both sections have the same set of normalised sentences, else 0.0.

    Empty sets never match (an empty reference section scores 0).
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
    the encoder had to embed for this batch (cache misses), ``seconds`` the wall time.
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
        Non-negative weights of the combined reward.
    max_chars : int
        Completions longer than this score 0 ("too_long").

    Attributes ``counts`` (reason -> number of completions, plus ``"total"`` and
    ``"new_sentences"``, the encoder's cache misses) and
    ``seconds`` (time spent scoring) accumulate over calls.

    Example: ``RewardScorer("fmt").score(["<think> a. </think> <answer> b. </answer>"], ["a."], ["b."]).total -> [1.]``
    """

    reward: str
    embedder: Any = None
    lambda_fmt: float = 1.0
    lambda_sem: float = 1.0
    max_chars: int = DEFAULT_MAX_CHARS
    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    _last: tuple | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        validate_reward_name(self.reward)
        if self.reward == "sft":
            raise ValueError("reward 'sft' means no GRPO: there is nothing to score")
        if self.lambda_fmt < 0 or self.lambda_sem < 0:
            raise ValueError(f"reward weights must be non-negative, got {self.lambda_fmt}, {self.lambda_sem}")
        if self.max_chars <= 0:
            raise ValueError(f"max_chars must be positive, got {self.max_chars}")

    @property
    def is_distance(self) -> bool:
        return self.reward not in REWARD_CONFIGS

    def _embedder(self):
        if self.embedder is None:
            from sdrlib.embedding import SentenceEmbedder

            self.embedder = SentenceEmbedder()
        return self.embedder

    def score(
        self, completions: Sequence[Any], findings: Sequence[str], impression: Sequence[str]
    ) -> RewardBreakdown:
        """Score ``completions[i]`` against ``(findings[i], impression[i])``; all of length n."""
        n = len(completions)
        if len(findings) != n or len(impression) != n:
            raise ValueError(
                f"completions ({n}), findings ({len(findings)}) and impression ({len(impression)}) differ in length"
            )
        t0 = time.perf_counter()
        misses0 = self._misses()
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
        if self.reward == "exact":
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
        new = self._misses() - misses0
        self.counts["new_sentences"] += new
        return RewardBreakdown(fmt, sem_f, sem_i, ex_f, ex_i, content, total, reasons, seconds, new)

    def _misses(self) -> int:
        stats = getattr(self.embedder, "stats", None) if self.embedder is not None else None
        return int(stats.get("misses", 0)) if isinstance(stats, dict) else 0

    def _distances(self, generated: list[str], references: list[str]) -> np.ndarray:
        """``D(E(generated[k]), E(references[k]))`` for each k, with one encoder pass for all."""
        emb = self._embedder()
        sets = emb.encode_sections(list(generated) + list(references))
        k = len(generated)
        gen_sets, ref_sets = sets[:k], sets[k:]
        out = np.ones(k)  # an empty sentence set (no letters) is maximally far
        pairs = [j for j in range(k) if len(gen_sets[j]) and len(ref_sets[j])]
        if pairs:
            out[pairs] = _paired_distances([gen_sets[j] for j in pairs], [ref_sets[j] for j in pairs], self.reward)
        return np.clip(out, 0.0, 1.0)  # 1 - clip(D, 0, 1) is sdrlib.distances.reward

    # -- TRL glue -------------------------------------------------------------------

    def score_cached(self, completions, findings, impression) -> tuple[RewardBreakdown, bool]:
        """:meth:`score`, reusing the previous result when called again on the same batch.

        TRL calls every reward function on the same batch in turn; the second call
        is free. Returns ``(breakdown, fresh)``.
        """
        key = (tuple(map(repr, completions)), tuple(findings), tuple(impression))
        if self._last is not None and self._last[0] == key:
            return self._last[1], False
        out = self.score(completions, findings, impression)
        self._last = (key, out)
        return out, True


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


def _paired_distances(gen: list[np.ndarray], ref: list[np.ndarray], name: str) -> np.ndarray:
    """Distances between ``gen[k]`` and ``ref[k]`` through :mod:`sdrlib.distances`.

    Uses the batched engine (``paired_distances``) when it is importable, else the
    per-pair reference ``set_distance``; both agree to tolerance (tested there).
    """
    from sdrlib import distances

    try:
        batched = distances.paired_distances
    except (AttributeError, ImportError):
        batched = None
    if batched is not None:
        return np.asarray(batched(gen, ref, name), dtype=np.float64)
    return np.array([distances.set_distance(a, b, name) for a, b in zip(gen, ref)], dtype=np.float64)


def _column(kwargs: dict, *names: str) -> list[str]:
    for name in names:
        if name in kwargs and kwargs[name] is not None:
            return [("" if v is None else str(v)) for v in kwargs[name]]
    raise ValueError(
        f"reward function needs a reference column {names[0]!r} in the dataset "
        f"(TRL passes dataset columns as keyword arguments); got columns {sorted(kwargs)}"
    )


def trl_reward_functions(
    reward: str,
    embedder: Any = None,
    *,
    lambda_fmt: float = 1.0,
    lambda_sem: float = 1.0,
    max_chars: int = DEFAULT_MAX_CHARS,
    scorer: RewardScorer | None = None,
) -> tuple[list[Callable[..., list[float]]], list[float]]:
    """Reward functions and weights for ``GRPOTrainer(reward_funcs=..., args=GRPOConfig(reward_weights=...))``.

    Returns ``([r_fmt], [lambda_fmt])`` for ``"fmt"``, ``([r_fmt, r_exact], [lambda_fmt, lambda_sem])``
    for ``"exact"`` and ``([r_fmt, r_sem_<name>], [lambda_fmt, lambda_sem])`` for a distance. Each
    function has TRL's signature ``f(completions, **kwargs) -> list[float]`` and reads the
    reference from the ``findings`` and ``impression`` dataset columns (``impressions`` also
    accepted). TRL sums ``weight * f`` so the trainer's reward equals ``RewardBreakdown.total``.
    Example: ``funcs, w = trl_reward_functions("hausdorff")``.
    """
    if scorer is None:
        scorer = RewardScorer(reward, embedder, lambda_fmt, lambda_sem, max_chars)
    elif scorer.reward != reward:
        raise ValueError(f"scorer computes {scorer.reward!r}, asked for {reward!r}")

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
            log("reward_time/seconds", b.seconds)
            log("reward_time/new_sentences", float(b.new_sentences))
        return b

    def r_fmt(completions, **kwargs) -> list[float]:
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
    for f in funcs:
        f.scorer = scorer  # type: ignore[attr-defined]
    return funcs, weights
