"""JupyterLab in a real browser: open notebook 00, "Run All Cells" from the menu, check the outputs.

What a user does by hand, end to end: JupyterLab (with the project's extensions, jupytext among
them) serves a copy of ``notebooks/00_data.ipynb`` whose ``parameters`` cell says
``profile = "smoke"``; headless Chromium (Debian's ``chromium`` package, driven by Playwright's
Python package through ``executable_path``: no browser is downloaded) opens it with the server's
token, runs every cell through the Run menu on the ``sdr`` kernel, waits for the last cell, and
checks text the first and the last cell print. A screenshot lands in the test's tmp folder (its
path is printed).

Isolation: the server listens on 127.0.0.1 on a free port, with its own token and temporary Jupyter
config / runtime / settings / workspace folders; outputs go to a temporary ``SDR_ROOT``, so nothing
lands in the checkout or the user's JupyterLab state. The ``sdr`` kernel itself is the one
``scripts/setup.sh`` registers. Skips (with the reason) only where Chromium or Playwright is missing.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "00_data.ipynb"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FIRST_OUTPUT = "smoke DataConfig(source='synthetic'"  # cell 1 prints the profile's name and data section
LAST_OUTPUT = "syn-val-00000"  # the last cell shows the first validation records


def _chromium() -> str | None:
    for cand in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _smoke_copy(folder: Path) -> Path:
    """``00_data.ipynb`` with ``profile = "smoke"`` in its parameters cell, written into ``folder``."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    src, n = re.subn(r'(?m)^profile\b.*$', 'profile: str = "smoke"', params.source)
    assert n == 1, f"no 'profile = ...' line in the parameters cell of {NOTEBOOK.name}"
    params.source = src
    folder.mkdir(parents=True)
    path = folder / NOTEBOOK.name
    nbformat.write(nb, path)
    return path


def _jupyter_dirs(tmp: Path) -> dict[str, Path]:
    """Fresh Jupyter config / runtime / settings / workspace folders (user state cannot leak in)."""
    d = {k: tmp / k for k in ("config", "runtime", "settings", "workspaces")}
    for p in d.values():
        p.mkdir()
    # no "news / check for updates" prompt (and no request for it): this machine is offline
    (d["config"] / "labconfig").mkdir()
    (d["config"] / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    # every cell in the DOM (no virtual scrolling), so the last cell's prompt and output can be read
    tracker = d["settings"] / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    return d


def _api(base: str, token: str, path: str, method: str = "GET") -> object:
    req = urllib.request.Request(f"{base}{path}", method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
    return json.loads(body) if body else None


def _wait_for_server(proc: subprocess.Popen, base: str, token: str, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            _api(base, token, "/api/status")
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    pytest.fail(f"JupyterLab did not answer within {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}")


def _wait_for_kernel(base: str, token: str, name: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kernels = _api(base, token, "/api/kernels") or []
        if any(k["name"] == name and k["execution_state"] == "idle" for k in kernels):
            return
        time.sleep(0.5)
    pytest.fail(f"no idle kernel {name!r} within {timeout:.0f} s (kernels: {kernels})")


def _stop_server(proc: subprocess.Popen, base: str, token: str) -> None:
    """Shut the kernels and the server down through the API; then signal the process group we started."""
    try:
        for k in _api(base, token, "/api/kernels") or []:
            _api(base, token, f"/api/kernels/{k['id']}", method="DELETE")
        _api(base, token, "/api/shutdown", method="POST")
        proc.wait(timeout=30)
    except (urllib.error.URLError, OSError, subprocess.TimeoutExpired):
        pass
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


@pytest.mark.slow
def test_jupyterlab_runs_notebook_00_in_chromium(tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium found (/usr/bin/chromium): scripts/setup.sh installs Debian's chromium when root")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed "
                                                               "(pip install -e '.[dev]')")
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("sdr")
    except NoSuchKernel:
        pytest.fail("Jupyter kernel 'sdr' is not registered: run scripts/setup.sh")

    nb_path = _smoke_copy(tmp_path / "nb")
    dirs = _jupyter_dirs(tmp_path)
    token, port = secrets.token_hex(16), _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(dirs["config"]), "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
           "SDR_ROOT": str(tmp_path / "root"), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={nb_path.parent}", f"--LabApp.user_settings_dir={dirs['settings']}",
           f"--LabApp.workspaces_dir={dirs['workspaces']}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp_path / "jupyterlab.log"
    with log.open("wb") as log_f:
        proc = subprocess.Popen(cmd, cwd=nb_path.parent, env=env, stdout=log_f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    shot = tmp_path / "jupyterlab_00_data_smoke.png"
    console: list[str] = []
    try:
        _wait_for_server(proc, base, token, log)
        with sync_api.sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"),  # an empty --user-data-dir
                executable_path=chromium, headless=True, args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 1000})
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            try:
                page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
                page.goto(f"{base}/lab/tree/{nb_path.name}?token={token}", timeout=120_000)
                page.locator(".jp-Notebook .jp-CodeCell").first.wait_for(timeout=120_000)
                # the kernel named in the notebook (sdr) starts by itself; wait until it is idle
                _wait_for_kernel(base, token, "sdr")
                page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
                page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
                last = page.locator(".jp-Notebook .jp-CodeCell").last
                # finished: the last cell has an execution count and no cell is still queued or running
                last.locator(".jp-InputPrompt", has_text=re.compile(r"\[\d+\]")).wait_for(timeout=300_000)
                assert page.locator(".jp-InputPrompt", has_text="[*]").count() == 0
                last.scroll_into_view_if_needed()
                page.screenshot(path=str(shot))
                print(f"\nscreenshot: {shot}")
                text = page.locator(".jp-Notebook").inner_text()
                assert "Traceback" not in text, text[text.index("Traceback") - 500:][:3000]
                assert FIRST_OUTPUT in text, text[:3000]
                assert LAST_OUTPUT in last.inner_text(), last.inner_text()[:2000]
                n_code = sum(c.cell_type == "code" for c in nbformat.read(nb_path, as_version=4).cells)
                counts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
                assert len(counts) == n_code and all(re.fullmatch(r"\[\d+\]:", c.strip()) for c in counts), counts
            except Exception:
                if not shot.exists():
                    page.screenshot(path=str(shot))
                    print(f"\nscreenshot (failure): {shot}")
                print("browser console errors:", *console[-20:], sep="\n  ")
                raise
            finally:
                ctx.close()
    finally:
        _stop_server(proc, base, token)
    # the run wrote under the temporary root, not the checkout
    assert any((tmp_path / "root" / "results").glob("00_*.csv"))
