"""Self-check of the GPU path on your own machine: ``python -m sdrlib.gpu_check`` (minutes, no downloads).

What it proves, part by part (each in its own process, with its own time limit, reported as ``ok``, ``skipped``
with the reason, ``error`` with the message, or ``timeout``):

- **cuda_torch**: torch is a CUDA build and sees a GPU (name, memory, bf16).
- **unsloth**: Unsloth imports (it must come before transformers, so a fresh process; it needs an NVIDIA GPU).
- **grpo_tiny**: the package's own training path (``sdrlib.training.sft`` then ``sdrlib.training.grpo`` with TRL)
  on the tiny Qwen3-VL policy of the smoke profile, 2 SFT and 2 GRPO steps, on the GPU when there is one.
- **engine**: the CUDA distance engine against the CPU engine (``sdrlib.distances.pairwise_distances``,
  ``device="cuda"`` vs ``"cpu"``) for the paper's 15 settings on the same random sets: the largest difference and
  the time of each side.
- **estimate**: a few real SFT and GRPO steps through the Unsloth path on a randomly initialised Qwen3-VL with
  Qwen3-VL-2B-Instruct's dimensions (``benchmarks/gpu_check.py``'s ``prepare`` and ``unsloth`` parts: no weights
  needed), their step time and peak memory, and from them each paper stage's time: steps x measured step time x
  the ratio of the paper profile's rows and tokens per step to the measured ones (a linear estimate, stated as one).

What it does not prove: that the real weights load (``hf download`` them first; the runner's preflight checks they
are there), numbers of the paper's size, or vLLM (not installed with the gpu pins; ``docs/install.md``).

``--cpu-rehearsal`` runs on a machine without a GPU what can run there (the torch report, the tiny policy's SFT and
GRPO steps on the CPU, the CPU side of the engine) and says for every other part what it skips and why. The report
goes to ``--out`` (default ``runs/gpu_check``): ``gpu_check.json`` and ``gpu_check.md``, written after every part.
Exit status: 0 every part ok (or skipped in a rehearsal), 1 a part failed or ran out of time, 2 bad arguments or no
CUDA GPU without ``--cpu-rehearsal``.

Example::

    python -m sdrlib.gpu_check                     # on the GPU machine, after scripts/setup.sh --gpu
    python -m sdrlib.gpu_check --cpu-rehearsal     # anywhere: what runs on the CPU, what is skipped and why
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from sdrlib.data import load_split
from sdrlib.distances import REGISTRY, pairwise_distances
from sdrlib.distances.synthetic import random_sets
from sdrlib.io import OneLineParser, atomic_write_json, atomic_write_text
from sdrlib.paths import repo_root

# torch, transformers, trl and sdrlib.training load inside the parts, in their own processes: Unsloth must be
# imported before transformers (the unsloth part), and a bad-argument answer must not wait for them

__all__ = ["PARTS", "LIMITS", "parse_parts", "markdown", "stage_estimates", "main"]

PARTS = ("cuda_torch", "unsloth", "grpo_tiny", "engine", "estimate")
#: seconds per part (their sum: 10 minutes); a part past its limit is killed and reported as timeout
LIMITS = {"cuda_torch": 30, "unsloth": 60, "grpo_tiny": 150, "engine": 120, "estimate": 240}
#: the parts that need a CUDA GPU, and why (what --cpu-rehearsal says when it skips them)
GPU_ONLY = {
    "unsloth": "Unsloth imports only where an NVIDIA GPU is visible (and the cpu set does not install it)",
    "estimate": "a few steps of a 2-billion-parameter model in bf16 through Unsloth need the GPU (hours per step "
                "on a CPU, and Unsloth refuses vision models without a GPU)",
}
SKIP = 4  # a part's exit status for "skipped, with a reason"
#: the paper profile's stages and their runs (configs/paper.yaml): SFT once, GRPO per reward x seed (+ ablations)
STAGES = ("sft", "grpo")


def parse_parts(text: str) -> list[str]:
    """``"engine,unsloth"`` -> the parts in run order; every part for ``""``. Unknown names: ValueError."""
    if not text.strip():
        return list(PARTS)
    want = [p.strip() for p in text.split(",") if p.strip()]
    if not want:
        raise ValueError(f"--only {text}: names no part; allowed: a comma-separated subset of {', '.join(PARTS)}")
    bad = [p for p in want if p not in PARTS]
    if bad:
        raise ValueError(f"--only {text}: unknown part {bad[0]!r}; allowed: {', '.join(PARTS)}")
    return [p for p in PARTS if p in want]


# =========================================================================== the parts (each in a child process)

def part_cuda_torch(rehearsal: bool, work: Path, res: dict) -> int:
    import torch

    res.update(torch=torch.__version__, cuda_build=torch.version.cuda, cuda_available=torch.cuda.is_available())
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        res.update(device=p.name, memory_gib=round(p.total_memory / 2**30, 1), devices=torch.cuda.device_count(),
                   bf16=torch.cuda.is_bf16_supported())
        return 0
    res["reason"] = ("no CUDA device visible" + ("" if torch.version.cuda else
                     " and this torch is a CPU build (scripts/setup.sh --gpu installs the CUDA build)"))
    return SKIP if rehearsal else 1


def part_unsloth(rehearsal: bool, work: Path, res: dict) -> int:
    import unsloth  # noqa: F401  (before transformers and trl, as Unsloth asks)

    res["unsloth"] = getattr(unsloth, "__version__", "unknown")
    return 0


def part_grpo_tiny(rehearsal: bool, work: Path, res: dict) -> int:
    """SFT then GRPO (reward chamfer), 2 steps each, on the smoke profile's tiny policy: the package's own path."""
    os.environ["SDR_ROOT"] = str(work / "root")
    import torch

    from sdrlib import training
    from sdrlib.config import load_profile
    from sdrlib.embedding import SentenceEmbedder

    cfg = load_profile("smoke", {"sft.max_steps": 2, "grpo.max_steps": 2, "grpo.rewards": ["chamfer"],
                                 "grpo.workers": 1, "pruning.policies": ["sft"], "selection.policies": ["sft"]})
    train = load_split(cfg, "train")
    t0 = time.perf_counter()
    s = training.sft(cfg, train, force=True, progress=False)
    res["sft_s"] = round(time.perf_counter() - t0, 1)
    emb = SentenceEmbedder.from_config(cfg)
    t0 = time.perf_counter()
    g = training.grpo(cfg, "chamfer", s.final, train, embedder=emb, force=True, progress=False)
    res["grpo_s"] = round(time.perf_counter() - t0, 1)
    curves = training.read_curves(g.path)
    res["grpo_steps"] = int(curves["step"].max()) if "step" in curves and len(curves) else None
    res["device"] = "cuda" if torch.cuda.is_available() else "cpu"  # where sdrlib.training put the tiny policy
    return 0


def part_engine(rehearsal: bool, work: Path, res: dict) -> int:
    """The paper's 15 settings on K = 5 candidate sets x N bank sets (d = 768; N = 200, 40 in a rehearsal), CPU then
    CUDA (compilation included in each first call)."""
    import numpy as np

    rng = np.random.default_rng(0)
    n = 40 if rehearsal else 200
    cands, bank = random_sets(rng, 5, n_min=2, n_max=8), random_sets(rng, n, n_min=2, n_max=8)
    rows, worst = [], 0.0
    for name in REGISTRY:
        t0 = time.perf_counter()
        cpu = pairwise_distances(cands, bank, name, device="cpu", on_nonconvergence="ignore")
        row: dict[str, Any] = {"setting": name, "cpu_s": round(time.perf_counter() - t0, 3)}
        if not rehearsal:
            t0 = time.perf_counter()
            gpu = pairwise_distances(cands, bank, name, device="cuda", on_nonconvergence="ignore")
            row["cuda_s"] = round(time.perf_counter() - t0, 3)
            row["max_abs_diff"] = float(np.max(np.abs(gpu - cpu)))
            worst = max(worst, row["max_abs_diff"])
        rows.append(row)
    res.update(settings=len(rows), pairs=5 * n, cpu_s=round(sum(r["cpu_s"] for r in rows), 1), rows=rows)
    if rehearsal:
        res["reason"] = "CPU side only: the CUDA engine needs a GPU and numba's CUDA target"
        return SKIP
    res["max_abs_diff"] = worst
    return 0


def part_estimate(rehearsal: bool, work: Path, res: dict) -> int:
    """``benchmarks/gpu_check.py --parts prepare,unsloth`` (Qwen3-VL-2B's dimensions, random weights), then
    :func:`stage_estimates` for the paper profile."""
    script = repo_root() / "benchmarks" / "gpu_check.py"
    if not script.is_file():
        res["error"] = f"{script} is missing (this part runs from a checkout of the repository)"
        return 1
    out = work / "bench"
    p = subprocess.run([sys.executable, str(script), "--parts", "prepare,unsloth", "--out", str(out),
                        "--wheels", str(work / "no-wheels"), "--deadline", str(LIMITS["estimate"] - 15)],
                       capture_output=True, text=True, cwd=repo_root())
    try:
        bench = json.loads((out / "gpu_check.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        res["error"] = f"the benchmark wrote no report (exit {p.returncode}): {(p.stdout + p.stderr)[-1500:]}"
        return 1
    measured = bench["parts"].get("unsloth", {})
    res["measured"] = {k: measured.get(k) for k in STAGES}
    res["measured_settings"] = bench.get("settings", {})
    if measured.get("status") != "ok":
        res["error"] = f"the Unsloth steps did not run: {measured.get('reason') or measured.get('error')}"
        return 1
    from sdrlib.config import load_profile

    res["paper"] = stage_estimates(load_profile("paper"), measured)
    return 0


PART_FUNCS: dict[str, Callable[[bool, Path, dict], int]] = {
    "cuda_torch": part_cuda_torch, "unsloth": part_unsloth, "grpo_tiny": part_grpo_tiny, "engine": part_engine,
    "estimate": part_estimate}

#: rows and tokens per optimizer step of the measured Unsloth steps (benchmarks/gpu_check.py, non-dry sizes: SFT
#: batch 8, GRPO 16 completions of up to 96 tokens, one process, no accumulation)
MEASURED_ROWS = {"sft": 8, "grpo": 16}
MEASURED_COMPLETION_TOKENS = 96


def stage_estimates(cfg: Any, measured: dict) -> dict:
    """Each paper stage's time from measured step times: ``steps x step_s x (rows per step / measured rows)``, and
    for GRPO also ``x (max completion tokens / measured tokens)`` (generation dominates); runs per stage from the
    profile (SFT once; GRPO rewards x seeds + ablations x ablation seeds). Peak memory as measured (the per-device
    batch of the paper profile is at most the measured one). A linear estimate, not a measurement.

    Example: SFT 0.5 s per measured step of 8 rows, paper 3000 steps of 96 rows -> 3000 x 0.5 x 12 = 18,000 s.
    """
    g, s = cfg.grpo, cfg.sft
    rows = {"sft": s.effective_batch or s.batch_size * s.grad_accum, "grpo": g.effective_batch or g.batch_size * g.grad_accum}
    runs = {"sft": 1, "grpo": len(g.rewards) * g.seeds + len(g.ablations) * g.ablation_seeds}
    steps = {"sft": s.max_steps, "grpo": g.max_steps}
    out = {}
    for stage in STAGES:
        m = measured.get(stage) or {}
        step = m.get("mean_step_s")
        if not step:
            out[stage] = {"reason": "not measured"}
            continue
        scale = rows[stage] / MEASURED_ROWS[stage]
        if stage == "grpo":
            scale *= g.max_completion_length / MEASURED_COMPLETION_TOKENS
        per_step = step * scale
        out[stage] = {"steps": steps[stage], "runs": runs[stage], "rows_per_step": rows[stage],
                      "est_step_s": round(per_step, 2), "est_run_h": round(steps[stage] * per_step / 3600, 2),
                      "est_stage_h": round(runs[stage] * steps[stage] * per_step / 3600, 1),
                      "peak_mem_gib": (round(m["peak_mem_mib"] / 1024, 1) if m.get("peak_mem_mib") else None)}
    return out


# =========================================================================== the orchestrator

def _child(part: str, rehearsal: bool, work: Path) -> int:
    res: dict = {}
    try:
        rc = PART_FUNCS[part](rehearsal, work, res)
    except Exception as e:  # noqa: BLE001 - reported in the JSON; the parent marks the part as an error
        res["error"] = f"{type(e).__name__}: {str(e).strip()[:2000]}"
        rc = 1
    atomic_write_json(work / f"{part}.json", res)
    return rc


def run_part(part: str, rehearsal: bool, work: Path, limit: float) -> dict:
    """One part in its own process group, killed after ``limit`` seconds; its result with status and seconds."""
    if rehearsal and part in GPU_ONLY:
        return {"status": "skipped", "reason": GPU_ONLY[part], "seconds": 0.0}
    cmd = [sys.executable, "-m", "sdrlib.gpu_check", "--part", part, "--work", str(work)]
    if rehearsal:
        cmd.append("--cpu-rehearsal")
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(repo_root()), os.environ.get("PYTHONPATH", "")]))}
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "UNSLOTH_DISABLE_STATISTICS"):
        env.setdefault(k, "1")  # nothing is downloaded
    t0 = time.perf_counter()
    with open(work / f"{part}.log", "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc: int | None = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            rc = None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    try:
        res = json.loads((work / f"{part}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        res = {}
    res["seconds"] = round(time.perf_counter() - t0, 1)
    if rc is None:
        res.update(status="timeout", reason=f"ran past its {limit:.0f} s limit (killed)")
    else:
        res["status"] = "ok" if rc == 0 else "skipped" if rc == SKIP else "error"
        if rc not in (0, SKIP) and "error" not in res:
            tail = (work / f"{part}.log").read_text(encoding="utf-8", errors="replace")[-1500:]
            res["error"] = f"exit status {rc}: {tail}"
    return res


def _cell(v: Any) -> str:
    return " ".join(str(v).split()).replace("|", "\\|")


def markdown(report: dict) -> str:
    """The report as Markdown: one row per part (status, seconds, what it found or why not), then the estimates."""
    mode = "CPU rehearsal" if report.get("cpu_rehearsal") else "GPU"
    lines = [f"# GPU self-check ({mode})", "", f"- started: {report.get('started', '')}, "
             f"total: {report.get('seconds', 0):.1f} s", "", "| part | status | seconds | detail |",
             "| --- | --- | ---: | --- |"]
    for name, r in report.get("parts", {}).items():
        facts = ", ".join(f"{k}={v}" for k, v in r.items() if k not in ("status", "seconds", "reason", "error")
                          and not isinstance(v, (dict, list)))
        detail = "; ".join(x for x in (r.get("reason") or r.get("error"), facts) if x)
        lines.append(f"| {name} | {r['status']} | {r.get('seconds', 0):.1f} | {_cell(detail)} |")
    est = report.get("parts", {}).get("estimate", {}).get("paper")
    if est:
        lines += ["", "## Paper profile: estimated time and memory per stage (linear in rows and tokens; not measured "
                      "at the paper's size)", "", "| stage | runs | steps | rows / step | s / step | h / run | "
                      "h / stage | peak GiB |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for stage, e in est.items():
            if "est_step_s" in e:
                lines.append(f"| {stage} | {e['runs']} | {e['steps']} | {e['rows_per_step']} | {e['est_step_s']} | "
                             f"{e['est_run_h']} | {e['est_stage_h']} | {e['peak_mem_gib']} |")
    return "\n".join(lines) + "\n"


def _usage(message: str) -> int:
    print(f"python -m sdrlib.gpu_check: {message} (see --help)", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Command line (module doc); returns the exit status."""
    ap = OneLineParser(prog="python -m sdrlib.gpu_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu-rehearsal", action="store_true",
                    help="no GPU: run what the CPU can (torch report, tiny SFT/GRPO steps, CPU engine), skip the rest")
    ap.add_argument("--out", default=str(repo_root() / "runs" / "gpu_check"),
                    help="folder for gpu_check.json and gpu_check.md (default runs/gpu_check)")
    ap.add_argument("--only", default="", metavar="PART,...", help=f"a subset of {','.join(PARTS)}")
    ap.add_argument("--part", default="", help=argparse.SUPPRESS)
    ap.add_argument("--work", default="", help=argparse.SUPPRESS)
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2, already printed in one line)
        return e.code if isinstance(e.code, int) else 2
    if args.part:
        return _child(args.part, args.cpu_rehearsal, Path(args.work))
    try:
        parts = parse_parts(args.only)
    except ValueError as e:
        return _usage(str(e))
    if not args.out.strip():
        return _usage("--out '': an empty path; allowed: a folder for the report (default runs/gpu_check)")
    out = Path(os.path.expanduser(args.out))
    if args.out.startswith("~") and str(out).startswith("~"):
        return _usage(f"--out {args.out}: cannot expand {args.out.split('/')[0]!r} (no such user); give a full path")
    if out.exists() and not out.is_dir():
        return _usage(f"--out {args.out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return _usage(f"--out {args.out}: cannot create the folder ({e.strerror or type(e).__name__})")
    t_start = time.perf_counter()
    report: dict = {"cpu_rehearsal": args.cpu_rehearsal, "started": time.strftime("%Y-%m-%d %H:%M:%S"), "parts": {}}
    with tempfile.TemporaryDirectory(prefix="sdr-gpu-check-") as tmp:
        for name in parts:
            print(f"gpu_check: {name} ...", flush=True)
            res = run_part(name, args.cpu_rehearsal, Path(tmp), LIMITS[name])
            report["parts"][name] = res
            print(f"gpu_check: {name}: {res['status']} in {res['seconds']:.1f} s"
                  + (f" ({res.get('reason') or res.get('error')})" if res["status"] != "ok" else ""), flush=True)
            report["seconds"] = round(time.perf_counter() - t_start, 1)
            atomic_write_json(out / "gpu_check.json", report)
            atomic_write_text(out / "gpu_check.md", markdown(report))
            if name == "cuda_torch" and res["status"] != "ok" and not args.cpu_rehearsal:
                print("gpu_check: no CUDA GPU: nothing else can be checked here (--cpu-rehearsal runs what the CPU "
                      "can)", file=sys.stderr)
                return 2
    print(markdown(report))
    print(f"gpu_check: wrote {out / 'gpu_check.json'} and {out / 'gpu_check.md'}")
    bad = [n for n, r in report["parts"].items() if r["status"] in ("error", "timeout")
           or (r["status"] == "skipped" and not args.cpu_rehearsal)]
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
