"""``"comet"``: COMET segment scores (unbabel-comet), named ``comet@<model>``; corpus value = mean.

Runs only when unbabel-comet is installed and the checkpoint (:class:`CometSettings`, the profile's
``metrics.comet.model``: a ``.ckpt`` path, a folder or a Hub id already in the HF cache) is local
(:func:`sdrlib.metrics.backends.comet_checkpoint`); otherwise the group is unavailable. The shipped module ``evaluate_modules/sdr_comet``. Leaves out reference-free COMET.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from sdrlib.metrics._evaluate import run_module, scatter
from sdrlib.metrics.backends import comet_checkpoint, package_version, why_unavailable
from sdrlib.metrics.base import MetricResult, mean_result
from sdrlib.metrics.registry import MetricGroup, MetricUnavailable, PaperMetric, ScoreContext, register_metric_group

__all__ = ["CometSettings", "CometSetup", "comet_section"]


@dataclass(frozen=True)
class CometSettings:
    """The group's options: the profile's ``metrics.comet`` section (``ctx.settings_of("comet")``)."""

    model: str = field(default="", metadata={"path": True,
        "help": "COMET checkpoint path or Hub id already in the HF cache; empty = COMET off"})


@dataclass(frozen=True)
class CometSetup:
    """The local checkpoint and the label that names it in the metric (``comet@<label>``)."""

    checkpoint: Path
    label: str = ""


def comet_section(predictions: Sequence[str], references: Sequence[str], defined: np.ndarray | None = None,
                  setup: CometSetup | None = None) -> list[MetricResult]:
    """``comet@<label>`` of one section; ``setup`` is required (ValueError without a checkpoint)."""
    if setup is None:
        raise ValueError("comet requested without a checkpoint")
    r, idx, n = run_module("sdr_comet", predictions, references, defined, checkpoint=str(setup.checkpoint))
    backend = f"unbabel-comet=={package_version('unbabel-comet')} {setup.label}"
    return [mean_result(f"comet@{setup.label}", backend, scatter(r["scores"] if r else [], idx, n))]


def _available(ctx: ScoreContext) -> CometSetup:
    comet_model = ctx.settings_of("comet").model
    ckpt = comet_checkpoint(comet_model)
    if ckpt is None:
        raise MetricUnavailable(why_unavailable("comet"))
    label = comet_model if comet_model and "/" in comet_model and not str(comet_model).startswith("/") \
        else ckpt.parent.parent.name or ckpt.stem
    return CometSetup(ckpt, str(label))


PAPER_NAMES = (
    PaperMetric(("COMET",), ("comet",), "comet", "paper",
                "Tabs. 1-2, 5-6, 9, 13, 17, 21; checkpoint not named by the paper: metrics.comet.model"),
)

register_metric_group(MetricGroup("comet", section=comet_section, available=_available, paper_names=PAPER_NAMES,
                                  versions=("unbabel-comet",), settings=CometSettings,
                                  description="COMET (unbabel-comet), local checkpoint only"))
