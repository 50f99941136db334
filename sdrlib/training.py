"""SFT then GRPO through TRL (paper sec. 4, appendix C.2-C.3).

- :func:`sft` trains a policy with TRL's ``SFTTrainer`` on prompt-completion
  pairs (the image + instruction as prompt, the templated report as
  completion), so the loss covers the assistant report only.
- :func:`grpo` post-trains an SFT policy with TRL's ``GRPOTrainer`` for one
  reward configuration: ``"fmt"``, ``"exact"`` or any registered distance
  (``"chamfer"``, ``"hausdorff"``, ...); ``"sft"`` means no GRPO.
  Loss type, reward scaling and the KL coefficient come from the profile, so
  Dr. GRPO is ``loss_type: dr_grpo`` + ``scale_rewards: none``.
  The related methods (EditGRPO, G-CARL): ``"gcarl"`` (G-CARL-style R_fact + R_check,
  :mod:`sdrlib.gcarl`, weights ``grpo.gcarl_lambda_*``, claims matched against the
  reference and the training sentences) and the EditGRPO names (``"editgrpo"``,
  ``"editgrpo_para"``, ``"editgrpo_tau<t>"``, ``"editgrpo_ops<k>"``, ``"editgrpo_opsall"``,
  ``"editgrpo_noedit"``), which train with :class:`sdrlib.editgrpo.EditGRPOTrainer` (half of
  each group edited against the reference, ``grpo.edit_ops`` operations per section) under
  Dr. GRPO whatever the profile's loss, at ``grpo.edit_learning_rate`` when the profile sets
  one and with AdamW weight decay ``grpo.edit_weight_decay`` (every other GRPO run: 0); their per-step edit counts (``edits/*``) go into ``curves.csv`` and their totals into
  ``run.json``.

Notebook output: each run shows one progress line (updated in place in a notebook,
a tqdm bar in a terminal) ending in a summary; TRL's per-step dicts, library warnings
and progress bars go to the run's ``train.log`` instead.

Every run lives in its own folder (:func:`run_dir`): Trainer checkpoints
(``checkpoint-*``), the final policy (``final/``), training curves
(``curves.csv``: loss, reward components, KL, completion length, per-step wall
time) and ``run.json`` (what produced it, timings, bad-completion counts).
A run whose ``final/`` exists is reused and an interrupted run resumes from its
last checkpoint, but only when its ``run_key.json`` (:func:`run_key`: the
training-relevant profile values, seed, a digest of the training records and
images, of the initial policy for GRPO, of the sdrlib training code, and the
torch / transformers / TRL / tokenizers versions) equals the current one; a
folder from another corpus, profile, code or library version is cleared and
retrained with a warning that names what differs.

Gradient checkpointing (``sft.gradient_checkpointing`` /
``grpo.gradient_checkpointing``) is passed to TRL, whose configs default it to
True. The tiny CPU policy gains no memory worth having from it and pays for it
in recomputed activations; the profile sets it per policy (cpu: False, paper's
Unsloth LoRA models: True).

GRPO group statistics: every fresh batch also logs, per group of
``num_generations`` completions of one prompt, the share of groups in which no
completion matches the reference exactly (``reward_groups/exact_all_zero``,
computed for every reward configuration: the sparsity R_exact faces) and the
mean within-group sample std of the total reward and of its content component
(``reward_groups/total_std``, ``reward_groups/content_std``): the spread the
group-relative advantage is built from.

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
from contextlib import contextmanager
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
    "run_key",
    "policy_digest",
    "group_stats",
    "quiet",
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
        # The profile's thread count, as in sft(): generating with torch's default (the machine's
        # core count) instead gives other sums, hence other samples, than the training process.
        models.set_cpu_threads(cfg.sft.threads)
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


class _Progress:
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


def _run_log_callback(log_path: Path, progress: _Progress | None, fields: Sequence[str] = ("loss", "reward")):
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


def _quiet_trainer(trainer, log_path: Path, progress: _Progress | None) -> None:
    """Drop TRL's printer / progress callbacks (per-step dicts on stdout) and log to ``log_path`` instead."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(_run_log_callback(log_path, progress))


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


