"""Typed errors and warnings of :mod:`sdrlib.distances`."""

from __future__ import annotations

from sdrlib.errors import SDRError


class DistanceInputError(SDRError, ValueError):
    """A set given to a distance is unusable (empty, NaN/inf, zero-norm row, wrong shape)."""


class DistanceSpecError(SDRError, ValueError):
    """A distance setting or call option is unusable: unknown family or parameter, a NaN / inf /
    out-of-range value, an ``eps`` below its solver's float64 floor (see
    :mod:`sdrlib.distances.registry`), or a bad ``on_nonconvergence`` / ``device`` / ``empty_value``."""


class UnknownDistanceError(DistanceSpecError, KeyError):
    """A distance name that is neither registered nor a parsable ``family_value`` (also a ``KeyError``)."""

    __str__ = BaseException.__str__  # KeyError would quote the whole message


class DistanceNameTypeError(DistanceSpecError, TypeError):
    """A distance name that is neither a ``str`` nor a :class:`DistanceSpec` (also a ``TypeError``)."""


class DistanceRangeError(SDRError, ValueError):
    """A solver returned a value that is not a distance: NaN / inf, or outside [0, 1] by more than
    round-off (:data:`sdrlib.distances.costs.RANGE_ATOL`).

    Raised instead of clipping, so that a broken value never becomes a silent reward of 0 or 1.
    Example: UOT with ``eps`` large against ``tau``, whose plan carries more than unit mass.
    """


class ConvergenceError(SDRError, RuntimeError):
    """An iterative solver (Sinkhorn, UOT, GW) stopped at ``max_iter`` above ``stop_thr``.

    Raised only when the caller asked for ``on_nonconvergence="raise"``.
    """


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped at ``max_iter`` above ``stop_thr`` (the default reaction)."""


class DistanceTimeoutError(SDRError, TimeoutError):
    """A distance call ran past the caller's ``time_budget_s`` and was stopped (no values returned).

    Raised by the engine's entry points (``pairwise_distances``, ``pairwise_distances_many``,
    ``paired_distances``); also a ``TimeoutError``.
    """
