"""Seeding and small environment helpers.

Example: ``set_seed(0)`` seeds Python's ``random``, NumPy and (if installed)
torch, so the same profile and seed give the same tables.
"""

from __future__ import annotations

import os
import random

import numpy as np

__all__ = ["set_seed"]


def set_seed(seed: int) -> None:
    """Seed ``random``, ``numpy`` and ``torch`` (when importable) with ``seed``."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    os.environ["PYTHONHASHSEED"] = str(seed)
    try:
        import torch
    except ImportError:  # torch is optional for the text-only parts
        return
    torch.manual_seed(seed)
