"""The request of :mod:`sdrlib.apigen`: the two prompts, the exemplar choice of p2, the image as a data URL.

:func:`choose_exemplars` (seeded choice of p2's five training reports), :func:`prompt_text` (p1 / p2),
:func:`image_data_url` (the study's first image, base64 PNG) and :func:`build_messages` (one OpenAI user
message). Left out: sending the request (:mod:`._requests`), caching the answers (:mod:`._cache`).
"""

from __future__ import annotations

import base64
import io
import os
import random
from collections.abc import Sequence
from typing import Any

from sdrlib.apigen._common import N_EXEMPLARS, PROMPTS, APIGenError
from sdrlib.errors import SDRError
from sdrlib.reports import build_template, is_blank, parse_template

# --------------------------------------------------------------------------- prompts
_INSTRUCTION = (
    "You are an experienced radiologist. The attached image is a chest X-ray. "
    "Write its radiology report in two sections.\n"
    "Findings: what the image shows, in short declarative sentences, covering the lungs, "
    "pleura, heart size, mediastinum, bones and any lines or devices; state relevant normal "
    "findings too.\n"
    "Impression: the one to three most important conclusions, briefly.\n"
    "Reply with the report only, in exactly this form and nothing before or after it:\n"
    "<think> FINDINGS </think> <answer> IMPRESSION </answer>\n"
    "where FINDINGS is the text of the Findings section and IMPRESSION the text of the "
    "Impression section, in plain sentences without headers, lists or Markdown."
)
_EXEMPLAR_INTRO = (
    "For style and level of detail, here are {n} reports of other patients from the same "
    "dataset, in the required form. They do not describe the attached image."
)
_CLOSING = "Now write the report of the attached chest X-ray in the same form."


def _exemplar_text(item: Any) -> str | None:
    """An exemplar as a template string, or None when it has no usable two sections."""
    if isinstance(item, str):
        parsed = parse_template(item)
        return build_template(parsed.findings, parsed.impression) if parsed else None
    findings, impression = getattr(item, "findings", None), getattr(item, "impression", None)
    if not isinstance(findings, str) or not isinstance(impression, str):
        return None
    if is_blank(findings) or is_blank(impression):
        return None
    try:
        return build_template(findings, impression)
    except SDRError:  # a section holding a template tag cannot be shown in the template
        return None


def choose_exemplars(pool: Sequence[Any], seed: int = 0, n: int = N_EXEMPLARS) -> list[str]:
    """``n`` exemplar reports for prompt p2, as template strings, chosen by ``seed``.

    Parameters
    ----------
    pool : sequence of Record (with ``findings`` / ``impression``) or template strings
        Training-split studies. Items whose ``split`` attribute is not ``"train"`` are
        refused (a test report shown as an exemplar would leak); items without both
        sections are skipped.
    seed : int
        The choice is ``random.Random(seed).sample`` over the usable items in pool order,
        so the same pool and seed give the same exemplars on every machine.

    Raises :class:`APIGenError` when fewer than ``n`` usable items remain.
    Example: ``choose_exemplars(train, seed=0)`` -> five ``"<think> ... </answer>"`` strings.
    """
    if isinstance(pool, (str, bytes)) or not isinstance(pool, Sequence):
        raise APIGenError(f"exemplars must be a sequence of training records or template strings, "
                          f"got {type(pool).__name__}")
    usable = []
    for i, item in enumerate(pool):
        split = getattr(item, "split", "train")
        if split != "train":
            raise APIGenError(f"exemplars[{i}] (study {getattr(item, 'study_id', '?')!r}) is from split "
                              f"{split!r}; exemplars must come from the training split")
        text = _exemplar_text(item)
        if text is not None:
            usable.append(text)
    if len(usable) < n:
        raise APIGenError(f"prompt p2 needs {n} exemplars with both Findings and Impression; "
                          f"the pool has {len(usable)} usable of {len(pool)}")
    return random.Random(seed).sample(usable, n)


def prompt_text(prompt: str = "p1", exemplars: Sequence[str] = ()) -> str:
    """The text part of the request: p1 the instruction; p2 also the exemplar reports.

    ``exemplars`` are template strings (:func:`choose_exemplars`); p2 needs exactly
    :data:`N_EXEMPLARS`. Example: ``"<think>" in prompt_text("p1")`` -> True.
    """
    if prompt == "p1":
        return _INSTRUCTION
    if prompt == "p2":
        if len(exemplars) != N_EXEMPLARS:
            raise APIGenError(f"prompt p2 needs {N_EXEMPLARS} exemplars, got {len(exemplars)}")
        shots = "\n".join(f"Example {i + 1}:\n{t}" for i, t in enumerate(exemplars))
        return f"{_INSTRUCTION}\n\n{_EXEMPLAR_INTRO.format(n=N_EXEMPLARS)}\n{shots}\n\n{_CLOSING}"
    raise APIGenError(f"prompt must be one of {PROMPTS}, got {prompt!r}")


def image_data_url(path: str | os.PathLike) -> str:
    """The image at ``path`` as a ``data:image/png;base64,...`` URL (8-bit gray or RGB PNG)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im.load()
            if im.mode not in ("L", "RGB"):
                im = im.convert("RGB")
            buf = io.BytesIO()
            im.save(buf, format="PNG")
    except FileNotFoundError:
        raise APIGenError(f"image {path} not found (regenerate the data with notebook 00)") from None
    except OSError as exc:
        raise APIGenError(f"image {path} cannot be read: {exc}") from None
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def build_messages(text: str, image_url: str) -> list[dict[str, Any]]:
    """One user message: the image (data URL) then the prompt text (OpenAI content parts)."""
    return [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": image_url}},
        {"type": "text", "text": text},
    ]}]

