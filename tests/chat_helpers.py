"""Shared pieces of the chat API tests (tests/apigen for sdrlib.apigen, tests/serve for sdrlib.serve).

A deterministic backend for :class:`sdrlib.serve.ChatServer` (an answer names the study, by a hash of the image
it received, the request seed and the choice index), test records with PNG images, and :func:`run`, one
:func:`sdrlib.apigen.generate_api_candidates` call against a server with fast retries.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from PIL import Image

from sdrlib.apigen import APIStats, generate_api_candidates
from training_helpers import Rec  # the record shape sdrlib.data loaders return


def png(path: Path, seed: int, size: int = 32) -> str:
    Image.fromarray((np.random.default_rng(seed).random((size, size)) * 255).astype("uint8")).save(path)
    return str(path)


def chat_records(tmp_path: Path) -> list[Rec]:
    """Four test-split studies, one random image each."""
    return [Rec(f"s{i}", [png(tmp_path / f"test_{i}.png", i)], "Lungs clear.", "Normal.", None, "test")
            for i in range(4)]


def img_tag(messages) -> str:
    url = messages[0]["content"][0]["image_url"]["url"]
    return hashlib.sha256(url.encode()).hexdigest()[:8]


def det_backend(messages, n, temperature, max_tokens, seed):
    tag, s = img_tag(messages), -1 if seed is None else seed
    return [f"<think> Study {tag} seed {s} choice {j}. </think> <answer> Impression {s % 97}-{j}. </answer>"
            for j in range(n)]


def run(recs, srv, cache, **kw):
    stats = APIStats()
    kw = {"n_candidates": 3, "backoff": 0.001, "max_backoff": 0.01, "max_retries": 3, **kw}
    out = generate_api_candidates(recs, model="test-model", base_url=srv.url, cache_path=cache, stats=stats, **kw)
    return out, stats
