"""Build a clean notebook from a list of cells (used by the ``tools/nb_*.py`` builders).

Cells are ``("md", text)``, ``("code", source)`` or ``("params", source)``; the
``params`` cell gets papermill's ``parameters`` tag. The written notebook has no
outputs and no execution counts, with the ``sdr`` kernel recorded, so the
committed source stays clean (``tests/test_notebooks_clean.py`` checks it).

Example::

    build("notebooks/01_embedding.ipynb", [("md", "# 01 · Embedding"), ("params", 'profile: str = "cpu"')])
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

KERNELSPEC = {"name": "sdr", "display_name": "Python (sdr)", "language": "python"}


def build(path: str | Path, cells: list[tuple[str, str]]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    for i, (kind, src) in enumerate(cells):
        src = src.strip("\n")
        if kind == "md":
            cell = nbformat.v4.new_markdown_cell(src)
        elif kind in ("code", "params"):
            cell = nbformat.v4.new_code_cell(src)
            if kind == "params":
                cell.metadata["tags"] = ["parameters"]
        else:
            raise ValueError(f"cell {i}: unknown kind {kind!r}")
        cell["id"] = f"c{i:03d}"  # stable ids: rebuilding gives identical bytes
        nb.cells.append(cell)
    nbformat.validate(nb)
    path = Path(path)
    if not path.is_absolute():  # relative to the repository root, wherever the builder runs from
        path = Path(__file__).resolve().parent.parent / path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use build() from a tools/nb_*.py builder")
