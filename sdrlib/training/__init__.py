"""SFT then GRPO through TRL (paper sec. 4, appendix C.2-C.3).

- :func:`sft` (:mod:`sdrlib.training.sft`) trains a policy with TRL's ``SFTTrainer`` on prompt-completion
  pairs (the image + instruction as prompt, the templated report as completion), so the loss covers the
  assistant report only.
- :func:`grpo` (:mod:`sdrlib.training.grpo`) post-trains an SFT policy with TRL's ``GRPOTrainer`` for one
  reward configuration: ``"fmt"``, ``"exact"``, any registered distance (``"chamfer"``, ``"hausdorff"``,
  ...), or a related method (``"gcarl"``, the EditGRPO names, whose trainer is
  :class:`sdrlib.training.editgrpo_trainer.EditGRPOTrainer`); ``"sft"`` means no GRPO. What a method
  changes comes from its registry entry (:mod:`sdrlib.rewards.methods`), never from a branch here.

Modules: :mod:`~sdrlib.training.datasets` (HF datasets), :mod:`~sdrlib.training.policy` (preflight, the tiny
policy's shape, loading), :mod:`~sdrlib.training.runlog` (progress line, library logs to a file, step timer, curves,
saving), :mod:`~sdrlib.training.runkeys` (run folders and the keys that decide reuse: every file of the
sdrlib package is in them), :mod:`~sdrlib.training.sft`, :mod:`~sdrlib.training.grpo`,
:mod:`~sdrlib.training.editgrpo_trainer`, :mod:`~sdrlib.training.cli`, :mod:`~sdrlib.training.processes` (rank and
world size under ``accelerate launch``), :mod:`~sdrlib.training.tower` (label pretraining and probe of the tiny
policy's vision tower), :mod:`~sdrlib.training.aux_labels` (an auxiliary label loss in SFT) and
:mod:`~sdrlib.training.sampling` (balanced sampling of SFT studies), the last three options of the tiny policy. The names below are re-exported
here; note that ``sdrlib.training.sft`` and ``sdrlib.training.grpo`` are the *functions* (import the
modules with ``importlib.import_module("sdrlib.training.grpo")`` when a test needs them).

Every run lives in its own folder (:func:`run_dir`): Trainer checkpoints (``checkpoint-*``), the final
policy (``final/``), training curves (``curves.csv``) and ``run.json`` (what produced it, timings,
bad-completion counts); a finished run is reused and an interrupted one resumes when its ``run_key.json``
(:func:`run_key`) equals the current one.

Command line (and the multi-process entry point, e.g. the paper's 2 x H100 GRPO)::

    accelerate launch --config_file configs/accelerate/2gpu.yaml -m sdrlib.training \
        --profile paper --stage grpo --reward chamfer --seed 0

With N processes each trains on its own shard of every global batch (:mod:`~sdrlib.training.runlog` says which
rows, for SFT and for TRL's GRPO sampler), rank 0 alone writes the shared files and the final policy, every rank
writes ``rank<r>.json``, and N is part of the run key.

Left out: multi-node launch scripts, vLLM server mode (colocated vLLM only, GPU only), evaluation (see
:mod:`sdrlib.experiments.posttrain`, :mod:`sdrlib.generation` and :mod:`sdrlib.metrics`).
"""

from __future__ import annotations

from sdrlib.training.cli import main
from sdrlib.training.datasets import grpo_dataset, report_texts, sft_dataset
from sdrlib.training.grpo import grpo, group_stats, summary_line
from sdrlib.training.policy import device_kwargs, load_policy, preflight, tiny_spec
from sdrlib.training.runkeys import policy_digest, policy_dir, run_dir, run_key, source_digest
from sdrlib.training.runlog import GRPOResult, SFTResult, StepTimer, logs_to, read_curves
from sdrlib.training.sft import sft

__all__ = ["SFTResult", "GRPOResult", "run_dir", "policy_dir", "report_texts", "sft_dataset", "grpo_dataset", "sft", "grpo",
           "load_policy", "device_kwargs", "read_curves", "StepTimer", "preflight", "run_key", "policy_digest", "source_digest",
           "group_stats", "summary_line", "logs_to", "tiny_spec", "main"]
