"""Candidate reports from any OpenAI-compatible chat API (paper sec. 3.3, appendix B).

:func:`generate_api_candidates` asks a chat model (GPT-4o-mini, GPT-5-mini, Gemini
Flash-Lite, Mistral-Small through their OpenAI-compatible endpoints, or a local policy
served by :mod:`sdrlib.serve`) for ``K`` reports per study and returns the raw
completions, shape ``[n_studies][K]``, in study order. The selection notebook parses
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
- Samples: one request with ``n=K`` when a whole study is missing and the server
  supports ``n``; else one request per sample. Each request carries a ``seed`` derived
  from ``(seed, study_id, sample)`` while the server accepts one. A server that rejects
  ``n``, ``seed``, ``temperature`` or ``max_tokens`` (GPT-5-style models want
  ``max_completion_tokens``) is asked again without it, once, and the run remembers.
- Key: read from the environment variable ``api_key_env`` only; never written to the
  cache or logged (error texts are scrubbed). A loopback ``base_url`` needs no key
  (a placeholder is sent).

Counts of the last run: :func:`last_stats` (or pass ``stats=APIStats()``).

Left out: streaming, tool calls, images other than the first, image resizing, cost
accounting, the Batch API.

Example::

    cands = generate_api_candidates(test, model="gpt-4o-mini", k=5, prompt="p2",
                                    exemplars=train, cache_path="cache/api/gpt4omini.jsonl")
    parse_api_answer(cands[0][0]).findings
"""

from __future__ import annotations

import base64
import hashlib
import io
import ipaddress
import json
import logging
import math
import os
import random
import re
import threading
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sdrlib.errors import SDRError
from sdrlib.reports import ParsedAnswer, build_template, is_blank, parse_api_answer, parse_template  # ParsedAnswer, parse_api_answer: re-exported (they live in reports)

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

log = logging.getLogger(__name__)

#: What a failed sample is returned as: no sections, so a selection ranks it last.
FAILED_PLACEHOLDER = ""
#: Number of exemplar reports in prompt p2.
N_EXEMPLARS = 5
PROMPTS = ("p1", "p2")
_CACHE_VERSION = 1
_KEY_PLACEHOLDER = "sk-no-key-required"  # sent to a loopback server when no key is set


class APIGenError(SDRError, ValueError):
    """An argument of the API generation is unusable (the message names it)."""


class APIKeyError(APIGenError):
    """No API key in the environment for a remote ``base_url``."""


class APIRequestError(SDRError, RuntimeError):
    """The API refused the run as a whole (401 / 403 / 404: key, model or URL wrong)."""


class CacheWarning(UserWarning):
    """A cache line was unreadable (torn by an interrupted write) and is ignored."""


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


# --------------------------------------------------------------------------- cache
@dataclass
class APIStats:
    """Counts of one :func:`generate_api_candidates` run.

    ``samples`` = studies x K; ``cached`` of them came from the cache, ``requested`` were
    asked of the API, ``generated`` came back, ``failed`` did not (returned as
    :data:`FAILED_PLACEHOLDER`). ``api_calls`` counts HTTP requests (retries included),
    ``retried`` the retries, ``retry_waits`` the seconds waited before each.
    ``malformed`` counts returned, non-failed samples :func:`parse_api_answer` finds no
    section in; ``corrupt_lines`` the cache lines ignored; ``adapted`` the request
    parameters dropped because the server refused them; ``errors`` the error kinds.
    """

    studies: int = 0
    samples: int = 0
    cached: int = 0
    requested: int = 0
    generated: int = 0
    failed: int = 0
    malformed: int = 0
    api_calls: int = 0
    retried: int = 0
    corrupt_lines: int = 0
    retry_waits: list[float] = field(default_factory=list)
    adapted: list[str] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        return (f"{self.studies} studies x K = {self.samples} samples: {self.cached} cached, "
                f"{self.requested} requested ({self.generated} ok, {self.failed} failed), "
                f"{self.api_calls} API calls ({self.retried} retries), {self.malformed} malformed")


_LAST_STATS = APIStats()


def last_stats() -> APIStats:
    """The :class:`APIStats` of the most recent :func:`generate_api_candidates` call."""
    return _LAST_STATS


def _cache_key(rec: dict[str, Any]) -> tuple:
    return (rec["model"], rec["prompt"], rec["prompt_sha"], rec["study_id"], int(rec["sample"]),
            float(rec["temperature"]), int(rec["max_tokens"]), int(rec["run_seed"]))


