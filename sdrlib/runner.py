"""Run the numbered notebooks in order with papermill (the engine behind ``run_all.sh``).

Each ``notebooks/NN_*.ipynb`` is executed with the profile injected as the
``profile`` parameter (and ``--set KEY=VALUE`` overrides as the ``overrides`` parameter), a fixed kernel (``sdr``), a per-cell timeout, and the
executed copy written to ``<runs>/<profile>/notebooks/`` (never in place).
The profile with its overrides, ``--from`` / ``--only`` and ``--out`` are validated *before* anything
runs: bad usage exits with code 2 and one line on stderr (no traceback). When a
notebook fails the run stops with exit code 1 and one line naming the notebook,
the cell and the error.

Every run that gets past the checks ends with a summary, printed and written to
``<results>/run_summary.md`` and ``run_summary.csv`` under the output root: per
notebook the seconds, the status (``ok``, ``failed at cell N``, ``failed``,
``skipped``, ``interrupted``) and the executed copy, plus the profile, seed, git
commit, start time and total. It is written also when a notebook fails or the run
is interrupted (Ctrl-C), so the file always says how far the run got.

What it leaves out: no parallel execution (notebooks depend on each other's
outputs), no caching of unchanged notebooks (use ``--from`` / ``--only``).

Example::

    python -m sdrlib.runner --profile smoke --only 01
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import csv
import datetime as _dt
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import typing
from pathlib import Path
from typing import Any

from .config import ConfigError, load_profile, output_root, repo_root
from .data import get_dataset
from .estimates import DEFAULT_CELL_TIMEOUT, sized_cell_timeout, stage_estimates
from .errors import SDRError
from . import numerics
from .cpuload import CpuSampler, children_cpu_seconds
from .io import OutputPathError, atomic_write_json, atomic_write_text, output_path, positive_int
from .results import RECORDED_VERSIONS, git_commit, library_versions

__all__ = ["UsageError", "NotebookRun", "discover", "packages_needed", "preflight", "run", "main", "write_summary",
           "stage_estimates", "sized_cell_timeout", "DEFAULT_CELL_TIMEOUT"]

KERNEL = "sdr"


class UsageError(SDRError, ValueError):
    """A command-line choice names nothing usable (``--from`` / ``--only`` / ``--out``); exit code 2."""


_NB = re.compile(r"^(\d{2})_[a-z0-9_]+\.ipynb$")


def _discover_in(folder: Path) -> list[tuple[str, Path]]:
    return [(m.group(1), p) for p in sorted(folder.glob("*.ipynb")) if (m := _NB.match(p.name))]


def discover(folder: Path | None = None) -> list[tuple[str, Path]]:
    """``[(NN, path), ...]`` of numbered notebooks in run order (``notebooks/NN_name.ipynb``)."""
    return _discover_in(folder or repo_root() / "notebooks")


def _select(nbs: list[tuple[str, Path]], start: str | None, only: list[str] | None) -> list[tuple[str, Path]]:
    """The notebooks ``--from`` / ``--only`` name; :class:`UsageError` when they name none."""
    have = [nn for nn, _ in nbs]
    if start is not None and only:
        raise UsageError("use either --from or --only, not both")
    for flag, values in (("--from", [start] if start is not None else []), ("--only", only or [])):
        for v in values:
            if not (isinstance(v, str) and v.isdigit() and v.zfill(2) in have):
                raise UsageError(f"{flag} {v}: no notebook numbered {v!r}; available: {', '.join(have) or 'none'}")
    if only:
        want = {o.zfill(2) for o in only}
        return [(nn, p) for nn, p in nbs if nn in want]
    if start is not None:
        return [(nn, p) for nn, p in nbs if nn >= start.zfill(2)]
    return nbs


def _check_out(out: str) -> Path:
    """``--out`` (a leading ``~`` expanded) as an absolute folder that exists (created) and accepts files;
    :class:`UsageError` otherwise."""
    try:
        p = output_path(out, "--out")  # the one helper for a user's output path (also the stand-in command's)
    except OutputPathError as e:
        raise UsageError(str(e)) from None
    if p.exists() and not p.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder; give a folder (it is created if missing)")
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=p):  # a real write: os.access says yes to root on read-only mounts
            pass
    except OSError as e:
        raise UsageError(f"--out {out}: not a writable folder ({e.strerror or type(e).__name__})") from None
    return p.resolve()


def _cuda_available() -> bool:
    try:
        import torch  # heavy: only when the profile asks for a GPU
    except ImportError:  # pragma: no cover - torch is a core dependency
        return False
    return bool(torch.cuda.is_available())


def _module_available(module: str) -> bool:
    """Whether ``module`` is installed (found on the path; not imported: Unsloth patches transformers on import and
    must come first, vLLM takes seconds)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


