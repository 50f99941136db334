"""Where the checkout is and where outputs go (a leaf: imports nothing of sdrlib)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["repo_root", "output_root"]


def repo_root() -> Path:
    """The checkout holding ``configs/`` (the parent of the ``sdrlib`` package)."""
    return Path(__file__).resolve().parent.parent


def output_root() -> Path:
    """Where outputs go: ``$SDR_ROOT`` if set (a leading ``~`` expanded), else the repository root."""
    env = os.environ.get("SDR_ROOT")
    return Path(os.path.expanduser(env)).resolve() if env else repo_root()