def load_cache(path: str | os.PathLike) -> tuple[dict[tuple, dict[str, Any]], int]:
    """Successful completions of a JSONL cache by key, and the number of unreadable lines.

    The first success of a key wins (the one an earlier run already returned). Failure
    records are skipped. A line that is not a JSON object with the expected fields
    (e.g. torn by an interrupted write) is ignored with a :class:`CacheWarning`.
    A missing file is an empty cache.
    """
    path = Path(path)
    found: dict[tuple, dict[str, Any]] = {}
    corrupt = 0
    if not path.exists():
        return found, 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw.decode("utf-8"))
                key = _cache_key(rec)
                ok = rec.get("status") == "ok" and isinstance(rec.get("text"), str)
            except (ValueError, KeyError, TypeError, AttributeError):
                corrupt += 1
                torn = not raw.endswith(b"\n")
                warnings.warn(f"{path}:{lineno}: unreadable cache line ignored"
                              f"{' (torn last line of an interrupted write)' if torn else ''}",
                              CacheWarning, stacklevel=3)
                continue
            if ok and key not in found:
                found[key] = rec
    return found, corrupt


class _CacheWriter:
    """Appends one JSON line per record with a single ``write``, then fsyncs (thread-safe)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._lock = threading.Lock()
        # A torn last line has no newline: start on a fresh line, or the next record
        # would be glued to the fragment and both would be lost.
        size = os.fstat(self._fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    os.write(self._fd, b"\n")

    def append(self, rec: dict[str, Any]) -> None:
        line = (json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)
            os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


# --------------------------------------------------------------------------- requests
def _is_loopback(url: str | None) -> bool:
    if not url:
        return False
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _sample_seed(seed: int, study_id: str, sample: int) -> int:
    """Request seed of one sample: a hash of (seed, study, sample), < 2**31."""
    h = hashlib.sha256(f"{seed}\x1f{study_id}\x1f{sample}".encode()).digest()
    return int.from_bytes(h[:4], "big") & 0x7FFFFFFF


def _retry_after(exc: Exception) -> float | None:
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    for name, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value) / div
        except ValueError:
            continue
        if math.isfinite(delay) and delay >= 0:
            return delay
    return None


class _Stopped(Exception):
    """Raised in worker threads after another thread hit a fatal error (never escapes)."""


class _Caps:
    """What the server accepts; learned from its 400 answers, shared by the run's threads."""

    def __init__(self, use_n: bool | None) -> None:
        self.n = use_n  # None: unknown, try
        self.seed = True
        self.temperature = True
        self.max_tokens_name = "max_tokens"
        self.lock = threading.Lock()


