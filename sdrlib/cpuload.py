"""How busy the machine's cores are over a run: :class:`CpuSampler` reads ``/proc/stat`` in a daemon thread.

``run_all.sh`` (:mod:`sdrlib.runner`) samples a whole run with it, to write each notebook's longest stretch with a core
idle into the run summary and the busy-cores timeline beside it (``benchmarks/profile_run.py`` reads both). Linux
only: elsewhere nothing is recorded. Left out: per-process accounting (the counts are the whole machine's, so other
work on the box shows up too).
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any

from sdrlib.errors import SDRError

__all__ = ["CpuSampler", "children_cpu_seconds"]


class CpuSampler:
    """The machine's busy cores over time, from ``/proc/stat`` every ``interval`` seconds in a daemon thread
    (Linux; elsewhere it records nothing). Whole-machine counts: other work on the box shows up too.

    ``idle_stretch(t0, t1)`` is the longest time within ``[t0, t1]`` (``time.perf_counter`` values) in which fewer
    than ``cores - 0.5`` cores were busy, i.e. at least one core sat about idle; ``rows`` are ``(t, busy_cores)``.
    """

    interval = 2.0

    def __init__(self) -> None:
        self.cores = os.cpu_count() or 1
        self.rows: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _jiffies() -> tuple[int, int] | None:
        try:
            with open("/proc/stat", encoding="ascii") as f:
                v = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
        return sum(v) - idle, sum(v)

    def _loop(self) -> None:
        prev = self._jiffies()
        while prev is not None and not self._stop.wait(self.interval):
            now, t = self._jiffies(), time.perf_counter()
            if now is None:
                return
            total = now[1] - prev[1]
            if total > 0:
                self.rows.append((t, round(self.cores * (now[0] - prev[0]) / total, 2)))
            prev = now

    def __enter__(self) -> "CpuSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def idle_stretch(self, t0: float, t1: float) -> float | None:
        """Seconds of the longest stretch with a core idle within ``[t0, t1]``; ``None`` when nothing was sampled.
        Bounds that are not finite numbers with ``t0 <= t1`` raise :class:`~sdrlib.errors.SDRError`."""
        if not all(isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) for t in (t0, t1)) \
                or t0 > t1:
            raise SDRError(f"idle_stretch({t0!r}, {t1!r}): not a window; allowed: two finite time.perf_counter() "
                           "values, the start first")
        if not self.rows:
            return None
        longest = run = 0.0
        for t, busy in self.rows:
            if t0 < t <= t1 + self.interval:
                run = run + self.interval if busy < self.cores - 0.5 else 0.0
                longest = max(longest, run)
        return longest

    def csv(self, t0: float) -> str:
        """The samples as CSV text, ``seconds,busy_cores``, seconds counted from ``t0``."""
        return "seconds,busy_cores\n" + "".join(f"{t - t0:.1f},{b}\n" for t, b in self.rows)


def children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's finished children (a notebook's kernel once it has exited,
    with whatever the kernel itself waited for: GRPO workers, training processes)."""
    t = os.times()
    return t.children_user + t.children_system
