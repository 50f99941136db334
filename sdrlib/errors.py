"""The root of every error :mod:`sdrlib` raises on purpose, and the one place to find them all.

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
versions still works.

Every public exception and warning class of the package is also an attribute of this module
(:data:`PUBLIC_ERRORS` names the module that defines or re-exports each), so ``from sdrlib.errors import
ConfigError`` works as ``from sdrlib.config import ConfigError`` does. They are imported when first asked for
(module ``__getattr__``): this module sits below every other one and imports none of them itself.

>>> from sdrlib import errors
>>> errors.ConfigError.__module__.startswith("sdrlib.config"), issubclass(errors.ConfigError, errors.SDRError)
(True, True)
>>> errors.ConvergenceWarning.__mro__[1].__name__
'UserWarning'
>>> "DistanceInputError" in dir(errors)
True
"""

from __future__ import annotations

import importlib
from typing import Any


class SDRError(Exception):
    """Base of all deliberate sdrlib errors; the message names the input and what to do."""


#: Every public exception and warning class of sdrlib -> the public module a user imports it from (the package
#: that re-exports it where one does); ``tests/project/test_errors.py`` checks the list is complete.
PUBLIC_ERRORS: dict[str, str] = {
    # errors
    "APIGenError": "sdrlib.apigen",
    "APIKeyError": "sdrlib.apigen",
    "APIRequestError": "sdrlib.apigen",
    "BackendUnavailable": "sdrlib.metrics.backends",
    "BankNotFoundError": "sdrlib.embedding",
    "ConfigError": "sdrlib.config",
    "ConvergenceError": "sdrlib.distances",
    "DataError": "sdrlib.data",
    "DistanceInputError": "sdrlib.distances",
    "DistanceNameTypeError": "sdrlib.distances.errors",
    "DistanceRangeError": "sdrlib.distances",
    "DistanceSpecError": "sdrlib.distances",
    "DistanceTimeoutError": "sdrlib.distances",
    "EditError": "sdrlib.rewards.methods.editgrpo",
    "EmbeddingError": "sdrlib.embedding",
    "EncoderNotFoundError": "sdrlib.embedding",
    "EvaluationInputError": "sdrlib.metrics.base",
    "FidelityError": "sdrlib.experiments.fidelity",
    "GCARLError": "sdrlib.rewards.methods.gcarl",
    "MetricUnavailable": "sdrlib.metrics.registry",
    "OutputPathError": "sdrlib.io",
    "PlotError": "sdrlib.results",
    "PolicyError": "sdrlib.models",
    "PresenceInputError": "sdrlib.clinical",
    "PruningError": "sdrlib.pruning",
    "RadGraphOutputError": "sdrlib.metrics.groups.radgraph",
    "RadGraphVersionError": "sdrlib.metrics.radgraph_compat",
    "ReferenceTextError": "sdrlib.rewards",
    "ReportTextError": "sdrlib.reports",
    "ResultTableError": "sdrlib.results",
    "RewardChoiceError": "sdrlib.experiments.reward_choice",
    "RewardError": "sdrlib.rewards",
    "SelectionError": "sdrlib.selection",
    "ServeError": "sdrlib.serve",
    "SignificanceInputError": "sdrlib.metrics.significance",
    "SignificanceRequestError": "sdrlib.experiments.tables",
    "StandInError": "sdrlib.data.standin",
    "StartInputError": "sdrlib.experiments.sft_start",
    "StudyError": "sdrlib.experiments.study.evidence",
    "SynthCXRError": "sdrlib.data.synthcxr.dataset",
    "TextDecodeError": "sdrlib.io",
    "TokenizerObjectError": "sdrlib.metrics.radgraph_compat",
    "TowerInputError": "sdrlib.training.tower",
    "VisibilityInputError": "sdrlib.experiments.synthcxr_visibility",
    "AuxLabelError": "sdrlib.training.aux_labels",
    "SamplingError": "sdrlib.training.sampling",
    "UnknownDistanceError": "sdrlib.distances",
    "UsageError": "sdrlib.runner",
    "VerdictInputError": "sdrlib.metrics.verdict",
    # warnings
    "CacheWarning": "sdrlib.apigen",
    "ConvergenceWarning": "sdrlib.distances",
    "EmbeddingCacheWarning": "sdrlib.embedding",
    "EncoderTruncationWarning": "sdrlib.embedding",
    "TemplateFormatWarning": "sdrlib.metrics.suite",
    "TemplateTagsInReportWarning": "sdrlib.metrics.suite",
    "UnreadableTextWarning": "sdrlib.clinical.labeler",
}

__all__ = ["SDRError", "PUBLIC_ERRORS", *PUBLIC_ERRORS]


def __getattr__(name: str) -> Any:
    """A class of :data:`PUBLIC_ERRORS`, imported from its module on first use (then kept here)."""
    module = PUBLIC_ERRORS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    cls = getattr(importlib.import_module(module), name)
    globals()[name] = cls
    return cls


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(PUBLIC_ERRORS))
