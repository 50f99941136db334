"""Reward names, parsed once into a typed spec, and the registry of reward methods.

A reward configuration is named by a string (``"chamfer"``, ``"editgrpo_tau0.3"``, ``"gcarl"``, ...).
:func:`parse_reward` reads such a name **once** into a frozen :class:`RewardSpec`
(``name``, ``method``, ``distance``, ``options``, ``label``, ``tags``); everything downstream (the scorer,
the TRL adapters, the profile validation, training, run keys, table labels) asks the spec and its
:class:`RewardMethod`, never the string.

Methods register themselves: each module of :mod:`sdrlib.rewards.methods` named in :data:`BUILTIN_METHODS` is
imported on the first read of the registry and calls :func:`register_method` with one :class:`RewardMethod` instance
(the registration pattern shared with distance families, datasets and metric groups: :mod:`sdrlib.extension`); a
plugin's method registers the same way from its own module. A method declares

- its **name grammar** (:meth:`RewardMethod.parse`: a name -> options, or ``None`` when the name is not
  one of its own; ``prefix`` and ``grammar`` make a half-specified name fail with the method's grammar),
- its **settings** (``settings``: a frozen dataclass with defaults written once, each field's
  ``metadata["help"]`` saying where the value comes from; the profile's ``grpo.<method name>`` section
  is built from it by :mod:`sdrlib.config`, which reads the same field constraints as its own:
  ``min`` / ``max`` / ``gt`` / ``choices`` / ``each`` / ``help``),
- its **reward** (:meth:`RewardMethod.score`, the TRL functions :meth:`RewardMethod.trl_parts`),
- its **display label** (:meth:`RewardMethod.label`),
- its **run-key settings** (:meth:`RewardMethod.run_key`),
- its **profile rules** beyond its settings' field constraints (:meth:`RewardMethod.check_profile`),
- and what training needs beyond TRL's ``GRPOTrainer`` (:meth:`RewardMethod.train_options`: trainer,
  loss, learning rate; named by dotted path, so this layer never imports training).

Adding a built-in reward method is one new module under ``sdrlib/rewards/methods/`` and its line in
:data:`BUILTIN_METHODS` (plus its tests and docs); a plugin's method is its module alone.
Left out: every method's reward (one module each under :mod:`sdrlib.rewards.methods`) and scoring batches
(:mod:`sdrlib.rewards.scorer`).

Example::

    spec = parse_reward("editgrpo_tau0.3")
    spec.method, spec.opts["tau"], spec.label   # -> ("editgrpo", 0.3, "EditGRPO-t0.3")
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sdrlib.distances.registry import distance_key
from sdrlib.errors import SDRError
from sdrlib.extension import Registry
from sdrlib.reports import ReportTextError

__all__ = ["RewardError", "ReferenceTextError", "RewardSpec", "RewardMethod", "MethodScores", "TrainOptions",
           "register_method", "unregister_method", "get_method", "registered_methods", "METHODS", "BUILTIN_METHODS",
           "parse_reward",
           "validate_reward_name", "reward_name_problem", "method_of", "reward_names_help", "settings_sections",
           "reward_label", "default_label"]


class RewardError(SDRError, ValueError):
    """A reward configuration or call is unusable (unknown reward, bad weight, misaligned batch)."""


class ReferenceTextError(ReportTextError, RewardError):
    """A reference section is missing (``None``, NaN, ``pd.NA``, blank) or not text; names column and row."""


@dataclass(frozen=True)
class RewardSpec:
    """A reward name read once (:func:`parse_reward`).

    ``name`` the configuration name as written (run folders, table keys); ``method`` the registered
    method (``"sft"``, ``"fmt"``, ``"exact"``, ``"distance"``, ``"gcarl"``, ``"editgrpo"``, ...);
    ``distance`` the :mod:`sdrlib.distances` setting for distance rewards, else ``None``; ``options``
    what the name itself sets, as sorted ``(key, value)`` pairs (``opts`` as a dict; e.g. EditGRPO's
    ``level`` / ``tau`` / ``ops``, ``None`` = the profile's value); ``tags`` free-form facts the notebooks
    group by (``"related"``: another paper's method; ``"negation_aware"``).
    """

    name: str
    method: str
    distance: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    tags: frozenset[str] = field(default_factory=frozenset)

    @property
    def opts(self) -> dict[str, Any]:
        return dict(self.options)

    @property
    def key(self) -> tuple:
        """The reward itself, not its spelling: ``(method, distance key, options)`` (numbers as floats).

        ``chamfer_recall_1`` and ``chamfer_recall_1.0``, ``sinkhorn_0.1`` and ``sinkhorn_0.10`` share a key
        (:func:`sdrlib.distances.registry.distance_key`); the profile's duplicate checks compare keys.
        """

        def norm(v: Any) -> Any:
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        dist = None if self.distance is None else distance_key(self.distance)
        return (self.method, dist, tuple((k, norm(v)) for k, v in self.options))

    @property
    def impl(self) -> RewardMethod:
        """The registered :class:`RewardMethod` of this spec."""
        return get_method(self.method)

    @property
    def label(self) -> str:
        """Column label in tables and figures (``"R_Cham"``, ``"EditGRPO-t0.3"``, ``"G-CARL"``)."""
        return self.impl.label(self)

    @property
    def trains(self) -> bool:
        """Whether this configuration is a GRPO run (``"sft"`` is not)."""
        return self.impl.trains

    @property
    def needs_embedder(self) -> bool:
        """Whether scoring needs the sentence encoder (``fmt`` / ``exact`` do not)."""
        return self.impl.needs_embedder


@dataclass
class MethodScores:
    """What :meth:`RewardMethod.score` returns for one batch of ``n`` completions, arrays of shape ``(n,)``.

    ``content`` is the method's content reward (``total = prompt_weight * (lambda_fmt * fmt + lambda_sem *
    content)``); the section arrays and ``components`` are left ``None`` / empty when the method has none
    (the scorer fills zeros). ``prompt_weight`` (``None`` = 1 everywhere) weights each completion's whole reward,
    format and content, by its prompt (``chamfer_recall_<alpha>_bal<w>``'s stratum weight).
    """

    content: Any
    sem_findings: Any = None
    sem_impression: Any = None
    exact_findings: Any = None
    exact_impression: Any = None
    components: dict = field(default_factory=dict)
    prompt_weight: Any = None


@dataclass(frozen=True)
class TrainOptions:
    """What a method changes in a GRPO run (``None`` = the profile's value / TRL's ``GRPOTrainer``).

    ``trainer`` is a dotted path ``"package.module:Class"`` resolved by :mod:`sdrlib.training`, so the
    rewards layer never imports the training layer.
    """

    trainer: str | None = None
    trainer_kwargs: Mapping[str, Any] = field(default_factory=dict)
    loss_type: str | None = None
    scale_rewards: str | None = None
    learning_rate: float | None = None
    weight_decay: float | None = None


class RewardMethod:
    """Base class of a reward method; subclasses override what differs (module doc).

    Class attributes: ``name`` (registry key and profile section ``grpo.<name>``), ``settings`` (frozen
    dataclass or ``None``), ``order`` (parse order; the distance fallback goes last), ``prefix`` (names
    starting with it are this method's, so a bad one fails with ``grammar``), ``grammar`` (the valid
    names in words), ``trains`` (False only for ``"sft"``), ``needs_embedder``, ``logs_failures`` (log
    ``sem_failed`` / ``truncated`` through TRL), ``scores_exact`` (the breakdown's ``exact`` is R_exact of every
    completion, so the GRPO group statistics need not compute it again).
    """

    name: str = ""
    settings: type | None = None
    order: int = 50
    prefix: str | None = None
    grammar: str = ""
    trains: bool = True
    needs_embedder: bool = True
    logs_failures: bool = False
    scores_exact: bool = False

    # -- names ------------------------------------------------------------------------
    def parse(self, name: str) -> RewardSpec | None:
        """The spec of ``name`` when it is one of this method's names, else ``None``; a name of the
        method's that is unusable raises :class:`RewardError`."""
        return RewardSpec(name, self.name) if name == self.name else None

    def label(self, spec: RewardSpec) -> str:
        """The configuration's column label; :func:`default_label` unless the method names its own."""
        return default_label(spec.name)

    # -- settings ---------------------------------------------------------------------
    def default_settings(self) -> Any:
        return self.settings() if self.settings is not None else None

    def check_settings(self, settings: Any) -> Any:
        """``settings`` (``None`` = the defaults) checked; raise :class:`RewardError` for a bad value."""
        if self.settings is None:
            if settings is not None:
                raise RewardError(f"reward method {self.name!r} takes no settings, got {settings!r}")
            return None
        if settings is None:
            return self.default_settings()
        if not isinstance(settings, self.settings):
            raise RewardError(f"{self.name} settings must be a {self.settings.__name__}, got {type(settings).__name__}")
        return settings

    def default_lambdas(self, settings: Any) -> tuple[float, float] | None:
        """``(lambda_fmt, lambda_sem)`` this method fixes (G-CARL's eq. 14, the controls' ``0, 1``), else
        ``None`` (the profile's). Read through :meth:`lambdas` only."""
        return None

    def lambdas(self, settings: Any, lambda_fmt: Any = None, lambda_sem: Any = None,
                defaults: tuple[Any, Any] = (1.0, 1.0)) -> tuple[Any, Any]:
        """The one owner of a scorer's ``(lambda_fmt, lambda_sem)`` for this method (checked settings given).

        An explicit ``lambda_fmt`` / ``lambda_sem`` (not ``None``) wins; else the weights the method fixes
        (:meth:`default_lambdas`), else ``defaults`` (``1.0, 1.0``; the profile's ``grpo.lambda_fmt`` /
        ``grpo.lambda_sem`` under :meth:`~sdrlib.rewards.RewardScorer.from_profile`). The scorer's
        constructor, ``from_profile`` and :func:`~sdrlib.rewards.trl_reward_functions` all go through here,
        so ``RewardScorer("noise")`` weighs like the profile's run (``0, 1``). Values are checked by the caller.
        """
        base = self.default_lambdas(settings) or defaults
        return (base[0] if lambda_fmt is None else lambda_fmt, base[1] if lambda_sem is None else lambda_sem)

    def check_profile(self, profile: Any) -> str | None:
        """What is wrong with a run profile's settings for this method (one message naming the key path, the value
        and what is allowed), or ``None``. :mod:`sdrlib.config` asks every registered method when a profile loads
        and raises the message as a ``ConfigError``, so a method's own rules (the recall grid, its prompt weights
        under group scaling) live in its module, as a dataset's do (:attr:`sdrlib.data.Dataset.check_profile`)."""
        return None

    def run_key(self, spec: RewardSpec, settings: Any) -> dict:
        """The settings that decide what a run of ``spec`` produces (in its run key)."""
        return {self.name: dataclasses.asdict(settings)} if settings is not None else {}

    # -- scoring ----------------------------------------------------------------------
    def prepare(self, scorer: Any, data: Mapping[str, Any] | None) -> dict:
        """Check the method data given to the scorer; returns the scorer's per-method ``state``."""
        if data:
            raise RewardError(f"reward {scorer.reward!r} takes no data, got keys {sorted(data)}")
        return {}

    def score(self, scorer: Any, valid: list, findings: list[str], impression: list[str], n: int) -> MethodScores:
        """Content reward of the parsed completions ``valid`` (``[(row, Sections)]``) of a batch of ``n``."""
        raise NotImplementedError

    def trl_parts(self, spec: RewardSpec, scorer: Any) -> list[tuple[str, Any, float]]:
        """TRL functions after ``r_fmt``: ``(function name, breakdown -> array, weight factor)``; each
        function's weight is ``lambda_sem * factor``."""
        return []

    def breakdown_logs(self, b: Any) -> list[tuple[str, float]]:
        """Extra ``reward_components/*`` values logged before the bad-completion shares."""
        return []

    # -- training ---------------------------------------------------------------------
    def grpo_data(self, spec: RewardSpec, settings: Any, train_records: Any) -> dict | None:
        """Method data built from the training records for a GRPO run (G-CARL: the sentence bank)."""
        return None

    def train_options(self, spec: RewardSpec, settings: Any, grpo_cfg: Any, embedder: Any) -> TrainOptions:
        return TrainOptions()

    def run_info(self, trainer: Any) -> dict:
        """Extra ``run.json`` entries after training (EditGRPO: edit totals)."""
        return {}


def _check_method(method: RewardMethod) -> None:
    if not isinstance(method, RewardMethod) or not isinstance(method.name, str) or not method.name:
        raise RewardError(f"register_method needs a named RewardMethod, got {method!r}")
    if method.settings is not None and not dataclasses.is_dataclass(method.settings):
        raise RewardError(f"reward method {method.name!r}: settings must be a dataclass, got {method.settings!r}")


#: the built-in methods' modules, imported in this order on the first read of the registry
BUILTIN_METHODS = tuple(f"sdrlib.rewards.methods.{m}"
                        for m in ("sft", "fmt", "control", "exact", "distance", "gcarl", "recall", "editgrpo"))
#: the registered reward methods, by name (:func:`register_method`)
METHODS: Registry[RewardMethod] = Registry("reward method", error=RewardError, builtins=BUILTIN_METHODS,
                                           check=_check_method)


def register_method(method: RewardMethod, *, replace: bool = False) -> RewardMethod:
    """Add ``method`` to the registry (a method module calls this once at import); returns it.

    Registering the same method object again changes nothing; another method under a taken name raises
    :class:`RewardError` unless ``replace=True``; a built-in method is never removed. Example:
    ``register_method(FmtMethod())`` (:mod:`sdrlib.rewards.methods.fmt`)."""
    return METHODS.register(method, replace=replace)


def unregister_method(name: str) -> None:
    """Remove a method (tests that register a toy method clean up with this); built-in ones stay."""
    METHODS.unregister(name)


def registered_methods() -> list[RewardMethod]:
    """The registered methods in parse order."""
    return sorted(METHODS.entries(), key=lambda m: (m.order, m.name))


def get_method(name: str) -> RewardMethod:
    if not isinstance(name, str) or name not in METHODS:
        raise RewardError(f"no reward method {name!r}; registered: {sorted(METHODS)}")
    return METHODS[name]


def settings_sections() -> dict[str, type]:
    """``{method name: settings dataclass}`` of the methods with settings (the profile's ``grpo.<name>``)."""
    return {m.name: m.settings for m in registered_methods() if m.settings is not None}


def reward_names_help() -> str:
    """The valid reward names in words (every method's grammar)."""
    return "; ".join(m.grammar for m in registered_methods() if m.grammar)


def parse_reward(name: Any) -> RewardSpec:
    """Read a reward name into its :class:`RewardSpec`; raise :class:`RewardError` naming the valid names.

    Example: ``parse_reward("chamfer").distance -> "chamfer"``; ``parse_reward("cosine")``,
    ``parse_reward("editgrpo_tau")`` and ``parse_reward("gcarl_x")`` raise.
    """
    if isinstance(name, RewardSpec):
        return name
    if not isinstance(name, str) or not name:
        raise RewardError(f"reward must be a non-empty string, got {name!r}")
    methods = registered_methods()
    for m in methods:
        spec = m.parse(name)
        if spec is not None:
            return spec
        if m.prefix and name.startswith(m.prefix):
            raise RewardError(f"unknown {m.name} configuration {name!r}: use {m.grammar}")
    raise RewardError(f"unknown reward {name!r}: use {reward_names_help()}")


def reward_name_problem(name: Any) -> str | None:
    """Why :func:`parse_reward` refuses ``name``, ending with the valid names when its message lacks them; ``None``
    when it accepts it. Example: ``reward_name_problem("chamfer") -> None``."""
    try:
        parse_reward(name)
    except (KeyError, ValueError, TypeError) as exc:
        valid = reward_names_help()
        return f"{exc}" + ("" if valid in str(exc) else f"; allowed: {valid}")
    return None


def validate_reward_name(name: Any) -> str:
    """``name`` when :func:`parse_reward` accepts it, else :class:`RewardError` (a ``ValueError``)."""
    return parse_reward(name).name


def default_label(name: str) -> str:
    """The label of a configuration whose method names none: ``R_<name>``.

    Example: ``default_label("fmt") -> "R_fmt"``."""
    return f"R_{name}"


def reward_label(name: Any) -> str:
    """The one column label of a configuration in tables and figures: its reward method's
    (:attr:`RewardSpec.label`); a name that is no reward configuration (a baseline column) gets
    :func:`default_label`. Example: ``reward_label("chamfer") -> "R_Cham"``, ``reward_label("sft") -> "SFT"``,
    ``reward_label("editgrpo_tau0.3") -> "EditGRPO-t0.3"``. A name that is not a non-blank string (``""``, ``None``,
    ``3``) raises :class:`RewardError` (it would label a column ``R_`` or ``R_None``), and so does a name a method's
    prefix claims but its grammar refuses (``"editgrpo_tau"``, ``"gcarl_x"``: a misspelt configuration of that
    method, not a baseline column)."""
    if not isinstance(name, (str, RewardSpec)) or (isinstance(name, str) and not name.strip()):
        raise RewardError(f"reward_label({name!r}): a configuration name is a non-empty string (e.g. 'chamfer', "
                          "'sft'); got " + (type(name).__name__ if not isinstance(name, str) else "a blank string"))
    try:
        return parse_reward(name).label
    except RewardError:
        if any(m.prefix and name.startswith(m.prefix) for m in registered_methods()):
            raise
        return default_label(name)


def method_of(name: Any) -> str:
    """The method of a reward name (``"distance"``, ``"editgrpo"``, ...). Example: ``method_of("editgrpo_tau0.3")``."""
    return parse_reward(name).method
