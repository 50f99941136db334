"""Python 3.11-3.13: pyproject.toml, scripts/setup.sh and the README admit the same versions, and every pinned
package installs from a wheel on 3.12 and 3.13 (scripts/check_python_versions.py against PyPI, no install).

The registry tests skip only when the package registry cannot be reached at all; a pin without a wheel fails
with its name and version. About half a minute on a quiet 2-core machine (pip parses each project's file list).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_python_versions", ROOT / "scripts" / "check_python_versions.py")
cpv = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("check_python_versions", cpv)
_spec.loader.exec_module(cpv)

MINORS = [f"3.{m}" for m in range(8, 16)]


def _admitted() -> list[str]:
    spec = SpecifierSet(cpv.requires_python())
    return [v for v in MINORS if spec.contains(f"{v}.0")]


def test_pyproject_admits_python_3_11_to_3_13():
    assert _admitted() == ["3.11", "3.12", "3.13"]


def test_setup_sh_accepts_exactly_what_pyproject_admits():
    text = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    m = re.search(r'^SUPPORTED="([\d. ]+)"', text, flags=re.M)
    assert m, "scripts/setup.sh has no SUPPORTED=\"...\" line"
    assert m.group(1).split() == _admitted()
    assert "(3, 11)" not in text  # the old 3.11-only assertion is gone


def test_readme_names_the_supported_versions():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    versions = _admitted()
    phrase = ", ".join(versions[:-1]) + " or " + versions[-1]  # "3.11, 3.12 or 3.13"
    assert f"Python {phrase}" in readme, f"README does not say 'Python {phrase}'"


def test_pins_agree_between_pyproject_and_environment_yml():
    assert cpv.check_pins(cpv.pyproject_pins(), cpv.environment_pins()) == []


def test_pin_check_names_a_mismatch():
    pins = {"core": ["numpy==2.4.6", "scipy>=1"], "cpu": ["torch==2.13.0"], "dev": [], "gpu": ["numpy==2.0.0"]}
    problems = cpv.check_pins(pins, {"numpy": "2.4.6", "torch": "2.12.0", "extra-pkg": "1.0"})
    assert "core: 'scipy>=1' is not an exact pin (name==version)" in problems
    assert "numpy is pinned to 2.4.6 (core) and 2.0.0 (gpu)" in problems
    assert "environment.yml pins torch==2.12.0, pyproject.toml torch==2.13.0" in problems
    assert "environment.yml pins extra-pkg==1.0, which pyproject.toml's cpu + dev stack lacks" in problems


def test_the_cpu_and_gpu_extras_may_pin_different_versions_but_one_set_may_not():
    """The cpu and gpu extras are alternative install sets (trl 1.16.0 / 1.15.0): a difference between them is
    allowed; one inside a set (core + gpu, core + cpu + dev) is not."""
    pins = {"core": ["transformers==5.17.0"], "cpu": ["trl==1.16.0"], "dev": [], "gpu": ["trl==1.15.0"]}
    assert cpv.check_pins(pins, {"transformers": "5.17.0", "trl": "1.16.0"}) == []
    pins["dev"] = ["trl==1.15.0"]
    assert "trl is pinned to 1.16.0 (cpu) and 1.15.0 (dev)" in cpv.check_pins(pins, {"transformers": "5.17.0"})


def test_pin_conflicts_read_each_sets_own_version_of_a_package():
    report = [{"name": "trl", "version": "1.16.0", "requires_dist": ["transformers>=5.20"]},
              {"name": "trl", "version": "1.15.0", "requires_dist": ["transformers>=4.56"]}]
    pins = {"core": ["transformers==5.17.0"], "cpu": ["trl==1.16.0"], "dev": [], "gpu": ["trl==1.15.0"]}
    found = cpv.pin_conflicts(report, pins, "3.12")
    assert found["gpu"] == []
    assert found["cpu"] == ["trl 1.16.0 requires transformers>=5.20, pinned transformers==5.17.0"]


def test_pin_conflicts_are_read_from_the_pins_own_metadata():
    report = [{"name": "unsloth", "version": "1", "requires_dist": [
        "transformers<=5.17.0", "trl<=1.15.0; python_version >= '3.99'", "xformers; extra == 'x'"]}]
    pins = {"core": ["transformers==5.24.0"], "cpu": [], "dev": [], "gpu": ["unsloth==1", "trl==1.16.0"]}
    found = cpv.pin_conflicts(report, pins, "3.12")
    assert found["cpu"] == []
    assert found["gpu"] == ["unsloth 1 requires transformers<=5.17.0, pinned transformers==5.24.0"]


# --------------------------------------------------------------------------- against the registry


@pytest.fixture(scope="module")
def registry():
    ok, where = cpv.registry_reachable()
    if not ok:
        pytest.skip(f"the package registry cannot be reached at all ({where})")
    return where


@pytest.fixture(scope="module")
def result(registry):
    r = cpv.run_checks(["3.12", "3.13"])
    print(cpv.summary(r))  # shown by pytest -rA / on failure
    return r


@pytest.mark.parametrize("py", ["3.12", "3.13"])
def test_every_pin_has_a_wheel(result, py):
    r = result["wheels"][py]
    assert not r["conflict"], r["conflict"]
    assert not r["missing"], "pins without a wheel for Python " + py + ":\n" + "\n".join(
        f"{m['requirement']}: {m['why']}" for m in r["missing"])
    names = {cpv.canon(i["name"]) for i in r["install"]}
    pinned = {cpv._split(p)[0] for g in cpv.pyproject_pins().values() for p in g}
    assert pinned <= names, f"pins not checked: {sorted(pinned - names)}"
    # the sdist-only ones were accepted only as pure-Python wheels
    assert all(s["wheel"].endswith("-none-any.whl") for s in r["sdist_only"])


@pytest.mark.parametrize("py", ["3.12", "3.13"])
def test_the_installed_cpu_set_has_a_wheel_for_every_package(result, py):
    if not result["lock"]:
        pytest.skip("no installed packages to check")
    r = result["lock"][py]
    assert result["lock_size"] > 100  # the fully pinned set of scripts/setup.sh, not a stray environment
    assert not r["conflict"], r["conflict"]
    assert not r["missing"], "packages of the installed cpu set without a wheel for Python " + py + ":\n" + "\n".join(
        f"{m['requirement']}: {m['why']}" for m in r["missing"])


@pytest.mark.parametrize("py", ["3.12", "3.13"])
def test_the_cpu_set_pins_do_not_contradict_each_other(result, py):
    assert result["pin_conflicts"][py]["cpu"] == []


@pytest.mark.parametrize("py", ["3.12", "3.13"])
def test_the_gpu_set_pins_do_not_contradict_each_other(result, py):
    assert result["pin_conflicts"][py]["gpu"] == []


def test_a_pin_without_a_wheel_fails_with_its_name_and_version(registry, tmp_path):
    """POT 0.9.4 ships wheels up to CPython 3.12, none for 3.13: the check names it and says why."""
    local = cpv.LocalWheels(tmp_path, [])
    r = cpv.resolve(["pot==0.9.4", "tabulate==0.10.0"], "3.13", deps=False, local=local, glibc=28, timeout=120)
    assert not r["ok"]
    assert [m["requirement"] for m in r["missing"]] == ["pot==0.9.4"]
    assert "other Pythons" in r["missing"][0]["why"]
    assert [i["name"] for i in r["install"]] == ["tabulate"]  # the rest is still checked
