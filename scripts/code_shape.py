#!/usr/bin/env python
"""Report the shape of ``sdrlib``: module sizes, the longest functions and the import graph's circles.

Usage::

    python scripts/code_shape.py                 # modules over 600 lines, functions over 80, circles
    python scripts/code_shape.py --all           # every module and every function over 40 lines
    python scripts/code_shape.py --graph         # the module import graph (one "a -> b" line per edge)
    python scripts/code_shape.py --annotations   # public functions without a return annotation

Limits (checked by ``tests/project/test_code_shape.py``): a module at most :data:`MODULE_LINES` lines
except the :data:`LARGE_BY_DESIGN` ones (the report grammar and the numba kernels, one concept each); every
function, theirs included, at most :data:`FUNCTION_LINES` lines (its ``def`` line to its last line, docstring included); no
circle in the import graph, counting imports inside functions too (a lazy import still ties two modules).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sdrlib"
MODULE_LINES = 600
FUNCTION_LINES = 80
#: one concept each, large by nature: the SynthCXR report grammar and the numba kernels
LARGE_BY_DESIGN = ("sdrlib/data/synthcxr/report.py", "sdrlib/distances/_kernels.py")


def module_name(path: Path) -> str:
    """``sdrlib/a/b.py`` -> ``sdrlib.a.b``; ``sdrlib/a/__init__.py`` -> ``sdrlib.a``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of ``sdrlib`` by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def module_sizes() -> list[tuple[int, str]]:
    """``(lines, relative path)`` per module, largest first."""
    out = [(len(p.read_text().splitlines()), str(p.relative_to(ROOT))) for p in modules().values()]
    return sorted(out, reverse=True)


def function_lengths() -> list[tuple[int, str]]:
    """``(lines, "path:qualname")`` per function or method, longest first."""
    out = []
    for p in modules().values():
        tree = ast.parse(p.read_text())
        rel = str(p.relative_to(ROOT))

        def walk(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    out.append((child.end_lineno - start + 1, f"{rel}:{prefix}{child.name}"))
                    walk(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.ClassDef):
                    walk(child, f"{prefix}{child.name}.")
                else:
                    walk(child, prefix)

        walk(tree, "")
    return sorted(out, reverse=True)


def missing_return_annotations() -> list[str]:
    """``"path:qualname"`` of every public function or method (no leading underscore, not nested in a
    function) without a return annotation."""
    out = []
    for p in modules().values():
        rel = str(p.relative_to(ROOT))

        def walk(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if not child.name.startswith("_") and child.returns is None:
                        out.append(f"{rel}:{prefix}{child.name}")
                elif isinstance(child, ast.ClassDef):
                    if not child.name.startswith("_"):
                        walk(child, f"{prefix}{child.name}.")
                elif not isinstance(child, ast.Lambda):
                    walk(child, prefix)

        walk(ast.parse(p.read_text()), "")
    return out


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(e: ast.expr) -> bool:
    return (isinstance(e, ast.Name) and e.id == "TYPE_CHECKING") or (
        isinstance(e, ast.Attribute) and e.attr == "TYPE_CHECKING")


def _never_run(node: ast.If) -> list[ast.stmt]:
    """The branch of ``node`` that never runs: the body of ``if TYPE_CHECKING:`` (or ``if TYPE_CHECKING and
    ...:``), the ``else`` of ``if not TYPE_CHECKING:``; nothing for any other test (``if not TYPE_CHECKING:`` runs
    its body: before, any test naming TYPE_CHECKING had its body left out, so a circle imported there was missed)."""
    t = node.test
    if _is_type_checking(t) or (isinstance(t, ast.BoolOp) and isinstance(t.op, ast.And)
                                and any(_is_type_checking(v) for v in t.values)):
        return node.body
    if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and _is_type_checking(t.operand):
        return node.orelse
    return []


def runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of ``tree`` that run (module level or inside functions), in walk order, the
    type-checking-only branches (:func:`_never_run`) left out."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            skip.update(id(n) for b in _never_run(node) for n in ast.walk(b))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skip]


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``sdrlib`` modules it imports (module level or inside functions; ``TYPE_CHECKING``
    blocks left out, they never run). ``from pkg import name`` counts as importing ``pkg.name`` when that is a
    module, else ``pkg``."""
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        for node in runtime_imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, path.name == "__init__.py", node)
                for a in node.names:
                    targets.append(f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base)
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != name and t.startswith("sdrlib"):
                    graph[name].add(t)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted.

    A package's ``__init__`` re-exporting its own submodules is not a circle of concepts, so edges from a
    module to a package that contains it are left out (``sdrlib.a.b -> sdrlib.a``).
    """
    edges = {a: {b for b in bs if not a.startswith(b + ".")} for a, bs in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every module, and functions over 40 lines")
    ap.add_argument("--graph", action="store_true", help="print the import graph")
    ap.add_argument("--annotations", action="store_true", help="list public functions without a return annotation")
    args = ap.parse_args(argv)
    graph = import_graph()
    if args.annotations:
        for f in missing_return_annotations():
            print(f)
        return 0
    if args.graph:
        for a in sorted(graph):
            for b in sorted(graph[a]):
                print(f"{a} -> {b}")
        return 0
    sizes = module_sizes()
    limit = 0 if args.all else MODULE_LINES
    print(f"modules over {limit} lines ({len(sizes)} modules, {sum(n for n, _ in sizes)} lines):")
    for n, p in sizes:
        if n > limit:
            print(f"  {n:5d}  {p}{'  (large by design)' if p in LARGE_BY_DESIGN else ''}")
    flimit = 40 if args.all else FUNCTION_LINES
    funcs = function_lengths()
    print(f"functions over {flimit} lines ({len(funcs)} functions):")
    for n, f in funcs:
        if n > flimit:
            print(f"  {n:5d}  {f}")
    print(f"public functions without a return annotation: {len(missing_return_annotations())} (--annotations lists them)")
    found = circles(graph)
    print(f"import circles: {len(found)}")
    for c in found:
        print("  " + " <-> ".join(c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
