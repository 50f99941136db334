"""Candidate reports from any OpenAI-compatible chat API (paper sec. 3.3, appendix B).

:func:`generate_api_candidates` asks a chat model (GPT-4o-mini, GPT-5-mini, Gemini
Flash-Lite, Mistral-Small through their OpenAI-compatible endpoints, or a local policy
served by :mod:`sdrlib.serve`) for ``n_candidates`` (the paper's K) reports per study and returns
the raw completions, shape ``[n_studies][n_candidates]``, in study order. The selection notebook parses
them with :func:`parse_api_answer` and ranks them with the set distances.

- Prompts: two prompts written for this project after the description of the paper's
  appendix B (the paper's own texts are not reproduced): ``"p1"`` zero-shot,
  ``"p2"`` the same instruction plus five exemplar reports of the training split,
  chosen by ``seed`` (:func:`choose_exemplars`). Both ask for the project's template
  ``<think> FINDINGS </think> <answer> IMPRESSION </answer>``. The study's first image
  (frontal first, see :class:`sdrlib.data.Record`) goes inline as a base64 PNG data URL.
- Parsing (:func:`parse_api_answer`): the template first, then ``FINDINGS:`` /
  ``IMPRESSION:`` headers (:func:`sdrlib.reports.split_report`), then Markdown headers
  (``**Findings**``, ``### Impression``), with code fences and list bullets removed. An
  answer without a recognisable section is kept as raw text (all of it as Findings) and
  counted as malformed, never dropped.
- Cache: every completion is appended to a JSONL file (one JSON object a line,
  flushed and fsynced) *before* it is used, so an interrupted or rate-limited run
  resumes without paying twice. A line is found again by its key: model, prompt id and
  prompt hash, study id, sample index, temperature, max_tokens and seed; a run with other
  settings never reuses it. The base URL is recorded but not part of the key, so a local
  server restarted on another port keeps its cache (name the model apart, or use another
  cache file, when two servers serve different models under one name). A torn last line (interrupted write) or
  any other unreadable line is ignored with a :class:`CacheWarning`.
- Retries: 429, 5xx, 408, timeouts, connection errors and unparseable responses are
  retried with exponential backoff and jitter (``Retry-After`` is respected), at most
  ``max_retries`` times; then the sample is *failed*: counted, written to the cache as a
  failure record (ignored on load, so the next run asks again), and returned as
  :data:`FAILED_PLACEHOLDER` (``""``, which has no sections: a selection ranks it last).
  401 / 403 / 404 stop the run with :class:`APIRequestError` (key, model or URL wrong);
  another 400 fails the sample without retrying.
- Samples: one request with ``n=n_candidates`` when a whole study is missing and the server
  supports ``n``; else one request per sample. Each request carries a ``seed`` derived
  from ``(seed, study_id, sample)`` while the server accepts one. A server that rejects
  ``n``, ``seed``, ``temperature`` or ``max_tokens`` (GPT-5-style models want
  ``max_completion_tokens``) is asked again without it, once, and the run remembers.
- Key: read from the environment variable ``api_key_env`` only; never written to the
  cache or logged (error texts are scrubbed). A loopback ``base_url`` needs no key
  (a placeholder is sent).

Counts of the last run: :func:`last_stats` (or pass ``stats=APIStats()``).

Parts (private modules, their public names re-exported here): ``_common`` (errors, constants, the
logger), ``_prompts`` (prompts, exemplars, the image), ``_cache`` (:class:`APIStats`, :func:`load_cache`,
the writer), ``_requests`` (one request with retries and parameter adaptation), ``_checks`` (argument
checks), ``_generate`` (:func:`generate_api_candidates`).

Left out: streaming, tool calls, images other than the first, image resizing, cost
accounting, the Batch API.

Example::

    cands = generate_api_candidates(test, model="gpt-4o-mini", n_candidates=5, prompt="p2",
                                    exemplars=train, cache_path="cache/api/gpt4omini.jsonl")
    parse_api_answer(cands[0][0]).findings
"""

from sdrlib.apigen._cache import APIStats, last_stats, load_cache
from sdrlib.apigen._common import (FAILED_PLACEHOLDER, N_EXEMPLARS, PROMPTS, APIGenError, APIKeyError, APIRequestError,
                                   CacheWarning)
from sdrlib.apigen._generate import generate_api_candidates
from sdrlib.apigen._prompts import build_messages, choose_exemplars, image_data_url, prompt_text
from sdrlib.apigen._requests import _sample_seed  # noqa: F401  (the request seed of a sample; tests read it)
from sdrlib.reports import ParsedAnswer, parse_api_answer  # re-exported (they live in reports)

__all__ = [
    "APIGenError",
    "APIKeyError",
    "APIRequestError",
    "CacheWarning",
    "APIStats",
    "ParsedAnswer",
    "PROMPTS",
    "FAILED_PLACEHOLDER",
    "N_EXEMPLARS",
    "choose_exemplars",
    "prompt_text",
    "image_data_url",
    "build_messages",
    "parse_api_answer",
    "load_cache",
    "generate_api_candidates",
    "last_stats",
]
