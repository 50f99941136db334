"""Every notebook ends in a conclusion generated from its own result files (issue "Notebooks that teach").

The conclusion is the notebook's last code cell, tagged ``conclusion``; it reads the notebook's result files
(``cfg.results_dir``) and prints sentences written by a tested ``sdrlib`` function, so the words follow the numbers
of the run. The smoke run (``test_notebooks_smoke.py::test_run_all_smoke``) checks that each executed conclusion
cell printed something.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def conclusion_cells(nb: dict) -> list[dict]:
    """The code cells tagged ``conclusion``."""
    return [c for c in nb["cells"] if c["cell_type"] == "code" and "conclusion" in c.get("metadata", {}).get("tags", [])]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_ends_in_a_conclusion_read_from_its_result_files(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    tagged = conclusion_cells(nb)
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged 'conclusion' (want one: the last code cell)"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code[-1] is tagged[0], f"{path.name}: the conclusion is not the last code cell"
    src = "".join(tagged[0]["source"])
    assert "results_dir" in src, f"{path.name}: the conclusion cell does not read the run's result files"
    assert len(src.splitlines()) <= 25, f"{path.name}: the conclusion cell has logic in it (> 25 lines)"


def test_the_check_finds_a_notebook_without_one():
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": ["print(1)"]}]}
    assert conclusion_cells(nb) == []
    nb["cells"][0]["metadata"]["tags"] = ["conclusion"]
    assert len(conclusion_cells(nb)) == 1
