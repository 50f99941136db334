"""ReXGradient-160K loader (the Hugging Face release ``rajpurkarlab/ReXGradient-160K``).

Assumed layout (from the dataset card and public code that reads it; the gated release
itself was not inspected, so the loader accepts a few variants and says what it found)::

    <root>/metadata/{train,valid,test}_metadata.json   one entry per study, or
    <root>/metadata/{train,valid,test}_metadata.csv    one row per image (rows of a study are merged)
    <root>/deid_png/...                                 images (``cat deid_png.part* > deid_png.tar``)

- A split file is any ``.json`` / ``.jsonl`` / ``.csv`` / ``.parquet`` in ``root``,
  ``root/metadata`` or ``root/data`` whose name contains the split token (``train``;
  ``valid``/``validation``/``val``; ``test``, but not ``private``); names containing
  ``metadata`` are preferred.
- JSON may be a list of objects, an object keyed by study id, or ``{"data": [...]}``.
- Columns are matched case-insensitively: study id ``id`` / ``StudyInstanceUid`` / ``study_id``
  (else the JSON key), ``Findings``, ``Impression``, images ``ImagePath`` / ``image_paths`` /
  ``images`` (a list, a JSON / Python list string, or one path).
- The metadata file is read by :func:`sdrlib.data._common.read_table`: a truncated,
  corrupt or unparsable file raises DataError naming it.
- Image paths are resolved against ``root``, then the metadata folder, then with leading
  ``../`` removed (the release stores ``../deid_png/...``), and must stay inside ``root``
  (absolute paths and paths whose ``..`` escapes it are not opened; symlinks are followed).

Study ids written as floats (``123.0``: a spreadsheet round-trip, or a JSON number) are read as
the integers they are (:func:`sdrlib.data._common.normalize_id`); text ids are kept as written.

Skips (counted): ``empty_row``, ``bad_row`` (no id, or a JSON line that is not an object),
``malformed_row`` (a CSV row with more or fewer fields than its header, a stray quote, or an id
that is a non-integral number such as ``5.5``),
``conflicting_study_id`` (same id, different text), ``missing_findings`` /
``missing_impression``, ``unsafe_path`` (one per image path outside ``root``),
``no_image``. Notes:
``merged_rows`` (image rows of one study), ``missing_image`` (one of several), ``decoded_utf16`` /
``decoded_utf32`` / ``decoded_cp1252`` (a metadata file not in UTF-8, e.g. saved with a UTF-16
byte-order mark by a spreadsheet tool: read, and counted).

Left out: the interstitial-pattern bounding boxes, view filtering, Indication / Comparison.

Example: ``records, rep = load_rexgradient("data/rexgradient", "val")``
"""

from __future__ import annotations

import ast
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterator, Sequence

from sdrlib.data._common import (check_require, check_root, clean_section, existing_images, is_blank_row,
                                 normalize_id, read_table, resolve_data_path, sections_ok)
from sdrlib.data._rexgradient_standin import unpack_rexgradient, write_rexgradient_layout
from sdrlib.data.download import real_root
from sdrlib.data.records import DataError, LoadReport, Record, check_split
from sdrlib.data.registry import Dataset, register_dataset

__all__ = ["load_rexgradient", "find_split_file"]

_TOKENS = {"train": ("train",), "val": ("valid", "validation", "val", "validate"), "test": ("test",)}
_EXTS = (".json", ".jsonl", ".csv", ".parquet", ".csv.gz", ".json.gz")
_ID_KEYS = ("id", "studyinstanceuid", "study_id", "studyid", "study_instance_uid")
_F_KEYS = ("findings", "findings_section")
_I_KEYS = ("impression", "impression_section", "impressions")
_IMG_KEYS = ("imagepath", "image_paths", "imagepaths", "images", "image_path", "image")
_HINT = ("download rajpurkarlab/ReXGradient-160K from Hugging Face (gated), unpack deid_png, and point "
         "data.root at its folder (see docs/real_data.md)")


def _tokens(name: str) -> set[str]:
    import re

    return set(re.split(r"[^a-z0-9]+", name.lower()))


def find_split_file(root: Path, split: str) -> Path:
    """The metadata file of ``split`` under ``root`` (see module docstring); DataError if none."""
    cands = []
    for sub in ("", "metadata", "data"):
        d = root / sub if sub else root
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if not p.is_file() or not p.name.lower().endswith(_EXTS):
                continue
            toks = _tokens(p.name)
            if "private" in toks or not (toks & set(_TOKENS[split])):
                continue
            cands.append(p)
    if not cands:
        raise DataError(f"ReXGradient: no {split} metadata file (.json/.jsonl/.csv/.parquet named with "
                        f"{'/'.join(_TOKENS[split])}) in {root}, {root / 'metadata'} or {root / 'data'}; {_HINT}")
    cands.sort(key=lambda p: ("metadata" not in p.name.lower(), not p.name.lower().endswith(".json"), p.name))
    return cands[0]


