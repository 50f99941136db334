"""A small OpenAI-compatible chat server: a local policy behind ``/v1/chat/completions``.

Serves any ``generate(messages, n, temperature, max_tokens, seed) -> list[str]`` backend
over HTTP with the standard library (:class:`http.server.ThreadingHTTPServer`), so the
same client code (:func:`sdrlib.apigen.generate_api_candidates`, the ``openai``
client) drives a trained local policy and the closed-source APIs alike:

- ``POST /v1/chat/completions``: ``messages`` (images as ``data:`` URLs in
  ``image_url`` parts), ``n``, ``temperature``, ``max_tokens`` (or
  ``max_completion_tokens``), ``seed``; answers a ``chat.completion`` object with ``n``
  choices. Errors use the OpenAI shape ``{"error": {"message", "type", "param", "code"}}``.
- ``GET /v1/models``: the one served model.
- Bound to 127.0.0.1 only; port 0 (default) takes an ephemeral port.
- :class:`Faults` injects the failures a real API shows (for tests): the first N
  requests answered 500, every m-th request 429 with ``Retry-After``, connections closed
  mid-response, malformed JSON bodies, answers with the template removed, servers that
  refuse ``n`` or ``seed``, a required key (401 otherwise).

Command line (serves a policy saved by :func:`sdrlib.models.save_policy`)::

    python -m sdrlib.serve --policy runs/cpu/grpo/seed0/final --port 8011
    # -> serving model 'final' on http://127.0.0.1:8011/v1

Left out: streaming, tools, remote image URLs (never fetched), authentication beyond
one optional key, TLS.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import sys
import threading
import time
import uuid
import contextlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlparse

from sdrlib.errors import SDRError
from sdrlib.generation import PROMPT, generate_candidates, generate_reports
from sdrlib.reports import strip_template_tags

__all__ = ["ServeError", "Faults", "ChatServer", "PolicyBackend", "images_from_messages", "serve_policy", "main"]

Backend = Callable[..., list]  # generate(messages, n, temperature, max_tokens, seed) -> list[str]
_MAX_BODY = 64 * 1024 * 1024


class ServeError(SDRError, ValueError):
    """A request or a server option is unusable (the message names it)."""


@dataclass
class Faults:
    """Failures to inject, counted over POST requests (1-based ``r``), checked in this order.

    - ``rate_limit_every`` m > 0: request ``r`` with ``r % m == 0`` gets 429 with
      ``Retry-After: retry_after`` (seconds, may be fractional).
    - ``fail_first`` N: the first N requests get 500 (``fail_status``).
    - ``drop_first``: the next ones get a response cut off mid-body, connection closed.
    - ``malformed_first``: the next ones get 200 with a body that is not JSON.
    - ``strip_template``: every answer has its ``<think>/<answer>`` tags removed.
    - ``support_n`` / ``support_seed`` False: a request with ``n > 1`` / ``seed`` gets the
      400 an API that lacks the parameter sends (``param`` names it).
    - ``refuse_params``: a request holding any of these parameters gets that 400 (e.g.
      ``("max_tokens", "temperature")`` as GPT-5-style models answer).
    - ``api_key``: when set, a request without ``Authorization: Bearer <api_key>`` gets 401.
    """

    fail_first: int = 0
    fail_status: int = 500
    rate_limit_every: int = 0
    retry_after: float = 1.0
    drop_first: int = 0
    malformed_first: int = 0
    strip_template: bool = False
    support_n: bool = True
    support_seed: bool = True
    refuse_params: tuple[str, ...] = ()
    api_key: str | None = None


class ChatServer:
    """An OpenAI-compatible server around ``generate`` on 127.0.0.1, run in a thread.

    Parameters
    ----------
    generate : callable
        ``generate(messages, n, temperature, max_tokens, seed) -> list[str]`` of length ``n``;
        ``temperature`` / ``seed`` are None when the request has none. Called one at a time
        (a lock), so a backend needs no thread safety. An exception becomes a 500.
    model : str
        Name reported by ``/v1/models`` and in completions (requests may name any model).
    port : int
        0 (default) for an ephemeral port.
    faults : Faults, optional

    Counts (read them any time): ``requests`` (POSTs to chat/completions), ``served`` (200
    answers), ``samples`` (choices in them), ``statuses`` (responses by status code; a
    dropped one has none), ``injected`` (faults by kind: ``"500"``, ``"429"``, ``"drop"``,
    ``"malformed"``), ``last_auth`` (the last ``Authorization`` header) and
    ``last_params`` (the parameter names of the last request), for tests.

    Example::

        with ChatServer(lambda msgs, n, *a: ["<think> A. </think> <answer> B. </answer>"] * n) as srv:
            srv.url   # 'http://127.0.0.1:PORT/v1'
    """

    def __init__(self, generate: Backend, *, model: str = "local-policy", port: int = 0,
                 faults: Faults | None = None) -> None:
        if not callable(generate):
            raise ServeError(f"generate must be callable, got {type(generate).__name__}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ServeError(f"port must be an int in [0, 65535], got {port!r}")
        self.generate, self.model = generate, model
        self.faults = faults or Faults()
        self._lock = threading.Lock()       # counters
        self._gen_lock = threading.Lock()   # backend
        self.requests = self.served = self.samples = 0
        self.statuses: dict[int, int] = {}
        self.injected: dict[str, int] = {}
        self.last_auth: str | None = None
        self.last_params: list[str] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """Base URL for an OpenAI client: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "ChatServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="sdr-serve", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def reset_counts(self) -> None:
        with self._lock:
            self.requests = self.served = self.samples = 0
            self.statuses = {}
            self.injected = {}

    def __enter__(self) -> "ChatServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- request logic (called by the handler) -------------------------------------
    def _count_status(self, status: int) -> None:
        with self._lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def _inject(self, kind: str) -> None:
        with self._lock:
            self.injected[kind] = self.injected.get(kind, 0) + 1

    def _handle_chat(self, h: "BaseHTTPRequestHandler") -> None:
        f = self.faults
        h._body_read = False  # type: ignore[attr-defined]  # per request (one handler serves a connection)
        with self._lock:
            self.requests += 1
            r = self.requests
            self.last_auth = h.headers.get("Authorization")
        if f.api_key is not None and h.headers.get("Authorization") != f"Bearer {f.api_key}":
            return _error(h, self, 401, "invalid API key", "invalid_request_error", code="invalid_api_key")
        if f.rate_limit_every and r % f.rate_limit_every == 0:
            self._inject("429")
            return _error(h, self, 429, "rate limit reached, retry later", "rate_limit_error",
                          headers={"Retry-After": f"{f.retry_after:g}"})
        if r <= f.fail_first:
            self._inject(str(f.fail_status))
            return _error(h, self, f.fail_status, "injected server error", "server_error")
        length = int(h.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            return _error(h, self, 413, f"request body over {_MAX_BODY} bytes", "invalid_request_error")
        try:
            raw = h.rfile.read(length)
            h._body_read = True  # type: ignore[attr-defined]
            body = json.loads(raw or b"{}")
            n, temperature, max_tokens, seed, messages = _request_args(body)
        except (ValueError, ServeError) as exc:
            return _error(h, self, 400, str(exc), "invalid_request_error", param=getattr(exc, "param", None))
        with self._lock:
            self.last_params = sorted(body)
        for name in f.refuse_params:
            if name in body:
                return _error(h, self, 400, f"Unsupported parameter: '{name}' is not supported with this model.",
                              "invalid_request_error", param=name, code="unsupported_parameter")
        if n > 1 and not f.support_n:
            return _error(h, self, 400, "Unsupported parameter: 'n' (only one choice per request)",
                          "invalid_request_error", param="n")
        if seed is not None and not f.support_seed:
            return _error(h, self, 400, "Unrecognized request argument supplied: 'seed'",
                          "invalid_request_error", param="seed")
        if r <= f.fail_first + f.drop_first:
            self._inject("drop")
            return _drop(h, self)
        if r <= f.fail_first + f.drop_first + f.malformed_first:
            self._inject("malformed")
            return _send(h, self, 200, b'{"id": "chatcmpl-x", "choices": [{"index": 0, "mess')
        try:
            with self._gen_lock:
                texts = list(self.generate(messages, n, temperature, max_tokens, seed))
        except ServeError as exc:  # the request is unusable (e.g. a remote image URL)
            return _error(h, self, 400, str(exc), "invalid_request_error")
        except Exception as exc:  # the backend's failure is the client's 500
            return _error(h, self, 500, f"backend failed: {type(exc).__name__}: {exc}", "server_error")
        if len(texts) != n or not all(isinstance(t, str) for t in texts):
            return _error(h, self, 500, f"backend returned {len(texts)} answers for n={n}", "server_error")
        if f.strip_template:
            texts = [" ".join(strip_template_tags(t).split()) for t in texts]
        payload = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "system_fingerprint": "sdrlib-serve",
            "choices": [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop",
                         "logprobs": None} for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": 0, "completion_tokens": sum(len(t.split()) for t in texts),
                      "total_tokens": sum(len(t.split()) for t in texts)},
        }
        with self._lock:
            self.served += 1
            self.samples += n
        _send(h, self, 200, json.dumps(payload).encode("utf-8"))


