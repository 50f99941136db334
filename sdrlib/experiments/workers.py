"""The worker processes that run independent jobs side by side: GRPO runs, test generations, candidate columns,
scoring (:mod:`sdrlib.experiments.posttrain`, :mod:`sdrlib.experiments.candidates`,
:mod:`sdrlib.experiments.scoring`, the GRPO study).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import ProcessPoolExecutor

__all__ = ["worker_pool"]


#: environment of the worker processes: one thread for every library (two workers on two cores)
_WORKER_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
               "TOKENIZERS_PARALLELISM": "false"}


@contextlib.contextmanager
def worker_pool(cfg: Any) -> Iterator[ProcessPoolExecutor]:
    """``cfg.grpo.workers`` worker processes (spawned, one CPU thread each) for independent GRPO runs, test
    generations, candidate columns and scoring; on leaving, waits for them (an interrupt cancels the runs not
    started; started runs resume from their last checkpoint next time).

    Why results do not depend on it: a GRPO run is a function of its profile, reward, seed, SFT policy and
    training records (``tests/training/test_training_determinism.py``: not of what its process did before),
    sentence vectors do not depend on which run encoded them first (:class:`sdrlib.embedding.SentenceEmbedder`),
    and the policy trains and generates on ``sft.threads`` threads wherever it runs (one here, as in the
    notebook's own process). ``tests/experiments/test_parallel_runs.py`` trains the same runs one after the
    other and side by side and compares the weights byte for byte.

    Workers are spawned (not forked: torch and numba threads do not survive a fork), so a *script* that calls
    :func:`~sdrlib.experiments.posttrain.train_all`, :func:`~sdrlib.experiments.posttrain.generate_all` or
    :func:`~sdrlib.experiments.scoring.score_all` with ``grpo.workers > 1`` needs Python's usual
    ``if __name__ == "__main__":`` guard; notebooks and ``python -m`` entry points need nothing.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    saved = {k: os.environ.get(k) for k in _WORKER_ENV}
    os.environ.update(_WORKER_ENV)  # spawned workers copy the environment when they start (at their first job)
    pool = ProcessPoolExecutor(max_workers=cfg.grpo.workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
