"""Every result table name is defined once (sdrlib.table_names): each table a notebook writes is named by it, each
name there is written, and the readers (the README claims, the figure index) name defined tables only."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from sdrlib import table_names
from sdrlib.experiments import claims, conclusions
from sdrlib.results import FIGURE_INDEX

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
#: tables written outside a notebook's save_table call, and the module that writes each
ELSEWHERE = {table_names.RUN_SUMMARY: "sdrlib/runner.py", table_names.HEADLINE: "sdrlib/experiments/grpo_report.py",
             table_names.CONCLUSIONS: "sdrlib/experiments/conclusions.py"}


def _family_key(fn_name: str, call: ast.Call) -> str:
    """The :data:`table_names.TABLES` key of a family function's call: its positional parameters as ``<name>``,
    its keyword arguments as written (literals)."""
    fn = getattr(table_names, fn_name)
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    return fn(*[f"<{p.name}>" for p in params], **{k.arg: ast.literal_eval(k.value) for k in call.keywords})


def _written(path: Path) -> list[str]:
    """The table names the ``save_table`` calls of a notebook script write (a family as its TABLES key); a name
    that is not built from :mod:`sdrlib.table_names` fails the test."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "save_table"):
            continue
        arg = node.args[1]
        where = f"{path.name}:{node.lineno}"
        if isinstance(arg, ast.Attribute) and getattr(arg.value, "id", None) == "table_names":
            out.append(getattr(table_names, arg.attr))
        elif (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute)
              and getattr(arg.func.value, "id", None) == "table_names"):
            out.append(_family_key(arg.func.attr, arg))
        else:
            pytest.fail(f"{where}: save_table names its table with {ast.unparse(arg)}, not sdrlib.table_names")
    return out


def _matches(name: str) -> bool:
    """Whether ``name`` (``*`` allowed) is a defined table or a member of a defined family."""
    for key in table_names.TABLES:
        pattern = "^" + re.sub(r"<\w+>", r"[\\w*]+", re.escape(key).replace(r"\<", "<").replace(r"\>", ">")) + "$"
        if re.match(pattern, name):
            return True
    return False


def test_every_table_a_notebook_writes_is_defined_and_every_defined_one_is_written():
    written = {name for nb in NOTEBOOKS for name in _written(nb)}
    assert NOTEBOOKS and len(written) > 50
    assert not written - set(table_names.TABLES), "written but not in sdrlib.table_names.TABLES"
    never = set(table_names.TABLES) - written - set(ELSEWHERE)
    assert not never, f"defined in sdrlib.table_names but no notebook writes them: {sorted(never)}"
    for name, module in ELSEWHERE.items():
        assert name in (ROOT / module).read_text(encoding="utf-8"), (name, module)
    assert conclusions.TABLE == table_names.CONCLUSIONS


def test_each_name_is_defined_once_with_a_description():
    constants = {a: getattr(table_names, a) for a in table_names.__all__ if a.isupper() and a not in ("TABLES",
                                                                                                     "SECTIONS")}
    assert all(isinstance(v, str) for v in constants.values())
    assert all(_matches(v) for v in constants.values())
    assert all(what.strip() and "\n" not in what for what in table_names.TABLES.values())
    with pytest.raises(TypeError):
        table_names.TABLES["new"] = "x"  # read-only


def test_readers_name_defined_tables():
    for group in claims.GROUPS.values():
        assert all(_matches(n) for n in (*group.needs, *group.reads)), group
    for e in FIGURE_INDEX:
        if e.kind == "table":
            assert all(_matches(alt) for alt in e.name.split("|")), e.name


def test_families():
    assert table_names.grpo_group("headline", "findings") == table_names.GRPO_HEADLINE_FINDINGS
    assert table_names.selection_headline("findings", val=True) == "05_headline_findings_val"
    assert table_names.pruning_section("impression") == "06_pruning_impression"
    assert not _matches("06_pruning") and not _matches("grpo_headline") and not _matches("nope")


def test_a_table_family_refuses_a_section_that_is_none():
    import pytest

    from sdrlib import table_names

    assert table_names.grpo_group("headline", "findings") == "grpo_headline_findings"
    for make in (lambda s: table_names.grpo_group("headline", s), table_names.selection_headline,
                 table_names.pruning_section):
        with pytest.raises(ValueError, match="'Findings': a table is per report section"):
            make("Findings")
