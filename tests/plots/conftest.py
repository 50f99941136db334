"""Fixtures of the figure tests: matplotlib's Agg backend, every figure closed after its test, and unit-norm rows
standing in for sentence embeddings."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def unit():
    """``unit(rng, n, d=16)``: ``n`` random unit-norm rows ``(n, d)`` drawn from ``rng`` (sentence embeddings)."""

    def make(rng: np.random.Generator, n: int, d: int = 16) -> np.ndarray:
        X = rng.normal(size=(n, d))
        return X / np.linalg.norm(X, axis=1, keepdims=True)

    return make
