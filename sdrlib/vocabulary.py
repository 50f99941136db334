"""The CheXpert-14 vocabulary and its label algebra (a leaf: imports nothing of sdrlib).

Labels are dicts observation -> status with the CheXpert values ``1`` positive, ``0``
negative, ``-1`` uncertain; an observation not mentioned is absent. Everything above
(the offline labeler, data loaders, metrics, rewards) takes its names and rules from here.
"""

from __future__ import annotations

from typing import Mapping

__all__ = ["CHEXPERT_14", "PATHOLOGIES", "OTHER_FINDINGS", "PRESENCE_FINDINGS", "PRESENCE_SLOTS",
           "PRESENCE_WIDTH", "combine_status", "apply_no_finding", "merge_labels", "ordered_labels",
           "format_label_string", "parse_label_string", "check_labels"]

CHEXPERT_14: list[str] = [
    "No Finding",
    "Enlarged Cardiomediastinum",
    "Cardiomegaly",
    "Lung Opacity",
    "Lung Lesion",
    "Edema",
    "Consolidation",
    "Pneumonia",
    "Atelectasis",
    "Pneumothorax",
    "Pleural Effusion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
]
"""The 14 CheXpert observations in the order of the CheXpert / MIMIC-CXR label files."""

PATHOLOGIES: list[str] = [o for o in CHEXPERT_14 if o not in ("No Finding", "Support Devices")]
"""The 12 observations that decide "No Finding" (CheXpert excludes Support Devices)."""

OTHER_FINDINGS: tuple[str, ...] = ("Hernia", "Pneumoperitoneum", "Pneumomediastinum", "Subcutaneous Emphysema",
                                   "Emphysema", "Granuloma", "Device Malposition")
"""Findings outside CheXpert's 14 that reward presence reads (ours, issue 49; the labeler's point 13); never labels."""

PRESENCE_FINDINGS: tuple[str, ...] = (*CHEXPERT_14, *OTHER_FINDINGS)
"""The findings of a reward presence row (:mod:`sdrlib.clinical.presence`): CheXpert's 14, then the others."""

PRESENCE_SLOTS: tuple[str, ...] = ("left", "right", "unspecified")
"""The side slots of each finding in a presence row (:mod:`sdrlib.distances.negation` says how sides fill them)."""

PRESENCE_WIDTH: int = len(PRESENCE_FINDINGS) * len(PRESENCE_SLOTS)
"""Columns of a presence row: finding ``f``'s slot ``k`` is column ``3 f + k`` (63, at most 63 so a row fits a
bit mask)."""


def combine_status(a: int | None, b: int) -> int:
    """CheXpert aggregation over mentions: positive > uncertain > negative."""
    if a is None:
        return b
    rank = {1: 2, -1: 1, 0: 0}
    return a if rank[a] >= rank[b] else b



def apply_no_finding(labels: Mapping[str, int]) -> dict[str, int]:
    """Return a copy of ``labels`` with "No Finding" set by the CheXpert convention.

    "No Finding" is 1 when no pathology (``PATHOLOGIES``) is 1 or -1, else absent.
    Example: ``apply_no_finding({"Pneumothorax": 0})`` -> ``{"Pneumothorax": 0, "No Finding": 1}``.
    """
    out = {k: v for k, v in labels.items() if k != "No Finding"}
    if not any(out.get(p) in (1, -1) for p in PATHOLOGIES):
        out["No Finding"] = 1
    return out


def merge_labels(*label_dicts: Mapping[str, int]) -> dict[str, int]:
    """Aggregate several label dicts (e.g. Findings and Impression) the CheXpert way.

    Positive beats uncertain beats negative; "No Finding" is recomputed.
    Example: ``merge_labels({"Edema": 0}, {"Edema": -1})`` -> ``{"Edema": -1}``.
    """
    out: dict[str, int] = {}
    for d in label_dicts:
        for k, v in d.items():
            if k == "No Finding":
                continue
            out[k] = combine_status(out.get(k), int(v))
    return ordered_labels(apply_no_finding(out))


def ordered_labels(labels: Mapping[str, int]) -> dict[str, int]:
    """``labels`` in ``CHEXPERT_14`` order (absent observations stay absent)."""
    return {k: labels[k] for k in CHEXPERT_14 if k in labels}


def format_label_string(labels: Mapping[str, int]) -> str:
    """``{"Edema": 1, "Pneumonia": -1}`` -> ``"Edema:1;Pneumonia:-1"`` (CHEXPERT_14 order)."""
    check_labels(labels, "labels")
    return ";".join(f"{k}:{labels[k]}" for k in CHEXPERT_14 if k in labels)


def parse_label_string(s: str) -> dict[str, int]:
    """Inverse of :func:`format_label_string`; empty string -> ``{}``.

    Raises ValueError naming the bad item on unknown observations or values.
    """
    out: dict[str, int] = {}
    s = (s or "").strip()
    if not s:
        return out
    for item in s.split(";"):
        item = item.strip()
        if not item:
            continue
        name, sep, val = item.rpartition(":")
        if not sep or name.strip() not in CHEXPERT_14 or val.strip() not in ("1", "0", "-1"):
            raise ValueError(f"bad label item {item!r} in {s!r}; expected '<CheXpert name>:<1|0|-1>'")
        out[name.strip()] = int(val)
    return out


def check_labels(labels: Mapping[str, int], where: str) -> None:
    """ValueError naming ``where`` for an unknown observation or a value other than 1 / 0 / -1."""
    for k, v in labels.items():
        if k not in CHEXPERT_14:
            raise ValueError(f"{where}: unknown observation {k!r}; expected one of CHEXPERT_14")
        if v not in (1, 0, -1):
            raise ValueError(f"{where}: {k!r} has value {v!r}; expected 1, 0 or -1")