def _request_args(body: Any) -> tuple[int, float | None, int, int | None, list]:
    def bad(msg: str, param: str | None = None) -> ServeError:
        err = ServeError(msg)
        err.param = param  # type: ignore[attr-defined]
        return err

    if not isinstance(body, dict):
        raise bad("request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise bad("'messages' must be a non-empty list of message objects", "messages")
    n = body.get("n", 1)
    if n is None:
        n = 1
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 128:
        raise bad(f"'n' must be an int in [1, 128], got {n!r}", "n")
    temperature = body.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not 0 <= temperature <= 2):
        raise bad(f"'temperature' must be a number in [0, 2], got {temperature!r}", "temperature")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens", 256))
    if max_tokens is None:
        max_tokens = 256
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise bad(f"'max_tokens' must be a positive int, got {max_tokens!r}", "max_tokens")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise bad(f"'seed' must be an int, got {seed!r}", "seed")
    return n, (float(temperature) if temperature is not None else None), max_tokens, seed, messages


def _send(h: BaseHTTPRequestHandler, srv: ChatServer, status: int, data: bytes,
          headers: dict[str, str] | None = None) -> None:
    srv._count_status(status)
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)


def _error(h, srv, status: int, message: str, kind: str, *, param: str | None = None, code: str | None = None,
           headers: dict[str, str] | None = None) -> None:
    # Drain the body so the connection stays usable for the client's next request.
    length = int(h.headers.get("Content-Length") or 0)
    if 0 < length <= _MAX_BODY and h.command == "POST" and not getattr(h, "_body_read", False):
        try:
            h.rfile.read(length)
        except OSError:
            pass
    data = json.dumps({"error": {"message": message, "type": kind, "param": param, "code": code}}).encode()
    _send(h, srv, status, data, headers)


