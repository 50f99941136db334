"""The shipped `evaluate` modules and the bookkeeping every text metric group shares.

:func:`load_module` loads ``sdrlib/metrics/evaluate_modules/<name>/<name>.py`` with
``evaluate.load(<local folder>)`` (never the Hub); :func:`defined_subset` / :func:`scatter` /
:func:`stats_full` (and :func:`run_module`, all in one) send only the samples with a reference to a scorer and put its values back at their
indices (``NaN`` / zero statistics for the others). Private: the groups of :mod:`sdrlib.metrics.groups`
use it; :mod:`sdrlib.metrics.nlg` re-exports the public names.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = ["MODULES_DIR", "MODULE_NAMES", "load_module", "defined_subset", "run_module", "scatter", "stats_full"]

MODULES_DIR = Path(__file__).resolve().parent / "evaluate_modules"
MODULE_NAMES = ("sdr_bleu", "sdr_rouge", "sdr_meteor", "sdr_chrf", "sdr_bertscore", "sdr_comet")


@lru_cache(maxsize=None)
def load_module(name: str) -> Any:
    """Load a shipped `evaluate` module by name (``sdr_bleu`` ...), in memory, offline."""
    if name not in MODULE_NAMES:
        raise ValueError(f"unknown metric module {name!r}; shipped: {MODULE_NAMES}")
    import evaluate

    return evaluate.load(str(MODULES_DIR / name), keep_in_memory=True)


def defined_subset(predictions: Sequence[str], references: Sequence[str], defined: np.ndarray | None
                   ) -> tuple[list[str], list[str], np.ndarray, int]:
    """``(preds, refs, idx, n)``: the texts of the samples to score (``defined``, default all), their indices
    ``idx`` ``(m,)`` and the sample count ``n``."""
    n = len(predictions)
    if len(references) != n:
        raise ValueError(f"{n} predictions but {len(references)} references")
    ok = np.ones(n, bool) if defined is None else np.asarray(defined, bool)
    idx = np.flatnonzero(ok)
    return [predictions[i] for i in idx], [references[i] for i in idx], idx, n


def run_module(name: str, predictions: Sequence[str], references: Sequence[str], defined: np.ndarray | None,
               **kwargs: Any) -> tuple[dict[str, Any] | None, np.ndarray, int]:
    """``(result, idx, n)``: the shipped module ``name`` computed on the defined samples (``result`` is ``None``
    when there is none), their indices ``idx`` ``(m,)`` and the sample count ``n``."""
    preds, refs, idx, n = defined_subset(predictions, references, defined)
    m = load_module(name)
    return (m.compute(predictions=preds, references=refs, **kwargs) if len(idx) else None), idx, n


def scatter(values: Sequence[float], idx: np.ndarray, n: int) -> np.ndarray:
    """Values of the scored samples ``(m,)`` at their indices of an ``(n,)`` array, ``NaN`` elsewhere."""
    out = np.full(n, np.nan)
    out[idx] = np.asarray(values, dtype=np.float64)
    return out


def stats_full(stats_sub: Any, idx: np.ndarray, n: int, k: int) -> np.ndarray:
    """Sufficient statistics ``(m, k)`` of the scored samples at their rows of an ``(n, k)`` zero array."""
    out = np.zeros((n, k))
    if len(idx):
        out[idx] = np.asarray(stats_sub, dtype=np.float64).reshape(len(idx), k)
    return out