#: the optional packages a profile may ask for: import name -> how to install it (docs/install.md, Installing for a GPU)
INSTALL = {
    "unsloth": 'scripts/setup.sh --gpu (the gpu extra: unsloth 2026.10.9; docs/gpu.md)',
    "vllm": ("no vLLM release installs beside the gpu pins (each pins numba 0.65.0; docs/install.md, Installing for a "
             "GPU): set grpo.use_vllm: false, or build the separate vLLM environment described there"),
    "bitsandbytes": "pip install bitsandbytes (4-bit loading)",
    "flash_attn": "pip install flash-attn --no-build-isolation (a CUDA toolkit matching torch's)",
}
#: the first TRL release whose SFT / GRPO log-probabilities run without Triton (trl.kernels.chunked_logprob's
#: plain-torch tiles); 1.15.0 calls the Triton-only ``_ChunkedLogProbFunction``, None on a CPU torch
TRL_CPU_MIN = (1, 16)


def packages_needed(cfg) -> list[tuple[str, str]]:
    """``(import name, the setting that asks for it)`` of each optional package the profile needs: Unsloth for a
    paper policy (``sft.policy`` not ``tiny``), vLLM for ``grpo.use_vllm``, bitsandbytes for ``sft.load_in_4bit``
    and flash-attention for ``sft.attn_implementation: flash_attention_2`` (neither field exists in
    ``sdrlib.config`` today, so no profile asks for those two yet; the check reads them when present)."""
    sft = cfg.sft
    out = [("unsloth", f"sft.policy={sft.policy}")] if sft.policy != "tiny" else []
    if cfg.grpo.use_vllm:
        out.append(("vllm", "grpo.use_vllm"))
    if getattr(sft, "load_in_4bit", False):
        out.append(("bitsandbytes", "sft.load_in_4bit"))
    if str(getattr(sft, "attn_implementation", "") or "").startswith("flash_attention"):
        out.append(("flash_attn", f"sft.attn_implementation={sft.attn_implementation}"))
    return out


def _trl_too_old_for_cpu(cfg) -> str | None:
    """A phrase when the tiny policy (trained on the CPU) would meet a TRL older than 1.16 (None: fine)."""
    if cfg.sft.policy != "tiny":
        return None
    v = _version("trl")
    if v is None:
        return None
    nums = tuple(int(x) for x in re.findall(r"\d+", v)[:2])
    if nums >= TRL_CPU_MIN:
        return None
    return (f"trl {v} cannot train the tiny policy on the CPU (its SFT and GRPO log-probabilities call the Triton-only "
            f"_ChunkedLogProbFunction, None without Triton, and Triton needs a GPU driver): pip install "
            f"\"trl==1.16.0\" (the cpu extra, pip install -e \".[cpu]\"; docs/install.md, Installing for a GPU)")


