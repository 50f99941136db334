"""Committed notebooks are clean: no outputs, no execution counts, one `parameters` cell, kernel `sdr`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NB_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_clean(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "sdr"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for c in code:
        assert c.get("outputs") == [] and c.get("execution_count") is None, f"{path.name}: outputs committed"
    params = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1, f"{path.name}: needs exactly one cell tagged 'parameters'"
    assert "profile" in "".join(params[0]["source"])
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown" and "".join(first["source"]).startswith("# "), "H1 title first"


def test_notebooks_are_numbered_uniquely():
    numbers = [p.name[:2] for p in NOTEBOOKS]
    assert len(numbers) == len(set(numbers))
