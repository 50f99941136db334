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

Sources of each layout, and what in it is an assumption: the module docstrings of the writers, which sit beside
their loaders (:mod:`sdrlib.data._mimic_standin`, :mod:`~sdrlib.data._rexgradient_standin`,
:mod:`~sdrlib.data._iuxray_standin`; the parts they share: :mod:`sdrlib.data._standin`). Writing a whole stand-in
(:func:`write_standin`, :class:`StandIn`): :mod:`sdrlib.data._standin_writer`. This module is the command line
and re-exports the public names; nothing in the package imports it (``python -m`` runs it).

What is realistic on purpose: MIMIC studies of one subject share its folder; the split CSV lists
a study's lateral view before its frontal one at times (the loader puts frontal views first from
the metadata); about ``p_missing_section`` of the studies lack FINDINGS or IMPRESSION (MIMIC: no such
header; IU-Xray and ReXGradient: an empty field), which every loader skips and counts
(``missing_findings`` / ``missing_impression``); a SynthCXR sentence ``Comparison: X.`` becomes the
MIMIC ``COMPARISON:`` section, as a reader would have written it. ReXGradient images are shipped as the
release ships them, packed: :func:`~sdrlib.data.rexgradient.load_rexgradient` stops with the unpack command until they are
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
from typing import Sequence

from sdrlib.io import one_line_errors

from ._rexgradient_standin import unpack_rexgradient
from ._standin import DEFECTS, StandInError, StandInStudy, split_sizes
from ._standin_writer import MANIFEST, PROGRESS_EVERY_S, SAMPLE_STUDIES, StandIn, write_standin
from .registry import standin_layouts

__all__ = ["LAYOUTS", "DEFECTS", "StandIn", "StandInStudy", "StandInError", "write_standin", "unpack_rexgradient",
           "split_sizes", "main", "MANIFEST", "SAMPLE_STUDIES", "PROGRESS_EVERY_S"]

LAYOUTS = standin_layouts()  # the built-in ones (a dataset registered later is found by write_standin too)


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
