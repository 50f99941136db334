"""The ``>>>`` examples in ``sdrlib``'s docstrings run, offline, and pass; the entry points a user meets first
(``distances``, ``rewards``, ``selection``, ``pruning``, ``metrics``, ``data``) each carry one.

Every module of the package is imported and its doctests run with :mod:`doctest` (the examples' outputs are
compared as written, ``NORMALIZE_WHITESPACE`` and ``ELLIPSIS`` on). The files under
``sdrlib/metrics/evaluate_modules/`` are scripts that Hugging Face ``evaluate`` loads by path, not modules of the
package; they are run the same way from their file.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import sdrlib

ROOT = Path(sdrlib.__file__).resolve().parent
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
ENTRY_POINTS = ("distances", "rewards", "selection", "pruning", "metrics", "data")


def _module_names() -> list[str]:
    names = ["sdrlib"]
    for info in pkgutil.walk_packages(sdrlib.__path__, "sdrlib."):
        if ".evaluate_modules" not in info.name:
            names.append(info.name)
    return sorted(names)


def _evaluate_scripts() -> list[Path]:
    return sorted((ROOT / "metrics" / "evaluate_modules").rglob("*.py"))


def _tests_of(module) -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [t for t in finder.find(module, module.__name__) if t.examples]


def _examples_by_module() -> dict[str, int]:
    out = {}
    for name in _module_names():
        n = sum(len(t.examples) for t in _tests_of(importlib.import_module(name)))
        if n:
            out[name] = n
    return out


def _run(tests: list[doctest.DocTest]) -> list[str]:
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    failures = []
    for t in tests:
        out: list[str] = []
        result = runner.run(t, out=out.append)
        if result.failed:
            failures.append("".join(out))
    return failures


@pytest.mark.parametrize("name", sorted(_examples_by_module()))
def test_the_module_doctests_pass(name):
    assert _run(_tests_of(importlib.import_module(name))) == []


@pytest.mark.parametrize("path", _evaluate_scripts(), ids=lambda p: p.parent.name)
def test_the_evaluate_scripts_doctests_pass(path):
    spec = importlib.util.spec_from_file_location(f"_evaluate_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert _run(_tests_of(module)) == []


@pytest.mark.parametrize("package", ENTRY_POINTS)
def test_each_entry_point_a_user_meets_first_has_an_example(package):
    module = importlib.import_module(f"sdrlib.{package}")
    assert _tests_of(module), f"sdrlib.{package} has no >>> example in its own docstrings"


def test_a_failing_example_is_reported():
    def f():
        """>>> 1 + 1
        3
        """
    test = doctest.DocTestFinder().find(f, "f", globs={})[0]
    assert _run([test]) != []
