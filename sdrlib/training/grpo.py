"""GRPO post-training through TRL (paper sec. 4, app. C.3), for any registered reward configuration.

:func:`grpo` post-trains an SFT policy with TRL's ``GRPOTrainer`` for one reward configuration (a name
read once by :func:`sdrlib.rewards.parse_reward`); ``"sft"`` means no GRPO. Loss type, reward scaling and
the KL coefficient come from the profile, so Dr. GRPO is ``loss_type: dr_grpo`` + ``scale_rewards: none``.
There is no per-method branch here: the reward method (:mod:`sdrlib.rewards.methods`) gives its settings
(``grpo.<method>``), its data (G-CARL: the training sentences as claim bank), its weights
(:meth:`sdrlib.rewards.RewardScorer.from_profile`) and what it changes in the run
(:meth:`sdrlib.rewards.RewardMethod.train_options`: EditGRPO trains with
:class:`sdrlib.training.editgrpo_trainer.EditGRPOTrainer` under Dr. GRPO whatever the profile's loss, at
``grpo.editgrpo.learning_rate`` when the profile sets one and with AdamW weight decay
``grpo.editgrpo.weight_decay``; every other GRPO run: 0), and adds its entries to ``run.json``
(EditGRPO: edit totals; its per-step edit counts ``edits/*`` go into ``curves.csv``).

GRPO group statistics: every fresh batch also logs, per group of ``num_generations`` completions of one
prompt, the share of groups in which no completion matches the reference exactly
(``reward_groups/exact_all_zero``, computed for every reward configuration: the sparsity R_exact faces) and
the mean within-group sample std of the total reward and of its content component
(``reward_groups/total_std``, ``reward_groups/content_std``): the spread the group-relative advantage is
built from.

Gradient checkpointing (``grpo.gradient_checkpointing``) is passed to TRL (default True there); vLLM
generation is colocated (GPU only; no server mode).

Left out: SFT (:mod:`sdrlib.training.sft`), the rewards themselves (:mod:`sdrlib.rewards`), run folders and keys
(:mod:`sdrlib.training.runkeys`), logs and curves (:mod:`sdrlib.training.runlog`), generation for evaluation
(:mod:`sdrlib.generation`).
"""

from __future__ import annotations

import importlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sdrlib import models
from sdrlib.config import accumulation
from sdrlib.data import load_split
from sdrlib.embedding import SentenceEmbedder
from sdrlib.io import atomic_write_json
from sdrlib.rewards import (RewardScorer, check_completion, completion_text, exact_match_section, get_method,
                            parse_reward, prewarm, trl_reward_functions)
from sdrlib.training.datasets import grpo_dataset
from sdrlib.training.policy import device_kwargs, has_policy, is_tiny, load_policy, preflight
from sdrlib.training.processes import barrier, init, is_main, main_first, on_cpu, world_size
from sdrlib.training.runkeys import claim, reusable, run_dir, run_key
from sdrlib.training.runlog import (GRPOResult, Progress, StepTimer, log_name, logs_to, read_curves, short_path,
                                    train_and_save, trl_stage_times)
from sdrlib.utils import set_seed

__all__ = ["grpo", "group_stats", "summary_line"]


# --------------------------------------------------------------------------- GRPO group statistics


def group_stats(total: Sequence[float], content: Sequence[float], exact: Sequence[float],
                num_generations: int) -> dict[str, float] | None:
    """Statistics of one batch of GRPO rewards over its groups of ``num_generations``.

    The arrays have shape ``(n,)`` with the completions of one prompt consecutive (TRL's
    ``RepeatSampler`` layout), so group ``j`` is ``[j * G, (j + 1) * G)``. Returns
    ``exact_all_zero`` (share of groups where no completion has an exact section match,
    ``exact`` = R_exact in {0, 1, 2}), ``total_std`` / ``content_std`` (mean over groups of
    the within-group sample std, ddof=1 as TRL's advantage scaling) and ``n_groups``;
    ``None`` when ``n`` is not a positive multiple of ``G`` (no group layout to read).
    Example: ``group_stats([1, 1, 2, 0], [0, 0, 1, 0], [0, 0, 1, 0], 2)["exact_all_zero"] -> 0.5``.
    """
    t, c, e = (np.asarray(x, dtype=float) for x in (total, content, exact))
    g = int(num_generations)
    n = t.size
    if g < 2 or n == 0 or n % g or c.size != n or e.size != n:
        return None
    t, c, e = t.reshape(-1, g), c.reshape(-1, g), e.reshape(-1, g)
    return {"exact_all_zero": float(np.mean(np.all(e == 0, axis=1))),
            "total_std": float(np.mean(np.std(t, axis=1, ddof=1))),
            "content_std": float(np.mean(np.std(c, axis=1, ddof=1))),
            "n_groups": float(t.shape[0])}


