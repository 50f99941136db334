"""sdrlib.experiments and its GRPO study subpackage: each package docstring names every module and subpackage in it,
so a reader finds a part from the package's index."""

from __future__ import annotations

import importlib
import pkgutil

import pytest


@pytest.mark.parametrize("package", ["sdrlib.experiments", "sdrlib.experiments.study"])
def test_the_package_docstring_lists_every_module(package):
    pkg = importlib.import_module(package)
    parts = [m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    assert parts, package
    missing = [name for name in parts if f":mod:`.{name}`" not in pkg.__doc__]
    assert not missing, f"{package}'s docstring does not list {missing}"