def preflight(cfg) -> list[str]:
    """What the profile needs that this machine lacks, one phrase each (empty: nothing missing).

    Checked before any notebook starts: a CUDA GPU (a paper policy, ``grpo.use_vllm``, a device set to ``cuda``),
    the optional packages of :func:`packages_needed` (Unsloth, vLLM, bitsandbytes, flash-attention), a TRL that
    trains on the CPU for the tiny policy (>= 1.16), the paper policy's weights (a local folder or the Hugging Face
    cache; never downloaded), the paper's metric backends when ``metrics.allow_substitutes`` is false (the official
    CheXbert scorer, roberta-large for BERTScore: :func:`sdrlib.metrics.backends.missing_paper_metrics`) and the
    dataset folder of a real ``data.source`` (unless ``data.standin_n`` writes a stand-in there). Each phrase says
    how to provide it.
    Example: ``preflight(load_profile("paper"))`` on a laptop -> four phrases (GPU, unsloth, weights, data).
    """
    from sdrlib import models  # torch and transformers: deferred so a bad command line answers at once

    out: list[str] = []
    tiny = cfg.sft.policy == "tiny"
    wants = ([f"sft.policy={cfg.sft.policy}"] if not tiny else []) + (["grpo.use_vllm"] if cfg.grpo.use_vllm else [])
    devices = {"embedding": cfg.embedding.device, "distances": cfg.distances.device,
               "metrics.bertscore": cfg.metrics.bertscore.device}
    wants += [f"{k}.device={d}" for k, d in devices.items() if d.startswith("cuda")]
    if wants and not _cuda_available():
        out.append(f"no CUDA GPU ({', '.join(wants)} need one): run on a GPU machine after scripts/setup.sh --gpu (docs/gpu.md), "
                   "or use --profile rehearsal (the paper's code paths on CPU) or cpu")
    for module, why in packages_needed(cfg):
        if not _module_available(module):
            out.append(f"{module} is not installed ({why} needs it): {INSTALL[module]}")
    trl = _trl_too_old_for_cpu(cfg)
    if trl:
        out.append(trl)
    if not tiny and models.local_weights(cfg.sft.policy) is None:
        repo = models.PAPER_MODELS.get(cfg.sft.policy.lower(), cfg.sft.policy)
        out.append(f"no weights for sft.policy={cfg.sft.policy} (neither a folder with config.json nor {repo} in the "
                   f"Hugging Face cache): hf download {repo}, or set sft.policy to a local folder")
    if not cfg.metrics.allow_substitutes:
        from sdrlib.metrics.backends import missing_paper_metrics  # local files only

        out += [m + " (or --allow-substitutes to go on with the substitute, recorded in every table)"
                for m in missing_paper_metrics(cfg.metrics.clinical.backend, cfg.metrics.bertscore.model)]
    ds = get_dataset(cfg.data.source)
    if ds.real and not cfg.data.standin_n:
        root = Path(cfg.data.root)
        root = root if root.is_absolute() else output_root() / root
        if not root.is_dir():
            out.append(f"no {ds.title} folder at {root} (data.root): put your download there (docs/real_data.md)"
                       + (f", or a stand-in: python -m sdrlib.data.standin {ds.name} {root}" if ds.standin else ""))
    return out


def _show(path: Path) -> str:
    try:
        return str(path.relative_to(repo_root()))
    except ValueError:
        return str(path)


@dataclasses.dataclass
class NotebookRun:
    """One row of the run summary: what happened to notebook ``NN`` in this run.

    ``status`` is ``ok``, ``failed at cell N`` (a cell raised; N is papermill's 0-based index of
    the cell in the executed copy, the same N as in the stderr line), ``failed`` (kernel death, timeout, unreadable
    notebook), ``skipped`` (not selected, or after a failure) or ``interrupted`` (Ctrl-C);
    ``detail`` says why for everything but ``ok``; ``executed`` is the executed copy (empty when
    the notebook did not start).
    """

    nn: str
    name: str
    status: str = "skipped"
    seconds: float | None = None
    executed: str = ""
    detail: str = ""
    cpu_seconds: float | None = None  # CPU time of the notebook's kernel and everything it started (user + system)
    idle_core_seconds: float | None = None  # longest stretch with a core idle (:class:`CpuSampler`)


_SUMMARY_FIELDS = ("notebook", "status", "seconds", "executed", "detail",
                   "profile", "seed", "git_commit", "started_at", "total_seconds", "cpu_model", "kernel_path",
                   "torch_cpu_capability", "cpu_seconds", "idle_core_seconds")
#: the machine's busy cores over the run, one row per :attr:`CpuSampler.interval` (``benchmarks/profile_run.py``)
CPU_TIMELINE = "run_cpu.csv"
MACHINE_FILE = "machine.json"


def _probe_machine() -> dict:
    """:func:`sdrlib.numerics.machine_record` as a notebook kernel would see it: measured in a child process
    of this environment that loads NumPy, torch and numba first and runs one parallel numba loop, so that numba's
    threading layer is known (this process loads none of them)."""
    code = ("import json, numpy, numba, torch; from sdrlib.numerics import machine_record\n"
            "@numba.njit(parallel=True)\ndef f(x):\n    for i in numba.prange(x.size):\n        x[i] += 1.0\n"
            "f(numpy.zeros(4)); print(json.dumps(machine_record()))")
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
                               str(repo_root()), os.environ.get("PYTHONPATH", "")]))})
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        rec = numerics.machine_record()
        rec["probe"] = "failed: libraries not loaded, their fields are missing"
        return rec


