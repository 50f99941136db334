"""Stand-in downloads: synthetic studies written in the layouts of MIMIC-CXR, ReXGradient-160K and IU-Xray.

``python -m sdrlib.data.standin mimic|rexgradient|iuxray OUT_DIR [--n N --seed S]`` writes a folder
that the real loaders (:func:`~sdrlib.data.mimic.load_mimic`, :func:`~sdrlib.data.rexgradient.load_rexgradient`,
:func:`~sdrlib.data.iuxray.load_iuxray`, or :func:`~sdrlib.data.load_split` with ``data.source`` /
``data.root``) read with no special case, so a pipeline can be run end to end on the real-data code
path before the credentialed download arrives. Texts, labels and images come from the SynthCXR
generator (:func:`sdrlib.data.synthcxr.generate_study`, :func:`~sdrlib.data.synthcxr.render_image`):
study ``i`` of split ``s`` carries the Findings, Impression and labels of SynthCXR study ``(seed, s, i)``.

Layouts written (``STANDIN.json`` beside them records what was written and what a loader should
keep or skip; no loader reads it)::

    mimic        mimic-cxr-2.0.0-split.csv.gz      dicom_id, study_id, subject_id, split (train|validate|test)
                 mimic-cxr-2.0.0-chexpert.csv.gz   subject_id, study_id, the 14 CheXpert columns (1.0/0.0/-1.0/blank)
                 mimic-cxr-2.0.0-metadata.csv.gz   dicom_id, subject_id, study_id, ..., ViewPosition (PA/AP/LATERAL), ...
                 files/p1X/p1XXXXXXX/sSTUDY.txt    the free-text report (FINAL REPORT, EXAMINATION:, INDICATION:,
                                                   TECHNIQUE:, COMPARISON:, FINDINGS:, IMPRESSION:, sometimes WET READ:
                                                   / NOTIFICATION:), lines wrapped as in MIMIC-CXR
                 files/p1X/p1XXXXXXX/sSTUDY/<dicom_id>.jpg   1-3 views per study
    rexgradient  metadata/{train,valid,test}_metadata.csv                 one row per study, no image columns
                 metadata/{train,valid,test}_metadata.json                per study, keyed by id: the CSV's fields,
                 metadata/{train,valid,test}_metadata_view_position.json  PatientID, ImagePath and ImageViewPosition
                 deid_png.part00 ... deid_png.part09   a zstd-compressed tar of deid_png/<PatientID>/<AccessionNumber>/
                                                   studies/<StudyInstanceUid>/series/<SeriesInstanceUid>/instances/<SOP>.png,
                                                   cut in ten parts; ImagePath = ``../deid_png/...`` (relative to metadata/)
    iuxray       indiana_reports.csv               uid, MeSH, Problems, image, indication, comparison, findings, impression
                 indiana_projections.csv           uid, filename, projection (Frontal | Lateral)
                 images/images_normalized/<uid>_IM-XXXX-N001.dcm.png

Sources of the layouts: MIMIC-CXR-JPG 2.0.0 / MIMIC-CXR on PhysioNet (file and column names as
published); ReXGradient-160K: the dataset card (``cat deid_png.part* > deid_png.tar && tar -xf
deid_png.tar``, metadata in ``metadata/``) and public code that reads the release (per-split
``*_metadata.csv`` without image columns, ``*_metadata_view_position.json`` keyed by id with
``ImagePath`` / ``ImageViewPosition`` lists, the archive a zstd-compressed tar in ``part00``-``part09``);
the gated release itself was not inspected, so the composite ``id`` spelling (``p<PatientID>_<AccessionNumber>_
s<StudyInstanceUid>``) and the exact difference between ``*_metadata.json`` and
``*_metadata_view_position.json`` (written here with the same content) are assumptions. IU-Xray: the
Kaggle "chest-xrays-indiana-university" packaging.

What is realistic on purpose: MIMIC studies of one subject share its folder; the split CSV lists
a study's lateral view before its frontal one at times (the loader puts frontal views first from
the metadata); about ``p_missing_section`` of the studies lack FINDINGS or IMPRESSION (MIMIC: no such
header; IU-Xray and ReXGradient: an empty field), which every loader skips and counts
(``missing_findings`` / ``missing_impression``); a SynthCXR sentence ``Comparison: X.`` becomes the
MIMIC ``COMPARISON:`` section, as a reader would have written it. ReXGradient images are shipped as the
release ships them, packed: :func:`load_rexgradient` stops with the unpack command until they are
unpacked (``--unpack`` or :func:`unpack_rexgradient` do what that command does).

Labels, per layout as in the real data: MIMIC's CheXpert file gives the labels of the Impression
(of the Findings when there is no Impression), the MIMIC-CXR-JPG convention; IU-Xray gets ``Problems`` /
``MeSH`` headings for the positive observations (IU has no negatives or uncertain labels), which the loader
maps back (:func:`sdrlib.data.iuxray.mesh_labels`); ReXGradient has none. ``StandInStudy.labels`` holds
what the loader returns.

Defects (``--defect``, for tests of bad input) damage one study, the first complete one in the
loader's order (``StandIn.defect_study``); each meets the loaders' documented skip-and-count behaviour:

- ``missing-report``: MIMIC ``sSTUDY.txt`` absent, counted ``missing_report``; ReXGradient (no report
  file) Findings and Impression null, ``missing_findings``; IU-Xray its ``indiana_reports.csv`` row absent,
  so it is no study: not loaded, its images noted ``orphan_projection``.
- ``missing-image``: no image file (ReXGradient: left out of the archive), ``no_image``.
- ``missing-section``: no IMPRESSION (MIMIC: no header; others: an empty field), ``missing_impression``.

A whole download without its reports (MIMIC-CXR-JPG alone) or with its images still packed
(ReXGradient as released) makes the loader stop before any work, naming what to unpack where.

Deterministic: the same arguments give byte-identical folders (no timestamps in gzip, tar or PNG).

Any size: studies are streamed to disk, each study's images drawn when it is written (one study's images in
memory; the index tables, texts and the returned :class:`StandIn` keep a few KB per study). ReXGradient's
archive goes through the disk (scratch PNGs, the tar straight into the zstd stream, cut into parts; the
scratch files are removed). Above :data:`SAMPLE_STUDIES` studies the bytes per study are measured on a sample
and a size the free disk cannot hold is refused before anything is written; the command prints progress to
stderr every :data:`PROGRESS_EVERY_S` seconds. ``OUT_DIR`` goes through :func:`sdrlib.io.output_path` (as the
runner's ``--out``): an unknown ``~user`` is one line, exit 2, as is any other unusable folder.

Left out: DICOMs, the MIMIC ``negbio`` labels, report addenda, IU-Xray's ``XXXX`` inside findings,
ReXGradient's interstitial-pattern boxes and private test split.

Example::

    from sdrlib.data.standin import write_standin
    from sdrlib.data.mimic import load_mimic
    st = write_standin("mimic", "data/mimic-standin", n=12, seed=0)
    records, rep = load_mimic(st.root, "train")       # rep.skipped == st.expected("train")[1]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tarfile
import textwrap
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from sdrlib.errors import SDRError
from sdrlib.io import OutputPathError, one_line_errors, output_path
from sdrlib.vocabulary import CHEXPERT_14, apply_no_finding, ordered_labels

from .records import SPLITS
from .iuxray import iuxray_split_of
from .registry import get_dataset, standin_layouts
from .synthcxr import generate_report, generate_study, render_image

__all__ = ["LAYOUTS", "DEFECTS", "StandIn", "StandInStudy", "StandInError", "write_standin", "unpack_rexgradient",
           "split_sizes", "main"]

LAYOUTS = standin_layouts()  # the built-in ones (a dataset registered later is found by write_standin too)
DEFECTS = ("missing-report", "missing-image", "missing-section")
MANIFEST = "STANDIN.json"
_MIMIC_SPLIT = {"train": "train", "val": "validate", "test": "test"}
_REX_SPLIT = {"train": "train", "val": "valid", "test": "test"}
_REX_PARTS = 10
#: CheXpert observation -> (IU ``Problems`` heading, ``MeSH`` item); read back by ``iuxray.mesh_labels``
_IU_HEADINGS = {
    "Enlarged Cardiomediastinum": ("Mediastinum", "Mediastinum/enlarged"),
    "Cardiomegaly": ("Cardiomegaly", "Cardiomegaly/mild"),
    "Lung Lesion": ("Nodule", "Nodule/lung"),
    "Lung Opacity": ("Opacity", "Opacity/lung/base"),
    "Edema": ("Pulmonary Edema", "Pulmonary Edema"),
    "Consolidation": ("Consolidation", "Consolidation/lung"),
    "Pneumonia": ("Pneumonia", "Pneumonia"),
    "Atelectasis": ("Pulmonary Atelectasis", "Pulmonary Atelectasis/base"),
    "Pneumothorax": ("Pneumothorax", "Pneumothorax"),
    "Pleural Effusion": ("Pleural Effusion", "Pleural Effusion"),
    "Pleural Other": ("Pleural Thickening", "Thickening/pleura"),
    "Fracture": ("Fractures, Bone", "Fractures, Bone/ribs"),
    "Support Devices": ("Medical Device", "Medical Device"),
}
_COMPARISON_RE = re.compile(r"(?:(?<=\s)|^)Comparison: ([^.]*)\.(?:\s+|$)")


class StandInError(SDRError, ValueError):
    """Unusable stand-in arguments (layout, defect, size, an output folder that is not empty)."""


@dataclass
class StandInStudy:
    """One written study and what a loader should make of it.

    ``study_id`` is the id the loader returns; ``split`` is ``train`` / ``val`` / ``test``
    (IU-Xray: None, the loader hashes the uid: :func:`~sdrlib.data.iuxray.iuxray_split_of`);
    ``findings`` / ``impression`` the section texts as written (``""``: section absent);
    ``labels`` what the loader returns (None for ReXGradient); ``images`` paths relative to the
    root in the loader's order (frontal first) with their ``views``; ``expect`` the skip reason
    the loader counts for it, ``"orphan_projection"`` (IU: not loaded, noted) or None (loaded).
    """

    study_id: str
    split: str | None
    source: str
    findings: str
    impression: str
    labels: dict[str, int] | None
    images: list[str]
    views: list[str]
    expect: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class StandIn:
    """What :func:`write_standin` wrote (also in ``<root>/STANDIN.json``)."""

    layout: str
    root: Path
    seed: int
    n: int
    image_size: int
    defect: str | None
    defect_study: str | None
    studies: list[StandInStudy]
    packed: bool = False

    def split_of(self, study: StandInStudy, iu_seed: int = 0) -> str:
        """The split the loader assigns ``study`` to (IU-Xray: the uid hash with ``iu_seed``)."""
        return study.split if study.split is not None else iuxray_split_of(study.study_id, iu_seed)

    def expected(self, split: str, iu_seed: int = 0) -> tuple[list[str], Counter]:
        """``(study ids loaded in order, Counter of skip reasons)`` for ``split``.

        Example: ``ids, skipped = st.expected("train"); assert dict(rep.skipped) == dict(skipped)``.
        """
        ids, skipped = [], Counter()
        for s in self.studies:
            if self.split_of(s, iu_seed) != split:
                continue
            if s.expect is None:
                ids.append(s.study_id)
            elif s.expect != "orphan_projection":
                skipped[s.expect] += 1
        return ids, skipped

    def study(self, study_id: str) -> StandInStudy:
        return next(s for s in self.studies if s.study_id == study_id)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["root"] = "."
        return d


# --------------------------------------------------------------------------- shared pieces
def split_sizes(n: int) -> dict[str, int]:
    """Studies per split: 70 / 15 / 15 %, at least one per split from ``n = 3`` on.

    Example: ``split_sizes(3) -> {"train": 1, "val": 1, "test": 1}``; ``split_sizes(20)`` -> 14 / 3 / 3.
    """
    if n < 3:
        return {"train": n, "val": 0, "test": 0}
    k = max(1, int(round(0.15 * n)))
    return {"train": n - 2 * k, "val": k, "test": k}


def _rng(seed: int, layout: str, *key: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), 0x57A4D, get_dataset(layout).standin_code, *[int(k) for k in key]])


def _hex(*parts: object, n: int = 32) -> str:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()[:n]


def _uid(*parts: object) -> str:
    """A DICOM UID in the ``2.25.<decimal of a 128-bit number>`` form (PS3.5 B.2)."""
    return "2.25." + str(int(_hex(*parts), 16))


def _png(image: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image, mode="L").save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def _jpg(image: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image, mode="L").save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def _csv_bytes(header: Sequence[str], rows: Sequence[Sequence[object]]) -> bytes:
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(["" if v is None else v for v in r])
    return buf.getvalue().encode("utf-8")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@dataclass
class _Draft:
    """A study before it is written: SynthCXR texts and labels, views and ids; its images on demand (:meth:`render`)."""

    split: str
    index: int
    findings: str
    impression: str
    labels_findings: dict[str, int]
    labels_impression: dict[str, int]
    labels: dict[str, int]
    devices: list[str]
    views: list[str]  # view of each image, in writing order
    drop: str | None = None  # "findings" | "impression": the section this study lacks
    extra: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    layout: str = "mimic"
    image_size: int = 64
    truth: Any = None

    def render(self) -> list[np.ndarray]:
        """The study's images, one per view, drawn now (a draft holds none: only one study's images are in
        memory at a time). The first is SynthCXR's own image of the study, the others its extra views."""
        sp = SPLITS.index(self.split)
        return [generate_study(self.seed, self.split, self.index, self.image_size).image] + [
            render_image(self.truth, self.devices, _rng(self.seed, self.layout, 7, sp, self.index, j),
                         size=self.image_size) for j in range(1, len(self.views))]


