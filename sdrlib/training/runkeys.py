"""Run folders and run keys: when a finished or interrupted run may be reused.

Every run lives in its own folder (:func:`run_dir`). A run whose ``final/`` exists is reused and an
interrupted run resumes from its last checkpoint, but only when its ``run_key.json`` (:func:`run_key`: the
training-relevant profile values, seed, a digest of the training records and images, of the initial policy
for GRPO, of **every file of the sdrlib package** (:func:`source_digest`), and the torch / transformers /
TRL / tokenizers versions) equals the current one; a folder from another corpus, profile, code or library
version is cleared and retrained with a warning that names what differs (:func:`claim`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sdrlib.config import plugin_digest
from sdrlib.io import atomic_write_text
from sdrlib.numerics import machine_record
from sdrlib.results import library_versions
from sdrlib.rewards import get_method, parse_reward, settings_sections
from sdrlib.training.policy import has_policy
from sdrlib.training.processes import on_cpu, world_size

__all__ = ["run_dir", "policy_dir", "run_key", "records_digest", "source_digest", "plugins_digest", "policy_digest",
           "claim", "reusable",
           "SOURCE_ROOT"]

#: the sdrlib package folder whose files :func:`source_digest` reads (tests point it at a copy)
SOURCE_ROOT: Path = Path(__file__).resolve().parents[1]


def run_dir(cfg, stage: str, reward: str | None = None, seed: int = 0) -> Path:
    """``runs/<profile>/sft/seed<k>`` or ``runs/<profile>/grpo/<reward>/seed<k>``.

    Example: ``run_dir(cfg, "grpo", "chamfer", 1)``.
    """
    if stage == "sft":
        return cfg.runs_dir / cfg.name / "sft" / f"seed{seed}"
    if stage == "grpo":
        if not reward:
            raise ValueError("a GRPO run needs a reward name")
        return cfg.runs_dir / cfg.name / "grpo" / reward / f"seed{seed}"
    raise ValueError(f"stage must be 'sft' or 'grpo', got {stage!r}")


def policy_dir(cfg, name: str, seed: int | None = None) -> Path:
    """The final policy folder of configuration ``name`` (``"sft"`` or a GRPO reward) at ``seed`` (default
    ``cfg.seed``): ``run_dir(...) / "final"``, where the trainers save it; every reader finds it here. Checks
    nothing on disk.

    Example: ``policy_dir(cfg, "sft")``, ``policy_dir(cfg, "chamfer", 1)``.
    """
    seed = cfg.seed if seed is None else seed
    return (run_dir(cfg, "sft", seed=seed) if name == "sft" else run_dir(cfg, "grpo", name, seed)) / "final"


_SFT_KEY_SKIP = ("save_steps", "max_new_tokens", "eval_batch_size", "eval_do_sample", "eval_temperature",
                 "processes", "step_seconds")  # processes: the key's world_size says how many trained it;
                 # step_seconds: a stated cost for the runner's estimate, trains nothing
#: ``grpo.max_steps`` is left out on purpose: the learning rate is constant, so a run extended to more
#: steps continues from its last checkpoint (``grpo(..., max_steps=k)`` then the profile's steps).
_GRPO_KEY_SKIP = ("rewards", "seeds", "eval_n", "eval_draws", "save_steps", "max_steps", "ablations",
                  "ablation_seeds", "step_seconds")


def records_digest(records: Sequence[Any]) -> str:
    """sha256 over each record's id, report sections and image files (name and size, not the folder)."""
    h = hashlib.sha256()
    for r in records:
        images = []
        for p in getattr(r, "image_paths", None) or []:
            q = Path(p)
            images.append([q.name, q.stat().st_size if q.is_file() else -1])
        h.update(json.dumps([r.study_id, r.findings, r.impression, images]).encode())
    return h.hexdigest()


def policy_digest(path: str | Path) -> str:
    """sha256 over the files of a saved policy folder (names and bytes, sorted): its identity.

    A retrained policy in the same folder gets a new digest, so caches keyed by it
    (GRPO runs started from it, test generations) are recomputed.
    """
    folder = Path(path)
    h = hashlib.sha256()
    for f in sorted(q for q in folder.rglob("*") if q.is_file()):
        h.update(str(f.relative_to(folder)).encode() + b"\0")
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def source_digest(root: str | Path | None = None) -> str:
    """sha256 over every file of the sdrlib package under ``root`` (default: this installation's
    ``sdrlib/``): relative paths and bytes, sorted, ``__pycache__`` folders and ``*.pyc`` left out.

    No list of files to keep: any change to sdrlib's code or package data (the labeler's rules, the
    distance registry, the encoder cache, the rewards) changes the digest, and with it every run key;
    a notebook, a test or a document outside ``sdrlib/`` does not.
    """
    folder = Path(SOURCE_ROOT if root is None else root)
    h = hashlib.sha256()
    for f in sorted(q for q in folder.rglob("*") if q.is_file() and "__pycache__" not in q.parts
                    and q.suffix != ".pyc"):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def plugins_digest(refs: Sequence[str]) -> dict[str, str]:
    """Per plugin entry of a profile (``plugins:``, a ``.py`` path or a module name), sha256 over its source
    (:func:`sdrlib.config.plugin_digest`): the file, or every file of the module's top-level package (a helper
    module the plugin imports included). Editing a plugin's reward or distance, or a helper of it, changes the run
    key, so a finished run of the old code is not reused. Example:
    ``plugins_digest(["/abs/toy_family.py"])`` -> ``{"/abs/toy_family.py": "3f1a..."}``."""
    return {ref: plugin_digest(ref) for ref in refs}


