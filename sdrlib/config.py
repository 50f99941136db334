"""Typed run profiles (``configs/{smoke,cpu,paper}.yaml``) with strict validation.

A profile is a YAML file of sections; each section maps onto a frozen dataclass
below. Loading rejects unknown keys and wrong types with an error that names the
key, because papermill only *warns* about unknown parameters.

A profile may start with ``extends: <other profile>``; its sections are then
merged key by key over the other profile.

Output paths (``paths.*``) are relative to the *output root*: ``$SDR_ROOT`` when
set, else the repository root. ``run_all.sh --out DIR`` sets ``SDR_ROOT`` so a
run (or the smoke test) never writes into the checkout.

Example::

    cfg = load_profile("smoke", {"data.n_train": 8})
    cfg.data.n_train  # -> 8
"""

from __future__ import annotations

from sdrlib.errors import SDRError

import dataclasses
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["ConfigError", "Profile", "load_profile", "repo_root", "output_root", "profile_names"]


class ConfigError(SDRError, ValueError):
    """A profile file or override is malformed (unknown key, wrong type, missing file)."""


# --------------------------------------------------------------------------- sections
@dataclass(frozen=True)
class PathsConfig:
    data: str = field(default="data", metadata={"help": "datasets (generated or the user's)"})
    results: str = field(default="results", metadata={"help": "tables written by notebooks"})
    figures: str = field(default="figures", metadata={"help": "figures written by notebooks"})
    cache: str = field(default=".cache/sdr", metadata={"help": "sentence-embedding cache, banks"})
    runs: str = field(default="runs", metadata={"help": "checkpoints, executed notebooks, logs"})


@dataclass(frozen=True)
class DataConfig:
    source: str = field(default="synthetic", metadata={"help": "synthetic | mimic | rexgradient | iuxray"})
    root: str = field(default="", metadata={"help": "folder of a real dataset download (not for synthetic)"})
    n_train: int = field(default=2000, metadata={"help": "synthetic studies in the train split"})
    n_val: int = field(default=200, metadata={"help": "synthetic studies in the validation split"})
    n_test: int = field(default=200, metadata={"help": "synthetic studies in the test split"})
    image_size: int = field(default=96, metadata={"help": "side of the square grayscale image, pixels"})


@dataclass(frozen=True)
class EmbeddingConfig:
    encoder: str = field(default="all-mpnet-base-v2", metadata={"help": "encoder name or local path"})
    batch_size: int = field(default=64, metadata={"help": "sentences per encoder forward pass"})
    bank_size: int = field(default=5000, metadata={"help": "training reports in the selection bank (0 = all)"})
    threads: int = field(default=0, metadata={
        "help": "torch CPU threads for encoder passes (0 = torch's default); GRPO rewards use them between steps"})
    device: str = field(default="cpu", metadata={"help": "cpu | cuda | auto (cuda when torch sees a GPU)"})


@dataclass(frozen=True)
class DistancesConfig:
    names: list[str] = field(default_factory=lambda: ["chamfer", "hausdorff"],
                             metadata={"help": "registered distance settings to evaluate"})
    device: str = field(default="cpu", metadata={"help": "cpu | cuda | auto for the batched engine"})


@dataclass(frozen=True)
class MetricsConfig:
    bertscore: bool = field(default=True, metadata={"help": "compute BERTScore"})
    bootstrap: int = field(default=1000, metadata={"help": "paired bootstrap resamples"})
    bertscore_model: str = field(default="auto", metadata={
        "help": "BERTScore backbone: auto (roberta-large if cached, else all-mpnet-base-v2, else "
                "all-MiniLM-L6-v2), a known encoder name or a local folder"})
    bertscore_batch_size: int = field(default=64, metadata={"help": "pairs per BERTScore forward pass"})
    clinical_backend: str = field(default="auto", metadata={
        "help": "clinical label F1 backend: auto (official CheXbert if local, else labeler) | chexbert | labeler"})
    wordnet_dir: str = field(default="auto", metadata={
        "help": "WordNet 3.0 dict folder for METEOR (auto: $SDR_WORDNET_DIR, /usr/share/wordnet, nltk_data)"})
    comet_model: str = field(default="", metadata={
        "help": "COMET checkpoint path or Hub id already in the HF cache; empty = COMET off"})
    device: str = field(default="cpu", metadata={"help": "cpu | cuda | auto for BERTScore / COMET"})


