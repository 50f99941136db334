"""The ReXGradient-160K stand-in: SynthCXR studies written as the Hugging Face release ships them, read by
:func:`~sdrlib.data.rexgradient.load_rexgradient` once :func:`unpack_rexgradient` has unpacked the images
(:mod:`sdrlib.data.standin` has the overview of every layout, the defects and the command line).

Written under the root::

    metadata/{train,valid,test}_metadata.csv                 one row per study, no image columns
    metadata/{train,valid,test}_metadata.json                per study, keyed by id: the CSV's fields,
    metadata/{train,valid,test}_metadata_view_position.json  PatientID, ImagePath and ImageViewPosition
    deid_png.part00 ... deid_png.part09   a zstd-compressed tar of deid_png/<PatientID>/<AccessionNumber>/
                                          studies/<StudyInstanceUid>/series/<SeriesInstanceUid>/instances/<SOP>.png,
                                          cut in ten parts; ImagePath = ``../deid_png/...`` (relative to metadata/)

A study without a section has it empty (null). No labels (the release has none). The archive goes through the disk:
each PNG to a scratch folder as its study is drawn, then the tar (members in name order, no timestamps) straight
into the zstd stream of a scratch file, which is cut into the parts; the scratch files are removed.

Sources: the dataset card (``cat deid_png.part* > deid_png.tar && tar -xf deid_png.tar``, metadata in
``metadata/``) and public code that reads the release (per-split ``*_metadata.csv`` without image columns,
``*_metadata_view_position.json`` keyed by id with ``ImagePath`` / ``ImageViewPosition`` lists, the archive a
zstd-compressed tar in ``part00``-``part09``); the gated release itself was not inspected, so the composite ``id``
spelling (``p<PatientID>_<AccessionNumber>_s<StudyInstanceUid>``) and the exact difference between
``*_metadata.json`` and ``*_metadata_view_position.json`` (written here with the same content) are assumptions.

Left out: the interstitial-pattern boxes and the private test split.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any, Callable

from .standin import (INDICATIONS, Draft, StandInError, StandInStudy, csv_bytes, dicom_uid, hex_digest,
                      pick_defect_target, png_bytes, section_texts, write_file)
from .records import SPLITS

__all__ = ["write_rexgradient_layout", "unpack_rexgradient"]

_REX_SPLIT = {"train": "train", "val": "valid", "test": "test"}
_REX_PARTS = 10

_REX_VIEWS = {"PA": "PA", "AP": "AP", "LATERAL": "LATERAL"}
_REX_DESC = {"PA": "XR CHEST PA AND LATERAL", "AP": "XR CHEST 1 VIEW AP"}
_REX_CSV_COLS = ("id", "AccessionNumber", "StudyInstanceUid", "PatientSex", "PatientAge", "StudyDate",
                 "StudyDescription", "Indication", "Comparison", "Findings", "Impression")


def _grdn(*parts: object) -> str:
    """A ``GRDN`` + 12 base-36 digits id (ReXGradient's PatientID / AccessionNumber spelling) from ``parts``."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    v = int(hex_digest(*parts), 16)
    out = ""
    for _ in range(12):
        v, r = divmod(v, 36)
        out += alphabet[r]
    return "GRDN" + out


def _rex_studies(drafts: list[Draft], seed: int) -> list[StandInStudy]:
    """Ids, image paths and the metadata fields of every draft (in ``d.extra``, drawn from its stream) and the
    study the loader should make of it."""
    studies: list[StandInStudy] = []
    for d in drafts:
        rng = d.extra["rng"]
        pid = _grdn(seed, "patient", d.split, d.index)
        acc = _grdn(seed, "accession", d.split, d.index)
        uid = dicom_uid(seed, "rex-study", d.split, d.index)
        series = dicom_uid(seed, "rex-series", d.split, d.index)
        sops = [dicom_uid(seed, "rex-sop", d.split, d.index, j) for j in range(len(d.views))]
        rel = [f"deid_png/{pid}/{acc}/studies/{uid}/series/{series}/instances/{sop}.png" for sop in sops]
        f, imp = section_texts(d)
        expect = None if (f and imp) else ("missing_findings" if not f else "missing_impression")
        d.extra.update(pid=pid, acc=acc, uid=uid, rel=rel, sex=("M" if rng.random() < 0.5 else "F"),
                       age=f"{int(rng.integers(20, 95)):03d}Y",
                       date=f"{2010 + int(rng.integers(0, 14))}{int(rng.integers(1, 13)):02d}{int(rng.integers(1, 29)):02d}",
                       indication=INDICATIONS[int(rng.integers(len(INDICATIONS)))].capitalize() + ".",
                       comparison="None." if rng.random() < 0.5 else "Prior chest radiograph.")
        studies.append(StandInStudy(study_id=uid, split=d.split, source="rexgradient", findings=f, impression=imp,
                                    labels=None, images=list(rel), views=list(d.views), expect=expect,
                                    meta={"id": f"p{pid}_{acc}_s{uid}", "synthcxr": [d.split, d.index]}))
    return studies


def _rex_defect(studies: list[StandInStudy], drafts: list[Draft], defect: str) -> str:
    """Damage the first complete study (``missing-report``: both sections null, there is no report file);
    returns its study id."""
    t = pick_defect_target(studies, drafts, list(range(len(studies))))
    target = studies[t].study_id
    if defect == "missing-report":
        studies[t].findings = studies[t].impression = ""
        studies[t].expect = "missing_findings"
    elif defect == "missing-image":
        studies[t].expect = "no_image"
    else:
        studies[t].impression = ""
        studies[t].expect = "missing_impression"
    return target


def _write_rex_metadata(root: Path, drafts: list[Draft], studies: list[StandInStudy]) -> None:
    """Per split: ``metadata/<split>_metadata.csv`` and the two JSON files (the same content)."""
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
        write_file(meta_dir / f"{_REX_SPLIT[split]}_metadata.csv", csv_bytes(_REX_CSV_COLS, rows))
        blob = (json.dumps(entries, indent=2) + "\n").encode("utf-8")
        write_file(meta_dir / f"{_REX_SPLIT[split]}_metadata.json", blob)
        write_file(meta_dir / f"{_REX_SPLIT[split]}_metadata_view_position.json", blob)


def _pack_tar_zstd(packed_path: Path, members: list[tuple[str, Path]]) -> None:
    """``members`` (archive name, scratch PNG) as a tar (name order, folders first, no timestamps) streamed into
    a zstd-compressed ``packed_path``; each scratch PNG is removed once in the tar."""
    import pyarrow as pa

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


def _cut_parts(root: Path, packed_path: Path) -> None:
    """``packed_path`` cut into ``deid_png.part00`` ... ``part09`` under ``root`` (as released), then removed."""
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


def _write_rex_archive(root: Path, drafts: list[Draft], studies: list[StandInStudy], defect: str | None,
                       target: str | None, tick: Callable[[str], None]) -> None:
    """The images: deid_png/... in a tar, zstd-compressed, cut in parts (as released), streamed through the disk."""
    # each PNG to a scratch folder as its study is drawn, then the tar (members in name order) straight into
    # the zstd stream of a scratch file, which is cut into the parts; the scratch files are removed.
    scratch, packed_path = root / ".standin-png", root / ".deid_png.tar.zst"
    members: list[tuple[str, Path]] = []
    for d, st in zip(drafts, studies):
        if not (defect == "missing-image" and st.study_id == target):
            for r, img in zip(d.extra["rel"], d.render()):
                members.append((r, scratch / f"{len(members)}.png"))
                write_file(members[-1][1], png_bytes(img))
        tick("written")
    _pack_tar_zstd(packed_path, members)
    shutil.rmtree(scratch, ignore_errors=True)
    _cut_parts(root, packed_path)


def write_rexgradient_layout(root: Path, drafts: list[Draft], seed: int, image_size: int, defect: str | None,
                             tick: Callable[[str], None] = lambda phase: None
                             ) -> tuple[list[StandInStudy], str | None]:
    """Write the drafts as a ReXGradient-160K download under ``root``, images packed (the stand-in writer of
    :mod:`sdrlib.data.registry`; ``image_size`` is the drafts' own).

    Returns ``(studies, defect_study)``: the studies in draft order and the study ``defect`` damaged (None without
    one).
    """
    studies = _rex_studies(drafts, seed)
    target = None if defect is None else _rex_defect(studies, drafts, defect)
    _write_rex_metadata(root, drafts, studies)
    _write_rex_archive(root, drafts, studies, defect, target, tick)
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
