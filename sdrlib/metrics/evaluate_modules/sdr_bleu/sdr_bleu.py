"""Sentence and corpus BLEU-1..4 with sacrebleu, as an offline `evaluate` module.

Loaded from this folder by ``sdrlib.metrics.nlg`` (never from the Hub). Scores
are on the 0-1 scale (sacrebleu's 0-100 divided by 100).

- sentence BLEU-n: ``sacrebleu.metrics.BLEU(max_ngram_order=n,
  effective_order=True)`` (sacrebleu's default ``exp`` smoothing) per pair;
- corpus BLEU-n: the same BLEU over the whole corpus (summed n-gram counts);
All values come from one pass of sacrebleu's n-gram counting and
``BLEU.compute_bleu`` (identical to ``sentence_score`` / ``corpus_score``,
checked in tests/metrics/test_metrics.py).

- ``stats``: sacrebleu's per-pair sufficient statistics for order 4
  ``[hyp_len, ref_len, correct_1..4, total_1..4]``, so that corpus BLEU of any
  subset or bootstrap resample is a sum of rows (see ``corpus_bleu_from_stats``).

Leaves out multiple references per prediction and sacrebleu's signature string.
"""

import datasets
import evaluate
import numpy as np
import sacrebleu
from sacrebleu.metrics import BLEU

_DESCRIPTION = "Sentence and corpus BLEU-1..4 (sacrebleu), per pair and per corpus, 0-1 scale."
_KWARGS = """
Args:
    predictions: list of str.
    references: list of str (one reference per prediction).
    max_order: highest n-gram order (default 4).
    lowercase: lowercase before tokenising (default True).
    tokenize: sacrebleu tokenizer name (default "13a").
Returns:
    sentence_bleu_<n>: list of float per pair; corpus_bleu_<n>: float; stats: list of
    [hyp_len, ref_len, correct_1..4, total_1..4] per pair.
Example:
    >>> m.compute(predictions=["a b c d"], references=["a b c d"])["corpus_bleu_4"]
    1.0
"""


def corpus_bleu_from_stats(summed, order, smooth_method="exp") -> float:
    """Corpus BLEU-``order`` (0-1) from summed order-4 stats ``[hyp, ref, c1..c4, t1..t4]``."""
    summed = [int(round(x)) for x in summed]
    correct = summed[2:2 + order]
    total = summed[6:6 + order]
    score = BLEU.compute_bleu(correct, total, summed[0], summed[1],
                              smooth_method=smooth_method, max_ngram_order=order)
    return score.score / 100.0


class SdrBleu(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Post, A Call for Clarity in Reporting BLEU Scores, WMT 2018.",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://github.com/mjpost/sacrebleu"],
        )

    def _compute(self, predictions, references, max_order=4, lowercase=True, tokenize="13a"):
        # One pass of n-gram counting; every BLEU below is computed from these counts
        # exactly as sacrebleu's sentence_score / corpus_score do (tests compare with them).
        full = BLEU(max_ngram_order=max_order, lowercase=lowercase, tokenize=tokenize)
        refs = [list(references)]
        stats = np.asarray(full._extract_corpus_statistics(list(predictions), refs),  # no public per-pair API
                           dtype=np.int64).reshape(len(predictions), 2 + 2 * max_order)
        out = {"sacrebleu_version": sacrebleu.__version__}
        summed = stats.sum(axis=0)
        for n in range(1, max_order + 1):
            out[f"sentence_bleu_{n}"] = [
                BLEU.compute_bleu(row[2:2 + n].tolist(), row[2 + max_order:2 + max_order + n].tolist(),
                                  int(row[0]), int(row[1]), smooth_method="exp", effective_order=True,
                                  max_ngram_order=n).score / 100.0 for row in stats]
            out[f"corpus_bleu_{n}"] = BLEU.compute_bleu(
                summed[2:2 + n].tolist(), summed[2 + max_order:2 + max_order + n].tolist(),
                int(summed[0]), int(summed[1]), smooth_method="exp", max_ngram_order=n).score / 100.0
        out["stats"] = stats.tolist()
        return out
