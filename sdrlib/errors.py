"""The root of every error :mod:`sdrlib` raises on purpose.

Each module keeps its own named error (``ConfigError``, ``DistanceInputError``,
``ReportTextError``, ...) so a message says where the problem is; every one of them
also derives from :class:`SDRError`, so a caller (or a property test) can tell a
deliberate, explained refusal from a crash:

    try:
        reward = scorer.score(completion, findings, impression)
    except SDRError as err:      # bad input, named and explained
        ...

They keep their built-in bases too (``ValueError``, ``RuntimeError``,
``FileNotFoundError``), so ``except ValueError`` code written against earlier
versions still works. Leaves out: warnings (see ``ConvergenceWarning``).
"""

from __future__ import annotations


class SDRError(Exception):
    """Base of all deliberate sdrlib errors; the message names the input and what to do."""
