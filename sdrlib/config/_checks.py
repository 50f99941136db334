"""Validation of a profile's values: types, field constraints and the rules between fields.

What it does: :func:`_build` turns a mapping into a section dataclass, checking each value's type and the field
constraints written in the dataclass metadata (:data:`CONSTRAINT_KEYS`); :func:`_check_profile` checks the rules
that involve several fields, the dataset's own rules (:attr:`sdrlib.data.Dataset.check_profile`) and each reward
method's (:meth:`sdrlib.rewards.RewardMethod.check_profile`). The allowed values (schedulers, losses, aggregations,
prompts, the profile name pattern) are constants here. Distance and reward names are asked of their registries.

What it leaves out: the dataclasses themselves (:mod:`sdrlib.config._schema`) and reading files, ``extends``,
overrides and plugins (:mod:`sdrlib.config._loader`). Every refusal is a :class:`ConfigError` naming the key path,
the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from typing import Any

from sdrlib.data import get_dataset
from sdrlib.distances import registry
from sdrlib.errors import SDRError
from sdrlib.rewards import parse_reward, registered_methods, reward_name_problem

class ConfigError(SDRError, ValueError):
    """A profile file or override is malformed (unknown key, wrong type, value out of range, missing file)."""


# --------------------------------------------------------------------------- constraints
# Field constraints sit in ``dataclasses.field(metadata=...)`` next to the help text and are
# enforced by ``_build`` right after the type check, so a bad value fails when the profile is
# loaded (before any notebook starts), with its key path, value and allowed range:
#   "min" / "max"  inclusive bounds            "gt"        exclusive lower bound
#   "choices"      allowed values              "pattern"   regex the whole string must match
#                                              "pattern_help"  how the pattern reads in a message
#   "nonempty"     no "" or []                 "unique"    no repeated list items (compared by "key")
#   "key"          canonical key of an item for "unique": ``_reward_key`` / ``_distance_key`` (one
#                  reward or distance setting spelt twice, ``sinkhorn_0.1`` / ``sinkhorn_0.10``, repeats)
#   "each"         validator(item, where) for every list item (the distance / reward registries)
#   "finite"       floats must be finite (also inside lists) unless this is False
#   "path"         a file or folder (or a name): a leading ``~`` / ``~user`` is expanded
#                  (os.path.expanduser) when the profile loads; one that cannot be is refused
# Constraints that involve several fields are in ``_check_profile``.
CONSTRAINT_KEYS = frozenset({"min", "max", "gt", "choices", "pattern", "pattern_help", "nonempty", "unique",
                             "key", "each", "finite", "path"})

#: ``sft.lr_scheduler``: transformers ``SchedulerType`` values that need no ``lr_scheduler_kwargs``
LR_SCHEDULERS: tuple[str, ...] = ("linear", "cosine", "cosine_with_restarts", "polynomial", "constant",
                                  "constant_with_warmup", "inverse_sqrt")
#: ``grpo.loss_type``: TRL 1.16 losses usable with token-level importance sampling (the default)
GRPO_LOSS_TYPES: tuple[str, ...] = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo")
#: smallest tiny-policy vocabulary: 256 byte symbols + special and template tokens
#: (``sdrlib.models.train_tokenizer`` refuses less; kept equal by a test, importing models here costs seconds)
TINY_VOCAB_MIN = 267
#: a profile ``name`` becomes a folder under ``paths.runs``: one safe path component
NAME_PATTERN = r"(?!\.{1,2}$)[A-Za-z0-9_.-]{1,128}"
NAME_HELP = "1-128 of A-Z a-z 0-9 _ . - and not '.' or '..' (one path component)"


def _distance_setting(name: str, where: str) -> None:
    """Refuse a distance name the registry's own parser refuses (names and ``family_value`` settings)."""
    try:
        registry.get(name)
    except KeyError:
        detail = ""
    except (ValueError, TypeError, SDRError) as exc:
        detail = f" ({exc})"
    else:
        return
    raise ConfigError(f"{where} = {_r(name)} is not a distance setting{detail}; allowed: "
                      f"{registry.available_distances()} or family_value (sinkhorn_<eps>, uot_<tau>, gw_<eps>, "
                      "hung_pen_<alpha>, partial_<rho>)")


