"""What a training run shows and writes: one progress line, library logs in a file, step times, curves, the saved policy.

Notebook output: each run shows one progress line (:class:`Progress`: updated in place in a notebook, a
tqdm bar in a terminal) ending in a summary; TRL's per-step dicts, library warnings and progress bars go
to the run's ``train.log`` instead (:func:`logs_to`, :func:`trainer_logs_to`). Every run's folder holds
``curves.csv`` (:func:`read_curves`: loss, reward components, KL, completion length, per-step wall time
from :class:`StepTimer`), ``run.json`` and the final policy (``final/``, :func:`finish`).

Several processes (``accelerate launch``, :mod:`sdrlib.training.processes`): rank 0 alone writes the final
policy, ``curves.csv``, ``run.json`` and ``train.log`` (rank ``r`` > 0 logs to ``train.rank<r>.log``), and
every rank writes ``rank<r>.json`` (:func:`rank_record_callback`): its rank, the world size, its optimizer
steps and the study ids of every batch its dataloader gave it, step by step, so the shards can be checked.
What each rank gets (accelerate 1.15 / TRL 1.16, with accelerate's default ``split_batches=False``):

- SFT: one seeded permutation of the training set on every rank (accelerate's ``SeedableRandomSampler``,
  seed ``data_seed``, plus the epoch), cut into batches of ``per_device_train_batch_size``; batch ``i``
  goes to rank ``i % N`` (``BatchSamplerShard``), so a step's ``grad_accum`` micro-batches per rank are
  disjoint shards of a global batch of ``batch_size x grad_accum x N`` studies.
- GRPO: TRL's ``RepeatSampler`` (same seed on every rank) draws ``generation_batch_size / G`` prompts per
  step (``generation_batch_size = batch_size x N x steps_per_generation``, ``steps_per_generation =
  grad_accum``), repeats each prompt ``G`` times in a row and the whole block ``steps_per_generation``
  times; the dataloader's batches of ``batch_size x steps_per_generation`` rows go to rank ``i % N``, so
  rank ``r`` generates for rows ``[r B, (r + 1) B)`` of the block (``B = batch_size x
  steps_per_generation``). TRL only needs the global block to hold whole groups and gathers every
  rank's rewards before the group-relative advantages (``rewards_per_func = gather(rewards_per_func)`` in
  ``GRPOTrainer._calculate_rewards``; each rank keeps its slice of them), so a group may straddle two
  ranks there; :mod:`sdrlib.config` requires ``B`` itself to be a multiple of ``G``, so here a prompt's
  ``G`` completions always stay on one rank (EditGRPO's edits and the group statistics need that).

Left out: deciding whether a run is reused (:mod:`sdrlib.training.runkeys`), the training itself
(:mod:`sdrlib.training.sft`, :mod:`sdrlib.training.grpo`), experiment trackers (wandb, MLflow: ``report_to="none"``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdrlib import models
from sdrlib.io import atomic_write_json, atomic_write_text
from sdrlib.training.policy import has_tiny_config
from sdrlib.training.processes import barrier, is_main, rank, world_size

__all__ = ["SFTResult", "GRPOResult", "StepTimer", "StageTimes", "trl_stage_times", "Progress", "short_path", "logs_to", "trainer_logs_to", "read_curves",
           "write_curves", "finish", "train_and_save", "last_checkpoint", "run_log_callback",
           "rank_record_callback", "log_name"]


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


class StepTimer:
    """A ``TrainerCallback`` recording the wall time of every optimizer step.

    ``times`` holds seconds per step of this process (a resumed run starts a new list); ``rows`` holds
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


@dataclass
class StageTimes:
    """Seconds per named stage of a TRL run, summed over its steps (what :func:`trl_stage_times` collects).

    ``raw`` maps TRL's profiling names (``"GRPOTrainer.transformers.generate"``,
    ``"GRPOTrainer._calculate_rewards"``, ``"GRPOTrainer._prepare_inputs"``, ``"GRPOTrainer.compute_loss"``, ...)
    to ``[seconds, calls]``. :meth:`split` turns them and the step total into disjoint stages.
    """

    raw: dict[str, list[float]] = field(default_factory=dict)

    def seconds(self, suffix: str) -> float:
        """Total seconds of every profiled name ending in ``suffix`` (any trainer class)."""
        return sum(v[0] for k, v in self.raw.items() if k.endswith(suffix))

    def split(self, step_seconds: float) -> dict[str, float]:
        """Disjoint stages of ``step_seconds`` (the optimizer steps' wall time, :class:`StepTimer`), in seconds.

        - ``generation``: the policy's ``generate`` (``transformers.generate``, or vLLM's);
        - ``rewards``: TRL's ``_calculate_rewards`` (every reward function, our encoder passes included);
        - ``scoring``: the rest of ``_prepare_inputs`` (prompt / image processing, the old and reference
          policies' log-probabilities, advantages);
        - ``loss_forward``: ``compute_loss`` (the policy's forward pass with gradients);
        - ``backward_optimizer``: the rest of the step (backward pass, optimizer, callbacks, checkpoints).
        """
        gen = self.seconds(".transformers.generate") + self.seconds(".transformers.generate_batch") \
            + self.seconds(".vLLM.generate")
        rewards = self.seconds("._calculate_rewards")
        prepare = self.seconds("._prepare_inputs")
        loss = self.seconds(".compute_loss")
        out = {"generation": gen, "rewards": rewards, "scoring": max(prepare - gen - rewards, 0.0),
               "loss_forward": loss, "backward_optimizer": max(step_seconds - prepare - loss, 0.0)}
        return {k: round(v, 3) for k, v in out.items()}


