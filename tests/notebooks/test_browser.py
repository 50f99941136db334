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

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "00_data.ipynb"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FIRST_OUTPUT = "smoke DataConfig(source='synthetic'"  # cell 1 prints the profile's name and data section
LAST_OUTPUT = "Splits (studies): train"  # the last cell, the notebook's conclusion, starts with the split sizes


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


def _browser_prerequisites():
    """(Chromium's path, ``playwright.sync_api``); skip where either is missing, fail without the sdr kernel."""
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
    return chromium, sync_api


def _launch_lab(tmp_path: Path, folder: Path, extra_env: dict[str, str] | None = None,
                ) -> tuple[subprocess.Popen, str, str, Path]:
    """Start JupyterLab on loopback serving ``folder``: ``(process, base url, token, log file)``.

    Fresh config / runtime / settings / workspace folders under ``tmp_path`` and ``SDR_ROOT`` =
    ``tmp_path / "root"``; server extensions enabled in the environment's own ``etc/jupyter`` (jupytext's
    among them) still load, as for a user. Stop it with :func:`_stop_server`.
    """
    dirs = _jupyter_dirs(tmp_path)
    token, port = secrets.token_hex(16), _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(dirs["config"]), "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
           "SDR_ROOT": str(tmp_path / "root"), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **(extra_env or {})}
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={folder}", f"--LabApp.user_settings_dir={dirs['settings']}",
           f"--LabApp.workspaces_dir={dirs['workspaces']}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp_path / "jupyterlab.log"
    with log.open("wb") as log_f:
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=log_f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    return proc, base, token, log


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
    chromium, sync_api = _browser_prerequisites()
    nb_path = _smoke_copy(tmp_path / "nb")
    proc, base, token, log = _launch_lab(tmp_path, nb_path.parent)
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


def _pair_copy(folder: Path) -> tuple[Path, Path]:
    """``00_data.ipynb``, ``00_data.py`` and ``jupytext.toml`` copied into ``folder`` (the script the newer file)."""
    folder.mkdir(parents=True)
    for src in (NOTEBOOK, NOTEBOOK.with_suffix(".py"), NOTEBOOK.parent / "jupytext.toml"):
        shutil.copy(src, folder / src.name)
    ipynb, script = folder / NOTEBOOK.name, folder / NOTEBOOK.with_suffix(".py").name
    os.utime(ipynb, (script.stat().st_mtime - 2,) * 2)  # as after `jupytext --sync`: the script is not older
    return ipynb, script


def _own_sdr_kernel(tmp_path: Path) -> dict[str, str]:
    """``JUPYTER_PATH`` with a kernelspec ``sdr`` on this interpreter, found before the user's registration.

    For the edit test, which runs no cell: it must not depend on which checkout last registered the
    user's ``sdr`` kernel (a stale one pointing at a removed interpreter opens an error dialog).
    """
    spec = tmp_path / "jupyter_path" / "kernels" / "sdr"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (sdr)", "language": "python"}))
    return {"JUPYTER_PATH": str(tmp_path / "jupyter_path")}


def _type_at_end(page, cell, text: str) -> None:
    """Put ``cell`` in edit mode and type ``text`` at the end of its source, as a user does."""
    if "jp-MarkdownCell" in (cell.get_attribute("class") or ""):
        cell.locator(".jp-RenderedMarkdown").dblclick()  # a rendered Markdown cell opens its editor
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(text)
    page.keyboard.press("Escape")  # back to command mode


