"""Typed run profiles (``configs/{smoke,cpu,paper}.yaml``) with strict validation.

A profile is a YAML file of sections; each section maps onto a frozen dataclass
(:mod:`sdrlib.config._schema`). Loading rejects unknown keys, wrong types and values outside their allowed
range (field constraints in the dataclass metadata, plus a few rules between fields;
distance and reward names are asked of their registries), so a bad profile fails
before any notebook starts, not notebooks later (papermill only *warns* about
unknown parameters). The reward methods' settings are nested sections of ``grpo``
(``grpo.gcarl.*``, ``grpo.editgrpo.*``) built from the method registry (:mod:`sdrlib.rewards.spec`),
with the defaults and constraints each method writes once; so are the datasets' (``data.<dataset>``) and the metric
groups' (``metrics.bertscore.model``, ``metrics.clinical.backend``, ...: ``metrics`` itself keeps ``bootstrap`` and
``allow_substitutes``). A flat key that is a section's key (``metrics.bertscore_model``) is refused naming the
section's key (:data:`MOVED_KEYS`). Every refusal is a :class:`ConfigError` naming the key path,
the value and what is allowed; YAML syntax errors name the file and line, and a key
given twice in one mapping is an error.

A profile may start with ``extends: <other profile>``: a name from ``configs/``
(``extends: cpu``) or a ``.yaml`` path relative to the including file; its sections
are then merged key by key over the other profile. ``name`` (default: the file
stem) becomes a folder under ``paths.runs``, so it must be one safe path component.

``plugins:`` (a list, default empty) names modules imported *before* the profile is checked: importable module
names or ``.py`` paths relative to the profile file. A plugin registers what the profile then names (a distance
family, a dataset, a reward method); one that cannot be imported is a :class:`ConfigError` naming the key and the
entry (:mod:`sdrlib.config._plugins`). A profile that ``extends`` another keeps the other's plugins and adds its own.

Output paths (``paths.*``) are relative to the *output root*: ``$SDR_ROOT`` when
set, else the repository root. A leading ``~`` in any path value (``paths.*``,
``data.root``, encoder / backbone / checkpoint paths, ``$SDR_ROOT``, a profile path)
is the home folder, as in a shell. ``run_all.sh --out DIR`` sets ``SDR_ROOT`` so a
run (or the smoke test) never writes into the checkout.

Layout: :mod:`~sdrlib.config._schema` (the section dataclasses), :mod:`~sdrlib.config._checks` (type, field
and cross-field validation), :mod:`~sdrlib.config._plugins` (the ``plugins`` key), :mod:`~sdrlib.config._tiny`
(the tiny policy's shape, :class:`TinyVLSpec`, whose fields are also the ``sft.tiny_*`` keys),
:mod:`~sdrlib.config._loader` (YAML, ``extends``, overrides, :func:`load_profile`). What this package leaves out: what a profile's values mean to
the notebooks (each consumer reads its own section), and method- or dataset-specific rules (each registered reward
method and dataset checks its own: :meth:`sdrlib.rewards.RewardMethod.check_profile`,
:attr:`sdrlib.data.Dataset.check_profile`).

Example::

    cfg = load_profile("smoke", {"data.n_train": 8})
    cfg.data.n_train  # -> 8
"""

from __future__ import annotations

from sdrlib.config._checks import (API_PROMPTS, CONSTRAINT_KEYS, GRPO_LOSS_TYPES, LR_SCHEDULERS, MOVED_KEYS,
                                   NAME_HELP, NAME_PATTERN, SELECTION_AGGREGATIONS, TINY_VOCAB_MIN, ConfigError, accumulation)
from sdrlib.config._loader import load_profile, profile_names
from sdrlib.config._plugins import import_plugins, plugin_digest
from sdrlib.config._tiny import TinyVLSpec
from sdrlib.config._schema import (DataConfig, DistancesConfig, EmbeddingConfig, GRPOConfig, MetricsConfig,
                                   PathsConfig, Profile, PruningConfig, SelectionConfig, SFTConfig)
from sdrlib.paths import output_root, repo_root

__all__ = ["ConfigError", "Profile", "load_profile", "accumulation", "repo_root", "output_root", "profile_names",
           "import_plugins", "plugin_digest",
           "PathsConfig", "DataConfig", "EmbeddingConfig", "DistancesConfig", "MetricsConfig", "SFTConfig",
           "GRPOConfig", "SelectionConfig", "PruningConfig", "TinyVLSpec", "CONSTRAINT_KEYS", "MOVED_KEYS", "LR_SCHEDULERS", "GRPO_LOSS_TYPES",
           "TINY_VOCAB_MIN", "NAME_PATTERN", "NAME_HELP", "SELECTION_AGGREGATIONS", "API_PROMPTS"]
