"""Every module of ``sdrlib`` holds one concept: at most ``MODULE_LINES`` lines (the report grammar and the numba
kernels excepted), no function over ``FUNCTION_LINES`` lines (those two modules included), a return annotation on every public function, and
no circle in the import graph (imports inside functions count: a lazy import still ties two modules).

``python scripts/code_shape.py`` prints the same lists by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from scripts import code_shape  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(scope="module")
def import_graph() -> dict[str, set[str]]:
    """``code_shape.import_graph()`` (every sdrlib file parsed), built once for the two tests that read it."""
    return code_shape.import_graph()


def test_every_module_is_at_most_the_limit_except_the_grammar_and_the_kernels():
    over = [(n, p) for n, p in code_shape.module_sizes()
            if n > code_shape.MODULE_LINES and p not in code_shape.LARGE_BY_DESIGN]
    assert over == []


def test_no_function_is_longer_than_the_limit():
    over = [(n, f) for n, f in code_shape.function_lengths() if n > code_shape.FUNCTION_LINES]
    assert over == []


def test_every_public_function_has_a_return_annotation():
    assert code_shape.missing_return_annotations() == []


def test_the_import_graph_has_no_circle(import_graph):
    assert code_shape.circles(import_graph) == []


def test_the_circle_finder_finds_a_circle_and_ignores_a_package_importing_its_own_parts():
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": set(),
             "q": {"q.x"}, "q.x": {"q"}}
    assert code_shape.circles(graph) == [["p.a", "p.b", "p.c"]]


def test_the_graph_counts_imports_inside_functions(import_graph):
    graph = import_graph
    # sdrlib.runner imports papermill's driver lazily; the edge to sdrlib.config is what matters here
    assert any(t.startswith("sdrlib.config") for t in graph["sdrlib.runner"])


def test_only_the_type_checking_branch_that_never_runs_is_left_out():
    """Before: every ``if`` whose test named TYPE_CHECKING had its body left out, so a circle imported under
    ``if not TYPE_CHECKING:`` (a branch that runs) was not seen."""
    import ast

    src = ("from typing import TYPE_CHECKING\nimport typing\n"
           "if not TYPE_CHECKING:\n    import sdrlib.runs_a\nelse:\n    import sdrlib.never_b\n"
           "if TYPE_CHECKING:\n    import sdrlib.never_c\nelse:\n    import sdrlib.runs_d\n"
           "if typing.TYPE_CHECKING and True:\n    import sdrlib.never_e\n"
           "if TYPE_CHECKING or True:\n    import sdrlib.runs_f\n"
           "def f():\n    if not TYPE_CHECKING:\n        from sdrlib import runs_g\n")
    found = [a.name if isinstance(n, ast.Import) else f"{n.module}.{a.name}"
             for n in code_shape.runtime_imports(ast.parse(src)) for a in n.names]
    assert sorted(f for f in found if f.startswith("sdrlib")) == ["sdrlib.runs_a", "sdrlib.runs_d", "sdrlib.runs_f",
                                                                  "sdrlib.runs_g"]
