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
import sys
from collections import defaultdict
from pathlib import Path

import pandas as pd

STAGES = ("generation", "rewards", "scoring", "loss_forward", "backward_optimizer")


def notebook_seconds(root: Path) -> pd.DataFrame:
    """``notebook, status, seconds`` of ``results/run_summary.csv`` (empty when the run has none)."""
    path = root / "results" / "run_summary.csv"
    if not path.is_file():
        return pd.DataFrame(columns=["notebook", "status", "seconds"])
    df = pd.read_csv(path)
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


def _md(df: pd.DataFrame) -> str:
    return df.to_markdown(index=False) if len(df) else "(none)"


def report(root: Path, profile: str, cells: int) -> dict[str, pd.DataFrame]:
    return {"notebooks": notebook_seconds(root), "cells": slowest_cells(root, profile, cells),
            "grpo": grpo_stages(root, profile)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the run's output root")
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--before", type=Path, default=None, help="an earlier run's root, shown beside it with ratios")
    ap.add_argument("--cells", type=int, default=3, help="slowest cells shown per notebook")
    a = ap.parse_args(argv)
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
    if a.before is not None and len(g):
        gb = old["grpo"][["config", "seconds", "eval_generation"]].rename(
            columns={"seconds": "seconds before", "eval_generation": "eval_generation before"})
        g = g.merge(gb, on="config", how="left")
        g["before / now"] = (g["seconds before"] / g["seconds"]).round(2)
    print(_md(g))
    return 0


if __name__ == "__main__":
    sys.exit(main())
