"""Fixtures of the distance tests."""

from __future__ import annotations

import signal
import warnings

import pytest

from sdrlib.distances import _large


@pytest.fixture
def kernels_only(monkeypatch):
    """Keep every pair on the numba kernels: the large-pair thresholds (:mod:`sdrlib.distances._large`) at
    infinity. For the tests of the kernels' own stopping, whose long pairs are past those thresholds (the POT
    route's stopping: ``test_distances_large.py``)."""
    monkeypatch.setattr(_large, "POT_MIN_NM", {k: float("inf") for k in _large.POT_MIN_NM})


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler for the test. ``_thread.interrupt_main`` (how these tests press Ctrl-C) does
    nothing when SIGINT's handler is not a Python one, so a handler left by earlier code would make the interrupt
    vanish and the solve run to its end (once, in a full suite under load, a 100 x 100 GW solve waited an hour).
    The handler found is named in a warning when it is not Python's, and restored afterwards."""
    old = signal.getsignal(signal.SIGINT)
    if old is not signal.default_int_handler:
        warnings.warn(f"SIGINT handler before this test: {old!r}; Python's default_int_handler set for it")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old if old is not None else signal.SIG_DFL)