class _Runner:
    def __init__(self, client, *, model, temperature, max_tokens, max_retries, backoff, max_backoff,
                 caps: _Caps, stats: APIStats, secret: str, rng_seed: int) -> None:
        self.client, self.model = client, model
        self.temperature, self.max_tokens = temperature, max_tokens
        self.max_retries, self.backoff, self.max_backoff = max_retries, backoff, max_backoff
        self.caps, self.stats, self.secret = caps, stats, secret
        self.lock = threading.Lock()
        self.rng = random.Random(rng_seed)  # jitter only
        self.stopped = threading.Event()  # set by a fatal error: other threads send nothing more

    def _scrub(self, msg: str) -> str:
        """Error text without the key, nor anything shaped like one (APIs echo masked keys)."""
        msg = msg.replace(self.secret, "***") if self.secret else msg
        return re.sub(r"\b(?:sk|key)-[A-Za-z0-9*_\-.]{6,}", "***", msg)

    def _count(self, **kw: int) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self.stats, k, getattr(self.stats, k) + v)

    def _adapt(self, exc: Exception, n: int, with_seed: bool) -> bool:
        """Drop a parameter the server refused (400); True when something changed."""
        import openai

        if not isinstance(exc, openai.BadRequestError):
            return False
        param = (getattr(exc, "param", None) or "").lower()
        msg = str(getattr(exc, "message", exc)).lower()

        def refused(name: str) -> bool:
            return param == name or f"'{name}'" in msg or f'"{name}"' in msg

        with self.caps.lock:
            change = None
            if n > 1 and refused("n"):
                if self.caps.n is False:
                    return True  # another thread already learned it: ask again without n
                self.caps.n, change = False, "n"
            elif with_seed and refused("seed"):
                if not self.caps.seed:
                    return True
                self.caps.seed, change = False, "seed"
            elif refused("max_tokens"):
                if self.caps.max_tokens_name != "max_tokens":
                    return True
                self.caps.max_tokens_name, change = "max_completion_tokens", "max_tokens"
            elif refused("temperature"):
                if not self.caps.temperature:
                    return True
                self.caps.temperature, change = False, "temperature"
            if change:
                with self.lock:
                    if change not in self.stats.adapted:
                        self.stats.adapted.append(change)
                log.warning("server refused parameter %r; asking again without it", change)
            return change is not None

    def call(self, messages, n: int, seed: int) -> tuple[list[tuple[str, str | None]], dict[str, Any]] | None:
        """Choices ``[(text, finish_reason)]`` and the parameters sent, or None when failed."""
        import openai

        attempt = 0
        adaptations = 0
        while True:
            if self.stopped.is_set():
                raise _Stopped()
            with self.caps.lock:
                if n > 1 and self.caps.n is False:
                    return None  # the caller falls back to single requests
                params: dict[str, Any] = {self.caps.max_tokens_name: self.max_tokens}
                if self.caps.temperature:
                    params["temperature"] = self.temperature
                if self.caps.seed:
                    params["seed"] = seed
            if n > 1:
                params["n"] = n
            self._count(api_calls=1)
            try:
                resp = self.client.chat.completions.create(model=self.model, messages=messages, **params)
                choices = sorted(resp.choices, key=lambda c: c.index)
                out = [(c.message.content if isinstance(c.message.content, str) else "", c.finish_reason)
                       for c in choices]
                if not out:
                    raise ValueError("response has no choices")
                return out, params
            except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
                self.stopped.set()
                raise APIRequestError(
                    f"{type(exc).__name__} ({getattr(exc, 'status_code', '?')}) from {self.client.base_url} for "
                    f"model {self.model!r}: {self._scrub(str(exc))[:300]} - check the key, the model name and "
                    "base_url") from None
            except openai.BadRequestError as exc:
                if adaptations < 4 and self._adapt(exc, n, "seed" in params):
                    adaptations += 1
                    continue
                self._failed(exc, "bad_request")
                return None
            except Exception as exc:  # transient: 429, 5xx, 408, timeout, connection, bad body
                kind = self._transient_kind(exc)
                if kind is None:
                    raise
                if attempt >= self.max_retries:
                    self._failed(exc, kind)
                    return None
                after = _retry_after(exc)
                delay = min(self.max_backoff, self.backoff * 2 ** attempt) * (0.5 + 0.5 * self.rng.random())
                if after is not None:
                    delay = max(delay, after)  # never earlier than the server asked
                with self.lock:
                    self.stats.retried += 1
                    self.stats.retry_waits.append(delay)
                    self.stats.errors[kind] += 1
                attempt += 1
                time.sleep(delay)

    @staticmethod
    def _transient_kind(exc: Exception) -> str | None:
        import openai

        if isinstance(exc, openai.RateLimitError):
            return "429"
        if isinstance(exc, openai.APITimeoutError):
            return "timeout"
        if isinstance(exc, openai.APIConnectionError):
            return "connection"
        if isinstance(exc, openai.APIStatusError):
            code = getattr(exc, "status_code", 0)
            return str(code) if code >= 500 or code in (408, 409) else None
        if isinstance(exc, (openai.APIResponseValidationError, ValueError, AttributeError, TypeError)):
            return "bad_response"  # malformed JSON or missing fields
        return None

    def _failed(self, exc: Exception, kind: str) -> None:
        with self.lock:
            self.stats.errors[f"failed_{kind}"] += 1
        log.warning("request failed (%s): %s", kind, self._scrub(str(exc))[:200])


# --------------------------------------------------------------------------- main entry
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