def _rows(path: Path, rep: LoadReport) -> Iterator[dict[str, Any]]:
    """Rows of the metadata file via :func:`~sdrlib.data._common.read_table` (DataError naming it)."""
    yield from read_table(path, rep).to_dict(orient="records")


def _get(row: dict[str, Any], keys: Sequence[str]) -> Any:
    low = {str(k).lower(): v for k, v in row.items()}
    for k in keys:
        v = low.get(k)
        if v is not None and not (isinstance(v, float) and v != v):  # NaN: key absent from this row
            return v
    return None


def _paths(value: Any) -> list[str]:
    if value is None or (isinstance(value, float) and value != value):
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if str(v).strip()]
    s = str(value).strip()
    if not s:
        return []
    if s.startswith("["):
        for parse in (json.loads, ast.literal_eval):
            try:
                v = parse(s)
                return [str(x) for x in v if str(x).strip()]
            except (ValueError, SyntaxError, TypeError):
                continue
    return [s]


def _resolve(p: str, root: Path, meta_dir: Path) -> tuple[Path | None, str]:
    """``(file, "")``, ``(None, "missing")`` or ``(None, "unsafe_path")``; confined to ``root``.

    Tried against ``root`` and the metadata folder, as given and with leading ``../``
    removed; absolute paths and paths resolving outside ``root`` are never opened
    (policy: :mod:`sdrlib.data._common`).
    """
    stripped = p
    while stripped.startswith("../"):
        stripped = stripped[3:]
    return resolve_data_path(list(dict.fromkeys((p, stripped))), [root, meta_dir], root)


def load_rexgradient(root: str | Path, split: str, *, require: Sequence[str] = ("findings", "impression")
                     ) -> tuple[list[Record], LoadReport]:
    """Load one split of ReXGradient-160K (layout and skip reasons: module docstring).

    Parameters
    ----------
    root : path
        The downloaded dataset folder.
    split : {"train", "val", "test"}
    require : subset of ("findings", "impression")

    Returns
    -------
    (list of Record, LoadReport); labels are None (the release has no CheXpert labels).

    Raises
    ------
    DataError
        ``root`` missing, no metadata file for the split, an unreadable metadata file, or the
        images still packed (``deid_png.part*`` / ``deid_png.tar`` without ``deid_png/``).
    """
    check_split(split)
    require = check_require(require)
    root = check_root(root, "ReXGradient", _HINT)
    path = find_split_file(root, split)
    packed = sorted(root.glob("deid_png.part*")) or sorted(root.glob("deid_png.tar"))
    if packed and not (root / "deid_png").exists():  # as downloaded: every study would be no_image
        raise DataError(f"ReXGradient: the images are still packed ({', '.join(p.name for p in packed[:2])}"
                        f"{', ...' if len(packed) > 2 else ''}) and {root / 'deid_png'} does not exist; unpack them "
                        f"first: cd {root} && cat deid_png.part* > deid_png.tar && tar -xf deid_png.tar")
    rep = LoadReport(source="rexgradient", split=split)
    rep.note("metadata_file", path.name)
    studies: OrderedDict[str, dict[str, Any]] = OrderedDict()
    for i, row in enumerate(_rows(path, rep)):
        if is_blank_row(v for k, v in row.items() if k != "__key__"):
            rep.skip("empty_row", f"row {i}")
            continue
        raw_id = _get(row, _ID_KEYS)
        if raw_id is None or not str(raw_id).strip():
            raw_id = row.get("__key__", "")
        sid = normalize_id(raw_id)
        if sid is None:
            rep.skip("malformed_row", f"row {i}: study id {raw_id!r}")
            continue
        if not sid:
            rep.skip("bad_row", f"row {i}: no study id")
            continue
        f, imp = clean_section(_get(row, _F_KEYS)), clean_section(_get(row, _I_KEYS))
        imgs = _paths(_get(row, _IMG_KEYS))
        if sid in studies:
            st = studies[sid]
            if (st["findings"], st["impression"]) != (f, imp):
                rep.skip("conflicting_study_id", sid)
                continue
            rep.note("merged_rows", sid)
            st["images"].extend(x for x in imgs if x not in st["images"])
            continue
        studies[sid] = {"findings": f, "impression": imp, "images": imgs,
                        "meta": {k: row[k] for k in row if str(k).lower() in ("patientid", "imageviewposition")}}
    records: list[Record] = []
    for sid, st in studies.items():
        if not sections_ok(st["findings"], st["impression"], require, rep, sid):
            continue
        found = existing_images(sid, st["images"], lambda p: _resolve(p, root, path.parent), rep)
        if not found:
            rep.skip("no_image", sid)
            continue
        records.append(Record(study_id=sid, image_paths=found, findings=st["findings"],
                              impression=st["impression"], labels=None, split=split, meta=st["meta"]))
    rep.n_loaded = len(records)
    return records, rep


register_dataset(Dataset(
    "rexgradient", "ReXGradient-160K", lambda cfg, split: load_rexgradient(real_root(cfg), split),
    standin=write_rexgradient_layout, standin_code=2, standin_unpack=unpack_rexgradient))
