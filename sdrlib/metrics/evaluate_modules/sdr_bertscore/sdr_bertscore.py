"""BERTScore (bert-score) per pair from a LOCAL backbone, as an offline `evaluate` module.

The caller passes ``model_type`` (a Hub id already in the local cache, or a
local folder) and ``num_layers`` explicitly; nothing is downloaded here when
``HF_HUB_OFFLINE=1``. Scorers are cached per (model_type, num_layers, rescale)
for the life of the process, and all pairs go through bert-score in batches.

Empty candidates or references get P = R = F1 = 0.0 without calling bert-score
(bert-score 0.3.13 cannot encode an empty string under transformers 5).
Baseline rescaling only when a baseline file is given (bert-score ships them
for its Hub model names, e.g. roberta-large, not for local folders).
"""

import datasets
import evaluate

_SCORERS = {}

_KWARGS = """
Args:
    predictions, references: lists of str.
    model_type: Hub id in the local cache or a local model folder.
    num_layers: which hidden layer to use (1-based count of layers kept).
    batch_size: pairs per forward pass (default 64).
    rescale_with_baseline / baseline_path: optional baseline rescaling.
    device: "cpu" (default) or "cuda".
Returns:
    precision, recall, f1: lists of float per pair.
Example:
    >>> m.compute(predictions=["a"], references=["a"], model_type=path, num_layers=6)["f1"]
    [1.0]
"""


def _scorer(model_type, num_layers, batch_size, rescale, baseline_path, device, lang):
    from bert_score import BERTScorer

    key = (model_type, num_layers, bool(rescale), baseline_path, device, lang)
    if key not in _SCORERS:
        _SCORERS[key] = BERTScorer(model_type=model_type, num_layers=num_layers, batch_size=batch_size,
                                   lang=lang, rescale_with_baseline=bool(rescale),
                                   baseline_path=baseline_path, device=device)
    scorer = _SCORERS[key]
    scorer.batch_size = batch_size
    return scorer


class SdrBertscore(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="BERTScore precision/recall/F1 per pair from a local backbone.",
            citation="Zhang et al., BERTScore: Evaluating Text Generation with BERT, ICLR 2020.",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://github.com/Tiiiger/bert_score"],
        )

    def _compute(self, predictions, references, model_type=None, num_layers=None, batch_size=64,
                 rescale_with_baseline=False, baseline_path=None, device="cpu", lang="en"):
        if model_type is None or num_layers is None:
            raise ValueError("sdr_bertscore needs model_type and num_layers (no defaults, no download)")
        n = len(predictions)
        p_out, r_out, f_out = [0.0] * n, [0.0] * n, [0.0] * n
        keep = [i for i in range(n) if predictions[i].strip() and references[i].strip()]
        if keep:
            scorer = _scorer(model_type, int(num_layers), int(batch_size), rescale_with_baseline,
                             baseline_path, device, lang)
            P, R, F = scorer.score([predictions[i] for i in keep], [references[i] for i in keep],
                                   batch_size=int(batch_size))
            for j, i in enumerate(keep):
                p_out[i], r_out[i], f_out[i] = float(P[j]), float(R[j]), float(F[j])
        return {"precision": p_out, "recall": r_out, "f1": f_out}
