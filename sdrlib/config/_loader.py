"""Reading a profile: YAML files, ``extends``, overrides, plugins, then validation.

What it does: :func:`load_profile` finds the file (a name from ``configs/`` or a ``.yaml`` path), reads it with a
strict YAML loader (a key given twice is an error), merges its ``extends`` chain and the caller's dotted overrides,
imports the profile's ``plugins`` (:mod:`sdrlib.config._plugins`) and builds the validated :class:`Profile`
(:mod:`sdrlib.config._checks`). :func:`profile_names` lists the shipped profiles.

What it leaves out: the sections' fields (:mod:`sdrlib.config._schema`) and the rules they must satisfy
(:mod:`sdrlib.config._checks`).
"""

from __future__ import annotations

import os
import re
import typing
from pathlib import Path
from typing import Any

import yaml

from sdrlib.config._checks import NAME_PATTERN, ConfigError, _r
from sdrlib.config._plugins import resolve_plugin_paths
from sdrlib.config._schema import Profile, _profile_from_dict
from sdrlib.paths import repo_root

__all__ = ["load_profile", "profile_names"]


def profile_names() -> list[str]:
    """Names of the profiles shipped in ``configs/``."""
    return sorted(p.stem for p in (repo_root() / "configs").glob("*.yaml"))


# --------------------------------------------------------------------------- files
class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML silently keeps the last)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    """PyYAML's mapping constructor, refusing a key given twice."""
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, typing.Hashable):
            continue  # construct_mapping reports unhashable keys itself
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} appears twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _show(p: Path) -> str:
    try:
        return str(p.relative_to(repo_root()))
    except ValueError:
        return str(p)


def _profile_file(ref: Any, including: Path | None = None) -> Path:
    """The YAML file ``ref`` names.

    A bare name (``cpu``) is ``configs/<name>.yaml``. A ``.yaml`` / ``.yml`` path (a leading
    ``~`` expanded) is taken as is when absolute, else relative to the folder of the including
    file (``extends:``) or, at the top level, to the current folder.
    """
    what = f"{_show(including)}: extends" if including is not None else "profile"  # "profile 'x' not found"
    if isinstance(ref, os.PathLike):
        ref = os.fspath(ref)
    if not isinstance(ref, str) or not ref.strip():
        raise ConfigError(f"{what} {_r(ref)}: expected a profile name ({profile_names()}) or a .yaml path")
    p = Path(os.path.expanduser(ref))
    if p.suffix in (".yaml", ".yml"):
        if not p.is_absolute() and including is not None:
            p = including.parent / p
    elif re.fullmatch(NAME_PATTERN, ref):
        p = repo_root() / "configs" / f"{ref}.yaml"
    else:
        raise ConfigError(f"{what} {_r(ref)} not found: not a profile name; allowed: one of {profile_names()} "
                          "or a path ending in .yaml")
    if not p.is_file():
        state = "is not a file" if p.exists() else "not found"
        raise ConfigError(f"{what} {_r(ref)} {state} (looked for {p}); shipped profiles: {profile_names()}")
    return p.resolve()


def _read_profile_yaml(p: Path, seen: tuple[Path, ...] = ()) -> dict:
    """The raw mapping of the profile file ``p`` with its ``extends`` chain merged in (``seen``: the files that
    include it, for the cycle check); ``name`` defaults to the file stem, ``plugins`` paths made absolute."""
    if p in seen:
        raise ConfigError(f"{_show(p)}: extends itself (cycle {' -> '.join(map(_show, seen + (p,)))})")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{_show(p)}: cannot read the profile ({type(e).__name__}: {e})") from None
    try:
        raw = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        why = " ".join(str(x) for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x) or str(e)
        raise ConfigError(f"{_show(p)}{at}: invalid YAML: {why}") from None
    if raw is None:  # refused like a top-level list: an empty file is more likely a mistake than a wish
        raise ConfigError(f"{_show(p)}: the file is empty (or only comments); allowed: a mapping of sections, "
                          "e.g. 'extends: cpu' for the cpu profile as it is")
    if not isinstance(raw, dict):
        raise ConfigError(f"{_show(p)}: top level must be a mapping of sections, got {type(raw).__name__}")
    has_parent = "extends" in raw
    parent = raw.pop("extends", None)
    raw.setdefault("name", p.stem)
    if "plugins" in raw:  # relative to this file, whichever file extends it
        raw["plugins"] = resolve_plugin_paths(raw["plugins"], p.parent)
    if has_parent:
        base = _read_profile_yaml(_profile_file(parent, including=p), seen + (p,))
        base.pop("name", None)
        plugins = _merged_plugins(base.get("plugins"), raw.get("plugins"))
        raw = _deep_merge(base, raw)
        if plugins is not None:
            raw["plugins"] = plugins
    return raw