@dataclass(frozen=True)
class SFTConfig:
    max_steps: int = field(default=200, metadata={"help": "optimizer steps of supervised fine-tuning"})
    learning_rate: float = field(default=1.0e-4, metadata={"help": "AdamW learning rate"})
    batch_size: int = field(default=8, metadata={"help": "per-device batch size"})
    policy: str = field(default="tiny", metadata={
        "help": "tiny (Qwen3-VL built from config, CPU) | qwen3-vl-2b | qwen3-vl-4b | gemma3-4b | local folder (GPU)"})
    grad_accum: int = field(default=1, metadata={"help": "gradient accumulation steps (effective batch = batch_size x this x GPUs)"})
    lr_scheduler: str = field(default="cosine", metadata={"help": "transformers scheduler name"})
    warmup_ratio: float = field(default=0.05, metadata={"help": "fraction of steps with linear warm-up"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    save_steps: int = field(default=100, metadata={"help": "checkpoint every N steps (resume point)"})
    max_images: int = field(default=1, metadata={"help": "images per study given to the policy"})
    max_new_tokens: int = field(default=160, metadata={"help": "generation length at evaluation"})
    eval_batch_size: int = field(default=32, metadata={"help": "studies per generation batch at evaluation"})
    eval_do_sample: bool = field(default=True, metadata={"help": "sample at evaluation (False: greedy)"})
    eval_temperature: float = field(default=0.7, metadata={"help": "sampling temperature at evaluation"})
    threads: int = field(default=1, metadata={"help": "torch CPU threads for the tiny policy"})
    vocab_size: int = field(default=1024, metadata={"help": "tiny policy: byte-level BPE vocabulary size"})
    tiny_hidden_size: int = field(default=128, metadata={"help": "tiny policy: text hidden size"})
    tiny_layers: int = field(default=4, metadata={"help": "tiny policy: decoder layers"})
    tiny_heads: int = field(default=4, metadata={"help": "tiny policy: attention heads"})
    tiny_kv_heads: int = field(default=2, metadata={"help": "tiny policy: key/value heads"})
    tiny_head_dim: int = field(default=32, metadata={"help": "tiny policy: head dimension"})
    tiny_intermediate_size: int = field(default=384, metadata={"help": "tiny policy: MLP width"})
    tiny_vision_hidden_size: int = field(default=96, metadata={"help": "tiny policy: vision tower width"})
    tiny_vision_layers: int = field(default=2, metadata={"help": "tiny policy: vision tower depth"})
    tiny_vision_heads: int = field(default=4, metadata={"help": "tiny policy: vision heads"})
    tiny_vision_intermediate_size: int = field(default=256, metadata={"help": "tiny policy: vision MLP width"})
    tiny_patch_size: int = field(default=16, metadata={"help": "tiny policy: vision patch size (pixels)"})
    tiny_merge_size: int = field(default=2, metadata={
        "help": "tiny policy: patches merged per side into one image token ((image/patch/merge)^2 tokens)"})
    tiny_image_size: int = field(default=96, metadata={"help": "tiny policy: images resized to at most this side"})
    lora_r: int = field(default=16, metadata={"help": "GPU policy: LoRA rank"})
    lora_alpha: int = field(default=16, metadata={"help": "GPU policy: LoRA alpha"})


@dataclass(frozen=True)
class GRPOConfig:
    rewards: list[str] = field(default_factory=lambda: ["fmt", "exact", "chamfer", "hausdorff"],
                               metadata={"help": "reward configurations run after SFT"})
    max_steps: int = field(default=50, metadata={"help": "GRPO optimizer steps"})
    learning_rate: float = field(default=2.0e-5, metadata={"help": "AdamW learning rate"})
    num_generations: int = field(default=8, metadata={"help": "group size G"})
    seeds: int = field(default=3, metadata={"help": "seeds per configuration"})
    batch_size: int = field(default=16, metadata={"help": "completions per device per step (multiple of G)"})
    grad_accum: int = field(default=1, metadata={"help": "gradient accumulation steps"})
    max_completion_length: int = field(default=128, metadata={"help": "max generated tokens per completion"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of the rollouts"})
    beta: float = field(default=0.04, metadata={"help": "KL coefficient (0 = no reference model, no KL curve)"})
    epsilon: float = field(default=0.2, metadata={"help": "PPO clip range"})
    loss_type: str = field(default="grpo", metadata={"help": "TRL loss: grpo | dr_grpo | dapo | bnpo ..."})
    scale_rewards: str = field(default="group", metadata={"help": "group | batch | none (Dr. GRPO: none)"})
    lambda_fmt: float = field(default=1.0, metadata={"help": "weight of R_fmt"})
    lambda_sem: float = field(default=1.0, metadata={"help": "weight of R_sem / R_exact"})
    max_chars: int = field(default=4000, metadata={"help": "completions longer than this score 0"})
    save_steps: int = field(default=25, metadata={"help": "checkpoint every N steps (resume point)"})
    use_vllm: bool = field(default=False, metadata={"help": "generate rollouts with vLLM (GPU only)"})
    eval_n: int = field(default=0, metadata={"help": "test studies scored per configuration and seed (0 = all)"})


@dataclass(frozen=True)
class Profile:
    """A validated run profile. Use :func:`load_profile` to build one."""

    name: str
    seed: int = 0
    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig = field(default_factory=DataConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    distances: DistancesConfig = field(default_factory=DistancesConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)

    # -- resolved paths -------------------------------------------------------
    def path(self, key: str) -> Path:
        """Absolute path of ``paths.<key>`` under the output root (created on demand by writers)."""
        rel = getattr(self.paths, key)
        p = Path(rel)
        return p if p.is_absolute() else output_root() / p

    @property
    def data_dir(self) -> Path:
        return self.path("data")

    @property
    def results_dir(self) -> Path:
        return self.path("results")

    @property
    def figures_dir(self) -> Path:
        return self.path("figures")

    @property
    def cache_dir(self) -> Path:
        return self.path("cache")

    @property
    def runs_dir(self) -> Path:
        return self.path("runs")

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (for provenance records)."""
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------- roots
def repo_root() -> Path:
    """The checkout holding ``configs/`` (the parent of the ``sdrlib`` package)."""
    return Path(__file__).resolve().parent.parent


def output_root() -> Path:
    """Where outputs go: ``$SDR_ROOT`` if set, else the repository root."""
    env = os.environ.get("SDR_ROOT")
    return Path(env).resolve() if env else repo_root()


def profile_names() -> list[str]:
    """Names of the profiles shipped in ``configs/``."""
    return sorted(p.stem for p in (repo_root() / "configs").glob("*.yaml"))


# --------------------------------------------------------------------------- validation
def _check_type(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r} ({type(value).__name__}); "
                              "note that YAML reads 1e-5 as a string, write 1.0e-5")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r} ({type(value).__name__})")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true/false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r} ({type(value).__name__})")
        return value
    if origin is list:
        (inner,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [_check_type(v, inner, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _check_type(value, a, where)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError("; ".join(errors))
    raise ConfigError(f"{where}: unsupported field type {tp!r}")  # pragma: no cover


def _build(cls: type, values: dict[str, Any], where: str) -> Any:
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: expected a mapping, got {values!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(names)}")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        tp = hints[f.name]
        v = values[f.name]
        if dataclasses.is_dataclass(tp):
            kwargs[f.name] = _build(tp, v, f"{where}.{f.name}")
        else:
            kwargs[f.name] = _check_type(v, tp, f"{where}.{f.name}")
    return cls(**kwargs)


def _deep_merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _read_profile_yaml(name_or_path: str, seen: tuple[str, ...] = ()) -> dict:
    p = Path(name_or_path)
    if p.suffix not in (".yaml", ".yml"):
        p = repo_root() / "configs" / f"{name_or_path}.yaml"
    if not p.exists():
        raise ConfigError(f"profile {name_or_path!r} not found (looked for {p}); "
                          f"shipped profiles: {profile_names()}")
    if str(p) in seen:
        raise ConfigError(f"profile {p} extends itself (cycle {seen})")
    raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: top level must be a mapping")
    parent = raw.pop("extends", None)
    raw.setdefault("name", p.stem)
    if parent is not None:
        base = _read_profile_yaml(str(parent), seen + (str(p),))
        base.pop("name", None)
        raw = _deep_merge(base, raw)
    return raw


def _apply_overrides(raw: dict, overrides: dict[str, Any]) -> dict:
    raw = _deep_merge(raw, {})
    for dotted, value in overrides.items():
        keys = dotted.split(".")
        node = raw
        for k in keys[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {dotted!r}: {k!r} is not a section")
        node[keys[-1]] = value
    return raw


def load_profile(name_or_path: str = "cpu", overrides: dict[str, Any] | None = None) -> Profile:
    """Load, merge and validate a profile.

    Parameters
    ----------
    name_or_path : str
        A profile name from ``configs/`` (``smoke``, ``cpu``, ``paper``) or a path to a YAML file.
    overrides : dict, optional
        Dotted keys to values, e.g. ``{"data.n_train": 8, "seed": 1}``; validated like the file.

    Raises
    ------
    ConfigError
        Unknown key, wrong type, missing file or a cyclic ``extends``.
    """
    raw = _read_profile_yaml(name_or_path)
    if overrides:
        raw = _apply_overrides(raw, overrides)
    return _build(Profile, raw, where=f"profile {raw.get('name', name_or_path)!r}")
