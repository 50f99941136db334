"""A toy distance family written as one module, as a user would add one (``register_family``; no other edit).

``mean_cost``: the mean of every cross cost, ``D = mean_ij M_ij`` in [0, 1]. Not a good distance (``D(A, A) > 0``
for a set of two different sentences); it is here to show that one registration reaches every entry point: the
reference, the batched engine, the ``_neg`` variants, the rewards (a distance name is a reward name), best-of-K
selection and MBR. The kernels are Python loops over :meth:`sdrlib.distances.engine.PairBatch.cost_block`.
"""

from __future__ import annotations

import numpy as np

from sdrlib.distances.costs import cosine_cost
from sdrlib.distances.registry import Family, register_family

NAME = "mean_cost"


def reference(A: np.ndarray, B: np.ndarray, M: "np.ndarray | None" = None) -> tuple[float, bool]:
    """``(mean of the cost, True)``; ``M`` the negation-aware cost when given."""
    M = cosine_cost(A, B) if M is None else M
    return float(M.mean()), True


def kernel(batch) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of the batch on its cost block (plain, or ``M'`` for a ``_neg`` setting)."""
    out = np.empty(batch.P)
    for p in range(batch.P):
        batch.check_time()
        out[p] = batch.cost_block(p).mean()
    return out, np.ones(batch.P, dtype=bool)


FAMILY = Family(NAME, reference, kernel, neg_kernel=kernel,
                describe=lambda p: "toy: mean of every cross cost (tests/distances/toy_family.py)")


def register() -> None:
    register_family(FAMILY, replace=True)
