"""NLG metrics through `evaluate` modules shipped inside sdrlib (never the Hub).

:func:`load_module` loads ``sdrlib/metrics/evaluate_modules/<name>/<name>.py``
with ``evaluate.load(<local folder>)``; the modules wrap sacrebleu
(BLEU, chrF++), rouge-score (ROUGE), nltk (METEOR), bert-score (BERTScore) and
unbabel-comet (COMET). :func:`nlg_results` runs the requested ones on one
section and returns :class:`~sdrlib.metrics.base.MetricResult` objects:

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

from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from sdrlib.metrics.backends import Backbone, package_version
from sdrlib.metrics.base import MetricResult, mean_result, stats_result

__all__ = ["MODULES_DIR", "MODULE_NAMES", "load_module", "nlg_results", "NLG_GROUPS", "bertscore_f1",
           "bertscore_result"]

MODULES_DIR = Path(__file__).resolve().parent / "evaluate_modules"
MODULE_NAMES = ("sdr_bleu", "sdr_rouge", "sdr_meteor", "sdr_chrf", "sdr_bertscore", "sdr_comet")
NLG_GROUPS = ("bleu", "rouge", "meteor", "chrf", "bertscore", "comet")


@lru_cache(maxsize=None)
def load_module(name: str):
    """Load a shipped `evaluate` module by name (``sdr_bleu`` ...), in memory, offline."""
    if name not in MODULE_NAMES:
        raise ValueError(f"unknown metric module {name!r}; shipped: {MODULE_NAMES}")
    import evaluate

    return evaluate.load(str(MODULES_DIR / name), keep_in_memory=True)


def _scatter(values: Sequence[float], idx: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, np.nan)
    out[idx] = np.asarray(values, dtype=np.float64)
    return out


def _stats_full(stats_sub, idx: np.ndarray, n: int, k: int) -> np.ndarray:
    out = np.zeros((n, k))
    if len(idx):
        out[idx] = np.asarray(stats_sub, dtype=np.float64).reshape(len(idx), k)
    return out


def _bleu(preds, refs, idx, n) -> list[MetricResult]:
    m = load_module("sdr_bleu")
    from sacrebleu.metrics import BLEU

    backend = f"sacrebleu=={package_version('sacrebleu')} tok=13a lowercase exp-smoothing"
    r = m.compute(predictions=preds, references=refs) if len(idx) else None
    out = []
    for k in range(1, 5):
        vals = r[f"sentence_bleu_{k}"] if r else []
        out.append(mean_result(f"bleu_s{k}", backend + " effective_order", _scatter(vals, idx, n)))
    stats = _stats_full(r["stats"] if r else [], idx, n, 10)
    for k in range(1, 5):
        def reducer(summed, k=k):
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
        res = stats_result(f"bleu_c{k}", backend, stats, reducer)
        if r and abs(res.corpus - r[f"corpus_bleu_{k}"]) > 1e-9:  # stats route == sacrebleu corpus score
            raise RuntimeError(f"corpus BLEU-{k} from stats {res.corpus} != sacrebleu {r[f'corpus_bleu_{k}']}")
        out.append(res)
    return out


def _rouge(preds, refs, idx, n) -> list[MetricResult]:
    m = load_module("sdr_rouge")
    r = m.compute(predictions=preds, references=refs) if len(idx) else None
    backend = f"rouge-score=={package_version('rouge-score')} stemmer"
    return [mean_result(t, backend, _scatter(r[t] if r else [], idx, n)) for t in ("rouge1", "rouge2", "rougeL")]


def _meteor(preds, refs, idx, n, wordnet) -> list[MetricResult]:
    m = load_module("sdr_meteor")
    r = m.compute(predictions=preds, references=refs, wordnet=wordnet) if len(idx) else None
    if wordnet is not None:
        name, backend = "meteor", f"nltk=={package_version('nltk')} + WordNet {wordnet.get_version()}"
    else:
        name, backend = "meteor_exact_stem", f"nltk=={package_version('nltk')} exact+stem (no WordNet)"
    return [mean_result(name, backend, _scatter(r["meteor"] if r else [], idx, n))]


def _chrf(preds, refs, idx, n) -> list[MetricResult]:
    m = load_module("sdr_chrf")
    from sacrebleu.metrics import CHRF

    r = m.compute(predictions=preds, references=refs) if len(idx) else None
    k = len(r["stats"][0]) if r else 24
    stats = _stats_full(r["stats"] if r else [], idx, n, k)
    metric = CHRF(word_order=2)

    def reducer(summed):
        s = np.atleast_2d(summed)
        return np.asarray([metric._compute_score_from_stats([int(x) for x in row]).score / 100.0
                           if row.any() else np.nan for row in s])

    backend = f"sacrebleu=={package_version('sacrebleu')} chrF++ (char 6, word 2, beta 2)"
    return [stats_result("chrf++", backend, stats, reducer, sample=_scatter(r["sentence_chrf"] if r else [], idx, n))]


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
    """Wrap per-sample BERTScore F1 (NaN = undefined) as ``bertscore_f1@<backbone>``."""
    backend = f"bert-score=={package_version('bert-score')} {backbone.label} no-idf"
    return mean_result(f"bertscore_f1@{backbone.label}", backend, values)


def _bertscore(preds, refs, idx, n, backbone: Backbone, batch_size: int, device: str) -> list[MetricResult]:
    return [bertscore_result(_scatter(bertscore_f1(preds, refs, backbone, batch_size, device), idx, n), backbone)]


def _comet(preds, refs, idx, n, checkpoint: Path, label: str) -> list[MetricResult]:
    m = load_module("sdr_comet")
    r = m.compute(predictions=preds, references=refs, checkpoint=str(checkpoint)) if len(idx) else None
    backend = f"unbabel-comet=={package_version('unbabel-comet')} {label}"
    return [mean_result(f"comet@{label}", backend, _scatter(r["scores"] if r else [], idx, n))]


def nlg_results(predictions: Sequence[str], references: Sequence[str], *, groups: Sequence[str],
                defined: np.ndarray | None = None, wordnet=None, backbone: Backbone | None = None,
                bertscore_batch_size: int = 64, device: str = "cpu",
                comet_checkpoint: Path | None = None, comet_label: str = "") -> list[MetricResult]:
    """NLG metrics of one section. ``groups`` is a subset of :data:`NLG_GROUPS`.

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
    """
    n = len(predictions)
    if len(references) != n:
        raise ValueError(f"{n} predictions but {len(references)} references")
    unknown = set(groups) - set(NLG_GROUPS)
    if unknown:
        raise ValueError(f"unknown NLG metric groups {sorted(unknown)}; known: {NLG_GROUPS}")
    ok = np.ones(n, bool) if defined is None else np.asarray(defined, bool)
    idx = np.flatnonzero(ok)
    preds = [predictions[i] for i in idx]
    refs = [references[i] for i in idx]
    out: list[MetricResult] = []
    if "bleu" in groups:
        out += _bleu(preds, refs, idx, n)
    if "rouge" in groups:
        out += _rouge(preds, refs, idx, n)
    if "meteor" in groups:
        out += _meteor(preds, refs, idx, n, wordnet)
    if "chrf" in groups:
        out += _chrf(preds, refs, idx, n)
    if "bertscore" in groups:
        if backbone is None:
            raise ValueError("bertscore requested without a backbone")
        out += _bertscore(preds, refs, idx, n, backbone, bertscore_batch_size, device)
    if "comet" in groups:
        if comet_checkpoint is None:
            raise ValueError("comet requested without a checkpoint")
        out += _comet(preds, refs, idx, n, comet_checkpoint, comet_label)
    return out
