"""Where a real dataset's download is: :func:`real_root`, the folder a profile's ``data.root`` names.

A relative ``data.root`` is under the output root (:func:`sdrlib.paths.output_root`). When the profile asks for a
stand-in (``data.standin_n``) and the folder does not exist yet, the stand-in of the profile's seed is written there
first (:func:`~sdrlib.data.standin.write_standin`, into a sibling temporary folder renamed into place), so a run
reads it like a download. Each real dataset's registration (:mod:`sdrlib.data.registry`) loads from this folder,
e.g. ``lambda cfg, split: load_mimic(real_root(cfg), split)``.

Left out: checking what is inside the folder (each loader does, naming what is missing) and the run's preflight
(:mod:`sdrlib.runner`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from sdrlib.data.standin import write_standin
from sdrlib.data.records import DataError
from sdrlib.data.registry import get_dataset
from sdrlib.paths import output_root

__all__ = ["real_root"]


def real_root(cfg: Any) -> Path:
    """The download folder of a real ``data.source`` (``data.root``, relative to the output root), written first as
    a stand-in when the profile asks (``data.standin_n``) and it does not exist; no ``data.root`` raises
    :class:`DataError`."""
    root = str(cfg.data.root or "").strip()
    if not root:
        raise DataError(f"profile {cfg.name!r}: data.source={cfg.data.source!r} needs data.root, the folder of "
                        "your download (see docs/real_data.md)")
    p = Path(root)
    p = p if p.is_absolute() else output_root() / p
    n = int(getattr(cfg.data, "standin_n", 0) or 0)
    if n and not p.exists():
        _write_standin_once(get_dataset(cfg.data.source).name, p, n, int(cfg.seed))
    return p


def _write_standin_once(source: str, root: Path, n: int, seed: int) -> None:
    """Write the stand-in download a profile names (``data.standin_n``) into the missing ``root``.

    Written into a sibling temporary folder and renamed into place, so an interrupted write leaves no
    half folder that a later run would take for a download. ReXGradient's images are unpacked.
    """
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}.", dir=root.parent))
    try:
        write_standin(source, tmp, n=n, seed=seed, unpack=True)
        os.replace(tmp, root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    warnings.warn(f"data.standin_n = {n}: wrote a {source} stand-in (SynthCXR studies in the download's layout, "
                  f"sdrlib.data.standin) into {root}", stacklevel=4)
