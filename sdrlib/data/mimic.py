"""MIMIC-CXR loader: the split CSV, the free-text reports and the JPG images (PhysioNet layout).

Expected under ``root`` (MIMIC-CXR-JPG 2.x with the MIMIC-CXR report archive unpacked into it)::

    mimic-cxr-2.0.0-split.csv(.gz)       dicom_id, study_id, subject_id, split (train|validate|test)
    mimic-cxr-2.0.0-chexpert.csv(.gz)    optional: subject_id, study_id, 14 CheXpert columns (1.0/0.0/-1.0/blank)
    mimic-cxr-2.0.0-metadata.csv(.gz)    optional: dicom_id, ViewPosition (frontal views listed first)
    files/p10/p10000032/s50414267.txt    the report of study 50414267 (FINDINGS: / IMPRESSION: headers)
    files/p10/p10000032/s50414267/<dicom_id>.jpg

Reports may also live in ``<root>/mimic-cxr-reports/files/...`` or a separate ``reports_root``.
The split value ``validate`` maps to ``"val"``.

Skipped studies are counted by reason in the :class:`~sdrlib.data.LoadReport`:
``bad_row`` (empty ids), ``empty_row``, ``malformed_row`` (a CSV row with more or fewer fields
than its header, a stray quote (``5514"2506``, or a quote never closed), or a subject / study id that
is a non-integral number such as ``5.5``; in any of the CSVs: file and line named), ``bad_split_value``, ``conflicting_study_id`` (same study
id under another subject or split), ``missing_report``, ``empty_report``, ``truncated_report``
(the file ends in NUL padding: cut off while it was written, its last section incomplete),
``undecodable_report`` (a UTF-16 / UTF-32 byte-order mark followed by bytes that are not that encoding),
``missing_findings`` / ``missing_impression`` (sections in ``require``), ``unsafe_path`` (a
split row whose ids are not plain names, e.g. ``../x``: never opened), ``no_image`` (none of its images exists).
Subject and study ids written as floats (``50414267.0``, ``5.0414267E7``: a spreadsheet
round-trip) are read as the integers they are (:func:`sdrlib.data._common.normalize_id`).
The CSVs are read by :func:`sdrlib.data._common.read_table`: a truncated ``.csv.gz``, an
unparsable CSV or one ending in NUL padding raises DataError naming the file. Kept-but-noted:
``duplicate_dicom``, ``missing_image`` (one of several), ``decoded_utf16`` / ``decoded_utf32`` (a report or
CSV saved with a UTF-16 / UTF-32 byte-order mark, e.g. by a spreadsheet tool: read, and counted per file),
``decoded_cp1252`` / ``decoded_latin1``,
``control_chars_removed`` (a stray control character inside an otherwise complete report).

Left out: the DICOM originals, view filtering (all images of a study are listed), and
report sections other than Findings and Impression.

Example: ``records, rep = load_mimic("data/mimic-cxr", "test"); print(rep.summary())``
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from sdrlib.data._common import (check_require, check_root, clean_section, decode_bytes, find_file, half_written,
                                 inside_root, is_blank_row, normalize_id, plain_name, read_table, row_line, sections_ok)
from sdrlib.data._mimic_standin import write_mimic_layout
from sdrlib.data.download import real_root
from sdrlib.data.records import DataError, LoadReport, Record, check_split
from sdrlib.data.registry import Dataset, register_dataset
from sdrlib.reports import split_report
from sdrlib.vocabulary import CHEXPERT_14

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["load_mimic", "MIMIC_SPLIT_NAMES"]

MIMIC_SPLIT_NAMES = {"train": "train", "validate": "val", "val": "val", "valid": "val", "test": "test"}
_FRONTAL = ("PA", "AP")
_HINT = ("download MIMIC-CXR-JPG and the MIMIC-CXR reports from PhysioNet and point data.root at the "
         "folder holding mimic-cxr-2.0.0-split.csv.gz (see docs/real_data.md)")


def _study_dir(base: Path, subject_id: str, study_id: str) -> Path:
    return base / "files" / f"p{subject_id[:2]}" / f"p{subject_id}" / f"s{study_id}"


def _read_chexpert(path: Path | None, rep: LoadReport) -> dict[str, dict[str, int]]:
    if path is None:
        return {}
    df = read_table(path, rep, ["study_id"])
    out: dict[str, dict[str, int]] = {}
    cols = [c for c in CHEXPERT_14 if c in df.columns]
    for i in range(len(df)):
        sid = normalize_id(df.at[i, "study_id"])
        if sid is None:
            rep.skip("malformed_row", f"{path.name} line {row_line(df, i)}: study_id {df.at[i, 'study_id']!r}")
            continue
        if not sid:
            continue
        labels: dict[str, int] = {}
        for c in cols:
            v = str(df.at[i, c]).strip()
            if v in ("1.0", "1", "0.0", "0", "-1.0", "-1"):
                labels[c] = int(float(v))
        if sid in out:
            rep.note("duplicate_label_row", sid)
            continue
        out[sid] = labels
    return out


def _read_views(root: Path, rep: LoadReport) -> dict[str, str]:
    """``dicom_id -> ViewPosition`` from the metadata CSV (empty without the file or its column)."""
    meta_csv = find_file(root, ["mimic-cxr-2.0.0-metadata.csv.gz", "mimic-cxr-2.0.0-metadata.csv"])
    views: dict[str, str] = {}
    if meta_csv is not None:
        mdf = read_table(meta_csv, rep, ["dicom_id"])
        if "ViewPosition" in mdf.columns:
            views = dict(zip(mdf["dicom_id"].str.strip(), mdf["ViewPosition"].str.strip()))
    return views


def _split_row(df: "pd.DataFrame", i: int, rep: LoadReport) -> tuple[dict[str, str], str] | None:
    """Row ``i`` of the split CSV as ``(ids, split)``: ``dicom_id`` / ``study_id`` / ``subject_id`` (ids
    normalised) and the split name; None for a row skipped and counted (``empty_row``, ``bad_row``,
    ``malformed_row``, ``unsafe_path``, ``bad_split_value``)."""
    row = {c: str(df.at[i, c]).strip() for c in ("dicom_id", "study_id", "subject_id", "split")}
    if is_blank_row(df.iloc[i].tolist()):
        rep.skip("empty_row", f"line {row_line(df, i)}")
        return None
    if not (row["dicom_id"] and row["study_id"] and row["subject_id"]):
        rep.skip("bad_row", f"line {row_line(df, i)}")
        return None
    ids = {c: normalize_id(row[c]) for c in ("study_id", "subject_id")}
    if None in ids.values():
        rep.skip("malformed_row", f"line {row_line(df, i)}: subject_id {row['subject_id']!r}, study_id "
                                  f"{row['study_id']!r} (ids are integers)")
        return None
    row.update(ids)
    if not all(plain_name(row[c]) for c in ("dicom_id", "study_id", "subject_id")):
        rep.skip("unsafe_path", f"line {row_line(df, i)}: ids {row['subject_id']!r}/{row['study_id']!r}/"
                                f"{row['dicom_id']!r} would leave the data root")
        return None
    sp = MIMIC_SPLIT_NAMES.get(row["split"].lower())
    if sp is None:
        rep.skip("bad_split_value", f"line {row_line(df, i)}: {row['split']!r}")
        return None
    return row, sp


def _read_split(df: "pd.DataFrame", rep: LoadReport) -> OrderedDict[str, dict]:
    """Studies of the split CSV in file order: ``study_id -> {"subject_id", "split", "dicoms"}`` (every split;
    ``conflicting_study_id`` rows skipped, a repeated ``duplicate_dicom`` noted)."""
    studies: OrderedDict[str, dict] = OrderedDict()
    seen_dicoms: set[str] = set()
    for i in range(len(df)):
        got = _split_row(df, i, rep)
        if got is None:
            continue
        row, sp = got
        st = studies.get(row["study_id"])
        if st is None:
            st = studies[row["study_id"]] = {"subject_id": row["subject_id"], "split": sp, "dicoms": []}
        elif st["subject_id"] != row["subject_id"] or st["split"] != sp:
            rep.skip("conflicting_study_id", f"study {row['study_id']} (line {row_line(df, i)})")
            continue
        if row["dicom_id"] in seen_dicoms:
            rep.note("duplicate_dicom", row["dicom_id"])
            continue
        seen_dicoms.add(row["dicom_id"])
        st["dicoms"].append(row["dicom_id"])
    return studies


def _check_reports_unpacked(studies: OrderedDict[str, dict], split: str, rbase: Path, root: Path) -> None:
    """DataError when no study of ``split`` has its report: the report archive is not unpacked."""
    wanted = [(sid, st) for sid, st in studies.items() if st["split"] == split]
    if wanted and not any(_study_dir(rbase, st["subject_id"], sid).with_suffix(".txt").is_file() for sid, st in wanted):
        first = _study_dir(rbase, wanted[0][1]["subject_id"], wanted[0][0]).with_suffix(".txt")
        raise DataError(f"MIMIC-CXR: none of the {len(wanted)} {split} studies has its report (e.g. {first}); the "
                        "reports are not part of MIMIC-CXR-JPG: download mimic-cxr-reports.zip from the MIMIC-CXR "
                        f"project on PhysioNet and unzip it into {root} (or pass reports_root)")


def _read_report(report_path: Path, rep: LoadReport) -> str | None:
    """A study's report text; None for a report skipped and counted (``missing_report``, ``truncated_report``,
    ``undecodable_report``, ``empty_report``)."""
    if not report_path.is_file():
        rep.skip("missing_report", str(report_path))
        return None
    raw = report_path.read_bytes()
    if half_written(raw):
        rep.skip("truncated_report", f"{report_path}: ends in {half_written(raw)} NUL byte(s)")
        return None
    try:
        text = decode_bytes(raw, rep, report_path.name)
    except DataError as e:  # a byte-order mark the bytes then break
        rep.skip("undecodable_report", str(e))
        return None
    if not text.strip():
        rep.skip("empty_report", str(report_path))
        return None
    return text


def _image_paths(root: Path, subject: str, study_id: str, dicoms: list[str], views: dict[str, str],
                 rep: LoadReport) -> list[str]:
    """The study's JPGs that exist, frontal views first (else in split-file order); others noted / counted."""
    img_dir = _study_dir(root, subject, study_id)
    ordered = sorted(dicoms, key=lambda d: (views.get(d, "") not in _FRONTAL, dicoms.index(d)))
    paths = []
    for d in ordered:
        p = img_dir / f"{d}.jpg"
        q = inside_root(p, root)
        if q is None:  # ids are checked to be plain names; kept as a second line of defence
            rep.skip("unsafe_path", str(p))
        elif q.is_file():
            paths.append(str(q))
        else:
            rep.note("missing_image", str(p))
    return paths


