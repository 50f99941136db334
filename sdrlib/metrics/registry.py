"""The registry of metric groups: what :func:`~sdrlib.metrics.suite.score_reports` can score, one registration each.

A *metric group* (``"bleu"``, ``"rouge"``, ``"clinical"``, ...) is the unit a caller asks for
(``score_reports(metrics=["rouge"])``) and yields one or more metrics (``rouge1``, ``rouge2``, ``rougeL``). Each is
one :func:`register_metric_group` call with a :class:`MetricGroup` in a module of its own (the registration pattern
shared with distance families, datasets and reward methods: :mod:`sdrlib.extension`; the built-in ones are the modules
of :mod:`sdrlib.metrics.groups`, named in :data:`BUILTIN_GROUPS` and imported on the first read of the registry),
holding

- ``compute(ctx, setup)``: the group's :class:`~sdrlib.metrics.base.MetricResult` objects per section, from the
  checked texts of a :class:`ScoreContext`; or ``section(predictions, references, defined, setup)`` for one
  section alone, which the registry turns into ``compute`` (and which :func:`sdrlib.metrics.nlg.nlg_results` runs);
- ``available(ctx)``: whether the group can run on this machine and with what (a BERTScore backbone, a COMET
  checkpoint): returns the group's ``setup`` (handed to ``compute``; ``None`` is fine) or raises
  :class:`MetricUnavailable`, whose reason the suite reports as ``unavailable/<group>`` instead of failing;
- ``paper_names``: the :class:`PaperMetric` entries naming its metrics in the paper's tables
  (:mod:`sdrlib.metrics.paper_names` reads them from here);
- ``versions``: the packages whose versions go into the results' provenance;
- ``settings``: a frozen dataclass of the group's options, or ``None``: the profile's section ``metrics.<group>``
  (:mod:`sdrlib.config` builds it, with the defaults and field constraints written once), handed to the group as
  ``ctx.settings_of(<group>)``; a caller of :func:`~sdrlib.metrics.suite.score_reports` gives it as
  ``settings={<group>: object or mapping of fields}`` (:func:`group_settings`). A bool field ``enabled`` turns
  the group off for a profile (:func:`~sdrlib.metrics.suite.metric_kwargs` leaves it out of the groups scored).
  The built-in groups' options are such sections too (``metrics.bertscore.model``, ``metrics.clinical.backend``,
  ``metrics.meteor.wordnet_dir``, ``metrics.comet.model``, ``metrics.radgraph.model``).

Groups are scored in registration order, so the built-in order (:data:`BUILTIN_GROUPS`: BLEU, ROUGE, METEOR,
chrF++, BERTScore, COMET, clinical, RadGraph) is the order of every result list. A registered name is taken: replacing it (a built-in one
too) needs ``replace=True``; built-in groups cannot be removed. ``tests/metrics/toy_metric.py`` registers a group
from a module of its own, and it is scored end to end through :func:`~sdrlib.metrics.suite.score_reports` with no
other edit.

Leaves out: the scoring loop and input checks (:mod:`sdrlib.metrics.suite`), the metrics themselves
(:mod:`sdrlib.metrics.groups`), which import this module (it imports none of them).

Example::

    >>> metric_group_names()
    ('bleu', 'rouge', 'meteor', 'chrf', 'bertscore', 'comet', 'clinical', 'radgraph')
    >>> metric_group("rouge").paper_names[0].names
    ('ROUGE-L', 'RL-F')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from sdrlib.errors import SDRError
from sdrlib.extension import Registry
from sdrlib.metrics.base import EvaluationInputError, MetricResult

__all__ = ["MetricGroup", "MetricUnavailable", "PaperMetric", "ScoreContext", "metric_group", "group_settings",
           "metric_group_names", "metric_groups", "register_metric_group", "unregister_metric_group",
           "BUILTIN_GROUPS", "GROUPS"]


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


@dataclass
class ScoreContext:
    """What every metric group sees: the checked, stripped section texts of ``n`` samples and the groups' settings.

    ``predictions[s]`` / ``references[s]``: list of ``n`` str for section ``s``; ``defined[s]``: bool ``(n,)``,
    samples whose reference section has text (the others get NaN and zero weight); ``unavailable``: what the
    suite reports as not computed, group (or note) -> reason, in the order found (the suite adds a group whose
    ``available`` / ``compute`` raised :class:`MetricUnavailable`; a group that runs in a reduced form adds a note
    of its own, e.g. ``meteor_wordnet`` for METEOR without WordNet); ``settings``: group -> its settings object
    (:func:`group_settings`), read through :meth:`settings_of`.
    """

    sections: tuple[str, ...]
    predictions: dict[str, list[str]]
    references: dict[str, list[str]]
    defined: dict[str, np.ndarray]
    unavailable: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Number of samples."""
        return len(next(iter(self.defined.values()))) if self.defined else 0

    def settings_of(self, group: str) -> Any:
        """Group ``group``'s settings (its :attr:`MetricGroup.settings` object: the profile's ``metrics.<group>``
        as given to :func:`~sdrlib.metrics.suite.score_reports`, else the dataclass's defaults; ``None`` for a
        group without settings)."""
        if group in self.settings:
            return self.settings[group]
        cls = metric_group(group).settings
        return cls() if cls is not None else None


