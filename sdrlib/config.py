"""Typed run profiles (``configs/{smoke,cpu,paper}.yaml``) with strict validation.

A profile is a YAML file of sections; each section maps onto a frozen dataclass
below. Loading rejects unknown keys, wrong types and values outside their allowed
range (field constraints in the dataclass metadata, plus a few rules between fields;
distance and reward names are asked of their registries), so a bad profile fails
before any notebook starts, not notebooks later (papermill only *warns* about
unknown parameters). The reward methods' settings are nested sections of ``grpo``
(``grpo.gcarl.*``, ``grpo.editgrpo.*``) built from the method registry (:mod:`sdrlib.rewards.spec`),
with the defaults and constraints each method writes once. Every refusal is a :class:`ConfigError` naming the key path,
the value and what is allowed; YAML syntax errors name the file and line, and a key
given twice in one mapping is an error.

A profile may start with ``extends: <other profile>``: a name from ``configs/``
(``extends: cpu``) or a ``.yaml`` path relative to the including file; its sections
are then merged key by key over the other profile. ``name`` (default: the file
stem) becomes a folder under ``paths.runs``, so it must be one safe path component.

Output paths (``paths.*``) are relative to the *output root*: ``$SDR_ROOT`` when
set, else the repository root. A leading ``~`` in any path value (``paths.*``,
``data.root``, encoder / backbone / checkpoint paths, ``$SDR_ROOT``, a profile path)
is the home folder, as in a shell. ``run_all.sh --out DIR`` sets ``SDR_ROOT`` so a
run (or the smoke test) never writes into the checkout.

Example::

    cfg = load_profile("smoke", {"data.n_train": 8})
    cfg.data.n_train  # -> 8
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sdrlib.data import get_dataset
from sdrlib.data.registry import data_sources
from sdrlib.distances import registry
from sdrlib.errors import SDRError
from sdrlib.numerics import KERNEL_PATHS
from sdrlib.paths import output_root, repo_root
from sdrlib.rewards import parse_reward, reward_names_help, settings_sections

__all__ = ["ConfigError", "Profile", "load_profile", "repo_root", "output_root", "profile_names"]


class ConfigError(SDRError, ValueError):
    """A profile file or override is malformed (unknown key, wrong type, value out of range, missing file)."""


# --------------------------------------------------------------------------- constraints
# Field constraints sit in ``dataclasses.field(metadata=...)`` next to the help text and are
# enforced by ``_build`` right after the type check, so a bad value fails when the profile is
# loaded (before any notebook starts), with its key path, value and allowed range:
#   "min" / "max"  inclusive bounds            "gt"        exclusive lower bound
#   "choices"      allowed values              "pattern"   regex the whole string must match
#                                              "pattern_help"  how the pattern reads in a message
#   "nonempty"     no "" or []                 "unique"    no repeated list items (compared by "key")
#   "key"          canonical key of an item for "unique": ``_reward_key`` / ``_distance_key`` (one
#                  reward or distance setting spelt twice, ``sinkhorn_0.1`` / ``sinkhorn_0.10``, repeats)
#   "each"         validator(item, where) for every list item (the distance / reward registries)
#   "finite"       floats must be finite (also inside lists) unless this is False
#   "path"         a file or folder (or a name): a leading ``~`` / ``~user`` is expanded
#                  (os.path.expanduser) when the profile loads; one that cannot be is refused
# Constraints that involve several fields are in ``_check_profile``.
CONSTRAINT_KEYS = frozenset({"min", "max", "gt", "choices", "pattern", "pattern_help", "nonempty", "unique",
                             "key", "each", "finite", "path"})

#: ``sft.lr_scheduler``: transformers ``SchedulerType`` values that need no ``lr_scheduler_kwargs``
LR_SCHEDULERS: tuple[str, ...] = ("linear", "cosine", "cosine_with_restarts", "polynomial", "constant",
                                  "constant_with_warmup", "inverse_sqrt")
#: ``grpo.loss_type``: TRL 1.16 losses usable with token-level importance sampling (the default)
GRPO_LOSS_TYPES: tuple[str, ...] = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo")
#: smallest tiny-policy vocabulary: 256 byte symbols + special and template tokens
#: (``sdrlib.models.train_tokenizer`` refuses less; kept equal by a test, importing models here costs seconds)
TINY_VOCAB_MIN = 267
#: a profile ``name`` becomes a folder under ``paths.runs``: one safe path component
NAME_PATTERN = r"(?!\.{1,2}$)[A-Za-z0-9_.-]{1,128}"
NAME_HELP = "1-128 of A-Z a-z 0-9 _ . - and not '.' or '..' (one path component)"
_DEVICE = {"pattern": r"cpu|auto|cuda(:[0-9]+)?", "pattern_help": "cpu, auto, cuda or cuda:<index>"}


def _distance_setting(name: str, where: str) -> None:
    """Refuse a distance name the registry's own parser refuses (names and ``family_value`` settings)."""
    try:
        registry.get(name)
    except KeyError:
        detail = ""
    except (ValueError, TypeError, SDRError) as exc:
        detail = f" ({exc})"
    else:
        return
    raise ConfigError(f"{where} = {_r(name)} is not a distance setting{detail}; allowed: "
                      f"{registry.available_distances()} or family_value (sinkhorn_<eps>, uot_<tau>, gw_<eps>, "
                      "hung_pen_<alpha>, partial_<rho>)")


def _recall_alpha(value: float, where: str) -> None:
    _reward_name(f"chamfer_recall_{value:g}", where)


def _recall_weight(value: float, where: str) -> None:
    _reward_name(f"chamfer_recall_1_bal{value:g}", where)


