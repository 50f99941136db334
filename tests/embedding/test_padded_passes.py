"""Padded passes of one fixed shape: a sentence's vector is the same bits in any row, whatever the other rows hold.

:class:`sdrlib.embedding.SentenceEmbedder` encodes sentences in passes of up to ``batch_size`` sentences of one length
bucket (at least ``pass_rows`` rows, filled), each row padded to one of :data:`sdrlib.embedding.embedder.PASS_LENGTHS`
tokens. Runs that share the embedding cache must read the same
floats whatever order they ran in, so the vector must be a function of the sentence (and its bucket): checked here
bit for bit on the real all-MiniLM-L6-v2 at 1 and 2 threads, against the unpadded path (cosine >= 0.999), and
the two paths keep apart caches.
"""

from __future__ import annotations

import numpy as np
import pytest

SENTENCES = [
    "The heart is normal in size.", "The lungs are clear.", "There is a small left pleural effusion.",
    "No pneumothorax.", "Patchy opacity in the left lower lobe may represent pneumonia.",
    "The cardiomediastinal silhouette is widened.", "Mild pulmonary edema.", "No focal consolidation.",
    "Bibasilar atelectasis is present.", "A small right apical pneumothorax is noted.",
    "Moderate cardiomegaly with a tortuous aorta and calcified hilar lymph nodes, unchanged from the prior study.",
    "Median sternotomy wires and mediastinal clips are intact.", "Degenerative changes of the thoracic spine.",
]


def _embedder(encoder, **kw):
    from sdrlib.embedding import SentenceEmbedder

    return SentenceEmbedder(encoder, cache_dir=None, **kw)


@pytest.mark.parametrize("threads", [1, 2])
def test_vector_independent_of_row_and_neighbours(small_encoder, threads):
    rng = np.random.default_rng(threads)
    alone = {s: _embedder(small_encoder, threads=threads).encode([s])[0] for s in SENTENCES}
    for trial in range(4):  # every sentence with other neighbours, in other rows, in other passes
        order = list(rng.permutation(SENTENCES))[: 5 + 3 * trial]
        emb = _embedder(small_encoder, threads=threads)
        got = emb.encode(order)
        for s, v in zip(order, got):
            assert v.tobytes() == alone[s].tobytes(), (trial, s)
        assert emb.stats["forward_calls"] < len(order)  # several sentences a pass


def test_padded_close_to_unpadded_and_own_cache(small_encoder, tmp_path):
    from sdrlib.embedding import SentenceEmbedder

    padded = SentenceEmbedder(small_encoder, cache_dir=tmp_path)
    unpadded = SentenceEmbedder(small_encoder, cache_dir=tmp_path, passes="unpadded")
    a, b = padded.encode(SENTENCES), unpadded.encode(SENTENCES)
    assert (a * b).sum(axis=1).min() >= 0.999
    # the bits may differ (last bits): the two paths never share a cache row
    assert padded.encoder_id != unpadded.encoder_id and padded.encoder_id.startswith(unpadded.encoder_id + "+pad4x")
    assert padded.encoder_id.endswith(f".{small_encoder.max_seq_length}")  # the window is the last bucket
    files = sorted(p.name for p in (tmp_path / "embeddings").iterdir() if p.suffix == ".sqlite")
    assert len(files) == 2
    again = SentenceEmbedder(small_encoder, cache_dir=tmp_path)
    assert again.encode(SENTENCES).tobytes() == a.tobytes() and again.stats["hits"] == len(SENTENCES)


def test_pass_shapes(small_encoder):
    emb = _embedder(small_encoder, pass_rows=4)
    emb.encode(SENTENCES)
    lengths = emb.pass_lengths
    assert lengths[0] == 16 and lengths[-1] == small_encoder.max_seq_length
    rows = emb._batches(SENTENCES)
    assert all(len(r) <= emb.batch_size for r in rows) and sorted(j for r in rows for j in r) == list(range(len(SENTENCES)))
    for r in rows:  # one bucket per pass
        buckets = {next(L for L in lengths if L >= emb._ntok[SENTENCES[j]]) for j in r}
        assert len(buckets) == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_vector_independent_of_the_number_of_rows(small_encoder, threads):
    """Passes of 2, 3 and up to 64 sentences give every sentence the bits of a filled 4-row pass."""
    ref = _embedder(small_encoder, threads=threads, batch_size=4).encode(SENTENCES * 3)
    for size in (2, 3, 7, 64):
        emb = _embedder(small_encoder, threads=threads, batch_size=size)
        got = emb.encode(SENTENCES * 3)
        assert got.tobytes() == ref.tobytes(), size
        assert max(len(r) for r in emb._batches(SENTENCES * 3)) <= max(size, emb.pass_rows)


@pytest.mark.parametrize("bad", [{"passes": "sometimes"}, {"pass_rows": 0}, {"pass_rows": 2.5}, {"pass_rows": True}])
def test_bad_pass_settings_are_refused(small_encoder, bad):
    from sdrlib.embedding.errors import EmbeddingError

    with pytest.raises(EmbeddingError, match="passes|pass_rows"):
        _embedder(small_encoder, **bad)
