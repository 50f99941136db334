"""The profile's sections as frozen dataclasses: fields, defaults, help text and field constraints.

What it does: one dataclass per YAML section (``paths``, ``data``, ``embedding``, ``distances``, ``metrics``,
``sft``, ``grpo``, ``selection``, ``pruning``) and :class:`Profile`, their container, with its resolved output
paths. Each field's constraints sit in its ``metadata`` (:data:`sdrlib.config._checks.CONSTRAINT_KEYS`). The
``grpo``, ``data`` and ``metrics`` sections are built at load time as :class:`GRPOConfig`, :class:`DataConfig`,
:class:`MetricsConfig` plus one nested section per registered reward method, dataset or metric group with settings
(:func:`_with_settings`: ``grpo.<method>``, ``data.<dataset>``, ``metrics.<group>``), so no extension is named here.

What it leaves out: enforcing the constraints and the rules between fields (:mod:`sdrlib.config._checks`), reading
files (:mod:`sdrlib.config._loader`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdrlib.config._checks import (_UNIQUE_DISTANCES, _UNIQUE_REWARDS, LR_SCHEDULERS, GRPO_LOSS_TYPES, ConfigError,
                                   NAME_HELP, NAME_PATTERN, SELECTION_AGGREGATIONS, TINY_VOCAB_MIN, _aggregation,
                                   _build, _check_profile, _fraction, _nonneg, _reward_key)
from sdrlib.config._plugins import import_plugins
from sdrlib.config._tiny import with_tiny_keys
from sdrlib.data.registry import DATASETS, data_sources
from sdrlib.extension import DEVICE
from sdrlib.metrics.registry import GROUPS
from sdrlib.numerics import KERNEL_PATHS
from sdrlib.paths import output_root
from sdrlib.rewards import settings_sections

__all__ = ["PathsConfig", "DataConfig", "EmbeddingConfig", "DistancesConfig", "MetricsConfig", "SFTConfig",
           "GRPOConfig", "SelectionConfig", "PruningConfig", "Profile"]


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
        "help": "a registered dataset (sdrlib.data.registry: synthetic, mimic, rexgradient, iuxray and any a plugin adds)"})
    root: str = field(default="", metadata={"path": True,
        "help": "folder of a real dataset download (not for synthetic)"})
    standin_n: int = field(default=0, metadata={"min": 0,
        "help": "real sources: when data.root does not exist, write a stand-in of this many SynthCXR studies there "
                "first, in the download's layout (sdrlib.data.standin); 0 = never (a missing root is an error)"})
    n_train: int = field(default=2000, metadata={"min": 1, "help": "synthetic studies in the train split"})
    n_val: int = field(default=200, metadata={"min": 1, "help": "synthetic studies in the validation split"})
    n_test: int = field(default=200, metadata={"min": 1, "help": "synthetic studies in the test split"})
    image_size: int = field(default=96, metadata={"min": 16, "help": "side of the square grayscale image, pixels"})

    @classmethod
    def _section_class(cls) -> type:
        """The class the profile's ``data`` section is built as (:func:`_data_class`; read by ``_build``)."""
        return _data_class()


@dataclass(frozen=True)
class EmbeddingConfig:
    encoder: str = field(default="all-mpnet-base-v2", metadata={"nonempty": True, "path": True,
        "help": "encoder name or local path"})
    batch_size: int = field(default=64, metadata={"min": 1, "help": "sentences per encoder forward pass"})
    bank_size: int = field(default=5000, metadata={"min": 0,
        "help": "training reports in the selection bank, drawn at random with the profile's seed (0 = all)"})
    threads: int = field(default=0, metadata={"min": 0,
        "help": "torch CPU threads for encoder passes (0 = torch's default); GRPO rewards use them between steps"})
    device: str = field(default="cpu", metadata={**DEVICE, "help": "cpu | cuda | auto (cuda when torch sees a GPU)"})


@dataclass(frozen=True)
class DistancesConfig:
    names: list[str] = field(default_factory=lambda: ["chamfer", "hausdorff"],
                             metadata={"nonempty": True, **_UNIQUE_DISTANCES,
                                       "help": "registered distance settings to evaluate"})
    device: str = field(default="cpu", metadata={**DEVICE, "help": "cpu | cuda | auto for the batched engine"})


