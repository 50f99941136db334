"""The IU-Xray stand-in: SynthCXR studies written in the Kaggle "chest-xrays-indiana-university" packaging that
:func:`~sdrlib.data.iuxray.load_iuxray` reads (:mod:`sdrlib.data.standin` has the overview of every layout, the
defects and the command line).

Written under the root::

    indiana_reports.csv       uid, MeSH, Problems, image, indication, comparison, findings, impression
    indiana_projections.csv   uid, filename, projection (Frontal | Lateral)
    images/images_normalized/<uid>_IM-XXXX-N001.dcm.png

Every study is written (uids 1, 2, ...): IU-Xray has no split, the loader hashes the uid
(:func:`~sdrlib.data.iuxray.iuxray_split_of`). A study without a section has it empty; the projections file
lists a lateral view first at times. Labels: ``Problems`` / ``MeSH`` headings for the positive observations (IU
has no negatives or uncertain labels), which the loader maps back (:func:`~sdrlib.data.iuxray.mesh_labels`).

Left out: IU-Xray's ``XXXX`` inside findings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from sdrlib.vocabulary import CHEXPERT_14, apply_no_finding, ordered_labels

from .standin import (INDICATIONS, Draft, StandInStudy, csv_bytes, pick_defect_target, png_bytes, section_texts,
                      write_file)

__all__ = ["write_iuxray_layout"]

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


def write_iuxray_layout(root: Path, drafts: list[Draft], seed: int, image_size: int, defect: str | None,
                        tick: Callable[[str], None] = lambda phase: None) -> tuple[list[StandInStudy], str | None]:
    """Write the drafts as an IU-Xray download under ``root`` (the stand-in writer of :mod:`sdrlib.data.registry`;
    every draft is a train draft, the loader splits by uid hash).

    Returns ``(studies, defect_study)``: the studies in uid order (``split`` None) and the study ``defect``
    damaged (None without one).
    """
    studies: list[StandInStudy] = []
    for uid, d in enumerate(drafts, start=1):
        f, imp = section_texts(d)
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
        t = pick_defect_target(studies, drafts, list(range(len(studies))))
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
                                f"{INDICATIONS[int(rng.integers(len(INDICATIONS)))]}.",
                                "None." if rng.random() < 0.6 else "XXXX", st.findings, st.impression])
        images = d.render() if not (defect == "missing-image" and st.study_id == target) else None
        for j in d.extra["write_order"]:
            proj_rows.append([st.study_id, d.extra["names"][j], d.extra["pviews"][j]])
            if images is not None:
                write_file(root / "images" / "images_normalized" / d.extra["names"][j], png_bytes(images[j]))
        tick("written")
    write_file(root / "indiana_reports.csv", csv_bytes(
        ["uid", "MeSH", "Problems", "image", "indication", "comparison", "findings", "impression"], report_rows))
    write_file(root / "indiana_projections.csv", csv_bytes(["uid", "filename", "projection"], proj_rows))
    return studies, target
