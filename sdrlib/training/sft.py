"""Supervised fine-tuning (paper sec. 3, app. C.2) through TRL's ``SFTTrainer``.

Prompt-completion pairs (the image + instruction as prompt, the templated report as completion,
:func:`sdrlib.training.datasets.sft_dataset`), so the loss covers the assistant report only. Gradient
checkpointing (``sft.gradient_checkpointing``) is passed to TRL, whose configs default it to True; the tiny
CPU policy gains no memory worth having from it and pays for it in recomputed activations.

Left out: GRPO (:mod:`sdrlib.training.grpo`), building and saving the policy (:mod:`sdrlib.models`), run folders
and keys (:mod:`sdrlib.training.runkeys`), generation for evaluation (:mod:`sdrlib.generation`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sdrlib import models
from sdrlib.config import accumulation
from sdrlib.data import load_split
from sdrlib.errors import SDRError
from sdrlib.io import atomic_write_json
from sdrlib.paths import output_root, repo_root
from sdrlib.training import aux_labels, sampling
from sdrlib.training.datasets import report_texts, row_records, sft_dataset
from sdrlib.training.policy import device_kwargs, is_tiny, load_policy, preflight, tiny_spec
from sdrlib.training.processes import barrier, init, is_main, main_first, world_size
from sdrlib.training.runkeys import claim, policy_digest, records_digest, reusable, run_dir, run_key
from sdrlib.training.tower import pretrain_tower, tower_labels
from sdrlib.training.runlog import (Progress, SFTResult, StepTimer, log_name, logs_to, read_curves, short_path,
                                    train_and_save)
from sdrlib.utils import set_seed

__all__ = ["sft"]


def sft(cfg: Any, train_records: Sequence[Any] | None = None, *, seed: int | None = None, force: bool = False,
        progress: bool = True) -> SFTResult:
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
    progress : bool
        Show one progress line ending in a summary (module doc); the details go to ``train.log``.

    With ``sft.processes`` > 1 (the tiny CPU policy) and no launcher around this process, the run is handed to
    ``accelerate launch`` with that many CPU processes (:func:`_launch`; the profile's values, overrides included,
    go to it as a file); they must train on the profile's own training split, so ``train_records`` other than
    ``load_split(cfg, "train")`` raise :class:`~sdrlib.errors.SDRError`.

    Returns
    -------
    SFTResult
        ``final`` holds the policy; ``curves`` the loss curve.
    """
    import torch  # noqa: F401  (torch and TRL load before the seed is set, as they always have)
    from trl import SFTConfig as TRLSFTConfig  # noqa: F401
    from trl import SFTTrainer  # noqa: F401

    preflight(cfg)
    if cfg.sft.aux_label_weight > 0 and not is_tiny(cfg):
        raise aux_labels.AuxLabelError(f"sft.aux_label_weight = {cfg.sft.aux_label_weight}: the auxiliary label loss "
                                       f"is built for the tiny policy only, not {cfg.sft.policy!r}; set it to 0")
    if cfg.sft.balanced_sampling > 0 and not is_tiny(cfg):
        raise sampling.SamplingError(f"sft.balanced_sampling = {cfg.sft.balanced_sampling}: balanced sampling is "
                                     f"built for the tiny policy only, not {cfg.sft.policy!r}; set it to 0")
    seed = cfg.seed if seed is None else seed
    if cfg.sft.processes > 1 and world_size() == 1:  # the profile asks for several processes: launch them
        return _launch(cfg, train_records, seed, force)
    init()  # several processes (accelerate launch): start the process group before any shared file is written
    out = run_dir(cfg, "sft", seed=seed)
    if train_records is None:
        with main_first():  # rank 0 makes the data (synthetic profiles) before the others read it
            train_records = load_split(cfg, "train")
    key = run_key(cfg, "sft", train_records, seed=seed)
    reuse = not force and reusable(out, key)
    barrier()  # every rank has decided before rank 0 touches the folder
    if reuse:
        info = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
        return SFTResult(out, out / "final", out / "curves.csv", info.get("seconds", 0.0), True, info)
    if is_main():
        claim(out, key, force)
    barrier()
    progress = Progress(cfg.sft.max_steps, f"SFT seed {seed}") if progress and is_main() else None
    with logs_to(out / log_name()):
        final, curves, seconds, info = _train(cfg, train_records, seed, out, progress)
    if progress is not None:
        curves_df = read_curves(curves)
        loss = curves_df["loss"].dropna() if "loss" in curves_df else []
        progress.close(f"SFT seed {seed}: {info['steps']} steps in {seconds:.0f} s"
                       + (f", loss {loss.iloc[0]:.3f} -> {loss.iloc[-1]:.3f}" if len(loss) else "")
                       + f" (details: {short_path(out / log_name())})")
    return SFTResult(out, final, curves, seconds, False, info)


