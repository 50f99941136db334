"""Generate reports from a local vision-language policy (batched, seeded).

:func:`generate_reports` renders one chat prompt per study (image + instruction),
runs ``model.generate`` in batches and returns the decoded completions, raw (the
``<think>/<answer>`` template is parsed by the caller with
:func:`sdrlib.reports.parse_template`). Greedy decoding by default, so a policy
maps a test split to one deterministic set of reports; with ``do_sample=True``
the torch seed fixes the samples.

Left out: OpenAI-compatible API candidates (:mod:`sdrlib.apigen`, with a resumable
JSONL cache; :mod:`sdrlib.serve` serves a local policy behind the same API), the
on-disk candidate cache of the selection notebook (:mod:`sdrlib.experiments.candidates`), vLLM,
beam search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["PROMPT", "prompt_messages", "load_images", "generate_reports", "generate_candidates", "reference_nll"]

#: The instruction given to the policy with each image.
PROMPT = "Write the radiology report: findings in <think> </think>, impression in <answer> </answer>."


def prompt_messages(n_images: int = 1, prompt: str = PROMPT) -> list[dict[str, Any]]:
    """Chat prompt with ``n_images`` image parts then the instruction.

    Example: ``prompt_messages()[0]["content"][0] -> {"type": "image"}``.
    """
    if n_images < 0:
        raise ValueError(f"n_images must be >= 0, got {n_images}")
    content = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": prompt}]
    return [{"role": "user", "content": content}]


def load_images(paths: Sequence[str], max_images: int = 1) -> list:
    """Open up to ``max_images`` images as RGB PIL images; a missing file raises naming it."""
    from PIL import Image

    out = []
    for p in list(paths)[:max_images]:
        try:
            with Image.open(p) as im:
                out.append(im.convert("RGB"))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"image {p} not found (regenerate the data with notebook 00)") from exc
    return out


def generate_reports(
    model,
    processor,
    image_lists: Sequence[Sequence[Any]],
    *,
    prompt: str = PROMPT,
    max_new_tokens: int = 160,
    batch_size: int = 16,
    do_sample: bool = False,
    temperature: float = 1.0,
    seed: int = 0,
) -> list[str]:
    """Decode one report per entry of ``image_lists`` (each a list of PIL images).

    Returns the completion text (special tokens removed), ``len(image_lists)`` strings.
    Example: ``generate_reports(model, proc, [[img]], max_new_tokens=64)``.
    """
    import torch

    if batch_size < 1 or max_new_tokens < 1:
        raise ValueError("batch_size and max_new_tokens must be positive")
    tok = processor.tokenizer
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    torch.manual_seed(seed)
    outs: list[str] = []
    try:
        for start in range(0, len(image_lists), batch_size):
            chunk = [list(imgs) for imgs in image_lists[start : start + batch_size]]
            texts = [
                processor.apply_chat_template(prompt_messages(len(imgs), prompt), add_generation_prompt=True, tokenize=False)
                for imgs in chunk
            ]
            images = chunk if any(chunk) else None
            batch = processor(text=texts, images=images, return_tensors="pt", padding=True, padding_side="left")
            batch = {k: (v.to(device) if hasattr(v, "to") else v) for k, v in batch.items()}
            with torch.inference_mode():
                gen = model.generate(
                    **batch,
                    max_new_tokens=max_new_tokens,
                    do_sample=do_sample,
                    temperature=temperature if do_sample else None,
                    top_p=None,
                    top_k=None,
                    eos_token_id=tok.eos_token_id,
                    pad_token_id=tok.pad_token_id,
                )
            new = gen[:, batch["input_ids"].shape[1] :]
            outs.extend(t.strip() for t in tok.batch_decode(new, skip_special_tokens=True))
    finally:
        model.train(was_training)
    return outs


def generate_candidates(
    model,
    processor,
    image_lists: Sequence[Sequence[Any]],
    n_candidates: int,
    *,
    temperature: float = 1.0,
    seed: int = 0,
    **kwargs: Any,
) -> list[list[str]]:
    """``n_candidates`` (the paper's K) sampled reports per study (for best-of-K selection), shape
    ``[n][n_candidates]``.

    Candidate ``j`` of every study is drawn with seed ``seed + j``, so adding candidates
    keeps the earlier ones. Other keyword arguments go to :func:`generate_reports`.
    Example: ``generate_candidates(model, proc, [[img]], n_candidates=5)[0]`` -> five reports.
    """
    if n_candidates < 1:
        raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
    cols = [
        generate_reports(model, processor, image_lists, do_sample=True, temperature=temperature, seed=seed + j, **kwargs)
        for j in range(n_candidates)
    ]
    return [list(c) for c in zip(*cols)]


def reference_nll(
    model,
    processor,
    image_lists: Sequence[Sequence[Any]],
    completions: Sequence[str],
    *,
    prompt: str = PROMPT,
    batch_size: int = 16,
) -> "np.ndarray":
    """Teacher-forced negative log-likelihood of each ``completions[i]`` given ``image_lists[i]``.

    Returns an ``(n, 2)`` float64 array: summed NLL (nats) of the completion tokens (the end-of-text
    token included) and their count; ``nll[:, 0].sum() / nll[:, 1].sum()`` is the mean per token.
    Comparing it with the same completions under other studies' images measures how much the policy
    uses the image (an image-blind policy gives the same value), without sampling noise.
    Example: ``reference_nll(model, proc, [[img]], ["<think> ... </think> <answer> ... </answer>"])``.
    """
    import numpy as np
    import torch

    if len(image_lists) != len(completions):
        raise ValueError(f"{len(image_lists)} image lists but {len(completions)} completions")
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    tok = processor.tokenizer
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = np.zeros((len(completions), 2))
    try:
        for start in range(0, len(completions), batch_size):
            imgs = [list(x) for x in image_lists[start:start + batch_size]]
            heads = [processor.apply_chat_template(prompt_messages(len(i), prompt), add_generation_prompt=True,
                                                   tokenize=False) for i in imgs]
            texts = [h + c + tok.eos_token for h, c in zip(heads, completions[start:start + batch_size])]
            images = imgs if any(imgs) else None
            # right padding: each row's prompt starts at 0, so its prompt length marks where the completion starts
            full = processor(text=texts, images=images, return_tensors="pt", padding=True, padding_side="right")
            n_prompt = [int(processor(text=[h], images=[i] if i else None, return_tensors="pt")["input_ids"].shape[1])
                        for h, i in zip(heads, imgs)]
            full = {k: (v.to(device) if hasattr(v, "to") else v) for k, v in full.items()}
            with torch.inference_mode():
                logits = model(**full).logits.float()
            ids, mask = full["input_ids"], full["attention_mask"]
            logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
            for r, pl in enumerate(n_prompt):
                keep = mask[r, 1:].bool().clone()
                keep[: pl - 1] = False
                out[start + r] = (-float(logp[r][keep].sum()), int(keep.sum()))
    finally:
        model.train(was_training)
    return out
