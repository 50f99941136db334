"""Command line of :mod:`sdrlib.training` (``python -m sdrlib.training``), also the multi-process entry point::

    accelerate launch --config_file configs/accelerate/2gpu.yaml -m sdrlib.training \\
        --profile paper --stage grpo --reward chamfer --seed 0

``configs/accelerate/`` holds the launcher configs: ``1gpu.yaml``, ``2gpu.yaml``, ``4gpu.yaml``, ``8gpu.yaml``
(one machine, data parallel, bf16) and ``cpu_2proc.yaml`` (2 CPU processes, gloo: the check that runs
without a GPU). Each process trains on its own shard of every global batch (:mod:`sdrlib.training.runlog`),
so the profile's ``batch_size`` and ``grad_accum`` are per process and the global batch is ``batch_size x
grad_accum x`` processes; a profile that states ``effective_batch`` (the paper profile) gets ``grad_accum`` computed
from it and the process count (:func:`sdrlib.config.accumulation`), so its global batch is the paper's on any number
of GPUs. Only rank 0 writes the final policy, the curves and ``run.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

import yaml

from sdrlib.config import load_profile
from sdrlib.errors import SDRError
from sdrlib.numerics import pin_kernel_path
from sdrlib.rewards import parse_reward, reward_names_help
from sdrlib.training.grpo import grpo
from sdrlib.training.processes import is_main
from sdrlib.training.runkeys import policy_dir
from sdrlib.training.sft import sft

__all__ = ["main"]


def _override(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--set takes KEY=VALUE (e.g. grpo.max_steps=10), got {text!r}")
    return key.strip(), yaml.safe_load(value)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sdrlib.training --profile paper --stage grpo --reward chamfer --seed 0``.

    The entry point for multi-process runs: ``accelerate launch --config_file
    configs/accelerate/2gpu.yaml -m sdrlib.training --profile paper --stage grpo --reward chamfer``
    (the paper's GRPO used 2 x H100). SFT must have run first for GRPO. ``--set KEY=VALUE`` (repeatable)
    overrides a profile value, e.g. ``--set grpo.max_steps=10``; the value is read as YAML. From the command
    line (``argv`` None) the profile's ``kernel_path`` is pinned first (:mod:`sdrlib.numerics`): when a pin was
    missing, the process starts again with it set.
    """
    ap = argparse.ArgumentParser(prog="python -m sdrlib.training", description="SFT or GRPO for one profile")
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--stage", choices=("sft", "grpo"), required=True)
    ap.add_argument("--reward", default="chamfer", help=f"GRPO reward: {reward_names_help()}")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--set", dest="overrides", metavar="KEY=VALUE", type=_override, action="append", default=[],
                    help="override a profile value (repeatable; the value is YAML), e.g. --set sft.max_steps=10")
    ap.add_argument("--force", action="store_true", help="retrain even if a finished run exists")
    args = ap.parse_args(argv)
    try:  # every argument checked before any work: one line and exit 2, as run_all.sh does
        cfg = load_profile(args.profile, dict(args.overrides) or None)
        if args.stage == "grpo":
            parse_reward(args.reward)
    except SDRError as e:
        print(f"python -m sdrlib.training: {e}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    if argv is None and pin_kernel_path(cfg.kernel_path, env):
        # NumPy (and maybe torch) loaded with the CPU's own kernel path: start again with the profile's pinned
        # (sdrlib.numerics); a command line only, never a caller's process
        os.execve(sys.executable, [sys.executable, "-m", "sdrlib.training", *sys.argv[1:]], env)
    if args.stage == "sft":
        res = sft(cfg, seed=args.seed, force=args.force)
        out = {"final": str(res.final), "seconds": res.seconds, "reused": res.reused}
    else:
        base = policy_dir(cfg, "sft")
        res = grpo(cfg, args.reward, base, seed=args.seed, force=args.force)
        out = {"final": str(res.final), "seconds": res.seconds, "reward_share": res.reward_share,
               "reused": res.reused}
    if is_main():  # one line per run, not per process
        print(json.dumps(out))
    return 0
