"""SynthCXR: a deterministic synthetic chest X-ray dataset (image, report, CheXpert labels).

Each study is drawn from a seeded generator in three steps:

1. **Findings** (``sample_findings``): a clinical scenario (normal, heart failure,
   pneumonia, atelectasis, effusion, cardiomegaly, nodule/mass, pneumothorax, rib
   fracture, nonspecific opacity, pleural thickening, widened mediastinum, ICU
   patient with lines and tubes) with laterality, severity and location, plus an
   occasional incidental finding. Prevalence is tuned so that about half of the
   studies are normal and the rest split into single- and multi-finding studies,
   like the strata of the paper's appendix F.
2. **Report** (``write_report``): Findings of 3-7 sentences (positive findings with
   several paraphrases each, pertinent negatives, optional neutral remarks) in
   random order, and an Impression of 1-3 sentences that summarises the main
   findings or says there is no acute process. Some findings are hedged ("may
   represent", "cannot be excluded"), which makes their label uncertain (-1).
   Every sentence template carries the CheXpert labels it expresses, so the study
   labels are exactly what a perfect CheXpert labeler would read from the report.
3. **Image** (``render_image``): a grayscale radiograph-like picture whose pixels
   carry the findings (heart width for cardiomegaly, fluid level blunting the
   costophrenic angle for effusion, a dense blob for consolidation, a band for
   atelectasis, perihilar haze for edema, a round density for a nodule, a dark
   rim without lung markings and a pleural line for pneumothorax, a broken rib,
   bright lines for tubes and a box for a pacemaker), under patient-level nuisance:
   rotation, scale, shift, body habitus, inspiration, exposure (gamma, contrast)
   and noise.

Same seed -> same bytes: every study has its own ``numpy`` generator seeded from
``(seed, split, index)``, so the first studies of a larger dataset equal those of
a smaller one, and PNG and Parquet writers get identical inputs.

Left out: lateral views, prior studies, comparison sections, anatomy beyond a
cartoon of the thorax; the images are meant to be learnable by a tiny vision model,
not to look like real radiographs.

Example::

    study = generate_study(seed=0, split="train", index=0, image_size=96)
    study.findings, study.impression, study.labels, study.image.shape  # (96, 96) uint8
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..metrics.labeler import CHEXPERT_14, merge_labels

__all__ = [
    "GENERATOR_VERSION",
    "SPLITS",
    "Finding",
    "Study",
    "sample_findings",
    "write_report",
    "render_image",
    "generate_study",
    "generate_dataset",
    "dataset_dir",
    "ensure_dataset",
    "read_manifest",
]

GENERATOR_VERSION = "1.2.0"
SPLITS = ("train", "val", "test")
_SPLIT_CODE = {"train": 0, "val": 1, "test": 2}
_OVERSAMPLE = 1  # drawn at this multiple of the output size, then box-downsampled (2: ~2.5x slower)
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


# --------------------------------------------------------------------------- 2. report
def _side_word(side: str | None) -> str:
    return side or "right"


def _positive_sentences(f: Finding, rng: np.random.Generator) -> list[Sentence]:
    """Findings-section sentence(s) for one finding, with the labels each expresses."""
    p = lambda opts: _pick(rng, opts)  # noqa: E731
    k = f.kind
    if k == "cardiomegaly":
        s, a = f.severity or "mild", _ADV[f.severity or "mild"]
        return [(p([f"The heart is {a} enlarged.", f"{_cap(s)} cardiomegaly.", f"There is {s} cardiomegaly.",
                    f"{_cap(s)} enlargement of the cardiac silhouette.", f"Heart size is {a} enlarged.",
                    f"The cardiac silhouette is {a} enlarged."]), {"Cardiomegaly": 1})]
    if k == "mediastinum":
        return [(p(["The mediastinum is widened.", "Widening of the superior mediastinum.",
                    "The cardiomediastinal silhouette is enlarged.", "Mediastinal widening is noted."]),
                 {"Enlarged Cardiomediastinum": 1})]
    if k == "edema":
        s = f.severity or "mild"
        if f.hedged:
            return [(p([f"Possible {s} interstitial edema.", f"Findings may represent {s} pulmonary edema."]),
                     {"Edema": -1})]
        return [(p([f"{_cap(s)} pulmonary edema.", f"There is {s} interstitial pulmonary edema.",
                    f"Findings are consistent with {s} pulmonary edema.",
                    f"Pulmonary vascular congestion with {s} interstitial edema.",
                    f"{_cap(s)} pulmonary vascular congestion and interstitial edema."]), {"Edema": 1})]
    if k == "effusion":
        size, side = f.severity or "small", _side_word(f.side)
        if f.hedged:
            if side == "bilateral":
                return [("Possible small bilateral pleural effusions.", {"Pleural Effusion": -1})]
            return [(p([f"Possible small {side} pleural effusion.",
                        f"A small {side} pleural effusion cannot be excluded."]), {"Pleural Effusion": -1})]
        if side == "bilateral":
            return [(p([f"{_cap(size)} bilateral pleural effusions.", f"There are {size} bilateral pleural effusions.",
                        f"{_cap(size)} bilateral pleural effusions are present."]), {"Pleural Effusion": 1})]
        opts = [f"{_cap(size)} {side} pleural effusion.", f"There is a {size} {side} pleural effusion.",
                f"{_cap(size)} {side} pleural effusion is present."]
        if size == "small":
            opts.append(f"Blunting of the {side} costophrenic angle, consistent with a small pleural effusion.")
        return [(p(opts), {"Pleural Effusion": 1})]
    if k == "consolidation":
        lobe = f.location or "right lower lobe"
        return [(p([f"Focal consolidation in the {lobe}.", f"There is consolidation in the {lobe}.",
                    f"{_cap(_adj(lobe))} consolidation is present.", f"Dense consolidation within the {lobe}."]),
                 {"Consolidation": 1})]
    if k == "pneumonia":
        return []  # expressed in the Impression
    if k == "atelectasis":
        side, d = _side_word(f.side), f.detail or "mild"
        if f.detail == "compressive":
            return [(p([f"Adjacent compressive atelectasis at the {side} base.",
                        f"Compressive atelectasis of the {side} lower lobe."]), {"Atelectasis": 1})]
        if f.hedged:
            return [(p([f"{_cap(side)} basilar opacity, likely atelectasis.",
                        f"Opacity at the {side} base may represent atelectasis."]),
                     {"Lung Opacity": 1, "Atelectasis": -1})]
        if f.location == "bibasilar":
            return [(p([f"{_cap(d)} bibasilar atelectasis.", f"There is {d} bibasilar atelectasis.",
                        "Bibasilar atelectasis is noted."]), {"Atelectasis": 1})]
        return [(p([f"{_cap(d)} atelectasis at the {side} lung base.", f"{_cap(d)} atelectasis in the {side} lower lobe.",
                    f"There is {d} atelectasis at the {side} base."]), {"Atelectasis": 1})]
    if k == "opacity":
        lobe = f.location or "right lower lobe"
        return [(p([f"Patchy opacity in the {lobe}.", f"There is a hazy opacity in the {lobe}.",
                    f"Ill-defined opacity in the {lobe}."]), {"Lung Opacity": 1})]
    if k == "nodule":
        lobe, x = f.location or "right upper lobe", f"{f.size_cm:.1f}"
        if f.detail == "mass":
            return [(p([f"There is a {x} cm mass in the {lobe}.", f"A {x} cm mass projects over the {lobe}.",
                        f"{_cap(_adj(lobe))} mass measuring {x} cm."]), {"Lung Lesion": 1})]
        return [(p([f"A {x} cm nodule is seen in the {lobe}.", f"{x} cm nodule in the {lobe}.",
                    f"There is a {x} cm pulmonary nodule in the {lobe}.",
                    f"{_cap(_adj(lobe))} pulmonary nodule measuring {x} cm."]), {"Lung Lesion": 1})]
    if k == "pneumothorax":
        size, side = f.severity or "small", _side_word(f.side)
        if f.hedged:
            return [(p([f"Possible tiny {side} apical pneumothorax.",
                        f"A tiny {side} apical pneumothorax cannot be excluded."]), {"Pneumothorax": -1})]
        opts = [f"There is a {size} {side} pneumothorax.", f"A {size} {side} pneumothorax is present.",
                f"{_cap(size)} {side} pneumothorax with a visible pleural line."]
        if size == "small":
            opts.append(f"Small {side} apical pneumothorax.")
        return [(p(opts), {"Pneumothorax": 1})]
    if k == "fracture":
        side, rib = _side_word(f.side), f.location or "6th"
        if f.detail == "healed":
            return [(p([f"Healed {side} rib fractures.", f"Old healed fracture of the {side} {rib} rib."]),
                     {"Fracture": 1})]
        return [(p([f"Acute fracture of the {side} {rib} rib.", f"Nondisplaced fracture of the {side} {rib} rib.",
                    f"{_cap(side)} lateral {rib} rib fracture."]), {"Fracture": 1})]
    if k == "pleural_other":
        side = _side_word(f.side)
        if f.detail == "apical":
            return [(p([f"{_cap(side)} apical pleural thickening.", f"Mild {side} apical pleural thickening."]),
                     {"Pleural Other": 1})]
        return [(p([f"Pleural thickening along the {side} lateral chest wall.", f"Mild {side} pleural thickening."]),
                 {"Pleural Other": 1})]
    raise ValueError(f"unknown finding kind {k!r}")


_DEVICE_SENT = {
    "ett": ["The endotracheal tube terminates {n} cm above the carina.", "The endotracheal tube is in standard position.",
            "An endotracheal tube is present with the tip {n} cm above the carina."],
    "enteric": ["The enteric tube courses below the diaphragm with the tip in the stomach.",
                "The nasogastric tube tip projects over the stomach.", "An enteric tube extends into the stomach."],
    "cvc": ["The right internal jugular central venous catheter terminates in the lower superior vena cava.",
            "The right internal jugular catheter tip is at the cavoatrial junction.",
            "A right-sided central venous catheter ends in the superior vena cava."],
    "pacer": ["Left-sided pacemaker with leads in the right atrium and right ventricle.",
              "Left chest wall pacemaker with leads in standard position.",
              "Dual-chamber pacemaker leads are in expected position."],
    "chest_tube": ["{Side} chest tube in place.", "A {side} chest tube is present with the tip at the apex."],
}

# Pertinent negatives: (text options, labels, kinds that forbid it)
_NEGATIVES: list[tuple[list[str], Labels, set[str]]] = [
    (["No pneumothorax.", "There is no pneumothorax.", "No evidence of pneumothorax."],
     {"Pneumothorax": 0}, {"pneumothorax"}),
    (["No pleural effusion.", "No pleural effusions.", "There is no pleural effusion.",
      "The costophrenic angles are sharp."], {"Pleural Effusion": 0}, {"effusion"}),
    (["No pleural effusion or pneumothorax.", "There is no pleural effusion or pneumothorax."],
     {"Pleural Effusion": 0, "Pneumothorax": 0}, {"effusion", "pneumothorax"}),
    (["No focal consolidation.", "There is no focal airspace consolidation.", "No focal consolidation is seen."],
     {"Consolidation": 0}, {"consolidation", "pneumonia", "opacity"}),
    (["No focal consolidation, pleural effusion, or pneumothorax."],
     {"Consolidation": 0, "Pleural Effusion": 0, "Pneumothorax": 0},
     {"consolidation", "pneumonia", "opacity", "effusion", "pneumothorax"}),
    (["Heart size is normal.", "The heart is normal in size.", "Normal heart size.",
      "The cardiac silhouette is normal in size."], {"Cardiomegaly": 0}, {"cardiomegaly"}),
    # "cardiomediastinal" covers the heart too: never written beside an enlarged heart
    (["The cardiomediastinal silhouette is within normal limits."], {"Enlarged Cardiomediastinum": 0},
     {"mediastinum", "cardiomegaly"}),
    (["Mediastinal contours are unremarkable.", "The mediastinal contours are normal."],
     {"Enlarged Cardiomediastinum": 0}, {"mediastinum"}),
    (["Normal heart size and mediastinal contours.", "Heart size and mediastinal contours are normal."],
     {"Cardiomegaly": 0, "Enlarged Cardiomediastinum": 0}, {"cardiomegaly", "mediastinum"}),
    (["The lungs are clear.", "The lungs are well expanded and clear.", "Lungs are clear bilaterally."],
     {}, {"consolidation", "pneumonia", "opacity", "atelectasis", "edema", "nodule", "pneumothorax"}),
    (["No pulmonary edema.", "There is no pulmonary vascular congestion.", "No evidence of pulmonary edema."],
     {"Edema": 0}, {"edema"}),
    (["No acute osseous abnormality.", "The visualized osseous structures are unremarkable."], {}, {"fracture"}),
    (["No displaced rib fracture."], {"Fracture": 0}, {"fracture"}),
    (["No suspicious pulmonary nodules.", "No focal pulmonary nodule or mass."], {"Lung Lesion": 0}, {"nodule"}),
]
_NEUTRAL = ["Mild degenerative changes of the thoracic spine.", "The aorta is mildly tortuous."]

_IMPRESSION_NORMAL = ["No acute cardiopulmonary process.", "No acute cardiopulmonary abnormality.",
                      "No acute intrathoracic process.", "Normal chest radiograph."]


def _impression_sentences(findings: list[Finding], devices: list[str], rng: np.random.Generator) -> list[Sentence]:
    p = lambda opts: _pick(rng, opts)  # noqa: E731
    by = {f.kind: f for f in findings}
    out: list[Sentence] = []
    if "pneumothorax" in by:
        f = by["pneumothorax"]
        if f.hedged:
            out.append((f"Possible tiny {_side_word(f.side)} apical pneumothorax.", {"Pneumothorax": -1}))
        else:
            out.append((f"{_cap(f.severity or 'small')} {_side_word(f.side)} pneumothorax.", {"Pneumothorax": 1}))
    if "pneumonia" in by:
        f, lobe = by["pneumonia"], by["pneumonia"].location or "right lower lobe"
        if f.hedged:
            out.append(p([(f"{_cap(_adj(lobe))} consolidation, concerning for pneumonia.", {"Consolidation": 1, "Pneumonia": -1}),
                          ("Findings may represent pneumonia in the appropriate clinical setting.", {"Pneumonia": -1})]))
        else:
            out.append(p([(f"{_cap(_adj(lobe))} pneumonia.", {"Pneumonia": 1}),
                          (f"{_cap(_adj(lobe))} consolidation consistent with pneumonia.", {"Consolidation": 1, "Pneumonia": 1})]))
    elif "consolidation" in by:
        out.append((f"{_cap(_adj(by['consolidation'].location or 'right lower lobe'))} consolidation.",
                    {"Consolidation": 1}))
    if "cardiomegaly" in by and "edema" in by and not by["edema"].hedged:
        s = by["edema"].severity or "mild"
        out.append(p([(f"Cardiomegaly with {s} pulmonary edema.", {"Cardiomegaly": 1, "Edema": 1}),
                      (f"{_cap(s)} congestive heart failure.", {"Edema": 1})]))
    else:
        if "edema" in by:
            f = by["edema"]
            out.append((f"Possible {f.severity} pulmonary edema.", {"Edema": -1}) if f.hedged
                       else (f"{_cap(f.severity or 'mild')} pulmonary edema.", {"Edema": 1}))
        if "cardiomegaly" in by:
            out.append((p([f"{_cap(by['cardiomegaly'].severity or 'mild')} cardiomegaly.", "Cardiomegaly."]),
                        {"Cardiomegaly": 1}))
    if "effusion" in by and len(out) < 3:
        f = by["effusion"]
        side = _side_word(f.side)
        if f.hedged:
            out.append(("Possible small pleural effusion.", {"Pleural Effusion": -1}))
        elif side == "bilateral":
            out.append((f"{_cap(f.severity or 'small')} bilateral pleural effusions.", {"Pleural Effusion": 1}))
        else:
            out.append((f"{_cap(f.severity or 'small')} {side} pleural effusion.", {"Pleural Effusion": 1}))
    if "nodule" in by and len(out) < 3:
        f = by["nodule"]
        lobe = f.location or "right upper lobe"
        if f.detail == "mass":
            out.append((f"{_cap(_adj(lobe))} mass, concerning for malignancy.", {"Lung Lesion": 1}))
        else:
            out.append((f"{f.size_cm:.1f} cm {_adj(lobe)} nodule, recommend chest CT for further evaluation.",
                        {"Lung Lesion": 1}))
    if "opacity" in by and len(out) < 3:
        lobe = by["opacity"].location or "right lower lobe"
        out.append(p([(f"{_cap(_adj(lobe))} opacity, which may represent atelectasis or early pneumonia.",
                       {"Lung Opacity": 1, "Atelectasis": -1, "Pneumonia": -1}),
                      (f"Patchy {_adj(lobe)} opacity; infection cannot be excluded.", {"Lung Opacity": 1, "Pneumonia": -1}),
                      (f"Nonspecific {_adj(lobe)} opacity.", {"Lung Opacity": 1})]))
    if "mediastinum" in by and len(out) < 3:
        out.append((p(["Widened mediastinum.", "Mediastinal widening, further evaluation with chest CT is recommended."]),
                    {"Enlarged Cardiomediastinum": 1}))
    if "fracture" in by and by["fracture"].detail == "acute" and len(out) < 3:
        f = by["fracture"]
        out.append((f"Acute {_side_word(f.side)} {f.location} rib fracture.", {"Fracture": 1}))
    if "atelectasis" in by and len(out) < 3 and (not out or rng.random() < 0.5):
        f = by["atelectasis"]
        if f.hedged:
            out.append((f"{_cap(_side_word(f.side))} basilar opacity, likely atelectasis.",
                        {"Lung Opacity": 1, "Atelectasis": -1}))
        else:
            out.append(("Bibasilar atelectasis." if f.location == "bibasilar"
                        else f"{_cap(_side_word(f.side))} basilar atelectasis.", {"Atelectasis": 1}))
    if "pleural_other" in by and not out and rng.random() < 0.5:
        out.append((f"{_cap(_side_word(by['pleural_other'].side))} pleural thickening.", {"Pleural Other": 1}))
    if devices and len(out) < 3 and rng.random() < 0.5:
        out.append((p(["Support devices in standard position.", "Lines and tubes in appropriate position."]),
                    {"Support Devices": 1}))
    if not out or all(lbl.get("Support Devices") for _, lbl in out):
        out.insert(0, (p(_IMPRESSION_NORMAL), {}))
        if not findings and rng.random() < 0.15:
            out.append(("No evidence of pneumonia.", {"Pneumonia": 0}))
    return out[:3]


def write_report(findings: list[Finding], devices: list[str], rng: np.random.Generator
                 ) -> tuple[str, str, Labels, Labels]:
    """Findings and Impression texts with their CheXpert labels (each with "No Finding" set).

    Example: ``write_report([], [], rng)`` -> ``("The lungs are clear. ...", "No acute ...", {...}, {...})``.
    """
    positives: list[Sentence] = []
    for f in findings:
        positives.extend(_positive_sentences(f, rng))
    for d in devices:
        t = _pick(rng, _DEVICE_SENT[d])
        side = next((f.side for f in findings if f.kind == "pneumothorax"), "right") or "right"
        positives.append((t.format(n=int(rng.integers(3, 7)), side=side, Side=_cap(side)), {"Support Devices": 1}))
    kinds = {f.kind for f in findings}
    target = int(rng.integers(3, 8))
    pool = [i for i, (_, _, forbid) in enumerate(_NEGATIVES) if not (forbid & kinds)]
    order = rng.permutation(len(pool))
    negatives: list[Sentence] = []
    used: set[str] = set()
    lungs_clear_used = False
    for j in order:
        if len(positives) + len(negatives) >= target:
            break
        texts, labels, _ = _NEGATIVES[pool[int(j)]]
        if set(labels) & used:
            continue
        if not labels:  # "lungs clear" / osseous: one of each group at most
            if texts[0].startswith("The lungs") and lungs_clear_used:
                continue
            lungs_clear_used = lungs_clear_used or texts[0].startswith("The lungs")
        used |= set(labels)
        negatives.append((_pick(rng, texts), dict(labels)))
    sentences = positives + negatives
    if len(sentences) < 7 and rng.random() < 0.1:
        sentences.append((_pick(rng, _NEUTRAL), {}))
    perm = rng.permutation(len(sentences))
    sentences = [sentences[int(i)] for i in perm]
    impression = _impression_sentences(findings, devices, rng)
    ftext = " ".join(t for t, _ in sentences)
    itext = " ".join(t for t, _ in impression)
    lf = merge_labels(*[lbl for _, lbl in sentences]) if sentences else merge_labels()
    li = merge_labels(*[lbl for _, lbl in impression])
    return ftext, itext, lf, li


# --------------------------------------------------------------------------- 3. image
def _sig(x: np.ndarray, w: float) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(x / w))


def _texture(rng: np.random.Generator, n: int, res: int) -> np.ndarray:
    """Smooth noise in [-1, 1]-ish: an n x n Gaussian grid upsampled bicubically to res x res."""
    from PIL import Image

    g = rng.standard_normal((n, n)).astype(np.float32)
    up = np.asarray(Image.fromarray(g, mode="F").resize((res, res), Image.BICUBIC), dtype=np.float32)
    return up / (np.abs(up).max() + 1e-6)


def _polyline(x: np.ndarray, y: np.ndarray, pts: Sequence[tuple[float, float]], width: float) -> np.ndarray:
    """Soft mask of a polyline of ``width`` (anatomical units) over grid coordinates x, y.

    The width is floored at 0.8 pixel so that thin lines survive small images.
    """
    width = max(width, 0.8 * 2.0 / x.shape[0])
    d = np.full(x.shape, np.inf, dtype=np.float32)
    for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:]):
        vx, vy = x1 - x0, y1 - y0
        L2 = vx * vx + vy * vy
        t = np.clip(((x - x0) * vx + (y - y0) * vy) / L2, 0.0, 1.0)
        d = np.minimum(d, np.hypot(x - x0 - t * vx, y - y0 - t * vy))
    return np.exp(-(d / width) ** 2)


def _sides(f: Finding) -> list[str]:
    """Sides an image finding is drawn on."""
    return ["right", "left"] if f.side == "bilateral" else [f.side or "right"]


def _paint(img: np.ndarray, mask: np.ndarray, value: float) -> np.ndarray:
    return img * (1.0 - mask) + value * mask


def render_image(findings: Sequence[Finding], devices: Sequence[str], rng: np.random.Generator,
                 size: int = 96) -> np.ndarray:
    """Render one frontal radiograph-like image.

    Parameters
    ----------
    findings, devices : what the image must show (see module docstring).
    rng : numpy Generator; all nuisance and texture randomness comes from it.
    size : int, side in pixels (drawn at ``_OVERSAMPLE`` x and box-downsampled).

    Returns
    -------
    numpy.ndarray, shape (size, size), uint8. Image left is the patient's right.
    """
    from PIL import Image

    if not isinstance(size, (int, np.integer)) or size < 16:
        raise ValueError(f"image size must be an int >= 16, got {size!r}")
    R = _OVERSAMPLE * int(size)
    # -- patient-level nuisance ---------------------------------------------------------
    rot = math.radians(float(np.clip(rng.normal(0, 3.0), -7, 7)))
    scale = float(rng.uniform(0.90, 1.07))
    dx, dy = (float(v) for v in rng.uniform(-0.04, 0.04, size=2))
    bw = float(rng.uniform(0.90, 1.08))  # body habitus (thorax width)
    insp = float(rng.uniform(-0.05, 0.05))  # inspiration: diaphragm height
    gamma = float(rng.uniform(0.8, 1.25))
    contrast = float(rng.uniform(0.85, 1.15))
    bright = float(rng.uniform(-0.05, 0.05))
    # pixel noise, scaled so that the final (downsampled) image has std 0.008-0.022
    noise = float(rng.uniform(0.008, 0.022)) * _OVERSAMPLE
    lung_dark = float(rng.uniform(0.10, 0.18))
    tex_fine = _texture(rng, 22, R)
    tex_coarse = _texture(rng, 7, R)

    lin = (np.arange(R, dtype=np.float32) + 0.5) / R * 2.0 - 1.0
    u, v = np.meshgrid(lin, lin)
    c, s = math.cos(rot), math.sin(rot)
    x = (c * (u - dx) + s * (v - dy)) / scale
    y = (-s * (u - dx) + c * (v - dy)) / scale

    img = np.full((R, R), 0.04, dtype=np.float32)
    body = _sig(1.0 - ((x / (0.95 * bw)) ** 2 + ((y - 0.15) / 1.05) ** 2), 0.03)
    neck = _sig(0.2 - np.abs(x), 0.02) * _sig(-0.6 - y, 0.02)
    img = _paint(img, np.maximum(body, neck), 0.42)

    # lungs: ellipses cut by diaphragm domes
    lungs = {}
    for side, sgn in (("right", -1.0), ("left", 1.0)):
        cx, cy, rx, ry = sgn * 0.36 * bw, -0.08, 0.27 * bw, 0.62
        top = (0.36 if side == "right" else 0.41) + insp
        e = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2
        dome = top + 0.35 * ((x - cx) / rx) ** 2
        m_ell = _sig(1.0 - e, 0.05)
        m = m_ell * _sig(dome - y, 0.012)
        lungs[side] = dict(cx=cx, cy=cy, rx=rx, ry=ry, top=top, e=e, m=m, m_ell=m_ell, sgn=sgn)
    lung = np.clip(lungs["right"]["m"] + lungs["left"]["m"], 0, 1)
    img = _paint(img, lung, lung_dark)
    # lung markings and hila
    img += lung * (0.045 * tex_fine + 0.02)
    for side, L in lungs.items():
        img += lung * 0.12 * np.exp(-(((x - L["sgn"] * 0.17) / 0.09) ** 2 + ((y + 0.02) / 0.12) ** 2))

    by = {f.kind: f for f in findings}
    # mediastinum, trachea, spine
    mw = 0.21 if "mediastinum" in by else 0.115
    med = _sig(mw - np.abs(x - 0.01), 0.012) * _sig(0.25 - y, 0.02) * _sig(y + 0.98, 0.02)
    img = _paint(img, med, 0.62)
    trachea = _sig(0.032 - np.abs(x), 0.006) * _sig(-0.3 - y, 0.02)
    img = _paint(img, trachea * med, 0.3)
    img += 0.07 * _sig(0.055 - np.abs(x), 0.01) * body

    # heart: cardiothoracic ratio carries cardiomegaly
    thorax_w = 2 * (0.36 + 0.27) * bw
    # cardiothoracic ratio: normal 0.38-0.50; mild cardiomegaly overlaps the upper normal range
    ctr = float(rng.uniform(0.38, 0.50))
    if "cardiomegaly" in by:
        lo, hi = {"mild": (0.50, 0.56), "moderate": (0.56, 0.62), "severe": (0.62, 0.68)}[
            by["cardiomegaly"].severity or "mild"]
        ctr = float(rng.uniform(lo, hi))
    hw = ctr * thorax_w / 2
    hcx, hcy, hry = 0.35 * hw - 0.04, 0.24 + insp, 0.25 + 0.3 * (ctr - 0.44)
    heart = _sig(1.0 - ((x - hcx) / hw) ** 2 - ((y - hcy) / hry) ** 2, 0.05)
    img = _paint(img, heart, 0.66)

    # ribs and clavicles (fracture: a gap and a step in one rib). All 8 ribs of a side in one
    # pass: the vertical distance to the nearest rib centre line y_k = -0.66 + 0.135 k + 0.28 (|x| - 0.1)^2.
    frac = by.get("fracture")
    ax = np.abs(x)
    t = (y + 0.66 - 0.28 * (ax - 0.1) ** 2) / 0.135
    k_near = np.rint(t)
    rw = max(0.014, 0.8 * 2.0 / R)  # rib half-width, at least 0.8 px
    ribs = np.exp(-(((t - k_near) * 0.135) / rw) ** 2) * ((k_near >= 0) & (k_near <= 7))
    ribs = ribs * _sig(ax - 0.08, 0.02) * _sig(0.72 * bw - ax, 0.02)
    if frac is not None:
        k = 2 + _RIBS.index(frac.location or "6th") % 5
        for side in _sides(frac):
            sgn = lungs[side]["sgn"]
            on_side = (sgn * x > 0) * _sig(ax - 0.08, 0.02) * _sig(0.72 * bw - ax, 0.02)
            y_rib = -0.66 + 0.135 * k + 0.28 * (ax - 0.1) ** 2
            rib = np.exp(-((y - y_rib) / rw) ** 2) * on_side
            xf = sgn * 0.5 * bw
            gap = 1.0 - np.exp(-((x - xf) / (1.3 * rw)) ** 2)
            lateral = _sig(sgn * (x - xf), 0.005)
            stepped = np.exp(-((y - y_rib - 2 * rw) / rw) ** 2) * on_side
            new = (rib * (1 - lateral) + stepped * lateral) * gap
            if frac.detail == "healed":
                new = new + 0.8 * np.exp(-(((x - xf) / 0.03) ** 2 + ((y - y_rib - 0.014) / 0.03) ** 2))
            ribs = ribs - rib + new
    img += 0.085 * ribs * body
    for sgn in (-1.0, 1.0):
        clav = _polyline(x, y, [(sgn * 0.08, -0.70), (sgn * 0.62 * bw, -0.82)], 0.022)
        img += 0.22 * clav * body

    # -- findings ---------------------------------------------------------------------
    if "edema" in by:
        amp = {"mild": 0.09, "moderate": 0.16, "severe": 0.24}[by["edema"].severity or "mild"]
        for side, L in lungs.items():
            haze = np.exp(-(((x - L["sgn"] * 0.2) / 0.22) ** 2 + ((y - 0.02) / 0.3) ** 2))
            img += amp * haze * L["m"] * (0.8 + 0.3 * tex_coarse)
            if by["edema"].severity != "mild":  # Kerley B lines at the lateral bases
                for j in range(4):
                    yk = L["top"] - 0.1 - 0.05 * j
                    xk = L["cx"] + L["sgn"] * (L["rx"] * 0.92)
                    kl = _polyline(x, y, [(xk - L["sgn"] * 0.07, yk), (xk, yk)], 0.007)
                    img += 0.12 * kl * L["m"]
    for f in findings:
        if f.kind in ("consolidation", "opacity"):
            lx, ly, side = _LOBES[f.location or "right lower lobe"]
            L = lungs[side]
            if f.kind == "consolidation":
                blob = np.exp(-(((x - lx) / 0.12) ** 2 + ((y - ly) / 0.10) ** 2))
                img += 0.34 * blob * L["m"] * (0.85 + 0.25 * tex_fine) * (1.0 - 0.6 * heart)
            else:
                blob = np.exp(-(((x - lx) / 0.15) ** 2 + ((y - ly) / 0.13) ** 2))
                img += 0.18 * blob * L["m"] * np.clip(0.6 + 0.9 * tex_coarse + 0.4 * tex_fine, 0, 1.5)
        elif f.kind == "atelectasis":
            for side in _sides(f):
                L = lungs[side]
                y0 = L["top"] - 0.10
                x0 = L["cx"] + L["sgn"] * 0.03
                t = 0.12 * L["sgn"]
                band = np.exp(-(((x - x0) / 0.15) ** 2 + ((y - y0 - t * (x - x0)) / 0.022) ** 2))
                img += 0.30 * band * L["m_ell"] * (1.0 - heart)
        elif f.kind == "nodule":
            lx, ly, side = _LOBES[f.location or "right upper lobe"]
            r = 0.02 + 0.017 * float(f.size_cm or 1.0)
            disc = _sig(r - np.hypot(x - lx, y - ly), 0.006)
            img = _paint(img, disc * lungs[side]["m"], 0.52)
        elif f.kind == "pleural_other":
            for side in _sides(f):
                L = lungs[side]
                rr = np.sqrt(L["e"])
                band = _sig(rr - 0.86, 0.02) * L["m"]
                where = (_sig(L["cy"] - 0.35 - y, 0.04) if f.detail == "apical"
                         else _sig(L["sgn"] * (x - L["cx"]) - 0.1, 0.03))
                img += 0.2 * band * where
    if "effusion" in by:
        f = by["effusion"]
        h = {"small": 0.10, "moderate": 0.26, "large": 0.46}[f.severity or "small"]
        for side in _sides(f):
            L = lungs[side]
            lat = np.clip(L["sgn"] * (x - L["cx"]) / L["rx"], 0, 1)
            y_top = L["top"] + 0.06 - h - 0.12 * lat
            # fluid fills the lung from the base up, hiding the dome and the costophrenic angle
            fluid = _sig(y - y_top, 0.015) * _sig(1.05 - L["e"], 0.04) * _sig(L["top"] + 0.4 - y, 0.02)
            img = _paint(img, fluid * body * (1.0 - heart), 0.5)
    if "pneumothorax" in by:
        f = by["pneumothorax"]
        d = {"small": 0.14, "moderate": 0.24, "large": 0.36}[f.severity or "small"]
        L = lungs[f.side or "right"]
        rr = np.sqrt(L["e"])
        where = {"small": _sig(L["cy"] - 0.1 - y, 0.05), "moderate": _sig(L["cy"] + 0.25 - y, 0.05),
                 "large": np.ones_like(x)}[f.severity or "small"]
        zone = _sig(rr - (1 - d), 0.01) * L["m"] * where
        img = _paint(img, zone, 0.05)
        line = np.exp(-((rr - (1 - d)) / 0.009) ** 2) * L["m"] * where
        img += 0.3 * line

    # -- devices ------------------------------------------------------------------------
    dev_val = 0.95
    if "ett" in devices:
        img = _paint(img, _polyline(x, y, [(0.0, -1.1), (0.0, -0.40)], 0.011), dev_val)
    if "enteric" in devices:
        img = _paint(img, _polyline(x, y, [(0.03, -1.1), (0.02, -0.3), (0.05, 0.3), (0.25, 0.55), (0.36, 0.6)],
                                    0.009), dev_val)
    if "cvc" in devices:
        img = _paint(img, _polyline(x, y, [(-0.24, -0.98), (-0.13, -0.62), (-0.07, -0.36), (-0.05, -0.14)],
                                    0.009), dev_val)
    if "pacer" in devices:
        box = _sig(0.08 - np.abs(x - 0.52), 0.006) * _sig(0.05 - np.abs(y + 0.64), 0.006)
        img = _paint(img, box, 1.0)
        img = _paint(img, _polyline(x, y, [(0.46, -0.62), (0.2, -0.52), (0.0, -0.28), (-0.06, 0.08), (0.02, 0.36)],
                                    0.008), dev_val)
        img = _paint(img, _polyline(x, y, [(0.46, -0.6), (0.14, -0.44), (-0.08, -0.12)], 0.008), dev_val)
    if "chest_tube" in devices:
        side = by["pneumothorax"].side if "pneumothorax" in by else "right"
        sg = lungs[side or "right"]["sgn"]
        img = _paint(img, _polyline(x, y, [(sg * 0.85, 0.3), (sg * 0.58, 0.05), (sg * 0.38, -0.5)], 0.014), dev_val)

    # -- exposure, noise, downsample -----------------------------------------------------
    img = np.clip(img, 0.0, 1.0) ** gamma
    img = np.clip(img * contrast + bright, 0.0, 1.0)
    img = img + rng.normal(0.0, noise, size=img.shape).astype(np.float32)
    img8 = np.clip(img * 255.0 + 0.5, 0, 255).astype(np.uint8)
    small = Image.fromarray(img8, mode="L").resize((size, size), Image.BOX)
    return np.asarray(small, dtype=np.uint8)


# --------------------------------------------------------------------------- study / dataset
def _study_rng(seed: int, split: str, index: int) -> np.random.Generator:
    if split not in _SPLIT_CODE:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return np.random.default_rng([int(seed), _SPLIT_CODE[split], int(index), 0x5C4])


def generate_study(seed: int, split: str, index: int, image_size: int = 96) -> Study:
    """Generate study ``index`` of ``split`` (deterministic in ``seed, split, index, image_size``)."""
    rng = _study_rng(seed, split, index)
    findings, devices, _ = sample_findings(rng)
    ftext, itext, lf, li = write_report(findings, devices, rng)
    image = render_image(findings, devices, rng, size=image_size)
    return Study(study_id=f"syn-{split}-{index:05d}", split=split, findings=ftext, impression=itext,
                 labels=merge_labels(lf, li), labels_findings=lf, labels_impression=li,
                 truth=findings, devices=devices, image=image)


def _png_bytes(image: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image, mode="L").save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _labels_json(labels: Labels) -> str:
    return json.dumps({k: int(labels[k]) for k in CHEXPERT_14 if k in labels})


def _config_key(seed: int, n: dict[str, int], image_size: int) -> dict[str, Any]:
    return {"generator": "synthcxr", "generator_version": GENERATOR_VERSION, "seed": int(seed),
            "sizes": {s: int(n[s]) for s in SPLITS}, "image_size": int(image_size)}


def generate_dataset(out_dir: str | os.PathLike, *, seed: int, n_train: int, n_val: int, n_test: int,
                     image_size: int = 96) -> dict[str, Any]:
    """Write the dataset to ``out_dir`` and return its manifest.

    Layout: ``<split>.parquet`` (one row per study: study_id, split, image_path relative to
    ``out_dir``, findings, impression, labels / labels_findings / labels_impression as JSON,
    truth as JSON, devices), ``images/<split>/<study_id>.png`` and
    ``manifest.json`` (generator version, seed, sizes, image size, sha256 of every file; no
    timestamps, so the same arguments give byte-identical folders). The folder is built in a
    temporary sibling and moved into place, replacing any previous content.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = {"train": n_train, "val": n_val, "test": n_test}
    for k, v in n.items():
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"n_{k} must be a non-negative int, got {v!r}")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    files: dict[str, str] = {}
    try:
        for split in SPLITS:
            (tmp / "images" / split).mkdir(parents=True, exist_ok=True)
            rows: dict[str, list[Any]] = {k: [] for k in (
                "study_id", "split", "image_path", "findings", "impression", "labels", "labels_findings",
                "labels_impression", "truth", "devices")}
            for i in range(int(n[split])):
                st = generate_study(seed, split, i, image_size)
                rel = f"images/{split}/{st.study_id}.png"
                (tmp / rel).write_bytes(_png_bytes(st.image))
                rows["study_id"].append(st.study_id)
                rows["split"].append(split)
                rows["image_path"].append(rel)
                rows["findings"].append(st.findings)
                rows["impression"].append(st.impression)
                rows["labels"].append(_labels_json(st.labels))
                rows["labels_findings"].append(_labels_json(st.labels_findings))
                rows["labels_impression"].append(_labels_json(st.labels_impression))
                rows["truth"].append(json.dumps([{k: v for k, v in asdict(f).items() if v not in (None, False)}
                                                 for f in st.truth], sort_keys=True))
                rows["devices"].append(list(st.devices))
            schema = pa.schema([(k, pa.list_(pa.string()) if k == "devices" else pa.string()) for k in rows])
            table = pa.table(rows, schema=schema)
            pq.write_table(table, tmp / f"{split}.parquet", compression="zstd", write_statistics=False)
        for p in sorted(tmp.rglob("*")):
            if p.is_file():
                files[p.relative_to(tmp).as_posix()] = _sha256(p)
        manifest = {**_config_key(seed, n, image_size), "files": files,
                    "counts": {s: int(n[s]) for s in SPLITS}}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def read_manifest(out_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The manifest of a generated folder, or None when missing or unreadable."""
    p = Path(out_dir) / "manifest.json"
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def dataset_dir(cfg: Any) -> Path:
    """``<paths.data>/synthcxr/<profile name>`` for a profile."""
    return Path(cfg.data_dir) / "synthcxr" / str(cfg.name)


def _manifest_ok(out_dir: Path, want: dict[str, Any]) -> bool:
    man = read_manifest(out_dir)
    if man is None or {k: man.get(k) for k in want} != want:
        return False
    # cheap integrity check: the Parquet files are present and unchanged
    for split in SPLITS:
        rel = f"{split}.parquet"
        p = out_dir / rel
        if not p.exists() or man.get("files", {}).get(rel) != _sha256(p):
            return False
    return True


def ensure_dataset(cfg: Any) -> Path:
    """Return the profile's SynthCXR folder, generating it when missing or out of date.

    The folder is regenerated when its manifest does not match the profile (generator
    version, ``seed``, ``data.n_train/n_val/n_test``, ``data.image_size``) or a Parquet
    file's hash differs from the manifest.
    """
    d = cfg.data
    n = {"train": d.n_train, "val": d.n_val, "test": d.n_test}
    out = dataset_dir(cfg)
    want = _config_key(cfg.seed, n, d.image_size)
    if not _manifest_ok(out, want):
        generate_dataset(out, seed=cfg.seed, n_train=d.n_train, n_val=d.n_val, n_test=d.n_test,
                         image_size=d.image_size)
    return out
