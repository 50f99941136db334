#!/usr/bin/env python3
"""Do the pinned packages install on Python 3.12 and 3.13?  A check against PyPI that installs nothing.

    .venv/bin/python scripts/check_python_versions.py                 # 3.12 and 3.13 (about half a minute)
    .venv/bin/python scripts/check_python_versions.py --resolve       # plus pip's full resolution of each set
    .venv/bin/python scripts/check_python_versions.py --python 3.11 3.12 3.13 --json out.json

pyproject.toml admits Python 3.11-3.13. For each newer version this script proves, from PyPI's own file
lists, that the pinned sets install from wheels, without building anything on the user's machine. Every
pip call is ``pip install --dry-run --ignore-installed --report R --only-binary=:all: --python-version
3.X --implementation cp --abi cp3X --platform manylinux_2_{5..28}_x86_64 ...`` (glibc <= 2.28 by default,
``--glibc``): it reads the index and the wheels' metadata (PEP 658) and downloads no wheel.

1. **pins**: the pins of pyproject.toml (``dependencies`` and the ``cpu``, ``gpu`` and ``dev`` extras) are
   exact (``name==version``), and environment.yml's pip pins are the same versions (it is the cpu + dev stack).
2. **wheels**: every pin of the four sets has a wheel for CPython 3.X (``--no-deps``). A pinned release
   that ships no wheel at all (``rouge-score 0.1.2`` and ``radgraph 0.1.18`` are sdist-only) is built here
   once, without dependencies, and accepted only when that gives a pure-Python ``py3-none-any`` wheel, which
   any Python 3 installs; a release that ships wheels for other Pythons but not for 3.X fails, named with
   its version. The pins' own metadata (``Requires-Dist``, markers evaluated for 3.X on Linux x86_64) is
   then checked against the other pins of each install set, ``cpu`` (core + cpu + dev, what
   ``scripts/setup.sh`` installs) and ``gpu`` (core + gpu, ``pip install ".[gpu]"``): a pin that requires a
   version another pin excludes is a conflict, named.
3. **lock**: the exact, fully pinned cpu set, i.e. every distribution of the environment running this
   script as ``scripts/setup.sh`` resolved it (about 190 packages; local version labels such as torch's
   ``+cpu`` dropped; sdrlib and pip left out), each has a wheel for 3.X (``--no-deps``, in parallel chunks).
   A transitive package whose 3.11 version lacks a 3.X wheel is reported as such (pip on 3.X might pick
   another version: ``--resolve`` answers that).
4. ``--resolve`` (not in the test: about a minute per set and Python): pip's full resolution of each install
   set with its dependencies for 3.X, every transitive package a wheel, or pip's explanation of a conflict.

**torch**: this machine's pip configuration adds a local CPU build of torch 2.13.0 for CPython 3.11
(``/opt/wheels``) and local indexes. The check ignores every pip configuration file and ``PIP_*`` variable
(except ``PIP_INDEX_URL``, ``PIP_CERT`` and ``PIP_DEFAULT_TIMEOUT``), so it sees what a fresh 3.12 / 3.13
machine sees on PyPI: torch 2.13.0's Linux x86_64 wheels there are the CUDA builds (a full resolution of
the cpu set on 3.12 therefore brings the ``nvidia-*`` packages). The CPU builds live on PyTorch's own index
(pass ``--extra-index-url https://download.pytorch.org/whl/cpu``), which this project's machines cannot
reach; the question the check answers is the same either way: torch 2.13.0 exists for that Python.

Exit status: 0 every check passed; 1 a check failed (the summary names each package, version and Python);
3 the package registry cannot be reached at all (nothing was checked). ``--json`` writes the full result.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

try:
    from packaging.markers import Marker
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import Version
except ImportError:  # pragma: no cover - pip vendors packaging
    from pip._vendor.packaging.markers import Marker  # type: ignore[no-redef]
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.version import Version  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PYTHONS = ("3.12", "3.13")
SETS = {"cpu": ("core", "cpu", "dev"), "gpu": ("core", "gpu")}
KEEP_ENV = ("PIP_INDEX_URL", "PIP_CERT", "PIP_DEFAULT_TIMEOUT")
NOT_IN_LOCK = {"sdrlib", "pip"}  # the project itself (editable) and the installer
_NO_MATCH = re.compile(r"No matching distribution found for (\S+)")
_PIN = re.compile(r"^\s*-\s+([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s#]+)")
_NET_ERROR = re.compile(r"Could not fetch URL|ConnectionError|NewConnectionError|Max retries exceeded|"
                        r"Temporary failure in name resolution|timed out", re.I)


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    return canon(re.split(r"[<>=!~;\[ ]", req.strip(), maxsplit=1)[0])


# --------------------------------------------------------------------------- the pins


def pyproject_pins(path: Path = ROOT / "pyproject.toml") -> dict[str, list[str]]:
    """``{"core": [...], "cpu": [...], "gpu": [...], "dev": [...]}``: the requirement strings as written."""
    proj = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    out = {"core": list(proj.get("dependencies", []))}
    for extra, reqs in proj.get("optional-dependencies", {}).items():
        out[extra] = list(reqs)
    return out


def requires_python(path: Path = ROOT / "pyproject.toml") -> str:
    return tomllib.loads(path.read_text(encoding="utf-8"))["project"]["requires-python"]


def environment_pins(path: Path = ROOT / "environment.yml") -> dict[str, str]:
    """``{canonical name: version}`` of the ``name==version`` lines of environment.yml's pip section."""
    return {canon(m.group(1)): m.group(2) for line in path.read_text(encoding="utf-8").splitlines()
            if (m := _PIN.match(line))}


