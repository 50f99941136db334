"""The parameters of Algorithm 1 (:class:`PruneParams`) and the error of :mod:`sdrlib.pruning`.

Left out: what the parameters drive (the round loop, :mod:`._rounds`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sdrlib.errors import SDRError


class PruningError(SDRError, ValueError):
    """Inputs pruning cannot use (parameters out of range, texts or tokenizers of the wrong kind)."""


# --------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class PruneParams:
    """Parameters of Algorithm 1.

    n_candidates : candidates per study (the paper's K, >= 1; profile key ``pruning.k``); p : fraction of the
    active candidates dropped per round, in (0, 1) (``ceil(p |C|)``, at least one, never the last); warmup : sentences decoded in lock-step before the first
    round (the paper's "wu"; 0 = prune from the first sentence on); min_sentences : no round prunes before the
    candidates have had this many sentences (t >= min_sentences; the first pruning happens at sentence
    ``max(warmup + 1, min_sentences)``); sentence_token_cap : tokens a candidate may spend on one round (one
    sentence) before it counts as ready anyway and is judged on the sentences it has completed.
    """

    n_candidates: int = 5
    p: float = 0.5
    warmup: int = 1
    min_sentences: int = 1
    sentence_token_cap: int = 64

    def __post_init__(self) -> None:
        for name, lo in (("n_candidates", 1), ("warmup", 0), ("min_sentences", 1), ("sentence_token_cap", 1)):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
                raise PruningError(f"{name} must be an integer >= {lo}, got {v!r}")
        p = self.p
        if isinstance(p, bool) or not isinstance(p, (int, float, np.floating)) or not (0.0 < float(p) < 1.0):
            raise PruningError(f"p (the fraction dropped per round) must lie in (0, 1), got {p!r}")

    def n_drop(self, n_active: int) -> int:
        """``ceil(p n)`` capped at ``n - 1`` (one candidate always survives)."""
        return max(0, min(math.ceil(float(self.p) * n_active - 1e-9), n_active - 1))



def with_params(params: PruneParams, **changes: Any) -> PruneParams:
    """A copy of ``params`` with some fields changed (validated again)."""
    return replace(params, **changes)