def _train(trainer, processor, out: Path, timer, progress) -> tuple[str | None, float, Path, Path]:
    """Quiet the trainer, resume from this run's last checkpoint, train, save: ``(resume, seconds, final, curves)``."""
    _quiet_trainer(trainer, out / "train.log", progress)
    resume = _last_checkpoint(out)  # only this run's own checkpoints are left in out (see _claim)
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - t0
    final, curves = _finish(trainer, processor, out, timer.rows)
    return resume, seconds, final, curves


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


# --------------------------------------------------------------------------- run keys

#: Profile keys that do not change what training produces (evaluation, checkpoint cadence, which
#: configurations/seeds a notebook runs); everything else in ``cfg.sft`` / ``cfg.grpo`` is in the key.
_SFT_KEY_SKIP = ("save_steps", "max_new_tokens", "eval_batch_size", "eval_do_sample", "eval_temperature")
#: ``grpo.max_steps`` is left out on purpose: the learning rate is constant, so a run extended to more
#: steps continues from its last checkpoint (``grpo(..., max_steps=k)`` then the profile's steps).
_GRPO_KEY_SKIP = ("rewards", "seeds", "eval_n", "save_steps", "max_steps", "ablations", "ablation_seeds")
#: sdrlib sources whose code decides what a run produces (model, tokenizer, datasets, rewards).
_KEY_SOURCES = {"sft": ("training.py", "models.py", "reports.py", "generation.py"),
                "grpo": ("training.py", "models.py", "reports.py", "generation.py", "rewards.py", "editgrpo.py",
                         "gcarl.py", "distances/engine.py", "distances/_kernels.py", "distances/negation.py")}
#: GRPO profile keys that only concern one method: in a run's key only for that method's configurations.
_METHOD_KEYS = {"editgrpo": ("edit_tau", "edit_level", "edit_ops", "edit_learning_rate", "edit_weight_decay"),
                "gcarl": ("gcarl_lambda_fmt", "gcarl_lambda_fact", "gcarl_lambda_check", "gcarl_threshold",
                          "gcarl_pitfalls")}


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _records_digest(records: Sequence[Any]) -> str:
    """sha256 over each record's id, report sections and image files (name and size, not the folder)."""
    import hashlib

    h = hashlib.sha256()
    for r in records:
        images = []
        for p in getattr(r, "image_paths", None) or []:
            q = Path(p)
            images.append([q.name, q.stat().st_size if q.is_file() else -1])
        h.update(json.dumps([r.study_id, r.findings, r.impression, images]).encode())
    return h.hexdigest()