def _train(cfg: Any, train_records: Sequence[Any], seed: int, out: Path, progress: Any
           ) -> tuple[Path, Path, float, dict[str, Any]]:
    """The training part of :func:`sft` (inside its log): seed, policy, trainer, train, ``run.json``; returns the
    final policy folder, the curves file, the seconds and the ``run.json`` entries."""
    import torch
    from trl import SFTTrainer

    s = cfg.sft
    set_seed(seed)
    model, processor = _policy(cfg, train_records, seed)
    ds = sft_dataset(train_records, s.max_images)
    args = _trl_args(s, out, seed)
    timer = StepTimer()
    trainer_cls, extra = SFTTrainer, {}
    if s.aux_label_weight > 0:  # the decoder must state the findings where the report starts (aux_labels)
        aux_labels.attach(model)
        trainer_cls, extra["aux_weight"] = aux_labels.trainer_class(), s.aux_label_weight
        ds = aux_labels.with_labels(ds, train_records)
    if s.balanced_sampling > 0:  # studies with rare findings drawn more often (sampling)
        trainer_cls = sampling.balanced_trainer(trainer_cls)
        extra["sample_weights"] = sampling.balanced_weights(tower_labels(row_records(ds, train_records)),
                                                            s.balanced_sampling)
    trainer = trainer_cls(model=model, args=args, train_dataset=ds, processing_class=processor, callbacks=[timer],
                          **extra)
    resume, seconds, final, curves = train_and_save(trainer, processor, out, timer, progress)
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
        "gradient_checkpointing": s.gradient_checkpointing,
        "policy_digest": policy_digest(final),
        "world_size": args.world_size,
        "aux_label_weight": s.aux_label_weight,
        "balanced_sampling": s.balanced_sampling,
    }
    if is_main():
        atomic_write_json(out / "run.json", info, sort_keys=False)
    return final, curves, seconds, info


def _policy(cfg: Any, train_records: Sequence[Any], seed: int) -> tuple[Any, Any]:
    """The policy to fine-tune and its processor: the tiny policy built from the training reports (its tokenizer
    trained on them, at ``seed``; its vision tower label-pretrained on them for ``sft.tiny_tower_epochs``,
    :mod:`sdrlib.training.tower`), else the profile's pretrained policy."""
    s = cfg.sft
    if is_tiny(cfg):
        models.set_cpu_threads(s.threads)
        texts, _ = report_texts(train_records)
        model, processor = models.build_tiny_policy(texts, tiny_spec(cfg), vocab_size=s.vocab_size, seed=seed)
        if s.tiny_tower_epochs:
            pretrain_tower(model, processor, [r for r in train_records if r.image_paths], epochs=s.tiny_tower_epochs,
                           learning_rate=s.tiny_tower_lr, seed=seed, head=s.tiny_tower_head)
        if s.tiny_freeze_vision:
            models.freeze_vision_tower(model)
    else:
        model, processor = load_policy(cfg)
    return model, processor


