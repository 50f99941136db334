"""Datasets as one record type: the synthetic SynthCXR set and loaders for the real ones.

- :mod:`sdrlib.data.synthcxr`     deterministic synthetic studies (image, report, labels)
- :mod:`sdrlib.data.mimic`        MIMIC-CXR (split CSV + free-text ``sXXXX.txt`` reports + JPGs)
- :mod:`sdrlib.data.rexgradient`  ReXGradient-160K (metadata with Findings / Impression + PNGs)
- :mod:`sdrlib.data.iuxray`       IU-Xray / OpenI (``indiana_reports.csv`` + ``indiana_projections.csv``)

Every loader returns ``(list[Record], LoadReport)``; the report counts what was
skipped and why (missing section, missing image, duplicate study id, bad row,
undecodable text), so nothing is dropped silently. :func:`load_split` picks the
loader from the profile (``data.source``) and generates the synthetic set on demand
(regenerating it when any file, images included, no longer matches its manifest).

Shared rules of the real-data loaders (:mod:`sdrlib.data._common`): every index /
metadata table is read by ``read_table``, so a truncated ``.csv.gz``, a CSV / JSON /
Parquet that does not parse or an unreadable file raises :class:`DataError` naming the
file and the cause; every path taken from a data file must stay inside the data root
once its ``..`` are collapsed (symlinks in the user's layout are followed), else it is
never opened and is counted as
``unsafe_path`` in the :class:`LoadReport`.

Left out: image decoding (records carry paths; the model code opens them),
lateral-view selection beyond what each loader documents, and report cleaning
beyond section splitting and whitespace normalisation.

Example::

    cfg = load_profile("smoke")
    train = load_split(cfg, "train")   # list[Record]
    train[0].findings, train[0].image_paths[0], train[0].labels
"""

from __future__ import annotations

from sdrlib.errors import SDRError

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, overload

__all__ = ["Record", "LoadReport", "DataError", "SPLITS", "load_split", "stratum", "STRATA",
           "records_to_frame"]

SPLITS = ("train", "val", "test")
STRATA = ("no_finding", "single", "multi")


class DataError(SDRError, ValueError):
    """A dataset folder or file is missing or unusable (the message names it and says what to do)."""


@dataclass
class Record:
    """One study, whatever the dataset.

    Attributes
    ----------
    study_id : str
        Unique within a dataset.
    image_paths : list of str
        Absolute paths of the study's images (frontal first where the dataset says which).
    findings, impression : str
        Section texts, whitespace-normalised; may be ``""`` only where a loader was asked
        not to require the section.
    labels : dict or None
        CheXpert-14 labels (1 / 0 / -1, absent = not mentioned) where the dataset provides
        them (SynthCXR: exact; MIMIC-CXR: the official CheXpert file if present), else None.
    split : str
        ``"train"``, ``"val"`` or ``"test"``.
    meta : dict
        Dataset-specific extras (SynthCXR: ``truth``, ``labels_findings``, ...).
    """

    study_id: str
    image_paths: list[str]
    findings: str
    impression: str
    labels: dict[str, int] | None
    split: str
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoadReport:
    """What a loader kept and skipped. ``skipped`` maps a reason to a count; ``notes`` to counts
    of repaired-but-kept oddities (e.g. a report decoded as Latin-1)."""

    source: str
    split: str
    n_loaded: int = 0
    skipped: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, reason: str, example: str = "") -> None:
        """Count one skipped item under ``reason`` (keeps up to 3 examples per reason)."""
        self.skipped[reason] += 1
        if example:
            ex = self.examples.setdefault(reason, [])
            if len(ex) < 3:
                ex.append(example)

    def note(self, reason: str, example: str = "") -> None:
        """Count one kept-but-repaired item under ``reason``."""
        self.notes[reason] += 1
        if example:
            ex = self.examples.setdefault(reason, [])
            if len(ex) < 3:
                ex.append(example)

    @property
    def n_skipped(self) -> int:
        return int(sum(self.skipped.values()))

    def summary(self) -> str:
        """One line, e.g. ``mimic/train: 120 loaded, 3 skipped (missing_findings=2, missing_image=1)``."""
        sk = ", ".join(f"{k}={v}" for k, v in sorted(self.skipped.items()))
        nt = ", ".join(f"{k}={v}" for k, v in sorted(self.notes.items()))
        out = f"{self.source}/{self.split}: {self.n_loaded} loaded, {self.n_skipped} skipped"
        out += f" ({sk})" if sk else ""
        out += f"; notes: {nt}" if nt else ""
        return out