def record_machine(cfg) -> dict:
    """The run's machine record (:func:`sdrlib.numerics.machine_record` with the profile's ``kernel_path``, the
    library versions and the sdrlib source digest), written to ``<results>/machine.json``; returned."""
    from sdrlib.training.runkeys import source_digest  # hashing sdrlib's files: only when a run starts

    rec = {**_probe_machine(), "kernel_path_profile": cfg.kernel_path,
           "python": platform.python_version(), "versions": library_versions(RECORDED_VERSIONS),
           "sdrlib_source": source_digest(), "git_commit": git_commit(mark_dirty=True, timeout=10)}
    try:
        atomic_write_json(cfg.results_dir / MACHINE_FILE, rec)
    except OSError as e:  # the run matters more than its record; the summary still carries the key fields
        print(f"run_all: could not write {MACHINE_FILE}: {e}", file=sys.stderr)
    return rec


def _machine_line(rec: dict) -> str:
    return (f"machine: {rec.get('cpu_model', 'unknown')}, {rec.get('logical_cpus')} CPUs, kernel path "
            f"{rec.get('kernel_path')} (profile: {rec.get('kernel_path_profile')}), torch CPU capability "
            f"{rec.get('torch_cpu_capability', 'unknown')}")


def write_summary(rows: list[NotebookRun], folder: Path, *, profile: str, seed: int, started_at: str,
                  total_seconds: float, commit: str | None = None,
                  machine: dict | None = None) -> tuple[Path, Path, str]:
    """Write ``run_summary.md`` and ``run_summary.csv`` into ``folder``; returns both paths and the Markdown.

    The CSV has one row per notebook with the run-level fields (profile, seed, git commit,
    start time, total seconds, and from ``machine`` (:func:`record_machine`) the CPU model, the kernel path in
    force and torch's CPU capability) repeated on each row, so it reads on its own.
    """
    commit = git_commit(mark_dirty=True, timeout=10) if commit is None else commit
    machine = machine or {}
    mfields = [str(machine.get(k, "")) for k in ("cpu_model", "kernel_path", "torch_cpu_capability")]
    md = [f"# Run summary: profile {profile}", "",
          f"- profile: `{profile}`, seed: {seed}, git commit: `{commit}`",
          f"- started: {started_at}, total: {total_seconds:.1f} s",
          f"- {_machine_line(machine)}" if machine else "- machine: not recorded",
          f"- result: {_verdict(rows)}", "",
          "| notebook | status | seconds | executed notebook |", "| --- | --- | ---: | --- |"]
    for r in rows:
        status = r.status + (f": {r.detail}" if r.detail else "")
        secs = "" if r.seconds is None else f"{r.seconds:.1f}"
        md.append(f"| {r.name} | {_cell(status)} | {secs} | {_cell(r.executed)} |")
    text = "\n".join(md) + "\n"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(_SUMMARY_FIELDS)
    for r in rows:
        w.writerow([r.name, r.status, "" if r.seconds is None else f"{r.seconds:.3f}", r.executed, r.detail,
                    profile, seed, commit, started_at, f"{total_seconds:.3f}", *mfields,
                    "" if r.cpu_seconds is None else f"{r.cpu_seconds:.1f}",
                    "" if r.idle_core_seconds is None else f"{r.idle_core_seconds:.0f}"])
    md_path, csv_path = folder / "run_summary.md", folder / "run_summary.csv"
    atomic_write_text(md_path, text)
    atomic_write_text(csv_path, buf.getvalue())
    return md_path, csv_path, text


def _verdict(rows: list[NotebookRun]) -> str:
    bad = [r for r in rows if r.status.startswith(("failed", "interrupted"))]
    if bad:
        return f"{bad[0].name} {bad[0].status}"
    unselected = sum(r.detail == "not selected" for r in rows)
    ok = sum(r.status == "ok" for r in rows)
    return f"{ok} of {len(rows) - unselected} notebooks ok" + (f" ({unselected} not selected)" if unselected else "")


