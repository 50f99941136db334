"""The package keeps its layers: import-linter's contracts (pyproject.toml) hold, our private-names contract
finds what it should, and in-package imports sit at module level unless the module they defer is heavy.

The "Architecture" section of docs/extending.md lists the layers; ``.venv/bin/lint-imports`` (from the repository
root) checks them by hand.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from scripts.lint_contracts import private_name_imports  # noqa: E402

#: modules whose import time is dominated by these: an sdrlib module importing one of them at module level
#: may be imported inside a function (deferring it is the point)
HEAVY = ("torch", "transformers", "trl", "sentence_transformers", "peft", "accelerate", "datasets", "ot",
         "sklearn", "evaluate", "numba", "matplotlib", "seaborn", "papermill", "openai", "radgraph", "nltk")


def test_import_linter_contracts_hold():
    exe = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report[-6000:]
    assert "broken" not in report.split("Contracts:")[-1].split("\n")[0] or " 0 broken" in report, report[-3000:]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_private_names_contract_catches_from_import_and_attribute_use(tmp_path, monkeypatch):
    _write(tmp_path, {
        "toypkg/__init__.py": "",
        "toypkg/low/__init__.py": "",
        "toypkg/low/engine.py": "def _cosines():\n    return 1\n\ndef cosines():\n    return _cosines()\n",
        "toypkg/low/user.py": "from toypkg.low.engine import _cosines\n",            # same package: allowed
        "toypkg/high.py": """\
            from toypkg.low.engine import _cosines, cosines
            from toypkg.low import engine
            import toypkg.low.engine as eng

            def f():
                from .low.engine import _cosines as c
                return engine._cosines() + eng._cosines() + engine.cosines() + c()
            """,
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = {"toypkg", "toypkg.low", "toypkg.low.engine", "toypkg.low.user", "toypkg.high"}
    hits = [text for _, text in private_name_imports("toypkg.high", "toypkg", modules)]
    assert "from toypkg.low.engine import _cosines" in hits
    assert any(h.startswith("engine._cosines") for h in hits)
    assert any(h.startswith("eng._cosines") for h in hits)
    assert sum("import _cosines" in h for h in hits) == 2       # the relative import inside f() too
    assert not any("cosines()" in h or h.startswith("engine.cosines") for h in hits)
    assert private_name_imports("toypkg.low.user", "toypkg", modules) == []


def _module_names() -> set[str]:
    names = set()
    for path in (ROOT / "sdrlib").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


_MODULES = _module_names()


def _modules() -> dict[str, tuple[Path, list[str]]]:
    """sdrlib module name -> (file, its name parts as a package base for relative imports)."""
    out = {}
    for path in sorted((ROOT / "sdrlib").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, parts if is_pkg else parts[:-1])
    return out


def _calls_heavy_at_import(tree: ast.Module, base: list[str]) -> bool:
    """Whether module-level code (a class base, a constant) calls a function of this module that imports a
    HEAVY library: ``class P(_processor_base()):`` imports transformers when the module is imported."""
    heavy_fns = {fn.name for fn in tree.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and any(t.split(".")[0] in HEAVY for node in ast.walk(fn) for t in _targets(node, base))}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        parts = stmt.bases + stmt.decorator_list if isinstance(stmt, ast.ClassDef) else [stmt]
        for part in parts:
            for node in ast.walk(part):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in heavy_fns:
                    return True
    return False


def _targets(node: ast.AST, base: list[str]) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            b = base[: len(base) - (node.level - 1)]
            mod = ".".join(b + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        subs = [f"{mod}.{a.name}" for a in node.names]
        return subs if all(m in _MODULES for m in subs) else [mod] + subs  # "from pkg import mod": mod only
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return []


def _imports(tree: ast.Module, base: list[str]) -> tuple[list[str], list[str]]:
    """(module-level imports, imports inside functions) of one parsed module."""
    inside: set[int] = set()
    deferred: list[str] = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if id(node) not in inside:
                    inside.add(id(node))
                    deferred += _targets(node, base)
    top = [t for node in ast.walk(tree) if id(node) not in inside for t in _targets(node, base)]
    return top, deferred


def heavy_modules() -> set[str]:
    """sdrlib modules whose import pulls a HEAVY library, through module-level imports (static, transitive)."""
    mods = _modules()
    graph, heavy = {}, set()
    for name, (path, base) in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top, _ = _imports(tree, base)
        graph[name] = {t for t in top if t in mods}
        if any(t.split(".")[0] in HEAVY for t in top) or _calls_heavy_at_import(tree, base):
            heavy.add(name)
    changed = True
    while changed:
        changed = False
        for name, deps in graph.items():
            if name not in heavy and deps & heavy:
                heavy.add(name)
                changed = True
    return heavy


#: deferred imports of light modules, and why (none now: a command that ``python -m`` runs lives in a module nothing
#: imports, e.g. ``sdrlib/data/standin/__main__.py``, so runpy has no imported module to warn about)
DEFERRED_LIGHT: set[tuple[str, str]] = set()


def test_in_package_imports_are_module_level_unless_the_module_is_heavy():
    mods = _modules()
    heavy = heavy_modules()
    light: dict[str, list[str]] = {}
    for name, (path, base) in mods.items():
        _, deferred = _imports(ast.parse(path.read_text(encoding="utf-8")), base)
        bad = sorted({t for t in deferred if t in mods and t not in heavy and (name, t) not in DEFERRED_LIGHT})
        if bad:
            light[name] = bad
    assert not light, ("in-package imports inside functions, of modules that are light to import (move them to "
                       f"the top of the module, or say why in a comment here): {light}")