def _reward_name(name: str, where: str) -> None:
    """Refuse a reward configuration :func:`sdrlib.rewards.parse_reward` refuses (its message names the valid ones)."""
    problem = reward_name_problem(name)
    if problem is not None:
        raise ConfigError(f"{where} = {_r(name)} is not a reward configuration: {problem}")


def _distance_key(name: Any) -> Any:
    """The setting a distance name denotes (:func:`sdrlib.distances.registry.distance_key`); the name itself
    when the registry refuses it (``"each"`` then names the problem)."""
    try:
        return ("distance", registry.distance_key(name))
    except (KeyError, ValueError, TypeError):
        return name


def _reward_key(name: Any) -> Any:
    """The reward a configuration name denotes (:attr:`sdrlib.rewards.RewardSpec.key`; ``"sft"`` included);
    the name itself when the parser refuses it."""
    try:
        return ("reward", parse_reward(name).key)
    except (KeyError, ValueError, TypeError):
        return name


_UNIQUE_DISTANCES = {"unique": True, "key": _distance_key, "each": _distance_setting}
_UNIQUE_REWARDS = {"unique": True, "key": _reward_key, "each": _reward_name}

#: keys that sit in an extension's own section: the flat key -> its key in the section (``metrics.<group>``, the
#: metric group's settings dataclass). A profile or ``--set`` naming the flat key is refused with the section's key.
MOVED_KEYS: dict[str, str] = {
    "metrics.bertscore": "metrics.bertscore.enabled",
    "metrics.bertscore_model": "metrics.bertscore.model",
    "metrics.bertscore_batch_size": "metrics.bertscore.batch_size",
    "metrics.device": "metrics.bertscore.device",
    "metrics.clinical_backend": "metrics.clinical.backend",
    "metrics.wordnet_dir": "metrics.meteor.wordnet_dir",
    "metrics.comet_model": "metrics.comet.model",
}


def _moved(old: str, value: Any) -> ConfigError:
    """The refusal of the flat key ``old`` (:data:`MOVED_KEYS`), naming its key in the section and how to write it."""
    new = MOVED_KEYS[old]
    if isinstance(value, bool) or value is None:
        shown = {True: "true", False: "false", None: "null"}[value]
    else:
        shown = value if isinstance(value, (str, int, float)) else "<value>"
    return ConfigError(f"{old} = {_r(value)}: not a key here; allowed: {new} (a metric group's options are in its "
                       f"own section, metrics.<group>), e.g. --set {new}={shown}")


#: ``selection.aggregations``: how eq. (8) aggregates a candidate's distances to the N bank reports
SELECTION_AGGREGATIONS: tuple[str, ...] = ("min", "avg", "knn")
#: ``selection.api_prompt`` values (SDR paper app. B)
API_PROMPTS: tuple[str, ...] = ("p1", "p2")


def _aggregation(name: str, where: str) -> None:
    if name not in SELECTION_AGGREGATIONS:
        raise ConfigError(f"{where} = {_r(name)}: not an aggregation; allowed: one of {list(SELECTION_AGGREGATIONS)}")


def _fraction(value: float, where: str) -> None:
    if not 0.0 < value < 1.0:
        raise ConfigError(f"{where} = {_r(value)}: out of range; allowed: a fraction in (0, 1)")


def _nonneg(value: int, where: str) -> None:
    if value < 0:
        raise ConfigError(f"{where} = {_r(value)}: out of range; allowed: >= 0")


def _loopback_url(url: str) -> bool:
    from urllib.parse import urlparse

    host = urlparse(url).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1")


