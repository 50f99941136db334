"""SynthCXR studies and the on-disk dataset: :func:`generate_study`, :func:`generate_dataset`, :func:`ensure_dataset`.

Every study has its own ``numpy`` generator seeded from ``(seed, split, index)``; a dataset folder
holds Parquet tables, one PNG per study and a manifest with each file's size and sha256, checked
(and the folder regenerated when damaged or out of date) by :func:`ensure_dataset`. Registers the dataset
``synthetic`` (alias ``synthcxr``) that profiles name as ``data.source`` (:mod:`sdrlib.data.registry`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from sdrlib.data.records import LoadReport, Record
from sdrlib.data.registry import Dataset, register_dataset
from sdrlib.data.synthcxr.findings import Labels, Study, sample_findings
from sdrlib.data.synthcxr.image import render_image
from sdrlib.data.synthcxr.report import write_report
from sdrlib.errors import SDRError
from sdrlib.vocabulary import CHEXPERT_14, merge_labels

__all__ = ["GENERATOR_VERSION", "SPLITS", "SynthCXRError",
           "generate_study", "generate_report", "generate_dataset", "dataset_dir",
           "ensure_dataset", "read_manifest"]

#: 2.3: images only (reports and labels unchanged): lung opacity denser (0.26, was 0.18) and never faded out by its
#: mottle; nodules drawn at least about 2 cm across (radius 0.04 + 0.015 cm, was 0.02 + 0.017 cm) and adding density
#: (they darkened the heart); an acute rib fracture a displaced break (a 2 px gap and step at 96 px) with an
#: extrapleural haematoma, a healed one a callus three times a rib's density; a 9th-rib fracture on the lowest rib
#: drawn (it was drawn on the 4th's); hedged atelectasis ("basilar opacity, likely atelectasis") a patchy basilar
#: opacity, compressive atelectasis a density along the effusion's meniscus (it lay under the fluid, unseen).
#: 2.2: other-side negatives, "no new X", more bilateral wording; images unchanged.
GENERATOR_VERSION = "2.3.0"
SPLITS = ("train", "val", "test")
_SPLIT_CODE = {"train": 0, "val": 1, "test": 2}


class SynthCXRError(SDRError, ValueError):
    """A SynthCXR argument or output folder that cannot be used; the message says what to change."""


def _check_seed(seed: Any) -> int:
    """``seed`` as an int; bools, fractions (1.7 gave seed 1's studies), NaN and negatives are refused."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        if isinstance(seed, (float, np.floating)) and np.isfinite(seed) and float(seed).is_integer() and seed >= 0:
            return int(seed)
        raise SynthCXRError(f"SynthCXR seed must be a non-negative integer, got {seed!r}: pass e.g. seed=1")
    if seed < 0:
        raise SynthCXRError(f"SynthCXR seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _study_rng(seed: int, split: str, index: int) -> np.random.Generator:
    if split not in _SPLIT_CODE:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return np.random.default_rng([_check_seed(seed), _SPLIT_CODE[split], int(index), 0x5C4])


def generate_study(seed: int, split: str, index: int, image_size: int = 96) -> Study:
    """Generate study ``index`` of ``split`` (deterministic in ``seed, split, index, image_size``)."""
    rng = _study_rng(seed, split, index)
    findings, devices, _ = sample_findings(rng)
    ftext, itext, lf, li = write_report(findings, devices, rng)
    image = render_image(findings, devices, rng, size=image_size)
    return Study(study_id=f"syn-{split}-{index:05d}", split=split, findings=ftext, impression=itext,
                 labels=merge_labels(lf, li), labels_findings=lf, labels_impression=li,
                 truth=findings, devices=devices, image=image)



def generate_report(seed: int, split: str, index: int) -> Study:
    """The texts and labels of ``generate_study(seed, split, index)`` without drawing its image.

    For corpus statistics at speed; ``image`` is an empty (0, 0) uint8 array.
    """
    rng = _study_rng(seed, split, index)
    findings, devices, _ = sample_findings(rng)
    ftext, itext, lf, li = write_report(findings, devices, rng)
    return Study(study_id=f"syn-{split}-{index:05d}", split=split, findings=ftext, impression=itext,
                 labels=merge_labels(lf, li), labels_findings=lf, labels_impression=li,
                 truth=findings, devices=devices, image=np.zeros((0, 0), dtype=np.uint8))


def _png_bytes(image: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image, mode="L").save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _labels_json(labels: Labels) -> str:
    return json.dumps({k: int(labels[k]) for k in CHEXPERT_14 if k in labels})


def _config_key(seed: int, n: dict[str, int], image_size: int) -> dict[str, Any]:
    return {"generator": "synthcxr", "generator_version": GENERATOR_VERSION, "seed": int(seed),
            "sizes": {s: int(n[s]) for s in SPLITS}, "image_size": int(image_size)}


_OWN_FILE = re.compile(r"^(?:manifest\.json|(train|val|test)\.parquet|images/(train|val|test)/syn-\2-\d{5,}\.png)$")


def _refuse_foreign_folder(out_dir: Path) -> None:
    """Raise unless ``out_dir`` is missing, empty or a SynthCXR folder holding only files this code writes.

    A SynthCXR folder is one with a ``manifest.json`` whose ``generator`` is ``"synthcxr"``; its files are
    the manifest, ``<split>.parquet``, ``images/<split>/syn-<split>-NNNNN.png`` and whatever its manifest lists (an
    older generator's layout). Anything else (a user's
    project folder, the current folder, a note saved inside the dataset) is never deleted.
    """
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise SynthCXRError(f"SynthCXR out_dir {out_dir} is a file, not a folder: pass a new folder's path")
    entries = list(out_dir.iterdir())
    if not entries:
        return
    man = read_manifest(out_dir)
    if not isinstance(man, dict) or man.get("generator") != "synthcxr":
        raise SynthCXRError(
            f"SynthCXR out_dir {out_dir} exists and is not a SynthCXR dataset (no manifest.json written by "
            f"generate_dataset): generating there would delete its files. Pass a new or empty folder, e.g. "
            f"data/synthcxr/<name>, or remove the folder yourself.")
    listed = set(man.get("files") or {}) if isinstance(man.get("files"), dict) else set()  # an older layout's own
    foreign = sorted(rel for rel in (p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if not p.is_dir())
                     if not _OWN_FILE.match(rel) and rel not in listed)
    if foreign:
        raise SynthCXRError(
            f"SynthCXR folder {out_dir} holds {len(foreign)} file(s) generate_dataset did not write "
            f"(first: {foreign[0]}): regenerating would delete them. Move them out of the folder first.")


def generate_dataset(out_dir: str | os.PathLike, *, seed: int, n_train: int, n_val: int, n_test: int,
                     image_size: int = 96) -> dict[str, Any]:
    """Write the dataset to ``out_dir`` and return its manifest.

    Layout: ``<split>.parquet`` (one row per study: study_id, split, image_path relative to
    ``out_dir``, findings, impression, labels / labels_findings / labels_impression as JSON,
    truth as JSON, devices), ``images/<split>/<study_id>.png`` and
    ``manifest.json`` (generator version, seed, sizes, image size, sha256 (``files``) and
    byte size (``file_sizes``) of every other file, images included; no timestamps, so the
    same arguments give byte-identical folders). The folder is built in a
    temporary sibling and moved into place, replacing a previous SynthCXR folder.

    ``out_dir`` must be missing, empty, or a folder this function wrote (its ``manifest.json``
    names the generator, and it holds nothing but the files listed above): any other folder,
    ``""`` and the current folder included, raises :class:`SynthCXRError` before anything is
    written or deleted.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = {"train": n_train, "val": n_val, "test": n_test}
    for k, v in n.items():
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"n_{k} must be a non-negative int, got {v!r}")
    seed = _check_seed(seed)
    if not isinstance(out_dir, (str, os.PathLike)) or str(out_dir).strip() == "":
        raise SynthCXRError(f"SynthCXR out_dir must be a folder path, got {out_dir!r}: pass e.g. 'data/synthcxr/mine'")
    out_dir = Path(out_dir).resolve()
    if out_dir == Path.cwd().resolve() or out_dir in Path.cwd().resolve().parents or out_dir.parent == out_dir:
        raise SynthCXRError(f"SynthCXR out_dir {out_dir} is the current folder or one above it: pass a subfolder")
    _refuse_foreign_folder(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    files: dict[str, str] = {}
    file_sizes: dict[str, int] = {}
    try:
        for split in SPLITS:
            (tmp / "images" / split).mkdir(parents=True, exist_ok=True)
            rows: dict[str, list[Any]] = {k: [] for k in (
                "study_id", "split", "image_path", "findings", "impression", "labels", "labels_findings",
                "labels_impression", "truth", "devices")}
            for i in range(int(n[split])):
                st = generate_study(seed, split, i, image_size)
                rel = f"images/{split}/{st.study_id}.png"
                (tmp / rel).write_bytes(_png_bytes(st.image))
                rows["study_id"].append(st.study_id)
                rows["split"].append(split)
                rows["image_path"].append(rel)
                rows["findings"].append(st.findings)
                rows["impression"].append(st.impression)
                rows["labels"].append(_labels_json(st.labels))
                rows["labels_findings"].append(_labels_json(st.labels_findings))
                rows["labels_impression"].append(_labels_json(st.labels_impression))
                rows["truth"].append(json.dumps([{k: v for k, v in asdict(f).items() if v not in (None, False)}
                                                 for f in st.truth], sort_keys=True))
                rows["devices"].append(list(st.devices))
            schema = pa.schema([(k, pa.list_(pa.string()) if k == "devices" else pa.string()) for k in rows])
            table = pa.table(rows, schema=schema)
            pq.write_table(table, tmp / f"{split}.parquet", compression="zstd", write_statistics=False)
        for p in sorted(tmp.rglob("*")):
            if p.is_file():
                files[p.relative_to(tmp).as_posix()] = _sha256(p)
                file_sizes[p.relative_to(tmp).as_posix()] = p.stat().st_size
        manifest = {**_config_key(seed, n, image_size), "files": files, "file_sizes": file_sizes,
                    "counts": {s: int(n[s]) for s in SPLITS}}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def read_manifest(out_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The manifest of a generated folder, or None when missing or unreadable."""
    p = Path(out_dir) / "manifest.json"
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def dataset_dir(cfg: Any) -> Path:
    """``<paths.data>/synthcxr/<profile name>`` for a profile."""
    return Path(cfg.data_dir) / "synthcxr" / str(cfg.name)


def _manifest_problem(out_dir: Path, want: dict[str, Any]) -> str | None:
    """Why ``out_dir`` is not the dataset ``want`` describes, or None when it is intact.

    Checks the manifest's settings, that it lists the three Parquet files and one image
    per study, and then every listed file: present, a regular file, its byte size (when
    recorded) and its sha256. Checking the cpu profile's folder (2,400 PNGs of 96 x 96,
    about 6 kB each) took 0.07-0.16 s on one core with a warm file cache, against about
    24 s to generate it.
    """
    man = read_manifest(out_dir)
    if man is None:
        return "no readable manifest.json"
    changed = [k for k in want if man.get(k) != want[k]]
    if changed:
        return f"manifest settings {changed} differ from the profile"
    files, sizes = man.get("files"), man.get("file_sizes") or {}
    if not isinstance(files, dict) or not isinstance(sizes, dict):
        return "manifest has no file list"
    for split in SPLITS:
        if f"{split}.parquet" not in files:
            return f"manifest does not list {split}.parquet"
        n_img = sum(1 for rel in files if rel.startswith(f"images/{split}/"))
        if n_img != want["sizes"][split]:
            return f"manifest lists {n_img} {split} images for {want['sizes'][split]} studies"
    for rel, digest in sorted(files.items()):
        p = out_dir / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute() or not p.is_file():
            return f"{rel} is missing"
        if rel in sizes and p.stat().st_size != sizes[rel]:
            return f"{rel} has {p.stat().st_size} bytes, the manifest says {sizes[rel]}"
        if _sha256(p) != digest:
            return f"{rel} differs from its sha256 in the manifest"
    return None


def _manifest_ok(out_dir: Path, want: dict[str, Any]) -> bool:
    """True when :func:`_manifest_problem` finds nothing wrong."""
    return _manifest_problem(out_dir, want) is None


def ensure_dataset(cfg: Any) -> Path:
    """Return the profile's SynthCXR folder, generating it when missing or out of date.

    The folder is regenerated when its manifest does not match the profile (generator
    version, ``seed``, ``data.n_train/n_val/n_test``, ``data.image_size``) or any file it
    lists (Parquet tables and every image) is missing or differs in size or sha256. A
    damaged folder (settings match, files do not) is regenerated with a UserWarning that
    names the first bad file; the output is deterministic, so the new folder is the same
    dataset.
    """
    d = cfg.data
    n = {"train": d.n_train, "val": d.n_val, "test": d.n_test}
    out = dataset_dir(cfg)
    want = _config_key(cfg.seed, n, d.image_size)
    problem = _manifest_problem(out, want)
    if problem is not None:
        man = read_manifest(out)
        if man is not None and all(man.get(k) == want[k] for k in want):
            warnings.warn(f"SynthCXR folder {out} is damaged ({problem}); regenerating it", stacklevel=2)
        generate_dataset(out, seed=cfg.seed, n_train=d.n_train, n_val=d.n_val, n_test=d.n_test,
                         image_size=d.image_size)
    return out


def _load_synthetic(cfg: Any, split: str) -> tuple[list[Record], LoadReport]:
    """The profile's SynthCXR split (generated on first use, :func:`ensure_dataset`) as records."""
    import pyarrow.parquet as pq

    root = ensure_dataset(cfg)
    table = pq.read_table(root / f"{split}.parquet").to_pylist()
    rep = LoadReport(source="synthetic", split=split)
    out = []
    for row in table:
        out.append(Record(
            study_id=row["study_id"], image_paths=[str(root / row["image_path"])], findings=row["findings"],
            impression=row["impression"], labels=json.loads(row["labels"]), split=split,
            meta={"labels_findings": json.loads(row["labels_findings"]),
                  "labels_impression": json.loads(row["labels_impression"]),
                  "truth": json.loads(row["truth"]), "devices": list(row["devices"] or [])}))
    rep.n_loaded = len(out)
    return out, rep


def _check_synthetic(p: Any) -> str | None:
    if p.grpo.eval_n > p.data.n_test:
        return (f"grpo.eval_n = {p.grpo.eval_n}: more than the test split (data.n_test = {p.data.n_test}); "
                f"allowed: 0 (all) to {p.data.n_test}")
    return None


register_dataset(Dataset("synthetic", "SynthCXR", _load_synthetic, real=False, aliases=("synthcxr",),
                         check_profile=_check_synthetic))