Compute = Callable[[ScoreContext, Any], Mapping[str, list[MetricResult]]]
Section = Callable[[Sequence[str], Sequence[str], np.ndarray, Any], list[MetricResult]]


@dataclass(frozen=True)
class _PerSection:
    """A group's ``compute`` made from its one-section ``section`` function: every section of the context in turn."""

    section: Section

    def __call__(self, ctx: ScoreContext, setup: Any) -> dict[str, list[MetricResult]]:
        return {s: self.section(ctx.predictions[s], ctx.references[s], ctx.defined[s], setup) for s in ctx.sections}


@dataclass(frozen=True)
class MetricGroup:
    """One metric group (the module docstring describes each field); give ``compute``, ``section`` or both (without
    ``compute`` the group runs ``section`` on each section in turn; BERTScore batches every section in ``compute``
    and :func:`sdrlib.metrics.nlg.nlg_results` uses ``section``).

    Example::

        MetricGroup("rouge", section=rouge_section, paper_names=PAPER_NAMES, versions=("rouge-score",))
    """

    name: str
    compute: Compute | None = None
    available: Callable[[ScoreContext], Any] | None = None
    section: Section | None = None
    paper_names: tuple[PaperMetric, ...] = ()
    versions: tuple[str, ...] = ()
    provenance: Callable[[Any], dict[str, str]] | None = None
    description: str = ""
    settings: type | None = None

    def __post_init__(self) -> None:
        if self.compute is None and callable(self.section):
            object.__setattr__(self, "compute", _PerSection(self.section))
        object.__setattr__(self, "paper_names", tuple(self.paper_names))
        object.__setattr__(self, "versions", tuple(self.versions))

    def setup(self, ctx: ScoreContext) -> Any:
        """The group's setup for ``ctx`` (``None`` without an ``available`` check); raises MetricUnavailable."""
        return None if self.available is None else self.available(ctx)


