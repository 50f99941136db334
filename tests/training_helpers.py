"""Shared test helpers for the rewards / models / training tests (not a test module).

- :class:`FakeEmbedder`: deterministic unit vectors per normalised sentence, no model load;
  records every sentence it is asked to encode.
- :func:`make_records`: a few Record-like studies with generated grayscale PNGs whose
  content depends on the report (a bright quadrant for an opacity, a wide blob for
  cardiomegaly), so a policy can in principle read the report off the image.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdrlib.reports import split_sentences
from sdrlib.rewards import normalize_sentence

#: The tiny Qwen3-VL's shape (profile overrides) every training test shares; tests add their own step counts.
TINY_POLICY = {
    "sft.vocab_size": 320,
    "sft.tiny_hidden_size": 32,
    "sft.tiny_layers": 1,
    "sft.tiny_heads": 2,
    "sft.tiny_kv_heads": 1,
    "sft.tiny_head_dim": 16,
    "sft.tiny_intermediate_size": 64,
    "sft.tiny_vision_hidden_size": 32,
    "sft.tiny_vision_layers": 1,
    "sft.tiny_vision_heads": 2,
    "sft.tiny_vision_intermediate_size": 64,
    "sft.tiny_image_size": 64,
}


REPORTS = {
    0: ("The lungs are clear. Heart size is normal.", "No acute cardiopulmonary process."),
    1: ("There is a right lower lobe opacity. Heart size is normal.", "Right lower lobe pneumonia."),
    2: ("The heart is enlarged. The lungs are clear.", "Cardiomegaly."),
}


class FakeEmbedder:
    dim = 16
    encoder_id = "fake-16"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def vec(self, s: str) -> np.ndarray:
        seed = int(hashlib.sha256(normalize_sentence(s).encode()).hexdigest()[:8], 16)
        v = np.random.default_rng(seed).standard_normal(self.dim)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def encode_sections(self, texts):
        out = []
        for t in texts:
            sents = split_sentences(t)
            self.seen.extend(sents)
            out.append(np.stack([self.vec(s) for s in sents]) if sents else np.zeros((0, self.dim), np.float32))
        return out


@dataclass
class Rec:
    study_id: str
    image_paths: list
    findings: str
    impression: str
    labels: dict | None
    split: str


def make_records(n: int, root: Path, split: str = "train", seed: int = 0, size: int = 64) -> list[Rec]:
    from PIL import Image

    rng = np.random.default_rng(seed)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        k = int(rng.integers(len(REPORTS)))
        img = rng.normal(80, 10, (size, size))
        if k == 1:
            img[size // 2 :, size // 2 :] += 100
        if k == 2:
            img[size // 4 : 3 * size // 4, size // 3 : 2 * size // 3] += 60
        p = root / f"{split}_{i}.png"
        Image.fromarray(np.clip(img, 0, 255).astype("uint8")).save(p)
        out.append(Rec(f"{split}{i}", [str(p)], *REPORTS[k], {"k": k}, split))
    return out


#: A tiny SFT long enough (100 steps) that GRPO samples completions on the template, so a distance reward really
#: runs (encoder, cache, numba kernels), and 2-step GRPO runs on it: the determinism and parallel-run tests.
GRPO_TINY = {
    "sft.max_steps": 100,
    "sft.batch_size": 4,
    "sft.learning_rate": 1.0e-2,
    "sft.save_steps": 1000,
    "grpo.max_steps": 2,
    "grpo.batch_size": 8,
    "grpo.num_generations": 2,
    "grpo.max_completion_length": 64,
    "grpo.save_steps": 1000,
}
