"""The on-disk cache of :mod:`sdrlib.apigen` and the counts of a run.

:class:`APIStats` (counts of one run; :func:`last_stats`), :func:`load_cache` (the successful completions of
a JSONL cache by key, torn or unreadable lines ignored with a :class:`CacheWarning`) and the appending,
fsyncing writer. Left out: what goes into a record (the entry point, :mod:`._generate`).
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdrlib.apigen._common import CacheWarning


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


def _set_last_stats(stats: APIStats) -> None:
    """Make ``stats`` the one :func:`last_stats` returns (set by each run as it starts)."""
    global _LAST_STATS
    _LAST_STATS = stats


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