@contextmanager
def trl_stage_times() -> Iterator[StageTimes]:
    """Collect TRL's own profiling timings (``trl.extras.profiling.ProfilingContext``) into a :class:`StageTimes`.

    TRL times its generation, reward, log-probability and loss calls with ``ProfilingContext`` and reports them
    only to experiment trackers (wandb, MLflow, Trackio); inside this block every such timing is also summed
    into the yielded :class:`StageTimes` (main process only, as TRL reports them). The timing itself is TRL's;
    nothing about training changes.
    """
    from trl.extras import profiling

    times = StageTimes()
    original = profiling.ProfilingContext._log_metrics

    def log_metrics(ctx, duration: float) -> None:
        if ctx.is_main_process:
            slot = times.raw.setdefault(ctx.name, [0.0, 0])
            slot[0] += duration
            slot[1] += 1
        original(ctx, duration)

    profiling.ProfilingContext._log_metrics = log_metrics
    try:
        yield times
    finally:
        profiling.ProfilingContext._log_metrics = original


def short_path(path: Path) -> str:
    """``path`` from its last ``runs`` folder on, for one-line summaries; unchanged when it has none.

    Example: ``short_path(Path("/tmp/x/runs/cpu/grpo/fmt/seed0/train.log"))`` -> ``"runs/cpu/grpo/fmt/seed0/train.log"``.
    """
    parts = Path(path).parts
    if "runs" not in parts:
        return str(path)
    i = len(parts) - 1 - parts[::-1].index("runs")
    return str(Path(*parts[i:]))


class Progress:
    """One progress line per run: a display updated in place in a notebook kernel, a tqdm bar elsewhere."""

    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.t0 = max(int(total), 1), desc, time.perf_counter()
        self._handle = self._bar = None
        try:
            from IPython import get_ipython

            kernel = getattr(get_ipython(), "kernel", None) is not None
        except ImportError:  # pragma: no cover - IPython is installed with the notebooks
            kernel = False
        if kernel:
            from IPython.display import display

            self._handle = display({"text/plain": self._text(0, "")}, raw=True, display_id=True)
        else:
            import sys

            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=desc, file=sys.stderr, leave=True, dynamic_ncols=True)

    def _text(self, step: int, extra: str) -> str:
        k = int(20 * min(step, self.total) / self.total)
        return (f"{self.desc} [{'#' * k}{'.' * (20 - k)}] {step}/{self.total} steps, "
                f"{time.perf_counter() - self.t0:.0f} s{(', ' + extra) if extra else ''}")

    def update(self, step: int, extra: str = "") -> None:
        if self._handle is not None:
            self._handle.update({"text/plain": self._text(step, extra)}, raw=True)
        elif self._bar is not None:
            self._bar.n = min(step, self.total)
            self._bar.set_postfix_str(extra, refresh=True)

    def close(self, summary: str) -> None:
        """End the run with ``summary`` (its one summary line): in a notebook the in-place line becomes the
        summary (one line per run in the executed notebook); elsewhere the bar is closed and it is printed."""
        if self._handle is not None:
            self._handle.update({"text/plain": summary}, raw=True)
            return
        if self._bar is not None:
            self._bar.close()
        print(summary, flush=True)


def run_log_callback(log_path: Path, progress: Progress | None, fields: Sequence[str] = ("loss", "reward")
                     ) -> Any:
    """A ``TrainerCallback`` writing every log dict as one JSON line to ``log_path`` and moving ``progress``."""
    from transformers import TrainerCallback

    class _RunLog(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            logs = dict(logs or {})
            with open(log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"step": state.global_step, **logs}, default=str) + "\n")
            if progress is not None:
                extra = ", ".join(f"{k} {logs[k]:.3g}" for k in fields if isinstance(logs.get(k), (int, float)))
                progress.update(state.global_step, extra)

        def on_step_end(self, args, state, control, **kw):
            if progress is not None and not state.log_history:
                progress.update(state.global_step)

    return _RunLog()


