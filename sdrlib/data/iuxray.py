"""IU-Xray (Indiana University / OpenI) loader: ``indiana_reports.csv`` + ``indiana_projections.csv``.

Expected under ``root`` (the widely mirrored Kaggle packaging of OpenI)::

    indiana_reports.csv       uid, MeSH, Problems, image, indication, comparison, findings, impression
    indiana_projections.csv   uid, filename, projection (Frontal | Lateral)
    images/images_normalized/<filename>     (also accepted: images/<filename> or <filename>)

IU-Xray has no official split. Studies are assigned by a seeded hash of the uid
(70 / 10 / 20 % train / val / test), so the split is stable across runs and
machines and independent of row order. Anonymisation tokens (``XXXX``) are kept.

Skips (counted): ``empty_row``, ``bad_row`` (no uid), ``malformed_row`` (a CSV row with more
or fewer fields than its header, a stray quote, or a uid that is a non-integral number such as
``5.5``; in either CSV, file and line named), ``duplicate_study_id`` (second
row with a uid already seen), ``missing_findings`` / ``missing_impression``,
``unsafe_path`` (a projection ``filename`` that is absolute or whose ``..`` leads
outside ``root``: never opened), ``no_image`` (no projection row or no file
on disk). A uid written as a float (``12.0``: a spreadsheet round-trip) is the integer it
is in both files (:func:`sdrlib.data._common.normalize_id`), so its images, labels and split
are those of ``12``. Both CSVs are read by :func:`sdrlib.data._common.read_table`: an
unreadable file (or one ending in NUL padding, cut off while written) raises DataError naming
it. Notes: ``missing_image`` (one of several), ``orphan_projection`` (projection row without a
report), ``decoded_utf16`` / ``decoded_utf32`` (a CSV saved with a byte-order mark: read),
``decoded_cp1252``.

Labels: IU-Xray's ``Problems`` column (``;``-separated MeSH headings, e.g. ``Cardiomegaly;Pulmonary
Atelectasis``; when absent or blank, the headings of ``MeSH``, the part of each ``;``-item before its
first ``/`` qualifier) is mapped to the 14 CheXpert observations by :data:`MESH_TO_CHEXPERT`
(:func:`mesh_labels`) and fills ``Record.labels`` whenever one of the two columns exists and the cell
is not blank (else ``labels`` stays None). Conventions: a mapped heading is positive (1); IU gives
no negatives or uncertain labels, so an observation that is not listed is *not mentioned* (absent
from the dict), as in CheXpert; "No Finding" follows the CheXpert rule of
:func:`sdrlib.vocabulary.apply_no_finding` (1 when none of the 12 pathologies is positive), so
``normal`` and studies with only unmapped headings (spine, aorta, ...) get ``{"No Finding": 1}``.
Decisions: granulomas (``Calcified Granuloma``, ``Granulomatous Disease``) are **not** Lung Lesion
(benign calcified granulomas are the commonest IU heading of otherwise normal studies, and neither
CheXpert's labeler nor ours counts "granuloma" as a lesion); ``Pulmonary Congestion`` is Edema (the
labelers' mention list puts vascular congestion there); ``Cicatrix`` (scar) is Lung Opacity (as the
labelers read "scarring"); ``Thickening`` / ``Pleural Thickening`` are Pleural Other only with a pleural
qualifier or name. Headings with no CheXpert counterpart (ignored): :data:`MESH_NO_COUNTERPART`, and
anything else not in the map (counted in the note ``unmapped_mesh``).

Left out: the R2Gen split; MeSH qualifiers (severity, location) beyond the pleural one.

Example: ``records, rep = load_iuxray("data/iu-xray", "test", seed=0)``
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from sdrlib.data._common import (check_require, check_root, clean_section, existing_images, find_file, is_blank_row,
                                 normalize_id, read_table, resolve_data_path, row_line, sections_ok)
from sdrlib.data._iuxray_standin import write_iuxray_layout
from sdrlib.data.download import real_root
from sdrlib.data.records import DataError, LoadReport, Record, check_split
from sdrlib.data.registry import Dataset, register_dataset
from sdrlib.vocabulary import apply_no_finding, ordered_labels

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["load_iuxray", "iuxray_split_of", "mesh_labels", "MESH_TO_CHEXPERT", "MESH_NO_COUNTERPART"]

#: IU-Xray MeSH / Problems heading (lower case) -> CheXpert observation (module docstring)
MESH_TO_CHEXPERT: dict[str, str] = {
    "normal": "No Finding",
    "cardiomegaly": "Cardiomegaly",
    "mediastinum": "Enlarged Cardiomediastinum",  # IU's "Mediastinum/enlarged|widened"; needs the qualifier
    "pleural effusion": "Pleural Effusion",
    "pulmonary atelectasis": "Atelectasis",
    "atelectasis": "Atelectasis",
    "opacity": "Lung Opacity",
    "infiltrate": "Lung Opacity",
    "airspace disease": "Lung Opacity",
    "lung diseases, interstitial": "Lung Opacity",
    "cicatrix": "Lung Opacity",
    "pneumonia": "Pneumonia",
    "pneumothorax": "Pneumothorax",
    "edema": "Edema",
    "pulmonary edema": "Edema",
    "pulmonary congestion": "Edema",
    "consolidation": "Consolidation",
    "nodule": "Lung Lesion",
    "mass": "Lung Lesion",
    "lung neoplasms": "Lung Lesion",
    "pleural thickening": "Pleural Other",
    "thickening": "Pleural Other",  # only with a pleural qualifier (see mesh_labels)
    "fractures, bone": "Fracture",
    "fracture": "Fracture",
    "medical device": "Support Devices",
    "implanted medical device": "Support Devices",
    "catheters, indwelling": "Support Devices",
    "tube, inserted": "Support Devices",
    "pacemaker, artificial": "Support Devices",
    "surgical instruments": "Support Devices",
    "stents": "Support Devices",
    "sutures": "Support Devices",
}
#: IU headings deliberately left without a CheXpert counterpart
MESH_NO_COUNTERPART: tuple[str, ...] = (
    "calcified granuloma", "granulomatous disease", "granuloma", "spine", "thoracic vertebrae", "scoliosis",
    "kyphosis", "osteophyte", "spondylosis", "aorta", "aorta, thoracic", "atherosclerosis", "calcinosis",
    "emphysema", "pulmonary emphysema", "lung, hyperlucent", "hyperdistention", "diaphragm",
    "diaphragmatic eventration", "hernia, hiatal", "costophrenic angle", "lung", "hypoinflation",
    "pulmonary disease, chronic obstructive", "bronchiectasis", "technical quality of image unsatisfactory",
    "no indexing", "shoulder", "cholelithiasis", "pulmonary artery", "hilum", "trachea", "ribs", "clavicle",
)
#: qualifiers that make "Mediastinum" an enlarged cardiomediastinum and "Thickening" a pleural one
_MEDIASTINUM_Q = ("enlarged", "widened", "prominent")
_PLEURAL_Q = ("pleura", "pleural")


def _items(cell: object) -> list[tuple[str, list[str]]]:
    """``heading/q1/q2;...`` as [(heading, [qualifiers])], lower case; blank / NaN / "None" give []."""
    text = "" if cell is None else str(cell).strip()
    if not text or text.lower() in ("nan", "none"):
        return []
    out = []
    for item in text.split(";"):
        parts = [p.strip().lower() for p in item.split("/")]
        if parts and parts[0]:
            out.append((parts[0], parts[1:]))
    return out


def mesh_labels(problems: object, mesh: object = None) -> "tuple[dict[str, int] | None, list[str]]":
    """CheXpert labels of one IU-Xray study from its ``Problems`` (or, if blank, ``MeSH``) cell.

    Returns ``(labels, unmapped)``: labels ``{observation: 1}`` with "No Finding" by the CheXpert
    rule, or None when both cells are blank; ``unmapped`` the headings outside both tables.
    ``MeSH`` qualifiers refine two headings: "Mediastinum" counts only when enlarged / widened,
    "Thickening" only when pleural. Example:
    ``mesh_labels("Cardiomegaly;Pulmonary Atelectasis") -> ({"Cardiomegaly": 1, "Atelectasis": 1}, [])``.
    """
    mesh_items = _items(mesh)
    items = _items(problems) or mesh_items
    if not items:
        return None, []
    quals: dict[str, set[str]] = {}
    for head, q in mesh_items:  # qualifiers live in MeSH even when Problems is used
        quals.setdefault(head, set()).update(q)
    out: dict[str, int] = {}
    unmapped: list[str] = []
    for head, q in items:
        qs = set(q) | quals.get(head, set())
        obs = MESH_TO_CHEXPERT.get(head)
        if obs is None:
            if head not in MESH_NO_COUNTERPART:
                unmapped.append(head)
            continue
        if head == "mediastinum" and not qs & set(_MEDIASTINUM_Q):
            continue
        if head == "thickening" and not qs & set(_PLEURAL_Q):
            continue
        if obs != "No Finding":
            out[obs] = 1
    return ordered_labels(apply_no_finding(out)), unmapped

_REPORT_COLS = ("uid", "findings", "impression")
_HINT = ("download IU-Xray (OpenI; e.g. the Kaggle 'chest-xrays-indiana-university' packaging) and point "
         "data.root at the folder with indiana_reports.csv (see docs/real_data.md)")


def _read_projections(projections: "pd.DataFrame", ppath: Path, rep: LoadReport) -> dict[str, list[tuple[str, str]]]:
    """``uid -> [(filename, projection), ...]`` in file order (a non-integral uid: ``malformed_row``; blank rows
    carry nothing and are passed over)."""
    projs: dict[str, list[tuple[str, str]]] = {}
    for i in range(len(projections)):
        uid = normalize_id(projections.at[i, "uid"])
        fn = str(projections.at[i, "filename"]).strip()
        if uid is None:
            rep.skip("malformed_row", f"{ppath.name} line {row_line(projections, i)}: uid "
                                      f"{projections.at[i, 'uid']!r}")
            continue
        if not uid or not fn:
            continue  # blank projection rows carry nothing; reports decide what is skipped
        projs.setdefault(uid, []).append((fn, str(projections.at[i, "projection"]).strip()))
    return projs


def _report_uid(reports: "pd.DataFrame", i: int, rpath: Path, rep: LoadReport) -> str | None:
    """The uid of reports row ``i``; None for a row skipped and counted (``empty_row``, ``malformed_row``,
    ``bad_row``)."""
    if is_blank_row(reports.iloc[i].tolist()):
        rep.skip("empty_row", f"line {row_line(reports, i)}")
        return None
    uid = normalize_id(reports.at[i, "uid"])
    if uid is None:
        rep.skip("malformed_row", f"{rpath.name} line {row_line(reports, i)}: uid {reports.at[i, 'uid']!r}")
        return None
    if not uid:
        rep.skip("bad_row", f"line {row_line(reports, i)}")
        return None
    return uid


def _report_labels(reports: "pd.DataFrame", i: int, rep: LoadReport) -> dict[str, int] | None:
    """Labels of reports row ``i`` from Problems / MeSH (:func:`mesh_labels`; unmapped headings noted); None when
    the file has neither column."""
    labels = None
    if "Problems" in reports.columns or "MeSH" in reports.columns:
        labels, unmapped = mesh_labels(reports.at[i, "Problems"] if "Problems" in reports.columns else None,
                                       reports.at[i, "MeSH"] if "MeSH" in reports.columns else None)
        for head in unmapped:
            rep.note("unmapped_mesh", head)
    return labels


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
    (list of Record, LoadReport); frontal images first; labels from Problems / MeSH (module docstring;
    None when neither column exists or both cells are blank); MeSH / Problems also in meta as text.

    Raises
    ------
    DataError
        ``root`` or one of the two CSV files missing, unreadable (truncated, not CSV), or a
        CSV lacks a required column.
    """
    check_split(split)
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

    projs = _read_projections(projections, ppath, rep)
    seen: set[str] = set()
    records: list[Record] = []
    for i in range(len(reports)):
        uid = _report_uid(reports, i, rpath, rep)
        if uid is None:
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
        frontal_first = sorted(projs.get(uid, []), key=lambda t: t[1].lower() != "frontal")
        # confined to root (no absolute path, no ../ out of it)
        paths = existing_images(uid, [fn for fn, _ in frontal_first], lambda fn: resolve_data_path(fn, img_dirs, root),
                                rep)
        if not paths:
            rep.skip("no_image", uid)
            continue
        meta = {c: str(reports.at[i, c]) for c in ("MeSH", "Problems", "indication", "comparison")
                if c in reports.columns}
        records.append(Record(study_id=uid, image_paths=paths, findings=findings, impression=impression,
                              labels=_report_labels(reports, i, rep), split=split, meta=meta))
    for uid in projs:
        if uid not in seen:
            rep.note("orphan_projection", uid)
    rep.n_loaded = len(records)
    return records, rep


register_dataset(Dataset(
    "iuxray", "IU-Xray", lambda cfg, split: load_iuxray(real_root(cfg), split, seed=int(cfg.seed)),
    standin=write_iuxray_layout, standin_code=3, standin_splits=False, split_of=iuxray_split_of))
