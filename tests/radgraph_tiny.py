"""A RadGraph model folder around a small randomly initialised BERT, for tests only (never imported by sdrlib).

``radgraph.RadGraph(model_type=..., model_cache_dir=root)`` (package ``radgraph`` 0.1.18) reads
``root/<model_type>/``: ``config.json`` (its DyGIE configuration, read through ``DotMap``),
``vocabulary/`` (allennlp ``Vocabulary.from_files``: the ``<model_type>__ner_labels`` and
``<model_type>__relation_labels`` namespaces) and ``weights.th`` (the whole DyGIE state dict, loaded with
``strict=True``); the backbone's config and tokenizer are found by the config's ``model_name`` (a hub name
in the released archives, a local folder here) and the backbone is built with ``AutoModel.from_config``,
its weights coming from ``weights.th``. The archives on the hub (``radgraph.tar.gz``) unpack to that folder.

:func:`write_model` writes such a folder with a BERT of 2 layers and width 32 over a WordPiece vocabulary of
a few report words plus ``##`` pieces of single characters, and DyGIE heads (span extractor, NER tagger,
relation extractor; coref and events present but inactive, as in the released configuration) of small
width, every parameter drawn from a seeded normal. Nothing is trained: the annotations are arbitrary but
deterministic, which is what the tests need (the pipeline is radgraph's own).

The weights are assembled without building radgraph's tokenizer (DyGIE's heads with a stand-in embedder
of the backbone's width, plus the backbone's own parameters under the embedder's prefix), so the folder
can be written whether or not :mod:`sdrlib.metrics.radgraph_compat` is in place; ``RadGraph``'s strict load
checks that the keys are exactly the model's.

Example::

    root = write_model(tmp_path)                 # tmp_path/radgraph/{config.json, vocabulary/, weights.th}
    F1RadGraph(reward_level="all", model_type="radgraph", model_cache_dir=str(tmp_path))
"""

from __future__ import annotations

import json
from pathlib import Path

NER_LABELS = ("ANAT-DP", "OBS-DP", "OBS-DA", "OBS-U")  # the radgraph model's entity labels
RELATION_LABELS = ("modify", "located_at", "suggestive_of")
WORDS = ("no acute cardiopulmonary process abnormality the heart is normal in size lungs lung are clear there "
         "left right pleural effusion effusions pneumothorax mild pulmonary edema opacity lower upper lobe base "
         "bibasilar atelectasis consolidation stable unchanged cardiomegaly moderate small large and or of "
         "with without evidence tube seen none possible likely").split()
EMBEDDER_PREFIX = "_embedder.token_embedder_bert._matched_embedder.transformer_model."


class _WidthOnly:
    """Stands in for the text-field embedder while DyGIE's heads are built: only its output width is read."""

    def __init__(self, dim: int):
        self.dim = dim

    def get_output_dim(self) -> int:
        return self.dim


def write_model(root: str | Path, model_type: str = "radgraph", seed: int = 0, hidden: int = 32,
                layers: int = 2, feature_size: int = 8, ff_hidden: int = 16, max_length: int = 64) -> Path:
    """Write ``root/model_type`` (config.json, vocabulary/, weights.th, backbone/) and return that folder."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    from radgraph.allennlp.data import Vocabulary
    from radgraph.dygie.models import dygie

    d = Path(root) / model_type
    backbone = d / "backbone"
    backbone.mkdir(parents=True, exist_ok=True)
    chars = sorted(set("".join(WORDS)) | set("0123456789"))
    words = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,:;-/()") + chars + [f"##{c}" for c in chars]
             + sorted(set(WORDS)))
    BertTokenizer(vocab={w: i for i, w in enumerate(words)}).save_pretrained(backbone)
    torch.manual_seed(seed)
    bert_model = BertModel(BertConfig(vocab_size=len(words), hidden_size=hidden, num_hidden_layers=layers,
                                      num_attention_heads=2, intermediate_size=2 * hidden,
                                      max_position_embeddings=2 * max_length), add_pooling_layer=True)
    bert_model.save_pretrained(backbone)

    bert = {"type": "pretrained_transformer_mismatched", "model_name": str(backbone), "max_length": max_length}
    heads = {"feature_size": feature_size, "max_span_width": 8, "target_task": "relation",
             "feedforward_params": {"num_layers": 2, "hidden_dims": ff_hidden, "dropout": 0.4},
             "loss_weights": {"ner": 0.2, "relation": 1.0, "coref": 0.0, "events": 0.0},
             "modules": {"coref": {"spans_per_word": 0.3, "max_antecedents": 100, "coref_prop": 0},
                         "ner": {}, "relation": {"spans_per_word": 0.5},
                         "events": {"trigger_spans_per_word": 0.3, "argument_spans_per_word": 0.8,
                                    "loss_weights": {"trigger": 0.2, "arguments": 1.0}}}}
    config = {"dataset_reader": {"type": "dygie", "max_span_width": 8, "token_indexers": {"bert": bert}},
              "model": {"type": "dygie", "embedder": {"token_embedders": {"bert": bert}},
                        "initializer": {}, "module_initializer": {}, **heads}}
    (d / "config.json").write_text(json.dumps(config, indent=1))

    vocab = Vocabulary(non_padded_namespaces=["*labels", "*tags"])
    for lab in ("",) + NER_LABELS:  # DyGIE's NER tagger needs the null label "" at index 0
        vocab.add_token_to_namespace(lab, f"{model_type}__ner_labels")
    for lab in RELATION_LABELS:
        vocab.add_token_to_namespace(lab, f"{model_type}__relation_labels")
    vocab.save_to_files(str(d / "vocabulary"))
    vocab = Vocabulary.from_files(str(d / "vocabulary"))

    torch.manual_seed(seed + 1)
    model = dygie.DyGIE(vocab=vocab, embedder=_WidthOnly(hidden), **json.loads(json.dumps(heads)))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.5)
    state = dict(model.state_dict())
    state.update({EMBEDDER_PREFIX + k: v for k, v in bert_model.state_dict().items()})
    torch.save(state, d / "weights.th")
    return d
