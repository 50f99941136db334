"""The cached sentence embedder: unit-norm float32 vectors from a frozen encoder.

:class:`SentenceEmbedder` encodes sentences and caches each one in SQLite
(:class:`~sdrlib.embedding.cache.SentenceCache`) keyed by encoder identity and normalised text,
so every sentence is encoded once per encoder; a warm re-run makes zero forward passes. Sentences go through the
encoder in passes of one fixed shape per length bucket (:data:`PASS_LENGTHS`, ``pass_rows`` rows), so a vector is a
function of the sentence alone whatever it was encoded with (:meth:`SentenceEmbedder._batches`). Each
forward batch must come back as exactly one finite, non-zero row of the declared dimension per
sentence; sentences longer than the encoder window are counted and warned about once per call.

Example::

    emb = SentenceEmbedder("all-MiniLM-L6-v2", cache_dir=".cache/sdr")
    E = emb.encode(["No pneumothorax.", "Heart size is normal."])   # (2, 384) float32
"""

from __future__ import annotations

import numbers
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from sdrlib.embedding.cache import SentenceCache
from sdrlib.embedding.encoders import load_encoder, model_identity
from sdrlib.embedding.errors import EmbeddingError, EncoderTruncationWarning
from sdrlib.reports import normalize_text, split_sentences

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

__all__ = ["PASS_LENGTHS", "SentenceEmbedder"]

#: token lengths a padded pass pads to (those under the encoder window, then the window itself): a sentence goes in
#: the pass of the shortest one that holds it
PASS_LENGTHS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


@dataclass
class _Stats:
    hits: int = 0
    misses: int = 0
    forward_calls: int = 0
    encoded: int = 0
    encoded_tokens: int = 0  # encoder tokens of the encoded sentences (special tokens included; 0 without a tokenizer)
    encode_seconds: float = 0.0
    invalid_cached: int = 0  # cache rows refused on read (wrong length, non-finite, not unit norm)
    truncated: int = 0  # unique sentences per call longer than the encoder window, summed over calls
    longest_tokens: int = 0  # most tokens seen in one truncated sentence

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


