"""chrF++ (character 6-grams + word 2-grams, beta 2) with sacrebleu, as an offline `evaluate` module.

Returns sentence chrF++ per pair, corpus chrF++ (sacrebleu's corpus score from
summed statistics, which is not the mean of sentence scores) and the per-pair
statistics so corpus chrF++ of any subset is a sum of rows. 0-1 scale.
Leaves out multiple references.
"""

import datasets
import evaluate
import numpy as np
from sacrebleu.metrics import CHRF

_KWARGS = """
Args:
    predictions: list of str; references: list of str.
    word_order: 2 for chrF++ (default), 0 for chrF.
Returns:
    sentence_chrf: list of float; corpus_chrf: float; stats: list of per-pair statistics.
Example:
    >>> m.compute(predictions=["abc"], references=["abc"])["corpus_chrf"]
    1.0
"""


def corpus_chrf_from_stats(summed, word_order=2) -> float:
    """Corpus chrF(++) (0-1) from summed per-pair statistics."""
    metric = CHRF(word_order=word_order)
    return metric._compute_score_from_stats([int(round(x)) for x in summed]).score / 100.0


class SdrChrf(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="chrF++ per pair and per corpus (sacrebleu).",
            citation="Popovic, chrF++: words helping character n-grams, WMT 2017.",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://github.com/mjpost/sacrebleu"],
        )

    def _compute(self, predictions, references, word_order=2):
        metric = CHRF(word_order=word_order)
        stats = metric._extract_corpus_statistics(list(predictions), [list(references)])  # one pass
        # sentence chrF++ is sacrebleu's score of that pair's own statistics (what sentence_score does)
        sent = [metric._compute_score_from_stats(list(row)).score / 100.0 for row in stats]
        corpus = metric._compute_score_from_stats(list(np.sum(np.asarray(stats, dtype=np.int64), axis=0))).score
        return {"sentence_chrf": sent, "corpus_chrf": corpus / 100.0,
                "stats": np.asarray(stats, dtype=np.int64).reshape(len(predictions), -1).tolist()}
