"""One registered setting applied to one pair, the reward of a distance, and what every entry point does when an
iterative solver stops at its cap.

- :func:`set_distance`: ``D(A, B)`` of one pair, sets ``A`` (n, d) and ``B`` (m, d) of sentence embeddings (optional
  presence ``(n, 14)``, ``(m, 14)``), through the setting's registered per-pair reference (POT / SciPy for the
  built-in families, :mod:`sdrlib.distances.reference`, loaded on the first call) -> a float in [0, 1];
- :func:`reward`: ``1 - clip(D, 0, 1)`` of distances of any shape -> rewards of the same shape, in [0, 1];
- :func:`check_mode`, :func:`handle_nonconvergence`, :data:`NONCONVERGENCE_MODES`: the ``on_nonconvergence``
  policy (warn, raise or ignore), applied here to one pair and by the batched engine
  (:mod:`sdrlib.distances.engine`) to ``count`` of ``total`` pairs.

Leaves out the solvers themselves (:mod:`sdrlib.distances.reference`, a family's ``reference``), the batched engine,
and naming settings (the rest of :mod:`sdrlib.distances.registry`). Importing it loads neither POT nor SciPy's
solvers.

Example: ``reward(set_distance(np.eye(3)[:2], np.eye(3)[:2], "ot")) -> 1.0``.
"""

from __future__ import annotations

import warnings

import numpy as np

from sdrlib.distances.costs import as_pair
from sdrlib.distances.errors import (
    ConvergenceError,
    ConvergenceWarning,
    DistanceInputError,
    DistanceRangeError,
    DistanceSpecError,
)
from sdrlib.distances.negation import check_presence, negation_cost, presence_pair, unique_sentences
from sdrlib.distances.registry._names import get
from sdrlib.distances.registry._spec import DistanceSpec


#: on_nonconvergence values
NONCONVERGENCE_MODES = ("warn", "raise", "ignore")


def check_mode(mode: object) -> None:
    """Raise :class:`DistanceSpecError` unless ``mode`` is one of :data:`NONCONVERGENCE_MODES`."""
    if not isinstance(mode, str) or mode not in NONCONVERGENCE_MODES:
        raise DistanceSpecError(f"on_nonconvergence must be one of {NONCONVERGENCE_MODES}, got {mode!r}")


def handle_nonconvergence(spec: DistanceSpec, count: int, total: int, mode: str) -> None:
    """Warn (:class:`ConvergenceWarning`), raise (:class:`ConvergenceError`) or ignore."""
    check_mode(mode)
    if count == 0 or mode == "ignore":
        return
    p = spec.params
    limit = f"max_iter={p.get('max_iter')}, threshold={p.get('stop_thr', p.get('tol'))}"
    msg = (f"{spec.name}: {count} of {total} pair(s) did not converge ({limit}); values are those of the "
           "last iterate. Raise max_iter (make_spec(..., max_iter=...)) or eps.")
    if mode == "raise":
        raise ConvergenceError(msg)
    warnings.warn(msg, ConvergenceWarning, stacklevel=3)


