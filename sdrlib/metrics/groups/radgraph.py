"""``"radgraph"``: RadGraph F1 per sample at the package's three levels, ``radgraph_<level>@<model>``.

Through ``radgraph.F1RadGraph(reward_level="all")`` on the model folder the probe
(:func:`sdrlib.metrics.backends.radgraph_model_dir`) finds; none: the group is unavailable. All or nothing: a
failure in any section (e.g. out of memory in the second) drops every section's RadGraph values and names the
failure, so no table mixes scored and unscored parts. The model is :class:`RadGraphSettings`, the profile's
``metrics.radgraph.model``. Which paper name each level answers to (RG-E, RG-ER,
RadGraph F1) is in ``PAPER_NAMES`` below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sdrlib.errors import SDRError
from sdrlib.metrics import radgraph_compat
from sdrlib.metrics.backends import package_version, radgraph_model_dir, radgraph_unavailable_reason
from sdrlib.metrics.base import MetricResult, mean_result
from sdrlib.metrics.registry import MetricGroup, MetricUnavailable, PaperMetric, ScoreContext, register_metric_group

__all__ = ["RADGRAPH_LEVELS", "RadGraphOutputError", "RadGraphSettings", "radgraph_results"]

RADGRAPH_LEVELS = ("simple", "partial", "complete")


class RadGraphOutputError(SDRError, RuntimeError):
    """``F1RadGraph`` returned per-sample rewards in a layout other than the documented level-major one."""


@dataclass(frozen=True)
class RadGraphSettings:
    """The group's options: the profile's ``metrics.radgraph`` section (``ctx.settings_of("radgraph")``)."""

    model: str = field(default="radgraph", metadata={"nonempty": True,
        "help": "F1RadGraph model_type, unpacked in the radgraph cache (sdrlib.metrics.backends.radgraph_model_dir)"})


def _radgraph_scorer(model_type: str, model_dir: Path) -> Any:
    """The package's ``F1RadGraph(reward_level="all")`` on the model folder the probe found, built once per
    :func:`~sdrlib.metrics.suite.score_reports` call.

    Under transformers 5 :func:`sdrlib.metrics.radgraph_compat.install` first gives radgraph 0.1.18's bundled
    allennlp the tokenizer methods it calls (a radgraph release it was not tested with is refused with
    :class:`~sdrlib.metrics.radgraph_compat.RadGraphVersionError`; the suite records it).
    """
    radgraph_compat.install()
    from radgraph import F1RadGraph

    try:
        return F1RadGraph(reward_level="all", model_type=model_type, model_cache_dir=str(model_dir.parent))
    except Exception as e:  # noqa: BLE001 - re-raised with what failed; score_reports records it
        raise RuntimeError(f"radgraph could not build its {model_type!r} annotator: {type(e).__name__}: {e}") from e


def radgraph_results(scorer: Any, preds: list[str], refs: list[str], ok: np.ndarray,
                     model_type: str) -> list[MetricResult]:
    """RadGraph F1 per sample and level via ``radgraph.F1RadGraph(reward_level="all")``, one section.

    The package (0.1.18) returns ``(mean_reward, reward_list, hyp_annotations, ref_annotations)`` with
    ``reward_list`` **level-major**: a tuple of three lists (``simple``, ``partial``, ``complete``), each
    with one value per report pair, so sample ``i`` of level ``j`` is ``reward_list[j][i]`` (its shape is
    checked, then transposed to samples x levels ``(n, 3)``).

    Only samples with a reference section are passed (``ok``, bool ``(n,)``; the others stay NaN, as for every
    metric). An empty prediction gets the package's own value for an empty report, 0 at every level; so does a
    report in which the annotator finds no entity (``compute_reward``). Tested against the real package
    with only its neural annotator replaced by a deterministic stand-in (tests/radgraph_standin.py).
    """
    idx = np.flatnonzero(ok)
    vals = np.full((len(preds), 3), np.nan)
    if len(idx):
        _, rewards, _, _ = scorer(refs=[refs[i] for i in idx], hyps=[preds[i] for i in idx])
        r = np.asarray(rewards, dtype=np.float64)
        if r.shape != (3, len(idx)):
            raise RadGraphOutputError(f"F1RadGraph(reward_level='all') returned rewards of shape {r.shape}; "
                                    f"expected level-major (3, {len(idx)}) as radgraph 0.1.18 documents")
        vals[idx] = r.T
    backend = f"radgraph=={package_version('radgraph')} {model_type}"
    return [mean_result(f"radgraph_{lvl}@{model_type}", backend, vals[:, j])
            for j, lvl in enumerate(RADGRAPH_LEVELS)]


def _available(ctx: ScoreContext) -> Path:
    model = ctx.settings_of("radgraph").model
    rg_dir = radgraph_model_dir(model)
    if rg_dir is None:
        raise MetricUnavailable(radgraph_unavailable_reason(model))
    return rg_dir


def _compute(ctx: ScoreContext, rg_dir: Path) -> dict[str, list[MetricResult]]:
    model = ctx.settings_of("radgraph").model
    try:
        scorer = _radgraph_scorer(model, rg_dir)
        return {s: radgraph_results(scorer, ctx.predictions[s], ctx.references[s], ctx.defined[s], model)
                for s in ctx.sections}
    except Exception as e:  # noqa: BLE001 - a broken optional scorer must not sink the run
        raise MetricUnavailable(f"radgraph failed to run: {type(e).__name__}: {e}") from e


PAPER_NAMES = (
    PaperMetric(("RadGraph F1", "RG-F1"), ("radgraph_complete",), "radgraph", "interpretation",
                "the paper never says which F1RadGraph level its 'RadGraph F1' (Tabs. 1-2, 5-6, 10, 14, 18, 22; "
                "RG-F1 in Tabs. 3, 4, 23) is. We take the complete level (relations matched with their "
                "targets; the package README's rg_bar_er): Tabs. 10-22 list it as a third row besides RG-E and "
                "RG-ER, the package's other two levels, and it is at or below RG-ER in all 80 cells, as the "
                "strictest level would be; Tab. 24's note calls Tab. 3's RG-F1 'the relation-aware variant', and "
                "Tab. 3's random baselines equal Tab. 1's RadGraph F1 row (Qwen3-VL-4B: 0.242 / 0.282 / 0.242 "
                "for R_exact / R_Cham / R_Haus). The note's 'not defined per-sample' does not hold for the "
                "package, which scores every level per report: ours is the mean of per-report values"),
    PaperMetric(("RG-E",), ("radgraph_simple",), "radgraph", "package",
                "Tabs. 10, 14, 18, 22 (entities only). Also what Tabs. 24-28 and Fig. 5 call RG-F1: "
                "'per-sample RadGraph entity F1' (Tab. 24's note)"),
    PaperMetric(("RG-ER",), ("radgraph_partial",), "radgraph", "package",
                "Tabs. 10, 14, 18, 22 (entities and whether each has a relation)"),
)

register_metric_group(MetricGroup("radgraph", compute=_compute, available=_available, paper_names=PAPER_NAMES,
                                  versions=("radgraph",), description="RadGraph F1 at three levels (radgraph)",
                                  settings=RadGraphSettings))
