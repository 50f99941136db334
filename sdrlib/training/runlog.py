"""What a training run shows and writes: one progress line, a quiet log, step times, curves, the saved policy.

Notebook output: each run shows one progress line (:class:`Progress`: updated in place in a notebook, a
tqdm bar in a terminal) ending in a summary; TRL's per-step dicts, library warnings and progress bars go
to the run's ``train.log`` instead (:func:`quiet`, :func:`quiet_trainer`). Every run's folder holds
``curves.csv`` (:func:`read_curves`: loss, reward components, KL, completion length, per-step wall time
from :class:`StepTimer`), ``run.json`` and the final policy (``final/``, :func:`finish`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sdrlib import models
from sdrlib.io import atomic_write_text
from sdrlib.training.policy import has_tiny_config

__all__ = ["SFTResult", "GRPOResult", "StepTimer", "Progress", "quiet", "quiet_trainer", "read_curves",
           "write_curves", "finish", "train_and_save", "last_checkpoint", "write_json", "run_log_callback"]


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
        """Leave the bar at its final state and print ``summary`` (the run's one summary line) to stdout."""
        if self._handle is not None:
            self._handle.update({"text/plain": self._text(self.total, "done")}, raw=True)
        elif self._bar is not None:
            self._bar.close()
        print(summary, flush=True)


def run_log_callback(log_path: Path, progress: Progress | None, fields: Sequence[str] = ("loss", "reward")):
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
def quiet(log_path: str | Path):
    """Send library warnings, ``transformers`` / ``trl`` / ``datasets`` log records and their progress bars
    to ``log_path`` (appended) while the block runs; everything is restored afterwards.

    Example: ``with quiet(run / "train.log"): trainer.train()``.
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


def quiet_trainer(trainer, log_path: Path, progress: Progress | None) -> None:
    """Drop TRL's printer / progress callbacks (per-step dicts on stdout) and log to ``log_path`` instead."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(run_log_callback(log_path, progress))


def read_curves(path: str | Path):
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
    """Save the final policy (``out/final``) and the curves; returns ``(final, curves)``."""
    final = out / "final"
    if has_tiny_config(trainer.model) and not hasattr(trainer.model, "peft_config"):
        models.save_policy(trainer.model, processor, final)
    else:  # GPU / LoRA: the trainer saves adapters + processor
        trainer.save_model(str(final))
        processor.save_pretrained(str(final))
    curves = write_curves(trainer.state.log_history + (curves_extra or []), out / "curves.csv")
    return final, curves


def train_and_save(trainer, processor, out: Path, timer, progress) -> tuple[str | None, float, Path, Path]:
    """Quiet the trainer, resume from this run's last checkpoint, train, save: ``(resume, seconds, final, curves)``."""
    quiet_trainer(trainer, out / "train.log", progress)
    resume = last_checkpoint(out)  # only this run's own checkpoints are left in out (see sdrlib.training.runkeys.claim)
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - t0
    final, curves = finish(trainer, processor, out, timer.rows)
    return resume, seconds, final, curves


def last_checkpoint(out: Path) -> str | None:
    """The newest ``checkpoint-*`` folder in ``out`` (``None``: none, or no folder)."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(out)) if out.is_dir() else None


def write_json(path: Path, obj: dict) -> None:
    """``obj`` as indented JSON at ``path``, written atomically."""
    atomic_write_text(path, json.dumps(obj, indent=2, default=str))
