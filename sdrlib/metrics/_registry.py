"""The machinery of the metric-group registry; the public face, with the built-in groups loaded, is
:mod:`sdrlib.metrics.registry` (read its docstring). Private so that the built-in group modules
(:mod:`sdrlib.metrics.groups`) can register themselves without an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from sdrlib.errors import SDRError
from sdrlib.metrics.base import EvaluationInputError, MetricResult

__all__ = ["MetricGroup", "MetricUnavailable", "PaperMetric", "ScoreContext", "ScoreOptions", "metric_group",
           "metric_group_names", "metric_groups", "register_metric_group", "unregister_metric_group",
           "seal_builtins"]


class MetricUnavailable(SDRError, RuntimeError):
    """A metric group cannot run here (package, model or checkpoint missing, or its scorer failed).

    Raised by a group's ``available`` (or ``compute``); the message is the reason the suite records as
    ``unavailable[<group>]`` and the tables print as ``not computed: <reason>``.
    """


@dataclass(frozen=True)
class PaperMetric:
    """One metric: the names the paper's tables give it and the suite metric(s) that compute it.

    ``names``: every name a paper table uses for it, the canonical first; ``suite``: suite metric
    names (the part before ``@``), preferred first (a later one stands in when the first is absent,
    e.g. METEOR without WordNet); ``group``: the :func:`~sdrlib.metrics.suite.score_reports` metric
    group that yields it (the key of its ``unavailable`` reason); ``label``: our row label when it
    differs from the paper's name, with ``(<backend>)`` appended when ``show_backend``.
    """

    names: tuple[str, ...]
    suite: tuple[str, ...]
    group: str
    basis: str
    source: str
    label: str | None = None
    show_backend: bool = False


@dataclass(frozen=True)
class ScoreOptions:
    """The backend options of one :func:`~sdrlib.metrics.suite.score_reports` call (its keyword arguments)."""

    bertscore_model: str = "auto"
    bertscore_batch_size: int = 64
    device: str = "cpu"
    clinical_backend: str = "auto"
    uncertain: str = "positive"
    wordnet_dir: str | None = "auto"
    comet_model: str | None = None
    radgraph_model: str = "radgraph"


@dataclass
class ScoreContext:
    """What every metric group sees: the checked, stripped section texts of ``n`` samples and the options.

    ``predictions[s]`` / ``references[s]``: list of ``n`` str for section ``s``; ``defined[s]``: bool ``(n,)``,
    samples whose reference section has text (the others get NaN and zero weight); ``unavailable``: what the
    suite reports as not computed, group (or note) -> reason, in the order found (the suite adds a group whose
    ``available`` / ``compute`` raised :class:`MetricUnavailable`; a group that runs in a reduced form adds a note
    of its own, e.g. ``meteor_wordnet`` for METEOR without WordNet).
    """

    sections: tuple[str, ...]
    predictions: dict[str, list[str]]
    references: dict[str, list[str]]
    defined: dict[str, np.ndarray]
    options: ScoreOptions = field(default_factory=ScoreOptions)
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Number of samples."""
        return len(next(iter(self.defined.values()))) if self.defined else 0


Compute = Callable[[ScoreContext, Any], Mapping[str, list[MetricResult]]]
Section = Callable[[Sequence[str], Sequence[str], np.ndarray, Any], list[MetricResult]]


@dataclass(frozen=True)
class MetricGroup:
    """One registered metric group (see the module docstring for each field)."""

    name: str
    compute: Compute
    available: Callable[[ScoreContext], Any] | None = None
    section: Section | None = None
    paper_names: tuple[PaperMetric, ...] = ()
    versions: tuple[str, ...] = ()
    provenance: Callable[[Any], dict[str, str]] | None = None
    description: str = ""

    def setup(self, ctx: ScoreContext) -> Any:
        """The group's setup for ``ctx`` (``None`` without an ``available`` check); raises MetricUnavailable."""
        return None if self.available is None else self.available(ctx)


_GROUPS: dict[str, MetricGroup] = {}
_BUILTIN: set[str] = set()


