"""End to end: ``run_all.sh --profile smoke`` over every notebook that exists, into a temporary root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
    # every notebook wrote its outputs under the temporary root, not the checkout
    if sources:
        assert any((tmp_path / "results").glob("*.csv"))


def test_run_all_rejects_bad_profile_and_names_failing_cell(tmp_path):
    bad = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "profile 'nope' not found" in bad.stderr
    cfg = tmp_path / "broken.yaml"
    cfg.write_text("extends: smoke\ndata:\n  n_train: many\n")
    bad = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", str(cfg)], capture_output=True, text=True)
    assert bad.returncode == 2 and "expected an integer" in bad.stderr


def test_runner_reports_failed_cell(tmp_path, monkeypatch):
    """A failing cell stops the run with exit 1 and a message naming notebook and cell."""
    sys.path.insert(0, str(ROOT / "tools"))
    from make_notebook import build

    from sdrlib import runner

    nb_dir = tmp_path / "notebooks"
    build(nb_dir / "01_ok.ipynb", [("md", "# ok"), ("params", 'profile: str = "cpu"'), ("code", "x = 1")])
    build(nb_dir / "02_fail.ipynb", [("md", "# fail"), ("params", 'profile: str = "cpu"'),
                                     ("code", "y = 2"), ("code", "raise RuntimeError('boom')")])
    build(nb_dir / "03_never.ipynb", [("md", "# never"), ("params", 'profile: str = "cpu"')])
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "out"))
    monkeypatch.setattr(runner, "discover", lambda folder=None: runner.__dict__["_discover_in"](nb_dir))
    rc = runner.run("smoke", cell_timeout=120)
    assert rc == 1
    executed = sorted(p.name for p in (tmp_path / "out" / "runs" / "smoke" / "notebooks").glob("*.ipynb"))
    assert executed == ["01_ok.ipynb", "02_fail.ipynb"]
    rc = runner.run("smoke", only=["01"], cell_timeout=120)
    assert rc == 0


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
