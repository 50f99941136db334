"""Run the numbered notebooks in order with papermill (the engine behind ``run_all.sh``).

Each ``notebooks/NN_*.ipynb`` is executed with the profile injected as the
``profile`` parameter, a fixed kernel (``sdr``), a per-cell timeout, and the
executed copy written to ``<runs>/<profile>/notebooks/`` (never in place).
The profile is validated *before* anything runs. On failure the run stops with
exit code 1 and one line naming the notebook, the cell and the error.

What it leaves out: no parallel execution (notebooks depend on each other's
outputs), no caching of unchanged notebooks (use ``--from`` / ``--only``).

Example::

    python -m sdrlib.runner --profile smoke --only 01
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

from .config import ConfigError, load_profile, output_root, repo_root

__all__ = ["discover", "run", "main"]

KERNEL = "sdr"
_NB = re.compile(r"^(\d{2})_[a-z0-9_]+\.ipynb$")


def _discover_in(folder: Path) -> list[tuple[str, Path]]:
    return [(m.group(1), p) for p in sorted(folder.glob("*.ipynb")) if (m := _NB.match(p.name))]


def discover(folder: Path | None = None) -> list[tuple[str, Path]]:
    """``[(NN, path), ...]`` of numbered notebooks in run order (``notebooks/NN_name.ipynb``)."""
    return _discover_in(folder or repo_root() / "notebooks")


def _select(nbs, start: str | None, only: list[str] | None):
    if only:
        want = {o.zfill(2) for o in only}
        missing = want - {nn for nn, _ in nbs}
        if missing:
            raise SystemExit(f"run_all: no notebook numbered {sorted(missing)} (have {[nn for nn, _ in nbs]})")
        return [(nn, p) for nn, p in nbs if nn in want]
    if start:
        return [(nn, p) for nn, p in nbs if nn >= start.zfill(2)]
    return nbs


def _show(path: Path) -> str:
    try:
        return str(path.relative_to(repo_root()))
    except ValueError:
        return str(path)


def run(profile: str, start: str | None = None, only: list[str] | None = None,
        cell_timeout: int = 3600, kernel: str = KERNEL, log_output: bool = False) -> int:
    """Execute the selected notebooks; returns a process exit code (0 ok, 1 failed, 2 bad usage)."""
    try:
        cfg = load_profile(profile)
    except ConfigError as e:
        print(f"run_all: invalid profile: {e}", file=sys.stderr)
        return 2
    import papermill as pm
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    fix = f"run scripts/setup.sh (or: .venv/bin/python -m ipykernel install --user --name {kernel})"
    try:
        spec = KernelSpecManager().get_kernel_spec(kernel)
    except NoSuchKernel:
        print(f"run_all: Jupyter kernel {kernel!r} is not registered; {fix}", file=sys.stderr)
        return 2
    exe = spec.argv[0] if spec.argv else ""
    if os.path.isabs(exe) and not os.path.exists(exe):
        print(f"run_all: Jupyter kernel {kernel!r} points to {exe}, which does not exist (a moved or deleted "
              f"checkout registered it); {fix}", file=sys.stderr)
        return 2
    nbs = _select(discover(), start, only)
    out_dir = cfg.runs_dir / cfg.name / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    env_root = str(output_root())
    os.environ["SDR_ROOT"] = env_root  # the kernel inherits it: outputs land under the same root
    print(f"run_all: profile={cfg.name} seed={cfg.seed} root={env_root} notebooks={[nn for nn, _ in nbs]}")
    for nn, path in nbs:
        dest = out_dir / path.name
        t0 = time.perf_counter()
        print(f"run_all: [{nn}] {path.name} ...", flush=True)
        try:
            pm.execute_notebook(str(path), str(dest), parameters={"profile": cfg.name if Path(profile).suffix
                                                                    not in (".yaml", ".yml") else profile},
                                kernel_name=kernel, execution_timeout=cell_timeout, progress_bar=False,
                                log_output=log_output, cwd=str(path.parent))
        except pm.PapermillExecutionError as e:
            print(f"run_all: FAILED {_show(path)} at cell {e.cell_index} "
                  f"(In [{e.exec_count}]): {e.ename}: {e.evalue}\n         executed copy: {dest}",
                  file=sys.stderr)
            return 1
        except Exception as e:  # kernel death, timeout, bad notebook file
            print(f"run_all: FAILED {_show(path)}: {type(e).__name__}: {e}\n"
                  f"         executed copy: {dest}", file=sys.stderr)
            return 1
        print(f"run_all: [{nn}] ok in {time.perf_counter() - t0:.0f} s -> {dest}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="run_all.sh", description="Run notebooks/NN_*.ipynb in order with papermill.")
    ap.add_argument("--profile", default="cpu", help="profile name in configs/ or a YAML path (default: cpu)")
    ap.add_argument("--from", dest="start", metavar="NN", help="start at notebook NN (resume)")
    ap.add_argument("--only", metavar="NN", action="append", help="run only notebook NN (repeatable)")
    ap.add_argument("--out", metavar="DIR", help="output root for data/results/figures/runs (sets SDR_ROOT)")
    ap.add_argument("--cell-timeout", type=int, default=3600, help="seconds per cell (default 3600)")
    ap.add_argument("--kernel", default=KERNEL, help=f"Jupyter kernel name (default {KERNEL})")
    ap.add_argument("--log-output", action="store_true", help="stream cell output to the terminal")
    ap.add_argument("--list", action="store_true", help="list the notebooks and exit")
    args = ap.parse_args(argv)
    if args.out:
        os.environ["SDR_ROOT"] = str(Path(args.out).resolve())
    if args.list:
        for nn, p in discover():
            print(nn, p.name)
        return 0
    return run(args.profile, args.start, args.only, args.cell_timeout, args.kernel, args.log_output)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
