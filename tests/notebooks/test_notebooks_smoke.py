"""End to end: ``run_all.sh --profile smoke`` over every notebook that exists, into a temporary root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_run_all_smoke(tmp_path):
    proc = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", "smoke", "--out", str(tmp_path),
                           "--cell-timeout", "900"], capture_output=True, text=True, timeout=3000)
    sys.stdout.write(proc.stdout[-4000:])
    sys.stderr.write(proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    executed = sorted((tmp_path / "runs" / "smoke" / "notebooks").glob("*.ipynb"))
    sources = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [p.name for p in executed] == [p.name for p in sources]
    assert not list((ROOT / "notebooks").glob("*.ipynb.out"))
    # every executed cell reads well: <= 40 lines and 4,000 characters of output, no raw progress bar (issue 26;
    # the rule is sdrlib.utils.output_problems, also run on any run by scripts/check_notebook_outputs.py)
    import json

    from sdrlib.utils import output_problems

    # every notebook ends in a conclusion written from its result files, and it printed something
    for p in executed:
        cells = [c for c in json.loads(p.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"
                 and "conclusion" in c.get("metadata", {}).get("tags", [])]
        assert cells and any(o.get("text") or o.get("data") for o in cells[-1].get("outputs", [])), \
            f"{p.name}: no printed conclusion"
    noisy = {p.name: output_problems(json.loads(p.read_text(encoding="utf-8"))) for p in executed}
    noisy = {k: v for k, v in noisy.items() if v}
    assert not noisy, "executed smoke notebooks with unreadable outputs: " + "; ".join(
        f"{k}: {', '.join(v)}" for k, v in noisy.items())
    # every notebook wrote its outputs under the temporary root, not the checkout
    if sources:
        assert any((tmp_path / "results").glob("*.csv"))
        # the README's "Expected results" block written from this run passes its own number check
        from sdrlib.experiments import claims, conclusions
        block = claims.marked_block(claims.results_section(tmp_path / "results"))
        assert claims.numbers_in(block) and claims.check_block(block, tmp_path / "results") == []
        # ... in both modes of scripts/readme_numbers.py --check (issue 39): exact on this run's own machine record,
        # tolerant against a README that records another kernel path (the conclusions and corpus statistics only)
        machine = json.loads((tmp_path / "results" / "machine.json").read_text())
        assert machine["kernel_path"] in ("avx2", "native") and machine["cpu_model"] and machine["versions"]["torch"]
        readme = tmp_path / "README.md"
        readme.write_text(claims.BEGIN + block + claims.END + "\n")
        script = [sys.executable, str(ROOT / "scripts" / "readme_numbers.py"), str(tmp_path / "results"),
                  "--check", str(readme)]
        exact = subprocess.run(script, capture_output=True, text=True)
        assert exact.returncode == 0 and "exact check" in exact.stderr, exact.stdout + exact.stderr
        other = conclusions.readme_machine(block)
        other["kernel_path"] = "custom: ATEN_CPU_CAPABILITY=default"
        readme.write_text(readme.read_text().replace(json.dumps(conclusions.readme_machine(block), sort_keys=True),
                                                     json.dumps(other, sort_keys=True)))
        tolerant = subprocess.run(script, capture_output=True, text=True)
        assert tolerant.returncode == 0 and "tolerant check (kernel path" in tolerant.stderr, tolerant.stderr
        # docs/glossary.md defines the column header of every table this run wrote, CSV and Markdown (issue 38;
        # the rule: tests/glossary_terms.py, the README / notebook terms: tests/project/test_glossary.py)
        from glossary_terms import report, table_headers, undefined

        headers = table_headers(tmp_path / "results")
        missing = undefined(headers)
        assert len(headers) > 100 and not missing, (
            "docs/glossary.md does not define these column headers of the smoke run's tables:\n"
            + report(missing, headers))


def test_run_all_rejects_bad_profile_and_names_failing_cell(tmp_path):
    bad = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "profile 'nope' not found" in bad.stderr
    cfg = tmp_path / "broken.yaml"
    cfg.write_text("extends: smoke\ndata:\n  n_train: many\n")
    bad = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", str(cfg)], capture_output=True, text=True)
    assert bad.returncode == 2 and "expected an integer" in bad.stderr


def _write_nb(path: Path, cells: list[tuple[str, str]]) -> Path:
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


def _summary_rows(root: Path) -> list[dict]:
    import csv

    with (root / "results" / "run_summary.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_runner_reports_failed_cell(tmp_path, monkeypatch, capsys):
    """A failing cell stops the run with exit 1 and a message naming notebook and cell; the summary says so."""
    from sdrlib import runner

    nb_dir = tmp_path / "notebooks"
    _write_nb(nb_dir / "01_ok.ipynb", [("md", "# ok"), ("params", 'profile: str = "cpu"'), ("code", "x = 1")])
    _write_nb(nb_dir / "02_fail.ipynb", [("md", "# fail"), ("params", 'profile: str = "cpu"'),
                                         ("code", "y = 2"), ("code", "raise RuntimeError('boom')")])
    _write_nb(nb_dir / "03_never.ipynb", [("md", "# never"), ("params", 'profile: str = "cpu"')])
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "out"))
    monkeypatch.setattr(runner, "discover", lambda folder=None: runner.__dict__["_discover_in"](nb_dir))
    rc = runner.run("smoke", cell_timeout=120)
    assert rc == 1
    executed = sorted(p.name for p in (tmp_path / "out" / "runs" / "smoke" / "notebooks").glob("*.ipynb"))
    assert executed == ["01_ok.ipynb", "02_fail.ipynb"]
    rows = _summary_rows(tmp_path / "out")
    # cell 4: md, params, injected parameters, y = 2, raise
    assert [(r["notebook"], r["status"]) for r in rows] == [
        ("01_ok.ipynb", "ok"), ("02_fail.ipynb", "failed at cell 4"), ("03_never.ipynb", "skipped")]
    assert "RuntimeError: boom" in rows[1]["detail"]
    out = capsys.readouterr().out
    assert "| 02_fail.ipynb | failed at cell 4: RuntimeError: boom |" in out
    rc = runner.run("smoke", only=["01"], cell_timeout=120)
    assert rc == 0
    assert [r["status"] for r in _summary_rows(tmp_path / "out")] == ["ok", "skipped", "skipped"]


def test_runner_refuses_a_stale_kernel_before_any_work(tmp_path, monkeypatch, capsys):
    """A kernel registered by a moved or deleted checkout: exit 2, a message with the fix, nothing run."""
    import json

    from sdrlib import runner

    kdir = tmp_path / "jupyter" / "kernels" / "sdrstale"
    kdir.mkdir(parents=True)
    (kdir / "kernel.json").write_text(json.dumps({"argv": [str(tmp_path / "gone" / "python"), "-m", "ipykernel_launcher",
                                                           "-f", "{connection_file}"],
                                                  "display_name": "stale", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "out"))
    assert runner.run("smoke", kernel="sdrstale") == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "ipykernel install" in err
    assert not (tmp_path / "out" / "runs").exists()
    assert runner.run("smoke", kernel="no-such-kernel-here") == 2
    assert "not registered" in capsys.readouterr().err


def _fake_papermill(monkeypatch, behaviour):
    """Stub papermill and the kernel registry; ``behaviour[name]`` says what "running" notebook ``name`` does."""
    import types

    pm = types.ModuleType("papermill")

    class PapermillExecutionError(Exception):
        def __init__(self, cell_index, exec_count, ename, evalue):
            super().__init__(evalue)
            self.cell_index, self.exec_count, self.ename, self.evalue = cell_index, exec_count, ename, evalue

    def execute_notebook(src, dest, **kw):
        Path(dest).write_text("{}")  # papermill writes the executed copy as it goes
        what = behaviour.get(Path(src).name, "ok")
        if what == "cell":
            raise PapermillExecutionError(5, 3, "ValueError", "bad value")
        if what == "died":
            raise RuntimeError("Kernel died before replying to kernel_info")
        if what == "ctrl-c":
            raise KeyboardInterrupt

    pm.PapermillExecutionError, pm.execute_notebook = PapermillExecutionError, execute_notebook
    ks = types.ModuleType("jupyter_client.kernelspec")
    ks.NoSuchKernel = type("NoSuchKernel", (Exception,), {})
    ks.KernelSpecManager = lambda: types.SimpleNamespace(
        get_kernel_spec=lambda name: types.SimpleNamespace(argv=[sys.executable]))
    monkeypatch.setitem(sys.modules, "papermill", pm)
    monkeypatch.setitem(sys.modules, "jupyter_client.kernelspec", ks)


@pytest.mark.parametrize("behaviour, rc, statuses", [
    ({}, 0, ["ok", "ok", "ok", "ok"]),
    ({"02_b.ipynb": "cell"}, 1, ["ok", "ok", "failed at cell 5", "skipped"]),
    ({"01_a.ipynb": "died"}, 1, ["ok", "failed", "skipped", "skipped"]),
])
def test_runner_writes_the_run_summary(tmp_path, monkeypatch, capsys, behaviour, rc, statuses):
    """Every run leaves results/run_summary.{md,csv}: per notebook status, seconds and executed copy; run fields."""
    from sdrlib import runner

    nb_dir = tmp_path / "notebooks"
    for name in ("00_z.ipynb", "01_a.ipynb", "02_b.ipynb", "03_c.ipynb"):
        _write_nb(nb_dir / name, [("md", "# t"), ("params", 'profile = "cpu"')])
    _fake_papermill(monkeypatch, behaviour)
    monkeypatch.setattr(runner, "discover", lambda folder=None: runner.__dict__["_discover_in"](nb_dir))
    monkeypatch.setattr(runner, "git_commit", lambda **kw: "abc1234")
    out_root = tmp_path / "out"
    assert runner.main(["--profile", "smoke", "--out", str(out_root)]) == rc
    rows = _summary_rows(out_root)
    assert [r["status"] for r in rows] == statuses
    assert [r["notebook"] for r in rows] == ["00_z.ipynb", "01_a.ipynb", "02_b.ipynb", "03_c.ipynb"]
    for r in rows:
        assert (r["profile"], r["seed"], r["git_commit"]) == ("smoke", str(runner.load_profile("smoke").seed),
                                                               "abc1234")
        assert r["started_at"][:4].isdigit() and float(r["total_seconds"]) >= 0
        ran = r["status"] != "skipped"
        assert (r["seconds"] != "") == ran and bool(r["executed"]) == ran
        if ran:
            assert Path(r["executed"]) == out_root / "runs" / "smoke" / "notebooks" / r["notebook"]
            assert Path(r["executed"]).exists()
        else:
            assert "earlier notebook" in r["detail"]
    md = (out_root / "results" / "run_summary.md").read_text()
    printed = capsys.readouterr().out
    assert md in printed and "git commit: `abc1234`" in md and "seed:" in md and "total:" in md
    if rc:
        bad = next(r for r in rows if r["status"].startswith("failed"))
        assert bad["detail"] in ("ValueError: bad value", "RuntimeError: Kernel died before replying to kernel_info")
        assert f"result: {bad['notebook']} {bad['status']}" in md
    else:
        assert "result: 4 of 4 notebooks ok" in md


def test_runner_summary_on_ctrl_c_and_for_unselected_notebooks(tmp_path, monkeypatch):
    """Ctrl-C still leaves the summary (the interrupted notebook named); --only marks the others not selected."""
    from sdrlib import runner

    nb_dir = tmp_path / "notebooks"
    for name in ("00_z.ipynb", "01_a.ipynb", "02_b.ipynb"):
        _write_nb(nb_dir / name, [("md", "# t"), ("params", 'profile = "cpu"')])
    _fake_papermill(monkeypatch, {"01_a.ipynb": "ctrl-c"})
    monkeypatch.setattr(runner, "discover", lambda folder=None: runner.__dict__["_discover_in"](nb_dir))
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "out"))
    with pytest.raises(KeyboardInterrupt):
        runner.run("smoke")
    rows = _summary_rows(tmp_path / "out")
    assert [r["status"] for r in rows] == ["ok", "interrupted", "skipped"]
    assert "Ctrl-C" in rows[1]["detail"]
    assert runner.run("smoke", only=["02"]) == 0
    rows = _summary_rows(tmp_path / "out")
    assert [(r["status"], r["detail"]) for r in rows] == [("skipped", "not selected"), ("skipped", "not selected"),
                                                          ("ok", "")]
    md = (tmp_path / "out" / "results" / "run_summary.md").read_text()
    assert "result: 1 of 1 notebooks ok (2 not selected)" in md
