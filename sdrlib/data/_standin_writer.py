"""Writing one stand-in download end to end: :func:`write_standin` and what it returns, :class:`StandIn`.

:func:`write_standin` checks its arguments (:class:`~sdrlib.data.standin.StandInError`, one line), refuses a size
the free disk cannot hold (measured on :data:`SAMPLE_STUDIES` studies), drafts the studies
(:func:`~sdrlib.data._standin.make_drafts`), hands them to the layout's registered writer
(:mod:`sdrlib.data.registry`), writes the manifest ``STANDIN.json`` and, if asked, unpacks what the download
ships packed; with ``progress`` a line goes to stderr every :data:`PROGRESS_EVERY_S` seconds.

Left out: the layouts themselves (each dataset's ``_<name>_standin`` module), the command line and the overview
(:mod:`sdrlib.data.standin`, which re-exports the public names here).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sdrlib.io import OutputPathError, output_path

from ._standin import DEFECTS, StandInError, StandInStudy, make_drafts, split_sizes
from .registry import get_dataset, standin_layouts

__all__ = ["StandIn", "write_standin", "MANIFEST", "SAMPLE_STUDIES", "PROGRESS_EVERY_S"]

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
