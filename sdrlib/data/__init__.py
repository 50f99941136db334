"""Datasets as one record type: the synthetic SynthCXR set and loaders for the real ones.

- :mod:`sdrlib.data.synthcxr`     deterministic synthetic studies (image, report, labels)
- :mod:`sdrlib.data.mimic`        MIMIC-CXR (split CSV + free-text ``sXXXX.txt`` reports + JPGs)
- :mod:`sdrlib.data.rexgradient`  ReXGradient-160K (metadata with Findings / Impression + PNGs)
- :mod:`sdrlib.data.iuxray`       IU-Xray / OpenI (``indiana_reports.csv`` + ``indiana_projections.csv``)

Every loader returns ``(list[Record], LoadReport)``; the report counts what was
skipped and why (missing section, missing image, duplicate study id, bad row,
undecodable text), so nothing is dropped silently. :func:`load_split` picks the
loader from the profile (``data.source``) and generates the synthetic set on demand
(regenerating it when any file, images included, no longer matches its manifest). Each dataset is one
registration (:mod:`sdrlib.data.registry`: loader, download or not, stand-in writer), made by its own module
(SynthCXR's in :mod:`sdrlib.data.synthcxr.dataset`) and found on the registry's first read.

The record types live in :mod:`sdrlib.data.records`. Shared rules of the real-data loaders (:mod:`sdrlib.data._common`): every index /
metadata table is read by ``read_table``, so a truncated ``.csv.gz``, a CSV / JSON /
Parquet that does not parse or an unreadable file raises :class:`DataError` naming the
file and the cause; every path taken from a data file must stay inside the data root
once its ``..`` are collapsed (symlinks in the user's layout are followed), else it is
never opened and is counted as
``unsafe_path`` in the :class:`LoadReport`.

Left out: image decoding (records carry paths; the model code opens them),
lateral-view selection beyond what each loader documents, and report cleaning
beyond section splitting and whitespace normalisation.

Example: a tiny SynthCXR set (generated into a temporary folder on first use, then read from disk)::

    >>> import tempfile
    >>> from sdrlib.config import load_profile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> cfg = load_profile("smoke", {"paths.data": tmp.name, "data.n_train": 3, "data.n_val": 1, "data.n_test": 1,
    ...                              "data.image_size": 32})
    >>> train = load_split(cfg, "train")   # list[Record]
    >>> len(train), train[0].study_id
    (3, 'syn-train-00000')
    >>> train[0].impression
    'Persistent mild cardiomegaly without pulmonary edema in this patient with missed dialysis.'
    >>> train[0].labels["Cardiomegaly"], train[0].image_paths[0].endswith(".png")
    (1, True)
    >>> tmp.cleanup()
    >>> get_dataset("synthcxr").name, get_dataset("synthcxr").title  # the registry: an alias names the same dataset
    ('synthetic', 'SynthCXR')

Layout of the package: the loaders :mod:`~sdrlib.data.mimic`, :mod:`~sdrlib.data.rexgradient`,
:mod:`~sdrlib.data.iuxray` (their shared rules in :mod:`sdrlib.data._common`), the registry
(:mod:`sdrlib.data.registry`), a real dataset's folder (:mod:`sdrlib.data.download`), stand-in downloads
(:mod:`sdrlib.data.standin`, each layout's writer beside its loader: ``_mimic_standin``, ...), notebook 00's
statistics (:mod:`sdrlib.data.stats`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from sdrlib.data.records import SPLITS, STRATA, DataError, LoadReport, Record, check_split, stratum
from sdrlib.data.registry import Dataset, dataset_names, get_dataset, register_dataset
from sdrlib.vocabulary import CHEXPERT_14

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Record", "LoadReport", "DataError", "SPLITS", "load_split", "stratum", "STRATA",
           "records_to_frame", "Dataset", "register_dataset", "get_dataset", "dataset_names"]


@overload
def load_split(cfg: Any, split: str, *, with_report: Literal[False] = ...) -> list[Record]: ...
@overload
def load_split(cfg: Any, split: str, *, with_report: Literal[True]) -> tuple[list[Record], LoadReport]: ...


def load_split(cfg: Any, split: str, *, with_report: bool = False
               ) -> list[Record] | tuple[list[Record], LoadReport]:
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
    check_split(split)
    try:
        ds = get_dataset(str(cfg.data.source))
    except DataError as e:
        raise DataError(f"profile {cfg.name!r}: {e}") from None
    records, rep = _checked_load(ds, ds.load(cfg, split))
    if rep.n_skipped:
        warnings.warn(rep.summary(), stacklevel=2)
    return (records, rep) if with_report else records


def _checked_load(ds: Dataset, out: Any) -> tuple[list[Record], LoadReport]:
    """A loader's return value as ``(records, report)``, or :class:`DataError` naming the dataset and what came back
    (a plugin's loader that returns ``[]``, ``([], None)`` or ``None`` is a bug to be named, not unpacked)."""
    what = f"{type(out).__name__}" if not isinstance(out, tuple) else (
        "(" + ", ".join(type(x).__name__ for x in out) + ")")
    if (not isinstance(out, tuple) or len(out) != 2 or not isinstance(out[0], list)
            or not isinstance(out[1], LoadReport) or not all(isinstance(r, Record) for r in out[0])):
        raise DataError(f"dataset {ds.name!r}: its loader returned {what}; a loader returns (list of Record, "
                        "LoadReport), the report counting what it skipped")
    return out


def records_to_frame(records: list[Record]) -> "pd.DataFrame":
    """A pandas DataFrame view (one row per record; labels as one column per observation).

    Example: ``records_to_frame(load_split(cfg, "val")).head()``.
    """
    import pandas as pd

    rows = []
    for r in records:
        row: dict[str, Any] = {"study_id": r.study_id, "split": r.split, "n_images": len(r.image_paths),
                               "findings": r.findings, "impression": r.impression}
        for o in CHEXPERT_14:
            row[o] = (r.labels or {}).get(o)
        row["stratum"] = stratum(r.labels) if r.labels is not None else None
        rows.append(row)
    return pd.DataFrame(rows)
