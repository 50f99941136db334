"""Command line of :mod:`sdrlib.training` (``python -m sdrlib.training``), also the multi-GPU entry point::

    accelerate launch --config_file configs/accelerate/2gpu.yaml -m sdrlib.training \
        --profile paper --stage grpo --reward chamfer --seed 0
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from sdrlib.config import load_profile
from sdrlib.rewards import reward_names_help
from sdrlib.training.grpo import grpo
from sdrlib.training.runkeys import run_dir
from sdrlib.training.sft import sft

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sdrlib.training --profile paper --stage grpo --reward chamfer --seed 0``.

    The entry point for multi-GPU runs: ``accelerate launch --config_file
    configs/accelerate/2gpu.yaml -m sdrlib.training --profile paper --stage grpo --reward chamfer``
    (the paper's GRPO used 2 x H100). SFT must have run first for GRPO.
    """
    ap = argparse.ArgumentParser(prog="python -m sdrlib.training", description="SFT or GRPO for one profile")
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--stage", choices=("sft", "grpo"), required=True)
    ap.add_argument("--reward", default="chamfer", help=f"GRPO reward: {reward_names_help()}")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--force", action="store_true", help="retrain even if a finished run exists")
    args = ap.parse_args(argv)
    cfg = load_profile(args.profile)
    if args.stage == "sft":
        res = sft(cfg, seed=args.seed, force=args.force)
        print(json.dumps({"final": str(res.final), "seconds": res.seconds, "reused": res.reused}))
    else:
        base = run_dir(cfg, "sft", seed=cfg.seed) / "final"
        res = grpo(cfg, args.reward, base, seed=args.seed, force=args.force)
        print(json.dumps({"final": str(res.final), "seconds": res.seconds, "reward_share": res.reward_share,
                          "reused": res.reused}))
    return 0