def _reward_name(name: str, where: str) -> None:
    """Refuse a reward configuration :func:`sdrlib.rewards.parse_reward` refuses (its message names the valid ones)."""
    try:
        parse_reward(name)
    except (KeyError, ValueError, TypeError) as exc:
        valid = reward_names_help()
        allowed = "" if valid in str(exc) else f"; allowed: {valid}"
        raise ConfigError(f"{where} = {_r(name)} is not a reward configuration: {exc}{allowed}") from None


def _prompt_weighted(name: str) -> bool:
    """Whether a (valid) reward name weights prompts (``chamfer_recall_<alpha>_bal<w>`` with w != 1)."""
    try:
        return parse_reward(name).opts.get("weight", 1.0) != 1.0
    except (KeyError, ValueError, TypeError):
        return False


def _distance_key(name: Any) -> Any:
    """The setting a distance name denotes (:func:`sdrlib.distances.registry.distance_key`); the name itself
    when the registry refuses it (``"each"`` then names the problem)."""
    try:
        return ("distance", registry.distance_key(name))
    except (KeyError, ValueError, TypeError):
        return name


def _reward_key(name: Any) -> Any:
    """The reward a configuration name denotes (:attr:`sdrlib.rewards.RewardSpec.key`; ``"sft"`` included);
    the name itself when the parser refuses it."""
    try:
        return ("reward", parse_reward(name).key)
    except (KeyError, ValueError, TypeError):
        return name


_UNIQUE_DISTANCES = {"unique": True, "key": _distance_key, "each": _distance_setting}
_UNIQUE_REWARDS = {"unique": True, "key": _reward_key, "each": _reward_name}


# --------------------------------------------------------------------------- sections
@dataclass(frozen=True)
class PathsConfig:
    data: str = field(default="data", metadata={"nonempty": True, "path": True,
        "help": "datasets (generated or the user's)"})
    results: str = field(default="results", metadata={"nonempty": True, "path": True,
        "help": "tables written by notebooks"})
    figures: str = field(default="figures", metadata={"nonempty": True, "path": True,
        "help": "figures written by notebooks"})
    cache: str = field(default=".cache/sdr", metadata={"nonempty": True, "path": True,
        "help": "sentence-embedding cache, banks"})
    runs: str = field(default="runs", metadata={"nonempty": True, "path": True,
        "help": "checkpoints, executed notebooks, logs"})


@dataclass(frozen=True)
class DataConfig:
    source: str = field(default="synthetic", metadata={"choices": data_sources,  # every registered dataset
        "help": "synthetic | mimic | rexgradient | iuxray"})
    root: str = field(default="", metadata={"path": True,
        "help": "folder of a real dataset download (not for synthetic)"})
    standin_n: int = field(default=0, metadata={"min": 0,
        "help": "real sources: when data.root does not exist, write a stand-in of this many SynthCXR studies there "
                "first, in the download's layout (sdrlib.data.standin); 0 = never (a missing root is an error)"})
    n_train: int = field(default=2000, metadata={"min": 1, "help": "synthetic studies in the train split"})
    n_val: int = field(default=200, metadata={"min": 1, "help": "synthetic studies in the validation split"})
    n_test: int = field(default=200, metadata={"min": 1, "help": "synthetic studies in the test split"})
    image_size: int = field(default=96, metadata={"min": 16, "help": "side of the square grayscale image, pixels"})


@dataclass(frozen=True)
class EmbeddingConfig:
    encoder: str = field(default="all-mpnet-base-v2", metadata={"nonempty": True, "path": True,
        "help": "encoder name or local path"})
    batch_size: int = field(default=64, metadata={"min": 1, "help": "sentences per encoder forward pass"})
    bank_size: int = field(default=5000, metadata={"min": 0,
        "help": "training reports in the selection bank, drawn at random with the profile's seed (0 = all)"})
    threads: int = field(default=0, metadata={"min": 0,
        "help": "torch CPU threads for encoder passes (0 = torch's default); GRPO rewards use them between steps"})
    device: str = field(default="cpu", metadata={**_DEVICE, "help": "cpu | cuda | auto (cuda when torch sees a GPU)"})


@dataclass(frozen=True)
class DistancesConfig:
    names: list[str] = field(default_factory=lambda: ["chamfer", "hausdorff"],
                             metadata={"nonempty": True, **_UNIQUE_DISTANCES,
                                       "help": "registered distance settings to evaluate"})
    device: str = field(default="cpu", metadata={**_DEVICE, "help": "cpu | cuda | auto for the batched engine"})


@dataclass(frozen=True)
class MetricsConfig:
    bertscore: bool = field(default=True, metadata={"help": "compute BERTScore"})
    bootstrap: int = field(default=1000, metadata={"min": 1, "help": "paired bootstrap resamples"})
    bertscore_model: str = field(default="auto", metadata={"path": True,
        "help": "BERTScore backbone: auto (roberta-large if cached, else all-mpnet-base-v2, else "
                "all-MiniLM-L6-v2), a known encoder name or a local folder"})
    bertscore_batch_size: int = field(default=64, metadata={"min": 1, "help": "pairs per BERTScore forward pass"})
    clinical_backend: str = field(default="auto", metadata={"choices": ("auto", "chexbert", "labeler"),
        "help": "clinical label F1 backend: auto (official CheXbert if local, else labeler) | chexbert | labeler"})
    wordnet_dir: str = field(default="auto", metadata={"path": True,
        "help": "WordNet 3.0 dict folder for METEOR (auto: $SDR_WORDNET_DIR, /usr/share/wordnet, nltk_data)"})
    comet_model: str = field(default="", metadata={"path": True,
        "help": "COMET checkpoint path or Hub id already in the HF cache; empty = COMET off"})
    device: str = field(default="cpu", metadata={**_DEVICE, "help": "cpu | cuda | auto for BERTScore / COMET"})


