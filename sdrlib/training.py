"""SFT then GRPO through TRL (paper sec. 4, appendix C.2-C.3).

- :func:`sft` trains a policy with TRL's ``SFTTrainer`` on prompt-completion
  pairs (the image + instruction as prompt, the templated report as
  completion), so the loss covers the assistant report only.
- :func:`grpo` post-trains an SFT policy with TRL's ``GRPOTrainer`` for one
  reward configuration: ``"fmt"``, ``"exact"`` or any registered distance
  (``"chamfer"``, ``"hausdorff"``, ...); ``"sft"`` means no GRPO.
  Loss type, reward scaling and the KL coefficient come from the profile, so
  Dr. GRPO is ``loss_type: dr_grpo`` + ``scale_rewards: none``.

Every run lives in its own folder (:func:`run_dir`): Trainer checkpoints
(``checkpoint-*``), the final policy (``final/``), training curves
(``curves.csv``: loss, reward components, KL, completion length, per-step wall
time) and ``run.json`` (what produced it, timings, bad-completion counts).
A run whose ``final/`` exists is reused; an interrupted run resumes from its
last checkpoint.

CPU / default profile: the tiny Qwen3-VL of :mod:`sdrlib.models`, trained from
scratch. GPU / paper profile: Unsloth ``FastVisionModel`` + LoRA (imported only
there; a missing GPU or model path fails before any work).

Command line (and the multi-GPU entry point, e.g. the paper's 2 x H100 GRPO)::

    accelerate launch --config_file configs/accelerate/2gpu.yaml -m sdrlib.training \
        --profile paper --stage grpo --reward chamfer --seed 0

Left out: multi-node launch scripts, vLLM server mode (colocated vLLM only,
GPU only), evaluation (see :mod:`sdrlib.posttrain`, :mod:`sdrlib.generation`
and :mod:`sdrlib.metrics`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "SFTResult",
    "GRPOResult",
    "run_dir",
    "report_texts",
    "sft_dataset",
    "grpo_dataset",
    "sft",
    "grpo",
    "load_policy",
    "read_curves",
    "StepTimer",
    "preflight",
]


@dataclass
class SFTResult:
    """Where an SFT run lives and what it cost."""

    path: Path
    final: Path
    curves: Path
    seconds: float
    reused: bool = False
    info: dict = field(default_factory=dict)


@dataclass
class GRPOResult:
    """Where a GRPO run lives, what it cost and how much of it was reward computation."""

    path: Path
    final: Path
    curves: Path
    seconds: float
    step_seconds: float
    reward_seconds: float
    counts: dict
    reused: bool = False
    info: dict = field(default_factory=dict)

    @property
    def reward_share(self) -> float:
        """Reward computation time as a fraction of GRPO step time (0 when unknown)."""
        return self.reward_seconds / self.step_seconds if self.step_seconds > 0 else 0.0


def run_dir(cfg, stage: str, reward: str | None = None, seed: int = 0) -> Path:
    """``runs/<profile>/sft/seed<k>`` or ``runs/<profile>/grpo/<reward>/seed<k>``.

    Example: ``run_dir(cfg, "grpo", "chamfer", 1)``.
    """
    if stage == "sft":
        return cfg.runs_dir / cfg.name / "sft" / f"seed{seed}"
    if stage == "grpo":
        if not reward:
            raise ValueError("a GRPO run needs a reward name")
        return cfg.runs_dir / cfg.name / "grpo" / reward / f"seed{seed}"
    raise ValueError(f"stage must be 'sft' or 'grpo', got {stage!r}")


# --------------------------------------------------------------------------- datasets


def report_texts(records: Sequence[Any]) -> tuple[list[str], int]:
    """Templated reports of the records with both sections; returns ``(texts, n_skipped)``."""
    from sdrlib.reports import build_template

    texts, skipped = [], 0
    for r in records:
        if r.findings.strip() and r.impression.strip():
            texts.append(build_template(r.findings, r.impression))
        else:
            skipped += 1
    return texts, skipped


def _image_dataset(rows: dict[str, list]) -> Any:
    import datasets

    ds = datasets.Dataset.from_dict(rows)
    return ds.cast_column("images", datasets.Sequence(datasets.Image()))


def _usable(records: Sequence[Any]) -> list[Any]:
    out = [r for r in records if r.findings.strip() and r.impression.strip() and r.image_paths]
    if not out:
        raise ValueError("no record has an image and both report sections; check the data split")
    return out


def sft_dataset(records: Sequence[Any], max_images: int = 1, prompt: str | None = None):
    """HF dataset for SFT: ``prompt`` (user turn with image parts), ``completion`` (report), ``images``.

    Records missing an image or a section are dropped. Example: ``sft_dataset(load_split(cfg, "train"))``.
    """
    from sdrlib.generation import PROMPT, prompt_messages
    from sdrlib.reports import build_template

    recs = _usable(records)
    rows: dict[str, list] = {"prompt": [], "completion": [], "images": [], "study_id": []}
    for r in recs:
        paths = list(r.image_paths)[:max_images]
        rows["prompt"].append(prompt_messages(len(paths), prompt or PROMPT))
        rows["completion"].append([{"role": "assistant", "content": build_template(r.findings, r.impression)}])
        rows["images"].append(paths)
        rows["study_id"].append(r.study_id)
    return _image_dataset(rows)


def grpo_dataset(records: Sequence[Any], max_images: int = 1, prompt: str | None = None):
    """HF dataset for GRPO: ``prompt``, ``images`` and the reference columns ``findings`` / ``impression``."""
    from sdrlib.generation import PROMPT, prompt_messages

    recs = _usable(records)
    rows: dict[str, list] = {"prompt": [], "images": [], "findings": [], "impression": [], "study_id": []}
    for r in recs:
        paths = list(r.image_paths)[:max_images]
        rows["prompt"].append(prompt_messages(len(paths), prompt or PROMPT))
        rows["images"].append(paths)
        rows["findings"].append(r.findings)
        rows["impression"].append(r.impression)
        rows["study_id"].append(r.study_id)
    return _image_dataset(rows)


# --------------------------------------------------------------------------- helpers


def _is_tiny(cfg) -> bool:
    return cfg.sft.policy == "tiny"


def _tiny_spec(cfg):
    from sdrlib.models import TinyVLSpec

    s = cfg.sft
    return TinyVLSpec(
        hidden_size=s.tiny_hidden_size,
        layers=s.tiny_layers,
        heads=s.tiny_heads,
        kv_heads=s.tiny_kv_heads,
        head_dim=s.tiny_head_dim,
        intermediate_size=s.tiny_intermediate_size,
        vision_hidden_size=s.tiny_vision_hidden_size,
        vision_layers=s.tiny_vision_layers,
        vision_heads=s.tiny_vision_heads,
        vision_intermediate_size=s.tiny_vision_intermediate_size,
        patch_size=s.tiny_patch_size,
        merge_size=s.tiny_merge_size,
        image_size=s.tiny_image_size,
        mrope_section=_mrope(s.tiny_head_dim),
    )


def _mrope(head_dim: int) -> tuple[int, int, int]:
    half = head_dim // 2
    hw = (half * 5) // 16  # Qwen3-VL's [24, 20, 20] proportions for head_dim 128
    return (half - 2 * hw, hw, hw)


def _device_kwargs() -> dict[str, Any]:
    import torch

    if torch.cuda.is_available():
        bf16 = torch.cuda.is_bf16_supported()
        return {"use_cpu": False, "bf16": bf16, "fp16": not bf16}
    return {"use_cpu": True, "bf16": False, "fp16": False}


def preflight(cfg) -> None:
    """Fail fast, before any data or model work, when the profile's policy cannot run here.

    The tiny policy always can; a paper policy needs a CUDA GPU and local weights
    (:func:`sdrlib.models.check_gpu_model` raises :class:`sdrlib.models.PolicyError`).
    """
    if not _is_tiny(cfg):
        from sdrlib.models import check_gpu_model

        check_gpu_model(cfg.sft.policy)


def load_policy(cfg, path: str | Path | None = None):
    """``(model, processor)`` for the profile: a saved policy at ``path``, else a fresh one.

    ``path=None`` with the tiny policy raises (a fresh tiny policy needs training texts:
    :func:`sft` builds it). On GPU profiles ``path=None`` loads the paper model with LoRA.
    """
    from sdrlib import models

    if _is_tiny(cfg):
        if path is None:
            raise ValueError("the tiny policy is built by sft(); pass the folder of a trained policy")
        return models.load_tiny_policy(path)
    return models.load_unsloth_policy(
        cfg.sft.policy if path is None else str(path),
        lora_r=cfg.sft.lora_r,
        lora_alpha=cfg.sft.lora_alpha,
        seed=cfg.seed,
    )


class StepTimer:
    """A ``TrainerCallback`` recording the wall time of every optimizer step.

    ``times`` holds seconds per step of this session; ``rows`` holds
    ``{"step": k, "step_seconds": t}`` records merged into ``curves.csv``.
    """

    def __new__(cls):
        from transformers import TrainerCallback

        class _Timer(TrainerCallback):
            def __init__(self) -> None:
                self.times: list[float] = []
                self.rows: list[dict] = []
                self._t0 = 0.0

            def on_step_begin(self, args, state, control, **kw):
                self._t0 = time.perf_counter()

            def on_step_end(self, args, state, control, **kw):
                dt = time.perf_counter() - self._t0
                self.times.append(dt)
                self.rows.append({"step": state.global_step, "step_seconds": dt})

        return _Timer()


def read_curves(path: str | Path):
    """The ``curves.csv`` of a run folder (or the file itself) as a DataFrame."""
    import pandas as pd

    p = Path(path)
    p = p / "curves.csv" if p.is_dir() else p
    if not p.is_file():
        raise FileNotFoundError(f"no training curves at {p}: run training first")
    return pd.read_csv(p)


def _write_curves(log_history: list[dict], path: Path) -> Path:
    import pandas as pd

    from sdrlib.io import atomic_write_text

    rows = [h for h in log_history if "step" in h and "train_runtime" not in h]
    df = pd.DataFrame(rows)
    if "step" in df:
        df = df.groupby("step", as_index=False).last()  # merge entries logged at the same step
    atomic_write_text(path, df.to_csv(index=False))
    return path


def _finish(trainer, processor, out: Path, curves_extra: list[dict] | None = None) -> tuple[Path, Path]:
    from sdrlib.models import save_policy

    final = out / "final"
    if _has_tiny_config(trainer.model) and not hasattr(trainer.model, "peft_config"):
        save_policy(trainer.model, processor, final)
    else:  # GPU / LoRA: the trainer saves adapters + processor
        trainer.save_model(str(final))
        processor.save_pretrained(str(final))
    curves = _write_curves(trainer.state.log_history + (curves_extra or []), out / "curves.csv")
    return final, curves


def _has_policy(folder: Path) -> bool:
    """A saved full model (``config.json``) or LoRA adapters (``adapter_config.json``)."""
    return (folder / "config.json").is_file() or (folder / "adapter_config.json").is_file()


def _has_tiny_config(model) -> bool:
    return getattr(model.config, "sdr_tiny_spec", None) is not None


def _last_checkpoint(out: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(out)) if out.is_dir() else None


def _write_json(path: Path, obj: dict) -> None:
    from sdrlib.io import atomic_write_text

    atomic_write_text(path, json.dumps(obj, indent=2, default=str))


# --------------------------------------------------------------------------- SFT


def sft(cfg, train_records: Sequence[Any] | None = None, *, seed: int | None = None, force: bool = False) -> SFTResult:
    """Supervised fine-tuning of the profile's policy on the training split.

    Parameters
    ----------
    cfg : Profile
        Uses ``cfg.sft`` (steps, batch, learning rate, tiny-model shape or paper model).
    train_records : list of Record, optional
        Defaults to ``sdrlib.data.load_split(cfg, "train")``.
    seed : int, optional
        Defaults to ``cfg.seed``; seeds model init, data order and dropout.
    force : bool
        Retrain even when ``final/`` exists (checkpoints are then ignored too).

    Returns
    -------
    SFTResult
        ``final`` holds the policy; ``curves`` the loss curve.
    """
    import torch
    from trl import SFTConfig as TRLSFTConfig
    from trl import SFTTrainer

    from sdrlib import models
    from sdrlib.utils import set_seed

    preflight(cfg)
    seed = cfg.seed if seed is None else seed
    out = run_dir(cfg, "sft", seed=seed)
    if _has_policy(out / "final") and not force:
        info = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
        return SFTResult(out, out / "final", out / "curves.csv", info.get("seconds", 0.0), True, info)
    if train_records is None:
        from sdrlib.data import load_split

        train_records = load_split(cfg, "train")
    s = cfg.sft
    set_seed(seed)
    if _is_tiny(cfg):
        models.set_cpu_threads(s.threads)
        texts, _ = report_texts(train_records)
        model, processor = models.build_tiny_policy(texts, _tiny_spec(cfg), vocab_size=s.vocab_size, seed=seed)
    else:
        model, processor = load_policy(cfg)
    ds = sft_dataset(train_records, s.max_images)
    args = TRLSFTConfig(
        output_dir=str(out),
        max_steps=s.max_steps,
        per_device_train_batch_size=s.batch_size,
        gradient_accumulation_steps=s.grad_accum,
        learning_rate=s.learning_rate,
        lr_scheduler_type=s.lr_scheduler,
        warmup_steps=max(0, int(s.warmup_ratio * s.max_steps)),
        weight_decay=s.weight_decay,
        logging_steps=max(1, min(10, s.max_steps // 20 or 1)),
        save_steps=s.save_steps,
        save_total_limit=2,
        seed=seed,
        data_seed=seed,
        report_to="none",
        max_length=None,
        completion_only_loss=True,
        dataloader_num_workers=0,
        disable_tqdm=True,
        remove_unused_columns=False,
        **_device_kwargs(),
    )
    timer = StepTimer()
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=processor, callbacks=[timer])
    resume = None if force else _last_checkpoint(out)
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - t0
    final, curves = _finish(trainer, processor, out, timer.rows)
    info = {
        "stage": "sft",
        "profile": cfg.name,
        "seed": seed,
        "policy": s.policy,
        "steps": trainer.state.global_step,
        "seconds": seconds,
        "mean_step_seconds": sum(timer.times) / max(len(timer.times), 1),
        "resumed_from": resume,
        "n_train": len(ds),
        "params": sum(p.numel() for p in model.parameters()),
        "torch_threads": torch.get_num_threads(),
    }
    _write_json(out / "run.json", info)
    return SFTResult(out, final, curves, seconds, False, info)


# --------------------------------------------------------------------------- GRPO


def grpo(
    cfg,
    reward: str,
    init_from: str | Path,
    train_records: Sequence[Any] | None = None,
    *,
    seed: int | None = None,
    embedder: Any = None,
    force: bool = False,
    max_steps: int | None = None,
) -> GRPOResult:
    """GRPO post-training of the SFT policy at ``init_from`` with one reward configuration.

    Parameters
    ----------
    reward : str
        ``"fmt"``, ``"exact"`` or a registered distance name (``"sft"`` is rejected:
        the SFT policy is evaluated as is).
    init_from : path
        Folder of the SFT policy (``SFTResult.final``).
    embedder : SentenceEmbedder, optional
        Shared sentence encoder + cache for distance rewards; defaults to the
        profile's encoder with its cache under ``paths.cache``.
    max_steps : int, optional
        Stop after this many steps (default ``cfg.grpo.max_steps``); a later call
        without it continues from the last checkpoint.

    Returns
    -------
    GRPOResult
        Paths, wall time, reward time and bad-completion counts.
    """
    import torch
    from trl import GRPOConfig as TRLGRPOConfig
    from trl import GRPOTrainer

    from sdrlib import models
    from sdrlib.rewards import RewardScorer, trl_reward_functions, validate_reward_name
    from sdrlib.utils import set_seed

    validate_reward_name(reward)
    if reward == "sft":
        raise ValueError("reward 'sft' means no GRPO: evaluate the SFT policy directly")
    preflight(cfg)
    if not _has_policy(Path(init_from)):
        raise FileNotFoundError(f"no SFT policy in {init_from}: run sft() (notebook 03) first")
    seed = cfg.seed if seed is None else seed
    g = cfg.grpo
    out = run_dir(cfg, "grpo", reward, seed)
    steps = g.max_steps if max_steps is None else max_steps
    info = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
    if _has_policy(out / "final") and not force and info.get("steps", -1) >= steps:
        return GRPOResult(
            out, out / "final", out / "curves.csv", info.get("seconds", 0.0), info.get("step_seconds", 0.0),
            info.get("reward_seconds", 0.0), info.get("counts", {}), True, info,
        )
    if train_records is None:
        from sdrlib.data import load_split

        train_records = load_split(cfg, "train")
    set_seed(seed)
    if _is_tiny(cfg):
        models.set_cpu_threads(cfg.sft.threads)
    model, processor = load_policy(cfg, init_from)
    scorer_embedder = None
    if reward not in ("fmt", "exact"):
        scorer_embedder = embedder
        if scorer_embedder is None:
            from sdrlib.embedding import SentenceEmbedder

            scorer_embedder = SentenceEmbedder.from_config(cfg)
            from sdrlib.rewards import prewarm

            prewarm(scorer_embedder, [r.findings for r in train_records], [r.impression for r in train_records])
    scorer = RewardScorer(reward, scorer_embedder, g.lambda_fmt, g.lambda_sem, g.max_chars)
    funcs, weights = trl_reward_functions(reward, scorer=scorer)
    ds = grpo_dataset(train_records, cfg.sft.max_images)
    args = TRLGRPOConfig(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=g.batch_size,
        gradient_accumulation_steps=g.grad_accum,
        num_generations=g.num_generations,
        max_completion_length=g.max_completion_length,
        temperature=g.temperature,
        learning_rate=g.learning_rate,
        lr_scheduler_type="constant",
        beta=g.beta,
        epsilon=g.epsilon,
        loss_type=g.loss_type,
        scale_rewards=g.scale_rewards,
        reward_weights=weights,
        logging_steps=1,
        save_steps=g.save_steps,
        save_total_limit=2,
        seed=seed,
        data_seed=seed,
        report_to="none",
        use_vllm=g.use_vllm,
        vllm_mode="colocate",  # generation shares the training GPUs (2 x H100 in the paper)
        disable_tqdm=True,
        dataloader_num_workers=0,
        **_device_kwargs(),
    )
    timer = StepTimer()
    trainer = GRPOTrainer(
        model=model, reward_funcs=funcs, args=args, train_dataset=ds, processing_class=processor, callbacks=[timer]
    )
    resume = None if force else _last_checkpoint(out)
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - t0
    final, curves = _finish(trainer, processor, out, timer.rows)
    counts = dict(Counter(scorer.counts))
    info = {
        "stage": "grpo",
        "profile": cfg.name,
        "reward": reward,
        "seed": seed,
        "init_from": str(init_from),
        "steps": trainer.state.global_step,
        "seconds": seconds,
        "step_seconds": sum(timer.times),
        "reward_seconds": scorer.seconds,
        "reward_share": scorer.seconds / sum(timer.times) if timer.times else 0.0,
        "counts": counts,
        "resumed_from": resume,
        "loss_type": g.loss_type,
        "scale_rewards": g.scale_rewards,
        "beta": g.beta,
        "num_generations": g.num_generations,
        "encoder": getattr(scorer_embedder, "encoder_id", None),
        "torch_threads": torch.get_num_threads(),
    }
    _write_json(out / "run.json", info)
    return GRPOResult(out, final, curves, seconds, sum(timer.times), scorer.seconds, counts, False, info)


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sdrlib.training --profile paper --stage grpo --reward chamfer --seed 0``.

    The entry point for multi-GPU runs: ``accelerate launch --config_file
    configs/accelerate/2gpu.yaml -m sdrlib.training --profile paper --stage grpo --reward chamfer``
    (the paper's GRPO used 2 x H100). SFT must have run first for GRPO.
    """
    import argparse

    from sdrlib.config import load_profile

    ap = argparse.ArgumentParser(prog="python -m sdrlib.training", description="SFT or GRPO for one profile")
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--stage", choices=("sft", "grpo"), required=True)
    ap.add_argument("--reward", default="chamfer", help="GRPO reward: fmt | exact | a distance name")
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


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
