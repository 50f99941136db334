"""``"bleu"``: sentence BLEU-1..4 (mean over samples) and corpus BLEU-1..4 (summed n-gram counts), via sacrebleu.

``bleu_s<n>``: sacrebleu sentence BLEU-n per sample (effective order), corpus value = mean; ``bleu_c<n>``: corpus
BLEU-n from the summed n-gram statistics (no sample values; 0 when the corpus has no n-gram of order n, e.g. 1-3
word impressions), checked against sacrebleu's own corpus score. 13a tokens, lower-cased, exponential smoothing;
the shipped module ``evaluate_modules/sdr_bleu``. Leaves out multi-reference BLEU.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from sdrlib.metrics._evaluate import run_module, scatter, stats_full
from sdrlib.metrics.backends import package_version
from sdrlib.metrics.base import MetricResult, mean_result, stats_result
from sdrlib.metrics.registry import MetricGroup, PaperMetric, register_metric_group

__all__ = ["bleu_section"]


def _corpus_bleu(summed, k: int) -> np.ndarray:
    """Corpus BLEU-``k`` of summed sacrebleu statistics ``(B, 10)`` -> ``(B,)`` (NaN where nothing was scored)."""
    from sacrebleu.metrics import BLEU

    s = np.atleast_2d(summed)
    vals = []
    for row in s:
        if row[0] == 0 and row[1] == 0:
            vals.append(np.nan)
            continue
        score = BLEU.compute_bleu([int(x) for x in row[2:2 + k]], [int(x) for x in row[6:6 + k]],
                                int(row[0]), int(row[1]), smooth_method="exp", max_ngram_order=k)
        vals.append(score.score / 100.0)
    return np.asarray(vals)


def _corpus_reducer(k: int):
    """:func:`_corpus_bleu` of order ``k``: a partial of a module function, so the result pickles (scores come back
    from worker processes: :func:`sdrlib.experiments.scoring.score_all`)."""
    return functools.partial(_corpus_bleu, k=k)


def bleu_section(predictions: Sequence[str], references: Sequence[str], defined: np.ndarray | None = None,
                 setup: Any = None) -> list[MetricResult]:
    """``bleu_s1..4`` and ``bleu_c1..4`` of one section (``n`` samples; ``defined`` bool ``(n,)``, default all)."""
    r, idx, n = run_module("sdr_bleu", predictions, references, defined)
    backend = f"sacrebleu=={package_version('sacrebleu')} tok=13a lowercase exp-smoothing"
    out = []
    for k in range(1, 5):
        vals = r[f"sentence_bleu_{k}"] if r else []
        out.append(mean_result(f"bleu_s{k}", backend + " effective_order", scatter(vals, idx, n)))
    stats = stats_full(r["stats"] if r else [], idx, n, 10)
    for k in range(1, 5):
        res = stats_result(f"bleu_c{k}", backend, stats, _corpus_reducer(k))
        if r and abs(res.corpus - r[f"corpus_bleu_{k}"]) > 1e-9:  # stats route == sacrebleu corpus score
            raise RuntimeError(f"corpus BLEU-{k} from stats {res.corpus} != sacrebleu {r[f'corpus_bleu_{k}']}")
        out.append(res)
    return out


PAPER_NAMES = (
    *(PaperMetric((f"S-BLEU-{n}",), (f"bleu_s{n}",), "bleu", "paper", "Tabs. 7, 11, 15, 19 (sentence BLEU)")
      for n in range(1, 5)),
    *(PaperMetric((f"C-BLEU-{n}",), (f"bleu_c{n}",), "bleu", "paper", "Tabs. 7, 11, 15, 19 (corpus BLEU)")
      for n in range(1, 5)),
)

register_metric_group(MetricGroup("bleu", section=bleu_section, paper_names=PAPER_NAMES, versions=("sacrebleu",),
                                  description="sentence and corpus BLEU-1..4 (sacrebleu)"))
