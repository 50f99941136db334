"""SynthCXR step 1, findings: the study types and :func:`sample_findings`.

:class:`Finding` (one abnormality: kind, laterality, severity, location, size, hedging) and
:class:`Study` (one generated study), the shared anatomical vocabulary (lobes, severities, ribs)
and the clinical scenario draw (normal, heart failure, pneumonia, ... with prevalence tuned as in
the paper's appendix F strata). See :mod:`sdrlib.data.synthcxr` for the whole generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

__all__ = ["Finding", "Study", "KINDS", "DEVICES", "P_NORMAL", "Labels", "Sentence", "sample_findings"]

Labels = dict[str, int]
Sentence = tuple[str, Labels]


@dataclass(frozen=True)
class Finding:
    """One abnormality of a study (``kind`` in ``KINDS``); unused attributes are None."""

    kind: str
    side: str | None = None  # "right" | "left" | "bilateral"
    severity: str | None = None  # mild/moderate/severe or small/moderate/large
    location: str | None = None  # lobe or base
    size_cm: float | None = None
    hedged: bool = False  # the report expresses it with uncertainty (label -1)
    detail: str | None = None  # e.g. "acute" / "healed" for fractures, "mass" for large lesions


KINDS = ("cardiomegaly", "mediastinum", "edema", "effusion", "consolidation", "pneumonia",
         "atelectasis", "opacity", "nodule", "pneumothorax", "fracture", "pleural_other")
DEVICES = ("ett", "enteric", "cvc", "pacer", "chest_tube")


@dataclass
class Study:
    """One generated study: ids, texts, labels (CheXpert convention) and the image."""

    study_id: str
    split: str
    findings: str
    impression: str
    labels: Labels
    labels_findings: Labels
    labels_impression: Labels
    truth: list[Finding]
    devices: list[str]
    image: np.ndarray = field(repr=False)  # (size, size) uint8


# --------------------------------------------------------------------------- vocabulary
_LOBES = {  # name -> (x, y) in image coordinates (image left = patient right), side
    "right upper lobe": (-0.40, -0.36, "right"),
    "right middle lobe": (-0.24, 0.10, "right"),
    "right lower lobe": (-0.42, 0.26, "right"),
    "left upper lobe": (0.40, -0.32, "left"),
    "lingula": (0.30, 0.10, "left"),
    "left lower lobe": (0.44, 0.28, "left"),
}
_SEV = ("mild", "moderate", "severe")
_SIZE = ("small", "moderate", "large")
_ADV = {"mild": "mildly", "moderate": "moderately", "severe": "severely"}
_RIBS = ("4th", "5th", "6th", "7th", "8th", "9th")


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _adj(lobe: str) -> str:
    """Lobe name used as an adjective ("lingula" -> "lingular")."""
    return "lingular" if lobe == "lingula" else lobe


def _pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


# --------------------------------------------------------------------------- 1. findings
_SCENARIOS = {  # weight among abnormal studies
    "chf": 0.15, "pneumonia": 0.14, "atelectasis": 0.11, "effusion": 0.10, "cardiomegaly": 0.10,
    "nodule": 0.08, "pneumothorax": 0.07, "opacity": 0.07, "fracture": 0.05, "icu": 0.05,
    "pleural_other": 0.04, "mediastinum": 0.04,
}
P_NORMAL = 0.48


def _side(rng: np.random.Generator, p_bilateral: float = 0.0) -> str:
    if rng.random() < p_bilateral:
        return "bilateral"
    return "right" if rng.random() < 0.55 else "left"


def _lobe(rng: np.random.Generator, lower_bias: float = 0.6) -> str:
    if rng.random() < lower_bias:
        return _pick(rng, ["right lower lobe", "left lower lobe"])
    return _pick(rng, list(_LOBES))


def _make(kind: str, rng: np.random.Generator) -> Finding:
    """One finding of ``kind`` with random attributes."""
    if kind == "cardiomegaly":
        return Finding(kind, severity=str(rng.choice(_SEV, p=[0.5, 0.35, 0.15])))
    if kind == "mediastinum":
        return Finding(kind)
    if kind == "edema":
        return Finding(kind, side="bilateral", severity=str(rng.choice(_SEV, p=[0.45, 0.4, 0.15])),
                       hedged=bool(rng.random() < 0.12))
    if kind == "effusion":
        size = str(rng.choice(_SIZE, p=[0.55, 0.33, 0.12]))
        return Finding(kind, side=_side(rng, 0.3), severity=size,
                       hedged=bool(size == "small" and rng.random() < 0.2))
    if kind == "consolidation":
        return Finding(kind, location=_lobe(rng))
    if kind == "atelectasis":
        loc = str(rng.choice(["right base", "left base", "bibasilar"], p=[0.3, 0.35, 0.35]))
        return Finding(kind, location=loc, side={"right base": "right", "left base": "left"}.get(loc, "bilateral"),
                       detail=_pick(rng, ["linear", "plate-like", "subsegmental", "mild"]),
                       hedged=bool(rng.random() < 0.15 and loc != "bibasilar"))
    if kind == "opacity":
        return Finding(kind, location=_lobe(rng, 0.5))
    if kind == "nodule":
        mass = rng.random() < 0.25
        size = float(rng.choice([3.2, 3.8, 4.5, 5.1])) if mass else float(rng.choice([0.6, 0.8, 1.1, 1.4, 1.8, 2.2]))
        return Finding(kind, location=_pick(rng, list(_LOBES)), size_cm=size, detail="mass" if mass else "nodule")
    if kind == "pneumothorax":
        size = str(rng.choice(_SIZE, p=[0.6, 0.28, 0.12]))
        return Finding(kind, side=_side(rng), severity=size, hedged=bool(size == "small" and rng.random() < 0.2))
    if kind == "fracture":
        return Finding(kind, side=_side(rng), location=_pick(rng, _RIBS),
                       detail="acute" if rng.random() < 0.6 else "healed")
    if kind == "pleural_other":
        return Finding(kind, side=_side(rng, 0.2), detail=_pick(rng, ["apical", "lateral"]))
    raise ValueError(f"unknown finding kind {kind!r}; expected one of {KINDS}")


def sample_findings(rng: np.random.Generator) -> tuple[list[Finding], list[str], str]:
    """Draw the findings, support devices and scenario name of one study.

    Example: ``sample_findings(np.random.default_rng(0))`` -> ``([Finding(...)], ["ett"], "icu")``.
    """
    findings: list[Finding] = []
    devices: list[str] = []
    if rng.random() < P_NORMAL:
        scenario = "normal"
        if rng.random() < 0.05:
            devices.append(_pick(rng, ["pacer", "cvc"]))
        return findings, devices, scenario
    names = list(_SCENARIOS)
    w = np.array([_SCENARIOS[n] for n in names])
    scenario = str(rng.choice(names, p=w / w.sum()))
    add = findings.append
    if scenario == "chf":
        add(_make("cardiomegaly", rng))
        add(_make("edema", rng))
        if rng.random() < 0.55:
            f = _make("effusion", rng)
            add(Finding("effusion", side="bilateral" if rng.random() < 0.6 else f.side,
                        severity=f.severity, hedged=f.hedged))
        if rng.random() < 0.25:
            add(_make("atelectasis", rng))
        if rng.random() < 0.3:
            devices.append("pacer")
    elif scenario == "pneumonia":
        cons = _make("consolidation", rng)
        add(cons)
        side = _LOBES[cons.location or "right lower lobe"][2]
        add(Finding("pneumonia", location=cons.location, side=side, hedged=bool(rng.random() < 0.5)))
        if rng.random() < 0.25:
            add(Finding("effusion", side=side, severity="small"))
    elif scenario == "atelectasis":
        add(_make("atelectasis", rng))
        if rng.random() < 0.3:
            add(Finding("effusion", side=_side(rng, 0.4), severity="small"))
    elif scenario == "effusion":
        f = _make("effusion", rng)
        add(f)
        if f.severity != "small" and rng.random() < 0.5:
            side = "right" if f.side == "right" else "left" if f.side == "left" else _side(rng)
            add(Finding("atelectasis", location=f"{side} base", side=side, detail="compressive"))
    elif scenario == "pneumothorax":
        f = _make("pneumothorax", rng)
        add(f)
        if rng.random() < 0.35:
            add(Finding("fracture", side=f.side, location=_pick(rng, _RIBS), detail="acute"))
        if f.severity != "small" and rng.random() < 0.5:
            devices.append("chest_tube")
    elif scenario == "icu":
        devices.extend(["ett", "enteric"])
        if rng.random() < 0.7:
            devices.append("cvc")
        for kind, p in (("atelectasis", 0.6), ("edema", 0.35), ("effusion", 0.4)):
            if rng.random() < p:
                add(_make(kind, rng))
    else:  # single-finding scenarios
        add(_make(scenario, rng))
        if scenario == "cardiomegaly" and rng.random() < 0.15:
            add(_make("mediastinum", rng))
    # incidental extra finding
    if rng.random() < 0.12:
        extra = str(rng.choice(["atelectasis", "nodule", "pleural_other", "fracture", "cardiomegaly"]))
        if all(f.kind != extra for f in findings):
            f = _make(extra, rng)
            if extra == "fracture":
                f = Finding("fracture", side=f.side, location=f.location, detail="healed")
            add(f)
    if scenario not in ("icu",) and rng.random() < 0.08:
        devices.append(_pick(rng, ["cvc", "pacer", "enteric"]))
    devices = sorted(set(devices), key=DEVICES.index)
    return findings, devices, scenario
