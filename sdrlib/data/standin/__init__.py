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

Sources of each layout, and what in it is an assumption: the module docstrings of the writers, one per dataset
beside its loader (:mod:`sdrlib.data._mimic_standin`, :mod:`~sdrlib.data._rexgradient_standin`,
:mod:`~sdrlib.data._iuxray_standin`). Here: writing a whole stand-in (:func:`write_standin`, :class:`StandIn`:
arguments, size check, progress, manifest) and the parts every layout writer shares. A layout writer is called as
``writer(root, drafts, seed, image_size, defect, tick)`` (:mod:`sdrlib.data.registry`) with the :class:`Draft` s
made by :func:`make_drafts` (SynthCXR drafts of the studies) and returns ``(studies, defect_study)``: a
:class:`StandInStudy` per study it wrote and the study a ``defect`` damaged. The shared parts: :func:`split_sizes`,
each layout's random streams (:func:`layout_rng`), deterministic ids (:func:`hex_digest`, :func:`dicom_uid`),
byte-deterministic encoders (:func:`png_bytes`, :func:`jpg_bytes`, :func:`csv_bytes`), :func:`pick_defect_target`,
the defects (:data:`DEFECTS`) and the indications the layouts' texts draw from (:data:`INDICATIONS`). The command
line is :mod:`sdrlib.data.standin.__main__` (``python -m`` runs it; nothing imports it, so runpy has nothing to warn
about).

What is realistic on purpose: MIMIC studies of one subject share its folder; the split CSV lists
a study's lateral view before its frontal one at times (the loader puts frontal views first from
the metadata); about ``p_missing_section`` of the studies lack FINDINGS or IMPRESSION (MIMIC: no such
header; IU-Xray and ReXGradient: an empty field), which every loader skips and counts
(``missing_findings`` / ``missing_impression``); a SynthCXR sentence ``Comparison: X.`` becomes the
MIMIC ``COMPARISON:`` section, as a reader would have written it. ReXGradient images are shipped as the
release ships them, packed: :func:`~sdrlib.data.rexgradient.load_rexgradient` stops with the unpack command until they
are unpacked (``--unpack`` or :func:`~sdrlib.data.rexgradient.unpack_rexgradient` do what that command does).

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

import csv
import hashlib
import io
import json
import os
import shutil
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from sdrlib.data.records import SPLITS
from sdrlib.data.registry import get_dataset, standin_layouts
from sdrlib.data.synthcxr import generate_report, generate_study, render_image
from sdrlib.errors import SDRError
from sdrlib.io import OutputPathError, output_path

__all__ = ["DEFECTS", "INDICATIONS", "StandInError", "StandInStudy", "Draft", "split_sizes", "layout_rng",
           "hex_digest", "dicom_uid", "png_bytes", "jpg_bytes", "csv_bytes", "write_file", "make_drafts",
           "section_texts", "pick_defect_target", "StandIn", "write_standin", "MANIFEST", "SAMPLE_STUDIES",
           "PROGRESS_EVERY_S"]

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


MANIFEST = "STANDIN.json"
#: above this many studies the bytes per study are measured on a sample of this size before writing
SAMPLE_STUDIES = 12
#: seconds between two progress lines
PROGRESS_EVERY_S = 5.0


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
        """The split the loader assigns ``study`` to (a layout without splits: its dataset's ``split_of`` rule, IU-Xray's
        uid hash with ``iu_seed``)."""
        return study.split if study.split is not None else get_dataset(self.layout).split_of(study.study_id, iu_seed)

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
        """The written study with this id."""
        return next(s for s in self.studies if s.study_id == study_id)

    def to_json(self) -> dict[str, Any]:
        """The manifest (``STANDIN.json``): every field, the root written as ``"."``."""
        d = asdict(self)
        d["root"] = "."
        return d


def _check_args(layout: str, out_dir: Any, n: int, seed: int, image_size: int, defect: str | None,
                p_missing_section: float) -> Path:
    """The output folder of valid arguments (:class:`StandInError`, one line, for anything unusable)."""
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
    drafts = make_drafts(layout, int(n), int(seed), int(image_size), float(p_missing_section), sizes, tick)
    studies, target = ds.standin(root, drafts, int(seed), int(image_size), defect, tick)
    st = StandIn(layout=layout, root=root, seed=int(seed), n=int(n), image_size=int(image_size), defect=defect,
                 defect_study=target, studies=studies, packed=ds.standin_unpack is not None)
    (root / MANIFEST).write_text(json.dumps(st.to_json(), indent=2) + "\n", encoding="utf-8")
    if unpack and ds.standin_unpack is not None:
        ds.standin_unpack(root)
        st.packed = False
    return st
