"""EditGRPO's trainer: TRL's ``GRPOTrainer`` whose rollouts are half sampled, half edited copies.

The method (its name grammar, settings ``grpo.editgrpo.*``, edit rules (a)-(e) and composite reward) is
:mod:`sdrlib.rewards.methods.editgrpo`; this module puts its edits into TRL's rollouts. All ``G``
completions of a prompt are sampled; the first ``G / 2`` stay as sampled and each of the other ``G / 2``
slots gets an edited copy of one of them (:func:`group_slots`), re-tokenised; an edit that changes nothing
leaves the slot with its own sample. With vLLM the edited rows are excluded from TRL's importance-sampling
correction (:func:`exclude_edited_from_correction`). :class:`EditGRPOTrainer` is built on first use
(module ``__getattr__``): importing TRL costs seconds.

Left out: the edit rules and EditGRPO's reward (:mod:`sdrlib.rewards.methods.editgrpo`); vLLM server mode, tool
calls and ``rollout_func`` extras are refused.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from sdrlib.rewards import check_completion, completion_text
from sdrlib.rewards.completion import DEFAULT_MAX_CHARS
from sdrlib.rewards.methods import editgrpo
from sdrlib.rewards.methods.editgrpo import (DEFAULT_OPS, DEFAULT_TAU, EDIT_COUNTS, EditError, check_level,
                                             check_ops, check_tau)

__all__ = ["EditGRPOTrainer", "group_slots", "exclude_edited_from_correction"]


def group_slots(n: int, num_generations: int, level: str) -> tuple[list[int], dict[int, int]]:
    """Which of ``n`` batch slots keep their sample and, for each slot that gets an edit, its source slot.

    Groups are consecutive runs of ``num_generations`` (TRL's ``RepeatSampler`` layout); every slot is
    sampled, an edited slot's sample is replaced by the edit of its source's only when the edit changes
    something. Sentence level: the first ``ceil(G / 2)`` of each group keep their samples, slot
    ``s + ceil(G / 2)`` gets an edited copy of slot ``s`` (``G / 2`` sampled, ``G / 2`` edited, as the
    paper); paragraph level: ``G - 1`` kept, the last slot an edited copy of the first; ``none``: all kept.
    Example: ``group_slots(4, 4, "sentence") -> ([0, 1], {2: 0, 3: 1})``.
    """
    g = int(num_generations)
    if g < 2 or n % g:
        raise EditError(f"a batch of {n} completions is not whole groups of num_generations = {g}")
    level = check_level(level)
    k = g if level == "none" else (g + 1) // 2 if level == "sentence" else g - 1
    sampled, edited = [], {}
    for start in range(0, n, g):
        sampled += list(range(start, start + k))
        for e in range(k, g):
            edited[start + e] = start + (e - k) % k
    return sampled, edited


def exclude_edited_from_correction(batch: dict, rows: Sequence[int]) -> dict:
    """Take the edited ``rows`` out of TRL's vLLM importance-sampling correction, in place; returns ``batch``.

    An edited completion was not sampled, so it has no sampling log-probabilities. Its rows of
    ``sampling_per_token_logps`` (B, T) become the policy's own log-probabilities ``old_per_token_logps``
    (B, T), which TRL computes from the completion ids whenever the correction is on, and its rows of
    ``importance_sampling_ratio`` ((B, T) token modes, (B, 1) sequence modes) become exactly 1: no
    correction, in every ``vllm_importance_sampling_mode``, and a KL of 0 for ``off_policy_mask_threshold``.
    A batch without those keys (no vLLM, correction off) is returned unchanged. Raises :class:`EditError`
    when ``sampling_per_token_logps`` is there without ``old_per_token_logps`` (nothing to take them from).
    """
    rows = sorted({int(r) for r in rows})
    if not rows:
        return batch
    sampling = batch.get("sampling_per_token_logps")
    if sampling is not None:
        old = batch.get("old_per_token_logps")
        if old is None:
            raise EditError("the batch has sampling log-probabilities but no old_per_token_logps: the edited "
                            "completions' log-probabilities under the policy are missing")
        sampling[rows] = old[rows].to(sampling.dtype)
    ratio = batch.get("importance_sampling_ratio")
    if ratio is not None:
        ratio[rows] = 1.0
    return batch


def _check_whole_groups(inputs: Sequence[dict], n: int, num_generations: int) -> None:
    """Raise :class:`EditError` unless each run of ``num_generations`` batch slots holds one study (one prompt)."""
    ids = [str(x.get("study_id", i // num_generations)) for i, x in enumerate(inputs)]
    for start in range(0, n, num_generations):
        if len(set(ids[start:start + num_generations])) != 1:
            raise EditError(f"batch slots {start}..{start + num_generations - 1} hold several studies: "
                            "EditGRPO needs whole groups of one prompt (TRL's RepeatSampler)")


def _edit_slots(trainer: Any, edited: dict[int, int], inputs: Sequence[dict], completion_ids: Sequence[Any],
                completions: Sequence[Any], logprobs: Sequence[Any] | None) -> tuple[list, list, list | None]:
    """Put into each edited slot ``i`` the re-tokenised edit of its source ``edited[i]`` (when the edit changes
    it), log the step's edit counts; returns the new completion ids, completions and sampling log-probabilities
    (``None`` rows for edits: not sampled). The edits draw from one generator seeded by ``(seed, step)``."""
    t0 = time.perf_counter()
    counts: Counter = Counter()
    rng = np.random.default_rng([int(trainer.args.seed), int(trainer.state.global_step)])
    new_ids, new_comp = list(completion_ids), list(completions)
    new_logprobs = list(logprobs) if logprobs is not None else None
    tok = trainer._tokenizer
    eos = trainer.eos_token_ids[0] if trainer.eos_token_ids else tok.eos_token_id
    trainer._prewarm([completions[edited[i]] for i in edited], [inputs[i] for i in edited])
    for i, k in edited.items():
        text = completion_text(completions[k])
        x = inputs[i]
        edited_text, c = editgrpo.edit_report(text, x["findings"], x["impression"], trainer.edit_embedder,
                                              tau=trainer.edit_tau, level=trainer.edit_level, rng=rng,
                                              max_chars=trainer.edit_max_chars, ops=trainer.edit_ops)
        counts.update(c)
        if edited_text == text:  # nothing changed: slot i keeps its own sample
            continue
        ids_k = list(tok(edited_text, add_special_tokens=False)["input_ids"]) + [eos]
        new_ids[i] = ids_k
        decoded = trainer.processing_class.batch_decode([ids_k], skip_special_tokens=True)[0]
        new_comp[i] = ([{"role": "assistant", "content": decoded}] if isinstance(completions[k], list)
                       else decoded)
        if new_logprobs is not None:  # vLLM: not sampled, no sampling log-prob (TRL maps None to NaN);
            new_logprobs[i] = [None] * len(ids_k)  # the rows leave the correction afterwards
        trainer._edited_rows.append(i)
    _log_edits(trainer, counts, time.perf_counter() - t0)
    return new_ids, new_comp, new_logprobs


def _log_edits(trainer: Any, counts: Counter, seconds: float) -> None:
    """The step's ``edits/<count>`` and ``edits/seconds`` metrics and its ``edit_log`` entry."""
    mode = "train"
    for name in EDIT_COUNTS:
        trainer._metrics[mode][f"edits/{name}"].append(float(counts.get(name, 0)))
    trainer._metrics[mode]["edits/seconds"].append(seconds)
    trainer.edit_log.append({"step": int(trainer.state.global_step) + 1, **{k: int(counts.get(k, 0))
                                                                            for k in EDIT_COUNTS},
                             "seconds": seconds})


def _prewarm(self: Any, completions: Sequence[Any], rows: Sequence[dict]) -> None:
    """Embed the sections of all completions to edit and their references in one encoder call (the
    per-completion calls of :func:`edit_report` then hit the cache)."""
    texts = []
    for c, x in zip(completions, rows):
        sections, _ = check_completion(completion_text(c), self.edit_max_chars)
        if sections is not None:
            texts += [sections.findings, sections.impression]
        texts += [x["findings"], x["impression"]]
    if texts and self.edit_embedder is not None:
        self.edit_embedder.encode_sections(texts)


def _trainer_class() -> type:
    """Build :class:`EditGRPOTrainer` (a subclass of TRL's ``GRPOTrainer``, imported here)."""
    from trl import GRPOTrainer

    class EditGRPOTrainer(GRPOTrainer):
        """``GRPOTrainer`` whose rollouts are half sampled, half edited copies (module doc).

        Extra arguments: ``edit_embedder`` (sentence encoder), ``edit_tau``, ``edit_level``,
        ``edit_ops`` (operations per section, ``None`` = until no rule applies), ``edit_max_chars``.
        Overrides two methods and nothing else: ``_generate_and_score_completions`` keeps the batch's
        reference columns and takes the edited rows out of the vLLM importance-sampling correction
        (:func:`exclude_edited_from_correction`), ``_generate`` samples every slot through TRL's own
        ``_generate`` and puts the re-tokenised edit into each edited slot (:func:`group_slots`) whose
        edit changed its source, so everything after (reference / old log-probs from the completion ids,
        rewards, advantages, loss) is TRL's. Per step it logs ``edits/<count>`` (:data:`EDIT_COUNTS`)
        and ``edits/seconds``; ``edit_log`` keeps one dict per generation batch.
        """

        def __init__(self, *args, edit_embedder=None, edit_tau: float = DEFAULT_TAU, edit_level: str = "sentence",
                     edit_max_chars: int = DEFAULT_MAX_CHARS, edit_ops: int | None = DEFAULT_OPS, **kwargs):
            self.edit_embedder = edit_embedder
            self.edit_tau = check_tau(edit_tau)
            self.edit_level = check_level(edit_level)
            self.edit_ops = check_ops(edit_ops)
            self.edit_max_chars = edit_max_chars
            self.edit_log: list[dict] = []
            self._edit_inputs = None
            self._edited_rows: list[int] = []
            super().__init__(*args, **kwargs)
            if self.use_vllm and getattr(self.args, "vllm_mode", "colocate") == "server":
                raise EditError("EditGRPO needs vllm_mode='colocate' (server mode samples whole groups per prompt)")

        def _generate_and_score_completions(self, inputs):
            self._edit_inputs = inputs
            self._edited_rows = []
            try:
                batch = super()._generate_and_score_completions(inputs)
            finally:
                self._edit_inputs = None
            return exclude_edited_from_correction(batch, self._edited_rows)

        def _generate(self, prompts):
            inputs = self._edit_inputs
            if not self.model.training or inputs is None or self.edit_level == "none":
                return super()._generate(prompts)
            n = len(prompts)
            sampled, edited = group_slots(n, self.num_generations, self.edit_level)
            _check_whole_groups(inputs, n, self.num_generations)
            out = super()._generate(prompts)  # every slot sampled; an unchanged edit keeps the slot's own
            prompt_ids, completion_ids, tool_mask, completions, logprobs, extra, images, tool_images = out
            if tool_mask is not None or any(extra.values()):
                raise EditError("EditGRPO does not support tool calls or rollout_func extras")
            new_ids, new_comp, new_logprobs = _edit_slots(self, edited, inputs, completion_ids, completions, logprobs)
            return prompt_ids, new_ids, None, new_comp, new_logprobs, extra, images, tool_images

    EditGRPOTrainer._prewarm = _prewarm
    return EditGRPOTrainer


def __getattr__(name: str) -> type:  # EditGRPOTrainer is built on first use: importing TRL costs seconds
    if name == "EditGRPOTrainer":
        cls = _trainer_class()
        globals()[name] = cls
        return cls
    raise AttributeError(name)
