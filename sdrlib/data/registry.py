"""The datasets a profile can name (``data.source``): one registration per dataset.

A :class:`Dataset` carries everything the rest of the package asks of a dataset: its loader (``load(cfg, split)``,
:func:`sdrlib.data.load_split`), whether it is a download under ``data.root`` (the profile check of
:mod:`sdrlib.config` and the run's preflight in :mod:`sdrlib.runner`, which names ``title`` when the folder is
missing; :func:`sdrlib.data.download.real_root` gives the folder) and, optionally, how to write a stand-in in its
layout (:mod:`sdrlib.data.standin`: ``python -m sdrlib.data.standin NAME OUT_DIR`` and ``data.standin_n``). Each
dataset module registers its own (:mod:`sdrlib.data.mimic`, :mod:`~sdrlib.data.rexgradient`,
:mod:`~sdrlib.data.iuxray`, :mod:`sdrlib.data.synthcxr.dataset`: :data:`BUILTIN_DATASETS`, imported on the first
read of the registry; the registration pattern shared with distance families, metric groups and reward methods is
:mod:`sdrlib.extension`), so a new dataset is one module that calls :func:`register_dataset` and is imported before
the profile is loaded (``tests/data/toy_dataset.py`` is such a
module, run end to end by ``tests/data/test_data_registry.py``).

A stand-in writer is called as ``writer(root, drafts, seed, image_size, defect, tick)`` with SynthCXR drafts of
the studies (:mod:`sdrlib.data.standin`; the built-in writers sit beside their loaders, e.g.
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

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sdrlib.data.records import DataError
from sdrlib.extension import Registry

__all__ = ["Dataset", "register_dataset", "unregister_dataset", "get_dataset", "data_sources", "dataset_names",
           "standin_layouts", "deferred", "DATASETS", "BUILTIN_DATASETS"]


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
    (:mod:`sdrlib.config` raises it as a ``ConfigError``); ``split_of(study_id, seed)``: the split the loader puts a
    study in when the download has no official split (IU-Xray's uid hash), ``None`` when it has one; ``settings``: a
    frozen dataclass of the dataset's own options, the profile's section ``data.<name>`` (``None``: none), read by
    the loader as ``getattr(cfg.data, name)``.
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
    split_of: Callable[[str, int], str] | None = None
    settings: type | None = None


def deferred(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported when first called: how a dataset module names a function of a module that must not
    load with the package (a command module such as :mod:`sdrlib.data.standin.__main__`, which ``python -m`` runs:
    runpy warns about a module the package already imported). Example: ``deferred("sdrlib.data.standin.__main__",
    "main")``."""
    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _check_dataset(ds: Dataset) -> None:
    """What every dataset registration must satisfy (:func:`register_dataset`)."""
    if not isinstance(ds.aliases, (tuple, list)):
        raise DataError(f"dataset {ds.name!r}: aliases must be a tuple of names, got {ds.aliases!r} (one alias: "
                        f"({ds.aliases!r},))")
    for key in (ds.name, *ds.aliases):
        if not isinstance(key, str) or not _NAME.match(key):
            raise DataError(f"dataset name {key!r}: use lower-case letters, digits, '_' or '-', starting with a "
                            "letter (it is a data.source value)")
    if ds.settings is not None and not (dataclasses.is_dataclass(ds.settings) and ds.name.isidentifier()):
        raise DataError(f"dataset {ds.name!r}: settings must be a dataclass and the name an identifier (the profile's "
                        f"section data.{ds.name}), got {ds.settings!r}")




def _check_standin_code(ds: Dataset) -> None:
    """Each stand-in has a random stream of its own (checked after the name rules)."""
    if ds.standin is not None and any(o.standin is not None and o.standin_code == ds.standin_code
                                      and o.name != ds.name for o in DATASETS.entries(discover=False)):
        raise DataError(f"dataset {ds.name!r}: standin_code {ds.standin_code} is another stand-in's random stream")


_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")

#: the built-in datasets' modules, imported in this order on the first read of the registry (the order of
#: :func:`dataset_names`); the shipped profiles name them, so they are never removed
BUILTIN_DATASETS = ("sdrlib.data.mimic", "sdrlib.data.rexgradient", "sdrlib.data.iuxray", "sdrlib.data.synthcxr.dataset")
#: the registered datasets, by name and alias (:func:`register_dataset`)
DATASETS: Registry[Dataset] = Registry("dataset", error=DataError, builtins=BUILTIN_DATASETS, check=_check_dataset,
                                       item_type=Dataset)


def register_dataset(ds: Dataset, *, replace: bool = False) -> Dataset:
    """Add ``ds`` by its name and aliases.

    Registering the same dataset again changes nothing. Another dataset under a registered name raises
    :class:`DataError` unless ``replace=True`` (built-in ones too: say so explicitly); a replacement takes the
    name and its own aliases, and the replaced dataset's aliases go with it, so no alias keeps pointing at the
    old one. A name or alias of *another* dataset, a name that is not a ``data.source`` word (``""``), settings that
    are not a dataclass, or another stand-in's ``standin_code`` raise :class:`DataError` (a ``ValueError``) whatever
    ``replace`` says; anything but a :class:`Dataset` raises ``TypeError``.
    """
    return DATASETS.register(ds, replace=replace, check=_check_standin_code)


def unregister_dataset(name: str) -> None:
    """Remove a dataset and its aliases (tests, plugins). A built-in dataset is never removed (the shipped profiles
    name it): :class:`DataError`; replace it with ``register_dataset(..., replace=True)`` instead."""
    DATASETS.unregister(name)


def get_dataset(source: str) -> Dataset:
    """The dataset ``source`` names (name or alias); an unknown one raises :class:`DataError` listing the names."""
    if not isinstance(source, str) or source not in DATASETS:
        raise DataError(f"unknown data.source {source!r}; expected one of {', '.join(dataset_names())}")
    return DATASETS[source]


def dataset_names() -> list[str]:
    """The registered datasets' names, in registration order (aliases left out)."""
    return list(DATASETS.names())


def data_sources() -> tuple[str, ...]:
    """Every value ``data.source`` accepts: names and aliases (the profile check's choices)."""
    return tuple(DATASETS)


def standin_layouts() -> tuple[str, ...]:
    """The datasets a stand-in can be written for (those registered with a ``standin`` writer)."""
    return tuple(n for n in dataset_names() if DATASETS[n].standin is not None)
