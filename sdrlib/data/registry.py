"""The datasets a profile can name (``data.source``): one registration per dataset.

A :class:`Dataset` carries everything the rest of the package asks of a dataset: its loader (``load(cfg, split)``,
:func:`sdrlib.data.load_split`), whether it is a download under ``data.root`` (the profile check of
:mod:`sdrlib.config` and the run's preflight in :mod:`sdrlib.runner`, which names ``title`` when the folder is
missing; :func:`sdrlib.data.download.real_root` gives the folder) and, optionally, how to write a stand-in in its
layout (:mod:`sdrlib.data.standin`: ``python -m sdrlib.data.standin NAME OUT_DIR`` and ``data.standin_n``). Each
dataset module registers its own (:mod:`sdrlib.data.mimic`, :mod:`~sdrlib.data.rexgradient`,
:mod:`~sdrlib.data.iuxray`; SynthCXR in :mod:`sdrlib.data`), so a new dataset is one module that calls
:func:`register_dataset` and is imported before the profile is loaded (``tests/data/toy_dataset.py`` is such a
module, run end to end by ``tests/data/test_data_registry.py``).

A stand-in writer is called as ``writer(root, drafts, seed, image_size, defect, tick)`` with SynthCXR drafts of
the studies (:mod:`sdrlib.data._standin`; the built-in writers sit beside their loaders, e.g.
:mod:`sdrlib.data._mimic_standin`) and returns ``(studies, defect_study)``: the
:class:`~sdrlib.data.standin.StandInStudy` rows it wrote and the study a ``defect`` damaged (``None`` without one).

Left out: loading (each dataset's module), the download folder (:mod:`sdrlib.data.download`) and writing stand-ins
(:mod:`sdrlib.data.standin`); this module imports none of them.

Example::

    from sdrlib.data.registry import get_dataset
    get_dataset("mimic").title          # -> "MIMIC-CXR"
    get_dataset("synthcxr").name        # -> "synthetic" (an alias)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sdrlib.data.records import DataError

__all__ = ["Dataset", "register_dataset", "unregister_dataset", "get_dataset", "data_sources", "dataset_names",
           "standin_layouts", "deferred"]


@dataclass(frozen=True)
class Dataset:
    """One dataset a profile can name.

    ``name``: the ``data.source`` value; ``aliases``: other values meaning the same; ``title``: how messages name it;
    ``load(cfg, split) -> (list[Record], LoadReport)``; ``real``: a download under ``data.root`` (False: generated
    on demand, no folder needed); ``standin``: the layout writer (module doc), ``None`` when there is none;
    ``standin_code``: the stand-in's random stream for this layout (fixed once chosen: changing it changes every
    stand-in); ``standin_splits``: the stand-in writes train / val / test (False: every study as train, the loader
    splits them, as IU-Xray's by uid hash); ``standin_unpack(root)``: a step after writing that a download needs
    before loading (ReXGradient's image archive), ``None`` when there is none; ``check_profile(profile)``: what is
    wrong with a profile's settings for this dataset (one message, or ``None``), checked when the profile loads
    (:mod:`sdrlib.config` raises it as a ``ConfigError``).
    """

    name: str
    title: str
    load: Callable[[Any, str], tuple]
    real: bool = True
    aliases: tuple[str, ...] = ()
    standin: Callable[..., tuple] | None = None
    standin_code: int = 0
    standin_splits: bool = True
    standin_unpack: Callable[[Path], Any] | None = None
    check_profile: Callable[[Any], str | None] | None = None


_DATASETS: dict[str, Dataset] = {}


def deferred(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported when first called: how a dataset module names a function of a module that must not
    load with the package (:mod:`sdrlib.data.standin` runs as ``python -m``, and runpy warns about a module the
    package already imported). Example: ``deferred("sdrlib.data.standin", "write_standin")``."""
    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


#: the names registered by sdrlib itself (the shipped profiles name them): never removed, replaced only when asked
_BUILTIN: set[str] = set()
_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


def _check_names(ds: Dataset) -> None:
    if not isinstance(ds.aliases, (tuple, list)):
        raise DataError(f"dataset {ds.name!r}: aliases must be a tuple of names, got {ds.aliases!r} (one alias: "
                        f"({ds.aliases!r},))")
    for key in (ds.name, *ds.aliases):
        if not isinstance(key, str) or not _NAME.match(key):
            raise DataError(f"dataset name {key!r}: use lower-case letters, digits, '_' or '-', starting with a "
                            "letter (it is a data.source value)")


def register_dataset(ds: Dataset, *, replace: bool = False) -> Dataset:
    """Add ``ds`` by its name and aliases.

    Registering the same dataset again changes nothing. Another dataset under a registered name raises
    :class:`DataError` unless ``replace=True`` (built-in ones too: say so explicitly); a replacement takes the
    name and its own aliases, and the replaced dataset's aliases go with it, so no alias keeps pointing at the
    old one. A name or alias of *another* dataset, a name that is not a ``data.source`` word (``""``), or another
    stand-in's ``standin_code`` raise :class:`DataError` (a ``ValueError``) whatever ``replace`` says.
    """
    if not isinstance(ds, Dataset):
        raise TypeError(f"register_dataset needs a Dataset, got {type(ds).__name__}")
    _check_names(ds)
    existing = _DATASETS.get(ds.name)
    if existing == ds and existing.name == ds.name:
        return existing
    for key in (ds.name, *ds.aliases):
        if key in _DATASETS and _DATASETS[key].name != ds.name:
            raise DataError(f"dataset name {key!r} is taken by {_DATASETS[key].name!r}")
    if existing is not None and not replace:
        raise DataError(f"dataset {ds.name!r} is already registered" + (" (built in)" if ds.name in _BUILTIN else "")
                        + "; pass replace=True to replace it")
    if ds.standin is not None and any(o.standin is not None and o.standin_code == ds.standin_code
                                      and o.name != ds.name for o in _DATASETS.values()):
        raise DataError(f"dataset {ds.name!r}: standin_code {ds.standin_code} is another stand-in's random stream")
    if existing is None:
        for key in (ds.name, *ds.aliases):
            _DATASETS[key] = ds
        return ds
    # the replacement takes the replaced dataset's place (dataset_names keeps its order); the old aliases go
    items = list(_DATASETS.items())
    _DATASETS.clear()
    for key, value in items:
        if value is not existing:
            _DATASETS[key] = value
        elif key == existing.name:
            for new_key in (ds.name, *ds.aliases):
                _DATASETS[new_key] = ds
    return ds


def _mark_builtin() -> None:
    """Record the datasets registered so far as built in (called once, by :mod:`sdrlib.data` after its own)."""
    _BUILTIN.update(dataset_names())


def unregister_dataset(name: str) -> None:
    """Remove a dataset and its aliases (tests, plugins). A built-in dataset is never removed (the shipped profiles
    name it): :class:`DataError`; replace it with ``register_dataset(..., replace=True)`` instead."""
    ds = _DATASETS.get(name)
    if ds is None:
        return
    if ds.name in _BUILTIN:
        raise DataError(f"dataset {ds.name!r} is built in and cannot be removed (the shipped profiles name it); "
                        "register a replacement with register_dataset(..., replace=True)")
    for key in (ds.name, *ds.aliases):
        _DATASETS.pop(key, None)


def get_dataset(source: str) -> Dataset:
    """The dataset ``source`` names (name or alias); an unknown one raises :class:`DataError` listing the names."""
    try:
        return _DATASETS[str(source)]
    except KeyError:
        raise DataError(f"unknown data.source {source!r}; expected one of {', '.join(dataset_names())}") from None


def dataset_names() -> list[str]:
    """The registered datasets' names, in registration order (aliases left out)."""
    return list(dict.fromkeys(ds.name for ds in _DATASETS.values()))


def data_sources() -> tuple[str, ...]:
    """Every value ``data.source`` accepts: names and aliases (the profile check's choices)."""
    return tuple(_DATASETS)


def standin_layouts() -> tuple[str, ...]:
    """The datasets a stand-in can be written for (those registered with a ``standin`` writer)."""
    return tuple(n for n in dataset_names() if _DATASETS[n].standin is not None)