@dataclass(frozen=True)
class SFTConfig:
    max_steps: int = field(default=200, metadata={"min": 1, "help": "optimizer steps of supervised fine-tuning"})
    learning_rate: float = field(default=1.0e-4, metadata={"gt": 0, "help": "AdamW learning rate"})
    batch_size: int = field(default=8, metadata={"min": 1, "help": "per-device batch size"})
    policy: str = field(default="tiny", metadata={"nonempty": True, "path": True,
        "help": "tiny (Qwen3-VL built from config, CPU) | qwen3-vl-2b | qwen3-vl-4b | gemma3-4b | local folder (GPU)"})
    grad_accum: int = field(default=1, metadata={"min": 1,
        "help": "gradient accumulation steps (effective batch = batch_size x this x GPUs)"})
    lr_scheduler: str = field(default="cosine", metadata={"choices": LR_SCHEDULERS,
        "help": "transformers scheduler name"})
    warmup_ratio: float = field(default=0.05, metadata={"min": 0, "max": 1,
        "help": "fraction of steps with linear warm-up"})
    weight_decay: float = field(default=0.0, metadata={"min": 0, "help": "AdamW weight decay"})
    save_steps: int = field(default=100, metadata={"min": 1, "help": "checkpoint every N steps (resume point)"})
    max_images: int = field(default=1, metadata={"min": 1, "help": "images per study given to the policy"})
    max_new_tokens: int = field(default=160, metadata={"min": 1, "help": "generation length at evaluation"})
    eval_batch_size: int = field(default=32, metadata={"min": 1,
        "help": "studies per generation batch at evaluation"})
    eval_do_sample: bool = field(default=True, metadata={"help": "sample at evaluation (False: greedy)"})
    eval_temperature: float = field(default=0.7, metadata={"gt": 0, "help": "sampling temperature at evaluation"})
    threads: int = field(default=1, metadata={"min": 1, "help": "torch CPU threads for the tiny policy"})
    gradient_checkpointing: bool = field(default=True, metadata={
        "help": "TRL gradient checkpointing (TRL's default True: saves GPU memory; False for the tiny CPU policy)"})
    vocab_size: int = field(default=1024, metadata={"min": TINY_VOCAB_MIN,
        "help": "tiny policy: byte-level BPE vocabulary size"})
    tiny_hidden_size: int = field(default=128, metadata={"min": 1, "help": "tiny policy: text hidden size"})
    tiny_layers: int = field(default=4, metadata={"min": 1, "help": "tiny policy: decoder layers"})
    tiny_heads: int = field(default=4, metadata={"min": 1, "help": "tiny policy: attention heads"})
    tiny_kv_heads: int = field(default=2, metadata={"min": 1, "help": "tiny policy: key/value heads"})
    tiny_head_dim: int = field(default=32, metadata={"min": 2, "help": "tiny policy: head dimension"})
    tiny_intermediate_size: int = field(default=384, metadata={"min": 1, "help": "tiny policy: MLP width"})
    tiny_vision_hidden_size: int = field(default=96, metadata={"min": 1, "help": "tiny policy: vision tower width"})
    tiny_vision_layers: int = field(default=2, metadata={"min": 1, "help": "tiny policy: vision tower depth"})
    tiny_vision_heads: int = field(default=4, metadata={"min": 1, "help": "tiny policy: vision heads"})
    tiny_vision_intermediate_size: int = field(default=256, metadata={"min": 1,
        "help": "tiny policy: vision MLP width"})
    tiny_patch_size: int = field(default=16, metadata={"min": 1, "help": "tiny policy: vision patch size (pixels)"})
    tiny_merge_size: int = field(default=2, metadata={"min": 1,
        "help": "tiny policy: patches merged per side into one image token ((image/patch/merge)^2 tokens)"})
    tiny_image_size: int = field(default=96, metadata={"min": 16,
        "help": "tiny policy: images resized to at most this side"})
    tiny_freeze_vision: bool = field(default=False, metadata={
        "help": "tiny policy: keep the vision tower at its random initialisation during SFT and GRPO (only the "
                "merger into the text model trains; sdrlib.models.freeze_vision_tower)"})
    lora_r: int = field(default=16, metadata={"min": 1, "help": "GPU policy: LoRA rank"})
    lora_alpha: int = field(default=16, metadata={"min": 1, "help": "GPU policy: LoRA alpha"})


