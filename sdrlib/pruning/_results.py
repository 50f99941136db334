"""What a pruning run returns (:class:`PruneResult`), what the standard best-of-K pipeline returns
(:class:`StandardResult`) and the share of tokens saved (:func:`tokens_saved_pct`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


# --------------------------------------------------------------------------- results
@dataclass
class PruneResult:
    """One study's pruning run.

    survivor : index of the chosen candidate; texts : (K,) text each candidate reached (the survivor's is
    complete); tokens : (K,) tokens generated per candidate; finished : (K,) candidates that reached their end;
    rounds : one dict per round (``t``, ``active``, ``scores``, ``dropped``); seconds : wall-clock of the run;
    meta : forward passes, scorer calls, parameters.
    """

    survivor: int
    texts: list[str]
    tokens: list[int]
    finished: list[bool]
    rounds: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return int(sum(self.tokens))

    @property
    def survivor_tokens(self) -> int:
        return int(self.tokens[self.survivor])

    @property
    def survivor_text(self) -> str:
        return self.texts[self.survivor]


@dataclass
class StandardResult:
    """K full generations (the standard best-of-K pipeline): texts, tokens per candidate, whether each ended
    with an end-of-sequence token (else it hit ``max_new_tokens``), token ids, wall-clock seconds."""

    texts: list[str]
    tokens: list[int]
    eos: list[bool]
    ids: list[list[int]]
    seconds: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return int(sum(self.tokens))


def tokens_saved_pct(pruned: Sequence[int] | int, standard: Sequence[int] | int) -> float:
    """``100 (1 - sum(pruned) / sum(standard))``; NaN when the standard pipeline generated nothing."""
    a, b = float(np.sum(pruned)), float(np.sum(standard))
    return 100.0 * (1.0 - a / b) if b > 0 else float("nan")