# --------------------------------------------------------------------------- values
# --------------------------------------------------------------------------- validation
def _r(value: Any, limit: int = 80) -> str:
    """``repr`` cut to ``limit`` characters (a message stays one readable line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _check_type(value: Any, tp: Any, where: str, finite: bool = True) -> Any:
    origin = typing.get_origin(tp)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} = {_r(value)}: expected a number, got {type(value).__name__}; "
                              "note that YAML reads 1e-5 as a string, write 1.0e-5")
        try:
            out = float(value)
        except OverflowError:
            raise ConfigError(f"{where} = {_r(value)}: too large for a float; allowed: a finite number") from None
        if finite and not math.isfinite(out):
            raise ConfigError(f"{where} = {_r(value)}: not a finite number; allowed: a finite number")
        return out
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} = {_r(value)}: expected an integer, got {type(value).__name__}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} = {_r(value)}: expected true/false")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} = {_r(value)}: expected a string, got {type(value).__name__}")
        if "\x00" in value:  # no name, path or option legitimately holds one; os calls would crash on it
            raise ConfigError(f"{where} = {_r(value)}: contains a NUL character; allowed: text without NUL")
        return value
    if origin is list:
        (inner,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise ConfigError(f"{where} = {_r(value)}: expected a list, got {type(value).__name__}")
        return [_check_type(v, inner, f"{where}[{i}]", finite) for i, v in enumerate(value)]
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _check_type(value, a, where, finite)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError("; ".join(errors))
    raise ConfigError(f"{where}: unsupported field type {tp!r}")  # pragma: no cover


def _allowed_range(meta: dict) -> str:
    """``meta``'s numeric bounds in words, e.g. ``">= 1"``, ``"> 0"``, ``"in [0, 1]"``."""
    lo, hi, gt = meta.get("min"), meta.get("max"), meta.get("gt")
    if lo is not None and hi is not None:
        return f"in [{lo}, {hi}]"
    parts = [f">= {lo}" if lo is not None else "", f"> {gt}" if gt is not None else "",
             f"<= {hi}" if hi is not None else ""]
    return " and ".join(p for p in parts if p)


def _same(v: Any) -> Any:
    return v


