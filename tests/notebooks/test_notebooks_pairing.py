"""Each notebooks/NN_name.ipynb and its percent script notebooks/NN_name.py hold the same notebook.

The script is the reviewed source, the notebook is what JupyterLab and papermill open; jupytext keeps
them paired (``notebooks/jupytext.toml``). Checked here: the pairing is declared, every pair agrees
(cell types, sources, tags), a disagreement is caught, and an edit on either side survives a sync
(JupyterLab's save through jupytext's contents manager, and ``jupytext --sync`` from a shell).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext  # a dev dependency (and part of the cpu stack, for JupyterLab): missing -> an error, not a skip
import nbformat
import pytest

NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))
SCRIPTS = sorted(NB_DIR.glob("[0-9][0-9]_*.py"))


def cells_of(nb) -> list[tuple[str, str, tuple[str, ...]]]:
    """What a pair must agree on: per cell its type, source and tags."""
    return [(c.cell_type, c.source, tuple(c.get("metadata", {}).get("tags", []))) for c in nb.cells]


def disagreement(ipynb: Path, script: Path) -> str:
    """'' when ``ipynb`` and ``script`` hold the same cells and kernel; otherwise the first difference."""
    a, b = jupytext.read(ipynb), jupytext.read(script)
    ca, cb = cells_of(a), cells_of(b)
    for i, (x, y) in enumerate(zip(ca, cb)):
        if x != y:
            return f"cell {i} differs: {ipynb.name} has {x!r}, {script.name} has {y!r}"
    if len(ca) != len(cb):
        return f"{ipynb.name} has {len(ca)} cells, {script.name} has {len(cb)}"
    ka, kb = a.metadata.get("kernelspec", {}).get("name"), b.metadata.get("kernelspec", {}).get("name")
    if ka != kb:
        return f"kernel {ka!r} vs {kb!r}"
    return ""


def test_pairing_is_declared():
    from jupytext.config import load_jupytext_configuration_file

    cfg = load_jupytext_configuration_file(str(NB_DIR / "jupytext.toml"))
    formats = cfg.formats if isinstance(cfg.formats, str) else ",".join(cfg.formats)
    assert set(formats.split(",")) == {"ipynb", "py:percent"}


def test_every_notebook_has_its_script_and_back():
    assert NOTEBOOKS, "no notebooks"
    assert [p.stem for p in NOTEBOOKS] == [p.stem for p in SCRIPTS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_and_script_agree(path):
    script = path.with_suffix(".py")
    assert disagreement(path, script) == "", (f"{disagreement(path, script)}; run "
                                              f"`.venv/bin/jupytext --sync notebooks/{path.name}` and commit both")
    text = script.read_text(encoding="utf-8")
    assert '# %% tags=["parameters"]' in text and "# %% [markdown]" in text  # percent format, tag in the header


@pytest.mark.parametrize("edit", ["source", "tag", "cell_type", "extra_cell", "kernel"])
def test_a_disagreement_is_caught(tmp_path, edit):
    """Each kind of drift between the two files makes the comparison fail (so the check can fail)."""
    src = NOTEBOOKS[0]
    ipynb, script = tmp_path / src.name, tmp_path / src.with_suffix(".py").name
    shutil.copy(src, ipynb)
    nb = jupytext.read(src.with_suffix(".py"))
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    if edit == "source":
        params.source = params.source.replace('"cpu"', '"smoke"')
    elif edit == "tag":
        params.metadata["tags"] = []
    elif edit == "cell_type":
        nb.cells[0] = nbformat.v4.new_code_cell(nb.cells[0].source)
    elif edit == "extra_cell":
        nb.cells.append(nbformat.v4.new_code_cell("print('only in the script')"))
    elif edit == "kernel":
        nb.metadata["kernelspec"]["name"] = "python3"
    jupytext.write(nb, script, fmt="py:percent")
    assert disagreement(ipynb, script) != ""


@pytest.fixture()
def pair(tmp_path):
    """A copy of the first notebook, its script and the jupytext config, in a temp folder."""
    src = NOTEBOOKS[0]
    for p in (src, src.with_suffix(".py"), NB_DIR / "jupytext.toml"):
        shutil.copy(p, tmp_path / p.name)
    return tmp_path / src.name, tmp_path / src.with_suffix(".py").name


def _edit_as_in_jupyterlab(nb):
    """A user's session: change the parameters, add a Markdown and a code cell, run a cell (outputs)."""
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = params.source.replace("n_examples: int = 6", "n_examples: int = 9")
    nb.cells.insert(3, nbformat.v4.new_markdown_cell("## A note added in JupyterLab"))
    nb.cells.append(nbformat.v4.new_code_cell("print('added in JupyterLab')"))
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", text="ran\n")]
    nb.cells[2].execution_count = 1
    return nb


