"""Input checks and the base cost of appendix A (eq. 11).

Every distance takes two non-empty sets of sentence embeddings, arrays of shape
(n, d) and (m, d). Rows are **normalised here** (eq. 11 divides by the norms, so
normalising is the paper's definition, not a convenience); rows whose norm is
below :data:`MIN_NORM` are rejected, as are empty sets, NaN/inf entries and
mismatched dimensions. All arithmetic is float64.

Left out: other base distances (the paper only uses the cosine one).
"""

from __future__ import annotations

import numpy as np

from sdrlib.distances.errors import DistanceInputError

#: rows with a smaller L2 norm are rejected (the cosine of eq. 11 is undefined for them)
MIN_NORM = 1e-12
#: ``max M`` at or below this means every point of both sets coincides: ``M~ = M / max M`` is
#: undefined and the transport families return 0 (identical sets). 1e-9 in cosine cost is an
#: angle below 6.4e-5 rad, far below the spread of distinct sentence embeddings and far above
#: float64 round-off of identical vectors (~1e-16).
ZERO_COST_ATOL = 1e-9


def as_set(x: object, name: str = "A", dim: int | None = None) -> np.ndarray:
    """Validate one embedding set and return it as float64 with unit-norm rows.

    Parameters
    ----------
    x : array-like, shape (n, d)
        n >= 1 sentence embeddings. A 1-d array of length d is read as one sentence.
    name : str
        Name used in error messages.
    dim : int, optional
        Required embedding dimension.

    Example: ``as_set([[3.0, 4.0]]) -> array([[0.6, 0.8]])``.
    """
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DistanceInputError(f"set {name} is not a numeric array: {exc}") from None
    if a.ndim == 1 and a.size > 0:
        a = a[None, :]
    if a.ndim != 2:
        raise DistanceInputError(f"set {name} must have shape (n, d), got {a.shape}")
    if a.shape[0] == 0:
        raise DistanceInputError(f"set {name} is empty: distances are defined for non-empty sets only")
    if a.shape[1] == 0:
        raise DistanceInputError(f"set {name} has dimension 0")
    if dim is not None and a.shape[1] != dim:
        raise DistanceInputError(f"set {name} has dimension {a.shape[1]}, expected {dim}")
    if not np.isfinite(a).all():
        raise DistanceInputError(f"set {name} contains NaN or inf")
    norms = np.linalg.norm(a, axis=1)
    bad = np.flatnonzero(norms < MIN_NORM)
    if bad.size:
        raise DistanceInputError(f"set {name} has zero-norm rows {bad[:5].tolist()}: cosine distance undefined")
    return a / norms[:, None]


def as_pair(a: object, b: object) -> tuple[np.ndarray, np.ndarray]:
    """Validate two sets of the same dimension (see :func:`as_set`)."""
    A = as_set(a, "A")
    B = as_set(b, "B", dim=A.shape[1])
    return A, B


def cosine_cost(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Eq. (11): ``M_ij = (1 - a_i.b_j) / 2``, clipped to [0, 1], for unit-norm rows.

    Example: ``cosine_cost(np.eye(2), np.eye(2)) -> [[0, .5], [.5, 0]]``.
    """
    return np.clip(0.5 * (1.0 - A @ B.T), 0.0, 1.0)


def rescale(M: np.ndarray) -> np.ndarray:
    """``M~ = M / max M`` (appendix A); all zeros when ``max M <= ZERO_COST_ATOL``.

    The zero case is the one where every point of both sets coincides, so the
    transport cost is 0 for any plan and D = 0 as for identical sets.
    """
    mx = float(M.max())
    if mx <= ZERO_COST_ATOL:
        return np.zeros_like(M)
    return M / mx