def _cell(text: str) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _usage(msg: object) -> int:
    print(f"run_all: {' '.join(str(msg).split())}", file=sys.stderr)  # one line, whatever the message holds
    return 2


def run(profile: str, start: str | None = None, only: list[str] | None = None,
        cell_timeout: int | None = None, kernel: str = KERNEL, log_output: bool = False, out: str | None = None,
        overrides: dict[str, Any] | None = None) -> int:
    """Execute the selected notebooks; returns a process exit code (0 ok, 1 failed, 2 bad usage).

    ``cell_timeout`` None: sized from the profile's stated step costs (:func:`sized_cell_timeout`), printed with
    each stage's estimate before the first notebook.
    ``overrides`` (dotted keys to values, ``run_all.sh --set``) are validated with the profile here and handed to
    every notebook as its ``overrides`` parameter (``load_profile(profile, overrides)`` in each).
    Everything a user can get wrong (``start`` / ``only`` naming no notebook, an invalid profile or override,
    an ``out`` folder that cannot be written, a missing kernel, a GPU, policy weights or dataset folder the profile
    needs and this machine lacks: :func:`preflight`) is checked before the first
    notebook starts and answered with exit code 2 and one line on stderr.
    """
    all_nbs = discover()
    try:
        nbs = _select(all_nbs, start, only)
        cfg = _checked_profile(profile, out, overrides)
        pm = _papermill(kernel)
        out_dir = _executed_dir(cfg)
    except UsageError as e:
        return _usage(e)
    env_root = str(output_root())
    os.environ["SDR_ROOT"] = env_root  # the kernel inherits it: outputs land under the same root
    # the kernel runs in notebooks/, so a profile given as a relative path must travel as an absolute one
    prof_path = Path(os.path.expanduser(profile))  # as load_profile read it
    param = str(prof_path.resolve()) if prof_path.suffix in (".yaml", ".yml") else cfg.name
    params: dict[str, Any] = {"profile": param, **({"overrides": dict(overrides)} if overrides else {})}
    machine = record_machine(cfg)
    print(f"run_all: profile={cfg.name} seed={cfg.seed} root={env_root} notebooks={[nn for nn, _ in nbs]}"
          + (f" overrides={overrides}" if overrides else ""))
    print(f"run_all: {_machine_line(machine)}")
    cell_timeout, lines = sized_cell_timeout(cfg, cell_timeout)
    for line in lines:
        print(f"run_all: {line}", flush=True)
    selected = {nn for nn, _ in nbs}
    rows = {nn: NotebookRun(nn, p.name, detail="" if nn in selected else "not selected")
            for nn, p in all_nbs}
    started = _dt.datetime.now().astimezone()
    t_run = time.perf_counter()
    rc = 0
    sampler = CpuSampler()
    try:
        with sampler:
            rc = _execute(pm, nbs, rows, out_dir, params, kernel, cell_timeout, log_output, sampler)
    finally:  # also on failure and Ctrl-C: the summary says how far the run got
        _finish(rows, cfg, started, time.perf_counter() - t_run, machine)
        if sampler.rows:  # the busy-cores timeline beside the summary
            with contextlib.suppress(OSError):
                atomic_write_text(cfg.results_dir / CPU_TIMELINE, sampler.csv(t_run))
    return rc


def _checked_profile(profile: str, out: str | None, overrides: dict[str, Any] | None = None) -> Any:
    """The loaded profile (with ``overrides``), with ``--out`` checked and set as ``SDR_ROOT``, the profile's kernel path pinned and
    :func:`preflight` passed; :class:`UsageError` naming the first problem."""
    try:
        cfg = load_profile(profile, overrides or None)
    except ConfigError as e:
        raise UsageError(f"invalid profile: {e}" + (" (with --set)" if overrides else "")) from None
    if out is not None:
        os.environ["SDR_ROOT"] = str(_check_out(out))
    # before preflight loads torch here and before any kernel starts: kernels inherit the environment
    numerics.pin_kernel_path(cfg.kernel_path)
    missing = preflight(cfg)
    if missing:
        raise UsageError(f"profile {cfg.name!r} cannot run here: " + "; ".join(missing))
    return cfg


