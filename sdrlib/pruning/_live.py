"""Algorithm 1 live with a local model (:func:`prune_live`) and the standard best-of-K generations with the
same decoder (:func:`generate_standard`): K candidates in one batch with a KV cache kept across rounds, one
CPU ``torch.Generator`` per candidate seeded ``seed + j``.

Left out: the round loop (:mod:`._rounds`), replay over finished texts (:mod:`._replay`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sdrlib.generation import PROMPT, prompt_messages
from sdrlib.pruning._params import PruneParams, PruningError
from sdrlib.pruning._results import PruneResult, StandardResult
from sdrlib.pruning._rounds import _run_rounds
from sdrlib.pruning._sentences import _Track


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

    def __init__(self, model, processor, images: Sequence[Any], n_candidates: int, *, seed: int,
                 temperature: float, max_new_tokens: int, prompt: str) -> None:
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
        self.cache.batch_repeat_interleave(n_candidates)
        self.cache_kw = _cache_kwarg(model)
        first = out.logits[0, -1].float().cpu()
        self.logits = {j: first for j in range(n_candidates)}
        self.rows = list(range(n_candidates))  # cache row -> candidate
        self.mask = torch.ones(n_candidates, self.L, dtype=torch.long, device=self.device)
        self.gens = [torch.Generator().manual_seed(int(seed) + j) for j in range(n_candidates)]
        self.ids: list[list[int]] = [[] for _ in range(n_candidates)]
        self.eos_hit = [False] * n_candidates
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


def _check_model_inputs(images: Any, n_candidates: int) -> None:
    if isinstance(images, (str, bytes)) or not isinstance(images, Sequence):
        raise PruningError("images must be a list of PIL images (one study's images; may be empty)")
    if not isinstance(n_candidates, (int, np.integer)) or isinstance(n_candidates, bool) or n_candidates < 1:
        raise PruningError(f"n_candidates must be an integer >= 1, got {n_candidates!r}")


def prune_live(model, processor, images: Sequence[Any], scorer: Callable[..., np.ndarray] | None,
               params: PruneParams, *, seed: int = 0, temperature: float = 1.0, max_new_tokens: int = 160,
               prompt: str | None = None, candidate_format: str = "template") -> PruneResult:
    """Algorithm 1 on one study with a local model: K candidates (candidate j sampled with seed ``seed + j``)
    decoded as one batch with a KV cache kept across rounds and pruned sentence by sentence.

    ``scorer(sentence_lists, scorable) -> (n,) totals`` is usually a :class:`BankScorer` (unused when K = 1).
    Returns a :class:`PruneResult` with exact token counts. Example: ``prune_live(model, proc, [img],
    BankScorer(bank, emb, "chamfer"), PruneParams(n_candidates=5)).survivor_text``.
    """
    import torch

    _check_model_inputs(images, params.n_candidates)
    if params.n_candidates > 1 and scorer is None:
        raise PruningError("K > 1 needs a scorer (e.g. BankScorer)")
    t0 = time.perf_counter()
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            lb = _LiveBatch(model, processor, images, params.n_candidates, seed=seed, temperature=temperature,
                            max_new_tokens=max_new_tokens, prompt=prompt or "")
            tracks = [_Track(candidate_format) for _ in range(params.n_candidates)]
            survivor, rounds = _run_rounds(tracks, lambda c: lb.advance(c, tracks), lb.release, params, scorer)
    finally:
        model.train(was_training)
    return PruneResult(survivor, [tr.text for tr in tracks], [tr.tokens for tr in tracks],
                       [tr.done for tr in tracks], rounds, time.perf_counter() - t0,
                       {"forwards": lb.forwards, "eos": list(lb.eos_hit), "ids": lb.ids, "params": params,
                        "scorer": getattr(scorer, "label", None)})


def generate_standard(model, processor, images: Sequence[Any], n_candidates: int, *, seed: int = 0,
                      temperature: float = 1.0, max_new_tokens: int = 160, prompt: str | None = None) -> StandardResult:
    """The standard best-of-K pipeline's generations with the same decoder as :func:`prune_live`: ``n_candidates``
    (the paper's K) candidates (seeds ``seed + j``) in one batch, each decoded to its end (end-of-sequence or
    ``max_new_tokens``)."""
    import torch

    _check_model_inputs(images, n_candidates)
    t0 = time.perf_counter()
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            lb = _LiveBatch(model, processor, images, int(n_candidates), seed=seed, temperature=temperature,
                            max_new_tokens=max_new_tokens, prompt=prompt or "")
            tracks = [_Track("template") for _ in range(int(n_candidates))]
            while need := [j for j in range(int(n_candidates)) if not tracks[j].done]:
                lb.advance(need, tracks)
    finally:
        model.train(was_training)
    return StandardResult([tr.text for tr in tracks], [tr.tokens for tr in tracks], list(lb.eos_hit), lb.ids,
                          time.perf_counter() - t0, {"forwards": lb.forwards})