def _trl_args(s: Any, out: Path, seed: int) -> Any:
    """TRL's ``SFTConfig`` of the run, from the profile's ``sft`` section ``s``."""
    from trl import SFTConfig as TRLSFTConfig

    return TRLSFTConfig(
        output_dir=str(out),
        max_steps=s.max_steps,
        per_device_train_batch_size=s.batch_size,
        gradient_accumulation_steps=accumulation(s, world_size(), "sft"),  # the effective batch on any GPU count
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
        gradient_checkpointing=s.gradient_checkpointing,  # TRL defaults to True (see the module doc)
        # the auxiliary label head is applied in a hook, outside the outputs DDP searches for used parameters
        **({"ddp_find_unused_parameters": False} if s.aux_label_weight > 0 else {}),
        **device_kwargs(),
    )


#: The accelerate config of CPU processes (gloo); ``--num_processes`` overrides its count.
CPU_LAUNCH_CONFIG = Path("configs") / "accelerate" / "cpu_2proc.yaml"


def _launch(cfg: Any, train_records: Sequence[Any] | None, seed: int, force: bool) -> SFTResult:
    """:func:`sft` in ``cfg.sft.processes`` CPU processes (``accelerate launch -m sdrlib.training``), from a plain
    process: the finished run is reused without launching anything; otherwise the profile's values go to the
    launcher as a YAML file, the processes' output is passed through line by line, and the run's ``run.json`` is
    read back. Raises :class:`~sdrlib.errors.SDRError` when ``train_records`` are not the profile's training split
    (the processes read that split themselves) or the launch fails (its last output lines in the message)."""
    import yaml

    n = cfg.sft.processes
    out = run_dir(cfg, "sft", seed=seed)
    split = load_split(cfg, "train")
    if train_records is not None and records_digest(train_records) != records_digest(split):
        raise SDRError(f"sft.processes = {n}: the launched processes train on the profile's training split "
                       f"({len(split)} studies), not on the {len(train_records)} records given; pass none, or set "
                       "sft.processes = 1 to train on other records in this process")
    key = run_key(cfg, "sft", split, seed=seed, world=n)
    if not force and reusable(out, key):
        info = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
        return SFTResult(out, out / "final", out / "curves.csv", info.get("seconds", 0.0), True, info)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                                           "MASTER_ADDR", "MASTER_PORT", "ACCELERATE_USE_CPU")}
    env["SDR_ROOT"] = str(output_root())  # the profile's relative paths resolve where this process's do
    with tempfile.TemporaryDirectory(prefix="sdr-sft-") as tmp:
        profile = Path(tmp) / f"{cfg.name}.yaml"
        profile.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False), encoding="utf-8")
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
               str(repo_root() / CPU_LAUNCH_CONFIG), "--num_processes", str(n), "-m", "sdrlib.training",
               "--profile", str(profile), "--stage", "sft", "--seed", str(seed), *(["--force"] if force else [])]
        tail: list[str] = []
        result: dict[str, Any] = {}
        with subprocess.Popen(cmd, cwd=repo_root(), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, bufsize=1) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                tail = (tail + [line.rstrip()])[-30:]
                if line.startswith("{"):  # rank 0's result line (python -m sdrlib.training)
                    result = json.loads(line)
                else:  # the processes' progress
                    print(line, end="", flush=True)
        if proc.returncode != 0:
            raise SDRError(f"SFT in {n} processes failed (exit {proc.returncode}): " + "\n".join(tail))
    written = json.loads((out / "run_key.json").read_text()) if (out / "run_key.json").is_file() else {}
    if written.get("data") != key["data"] or written.get("world_size") != n or not (out / "run.json").is_file():
        raise SDRError(f"SFT in {n} processes finished without the run this process expects in {out} "
                       f"(run_key.json: world_size {written.get('world_size')}, data {written.get('data')})")
    info = json.loads((out / "run.json").read_text())
    return SFTResult(out, out / "final", out / "curves.csv", info.get("seconds", 0.0), bool(result.get("reused")),
                     info)
