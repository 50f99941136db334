"""A toy dataset written as one module, the way a new dataset joins the package (issue 35): a loader, a download
under ``data.root``, a profile check and a stand-in writer, all in one :func:`sdrlib.data.register_dataset` call.
Nothing else in the package is edited for it (``tests/data/test_data_registry.py`` runs it end to end).

Layout of a "ToyCXR" download: ``studies.csv`` (study_id, split, findings, impression, image) and ``img/<id>.png``.
"""

from __future__ import annotations

import csv
from pathlib import Path

from sdrlib.data import Dataset, LoadReport, Record, register_dataset
from sdrlib.data.download import real_root
from sdrlib.data.registry import unregister_dataset

NAME = "toycxr"


def load_toy(root: Path, split: str) -> tuple[list[Record], LoadReport]:
    """One split of a ToyCXR download; a study without a section or image is skipped and counted."""
    rep, out = LoadReport(source=NAME, split=split), []
    with open(root / "studies.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["split"] != split:
                continue
            if not row["findings"] or not row["impression"]:
                rep.skip("missing_findings" if not row["findings"] else "missing_impression", row["study_id"])
            elif not (root / row["image"]).is_file():
                rep.skip("no_image", row["study_id"])
            else:
                out.append(Record(study_id=row["study_id"], image_paths=[str(root / row["image"])],
                                  findings=row["findings"], impression=row["impression"], labels=None, split=split,
                                  meta={}))
    rep.n_loaded = len(out)
    return out, rep


def write_toy_layout(root: Path, drafts, seed: int, image_size: int, defect, tick=lambda phase: None):
    """The stand-in writer (``sdrlib.data.registry``'s contract): SynthCXR drafts -> ``(studies, defect_study)``."""
    from PIL import Image

    from sdrlib.data.standin import StandInStudy

    (root / "img").mkdir(parents=True, exist_ok=True)
    studies, rows = [], []
    for k, d in enumerate(drafts):
        sid = f"toy{k:04d}"
        f = "" if d.drop == "findings" else d.findings
        imp = "" if d.drop == "impression" else d.impression
        Image.fromarray(d.render()[0]).save(root / "img" / f"{sid}.png")
        rows.append([sid, d.split, f, imp, f"img/{sid}.png"])
        expect = None if (f and imp) else ("missing_findings" if not f else "missing_impression")
        studies.append(StandInStudy(study_id=sid, split=d.split, source=NAME, findings=f, impression=imp,
                                    labels=None, images=[f"img/{sid}.png"], views=d.views[:1], expect=expect))
        tick("written")
    with open(root / "studies.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["study_id", "split", "findings", "impression", "image"])
        w.writerows(rows)
    return studies, None


def check_toy_profile(p) -> str | None:
    return None if p.data.image_size >= 32 else f"data.image_size = {p.data.image_size}: ToyCXR needs at least 32"


def register() -> Dataset:
    return register_dataset(Dataset(NAME, "ToyCXR", lambda cfg, split: load_toy(real_root(cfg), split),
                                    standin=write_toy_layout, standin_code=99, check_profile=check_toy_profile))


def unregister() -> None:
    unregister_dataset(NAME)
