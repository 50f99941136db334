"""The runner's run summary (``results/run_summary.{md,csv}``), its kernel checks and ``run_all.sh``'s refusals.

Papermill and the kernel registry are stubbed (:func:`_fake_papermill`), so nothing runs for real; a notebook that
really executes is in ``tests/notebooks/test_notebooks_smoke.py``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runner_helpers import install_fakes, summary_rows, write_nb

ROOT = Path(__file__).resolve().parents[2]


def test_run_all_rejects_bad_profile_and_names_failing_cell(tmp_path):
    bad = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "profile 'nope' not found" in bad.stderr
    cfg = tmp_path / "broken.yaml"
    cfg.write_text("extends: smoke\ndata:\n  n_train: many\n")
    bad = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", str(cfg)], capture_output=True, text=True)
    assert bad.returncode == 2 and "expected an integer" in bad.stderr


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
    install_fakes(monkeypatch, pm)


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
        write_nb(nb_dir / name, [("md", "# t"), ("params", 'profile = "cpu"')])
    _fake_papermill(monkeypatch, behaviour)
    monkeypatch.setattr(runner, "discover", lambda folder=None: runner.__dict__["_discover_in"](nb_dir))
    monkeypatch.setattr(runner, "git_commit", lambda **kw: "abc1234")
    out_root = tmp_path / "out"
    assert runner.main(["--profile", "smoke", "--out", str(out_root)]) == rc
    rows = summary_rows(out_root)
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
        write_nb(nb_dir / name, [("md", "# t"), ("params", 'profile = "cpu"')])
    _fake_papermill(monkeypatch, {"01_a.ipynb": "ctrl-c"})
    monkeypatch.setattr(runner, "discover", lambda folder=None: runner.__dict__["_discover_in"](nb_dir))
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "out"))
    with pytest.raises(KeyboardInterrupt):
        runner.run("smoke")
    rows = summary_rows(tmp_path / "out")
    assert [r["status"] for r in rows] == ["ok", "interrupted", "skipped"]
    assert "Ctrl-C" in rows[1]["detail"]
    assert runner.run("smoke", only=["02"]) == 0
    rows = summary_rows(tmp_path / "out")
    assert [(r["status"], r["detail"]) for r in rows] == [("skipped", "not selected"), ("skipped", "not selected"),
                                                          ("ok", "")]
    md = (tmp_path / "out" / "results" / "run_summary.md").read_text()
    assert "result: 1 of 1 notebooks ok (2 not selected)" in md


def test_the_environments_own_kernel_wins_over_a_stale_user_level_one(tmp_path, monkeypatch):
    """Before: setting up a second clone re-pointed the user-level kernel ``sdr`` to that clone's ``.venv``, and every
    other checkout's run_all.sh stopped ("points to .../.venv/bin/python, which does not exist") or ran the other
    interpreter. Now the environment's own registration (``scripts/setup.sh``: ``--sys-prefix``) is taken."""
    import json
    import sys

    from jupyter_client.kernelspec import KernelSpecManager

    from sdrlib import runner

    def kernel(root, exe):
        k = root / "kernels" / "sdr"
        k.mkdir(parents=True)
        (k / "kernel.json").write_text(json.dumps({"argv": [str(exe), "-m", "ipykernel_launcher", "-f",
                                                            "{connection_file}"], "display_name": "sdr",
                                                   "language": "python"}))
    kernel(tmp_path / "user", tmp_path / "other_clone" / ".venv" / "bin" / "python")  # stale, user-level
    kernel(tmp_path / "env" / "share" / "jupyter", sys.executable)                     # this environment's
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "user"))
    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "env"))
    assert runner._papermill("sdr") is not None
    assert KernelSpecManager().get_kernel_spec("sdr").argv[0] == sys.executable
    # a JUPYTER_PATH the caller set still comes first (the stale-kernel test above relies on it)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "user"))
    with pytest.raises(runner.UsageError, match="does not exist"):
        runner._papermill("sdr")
