"""``"meteor"``: METEOR per sample with WordNet 3.0 synonyms (nltk); corpus value = mean.

Without a local WordNet (:class:`MeteorSettings`, the profile's ``metrics.meteor.wordnet_dir``, set to ``None``, or
none installed) the group still runs as ``meteor_exact_stem``
(exact + stem matches only) and the suite notes ``unavailable["meteor_wordnet"]``; the WordNet version goes into
the provenance. The shipped module ``evaluate_modules/sdr_meteor``; WordNet from :mod:`sdrlib.metrics.wordnet`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from sdrlib.metrics._evaluate import run_module, scatter
from sdrlib.metrics.backends import package_version
from sdrlib.metrics.base import MetricResult, mean_result
from sdrlib.metrics.wordnet import load_wordnet
from sdrlib.metrics.registry import MetricGroup, PaperMetric, ScoreContext, register_metric_group

__all__ = ["MeteorSettings", "meteor_section"]

#: the note the suite records when METEOR runs without WordNet
NO_WORDNET = ("WordNet not found: METEOR reported as meteor_exact_stem "
              "(apt-get install --no-install-recommends wordnet-base)")


@dataclass(frozen=True)
class MeteorSettings:
    """The group's options: the profile's ``metrics.meteor`` section (``ctx.settings_of("meteor")``)."""

    wordnet_dir: str | None = field(default="auto", metadata={"path": True,
        "help": "WordNet 3.0 dict folder for METEOR (auto: $SDR_WORDNET_DIR, /usr/share/wordnet, nltk_data; "
                "null: no WordNet, METEOR as meteor_exact_stem)"})


def _available(ctx: ScoreContext) -> Any:
    """The WordNet reader (or ``None``: METEOR runs as ``meteor_exact_stem`` and a note says so)."""
    wordnet_dir = ctx.settings_of("meteor").wordnet_dir
    wordnet = load_wordnet(wordnet_dir) if wordnet_dir is not None else None
    if wordnet is None:
        ctx.unavailable["meteor_wordnet"] = NO_WORDNET
    return wordnet


def meteor_section(predictions: Sequence[str], references: Sequence[str], defined: np.ndarray | None = None,
                   setup: Any = None) -> list[MetricResult]:
    """``meteor`` (``setup``: a WordNet reader) or ``meteor_exact_stem`` (``setup=None``) of one section."""
    wordnet = setup
    r, idx, n = run_module("sdr_meteor", predictions, references, defined, wordnet=wordnet)
    if wordnet is not None:
        name, backend = "meteor", f"nltk=={package_version('nltk')} + WordNet {wordnet.get_version()}"
    else:
        name, backend = "meteor_exact_stem", f"nltk=={package_version('nltk')} exact+stem (no WordNet)"
    return [mean_result(name, backend, scatter(r["meteor"] if r else [], idx, n))]


def _provenance(wordnet: Any) -> dict[str, str]:
    return {"wordnet": wordnet.get_version() if wordnet is not None else "absent"}


PAPER_NAMES = (
    PaperMetric(("METEOR",), ("meteor", "meteor_exact_stem"), "meteor", "paper",
                "Tabs. 3, 9, 13, 17, 21, 23-28; meteor_exact_stem (no synonyms) only when WordNet is missing"),
)

register_metric_group(MetricGroup("meteor", section=meteor_section, available=_available, paper_names=PAPER_NAMES,
                                  versions=("nltk",), provenance=_provenance, description="METEOR with WordNet (nltk)",
                                  settings=MeteorSettings))
