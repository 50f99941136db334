"""Argument checks of :func:`sdrlib.apigen.generate_api_candidates`: every setting validated, in a fixed order.

:func:`_check_options` gives the validated settings of a run as one :class:`_Options` (the first unusable
argument raises :class:`~sdrlib.apigen.APIGenError` naming it); :func:`_check_records` the studies. Left out:
the exemplar pool (:func:`~sdrlib.apigen.choose_exemplars` checks it) and the key (read when the client opens).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sdrlib.apigen._common import PROMPTS, APIGenError


def _check_int(name: str, value: Any, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise APIGenError(f"{name} must be an int >= {lo}, got {value!r}")
    return value


def _check_float(name: str, value: Any, lo: float, hi: float, *, open_lo: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < lo or value > hi or (open_lo and value == lo):
        raise APIGenError(f"{name} must be a finite number in {'(' if open_lo else '['}{lo}, {hi}], got {value!r}")
    return float(value)


def _check_records(records: Any) -> list[Any]:
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        raise APIGenError(f"records must be a sequence of Record objects, got {type(records).__name__}")
    seen: set[str] = set()
    for i, r in enumerate(records):
        sid = getattr(r, "study_id", None)
        paths = getattr(r, "image_paths", None)
        if not isinstance(sid, str) or not sid:
            raise APIGenError(f"records[{i}] has no study_id (a Record from sdrlib.data is expected)")
        if sid in seen:
            raise APIGenError(f"records[{i}]: study_id {sid!r} occurs twice; cache keys need unique ids")
        seen.add(sid)
        if isinstance(paths, (str, bytes)) or not isinstance(paths, Sequence) or not paths:
            raise APIGenError(f"records[{i}] (study {sid!r}) has no image_paths")
        if not Path(paths[0]).is_file():
            raise APIGenError(f"records[{i}] (study {sid!r}): image {paths[0]} not found")
    return list(records)


@dataclass(frozen=True)
class _Options:
    """The validated settings of one run (see :func:`~sdrlib.apigen.generate_api_candidates`)."""

    model: str
    base_url: str | None
    n_candidates: int
    prompt: str
    temperature: float
    max_tokens: int
    seed: int
    api_key_env: str
    max_retries: int
    timeout: float
    concurrency: int
    backoff: float
    max_backoff: float
    use_n: bool | None
    cache_path: Path


def _check_options(*, model: Any, base_url: Any, n_candidates: Any, prompt: Any, temperature: Any,
                   max_tokens: Any, seed: Any, api_key_env: Any, max_retries: Any, timeout: Any, concurrency: Any,
                   backoff: Any, max_backoff: Any, use_n: Any, cache_path: Any) -> _Options:
    """The settings of a run, validated in a fixed order (the first unusable one raises :class:`APIGenError`)."""
    if not isinstance(model, str) or not model.strip():
        raise APIGenError(f"model must be a non-empty string, got {model!r}")
    if base_url is not None and (not isinstance(base_url, str)
                                 or urlparse(base_url).scheme not in ("http", "https")
                                 or not urlparse(base_url).hostname):
        raise APIGenError(f"base_url must be an http(s) URL such as 'http://127.0.0.1:8000/v1', got {base_url!r}")
    n_candidates = _check_int("n_candidates", n_candidates, 1)
    if prompt not in PROMPTS:
        raise APIGenError(f"prompt must be one of {PROMPTS}, got {prompt!r}")
    temperature = _check_float("temperature", temperature, 0.0, 2.0)
    max_tokens = _check_int("max_tokens", max_tokens, 1)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise APIGenError(f"seed must be an int, got {seed!r}")
    max_retries = _check_int("max_retries", max_retries, 0)
    timeout = _check_float("timeout", timeout, 0.0, 3600.0, open_lo=True)
    concurrency = _check_int("concurrency", concurrency, 1)
    backoff = _check_float("backoff", backoff, 0.0, 600.0)
    max_backoff = _check_float("max_backoff", max_backoff, 0.0, 3600.0)
    if use_n not in (None, True, False):
        raise APIGenError(f"use_n must be None, True or False, got {use_n!r}")
    if not isinstance(api_key_env, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", api_key_env):
        raise APIGenError(f"api_key_env must name an environment variable, got {api_key_env!r}")
    if cache_path is None or not isinstance(cache_path, (str, os.PathLike)) or str(cache_path) == "":
        raise APIGenError(f"cache_path must be a file path, got {cache_path!r}")
    cache_path = Path(cache_path)
    if cache_path.is_dir():
        raise APIGenError(f"cache_path {cache_path} is a folder; give a .jsonl file path")
    return _Options(model, base_url, n_candidates, prompt, temperature, max_tokens, seed, api_key_env, max_retries,
                    timeout, concurrency, backoff, max_backoff, use_n, cache_path)