def policy_digest(path: str | Path) -> str:
    """sha256 over the files of a saved policy folder (names and bytes, sorted): its identity.

    A retrained policy in the same folder gets a new digest, so caches keyed by it
    (GRPO runs started from it, test generations) are recomputed.
    """
    import hashlib

    folder = Path(path)
    h = hashlib.sha256()
    for f in sorted(q for q in folder.rglob("*") if q.is_file()):
        h.update(str(f.relative_to(folder)).encode() + b"\0")
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("torch", "transformers", "trl", "tokenizers"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:  # pragma: no cover - all are dependencies
            out[pkg] = "missing"
    return out


def run_key(cfg, stage: str, records: Sequence[Any], *, reward: str | None = None, seed: int = 0,
            init_from: str | Path | None = None) -> dict[str, Any]:
    """Everything that decides what an SFT or GRPO run produces, as a JSON-able dict.

    Keys: ``stage``, ``seed``, the profile section (``sft`` without evaluation keys; for GRPO
    ``grpo`` without ``rewards/seeds/eval_n/save_steps/max_steps`` plus the policy threads and
    images per study, and the sentence encoder for distance rewards), ``device`` (cpu/cuda),
    ``data`` (digest of the training records, :func:`_records_digest`), ``init`` (GRPO: the
    :func:`policy_digest` of the SFT policy), ``code`` (digest of the sdrlib sources that
    train) and ``versions`` (torch, transformers, trl, tokenizers). Two calls agree exactly
    when a finished run can stand in for a new one.
    """
    import dataclasses

    import torch

    if stage not in _KEY_SOURCES:
        raise ValueError(f"stage must be 'sft' or 'grpo', got {stage!r}")
    src = Path(__file__).resolve().parent
    code = _sha(b"".join((src / name).read_bytes() for name in _KEY_SOURCES[stage]))
    key: dict[str, Any] = {"stage": stage, "seed": seed,
                           "device": "cuda" if torch.cuda.is_available() else "cpu",
                           "data": _records_digest(records), "code": code, "versions": _versions()}
    if stage == "sft":
        key["sft"] = {k: v for k, v in dataclasses.asdict(cfg.sft).items() if k not in _SFT_KEY_SKIP}
    else:
        from sdrlib.rewards import method_of

        key["reward"] = reward
        other = {k for m, keys in _METHOD_KEYS.items() if m != method_of(reward) for k in keys}
        key["grpo"] = {k: v for k, v in dataclasses.asdict(cfg.grpo).items() if k not in _GRPO_KEY_SKIP + tuple(other)}
        key["policy"] = {"threads": cfg.sft.threads, "max_images": cfg.sft.max_images, "policy": cfg.sft.policy}
        if reward not in ("fmt", "exact"):
            key["encoder"] = cfg.embedding.encoder
        key["init"] = policy_digest(init_from) if init_from is not None else None
    return json.loads(json.dumps(key, default=str))  # the form it takes when read back from disk


def _key_diff(old: dict, new: dict) -> list[str]:
    """Top-level (and one level down) keys whose values differ, e.g. ``['data', 'sft.max_steps']``."""
    out = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{k}.{j}" for j in sorted(set(a) | set(b)) if a.get(j) != b.get(j)]
        else:
            out.append(k)
    return out


def _claim(out: Path, key: dict, force: bool) -> bool:
    """Make ``out`` a folder for the run ``key``; True when what it holds belongs to that run.

    A folder holding another run's files (a different key, or files without a key from an
    older version) is emptied with a warning naming what differs; ``force`` empties it
    silently. The key is written before training, so an interrupted run's checkpoints
    carry it too.
    """
    import shutil
    import warnings

    from sdrlib.io import atomic_write_text

    path = out / "run_key.json"
    old = None
    if path.is_file():
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            old = None
    same = old == key
    if out.is_dir() and any(out.iterdir()) and (force or not same):
        if not force:
            why = ", ".join(_key_diff(old, key)) if isinstance(old, dict) else "no run_key.json (older version)"
            warnings.warn(f"{out} holds a run of other settings ({why}); retraining it from scratch", stacklevel=3)
        shutil.rmtree(out)
        same = False
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(key, indent=1))
    return same


def _reusable(out: Path, key: dict) -> bool:
    """A finished policy in ``out`` whose run key equals ``key``."""
    path = out / "run_key.json"
    if not (_has_policy(out / "final") and path.is_file()):
        return False
    try:
        return json.loads(path.read_text()) == key
    except (OSError, ValueError):
        return False


# --------------------------------------------------------------------------- SFT


