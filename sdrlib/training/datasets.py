"""Training datasets: prompt-completion pairs for SFT, prompts with reference columns for GRPO.

The prompt is the user turn with one image part per image (:func:`sdrlib.generation.prompt_messages`), the
completion the templated report (:func:`sdrlib.reports.build_template`); records without an image or a
section are dropped. Datasets are HF ``datasets.Dataset`` objects with an ``images`` column of images.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sdrlib.generation import PROMPT, prompt_messages
from sdrlib.reports import build_template

__all__ = ["report_texts", "sft_dataset", "grpo_dataset", "image_dataset", "usable_records", "row_records"]


def report_texts(records: Sequence[Any]) -> tuple[list[str], int]:
    """Templated reports of the records with both sections; returns ``(texts, n_skipped)``."""
    texts, skipped = [], 0
    for r in records:
        if r.findings.strip() and r.impression.strip():
            texts.append(build_template(r.findings, r.impression))
        else:
            skipped += 1
    return texts, skipped


def image_dataset(rows: dict[str, list]) -> Any:
    """An HF dataset of ``rows`` whose ``images`` column holds image files (loaded by ``datasets``)."""
    import datasets

    ds = datasets.Dataset.from_dict(rows)
    return ds.cast_column("images", datasets.Sequence(datasets.Image()))


def usable_records(records: Sequence[Any]) -> list[Any]:
    """The records with an image and both report sections; none raises ``ValueError``."""
    out = [r for r in records if r.findings.strip() and r.impression.strip() and r.image_paths]
    if not out:
        raise ValueError("no record has an image and both report sections; check the data split")
    return out


def row_records(ds: Any, records: Sequence[Any]) -> list[Any]:
    """The records behind the rows of ``ds`` (a dataset built from ``records`` by this module), in row order, matched
    by ``study_id``."""
    recs = {r.study_id: r for r in usable_records(records)}
    return [recs[s] for s in ds["study_id"]]


def sft_dataset(records: Sequence[Any], max_images: int = 1, prompt: str | None = None) -> Any:
    """HF dataset for SFT: ``prompt`` (user turn with image parts), ``completion`` (report), ``images``.

    Records missing an image or a section are dropped. Example: ``sft_dataset(load_split(cfg, "train"))``.
    """
    recs = usable_records(records)
    rows: dict[str, list] = {"prompt": [], "completion": [], "images": [], "study_id": []}
    for r in recs:
        paths = list(r.image_paths)[:max_images]
        rows["prompt"].append(prompt_messages(len(paths), prompt or PROMPT))
        rows["completion"].append([{"role": "assistant", "content": build_template(r.findings, r.impression)}])
        rows["images"].append(paths)
        rows["study_id"].append(r.study_id)
    return image_dataset(rows)


def grpo_dataset(records: Sequence[Any], max_images: int = 1, prompt: str | None = None) -> Any:
    """HF dataset for GRPO: ``prompt``, ``images`` and the reference columns ``findings`` / ``impression``."""
    recs = usable_records(records)
    rows: dict[str, list] = {"prompt": [], "images": [], "findings": [], "impression": [], "study_id": []}
    for r in recs:
        paths = list(r.image_paths)[:max_images]
        rows["prompt"].append(prompt_messages(len(paths), prompt or PROMPT))
        rows["images"].append(paths)
        rows["findings"].append(r.findings)
        rows["impression"].append(r.impression)
        rows["study_id"].append(r.study_id)
    return image_dataset(rows)