def _prefer_own_kernel(kernel: str) -> None:
    """Let this environment's own registration of ``kernel`` (``<sys.prefix>/share/jupyter``, written by
    ``scripts/setup.sh`` with ``--sys-prefix``) win over the user-level one: Jupyter searches ``JUPYTER_PATH``, then
    the user's folder, then the environment's, and every checkout's setup re-points the one user-level ``sdr`` to
    its own ``.venv``, so a second clone's setup made every other checkout run (or fail on) the wrong interpreter.
    Appended after any ``JUPYTER_PATH`` the caller set (which still comes first); the kernel's process inherits it."""
    own = Path(sys.prefix) / "share" / "jupyter"
    if not (own / "kernels" / kernel / "kernel.json").is_file():
        return
    paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    if str(own) not in paths:
        os.environ["JUPYTER_PATH"] = os.pathsep.join([*paths, str(own)])


def _papermill(kernel: str) -> Any:
    """The papermill module, once the Jupyter ``kernel`` is known to be registered and to point to an existing
    interpreter; :class:`UsageError` saying how to fix it otherwise."""
    try:
        import papermill as pm
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    except ImportError as e:
        raise UsageError(f"{e.name or e} is not installed; run scripts/setup.sh") from None
    fix = f"run scripts/setup.sh (or: .venv/bin/python -m ipykernel install --sys-prefix --name {kernel})"
    _prefer_own_kernel(kernel)
    try:
        spec = KernelSpecManager().get_kernel_spec(kernel)
    except NoSuchKernel:
        raise UsageError(f"Jupyter kernel {kernel!r} is not registered; {fix}") from None
    exe = spec.argv[0] if spec.argv else ""
    if os.path.isabs(exe) and not os.path.exists(exe):
        raise UsageError(f"Jupyter kernel {kernel!r} points to {exe}, which does not exist (a moved or deleted "
                         f"checkout registered it); {fix}")
    return pm


def _executed_dir(cfg: Any) -> Path:
    """``<runs>/<profile>/notebooks``, created; :class:`UsageError` when it cannot be."""
    out_dir = cfg.runs_dir / cfg.name / "notebooks"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {out_dir} (paths.runs of profile {cfg.name!r}): {e.strerror or e}") from None
    return out_dir


