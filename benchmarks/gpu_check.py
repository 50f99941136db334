"""GPU check: the package's Unsloth path vs plain TRL + PEFT on the tiny Qwen3-VL.

Run on a machine with a CUDA GPU (never in tests; no GPU was available when this
was written, so it has not been run yet):

    .venv/bin/pip install unsloth              # the GPU extra; do NOT install it on CPU machines
    .venv/bin/python benchmarks/gpu_check.py --steps 10 --out runs/gpu_check.json

What it does, in a temporary output root (``SDR_ROOT``), on a few hundred synthetic
studies (``smoke``-sized profile with overrides):

1. builds the tiny Qwen3-VL (random init, local BPE tokenizer, image-only
   processor) and saves it to a folder, so it can be loaded like a paper model;
2. **unsloth**: ``sdrlib.training.sft`` and ``sdrlib.training.grpo`` (reward
   ``chamfer``) with ``sft.policy`` set to that folder, i.e. exactly the code
   path of the paper profile (``FastVisionModel`` + LoRA, Unsloth imported only
   there), with the GPU's bf16/fp16;
3. **plain**: the same folder, wrapped in PEFT LoRA with the same rank and target
   modules, trained by TRL's ``SFTTrainer`` / ``GRPOTrainer`` directly;
4. prints and writes a JSON with, per path and stage, mean step time (first step
   excluded: compilation / warm-up) and peak GPU memory
   (``torch.cuda.max_memory_allocated``), plus the final SFT loss of each path so
   a broken path (loss not falling) is visible.

``--model qwen3-vl-2b`` (or a local folder) runs the Unsloth path on a paper model
instead of the tiny one when its weights are present (same stages, fewer steps).
Exit code 2 with a message when no GPU or no Unsloth is present.

**Distance engine** (``--engine``, no Unsloth needed; replaces the training check):

    .venv/bin/python benchmarks/gpu_check.py --engine                 # K=5 x N=2000, d=768, 2 kinds of data
    .venv/bin/python benchmarks/gpu_check.py --engine --engine-N 5000 --engine-K 100

runs ``benchmarks/bench_distances.py --device cuda``: for every setting (the paper's 15 and our
``_raw`` ones) the CPU engine and the GPU engine on the same pairs (Sinkhorn / UOT / GW solved on the
GPU by :mod:`sdrlib.distances._cuda_kernels`; Chamfer / Hausdorff / Hungarian / OT / partial OT: the
cosine product on the GPU, solvers on the CPU, as before), microseconds per pair, the projected paper
sweep, and their agreement (max |GPU - CPU|, flags that differ, non-converged pairs on each side),
then the paper's 15 summed against the goal of 10 minutes. Needs numba's CUDA target (driver, NVVM,
libdevice) as well as torch's; exit code 2 with numba's reason otherwise. A few minutes on 16 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _fail(msg: str) -> None:
    print(f"gpu_check: {msg}", file=sys.stderr)
    sys.exit(2)


def _peak_reset():
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()


def _peak_mb() -> float:
    import torch

    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() / 2**20


def _mean_after_first(times: list[float]) -> float:
    t = times[1:] if len(times) > 1 else times
    return sum(t) / max(len(t), 1)


def _profile(root: Path, steps: int, policy: str):
    from sdrlib.config import load_profile

    overrides = {
        "data.n_train": 256, "data.n_val": 16, "data.n_test": 32, "data.image_size": 96,
        "sft.policy": policy, "sft.max_steps": steps, "sft.batch_size": 8, "sft.learning_rate": 1.0e-3,
        "sft.save_steps": 10_000, "sft.lora_r": 16, "sft.lora_alpha": 16,
        "grpo.max_steps": steps, "grpo.batch_size": 16, "grpo.num_generations": 8,
        "grpo.max_completion_length": 96, "grpo.save_steps": 10_000, "grpo.rewards": ["chamfer"],
    }
    os.environ["SDR_ROOT"] = str(root)
    return load_profile("smoke", overrides)


def unsloth_path(cfg, train, emb) -> dict:
    """The package's own GPU path: training.sft / training.grpo with an Unsloth policy."""
    from sdrlib import training

    out = {}
    _peak_reset()
    t0 = time.perf_counter()
    s = training.sft(cfg, train, force=True)
    curves = training.read_curves(s.path)
    out["sft"] = {"wall_s": time.perf_counter() - t0, "mean_step_s": float(curves["step_seconds"].iloc[1:].mean()),
                  "peak_mem_mb": _peak_mb(), "final_loss": float(curves["loss"].dropna().iloc[-1])}
    _peak_reset()
    g = training.grpo(cfg, "chamfer", s.final, train, embedder=emb, force=True)
    gc = training.read_curves(g.path)
    out["grpo"] = {"wall_s": g.seconds, "mean_step_s": float(gc["step_seconds"].iloc[1:].mean()),
                   "peak_mem_mb": _peak_mb(), "reward_share": g.reward_share}
    return out


