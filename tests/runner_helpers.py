"""Notebook files, run summaries and a stubbed papermill for the runner's tests (``tests/runner/``,
``tests/notebooks/test_notebooks_smoke.py``)."""

from __future__ import annotations

import sys
import types
from pathlib import Path


def write_nb(path: Path, cells: list[tuple[str, str]]) -> Path:
    """A clean notebook from ``(kind, source)`` cells; kind ``md``, ``code`` or ``params`` (tagged)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "sdr", "display_name": "Python (sdr)", "language": "python"}
    for kind, src in cells:
        cell = nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
        if kind == "params":
            cell.metadata["tags"] = ["parameters"]
        nb.cells.append(cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def summary_rows(root: Path) -> list[dict]:
    import csv

    with (root / "results" / "run_summary.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def install_fakes(monkeypatch, pm: types.ModuleType) -> types.ModuleType:
    """Install ``pm`` as papermill and a kernel registry whose every kernel is this interpreter (nothing runs for
    real); returns the registry module (``NoSuchKernel``, ``KernelSpecManager``) for a test to change."""
    ks = types.ModuleType("jupyter_client.kernelspec")
    ks.NoSuchKernel = type("NoSuchKernel", (Exception,), {})
    ks.KernelSpecManager = lambda: types.SimpleNamespace(
        get_kernel_spec=lambda name: types.SimpleNamespace(argv=[sys.executable]))
    monkeypatch.setitem(sys.modules, "papermill", pm)
    monkeypatch.setitem(sys.modules, "jupyter_client.kernelspec", ks)
    return ks
