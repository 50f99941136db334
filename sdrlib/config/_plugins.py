"""The profile key ``plugins``: user modules imported before the profile is checked.

A plugin is a module that registers something the profile then names: a distance family
(:func:`sdrlib.distances.registry.register_family`), a dataset (:func:`sdrlib.data.register_dataset`), a reward
method (:func:`sdrlib.rewards.register_method`). Importing the module is all this key does, so the module registers
at import time. Each entry is an importable module name (``my_lab.sdr_plugin``) or a path to a ``.py`` file
(a leading ``~`` expanded), relative to the profile file that lists it (:mod:`sdrlib.config._loader` makes it
absolute when the file is read, so the profile's value holds absolute paths and a worker process that rebuilds the
profile imports the same files). A ``.py`` file is imported once per process, under a module name made from its
path; a module name is imported with :func:`importlib.import_module` (Python caches it).

**What decides a plugin** (:func:`plugin_digest`, the run key's ``plugins``): a ``.py`` path's file; a module
name's whole top-level package folder when the module lives in a package (``mylab.plugin`` -> every file of
``mylab/``, so a helper module the plugin imports, ``mylab/kern.py``, is in it), else the module's file. A plugin
whose source changed after this process imported it is a :class:`~sdrlib.config.ConfigError` at the next import
(its registrations are the old code's while a run key would hash the new code): restart the process or the
notebook kernel to load the edited plugin.

What it leaves out: no sandbox (a plugin is code the user chose to run, like the profile's own notebooks), no
unloading or re-registering in one process, no entry-point discovery; a single-file plugin's helpers outside a
package (a sibling file it imports by a top-level name) are not hashed: put plugin and helpers in one package. A
plugin that cannot be imported (not found, or it raises) is a
:class:`~sdrlib.config.ConfigError` naming the key and the entry.

Example::

    import_plugins(["json"], "plugins")   # -> [<module 'json'>]
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from sdrlib.config._checks import ConfigError, _check_type

__all__ = ["import_plugins", "resolve_plugin_paths", "plugin_digest"]

#: an importable dotted module name
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _is_file_ref(ref: str) -> bool:
    return ref.endswith(".py")


def resolve_plugin_paths(refs: Any, folder: Path) -> Any:
    """``refs`` with each relative ``.py`` path made absolute against ``folder`` (the profile file's folder) and a
    leading ``~`` expanded; module names and anything that is not a list of strings are returned as they are (the
    type check of :func:`import_plugins` names the problem).
    Example: ``resolve_plugin_paths(["p.py", "pkg.mod"], Path("/cfg")) -> ["/cfg/p.py", "pkg.mod"]``."""
    if not isinstance(refs, list):
        return refs
    out = []
    for ref in refs:
        if isinstance(ref, str) and _is_file_ref(ref):
            p = Path(os.path.expanduser(ref))
            ref = str(p if p.is_absolute() else (folder / p).resolve())
        out.append(ref)
    return out


def tree_digest(folder: Path) -> str:
    """sha256 over every file under ``folder``: relative paths and bytes, sorted, ``__pycache__`` and ``*.pyc`` left
    out (the algorithm of :func:`sdrlib.training.runkeys.source_digest`)."""
    h = hashlib.sha256()
    for f in sorted(q for q in Path(folder).rglob("*") if q.is_file() and "__pycache__" not in q.parts
                    and q.suffix != ".pyc"):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def plugin_digest(ref: str) -> str:
    """sha256 of what decides plugin ``ref`` (module doc): a ``.py`` file's bytes, the top-level package folder of
    a module that lives in a package (:func:`tree_digest`), else the module file's bytes; ``"missing"`` when none
    is found. Example: ``plugin_digest("mylab.plugin")`` changes when ``mylab/kern.py`` is edited."""
    if _is_file_ref(ref):
        path = Path(os.path.expanduser(ref))
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
    try:
        top = importlib.util.find_spec(ref.split(".")[0])
        spec = importlib.util.find_spec(ref) if "." in ref else top
    except (ImportError, ValueError):
        return "missing"
    locations = list(top.submodule_search_locations or []) if top is not None else []
    if locations:  # a package: every file of it, helpers included
        return tree_digest(Path(locations[0]))
    origin = Path(spec.origin) if spec is not None and spec.origin else None
    return hashlib.sha256(origin.read_bytes()).hexdigest() if origin is not None and origin.is_file() else "missing"


#: the digest of each plugin entry when this process imported it (a later import of changed source is refused)
_LOADED: dict[str, str] = {}


def _file_module_name(path: Path) -> str:
    """The module name a ``.py`` plugin file is imported under (one per path)."""
    digest = hashlib.sha1(str(path).encode("utf-8")).hexdigest()[:12]
    return f"sdr_plugin_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}_{digest}"


def _import_file(path: Path) -> ModuleType:
    """The module of the ``.py`` file at ``path``, executed once per process (kept in ``sys.modules``)."""
    name = _file_module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"not a Python module file: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)  # a later load tries again instead of finding half a module
        raise
    return module


def import_plugins(refs: Any, where: str = "plugins") -> list[ModuleType]:
    """Import every plugin of ``refs`` (module names or absolute ``.py`` paths, see the module doc) in order.

    Parameters
    ----------
    refs : list of str
        The profile's ``plugins`` value (``None`` = no plugins).
    where : str
        The key path used in messages.

    Returns
    -------
    list of module
        The imported modules, in the order given.

    Raises
    ------
    ConfigError
        ``refs`` not a list of strings, an entry that is neither a module name nor a ``.py`` path, a file that does
        not exist, or a module that cannot be imported (not found, or its import raises); names ``where[i]`` and the
        entry.
    """
    if refs is None:
        return []
    refs = _check_type(refs, list[str], where)
    modules = []
    for i, ref in enumerate(refs):
        key = f"{where}[{i}]"
        if _is_file_ref(ref):
            path = Path(os.path.expanduser(ref))
            if not path.is_file():
                raise ConfigError(f"{key} = {ref!r}: no such file; allowed: an importable module name or a .py "
                                  "path relative to the profile file")
            load = lambda path=path: _import_file(path)  # noqa: E731
        elif _MODULE.fullmatch(ref):
            load = lambda ref=ref: importlib.import_module(ref)  # noqa: E731
        else:
            raise ConfigError(f"{key} = {ref!r}: not a module name or a .py path; allowed: an importable module "
                              "name (pkg.module) or a path ending in .py")
        now = plugin_digest(ref)
        cached = (_file_module_name(Path(os.path.expanduser(ref))) if _is_file_ref(ref) else ref) in sys.modules
        if cached and _LOADED.get(ref, now) != now:
            raise ConfigError(f"{key} = {ref!r}: the plugin's source changed since this process imported it; its "
                              "registrations are still the old code's while a run key would hash the new code. "
                              "Restart the Python process (the notebook kernel) to load the edited plugin")
        try:
            modules.append(load())
        except (Exception, SystemExit) as exc:  # a user's module: whatever it raises (sys.exit too), named
            raise ConfigError(f"{key} = {ref!r}: cannot import the plugin ({type(exc).__name__}: {exc})") from exc
        if not cached or ref not in _LOADED:
            _LOADED[ref] = now
    return modules
