"""NLG metrics of one section through `evaluate` modules shipped inside sdrlib (never the Hub).

:func:`load_module` loads ``sdrlib/metrics/evaluate_modules/<name>/<name>.py``
with ``evaluate.load(<local folder>)``; the modules wrap sacrebleu
(BLEU, chrF++), rouge-score (ROUGE), nltk (METEOR), bert-score (BERTScore) and
unbabel-comet (COMET). Each group is a registration in :mod:`sdrlib.metrics.groups`
(:mod:`sdrlib.metrics.registry`); :func:`nlg_results` runs the requested ones on one
section (each group's ``section`` scorer) and returns :class:`~sdrlib.metrics.base.MetricResult` objects:

=====================  =====================================================
name                   value (0-1)
=====================  =====================================================
``bleu_s1..bleu_s4``   sentence BLEU-n per sample; corpus value = mean
``bleu_c1..bleu_c4``   corpus BLEU-n (summed n-gram counts); no sample values;
                       0 when the corpus has no n-gram of order n (1-3 word impressions)
``rouge1/rouge2/rougeL`` ROUGE F1 per sample (Porter stemmer); mean
``meteor``             METEOR with WordNet 3.0 synonyms; mean
``meteor_exact_stem``  the same without WordNet (used only when WordNet is missing)
``chrf++``             sentence chrF++ per sample; corpus = sacrebleu corpus chrF++
``bertscore_f1@<bb>``  BERTScore F1, backbone ``<bb>`` e.g. ``all-MiniLM-L6-v2/L6``
``comet@<model>``      COMET segment score (only when installed + checkpoint local)
=====================  =====================================================

Samples whose reference is undefined (``defined=False``) are not sent to any
scorer; they get ``NaN`` and zero weight in corpus values. Empty predictions
are scored (0 for every metric here, by each library's own rule or, for
BERTScore, by definition).

Leaves out multi-reference scoring and BERTScore idf weighting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from sdrlib.metrics._evaluate import MODULE_NAMES, MODULES_DIR, load_module
from sdrlib.metrics.backends import Backbone
from sdrlib.metrics.base import MetricResult
from sdrlib.metrics.groups.bertscore import BertScoreSetup, bertscore_f1, bertscore_result
from sdrlib.metrics.groups.comet import CometSetup
from sdrlib.metrics.registry import metric_group, metric_groups

__all__ = ["MODULES_DIR", "MODULE_NAMES", "load_module", "nlg_results", "NLG_GROUPS", "nlg_groups", "bertscore_f1",
           "bertscore_result"]


def nlg_groups() -> tuple[str, ...]:
    """Registered groups that score one section alone (a ``section`` scorer): :func:`nlg_results` runs these."""
    return tuple(g.name for g in metric_groups() if g.section is not None)


def __getattr__(name: str) -> Any:
    if name == "NLG_GROUPS":  # read the registry each time: a group registered later is one too
        return nlg_groups()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def nlg_results(predictions: Sequence[str], references: Sequence[str], *, groups: Sequence[str],
                defined: np.ndarray | None = None, wordnet: Any = None, backbone: Backbone | None = None,
                bertscore_batch_size: int = 64, device: str = "cpu",
                comet_checkpoint: Path | None = None, comet_label: str = "") -> list[MetricResult]:
    """NLG metrics of one section: the ``groups`` asked for (a subset of :func:`nlg_groups`), in scoring order.

    Parameters
    ----------
    predictions, references : list of str, length n
    defined : bool array (n,), optional
        Samples to score (default: all); the rest get NaN and zero weight.
    wordnet : nltk WordNet reader or None
        None gives ``meteor_exact_stem`` instead of ``meteor``.
    backbone : Backbone
        Required when ``"bertscore"`` is requested.
    comet_checkpoint : Path
        Required when ``"comet"`` is requested.

    The keyword arguments are the setups of the built-in groups that need one (``meteor``: the WordNet reader,
    ``bertscore``, ``comet``); any other group gets ``setup=None``.
    """
    n = len(predictions)
    if len(references) != n:
        raise ValueError(f"{n} predictions but {len(references)} references")
    known = nlg_groups()
    unknown = set(groups) - set(known)
    if unknown:
        raise ValueError(f"unknown NLG metric groups {sorted(unknown)}; known: {known}")
    setups = {"meteor": wordnet,
              "bertscore": None if backbone is None else BertScoreSetup(backbone, bertscore_batch_size, device),
              "comet": None if comet_checkpoint is None else CometSetup(comet_checkpoint, comet_label)}
    ok = np.ones(n, bool) if defined is None else np.asarray(defined, bool)
    out: list[MetricResult] = []
    for g in known:
        if g in groups:
            out += metric_group(g).section(predictions, references, ok, setups.get(g))
    return out