def sft(cfg, train_records: Sequence[Any] | None = None, *, seed: int | None = None, force: bool = False,
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
    if train_records is None:
        from sdrlib.data import load_split

        train_records = load_split(cfg, "train")
    key = run_key(cfg, "sft", train_records, seed=seed)
    if not force and _reusable(out, key):
        info = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
        return SFTResult(out, out / "final", out / "curves.csv", info.get("seconds", 0.0), True, info)
    _claim(out, key, force)
    progress = _Progress(cfg.sft.max_steps, f"SFT seed {seed}") if progress else None
    with quiet(out / "train.log"):
        s = cfg.sft
        set_seed(seed)
        if _is_tiny(cfg):
            models.set_cpu_threads(s.threads)
            texts, _ = report_texts(train_records)
            model, processor = models.build_tiny_policy(texts, _tiny_spec(cfg), vocab_size=s.vocab_size, seed=seed)
            if s.tiny_freeze_vision:
                models.freeze_vision_tower(model)
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
            gradient_checkpointing=s.gradient_checkpointing,  # TRL defaults to True (see the module doc)
            **_device_kwargs(),
        )
        timer = StepTimer()
        trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=processor, callbacks=[timer])
        resume, seconds, final, curves = _train(trainer, processor, out, timer, progress)
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
        }
        _write_json(out / "run.json", info)
    if progress is not None:
        curves_df = read_curves(curves)
        loss = curves_df["loss"].dropna() if "loss" in curves_df else []
        progress.close(f"SFT seed {seed}: {info['steps']} steps in {seconds:.0f} s"
                       + (f", loss {loss.iloc[0]:.3f} -> {loss.iloc[-1]:.3f}" if len(loss) else "")
                       + f" (details: {out / 'train.log'})")
    return SFTResult(out, final, curves, seconds, False, info)


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
    import numpy as np

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
    from sdrlib.rewards import check_completion, completion_text, exact_match_section

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
            exact = b.exact if scorer.reward == "exact" else _exact_scores(completions, findings, impression,
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
    cfg,
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
    progress : bool
        Show one progress line ending in a summary (module doc); the details go to ``train.log``.

    Returns
    -------
    GRPOResult
        Paths, wall time, reward time and bad-completion counts.
    """
    import torch
    from trl import GRPOConfig as TRLGRPOConfig
    from trl import GRPOTrainer

    from sdrlib import models
    from sdrlib.rewards import RewardScorer, method_of, trl_reward_functions, validate_reward_name
    from sdrlib.utils import set_seed

    validate_reward_name(reward)
    method = method_of(reward)
    if reward == "sft":
        raise ValueError("reward 'sft' means no GRPO: evaluate the SFT policy directly")
    preflight(cfg)
    if not _has_policy(Path(init_from)):
        raise FileNotFoundError(f"no SFT policy in {init_from}: run sft() (notebook 03) first")
    seed = cfg.seed if seed is None else seed
    g = cfg.grpo
    out = run_dir(cfg, "grpo", reward, seed)
    steps = g.max_steps if max_steps is None else max_steps
    if train_records is None:
        from sdrlib.data import load_split

        train_records = load_split(cfg, "train")
    key = run_key(cfg, "grpo", train_records, reward=reward, seed=seed, init_from=init_from)
    info = json.loads((out / "run.json").read_text()) if (out / "run.json").is_file() else {}
    if not force and _reusable(out, key) and info.get("steps", -1) >= steps:
        return GRPOResult(
            out, out / "final", out / "curves.csv", info.get("seconds", 0.0), info.get("step_seconds", 0.0),
            info.get("reward_seconds", 0.0), info.get("counts", {}), True, info,
        )
    _claim(out, key, force)
    progress = _Progress(steps, f"GRPO {reward} seed {seed}") if progress else None
    with quiet(out / "train.log"):
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
        if method == "gcarl":  # eq. 14 weights; claims may match the training sentences (the bank)
            from sdrlib.reports import split_sentences

            bank = [x for r in train_records for t in (r.findings, r.impression) for x in split_sentences(t)]
            scorer = RewardScorer(reward, scorer_embedder, g.gcarl_lambda_fmt, 1.0, g.max_chars,
                                  weights={"fact": g.gcarl_lambda_fact, "check": g.gcarl_lambda_check}, bank=bank,
                                  threshold=g.gcarl_threshold, pitfalls=tuple(g.gcarl_pitfalls))
        else:
            scorer = RewardScorer(reward, scorer_embedder, g.lambda_fmt, g.lambda_sem, g.max_chars)
        funcs, weights = trl_reward_functions(reward, scorer=scorer)
        loss_type, scale_rewards = g.loss_type, g.scale_rewards
        learning_rate, weight_decay = g.learning_rate, 0.0  # TRL's default weight decay
        trainer_cls, edit_kwargs = GRPOTrainer, {}
        if method == "editgrpo":  # the paper's Dr. GRPO, half of each group edited, its own learning rate
            from sdrlib import editgrpo

            level, tau, ops = editgrpo.parse_name(reward)
            loss_type, scale_rewards = editgrpo.LOSS
            learning_rate = g.edit_learning_rate or g.learning_rate
            weight_decay = g.edit_weight_decay
            trainer_cls = editgrpo.EditGRPOTrainer
            edit_kwargs = {"edit_embedder": scorer_embedder, "edit_level": level or g.edit_level,
                           "edit_tau": g.edit_tau if tau is None else tau,
                           "edit_ops": g.edit_ops if ops is None else ops, "edit_max_chars": g.max_chars}
        funcs = _with_group_stats(funcs, scorer, g.num_generations)
        ds = grpo_dataset(train_records, cfg.sft.max_images)
        args = TRLGRPOConfig(
            output_dir=str(out),
            max_steps=steps,
            per_device_train_batch_size=g.batch_size,
            gradient_accumulation_steps=g.grad_accum,
            num_generations=g.num_generations,
            max_completion_length=g.max_completion_length,
            temperature=g.temperature,
            learning_rate=learning_rate,
            weight_decay=weight_decay,
            lr_scheduler_type="constant",
            beta=g.beta,
            epsilon=g.epsilon,
            loss_type=loss_type,
            scale_rewards=scale_rewards,
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
            **_device_kwargs(),
        )
        timer = StepTimer()
        trainer = trainer_cls(
            model=model, reward_funcs=funcs, args=args, train_dataset=ds, processing_class=processor, callbacks=[timer],
            **edit_kwargs,
        )
        resume, seconds, final, curves = _train(trainer, processor, out, timer, progress)
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
            "reward_seconds_per_step": scorer.seconds / max(len(timer.times), 1),
            "counts": counts,
            "resumed_from": resume,
            "loss_type": loss_type,
            "scale_rewards": scale_rewards,
            "learning_rate": learning_rate,
            # what the optimizer ran with (HF's Trainer exempts biases and norms from decay)
            "weight_decay": max((pg["weight_decay"] for pg in trainer.optimizer.param_groups), default=0.0)
            if trainer.optimizer is not None else weight_decay,
            "reward_weights": weights,
            "beta": g.beta,
            "num_generations": g.num_generations,
            "encoder": getattr(scorer_embedder, "encoder_id", None),
            "torch_threads": torch.get_num_threads(),
            "gradient_checkpointing": g.gradient_checkpointing,
        }
        if method == "editgrpo":
            log = trainer.edit_log
            info.update({"edit_level": trainer.edit_level, "edit_tau": trainer.edit_tau, "edit_ops": trainer.edit_ops,
                         "edits": {k: sum(d[k] for d in log) for k in editgrpo.EDIT_COUNTS},
                         "edit_seconds": sum(d["seconds"] for d in log)})
        _write_json(out / "run.json", info)
    if progress is not None:
        c = read_curves(curves)
        r = c["reward"].dropna() if "reward" in c else []
        progress.close(f"GRPO {reward} seed {seed}: {info['steps']} steps in {seconds:.0f} s"
                       + (f", reward {r.head(4).mean():.3f} -> {r.tail(4).mean():.3f} (first / last 4 steps)"
                          if len(r) else "")
                       + f", reward {info['reward_seconds_per_step']:.2f} s/step ({info['reward_share']:.0%})"
                       + (f", edits {info['edits']}" if info.get("edits") else "")
                       + f" (details: {out / 'train.log'})")
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
