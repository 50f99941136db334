"""``"bertscore"``: BERTScore F1 per sample (bert-score, no idf), named by its backbone: ``bertscore_f1@<bb>``.

The backbone comes from :func:`sdrlib.metrics.backends.resolve_bertscore_backbone` (roberta-large L17 rescaled
when cached, else a local sentence encoder, last layer, no rescaling); none local: the group is unavailable.
In the suite one batched bert-score call scores every section at once. Empty texts score 0 by definition.
Its options are :class:`BertScoreSettings`, the profile's ``metrics.bertscore`` section.
Leaves out idf weighting and multi-reference scoring.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from sdrlib.extension import DEVICE
from sdrlib.metrics._evaluate import defined_subset, load_module, scatter
from sdrlib.metrics.backends import Backbone, BackendUnavailable, package_version, resolve_bertscore_backbone
from sdrlib.metrics.base import MetricResult, mean_result
from sdrlib.metrics.registry import MetricGroup, MetricUnavailable, PaperMetric, ScoreContext, register_metric_group

__all__ = ["BertScoreSettings", "BertScoreSetup", "bertscore_f1", "bertscore_result", "bertscore_section"]


@dataclass(frozen=True)
class BertScoreSettings:
    """The group's options: the profile's ``metrics.bertscore`` section (``ctx.settings_of("bertscore")``)."""

    enabled: bool = field(default=True, metadata={
        "help": "score BERTScore with the profile's metrics (false: sdrlib.metrics.suite.metric_kwargs leaves the "
                "group out)"})
    model: str = field(default="auto", metadata={"path": True,
        "help": "BERTScore backbone: auto (roberta-large if cached, else all-mpnet-base-v2, else "
                "all-MiniLM-L6-v2), a known encoder name or a local folder"})
    batch_size: int = field(default=64, metadata={"min": 1, "help": "pairs per BERTScore forward pass"})
    device: str = field(default="cpu", metadata={**DEVICE, "help": "cpu | cuda | auto (cuda when torch sees a GPU) "
                                                                   "for BERTScore"})


@dataclass(frozen=True)
class BertScoreSetup:
    """What the group needs besides the texts: the backbone, the batch size and the torch device."""

    backbone: Backbone
    batch_size: int = 64
    device: str = "cpu"


def bertscore_f1(predictions: Sequence[str], references: Sequence[str], backbone: Backbone,
                 batch_size: int = 64, device: str = "cpu") -> np.ndarray:
    """BERTScore F1 per pair ``(n,)`` in one batched bert-score call (0.0 for empty texts)."""
    if not len(predictions):
        return np.zeros(0)
    m = load_module("sdr_bertscore")
    r = m.compute(predictions=list(predictions), references=list(references),
                  model_type=backbone.model_type, num_layers=backbone.num_layers, batch_size=batch_size,
                  device=device, rescale_with_baseline=backbone.baseline_path is not None,
                  baseline_path=backbone.baseline_path)
    return np.asarray(r["f1"], dtype=np.float64)


def bertscore_result(values: np.ndarray, backbone: Backbone) -> MetricResult:
    """Wrap per-sample BERTScore F1 ``(n,)`` (NaN = undefined) as ``bertscore_f1@<backbone>``."""
    backend = f"bert-score=={package_version('bert-score')} {backbone.label} no-idf"
    return mean_result(f"bertscore_f1@{backbone.label}", backend, values)


def bertscore_section(predictions: Sequence[str], references: Sequence[str], defined: np.ndarray | None = None,
                      setup: BertScoreSetup | None = None) -> list[MetricResult]:
    """``bertscore_f1@<backbone>`` of one section; ``setup`` is required (ValueError without a backbone)."""
    if setup is None:
        raise ValueError("bertscore requested without a backbone")
    preds, refs, idx, n = defined_subset(predictions, references, defined)
    values = bertscore_f1(preds, refs, setup.backbone, setup.batch_size, setup.device)
    return [bertscore_result(scatter(values, idx, n), setup.backbone)]


def _device(device: str) -> str:
    """``auto`` as ``cuda`` when torch sees a GPU, else ``cpu``; any other device as given."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _available(ctx: ScoreContext) -> BertScoreSetup:
    o = ctx.settings_of("bertscore")
    try:
        return BertScoreSetup(resolve_bertscore_backbone(o.model), o.batch_size, _device(o.device))
    except BackendUnavailable as e:
        raise MetricUnavailable(str(e)) from None


def _compute(ctx: ScoreContext, setup: BertScoreSetup) -> dict[str, list[MetricResult]]:
    """One batched BERTScore call over the defined samples of every section."""
    flat_p, flat_r, where = [], [], []
    for s in ctx.sections:
        for i in np.flatnonzero(ctx.defined[s]):
            flat_p.append(ctx.predictions[s][i])
            flat_r.append(ctx.references[s][i])
            where.append((s, i))
    f1 = bertscore_f1(flat_p, flat_r, setup.backbone, setup.batch_size, setup.device)
    per = {s: np.full(ctx.n, np.nan) for s in ctx.sections}
    for (s, i), v in zip(where, f1):
        per[s][i] = v
    return {s: [bertscore_result(per[s], setup.backbone)] for s in ctx.sections}


PAPER_NAMES = (
    PaperMetric(("BERTScore F1", "BS-F1"), ("bertscore_f1",), "bertscore", "paper",
                "Tabs. 1-2, 5-22 (BERTScore F1), Tabs. 3-4, 23-28 (BS-F1). The paper does not name its backbone: "
                "ours is roberta-large L17 (rescaled) when cached, else a local sentence encoder (after '@')"),
)

register_metric_group(MetricGroup("bertscore", compute=_compute, section=bertscore_section,
                                  available=_available,
                                  paper_names=PAPER_NAMES, versions=("bert-score", "transformers", "torch"),
                                  description="BERTScore F1 (bert-score)", settings=BertScoreSettings))
