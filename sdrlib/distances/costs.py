"""Input checks, the base cost of appendix A (eq. 11) and the range check of every returned value.

Every distance takes two non-empty sets of sentence embeddings, arrays of shape
(n, d) and (m, d). Rows are **normalised here** (eq. 11 divides by the norms, so
normalising is the paper's definition, not a convenience); rows whose norm is
below :data:`MIN_NORM` are rejected, as are empty sets, NaN/inf entries,
mismatched dimensions and non-numeric dtypes (strings, complex, dates). Ints and
bools are read as numbers. All arithmetic is float64.

Normalisation is scale-safe: each row is first scaled by the power of two that
brings its largest absolute entry into [0.5, 1), so its norm is computed on
numbers in (-1, 1) and neither overflows (rows of magnitude 1e300 give the same
unit rows, hence the same distances, as unit rows) nor underflows. Rows of norm
below ``MIN_NORM`` (1e-300 x anything, say) are still rejected: at that size an
embedding is a zero vector plus round-off, and its direction is the round-off's.

Every value a distance returns goes through :func:`check_range`: finite values in
``[-RANGE_ATOL, 1 + RANGE_ATOL]`` are clipped to [0, 1] (that much is round-off);
anything else raises :class:`~sdrlib.distances.errors.DistanceRangeError`.

Left out: other base distances (the paper only uses the cosine one).
"""

from __future__ import annotations

import numpy as np

from sdrlib.distances.errors import DistanceInputError, DistanceRangeError

#: rows with a smaller L2 norm are rejected (the cosine of eq. 11 is undefined for them)
MIN_NORM = 1e-12
#: ``max M`` at or below this means every point of both sets coincides: ``M~ = M / max M`` is
#: undefined and the transport families return 0 (identical sets). 1e-9 in cosine cost is an
#: angle below 6.4e-5 rad, far below the spread of distinct sentence embeddings and far above
#: float64 round-off of identical vectors (~1e-16).
ZERO_COST_ATOL = 1e-9
#: how far outside [0, 1] a computed distance may lie and still be clipped as round-off. The values
#: are sums of n m (GW: n^2 m^2) products of numbers in [0, 1]: their float64 round-off is below
#: 1e-8 for sets of up to 100 sentences, and the log-domain Sinkhorn at its eps floor
#: (registry.SINKHORN_MIN_EPS) has a relative plan error of 1e-9. A larger excess is not
#: round-off but a solver or definition that left [0, 1] (UOT with more than unit plan mass),
#: and raises DistanceRangeError.
RANGE_ATOL = 1e-6

#: numpy dtype kinds read as numbers: bool, signed and unsigned int, float (object arrays are tried)
_NUMERIC_KINDS = "biuf"


def _as_float_array(x: object, name: str) -> np.ndarray:
    """``x`` as a float64 array; strings, complex, dates and unconvertible objects raise."""
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError, OverflowError) as exc:  # ragged nesting, absurd ints
        raise DistanceInputError(f"set {name} is not a numeric array: {exc}") from None
    kind = raw.dtype.kind
    if kind not in _NUMERIC_KINDS and kind != "O":
        raise DistanceInputError(f"set {name} is not a numeric array: dtype {raw.dtype} (use real floats)")
    try:
        a = raw.astype(np.float64) if kind != "O" else np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DistanceInputError(f"set {name} is not a numeric array: {exc}") from None
    return a


def unit_rows(a: np.ndarray, name: str) -> np.ndarray:
    """Rows of a finite (n, d) float64 array scaled to unit L2 norm, scale-safely.

    Each row is first multiplied by the power of two ``2^-e`` that brings its max-abs
    entry into [0.5, 1), so its norm is computed on numbers in (-1, 1) and neither
    overflows (entries of 1e300) nor underflows (1e-200). A power of two scales exactly,
    so for rows whose norm did not over/underflow the result is bit for bit
    ``a / ||a||``, and ``2^k a`` gives the same unit row as ``a`` for every k.
    Rows whose norm is below :data:`MIN_NORM` (all-zero ones included) raise
    :class:`DistanceInputError`.
    Example: ``unit_rows(np.array([[3e300, 4e300]]), "A") -> [[0.6, 0.8]]``.
    """
    _, e = np.frexp(np.abs(a).max(axis=1))      # max-abs = f 2^e, f in [0.5, 1); e = 0 for zero rows
    b = np.ldexp(a, -e[:, None])
    nb = np.linalg.norm(b, axis=1)             # in [0.5, sqrt(d)) for non-zero rows: no over/underflow
    with np.errstate(over="ignore", under="ignore"):
        norm = np.ldexp(nb, e)                 # ||a||: may be inf for huge rows, which is fine here
    bad = np.flatnonzero(norm < MIN_NORM)
    if bad.size:
        raise DistanceInputError(f"set {name} has zero-norm rows {bad[:5].tolist()} (L2 norm below {MIN_NORM}): "
                                 "cosine distance undefined")
    return b / nb[:, None]


def check_range(values: "float | np.ndarray", what: str, upper: "float | None" = 1.0) -> "float | np.ndarray":
    """Clip round-off at the ends of [0, ``upper``]; raise on anything else.

    NaN / inf, values below ``-RANGE_ATOL`` and (unless ``upper`` is None) above
    ``upper + RANGE_ATOL`` raise :class:`DistanceRangeError` naming ``what``.
    Example: ``check_range(-1e-17, "ot") -> 0.0``; ``check_range(1.5, "uot_1.0")`` raises.
    """
    v = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(v) | (v < -RANGE_ATOL)
    if upper is not None:
        bad |= v > upper + RANGE_ATOL
    if bad.any():
        shown = v[bad].ravel()[:3].tolist()
        raise DistanceRangeError(
            f"{what}: {int(bad.sum())} value(s) are not distances in [0, {upper if upper is not None else 'inf'}] "
            f"(e.g. {shown}); the solver left its valid range at these parameters (a smaller eps/tau ratio for "
            "UOT, a larger eps for the entropic families) - refusing rather than clipping to a confident 0 or 1")
    out = np.clip(v, 0.0, upper) if upper is not None else np.maximum(v, 0.0)
    return float(out) if out.ndim == 0 else out


def as_set(x: object, name: str = "A", dim: int | None = None) -> np.ndarray:
    """Validate one embedding set and return it as float64 with unit-norm rows.

    Parameters
    ----------
    x : array-like, shape (n, d)
        n >= 1 sentence embeddings (any real dtype; any magnitude, see :func:`unit_rows`).
        A 1-d array of length d is read as one sentence.
    name : str
        Name used in error messages.
    dim : int, optional
        Required embedding dimension.

    Example: ``as_set([[3.0, 4.0]]) -> array([[0.6, 0.8]])``.
    """
    a = _as_float_array(x, name)
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
        raise DistanceInputError(f"set {name} contains NaN or inf (after conversion to float64)")
    return unit_rows(a, name)


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