def _wait_for_text(path: Path, needles: list[str], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text(encoding="utf-8")
        if all(n in text for n in needles) or time.monotonic() > deadline:
            return text
        time.sleep(0.25)


@pytest.mark.slow
def test_jupyterlab_edit_survives_the_round_trip_through_the_script(tmp_path):
    """Edit a Markdown and a code cell of a paired notebook in the browser, save, and follow the edit.

    JupyterLab -> (save through jupytext's contents manager, the ``jupyterlab_jupytext`` server
    extension of this environment) -> the paired ``00_data.py`` holds both edits and agrees with the
    ``.ipynb`` (tags and cell ids kept) -> the script alone rebuilds the same notebook, and
    ``jupytext --sync`` changes nothing -> an edit made to the script in an editor shows in JupyterLab
    after a reload. Screenshots of the edited and of the reloaded notebook land in the tmp folder.
    """
    import jupytext
    from test_notebooks_pairing import cells_of, disagreement

    chromium, sync_api = _browser_prerequisites()
    ipynb, script = _pair_copy(tmp_path / "nb")
    ids_before = [c.id for c in nbformat.read(ipynb, as_version=4).cells]
    tag = secrets.token_hex(4)
    md_line = f"Edited in JupyterLab {tag}."
    code_line = f"edited_in_lab: int = 1  # {tag}"
    proc, base, token, log = _launch_lab(tmp_path, ipynb.parent, _own_sdr_kernel(tmp_path))
    shots = [tmp_path / "jupyterlab_edit_saved.png", tmp_path / "jupyterlab_edit_reloaded.png"]
    try:
        _wait_for_server(proc, base, token, log)
        with sync_api.sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"), executable_path=chromium, headless=True, args=CHROMIUM_FLAGS,
                viewport={"width": 1400, "height": 1000})
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            try:
                page.goto(f"{base}/lab/tree/{ipynb.name}?token={token}", timeout=120_000)
                page.locator(".jp-Notebook .jp-CodeCell").first.wait_for(timeout=120_000)
                # the title cell (Markdown) and the parameters cell (the first code cell)
                _type_at_end(page, page.locator(".jp-Notebook .jp-MarkdownCell").first, "\n\n" + md_line)
                _type_at_end(page, page.locator(".jp-Notebook .jp-CodeCell").first, "\n" + code_line)
                page.keyboard.press("Control+s")
                text = _wait_for_text(script, [md_line, code_line])
                page.screenshot(path=str(shots[0]))
                print(f"\nscreenshots: {shots[0]}")
                assert md_line in text and code_line in text, (
                    "the paired script did not get the edit on save: is the jupyterlab_jupytext server "
                    f"extension enabled?\n{log.read_text(errors='replace')[-3000:]}")

                # the saved pair agrees; the edits sit in the right cells, the parameters tag and cell ids kept
                assert disagreement(ipynb, script) == ""
                saved = nbformat.read(ipynb, as_version=4)
                assert saved.cells[0].cell_type == "markdown" and saved.cells[0].source.endswith(md_line)
                params = next(c for c in saved.cells if "parameters" in c.metadata.get("tags", []))
                assert params.source.endswith(code_line)
                assert [c.id for c in saved.cells] == ids_before
                assert f'# {md_line}' in text and f'# %% tags=["parameters"]' in text

                # the script alone rebuilds this notebook, and a sync from the shell changes nothing
                assert cells_of(jupytext.read(script)) == cells_of(saved)
                os.utime(script, (ipynb.stat().st_mtime + 5,) * 2)
                proc_sync = subprocess.run([sys.executable, "-m", "jupytext", "--sync", str(script)],
                                           capture_output=True, text=True, timeout=120)
                assert proc_sync.returncode == 0, proc_sync.stderr
                synced = nbformat.read(ipynb, as_version=4)
                assert cells_of(synced) == cells_of(saved) and [c.id for c in synced.cells] == ids_before

                # back the other way: an editor changes the script; JupyterLab shows it after a reload
                script.write_text(text.replace(code_line, code_line.replace("= 1", "= 2")), encoding="utf-8")
                os.utime(script, (ipynb.stat().st_mtime + 10,) * 2)
                page.reload()
                first_code = page.locator(".jp-Notebook .jp-CodeCell").first
                first_code.get_by_text(code_line.replace("= 1", "= 2")).wait_for(timeout=120_000)
                page.locator(".jp-Notebook .jp-MarkdownCell .jp-RenderedMarkdown").first.get_by_text(
                    md_line).wait_for(timeout=60_000)
                page.screenshot(path=str(shots[1]))
                print(f"screenshots: {shots[1]}")
            except Exception:
                if not shots[0].exists():
                    page.screenshot(path=str(shots[0]))
                    print(f"\nscreenshot (failure): {shots[0]}")
                raise
            finally:
                ctx.close()
    finally:
        _stop_server(proc, base, token)
