"""RadGraph computes under transformers 5: :mod:`sdrlib.metrics.radgraph_compat` through radgraph's real annotator.

radgraph 0.1.18's bundled allennlp calls ``tokenizer.encode_plus`` and ``build_inputs_with_special_tokens``,
which transformers 5 removed; without the layer ``F1RadGraph`` cannot even be built. Here nothing of the
annotator is replaced: radgraph's DyGIE model class, its tokenizer, mismatched indexer and embedder, span
extractor, NER and relation heads, its pre-processing (``preprocess_reports``), post-processing
(``postprocess_reports``) and ``compute_reward`` all run, around a small randomly initialised BERT written to a
temporary folder by :mod:`radgraph_tiny` (no hub, no released weights). The values are meaningless; what is
checked is that the package's pipeline runs, returns its documented structure, and is deterministic across a
save and reload of the model.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("radgraph", reason="radgraph 0.1.18 (dev extra) is not installed")

from radgraph_tiny import NER_LABELS, RELATION_LABELS, write_model  # noqa: E402

LEVELS = ("simple", "partial", "complete")
HYPS = ["No acute cardiopulmonary process.",
        "Mild pulmonary edema. Left pleural effusion.",
        "",                                                            # empty: the package's 0 at every level
        "The heart is normal in size. " * 12 + "No pneumothorax.",     # > 64 wordpieces: folded segments
        "Bibasilar atelectasis, likely."]
REFS = ["No acute cardiopulmonary abnormality.",
        "Moderate pulmonary edema and right pleural effusion.",
        "The lungs are clear.",
        "Heart size is normal. Lungs are clear.",
        "Stable bibasilar opacity, possible consolidation."]


@pytest.fixture()
def tiny_cache(tmp_path, monkeypatch):
    """A radgraph cache (``<root>/radgraph/0.1.18/radgraph``) holding the tiny random model; the suite's probe
    and radgraph's own default cache folder both point there."""
    import radgraph.radgraph as rg_module

    from sdrlib.metrics import backends

    version = backends.package_version("radgraph")
    cache = tmp_path / "cache" / "radgraph" / version
    write_model(cache)
    real = backends._appdirs_cache
    monkeypatch.setattr(backends, "_appdirs_cache",
                        lambda app: tmp_path / "cache" / app if app == "radgraph" else real(app))
    monkeypatch.setattr(rg_module, "CACHE_DIR", str(cache))
    return cache


def _f1radgraph(cache_dir):
    from radgraph import F1RadGraph

    from sdrlib.metrics import radgraph_compat

    radgraph_compat.install()
    return F1RadGraph(reward_level="all", model_type="radgraph", model_cache_dir=str(cache_dir))


def test_suite_scores_radgraph_through_the_real_annotator(tiny_cache):
    """Fails on 6cc3dd8: ``radgraph failed to run: ... AttributeError: BertTokenizer has no attribute encode_plus``."""
    from sdrlib.metrics import score_reports

    preds = [{"findings": h, "impression": r} for h, r in zip(HYPS, REFS)]
    refs = [{"findings": r, "impression": h} for h, r in zip(HYPS, REFS)]
    s = score_reports(preds, refs, sections=("findings", "impression"), metrics=["radgraph"])
    assert s.unavailable == {}
    f1 = _f1radgraph(tiny_cache)
    for sec in ("findings", "impression"):
        got = np.column_stack([s.result(sec, f"radgraph_{lvl}@radgraph").sample for lvl in LEVELS])
        for i, (p, r) in enumerate(zip(preds, refs)):
            if not r[sec]:
                assert np.isnan(got[i]).all()
                continue
            _, rewards, _, _ = f1(refs=[r[sec]], hyps=[p[sec]])
            assert got[i].tolist() == pytest.approx([level[0] for level in rewards]), (sec, i)
        assert np.nanmin(got) >= 0.0 and np.nanmax(got) <= 1.0


def _check_annotation(ann: dict, text: str) -> None:
    """One report's annotation in the package's format (``postprocess_reports``)."""
    assert set(ann) == {"text", "entities", "data_source", "data_split"} and ann["data_split"] == "inference"
    assert ann["text"].split()[:2] == text.replace(".", " .").replace(",", " ,").split()[:2]
    for key, ent in ann["entities"].items():
        assert int(key) >= 1
        assert set(ent) == {"tokens", "label", "start_ix", "end_ix", "relations"}
        assert ent["label"] in NER_LABELS and 0 <= ent["start_ix"] <= ent["end_ix"]
        assert ent["tokens"] == " ".join(ann["text"].split()[ent["start_ix"]:ent["end_ix"] + 1])
        for rel, target in ent["relations"]:
            assert rel in RELATION_LABELS and target in ann["entities"]