@contextmanager
def logs_to(log_path: str | Path) -> Iterator[None]:
    """Send library warnings, ``transformers`` / ``trl`` / ``datasets`` log records and their progress bars
    to ``log_path`` (appended) while the block runs; everything is restored afterwards.

    Example: ``with logs_to(run / "train.log"): trainer.train()``.
    """
    import logging
    import warnings

    import datasets
    from transformers.utils import logging as hf_logging

    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(log_path, "a", encoding="utf-8")
    handler = logging.StreamHandler(fh)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    saved = []
    for name in ("transformers", "trl", "datasets", "accelerate", "peft"):
        lg = logging.getLogger(name)
        saved.append((lg, list(lg.handlers), lg.propagate))
        lg.handlers = [handler]
        lg.propagate = False
    hf_bar = hf_logging.is_progress_bar_enabled()
    ds_bar = datasets.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    datasets.disable_progress_bars()
    with warnings.catch_warnings():
        warnings.showwarning = lambda msg, cat, fname, lineno, file=None, line=None: fh.write(
            warnings.formatwarning(msg, cat, fname, lineno, line))
        try:
            yield log_path
        finally:
            for lg, handlers, prop in saved:
                lg.handlers, lg.propagate = handlers, prop
            if hf_bar:
                hf_logging.enable_progress_bar()
            if ds_bar:
                datasets.enable_progress_bars()
            fh.close()


def log_name() -> str:
    """This process's log file: ``train.log`` on rank 0, ``train.rank<r>.log`` on rank ``r`` > 0."""
    return "train.log" if is_main() else f"train.rank{rank()}.log"


def _vocab_digest(processing_class: Any) -> str | None:
    """sha256 of the tokenizer's sorted vocabulary (``None`` without a tokenizer that lists it)."""
    import hashlib

    tok = getattr(processing_class, "tokenizer", processing_class)
    if not hasattr(tok, "get_vocab"):
        return None
    vocab = sorted(tok.get_vocab().items())
    return hashlib.sha256(json.dumps(vocab).encode()).hexdigest()


def _record_batches(train_dataloader: Any, batches: list[list], id_column: str) -> None:
    """Wrap the collate function of the (accelerate-prepared) ``train_dataloader`` so that each batch it collates
    is appended to ``batches`` as its rows' ``id_column`` values; once (an already wrapped one is left as is)."""
    # accelerate's DataLoaderShard wraps the torch DataLoader that collates (``base_dataloader``)
    loader = getattr(train_dataloader, "base_dataloader", train_dataloader)
    collate = getattr(loader, "collate_fn", None)
    if collate is None or getattr(collate, "_sdr_recording", False):
        return

    def recording(features):
        batches.append([f.get(id_column) if isinstance(f, dict) else None for f in features])
        return collate(features)

    recording._sdr_recording = True
    loader.collate_fn = recording


def _rank_record(args: Any, state: Any, batches: list[list], start_step: int, vocab_digest: str | None,
                 extra: dict) -> dict[str, Any]:
    """The ``rank<r>.json`` record of :func:`rank_record_callback` as of ``state``."""
    import torch

    ga = int(getattr(args, "gradient_accumulation_steps", 1) or 1)
    steps_done = int(getattr(state, "global_step", 0) or 0)
    first = min(start_step, steps_done)  # a resumed run records the steps it trained itself
    used = (steps_done - first) * ga
    return {
        "rank": rank(),
        "world_size": world_size(),
        "optimizer_steps": steps_done,
        "resumed_at_step": start_step,
        "gradient_accumulation_steps": ga,
        "per_device_train_batch_size": getattr(args, "per_device_train_batch_size", None),
        "steps": [{"step": first + k + 1, "batches": batches[k * ga:(k + 1) * ga]}
                  for k in range(steps_done - first)],
        "unused_batches": max(0, len(batches) - used),
        "vocab_digest": vocab_digest,
        "torch_threads": torch.get_num_threads(),
        **extra,
    }


