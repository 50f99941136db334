"""Which training process this is: rank and world size under ``accelerate launch`` (or ``torchrun``).

A plain ``python`` process is rank 0 of 1 and every helper here does nothing. Under a launcher
(``WORLD_SIZE`` > 1 in the environment) :func:`init` starts accelerate's process state (gloo on CPU, NCCL on
GPUs, as the launcher set it up; the same state the Trainer then uses), so the run's one-process steps
can be ordered before the Trainer exists: rank 0 writes the data, the embedding cache and the run folder
first (:func:`main_first`), the others wait (:func:`barrier`) and then read them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["world_size", "rank", "is_main", "on_cpu", "init", "barrier", "main_first"]


def world_size() -> int:
    """Processes in this training run (``WORLD_SIZE`` set by the launcher; 1 without one)."""
    return max(1, int(os.environ.get("WORLD_SIZE", "1") or 1))


def rank() -> int:
    """This process's global rank (``RANK``; 0 without a launcher)."""
    return int(os.environ.get("RANK", "0") or 0)


def is_main() -> bool:
    """Whether this process writes the run's shared files (rank 0)."""
    return rank() == 0


def on_cpu() -> bool:
    """Train on the CPU: no CUDA device, or the accelerate config says ``use_cpu: true``."""
    import torch

    forced = os.environ.get("ACCELERATE_USE_CPU", "false").strip().lower() in ("1", "true", "yes")
    return forced or not torch.cuda.is_available()


def init() -> Any:
    """accelerate's ``PartialState`` for a multi-process run (process group started), else ``None``."""
    if world_size() == 1:
        return None
    from accelerate import PartialState

    return PartialState(cpu=on_cpu())


def barrier() -> None:
    """Wait until every process of the run gets here (no-op in a one-process run)."""
    state = init()
    if state is not None:
        state.wait_for_everyone()


@contextmanager
def main_first() -> Iterator[None]:
    """Rank 0 runs the block first, the other ranks after it has finished (one process: just runs it)."""
    state = init()
    if state is None:
        yield
    else:
        with state.main_process_first():
            yield