def _exact_scores(completions: Sequence[Any], findings: Sequence[str], impression: Sequence[str],
                  max_chars: int) -> list[float]:
    """R_exact of each completion (sections whose sentence set equals the reference's), any reward."""
    out = []
    for c, f, i in zip(completions, findings, impression):
        sections, _ = check_completion(completion_text(c), max_chars)
        out.append(0.0 if sections is None else
                   exact_match_section(sections.findings, f) + exact_match_section(sections.impression, i))
    return out


def _with_group_stats(funcs: list, scorer: Any, num_generations: int) -> list:
    """``funcs`` with the last one also logging :func:`group_stats` through TRL's ``log_metric``.

    The breakdown comes from the scorer's cache (TRL calls the functions on the same batch in
    turn), so nothing is scored twice; R_exact is computed for every configuration (string
    comparison, cheap) so the sparsity of exact match is seen on every run's completions.
    """
    last = funcs[-1]

    def logged(completions, **kwargs):
        out = last(completions, **kwargs)
        log = kwargs.get("log_metric")
        findings, impression = kwargs.get("findings"), kwargs.get("impression")
        if callable(log) and findings is not None and impression is not None:
            b, _ = scorer.score_cached(completions, findings, impression)
            exact = b.exact if scorer.impl.scores_exact else _exact_scores(completions, findings, impression,
                                                                               scorer.max_chars)
            stats = group_stats(b.total, b.content, exact, num_generations)
            for name, value in (stats or {}).items():
                log(f"reward_groups/{name}", value)
        return out

    logged.__name__ = logged.__qualname__ = last.__name__  # TRL names the reward column after it
    for attr in ("scorer",):
        if hasattr(last, attr):
            setattr(logged, attr, getattr(last, attr))
    return [*funcs[:-1], logged]


# --------------------------------------------------------------------------- GRPO


def grpo(
    cfg: Any,
    reward: str,
    init_from: str | Path,
    train_records: Sequence[Any] | None = None,
    *,
    seed: int | None = None,
    embedder: Any = None,
    force: bool = False,
    max_steps: int | None = None,
    progress: bool = True,
) -> GRPOResult:
    """GRPO post-training of the SFT policy at ``init_from`` with one reward configuration.

    Parameters
    ----------
    reward : str
        A reward name (:func:`sdrlib.rewards.parse_reward`: ``"fmt"``, ``"exact"``, a registered distance,
        ``"gcarl"``, an EditGRPO name; ``"sft"`` is rejected: the SFT policy is evaluated as is).
    init_from : path
        Folder of the SFT policy (``SFTResult.final``).
    embedder : SentenceEmbedder, optional
        Shared sentence encoder + cache for distance rewards; defaults to the
        profile's encoder with its cache under ``paths.cache``.
    max_steps : int, optional
        Stop after this many steps (default ``cfg.grpo.max_steps``); a later call
        without it continues from the last checkpoint.
    progress : bool
        Show one progress line ending in a summary (module doc); the details go to ``train.log``.

    Returns
    -------
    GRPOResult
        Paths, wall time, reward time and bad-completion counts.
    """
    import torch  # noqa: F401  (torch and TRL load before the seed is set, as they always have)
    from trl import GRPOConfig as TRLGRPOConfig  # noqa: F401
    from trl import GRPOTrainer  # noqa: F401

    spec = parse_reward(reward)
    if not spec.trains:
        raise ValueError(f"reward {reward!r} means no GRPO: evaluate the SFT policy directly")
    preflight(cfg)
    init()  # several processes (accelerate launch): start the process group before any shared file is written
    if not has_policy(Path(init_from)):
        raise FileNotFoundError(f"no SFT policy in {init_from}: run sft() (notebook 03) first")
    seed = cfg.seed if seed is None else seed
    out = run_dir(cfg, "grpo", reward, seed)
    steps = cfg.grpo.max_steps if max_steps is None else max_steps
    if train_records is None:
        with main_first():  # rank 0 makes the data (synthetic profiles) before the others read it
            train_records = load_split(cfg, "train")
    key = run_key(cfg, "grpo", train_records, reward=reward, seed=seed, init_from=init_from)
    info = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
    reuse = not force and reusable(out, key) and info.get("steps", -1) >= steps
    barrier()  # every rank has decided before rank 0 touches the folder
    if reuse:
        return GRPOResult(
            out, out / "final", out / "curves.csv", info.get("seconds", 0.0), info.get("step_seconds", 0.0),
            info.get("reward_seconds", 0.0), info.get("counts", {}), True, info,
        )
    if is_main():
        claim(out, key, force)
    barrier()
    progress = Progress(steps, f"GRPO {reward} seed {seed}") if progress and is_main() else None
    with logs_to(out / log_name()):
        result = _train(cfg, reward, spec, init_from, train_records, seed, steps, out, embedder, progress)
    if progress is not None:
        progress.close(summary_line(result))
    return result