class SentenceEmbedder:
    """Cached, unit-norm sentence embeddings from a frozen encoder.

    Parameters
    ----------
    encoder : str, path or SentenceTransformer, optional
        Name (``all-mpnet-base-v2`` default, ``all-MiniLM-L6-v2``), local folder,
        or an already loaded model (from :func:`load_encoder`).
    cache_dir : path, optional
        Folder for ``embeddings/<identity>.sqlite``; ``None`` keeps the cache in memory only.
    cache_readonly : bool, optional
        ``None`` (default): open the cache read-only (SQLite ``mode=ro``) when the file or its
        folder is not writable, with one :class:`EmbeddingCacheWarning`; ``True``: never write
        to it (hits are served, misses encoded in memory only); ``False``: require writing.
    batch_size : int
        Sentences per forward pass, a positive integer (0, negatives, floats and bools are
        refused here with :class:`EmbeddingError`, not at the first forward pass).
    threads : int, optional
        torch CPU threads for the encoder's forward passes only (the previous setting is
        restored afterwards). Lets a GRPO step whose policy runs on one thread give the
        reward's encoder every core; ``None`` leaves torch's setting alone.
    passes : ``"padded"`` (default) or ``"unpadded"``
        How sentences share a forward pass (:meth:`_batches`): ``padded``, passes of up to ``batch_size``
        sentences of one length bucket, each row padded to one of :data:`PASS_LENGTHS` tokens (a GRPO step's new
        sentences in a few passes, a bank in passes of ``batch_size``); ``unpadded``, one pass per
        token count (the earlier path: 1-2 sentences a pass in GRPO). Both make a vector a function of the
        sentence; their vectors differ in the last bits, so each has its own :attr:`encoder_id` (cache).
    pass_rows : int
        The fewest rows of a padded pass: a pass of fewer sentences is filled to it with copies of its first
        sentence (part of the padded :attr:`encoder_id`; a pass never has one row).

    Attributes
    ----------
    encoder_id : str
        Identity of the encoder (part of every cache key and bank record; see :func:`model_identity`).
    dim : int
        Embedding dimension d.
    max_tokens : int or None
        The encoder window (``max_seq_length``); longer sentences are truncated by the encoder.
    stats : dict
        ``hits``, ``misses`` (unique sentences looked up; a refused cache row counts as a
        miss), ``forward_calls`` (encoder batches run), ``encoded`` (sentences encoded), ``encoded_tokens``
        (their encoder tokens, for the arithmetic floor of ``benchmarks/profile_run.py``),
        ``encode_seconds``, ``invalid_cached`` (cache rows refused and recomputed),
        ``truncated`` (unique sentences per call over the window, summed over calls) and
        ``longest_tokens`` (token count of the longest truncated sentence).
    last_truncated : int
        Unique sentences of the last :meth:`encode` call that were over the window.
    cache_readonly : bool
        Whether the disk cache is used read-only (``False`` without a disk cache).
    """

    def __init__(self, encoder: "str | os.PathLike | SentenceTransformer | None" = None,
                 cache_dir: str | os.PathLike | None = None, batch_size: int = 64, device: str = "cpu",
                 threads: int | None = None, cache_readonly: bool | None = None, passes: str = "padded",
                 pass_rows: int = 4):
        if threads is not None and threads < 1:
            raise EmbeddingError(f"threads must be >= 1 or None, got {threads}")
        if passes not in ("padded", "unpadded"):
            raise EmbeddingError(f"passes = {passes!r}: use 'padded' or 'unpadded'")
        if not isinstance(pass_rows, numbers.Integral) or isinstance(pass_rows, bool) or pass_rows < 1:
            raise EmbeddingError(f"pass_rows = {pass_rows!r}: rows per padded pass must be a positive integer")
        if not isinstance(batch_size, numbers.Integral) or isinstance(batch_size, (bool, np.bool_)) or batch_size < 1:
            raise EmbeddingError(f"batch_size = {batch_size!r}: sentences per forward pass must be a positive "
                                 "integer (e.g. 64)")
        self.threads = threads
        if isinstance(encoder, (str, os.PathLike)) or encoder is None:
            self.model = load_encoder(None if encoder is None else str(encoder), device=device)
        else:
            self.model = encoder
        self.encoder_id: str = model_identity(self.model)
        dim_fn = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        dim = dim_fn()
        if not isinstance(dim, numbers.Integral) or isinstance(dim, (bool, np.bool_)) or dim < 1:
            raise EmbeddingError(f"encoder {self.encoder_id} declares {dim!r} dimensions; a sentence encoder must "
                                 "declare a positive integer (its pooling / output layer sets it)")
        self.dim = int(dim)
        limit = getattr(self.model, "max_seq_length", None)
        self.max_tokens: int | None = int(limit) if limit else None
        self.batch_size = int(batch_size)
        tok = getattr(self.model, "tokenizer", None)
        # padded passes need the encoder's tokenizer and window (a stand-in without them keeps its input order)
        self.pass_rows = int(pass_rows)
        self.pass_lengths: tuple[int, ...] | None = None
        if passes == "padded" and callable(tok) and self.max_tokens and (
                callable(getattr(self.model, "preprocess", None)) or callable(getattr(self.model, "tokenize", None))):
            self.pass_lengths = tuple(n for n in PASS_LENGTHS if n < self.max_tokens) + (self.max_tokens,)
            # vectors of padded passes differ in the last bits from unpadded ones: a cache of their own
            self.encoder_id += f"+pad{self.pass_rows}x" + ".".join(map(str, self.pass_lengths))
        self._mem: dict[str, np.ndarray] = {}
        self._ntok: dict[str, int] = {}  # token count per normalised sentence (for the window check)
        self._stats = _Stats()
        self.last_truncated = 0
        self._disk = None
        if cache_dir is not None:
            safe = self.encoder_id.replace("/", "_")
            self._disk = SentenceCache(Path(cache_dir) / "embeddings" / f"{safe}.sqlite", self.dim,
                                     readonly=cache_readonly)

    @property
    def cache_readonly(self) -> bool:
        return self._disk is not None and self._disk.readonly

    @classmethod
    def from_config(cls, cfg) -> "SentenceEmbedder":
        """The embedder a profile asks for: ``cfg.embedding`` (encoder, batch size, threads) + ``cfg.cache_dir``."""
        e = cfg.embedding
        device = e.device
        if device == "auto":
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        return cls(e.encoder, cache_dir=cfg.cache_dir, batch_size=e.batch_size, threads=e.threads or None,
                   device=device)

    @property
    def stats(self) -> dict[str, float]:
        return self._stats.as_dict()

    def reset_stats(self) -> None:
        self._stats = _Stats()

    def _forward(self, texts: list[str]) -> np.ndarray:
        import torch

        t0 = time.perf_counter()
        out = []
        before = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        order: list[int] = []
        try:
            for index, rows in enumerate(self._batches(texts)):
                batch = [texts[j] for j in rows]
                if self.pass_lengths is not None:
                    out.append(self._checked_batch(self._padded_pass(batch), batch, index))
                    self._stats.forward_calls += 1
                    order.extend(rows)
                    continue
                # a lone sentence goes through the encoder twice in one batch: a one-row pass may take another
                # BLAS path (a last-bit difference), and a sentence's vector must not depend on its batch-mates
                feed = batch * 2 if len(batch) == 1 else batch
                v = self.model.encode(feed, batch_size=len(feed), convert_to_numpy=True,
                                      normalize_embeddings=False, show_progress_bar=False)
                self._stats.forward_calls += 1
                if len(batch) == 1 and getattr(v, "shape", None) is not None and len(v) == 2:
                    v = v[:1]
                out.append(self._checked_batch(v, batch, index))
                order.extend(rows)
        finally:
            torch.set_num_threads(before)
        vecs = np.empty((len(texts), self.dim), dtype=np.float32)
        vecs[np.asarray(order, dtype=np.int64)] = np.concatenate(out, axis=0)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        self._stats.encoded += len(texts)
        self._stats.encoded_tokens += sum(min(self._ntok.get(t, 0), self.max_tokens or 1 << 30) for t in texts)
        self._stats.encode_seconds += time.perf_counter() - t0
        return (vecs / norms).astype(np.float32)

    def _batches(self, texts: list[str]) -> list[list[int]]:
        """Row indices of ``texts`` per forward pass. Padded passes (the default): sentences of one length bucket
        together, ``batch_size`` at most, the bucket the shortest of :attr:`pass_lengths` that holds the sentence's
        tokens (the window for a longer one). Unpadded passes: sentences of one token count together (at most
        ``batch_size`` per pass), so no pass pads.

        Why: a sentence's vector must not depend on which sentences it was encoded with, or a cached vector would
        depend on which run or process encoded it first; GRPO runs that share the embedding cache, in any order or
        side by side, must read the same values. A pass padded to a length other than the sentence's own gives
        other last bits (~2e-7 for all-mpnet-base-v2), but a pass of one fixed shape (``pass_rows`` x the bucket's
        length, the free rows filled, :meth:`_padded_pass`) gives a sentence the same bits in any row, whatever the
        other rows hold and however many rows the pass has (all-MiniLM-L6-v2 at 1 and 2 threads,
        ``tests/embedding/test_padded_passes.py``; all-mpnet-base-v2 at one thread, pinned AVX2 path,
        ``benchmarks/bench_padded_passes.py --alone``): the vector is a function of the sentence and its bucket. The
        unpadded path gets the same property by never padding (and never a one-row pass, :meth:`_forward`).
        Encoders without a tokenizer keep the input order in passes of ``batch_size``.
        """
        tok = getattr(self.model, "tokenizer", None)
        if tok is None or not callable(tok):
            return [list(range(i, min(i + self.batch_size, len(texts)))) for i in range(0, len(texts), self.batch_size)]
        new = [t for t in texts if t not in self._ntok]
        if new:
            ids = tok(new, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
            self._ntok.update(zip(new, (len(x) for x in ids)))
        window = self.max_tokens or float("inf")
        groups: dict[float, list[int]] = {}
        for j, t in enumerate(texts):
            n = min(self._ntok[t], window)
            if self.pass_lengths is not None:
                n = next(L for L in self.pass_lengths if L >= n)
            groups.setdefault(n, []).append(j)
        size = self.batch_size if self.pass_lengths is None else max(self.batch_size, self.pass_rows)
        return [rows[i:i + size] for _, rows in sorted(groups.items()) for i in range(0, len(rows), size)]

    def _padded_pass(self, batch: list[str]) -> np.ndarray:
        """The encoder's vectors ``(len(batch), dim)`` of one padded pass: ``batch`` and, when it holds fewer than
        ``pass_rows`` sentences, copies of its first sentence up to ``pass_rows`` rows (dropped), every row padded to the bucket's length (the shortest of
        :attr:`pass_lengths` that holds the longest sentence of ``batch``; :meth:`_batches` puts one bucket in a pass)."""
        import torch

        tok = self.model.tokenizer
        rows = batch + [batch[0]] * max(0, self.pass_rows - len(batch))
        prep = getattr(self.model, "preprocess", None)  # sentence-transformers >= 6; tokenize before (deprecated since)
        feats = prep(rows) if callable(prep) else self.model.tokenize(rows)
        buckets = {next(L for L in self.pass_lengths if L >= int(n)) for n in feats["attention_mask"].sum(dim=1)}
        if len(buckets) != 1:  # the token counts of _batches disagree with the encoder's own tokenization
            raise EmbeddingError(f"encoder {self.encoder_id}: one padded pass got sentences of buckets "
                                 f"{sorted(buckets)}: {batch[:3]!r}")
        length = buckets.pop()
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        right = getattr(tok, "padding_side", "right") == "right"
        for k, t in feats.items():
            if torch.is_tensor(t) and t.dim() == 2 and t.shape[1] < length:
                extra = length - t.shape[1]
                feats[k] = torch.nn.functional.pad(t, (0, extra) if right else (extra, 0),
                                                   value=pad_id if k == "input_ids" else 0)
        device = getattr(self.model, "device", "cpu")
        with torch.inference_mode():
            v = self.model.forward({k: t.to(device) if torch.is_tensor(t) else t for k, t in feats.items()})
        return v["sentence_embedding"][: len(batch)].float().cpu().numpy()

    def _checked_batch(self, value: object, batch: list[str], index: int) -> np.ndarray:
        """The encoder's output for one batch as float32 ``(len(batch), dim)``, or :class:`EmbeddingError`.

        Refused, naming the encoder, the batch and what came back: output that is not
        numeric, a shape other than ``(len(batch), self.dim)`` (e.g. 9 columns from an
        encoder that declares 8, or a row missing), NaN / inf entries, a row whose float32
        norm is 0 or overflows (no direction to normalise). Called before anything of the call is cached.
        """
        where = f"encoder {self.encoder_id} (declares {self.dim} dimensions), batch {index} of {len(batch)} sentences"
        try:
            arr = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise EmbeddingError(f"{where}: returned {type(value).__name__}, not a numeric array ({e})") from None
        if arr.shape != (len(batch), self.dim):
            raise EmbeddingError(f"{where}: returned shape {arr.shape}, expected ({len(batch)}, {self.dim}); "
                                 "nothing of this call was cached")
        finite = np.isfinite(arr).all(axis=1)
        if not finite.all():
            bad = [batch[j] for j in np.where(~finite)[0][:3]]
            raise EmbeddingError(f"{where}: returned non-finite vectors for {bad!r}; nothing of this call "
                                 "was cached")
        with np.errstate(over="ignore"):
            norm = np.linalg.norm(arr, axis=1)  # float32, as the normalisation in _forward
        flat = (norm == 0) | ~np.isfinite(norm)
        if flat.any():
            bad = [batch[j] for j in np.where(flat)[0][:3]]
            raise EmbeddingError(f"{where}: returned a zero vector (or one whose norm overflows float32) for "
                                 f"{bad!r}; nothing of this call was cached")
        return arr

    def _count_truncated(self, unique: list[str]) -> None:
        """Count (and warn once about) this call's unique sentences longer than the encoder window.

        Token counts come from the encoder's own tokenizer with its special tokens and without
        truncation, memoised per sentence; encoders without a tokenizer or window are skipped.
        """
        self.last_truncated = 0
        tok = getattr(self.model, "tokenizer", None)
        if not self.max_tokens or tok is None or not callable(tok):
            return
        new = [k for k in unique if k not in self._ntok]
        if new:
            ids = tok(new, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
            self._ntok.update(zip(new, (len(x) for x in ids)))
        over = [self._ntok[k] for k in unique if self._ntok[k] > self.max_tokens]
        if not over:
            return
        self.last_truncated = len(over)
        self._stats.truncated += len(over)
        self._stats.longest_tokens = max(self._stats.longest_tokens, max(over))
        warnings.warn(f"{len(over)} of {len(unique)} sentences exceed encoder {self.encoder_id}'s window of "
                      f"{self.max_tokens} tokens (longest: {max(over)} tokens); the encoder embeds only their "
                      "first tokens (counted in stats['truncated'])", EncoderTruncationWarning, stacklevel=3)

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        """Encode sentences (cached).

        Parameters
        ----------
        sentences : sequence of str
            Non-empty sentences; each is whitespace/Unicode-normalised before lookup.

        Returns
        -------
        ndarray, shape (len(sentences), dim), float32
            Unit-norm rows in input order; ``(0, dim)`` for an empty input.

        Warns
        -----
        EncoderTruncationWarning
            Once per call when some sentences are longer than the encoder window
            (counted in ``stats["truncated"]`` and :attr:`last_truncated`).
        """
        if isinstance(sentences, str):
            raise EmbeddingError("encode() takes a list of sentences, not one string")
        keys = [normalize_text(s) if isinstance(s, str) else None for s in sentences]
        for s, k in zip(sentences, keys):
            if not k:
                raise EmbeddingError(f"cannot embed {s!r}: sentences must be non-empty strings")
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique = list(dict.fromkeys(keys))
        self._count_truncated(unique)
        missing = [k for k in unique if k not in self._mem]
        invalid: list[str] = []
        if missing and self._disk is not None:
            found, invalid = self._disk.get_many(missing)  # invalid rows are recomputed, then overwritten
            self._stats.invalid_cached += len(invalid)
            self._mem.update(found)
            missing = [k for k in missing if k not in self._mem]
        self._stats.hits += len(unique) - len(missing)
        self._stats.misses += len(missing)
        if missing:
            vecs = self._forward(missing)
            fresh = dict(zip(missing, vecs))
            if self._disk is not None:
                self._disk.put_many(fresh.items(), replace=invalid)
            self._mem.update(fresh)
        return np.stack([self._mem[k] for k in keys]).astype(np.float32, copy=False)

    def encode_sets(self, sets: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Encode several sentence lists in one pass; returns one ``(n_i, dim)`` array per list."""
        flat = [s for group in sets for s in group]
        mat = self.encode(flat)
        out, start = [], 0
        for group in sets:
            out.append(mat[start:start + len(group)])
            start += len(group)
        return out

    def encode_sections(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Split each section text into sentences (:func:`split_sentences`) and encode the sets.

        An empty section gives a ``(0, dim)`` array; callers decide what an empty set means.
        """
        return self.encode_sets([split_sentences(t) for t in texts])

    def close(self) -> None:
        if self._disk is not None:
            self._disk.close()
