"""A deterministic stand-in for RadGraph's neural annotator, for tests only (never imported by sdrlib).

``radgraph.F1RadGraph`` (package ``radgraph`` 0.1.18) builds a ``radgraph.RadGraph`` annotator (a DyGIE
model on a BERT encoder whose weights are downloaded from the Hugging Face Hub) and scores its
annotations with ``radgraph.rewards.compute_reward``. The weights are neither installed nor fetched
here, so :func:`install` swaps only that annotator class, in the module where ``F1RadGraph`` looks it
up, for :class:`StandInAnnotator`: the package's own ``F1RadGraph.__init__`` / ``forward`` (empty
reports, batching of hypotheses and references, the level-major ``reward_list``), its tokeniser
(``radgraph.utils.preprocess_reports``), its post-processing into annotation dicts
(``radgraph.utils.postprocess_reports``) and ``compute_reward`` all run as shipped.

What the stand-in replaces is the model's prediction: a small lexicon tags single tokens as
``Observation::definitely present / definitely absent / uncertain`` (a negation or hedge cue earlier in
the sentence decides) or ``Anatomy::definitely present``; an observation is ``located_at`` the closest
anatomy before it in its sentence, and an anatomy token ``modify`` an anatomy token right after it.
Same text, same annotation, whatever the batch.

Example::

    ann = StandInAnnotator(model_type="radgraph")
    ann(["No left pleural effusion."])["0"]["entities"]["3"]
    # {'tokens': 'effusion', 'label': 'Observation::definitely absent', 'start_ix': 3, 'end_ix': 3,
    #  'relations': [['located_at', '2']]}
"""

from __future__ import annotations

from pathlib import Path

OBSERVATIONS = frozenset("""effusion effusions pneumothorax cardiomegaly edema opacity opacities consolidation
atelectasis enlarged enlargement normal clear nodule mass fracture pneumonia thickening widened widening tube
catheter pacemaker disease abnormality process congestion""".split())
ANATOMY = frozenset("""heart lung lungs pleural left right lower upper lobe base bases mediastinum mediastinal
cardiac silhouette chest apex hilar rib bilateral costophrenic angle zone basilar retrocardiac pulmonary""".split())
NEGATION = frozenset("no without free negative".split())
HEDGE = frozenset("possible may likely cannot suggest suspicious questionable".split())


class StandInAnnotator:
    """Drop-in for ``radgraph.RadGraph``: same constructor keywords, ``__call__(list of str) -> {"0": {...}}``."""

    def __init__(self, batch_size=1, cuda=None, model_type=None, **kwargs):
        self.model_type = (model_type or "radgraph-xl").lower()
        self.calls = 0

    def __call__(self, hyps):
        from radgraph.utils import postprocess_reports, preprocess_reports

        self.calls += 1
        if isinstance(hyps, str):
            hyps = [hyps]
        hyps = ["None" if not s else s for s in hyps]  # as RadGraph.forward does
        docs = preprocess_reports(hyps, self.model_type)
        return postprocess_reports([self._predict(d) for d in docs])

    @staticmethod
    def _predict(doc):
        """One document in the DyGIE output format that ``postprocess_reports`` reads."""
        toks = doc["sentences"][0]
        ner, rel = [], []
        cue, last_anatomy, prev = None, None, None
        for i, t in enumerate(toks):
            w = t.lower()
            if w in (".", ";"):
                cue, last_anatomy, prev = None, None, None
                continue
            if w in NEGATION:
                cue = "definitely absent"
            elif w in HEDGE and cue is None:
                cue = "uncertain"
            if w in OBSERVATIONS:
                ner.append([i, i, f"Observation::{cue or 'definitely present'}"])
                if last_anatomy is not None:
                    rel.append([i, i, last_anatomy, last_anatomy, "located_at"])
                prev = None
            elif w in ANATOMY:
                ner.append([i, i, "Anatomy::definitely present"])
                if prev is not None:
                    rel.append([prev, prev, i, i, "modify"])
                last_anatomy = prev = i
            else:
                prev = None
        return {"doc_key": doc["doc_key"], "sentences": [toks], "predicted_ner": [ner],
                "predicted_relations": [rel]}


def install(monkeypatch, cache_root: Path, model_type: str = "radgraph") -> None:
    """Swap ``radgraph.RadGraph`` for the stand-in inside ``F1RadGraph`` and make the suite's probe see weights.

    The probe (:func:`sdrlib.metrics.backends.radgraph_model_dir`) looks for the unpacked model folder in the
    ``radgraph`` user cache; it is pointed at ``cache_root`` (a temporary folder) holding a placeholder file.
    """
    import radgraph.radgraph as rg_module

    from sdrlib.metrics import backends

    monkeypatch.setattr(rg_module, "RadGraph", StandInAnnotator)
    real = backends._appdirs_cache
    monkeypatch.setattr(backends, "_appdirs_cache",
                        lambda app: Path(cache_root) / app if app == "radgraph" else real(app))
    d = Path(cache_root) / "radgraph" / backends.package_version("radgraph") / model_type
    d.mkdir(parents=True, exist_ok=True)
    (d / "weights.th").write_text("placeholder: the stand-in annotator needs no weights")
