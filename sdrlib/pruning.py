"""Distance-guided pruning of best-of-K candidates while they are decoded (paper sec. 5.1, app. G, Algorithm 1).

The K candidates of one study are decoded sentence by sentence. The first ``warmup`` sentences are decoded
in lock-step without pruning; then, round by round, every active candidate decodes exactly one more
sentence, the partial reports are scored against a bank of training reports with the selection distance
(:mod:`sdrlib.selection`: eq. 7 per section, eq. 8 aggregation over the bank, eq. 9 sum over sections), and
the worst ``ceil(p |C|)`` candidates are dropped, until one survives; it is decoded to its end and returned.

Two drivers share one round loop (:func:`_run_rounds`), so they make the same decisions on the same text:

- :func:`prune_live`: a local causal / vision-language model (the tiny Qwen3-VL on CPU, any transformers
  model with a KV cache on GPU). The image and prompt are encoded once (batch 1), the cache is repeated K
  times, and the active candidates decode as one batch, one token per forward, with the cache kept across
  rounds (nothing is re-encoded). A candidate that has finished its sentence for the round waits: it is fed a
  pad token whose attention-mask column is 0 and its position does not advance, so its next token sees
  exactly its own history. Dropped and finished candidates leave the cache
  (``DynamicCache.batch_select_indices``). Sampling uses one ``torch.Generator`` per candidate, seeded
  ``seed + j``, on the CPU, so candidate j's tokens do not depend on which other candidates are in the batch;
  :func:`generate_standard` (the same decoder, no pruning, the same seeds) therefore writes the same K
  candidates as the full best-of-K pipeline, and a pruned candidate's tokens are a prefix of its full
  generation (up to float round-off of batched kernels, which would have to move a sample across a
  probability boundary).
- :func:`replay_prune`: the same rounds over candidates already generated in full (the paper's proof of concept
  for API models): each text is cut into tokens with the generating model's tokenizer when given (its
  ``encode``), else with :func:`proxy_pieces` (one piece per word, punctuation mark or template tag), and fed
  token by token through the same sentence tracker. On the same seeds, live and replay choose the same
  survivor (tests/pruning/test_pruning.py).

What a sentence is: :func:`complete_sentences`. The (partial) text is parsed leniently along the
``<think> F </think> <answer> I </answer>`` template (``candidate_format="template"``) or by
:func:`sdrlib.reports.split_report` (``"report"``, API answers), each section is segmented with
:func:`sdrlib.reports.split_sentences` (the segmentation the distance uses), and the last sentence of the
section still open at the end of the text counts only once it ends in ``.``, ``!`` or ``?`` (not a
``<digit>.``, which may be a decimal) or once its section is closed. The sentence boundary is thus seen on
the token that writes the full stop (the tiny policy's BPE emits ``.`` as a token of its own).

Scoring a partial report (:func:`partial_totals`). A round compares candidates that have written the same
number t of sentences, so some may still be in Findings while others have begun the Impression. Each
candidate is scored on its first t complete sentences, per section, against the bank (selection's eq. 7-8),
and the total sums **only the sections that every scored candidate has begun** (Findings, until all have
reached the Impression). Why: selection's rule for an empty section (the setting's maximum, 1.0) would
charge a full point to every candidate that has not reached its Impression yet, i.e. drop the candidates
with the longest Findings first, a bias towards short reports that says nothing about quality; scoring
Findings alone compares like with like. When no section is common to all scored candidates (one has only
Impression text), selection's rule applies (empty section = the setting's maximum). A candidate with no
complete sentence at all scores +inf (so a candidate that never ends a sentence goes first); no round prunes
before sentence ``min_sentences``; a finished candidate is judged on its finished text.

Token accounting (exact for live decoding): ``tokens[j]`` = tokens sampled for candidate j (the end-of-
sequence token included when it was sampled); the survivor's count is its full generation; the standard
pipeline's count is the sum over its K full generations. Pruning never decodes a token that the standard
pipeline would not also decode.

Bad input (defined behaviour):

================================================  =================================================================
case                                              behaviour
================================================  =================================================================
p outside (0, 1), K < 1, warmup < 0,              :class:`PruningError` naming the parameter (when the parameters are
min_sentences < 1, cap < 1                        made)
a candidate finishes before the others            stays in the pool with its finished text, judged on it in every
                                                  later round (``finished[j]``), decodes nothing more
a candidate never ends a sentence                 after ``sentence_token_cap`` tokens in a round it is ready for the
                                                  round anyway and judged on the sentences it has completed (none:
                                                  +inf, dropped first)
K = 1                                             no round, no scoring: the single candidate is decoded to its end
warmup longer than every candidate                every candidate finishes during warm-up; the rounds then prune the
                                                  finished texts (no token saved) and the survivor is the best by the
                                                  partial-report rule
texts / tokenizer of the wrong kind (replay)      :class:`PruningError`
================================================  =================================================================

Left out: batching several studies into one decode (each study's K candidates form one batch), speculative
or beam decoding, top-k / top-p truncation (pure temperature sampling, as :mod:`sdrlib.generation`).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sdrlib.distances import get
from sdrlib.distances.engine import pack_sets
from sdrlib.errors import SDRError
from sdrlib.generation import PROMPT, prompt_messages
from sdrlib.reports import parse_template_partial, split_report, split_sentences
from sdrlib.selection import AGGREGATIONS, DEFAULT_KNN_K, bank_distances, check_encoder

__all__ = [
    "PruningError", "PruneParams", "PruneResult", "StandardResult", "BankScorer", "complete_sentences",
    "proxy_pieces", "partial_totals", "prune_live", "generate_standard", "replay_prune", "tokens_saved_pct",
]

_TERMINAL = ".!?"
_CLOSERS = ("</think>", "<answer>", "</answer>")


class PruningError(SDRError, ValueError):
    """Inputs pruning cannot use (parameters out of range, texts or tokenizers of the wrong kind)."""


# --------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class PruneParams:
    """Parameters of Algorithm 1.

    k : candidates per study (K >= 1); p : fraction of the active candidates dropped per round, in (0, 1)
    (``ceil(p |C|)``, at least one, never the last); warmup : sentences decoded in lock-step before the first
    round (the paper's "wu"; 0 = prune from the first sentence on); min_sentences : no round prunes before the
    candidates have had this many sentences (t >= min_sentences; the first pruning happens at sentence
    ``max(warmup + 1, min_sentences)``); sentence_token_cap : tokens a candidate may spend on one round (one
    sentence) before it counts as ready anyway and is judged on the sentences it has completed.
    """

    k: int = 5
    p: float = 0.5
    warmup: int = 1
    min_sentences: int = 1
    sentence_token_cap: int = 64

    def __post_init__(self) -> None:
        for name, lo in (("k", 1), ("warmup", 0), ("min_sentences", 1), ("sentence_token_cap", 1)):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
                raise PruningError(f"{name} must be an integer >= {lo}, got {v!r}")
        p = self.p
        if isinstance(p, bool) or not isinstance(p, (int, float, np.floating)) or not (0.0 < float(p) < 1.0):
            raise PruningError(f"p (the fraction dropped per round) must lie in (0, 1), got {p!r}")

    def n_drop(self, n_active: int) -> int:
        """``ceil(p n)`` capped at ``n - 1`` (one candidate always survives)."""
        return max(0, min(math.ceil(float(self.p) * n_active - 1e-9), n_active - 1))


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


# --------------------------------------------------------------------------- scoring partial reports
def partial_totals(section_scores: np.ndarray, empty: np.ndarray, scorable: np.ndarray | None = None) -> np.ndarray:
    """Eq. (9) for partial reports: sum over the sections every scored candidate has begun.

    Parameters
    ----------
    section_scores : (n, n_sections) eq. (8) per section (an empty section holds the setting's maximum)
    empty : (n, n_sections) bool, section without a complete sentence
    scorable : (n,) bool, candidates judged this round (default all); the others get NaN

    Returns (n,) totals: +inf for a candidate with no sentence; the sum over the common sections, or over all
    sections (empty = maximum, selection's rule) when none is common.
    Example: ``partial_totals(np.array([[.2, 1.], [.3, .1]]), np.array([[0, 1], [0, 0]], bool)) -> [.2, .3]``.
    """
    S = np.asarray(section_scores, dtype=np.float64)
    E = np.asarray(empty, dtype=bool)
    if S.ndim != 2 or S.shape != E.shape:
        raise PruningError(f"section_scores {S.shape} and empty {E.shape} must be the same (n, sections) shape")
    sc = np.ones(len(S), dtype=bool) if scorable is None else np.asarray(scorable, dtype=bool)
    nothing = E.all(axis=1)
    judged = sc & ~nothing
    common = ~E[judged].any(axis=0) if judged.any() else np.zeros(S.shape[1], dtype=bool)
    tot = S[:, common].sum(axis=1) if common.any() else S.sum(axis=1)
    tot = np.where(nothing, np.inf, tot)
    return np.where(sc, tot, np.nan)


class BankScorer:
    """Distance of partial reports to a bank of training reports: one setting, one aggregation.

    ``bank`` is a :class:`~sdrlib.embedding.ReportBank` built with ``embedder``'s encoder (checked, as in
    selection); the bank is packed once per section (reports without the section left out, as eq. 8 does).
    :meth:`section_scores` embeds sentence lists (the embedder's cache) and runs
    :func:`sdrlib.selection.bank_distances` on them. :meth:`for_distance` gives a scorer for another setting
    or aggregation that shares the packed bank.
    """

    def __init__(self, bank: Any, embedder: Any, distance: str = "chamfer", aggregation: str = "avg", *,
                 knn_k: int | None = None, device: str = "cpu", sections: Sequence[str] = ("findings", "impression"),
                 _packed: dict | None = None) -> None:
        if _packed is None:
            check_encoder(bank, embedder)
        get(distance)  # named DistanceSpecError for an unknown setting
        if aggregation not in AGGREGATIONS:
            raise PruningError(f"unknown aggregation {aggregation!r}; use one of {list(AGGREGATIONS)}")
        self.bank, self.embedder, self.distance, self.aggregation = bank, embedder, distance, aggregation
        self.knn_k = DEFAULT_KNN_K if knn_k is None else int(knn_k)
        self.device, self.sections = device, tuple(sections)
        if _packed is None:
            _packed = {}
            for s in self.sections:
                full = pack_sets((bank.matrix(s).astype(np.float64), bank.offsets(s)), f"bank[{s}]")
                keep = np.flatnonzero(full.sizes > 0)
                if not len(keep):
                    raise PruningError(f"no bank report has a non-empty {s} section")
                _packed[s] = full if len(keep) == full.n_sets else pack_sets(full.subset(keep), f"bank[{s}]")
        self._packed = _packed
        self.calls = 0

    def for_distance(self, distance: str, aggregation: str | None = None) -> "BankScorer":
        return BankScorer(self.bank, self.embedder, distance, aggregation or self.aggregation, knn_k=self.knn_k,
                          device=self.device, sections=self.sections, _packed=self._packed)

    @property
    def label(self) -> str:
        return f"{self.distance}+{self.aggregation}"

    def section_scores(self, sentence_lists: Sequence[Sequence[tuple[str, str]]]) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, empty)``, both ``(n, len(sections))``, for n lists of ``(section, sentence)``."""
        n = len(sentence_lists)
        sets = {s: self.embedder.encode_sets([[x for sec, x in sl if sec == s] for sl in sentence_lists])
                for s in self.sections}
        empty = np.stack([[len(sets[s][i]) == 0 for s in self.sections] for i in range(n)])
        res = bank_distances(sets, self._packed, [self.distance], k=n, aggregations=[self.aggregation],
                             knn_k=self.knn_k, device=self.device, progress=None, on_nonconvergence="ignore")
        self.calls += 1
        return res.section_scores[0, 0, :, 0, :].T.copy(), empty

    def __call__(self, sentence_lists: Sequence[Sequence[tuple[str, str]]], scorable: np.ndarray | None = None) -> np.ndarray:
        return partial_totals(*self.section_scores(sentence_lists), scorable)


# --------------------------------------------------------------------------- results
@dataclass
class PruneResult:
    """One study's pruning run.

    survivor : index of the chosen candidate; texts : (K,) text each candidate reached (the survivor's is
    complete); tokens : (K,) tokens generated per candidate; finished : (K,) candidates that reached their end;
    rounds : one dict per round (``t``, ``active``, ``scores``, ``dropped``); seconds : wall-clock of the run;
    meta : forward passes, scorer calls, parameters.
    """

    survivor: int
    texts: list[str]
    tokens: list[int]
    finished: list[bool]
    rounds: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return int(sum(self.tokens))

    @property
    def survivor_tokens(self) -> int:
        return int(self.tokens[self.survivor])

    @property
    def survivor_text(self) -> str:
        return self.texts[self.survivor]


@dataclass
class StandardResult:
    """K full generations (the standard best-of-K pipeline): texts, tokens per candidate, whether each ended
    with an end-of-sequence token (else it hit ``max_new_tokens``), token ids, wall-clock seconds."""

    texts: list[str]
    tokens: list[int]
    eos: list[bool]
    ids: list[list[int]]
    seconds: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return int(sum(self.tokens))


def tokens_saved_pct(pruned: Sequence[int] | int, standard: Sequence[int] | int) -> float:
    """``100 (1 - sum(pruned) / sum(standard))``; NaN when the standard pipeline generated nothing."""
    a, b = float(np.sum(pruned)), float(np.sum(standard))
    return 100.0 * (1.0 - a / b) if b > 0 else float("nan")


# --------------------------------------------------------------------------- the round loop (Algorithm 1)
def _run_rounds(tracks: list[_Track], advance: Callable[[list[int]], None], drop: Callable[[list[int]], None],
                params: PruneParams, scorer: Callable[..., np.ndarray] | None) -> tuple[int, list[dict]]:
    cap = params.sentence_token_cap
    active = list(range(len(tracks)))

    def decode_until(t: int) -> None:
        for j in active:
            tracks[j].round_start = tracks[j].tokens
        while True:
            need = [j for j in active if not tracks[j].ready(t, cap)]
            if not need:
                return
            advance(need)

    rounds: list[dict] = []
    t = 0
    if len(active) > 1:
        for t in range(1, params.warmup + 1):  # lock-step warm-up, no pruning
            decode_until(t)
        t = params.warmup
    while len(active) > 1:
        t += 1
        decode_until(t)
        if t < params.min_sentences:  # too little written to judge anyone: one more lock-step sentence
            rounds.append({"t": t, "active": list(active), "scores": [math.nan] * len(active), "dropped": [],
                           "sentences": [len(tracks[j].sents[:t]) for j in active]})
            continue
        scorable = np.ones(len(active), dtype=bool)
        scores = scorer([tracks[j].sents[:t] for j in active], scorable)
        n_drop = params.n_drop(len(active))
        # worst first: highest score, ties dropping the higher index (so the lowest index wins, as in selection)
        cand = [(scores[i], active[i]) for i in range(len(active)) if scorable[i]]
        cand.sort(key=lambda x: (x[0], x[1]), reverse=True)
        dropped = sorted(j for _, j in cand[:n_drop])
        rounds.append({"t": t, "active": list(active), "scores": [float(x) for x in scores], "dropped": dropped,
                       "sentences": [len(tracks[j].sents[:t]) for j in active]})
        if dropped:
            drop(dropped)
            active = [j for j in active if j not in dropped]
    survivor = active[0]
    while not tracks[survivor].done:
        advance([survivor])
    return survivor, rounds


# --------------------------------------------------------------------------- live decoding
def _cache_kwarg(model: Any) -> str:
    """The name under which ``model.forward`` takes the KV cache: ``past_key_values`` (transformers <= 5.17, the
    pinned version) or ``cache`` (later 5.x). A wrong name is swallowed by ``**kwargs`` and the model silently decodes
    each token without its history, so the name is read off the signature, and refused when neither is there."""
    import inspect

    params = inspect.signature(model.forward).parameters
    for name in ("past_key_values", "cache"):
        if name in params:
            return name
    raise PruningError(f"{type(model).__name__}.forward takes neither past_key_values nor cache: live decoding "
                       "needs a model that reads a KV cache")


class _LiveBatch:
    """K candidates of one study decoding in one batch with a shared, row-selected KV cache."""

    def __init__(self, model, processor, images: Sequence[Any], k: int, *, seed: int, temperature: float,
                 max_new_tokens: int, prompt: str) -> None:
        import torch

        if max_new_tokens < 1:
            raise PruningError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if temperature < 0:
            raise PruningError(f"temperature must be >= 0, got {temperature}")
        self.torch, self.model, self.tok = torch, model, processor.tokenizer
        self.temperature, self.max_new = float(temperature), int(max_new_tokens)
        self.device = next(model.parameters()).device
        imgs = list(images)
        text = processor.apply_chat_template(prompt_messages(len(imgs), prompt or PROMPT), add_generation_prompt=True,
                                             tokenize=False)
        batch = processor(text=[text], images=[imgs] if imgs else None, return_tensors="pt")
        batch = {key: (v.to(self.device) if hasattr(v, "to") else v) for key, v in batch.items()}
        self.L = int(batch["input_ids"].shape[1])
        out = model(**batch, use_cache=True, logits_to_keep=1)
        self.cache = out.cache if getattr(out, "cache", None) is not None else out.past_key_values
        rd = getattr(getattr(model, "model", model), "rope_deltas", None)
        self.delta = int(rd.reshape(-1)[0]) if rd is not None else 0
        self.mrope = rd is not None
        self.cache.batch_repeat_interleave(k)
        self.cache_kw = _cache_kwarg(model)
        first = out.logits[0, -1].float().cpu()
        self.logits = {j: first for j in range(k)}
        self.rows = list(range(k))  # cache row -> candidate
        self.mask = torch.ones(k, self.L, dtype=torch.long, device=self.device)
        self.gens = [torch.Generator().manual_seed(int(seed) + j) for j in range(k)]
        self.ids: list[list[int]] = [[] for _ in range(k)]
        self.eos_hit = [False] * k
        eos = {self.tok.eos_token_id}
        gc = getattr(model, "generation_config", None)
        ge = getattr(gc, "eos_token_id", None)
        eos |= set(ge) if isinstance(ge, (list, tuple)) else {ge}
        self.eos = {e for e in eos if e is not None}
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else min(self.eos)
        self.forwards = 0

    def text(self, j: int) -> str:
        return self.tok.decode(self.ids[j], skip_special_tokens=True)

    def _sample(self, j: int) -> int:
        torch = self.torch
        lg = self.logits[j]
        if self.temperature == 0:
            return int(torch.argmax(lg))
        probs = torch.softmax(lg.double() / self.temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=self.gens[j]))

    def _keep_rows(self, keep: list[int]) -> None:
        if keep == list(range(len(self.rows))):
            return
        idx = self.torch.tensor(keep, dtype=self.torch.long, device=self.device)
        self.cache.batch_select_indices(idx)
        self.mask = self.mask[idx]
        self.rows = [self.rows[i] for i in keep]

    def release(self, cands: Sequence[int]) -> None:
        """Remove candidates' rows from the cache (dropped or finished)."""
        gone = set(cands)
        self._keep_rows([i for i, c in enumerate(self.rows) if c not in gone])
        for c in gone:
            self.logits.pop(c, None)

    def advance(self, cands: Sequence[int], tracks: list[_Track]) -> None:
        """One token for each of ``cands``; the other rows wait (pad, mask 0)."""
        torch = self.torch
        feed: dict[int, int] = {}
        finished = []
        for j in cands:
            tid = self._sample(j)
            self.ids[j].append(tid)
            done = tid in self.eos or len(self.ids[j]) >= self.max_new
            self.eos_hit[j] = tid in self.eos
            tracks[j].update(self.text(j), len(self.ids[j]), done)
            if done:
                finished.append(j)
            else:
                feed[j] = tid
        if finished:
            self.release(finished)
        if not feed:
            return
        B = len(self.rows)
        inp = torch.full((B, 1), self.pad, dtype=torch.long, device=self.device)
        col = torch.zeros(B, 1, dtype=torch.long, device=self.device)
        pos = torch.zeros(B, 1, dtype=torch.long, device=self.device)
        for r, c in enumerate(self.rows):
            n = len(self.ids[c])  # the fed token is generated token n - 1 of this candidate
            pos[r, 0] = self.L + n - 1 + self.delta
            if c in feed:
                inp[r, 0], col[r, 0] = feed[c], 1
        self.mask = torch.cat([self.mask, col], dim=1)
        position_ids = pos.unsqueeze(0).expand(3, B, 1) if self.mrope else pos
        with torch.inference_mode():
            out = self.model(input_ids=inp, attention_mask=self.mask, position_ids=position_ids,
                             use_cache=True, logits_to_keep=1, **{self.cache_kw: self.cache})
        self.forwards += 1
        last = out.logits[:, -1].float().cpu()
        for r, c in enumerate(self.rows):
            if c in feed:
                self.logits[c] = last[r]


def _check_model_inputs(images: Any, k: int) -> None:
    if isinstance(images, (str, bytes)) or not isinstance(images, Sequence):
        raise PruningError("images must be a list of PIL images (one study's images; may be empty)")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise PruningError(f"k must be an integer >= 1, got {k!r}")


def prune_live(model, processor, images: Sequence[Any], scorer: Callable[..., np.ndarray] | None,
               params: PruneParams, *, seed: int = 0, temperature: float = 1.0, max_new_tokens: int = 160,
               prompt: str | None = None, candidate_format: str = "template") -> PruneResult:
    """Algorithm 1 on one study with a local model: K candidates (candidate j sampled with seed ``seed + j``)
    decoded as one batch with a KV cache kept across rounds and pruned sentence by sentence.

    ``scorer(sentence_lists, scorable) -> (n,) totals`` is usually a :class:`BankScorer` (unused when K = 1).
    Returns a :class:`PruneResult` with exact token counts. Example: ``prune_live(model, proc, [img],
    BankScorer(bank, emb, "chamfer"), PruneParams(k=5)).survivor_text``.
    """
    import torch

    _check_model_inputs(images, params.k)
    if params.k > 1 and scorer is None:
        raise PruningError("K > 1 needs a scorer (e.g. BankScorer)")
    t0 = time.perf_counter()
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            lb = _LiveBatch(model, processor, images, params.k, seed=seed, temperature=temperature,
                            max_new_tokens=max_new_tokens, prompt=prompt or "")
            tracks = [_Track(candidate_format) for _ in range(params.k)]
            survivor, rounds = _run_rounds(tracks, lambda c: lb.advance(c, tracks), lb.release, params, scorer)
    finally:
        model.train(was_training)
    return PruneResult(survivor, [tr.text for tr in tracks], [tr.tokens for tr in tracks],
                       [tr.done for tr in tracks], rounds, time.perf_counter() - t0,
                       {"forwards": lb.forwards, "eos": list(lb.eos_hit), "ids": lb.ids, "params": params,
                        "scorer": getattr(scorer, "label", None)})


def generate_standard(model, processor, images: Sequence[Any], k: int, *, seed: int = 0, temperature: float = 1.0,
                      max_new_tokens: int = 160, prompt: str | None = None) -> StandardResult:
    """The standard best-of-K pipeline's generations with the same decoder as :func:`prune_live`: K candidates
    (seeds ``seed + j``) in one batch, each decoded to its end (end-of-sequence or ``max_new_tokens``)."""
    import torch

    _check_model_inputs(images, k)
    t0 = time.perf_counter()
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            lb = _LiveBatch(model, processor, images, int(k), seed=seed, temperature=temperature,
                            max_new_tokens=max_new_tokens, prompt=prompt or "")
            tracks = [_Track("template") for _ in range(int(k))]
            while need := [j for j in range(int(k)) if not tracks[j].done]:
                lb.advance(need, tracks)
    finally:
        model.train(was_training)
    return StandardResult([tr.text for tr in tracks], [tr.tokens for tr in tracks], list(lb.eos_hit), lb.ids,
                          time.perf_counter() - t0, {"forwards": lb.forwards})


# --------------------------------------------------------------------------- replay over finished candidates
def _pieces(text: str, tokenizer: Any) -> list[str]:
    """Prefix texts after each token: the tokenizer's ``encode`` (no special tokens) decoded prefix by prefix,
    or :func:`proxy_pieces` accumulated."""
    if tokenizer is None:
        out, acc = [], ""
        for p in proxy_pieces(text):
            acc += p
            out.append(acc)
        return out
    if not hasattr(tokenizer, "encode") or not hasattr(tokenizer, "decode"):
        raise PruningError(f"tokenizer must have encode/decode (a transformers tokenizer), got {type(tokenizer).__name__}")
    ids = tokenizer.encode(text, add_special_tokens=False)
    return [tokenizer.decode(ids[:n], skip_special_tokens=True) for n in range(1, len(ids) + 1)]


def replay_prune(texts: Sequence[str], scorer: Callable[..., np.ndarray] | None, params: PruneParams, *,
                 tokenizer: Any = None, token_ids: Sequence[Sequence[int]] | None = None,
                 candidate_format: str = "template", eos: bool | Sequence[bool] = True) -> PruneResult:
    """Algorithm 1 replayed over K finished candidates (``texts``, one study): the same rounds on their
    token prefixes.

    Tokens: with ``token_ids`` (the ids the local model sampled, end-of-sequence included, as
    :attr:`StandardResult.ids`) and ``tokenizer``, the prefixes are those ids decoded, so the counts are the
    live decoder's exactly; with ``tokenizer`` alone, the text is re-encoded with it (a model's own samples
    need not be its tokenizer's canonical split, so counts may differ by a few); with neither,
    :func:`proxy_pieces`. ``eos`` (per candidate or one for all; ignored with ``token_ids``) adds the
    end-of-sequence token a finished generation also sampled. ``params.k`` must equal ``len(texts)``."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise PruningError("texts must be a list of the K candidate texts of one study")
    if len(texts) != params.k:
        raise PruningError(f"{len(texts)} texts but params.k = {params.k}")
    if any(not isinstance(x, str) for x in texts):
        raise PruningError("every candidate text must be a str (use '' for a failed sample)")
    if params.k > 1 and scorer is None:
        raise PruningError("K > 1 needs a scorer (e.g. BankScorer)")
    eos_l = [bool(eos)] * len(texts) if isinstance(eos, (bool, np.bool_)) else [bool(e) for e in eos]
    if len(eos_l) != len(texts):
        raise PruningError(f"eos: {len(eos_l)} flags for {len(texts)} texts")
    t0 = time.perf_counter()
    # prefix text after each token; a sampled end-of-sequence token is one more step that adds no text
    if token_ids is not None:
        if tokenizer is None or not hasattr(tokenizer, "decode"):
            raise PruningError("token_ids need the tokenizer that produced them (tokenizer=...)")
        if len(token_ids) != len(texts):
            raise PruningError(f"token_ids: {len(token_ids)} lists for {len(texts)} texts")
        prefixes = [[tokenizer.decode(list(ids[:n]), skip_special_tokens=True) for n in range(1, len(ids) + 1)]
                    for ids in token_ids]
    else:
        prefixes = [_pieces(x, tokenizer) + ([x] if e else []) for x, e in zip(texts, eos_l)]
    tracks = [_Track(candidate_format) for _ in texts]
    pos = [0] * len(texts)
    for j, tr in enumerate(tracks):
        if not prefixes[j]:  # an empty text that did not end with an end-of-sequence token: nothing generated
            tr.update("", 0, True)

    def advance(cands: list[int]) -> None:
        for j in cands:
            pos[j] += 1
            tracks[j].update(prefixes[j][pos[j] - 1], pos[j], pos[j] >= len(prefixes[j]))

    survivor, rounds = _run_rounds(tracks, advance, lambda c: None, params, scorer)
    return PruneResult(survivor, [tr.text for tr in tracks], [tr.tokens for tr in tracks],
                       [tr.done for tr in tracks], rounds, time.perf_counter() - t0,
                       {"tokenizer": "proxy" if tokenizer is None else type(tokenizer).__name__, "params": params,
                        "scorer": getattr(scorer, "label", None)})


def with_params(params: PruneParams, **changes: Any) -> PruneParams:
    """A copy of ``params`` with some fields changed (validated again)."""
    return replace(params, **changes)