def _drafts(layout: str, n: int, seed: int, image_size: int, p_missing_section: float,
            splits: dict[str, int], tick: Callable[[str], None] = lambda phase: None) -> list[_Draft]:
    out = []
    for split in SPLITS:
        for i in range(splits[split]):
            st = generate_report(seed, split, i)  # generate_study's texts and labels; its image is drawn on writing
            rng = _rng(seed, layout, get_dataset(layout).standin_code, SPLITS.index(split), i)
            frontal = "AP" if (st.devices and rng.random() < 0.8) or rng.random() < 0.25 else "PA"
            k = int(rng.choice([1, 2, 3], p=[0.2, 0.65, 0.15]))
            views = [frontal, "LATERAL", frontal][:k]
            drop = None
            if rng.random() < p_missing_section:
                drop = "findings" if rng.random() < 0.5 else "impression"
            out.append(_Draft(split=split, index=i, findings=st.findings, impression=st.impression,
                              labels_findings=dict(st.labels_findings), labels_impression=dict(st.labels_impression),
                              labels=dict(st.labels), devices=list(st.devices), views=views, drop=drop,
                              extra={"rng": rng}, seed=seed, layout=layout, image_size=image_size, truth=st.truth))
            tick("drafted")
    return out


def _section_texts(d: _Draft) -> tuple[str, str]:
    return ("" if d.drop == "findings" else d.findings), ("" if d.drop == "impression" else d.impression)