@dataclass(frozen=True)
class MetricsConfig:
    bootstrap: int = field(default=1000, metadata={"min": 1, "help": "paired bootstrap resamples"})
    allow_substitutes: bool = field(default=True, metadata={
        "help": "go on when the paper's metric backends are missing (the offline labeler for CheXbert, another "
                "backbone for roberta-large; every table records which ran); false: the run stops before any "
                "notebook with the commands that install them (run_all.sh --allow-substitutes goes on)"})
    # each metric group's options are its own section, metrics.<group> (_metrics_class): metrics.bertscore.model,
    # metrics.clinical.backend, metrics.meteor.wordnet_dir, metrics.comet.model, ...

    @classmethod
    def _section_class(cls) -> type:
        """The class the profile's ``metrics`` section is built as (:func:`_metrics_class`; read by ``_build``)."""
        return _metrics_class()


@dataclass(frozen=True)
@with_tiny_keys(after="vocab_size")  # sft.tiny_hidden_size ... sft.tiny_image_size: the fields of TinyVLSpec
class SFTConfig:
    max_steps: int = field(default=200, metadata={"min": 1, "help": "optimizer steps of supervised fine-tuning"})
    learning_rate: float = field(default=1.0e-4, metadata={"gt": 0, "help": "AdamW learning rate"})
    batch_size: int = field(default=8, metadata={"min": 1, "help": "per-device batch size"})
    policy: str = field(default="tiny", metadata={"nonempty": True, "path": True,
        "help": "tiny (Qwen3-VL built from config, CPU) | qwen3-vl-2b | qwen3-vl-4b | gemma3-4b | local folder (GPU)"})
    grad_accum: int = field(default=1, metadata={"min": 1,
        "help": "gradient accumulation steps (effective batch = batch_size x this x GPUs); used only while "
                "effective_batch is 0"})
    step_seconds: float = field(default=0.0, metadata={"min": 0,
        "help": "stated seconds per optimizer step on the machine the profile is for (0 = not stated): the "
                "runner prints the stage's time (runs x steps x this) before any notebook and sizes the cell "
                "timeout from it"})
    effective_batch: int = field(default=0, metadata={"min": 0,
        "help": "target global batch (studies per optimizer step); 0 = off (grad_accum as given); > 0: "
                "grad_accum = effective_batch / (batch_size x processes), computed at launch (sdrlib.config."
                "accumulation)"})
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
    processes: int = field(default=1, metadata={"min": 1, "help":
        "tiny CPU policy: training processes side by side (accelerate launch, gloo), each with sft.threads threads "
        "and its own shard of every global batch (global batch = batch_size x grad_accum x processes); 1 = train "
        "in the calling process. GPU policies: launch accelerate yourself (python -m sdrlib.training)"})
    gradient_checkpointing: bool = field(default=True, metadata={
        "help": "TRL gradient checkpointing (TRL's default True: saves GPU memory; False for the tiny CPU policy)"})
    vocab_size: int = field(default=1024, metadata={"min": TINY_VOCAB_MIN,
        "help": "tiny policy: byte-level BPE vocabulary size"})
    tiny_tower_epochs: int = field(default=0, metadata={"min": 0,
        "help": "tiny policy: epochs of label pretraining of the vision tower on the training split before SFT "
                "(0 = none: the tower starts at its random init; sdrlib.training.tower)"})
    tiny_tower_lr: float = field(default=1.0e-3, metadata={"gt": 0,
        "help": "tiny policy: AdamW learning rate of the tower's label pretraining"})
    tiny_tower_head: str = field(default="flat", metadata={"choices": ("flat", "max", "flat+max"),
        "help": "tiny policy: the head of the tower's label pretraining: linear on the flattened merged tokens "
                "(flat: may read where a finding is), on their maximum over positions (max: reads a finding "
                "wherever it lands), or the sum of both logits (flat+max); sdrlib.training.tower"})
    tiny_freeze_vision: bool = field(default=False, metadata={
        "help": "tiny policy: keep the vision tower at its random initialisation during SFT and GRPO (only the "
                "merger into the text model trains; sdrlib.models.freeze_vision_tower)"})
    aux_label_weight: float = field(default=0.0, metadata={"min": 0,
        "help": "tiny policy: weight of an auxiliary label loss in SFT (binary cross-entropy of the 13 CheXpert "
                "observations read from the decoder's state where the report starts; 0 = off; "
                "sdrlib.training.aux_labels)"})
    balanced_sampling: float = field(default=0.0, metadata={"min": 0,
        "help": "tiny policy: SFT draws study i with probability proportional to rarity_i ** -this, rarity_i the "
                "training prevalence of its rarest finding (of studies without one: their share); 0 = uniform "
                "shuffle; 1 = each finding about equally often (sdrlib.training.sampling)"})
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
    grad_accum: int = field(default=1, metadata={"min": 1,
        "help": "gradient accumulation steps; used only while effective_batch is 0"})
    step_seconds: float = field(default=0.0, metadata={"min": 0,
        "help": "stated seconds per optimizer step on the machine the profile is for (0 = not stated): the "
                "runner prints the stage's time (runs x steps x this) before any notebook and sizes the cell "
                "timeout from it"})
    effective_batch: int = field(default=0, metadata={"min": 0,
        "help": "target global batch (completions per optimizer step); 0 = off (grad_accum as given); > 0: "
                "grad_accum = effective_batch / (batch_size x processes), computed at launch (sdrlib.config."
                "accumulation)"})
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
    eval_draws: int = field(default=1, metadata={"min": 1, "help":
        "the GRPO study only (python -m sdrlib.experiments.study): sampled reports per test study and run (draw 0 "
        "with the run's seed, draw d with sdrlib.experiments.study.runs.draw_seed), pooled in the table; notebooks "
        "sample one"})
    ablations: list[str] = field(default_factory=list, metadata={**_UNIQUE_REWARDS,
        "help": "extra configurations run at ablation_seeds seeds (e.g. editgrpo_para, editgrpo_tau0.9)"})
    ablation_seeds: int = field(default=1, metadata={"min": 1, "help": "seeds per ablation configuration"})
    recall_n_val: int = field(default=0, metadata={"min": 0, "help":
        "validation studies on which notebook 04 picks the chamfer_recall_<alpha>[_bal<w>] setting from the grid "
        "recall_alphas x recall_weights (sdrlib.experiments.reward_choice; 0 = no pick)"})
    recall_alphas: list[float] = field(default_factory=lambda: [0.5, 0.75, 1.0], metadata={"nonempty": True,
        "unique": True, "help": "alpha values of the recall grid, in [0.5, 1] (each checked by the recall reward "
                               "method: sdrlib.rewards.methods.recall)"})
    recall_weights: list[float] = field(default_factory=lambda: [1.0, 2.0], metadata={"nonempty": True,
        "unique": True, "help": "_bal weights of the recall grid, in [1, 10] (1 = none; each checked by the recall "
                               "reward method)"})
    workers: int = field(default=1, metadata={"min": 1, "max": 64, "help":
        "GRPO runs (and their test generations) trained side by side in this many worker processes, one CPU "
        "thread each (tiny policy only; a run's weights do not depend on it: sdrlib.experiments.posttrain)"})

    @classmethod
    def _section_class(cls) -> type:
        """The class the profile's ``grpo`` section is built as (:func:`_grpo_class`; read by ``_build``)."""
        return _grpo_class()