def test_jupyterlab_save_updates_the_script(pair):
    """JupyterLab saves through jupytext's contents manager: the paired script gets the edit on save."""
    from jupytext import TextFileContentsManager

    ipynb, script = pair
    ids_before = [c.id for c in nbformat.read(ipynb, as_version=4).cells]
    cm = TextFileContentsManager(root_dir=str(ipynb.parent))
    nb = _edit_as_in_jupyterlab(cm.get(ipynb.name)["content"])
    cm.save({"type": "notebook", "format": "json", "content": nb}, ipynb.name)
    text = script.read_text(encoding="utf-8")
    assert "n_examples: int = 9" in text and "# ## A note added in JupyterLab" in text
    assert "print('added in JupyterLab')" in text and "ran\n" not in text  # outputs stay in the notebook
    assert disagreement(ipynb, script) == ""
    saved = nbformat.read(ipynb, as_version=4)
    assert saved.cells[2].outputs and [c.id for c in saved.cells][:3] == ids_before[:3]
    # reopening (the script is the newer file) gives the same notebook, outputs included
    again = cm.get(ipynb.name)["content"]
    assert cells_of(again) == cells_of(saved) and again.cells[2].outputs == saved.cells[2].outputs


def _sync(path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "jupytext", "--sync", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_jupytext_sync_round_trip_both_ways(pair):
    """Edit the notebook -> sync -> the script has it; edit the script -> sync -> the notebook has it."""
    ipynb, script = pair
    nb = _edit_as_in_jupyterlab(nbformat.read(ipynb, as_version=4))
    nbformat.write(nb, ipynb)
    os.utime(script, (ipynb.stat().st_mtime - 10,) * 2)  # the notebook is the newer file
    _sync(ipynb)
    assert "n_examples: int = 9" in script.read_text() and "print('added in JupyterLab')" in script.read_text()
    assert disagreement(ipynb, script) == ""
    assert cells_of(nbformat.read(ipynb, as_version=4)) == cells_of(nb)  # the notebook re-reads as edited

    # the other way: a reviewer edits the script; sync keeps the outputs and ids of untouched cells
    ids = [c.id for c in nbformat.read(ipynb, as_version=4).cells]
    text = script.read_text().replace("probe_size: int = 32", "probe_size: int = 16")
    script.write_text(text + "\n# %%\nprint('added in the script')\n")
    os.utime(script, (ipynb.stat().st_mtime + 10,) * 2)  # the script is the newer file
    _sync(script)
    back = nbformat.read(ipynb, as_version=4)
    params = next(c for c in back.cells if "parameters" in c.metadata.get("tags", []))
    assert "probe_size: int = 16" in params.source and back.cells[-1].source == "print('added in the script')"
    assert [c.id for c in back.cells][:-1] == ids and back.cells[2].outputs  # stable ids, outputs kept
    assert disagreement(ipynb, script) == ""
    json.loads(ipynb.read_text())  # still valid JSON
