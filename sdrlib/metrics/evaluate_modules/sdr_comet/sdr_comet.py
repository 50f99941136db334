"""COMET (unbabel-comet) per pair from a LOCAL checkpoint, as an offline `evaluate` module.

Only used when ``unbabel-comet`` is installed and a checkpoint file exists
locally (``sdrlib.metrics.backends.comet_checkpoint``). Report generation has
no source sentence; the source is the empty string unless ``sources`` is given.
Not exercised by the test suite when COMET is absent (the usual case).
"""

import datasets
import evaluate

_MODELS = {}


class SdrComet(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="COMET segment scores from a local checkpoint.",
            citation="Rei et al., COMET, EMNLP 2020.",
            inputs_description="predictions, references: lists of str; checkpoint: path to model.ckpt",
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://github.com/Unbabel/COMET"],
        )

    def _compute(self, predictions, references, checkpoint=None, sources=None, batch_size=32, gpus=0):
        from comet import load_from_checkpoint

        if checkpoint is None:
            raise ValueError("sdr_comet needs a local checkpoint path")
        if checkpoint not in _MODELS:
            _MODELS[checkpoint] = load_from_checkpoint(checkpoint)
        src = list(sources) if sources is not None else [""] * len(predictions)
        data = [{"src": s, "mt": p, "ref": r} for s, p, r in zip(src, predictions, references)]
        out = _MODELS[checkpoint].predict(data, batch_size=batch_size, gpus=gpus, progress_bar=False)
        return {"scores": [float(x) for x in out.scores]}
