"""Stopping long solves: the caller's ``time_budget_s`` (:class:`_Budget`, :func:`_check_budget`) and the watchdog
that runs a ``*_stoppable`` numba kernel in a worker thread while the calling thread waits in slices where
Ctrl-C, a signal handler's exception or the budget lands (:func:`_watched`, :func:`_wait`; the package docstring
says how and what is not stoppable). Leaves out which kernel runs (:mod:`sdrlib.distances.engine._families`).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Callable

import numpy as np

from sdrlib.distances.errors import DistanceSpecError, DistanceTimeoutError


#: seconds the calling thread waits at a time for a stoppable solver (then it looks at the clock again)
_POLL_S = 0.05
#: a stoppable solve whose worst case (every iteration cap reached) is below this many multiply-adds runs in the
#: calling thread, without a budget only: at the kernels' ~1.5 GFLOP/s per core that is ~0.1 s, so Ctrl-C still
#: lands at once, and small calls (a GRPO group's rewards: 8 pairs of a few sentences) skip the worker thread,
#: which cost them 0.2-0.9 ms per call (measured on the 2-core box, ~10-30 % of such a call)
_INLINE_WORK = 2e8


class _Budget:
    """The caller's ``time_budget_s`` for one engine call: a monotonic deadline, or none."""

    def __init__(self, seconds: "float | None"):
        self.seconds = seconds
        self.t0 = time.monotonic()
        self.deadline = None if seconds is None else self.t0 + seconds

    def expired(self) -> bool:
        """The deadline has passed (never without a budget)."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def error(self, what: str) -> DistanceTimeoutError:
        """The :class:`DistanceTimeoutError` for ``what`` (a setting's name), saying how long the call ran."""
        return DistanceTimeoutError(f"{what}: time budget of {self.seconds:g} s exhausted after "
                                    f"{time.monotonic() - self.t0:.2f} s; the solve was stopped and no values are "
                                    "returned (raise time_budget_s, or score fewer / smaller sets per call)")

    def check(self, what: str) -> None:
        """Raise :class:`DistanceTimeoutError` once the deadline has passed."""
        if self.expired():
            raise self.error(what)


def _check_budget(time_budget_s: object) -> "float | None":
    """``time_budget_s`` must be None or a positive finite number of seconds."""
    if time_budget_s is None:
        return None
    ok = isinstance(time_budget_s, (int, float, np.integer, np.floating)) \
        and not isinstance(time_budget_s, (bool, np.bool_))
    try:
        seconds = float(time_budget_s) if ok else math.nan  # an int beyond float range (10**400) overflows
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        raise DistanceSpecError(f"time_budget_s must be None or a positive finite number of seconds, "
                                f"got {time_budget_s!r:.60}")
    return seconds


def _wait(done: threading.Event, budget: _Budget, what: str) -> None:
    """Wait for ``done`` in :data:`_POLL_S` slices (where Python delivers signals); raise
    :class:`DistanceTimeoutError` once ``budget`` expires."""
    while not done.wait(_POLL_S):
        if budget.expired():
            raise budget.error(what)


def _watched(kernel: Callable, args: tuple, budget: _Budget, what: str, work: float = np.inf) -> None:
    """Run a ``*_stoppable`` numba kernel, ``kernel(*args, stop)``, so that it can be stopped.

    ``work``: the solve's worst-case multiply-adds; below :data:`_INLINE_WORK` and without a budget
    the kernel simply runs in this thread (bounded at ~0.1 s, no thread to start).

    The kernel runs in a worker thread (it releases the GIL) with this thread's numba thread count;
    this thread waits in :data:`_POLL_S` slices, where Python delivers signals. On any exception here
    (``KeyboardInterrupt``, a signal handler's error) or once ``budget`` expires, ``stop[0]`` is set,
    which every running solve reads once per iteration; the worker is waited for (milliseconds) and
    the exception (or :class:`DistanceTimeoutError`) propagates. The kernel's own errors propagate too.
    """
    import numba

    stop = np.zeros(1, np.int64)
    if work < _INLINE_WORK and budget.deadline is None:
        kernel(*args, stop)
        return
    threads = numba.get_num_threads()
    failed: list[BaseException] = []
    done = threading.Event()  # not Thread.join: a join interrupted by Ctrl-C can mark a running thread dead

    def solve() -> None:
        try:
            numba.set_num_threads(threads)  # thread-local in numba: the caller's choice (_run) carries over
            kernel(*args, stop)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=solve, name="sdr-distance-solver", daemon=True).start()
    try:
        _wait(done, budget, what)
    except BaseException:
        stop[0] = 1
        while not done.is_set():
            try:
                done.wait(_POLL_S)
            except KeyboardInterrupt:  # a second Ctrl-C while the solver winds down: it stops anyway
                continue
        raise
    if failed:
        raise failed[0]
