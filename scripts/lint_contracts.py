"""An import-linter contract type the built-in ones lack: no module imports a *private name* of another package.

import-linter sees modules, not names: its ``private_modules`` contract stops ``import sdrlib.distances._kernels``
from outside ``sdrlib.distances``, but not ``from sdrlib.distances.engine import _cosines`` or
``engine._cosines(...)``. This contract reads the source of every module in the graph (Python's ``ast``) and
reports, for each module of a top-level package of the root (``sdrlib.rewards``, ``sdrlib.distances``, ...):

- ``from sdrlib.X... import _name`` (absolute or relative), and
- ``m._name`` where ``m`` was bound by ``import sdrlib.X... as m`` / ``from sdrlib.X import m``,

when ``sdrlib.X`` is another top-level package than the importer's. Dunder names (``__version__``) are
public. Used from ``pyproject.toml`` (``[tool.importlinter] contract_types``); ``lint-imports`` puts the
working directory on ``sys.path``, so run it from the repository root::

    .venv/bin/lint-imports
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def _top(module: str, root: str) -> str:
    """``sdrlib.distances.engine`` -> ``sdrlib.distances``; a module directly in the root is its own package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == root and len(parts) > 1 else module


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _source(module: str) -> tuple[Path, bool] | None:
    """(source file, whether it is a package) of ``module``, found on disk without importing anything: only the
    top-level package is looked up (``find_spec`` of a dotted name imports its parents, here all of sdrlib with
    numba and the distance kernels), the rest is its folders. None for a module with no ``.py`` source."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None:
        return None
    if not rest:
        ok = bool(spec.origin) and spec.origin.endswith(".py")
        return (Path(spec.origin), bool(spec.submodule_search_locations)) if ok else None
    for location in spec.submodule_search_locations or ():
        base = Path(location).joinpath(*rest)
        if (base / "__init__.py").is_file():
            return base / "__init__.py", True
        if base.with_suffix(".py").is_file():
            return base.with_suffix(".py"), False
    return None


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def private_name_imports(module: str, root: str, modules: set[str]) -> list[tuple[int, str]]:
    """(line, text) of every private name ``module`` takes from another top-level package of ``root``."""
    found = _source(module)
    if found is None:
        return []
    path, is_package = found
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    mine = _top(module, root)
    bound: dict[str, str] = {}  # local name -> the sdrlib module it is bound to
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == root:
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else root
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, module, is_package)
            if target.split(".")[0] != root:
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if full in modules:
                    bound[alias.asname or alias.name] = full
                if _private(alias.name) and _top(target, root) != mine:
                    out.append((node.lineno, f"from {target} import {alias.name}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name):
            target = bound.get(node.value.id)
            if target and _top(target, root) != mine and target != root:
                out.append((node.lineno, f"{node.value.id}.{node.attr} ({target}.{node.attr})"))
    return sorted(set(out))


class PrivateNamesContract(Contract):
    """No module of a top-level package of ``root_package`` uses a private name of another one.

    Configuration options: ``root_package`` (str).
    """

    type_name = "private_names"
    root_package = fields.StringField()

    def check(self, graph, verbose: bool) -> ContractCheck:
        root = str(self.root_package)
        modules = {m for m in graph.modules if m.split(".")[0] == root}
        broken = {}
        for module in sorted(modules):
            hits = private_name_imports(module, root, modules)
            if hits:
                broken[module] = hits
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for module, hits in check.metadata["broken"].items():
            for line, text in hits:
                output.print_error(f"{module}:{line}: {text}", bold=False)
            output.new_line()
