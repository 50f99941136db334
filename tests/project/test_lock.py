"""requirements/lock-py*.txt (scripts/lock.sh, the constraints scripts/setup.sh installs with) agrees with every pin
of pyproject.toml's core, cpu and dev sets, so a changed pin cannot leave a stale lock behind."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCKS = sorted((ROOT / "requirements").glob("lock-py*.txt"))


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = proj["dependencies"] + proj["optional-dependencies"]["cpu"] + proj["optional-dependencies"]["dev"]
    out = {}
    for r in reqs:
        m = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^;\s]+)", r)
        if m:
            out[_norm(m.group(1))] = m.group(2)
    return out


def _lock(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, ver = line.partition("==")
            assert sep and ver and "+" not in ver, f"{path.name}: not a plain pin: {line!r}"
            out[_norm(name)] = ver.strip()
    return out


def test_there_is_a_lock_for_the_ci_python():
    assert (ROOT / "requirements" / "lock-py3.11.txt") in LOCKS


@pytest.mark.parametrize("path", LOCKS, ids=lambda p: p.name)
def test_the_lock_agrees_with_every_pin(path):
    lock, pins = _lock(path), _pins()
    wrong = {n: (v, lock.get(n)) for n, v in pins.items() if lock.get(n) != v}
    assert not wrong, (f"{path.name} disagrees with pyproject.toml (pin, lock): {wrong}; run scripts/setup.sh && "
                       "scripts/lock.sh")