def _with_settings(base: type, sections: dict[str, type]) -> type:
    """``base`` plus one nested section per registered extension with settings (``name: settings dataclass``, the
    extension's defaults and field constraints), made once per set of sections. No extension is named here."""
    key = (base, tuple((name, cls) for name, cls in sorted(sections.items())))
    if not key[1] and base is not GRPOConfig:  # no extension with settings: the section as written
        return base
    if key not in _SECTION_CLASSES:
        taken = {f.name for f in dataclasses.fields(base)}
        clash = sorted(name for name, _ in key[1] if name in taken or not name.isidentifier())
        if clash:
            raise ConfigError(f"{base.__name__}: extension settings section(s) {clash} would shadow a key of the "
                              f"section or are no identifier; rename the extension")
        fields = [(name, cls, field(default_factory=cls, metadata={"help": f"{name} settings ({cls.__name__})"}))
                  for name, cls in key[1]]
        _SECTION_CLASSES[key] = dataclasses.make_dataclass(
            base.__name__, fields, bases=(base,), frozen=True, namespace={"__module__": __name__})
    return _SECTION_CLASSES[key]


_SECTION_CLASSES: dict[tuple, type] = {}


def _grpo_class() -> type:
    """The ``grpo`` section's class: :class:`GRPOConfig` plus one nested section per registered reward method
    with settings (``grpo.gcarl``, ``grpo.editgrpo``, ...), rebuilt when the registry changes."""
    return _with_settings(GRPOConfig, settings_sections())