def _split(req: str) -> tuple[str, str]:
    name, _, version = req.partition("==")
    return canon(name.strip()), version.strip()


def check_pins(pins: dict[str, list[str]], env: dict[str, str]) -> list[str]:
    """Problems: a requirement that is not an exact pin, two versions of one package within one install set
    (``SETS``; the cpu and gpu extras are alternatives and may pin different versions, e.g. trl), environment.yml
    disagreeing with pyproject.toml's cpu + dev stack."""
    problems = []
    for group, reqs in pins.items():
        for r in reqs:
            name, version = _split(r)
            if not version or any(c in version for c in "<>!=~*,; "):
                problems.append(f"{group}: {r!r} is not an exact pin (name==version)")
    for groups in SETS.values():
        seen: dict[str, tuple[str, str]] = {}
        for group in groups:
            for r in pins.get(group, []):
                name, version = _split(r)
                if version and seen.setdefault(name, (version, group))[0] != version:
                    problems.append(f"{name} is pinned to {seen[name][0]} ({seen[name][1]}) and {version} ({group})")
    problems = list(dict.fromkeys(problems))
    stack = {_split(r)[0]: _split(r)[1] for g in SETS["cpu"] for r in pins.get(g, [])}
    for name, version in sorted(stack.items()):
        if name not in env:
            problems.append(f"environment.yml lacks {name}=={version} (pyproject.toml's cpu + dev stack)")
        elif env[name] != version:
            problems.append(f"environment.yml pins {name}=={env[name]}, pyproject.toml {name}=={version}")
    for name in sorted(set(env) - set(stack)):
        problems.append(f"environment.yml pins {name}=={env[name]}, which pyproject.toml's cpu + dev stack lacks")
    return problems


def installed_lock() -> list[str]:
    """``name==version`` of every distribution of the running environment (the resolved cpu set when it is
    the ``.venv`` of scripts/setup.sh), local version labels dropped, sdrlib and pip left out."""
    out = {}
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if not name or canon(name) in NOT_IN_LOCK:
            continue
        out[canon(name)] = f"{canon(name)}=={Version(d.version).public}"
    return [out[k] for k in sorted(out)]