def load_mimic(root: str | Path, split: str, *, reports_root: str | Path | None = None,
               require: Sequence[str] = ("findings", "impression")) -> tuple[list[Record], LoadReport]:
    """Load one split of MIMIC-CXR.

    Parameters
    ----------
    root : path
        Folder with ``mimic-cxr-2.0.0-split.csv(.gz)`` and ``files/`` (images, and reports
        unless ``reports_root`` is given).
    split : {"train", "val", "test"}
    reports_root : path, optional
        Folder whose ``files/`` holds the ``sXXXX.txt`` reports (default: ``root``, or
        ``root/mimic-cxr-reports`` when that exists).
    require : subset of ("findings", "impression")
        Sections a study must have to be kept.

    Returns
    -------
    (list of Record, LoadReport)
        Records in split-file order; ``labels`` as given in the CheXpert file when present
        (blank cells are absent), else None.

    Raises
    ------
    DataError
        ``root`` or the split CSV is missing; a CSV is unreadable (truncated gzip, parse
        error) or lacks a required column; no study of the split has its report (the
        report archive is not unpacked: one missing report is skipped, ``missing_report``).
    """
    check_split(split)
    require = check_require(require)
    root = check_root(root, "MIMIC-CXR", _HINT)
    rep = LoadReport(source="mimic", split=split)
    split_csv = find_file(root, ["mimic-cxr-2.0.0-split.csv.gz", "mimic-cxr-2.0.0-split.csv"])
    if split_csv is None:
        raise DataError(f"MIMIC-CXR: no mimic-cxr-2.0.0-split.csv(.gz) in {root}; {_HINT}")
    rbase = Path(reports_root) if reports_root is not None else (
        root / "mimic-cxr-reports" if (root / "mimic-cxr-reports" / "files").is_dir() else root)
    chexpert = _read_chexpert(find_file(root, ["mimic-cxr-2.0.0-chexpert.csv.gz", "mimic-cxr-2.0.0-chexpert.csv"]),
                              rep)
    views = _read_views(root, rep)
    studies = _read_split(read_table(split_csv, rep, ["dicom_id", "study_id", "subject_id", "split"]), rep)
    _check_reports_unpacked(studies, split, rbase, root)
    records: list[Record] = []
    for study_id, st in studies.items():
        if st["split"] != split:
            continue
        subject = st["subject_id"]
        text = _read_report(_study_dir(rbase, subject, study_id).with_suffix(".txt"), rep)
        if text is None:
            continue
        sec = split_report(text)
        findings, impression = clean_section(sec.findings), clean_section(sec.impression)
        if not sections_ok(findings, impression, require, rep, study_id):
            continue
        paths = _image_paths(root, subject, study_id, st["dicoms"], views, rep)
        if not paths:
            rep.skip("no_image", study_id)
            continue
        labels = chexpert.get(study_id)
        records.append(Record(study_id=study_id, image_paths=paths, findings=findings, impression=impression,
                              labels=labels, split=split,
                              meta={"subject_id": subject,
                                    "views": [views.get(Path(p).stem, "") for p in paths] if views else []}))
    rep.n_loaded = len(records)
    return records, rep


register_dataset(Dataset(
    "mimic", "MIMIC-CXR", lambda cfg, split: load_mimic(real_root(cfg), split),
    standin=write_mimic_layout, standin_code=1))
