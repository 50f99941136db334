"""The MIMIC-CXR stand-in: SynthCXR studies written in the PhysioNet layout that :func:`~sdrlib.data.mimic.load_mimic`
reads (:mod:`sdrlib.data.standin` has the overview of every layout, the defects and the command line).

Written under the root::

    mimic-cxr-2.0.0-split.csv.gz      dicom_id, study_id, subject_id, split (train|validate|test)
    mimic-cxr-2.0.0-chexpert.csv.gz   subject_id, study_id, the 14 CheXpert columns (1.0/0.0/-1.0/blank)
    mimic-cxr-2.0.0-metadata.csv.gz   dicom_id, subject_id, study_id, ..., ViewPosition (PA/AP/LATERAL), ...
    files/p1X/p1XXXXXXX/sSTUDY.txt    the free-text report (FINAL REPORT, EXAMINATION:, INDICATION:, TECHNIQUE:,
                                      COMPARISON:, FINDINGS:, IMPRESSION:, sometimes WET READ: / NOTIFICATION:),
                                      lines wrapped as in MIMIC-CXR
    files/p1X/p1XXXXXXX/sSTUDY/<dicom_id>.jpg   1-3 views per study

Realistic on purpose: studies of one subject share its folder (MIMIC splits by subject); the split CSV lists a
study's lateral view before its frontal one at times (the loader puts frontal views first from the metadata); a
study without a section has no such header; a SynthCXR sentence ``Comparison: X.`` becomes the ``COMPARISON:``
section. Labels: the CheXpert file gives the Impression's labels (the Findings' when there is no Impression), the
MIMIC-CXR-JPG convention. Sources: MIMIC-CXR-JPG 2.0.0 / MIMIC-CXR on PhysioNet (file and column names as
published).

Left out: DICOMs, the ``negbio`` labels, report addenda.
"""

from __future__ import annotations

import gzip
import re
import textwrap
from pathlib import Path
from typing import Callable

import numpy as np

from sdrlib.vocabulary import CHEXPERT_14, ordered_labels

from .standin import (INDICATIONS, Draft, StandInStudy, csv_bytes, hex_digest, jpg_bytes, layout_rng,
                      pick_defect_target, section_texts, write_file)
from .records import SPLITS

__all__ = ["write_mimic_layout"]

_MIMIC_SPLIT = {"train": "train", "val": "validate", "test": "test"}
_COMPARISON_RE = re.compile(r"(?:(?<=\s)|^)Comparison: ([^.]*)\.(?:\s+|$)")

_MIMIC_CHEXPERT_COLS = sorted(CHEXPERT_14)  # the published file lists them alphabetically
_VIEW_CODE = {"PA": "postero-anterior", "AP": "antero-posterior", "LATERAL": "lateral"}


def _mimic_exam(views: list[str]) -> tuple[str, str]:
    """(EXAMINATION line, TECHNIQUE line) for the views of a study."""
    lat = "LATERAL" in views
    if views[0] == "PA":
        return ("CHEST (PA AND LAT)", "Chest PA and lateral") if lat else ("CHEST (PA)", "Chest PA")
    return ("CHEST (AP AND LAT)", "Chest AP and lateral") if lat else ("CHEST (PORTABLE AP)", "Chest AP portable")


def _wrap(text: str) -> list[str]:
    """``text`` as MIMIC-CXR wraps a section: lines of at most 76 characters, each indented by one space."""
    return [" " + line for line in textwrap.wrap(text, width=76, break_long_words=False, break_on_hyphens=False)]


def _mimic_report(d: Draft, rng: np.random.Generator) -> tuple[str, str, str]:
    """The report text and the Findings / Impression a reader of it finds (``""``: absent)."""
    findings, impression = section_texts(d)
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
              f" INDICATION:  {age}-year-old {sex} with {INDICATIONS[int(rng.integers(len(INDICATIONS)))]}.  "
              "// ___", "", f" TECHNIQUE:  {technique}", "", f" COMPARISON:  {comparison}", ""]
    if findings:
        lines += [" FINDINGS:", ""] + _wrap(findings) + [""]
    if impression:
        lines += [" IMPRESSION:", ""] + _wrap(impression) + [""]
    if rng.random() < 0.1:
        lines += [" NOTIFICATION:  The findings were discussed with Dr. ___ by telephone on ___ at", " ___.", ""]
    return "\n".join(lines) + "\n", findings, impression


def _mimic_label_cell(v: int | None) -> str:
    """A CheXpert cell as the published file writes it: ``1.0`` / ``0.0`` / ``-1.0``, blank when not mentioned."""
    return "" if v is None else f"{float(v):.1f}"