def _per_section(section: Section) -> Compute:
    def compute(ctx: ScoreContext, setup: Any) -> dict[str, list[MetricResult]]:
        return {s: section(ctx.predictions[s], ctx.references[s], ctx.defined[s], setup) for s in ctx.sections}

    return compute


def register_metric_group(name: str, *, compute: Compute | None = None, section: Section | None = None,
                          available: Callable[[ScoreContext], Any] | None = None,
                          paper_names: Sequence[PaperMetric] = (), versions: Sequence[str] = (),
                          provenance: Callable[[Any], dict[str, str]] | None = None, description: str = "",
                          replace: bool = False) -> MetricGroup:
    """Register a metric group: afterwards ``score_reports(metrics=[name])`` scores it (and ``metrics=None``, all
    groups, includes it) and :mod:`sdrlib.metrics.paper_names` knows its ``paper_names``.

    Give ``compute`` (all sections at once), ``section`` (one section; the registry loops over sections for
    ``compute``), or both (BERTScore batches every section in ``compute``; ``nlg_results`` uses ``section``).
    Raises :class:`~sdrlib.metrics.base.EvaluationInputError` (a ValueError) for a name that is not a lower-case
    identifier, a taken name without ``replace=True``, neither ``compute`` nor ``section``, a ``compute`` /
    ``section`` / ``available`` / ``provenance`` that is not a function, or a paper
    name entry whose ``group`` is another group or whose name another group already uses.
    Example: ``tests/metrics/toy_metric.py``.
    """
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise EvaluationInputError(f"metric group name {name!r}: use a lower-case identifier (e.g. 'rouge')")
    if name in _GROUPS and not replace:
        raise EvaluationInputError(f"metric group {name!r} is already registered; pass replace=True to replace it")
    if compute is None and section is None:
        raise EvaluationInputError(f"metric group {name!r}: give compute= or section= (or both)")
    for what, fn in (("compute", compute), ("section", section), ("available", available),
                     ("provenance", provenance)):
        if fn is not None and not callable(fn):
            raise EvaluationInputError(f"metric group {name!r}: {what} must be a function, got {fn!r}")
    _check_paper_names(name, paper_names)
    group = MetricGroup(name, compute if compute is not None else _per_section(section), available, section,
                        tuple(paper_names), tuple(versions), provenance, description)
    _GROUPS[name] = group
    return group


def seal_builtins() -> None:
    """Mark every group registered so far as built in (called once by :mod:`sdrlib.metrics.groups`)."""
    _BUILTIN.update(_GROUPS)


def _check_paper_names(name: str, paper_names: Sequence[PaperMetric]) -> None:
    taken = {n: g.name for g in _GROUPS.values() if g.name != name for m in g.paper_names for n in m.names}
    for m in paper_names:
        if not isinstance(m, PaperMetric) or m.group != name:
            raise EvaluationInputError(f"metric group {name!r}: paper_names must be PaperMetric entries of group "
                                       f"{name!r}, got {m!r}")
        clash = [n for n in m.names if n in taken]
        if clash:
            raise EvaluationInputError(f"metric group {name!r}: paper name {clash[0]!r} belongs to group "
                                       f"{taken[clash[0]]!r}")


def unregister_metric_group(name: str) -> None:
    """Remove a group registered with :func:`register_metric_group` (tests, notebooks); built-in ones stay."""
    if name in _BUILTIN:
        raise EvaluationInputError(f"metric group {name!r} is built in and cannot be removed (replace it instead)")
    _GROUPS.pop(name, None)


def metric_groups() -> tuple[MetricGroup, ...]:
    """Every registered group, in registration (= scoring) order, built-in ones first."""
    return tuple(_GROUPS.values())


def metric_group_names() -> tuple[str, ...]:
    """Names of every registered group, in scoring order (``score_reports(metrics=None)`` scores them all)."""
    return tuple(g.name for g in metric_groups())


def metric_group(name: str) -> MetricGroup:
    """The registered group ``name``; EvaluationInputError (a ValueError) listing the known ones otherwise."""
    try:
        return _GROUPS[name]
    except KeyError:
        raise EvaluationInputError(f"unknown metric group {name!r}; known: {metric_group_names()}") from None