def _merged_plugins(base: Any, over: Any) -> Any:
    """``plugins`` of a profile that extends another: the other's, then this file's new ones (a plugin stays
    imported whichever file names it); ``None`` when neither names any, a non-list left to the type check."""
    if over is None or not isinstance(base, list) or not isinstance(over, list):
        return None if over is None and base is None else (over if over is not None else base)
    return base + [x for x in over if x not in base]


def _deep_merge(base: dict, over: dict) -> dict:
    """``base`` with ``over`` merged in key by key (nested mappings merged, anything else replaced); a new dict."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _apply_overrides(raw: dict, overrides: Any) -> dict:
    """``raw`` with each dotted key of ``overrides`` set (``{"data.n_train": 8}``); a new dict. A mapping given for a
    section is merged into it as ``extends:`` merges (``{"sft": {"max_steps": 5}}`` changes ``sft.max_steps`` and
    keeps the profile's other ``sft`` values), never put in its place."""
    if not isinstance(overrides, dict):
        raise ConfigError(f"overrides = {_r(overrides)}: expected a dict of dotted keys to values")
    raw = _deep_merge(raw, {})
    for dotted, value in overrides.items():
        if not isinstance(dotted, str) or not all(dotted.split(".")):
            raise ConfigError(f"override key {_r(dotted)}: expected a dotted key such as 'data.n_train'")
        keys = dotted.split(".")
        node = raw
        for k in keys[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {dotted!r}: {k!r} is not a section")
        old = node.get(keys[-1])
        node[keys[-1]] = _deep_merge(old, value) if isinstance(value, dict) and isinstance(old, dict) else value
    return raw


def load_profile(name_or_path: str = "cpu", overrides: dict[str, Any] | None = None) -> Profile:
    """Load, merge and validate a profile.

    Parameters
    ----------
    name_or_path : str
        A profile name from ``configs/`` (``smoke``, ``cpu``, ``paper``) or a path to a YAML file.
        ``extends:`` inside a file takes a profile name or a ``.yaml`` path relative to that file.
    overrides : dict, optional
        Dotted keys to values, e.g. ``{"data.n_train": 8, "seed": 1}``; validated like the file. A mapping given
        for a section (``{"sft": {"max_steps": 5}}``) is merged into the profile's section.

    Raises
    ------
    ConfigError
        Missing, unreadable or empty file, invalid YAML (file and line), a top level that is not a
        mapping, a cyclic ``extends``, a ``~`` that cannot be expanded, an unknown
        key, a wrong type, a value outside its allowed range (the registries decide distance and
        reward names), or a plugin that cannot be imported; the message names the key path, the value and
        what is allowed.
    """
    src = _profile_file(name_or_path)
    raw = _read_profile_yaml(src)
    if overrides is not None:
        raw = _apply_overrides(raw, overrides)
        if "plugins" in overrides:  # an override's .py paths are relative to the current folder
            raw["plugins"] = resolve_plugin_paths(raw["plugins"], Path.cwd())
    try:
        prof = _profile_from_dict(raw)  # the plugins first, then every field, then the rules between fields
    except ConfigError as e:
        raise ConfigError(f"profile {_r(raw.get('name', src.stem), 40)} ({_show(src)}): {e}") from None
    return prof
