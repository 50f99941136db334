"""``"clinical"``: CheXpert-14 label F1 (macro / micro over 14 and 5 observations, per sample, per observation).

Labels come from :func:`sdrlib.metrics.clinical.get_labeler` (the official CheXbert when its weights are local,
else the offline rule labeler :mod:`sdrlib.clinical.labeler`), one call over the distinct non-empty texts of
every section; an empty text asserts nothing. The F1 definitions and the uncertain-as-positive convention are
:mod:`sdrlib.metrics.clinical`'s. The same labeler gives the suite's strata (:mod:`sdrlib.metrics.suite`). Its
options are :class:`ClinicalSettings`, the profile's ``metrics.clinical`` section.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from sdrlib.metrics.backends import BackendUnavailable, why_unavailable
from sdrlib.metrics.base import MetricResult
from sdrlib.metrics.clinical import clinical_results, get_labeler
from sdrlib.metrics.registry import MetricGroup, MetricUnavailable, PaperMetric, ScoreContext, register_metric_group

__all__ = ["ClinicalSettings", "labeler_setup"]

Labeler = tuple[str, Callable, str]


@dataclass(frozen=True)
class ClinicalSettings:
    """The group's options: the profile's ``metrics.clinical`` section (``ctx.settings_of("clinical")``)."""

    backend: str = field(default="auto", metadata={"choices": ("auto", "chexbert", "labeler"),
        "help": "clinical label F1 backend: auto (official CheXbert if local, else labeler) | chexbert | labeler"})
    uncertain: str = field(default="positive", metadata={"choices": ("positive", "negative"),
        "help": "an uncertain label (-1) in the F1 and the strata: positive (f1chexbert's rrg mode, the common "
                "CheXbert F1) | negative (sdrlib.metrics.clinical)"})


def labeler_setup(ctx: ScoreContext) -> Labeler:
    """``(name, label_fn, detail)`` of the ``backend`` setting; MetricUnavailable when it cannot run."""
    try:
        return get_labeler(ctx.settings_of("clinical").backend)
    except (ImportError, BackendUnavailable) as e:
        raise MetricUnavailable(f"{why_unavailable('labeler')}: {e}") from None


def _compute(ctx: ScoreContext, setup: Labeler) -> dict[str, list[MetricResult]]:
    bname, label_fn, detail = setup
    texts = sorted({t for s in ctx.sections for t in ctx.predictions[s] + ctx.references[s] if t})
    lab: dict[str, Any] = dict(zip(texts, label_fn(texts)))
    out = {}
    for s in ctx.sections:
        pl = [lab[t] if t else {} for t in ctx.predictions[s]]  # empty text asserts nothing
        rl = [lab[t] if t else {} for t in ctx.references[s]]
        out[s] = clinical_results(pl, rl, bname, defined=ctx.defined[s], uncertain=ctx.settings_of("clinical").uncertain,
                                  backend_detail=detail)
    return out


PAPER_NAMES = (
    PaperMetric(("CheXbert F1", "CXB-14", "CXB-F1"), ("clinical_f1_macro14",), "clinical", "paper",
                "'CheXbert macro F1' over the 14 CheXpert observations (Sec. 4; CXB-14 in Tabs. 3, 23); "
                "backend after '@': the official CheXbert when installed, else the offline labeler",
                label="CheXpert-14 macro F1", show_backend=True),
    PaperMetric(("CheXpert-14 micro F1",), ("clinical_f1_micro14",), "clinical", "ours",
                "micro F1 over the 14 observations (EditGRPO's reward uses CheXbert micro-F1-14)", show_backend=True),
    PaperMetric(("CheXpert-5 macro F1",), ("clinical_f1_macro5",), "clinical", "ours",
                "macro F1 over the 5 common observations", show_backend=True),
    PaperMetric(("clin-F1 (sample)",), ("clinical_f1_sample",), "clinical", "ours",
                "per-report (example-based) F1 of the 14 positive labels, 1.0 when neither report has one, averaged "
                "over reports: a per-sample clinical metric for oracle picks, strata and bootstraps. Not CXB-14: "
                "a normal report read as normal scores 1.0, so it can rise while the corpus macro F1 falls "
                "(docs/glossary.md)"),
)

register_metric_group(MetricGroup("clinical", compute=_compute, available=labeler_setup, paper_names=PAPER_NAMES,
                                  versions=("f1chexbert",), settings=ClinicalSettings,
                                  description="CheXpert-14 label F1 (CheXbert or the offline labeler)"))