def generate_api_candidates(
    records: Sequence[Any],
    *,
    model: str,
    base_url: str | None = None,
    k: int = 5,
    prompt: str = "p1",
    exemplars: Sequence[Any] | None = None,
    cache_path: str | os.PathLike,
    temperature: float = 1.0,
    max_tokens: int = 512,
    seed: int = 0,
    api_key_env: str = "OPENAI_API_KEY",
    max_retries: int = 5,
    timeout: float = 60.0,
    concurrency: int = 4,
    backoff: float = 1.0,
    max_backoff: float = 60.0,
    use_n: bool | None = None,
    stats: APIStats | None = None,
) -> list[list[str]]:
    """``k`` raw completions per study from an OpenAI-compatible chat API, cached on disk.

    Parameters
    ----------
    records : sequence of :class:`sdrlib.data.Record`
        Studies to report on; ``study_id`` unique, first of ``image_paths`` sent.
    model, base_url : str
        Model name and API root (``None``: the client's default, api.openai.com or
        ``$OPENAI_BASE_URL``). A loopback ``base_url`` needs no key.
    k : int
        Samples per study (>= 1).
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
        None or True: one ``n=k`` request per wholly missing study, falling back to single
        requests for the rest of the run when the server refuses ``n`` or returns fewer
        choices; False: single requests only (one seed per sample, so a partly cached
        study and a fresh one draw the same samples from a deterministic server).
    stats : APIStats, optional
        Filled with this run's counts (also available as :func:`last_stats`).

    Returns
    -------
    list of list of str
        ``[len(records)][k]`` raw completion texts in study order; a failed sample is
        :data:`FAILED_PLACEHOLDER` (``""``) and is asked again by the next run.
    """
    global _LAST_STATS
    import openai

    if not isinstance(model, str) or not model.strip():
        raise APIGenError(f"model must be a non-empty string, got {model!r}")
    if base_url is not None and (not isinstance(base_url, str)
                                 or urlparse(base_url).scheme not in ("http", "https")
                                 or not urlparse(base_url).hostname):
        raise APIGenError(f"base_url must be an http(s) URL such as 'http://127.0.0.1:8000/v1', got {base_url!r}")
    k = _check_int("k", k, 1)
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
    records = _check_records(records)

    shots = choose_exemplars(exemplars if exemplars is not None else [], seed=seed) if prompt == "p2" else []
    text = prompt_text(prompt, shots)
    prompt_sha = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    key = os.environ.get(api_key_env, "")
    if not key:
        if not _is_loopback(base_url):
            raise APIKeyError(f"no API key: set the environment variable {api_key_env} "
                              f"(or pass api_key_env=...); only a loopback base_url works without one")
        key = _KEY_PLACEHOLDER
    client = openai.OpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)
    url = str(client.base_url)

    stats = stats if stats is not None else APIStats()
    stats.studies, stats.samples = len(records), len(records) * k
    _LAST_STATS = stats
    cache, stats.corrupt_lines = load_cache(cache_path)
    base = {"v": _CACHE_VERSION, "model": model, "base_url": url, "prompt": prompt, "prompt_sha": prompt_sha,
            "temperature": temperature, "max_tokens": max_tokens, "run_seed": seed}
    out: list[list[str | None]] = [[None] * k for _ in records]
    todo: list[tuple[int, list[int]]] = []
    for i, r in enumerate(records):
        missing = []
        for j in range(k):
            hit = cache.get(_cache_key({**base, "study_id": r.study_id, "sample": j}))
            if hit is not None:
                out[i][j] = hit["text"]
            else:
                missing.append(j)
        stats.cached += k - len(missing)
        stats.requested += len(missing)
        if missing:
            todo.append((i, missing))

    caps = _Caps(use_n)
    runner = _Runner(client, model=model, temperature=temperature, max_tokens=max_tokens, max_retries=max_retries,
                     backoff=backoff, max_backoff=max_backoff, caps=caps, stats=stats, secret=key, rng_seed=seed)
    writer = _CacheWriter(cache_path) if todo else None
    failed_idx: set[tuple[int, int]] = set()

    def record(i: int, j: int, text_j: str | None, finish: str | None, sent: dict[str, Any] | None) -> None:
        rec = {**base, "study_id": records[i].study_id, "sample": j, "time": round(time.time(), 3)}
        if text_j is None:
            rec.update(status="failed")
        else:
            rec.update(status="ok", text=text_j, finish_reason=finish,
                       sent={p: v for p, v in (sent or {}).items()})
        writer.append(rec)  # on disk before it is used
        out[i][j] = text_j if text_j is not None else FAILED_PLACEHOLDER
        if text_j is None:
            failed_idx.add((i, j))
        runner._count(**({"generated": 1} if text_j is not None else {"failed": 1}))

    def fill(i: int, missing: list[int]) -> None:
        sid = records[i].study_id
        messages = build_messages(text, image_data_url(records[i].image_paths[0]))
        if len(missing) == k and k > 1 and caps.n is not False:
            got = runner.call(messages, k, _sample_seed(seed, sid, 0))
            if got is not None:
                choices, sent = got
                for j, (t, fin) in enumerate(choices[:k]):
                    record(i, j, t, fin, {**sent, "choice": j})
                if len(choices) < k:
                    with caps.lock:
                        if caps.n is not False:
                            caps.n = False
                            stats.adapted.append("n")
                missing = list(range(len(choices), k))
            elif caps.n is not False:  # failed after retries (not a refusal of n)
                for j in missing:
                    record(i, j, None, None, None)
                return
        for j in missing:
            got = runner.call(messages, 1, _sample_seed(seed, sid, j))
            if got is None:
                record(i, j, None, None, None)
            else:
                (t, fin), sent = got[0][0], got[1]
                record(i, j, t, fin, sent)

    try:
        if todo:
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
    finally:
        if writer is not None:
            writer.close()
        client.close()

    result = [[t if t is not None else FAILED_PLACEHOLDER for t in row] for row in out]
    # Malformed: returned samples (cached or new) without a section; failures are counted apart.
    stats.malformed = sum(1 for i, row in enumerate(result) for j, t in enumerate(row)
                          if (i, j) not in failed_idx and parse_api_answer(t).malformed)
    log.info("apigen %s (%s): %s", model, prompt, stats.summary())
    return result