def plain_path(cfg, train, policy_dir: Path, emb) -> dict:
    """TRL + PEFT without Unsloth on the same tiny folder, same LoRA and batch settings."""
    import torch
    from peft import LoraConfig, get_peft_model
    from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

    from sdrlib import models, training
    from sdrlib.rewards import RewardScorer, trl_reward_functions

    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    prec = {"bf16": dtype == torch.bfloat16, "fp16": dtype == torch.float16}
    lora = LoraConfig(r=cfg.sft.lora_r, lora_alpha=cfg.sft.lora_alpha, target_modules=LORA_TARGETS,
                      lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        model, proc = models.load_tiny_policy(policy_dir, device="cuda")
        model = get_peft_model(model, lora)
        timer = training.StepTimer()
        _peak_reset()
        args = SFTConfig(output_dir=tmp, max_steps=cfg.sft.max_steps, per_device_train_batch_size=cfg.sft.batch_size,
                         learning_rate=cfg.sft.learning_rate, logging_steps=1, save_strategy="no", report_to="none",
                         max_length=None, completion_only_loss=True, remove_unused_columns=False, **prec)
        tr = SFTTrainer(model=model, args=args, train_dataset=training.sft_dataset(train), processing_class=proc,
                        callbacks=[timer])
        tr.train()
        losses = [h["loss"] for h in tr.state.log_history if "loss" in h]
        out["sft"] = {"mean_step_s": _mean_after_first(timer.times), "peak_mem_mb": _peak_mb(),
                      "final_loss": float(losses[-1]) if losses else float("nan")}
        g = cfg.grpo
        scorer = RewardScorer("chamfer", emb)
        funcs, weights = trl_reward_functions("chamfer", scorer=scorer)
        timer = training.StepTimer()
        _peak_reset()
        gargs = GRPOConfig(output_dir=tmp, max_steps=g.max_steps, per_device_train_batch_size=g.batch_size,
                           num_generations=g.num_generations, max_completion_length=g.max_completion_length,
                           learning_rate=g.learning_rate, beta=g.beta, loss_type=g.loss_type,
                           scale_rewards=g.scale_rewards, reward_weights=weights, logging_steps=1,
                           save_strategy="no", report_to="none", **prec)
        gt = GRPOTrainer(model=model, reward_funcs=funcs, args=gargs, train_dataset=training.grpo_dataset(train),
                         processing_class=proc, callbacks=[timer])
        gt.train()
        out["grpo"] = {"mean_step_s": _mean_after_first(timer.times), "peak_mem_mb": _peak_mb(),
                       "reward_share": scorer.seconds / max(sum(timer.times), 1e-9)}
    return out


def engine_check(K: int, N: int) -> int:
    """The distance engine's GPU rows (``bench_distances.py --device cuda``); 2 when numba cannot use the GPU."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from sdrlib.distances import _cuda_kernels

    ok, why = _cuda_kernels.available()
    if not ok:
        _fail(f"numba's CUDA target cannot run kernels here ({why}); the engine's GPU solvers need it")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_distances

    return bench_distances.main(["--device", "cuda", "--K", str(K), "--N", str(N), "--neg-pairs", "0"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10, help="SFT and GRPO steps per path")
    ap.add_argument("--model", default="", help="paper model key or folder (default: the tiny Qwen3-VL)")
    ap.add_argument("--out", default="", help="write the JSON report here as well")
    ap.add_argument("--engine", action="store_true", help="check the distance engine on the GPU instead of training")
    ap.add_argument("--engine-N", type=int, default=2000, help="bank sets per call in the engine check")
    ap.add_argument("--engine-K", type=int, default=5, help="candidate sets per call in the engine check")
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        _fail("no CUDA GPU visible; this check only makes sense on a GPU machine")
    if args.engine:
        return engine_check(args.engine_K, args.engine_N)
    try:
        import unsloth  # noqa: F401  (Unsloth wants to be imported before transformers)
    except ImportError:
        _fail("Unsloth is not installed: pip install unsloth (GPU machines only)")

    from sdrlib import models, training
    from sdrlib.data import load_split
    from sdrlib.embedding import SentenceEmbedder

    report: dict = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "steps": args.steps}
    with tempfile.TemporaryDirectory() as root:
        root = Path(root)
        cfg = _profile(root, args.steps, "tiny")
        train = load_split(cfg, "train")
        emb = SentenceEmbedder("all-MiniLM-L6-v2", device="cuda")
        if args.model:
            policy = models.check_gpu_model(args.model)
        else:  # save a fresh tiny policy so Unsloth loads it from a folder, like a paper model
            texts, _ = training.report_texts(train)
            model, proc = models.build_tiny_policy(texts, training.tiny_spec(cfg), vocab_size=cfg.sft.vocab_size)
            policy = str(models.save_policy(model, proc, root / "tiny_policy"))
        cfg = _profile(root, args.steps, policy)
        report["policy"] = args.model or "tiny-Qwen3-VL"
        report["unsloth"] = unsloth_path(cfg, train, emb)
        if not args.model:
            report["plain_trl_peft"] = plain_path(cfg, train, Path(policy), emb)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        from sdrlib.io import atomic_write_text

        atomic_write_text(Path(args.out), text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