def _drop(h: BaseHTTPRequestHandler, srv: ChatServer) -> None:
    """Announce a body, send half of it, close the connection (a dropped response)."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "4096")
    h.end_headers()
    h.wfile.write(b'{"id": "chatcmpl-cut", "choices": [')
    h.wfile.flush()
    h.close_connection = True
    try:
        import socket

        h.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _make_handler(srv: ChatServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "sdrlib-serve/1"

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet; counts are on the server
            pass

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0].rstrip("/")
            if path in ("/v1/chat/completions", "/chat/completions"):
                srv._handle_chat(self)
            else:
                _error(self, srv, 404, f"no route POST {path}", "invalid_request_error")

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0].rstrip("/")
            if path in ("/v1/models", "/models"):
                data = {"object": "list", "data": [{"id": srv.model, "object": "model", "created": 0,
                                                    "owned_by": "sdrlib"}]}
                _send(self, srv, 200, json.dumps(data).encode())
            else:
                _error(self, srv, 404, f"no route GET {path}", "invalid_request_error")

    return Handler


# --------------------------------------------------------------------------- policy backend
def images_from_messages(messages: list[dict[str, Any]]) -> list:
    """PIL images of the ``image_url`` parts (``data:image/...;base64,`` URLs only), in order.

    A remote URL or an undecodable image raises :class:`ServeError` (nothing is fetched).
    """
    from PIL import Image

    out = []
    for m in messages:
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            iu = part.get("image_url")
            url = iu.get("url") if isinstance(iu, dict) else iu
            if not isinstance(url, str) or not url.startswith("data:image/") or ";base64," not in url:
                raise ServeError("images must be inline data URLs (data:image/png;base64,...); "
                                 "remote URLs are not fetched")
            try:
                raw = base64.b64decode(url.split(";base64,", 1)[1], validate=True)
                with Image.open(io.BytesIO(raw)) as im:
                    out.append(im.convert("RGB"))
            except (ValueError, OSError) as exc:
                raise ServeError(f"image data URL cannot be decoded: {exc}") from None
    return out


class PolicyBackend:
    """``generate`` for :class:`ChatServer` from a local policy (:func:`sdrlib.models.load_tiny_policy`).

    Each request's images go through :func:`sdrlib.generation.generate_reports` with the
    policy's own instruction (:data:`sdrlib.generation.PROMPT`, the one it was trained
    with; the request's text is ignored unless ``use_request_prompt``): temperature 0
    or None-with-``greedy`` decodes greedily, otherwise sample ``j`` is drawn with torch
    seed ``seed + j`` (:func:`sdrlib.generation.generate_candidates`). ``max_tokens``
    caps new tokens, at most ``max_new_tokens``.
    """

    def __init__(self, model, processor, *, max_new_tokens: int = 256, use_request_prompt: bool = False) -> None:
        self.model, self.processor = model, processor
        self.max_new_tokens = max_new_tokens
        self.use_request_prompt = use_request_prompt

    @classmethod
    def from_path(cls, path: str | Path, *, device: str = "cpu", **kw: Any) -> "PolicyBackend":
        from sdrlib.models import load_tiny_policy  # imports torch and transformers: deferred to here

        model, processor = load_tiny_policy(path, device=device)
        return cls(model, processor, **kw)

    def __call__(self, messages, n: int, temperature: float | None, max_tokens: int, seed: int | None) -> list[str]:
        images = images_from_messages(messages)
        if not images:
            raise ServeError("the request has no image (an image_url part with a data URL)")
        prompt = PROMPT
        if self.use_request_prompt:
            texts = [p.get("text", "") for m in messages if isinstance(m.get("content"), list)
                     for p in m["content"] if isinstance(p, dict) and p.get("type") == "text"]
            prompt = "\n".join(texts) or PROMPT
        kw = dict(prompt=prompt, max_new_tokens=min(max_tokens, self.max_new_tokens))
        if temperature == 0:
            return generate_reports(self.model, self.processor, [images], **kw) * n
        return generate_candidates(self.model, self.processor, [images], n,
                                   temperature=1.0 if temperature is None else temperature,
                                   seed=0 if seed is None else seed, **kw)[0]


@contextlib.contextmanager
def serve_policy(path: str | Path | None, base_url: str = "", *, max_new_tokens: int = 256, model: str | None = None,
                 device: str = "cpu") -> Iterator[str]:
    """Serve the policy saved at ``path`` on loopback for the duration of a ``with`` block; yields its base URL.

    What ``python -m sdrlib.serve --policy PATH`` does, inside the caller's process (a thread), so a notebook can
    point an OpenAI-compatible client at a trained local policy the way it points one at a provider. ``base_url``:
    empty (an ephemeral port) or a loopback URL whose port is bound. ``path=None`` serves nothing and yields
    ``base_url`` unchanged (a provider's). Example::

        with serve_policy("runs/cpu/sft/seed0/final") as url:   # 'http://127.0.0.1:PORT/v1'
            generate_api_candidates(records, model="sft", base_url=url, cache_path="api.jsonl")
    """
    if path is None:
        yield base_url
        return
    port = 0
    if base_url:
        u = urlparse(base_url)
        if (u.hostname or "") not in ("127.0.0.1", "localhost", "::1"):
            raise ServeError(f"base_url {base_url!r}: the local server binds 127.0.0.1 only; give an empty base_url "
                             "(an ephemeral port) or http://127.0.0.1:<port>/v1")
        port = u.port or 0
    backend = PolicyBackend.from_path(path, device=device, max_new_tokens=max_new_tokens)
    with ChatServer(backend, model=model or Path(path).name, port=port) as server:
        yield server.url


def main(argv: list[str] | None = None) -> int:
    """``python -m sdrlib.serve --policy PATH [--port N] [--model NAME]``: serve until Ctrl-C."""
    ap = argparse.ArgumentParser(prog="python -m sdrlib.serve", description=__doc__.splitlines()[0])
    ap.add_argument("--policy", required=True, help="folder saved by sdrlib.models.save_policy")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: an ephemeral one, printed)")
    ap.add_argument("--model", default=None, help="model name to report (default: the folder name)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-new-tokens", type=int, default=256)
    args = ap.parse_args(argv)
    if not 0 <= args.port <= 65535:
        ap.error(f"--port must be in [0, 65535], got {args.port}")
    try:
        backend = PolicyBackend.from_path(args.policy, device=args.device, max_new_tokens=args.max_new_tokens)
    except SDRError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = ChatServer(backend, model=args.model or Path(args.policy).name, port=args.port)
    print(f"serving model {server.model!r} on {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
