"""Committed notebooks are clean: no outputs, no execution counts, one `parameters` cell, kernel `sdr`.

:func:`problems` is the rule; it is run on every committed notebook and on dirty copies (outputs,
execution counts, a lost tag), so the check is known to fail when it should.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))


def problems(nb: dict) -> list[str]:
    """What keeps notebook JSON ``nb`` from being committed: one message per problem (empty list: clean)."""
    out = []
    if nb.get("metadata", {}).get("kernelspec", {}).get("name") != "sdr":
        out.append("kernelspec is not 'sdr'")
    cells = nb.get("cells", [])
    code = [c for c in cells if c["cell_type"] == "code"]
    for i, c in enumerate(cells):
        if c["cell_type"] == "code" and (c.get("outputs") != [] or c.get("execution_count") is not None):
            out.append(f"cell {i}: outputs or execution count committed (clear all outputs before committing)")
    ids = [c.get("id") for c in cells]
    if None in ids or len(set(ids)) != len(ids):
        out.append("cell ids missing or repeated")
    params = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(params) != 1:
        out.append(f"{len(params)} cells tagged 'parameters'; papermill needs exactly one")
    elif "profile" not in "".join(params[0]["source"]):
        out.append("the parameters cell does not set 'profile'")
    first = cells[0] if cells else None
    if not (first and first["cell_type"] == "markdown" and "".join(first["source"]).startswith("# ")):
        out.append("the first cell is not a Markdown H1 title")
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_clean(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert problems(nb) == [], f"{path.name}: {problems(nb)}"


def _dirty(nb: dict, how: str) -> dict:
    nb = copy.deepcopy(nb)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    params = next(c for c in code if "parameters" in c["metadata"].get("tags", []))
    if how == "outputs":
        code[-1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]}]
    elif how == "execution_count":
        code[0]["execution_count"] = 3
    elif how == "untagged":
        params["metadata"]["tags"].remove("parameters")
    elif how == "two_parameter_cells":
        code[-1].setdefault("metadata", {})["tags"] = ["parameters"]
    elif how == "kernel":
        nb["metadata"]["kernelspec"]["name"] = "python3"
    elif how == "duplicate_id":
        nb["cells"][1]["id"] = nb["cells"][0]["id"]
    return nb


@pytest.mark.parametrize("how", ["outputs", "execution_count", "untagged", "two_parameter_cells", "kernel",
                                 "duplicate_id"])
def test_dirty_notebooks_are_caught(how):
    """Each way a notebook saved from JupyterLab can go wrong is reported, for every committed notebook."""
    assert NOTEBOOKS, "no notebooks found"
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert problems(_dirty(nb, how)), f"{path.name}: {how} not caught"


def test_notebooks_are_numbered_uniquely():
    numbers = [p.name[:2] for p in NOTEBOOKS]
    assert len(numbers) == len(set(numbers))
