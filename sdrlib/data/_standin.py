"""The parts every stand-in layout writer shares: SynthCXR drafts of the studies, the written-study row, ids, encoders.

A layout writer (:mod:`sdrlib.data._mimic_standin`, :mod:`~sdrlib.data._rexgradient_standin`,
:mod:`~sdrlib.data._iuxray_standin`, or a new dataset's) is called as ``writer(root, drafts, seed, image_size,
defect, tick)`` (:mod:`sdrlib.data.registry`) with the :class:`Draft` s made here by :func:`make_drafts` and
returns ``(studies, defect_study)``: a :class:`StandInStudy` per study it wrote and the study a ``defect`` damaged.
Also here: :func:`split_sizes`, each layout's random streams (:func:`layout_rng`), deterministic ids
(:func:`hex_digest`, :func:`dicom_uid`), byte-deterministic encoders (:func:`png_bytes`, :func:`jpg_bytes`,
:func:`csv_bytes`), :func:`pick_defect_target`, the defects (:data:`DEFECTS`) and the indications the layouts'
texts draw from (:data:`INDICATIONS`).

Left out: writing a whole stand-in (arguments, size check, progress, manifest: :mod:`sdrlib.data._standin_writer`),
the command line and the layouts' overview (:mod:`sdrlib.data.standin`).
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from sdrlib.errors import SDRError

from .records import SPLITS
from .registry import get_dataset
from .synthcxr import generate_report, generate_study, render_image

__all__ = ["DEFECTS", "INDICATIONS", "StandInError", "StandInStudy", "Draft", "split_sizes", "layout_rng",
           "hex_digest", "dicom_uid", "png_bytes", "jpg_bytes", "csv_bytes", "write_file", "make_drafts",
           "section_texts", "pick_defect_target"]

DEFECTS = ("missing-report", "missing-image", "missing-section")
#: the clinical indications the layouts' texts (MIMIC's INDICATION, IU-Xray's and ReXGradient's columns) draw from
INDICATIONS = ("cough", "shortness of breath", "chest pain", "fever", "hypoxia", "dyspnea on exertion",
               "suspected pneumonia", "a preoperative evaluation", "a recent fall", "weakness")


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


def split_sizes(n: int) -> dict[str, int]:
    """Studies per split: 70 / 15 / 15 %, at least one per split from ``n = 3`` on.

    Example: ``split_sizes(3) -> {"train": 1, "val": 1, "test": 1}``; ``split_sizes(20)`` -> 14 / 3 / 3.
    """
    if n < 3:
        return {"train": n, "val": 0, "test": 0}
    k = max(1, int(round(0.15 * n)))
    return {"train": n - 2 * k, "val": k, "test": k}


def layout_rng(seed: int, layout: str, *key: int) -> np.random.Generator:
    """The random stream ``key`` of ``layout``'s stand-in (its registered ``standin_code``) for ``seed``."""
    return np.random.default_rng([int(seed), 0x57A4D, get_dataset(layout).standin_code, *[int(k) for k in key]])


def hex_digest(*parts: object, n: int = 32) -> str:
    """The first ``n`` hex digits of the sha256 of ``parts`` joined by ``:`` (deterministic ids)."""
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()[:n]


def dicom_uid(*parts: object) -> str:
    """A DICOM UID in the ``2.25.<decimal of a 128-bit number>`` form (PS3.5 B.2)."""
    return "2.25." + str(int(hex_digest(*parts), 16))


def png_bytes(image: np.ndarray) -> bytes:
    """A grayscale image, shape (H, W) uint8, as PNG bytes (no timestamp: the same bytes every time)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image, mode="L").save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def jpg_bytes(image: np.ndarray) -> bytes:
    """A grayscale image, shape (H, W) uint8, as JPEG bytes (quality 95)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image, mode="L").save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def csv_bytes(header: Sequence[str], rows: Sequence[Sequence[object]]) -> bytes:
    """A UTF-8 CSV (``\\n`` line ends; None written as an empty cell)."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(["" if v is None else v for v in r])
    return buf.getvalue().encode("utf-8")


def write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, creating its folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@dataclass
class Draft:
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
            render_image(self.truth, self.devices, layout_rng(self.seed, self.layout, 7, sp, self.index, j),
                         size=self.image_size) for j in range(1, len(self.views))]


def make_drafts(layout: str, n: int, seed: int, image_size: int, p_missing_section: float,
                splits: dict[str, int], tick: Callable[[str], None] = lambda phase: None) -> list[Draft]:
    """The drafts of a stand-in: ``splits[s]`` studies of each split ``s`` in SPLITS order, study ``i`` of ``s``
    carrying the texts and labels of SynthCXR study ``(seed, s, i)``; views (1-3) and the section a study lacks
    (share ``p_missing_section``) drawn from ``layout``'s stream. ``tick("drafted")`` once per study."""
    out = []
    for split in SPLITS:
        for i in range(splits[split]):
            st = generate_report(seed, split, i)  # generate_study's texts and labels; its image is drawn on writing
            rng = layout_rng(seed, layout, get_dataset(layout).standin_code, SPLITS.index(split), i)
            frontal = "AP" if (st.devices and rng.random() < 0.8) or rng.random() < 0.25 else "PA"
            k = int(rng.choice([1, 2, 3], p=[0.2, 0.65, 0.15]))
            views = [frontal, "LATERAL", frontal][:k]
            drop = None
            if rng.random() < p_missing_section:
                drop = "findings" if rng.random() < 0.5 else "impression"
            out.append(Draft(split=split, index=i, findings=st.findings, impression=st.impression,
                             labels_findings=dict(st.labels_findings), labels_impression=dict(st.labels_impression),
                             labels=dict(st.labels), devices=list(st.devices), views=views, drop=drop,
                             extra={"rng": rng}, seed=seed, layout=layout, image_size=image_size, truth=st.truth))
            tick("drafted")
    return out


def section_texts(d: Draft) -> tuple[str, str]:
    """``(findings, impression)`` as written: the one the draft lacks is ``""``."""
    return ("" if d.drop == "findings" else d.findings), ("" if d.drop == "impression" else d.impression)


def pick_defect_target(studies: list[StandInStudy], drafts: list[Draft], order: list[int]) -> int:
    """Index (into ``studies``) of the first study in loader order that is complete and kept."""
    for i in order:
        if studies[i].expect is None and drafts[i].drop is None:
            return i
    raise StandInError("no complete study to damage; use a larger --n")