def rank_record_callback(out: Path, id_column: str = "study_id") -> Any:
    """A ``TrainerCallback`` writing ``out/rank<r>.json``: what this process trained on.

    At the start of training it wraps the collate function of the Trainer's (accelerate-prepared) train
    dataloader, so every batch the dataloader gives this rank is recorded as the ``id_column`` values of
    its rows, before collation. With every checkpoint and at the end of training it writes ``rank``,
    ``world_size``, ``optimizer_steps``, ``gradient_accumulation_steps``, ``per_device_train_batch_size``,
    ``steps`` (for step ``k``: the ``grad_accum`` batches the Trainer drew for it, each a list of ids; the
    Trainer draws ``grad_accum`` batches per optimizer step, for GRPO too, whose generation batch is
    repeated ``steps_per_generation`` times by TRL's sampler), ``unused_batches`` (drawn, not trained on:
    accelerate fetches one batch ahead), ``vocab_digest`` (sha256 of the tokenizer's vocabulary: every
    rank must build the same one) and ``torch_threads``; :func:`train_and_save` adds ``wrote_final`` and
    ``seconds``. Example: ``trainer.add_callback(rank_record_callback(run_dir))``.
    """
    from transformers import TrainerCallback

    class _RankRecord(TrainerCallback):
        def __init__(self) -> None:
            self.batches: list[list] = []
            self.extra: dict = {}
            self.vocab_digest: str | None = None
            self._args = self._state = None
            self.start_step = 0

        def on_train_begin(self, args, state, control, train_dataloader=None, processing_class=None, **kw):
            self._args, self._state = args, state
            self.start_step = int(state.global_step or 0)  # > 0 when resumed from a checkpoint
            digest = _vocab_digest(processing_class)
            if digest is not None:
                self.vocab_digest = digest
            _record_batches(train_dataloader, self.batches, id_column)

        def on_step_end(self, args, state, control, **kw):
            self._args, self._state = args, state

        def on_save(self, args, state, control, **kw):  # with each checkpoint: not every step (the file grows)
            self._args, self._state = args, state
            self.write()

        def on_train_end(self, args, state, control, **kw):
            self._args, self._state = args, state
            self.write()

        def write(self, **extra) -> Path:
            self.extra.update(extra)
            rec = _rank_record(self._args, self._state, self.batches, self.start_step, self.vocab_digest, self.extra)
            path = out / f"rank{rank()}.json"
            atomic_write_json(path, rec, sort_keys=False)
            return path

    return _RankRecord()


def trainer_logs_to(trainer, log_path: Path, progress: Progress | None) -> None:
    """Drop TRL's printer / progress callbacks (per-step dicts on stdout) and log to ``log_path`` instead."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(run_log_callback(log_path, progress))


def read_curves(path: str | Path) -> Any:
    """The ``curves.csv`` of a run folder (or the file itself) as a DataFrame."""
    import pandas as pd

    p = Path(path)
    p = p / "curves.csv" if p.is_dir() else p
    if not p.is_file():
        raise FileNotFoundError(f"no training curves at {p}: run training first")
    return pd.read_csv(p)


def write_curves(log_history: list[dict], path: Path) -> Path:
    """``curves.csv`` from the trainer's log history: one row per step (entries of one step merged)."""
    import pandas as pd

    rows = [h for h in log_history if "step" in h and "train_runtime" not in h]
    df = pd.DataFrame(rows)
    if "step" in df:
        df = df.groupby("step", as_index=False).last()  # merge entries logged at the same step
    atomic_write_text(path, df.to_csv(index=False))
    return path


def finish(trainer, processor, out: Path, curves_extra: list[dict] | None = None) -> tuple[Path, Path]:
    """Save the final policy (``out/final``) and the curves; returns ``(final, curves)``.

    Several processes: rank 0 alone writes them (``trainer.save_model`` runs on every rank, as
    DeepSpeed / FSDP need, and writes on rank 0 only), and every rank returns once they are written.
    """
    final = out / "final"
    if has_tiny_config(trainer.model) and not hasattr(trainer.model, "peft_config"):
        if is_main():
            models.save_policy(trainer.model, processor, final)
    else:  # GPU / LoRA: the trainer saves adapters + processor
        trainer.save_model(str(final))
        if is_main():
            processor.save_pretrained(str(final))
    curves = out / "curves.csv"
    if is_main():
        write_curves(trainer.state.log_history + (curves_extra or []), curves)
    barrier()
    return final, curves


def train_and_save(trainer, processor, out: Path, timer, progress) -> tuple[str | None, float, Path, Path]:
    """Quiet the trainer, resume from this run's last checkpoint, train, save: ``(resume, seconds, final, curves)``.

    Every rank also writes ``rank<r>.json`` (:func:`rank_record_callback`), ending with ``wrote_final``
    (whether this process wrote ``final/``: rank 0 only) and ``seconds`` (its training time).
    """
    trainer_logs_to(trainer, out / log_name(), progress)
    record = rank_record_callback(out)
    trainer.add_callback(record)
    resume = last_checkpoint(out)  # only this run's own checkpoints are left in out (see sdrlib.training.runkeys.claim)
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - t0
    final, curves = finish(trainer, processor, out, timer.rows)
    record.write(wrote_final=is_main(), seconds=seconds, resumed_from=resume)
    return resume, seconds, final, curves


def last_checkpoint(out: Path) -> str | None:
    """The newest ``checkpoint-*`` folder in ``out`` (``None``: none, or no folder)."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(out)) if out.is_dir() else None