@dataclass(frozen=True)
class GRPOConfig:
    """The ``grpo`` section. Each reward method with settings adds its own nested section ``grpo.<method>``
    (``grpo.gcarl.*``, ``grpo.editgrpo.*``: the method's settings dataclass, registered in
    :mod:`sdrlib.rewards.methods`); profiles are built with :func:`_grpo_class`, this class plus those."""

    rewards: list[str] = field(default_factory=lambda: ["fmt", "exact", "chamfer", "hausdorff"],
                               metadata={"nonempty": True, **_UNIQUE_REWARDS,
                                         "help": "reward configurations run after SFT"})
    max_steps: int = field(default=50, metadata={"min": 1, "help": "GRPO optimizer steps"})
    learning_rate: float = field(default=2.0e-5, metadata={"gt": 0, "help": "AdamW learning rate"})
    num_generations: int = field(default=8, metadata={"min": 2, "help": "group size G"})
    seeds: int = field(default=3, metadata={"min": 1, "help": "seeds per configuration"})
    batch_size: int = field(default=16, metadata={"min": 1,
        "help": "completions per device per step (batch_size x grad_accum: a multiple of G)"})
    grad_accum: int = field(default=1, metadata={"min": 1, "help": "gradient accumulation steps"})
    max_completion_length: int = field(default=128, metadata={"min": 1,
        "help": "max generated tokens per completion"})
    temperature: float = field(default=1.0, metadata={"gt": 0, "help": "sampling temperature of the rollouts"})
    beta: float = field(default=0.04, metadata={"min": 0,
        "help": "KL coefficient (0 = no reference model, no KL curve)"})
    epsilon: float = field(default=0.2, metadata={"gt": 0, "help": "PPO clip range"})
    loss_type: str = field(default="grpo", metadata={"choices": GRPO_LOSS_TYPES,
        "help": "TRL loss: grpo | dr_grpo | dapo | bnpo ..."})
    scale_rewards: str = field(default="group", metadata={"choices": ("group", "batch", "none"),
        "help": "group | batch | none (Dr. GRPO: none)"})
    lambda_fmt: float = field(default=1.0, metadata={"min": 0, "help": "weight of R_fmt"})
    lambda_sem: float = field(default=1.0, metadata={"min": 0, "help": "weight of R_sem / R_exact"})
    max_chars: int = field(default=4000, metadata={"min": 1, "help": "completions longer than this score 0"})
    save_steps: int = field(default=25, metadata={"min": 1, "help": "checkpoint every N steps (resume point)"})
    use_vllm: bool = field(default=False, metadata={"help": "generate rollouts with vLLM (GPU only)"})
    gradient_checkpointing: bool = field(default=True, metadata={
        "help": "TRL gradient checkpointing (TRL's default True: saves GPU memory; False for the tiny CPU policy)"})
    eval_n: int = field(default=0, metadata={"min": 0,
        "help": "test studies scored per configuration and seed (0 = all)"})
    ablations: list[str] = field(default_factory=list, metadata={**_UNIQUE_REWARDS,
        "help": "extra configurations run at ablation_seeds seeds (e.g. editgrpo_para, editgrpo_tau0.9)"})
    ablation_seeds: int = field(default=1, metadata={"min": 1, "help": "seeds per ablation configuration"})
    recall_n_val: int = field(default=0, metadata={"min": 0, "help":
        "validation studies on which notebook 04 picks the chamfer_recall_<alpha>[_bal<w>] setting from the grid "
        "recall_alphas x recall_weights (sdrlib.experiments.reward_choice; 0 = no pick)"})
    recall_alphas: list[float] = field(default_factory=lambda: [0.5, 0.75, 1.0], metadata={"nonempty": True,
        "unique": True, "each": _recall_alpha, "help": "alpha values of the recall grid, in [0.5, 1]"})
    recall_weights: list[float] = field(default_factory=lambda: [1.0, 2.0], metadata={"nonempty": True,
        "unique": True, "each": _recall_weight, "help": "_bal weights of the recall grid, in [1, 10] (1 = none)"})
    workers: int = field(default=1, metadata={"min": 1, "max": 64, "help":
        "GRPO runs (and their test generations) trained side by side in this many worker processes, one CPU "
        "thread each (tiny policy only; a run's weights do not depend on it: sdrlib.experiments.posttrain)"})


def _grpo_class() -> type:
    """The ``grpo`` section's class: :class:`GRPOConfig` plus one nested section per registered reward method
    with settings (``grpo.gcarl``, ``grpo.editgrpo``, ...: the method's settings dataclass, its defaults and
    field constraints), rebuilt when the registry changes. No method is named here."""
    sections = settings_sections()
    key = tuple((name, cls) for name, cls in sorted(sections.items()))
    if _GRPO_CLASSES.get("key") != key:
        fields = [(name, cls, field(default_factory=cls, metadata={"help": f"{name} settings ({cls.__name__})"}))
                  for name, cls in key]
        _GRPO_CLASSES.update(key=key, cls=dataclasses.make_dataclass(
            "GRPOConfig", fields, bases=(GRPOConfig,), frozen=True, namespace={"__module__": __name__}))
    return _GRPO_CLASSES["cls"]


_GRPO_CLASSES: dict[str, Any] = {}


#: ``selection.aggregations``: how eq. (8) aggregates a candidate's distances to the N bank reports
SELECTION_AGGREGATIONS: tuple[str, ...] = ("min", "avg", "knn")


def _aggregation(name: str, where: str) -> None:
    if name not in SELECTION_AGGREGATIONS:
        raise ConfigError(f"{where} = {_r(name)}: not an aggregation; allowed: one of {list(SELECTION_AGGREGATIONS)}")