def test_f1radgraph_output_structure_and_a_reloaded_model_gives_the_same_values(tiny_cache, tmp_path):
    import torch

    f1 = _f1radgraph(tiny_cache)
    mean, rewards, hyp_ann, ref_ann = f1(refs=REFS, hyps=HYPS)
    assert len(mean) == 3 and len(rewards) == 3 and all(len(level) == len(HYPS) for level in rewards)
    for j in range(3):
        assert mean[j] == pytest.approx(np.mean(rewards[j]))
        assert all(0.0 <= v <= 1.0 for v in rewards[j])
    assert [level[2] for level in rewards] == [0.0, 0.0, 0.0]                 # empty hypothesis
    assert len(hyp_ann) == len(ref_ann) == len(HYPS) - 1                       # the empty pair is left out
    for ann, text in zip(hyp_ann + ref_ann, [h for h in HYPS if h] + [r for h, r in zip(HYPS, REFS) if h]):
        _check_annotation(ann, text)
    assert sum(len(a["entities"]) for a in hyp_ann) > 0
    assert any(e["relations"] for a in hyp_ann for e in a["entities"].values())
    assert max(a["entities"][k]["end_ix"] for a in hyp_ann[2:3] for k in a["entities"]) >= 60   # long report

    # save the loaded model's weights, reload them into a fresh annotator: same values, same annotations
    other = tmp_path / "reloaded"
    (other / "radgraph").mkdir(parents=True)
    shutil.copy(tiny_cache / "radgraph" / "config.json", other / "radgraph" / "config.json")
    shutil.copytree(tiny_cache / "radgraph" / "vocabulary", other / "radgraph" / "vocabulary")
    torch.save(f1.radgraph.model.state_dict(), other / "radgraph" / "weights.th")
    mean2, rewards2, hyp_ann2, ref_ann2 = _f1radgraph(other)(refs=REFS, hyps=HYPS)
    assert rewards2 == rewards and mean2 == mean
    assert json.dumps(hyp_ann2) == json.dumps(hyp_ann) and json.dumps(ref_ann2) == json.dumps(ref_ann)


def test_adapted_tokenizer_matches_call_and_builds_single_segments(tiny_cache):
    from transformers import AutoTokenizer

    from sdrlib.metrics import radgraph_compat

    tok = AutoTokenizer.from_pretrained(tiny_cache / "radgraph" / "backbone")
    plain = AutoTokenizer.from_pretrained(tiny_cache / "radgraph" / "backbone")
    assert radgraph_compat.adapt_tokenizer(tok) is tok
    kw = dict(add_special_tokens=True, return_token_type_ids=True, return_attention_mask=False)
    assert dict(tok.encode_plus("effusion", "edema", **kw)) == dict(plain("effusion", "edema", **kw))
    assert dict(tok.encode_plus(text="no effusion", add_special_tokens=False, return_offsets_mapping=True)) == \
        dict(plain(text="no effusion", add_special_tokens=False, return_offsets_mapping=True))
    cls, sep = tok.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    assert tok.build_inputs_with_special_tokens([7, 8, 9]) == [cls, 7, 8, 9, sep]
    with pytest.raises(NotImplementedError, match="single sequences"):
        tok.build_inputs_with_special_tokens([7], [8])
    method = tok.encode_plus
    assert radgraph_compat.adapt_tokenizer(tok).encode_plus == method                   # idempotent
    assert not hasattr(plain, "encode_plus") or not radgraph_compat.needs_layer()      # the class is untouched


def test_token_type_ids_filled_for_a_backbone_without_them():
    """A ModernBERT-style tokenizer (no ``token_type_ids`` in its output): zeros, as RadEval 2.2.1 does."""
    from sdrlib.metrics import radgraph_compat

    class NoTypeIds:
        def __call__(self, text, text_pair=None, add_special_tokens=True, **kw):
            ids = [50] + [ord(c) for c in text] + [51] if add_special_tokens else [ord(c) for c in text]
            return {"input_ids": ids, "attention_mask": [1] * len(ids)}

    tok = radgraph_compat.adapt_tokenizer(NoTypeIds())
    out = tok.encode_plus("ab", add_special_tokens=True, return_token_type_ids=True)
    assert out["token_type_ids"] == [0, 0, 0, 0]
    assert "token_type_ids" not in tok.encode_plus("ab", return_token_type_ids=False)
    assert tok.build_inputs_with_special_tokens([1, 2]) == [50, 1, 2, 51]


def test_unknown_radgraph_release_is_refused_not_patched(tiny_cache, monkeypatch):
    import importlib.metadata

    from sdrlib.metrics import radgraph_compat, score_reports

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda n: "0.1.19" if n == "radgraph" else real(n))
    with pytest.raises(radgraph_compat.RadGraphVersionError, match=r"radgraph 0\.1\.19 is not a release"):
        radgraph_compat.install()
    shutil.copytree(tiny_cache, tiny_cache.parent / "0.1.19")  # where the probe looks for that release's model
    s = score_reports([{"findings": "no effusion.", "impression": "clear."}],
                      [{"findings": "left pleural effusion.", "impression": "clear."}], metrics=["radgraph"])
    assert s.unavailable["radgraph"].startswith("radgraph failed to run: RadGraphVersionError: radgraph 0.1.19 "
                                                "is not a release the transformers-5 compatibility layer")


def test_nothing_is_patched_when_transformers_has_encode_plus(monkeypatch):
    import radgraph.allennlp.common.cached_transformers as ct
    from transformers import PreTrainedTokenizerBase

    from sdrlib.metrics import radgraph_compat

    if not radgraph_compat.needs_layer():
        pytest.skip("this transformers still has encode_plus")
    monkeypatch.setattr(ct, "get_tokenizer", ct.get_tokenizer)  # restored after the test
    monkeypatch.setattr(PreTrainedTokenizerBase, "encode_plus", lambda self, *a, **k: None, raising=False)
    before = ct.get_tokenizer
    assert radgraph_compat.install() is False and ct.get_tokenizer is before


class _Slotted:
    __slots__ = ("vocab",)

    def __call__(self, text, **kw):
        return {"input_ids": [1]}


@pytest.mark.parametrize("bad, says", [
    (None, "needs a tokenizer object .*not NoneType"),
    ("bert-base-uncased", "not the name 'bert-base-uncased': load it first"),
    (42, "not int"),
    (_Slotted(), "declares __slots__"),
])
def test_adapt_tokenizer_names_what_it_needs(bad, says):
    from sdrlib.metrics import radgraph_compat

    with pytest.raises(radgraph_compat.TokenizerObjectError, match=says):
        radgraph_compat.adapt_tokenizer(bad)
