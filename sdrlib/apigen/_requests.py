"""The requests of :mod:`sdrlib.apigen`: one chat completion with retries, backoff and parameter adaptation.

:class:`_Runner` sends one request (``n`` choices) and retries transient errors (429, 5xx, 408, timeouts,
connection errors, unparseable bodies) with exponential backoff and jitter; :class:`_Caps` remembers the
parameters the server refused (``n``, ``seed``, ``temperature``, ``max_tokens``). Also the per-sample request
seed and the loopback test. Left out: which samples to ask for and the cache (:mod:`._generate`).
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import random
import re
import threading
import time
from typing import Any
from urllib.parse import urlparse

from sdrlib.apigen._cache import APIStats
from sdrlib.apigen._common import APIRequestError, log


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

