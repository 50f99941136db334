"""Scoring every system's test generations with the metric suite, side by side in worker processes when it pays.

:func:`score_all` is what notebooks 03 and 04 and the GRPO study's table call (:mod:`sdrlib.experiments.posttrain`
re-exports it): :func:`sdrlib.metrics.suite.score_reports` per system, in worker processes when there are enough
reports to repay starting them.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from sdrlib.errors import SDRError
from sdrlib.experiments.workers import worker_pool
from sdrlib.metrics.suite import metric_kwargs, score_reports

__all__ = ["SCORE_SIDE_BY_SIDE", "score_all"]

#: the fewest reports (all systems together) that :func:`score_all` scores side by side: a worker process takes about
#: 11 CPU seconds to start (imports, then the metric backends' first call), scoring a report (both sections, every
#: metric of the default profile, all-MiniLM-L6-v2 BERTScore) about 0.06 s on one thread, so two workers save wall
#: time from about 370 reports on (notebook 04 of the default profile scores 2,700)
SCORE_SIDE_BY_SIDE = 400


def score_all(cfg, generations: dict[Any, list[str]], test_records: Sequence[Any], **kwargs) -> dict[Any, Any]:
    """:func:`sdrlib.metrics.suite.score_reports` for each system's generations (same test records); ``kwargs`` go
    to it after the profile's :func:`~sdrlib.metrics.suite.metric_kwargs`. Returns the same keys, same order.

    Side by side in ``cfg.grpo.workers`` processes (:func:`~sdrlib.experiments.workers.worker_pool`, one thread
    each) when there are two or more systems and workers and at least :data:`SCORE_SIDE_BY_SIDE` reports in all,
    else one after the other here. A system's scores are the same on either path, with one exception:
    BERTScore's float32 values may differ in their last bit (about 1.5e-7) between any two processes, the one-process
    path's included (150 real reports scored in two fresh processes: 20 of 300 values differ; within one process
    every repeat is equal), so a table agrees to its printed digits, not bit for bit;
    ``tests/experiments/test_score_side_by_side.py`` compares every other metric bit for bit and BERTScore to 1e-6.
    What a worker prints and warns is printed and warned here, in the order of the keys."""
    refs = [{"findings": r.findings, "impression": r.impression} for r in test_records]
    ids = [r.study_id for r in test_records]
    labels = [r.labels for r in test_records] if all(r.labels for r in test_records) else None
    kw = {**metric_kwargs(cfg), **kwargs}
    keys = list(generations)
    if cfg.grpo.workers > 1 and len(keys) > 1 and sum(map(len, generations.values())) >= SCORE_SIDE_BY_SIDE:
        with worker_pool(cfg) as pool:
            jobs = [pool.submit(_score_worker_job, cfg, list(generations[k]), refs, ids, labels, kw) for k in keys]
            out = {}
            for k, job in zip(keys, jobs):  # in the order of the keys: what a worker printed and warned, here
                out[k], printed, caught = job.result()
                sys.stdout.write(printed)
                for category, message, filename, lineno in caught:
                    warnings.warn_explicit(message, category, filename, lineno)
            return out
    return {k: _score_job(generations[k], refs, ids, labels, kw) for k in keys}


def _score_job(gens: Sequence[str], refs: list[dict], ids: list[str], labels: list | None, kw: dict) -> Any:
    """One system's :func:`~sdrlib.metrics.suite.score_reports`."""
    return score_reports(gens, refs, sample_ids=ids, reference_labels=labels, **kw)


def _score_worker_job(cfg: Any, gens: Sequence[str], refs: list[dict], ids: list[str], labels: list | None,
                      kw: dict) -> tuple[Any, str, list[tuple]]:
    """:func:`_score_job` in a :func:`~sdrlib.experiments.workers.worker_pool` process (``cfg`` comes first:
    unpickling it imports the profile's plugins, whose metric groups the worker then scores too): ``(scores, what
    it printed, the warnings it raised as (category, message, file, line))``, which :func:`score_all` prints and
    raises again in the caller, so a notebook's ``redirect_stdout`` and :func:`~sdrlib.utils.folded_warnings` see
    them as from the one-process path.
    :class:`~sdrlib.errors.SDRError` naming the metric whose reducer cannot be pickled (a closure or lambda of a
    registered metric group), since its scores could not come back to the caller."""
    with contextlib.redirect_stdout(io.StringIO()) as printed, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = _score_job(gens, refs, ids, labels, kw)
    for sec in scores.sections:
        for r in scores.results[sec]:
            try:
                pickle.dumps(r.reducer)
            except Exception as e:  # noqa: BLE001 - pickling raises AttributeError, TypeError or PicklingError
                raise SDRError(f"metric {r.name}: its reducer {r.reducer!r} cannot be pickled ({e}), so its scores "
                               "cannot come back from a worker process; make it a module function (or a "
                               "functools.partial of one), or score in one process with grpo.workers: 1") from None
    return scores, printed.getvalue(), [(w.category, str(w.message), w.filename, w.lineno) for w in caught]
