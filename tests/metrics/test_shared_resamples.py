"""sdrlib.metrics.significance.shared_resamples (with sdrlib.metrics.base.product_cache): within the block one draw of
the resample counts per (n, resamples, seed) and one product per weight matrix and statistics array, the same floats
as without it; outside it nothing is kept."""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.metrics import base
from sdrlib.metrics.base import mean_result, product_cache
from sdrlib.metrics.significance import bootstrap_weights, seed_study_test, shared_resamples


def _runs(k, salt):
    rng = np.random.default_rng(salt)
    return [mean_result("m", "x", rng.normal(0.5 + 0.01 * salt, 0.1, 50)) for _ in range(k)]


def test_the_same_floats_with_and_without_sharing():
    a, b = _runs(3, 1), _runs(3, 2)
    plain = seed_study_test(a, b, n_resamples=300, seed=4)
    with shared_resamples():
        shared = seed_study_test(a, b, n_resamples=300, seed=4)
        again = seed_study_test(a, b, n_resamples=300, seed=4)  # every product from the cache
    for r in (shared, again):
        assert {k: v for k, v in r.items()} == plain


def test_weights_are_drawn_once_in_the_block_and_read_only():
    outside = bootstrap_weights(20, 10, 3)
    assert outside.flags.writeable and bootstrap_weights(20, 10, 3) is not outside
    with shared_resamples():
        w = bootstrap_weights(20, 10, 3)
        assert bootstrap_weights(20, 10, 3) is w and not w.flags.writeable
        assert np.array_equal(w, outside) and bootstrap_weights(20, 10, 4) is not w
    assert bootstrap_weights(20, 10, 3) is not w  # nothing kept after the block


def test_products_are_kept_within_the_limit_and_dropped_after():
    r = _runs(1, 0)[0]
    w = bootstrap_weights(50, 8, 0)
    with product_cache(max_bytes=1):  # room for one product only: the latest stays
        v1 = r.value_for(w)
        assert len(base._PRODUCTS) == 1
        w2 = bootstrap_weights(50, 8, 1)
        r.value_for(w2)
        assert len(base._PRODUCTS) == 1
        assert np.array_equal(r.value_for(w), v1)
    assert base._PRODUCTS is None
    with pytest.raises(ValueError, match="weights cover"):
        r.value_for(np.ones((2, 3)))
