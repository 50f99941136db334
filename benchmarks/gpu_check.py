"""GPU benchmark: the distance engine, plain TRL vs Unsloth, vLLM, BERTScore, RadGraph; one JSON.

The user's self-check is ``python -m sdrlib.gpu_check`` (docs/gpu.md); it runs this script's ``prepare`` and
``unsloth`` parts for its time and memory estimate. This script is the longer side-by-side measurement, for a GPU
machine that may have no package registry: the wheels of ``scripts/gpu_wheels.sh`` beside the repository
(``.whl/``) are installed into a temporary folder first.

    scripts/gpu_wheels.sh                                   # with a registry, once: trl, unsloth, ... into .whl/
    python3 benchmarks/gpu_check.py --out runs/gpu_bench    # on the GPU machine: <= 480 s
    .venv/bin/python benchmarks/gpu_check.py --dry-run      # anywhere: every part but the CUDA calls, tiny sizes

The JSON and the Markdown are rewritten after every part, so a command stopped from outside still leaves the parts
that finished.

The check first installs ``.whl/*.whl`` into a temporary folder (``pip install --no-index --no-deps
--target TMP``; ``--no-deps`` because ``--target`` would otherwise want torch and transformers again from the
wheel folder, and the wheel set is exact) and puts that folder first on every part's ``PYTHONPATH``. Then
each part runs in its own subprocess with its own time budget (``--budget PART=SECONDS``; on the GPU install
30, env 25, engine 70, prepare 45, plain 75, unsloth 120, vllm 40, bertscore 35, radgraph 25: 465 s, and no
part runs past ``--deadline`` 480 s); a part that runs out of time is killed with its process group and reported as
``timeout`` with whatever it had written so far, and the next part starts on time, so no part can eat
another's time. The parts, in order:

- **env**: Python, torch, CUDA device, numba's CUDA target, and the versions of every package involved.
- **engine** (a): ``benchmarks/bench_distances.py --device cuda`` (``--engine`` runs it alone; K=5 x
  N=1000 by default, ``--engine-K`` / ``--engine-N``): per setting (the paper's 15 and our ``_raw`` ones,
  random and structured data, d = 768) the CPU engine and the engine on the GPU on the same K x N pairs
  (Sinkhorn / UOT / GW solved by numba CUDA kernels, the rest: cosines on the GPU, solvers on the CPU),
  microseconds per pair and GPU pairs per second, their agreement (max |GPU - CPU|, convergence flags that
  differ, non-converged pairs on each side), and the projected paper sweep of the 15 settings (1000
  studies x K=5 x N=5000 x 2 sections each) against the goal of 10 minutes. Needs numba's CUDA target
  (driver, NVVM, libdevice); the part fails with numba's reason otherwise.
- **prepare**: a synthetic training split (smoke profile), a byte-level BPE trained on its reports, a
  randomly initialised ``Qwen3VLForConditionalGeneration`` with **Qwen3-VL-2B-Instruct's published
  dimensions** (:data:`QWEN3_VL_2B`; no weights are needed or downloaded; its embedding and LM head keep the
  full 151,936-token vocabulary, the local tokenizer uses the first ids) saved in bf16, and a randomly
  initialised MiniLM-shaped sentence encoder for the GRPO reward (values meaningless, cost realistic).
- **plain** (b): that policy in bf16 with PEFT LoRA (r 16, alpha 16, the language model's q/k/v/o and MLP
  projections), trained by TRL's ``SFTTrainer`` then ``GRPOTrainer`` (reward ``chamfer``) directly.
- **unsloth** (b): the package's own paper path on the same folder: ``sdrlib.training.sft`` and
  ``sdrlib.training.grpo`` with ``sft.policy`` set to it (``FastVisionModel`` + LoRA, same rank, batch and
  steps). Both report mean step time (first step left out: compilation, warm-up), peak GPU memory
  (``torch.cuda.max_memory_allocated``) per stage, and the SFT loss. SFT 8 steps (batch 8), GRPO 4 steps
  (batch 16 = 2 prompts x 8 generations, completions up to 96 tokens). The random policy's completions fail
  the report template, so its GRPO steps are generation + update with a reward that stops at the format
  check: the semantic reward's own cost is measured on the CPU runs, not here. The JSON's
  ``unsloth_vs_plain`` gives the step-time ratio per stage (plain / Unsloth: above 1, Unsloth is faster).
- **vllm**: when vLLM is importable, the prepared policy loaded by ``vllm.LLM`` (bf16, eager) and 2 prompts x 8
  samples of up to 96 tokens generated: load time and generated tokens per second. Skipped, without failing
  the check, when vLLM is not installed: no release installs beside the gpu pins, so the paper profile has
  ``grpo.use_vllm: false`` (docs/install.md, Installing for a GPU) and the wheel set does not carry it.
- **bertscore** (c): ``sdrlib.metrics.nlg.bertscore_f1`` on the GPU on synthetic report pairs, with a
  randomly initialised backbone of roberta-large's dimensions (24 layers x 1024, layer 17; BERT
  architecture and a locally trained WordPiece vocabulary: values meaningless, cost realistic): pairs per
  second, and the largest |GPU - CPU| F1 difference on the first pairs.
- **radgraph** (d): RadGraph under our transformers through ``sdrlib.metrics.radgraph_compat``:
  ``install()``, then radgraph's real annotator (``F1RadGraph``) around the tiny random-weight model of
  ``tests/radgraph_tiny.py`` on a few reports, on the GPU. Skipped, without failing the check, where radgraph is
  not installed.

``--dry-run`` runs every part on the CPU with tiny sizes (CPU engine against itself, a tiny Qwen3-VL, a tiny
backbone), except **unsloth** and **vllm**, which are reported as skipped: Unsloth refuses vision models without
a GPU, and vLLM needs one. The
wheels are for CPython 3.12; on another Python the dry run uses the environment's own packages and says so.
Exit status: 0 every part ok (or skipped in a dry run), 1 a part failed or ran out of time, 2 no CUDA GPU
(without ``--dry-run``). The JSON and the Markdown go to ``--out`` (``gpu_check.json``, ``gpu_check.md``),
with the parts' own output (``gpu_check.log``, the last 300 kB of each), so a failure there can be read here.

Versions: the gpu extra's pins (pyproject.toml): transformers 5.17.0 (the core pin; the GPU machine's, and the
newest Unsloth 2026.10.9 accepts), trl 1.15.0 and datasets 4.8.5 (the wheels carry these two); both training
paths use the same ones (docs/install.md, Installing for a GPU).

Qwen3-VL-2B-Instruct's dimensions (:data:`QWEN3_VL_2B`), from its published ``config.json`` as quoted in
public code: a test fixture that copies
``Qwen/Qwen3-VL-2B-Instruct`` at revision ``89644892e4d85e24eaac8bacfd4f463576704203`` (text: hidden 2048,
intermediate 6144, 28 layers, 16 heads, 8 KV heads, head_dim 128, vocab 151,936, rope_theta 5e6; vision:
hidden 1024, out_hidden 2048, patch 16, merge 2, deepstack layers 5/11/17) and an engine configuration for
the same backbone "aligned with config.json" (vision depth 24, intermediate 4096, 16 heads, 2,304 position
embeddings, interleaved M-RoPE sections 24/20/20, tied word embeddings); the vision tower matches
``unsloth/Qwen3-VL-4B-Instruct``'s published config. Together they give 2,127,532,032 parameters, 4.26 GB in
bf16: the size of the published ``model.safetensors`` (tests/project/test_gpu_check.py counts them).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent

# nothing outside the GPU machine can be reached: no library may wait on the network (Unsloth's usage statistics
# download included); the parts inherit these
for _k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY",
           "UNSLOTH_DISABLE_STATISTICS"):
    os.environ.setdefault(_k, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
LOG_TAIL_BYTES = 300_000  # per part, in gpu_check.log

PARTS = ("env", "engine", "prepare", "plain", "unsloth", "vllm", "bertscore", "radgraph")
#: seconds per part on the GPU machine; their sum (465 s, with the install) fits under the deadline
BUDGETS = {"install": 30, "env": 25, "engine": 70, "prepare": 45, "plain": 75, "unsloth": 120, "vllm": 40,
           "bertscore": 35, "radgraph": 25}
DRY_BUDGETS = {"install": 60, "env": 60, "engine": 150, "prepare": 90, "plain": 150, "unsloth": 30, "vllm": 30,
               "bertscore": 90, "radgraph": 90}
#: no part starts or runs past this many seconds after the start (``--deadline``)
DEADLINE = 480
#: the dry run's (room for a busy CPU)
DRY_DEADLINE = 900
NEEDS_PREPARE = ("plain", "unsloth", "vllm", "bertscore")
#: parts whose "skipped" (a package that is not there by choice) does not fail the check
OPTIONAL = ("vllm", "radgraph")
#: sdrlib.metrics.radgraph_compat's patch function and its end-to-end check, first found wins
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
PACKAGES = ("torch", "transformers", "tokenizers", "trl", "peft", "accelerate", "datasets", "unsloth", "unsloth_zoo",
            "vllm", "triton", "numba", "numba-cuda", "numpy", "pot", "bert-score", "evaluate", "sentence-transformers",
            "pysbd", "radgraph")
SKIP = 4  # a part's exit status for "skipped, with a reason"

#: Qwen3-VL-2B-Instruct's published dimensions (module doc says where they come from).
QWEN3_VL_2B = {
    "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144, "layers": 28, "heads": 16,
    "kv_heads": 8, "head_dim": 128, "rope_theta": 5_000_000.0, "mrope_section": [24, 20, 20],
    "max_positions": 262144, "tie_word_embeddings": True,
    "vision_depth": 24, "vision_hidden_size": 1024, "vision_intermediate_size": 4096, "vision_heads": 16,
    "patch_size": 16, "merge_size": 2, "num_position_embeddings": 2304, "deepstack": [5, 11, 17],
}
QWEN3_VL_2B_SOURCE = ("Qwen/Qwen3-VL-2B-Instruct config.json (revision 89644892e4d85e24eaac8bacfd4f463576704203) "
                      "as quoted in public code; 2,127,532,032 parameters = its 4.26 GB of bf16 weights")
#: the dry run's stand-in (same code path, CPU-sized)
TINY_VL = {
    "vocab_size": 4096, "hidden_size": 64, "intermediate_size": 128, "layers": 2, "heads": 4, "kv_heads": 2,
    "head_dim": 16, "rope_theta": 10000.0, "mrope_section": [4, 2, 2], "max_positions": 1024,
    "tie_word_embeddings": True, "vision_depth": 2, "vision_hidden_size": 32, "vision_intermediate_size": 64,
    "vision_heads": 2, "patch_size": 16, "merge_size": 2, "num_position_embeddings": 36, "deepstack": [0],
}
#: sentence encoder for the GRPO reward: all-MiniLM-L6-v2's shape, random weights
MINILM = {"hidden_size": 384, "layers": 6, "heads": 12, "intermediate_size": 1536}
#: BERTScore backbone: roberta-large's shape (bert-score's default English model, layer 17), random weights
ROBERTA_LARGE = {"hidden_size": 1024, "layers": 24, "heads": 16, "intermediate_size": 4096, "num_layers": 17}
TINY_ENCODER = {"hidden_size": 32, "layers": 2, "heads": 2, "intermediate_size": 64}
TINY_BACKBONE = {"hidden_size": 32, "layers": 2, "heads": 2, "intermediate_size": 64, "num_layers": 2}


# =========================================================================== the orchestrator


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _tail(path: Path, n: int = 15) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def install_wheels(wheels: Path, site: Path, budget: float, dry_run: bool) -> dict:
    """``pip install --no-index --no-deps --target site wheels/*.whl``; what was installed, or why not."""
    files = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
    info: dict = {"wheels_dir": str(wheels), "wheels": [f.name for f in files],
                  "mib": round(sum(f.stat().st_size for f in files) / 2**20, 1)}
    if not files:
        info.update(status="skipped", reason=f"no wheels in {wheels} (scripts/gpu_wheels.sh makes them): "
                                             "using this environment's packages")
        return info
    if sys.version_info[:2] != (3, 12) and dry_run:
        info.update(status="skipped", reason=f"the wheels are for CPython 3.12; this is "
                                             f"{sys.version_info[0]}.{sys.version_info[1]}: using this "
                                             "environment's packages")
        return info
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
           "--no-cache-dir", "--disable-pip-version-check", "--target", str(site), *map(str, files)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        info.update(status="timeout", budget_s=budget, seconds=round(time.perf_counter() - t0, 1))
        return info
    info["seconds"] = round(time.perf_counter() - t0, 1)
    if p.returncode != 0:
        info.update(status="error", error=(p.stderr or p.stdout)[-2000:])
        return info
    info.update(status="ok", requirements=_unmet_requirements(site))
    return info


def _unmet_requirements(site: Path) -> list[str]:
    """Requires-Dist of the installed wheels that nothing on the path satisfies (name, wanted, found)."""
    from importlib import metadata

    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover
        from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    path = [str(site)] + [p for p in sys.path if p]
    found: dict[str, str] = {}
    for d in metadata.distributions(path=path):
        name = re.sub(r"[-_.]+", "-", (d.metadata["Name"] or "")).lower()
        found.setdefault(name, d.version)
    out = []
    for d in metadata.distributions(path=[str(site)]):
        for rd in d.requires or []:
            try:
                req = Requirement(rd)
            except Exception:  # noqa: BLE001
                continue
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            have = found.get(re.sub(r"[-_.]+", "-", req.name).lower())
            if have is None:
                out.append(f"{d.metadata['Name']} {d.version} requires {req}: not installed")
            elif req.specifier and not req.specifier.contains(have, prereleases=True):
                out.append(f"{d.metadata['Name']} {d.version} requires {req}: found {have}")
    return sorted(set(out))


def run_part(name: str, args, work: Path, site: Path | None, budget: float) -> dict:
    """One part in its own process group, killed at ``budget`` seconds; its JSON plus status and timing."""
    part_dir = work / name
    part_dir.mkdir(parents=True, exist_ok=True)
    out_json, log = part_dir / "result.json", part_dir / "log.txt"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--part", name, "--work", str(work),
           "--steps-sft", str(args.steps_sft), "--steps-grpo", str(args.steps_grpo),
           "--engine-K", str(args.engine_K), "--engine-N", str(args.engine_N), "--pairs", str(args.pairs)]
    if args.dry_run:
        cmd.append("--dry-run")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*([str(site)] if site else []), str(REPO),
                                         *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env["PYTHONUNBUFFERED"] = "1"
    env["SDR_ROOT"] = str(work / "root")
    t0 = time.perf_counter()
    status, rc = "ok", None
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(cmd, cwd=part_dir, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=budget)
        except subprocess.TimeoutExpired:
            status = "timeout"
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                try:
                    proc.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
    seconds = round(time.perf_counter() - t0, 1)
    try:
        res = json.loads(out_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        res = {}
    if status != "timeout":
        status = "ok" if rc == 0 else "skipped" if rc == SKIP else "error"
    res.update(status=status, seconds=seconds, budget_s=budget)
    if name == "engine" and not res.get("rows"):  # what bench_distances printed before it stopped
        with contextlib.suppress(OSError):
            res.update(parse_device_table(log.read_text(encoding="utf-8", errors="replace")))
    if status == "timeout":
        res["reason"] = f"ran out of its {budget:.0f} s budget (killed); results here are what it had written"
    if status == "error":
        res.setdefault("error", f"exit status {rc}")
        res["log_tail"] = _tail(log)
    with contextlib.suppress(OSError), open(log, "rb") as fh, open(Path(args.out) / "gpu_check.log", "ab") as out:
        fh.seek(max(0, log.stat().st_size - LOG_TAIL_BYTES))
        out.write(f"\n===== {name}: {status} in {seconds} s (budget {budget:.0f} s) =====\n".encode())
        out.write(fh.read())
    return res


def _write_outputs(out: Path, report: dict) -> str:
    md = markdown(report)
    _write_json(out / "gpu_check.json", report)
    tmp = out / "gpu_check.md.tmp"
    tmp.write_text(md, encoding="utf-8")
    os.replace(tmp, out / "gpu_check.md")
    return md


class BadArgument(SystemExit):
    """A command-line argument this script cannot use; raised before any work, printed as one line (exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = f"gpu_check: {message}"


def _positive_seconds(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadArgument(f"{what} takes seconds (a number), not {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise BadArgument(f"{what} must be a positive, finite number of seconds, not {text!r} "
                          "(nan or inf would remove the limit)")
    return value


def parse_budgets(items: list[str], dry_run: bool) -> dict[str, float]:
    """The parts' budgets: the defaults (GPU or dry run) with each ``PART=SECONDS`` of ``--budget`` applied.

    Example: ``["env=10"]`` -> ``{"install": 30, "env": 10.0, ...}``; ``"env"``, ``"env=abc"``, ``"env=nan"``,
    ``"env=0"`` or an unknown part raise :class:`BadArgument` naming the item.
    """
    budgets: dict[str, float] = dict(DRY_BUDGETS if dry_run else BUDGETS)
    for item in items:
        k, eq, v = item.partition("=")
        if not eq:
            raise BadArgument(f"--budget takes PART=SECONDS (e.g. env=30), not {item!r}")
        if k not in budgets:
            raise BadArgument(f"unknown part {k!r} in --budget; parts: {', '.join(budgets)}")
        budgets[k] = _positive_seconds(v, f"--budget {k}=")
    return budgets


def parse_parts(text: str) -> list[str]:
    """The parts to run from ``--parts`` (every part when empty); a list naming no part (``","``) or an unknown
    part raises :class:`BadArgument`."""
    if not text:
        return list(PARTS)
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise BadArgument(f"--parts {text!r} names no part; parts: {', '.join(PARTS)}")
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise BadArgument(f"unknown parts {unknown} in --parts; parts: {', '.join(PARTS)}")
    return parts


def check_args(args: argparse.Namespace) -> None:
    """Every argument checked before any work (the rehearsal on the CPU must refuse what the GPU run would):
    budgets, parts, deadline, sizes and the output folder. Raises :class:`BadArgument`."""
    parse_budgets(args.budget, args.dry_run)
    parse_parts(args.parts)
    _positive_seconds(str(args.deadline), "--deadline")
    for flag, value in (("--steps-sft", args.steps_sft), ("--steps-grpo", args.steps_grpo),
                        ("--engine-K", args.engine_K), ("--engine-N", args.engine_N), ("--pairs", args.pairs)):
        if value < 1:
            raise BadArgument(f"{flag} must be at least 1, not {value}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BadArgument(f"--out {args.out} is a file, not a folder")


def orchestrate(args) -> int:
    t_start = time.perf_counter()
    budgets = parse_budgets(args.budget, args.dry_run)
    parts = parse_parts(args.parts)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.log").write_text("", encoding="utf-8")  # the parts' output (the last 300 kB of each)
    report: dict = {"dry_run": args.dry_run, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "budgets_s": {k: budgets[k] for k in ["install", *parts]},
                    "budget_total_s": sum(budgets[k] for k in ["install", *parts]), "deadline_s": args.deadline,
                    "settings": {"steps_sft": args.steps_sft, "steps_grpo": args.steps_grpo, "engine_K": args.engine_K,
                                 "engine_N": args.engine_N, "bertscore_pairs": args.pairs},
                    "parts": {}}
    with tempfile.TemporaryDirectory(prefix="gpu_check-") as tmp:
        work = Path(tmp)
        site = work / "site"
        inst = install_wheels(Path(args.wheels), site, budgets["install"], args.dry_run)
        report["install"] = inst
        print(f"gpu_check: install: {inst['status']}" + (f" ({inst.get('reason')})" if inst.get("reason") else ""),
              flush=True)
        use_site = site if inst["status"] == "ok" else None
        for name in parts:
            left = args.deadline - (time.perf_counter() - t_start) - 5
            budget = min(budgets[name], left)
            if name in NEEDS_PREPARE and "prepare" in parts and report["parts"].get("prepare", {}).get("status") != "ok":
                res = {"status": "skipped", "reason": "prepare did not finish (see prepare)", "seconds": 0.0}
            elif left < 10:
                res = {"status": "skipped", "reason": f"no time left before the {args.deadline:.0f} s deadline",
                       "seconds": 0.0}
            else:
                print(f"gpu_check: {name} (budget {budget:.0f} s) ...", flush=True)
                res = run_part(name, args, work, use_site, budget)
            report["parts"][name] = res
            print(f"gpu_check: {name}: {res['status']} in {res.get('seconds', 0):.1f} s"
                  + (f" ({res['reason']})" if res.get("reason") else ""), flush=True)
            if name == "env" and not args.dry_run and not res.get("cuda"):
                report["error"] = "no CUDA GPU visible; this check only makes sense on a GPU machine (or --dry-run)"
            report["seconds"] = round(time.perf_counter() - t_start, 1)
            _write_outputs(out, report)  # after every part: a command killed from outside keeps what ran
            if report.get("error"):
                break
    report["unsloth_vs_plain"] = step_time_ratio(report["parts"])
    report["seconds"] = round(time.perf_counter() - t_start, 1)
    md = _write_outputs(out, report)
    print(md)
    print(f"gpu_check: wrote {out / 'gpu_check.json'} and {out / 'gpu_check.md'}")
    if report.get("error"):
        return 2
    bad = [n for n, r in report["parts"].items() if r["status"] in ("error", "timeout")
           or (r["status"] == "skipped" and n not in OPTIONAL and not (args.dry_run and n == "unsloth"))]
    return 1 if bad else 0


def step_time_ratio(parts: dict) -> dict:
    """Per stage (sft, grpo): the plain TRL path's mean step time over Unsloth's (> 1: Unsloth is faster), and
    the same for peak GPU memory; ``None`` where a path did not run that stage."""
    out = {}
    for stage in ("sft", "grpo"):
        a, b = parts.get("plain", {}).get(stage) or {}, parts.get("unsloth", {}).get(stage) or {}
        t = a.get("mean_step_s") / b["mean_step_s"] if a.get("mean_step_s") and b.get("mean_step_s") else None
        m = b["peak_mem_mib"] / a["peak_mem_mib"] if a.get("peak_mem_mib") and b.get("peak_mem_mib") else None
        out[stage] = {"step_time_plain_over_unsloth": t, "peak_mem_unsloth_over_plain": m}
    return out


# =========================================================================== Markdown


def _f(x, fmt="{:.3g}"):
    if x is None:
        return "—"
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return "—"
    return fmt.format(x) if isinstance(x, (int, float)) else str(x)


def _count(n: int) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M" if n >= 1e5 else f"{n:,}"


def markdown(r: dict) -> str:
    P = r["parts"]
    env = P.get("env", {})
    lines = [f"# GPU check{' (dry run: CPU, tiny sizes)' if r['dry_run'] else ''}", "",
             f"- started {r['started']}, {r.get('seconds', 0):.0f} s in all (budgets {r['budget_total_s']:.0f} s)",
             f"- device: {env.get('device', '—')}; Python {env.get('python', '—')}; torch {env.get('versions', {}).get('torch', '—')}"
             f" (CUDA {env.get('torch_cuda', '—')}); numba CUDA target: {env.get('numba_cuda', '—')}",
             "- versions: " + ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items() if k != "torch"),
             f"- wheels: {r['install']['status']}, {len(r['install'].get('wheels', []))} files, "
             f"{r['install'].get('mib', 0)} MiB" + (f" ({r['install']['reason']})" if r['install'].get('reason') else ""),
             ]
    unmet = r["install"].get("requirements") or []
    if unmet:
        lines.append(f"- requirements of the wheels not met on this machine ({len(unmet)}; optional ones are "
                     "expected): " + "; ".join(unmet))
    if r.get("error"):
        lines += ["", f"**{r['error']}**"]
    lines += ["", "| part | status | seconds | budget s | note |", "|---|---|---:|---:|---|"]
    for n, p in P.items():
        note = p.get("reason") or p.get("error") or ""
        lines.append(f"| {n} | {p['status']} | {_f(p.get('seconds'), '{:.1f}')} | {_f(p.get('budget_s'), '{:.0f}')} | "
                     f"{str(note).splitlines()[0][:160] if note else ''} |")
    e = P.get("engine", {})
    if e.get("rows"):
        lines += ["", f"## (a) Distance engine: {e.get('device_label', '')}, K={e.get('K')} x N={e.get('N')}, d={e.get('d')}",
                  "", "| data | setting | solver on GPU | CPU us/pair | GPU us/pair | GPU pairs/s | speed-up | "
                  "max abs diff | flags differ | not converged CPU / GPU |", "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
        for x in e["rows"]:
            lines.append(f"| {x['data']} | {x['setting']} | {x['solver_on_gpu']} | {_f(x['cpu_us'])} | {_f(x['gpu_us'])} | "
                         f"{_f(x['gpu_pairs_per_s'], '{:,.0f}')} | {_f(x['speedup'])} | {x['max_abs_diff']} | "
                         f"{x['flags_differ']} | {x['not_converged']} |")
        for kind, s in e.get("paper_sweep", {}).items():
            lines.append(f"\nProjected paper sweep, {kind} data, the paper's {s['settings']} settings: CPU engine "
                         f"{_f(s['cpu_h'])} h, GPU engine **{_f(s['gpu_min'])} min** (goal: < 10 min on one H200).")
        if e.get("agreement"):
            a = e["agreement"]
            lines.append(f"Agreement GPU vs CPU engine: max |diff| = {a['max_abs_diff']}, convergence flags that differ: "
                         f"{a['flags_differ']}.")
    pr = P.get("prepare", {})
    if pr.get("policy"):
        pol = pr["policy"]
        lines += ["", f"## (b) Plain TRL vs Unsloth: random-init Qwen3-VL, {pol['dims_name']} "
                      f"({_count(pol['params'])} parameters, {pol['dtype']})", "",
                  f"SFT {r['settings']['steps_sft']} steps, GRPO {r['settings']['steps_grpo']} steps (reward chamfer); "
                  "mean step time leaves out the first step.", "",
                  "| path | stage | mean step s | peak GPU MiB | first step s | note |", "|---|---|---:|---:|---:|---|"]
        for path in ("plain", "unsloth"):
            p = P.get(path, {})
            for stage in ("sft", "grpo"):
                s = p.get(stage)
                if s:
                    note = (f"loss {_f(s.get('first_loss'))} -> {_f(s.get('final_loss'))}" if stage == "sft"
                            else f"reward share {_f(s.get('reward_share'), '{:.0%}')}")
                    lines.append(f"| {path} | {stage} | {_f(s.get('mean_step_s'))} | {_f(s.get('peak_mem_mib'), '{:,.0f}')} | "
                                 f"{_f(s.get('first_step_s'))} | {note} |")
                elif p:
                    lines.append(f"| {path} | {stage} | — | — | — | {p['status']}: {str(p.get('reason') or p.get('error') or '')[:100]} |")
        pl, us = P.get("plain", {}), P.get("unsloth", {})
        for stage in ("sft", "grpo"):
            a, b = pl.get(stage, {}), us.get(stage, {})
            if a.get("mean_step_s") and b.get("mean_step_s"):
                lines.append(f"\n{stage.upper()}: Unsloth {a['mean_step_s'] / b['mean_step_s']:.2f}x the plain path's speed"
                             + (f", {b['peak_mem_mib'] / a['peak_mem_mib']:.2f}x its peak memory"
                                if a.get("peak_mem_mib") and b.get("peak_mem_mib") else "") + ".")
    b = P.get("bertscore", {})
    if b.get("pairs"):
        lines += ["", f"## (c) BERTScore: {b['backbone']}", "",
                  f"{b['pairs']} pairs on {b['device']}: {_f(b.get('pairs_per_s'), '{:,.0f}')} pairs/s "
                  f"(second call; the first, with model load: {_f(b.get('first_call_s'))} s); "
                  f"max |{b['device']} - cpu| F1 on {b.get('agreement_pairs')} pairs: {_f(b.get('max_abs_diff_vs_cpu'))}; "
                  f"mean F1 {_f(b.get('mean_f1'))} (random weights: only the cost means anything)."]
    v = P.get("vllm", {})
    if v.get("tokens_per_s"):
        lines += ["", "## vLLM generation", "",
                  f"{v['prompts']} prompts x {v['n']} samples: {_f(v['tokens_per_s'], '{:,.0f}')} generated tokens/s "
                  f"(load {_f(v.get('load_s'))} s, generate {_f(v.get('generate_s'))} s)."]
    g = P.get("radgraph", {})
    if g.get("status") == "ok":
        lines += ["", "## (d) RadGraph through sdrlib.metrics.radgraph_compat", "",
                  f"patch: {g.get('apply', '—')}; end-to-end check: {g.get('check', '—')}"]
    return "\n".join(lines) + "\n"


# =========================================================================== the parts (child processes)


def _emit(work: Path, name: str, res: dict) -> None:
    """Write the part's result so far (a timeout keeps what was written)."""
    _write_json(work / name / "result.json", res)


def _versions() -> dict:
    from importlib import metadata

    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "absent"
    return out


def part_env(args, work: Path, res: dict) -> int:
    import platform

    import torch

    res["python"] = platform.python_version()
    res["versions"] = _versions()
    res["cuda"] = bool(torch.cuda.is_available())
    res["torch_cuda"] = torch.version.cuda
    if res["cuda"]:
        p = torch.cuda.get_device_properties(0)
        res["device"] = f"{p.name}, {p.total_memory / 2**30:.0f} GiB, {p.multi_processor_count} SMs"
    else:
        res["device"] = "CPU only" + (" (dry run)" if args.dry_run else "")
    try:
        from sdrlib.distances import _cuda_kernels

        ok, why = _cuda_kernels.available()
        res["numba_cuda"] = "ok" if ok else f"unavailable: {why}"
    except Exception as e:  # noqa: BLE001
        res["numba_cuda"] = f"unavailable: {type(e).__name__}: {e}"
    res["cpus"] = os.cpu_count()
    return 0


_ROW = re.compile(r"^\| (\S+) \| ([^|]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)x \| ([\d.]+) \| ([\d.]+) \| ([^|]+) \| (\d+) \| ([^|]+) \|$")


def parse_device_table(text: str) -> dict:
    """Rows and closing lines of ``bench_distances.device_table``'s Markdown."""
    rows, label, sweep, agreement = [], None, {}, {}
    for line in text.splitlines():
        m = re.match(r"^## (.+?): (\d+) x (\d+) pairs", line)
        if m:
            label = m.group(1)
            continue
        m = _ROW.match(line.strip())
        if m and label:
            gpu_us = float(m.group(4))
            rows.append({"data": label, "setting": m.group(1), "solver_on_gpu": m.group(2).strip(),
                         "cpu_us": float(m.group(3)), "gpu_us": gpu_us,
                         "gpu_pairs_per_s": 1e6 / gpu_us if gpu_us > 0 else None, "speedup": float(m.group(5)),
                         "sweep_cpu_h": float(m.group(6)), "sweep_gpu_min": float(m.group(7)),
                         "max_abs_diff": m.group(8).strip(), "flags_differ": int(m.group(9)),
                         "not_converged": m.group(10).strip()})
            continue
        m = re.match(r"^# (\S+): the paper's (\d+) settings, .*CPU engine ([\d.]+) h, GPU engine ([\d.]+) min", line)
        if m:
            sweep[m.group(1)] = {"settings": int(m.group(2)), "cpu_h": float(m.group(3)), "gpu_min": float(m.group(4))}
            continue
        m = re.match(r"^# agreement GPU vs CPU engine: max \|diff\| = (\S+), convergence flags that differ: (\d+)", line)
        if m:
            agreement = {"max_abs_diff": m.group(1), "flags_differ": int(m.group(2))}
    return {"rows": rows, "paper_sweep": sweep, "agreement": agreement}


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, s):
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self):
        for st in self.streams:
            st.flush()


def part_engine(args, work: Path, res: dict) -> int:
    import warnings

    sys.path.insert(0, str(BENCH))
    import bench_distances
    from sdrlib.distances import ConvergenceWarning

    warnings.simplefilter("ignore", ConvergenceWarning)
    buf = io.StringIO()
    if args.dry_run:  # the same table, with the CPU engine in the GPU column: no CUDA call
        K, N, d, kinds = 2, 20, 32, "random,structured"
        ns = argparse.Namespace(device="cpu", K=K, d=d, seed=0, kinds=kinds)
        names = list(bench_distances.REGISTRY) + [n for n, s in bench_distances.EXTENSIONS.items()
                                                  if not s.needs_presence]
        loads = [(k, k, None, 1.0) for k in kinds.split(",")]
        res.update(K=K, N=N, d=d, device_label="dry run: CPU engine in both columns")
        with contextlib.redirect_stdout(_Tee(sys.stdout, buf)):
            rc = bench_distances.device_table(loads, names, ns, N)
    else:
        from sdrlib.distances import _cuda_kernels

        ok, why = _cuda_kernels.available()
        if not ok:
            res["error"] = f"numba's CUDA target cannot run kernels here ({why}); the engine's GPU solvers need it"
            return 1
        res.update(K=args.engine_K, N=args.engine_N, d=768, device_label="cuda vs the CPU engine")
        with contextlib.redirect_stdout(_Tee(sys.stdout, buf)):
            rc = bench_distances.main(["--device", "cuda", "--K", str(args.engine_K), "--N", str(args.engine_N),
                                       "--neg-pairs", "0"])
    res.update(parse_device_table(buf.getvalue()))
    if rc != 0:
        res["error"] = f"bench_distances exited {rc}"
    elif not res["rows"]:
        res["error"] = "bench_distances printed no table rows"
        return 1
    return rc


# --------------------------------------------------------------------------- prepare


def _profile(work: Path, args, policy: str = "tiny"):
    from sdrlib.config import load_profile

    os.environ["SDR_ROOT"] = str(work / "root")
    if args.dry_run:
        sizes = {"data.n_train": 24, "data.n_val": 4, "data.n_test": 4, "sft.batch_size": 4, "grpo.batch_size": 4,
                 "grpo.num_generations": 2, "grpo.max_completion_length": 16}
    else:
        sizes = {"data.n_train": 256, "data.n_val": 16, "data.n_test": 32, "sft.batch_size": 8, "grpo.batch_size": 16,
                 "grpo.num_generations": 8, "grpo.max_completion_length": 96}
    overrides = {**sizes, "data.image_size": 96, "sft.policy": policy, "sft.max_steps": args.steps_sft,
                 "sft.learning_rate": 1.0e-3, "sft.save_steps": 10_000, "sft.lora_r": 16, "sft.lora_alpha": 16,
                 "sft.gradient_checkpointing": False, "grpo.max_steps": args.steps_grpo, "grpo.save_steps": 10_000,
                 "grpo.rewards": ["chamfer"], "grpo.gradient_checkpointing": False,
                 "grpo.workers": 1}  # one run at a time on the GPU (the smoke profile trains two side by side on CPU)
    return load_profile("smoke", overrides)


def qwen3_vl_config(dims: dict, tokenizer):
    """A ``Qwen3VLConfig`` of ``dims`` whose special-token ids are the local tokenizer's."""
    from transformers import Qwen3VLConfig

    from sdrlib.models import SPECIAL_TOKENS

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    if dims["vocab_size"] < len(tokenizer):
        raise ValueError(f"vocab_size {dims['vocab_size']} < tokenizer size {len(tokenizer)}")
    return Qwen3VLConfig(
        text_config=dict(
            vocab_size=dims["vocab_size"], hidden_size=dims["hidden_size"], intermediate_size=dims["intermediate_size"],
            num_hidden_layers=dims["layers"], num_attention_heads=dims["heads"], num_key_value_heads=dims["kv_heads"],
            head_dim=dims["head_dim"], max_position_embeddings=dims["max_positions"],
            rope_parameters={"rope_type": "default", "rope_theta": dims["rope_theta"],
                             "mrope_section": list(dims["mrope_section"]), "mrope_interleaved": True},
            pad_token_id=ids["<|endoftext|>"], eos_token_id=tokenizer.eos_token_id,
            tie_word_embeddings=dims["tie_word_embeddings"],
        ),
        vision_config=dict(
            depth=dims["vision_depth"], hidden_size=dims["vision_hidden_size"],
            intermediate_size=dims["vision_intermediate_size"], num_heads=dims["vision_heads"],
            patch_size=dims["patch_size"], spatial_merge_size=dims["merge_size"], temporal_patch_size=2,
            out_hidden_size=dims["hidden_size"], num_position_embeddings=dims["num_position_embeddings"],
            deepstack_visual_indexes=list(dims["deepstack"]), hidden_act="gelu_pytorch_tanh",
        ),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=dims["tie_word_embeddings"],
    )


def wordpiece_tokenizer(texts, vocab_size: int = 2000):
    """A BERT WordPiece tokenizer trained on ``texts`` (no download), as a ``BertTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=special,
                                                             show_progress=False))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]", model_max_length=512)


def save_random_bert(path: Path, dims: dict, texts, seed: int = 0) -> int:
    """A randomly initialised ``BertModel`` of ``dims`` with a local WordPiece vocabulary; its parameter count."""
    import torch
    from transformers import BertConfig, BertModel

    tok = wordpiece_tokenizer(texts)
    torch.manual_seed(seed)
    model = BertModel(BertConfig(vocab_size=len(tok), hidden_size=dims["hidden_size"], num_hidden_layers=dims["layers"],
                                 num_attention_heads=dims["heads"], intermediate_size=dims["intermediate_size"],
                                 max_position_embeddings=512))
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path, safe_serialization=True)
    tok.save_pretrained(path)
    return sum(p.numel() for p in model.parameters())


def part_prepare(args, work: Path, res: dict) -> int:
    import torch

    from sdrlib import models, training
    from sdrlib.data import load_split

    device = "cpu" if args.dry_run else "cuda"
    t0 = time.perf_counter()
    cfg = _profile(work, args)
    train = load_split(cfg, "train")
    texts, _ = training.report_texts(train)
    res["data"] = {"n_train": len(train), "seconds": round(time.perf_counter() - t0, 1)}
    _emit(work, "prepare", res)

    t0 = time.perf_counter()
    dims, dims_name = (TINY_VL, "tiny (dry run)") if args.dry_run else (QWEN3_VL_2B, "Qwen3-VL-2B-Instruct dimensions")
    tokenizer = models.train_tokenizer(texts, vocab_size=cfg.sft.vocab_size)
    processor = models.build_processor(tokenizer, cfg.data.image_size, dims["patch_size"], dims["merge_size"])
    config = qwen3_vl_config(dims, tokenizer)
    dtype = torch.float32 if args.dry_run else torch.bfloat16
    from transformers import GenerationConfig, Qwen3VLForConditionalGeneration

    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3VLForConditionalGeneration._from_config(config, dtype=dtype)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                                               bos_token_id=None)
    model.config.eos_token_id, model.config.pad_token_id = tokenizer.eos_token_id, tokenizer.pad_token_id
    n_params = sum(p.numel() for p in model.parameters())
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    models.save_policy(model, processor, work / "policy")
    res["policy"] = {"dims_name": dims_name, "dims": dims, "params": n_params,
                     "dims_source": "TINY_VL (dry run)" if args.dry_run else QWEN3_VL_2B_SOURCE, "dtype": str(dtype).replace("torch.", ""),
                     "build_s": round(t_build, 1), "save_s": round(time.perf_counter() - t0, 1),
                     "mib_on_disk": round(sum(f.stat().st_size for f in (work / "policy").rglob("*") if f.is_file())
                                          / 2**20, 1),
                     "tokenizer_size": len(tokenizer)}
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    _emit(work, "prepare", res)

    t0 = time.perf_counter()
    sentences = [s for t in texts for s in re.split(r"(?<=[.!?])\s+", t)]
    enc_dims = TINY_ENCODER if args.dry_run else MINILM
    res["encoder"] = {"dims": enc_dims, "params": save_random_bert(work / "encoder", enc_dims, sentences),
                      "seconds": round(time.perf_counter() - t0, 1)}
    return 0


# --------------------------------------------------------------------------- plain TRL vs Unsloth


def _peak_reset(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _peak_mib(device: str) -> float | None:
    import torch

    if device != "cuda":
        return None
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() / 2**20


def _mean_after_first(times: list[float]) -> float | None:
    t = times[1:] if len(times) > 1 else times
    return sum(t) / len(t) if t else None


def _embedder(work: Path, device: str):
    from sdrlib.embedding import SentenceEmbedder

    return SentenceEmbedder(str(work / "encoder"), cache_dir=None, device=device)


def part_plain(args, work: Path, res: dict) -> int:
    """TRL + PEFT without Unsloth on the prepared folder, the package's LoRA and batch settings."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3VLForConditionalGeneration
    from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

    from sdrlib import models, training
    from sdrlib.data import load_split
    from sdrlib.rewards import RewardScorer, trl_reward_functions

    device = "cpu" if args.dry_run else "cuda"
    cfg = _profile(work, args)
    train = load_split(cfg, "train")
    policy = work / "policy"
    dtype = torch.float32 if args.dry_run else torch.bfloat16
    t0 = time.perf_counter()
    processor = models.ImageOnlyQwen3VLProcessor.from_pretrained(policy, local_files_only=True)
    model = Qwen3VLForConditionalGeneration.from_pretrained(policy, dtype=dtype, local_files_only=True).to(device)
    lora = LoraConfig(r=cfg.sft.lora_r, lora_alpha=cfg.sft.lora_alpha, target_modules=LORA_TARGETS, lora_dropout=0.0,
                      bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(model, lora)
    res["load_s"] = round(time.perf_counter() - t0, 1)
    res["trainable_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    dev = training.device_kwargs()
    common = {"logging_steps": 1, "save_strategy": "no", "report_to": "none", "disable_tqdm": True,
              "dataloader_num_workers": 0, **dev}
    with tempfile.TemporaryDirectory() as tmp:
        timer = training.StepTimer()
        _peak_reset(device)
        sargs = SFTConfig(output_dir=tmp, max_steps=cfg.sft.max_steps, per_device_train_batch_size=cfg.sft.batch_size,
                          learning_rate=cfg.sft.learning_rate, max_length=None, completion_only_loss=True,
                          remove_unused_columns=False, gradient_checkpointing=cfg.sft.gradient_checkpointing, **common)
        tr = SFTTrainer(model=model, args=sargs, train_dataset=training.sft_dataset(train), processing_class=processor,
                        callbacks=[timer])
        tr.train()
        losses = [h["loss"] for h in tr.state.log_history if "loss" in h]
        res["sft"] = {"steps": len(timer.times), "mean_step_s": _mean_after_first(timer.times),
                      "first_step_s": timer.times[0] if timer.times else None, "peak_mem_mib": _peak_mib(device),
                      "first_loss": float(losses[0]) if losses else None,
                      "final_loss": float(losses[-1]) if losses else None}
        _emit(work, "plain", res)
        g = cfg.grpo
        scorer = RewardScorer("chamfer", _embedder(work, device))
        funcs, weights = trl_reward_functions("chamfer", scorer=scorer)
        timer = training.StepTimer()
        _peak_reset(device)
        gargs = GRPOConfig(output_dir=tmp, max_steps=g.max_steps, per_device_train_batch_size=g.batch_size,
                           num_generations=g.num_generations, max_completion_length=g.max_completion_length,
                           temperature=g.temperature, learning_rate=g.learning_rate, beta=g.beta, epsilon=g.epsilon,
                           loss_type=g.loss_type, scale_rewards=g.scale_rewards, reward_weights=weights,
                           lr_scheduler_type="constant", gradient_checkpointing=g.gradient_checkpointing,
                           use_vllm=False, **common)
        gt = GRPOTrainer(model=model, reward_funcs=funcs, args=gargs, train_dataset=training.grpo_dataset(train),
                         processing_class=processor, callbacks=[timer])
        gt.train()
        res["grpo"] = {"steps": len(timer.times), "mean_step_s": _mean_after_first(timer.times),
                       "first_step_s": timer.times[0] if timer.times else None, "peak_mem_mib": _peak_mib(device),
                       "reward_share": scorer.seconds / max(sum(timer.times), 1e-9)}
    return 0


def part_unsloth(args, work: Path, res: dict) -> int:
    """The package's own GPU path: training.sft / training.grpo with the prepared folder as an Unsloth policy."""
    if args.dry_run:
        res["reason"] = ("dry run: Unsloth refuses vision models without a GPU (FastVisionModel needs CUDA), "
                         "so this part runs on the GPU machine only")
        return SKIP
    import unsloth  # noqa: F401  (Unsloth wants to be imported before transformers and trl)

    from sdrlib import training
    from sdrlib.data import load_split

    cfg = _profile(work, args, policy=str(work / "policy"))
    train = load_split(cfg, "train")
    emb = _embedder(work, "cuda")
    _peak_reset("cuda")
    s = training.sft(cfg, train, force=True, progress=False)
    curves = training.read_curves(s.path)
    st = [float(x) for x in curves["step_seconds"].dropna()] if "step_seconds" in curves else []
    loss = curves["loss"].dropna() if "loss" in curves else []
    res["sft"] = {"steps": len(st), "mean_step_s": _mean_after_first(st), "first_step_s": st[0] if st else None,
                  "peak_mem_mib": _peak_mib("cuda"), "wall_s": round(s.seconds, 1),
                  "first_loss": float(loss.iloc[0]) if len(loss) else None,
                  "final_loss": float(loss.iloc[-1]) if len(loss) else None}
    _emit(work, "unsloth", res)
    _peak_reset("cuda")
    g = training.grpo(cfg, "chamfer", s.final, train, embedder=emb, force=True, progress=False)
    gc = training.read_curves(g.path)
    gt = [float(x) for x in gc["step_seconds"].dropna()] if "step_seconds" in gc else []
    res["grpo"] = {"steps": len(gt), "mean_step_s": _mean_after_first(gt), "first_step_s": gt[0] if gt else None,
                   "peak_mem_mib": _peak_mib("cuda"), "wall_s": round(g.seconds, 1),
                   "reward_share": g.info.get("reward_share") if isinstance(g.info, dict) else None}
    return 0


# --------------------------------------------------------------------------- BERTScore


def part_bertscore(args, work: Path, res: dict) -> int:
    from sdrlib.data import load_split
    from sdrlib.metrics.backends import Backbone
    from sdrlib.metrics.nlg import bertscore_f1

    device = "cpu" if args.dry_run else "cuda"
    cfg = _profile(work, args)
    train = load_split(cfg, "train")
    refs_all = [f"{r.findings} {r.impression}".strip() for r in train if r.findings.strip()]
    n = 32 if args.dry_run else args.pairs
    refs = [refs_all[i % len(refs_all)] for i in range(n)]
    preds = [refs_all[(i * 7 + 3) % len(refs_all)] if i % 4 else refs[i] for i in range(n)]  # a quarter identical
    dims = TINY_BACKBONE if args.dry_run else ROBERTA_LARGE
    folder = work / "bertscore_backbone"
    t0 = time.perf_counter()
    params = save_random_bert(folder, dims, refs_all, seed=1)
    bb = Backbone("random-init roberta-large-shape" if not args.dry_run else "random-init tiny", str(folder),
                  dims["num_layers"])
    res.update(backbone=f"{bb.label}: random-init BERT, {dims['layers']} layers x {dims['hidden_size']} "
                        f"({_count(params)} parameters), layer {dims['num_layers']}",
               build_s=round(time.perf_counter() - t0, 1), pairs=n, device=device)
    t0 = time.perf_counter()
    f1 = bertscore_f1(preds, refs, bb, batch_size=64, device=device)
    res["first_call_s"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    f1 = bertscore_f1(preds, refs, bb, batch_size=64, device=device)
    dt = time.perf_counter() - t0
    res.update(second_call_s=round(dt, 3), pairs_per_s=n / dt if dt > 0 else None, mean_f1=float(f1.mean()))
    _emit(work, "bertscore", res)
    k = min(n, 64)
    f1_cpu = bertscore_f1(preds[:k], refs[:k], bb, batch_size=64, device="cpu")
    res.update(agreement_pairs=k, max_abs_diff_vs_cpu=float(abs(f1_cpu - f1[:k]).max()))
    return 0


# --------------------------------------------------------------------------- vLLM and RadGraph


def part_vllm(args, work: Path, res: dict) -> int:
    """The prepared policy through ``vllm.LLM`` when vLLM is importable (skipped otherwise, and in a dry run)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        res["reason"] = ("vLLM is not installed: no release installs beside the gpu pins, so configs/paper.yaml "
                         "has grpo.use_vllm: false (docs/install.md, Installing for a GPU)")
        return SKIP
    if args.dry_run:
        res["reason"] = "dry run: vLLM needs a GPU"
        return SKIP
    from vllm import LLM, SamplingParams

    from sdrlib.data import load_split

    cfg = _profile(work, args)
    train = load_split(cfg, "train")
    t0 = time.perf_counter()
    llm = LLM(model=str(work / "policy"), dtype="bfloat16", enforce_eager=True, gpu_memory_utilization=0.3,
              max_model_len=1024, seed=0)
    res["load_s"] = round(time.perf_counter() - t0, 1)
    _emit(work, "vllm", res)
    prompts = [f"Findings: {r.findings[:200]}" for r in list(train)[:2]]
    sp = SamplingParams(n=8, temperature=1.0, max_tokens=96, seed=0)
    t0 = time.perf_counter()
    outs = llm.generate(prompts, sp)
    dt = time.perf_counter() - t0
    tokens = sum(len(c.token_ids) for o in outs for c in o.outputs)
    res.update(prompts=len(prompts), n=8, generate_s=round(dt, 2), tokens=tokens,
               tokens_per_s=tokens / dt if dt > 0 else None)
    return 0


def part_radgraph(args, work: Path, res: dict) -> int:
    """RadGraph F1 through radgraph's real annotator on the device: ``sdrlib.metrics.radgraph_compat.install()``
    (issue 33 item 3), then ``F1RadGraph`` around the tiny random-weight model of ``tests/radgraph_tiny.py`` on a
    few reports (values meaningless: the weights are random; what is shown is that the pipeline runs there).
    radgraph not installed -> skipped (optional part)."""
    try:
        import radgraph  # noqa: F401
    except ImportError:
        res["reason"] = "radgraph is not installed (scripts/gpu_wheels.sh carries it)"
        return SKIP
    sys.path.insert(0, str(REPO / "tests"))
    from radgraph import F1RadGraph
    from radgraph_tiny import write_model

    from sdrlib.metrics import radgraph_compat

    res["install"] = radgraph_compat.install()
    cache = work / "radgraph_cache"
    write_model(cache)
    cuda = -1 if args.dry_run else 0
    t0 = time.perf_counter()
    f1 = F1RadGraph(reward_level="all", model_type="radgraph", model_cache_dir=str(cache), cuda=cuda)
    hyps = ["Small left pleural effusion.", "No pneumothorax. Heart size is normal."]
    refs = ["Left pleural effusion is small.", "Heart size normal. No pneumothorax."]
    mean, per, _, _ = f1(hyps=hyps, refs=refs)
    res.update(mean_reward=[round(float(x), 4) for x in mean], seconds=round(time.perf_counter() - t0, 2),
               device="cpu" if cuda < 0 else "cuda:0")
    return 0


PART_FUNCS = {"env": part_env, "engine": part_engine, "prepare": part_prepare, "plain": part_plain,
              "unsloth": part_unsloth, "vllm": part_vllm, "bertscore": part_bertscore, "radgraph": part_radgraph}


def child(args) -> int:
    work = Path(args.work)
    res: dict = {}
    if args.dry_run and args.part in ("prepare", "plain", "bertscore"):
        import torch  # tiny models run fastest on one thread of a busy CPU (sdrlib.models.set_cpu_threads)

        torch.set_num_threads(1)
    try:
        rc = PART_FUNCS[args.part](args, work, res)
    except Exception as e:  # noqa: BLE001 - reported in the JSON, the parent marks the part as an error
        traceback.print_exc()
        res["error"] = f"{type(e).__name__}: {str(e).strip()[:2000]}"
        rc = 1
    _emit(work, args.part, res)
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes, no CUDA call (Unsloth, vLLM skipped)")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "runs" / "gpu_check"),
                    help="folder for gpu_check.json and gpu_check.md (default $OUT, else runs/gpu_check)")
    ap.add_argument("--wheels", default=str(REPO / ".whl"), help="wheel folder from scripts/gpu_wheels.sh")
    ap.add_argument("--parts", default="", help=f"comma-separated subset of {','.join(PARTS)}")
    ap.add_argument("--engine", action="store_true", help="the distance engine alone (--parts env,engine)")
    ap.add_argument("--budget", action="append", default=[], metavar="PART=SECONDS",
                    help=f"override a part's time budget (GPU defaults: {BUDGETS})")
    ap.add_argument("--deadline", type=float, default=None,
                    help=f"seconds after the start past which no part runs (default {DEADLINE}; dry run {DRY_DEADLINE})")
    ap.add_argument("--steps-sft", type=int, default=None, help="SFT steps per path (default 8; dry run 3)")
    ap.add_argument("--steps-grpo", type=int, default=None, help="GRPO steps per path (default 4; dry run 2)")
    ap.add_argument("--engine-K", type=int, default=5, help="candidate sets per call in the engine check")
    ap.add_argument("--engine-N", type=int, default=1000, help="bank sets per call in the engine check")
    ap.add_argument("--pairs", type=int, default=2048, help="BERTScore pairs on the GPU")
    ap.add_argument("--part", default="", help=argparse.SUPPRESS)
    ap.add_argument("--work", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.steps_sft is None:
        args.steps_sft = 3 if args.dry_run else 8
    if args.steps_grpo is None:
        args.steps_grpo = 2 if args.dry_run else 4
    if args.deadline is None:
        args.deadline = DRY_DEADLINE if args.dry_run else DEADLINE
    if args.engine:
        args.parts = "env,engine"
    if args.part:
        return child(args)
    try:
        check_args(args)
    except BadArgument as e:
        print(e.message, file=sys.stderr)
        return 2
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
