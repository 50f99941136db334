"""Typed errors and warnings of :mod:`sdrlib.distances`."""

from __future__ import annotations

from sdrlib.errors import SDRError


class DistanceInputError(SDRError, ValueError):
    """A set given to a distance is unusable (empty, NaN/inf, zero-norm row, wrong shape)."""


class ConvergenceError(SDRError, RuntimeError):
    """An iterative solver (Sinkhorn, UOT, GW) stopped at ``max_iter`` above ``stop_thr``.

    Raised only when the caller asked for ``on_nonconvergence="raise"``.
    """


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped at ``max_iter`` above ``stop_thr`` (the default reaction)."""
