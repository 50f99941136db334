"""The reward scorer: one batch of completions against its references, for any reward configuration.

:class:`RewardScorer` checks every completion (:func:`sdrlib.rewards.completion.check_completion`: R_fmt),
hands the valid ones to its method's :meth:`~sdrlib.rewards.spec.RewardMethod.score` (the content reward:
R_sem, R_exact, G-CARL's, EditGRPO's) and combines them, ``total = lambda_fmt * fmt + lambda_sem * content``
(:class:`RewardBreakdown`). It also holds what every method shares: the reference checks (a missing or
blank reference raises :class:`~sdrlib.rewards.spec.ReferenceTextError` naming column and row), the
sentence encoder and its cache, and the set distances between sections
(:meth:`RewardScorer.section_distances`, through the batched engine of :mod:`sdrlib.distances`).
Scope, ranges and the handling of bad input: :mod:`sdrlib.rewards`.

Left out: reading reward names (:mod:`sdrlib.rewards.spec`), each method's content reward
(:mod:`sdrlib.rewards.methods`), TRL's function signature (:mod:`sdrlib.rewards.trl`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdrlib import distances
from sdrlib.clinical import OBSERVATIONS, observation_presence, section_presence
from sdrlib.vocabulary import PATHOLOGIES
from sdrlib.embedding import SentenceEmbedder
from sdrlib.errors import SDRError
from sdrlib.reports import is_blank
from sdrlib.rewards.completion import DEFAULT_MAX_CHARS, check_completion, check_max_chars, check_weight, completion_text
from sdrlib.rewards.spec import ReferenceTextError, RewardError, RewardSpec, get_method, parse_reward

__all__ = ["RewardBreakdown", "RewardScorer", "prewarm", "as_list", "reference_texts", "encode_sentences",
           "usable_set"]

def _check_weights(lambda_fmt: Any, lambda_sem: Any) -> tuple[float, float]:
    lf, ls = check_weight(lambda_fmt, "lambda_fmt"), check_weight(lambda_sem, "lambda_sem")
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


def as_list(values: Any, what: str) -> list:
    """``list(values)`` for a sequence (list, tuple, array, Series); one string or a non-sequence raises."""
    if isinstance(values, (str, bytes, bytearray, dict)) or not hasattr(values, "__len__"):
        raise RewardError(f"{what} must be a sequence (one entry per completion), got {type(values).__name__}")
    try:
        return list(values)
    except TypeError:  # a 0-d array has __len__ but no items
        raise RewardError(f"{what} must be a sequence (one entry per completion), got {values!r:.60}") from None


def reference_texts(values: Any, column: str) -> list[str]:
    """The reference sections of one column as ``str``; raise :class:`ReferenceTextError` for a bad one.

    ``values`` is a sequence (list, tuple, NumPy array, pandas Series) of ``str`` or
    UTF-8 ``bytes``; a missing value (``None``, NaN, ``pd.NA``), another type or a
    blank text (:func:`sdrlib.reports.is_blank`) names ``column[row]``.
    """
    values = as_list(values, column)
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



@dataclass
class RewardBreakdown:
    """Per-completion reward components, arrays of shape ``(n,)`` (float64).

    ``sem_*`` / ``exact_*`` are 0 where ``fmt`` is 0 and NaN-free; ``content`` is the
    component used by the configuration (``sem`` or ``exact``; zeros for ``"fmt"``);
    ``total = weight * (lambda_fmt * fmt + lambda_sem * content)`` with ``weight`` the prompt weight (ones but
    for ``chamfer_recall_<alpha>_bal<w>``, whose references stating a finding weigh ``w``; the components are
    unweighted); ``abnormal`` marks the completions whose reference states a positive finding (offline labeler,
    the stratum the training log splits the reward by); ``reasons[i]`` is ``None`` for a
    valid completion else one of :data:`BAD_REASONS`; ``new_sentences`` is how many sentences
    the encoder had to embed for this batch (cache misses), ``seconds`` the wall time,
    ``sem_failed`` how many section distances failed (scored 0, see the module docstring) and
    ``truncated`` how many sentences the encoder reported as cut to its window for this batch
    (the embedder's ``stats["truncated"]`` when it keeps one, else 0).

    Ranges: ``fmt``, ``exact_*`` in {0, 1}; ``sem_*`` in [0, 1]; ``total`` in
    ``[0, weight * (lambda_fmt + 2 * lambda_sem)]``; all finite.
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
    weight: np.ndarray | None = None
    abnormal: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.weight is None:
            self.weight = np.ones(len(self.fmt))

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
    reward : str or RewardSpec
        A reward name (:func:`sdrlib.rewards.parse_reward`; ``"sft"`` is rejected: it means no GRPO).
    embedder : SentenceEmbedder, optional
        Needed for every reward but ``fmt`` / ``exact``; built lazily with the default encoder when
        omitted (local files only).
    lambda_fmt, lambda_sem : float, optional
        Non-negative finite weights of the combined reward (not bool); ``None`` (the default) = the method's
        own (:meth:`~sdrlib.rewards.spec.RewardMethod.lambdas`: G-CARL's ``settings.lambda_fmt, 1``, the
        controls' ``0, 1``, else ``1, 1``), as a profile's run would use them.
    max_chars : int
        Completions longer than this score 0 ("too_long"); a positive int.
    settings : optional
        The method's settings object (its dataclass, e.g. ``GCARLSettings``; ``None`` = its defaults).
    data : mapping, optional
        The method's data (G-CARL: ``{"bank": sentences}``, bank sentences a claim may match besides the
        reference's).

    Bad parameters raise :class:`RewardError` here. Attributes ``counts`` (reason ->
    number of completions, plus ``"total"``, ``"new_sentences"`` (the encoder's cache
    misses), ``"sem_failed"`` (section distances that failed and scored 0) and
    ``"truncated"`` (sentences the encoder cut to its window)) and ``seconds`` (time
    spent scoring) accumulate over calls; ``spec`` is the parsed reward name.

    Example: ``RewardScorer("fmt").score(["<think> a. </think> <answer> b. </answer>"], ["a."], ["b."]).total -> [1.]``
    """

    reward: Any
    embedder: Any = None
    lambda_fmt: float | None = None
    lambda_sem: float | None = None
    max_chars: int = DEFAULT_MAX_CHARS
    settings: Any = None
    data: Mapping[str, Any] | None = field(default=None, repr=False)
    counts: Counter = field(default_factory=Counter, init=False)
    seconds: float = field(default=0.0, init=False)
    spec: RewardSpec = field(init=False, repr=False)
    state: dict = field(init=False, repr=False)
    _last: tuple | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.spec = parse_reward(self.reward)
        self.reward = self.spec.name
        if not self.spec.trains:
            raise RewardError(f"reward {self.reward!r} means no GRPO: there is nothing to score")
        self.impl = get_method(self.spec.method)
        self.settings = self.impl.check_settings(self.settings)
        self.lambda_fmt, self.lambda_sem = _check_weights(
            *self.impl.lambdas(self.settings, self.lambda_fmt, self.lambda_sem))
        self.max_chars = check_max_chars(self.max_chars)
        self.state = self.impl.prepare(self, self.data)

    @classmethod
    def from_profile(cls, reward: Any, embedder: Any, grpo_cfg: Any, data: Mapping[str, Any] | None = None
                     ) -> RewardScorer:
        """The scorer a GRPO run of the profile uses: weights, ``max_chars`` and the method's settings
        (``grpo.<method>``) from the profile's ``grpo`` section, unless the method fixes its own weights
        (G-CARL's eq. 14, the controls), through :meth:`~sdrlib.rewards.spec.RewardMethod.lambdas` as the
        constructor. ``grpo_cfg`` is the profile's ``grpo`` section (``cfg.grpo``); the whole profile,
        ``None`` or another object without its fields raises ``TypeError`` naming the argument.
        Example: ``RewardScorer.from_profile("gcarl", emb, cfg.grpo)``."""
        spec = parse_reward(reward)
        impl = get_method(spec.method)
        need = ("lambda_fmt", "lambda_sem", "max_chars") + ((impl.name,) if impl.settings is not None else ())
        missing = [k for k in need if not hasattr(grpo_cfg, k)]
        if missing:
            hint = " (the whole profile: pass cfg.grpo)" if hasattr(grpo_cfg, "grpo") else ""
            raise TypeError(f"RewardScorer.from_profile: grpo_cfg must be the profile's grpo section (cfg.grpo), "
                            f"got {type(grpo_cfg).__name__}{hint} without {missing}")
        settings = impl.check_settings(getattr(grpo_cfg, impl.name) if impl.settings is not None else None)
        lf, ls = impl.lambdas(settings, defaults=(grpo_cfg.lambda_fmt, grpo_cfg.lambda_sem))
        return cls(spec, embedder, lf, ls, grpo_cfg.max_chars, settings=settings, data=data)

    @property
    def method(self) -> str:
        """The registered method of the reward (``"distance"``, ``"gcarl"``, ...)."""
        return self.spec.method

    @property
    def is_distance(self) -> bool:
        return self.spec.distance is not None

    def get_embedder(self) -> Any:
        """The sentence encoder, the default one built on first use when none was given."""
        if self.embedder is None:
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
        completions = as_list(completions, "completions")
        n = len(completions)
        findings = reference_texts(findings, "findings")
        impression = reference_texts(impression, "impression")
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
        parts = self.impl.score(self, valid, findings, impression, n)
        sem_f = sem_f if parts.sem_findings is None else parts.sem_findings
        sem_i = sem_i if parts.sem_impression is None else parts.sem_impression
        ex_f = ex_f if parts.exact_findings is None else parts.exact_findings
        ex_i = ex_i if parts.exact_impression is None else parts.exact_impression
        comps = parts.components
        content = parts.content
        weight = np.ones(n) if parts.prompt_weight is None else np.asarray(parts.prompt_weight, np.float64)
        total = weight * (self.lambda_fmt * fmt + self.lambda_sem * content)
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
                               failed, truncated, comps, weight, abnormal_references(findings, impression))

    def _stat(self, key: str) -> int:
        stats = getattr(self.embedder, "stats", None) if self.embedder is not None else None
        return int(stats.get(key, 0)) if isinstance(stats, dict) else 0

    def section_distances(self, generated: list[str], references: list[str], name: str | None = None
                          ) -> np.ndarray:
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
            d = _safe_paired_distances([gen_sets[j] for j in pairs], [ref_sets[j] for j in pairs], name or self.spec.distance,
                                       ([generated[j] for j in pairs], [references[j] for j in pairs]))
            bad = ~np.isfinite(d)
            failed += int(bad.sum())
            out[pairs] = np.where(bad, 1.0, d)
        self.counts["sem_failed"] += failed
        return np.clip(out, 0.0, 1.0)  # distances in [0, 1]; the reward 1 - D is sdrlib.distances.reward

    def _encode(self, generated: list[str], references: list[str]):
        """Sentence-embedding sets of both lists, one encoder pass when nothing fails.

        Returns ``(gen_sets, ref_sets, gen_ok)``; ``gen_ok[j]`` is False when generated
        section ``j`` could not be embedded (encoder error, non-finite or zero rows).
        Only when the joint pass fails is each text retried alone, to find the culprit;
        a reference that fails raises its error.
        """
        emb = self.get_embedder()
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
            if not usable_set(a):
                raise ReferenceTextError(f"reference row {row}: the encoder returned non-finite or zero vectors")
        gen_ok = [a is not None and usable_set(a) for a in gen_sets]
        return gen_sets, ref_sets, gen_ok

    # -- TRL glue -------------------------------------------------------------------

    def score_cached(self, completions, findings, impression) -> tuple[RewardBreakdown, bool]:
        """:meth:`score`, reusing the previous result when called again on the same batch.

        TRL calls every reward function on the same batch in turn; the second call
        is free. Returns ``(breakdown, fresh)``.
        """
        completions = as_list(completions, "completions")
        findings = reference_texts(findings, "findings")
        impression = reference_texts(impression, "impression")
        key = (tuple(map(repr, completions)), tuple(findings), tuple(impression))
        if self._last is not None and self._last[0] == key:
            return self._last[1], False
        out = self.score(completions, findings, impression)
        self._last = (key, out)
        return out, True


def abnormal_references(findings: Sequence[str], impression: Sequence[str]) -> np.ndarray:
    """Boolean ``(n,)``: reference k states one of the 12 pathologies positive or uncertain in its Findings or
    Impression (offline labeler, cached per sentence; no dataset label): app. F's abnormal strata
    (:func:`sdrlib.data.stratum`, uncertain counted positive; support devices and findings outside CheXpert's 14
    do not make a reference abnormal). The stratum of ``_bal<w>`` and of the per-stratum training logs.

    Example: ``abnormal_references(["Small left effusion."], ["Effusion."])`` -> ``array([ True])``.
    """
    cols = [OBSERVATIONS.index(p) for p in PATHOLOGIES]
    pf, pi = section_presence(list(findings)), section_presence(list(impression))
    return np.array([bool((observation_presence(a)[:, cols] > 0).any() or (observation_presence(b)[:, cols] > 0).any())
                     for a, b in zip(pf, pi)], dtype=bool)


def encode_sentences(embedder: Any, sentences: Sequence[str]) -> np.ndarray:
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


def usable_set(a: Any) -> bool:
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
    # section texts are passed on only to settings that read presence (they label the sentences)
    neg = texts is not None and distances.get(name).needs_presence
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
    """Distances between ``gen[k]`` and ``ref[k]`` through :mod:`sdrlib.distances` (one API).

    Uses the batched engine (``paired_distances``) when it is importable, else the
    per-pair reference ``set_distance``; both agree to tolerance (tested there).
    A negation-aware setting (``chamfer_neg``) also needs the section ``texts`` (generated,
    reference): their per-sentence presence (:func:`sdrlib.clinical.section_presence`) goes to the
    distance layer as ``presence=`` (without it the layer raises ``DistanceSpecError``).
    """
    presence = None
    if texts is not None and distances.get(name).needs_presence:
        presence = (section_presence(texts[0]), section_presence(texts[1]))
    try:
        batched = distances.paired_distances
    except (AttributeError, ImportError):
        batched = None
    if batched is not None:
        return np.asarray(batched(gen, ref, name, presence=presence), dtype=np.float64)
    if presence is None:
        return np.array([distances.set_distance(a, b, name) for a, b in zip(gen, ref)], dtype=np.float64)
    return np.array([distances.set_distance(a, b, name, presence=(pa, pb))
                     for a, b, pa, pb in zip(gen, ref, *presence)], dtype=np.float64)