def _execute(pm: Any, nbs: list[tuple[str, Path]], rows: dict[str, NotebookRun], out_dir: Path, params: dict,
             kernel: str, cell_timeout: int, log_output: bool, sampler: CpuSampler | None = None) -> int:
    """Run ``nbs`` in order with papermill, filling their ``rows``; stops at the first failure (returns 1, else 0).
    Ctrl-C marks the notebook ``interrupted`` and propagates. A finished notebook's row gets its CPU seconds and,
    with a ``sampler``, its longest stretch with a core idle."""
    for nn, path in nbs:
        dest = out_dir / path.name
        row = rows[nn]
        t0, cpu0 = time.perf_counter(), children_cpu_seconds()
        print(f"run_all: [{nn}] {path.name} ...", flush=True)
        try:
            pm.execute_notebook(str(path), str(dest), parameters=params,
                                kernel_name=kernel, execution_timeout=cell_timeout, progress_bar=False,
                                log_output=log_output, cwd=str(path.parent))
        except pm.PapermillExecutionError as e:
            row.status, row.seconds, row.executed = (f"failed at cell {e.cell_index}",
                                                     time.perf_counter() - t0, str(dest))
            row.detail = f"{e.ename}: {e.evalue}"
            print(f"run_all: FAILED {_show(path)} at cell {e.cell_index} "
                  f"(In [{e.exec_count}]): {e.ename}: {e.evalue}\n         executed copy: {dest}",
                  file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            row.status, row.seconds, row.executed = "interrupted", time.perf_counter() - t0, str(dest)
            row.detail = "stopped by the user (Ctrl-C)"
            raise
        except Exception as e:  # kernel death, timeout, bad notebook file
            row.status, row.seconds, row.executed = "failed", time.perf_counter() - t0, str(dest)
            row.detail = f"{type(e).__name__}: {e}"
            print(f"run_all: FAILED {_show(path)}: {type(e).__name__}: {e}\n"
                  f"         executed copy: {dest}", file=sys.stderr)
            return 1
        row.status, row.seconds, row.executed = "ok", time.perf_counter() - t0, str(dest)
        row.cpu_seconds = children_cpu_seconds() - cpu0
        row.idle_core_seconds = sampler.idle_stretch(t0, t0 + row.seconds) if sampler is not None else None
        print(f"run_all: [{nn}] ok in {row.seconds:.0f} s -> {dest}", flush=True)
    return 0


def _finish(rows: dict[str, NotebookRun], cfg: Any, started: _dt.datetime, total_seconds: float,
            machine: dict) -> None:
    """Mark the notebooks that never started and write the run summary (printed too); a summary that cannot be
    written is one stderr line (the run's own outcome matters more)."""
    for r in rows.values():
        if r.status == "skipped" and not r.detail:
            r.detail = "not run: an earlier notebook did not finish"
    try:
        md_path, _, text = write_summary(
            [rows[k] for k in sorted(rows)], cfg.results_dir, profile=cfg.name, seed=cfg.seed,
            started_at=started.isoformat(timespec="seconds"), total_seconds=total_seconds,
            machine=machine)
        print("\n" + text + f"run_all: summary written to {md_path} (and .csv)", flush=True)
    except OSError as e:  # the run's own outcome matters more than its summary file
        print(f"run_all: could not write the run summary: {e}", file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (``run_all: <problem> (see --help)``) and exit code 2."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"run_all: {message} (see ./run_all.sh --help)\n")


def _override(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--set`` as ``(key, value)``, the value read as YAML (``grpo.max_steps=10`` -> 10)."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--set takes KEY=VALUE (e.g. grpo.max_steps=10), got {text!r}")
    try:
        return key.strip(), yaml.safe_load(value)
    except yaml.YAMLError:
        raise argparse.ArgumentTypeError(f"--set {text}: the value is not YAML (quote a string)") from None


def _seconds(text: str) -> int:
    return positive_int(text, "a whole number of seconds")


def main(argv: list[str] | None = None) -> int:
    """Command line of ``run_all.sh``; returns the exit code (2 with one stderr line for bad usage)."""
    ap = _Parser(prog="run_all.sh", description="Run notebooks/NN_*.ipynb in order with papermill.")
    ap.add_argument("--profile", default="cpu", help="profile name in configs/ or a YAML path (default: cpu)")
    ap.add_argument("--from", dest="start", metavar="NN", help="start at notebook NN (resume)")
    ap.add_argument("--only", metavar="NN", action="append", help="run only notebook NN (repeatable)")
    ap.add_argument("--out", metavar="DIR", help="output root for data/results/figures/runs (sets SDR_ROOT)")
    ap.add_argument("--cell-timeout", type=_seconds, default=None,
                    help=f"seconds per cell (default {DEFAULT_CELL_TIMEOUT}, or twice the longest training stage "
                         "the profile's stated step costs give)")
    ap.add_argument("--kernel", default=KERNEL, help=f"Jupyter kernel name (default {KERNEL})")
    ap.add_argument("--log-output", action="store_true", help="stream cell output to the terminal")
    ap.add_argument("--set", dest="overrides", metavar="KEY=VALUE", type=_override, action="append", default=[],
                    help="override a profile value for every notebook (repeatable; the value is YAML), e.g. "
                         "--set grpo.max_steps=10; checked against the profile schema before any notebook starts")
    ap.add_argument("--allow-substitutes", action="store_true",
                    help="go on when the paper's metric backends (CheXbert, roberta-large) are missing: the same as "
                         "--set metrics.allow_substitutes=true (each table records the substitute)")
    ap.add_argument("--list", action="store_true", help="list the notebooks and exit")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2, already printed)
        return e.code if isinstance(e.code, int) else 2
    if args.list:
        for nn, p in discover():
            print(nn, p.name)
        return 0
    keys = [k for k, _ in args.overrides]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        return _usage(f"--set {twice[0]} given twice; give each key once")
    overrides = dict(args.overrides)
    if args.allow_substitutes and overrides.get("metrics.allow_substitutes", True) is not True:
        return _usage(f"--allow-substitutes with --set metrics.allow_substitutes="
                      f"{overrides['metrics.allow_substitutes']}: they contradict each other; give one")
    if args.allow_substitutes:
        overrides["metrics.allow_substitutes"] = True
    return run(args.profile, args.start, args.only, args.cell_timeout, args.kernel, args.log_output, out=args.out,
               overrides=overrides)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
