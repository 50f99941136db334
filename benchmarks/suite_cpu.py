"""CPU seconds of the test suite, per test and per folder: what bounds CI's wall time on a box with few cores.

Run (repository root; any pytest arguments after ``--``):

    .venv/bin/python benchmarks/suite_cpu.py                        # the whole suite, in this one process
    .venv/bin/python benchmarks/suite_cpu.py --top 20 -- tests/notebooks

Runs pytest in this process (no ``-n``: one process), and records for each test the CPU seconds (user + system) of
this process and of the processes it started and waited for (``resource.getrusage``: a notebook run, an accelerate
launch, a worker pool), with its wall seconds beside. Unlike pytest's ``--durations``, the CPU seconds hardly move
with what else the machine runs, so two measurements compare even on a shared box. A module or session fixture
counts towards the first test that uses it. CPU of a process that outlives its test (not yet waited for) is not
counted. Prints Markdown tables: the folders, the slowest tests, the sum, and the floor this sum puts on the
README's test command: on ``C`` cores the tests cannot end sooner than the sum / ``C``, however they are spread
over workers. Not a test; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections import defaultdict

import pytest


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Recorder:
    """A pytest plugin: ``rows[nodeid] = (cpu_s, wall_s)`` of each test's setup, call and teardown."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[float, float]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        c, w = _cpu(), time.perf_counter()
        yield
        self.rows[item.nodeid] = (_cpu() - c, time.perf_counter() - w)


def tables(rows: dict[str, tuple[float, float]], top: int, cores: int) -> str:
    """The Markdown report of :class:`Recorder`'s rows (module doc)."""
    folders: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, (c, w) in rows.items():
        parts = nodeid.split("::")[0].split("/")
        f = folders["/".join(parts[:2]) if len(parts) > 2 else parts[0]]
        f[0], f[1], f[2] = f[0] + c, f[1] + w, f[2] + 1
    total_c, total_w = sum(c for c, _ in rows.values()), sum(w for _, w in rows.values())
    out = ["| folder | tests | CPU s | wall s |", "| --- | ---: | ---: | ---: |"]
    out += [f"| {k} | {n} | {c:,.0f} | {w:,.0f} |" for k, (c, w, n) in sorted(folders.items(), key=lambda x: -x[1][0])]
    out += [f"| **all** | **{len(rows)}** | **{total_c:,.0f}** | **{total_w:,.0f}** |", "",
            "| test | CPU s | wall s |", "| --- | ---: | ---: |"]
    out += [f"| `{k}` | {c:,.1f} | {w:,.1f} |" for k, (c, w) in sorted(rows.items(), key=lambda x: -x[1][0])[:top]]
    out += ["", f"Floor on {cores} cores: {total_c / cores:,.0f} s of tests (CPU seconds / cores), before setup and "
            f"collection. Load average at the end: {os.getloadavg()[0]:.1f}."]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=15, help="the slowest tests to list (default 15)")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="cores for the floor (default: here)")
    ap.add_argument("pytest_args", nargs="*", help="after --: passed to pytest (default: the whole suite)")
    args = ap.parse_args(argv)
    rec = Recorder()
    code = pytest.main(["-q", "-p", "no:cacheprovider", *args.pytest_args], plugins=[rec])
    print(tables(rec.rows, args.top, args.cores))
    return int(code)


if __name__ == "__main__":
    raise SystemExit(main())