@dataclass(frozen=True)
class SelectionConfig:
    k: int = field(default=5, metadata={"min": 1, "help": "candidates sampled per test study (paper: K = 5)"})
    n_test: int = field(default=0, metadata={"min": 0, "help": "test studies used for selection (0 = all)"})
    n_val: int = field(default=20, metadata={"min": 0,
        "help": "validation studies on which notebook 05 picks each policy's best setting, then reported on the "
                "test studies (0 = no validation pick: only the paper's pick on test)"})
    bank_size: int = field(default=0, metadata={"min": 0,
        "help": "bank reports used, drawn at random from notebook 01's bank with the profile's seed (notebooks 05 "
                "and 06 alike; 0 = all of it, embedding.bank_size)"})
    names: list[str] = field(default_factory=lambda: ["chamfer", "hausdorff", "ot", "sinkhorn_0.1", "hung_nn",
                                                      "partial_adaptive"],
                             metadata={"nonempty": True, **_UNIQUE_DISTANCES,
                                       "help": "distance settings swept (eq. 7)"})
    aggregations: list[str] = field(default_factory=lambda: list(SELECTION_AGGREGATIONS),
                                    metadata={"nonempty": True, "unique": True, "each": _aggregation,
                                              "help": "aggregations over the bank swept (eq. 8): min | avg | knn"})
    knn_k: int = field(default=5, metadata={"min": 1,
        "help": "neighbours of the knn aggregation (the paper does not state k; clipped to the bank size)"})
    policies: list[str] = field(default_factory=list, metadata={"unique": True, "key": _reward_key,
        "help": "local policies sampled: sft and/or GRPO configurations of grpo.rewards (empty = all of them)"})
    api_models: list[str] = field(default_factory=list, metadata={"unique": True,
        "help": "OpenAI-compatible models to draw candidates from (empty = none; needs api_base_url)"})
    api_base_url: str = field(default="", metadata={"help": "OpenAI-compatible endpoint, e.g. https://api.openai.com/v1"})
    api_prompt: str | list[str] = field(default="p1", metadata={
        "help": "API prompt(s): p1 zero-shot | p2 with in-context exemplars (paper app. B), or a list of both"})
    api_serve: str = field(default="", metadata={
        "help": "a local policy (sft or a configuration of grpo.rewards, seed 0) that notebook 05 serves with "
                "sdrlib.serve on loopback for the API models (api_base_url empty: an ephemeral port, or a loopback "
                "URL whose port it binds); empty = none, api_base_url names a provider"})
    @property
    def api_prompts(self) -> list[str]:
        """``api_prompt`` as a list (``"p1"`` -> ``["p1"]``)."""
        return [self.api_prompt] if isinstance(self.api_prompt, str) else list(self.api_prompt)

    api_exemplars: int = field(default=5, metadata={"min": 0, "help": "training reports shown with prompt p2"})
    api_temperature: float = field(default=1.0, metadata={"min": 0, "help": "API sampling temperature"})
    api_max_tokens: int = field(default=512, metadata={"min": 1, "help": "API completion length cap"})


#: ``selection.api_prompt`` values (SDR paper app. B)
API_PROMPTS: tuple[str, ...] = ("p1", "p2")


def _loopback_url(url: str) -> bool:
    from urllib.parse import urlparse

    host = urlparse(url).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1")


def _fraction(value: float, where: str) -> None:
    if not 0.0 < value < 1.0:
        raise ConfigError(f"{where} = {_r(value)}: out of range; allowed: a fraction in (0, 1)")


def _nonneg(value: int, where: str) -> None:
    if value < 0:
        raise ConfigError(f"{where} = {_r(value)}: out of range; allowed: >= 0")


@dataclass(frozen=True)
class PruningConfig:
    k: int = field(default=5, metadata={"min": 1, "help": "candidates per study (K)"})
    p: float = field(default=0.5, metadata={"gt": 0, "max": 1,
        "help": "fraction of the active candidates dropped per round, in (0, 1) (Algorithm 1; paper: 0.5)"})
    warmup: int = field(default=1, metadata={"min": 0, "help": "sentences decoded in lock-step before the first round (wu)"})
    min_sentences: int = field(default=1, metadata={"min": 1,
        "help": "an unfinished candidate is judged only once it has this many complete sentences"})
    sentence_token_cap: int = field(default=64, metadata={"min": 1,
        "help": "tokens a candidate may spend on one sentence (round) before it counts as ready"})
    n_test: int = field(default=24, metadata={"min": 0, "help": "test studies decoded live (0 = all)"})
    names: list[str] = field(default_factory=lambda: ["chamfer", "hausdorff", "hung_nn"],
                             metadata={"nonempty": True, **_UNIQUE_DISTANCES,
                                       "help": "distance settings compared (Tables 4 / 29)"})
    live_names: list[str] = field(default_factory=lambda: ["chamfer"], metadata={**_UNIQUE_DISTANCES,
        "help": "settings pruned live (the others are replayed on the same token ids)"})
    aggregation: str = field(default="avg", metadata={"choices": SELECTION_AGGREGATIONS,
        "help": "aggregation over the bank (eq. 8)"})
    policies: list[str] = field(default_factory=lambda: ["sft", "chamfer"], metadata={"nonempty": True,
        "unique": True, "key": _reward_key, "help": "policies: sft and/or GRPO configurations of grpo.rewards"})
    sweep_p: list[float] = field(default_factory=lambda: [0.25, 0.5, 0.75], metadata={"nonempty": True,
        "unique": True, "each": _fraction, "help": "p values of the replayed quality-vs-tokens sweep"})
    sweep_warmup: list[int] = field(default_factory=lambda: [0, 1, 2], metadata={"nonempty": True,
        "unique": True, "each": _nonneg, "help": "warm-up values of the replayed sweep"})
    min_template_share: float = field(default=0.5, metadata={"min": 0, "max": 1, "help":
        "notebook 06 stops when a policy writes fewer of its standard candidates on the <think>/<answer> template "
        "(off-template text scores 0 on every metric; sdrlib.experiments.pruning_checks.require_template)"})


