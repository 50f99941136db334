"""The dataset record types every loader returns: :class:`Record`, :class:`LoadReport`, :class:`DataError`.

Also the split names, the abnormality strata of the paper's appendix F (:func:`stratum`) and
:func:`check_split`; :mod:`sdrlib.data` re-exports them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from sdrlib.errors import SDRError
from sdrlib.vocabulary import PATHOLOGIES

__all__ = ["Record", "LoadReport", "DataError", "SPLITS", "STRATA", "stratum", "check_split"]

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
    if labels is None:
        raise ValueError("stratum needs labels; label the reference report first (sdrlib.clinical.labeler)")
    n = sum(1 for p in PATHOLOGIES if labels.get(p) in (1, -1))
    return STRATA[min(n, 2)]


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split
