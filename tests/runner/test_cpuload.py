"""sdrlib.cpuload: the longest stretch with a core idle, from the sampled busy-cores timeline."""

from __future__ import annotations

import time

import pytest

from sdrlib.cpuload import CpuSampler
from sdrlib.errors import SDRError


def test_idle_stretch_is_the_longest_run_of_samples_below_all_cores_busy():
    s = CpuSampler()
    s.cores = 2
    # 2 s samples: busy, 3 samples with one core idle, busy, 1 sample idle
    s.rows = [(2.0, 2.0), (4.0, 1.0), (6.0, 0.9), (8.0, 1.2), (10.0, 1.9), (12.0, 0.5)]
    assert s.idle_stretch(0.0, 12.0) == 6.0
    assert s.idle_stretch(9.0, 12.0) == 2.0  # only the samples inside the window count
    assert CpuSampler().idle_stretch(0.0, 1.0) is None  # nothing sampled: unknown, not 0


def test_the_sampler_records_the_machine_while_it_runs():
    s = CpuSampler()
    s.interval = 0.05
    with s:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.4:  # keep one core busy
            pass
    assert s.rows and all(0.0 <= b <= s.cores + 0.01 for _, b in s.rows)
    assert not s._thread.is_alive()


@pytest.mark.parametrize("t0, t1", [(12.0, 0.0), (float("nan"), 12.0), (0.0, float("inf")), ("0", "12"), (True, 12.0)])
def test_idle_stretch_refuses_a_window_that_is_not_one(t0, t1):
    # before: a reversed or NaN window answered 0.0 (no core ever idle), text bounds a bare TypeError
    s = CpuSampler()
    s.cores, s.rows = 2, [(2.0, 1.0), (4.0, 1.0)]
    with pytest.raises(SDRError, match="not a window; allowed: two finite"):
        s.idle_stretch(t0, t1)