@dataclass(frozen=True)
class Profile:
    """A validated run profile. Use :func:`load_profile` to build one."""

    name: str = field(metadata={"pattern": NAME_PATTERN, "pattern_help": NAME_HELP,
                                "help": "run name; a folder under paths.runs, so one safe path component"})
    seed: int = field(default=0, metadata={"min": 0, "max": 2**32 - 1, "help": "global seed (numpy's range)"})
    kernel_path: str = field(default="avx2", metadata={"choices": KERNEL_PATHS, "help":
        "CPU kernel path: avx2 pins torch / oneDNN / MKL / OpenBLAS to their AVX2 kernels so another CPU trains "
        "the same floats (sdrlib.numerics); native lets each library pick for the CPU (GPU runs)"})
    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig = field(default_factory=DataConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    distances: DistancesConfig = field(default_factory=DistancesConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    grpo: GRPOConfig = field(default_factory=lambda: _grpo_class()())
    selection: SelectionConfig = field(default_factory=SelectionConfig)
    pruning: PruningConfig = field(default_factory=PruningConfig)

    def __reduce__(self):
        """Pickle as the profile's values (its ``grpo`` class is built at run time, so pickle cannot name it):
        worker processes (:mod:`sdrlib.experiments.posttrain`'s parallel GRPO runs) rebuild and re-check it."""
        return (_profile_from_dict, (self.to_dict(),))

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
def profile_names() -> list[str]:
    """Names of the profiles shipped in ``configs/``."""
    return sorted(p.stem for p in (repo_root() / "configs").glob("*.yaml"))


# --------------------------------------------------------------------------- validation
def _r(value: Any, limit: int = 80) -> str:
    """``repr`` cut to ``limit`` characters (a message stays one readable line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _check_type(value: Any, tp: Any, where: str, finite: bool = True) -> Any:
    origin = typing.get_origin(tp)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} = {_r(value)}: expected a number, got {type(value).__name__}; "
                              "note that YAML reads 1e-5 as a string, write 1.0e-5")
        try:
            out = float(value)
        except OverflowError:
            raise ConfigError(f"{where} = {_r(value)}: too large for a float; allowed: a finite number") from None
        if finite and not math.isfinite(out):
            raise ConfigError(f"{where} = {_r(value)}: not a finite number; allowed: a finite number")
        return out
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} = {_r(value)}: expected an integer, got {type(value).__name__}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} = {_r(value)}: expected true/false")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} = {_r(value)}: expected a string, got {type(value).__name__}")
        if "\x00" in value:  # no name, path or option legitimately holds one; os calls would crash on it
            raise ConfigError(f"{where} = {_r(value)}: contains a NUL character; allowed: text without NUL")
        return value
    if origin is list:
        (inner,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise ConfigError(f"{where} = {_r(value)}: expected a list, got {type(value).__name__}")
        return [_check_type(v, inner, f"{where}[{i}]", finite) for i, v in enumerate(value)]
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _check_type(value, a, where, finite)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError("; ".join(errors))
    raise ConfigError(f"{where}: unsupported field type {tp!r}")  # pragma: no cover


def _allowed_range(meta: dict) -> str:
    """``meta``'s numeric bounds in words, e.g. ``">= 1"``, ``"> 0"``, ``"in [0, 1]"``."""
    lo, hi, gt = meta.get("min"), meta.get("max"), meta.get("gt")
    if lo is not None and hi is not None:
        return f"in [{lo}, {hi}]"
    parts = [f">= {lo}" if lo is not None else "", f"> {gt}" if gt is not None else "",
             f"<= {hi}" if hi is not None else ""]
    return " and ".join(p for p in parts if p)


def _same(v: Any) -> Any:
    return v


def _check_constraints(value: Any, meta: Any, where: str) -> None:
    """Enforce a field's metadata constraints (see CONSTRAINT_KEYS) on its type-checked value."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi, gt = meta.get("min"), meta.get("max"), meta.get("gt")
        if (lo is not None and value < lo) or (hi is not None and value > hi) or (gt is not None and value <= gt):
            raise ConfigError(f"{where} = {_r(value)}: out of range; allowed: {_allowed_range(meta)}")
    if "choices" in meta:
        choices = meta["choices"]() if callable(meta["choices"]) else meta["choices"]  # a registry's, as of now
        if value not in choices:
            raise ConfigError(f"{where} = {_r(value)}: not a valid choice; allowed: one of {list(choices)}")
    if "pattern" in meta and not re.fullmatch(meta["pattern"], value):
        raise ConfigError(f"{where} = {_r(value)}: not allowed; allowed: "
                          f"{meta.get('pattern_help', 'a match of ' + meta['pattern'])}")
    if meta.get("nonempty") and len(value) == 0:
        raise ConfigError(f"{where} = {_r(value)}: must not be empty; allowed: "
                          + ("at least one item" if isinstance(value, list) else "a non-empty string"))
    if meta.get("unique"):
        keys = [meta.get("key", _same)(v) for v in value]
        dupes = sorted({str(v) for v, k in zip(value, keys) if keys.count(k) > 1})
        if dupes:
            also = " (one setting spelt twice)" if len(dupes) > len({k for k in keys if keys.count(k) > 1}) else ""
            raise ConfigError(f"{where} = {_r(value)}: repeats {dupes}{also}; allowed: each item once")
    if "each" in meta:
        for i, v in enumerate(value):
            try:
                meta["each"](v, f"{where}[{i}]")
            except ConfigError:
                raise
            except ValueError as exc:  # a reward method's own check (its settings live below this layer)
                raise ConfigError(f"{where}[{i}] = {_r(v)}: {exc}") from None


def _build(cls: type, values: Any, where: str) -> Any:
    if not isinstance(values, dict):
        raise ConfigError(f"{where or 'profile'} = {_r(values)}: expected a mapping of keys to values")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(map(str, set(values) - names))  # YAML may give non-string keys (1:, null:)
    if unknown:
        raise ConfigError(f"{where or 'top level'}: unknown key(s) {unknown}; allowed: {sorted(names)}")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{_join(where, f.name)}: missing")
            continue
        tp = _grpo_class() if hints[f.name] is GRPOConfig else hints[f.name]
        v = values[f.name]
        key = _join(where, f.name)
        if dataclasses.is_dataclass(tp):
            kwargs[f.name] = _build(tp, v, key)
        else:
            kwargs[f.name] = _check_type(v, tp, key, finite=f.metadata.get("finite", True))
            if f.metadata.get("path"):
                kwargs[f.name] = _expand_user(kwargs[f.name], key)
            _check_constraints(kwargs[f.name], f.metadata, key)
    return cls(**kwargs)


def _expand_user(value: str, where: str) -> str:
    """``value`` with a leading ``~`` / ``~user`` expanded; :class:`ConfigError` when it cannot be.

    Without this ``paths.results: ~/sdr/results`` became a folder literally named ``~`` under
    the output root. Example: ``_expand_user("~/data", "data.root") -> "/home/me/data"``.
    """
    if not value.startswith("~"):
        return value
    out = os.path.expanduser(value)
    if out.startswith("~"):
        raise ConfigError(f"{where} = {_r(value)}: cannot expand {value.split('/')[0]!r} (no such user, or HOME "
                          "unset); allowed: an absolute path, a path relative to the output root, or ~/...")
    return out


def _check_profile(p: Profile) -> None:
    """Constraints between fields (each field alone is checked by ``_build``)."""
    d, g, s = p.data, p.grpo, p.sft
    ds = get_dataset(d.source)
    if ds.real and not d.root.strip():
        raise ConfigError(f"data.root = {d.root!r}: data.source = {d.source!r} needs the folder of your download; "
                          "allowed: a non-empty path (see README, 'Real data')")
    problem = ds.check_profile(p) if ds.check_profile is not None else None
    if problem:
        raise ConfigError(problem)
    # TRL groups the completions of one generation batch (batch_size x grad_accum on one process)
    # by prompt, so it must hold whole groups of num_generations.
    if (g.batch_size * g.grad_accum) % g.num_generations:
        raise ConfigError(f"grpo.batch_size x grpo.grad_accum = {g.batch_size} x {g.grad_accum}: not a multiple "
                          f"of grpo.num_generations = {g.num_generations}; allowed: a product divisible by "
                          "num_generations (whole groups of completions)")
    both = [r for r in g.ablations if _reward_key(r) in {_reward_key(x) for x in g.rewards}]
    if both:
        raise ConfigError(f"grpo.ablations = {both}: already in grpo.rewards; allowed: configurations not in "
                          "grpo.rewards (each runs once, at grpo.ablation_seeds seeds)")
    cancelled = [r for r in (*g.rewards, *g.ablations) if _prompt_weighted(r)]
    if cancelled and g.scale_rewards == "group":
        raise ConfigError(f"grpo.scale_rewards = 'group' with {cancelled}: a _bal<w> prompt weight multiplies every "
                          "reward of a prompt's group, and scaling each group by its own std cancels it (the run "
                          "would train the unweighted reward under the weighted name); allowed: 'none' (Dr. GRPO) or "
                          "'batch'")
    pr = p.pruning
    if not pr.p < 1:
        raise ConfigError(f"pruning.p = {pr.p!r}: out of range; allowed: a fraction in (0, 1)")
    bad_sel = [x for x in p.selection.policies if x != "sft" and x not in g.rewards]
    if bad_sel:
        raise ConfigError(f"selection.policies = {bad_sel}: not trained by this profile; allowed: 'sft' or one of "
                          f"grpo.rewards = {list(g.rewards)} (empty = all of them)")
    bad = [x for x in pr.policies if x != "sft" and x not in g.rewards]
    if bad:
        raise ConfigError(f"pruning.policies = {bad}: not trained by this profile; allowed: 'sft' or one of "
                          f"grpo.rewards = {list(g.rewards)}")
    sc = p.selection
    prompts = sc.api_prompts
    bad_prompts = [x for x in prompts if x not in API_PROMPTS]
    if not prompts or bad_prompts or len(set(prompts)) < len(prompts):
        raise ConfigError(f"selection.api_prompt = {_r(sc.api_prompt)}: not allowed; allowed: one of "
                          f"{list(API_PROMPTS)} or a list of them, each once")
    if sc.api_serve and sc.api_serve != "sft" and sc.api_serve not in g.rewards:
        raise ConfigError(f"selection.api_serve = {sc.api_serve!r}: not trained by this profile; allowed: '', 'sft' "
                          f"or one of grpo.rewards = {list(g.rewards)}")
    if sc.api_serve and sc.api_base_url and not _loopback_url(sc.api_base_url):
        raise ConfigError(f"selection.api_base_url = {sc.api_base_url!r}: selection.api_serve serves on loopback only; "
                          "allowed: empty (an ephemeral port) or http://127.0.0.1:<port>/v1")
    extra = [x for x in pr.live_names if x not in pr.names]
    if extra:
        raise ConfigError(f"pruning.live_names = {extra}: not in pruning.names; allowed: a subset of {list(pr.names)}")
    presence = [x for x in pr.names if registry.get(x).needs_presence]
    if presence:  # the pruning scorer embeds partial candidates only; a failure here beats one in notebook 06
        raise ConfigError(f"pruning.names = {presence}: these settings read per-sentence finding presence, which the "
                          "pruning scorer (sdrlib.pruning.BankScorer) does not compute for partial candidates; "
                          "allowed: plain settings (no _neg, not chamfer_recall_<alpha>)")
    if g.workers > 1 and s.policy != "tiny":
        raise ConfigError(f"grpo.workers = {g.workers}: parallel GRPO runs are for the tiny CPU policy (one thread "
                          f"each); sft.policy = {s.policy!r} trains on GPUs, one run at a time (several GPUs: "
                          "accelerate launch); allowed: 1")
    if s.policy == "tiny":  # the shape rules of sdrlib.models.TinyVLSpec (+ the vision tower's head split)
        if s.tiny_heads % s.tiny_kv_heads:
            raise ConfigError(f"sft.tiny_heads = {s.tiny_heads}: not a multiple of sft.tiny_kv_heads = "
                              f"{s.tiny_kv_heads}; allowed: a multiple of tiny_kv_heads")
        if s.tiny_head_dim % 2:
            raise ConfigError(f"sft.tiny_head_dim = {s.tiny_head_dim}: odd (rotary embedding); allowed: even, >= 2")
        if s.tiny_vision_hidden_size % s.tiny_vision_heads:
            raise ConfigError(f"sft.tiny_vision_hidden_size = {s.tiny_vision_hidden_size}: not a multiple of "
                              f"sft.tiny_vision_heads = {s.tiny_vision_heads}; allowed: a multiple of "
                              "tiny_vision_heads")
        cell = s.tiny_patch_size * s.tiny_merge_size
        if s.tiny_image_size % cell:
            raise ConfigError(f"sft.tiny_image_size = {s.tiny_image_size}: not a multiple of sft.tiny_patch_size x "
                              f"sft.tiny_merge_size = {cell}; allowed: a multiple of {cell}")


# --------------------------------------------------------------------------- files
class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML silently keeps the last)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, typing.Hashable):
            continue  # construct_mapping reports unhashable keys itself
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} appears twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _show(p: Path) -> str:
    try:
        return str(p.relative_to(repo_root()))
    except ValueError:
        return str(p)


def _profile_file(ref: Any, including: Path | None = None) -> Path:
    """The YAML file ``ref`` names.

    A bare name (``cpu``) is ``configs/<name>.yaml``. A ``.yaml`` / ``.yml`` path (a leading
    ``~`` expanded) is taken as is when absolute, else relative to the folder of the including
    file (``extends:``) or, at the top level, to the current folder.
    """
    what = f"{_show(including)}: extends" if including is not None else "profile"  # "profile 'x' not found"
    if isinstance(ref, os.PathLike):
        ref = os.fspath(ref)
    if not isinstance(ref, str) or not ref.strip():
        raise ConfigError(f"{what} {_r(ref)}: expected a profile name ({profile_names()}) or a .yaml path")
    p = Path(os.path.expanduser(ref))
    if p.suffix in (".yaml", ".yml"):
        if not p.is_absolute() and including is not None:
            p = including.parent / p
    elif re.fullmatch(NAME_PATTERN, ref):
        p = repo_root() / "configs" / f"{ref}.yaml"
    else:
        raise ConfigError(f"{what} {_r(ref)} not found: not a profile name; allowed: one of {profile_names()} "
                          "or a path ending in .yaml")
    if not p.is_file():
        state = "is not a file" if p.exists() else "not found"
        raise ConfigError(f"{what} {_r(ref)} {state} (looked for {p}); shipped profiles: {profile_names()}")
    return p.resolve()


def _read_profile_yaml(p: Path, seen: tuple[Path, ...] = ()) -> dict:
    if p in seen:
        raise ConfigError(f"{_show(p)}: extends itself (cycle {' -> '.join(map(_show, seen + (p,)))})")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{_show(p)}: cannot read the profile ({type(e).__name__}: {e})") from None
    try:
        raw = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        why = " ".join(str(x) for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x) or str(e)
        raise ConfigError(f"{_show(p)}{at}: invalid YAML: {why}") from None
    if raw is None:  # refused like a top-level list: an empty file is more likely a mistake than a wish
        raise ConfigError(f"{_show(p)}: the file is empty (or only comments); allowed: a mapping of sections, "
                          "e.g. 'extends: cpu' for the cpu profile as it is")
    if not isinstance(raw, dict):
        raise ConfigError(f"{_show(p)}: top level must be a mapping of sections, got {type(raw).__name__}")
    has_parent = "extends" in raw
    parent = raw.pop("extends", None)
    raw.setdefault("name", p.stem)
    if has_parent:
        base = _read_profile_yaml(_profile_file(parent, including=p), seen + (p,))
        base.pop("name", None)
        raw = _deep_merge(base, raw)
    return raw


def _deep_merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _apply_overrides(raw: dict, overrides: Any) -> dict:
    if not isinstance(overrides, dict):
        raise ConfigError(f"overrides = {_r(overrides)}: expected a dict of dotted keys to values")
    raw = _deep_merge(raw, {})
    for dotted, value in overrides.items():
        if not isinstance(dotted, str) or not all(dotted.split(".")):
            raise ConfigError(f"override key {_r(dotted)}: expected a dotted key such as 'data.n_train'")
        keys = dotted.split(".")
        node = raw
        for k in keys[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {dotted!r}: {k!r} is not a section")
        node[keys[-1]] = value
    return raw


def _profile_from_dict(values: dict[str, Any]) -> Profile:
    """A profile from :meth:`Profile.to_dict`'s values, validated as :func:`load_profile` validates a file."""
    prof = _build(Profile, values, where="")
    _check_profile(prof)
    return prof


def load_profile(name_or_path: str = "cpu", overrides: dict[str, Any] | None = None) -> Profile:
    """Load, merge and validate a profile.

    Parameters
    ----------
    name_or_path : str
        A profile name from ``configs/`` (``smoke``, ``cpu``, ``paper``) or a path to a YAML file.
        ``extends:`` inside a file takes a profile name or a ``.yaml`` path relative to that file.
    overrides : dict, optional
        Dotted keys to values, e.g. ``{"data.n_train": 8, "seed": 1}``; validated like the file.

    Raises
    ------
    ConfigError
        Missing, unreadable or empty file, invalid YAML (file and line), a top level that is not a
        mapping, a cyclic ``extends``, a ``~`` that cannot be expanded, an unknown
        key, a wrong type, or a value outside its allowed range (the registries decide distance and
        reward names); the message names the key path, the value and what is allowed.
    """
    src = _profile_file(name_or_path)
    raw = _read_profile_yaml(src)
    if overrides is not None:
        raw = _apply_overrides(raw, overrides)
    try:
        prof = _build(Profile, raw, where="")
        _check_profile(prof)
    except ConfigError as e:
        raise ConfigError(f"profile {_r(raw.get('name', src.stem), 40)} ({_show(src)}): {e}") from None
    return prof