def pin_conflicts(report: list[dict], pins: dict[str, list[str]], py: str) -> dict[str, list[str]]:
    """Per install set, each pin whose own Requires-Dist excludes another pin's version (markers for ``py``)."""
    env = {"python_version": py, "python_full_version": f"{py}.0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
    meta = {(canon(i["name"]), i["version"]): i for i in report}  # a package may have one version per set
    out = {}
    for s, groups in SETS.items():
        pinned = {_split(r)[0]: _split(r)[1] for g in groups for r in pins.get(g, [])}
        found = []
        for name in pinned:
            info = meta.get((name, pinned[name]))
            if info is None:
                continue
            for rd in info.get("requires_dist", []):
                try:
                    req = Requirement(rd)
                except InvalidRequirement:
                    continue
                if req.marker is not None and not req.marker.evaluate(env):
                    continue
                other = canon(req.name)
                if other in pinned and other != name and not req.specifier.contains(pinned[other], prereleases=True):
                    found.append(f"{info['name']} {info['version']} requires {req.name}{req.specifier}, "
                                 f"pinned {other}=={pinned[other]}")
        out[s] = found
    return out


# --------------------------------------------------------------------------- pip, isolated


def pip_env() -> dict[str, str]:
    """The environment minus every pip setting but the index, certificate and timeout; no config files."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in KEEP_ENV}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


def target_flags(py: str, glibc: int) -> list[str]:
    nodot = py.replace(".", "")
    flags = ["--only-binary=:all:", "--python-version", py, "--implementation", "cp", "--abi", f"cp{nodot}"]
    plats = [f"manylinux_2_{n}_x86_64" for n in range(5, glibc + 1)]
    plats += [p for p, n in (("manylinux1_x86_64", 5), ("manylinux2010_x86_64", 12), ("manylinux2014_x86_64", 17))
              if n <= glibc]
    for p in plats:
        flags += ["--platform", p]
    return flags


def run_pip(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "pip", *args], env=pip_env(), capture_output=True, text=True,
                       timeout=timeout)
    p.log = p.stdout + "\n" + p.stderr  # pip writes its explanations to either
    return p


def registry_reachable(timeout: float = 15.0) -> tuple[bool, str]:
    """Whether the index answers at all (a tiny page: pip's own project page)."""
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    url = f"{index}/pip/"
    ctx = None
    if os.environ.get("PIP_CERT"):
        import ssl

        ctx = ssl.create_default_context(cafile=os.environ["PIP_CERT"])
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": "text/html"}), timeout=timeout,
                                    context=ctx) as r:
            r.read(1024)
        return True, url
    except (urllib.error.URLError, OSError, ValueError) as e:
        return False, f"{url}: {e}"


# --------------------------------------------------------------------------- sdist-only releases


class LocalWheels:
    """Pure-Python wheels built here from sdist-only releases (once each, shared by all checks)."""

    def __init__(self, folder: Path, extra: list[str]):
        self.folder, self.extra = folder, extra
        self.lock = threading.Lock()
        self.built: dict[str, str] = {}  # requirement -> wheel file name
        self.refused: dict[str, str] = {}  # requirement -> why it is no pure-Python sdist-only release

    def classify(self, req: str, timeout: float) -> tuple[bool, str]:
        """(True, wheel) when ``req`` is an sdist-only release that builds to a py3-none-any wheel,
        else (False, why)."""
        with self.lock:
            if req in self.built:
                return True, self.built[req]
            if req in self.refused:
                return False, self.refused[req]
            ok, msg = self._classify(req, timeout)
            (self.built if ok else self.refused)[req] = msg
            return ok, msg

    def _classify(self, req: str, timeout: float) -> tuple[bool, str]:
        # A wheel for this very interpreter: the release ships wheels, only not for the target Python.
        here = run_pip(["install", "--dry-run", "--ignore-installed", "--no-deps", "--only-binary=:all:",
                        "--quiet", *self.extra, req], timeout)
        if here.returncode == 0:
            return False, "no wheel for this Python on PyPI (the release ships wheels for other Pythons only)"
        with tempfile.TemporaryDirectory() as tmp:
            try:
                b = run_pip(["wheel", "--no-deps", "--quiet", "-w", tmp, *self.extra, req], timeout)
            except subprocess.TimeoutExpired:
                return False, f"no wheel on PyPI, and its sdist did not build within {timeout:.0f} s"
            wheels = list(Path(tmp).glob("*.whl"))
            if b.returncode != 0 or not wheels:
                return False, "no wheel on PyPI and no sdist that builds: " + _last_error(b.log)
            w = wheels[0]
            if not re.search(r"-(py3|py2\.py3)-none-any\.whl$", w.name):
                return False, f"no wheel on PyPI; its sdist builds a platform wheel ({w.name})"
            shutil.copy2(w, self.folder / w.name)
            return True, w.name


def _last_error(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip().startswith("ERROR")]
    return lines[-1] if lines else (log.strip().splitlines() or ["(no message)"])[-1]


def _conflict(log: str) -> str:
    """pip's explanation of a ResolutionImpossible: the lines from 'The conflict is caused by:' on."""
    lines = log.splitlines()
    for i, ln in enumerate(lines):
        if "The conflict is caused by" in ln:
            out = []
            for x in lines[i:]:
                if x.startswith(("To fix", "Additionally", "ERROR: Resolution")):
                    break
                if x.strip():
                    out.append(x.rstrip())
            return "\n".join(out[:24])
    return _last_error(log)


# --------------------------------------------------------------------------- the checks


def resolve(reqs: list[str], py: str, *, deps: bool, local: LocalWheels, glibc: int, timeout: float,
            max_rounds: int = 12) -> dict:
    """Resolve ``reqs`` for CPython ``py`` (dry run); sdist-only pure-Python releases are built here.

    Returns ``{"ok", "install": [{name, version, file, requires_dist}], "missing": [{requirement, why}],
    "conflict", "sdist_only": [...], "seconds"}``. Without ``deps`` a missing requirement is dropped and the
    rest checked again, so that every missing one is named, not only the first.
    """
    t0 = time.perf_counter()
    todo, missing, sdist_only, conflict = list(reqs), [], [], ""
    install: list[dict] = []
    for _ in range(max_rounds):
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.json"
            args = ["install", "--dry-run", "--ignore-installed", "--report", str(report), "--find-links",
                    str(local.folder), *target_flags(py, glibc), *local.extra, *([] if deps else ["--no-deps"]),
                    *todo]
            try:
                p = run_pip(args, timeout)
            except subprocess.TimeoutExpired:
                conflict = f"pip did not finish within {timeout:.0f} s"
                break
            if p.returncode == 0:
                data = json.loads(report.read_text(encoding="utf-8"))
                install = [{"name": i["metadata"]["name"], "version": i["metadata"]["version"],
                            "file": i["download_info"]["url"].rsplit("/", 1)[-1],
                            "requires_dist": i["metadata"].get("requires_dist", [])} for i in data["install"]]
                break
        if "ResolutionImpossible" in p.log or "conflicting dependencies" in p.log:
            conflict = _conflict(p.log)
            break
        m = _NO_MATCH.search(p.log)
        if m is None:
            why = _last_error(p.log)
            conflict = ("registry error while checking: " if _NET_ERROR.search(p.log) else "") + why
            break
        req = m.group(1)
        ok, msg = local.classify(req, timeout)
        if ok:
            sdist_only.append({"requirement": req, "wheel": msg})
            continue
        missing.append({"requirement": req, "why": msg})
        if deps:
            break  # a missing transitive wheel: the set cannot install; naming one is enough
        todo = [r for r in todo if _req_name(r) != _req_name(req)]
        if not todo:
            break
    return {"ok": not missing and not conflict, "install": install, "missing": missing, "sdist_only": sdist_only,
            "conflict": conflict, "seconds": round(time.perf_counter() - t0, 1)}


def _chunks(items: list[str], n: int) -> list[list[str]]:
    n = max(1, min(n, len(items)))
    return [items[i::n] for i in range(n)]


def _merge(parts: list[dict]) -> dict:
    return {"ok": all(p["ok"] for p in parts), "install": [i for p in parts for i in p["install"]],
            "missing": [m for p in parts for m in p["missing"]],
            "sdist_only": [s for p in parts for s in p["sdist_only"]],
            "conflict": "\n".join(p["conflict"] for p in parts if p["conflict"]),
            "seconds": max((p["seconds"] for p in parts), default=0.0)}


def run_checks(pythons: list[str], *, sets: tuple[str, ...] = ("cpu", "gpu"), glibc: int = 28,
               extra: list[str] | None = None, timeout: float = 240.0, lock: list[str] | None = None,
               chunks: int = 4, do_resolve: bool = False) -> dict:
    """Every check for every Python in ``pythons`` (see the module doc); the result as a dict.

    The pins and the rest of the lock go through pip together, in ``chunks`` parallel dry runs per Python
    (pip spends its time parsing each project's file list, so a chunk that meets an sdist-only release
    and runs again costs little).
    """
    pins = pyproject_pins()
    result: dict = {"requires_python": requires_python(), "pythons": list(pythons), "glibc_max": f"2.{glibc}",
                    "pin_problems": check_pins(pins, environment_pins()), "wheels": {}, "pin_conflicts": {},
                    "lock": {}, "lock_size": 0, "resolve": {}}
    every_pin = list(dict.fromkeys(r for g in ("core", "cpu", "gpu", "dev") for r in pins.get(g, [])))
    pinned = {_req_name(r) for r in every_pin}
    # one version of each package per pip call: a second version (the gpu extra's trl) goes in its own call
    first: dict[str, str] = {}
    for r in every_pin:
        first.setdefault(_req_name(r), r)
    all_pins = list(first.values())
    alternates = [r for r in every_pin if r not in all_pins]
    lock = installed_lock() if lock is None else lock
    rest = [r for r in lock if _req_name(r) not in pinned]
    result["lock_size"] = len(lock)
    with tempfile.TemporaryDirectory(prefix="sdr-pyver-") as folder:
        local = LocalWheels(Path(folder), list(extra or []))
        kw = {"local": local, "glibc": glibc, "timeout": timeout}
        jobs = (_chunks(all_pins, max(1, chunks // 2)) + _chunks(rest, max(1, chunks - chunks // 2))
                + ([alternates] if alternates else []))
        with ThreadPoolExecutor(max_workers=max(2, len(pythons) * len(jobs))) as ex:
            futs = {py: [ex.submit(resolve, job, py, deps=False, **kw) for job in jobs if job] for py in pythons}
            rfuts = {(py, s): ex.submit(resolve, [r for g in SETS[s] for r in pins.get(g, [])], py, deps=True, **kw)
                     for py in pythons for s in sets} if do_resolve else {}
            for py, fs in futs.items():
                r = _merge([f.result() for f in fs])
                names = {canon(i["name"]) for i in r["install"]}
                result["pin_conflicts"][py] = pin_conflicts(r["install"], pins, py)
                for i in r["install"]:
                    i.pop("requires_dist", None)
                pin_part = {k: v for k, v in r.items()}
                pin_part["install"] = [i for i in r["install"] if canon(i["name"]) in pinned]
                pin_part["missing"] = [m for m in r["missing"] if _req_name(m["requirement"]) in pinned]
                pin_part["sdist_only"] = [m for m in r["sdist_only"] if _req_name(m["requirement"]) in pinned]
                pin_part["ok"] = not pin_part["missing"] and not r["conflict"] and pinned <= names
                result["wheels"][py] = pin_part
                if lock:
                    lock_part = dict(pin_part)
                    lock_part["install"] = [i for i in r["install"] if canon(i["name"]) in {_req_name(x) for x in lock}]
                    lock_part["missing"] = [m for m in r["missing"] if _req_name(m["requirement"]) not in pinned]
                    lock_part["sdist_only"] = r["sdist_only"]
                    lock_part["ok"] = not lock_part["missing"] and not r["conflict"]
                    result["lock"][py] = lock_part
            for (py, s), f in rfuts.items():
                r = f.result()
                for i in r["install"]:
                    i.pop("requires_dist", None)
                result["resolve"].setdefault(py, {})[s] = r
    result["ok"] = (not result["pin_problems"]
                    and all(r["ok"] for r in result["wheels"].values())
                    and not any(c for d in result["pin_conflicts"].values() for s, c in d.items() if s in sets)
                    and all(r["ok"] for r in result["lock"].values())
                    and all(r["ok"] for d in result["resolve"].values() for r in d.values()))
    return result


def summary(result: dict) -> str:
    out = [f"# Python versions: requires-python {result['requires_python']}; checked CPython "
           f"{', '.join(result['pythons'])} on manylinux x86_64 (glibc <= {result['glibc_max']}), PyPI only"]
    for p in result["pin_problems"]:
        out.append(f"PINS FAIL: {p}")
    if not result["pin_problems"]:
        out.append("pins: ok: every requirement an exact pin; environment.yml agrees with pyproject.toml")
    for py, r in result["wheels"].items():
        line = (f"wheels {py}: {'ok' if r['ok'] else 'FAIL'}: {len(r['install'])} pins (core, cpu, gpu, dev) have a "
                f"wheel for cp{py.replace('.', '')}")
        if r["sdist_only"]:
            line += "; sdist-only, built here to a pure-Python wheel: " + ", ".join(s["requirement"] for s in r["sdist_only"])
        out.append(line + f" ({r['seconds']} s)")
        for m in r["missing"]:
            out.append(f"  MISSING WHEEL for Python {py}: {m['requirement']}: {m['why']}")
        if r["conflict"]:
            out.append(f"  ERROR: {r['conflict']}")
        torch = [i for i in r["install"] if canon(i["name"]) == "torch"]
        if torch:
            out.append(f"  torch from PyPI: {torch[0]['file']} (a CUDA build; see the docstring)")
        for s, found in result["pin_conflicts"].get(py, {}).items():
            out.append(f"pin metadata, set {s} ({' + '.join(SETS[s])}) on {py}: " + ("ok" if not found else "CONFLICT"))
            out.extend(f"  CONFLICT: {c}" for c in found)
    for py, r in result["lock"].items():
        out.append(f"lock {py}: {'ok' if r['ok'] else 'FAIL'}: {len(r['install'])} of {result['lock_size']} packages "
                   f"of the installed cpu set (this environment) have a wheel for cp{py.replace('.', '')}"
                   + (f" (sdist-only, pure Python: {', '.join(s['requirement'] for s in r['sdist_only'])})"
                      if r["sdist_only"] else "") + f" ({r['seconds']} s)")
        for m in r["missing"]:
            out.append(f"  MISSING WHEEL for Python {py}: {m['requirement']}: {m['why']}")
        if r["conflict"]:
            out.append(f"  ERROR: {r['conflict']}")
    for py, d in result["resolve"].items():
        for s, r in d.items():
            head = f"resolve {s} ({' + '.join(SETS[s])}) for {py}:"
            if r["ok"]:
                out.append(f"{head} ok, {len(r['install'])} packages, every one a wheel ({r['seconds']} s)")
                continue
            out.append(f"{head} FAIL ({r['seconds']} s)")
            out.extend(f"  MISSING WHEEL: {m['requirement']}: {m['why']}" for m in r["missing"])
            out.extend("  " + ln for ln in r["conflict"].splitlines())
    out.append("RESULT: " + ("ok" if result["ok"] else "FAIL"))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", nargs="+", default=list(DEFAULT_PYTHONS), help="CPython versions (default 3.12 3.13)")
    ap.add_argument("--sets", default="cpu,gpu", help="install sets whose conflicts fail the check: cpu, gpu")
    ap.add_argument("--no-lock", action="store_true", help="skip the check of the installed, fully pinned cpu set")
    ap.add_argument("--resolve", action="store_true", help="also pip's full resolution of each set (slow)")
    ap.add_argument("--glibc", type=int, default=28, help="newest manylinux_2_N accepted (default 28)")
    ap.add_argument("--extra-index-url", action="append", default=[], help="passed to pip (e.g. PyTorch's CPU index)")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per pip call")
    ap.add_argument("--chunks", type=int, default=4, help="parallel pip dry runs per Python (default 4)")
    ap.add_argument("--json", default="", help="write the full result here")
    args = ap.parse_args(argv)
    sets = tuple(s for s in args.sets.split(",") if s)
    if set(sets) - set(SETS):
        ap.error(f"unknown sets {sorted(set(sets) - set(SETS))}; known: {sorted(SETS)}")
    ok, where = registry_reachable()
    if not ok:
        print(f"check_python_versions: the package registry cannot be reached ({where}); nothing checked",
              file=sys.stderr)
        return 3
    extra = [a for u in args.extra_index_url for a in ("--extra-index-url", u)]
    t0 = time.perf_counter()
    result = run_checks(args.python, sets=sets, glibc=args.glibc, extra=extra, timeout=args.timeout,
                        lock=[] if args.no_lock else None, chunks=args.chunks,
                        do_resolve=args.resolve)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(summary(result))
    print(f"# {result['seconds']} s in all")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