def group_settings(given: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{group: settings object}`` from a ``settings`` argument of :func:`~sdrlib.metrics.suite.score_reports`.

    Each value is the group's :attr:`MetricGroup.settings` object (a profile's ``metrics.<group>``) or a mapping of
    some of its fields, the others at their defaults (``{"clinical": {"backend": "labeler"}}``). Raises
    :class:`~sdrlib.metrics.base.EvaluationInputError` for a group that is not registered or has no settings, a field
    the dataclass does not have, another type of object, or a value outside a field's ``choices``.
    """
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise EvaluationInputError(f"settings must map metric group names to their settings, got {type(given).__name__}")
    out: dict[str, Any] = {}
    for name, value in given.items():
        cls = metric_group(name).settings
        if cls is None:
            raise EvaluationInputError(f"settings[{name!r}]: metric group {name!r} has no settings")
        if isinstance(value, Mapping):
            fields = [f.name for f in dataclasses.fields(cls)]
            unknown = sorted(map(str, set(value) - set(fields)))
            if unknown:
                raise EvaluationInputError(f"settings[{name!r}]: unknown field(s) {unknown}; {cls.__name__} has {fields}")
            value = cls(**value)
        elif not isinstance(value, cls):
            raise EvaluationInputError(f"settings[{name!r}] is {type(value).__name__}; allowed: a {cls.__name__} or a "
                                       "mapping of its fields")
        for f in dataclasses.fields(cls):
            choices = f.metadata.get("choices")
            choices = choices() if callable(choices) else choices
            if choices is not None and getattr(value, f.name) not in choices:
                raise EvaluationInputError(f"settings[{name!r}].{f.name} = {getattr(value, f.name)!r}; allowed: one "
                                           f"of {list(choices)}")
        out[name] = value
    return out


def _check_group(group: MetricGroup) -> None:
    name = group.name
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise EvaluationInputError(f"metric group name {name!r}: use a lower-case identifier (e.g. 'rouge')")
    if group.compute is None and group.section is None:
        raise EvaluationInputError(f"metric group {name!r}: give compute= or section= (or both)")
    for what in ("compute", "section", "available", "provenance"):
        fn = getattr(group, what)
        if fn is not None and not callable(fn):
            raise EvaluationInputError(f"metric group {name!r}: {what} must be a function, got {fn!r}")
    if group.settings is not None and not dataclasses.is_dataclass(group.settings):
        raise EvaluationInputError(f"metric group {name!r}: settings must be a dataclass, got {group.settings!r}")
    _check_paper_names(name, group.paper_names)


#: the built-in groups' modules, imported in this order on the first read of the registry: the scoring order
BUILTIN_GROUPS = tuple(f"sdrlib.metrics.groups.{g}"
                       for g in ("bleu", "rouge", "meteor", "chrf", "bertscore", "comet", "clinical", "radgraph"))
#: the registered metric groups, by name (:func:`register_metric_group`)
GROUPS: Registry[MetricGroup] = Registry("metric group", error=EvaluationInputError, builtins=BUILTIN_GROUPS,
                                         check=_check_group, item_type=MetricGroup)


def register_metric_group(group: MetricGroup, *, replace: bool = False) -> MetricGroup:
    """Register a metric group: afterwards ``score_reports(metrics=[group.name])`` scores it (and ``metrics=None``,
    all groups, includes it), :mod:`sdrlib.metrics.paper_names` knows its ``paper_names`` and a profile may set its
    ``settings`` under ``metrics.<name>``.

    Raises ``TypeError`` for anything but a :class:`MetricGroup`, and
    :class:`~sdrlib.metrics.base.EvaluationInputError` (a ValueError) for a name that is not a lower-case
    identifier, a taken name without ``replace=True``, neither ``compute`` nor ``section``, a ``compute`` /
    ``section`` / ``available`` / ``provenance`` that is not a function, ``settings`` that is not a dataclass, or a
    paper name entry whose ``group`` is another group or whose name another group already uses.
    Example: ``tests/metrics/toy_metric.py``.
    """
    return GROUPS.register(group, replace=replace)


def _check_paper_names(name: str, paper_names: Sequence[PaperMetric]) -> None:
    taken = {n: g.name for g in GROUPS.entries(discover=False) if g.name != name for m in g.paper_names for n in m.names}
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
    GROUPS.unregister(name)


def metric_groups() -> tuple[MetricGroup, ...]:
    """Every registered group, in registration (= scoring) order, built-in ones first."""
    return GROUPS.entries()


def metric_group_names() -> tuple[str, ...]:
    """Names of every registered group, in scoring order (``score_reports(metrics=None)`` scores them all)."""
    return GROUPS.names()


def metric_group(name: str) -> MetricGroup:
    """The registered group ``name``; EvaluationInputError (a ValueError) listing the known ones otherwise."""
    if not isinstance(name, str) or name not in GROUPS:
        raise EvaluationInputError(f"unknown metric group {name!r}; known: {metric_group_names()}")
    return GROUPS[name]
