"""One registry pattern for the four extension points: distance families, datasets, metric groups, reward methods.

Each extension point is a :class:`Registry` of objects that describe one extension each (a
:class:`~sdrlib.distances.registry.Family`, a :class:`~sdrlib.data.Dataset`, a
:class:`~sdrlib.metrics.registry.MetricGroup`, a :class:`~sdrlib.rewards.RewardMethod`), and every one follows the
same rules:

- **one call shape**: ``register_<thing>(obj, replace=False)`` adds ``obj`` under ``obj.name`` (and its
  ``aliases``, where the extension has them) and returns it;
- **one** ``replace`` **rule**: a taken name raises the registry's error unless ``replace=True``; registering the
  same (equal) object again changes nothing; a replacement takes the replaced one's place in the order and drops
  its aliases; a built-in extension can be replaced (``replace=True``) but never removed (:meth:`Registry.unregister`);
- **one discovery**: the built-in extensions are the modules named in ``builtins``, imported in that order on the
  first read of the registry (the one place their order is declared: column order of the metric groups, the order
  of ``dataset_names()``), each registering its own; so the registry module imports none of them and no import
  circle can form;
- **one settings section**: an extension with options carries ``settings``, a frozen dataclass whose fields (with
  defaults and ``metadata`` constraints, as in :mod:`sdrlib.config`) are the profile's nested section of that
  extension (``data.<dataset>``, ``metrics.<group>``, ``grpo.<method>``; :meth:`Registry.settings_sections`).
  Distance families have none: their parameters are written in the setting's name (``sinkhorn_0.05``).
  :data:`DEVICE` is the constraint of a torch device field, shared by the extensions' settings and the profile's
  own sections.

Left out: what each extension point checks about its objects (the ``check`` each registry is given) and what the
objects mean (their own modules).

Example::

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Thing:
    ...     name: str
    >>> things = Registry("thing", error=ValueError)
    >>> things.register(Thing("a")).name
    'a'
    >>> things.register(Thing("a")) == Thing("a")       # the same object again: no change
    True
    >>> things.names()
    ('a',)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from typing import Any, Callable, Generic, Sequence, TypeVar

__all__ = ["Registry", "DEVICE"]

T = TypeVar("T")

#: the ``metadata`` constraint of a torch device field (``cpu``, ``auto``: cuda when torch sees a GPU, ``cuda``,
#: ``cuda:<index>``), as :mod:`sdrlib.config` reads it; a settings dataclass writes ``metadata={**DEVICE, "help": ...}``
DEVICE = {"pattern": r"cpu|auto|cuda(:[0-9]+)?", "pattern_help": "cpu, auto, cuda or cuda:<index>"}


class Registry(Mapping[str, T], Generic[T]):
    """Named extension objects of one kind, read as a mapping ``name or alias -> object`` (module doc).

    Parameters
    ----------
    kind : str
        What one entry is, for messages (``"distance family"``).
    error : type of Exception
        Raised for a refused registration or an unknown name (the extension point's own error).
    builtins : sequence of str
        Modules imported, in this order, on the first read; each registers its built-in extensions.
    check : callable, optional
        ``check(obj)`` raising ``error`` for an object this extension point cannot use (run on every registration
        before the name rules).
    item_type : type, optional
        Objects must be instances of it (else ``TypeError``).
    """

    def __init__(self, kind: str, *, error: type[Exception], builtins: Sequence[str] = (),
                 check: Callable[[T], None] | None = None, item_type: type | None = None) -> None:
        self.kind = kind
        self.error = error
        self.builtins = tuple(builtins)
        self._check = check
        self._item_type = item_type
        self._items: dict[str, T] = {}
        self._builtin: dict[str, str] = {}  # built-in name -> the module that registered it
        self._discovered = not self.builtins

    # -- discovery --------------------------------------------------------------------
    def discover(self) -> None:
        """Import the built-in modules once (in ``builtins`` order); what they register is built in."""
        if self._discovered:
            return
        self._discovered = True
        for module in self.builtins:
            importlib.import_module(module)

    def _builtin_module(self) -> str | None:
        """The ``builtins`` module whose import is running this call, or ``None``: its registrations are built in,
        whether discovery or a direct import of that module loaded it."""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") in self.builtins:
                return frame.f_globals["__name__"]
            frame = frame.f_back
        return None

    def _reorder(self) -> None:
        """Built-in entries in ``builtins`` order (whichever module was imported first), then the others as
        registered."""
        rank = {name: self.builtins.index(module) for name, module in self._builtin.items()}
        items = sorted(self._items.items(), key=lambda kv: rank.get(kv[1].name, len(self.builtins)))  # type: ignore
        self._items = dict(items)

    def is_builtin(self, name: str) -> bool:
        """Registered by one of the ``builtins`` modules (never removed)."""
        self.discover()
        return name in self._builtin

    # -- registering ------------------------------------------------------------------
    @staticmethod
    def _keys(item: Any) -> tuple[str, ...]:
        return (item.name, *tuple(getattr(item, "aliases", ()) or ()))

    def register(self, item: T, *, replace: bool = False, check: Callable[[T], None] | None = None) -> T:
        """Add ``item`` under its name and aliases (module doc for the rules); ``check`` is one more check of this
        call (after the registry's own). Returns ``item``."""
        if self._item_type is not None and not isinstance(item, self._item_type):
            raise TypeError(f"registering a {self.kind} needs a {self._item_type.__name__}, got "
                            f"{type(item).__name__}")
        module = self._builtin_module()
        if module is None:  # a plugin's registration: the built-in ones first, so a taken name is seen
            self.discover()
        if self._check is not None:
            self._check(item)
        name = item.name  # type: ignore[attr-defined]
        existing = self._items.get(name)
        if existing is not None and existing == item and self._keys(existing) == self._keys(item):
            return existing
        for key in self._keys(item):
            if key in self._items and self._items[key].name != name:  # type: ignore[attr-defined]
                raise self.error(f"{self.kind} name {key!r} is taken by {self._items[key].name!r}")  # type: ignore
        if existing is not None and not replace:
            raise self.error(f"{self.kind} {name!r} is already registered"
                             + (" (built in)" if name in self._builtin else "") + "; pass replace=True to replace it")
        if check is not None:
            check(item)
        if module is not None:
            self._builtin[name] = module
        if existing is None:
            for key in self._keys(item):
                self._items[key] = item
            if module is not None:
                self._reorder()
            return item
        # the replacement takes the replaced one's place (the order stays); the old aliases go
        old = list(self._items.items())
        self._items.clear()
        for key, value in old:
            if value is not existing:
                self._items[key] = value
            elif key == name:
                for new_key in self._keys(item):
                    self._items[new_key] = item
        return item

    def unregister(self, name: str) -> None:
        """Remove ``name`` and its aliases (tests, notebooks); a built-in one raises, an unknown one is ignored."""
        self.discover()
        item = self._items.get(name)
        if item is None:
            return
        if item.name in self._builtin:  # type: ignore[attr-defined]
            raise self.error(f"{self.kind} {item.name!r} is built in and cannot be removed; replace it with "  # type: ignore
                             "replace=True instead")
        for key in self._keys(item):
            self._items.pop(key, None)

    # -- reading ----------------------------------------------------------------------
    def __getitem__(self, name: str) -> T:
        self.discover()
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        self.discover()
        return iter(list(self._items))

    def __len__(self) -> int:
        self.discover()
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        self.discover()
        return name in self._items

    def lookup(self, name: str) -> T:
        """The object ``name`` (or an alias) names; the registry's error listing the registered names otherwise."""
        self.discover()
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise self.error(f"unknown {self.kind} {name!r}; registered: {', '.join(self.names())}") from None

    def names(self) -> tuple[str, ...]:
        """The registered names in order (aliases left out)."""
        self.discover()
        return tuple(dict.fromkeys(item.name for item in self._items.values()))  # type: ignore[attr-defined]

    def entries(self, *, discover: bool = True) -> tuple[T, ...]:
        """Every registered object once, in order (``discover=False``: those registered so far, for the checks a
        registration runs while the built-in modules are still loading)."""
        if discover:
            self.discover()
        return tuple({id(item): item for item in self._items.values()}.values())

    def settings_sections(self) -> dict[str, type]:
        """``{name: settings dataclass}`` of the extensions with settings: the profile's nested sections."""
        return {item.name: item.settings for item in self.entries()  # type: ignore[attr-defined]
                if getattr(item, "settings", None) is not None}