def _check_args(layout: str, out_dir: Any, n: int, seed: int, image_size: int, defect: str | None,
                p_missing_section: float) -> Path:
    if layout not in standin_layouts():
        raise StandInError(f"layout must be one of {', '.join(standin_layouts())}, got {layout!r}")
    if defect is not None and defect not in DEFECTS:
        raise StandInError(f"defect must be one of {', '.join(DEFECTS)}, got {defect!r}")
    for name, v, lo in (("n", n, 1), ("seed", seed, 0), ("image_size", image_size, 16)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise StandInError(f"{name} must be an integer >= {lo}, got {v!r}")
    if not (isinstance(p_missing_section, (int, float)) and 0.0 <= float(p_missing_section) <= 1.0):
        raise StandInError(f"p_missing_section must be a number in [0, 1], got {p_missing_section!r}")
    try:
        root = output_path(out_dir, "out_dir")  # ~ expanded; an unknown ~user is one line, not a RuntimeError
    except OutputPathError as e:
        raise StandInError(str(e)) from None
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise StandInError(f"{root} exists and is not an empty folder; the stand-in is written only into a new "
                           "or empty folder (it must never mix with a real download)")
    return root


def _pick_defect_target(studies: list[StandInStudy], drafts: list[_Draft], order: list[int]) -> int:
    """Index (into ``studies``) of the first study in loader order that is complete and kept."""
    for i in order:
        if studies[i].expect is None and drafts[i].drop is None:
            return i
    raise StandInError("no complete study to damage; use a larger --n")


# --------------------------------------------------------------------------- MIMIC-CXR
_MIMIC_CHEXPERT_COLS = sorted(CHEXPERT_14)  # the published file lists them alphabetically
_INDICATIONS = ("cough", "shortness of breath", "chest pain", "fever", "hypoxia", "dyspnea on exertion",
                "suspected pneumonia", "a preoperative evaluation", "a recent fall", "weakness")
_VIEW_CODE = {"PA": "postero-anterior", "AP": "antero-posterior", "LATERAL": "lateral"}


def _mimic_exam(views: list[str]) -> tuple[str, str]:
    """(EXAMINATION line, TECHNIQUE line) for the views of a study."""
    lat = "LATERAL" in views
    if views[0] == "PA":
        return ("CHEST (PA AND LAT)", "Chest PA and lateral") if lat else ("CHEST (PA)", "Chest PA")
    return ("CHEST (AP AND LAT)", "Chest AP and lateral") if lat else ("CHEST (PORTABLE AP)", "Chest AP portable")


def _wrap(text: str) -> list[str]:
    return [" " + line for line in textwrap.wrap(text, width=76, break_long_words=False, break_on_hyphens=False)]


def _mimic_report(d: _Draft, rng: np.random.Generator) -> tuple[str, str, str]:
    """The report text and the Findings / Impression a reader of it finds (``""``: absent)."""
    findings, impression = _section_texts(d)
    comparison = "None."
    m = _COMPARISON_RE.search(findings)
    if m:  # SynthCXR's "Comparison: X." sentence is MIMIC's COMPARISON section
        comparison = m.group(1)[:1].upper() + m.group(1)[1:] + "."
        findings = (findings[:m.start()] + findings[m.end():]).strip()
    elif rng.random() < 0.8:  # MIMIC-CXR's de-identification blanks the dates of prior studies
        comparison = "___"
    exam, technique = _mimic_exam(d.views)
    age, sex = int(rng.integers(25, 90)), ("M" if rng.random() < 0.5 else "F")
    lines: list[str] = []
    if rng.random() < 0.15:
        lines += [f" WET READ: ___ ___ {int(rng.integers(1, 12))}:{int(rng.integers(0, 60)):02d} PM",
                  "  " + (impression or findings).split(". ")[0].rstrip(".") + ".",
                  " " + "_" * 78, ""]
    lines += [" " * 33 + "FINAL REPORT", f" EXAMINATION:  {exam}", "",
              f" INDICATION:  {age}-year-old {sex} with {_INDICATIONS[int(rng.integers(len(_INDICATIONS)))]}.  "
              "// ___", "", f" TECHNIQUE:  {technique}", "", f" COMPARISON:  {comparison}", ""]
    if findings:
        lines += [" FINDINGS:", ""] + _wrap(findings) + [""]
    if impression:
        lines += [" IMPRESSION:", ""] + _wrap(impression) + [""]
    if rng.random() < 0.1:
        lines += [" NOTIFICATION:  The findings were discussed with Dr. ___ by telephone on ___ at", " ___.", ""]
    return "\n".join(lines) + "\n", findings, impression


def _mimic_label_cell(v: int | None) -> str:
    return "" if v is None else f"{float(v):.1f}"


def write_mimic_layout(root: Path, drafts: list[_Draft], seed: int, image_size: int, defect: str | None,
                 tick: Callable[[str], None] = lambda phase: None) -> tuple[list[StandInStudy], str | None]:
    rng = _rng(seed, "mimic", 99)
    used_subjects: set[int] = set()
    used_studies: set[int] = set()
    subject_of_split: dict[str, list[int]] = {s: [] for s in SPLITS}
    for d in drafts:  # ids: subjects own their studies; MIMIC splits by subject
        prev = subject_of_split[d.split]
        if prev and rng.random() < 0.3:
            subj = prev[int(rng.integers(len(prev)))]
        else:
            subj = int(rng.integers(10_000_000, 20_000_000))
            while subj in used_subjects:
                subj = int(rng.integers(10_000_000, 20_000_000))
            used_subjects.add(subj)
            prev.append(subj)
        sid = int(rng.integers(50_000_000, 60_000_000))
        while sid in used_studies:
            sid = int(rng.integers(50_000_000, 60_000_000))
        used_studies.add(sid)
        write_order = list(range(len(d.views)))
        if len(write_order) > 1 and rng.random() < 0.5:
            write_order.reverse()  # the split CSV does not promise frontal views first
        d.extra.update(subject=str(subj), study=str(sid), write_order=write_order,
                       dicoms=["-".join(_hex(seed, "mimic", sid, j, n=40)[k:k + 8] for k in range(0, 40, 8))
                               for j in range(len(d.views))])
    order = sorted(range(len(drafts)), key=lambda i: (int(drafts[i].extra["subject"]), int(drafts[i].extra["study"])))
    studies: list[StandInStudy] = []
    reports: list[tuple[str, str, str]] = []
    for d in drafts:
        text, f, imp = _mimic_report(d, d.extra["rng"])
        reports.append((text, f, imp))
        # MIMIC-CXR-JPG labels: the Impression's, else the Findings' (here: as written)
        labels = ordered_labels(d.labels_impression) if imp else ordered_labels(d.labels_findings)
        # the loader's order: frontal views first, else as listed in the split CSV
        views_sorted = sorted(d.extra["write_order"], key=lambda j: d.views[j] not in ("PA", "AP"))
        rel_dir = f"files/p{d.extra['subject'][:2]}/p{d.extra['subject']}/s{d.extra['study']}"
        expect = None if (f and imp) else ("missing_findings" if not f else "missing_impression")
        studies.append(StandInStudy(
            study_id=d.extra["study"], split=d.split, source="mimic", findings=f, impression=imp, labels=labels,
            images=[f"{rel_dir}/{d.extra['dicoms'][j]}.jpg" for j in views_sorted],
            views=[d.views[j] for j in views_sorted], expect=expect,
            meta={"subject_id": d.extra["subject"], "synthcxr": [d.split, d.index]}))
    target = None
    if defect is not None:
        t = _pick_defect_target(studies, drafts, order)
        target = studies[t].study_id
        if defect == "missing-report":
            studies[t].expect = "missing_report"
        elif defect == "missing-image":
            studies[t].expect = "no_image"
        else:
            d = drafts[t]
            d.drop = "impression"
            text, f, imp = _mimic_report(d, _rng(seed, "mimic", 98))
            reports[t] = (text, f, imp)
            studies[t].impression, studies[t].findings = imp, f
            studies[t].expect = "missing_impression"

    split_rows, meta_rows, chex_rows = [], [], []
    for i in order:
        d, st = drafts[i], studies[i]
        subj, sid = d.extra["subject"], d.extra["study"]
        rel_dir = f"files/p{subj[:2]}/p{subj}/s{sid}"
        if not (defect == "missing-report" and st.study_id == target):
            _write(root / f"{rel_dir}.txt", reports[i][0].encode("utf-8"))
        write_order = d.extra["write_order"]
        date = 21000101 + int(d.extra["rng"].integers(0, 80)) * 10000 + int(d.extra["rng"].integers(0, 12)) * 100 \
            + int(d.extra["rng"].integers(0, 28))
        hms = int(d.extra["rng"].integers(0, 86400))
        time = f"{hms // 3600:02d}{hms // 60 % 60:02d}{hms % 60:02d}.{int(d.extra['rng'].integers(0, 1000)):03d}"
        exam = _mimic_exam(d.views)[0]
        images = d.render() if not (defect == "missing-image" and st.study_id == target) else None
        for j in write_order:
            dicom, view = d.extra["dicoms"][j], d.views[j]
            split_rows.append([dicom, sid, subj, _MIMIC_SPLIT[d.split]])
            meta_rows.append([dicom, subj, sid, exam, view, image_size, image_size, date, time, exam,
                              _VIEW_CODE[view], "Erect" if view != "AP" else "Recumbent"])
            if images is not None:
                _write(root / rel_dir / f"{dicom}.jpg", _jpg(images[j]))
        tick("written")
        lab = st.labels or {}
        chex_rows.append([subj, sid] + [_mimic_label_cell(lab.get(c)) for c in _MIMIC_CHEXPERT_COLS])

    def gz(name: str, header: Sequence[str], rows: list) -> None:
        _write(root / name, gzip.compress(_csv_bytes(header, rows), mtime=0))

    gz("mimic-cxr-2.0.0-split.csv.gz", ["dicom_id", "study_id", "subject_id", "split"], split_rows)
    gz("mimic-cxr-2.0.0-chexpert.csv.gz", ["subject_id", "study_id"] + _MIMIC_CHEXPERT_COLS, chex_rows)
    gz("mimic-cxr-2.0.0-metadata.csv.gz",
       ["dicom_id", "subject_id", "study_id", "PerformedProcedureStepDescription", "ViewPosition", "Rows", "Columns",
        "StudyDate", "StudyTime", "ProcedureCodeSequence_CodeMeaning", "ViewCodeSequence_CodeMeaning",
        "PatientOrientationCodeSequence_CodeMeaning"], meta_rows)
    return [studies[i] for i in order], target


# --------------------------------------------------------------------------- ReXGradient-160K
_REX_VIEWS = {"PA": "PA", "AP": "AP", "LATERAL": "LATERAL"}
_REX_DESC = {"PA": "XR CHEST PA AND LATERAL", "AP": "XR CHEST 1 VIEW AP"}
_REX_CSV_COLS = ("id", "AccessionNumber", "StudyInstanceUid", "PatientSex", "PatientAge", "StudyDate",
                 "StudyDescription", "Indication", "Comparison", "Findings", "Impression")


def _grdn(*parts: object) -> str:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    v = int(_hex(*parts), 16)
    out = ""
    for _ in range(12):
        v, r = divmod(v, 36)
        out += alphabet[r]
    return "GRDN" + out


def write_rexgradient_layout(root: Path, drafts: list[_Draft], seed: int, image_size: int, defect: str | None,
                       tick: Callable[[str], None] = lambda phase: None) -> tuple[list[StandInStudy], str | None]:
    studies: list[StandInStudy] = []
    for d in drafts:
        rng = d.extra["rng"]
        pid = _grdn(seed, "patient", d.split, d.index)
        acc = _grdn(seed, "accession", d.split, d.index)
        uid = _uid(seed, "rex-study", d.split, d.index)
        series = _uid(seed, "rex-series", d.split, d.index)
        sops = [_uid(seed, "rex-sop", d.split, d.index, j) for j in range(len(d.views))]
        rel = [f"deid_png/{pid}/{acc}/studies/{uid}/series/{series}/instances/{sop}.png" for sop in sops]
        f, imp = _section_texts(d)
        expect = None if (f and imp) else ("missing_findings" if not f else "missing_impression")
        d.extra.update(pid=pid, acc=acc, uid=uid, rel=rel, sex=("M" if rng.random() < 0.5 else "F"),
                       age=f"{int(rng.integers(20, 95)):03d}Y",
                       date=f"{2010 + int(rng.integers(0, 14))}{int(rng.integers(1, 13)):02d}{int(rng.integers(1, 29)):02d}",
                       indication=_INDICATIONS[int(rng.integers(len(_INDICATIONS)))].capitalize() + ".",
                       comparison="None." if rng.random() < 0.5 else "Prior chest radiograph.")
        studies.append(StandInStudy(study_id=uid, split=d.split, source="rexgradient", findings=f, impression=imp,
                                    labels=None, images=list(rel), views=list(d.views), expect=expect,
                                    meta={"id": f"p{pid}_{acc}_s{uid}", "synthcxr": [d.split, d.index]}))
    target = None
    if defect is not None:
        t = _pick_defect_target(studies, drafts, list(range(len(studies))))
        target = studies[t].study_id
        if defect == "missing-report":
            studies[t].findings = studies[t].impression = ""
            studies[t].expect = "missing_findings"
        elif defect == "missing-image":
            studies[t].expect = "no_image"
        else:
            studies[t].impression = ""
            studies[t].expect = "missing_impression"
    meta_dir = root / "metadata"
    for split in SPLITS:
        rows, entries = [], {}
        for d, st in zip(drafts, studies):
            if d.split != split:
                continue
            x = d.extra
            fields = {"PatientID": x["pid"], "AccessionNumber": x["acc"], "StudyInstanceUid": x["uid"],
                      "PatientSex": x["sex"], "PatientAge": x["age"], "StudyDate": x["date"],
                      "StudyDescription": _REX_DESC[d.views[0]] if len(d.views) > 1 or d.views[0] == "AP"
                      else "XR CHEST 1 VIEW", "Indication": x["indication"], "Comparison": x["comparison"],
                      "Findings": st.findings or None, "Impression": st.impression or None}
            rows.append([st.meta["id"]] + [fields[c] for c in _REX_CSV_COLS[1:]])
            entries[st.meta["id"]] = {**fields, "ImagePath": ["../" + r for r in x["rel"]],
                                      "ImageViewPosition": [_REX_VIEWS[v] for v in d.views]}
        _write(meta_dir / f"{_REX_SPLIT[split]}_metadata.csv", _csv_bytes(_REX_CSV_COLS, rows))
        blob = (json.dumps(entries, indent=2) + "\n").encode("utf-8")
        _write(meta_dir / f"{_REX_SPLIT[split]}_metadata.json", blob)
        _write(meta_dir / f"{_REX_SPLIT[split]}_metadata_view_position.json", blob)
    # the images: deid_png/... in a tar, zstd-compressed, cut in parts (as released). Streamed through the disk:
    # each PNG to a scratch folder as its study is drawn, then the tar (members in name order) straight into
    # the zstd stream of a scratch file, which is cut into the parts; the scratch files are removed.
    import pyarrow as pa

    scratch, packed_path = root / ".standin-png", root / ".deid_png.tar.zst"
    members: list[tuple[str, Path]] = []
    for d, st in zip(drafts, studies):
        if not (defect == "missing-image" and st.study_id == target):
            for r, img in zip(d.extra["rel"], d.render()):
                members.append((r, scratch / f"{len(members)}.png"))
                _write(members[-1][1], _png(img))
        tick("written")
    with pa.OSFile(str(packed_path), "wb") as sink, pa.CompressedOutputStream(sink, "zstd") as out:
        with tarfile.open(fileobj=_Stream(out), mode="w", format=tarfile.GNU_FORMAT) as tar:
            dirs: set[str] = set()
            for name, png in sorted(members):
                parts = name.split("/")
                for k in range(1, len(parts)):
                    dname = "/".join(parts[:k])
                    if dname not in dirs:
                        dirs.add(dname)
                        ti = tarfile.TarInfo(dname)
                        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
                        tar.addfile(ti)
                ti = tarfile.TarInfo(name)
                ti.size, ti.mode, ti.mtime = png.stat().st_size, 0o644, 0
                with png.open("rb") as f:
                    tar.addfile(ti, f)
                png.unlink()
    shutil.rmtree(scratch, ignore_errors=True)
    k = packed_path.stat().st_size
    with packed_path.open("rb") as src:
        for i in range(_REX_PARTS):
            with (root / f"deid_png.part{i:02d}").open("wb") as dst:
                left = (i + 1) * k // _REX_PARTS - i * k // _REX_PARTS
                while left:
                    chunk = src.read(min(left, 1 << 24))
                    dst.write(chunk)
                    left -= len(chunk)
    packed_path.unlink()
    return studies, target


class _Stream:
    """A write-only file object over a pyarrow output stream, for :mod:`tarfile` (which asks where it is)."""

    def __init__(self, out: Any) -> None:
        self.out, self.pos = out, 0

    def write(self, data: bytes) -> int:
        self.out.write(data)
        self.pos += len(data)
        return len(data)

    def tell(self) -> int:
        return self.pos


def unpack_rexgradient(root: str | os.PathLike) -> Path:
    """Unpack ``deid_png.part*`` under ``root`` into ``root/deid_png`` (the dataset card's
    ``cat deid_png.part* > deid_png.tar && tar -xf deid_png.tar``, without the tar on disk).

    The parts are joined in name order and read as a (zstd-compressed or plain) tar; only
    members under ``deid_png/`` that are regular files or folders are extracted, never a
    path that leaves ``root`` (tarfile's ``data`` filter). Returns ``root/deid_png``.
    """
    import pyarrow as pa

    root = Path(root)
    parts = sorted(root.glob("deid_png.part*"))
    if not parts:
        raise StandInError(f"no deid_png.part* files in {root}")
    joined = b"".join(p.read_bytes() for p in parts)
    if joined[:4] == b"\x28\xb5\x2f\xfd":  # zstd frame magic
        with pa.CompressedInputStream(pa.BufferReader(joined), "zstd") as f:
            joined = f.read()
    with tarfile.open(fileobj=io.BytesIO(joined), mode="r:") as tar:
        members = [m for m in tar.getmembers() if (m.isfile() or m.isdir())
                   and (m.name == "deid_png" or m.name.startswith("deid_png/")) and ".." not in m.name.split("/")]
        try:
            tar.extractall(root, members=members, filter="data")
        except TypeError:  # pragma: no cover - Python 3.11 before 3.11.4 has no extraction filters
            tar.extractall(root, members=members)
    return root / "deid_png"


# --------------------------------------------------------------------------- IU-Xray
_IU_IMAGE = ("Xray Chest PA and Lateral", "Chest, 2 views, frontal and lateral", "PA and lateral views of the chest",
             "Chest PA-Lateral", "XR Chest PA and Lateral")


def _iu_headings(labels: dict[str, int]) -> tuple[str, str, dict[str, int]]:
    """(Problems, MeSH, labels the loader reads back) from a study's CheXpert labels (positives only)."""
    pos = [o for o in CHEXPERT_14 if o in _IU_HEADINGS and labels.get(o) == 1]
    if not pos:
        return "normal", "normal", {"No Finding": 1}
    problems = ";".join(_IU_HEADINGS[o][0] for o in pos)
    mesh = ";".join(_IU_HEADINGS[o][1] for o in pos)
    return problems, mesh, ordered_labels(apply_no_finding({o: 1 for o in pos}))


def write_iuxray_layout(root: Path, drafts: list[_Draft], seed: int, image_size: int, defect: str | None,
                  tick: Callable[[str], None] = lambda phase: None) -> tuple[list[StandInStudy], str | None]:
    studies: list[StandInStudy] = []
    for uid, d in enumerate(drafts, start=1):
        f, imp = _section_texts(d)
        problems, mesh, labels = _iu_headings(d.labels)
        names = [f"{uid}_IM-{uid % 10000:04d}-{4 - j}001.dcm.png" for j in range(len(d.views))]
        views = ["Frontal" if v != "LATERAL" else "Lateral" for v in d.views]
        expect = None if (f and imp) else ("missing_findings" if not f else "missing_impression")
        order = list(range(len(d.views)))
        if len(order) > 1 and d.extra["rng"].random() < 0.3:
            order.reverse()  # the projections file does not promise frontal views first
        d.extra.update(names=names, problems=problems, mesh=mesh, pviews=views, write_order=order)
        shown = sorted(order, key=lambda j: views[j] != "Frontal")  # the loader's order: frontal first, stable
        studies.append(StandInStudy(study_id=str(uid), split=None, source="iuxray", findings=f, impression=imp,
                                    labels=labels, images=[f"images/images_normalized/{names[j]}" for j in shown],
                                    views=[views[j] for j in shown], expect=expect,
                                    meta={"Problems": problems, "MeSH": mesh, "synthcxr": [d.split, d.index]}))
    target = None
    if defect is not None:
        t = _pick_defect_target(studies, drafts, list(range(len(studies))))
        target = studies[t].study_id
        studies[t].expect = {"missing-report": "orphan_projection", "missing-image": "no_image",
                             "missing-section": "missing_impression"}[defect]
        if defect == "missing-section":
            studies[t].impression = ""
    report_rows, proj_rows = [], []
    for d, st in zip(drafts, studies):
        rng = d.extra["rng"]
        if not (defect == "missing-report" and st.study_id == target):
            report_rows.append([st.study_id, d.extra["mesh"], d.extra["problems"],
                                _IU_IMAGE[int(rng.integers(len(_IU_IMAGE)))],
                                f"XXXX-year-old {'male' if rng.random() < 0.5 else 'female'} with "
                                f"{_INDICATIONS[int(rng.integers(len(_INDICATIONS)))]}.",
                                "None." if rng.random() < 0.6 else "XXXX", st.findings, st.impression])
        images = d.render() if not (defect == "missing-image" and st.study_id == target) else None
        for j in d.extra["write_order"]:
            proj_rows.append([st.study_id, d.extra["names"][j], d.extra["pviews"][j]])
            if images is not None:
                _write(root / "images" / "images_normalized" / d.extra["names"][j], _png(images[j]))
        tick("written")
    _write(root / "indiana_reports.csv", _csv_bytes(
        ["uid", "MeSH", "Problems", "image", "indication", "comparison", "findings", "impression"], report_rows))
    _write(root / "indiana_projections.csv", _csv_bytes(["uid", "filename", "projection"], proj_rows))
    return studies, target


# --------------------------------------------------------------------------- size and progress
#: above this many studies the bytes per study are measured on a sample of this size before writing
SAMPLE_STUDIES = 12
#: seconds between two progress lines
PROGRESS_EVERY_S = 5.0


def _bytes_on_disk(root: Path) -> int:
    """Bytes the files under ``root`` take, each rounded up to 4 KiB blocks."""
    return sum(-(-p.stat().st_size // 4096) * 4096 for p in root.rglob("*") if p.is_file())


def _human(b: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if b < 1000 or unit == "PB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1000
    return f"{b:.1f} PB"  # pragma: no cover


def _check_disk(layout: str, root: Path, n: int, seed: int, image_size: int, defect: str | None,
                p_missing_section: float, unpack: bool) -> None:
    """Refuse (:class:`StandInError`, one line) ``n`` studies that cannot fit the free disk under ``root``.

    The bytes per study are those of a stand-in of :data:`SAMPLE_STUDIES` studies written with the same
    arguments into a scratch folder (images dominate; their size depends on ``image_size``), times
    1.1; ReXGradient's are counted twice (the archive is written beside scratch copies of its images).
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="standin-sample-") as tmp:
        write_standin(layout, Path(tmp) / "s", n=SAMPLE_STUDIES, seed=seed, image_size=image_size,
                      defect=None, p_missing_section=p_missing_section, unpack=unpack)
        per_study = _bytes_on_disk(Path(tmp) / "s") / SAMPLE_STUDIES * (2 if get_dataset(layout).standin_unpack else 1)
    need = per_study * n * 1.1
    where = root
    while not where.exists():
        where = where.parent
    free = shutil.disk_usage(where).free
    if need > free:
        raise StandInError(f"{n} {layout} studies need about {_human(need)} ({_human(per_study)} per study at "
                           f"image size {image_size}, measured on {SAMPLE_STUDIES}), but {where} has "
                           f"{_human(free)} free; use a smaller --n (at most about {int(free / per_study / 1.1)}) "
                           "or a folder on a larger disk")


class _Progress:
    """``tick(phase)`` once per study and phase (``drafted``, ``written``); a line to stderr every
    :data:`PROGRESS_EVERY_S` seconds and when a phase is done: ``standin: written 1200/5000 studies
    (240/s, about 16 s left)``."""

    def __init__(self, total: int, stream: Any = None) -> None:
        import time

        self.total, self.stream, self.clock = total, stream, time.monotonic
        self.phase, self.done, self.start = "", 0, self.clock()
        self.last = self.start

    def __call__(self, phase: str) -> None:
        if phase != self.phase:
            self.phase, self.done, self.start = phase, 0, self.clock()
            self.last = self.start
        self.done += 1
        now = self.clock()
        if now - self.last >= PROGRESS_EVERY_S or self.done == self.total:
            self.last = now
            rate = self.done / max(now - self.start, 1e-9)
            left = f", about {(self.total - self.done) / rate:.0f} s left" if self.done < self.total else ""
            print(f"standin: {phase} {self.done}/{self.total} studies ({rate:.0f}/s{left})",
                  file=self.stream or sys.stderr, flush=True)


# --------------------------------------------------------------------------- entry points
def write_standin(layout: str, out_dir: str | os.PathLike, *, n: int = 12, seed: int = 0, image_size: int = 64,
                  defect: str | None = None, p_missing_section: float = 0.1, unpack: bool = False,
                  progress: bool = False) -> StandIn:
    """Write ``n`` synthetic studies into ``out_dir`` in the layout of a real download.

    Parameters
    ----------
    layout : {"mimic", "rexgradient", "iuxray"}
    out_dir : path
        A new or empty folder (anything else raises :class:`StandInError`).
    n : int
        Number of studies (70 / 15 / 15 % train / val / test: :func:`split_sizes`; IU-Xray: all
        written, the loader splits them by uid hash).
    seed : int
        SynthCXR seed; the same arguments give byte-identical folders.
    image_size : int
        Side of the square images in pixels (>= 16).
    defect : {"missing-report", "missing-image", "missing-section"}, optional
        Damage one study (module docstring's table).
    p_missing_section : float
        Share of studies written without Findings or Impression (skipped and counted by the loaders).
    unpack : bool
        ReXGradient only: also unpack the image archive (:func:`unpack_rexgradient`).
    progress : bool
        Print progress to stderr (studies drafted / written, rate, time left) every
        :data:`PROGRESS_EVERY_S` seconds and at the end of each phase (the command line does).

    Size: studies are streamed to disk, one study's images in memory at a time (the index tables,
    texts and :class:`StandIn` keep a few KB per study). Above :data:`SAMPLE_STUDIES` studies the
    bytes per study are measured on a stand-in of that many (same arguments, a scratch folder) and a
    size that cannot fit the free disk under ``out_dir`` is refused before anything is written
    (:class:`StandInError`; ReXGradient counts its archive twice: scratch PNGs and parts, or parts and
    unpacked images).

    Returns
    -------
    StandIn
        What was written and what the loaders should keep and skip (:meth:`StandIn.expected`).
    """
    root = _check_args(layout, out_dir, n, seed, image_size, defect, p_missing_section)
    if int(n) > SAMPLE_STUDIES:
        _check_disk(layout, root, int(n), int(seed), int(image_size), defect, float(p_missing_section), unpack)
    root.mkdir(parents=True, exist_ok=True)
    ds = get_dataset(layout)
    sizes = split_sizes(int(n)) if ds.standin_splits else {"train": int(n), "val": 0, "test": 0}
    tick = _Progress(int(n)) if progress else (lambda phase: None)
    drafts = _drafts(layout, int(n), int(seed), int(image_size), float(p_missing_section), sizes, tick)
    studies, target = ds.standin(root, drafts, int(seed), int(image_size), defect, tick)
    st = StandIn(layout=layout, root=root, seed=int(seed), n=int(n), image_size=int(image_size), defect=defect,
                 defect_study=target, studies=studies, packed=ds.standin_unpack is not None)
    (root / MANIFEST).write_text(json.dumps(st.to_json(), indent=2) + "\n", encoding="utf-8")
    if unpack and ds.standin_unpack is not None:
        ds.standin_unpack(root)
        st.packed = False
    return st


@one_line_errors("standin")  # StandInError (arguments, size, folder) or an OSError: one line, exit 2
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sdrlib.data.standin LAYOUT OUT_DIR [--n N] [--seed S] [--image-size PX] [--defect D] [--unpack]``."""
    ap = argparse.ArgumentParser(prog="python -m sdrlib.data.standin",
                                 description="Write synthetic studies in the layout of a real dataset download.")
    ap.add_argument("layout", choices=standin_layouts())
    ap.add_argument("out_dir")
    ap.add_argument("--n", type=int, default=12, help="number of studies (default 12)")
    ap.add_argument("--seed", type=int, default=0, help="SynthCXR seed (default 0)")
    ap.add_argument("--image-size", type=int, default=64, help="image side in pixels (default 64)")
    ap.add_argument("--defect", choices=DEFECTS, default=None, help="damage one study (for bad-input tests)")
    ap.add_argument("--p-missing-section", type=float, default=0.1,
                    help="share of studies without Findings or Impression (default 0.1)")
    ap.add_argument("--unpack", action="store_true",
                    help="rexgradient: also unpack deid_png.part* into deid_png/ (as the dataset card says)")
    args = ap.parse_args(argv)
    st = write_standin(args.layout, args.out_dir, n=args.n, seed=args.seed, image_size=args.image_size,
                       defect=args.defect, p_missing_section=args.p_missing_section, unpack=args.unpack,
                       progress=True)
    splits = ("train", "val", "test")
    counts = []
    for sp in splits:
        ids, skipped = st.expected(sp)
        extra = ", ".join(f"{k}={v}" for k, v in sorted(skipped.items()))
        counts.append(f"{sp} {len(ids)}" + (f" (+{extra})" if extra else ""))
    print(f"{st.layout} stand-in: {st.n} studies in {st.root} ({'; '.join(counts)})"
          + (f"; defect {st.defect}: study {st.defect_study}" if st.defect else "")
          + ("; images packed in deid_png.part*: unpack with --unpack or "
             "'cat deid_png.part* > deid_png.tar && tar -xf deid_png.tar'" if st.packed else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
