"""The entry point of :mod:`sdrlib.apigen`: :func:`generate_api_candidates`.

One run: validate the settings (:mod:`._checks`), build the prompt, open the client, take what the cache
holds, ask for the missing samples study by study in a thread pool (each answer on disk before it is used)
and count malformed answers. Left out: the request loop (:mod:`._requests`) and the cache format
(:mod:`._cache`).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sdrlib.apigen._cache import APIStats, _cache_key, _CacheWriter, _set_last_stats, load_cache
from sdrlib.apigen._checks import _check_options, _check_records, _Options
from sdrlib.apigen._common import _CACHE_VERSION, _KEY_PLACEHOLDER, FAILED_PLACEHOLDER, APIKeyError, log
from sdrlib.apigen._prompts import build_messages, choose_exemplars, image_data_url, prompt_text
from sdrlib.apigen._requests import _Caps, _is_loopback, _Runner, _sample_seed, _Stopped
from sdrlib.reports import parse_api_answer


def _open_client(o: _Options) -> tuple[Any, str]:
    """The ``openai`` client of the run and the key it sends (a placeholder for a loopback server without one)."""
    import openai

    key = os.environ.get(o.api_key_env, "")
    if not key:
        if not _is_loopback(o.base_url):
            raise APIKeyError(f"no API key: set the environment variable {o.api_key_env} "
                              f"(or pass api_key_env=...); only a loopback base_url works without one")
        key = _KEY_PLACEHOLDER
    return openai.OpenAI(api_key=key, base_url=o.base_url, max_retries=0, timeout=o.timeout), key


def _from_cache(records: list[Any], cache: dict[tuple, dict[str, Any]], base: dict[str, Any], n_candidates: int,
                stats: APIStats) -> tuple[list[list[str | None]], list[tuple[int, list[int]]]]:
    """The cached texts, ``[len(records)][n_candidates]`` (None where missing), and ``[(study, missing samples)]``."""
    out: list[list[str | None]] = [[None] * n_candidates for _ in records]
    todo: list[tuple[int, list[int]]] = []
    for i, r in enumerate(records):
        missing = []
        for j in range(n_candidates):
            hit = cache.get(_cache_key({**base, "study_id": r.study_id, "sample": j}))
            if hit is not None:
                out[i][j] = hit["text"]
            else:
                missing.append(j)
        stats.cached += n_candidates - len(missing)
        stats.requested += len(missing)
        if missing:
            todo.append((i, missing))
    return out, todo


class _Fill:
    """Asks for one study's missing samples (``fill(i, missing)``) and writes each answer to the cache before
    it lands in ``out``; ``failed_idx`` collects the ``(study, sample)`` pairs that failed."""

    def __init__(self, records: list[Any], base: dict[str, Any], text: str, o: _Options, runner: _Runner,
                 caps: _Caps, writer: _CacheWriter | None, out: list[list[str | None]], stats: APIStats) -> None:
        self.records, self.base, self.text, self.o = records, base, text, o
        self.runner, self.caps, self.writer, self.out, self.stats = runner, caps, writer, out, stats
        self.failed_idx: set[tuple[int, int]] = set()

    def record(self, i: int, j: int, text_j: str | None, finish: str | None, sent: dict[str, Any] | None) -> None:
        rec = {**self.base, "study_id": self.records[i].study_id, "sample": j, "time": round(time.time(), 3)}
        if text_j is None:
            rec.update(status="failed")
        else:
            rec.update(status="ok", text=text_j, finish_reason=finish,
                       sent={p: v for p, v in (sent or {}).items()})
        self.writer.append(rec)  # on disk before it is used
        self.out[i][j] = text_j if text_j is not None else FAILED_PLACEHOLDER
        if text_j is None:
            self.failed_idx.add((i, j))
        self.runner._count(**({"generated": 1} if text_j is not None else {"failed": 1}))

    def __call__(self, i: int, missing: list[int]) -> None:
        k, seed, caps, runner = self.o.n_candidates, self.o.seed, self.caps, self.runner
        sid = self.records[i].study_id
        messages = build_messages(self.text, image_data_url(self.records[i].image_paths[0]))
        if len(missing) == k and k > 1 and caps.n is not False:
            got = runner.call(messages, k, _sample_seed(seed, sid, 0))
            if got is not None:
                choices, sent = got
                for j, (t, fin) in enumerate(choices[:k]):
                    self.record(i, j, t, fin, {**sent, "choice": j})
                if len(choices) < k:
                    with caps.lock:
                        if caps.n is not False:
                            caps.n = False
                            self.stats.adapted.append("n")
                missing = list(range(len(choices), k))
            elif caps.n is not False:  # failed after retries (not a refusal of n)
                for j in missing:
                    self.record(i, j, None, None, None)
                return
        for j in missing:
            got = runner.call(messages, 1, _sample_seed(seed, sid, j))
            if got is None:
                self.record(i, j, None, None, None)
            else:
                (t, fin), sent = got[0][0], got[1]
                self.record(i, j, t, fin, sent)


def _run_pool(todo: list[tuple[int, list[int]]], fill: Callable[[int, list[int]], None], concurrency: int,
              runner: _Runner) -> None:
    """``fill`` every study of ``todo`` in a thread pool; the first fatal error stops the others and is raised."""
    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(todo)), thread_name_prefix="apigen")
    try:
        futures = [pool.submit(fill, i, miss) for i, miss in todo]
        fatal: BaseException | None = None
        for f in futures:
            try:
                f.result()
            except _Stopped:
                pass
            except BaseException as exc:  # the first fatal error wins; the others stop
                runner.stopped.set()
                fatal = fatal or exc
        if fatal is not None:
            raise fatal
    finally:
        # On an error or Ctrl-C stop queued studies; running ones finish their request.
        pool.shutdown(wait=True, cancel_futures=True)


def _finish(out: list[list[str | None]], failed_idx: set[tuple[int, int]], stats: APIStats,
            o: _Options) -> list[list[str]]:
    """The texts with :data:`FAILED_PLACEHOLDER` for failures; counts the malformed answers into ``stats``."""
    result = [[t if t is not None else FAILED_PLACEHOLDER for t in row] for row in out]
    # Malformed: returned samples (cached or new) without a section; failures are counted apart.
    stats.malformed = sum(1 for i, row in enumerate(result) for j, t in enumerate(row)
                          if (i, j) not in failed_idx and parse_api_answer(t).malformed)
    log.info("apigen %s (%s): %s", o.model, o.prompt, stats.summary())
    return result


def generate_api_candidates(
    records: Sequence[Any], *, model: str, base_url: str | None = None, n_candidates: int = 5, prompt: str = "p1",
    exemplars: Sequence[Any] | None = None, cache_path: str | os.PathLike, temperature: float = 1.0,
    max_tokens: int = 512, seed: int = 0, api_key_env: str = "OPENAI_API_KEY", max_retries: int = 5,
    timeout: float = 60.0, concurrency: int = 4, backoff: float = 1.0, max_backoff: float = 60.0,
    use_n: bool | None = None, stats: APIStats | None = None,
) -> list[list[str]]:
    """``n_candidates`` raw completions per study from an OpenAI-compatible chat API, cached on disk.

    Parameters
    ----------
    records : sequence of :class:`sdrlib.data.Record`
        Studies to report on; ``study_id`` unique, first of ``image_paths`` sent.
    model, base_url : str
        Model name and API root (``None``: the client's default, api.openai.com or
        ``$OPENAI_BASE_URL``). A loopback ``base_url`` needs no key.
    n_candidates : int
        Samples per study (the paper's K, >= 1).
    prompt : {"p1", "p2"}
        Zero-shot, or with five exemplars chosen from ``exemplars`` (training records or
        template strings) by ``seed`` (:func:`choose_exemplars`). p1 ignores ``exemplars``.
    cache_path : path
        JSONL cache (created with its folders; shared between runs and settings).
    temperature, max_tokens, seed : sampling settings; part of the cache key.
    api_key_env : str
        Environment variable holding the key; the key is never written anywhere.
    max_retries, timeout, backoff, max_backoff : retry policy
        Up to ``max_retries`` retries per request on 429 / 5xx / timeouts / connection
        errors / unparseable bodies, waiting ``min(max_backoff, backoff * 2**attempt)``
        times a jitter factor in [0.5, 1] (at least ``Retry-After``); ``timeout`` seconds
        per request.
    concurrency : int
        Studies in flight at once (threads).
    use_n : bool or None
        None or True: one ``n=n_candidates`` request per wholly missing study, falling back to
        single requests for the rest of the run when the server refuses ``n`` or returns fewer
        choices; False: single requests only (one seed per sample, so a partly cached
        study and a fresh one draw the same samples from a deterministic server).
    stats : APIStats, optional
        Filled with this run's counts (also available as :func:`last_stats`).

    Returns
    -------
    list of list of str
        ``[len(records)][n_candidates]`` raw completion texts in study order; a failed sample is
        :data:`FAILED_PLACEHOLDER` (``""``) and is asked again by the next run.
    """
    import openai  # noqa: F401  (a missing client fails before anything else)

    o = _check_options(model=model, base_url=base_url, n_candidates=n_candidates, prompt=prompt,
                       temperature=temperature, max_tokens=max_tokens, seed=seed, api_key_env=api_key_env,
                       max_retries=max_retries, timeout=timeout, concurrency=concurrency, backoff=backoff,
                       max_backoff=max_backoff, use_n=use_n, cache_path=cache_path)
    records = _check_records(records)
    shots = choose_exemplars(exemplars if exemplars is not None else [], seed=o.seed) if o.prompt == "p2" else []
    text = prompt_text(o.prompt, shots)
    prompt_sha = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    client, key = _open_client(o)
    stats = stats if stats is not None else APIStats()
    stats.studies, stats.samples = len(records), len(records) * o.n_candidates
    _set_last_stats(stats)
    cache, stats.corrupt_lines = load_cache(o.cache_path)
    base = {"v": _CACHE_VERSION, "model": o.model, "base_url": str(client.base_url), "prompt": o.prompt,
            "prompt_sha": prompt_sha, "temperature": o.temperature, "max_tokens": o.max_tokens, "run_seed": o.seed}
    out, todo = _from_cache(records, cache, base, o.n_candidates, stats)
    caps = _Caps(o.use_n)
    runner = _Runner(client, model=o.model, temperature=o.temperature, max_tokens=o.max_tokens,
                     max_retries=o.max_retries, backoff=o.backoff, max_backoff=o.max_backoff, caps=caps,
                     stats=stats, secret=key, rng_seed=o.seed)
    writer = _CacheWriter(o.cache_path) if todo else None
    fill = _Fill(records, base, text, o, runner, caps, writer, out, stats)
    try:
        if todo:
            _run_pool(todo, fill, o.concurrency, runner)
    finally:
        if writer is not None:
            writer.close()
        client.close()
    return _finish(out, fill.failed_idx, stats, o)