def set_distance(A: object, B: object, name: "str | DistanceSpec", *, presence: "tuple | None" = None,
                 on_nonconvergence: str = "warn") -> float:
    """The reference distance ``D(A, B)`` of one pair (POT / SciPy, eqs. 12-21).

    Parameters
    ----------
    A, B : array-like, shape (n, d) and (m, d)
        Non-empty sets of sentence embeddings; rows are normalised (eq. 11).
    name : str or DistanceSpec
        A registered name, ``family_value`` or a spec from :func:`make_spec`.
    presence : pair (P_A, P_B) of array-like (n, 14), (m, 14), optional
        Per-sentence presence (:func:`sdrlib.clinical.sentence_presence`); required by a negation-aware
        setting (``chamfer_neg``: the cost ``M'`` of :mod:`sdrlib.distances.negation` on each set's distinct
        sentences) and by
        ``chamfer_recall_<alpha>`` (``A`` the generated set, ``B`` the reference), ignored by a plain one.
    on_nonconvergence : {"warn", "raise", "ignore"}
        Reaction when an iterative solver stops at its cap.

    Returns
    -------
    float in [0, 1] (``hung_pen`` with ``clip=False``: in [0, 1 + alpha |n - m|]), finite.

    Raises
    ------
    DistanceInputError
        unusable sets (empty, NaN / inf, zero rows, wrong shape or dimension, non-numeric), presence of
        the wrong shape or values.
    DistanceSpecError
        unknown name, unusable parameters (see :mod:`sdrlib.distances.registry`), bad ``on_nonconvergence``, a
        negation-aware setting without ``presence``.
    DistanceRangeError
        the solver's value is NaN / inf or leaves [0, 1] by more than round-off.

    Example: ``set_distance(np.eye(3)[:2], np.eye(3)[:2], "ot") -> 0.0``;
    ``set_distance(E1, E2, "chamfer_neg", presence=(P1, P2))``.
    """
    spec = get(name)
    check_mode(on_nonconvergence)
    if spec.needs_presence:
        PA, PB = presence_pair(presence, spec.name)
        a, b = as_pair(A, B)
        pa, pb = check_presence(PA, len(a), "PA"), check_presence(PB, len(b), "PB")
        if spec.negation_aware:  # each set read as a set: a sentence repeated verbatim counts once
            (a, pa), (b, pb) = unique_sentences(a, pa), unique_sentences(b, pb)
            val, ok = spec.reference(a, b, M=negation_cost(a, b, pa, pb, spec.contradiction))
        else:
            val, ok = spec.reference(a, b, presence=(pa, pb))
    else:
        a, b = as_pair(A, B)
        val, ok = spec.reference(a, b)
    handle_nonconvergence(spec, int(not ok), 1, on_nonconvergence)
    return val


def reward(distance: "float | np.ndarray") -> "float | np.ndarray":
    """The similarity reward ``1 - clip(D, 0, 1)``: in [0, 1] for every setting, ``hung_pen`` unclipped too.

    Parameters
    ----------
    distance : real number or array-like of real numbers
        Distances (any shape); values above 1 (``hung_pen`` with ``clip=False``) give 0,
        values below 0 give 1.

    Returns
    -------
    float for a scalar, else an ndarray of the input's shape; every value in [0, 1].

    Raises
    ------
    DistanceInputError
        ``distance`` is not a real number or an array of them (a string, bool, None,
        complex, an object array); the message names ``distance`` and its type.
    DistanceRangeError
        A NaN or infinite distance. No setting produces one (every distance call raises
        :class:`DistanceRangeError` instead), so it can only come from a failed computation;
        mapping it to a value would hide the failure. :class:`sdrlib.rewards.RewardScorer`
        catches a distance failure on one pair itself and scores that section 0, counted
        (``counts["sem_failed"]``); this helper never chooses that value silently.

    Example: ``reward(0.25) -> 0.75``; ``reward(1.7) -> 0.0``; ``reward(float("nan"))`` raises.
    """
    try:
        arr = np.asarray(distance)
    except (TypeError, ValueError) as e:  # ragged nested lists
        raise DistanceInputError(f"reward: distance must be a real number or an array of them, got "
                                 f"{type(distance).__name__} ({e})") from None
    if arr.dtype.kind not in "iuf":
        raise DistanceInputError(f"reward: distance must be a real number or an array of them, got "
                                 f"{type(distance).__name__} of dtype {arr.dtype} ({distance!r:.80})")
    bad = ~np.isfinite(arr)
    if bad.any():
        where = "" if arr.ndim == 0 else f" at index {tuple(int(i) for i in np.argwhere(bad)[0])}"
        value = float(arr[bad].flat[0])
        raise DistanceRangeError(f"reward: distance{where} is {value!r}, not a distance (NaN / inf come only from a "
                                 "failed computation); a distance lies in [0, 1]")
    r = 1.0 - np.clip(arr, 0.0, 1.0)
    return float(r) if np.ndim(r) == 0 else r