def _data_class() -> type:
    """The ``data`` section's class: :class:`DataConfig` plus ``data.<dataset>`` per registered dataset with
    settings (:attr:`sdrlib.data.Dataset.settings`)."""
    return _with_settings(DataConfig, DATASETS.settings_sections())


def _metrics_class() -> type:
    """The ``metrics`` section's class: :class:`MetricsConfig` plus ``metrics.<group>`` per registered metric group
    with settings (:attr:`sdrlib.metrics.registry.MetricGroup.settings`)."""
    return _with_settings(MetricsConfig, GROUPS.settings_sections())


class _CandidatesPerStudy:
    """The sections whose profile key ``k`` is the paper's K (``selection``, ``pruning``)."""

    @property
    def n_candidates(self) -> int:
        """The profile key ``k`` (the paper's K, candidates per study) under the name the code gives it everywhere
        (``n_candidates``): the one place the two names meet (``tests/config/test_config.py`` checks it)."""
        return self.k


@dataclass(frozen=True)
class SelectionConfig(_CandidatesPerStudy):
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


@dataclass(frozen=True)
class PruningConfig(_CandidatesPerStudy):
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
    plugins: list[str] = field(default_factory=list, metadata={"unique": True, "help":
        "modules imported before the profile is checked, so that it may name what they register (a distance "
        "family, a dataset, a reward method): importable module names or .py paths relative to the profile file "
        "(sdrlib.config._plugins); empty = none"})
    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig = field(default_factory=lambda: _data_class()())
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    distances: DistancesConfig = field(default_factory=DistancesConfig)
    metrics: MetricsConfig = field(default_factory=lambda: _metrics_class()())
    sft: SFTConfig = field(default_factory=SFTConfig)
    grpo: GRPOConfig = field(default_factory=lambda: _grpo_class()())
    selection: SelectionConfig = field(default_factory=SelectionConfig)
    pruning: PruningConfig = field(default_factory=PruningConfig)

    def __reduce__(self) -> tuple:
        """Pickle as the profile's values (its ``grpo`` class is built at run time, so pickle cannot name it):
        worker processes (:mod:`sdrlib.experiments.posttrain`'s parallel GRPO runs) rebuild and re-check it."""
        return (_profile_from_dict, (self.to_dict(),))

    def metric_backends(self) -> dict[str, str]:
        """The clinical backend and BERTScore backbone this profile's ``metrics`` settings give on this machine
        (:func:`sdrlib.metrics.backends.metric_backends`); :func:`sdrlib.results.save_table` records them in every
        table's header and meta file."""
        from sdrlib.metrics.backends import metric_backends  # local files only; deferred: torch-free config import

        return metric_backends(self.metrics.clinical.backend, self.metrics.bertscore.model)

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


def _profile_from_dict(values: dict[str, Any]) -> Profile:
    """A profile from :meth:`Profile.to_dict`'s values, validated as :func:`~sdrlib.config.load_profile` validates a
    file (its plugins imported first: a worker process rebuilding a pickled profile needs them too)."""
    import_plugins(values.get("plugins"), "plugins")
    prof = _build(Profile, values, where="")
    _check_profile(prof)
    return prof