def _assign_mimic_ids(drafts: list[Draft], seed: int) -> None:
    """Subject, study and DICOM ids and the split CSV's image order of every draft (in ``d.extra``); subjects own
    their studies and MIMIC splits by subject, so a study may join an earlier subject of its split."""
    rng = layout_rng(seed, "mimic", 99)
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
                       dicoms=["-".join(hex_digest(seed, "mimic", sid, j, n=40)[k:k + 8] for k in range(0, 40, 8))
                               for j in range(len(d.views))])


def _mimic_studies(drafts: list[Draft]) -> tuple[list[StandInStudy], list[tuple[str, str, str]]]:
    """Per draft (in draft order): the study the loader should make of it and its report ``(text, findings,
    impression)`` (:func:`_mimic_report`, drawn from the draft's stream)."""
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
    return studies, reports


def _mimic_defect(studies: list[StandInStudy], reports: list[tuple[str, str, str]], drafts: list[Draft],
                  order: list[int], defect: str, seed: int) -> str:
    """Damage the first complete study in loader ``order`` (``missing-section``: its report rewritten without
    IMPRESSION, from its own stream); returns its study id."""
    t = pick_defect_target(studies, drafts, order)
    target = studies[t].study_id
    if defect == "missing-report":
        studies[t].expect = "missing_report"
    elif defect == "missing-image":
        studies[t].expect = "no_image"
    else:
        d = drafts[t]
        d.drop = "impression"
        text, f, imp = _mimic_report(d, layout_rng(seed, "mimic", 98))
        reports[t] = (text, f, imp)
        studies[t].impression, studies[t].findings = imp, f
        studies[t].expect = "missing_impression"
    return target


def _write_mimic_studies(root: Path, drafts: list[Draft], studies: list[StandInStudy],
                         reports: list[tuple[str, str, str]], order: list[int], image_size: int, defect: str | None,
                         target: str | None, tick: Callable[[str], None]) -> tuple[list, list, list]:
    """Each study's report and JPGs, in loader ``order``; returns the rows of the split, metadata and CheXpert
    tables."""
    split_rows, meta_rows, chex_rows = [], [], []
    for i in order:
        d, st = drafts[i], studies[i]
        subj, sid = d.extra["subject"], d.extra["study"]
        rel_dir = f"files/p{subj[:2]}/p{subj}/s{sid}"
        if not (defect == "missing-report" and st.study_id == target):
            write_file(root / f"{rel_dir}.txt", reports[i][0].encode("utf-8"))
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
                write_file(root / rel_dir / f"{dicom}.jpg", jpg_bytes(images[j]))
        tick("written")
        lab = st.labels or {}
        chex_rows.append([subj, sid] + [_mimic_label_cell(lab.get(c)) for c in _MIMIC_CHEXPERT_COLS])
    return split_rows, meta_rows, chex_rows


def _write_mimic_tables(root: Path, split_rows: list, meta_rows: list, chex_rows: list) -> None:
    """The three gzipped index tables (gzip without a timestamp)."""
    def gz(name: str, header: list[str], rows: list) -> None:
        write_file(root / name, gzip.compress(csv_bytes(header, rows), mtime=0))

    gz("mimic-cxr-2.0.0-split.csv.gz", ["dicom_id", "study_id", "subject_id", "split"], split_rows)
    gz("mimic-cxr-2.0.0-chexpert.csv.gz", ["subject_id", "study_id"] + _MIMIC_CHEXPERT_COLS, chex_rows)
    gz("mimic-cxr-2.0.0-metadata.csv.gz",
       ["dicom_id", "subject_id", "study_id", "PerformedProcedureStepDescription", "ViewPosition", "Rows", "Columns",
        "StudyDate", "StudyTime", "ProcedureCodeSequence_CodeMeaning", "ViewCodeSequence_CodeMeaning",
        "PatientOrientationCodeSequence_CodeMeaning"], meta_rows)


def write_mimic_layout(root: Path, drafts: list[Draft], seed: int, image_size: int, defect: str | None,
                       tick: Callable[[str], None] = lambda phase: None) -> tuple[list[StandInStudy], str | None]:
    """Write the drafts as a MIMIC-CXR download under ``root`` (the stand-in writer of :mod:`sdrlib.data.registry`).

    Returns ``(studies, defect_study)``: the studies in the loader's order (by subject, then study id) and the
    study ``defect`` damaged (None without one).
    """
    _assign_mimic_ids(drafts, seed)
    order = sorted(range(len(drafts)), key=lambda i: (int(drafts[i].extra["subject"]), int(drafts[i].extra["study"])))
    studies, reports = _mimic_studies(drafts)
    target = None if defect is None else _mimic_defect(studies, reports, drafts, order, defect, seed)
    _write_mimic_tables(root, *_write_mimic_studies(root, drafts, studies, reports, order, image_size, defect, target,
                                                    tick))
    return [studies[i] for i in order], target