def _train(cfg: Any, reward: str, spec: Any, init_from: str | Path, train_records: Sequence[Any], seed: int,
           steps: int, out: Path, embedder: Any, progress: Any) -> GRPOResult:
    """The training part of :func:`grpo` (inside its log): seed, policy, scorer, trainer, train, ``run.json``."""
    g = cfg.grpo
    impl = get_method(spec.method)
    set_seed(seed)
    model, processor = _policy(cfg, init_from)
    scorer_embedder = _scorer_embedder(cfg, spec, embedder, train_records)
    enc_before = _encoder_stats(scorer_embedder)
    settings = impl.check_settings(getattr(g, impl.name) if impl.settings is not None else None)
    # the method's data (G-CARL: claims may match the training sentences, the bank)
    data = impl.grpo_data(spec, settings, train_records)
    scorer = RewardScorer.from_profile(spec, scorer_embedder, g, data=data)
    funcs, weights = trl_reward_functions(reward, scorer=scorer)
    # what the method changes (EditGRPO: its trainer, the paper's Dr. GRPO, its own learning rate)
    opts = impl.train_options(spec, settings, g, scorer_embedder)
    run = _run_settings(g, opts)
    funcs = _with_group_stats(funcs, scorer, g.num_generations)
    ds = grpo_dataset(train_records, cfg.sft.max_images)
    args = _trl_args(g, out, steps, seed, weights, run)
    timer = StepTimer()
    trainer = run["trainer_cls"](
        model=model, reward_funcs=funcs, args=args, train_dataset=ds, processing_class=processor, callbacks=[timer],
        **run["trainer_kwargs"],
    )
    with trl_stage_times() as stages:
        resume, seconds, final, curves = train_and_save(trainer, processor, out, timer, progress)
    counts = dict(Counter(scorer.counts))
    info = _run_info(cfg, reward, seed, init_from, trainer, timer, stages, scorer, scorer_embedder, counts, resume,
                     seconds, run, weights, args)
    info.update(impl.run_info(trainer))
    enc_after = _encoder_stats(scorer_embedder)
    if enc_before is not None and enc_after is not None:  # this run's share (an embedder passed in may have served
        info["encoder_stats"] = {k: v - enc_before.get(k, 0) if k != "longest_tokens" else v  # earlier runs)
                                 for k, v in enc_after.items()}
    if is_main():
        atomic_write_json(out / "run.json", info, sort_keys=False)
    return GRPOResult(out, final, curves, seconds, sum(timer.times), scorer.seconds, counts, False, info)


def _encoder_stats(embedder: Any) -> dict[str, float] | None:
    """The embedder's counters (:attr:`sdrlib.embedding.SentenceEmbedder.stats`), ``None`` without an embedder or
    for one that keeps none."""
    stats = getattr(embedder, "stats", None)
    return dict(stats) if isinstance(stats, dict) else None


def _policy(cfg: Any, init_from: str | Path) -> tuple[Any, Any]:
    """The SFT policy to post-train and its processor (the tiny policy: its CPU threads first, and its vision
    tower kept frozen when SFT kept it so)."""
    if is_tiny(cfg):
        models.set_cpu_threads(cfg.sft.threads)
    model, processor = load_policy(cfg, init_from)
    if is_tiny(cfg) and cfg.sft.tiny_freeze_vision:
        # the tower SFT kept at its random initialisation stays there: trained by GRPO, its features drift
        # under the merger SFT fitted to them (issue 27: the noise-reward control's macro F1 drop)
        models.freeze_vision_tower(model)
    return model, processor