def _check_constraints(value: Any, meta: Any, where: str) -> None:
    """Enforce a field's metadata constraints (see CONSTRAINT_KEYS) on its type-checked value."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi, gt = meta.get("min"), meta.get("max"), meta.get("gt")
        if (lo is not None and value < lo) or (hi is not None and value > hi) or (gt is not None and value <= gt):
            raise ConfigError(f"{where} = {_r(value)}: out of range; allowed: {_allowed_range(meta)}")
    if "choices" in meta:
        choices = meta["choices"]() if callable(meta["choices"]) else meta["choices"]  # a registry's, as of now
        if value not in choices:
            raise ConfigError(f"{where} = {_r(value)}: not a valid choice; allowed: one of {list(choices)}")
    if "pattern" in meta and not re.fullmatch(meta["pattern"], value):
        raise ConfigError(f"{where} = {_r(value)}: not allowed; allowed: "
                          f"{meta.get('pattern_help', 'a match of ' + meta['pattern'])}")
    if meta.get("nonempty") and len(value) == 0:
        raise ConfigError(f"{where} = {_r(value)}: must not be empty; allowed: "
                          + ("at least one item" if isinstance(value, list) else "a non-empty string"))
    if meta.get("unique"):
        keys = [meta.get("key", _same)(v) for v in value]
        dupes = sorted({str(v) for v, k in zip(value, keys) if keys.count(k) > 1})
        if dupes:
            also = " (one setting spelt twice)" if len(dupes) > len({k for k in keys if keys.count(k) > 1}) else ""
            raise ConfigError(f"{where} = {_r(value)}: repeats {dupes}{also}; allowed: each item once")
    if "each" in meta:
        for i, v in enumerate(value):
            try:
                meta["each"](v, f"{where}[{i}]")
            except ConfigError:
                raise
            except ValueError as exc:  # a reward method's own check (its settings live below this layer)
                raise ConfigError(f"{where}[{i}] = {_r(v)}: {exc}") from None


def _section_type(tp: Any) -> Any:
    """The class a section field is built as: a section class with a ``_section_class()`` hook is built as the class
    it returns (the ``grpo`` section: :class:`GRPOConfig` plus one nested section per reward method with settings,
    made when the profile loads), any other type is itself."""
    hook = getattr(tp, "_section_class", None) if dataclasses.is_dataclass(tp) else None
    return hook() if callable(hook) else tp


def _build(cls: type, values: Any, where: str) -> Any:
    """An instance of the section dataclass ``cls`` from a mapping, every field type- and constraint-checked."""
    if not isinstance(values, dict):
        raise ConfigError(f"{where or 'profile'} = {_r(values)}: expected a mapping of keys to values")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(map(str, set(values) - names))  # YAML may give non-string keys (1:, null:)
    for k in unknown:
        if _join(where, k) in MOVED_KEYS:
            raise _moved(_join(where, k), values[k])
    if unknown:
        raise ConfigError(f"{where or 'top level'}: unknown key(s) {unknown}; allowed: {sorted(names)}")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{_join(where, f.name)}: missing")
            continue
        tp = _section_type(hints[f.name])
        v = values[f.name]
        key = _join(where, f.name)
        if dataclasses.is_dataclass(tp):
            if not isinstance(v, dict) and key in MOVED_KEYS:  # metrics.bertscore: false, a section's name now
                raise _moved(key, v)
            kwargs[f.name] = _build(tp, v, key)
        else:
            kwargs[f.name] = _check_type(v, tp, key, finite=f.metadata.get("finite", True))
            if f.metadata.get("path") and kwargs[f.name] is not None:  # a path field may allow null
                kwargs[f.name] = _expand_user(kwargs[f.name], key)
            _check_constraints(kwargs[f.name], f.metadata, key)
    return cls(**kwargs)


def _expand_user(value: str, where: str) -> str:
    """``value`` with a leading ``~`` / ``~user`` expanded; :class:`ConfigError` when it cannot be.

    Without this ``paths.results: ~/sdr/results`` became a folder literally named ``~`` under
    the output root. Example: ``_expand_user("~/data", "data.root") -> "/home/me/data"``.
    """
    if not value.startswith("~"):
        return value
    out = os.path.expanduser(value)
    if out.startswith("~"):
        raise ConfigError(f"{where} = {_r(value)}: cannot expand {value.split('/')[0]!r} (no such user, or HOME "
                          "unset); allowed: an absolute path, a path relative to the output root, or ~/...")
    return out




# --------------------------------------------------------------------------- rules between fields
def _check_profile(p: Any) -> None:
    """Constraints between fields (each field alone is checked by ``_build``), in this order: the dataset's, the
    ``grpo`` section's and the reward methods', the policies named, the API settings, the pruning settings, the
    policy's shape. The first problem raises :class:`ConfigError`."""
    _check_data(p)
    _check_grpo(p)
    _check_policies(p)
    _check_api(p)
    _check_pruning_names(p)
    _check_policy_shape(p)


def _raise_problem(problem: Any, who: str) -> None:
    """A registered check's answer: ``None`` (or ``""``) for no problem, else a message; anything else (``True``,
    a number, a list) is a bug of that check, named as such rather than printed as a problem."""
    if problem is None or problem == "":
        return
    if not isinstance(problem, str):
        raise ConfigError(f"{who} returned {problem!r} ({type(problem).__name__}); it must return None (no "
                          "problem) or a message saying what is wrong with the profile")
    raise ConfigError(problem)


