"""Fixtures of the distance tests."""

from __future__ import annotations

import pytest

from sdrlib.distances import _large


@pytest.fixture
def kernels_only(monkeypatch):
    """Keep every pair on the numba kernels: the large-pair thresholds (:mod:`sdrlib.distances._large`) at
    infinity. For the tests of the kernels' own stopping, whose long pairs are past those thresholds (the POT
    route's stopping: ``test_distances_large.py``)."""
    monkeypatch.setattr(_large, "POT_MIN_NM", {k: float("inf") for k in _large.POT_MIN_NM})
