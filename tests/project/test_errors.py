"""Every public exception and warning class of sdrlib is reachable from :mod:`sdrlib.errors` (lazily: that module
imports no other), and every public exception derives from :class:`sdrlib.errors.SDRError`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import sdrlib
from sdrlib import errors


def _public_exceptions() -> dict[str, type]:
    """Name -> class of every ``Exception`` subclass (warnings included) defined in sdrlib under a public name,
    found in any module's namespace (a private module's class counts: it is public where it is re-exported)."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(sdrlib.__path__, "sdrlib."):
        if ".evaluate_modules" in info.name:
            continue
        for name, obj in vars(importlib.import_module(info.name)).items():
            if (inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__.startswith("sdrlib")
                    and not obj.__name__.startswith("_")):
                assert found.get(obj.__name__, obj) is obj, f"two public exception classes named {obj.__name__}"
                found[obj.__name__] = obj
    return found


def test_every_public_exception_class_is_reachable_from_sdrlib_errors():
    found = _public_exceptions()
    missing = {n: c.__module__ for n, c in found.items() if n != "SDRError" and n not in errors.PUBLIC_ERRORS}
    assert not missing, f"add to sdrlib.errors.PUBLIC_ERRORS (name -> public module): {missing}"
    for name, cls in found.items():
        assert getattr(errors, name) is cls, (name, errors.PUBLIC_ERRORS.get(name), cls.__module__)
    stale = set(errors.PUBLIC_ERRORS) - set(found)
    assert not stale, f"sdrlib.errors.PUBLIC_ERRORS names classes sdrlib no longer has: {sorted(stale)}"
    assert len(found) >= 50


def test_each_listed_module_is_public_and_holds_the_class():
    for name, module in errors.PUBLIC_ERRORS.items():
        assert not any(part.startswith("_") for part in module.split(".")), (name, module)
        assert getattr(importlib.import_module(module), name) is getattr(errors, name)
        assert name in errors.__all__ and name in dir(errors)


def test_every_public_exception_is_a_deliberate_sdrlib_error():
    for name in errors.PUBLIC_ERRORS:
        cls = getattr(errors, name)
        assert issubclass(cls, Warning) or issubclass(cls, errors.SDRError), name


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="NoSuchError"):
        errors.NoSuchError  # noqa: B018


def test_importing_sdrlib_errors_imports_nothing_else_of_sdrlib():
    code = ("import sys, sdrlib.errors; print(sorted(m for m in sys.modules if m.startswith('sdrlib.') "
            "and m != 'sdrlib.errors'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