def accumulation(section: Any, processes: int, key: str) -> int:
    """Gradient accumulation steps of a training section (``sft`` or ``grpo``, named by ``key``) on ``processes``.

    With ``effective_batch`` 0 it is the section's ``grad_accum``; otherwise ``effective_batch / (batch_size x
    processes)``, so the global batch per optimizer step is the profile's whatever the number of GPUs.
    Raises :class:`ConfigError` when that is not a whole number, naming the per-device batch sizes that work.

    Example: GRPO ``batch_size`` 8, ``effective_batch`` 64 -> 8 on 1 process, 4 on 2, 1 on 8.
    ``processes`` must be a whole number >= 1 (``True``, ``2.5``, ``"2"``, 0 raise :class:`ConfigError`).
    """
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ConfigError(f"{key}: processes = {processes!r}: not a number of training processes; allowed: a whole "
                          "number >= 1 (1 without a launcher, N under accelerate launch --num_processes N)")
    target = section.effective_batch
    if not target:
        return section.grad_accum
    per_step = section.batch_size * processes
    if target % per_step:
        fits = [b for b in range(1, target // processes + 1) if (target // processes) % b == 0] \
            if target % processes == 0 else []
        allowed = (f"a {key}.batch_size that divides {target // processes} ({', '.join(map(str, fits))})" if fits
                   else f"a number of processes that divides {target}")
        raise ConfigError(f"{key}.effective_batch = {target} is not {key}.batch_size x processes x a whole "
                          f"grad_accum ({section.batch_size} x {processes} = {per_step}); allowed: {allowed}, "
                          f"e.g. --set {key}.batch_size=N")
    return target // per_step


def _check_data(p: Any) -> None:
    """A real dataset's ``data.root`` and the dataset's own rules (:attr:`sdrlib.data.Dataset.check_profile`)."""
    d = p.data
    ds = get_dataset(d.source)
    if ds.real and not d.root.strip():
        raise ConfigError(f"data.root = {d.root!r}: data.source = {d.source!r} needs the folder of your download; "
                          "allowed: a non-empty path (see docs/real_data.md)")
    problem = ds.check_profile(p) if ds.check_profile is not None else None
    _raise_problem(problem, f"dataset {ds.name!r}'s check_profile")


def _check_grpo(p: Any) -> None:
    """Whole groups per generation batch, ablations not among the rewards, and each registered reward method's
    rules (:meth:`sdrlib.rewards.RewardMethod.check_profile`, e.g. the recall grid and its prompt weights)."""
    g = p.grpo
    accumulation(p.sft, 1, "sft")  # an effective batch one process can reach (others: at launch)
    accum = accumulation(g, 1, "grpo")
    # TRL groups the completions of one generation batch (batch_size x grad_accum on one process)
    # by prompt, so it must hold whole groups of num_generations.
    if (g.batch_size * accum) % g.num_generations:
        raise ConfigError(f"grpo.batch_size x grpo.grad_accum = {g.batch_size} x {accum}: not a multiple "
                          f"of grpo.num_generations = {g.num_generations}; allowed: a product divisible by "
                          "num_generations (whole groups of completions)")
    both = [r for r in g.ablations if _reward_key(r) in {_reward_key(x) for x in g.rewards}]
    if both:
        raise ConfigError(f"grpo.ablations = {both}: already in grpo.rewards; allowed: configurations not in "
                          "grpo.rewards (each runs once, at grpo.ablation_seeds seeds)")
    for method in registered_methods():
        _raise_problem(method.check_profile(p), f"reward method {type(method).__name__}'s check_profile")


def _check_policies(p: Any) -> None:
    """``pruning.p`` below 1 and every policy named by ``selection`` / ``pruning`` trained by this profile."""
    g, pr = p.grpo, p.pruning
    if not pr.p < 1:
        raise ConfigError(f"pruning.p = {pr.p!r}: out of range; allowed: a fraction in (0, 1)")
    bad_sel = [x for x in p.selection.policies if x != "sft" and x not in g.rewards]
    if bad_sel:
        raise ConfigError(f"selection.policies = {bad_sel}: not trained by this profile; allowed: 'sft' or one of "
                          f"grpo.rewards = {list(g.rewards)} (empty = all of them)")
    bad = [x for x in pr.policies if x != "sft" and x not in g.rewards]
    if bad:
        raise ConfigError(f"pruning.policies = {bad}: not trained by this profile; allowed: 'sft' or one of "
                          f"grpo.rewards = {list(g.rewards)}")


def _check_api(p: Any) -> None:
    """``selection.api_prompt``, the served policy and its loopback URL."""
    g, sc = p.grpo, p.selection
    prompts = sc.api_prompts
    bad_prompts = [x for x in prompts if x not in API_PROMPTS]
    if not prompts or bad_prompts or len(set(prompts)) < len(prompts):
        raise ConfigError(f"selection.api_prompt = {_r(sc.api_prompt)}: not allowed; allowed: one of "
                          f"{list(API_PROMPTS)} or a list of them, each once")
    if sc.api_serve and sc.api_serve != "sft" and sc.api_serve not in g.rewards:
        raise ConfigError(f"selection.api_serve = {sc.api_serve!r}: not trained by this profile; allowed: '', 'sft' "
                          f"or one of grpo.rewards = {list(g.rewards)}")
    if sc.api_serve and sc.api_base_url and not _loopback_url(sc.api_base_url):
        raise ConfigError(f"selection.api_base_url = {sc.api_base_url!r}: selection.api_serve serves on loopback only; "
                          "allowed: empty (an ephemeral port) or http://127.0.0.1:<port>/v1")


def _check_pruning_names(p: Any) -> None:
    """``pruning.live_names`` within ``pruning.names``, and no setting that reads finding presence."""
    pr = p.pruning
    extra = [x for x in pr.live_names if x not in pr.names]
    if extra:
        raise ConfigError(f"pruning.live_names = {extra}: not in pruning.names; allowed: a subset of {list(pr.names)}")
    presence = [x for x in pr.names if registry.get(x).needs_presence]
    if presence:  # the pruning scorer embeds partial candidates only; a failure here beats one in notebook 06
        raise ConfigError(f"pruning.names = {presence}: these settings read per-sentence finding presence, which the "
                          "pruning scorer (sdrlib.pruning.BankScorer) does not compute for partial candidates; "
                          "allowed: plain settings (no _neg, not chamfer_recall_<alpha>)")


def _check_policy_shape(p: Any) -> None:
    """Parallel GRPO workers for the tiny policy only, and the tiny policy's shape rules
    (:class:`sdrlib.config.TinyVLSpec`, plus the vision tower's head split)."""
    g, s = p.grpo, p.sft
    if g.workers > 1 and s.policy != "tiny":
        raise ConfigError(f"grpo.workers = {g.workers}: parallel GRPO runs are for the tiny CPU policy (one thread "
                          f"each); sft.policy = {s.policy!r} trains on GPUs, one run at a time (several GPUs: "
                          "accelerate launch); allowed: 1")
    if s.processes > 1 and s.policy != "tiny":
        raise ConfigError(f"sft.processes = {s.processes}: side-by-side CPU training processes are for the tiny "
                          f"policy; sft.policy = {s.policy!r} trains on GPUs (several GPUs: accelerate launch "
                          "-m sdrlib.training, docs/running.md); allowed: 1")
    if s.policy != "tiny":
        return
    if s.tiny_heads % s.tiny_kv_heads:
        raise ConfigError(f"sft.tiny_heads = {s.tiny_heads}: not a multiple of sft.tiny_kv_heads = "
                          f"{s.tiny_kv_heads}; allowed: a multiple of tiny_kv_heads")
    if s.tiny_head_dim % 2:
        raise ConfigError(f"sft.tiny_head_dim = {s.tiny_head_dim}: odd (rotary embedding); allowed: even, >= 2")
    if s.tiny_vision_hidden_size % s.tiny_vision_heads:
        raise ConfigError(f"sft.tiny_vision_hidden_size = {s.tiny_vision_hidden_size}: not a multiple of "
                          f"sft.tiny_vision_heads = {s.tiny_vision_heads}; allowed: a multiple of "
                          "tiny_vision_heads")
    cell = s.tiny_patch_size * s.tiny_merge_size
    if s.tiny_image_size % cell:
        raise ConfigError(f"sft.tiny_image_size = {s.tiny_image_size}: not a multiple of sft.tiny_patch_size x "
                          f"sft.tiny_merge_size = {cell}; allowed: a multiple of {cell}")
