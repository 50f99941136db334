"""The policy of a profile: preflight, the tiny CPU policy's shape, loading a saved or fresh policy.

CPU / default profile: the tiny Qwen3-VL of :mod:`sdrlib.models`, trained from scratch. GPU / paper profile:
Unsloth ``FastVisionModel`` + LoRA (imported only there; a missing GPU or model path fails before any work).
torch is imported inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sdrlib import models
from sdrlib.metrics.backends import BackendUnavailable, missing_paper_metrics
from sdrlib.training.processes import on_cpu

__all__ = ["is_tiny", "tiny_spec", "device_kwargs", "preflight", "load_policy", "has_tiny_config", "has_policy"]


def is_tiny(cfg) -> bool:
    """Whether the profile trains the tiny CPU policy (``sft.policy: tiny``)."""
    return cfg.sft.policy == "tiny"


def tiny_spec(cfg: Any) -> models.TinyVLSpec:
    """The profile's :class:`sdrlib.models.TinyVLSpec` (the ``sft.tiny_*`` keys:
    :meth:`~sdrlib.config.TinyVLSpec.from_profile`)."""
    return models.TinyVLSpec.from_profile(cfg.sft)


def device_kwargs() -> dict[str, Any]:
    """TRL config arguments for the device here: CPU (no CUDA, or an accelerate config with ``use_cpu: true``),
    or CUDA with bf16 when supported (else fp16)."""
    import torch

    if not on_cpu():
        bf16 = torch.cuda.is_bf16_supported()
        return {"use_cpu": False, "bf16": bf16, "fp16": not bf16}
    return {"use_cpu": True, "bf16": False, "fp16": False}


def preflight(cfg) -> None:
    """Fail fast, before any data or model work, when the profile's policy cannot run here.

    The tiny policy always can; a paper policy needs a CUDA GPU and local weights
    (:func:`sdrlib.models.check_gpu_model` raises :class:`sdrlib.models.PolicyError`). A profile with
    ``metrics.allow_substitutes: false`` (the paper profile) also needs the paper's metric backends before any
    training (:func:`sdrlib.metrics.backends.missing_paper_metrics`; :class:`BackendUnavailable` with the commands
    that install them), the same check as the runner's preflight, for a notebook run on its own.
    """
    if not is_tiny(cfg):
        models.check_gpu_model(cfg.sft.policy)
    if not cfg.metrics.allow_substitutes:
        missing = missing_paper_metrics(cfg.metrics.clinical.backend, cfg.metrics.bertscore.model)
        if missing:
            raise BackendUnavailable(f"profile {cfg.name!r} needs the paper's metrics before training: "
                                     + "; ".join(missing) + " (or set metrics.allow_substitutes: true)")


def load_policy(cfg: Any, path: str | Path | None = None) -> tuple[Any, Any]:
    """``(model, processor)`` for the profile: a saved policy at ``path``, else a fresh one.

    ``path=None`` with the tiny policy raises (a fresh tiny policy needs training texts:
    :func:`sft` builds it). On GPU profiles ``path=None`` loads the paper model with LoRA.
    """
    if is_tiny(cfg):
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


def has_tiny_config(model) -> bool:
    """Whether ``model`` is a tiny policy built by :func:`sdrlib.models.build_tiny_policy`."""
    return getattr(model.config, "sdr_tiny_spec", None) is not None


def has_policy(folder: Path) -> bool:
    """A saved full model (``config.json``) or LoRA adapters (``adapter_config.json``)."""
    return (folder / "config.json").is_file() or (folder / "adapter_config.json").is_file()
