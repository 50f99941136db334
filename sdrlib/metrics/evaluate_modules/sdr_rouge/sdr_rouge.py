"""ROUGE-1/2/L F1 with Google's rouge-score, as an offline `evaluate` module.

Per pair F-measure with the Porter stemmer on. rouge-score's default tokenizer
lowercases and keeps only ``[a-z0-9]`` tokens, so non-ASCII letters are dropped
(a text made only of them scores 0). The corpus value callers report is the
mean of the per-pair F1 (the common convention, e.g. `evaluate`'s ``rouge``
with ``use_aggregator=False`` then averaged). Leaves out ROUGE-Lsum and
bootstrap aggregation (sdrlib.metrics.significance does resampling).
"""

import datasets
import evaluate
from rouge_score import rouge_scorer

_KWARGS = """
Args:
    predictions: list of str; references: list of str.
    rouge_types: default ("rouge1", "rouge2", "rougeL").
    use_stemmer: default True.
Returns:
    <rouge_type>: list of F1 per pair (0-1).
Example:
    >>> m.compute(predictions=["the cat"], references=["the cat"])["rouge1"]
    [1.0]
"""


class SdrRouge(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="ROUGE-1/2/L F1 per pair (rouge-score).",
            citation="Lin, ROUGE: A Package for Automatic Evaluation of Summaries, 2004.",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://github.com/google-research/google-research/tree/master/rouge"],
        )

    def _compute(self, predictions, references, rouge_types=("rouge1", "rouge2", "rougeL"),
                 use_stemmer=True):
        scorer = rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=use_stemmer)
        out = {t: [] for t in rouge_types}
        for p, r in zip(predictions, references):
            s = scorer.score(r, p)  # score(target, prediction)
            for t in rouge_types:
                out[t].append(float(s[t].fmeasure))
        return out