def stratum(labels: Mapping[str, int] | None) -> str:
    """Abnormality stratum of a study from its CheXpert labels (paper appendix F).

    ``"no_finding"`` when none of the 12 pathologies (all observations except No Finding
    and Support Devices) is positive or uncertain, ``"single"`` for exactly one, ``"multi"``
    for two or more. Example: ``stratum({"Edema": 1, "Cardiomegaly": -1})`` -> ``"multi"``.
    """
    from sdrlib.vocabulary import PATHOLOGIES

    if labels is None:
        raise ValueError("stratum needs labels; label the reference report first (sdrlib.clinical.labeler)")
    n = sum(1 for p in PATHOLOGIES if labels.get(p) in (1, -1))
    return STRATA[min(n, 2)]


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def _load_synthetic(cfg: Any, split: str) -> tuple[list[Record], LoadReport]:
    import pyarrow.parquet as pq

    from .synthcxr import ensure_dataset

    root = ensure_dataset(cfg)
    table = pq.read_table(root / f"{split}.parquet").to_pylist()
    rep = LoadReport(source="synthetic", split=split)
    out = []
    for row in table:
        out.append(Record(
            study_id=row["study_id"], image_paths=[str(root / row["image_path"])], findings=row["findings"],
            impression=row["impression"], labels=json.loads(row["labels"]), split=split,
            meta={"labels_findings": json.loads(row["labels_findings"]),
                  "labels_impression": json.loads(row["labels_impression"]),
                  "truth": json.loads(row["truth"]), "devices": list(row["devices"] or [])}))
    rep.n_loaded = len(out)
    return out, rep


def _real_root(cfg: Any) -> Path:
    from sdrlib.paths import output_root

    root = str(cfg.data.root or "").strip()
    if not root:
        raise DataError(f"profile {cfg.name!r}: data.source={cfg.data.source!r} needs data.root, the folder of "
                        "your download (see README, 'Real data')")
    p = Path(root)
    return p if p.is_absolute() else output_root() / p


@overload
def load_split(cfg: Any, split: str, *, with_report: Literal[False] = ...) -> list[Record]: ...
@overload
def load_split(cfg: Any, split: str, *, with_report: Literal[True]) -> tuple[list[Record], LoadReport]: ...


def load_split(cfg: Any, split: str, *, with_report: bool = False):
    """Records of one split of the profile's dataset.

    Parameters
    ----------
    cfg : sdrlib.config.Profile
        Uses ``data.source`` (``synthetic`` | ``mimic`` | ``rexgradient`` | ``iuxray``),
        ``data.root`` for real data, and for synthetic data ``seed``, ``data.n_train/n_val/
        n_test``, ``data.image_size`` and ``paths.data``.
    split : {"train", "val", "test"}
    with_report : bool
        Also return the :class:`LoadReport` (counts of skipped items by reason).

    Returns
    -------
    list of Record, or (list of Record, LoadReport)

    Raises
    ------
    DataError
        Unknown source, or a real dataset folder that is missing / lacks its index files.
    """
    _check_split(split)
    source = str(cfg.data.source)
    if source in ("synthetic", "synthcxr"):
        records, rep = _load_synthetic(cfg, split)
    elif source == "mimic":
        from .mimic import load_mimic

        records, rep = load_mimic(_real_root(cfg), split)
    elif source == "rexgradient":
        from .rexgradient import load_rexgradient

        records, rep = load_rexgradient(_real_root(cfg), split)
    elif source == "iuxray":
        from .iuxray import load_iuxray

        records, rep = load_iuxray(_real_root(cfg), split, seed=int(cfg.seed))
    else:
        raise DataError(f"profile {cfg.name!r}: unknown data.source {source!r}; "
                        "expected synthetic, mimic, rexgradient or iuxray")
    if rep.n_skipped:
        import warnings

        warnings.warn(rep.summary(), stacklevel=2)
    return (records, rep) if with_report else records


def records_to_frame(records: list[Record]):
    """A pandas DataFrame view (one row per record; labels as one column per observation).

    Example: ``records_to_frame(load_split(cfg, "val")).head()``.
    """
    import pandas as pd

    from sdrlib.vocabulary import CHEXPERT_14

    rows = []
    for r in records:
        row: dict[str, Any] = {"study_id": r.study_id, "split": r.split, "n_images": len(r.image_paths),
                               "findings": r.findings, "impression": r.impression}
        for o in CHEXPERT_14:
            row[o] = (r.labels or {}).get(o)
        row["stratum"] = stratum(r.labels) if r.labels is not None else None
        rows.append(row)
    return pd.DataFrame(rows)
