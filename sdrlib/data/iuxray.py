"""IU-Xray (Indiana University / OpenI) loader: ``indiana_reports.csv`` + ``indiana_projections.csv``.

Expected under ``root`` (the widely mirrored Kaggle packaging of OpenI)::

    indiana_reports.csv       uid, MeSH, Problems, image, indication, comparison, findings, impression
    indiana_projections.csv   uid, filename, projection (Frontal | Lateral)
    images/images_normalized/<filename>     (also accepted: images/<filename> or <filename>)

IU-Xray has no official split. Studies are assigned by a seeded hash of the uid
(70 / 10 / 20 % train / val / test), so the split is stable across runs and
machines and independent of row order. Anonymisation tokens (``XXXX``) are kept.

Skips (counted): ``empty_row``, ``bad_row`` (no uid), ``duplicate_study_id`` (second
row with a uid already seen), ``missing_findings`` / ``missing_impression``,
``unsafe_path`` (a projection ``filename`` that is absolute or whose ``..`` leads
outside ``root``: never opened), ``no_image`` (no projection row or no file
on disk). Both CSVs are read by :func:`sdrlib.data._common.read_table`: an unreadable
file raises DataError naming it. Notes: ``missing_image`` (one of
several), ``orphan_projection`` (projection row without a report), ``decoded_cp1252``.

Left out: labels from MeSH / Problems (kept in ``Record.meta`` as text), the R2Gen split.

Example: ``records, rep = load_iuxray("data/iu-xray", "test", seed=0)``
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

from . import DataError, LoadReport, Record, _check_split
from ._common import (check_require, check_root, clean_section, find_file, is_blank_row, read_table,
                      resolve_data_path, sections_ok)

__all__ = ["load_iuxray", "iuxray_split_of"]

_REPORT_COLS = ("uid", "findings", "impression")
_HINT = ("download IU-Xray (OpenI; e.g. the Kaggle 'chest-xrays-indiana-university' packaging) and point "
         "data.root at the folder with indiana_reports.csv (see README, 'Real data')")


def iuxray_split_of(uid: str, seed: int = 0, fractions: tuple[float, float, float] = (0.7, 0.1, 0.2)) -> str:
    """Deterministic split of a uid: ``sha256(f"{seed}:{uid}")`` as a number in [0, 1).

    Example: ``iuxray_split_of("1")`` -> one of ``"train"``, ``"val"``, ``"test"`` (always the same).
    """
    if len(fractions) != 3 or abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) < 0:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions!r}")
    h = int.from_bytes(hashlib.sha256(f"{seed}:{uid}".encode()).digest()[:8], "big") / 2**64
    if h < fractions[0]:
        return "train"
    return "val" if h < fractions[0] + fractions[1] else "test"


def load_iuxray(root: str | Path, split: str, *, seed: int = 0,
                fractions: tuple[float, float, float] = (0.7, 0.1, 0.2),
                require: Sequence[str] = ("findings", "impression")) -> tuple[list[Record], LoadReport]:
    """Load one split of IU-Xray (layout, split rule and skip reasons: module docstring).

    Parameters
    ----------
    root : path
    split : {"train", "val", "test"}
    seed : int
        Seed of the uid-hash split.
    fractions : (train, val, test) fractions
    require : subset of ("findings", "impression")

    Returns
    -------
    (list of Record, LoadReport); frontal images first; labels None; MeSH / Problems in meta.

    Raises
    ------
    DataError
        ``root`` or one of the two CSV files missing, unreadable (truncated, not CSV), or a
        CSV lacks a required column.
    """
    _check_split(split)
    require = check_require(require)
    root = check_root(root, "IU-Xray", _HINT)
    rep = LoadReport(source="iuxray", split=split)
    rpath = find_file(root, ["indiana_reports.csv"])
    ppath = find_file(root, ["indiana_projections.csv"])
    if rpath is None or ppath is None:
        raise DataError(f"IU-Xray: indiana_reports.csv and indiana_projections.csv must both be in {root}; {_HINT}")
    reports = read_table(rpath, rep, _REPORT_COLS)
    projections = read_table(ppath, rep, ("uid", "filename", "projection"))
    img_dirs = [root / "images" / "images_normalized", root / "images", root]

    projs: dict[str, list[tuple[str, str]]] = {}
    for i in range(len(projections)):
        uid = str(projections.at[i, "uid"]).strip()
        fn = str(projections.at[i, "filename"]).strip()
        if not uid or not fn:
            continue  # blank projection rows carry nothing; reports decide what is skipped
        projs.setdefault(uid, []).append((fn, str(projections.at[i, "projection"]).strip()))

    seen: set[str] = set()
    records: list[Record] = []
    for i in range(len(reports)):
        if is_blank_row(reports.iloc[i].tolist()):
            rep.skip("empty_row", f"line {i + 2}")
            continue
        uid = str(reports.at[i, "uid"]).strip()
        if not uid:
            rep.skip("bad_row", f"line {i + 2}")
            continue
        if uid in seen:
            rep.skip("duplicate_study_id", uid)
            continue
        seen.add(uid)
        if iuxray_split_of(uid, seed, fractions) != split:
            continue
        findings = clean_section(reports.at[i, "findings"])
        impression = clean_section(reports.at[i, "impression"])
        if not sections_ok(findings, impression, require, rep, uid):
            continue
        items = sorted(projs.get(uid, []), key=lambda t: t[1].lower() != "frontal")
        paths = []
        for fn, _ in items:
            p, why = resolve_data_path(fn, img_dirs, root)  # confined to root (no absolute path, no ../ out of it)
            if why == "unsafe_path":
                rep.skip("unsafe_path", f"{uid}: {fn}")
            elif p is None:
                rep.note("missing_image", fn)
            else:
                paths.append(str(p))
        if not paths:
            rep.skip("no_image", uid)
            continue
        meta = {c: str(reports.at[i, c]) for c in ("MeSH", "Problems", "indication", "comparison")
                if c in reports.columns}
        records.append(Record(study_id=uid, image_paths=paths, findings=findings, impression=impression,
                              labels=None, split=split, meta=meta))
    for uid in projs:
        if uid not in seen:
            rep.note("orphan_projection", uid)
    rep.n_loaded = len(records)
    return records, rep
