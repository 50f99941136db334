"""The command lines live in the library (``python -m sdrlib.<module>``); the scripts of the same name are thin
wrappers, so every command written before the modules existed still runs and does the same thing."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: wrapper script -> (the module ``python -m`` runs, the module holding its ``main``)
WRAPPERS = {"study": ("sdrlib.experiments.study", "sdrlib.experiments.study.cli"),
            "readme_numbers": ("sdrlib.experiments.claims", "sdrlib.experiments.claims.cli")}


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"wrapper_{name}", ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_each_wrapper_script_runs_the_library_main_and_nothing_else(name):
    """The wrapper's ``main`` is the module's own (no second copy of the command line to drift), and the wrapper is
    a few lines after its docstring: the path, one import and the ``__main__`` guard."""
    assert _script(name).main is importlib.import_module(WRAPPERS[name][1]).main
    body = (ROOT / "scripts" / f"{name}.py").read_text(encoding="utf-8").split('"""')[-1]
    code = [ln for ln in body.splitlines() if ln.strip()]
    assert len(code) <= 7, code


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_the_module_and_the_wrapper_print_the_same_help(name):
    """``python -m <module> --help`` from the checkout and ``python scripts/<name>.py --help`` from another folder,
    each in its own interpreter: the same text, exit 0 (the module's ``__main__`` entry works, and the wrapper finds
    this checkout's sdrlib from anywhere)."""
    module = WRAPPERS[name][0]
    by_module = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                               timeout=120, cwd=ROOT)
    by_script = subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"), "--help"], capture_output=True,
                               text=True, timeout=120, cwd=ROOT / "docs")
    assert by_module.returncode == 0 and by_script.returncode == 0, by_module.stderr + by_script.stderr
    assert by_module.stdout == by_script.stdout and by_module.stdout.startswith(f"usage: python -m {module}")


def test_the_study_messages_name_the_command_the_study_cli_is():
    """The study's error messages tell the user to run ``study_evidence.COMMAND`` (kept there: the command line must
    not import the study's heavy modules to print its help); it is the package that ``python -m`` runs (its
    ``__main__`` runs the command line's ``main``)."""
    from sdrlib.experiments.study import cli as study_cli, evidence as study_evidence

    assert study_evidence.COMMAND == study_cli.COMMAND == f"python -m {study_cli.__package__}"