def run_key(cfg, stage: str, records: Sequence[Any], *, reward: str | None = None, seed: int = 0,
            init_from: str | Path | None = None, world: int | None = None) -> dict[str, Any]:
    """Everything that decides what an SFT or GRPO run produces, as a JSON-able dict.

    Keys: ``plugins`` (their source digests, :func:`plugins_digest`, when the profile has any), ``stage``, ``seed``,
    ``world_size`` (processes of an ``accelerate launch`` run, 1 without one: each
    process takes its own shard of every global batch, so N processes train on N times the batch of one and a
    2-process run never stands in for a 1-process run, nor the reverse), the profile section (``sft`` without
    evaluation keys; for GRPO ``grpo`` without ``rewards/seeds/eval_n/eval_draws/save_steps/max_steps`` (evaluation,
    how many runs, when to stop or save: none changes what a step trains) and without the reward methods' sections,
    plus ``method``: the run's own method settings (:meth:`sdrlib.rewards.RewardMethod.run_key`), the policy threads
    and images per study, and the sentence encoder when the reward needs one),
    ``device`` (cpu/cuda), ``data`` (digest of the training records, :func:`records_digest`), ``init``
    (GRPO: the :func:`policy_digest` of the SFT policy), ``code`` (:func:`source_digest`: every file of
    the sdrlib package), ``versions`` (torch, transformers, trl, tokenizers) and, on CPU, ``kernel`` (the kernel path in
force and torch's CPU capability, plus the CPU model when the path is not pinned: :mod:`sdrlib.numerics`). Two calls agree exactly
    when a finished run can stand in for a new one. ``world`` stands in for the launcher's process count (the key a
    run of that many processes will write, computed before launching it: :func:`sdrlib.training.sft`).
    """
    if stage not in ("sft", "grpo"):
        raise ValueError(f"stage must be 'sft' or 'grpo', got {stage!r}")
    key: dict[str, Any] = {"stage": stage, "seed": seed, "device": "cpu" if on_cpu() else "cuda",
                           "world_size": world_size() if world is None else world,
                           "data": records_digest(records), "code": source_digest(),
                           "versions": library_versions(("torch", "transformers", "trl", "tokenizers"), missing="missing")}
    if key["device"] == "cpu":  # another CPU kernel path trains other floats (sdrlib.numerics)
        mrec = machine_record()
        key["kernel"] = {"path": mrec["kernel_path"], "capability": mrec.get("torch_cpu_capability")}
        if mrec["kernel_path"] != "avx2":  # the native path follows the CPU
            key["kernel"]["cpu"] = mrec["cpu_model"]
    if getattr(cfg, "plugins", None):  # a plugin's code decides a run as sdrlib's does
        key["plugins"] = plugins_digest(cfg.plugins)
    if stage == "sft":
        key["sft"] = {k: v for k, v in dataclasses.asdict(cfg.sft).items() if k not in _SFT_KEY_SKIP}
    else:
        spec = parse_reward(reward)
        impl = get_method(spec.method)
        sections = set(settings_sections())
        key["reward"] = spec.name
        key["grpo"] = {k: v for k, v in dataclasses.asdict(cfg.grpo).items()
                       if k not in _GRPO_KEY_SKIP and k not in sections}
        settings = impl.check_settings(getattr(cfg.grpo, impl.name) if impl.settings is not None else None)
        key["method"] = impl.run_key(spec, settings)
        key["policy"] = {"threads": cfg.sft.threads, "max_images": cfg.sft.max_images, "policy": cfg.sft.policy}
        if spec.needs_embedder:
            key["encoder"] = cfg.embedding.encoder
        key["init"] = policy_digest(init_from) if init_from is not None else None
    return json.loads(json.dumps(key, default=str))  # the form it takes when read back from disk


def _key_diff(old: dict, new: dict) -> list[str]:
    """Top-level (and one level down) keys whose values differ, e.g. ``['data', 'sft.max_steps']``."""
    out = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{k}.{j}" for j in sorted(set(a) | set(b)) if a.get(j) != b.get(j)]
        else:
            out.append(k)
    return out


def claim(out: Path, key: dict, force: bool) -> bool:
    """Make ``out`` a folder for the run ``key``; True when what it holds belongs to that run.

    A folder holding another run's files (a different key, or files without a key from an
    older version) is emptied with a warning naming what differs; ``force`` empties it
    silently. The key is written before training, so an interrupted run's checkpoints
    carry it too.
    """
    path = out / "run_key.json"
    old = None
    if path.is_file():
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            old = None
    same = old == key
    if out.is_dir() and any(out.iterdir()) and (force or not same):
        if not force:
            why = ", ".join(_key_diff(old, key)) if isinstance(old, dict) else "no run_key.json (older version)"
            warnings.warn(f"{out} holds a run of other settings ({why}); retraining it from scratch", stacklevel=3)
        shutil.rmtree(out)
        same = False
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(key, indent=1))
    return same


def reusable(out: Path, key: dict) -> bool:
    """A finished policy in ``out`` whose run key equals ``key``."""
    path = out / "run_key.json"
    if not (has_policy(out / "final") and path.is_file()):
        return False
    try:
        return json.loads(path.read_text()) == key
    except (OSError, ValueError):
        return False