def _scorer_embedder(cfg: Any, spec: Any, embedder: Any, train_records: Sequence[Any]) -> Any:
    """The sentence encoder of the reward (``None`` when the method needs none): ``embedder`` or the profile's; with
    several processes on one CPU each gets its share of the threads and embeds the references first."""
    if not spec.needs_embedder:
        return None
    scorer_embedder = embedder
    if scorer_embedder is None:
        with main_first():  # rank 0 fills the shared embedding cache, the others then read it
            scorer_embedder = SentenceEmbedder.from_config(cfg)
        if world_size() > 1 and on_cpu() and scorer_embedder.threads != 1:
            # N processes on one CPU share its cores: each encodes with its share of the threads
            total = scorer_embedder.threads or os.cpu_count() or 1
            scorer_embedder.threads = max(1, total // world_size())
            prewarm(scorer_embedder, [r.findings for r in train_records],
                    [r.impression for r in train_records])
    return scorer_embedder


def _run_settings(g: Any, opts: Any) -> dict[str, Any]:
    """The run's loss, reward scaling, learning rate, weight decay and trainer: the method's
    (:class:`sdrlib.rewards.TrainOptions`) where it sets one, else the profile's (weight decay: TRL's 0.0)."""
    from trl import GRPOTrainer

    return {
        "loss_type": g.loss_type if opts.loss_type is None else opts.loss_type,
        "scale_rewards": g.scale_rewards if opts.scale_rewards is None else opts.scale_rewards,
        "learning_rate": g.learning_rate if opts.learning_rate is None else opts.learning_rate,
        "weight_decay": 0.0 if opts.weight_decay is None else opts.weight_decay,  # 0.0: TRL's default weight decay
        "trainer_cls": GRPOTrainer if opts.trainer is None else _resolve(opts.trainer),
        "trainer_kwargs": dict(opts.trainer_kwargs),
    }


def _trl_args(g: Any, out: Path, steps: int, seed: int, weights: list[float], run: dict[str, Any]) -> Any:
    """TRL's ``GRPOConfig`` of the run (the profile's ``grpo`` section and the method's :func:`_run_settings`)."""
    from trl import GRPOConfig as TRLGRPOConfig

    return TRLGRPOConfig(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=g.batch_size,
        gradient_accumulation_steps=accumulation(g, world_size(), "grpo"),  # the effective batch on any GPU count
        num_generations=g.num_generations,
        max_completion_length=g.max_completion_length,
        temperature=g.temperature,
        learning_rate=run["learning_rate"],
        weight_decay=run["weight_decay"],
        lr_scheduler_type="constant",
        beta=g.beta,
        epsilon=g.epsilon,
        loss_type=run["loss_type"],
        scale_rewards=run["scale_rewards"],
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
        gradient_checkpointing=g.gradient_checkpointing,  # TRL defaults to True (see the module doc)
        **device_kwargs(),
    )


def _run_info(cfg: Any, reward: str, seed: int, init_from: str | Path, trainer: Any, timer: Any, stages: Any,
              scorer: Any, scorer_embedder: Any, counts: dict, resume: Any, seconds: float, run: dict[str, Any],
              weights: list[float], args: Any) -> dict[str, Any]:
    """The run's ``run.json`` entries (before the method's own, :meth:`sdrlib.rewards.RewardMethod.run_info`)."""
    import torch

    g = cfg.grpo
    return {
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
        "reward_seconds_per_step": scorer.seconds / max(len(timer.times), 1),
        # where this session's step time went (TRL's own profiling points; benchmarks/profile_run.py)
        "stage_seconds": stages.split(sum(timer.times)),
        "counts": counts,
        "resumed_from": resume,
        "loss_type": run["loss_type"],
        "scale_rewards": run["scale_rewards"],
        "learning_rate": run["learning_rate"],
        # what the optimizer ran with (HF's Trainer exempts biases and norms from decay)
        "weight_decay": max((pg["weight_decay"] for pg in trainer.optimizer.param_groups), default=0.0)
        if trainer.optimizer is not None else run["weight_decay"],
        "reward_weights": weights,
        "beta": g.beta,
        "num_generations": g.num_generations,
        "encoder": getattr(scorer_embedder, "encoder_id", None),
        # the reward's encoder work in this run (hits, misses, sentences and tokens encoded, seconds: the encoder's
        # share of reward_seconds), rank 0's; set by _train (benchmarks/profile_run.py)
        "encoder_stats": None,
        "torch_threads": torch.get_num_threads(),
        "gradient_checkpointing": g.gradient_checkpointing,
        "world_size": args.world_size,  # reward time and counts above are rank 0's
    }


def summary_line(res: GRPOResult, *, with_log: bool = True) -> str:
    """The one line a finished GRPO run shows (its progress line's end; parallel runs print it when they finish):
    steps, seconds, first / last 4 steps' mean reward, reward-time share, EditGRPO's edit counts and (``with_log``)
    the log's path; a caller that lists many runs names the logs' place once instead."""
    info = res.info
    c = read_curves(res.curves)
    r = c["reward"].dropna() if "reward" in c else []
    return (f"GRPO {info['reward']} seed {info['seed']}: {info['steps']} steps, {res.seconds:.0f} s"
            + (f", reward {r.head(4).mean():.3f} -> {r.tail(4).mean():.3f} (first/last 4 steps)" if len(r) else "")
            + f", reward time {info['reward_share']:.0%}"
            + (", edits " + " ".join(f"{k} {v}" for k, v in info["edits"].items() if v) if info.get("edits") else "")
            + (f" ({short_path(res.path / log_name())})" if with_log else ""))


def _resolve(path: str) -> Any:
    """The object a ``"package.module:Name"`` path names (a method's trainer, :class:`sdrlib.rewards.TrainOptions`)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)
