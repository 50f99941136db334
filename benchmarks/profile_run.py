"""Where a run's seconds go: per notebook, per cell, and per GRPO configuration and stage, from a finished run.

Run (repository root), after ``./run_all.sh`` (or on any output root, e.g. a fresh clone's):

    .venv/bin/python benchmarks/profile_run.py                      # this checkout's run of the cpu profile
    .venv/bin/python benchmarks/profile_run.py --root /tmp/fresh --profile cpu
    .venv/bin/python benchmarks/profile_run.py --root NEW --before OLD   # two runs side by side, with ratios

Reads only what a run writes (nothing is timed here): ``results/run_summary.csv`` (seconds per notebook),
the executed notebooks' papermill cell durations (the slowest cells per notebook), each GRPO run's
``run.json`` (``seconds``; ``stage_seconds``: generation, rewards, scoring, loss forward, backward +
optimizer, from TRL's own profiling points, :func:`sdrlib.training.runlog.trl_stage_times`), each policy's
``test_generations*_s<seed>.json`` (``seconds`` of its test generation) and the SFT run's ``run.json``.
Runs written before a field existed show ``n/a`` there. A reused GRPO run (finished in an earlier run of the
same root) still shows the seconds it took when it trained. Wall-clock on whatever else the machine did:
compare runs of one box, quiet, side by side as ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # sdrlib from this checkout when run as a script
from sdrlib.io import OneLineParser, positive_int  # noqa: E402

STAGES = ("generation", "rewards", "scoring", "loss_forward", "backward_optimizer")


class RunError(Exception):
    """A root that holds no readable run (printed as one line, exit 2)."""


def read_summary(root: Path) -> pd.DataFrame | None:
    """``results/run_summary.csv`` of ``root`` (``None`` when the run has none); :class:`RunError` naming the file
    when it is not a run summary (not UTF-8 CSV, or without its ``notebook``, ``status``, ``seconds`` columns)."""
    path = root / "results" / "run_summary.csv"
    if not path.is_file():
        return None
    try:
        df = pd.read_csv(path)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise RunError(f"{path}: not a run summary ({type(e).__name__}); run_all.sh writes it") from None
    missing = [c for c in ("notebook", "status", "seconds") if c not in df.columns]
    if missing:
        raise RunError(f"{path}: not a run summary (no column {', '.join(missing)}); run_all.sh writes it")
    return df


def check_root(root: Path, profile: str, flag: str = "--root") -> None:
    """:class:`RunError` unless ``root`` is a folder holding a run of ``profile`` (``results/run_summary.csv`` or
    ``runs/<profile>/``)."""
    if not root.is_dir():
        raise RunError(f"{flag} {root}: " + ("not a folder" if root.exists() else "no such folder"))
    if not (root / "results" / "run_summary.csv").is_file() and not (root / "runs" / profile).is_dir():
        raise RunError(f"{flag} {root}: no run of profile {profile!r} there (neither results/run_summary.csv nor "
                       f"runs/{profile}/); give the output root of a run_all.sh run and its --profile")


def notebook_seconds(root: Path) -> pd.DataFrame:
    """``notebook, status, seconds`` of ``results/run_summary.csv`` (empty when the run has none)."""
    df = read_summary(root)
    if df is None:
        return pd.DataFrame(columns=["notebook", "status", "seconds"])
    return df[["notebook", "status", "seconds"]]


def slowest_cells(root: Path, profile: str, n: int = 3) -> pd.DataFrame:
    """The ``n`` slowest code cells of every executed notebook (papermill's per-cell durations)."""
    rows = []
    for nb_path in sorted((root / "runs" / profile / "notebooks").glob("*.ipynb")):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        cells = [(c.get("metadata", {}).get("papermill", {}).get("duration") or 0.0,
                  " ".join("".join(c.get("source", "")).split())[:70]) for c in nb.get("cells", [])
                 if c.get("cell_type") == "code"]
        for seconds, src in sorted(cells, reverse=True)[:n]:
            rows.append({"notebook": nb_path.stem, "seconds": round(seconds, 1), "cell": src})
    return pd.DataFrame(rows, columns=["notebook", "seconds", "cell"])


def _gen_seconds(run_dir: Path) -> float | None:
    total, seen = 0.0, False
    for f in run_dir.glob("test_generations*_s*.json"):
        s = json.loads(f.read_text(encoding="utf-8")).get("seconds")
        if s is not None:
            total, seen = total + float(s), True
    return total if seen else None


def grpo_stages(root: Path, profile: str) -> pd.DataFrame:
    """One row per GRPO configuration (seeds summed): runs, steps, seconds, seconds per step, the five stages
    (seconds; ``NaN`` for runs written before ``stage_seconds``) and the test generations' seconds."""
    acc: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    missing_stage: dict[str, bool] = defaultdict(bool)
    missing_gen: dict[str, bool] = defaultdict(bool)
    for rj in sorted((root / "runs" / profile / "grpo").glob("*/seed*/run.json")):
        info = json.loads(rj.read_text(encoding="utf-8"))
        a = acc[info.get("reward", rj.parent.parent.name)]
        key = info.get("reward", rj.parent.parent.name)
        a["runs"] += 1
        a["steps"] += info.get("steps", 0)
        a["seconds"] += info.get("seconds", 0.0)
        a["reward_seconds"] += info.get("reward_seconds", 0.0)
        st = info.get("stage_seconds")
        if st:
            for k in STAGES:
                a[k] += float(st.get(k, 0.0))
        else:
            missing_stage[key] = True
        g = _gen_seconds(rj.parent)
        if g is None:
            missing_gen[key] = True
        else:
            a["eval_generation"] += g
    rows = []
    for reward, a in acc.items():
        row = {"config": reward, "runs": int(a["runs"]), "steps": int(a["steps"]), "seconds": round(a["seconds"], 1),
               "s/step": round(a["seconds"] / max(a["steps"], 1), 2),
               "rewards (run.json)": round(a["reward_seconds"], 1)}
        for k in STAGES:
            row[k] = float("nan") if missing_stage[reward] else round(a[k], 1)
        row["eval_generation"] = float("nan") if missing_gen[reward] else round(a["eval_generation"], 1)
        rows.append(row)
    df = pd.DataFrame(rows)
    if len(df):
        total = {c: (df[c].sum(min_count=len(df)) if df[c].dtype.kind in "if" else "") for c in df.columns}
        total.update(config="all", **{"s/step": round(df["seconds"].sum() / max(df["steps"].sum(), 1), 2)})
        df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
    return df


def sft_row(root: Path, profile: str) -> dict:
    """SFT: seconds, steps, seconds per step and the SFT policy's test generations (all seeds, shuffled too)."""
    out = {}
    for rj in sorted((root / "runs" / profile / "sft").glob("seed*/run.json")):
        info = json.loads(rj.read_text(encoding="utf-8"))
        out = {"seconds": round(info.get("seconds", 0.0), 1), "steps": info.get("steps"),
               "s/step": round(info.get("mean_step_seconds", 0.0), 3), "eval_generation": _gen_seconds(rj.parent)}
    return out


# --------------------------------------------------------------------------- arithmetic floors

#: fp32 matrix products of the shapes each stage runs (m x k @ k x n): the tiny policy's MLP over a batch of tokens,
#: the encoder's feed-forward over one unpadded pass of report sentences, and a large square one (the core's peak)
RATE_SHAPES = {"policy": (2048, 128, 384), "encoder": (32, 768, 3072), "large": (1024, 1024, 1024)}
#: the encoders' weights without their embedding tables (the part whose cost grows with tokens: 2 FLOPs a weight a
#: token): 12 layers of 4 x 768^2 + 2 x 768 x 3072 (all-mpnet-base-v2), 6 of 4 x 384^2 + 2 x 384 x 1536 (MiniLM-L6)
ENCODER_BODY_PARAMS = {"mpnet": 84_934_656, "minilm": 10_616_832}


def _encoder_body(encoder_id: str | None) -> int:
    return ENCODER_BODY_PARAMS["minilm" if encoder_id and "minilm" in encoder_id.lower() else "mpnet"]


def core_rate(threads: int = 1, reps: int = 5) -> dict[str, float]:
    """GFLOP/s of one fp32 matrix product per shape of :data:`RATE_SHAPES` on ``threads`` torch threads (best of
    ``reps``): what a stage's arithmetic can run at on this CPU."""
    import time

    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    out = {}
    try:
        for name, (m, k, n) in RATE_SHAPES.items():
            a, b = torch.randn(m, k), torch.randn(k, n)
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                for _ in range(max(1, int(2e9 // (2 * m * k * n)))):
                    a @ b
                best = min(best, (time.perf_counter() - t0) / max(1, int(2e9 // (2 * m * k * n))))
            out[name] = 2 * m * k * n / best / 1e9
    finally:
        torch.set_num_threads(before)
    return out


def _last(curves: Path, column: str) -> float:
    if not curves.is_file():
        return float("nan")
    c = pd.read_csv(curves)
    return float(c[column].dropna().iloc[-1]) if column in c and c[column].notna().any() else float("nan")


def _generated_tokens(run_dir: Path, tokenizer) -> tuple[float, float]:
    """Seconds and tokens of a policy folder's test generations (its ``test_generations*_s*.json``)."""
    seconds = tokens = 0.0
    for f in run_dir.glob("test_generations*_s*.json"):
        d = json.loads(f.read_text(encoding="utf-8"))
        seconds += float(d.get("seconds") or 0.0)
        gens = [g if isinstance(g, str) else json.dumps(g) for g in d.get("generations", [])]
        tokens += sum(len(x) for x in tokenizer(gens)["input_ids"]) if gens else 0
    return seconds, tokens


def floors(root: Path, profile: str, rate: dict[str, float]) -> pd.DataFrame:
    """Per stage of a finished run: the seconds it took (summed over processes and runs: worker-seconds), its
    arithmetic (FLOPs, estimated from the token counts the run recorded) and the floor, the FLOPs at this CPU's
    measured one-core rate for the stage's shapes (:func:`core_rate`), with their ratio. The estimates:

    - SFT: 6 x parameters x tokens (TRL's ``num_tokens``; an upper estimate: the frozen tower needs no weight
      gradients);
    - GRPO generation: 2 x parameters x (prompt + completion) tokens, plus the reference policy's forward for the KL
      (beta > 0, TRL's "scoring" stage): 2 x parameters x tokens;
    - the reward's encoder: 2 x the encoder body's parameters x encoded tokens (``encoder_stats``), distances and
      labelling the rest of the reward's seconds (no floor computed: small and not matrix products);
    - the policy update (loss forward + backward + optimizer): 6 x parameters x tokens;
    - evaluation (test generations of every policy): 2 x parameters x generated tokens (prefill left out);
    - scoring is not in a run's files per stage: the notebook cells' seconds show it (``--cells``).

    Sequential decoding runs one token's matrix products at a time (m = the batch, not the tokens): the floor at
    the large-batch rate is what batching across steps could reach, not what one step can."""
    rows = []
    sft_runs = sorted((root / "runs" / profile / "sft").glob("seed*/run.json"))
    params = tokenizer = None
    for rj in sft_runs:
        info = json.loads(rj.read_text(encoding="utf-8"))
        params = info.get("params") or params
        tokens = _last(rj.parent / "curves.csv", "num_tokens")
        world = info.get("world_size", 1)
        flops = 6 * (params or 0) * tokens
        rows.append({"stage": "SFT", "seconds": info.get("seconds", 0.0) * world, "processes": world,
                     "GFLOP": flops / 1e9, "shape": "policy"})
        if tokenizer is None and (rj.parent / "final").is_dir():
            try:
                from transformers import AutoTokenizer
                tokenizer = AutoTokenizer.from_pretrained(str(rj.parent / "final"))
            except Exception:  # a run folder without a tokenizer: no evaluation floor
                tokenizer = None
    gen = dict(seconds=0.0, GFLOP=0.0)
    upd = dict(seconds=0.0, GFLOP=0.0)
    enc = dict(seconds=0.0, GFLOP=0.0)
    rew = dict(seconds=0.0)
    for rj in sorted((root / "runs" / profile / "grpo").glob("*/seed*/run.json")):
        info = json.loads(rj.read_text(encoding="utf-8"))
        st = info.get("stage_seconds") or {}
        tokens = _last(rj.parent / "curves.csv", "num_tokens")
        p = params or 0
        gen["seconds"] += st.get("generation", 0.0) + st.get("scoring", 0.0)
        gen["GFLOP"] += (2 + (2 if info.get("beta", 0) else 0)) * p * tokens / 1e9
        upd["seconds"] += st.get("loss_forward", 0.0) + st.get("backward_optimizer", 0.0)
        upd["GFLOP"] += 6 * p * tokens / 1e9
        es = info.get("encoder_stats") or {}
        enc["seconds"] += es.get("encode_seconds", 0.0)
        enc["GFLOP"] += 2 * _encoder_body(info.get("encoder")) * es.get("encoded_tokens", 0) / 1e9
        rew["seconds"] += max(0.0, info.get("reward_seconds", 0.0) - es.get("encode_seconds", 0.0))
    rows += [{"stage": "GRPO generation (+ reference forward)", **gen, "processes": 1, "shape": "policy"},
             {"stage": "GRPO reward: encoder", **enc, "processes": 1, "shape": "encoder"},
             {"stage": "GRPO reward: distances, labels", **rew, "processes": 1, "GFLOP": float("nan"), "shape": ""},
             {"stage": "GRPO policy update", **upd, "processes": 1, "shape": "policy"}]
    if tokenizer is not None:
        ev = dict(seconds=0.0, tokens=0.0)
        for d in [*(root / "runs" / profile / "sft").glob("seed*"), *(root / "runs" / profile / "grpo").glob("*/seed*")]:
            s, t = _generated_tokens(d, tokenizer)
            ev["seconds"] += s
            ev["tokens"] += t
        rows.append({"stage": "evaluation generation", "seconds": ev["seconds"], "processes": 1,
                     "GFLOP": 2 * (params or 0) * ev["tokens"] / 1e9, "shape": "policy"})
    df = pd.DataFrame(rows)
    df["GFLOP/s one core"] = [rate.get(s, float("nan")) for s in df["shape"]]
    df["floor s"] = df["GFLOP"] / df["GFLOP/s one core"]
    df["seconds / floor"] = df["seconds"] / df["floor s"]
    return df.drop(columns="shape").round(2)


def idle_cores(root: Path) -> pd.DataFrame:
    """Per notebook: seconds, CPU seconds over seconds x cores, and the longest stretch with a core idle (the
    columns ``run_all.sh`` writes into ``run_summary.csv``; runs written before them show NaN)."""
    df = read_summary(root)
    if df is None:
        return pd.DataFrame()
    cores = os.cpu_count() or 1
    out = df[["notebook", "seconds"]].copy()
    out["cpu_seconds"] = df["cpu_seconds"] if "cpu_seconds" in df else float("nan")
    out["cores busy (mean)"] = (out["cpu_seconds"] / out["seconds"]).round(2)
    out["of cores"] = cores
    out["longest stretch with a core idle, s"] = df["idle_core_seconds"] if "idle_core_seconds" in df else float("nan")
    return out


def _md(df: pd.DataFrame) -> str:
    return df.to_markdown(index=False) if len(df) else "(none)"


def report(root: Path, profile: str, cells: int) -> dict[str, pd.DataFrame]:
    return {"notebooks": notebook_seconds(root), "cells": slowest_cells(root, profile, cells),
            "grpo": grpo_stages(root, profile)}


def main(argv=None) -> int:
    """The command line; exit 0 (printed) or 2 (bad arguments, or a root without a readable run: one line)."""
    try:
        return _main(argv)
    except RunError as e:
        print(f"profile_run: {e}", file=sys.stderr)
        return 2


def _main(argv=None) -> int:
    ap = OneLineParser(prog="profile_run", description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the run's output root")
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--before", type=Path, default=None, help="an earlier run's root, shown beside it with ratios")
    ap.add_argument("--cells", type=positive_int, default=3, help="slowest cells shown per notebook (>= 1)")
    ap.add_argument("--floors", action="store_true",
                    help="also each stage's arithmetic floor at this CPU's measured rate (measures for ~10 s)")
    a = ap.parse_args(argv)
    check_root(a.root, a.profile)
    if a.before is not None:
        check_root(a.before, a.profile, "--before")
    if a.floors and argv is None:  # measure the rate on the profile's kernel path, as the run's kernels ran
        from sdrlib.config import load_profile
        from sdrlib.numerics import pin_kernel_path

        env = dict(os.environ)
        if pin_kernel_path(load_profile(a.profile).kernel_path, env):
            os.execve(sys.executable, [sys.executable, *sys.argv], env)
    now = report(a.root, a.profile, a.cells)
    print(f"# Profile of {a.root} (profile {a.profile})\n")
    nb = now["notebooks"]
    if a.before is not None:
        old = report(a.before, a.profile, a.cells)
        nb = nb.merge(old["notebooks"][["notebook", "seconds"]], on="notebook", how="outer", suffixes=("", " before"))
        nb["before / now"] = (nb["seconds before"] / nb["seconds"]).round(2)
    total = pd.to_numeric(nb["seconds"], errors="coerce").sum()
    print("## Seconds per notebook\n")
    print(_md(nb))
    print(f"\ntotal: {total:.0f} s ({total / 60:.1f} min)"
          + (f"; before: {pd.to_numeric(nb['seconds before'], errors='coerce').sum():.0f} s" if a.before else ""))
    print("\n## Slowest cells\n")
    print(_md(now["cells"]))
    print("\n## SFT\n")
    print(sft_row(a.root, a.profile) or "(none)")
    print("\n## GRPO per configuration (seeds summed; stages from TRL's profiling points)\n")
    g = now["grpo"]
    if a.before is not None and len(g) and len(old["grpo"]):  # a before root may hold results only
        gb = old["grpo"][["config", "seconds", "eval_generation"]].rename(
            columns={"seconds": "seconds before", "eval_generation": "eval_generation before"})
        g = g.merge(gb, on="config", how="left")
        g["before / now"] = (g["seconds before"] / g["seconds"]).round(2)
    print(_md(g))
    ic = idle_cores(a.root)
    if len(ic):
        print("\n## Cores busy per notebook (run_all.sh's CPU seconds and /proc/stat samples)\n")
        print(_md(ic))
    if a.floors:
        rate = core_rate()
        print("\n## Arithmetic floors (one core, fp32; " + ", ".join(
            f"{k} {RATE_SHAPES[k]}: {v:.1f} GFLOP/s" for k, v in rate.items()) + ")\n")
        print(_md(floors(a.root, a.profile, rate)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
