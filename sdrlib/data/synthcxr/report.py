"""SynthCXR step 2, report: the grammar that writes Findings and Impression (:func:`write_report`).

Every sentence is built from the finding (or the negated observation) it states and carries that
statement's CheXpert labels, so the study labels stay exact whatever words are chosen. A
per-report :class:`ReaderStyle` keeps one report consistent while reports differ from each other.

Layout: the Findings state each finding through its kind's ``_pos_<kind>`` writer (``_POSITIVE``),
support devices through ``_device_sentence`` and normal anatomy through one ``_slot_<name>`` writer
per slot (``_SLOTS``); the Impression states findings through ``_imp_<kind>`` writers. Drawing the
findings (``findings.py``), the image (``image.py``) and the on-disk dataset (``dataset.py``) live elsewhere.

Real report language the grammar writes at rates near real reports (``_add_real_language``, drawn from a
generator of its own, so a report without these sentences reads as before). The targets, and where they come
from (:mod:`sdrlib.data.synthcxr.language` measures all of them from the text; ``tests/data/
test_synthcxr_language.py`` keeps them in range):

- **pertinent negative on the other side** ("No left pleural effusion.", "No pneumothorax on the left.", "The left
  lung is clear.") beside a one-sided effusion, pneumothorax, consolidation or opacity: target 3.3 % of Findings
  sections and 0.8 % of Impressions, the share of the public IU-Xray reports that state a finding on one side and
  deny one on the other (Findings: 3.3 %; Impressions: 32 of 3,820). ``P_OTHER_SIDE_FINDINGS`` /
  ``P_OTHER_SIDE_IMPRESSION`` are the probabilities per eligible finding that reach them on SynthCXR's mix of
  findings. The sentence is labelled negative for its observation (0), as it reads alone; the report stays
  positive through :func:`merge_labels` (positive wins).
- **bilateral findings** written "bilateral(ly)", "bibasilar", "biapical", "both lungs / lung bases / sides",
  "left and right": every bilateral effusion, atelectasis and pleural thickening uses one of them (our choice:
  real readers name the two sides of a two-sided finding); edema, always two-sided here, sometimes ("in both
  lungs", "bilateral perihilar").
- **"no new X"** ("No new consolidation.", "No new or worsening effusion.") beside an unchanged finding:
  ``P_NO_NEW`` per unchanged consolidation / opacity / effusion / pneumothorax / edema, our estimate (follow-up
  reports with a prior often say it; we have no MIMIC-CXR text offline to count it). By the project's convention a
  "no new X" sentence states nothing about X (no label, not 0): it speaks of change, not presence. Note that the
  normal-statement lists (``_neg_list``) also write "No new X" when the reader compares, still labelled 0 (see
  ``_neg_list``).
- **hedged findings** ("possible", "cannot exclude", "may represent", "likely"; label -1): drawn with the finding
  (``Finding.hedged``, ``findings.py``); about 9 % of reports carry an uncertain label, inside our estimate of
  8-15 % for a general chest X-ray population (an estimate, no published count we can cite), so left as is.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from sdrlib.data.synthcxr.findings import _LOBES, Finding, Labels, Sentence, _adj, _cap, _pick
from sdrlib.vocabulary import merge_labels

__all__ = ["ReaderStyle", "write_report", "other_side_negative"]


# The report is written by a small grammar. Every sentence is built from the finding (or the
# negated observation) it states and carries that statement's CheXpert labels, so the study
# labels stay exact whatever words are chosen. A per-report ``ReaderStyle`` (terse vs verbose,
# preferred synonyms, comparison habit, normal-study template family, section order) keeps one
# report consistent while reports differ from each other.

@dataclass(frozen=True)
class ReaderStyle:
    """How one (simulated) radiologist writes a report; drawn per study by ``_reader_style``."""

    seed: int  # picks the preferred synonym of every slot (see ``_say``)
    terse: float  # probability of a fragment ("Small right effusion.") over a full sentence
    prior: str | None  # the comparison study ("the prior radiograph"), None: no comparison
    family: str  # normal-Findings template family (see ``_NORMAL_FAMILIES``)
    devices_first: bool  # lines and tubes opening the Findings rather than closing them
    technique: str | None  # an opening technique sentence, or None


_PRIORS = ("the prior study", "the prior radiograph", "the previous examination", "the prior exam",
           "the most recent prior", "the previous radiograph", "the study from yesterday",
           "the outside radiograph", "the radiograph from earlier today", "the examination of two days ago",
           "the chest radiograph from last week", "the study of three days prior", "the preoperative radiograph",
           "the radiograph from several months ago", "the chest CT from last month", "multiple prior radiographs",
           "the admission radiograph", "the baseline study")
# Technique: view x position (x an optional remark), composed by ``_technique``.
_VIEWS = ("PA and lateral views of the chest", "Frontal and lateral views of the chest", "Two views of the chest",
          "A single frontal view of the chest", "A single AP portable view of the chest",
          "A portable AP radiograph of the chest", "A supine AP radiograph of the chest",
          "A frontal radiograph of the chest", "An upright AP view of the chest",
          "A single semi-upright portable view of the chest", "Upright PA and lateral radiographs of the chest",
          "Inspiratory and expiratory views of the chest")
_VIEW_VERB = ("were obtained", "were obtained and reviewed", "were performed", "are provided")
_VIEW_WHERE = ("at the bedside", "in the emergency department", "in the intensive care unit", "with the patient upright",
               "with the patient semi-erect", "with the patient supine", "in the upright position",
               "in the semi-upright position", "during shallow inspiration", "at end inspiration",
               "with a slightly lordotic projection", "after thoracentesis")
_NORMAL_FAMILIES = ("systematic", "combined", "compact", "pertinent")


def _technique(rng: np.random.Generator) -> str:
    """An opening technique sentence ("PA and lateral views of the chest were obtained.")."""
    view = _pick(rng, _VIEWS)
    if view.startswith(("A ", "An ")):  # one view: singular verb
        verb = _pick(rng, ("was obtained", "was performed", "is provided", "was obtained and reviewed"))
    else:
        verb = _pick(rng, _VIEW_VERB)
    where = f" {_pick(rng, _VIEW_WHERE)}" if rng.random() < 0.5 else ""
    return f"{view} {verb}{where}."


def _reader_style(rng: np.random.Generator) -> ReaderStyle:
    return ReaderStyle(
        seed=int(rng.integers(1 << 30)),
        terse=float(rng.choice([0.1, 0.35, 0.7], p=[0.4, 0.35, 0.25])),
        prior=_pick(rng, _PRIORS) if rng.random() < 0.45 else None,
        family=_pick(rng, _NORMAL_FAMILIES),
        devices_first=bool(rng.random() < 0.5),
        technique=_technique(rng) if rng.random() < 0.2 else None,
    )


def _say(rng: np.random.Generator, style: ReaderStyle, slot: str, options: Sequence[Any]) -> Any:
    """One of ``options``: usually the reader's preferred one for this slot, sometimes any."""
    if rng.random() < 0.55:
        # crc32, not hash(): str hashes are salted per process and would break determinism
        return options[(style.seed + zlib.crc32(slot.encode())) % len(options)]
    return _pick(rng, options)


def _side_word(side: str | None) -> str:
    return side or "right"


def _art(np_: str) -> str:
    """Indefinite article for a noun phrase ("an 8 mm nodule", "a small effusion")."""
    first = np_.split(" ", 1)[0].lower()
    return "an" if first[:1] in "aeiou" or first.startswith(("8", "11", "18")) else "a"


# Severity / size words per truth value (all are what a radiologist writes for that grade).
_SEV_ADJ = {"mild": ["mild", "mild", "slight", "minimal", "subtle", "very mild"],
            "moderate": ["moderate", "mild to moderate", "moderate", "considerable"],
            "severe": ["severe", "marked", "moderate to severe", "extensive", "diffuse", "florid"]}
_CM_ADJ = {"mild": ["mild", "mild", "slight", "minimal"], "moderate": ["moderate", "mild to moderate"],
           "severe": ["severe", "marked", "moderate to severe", "massive"]}
_SEV_ADV = {"mild": ["mildly", "slightly", "mildly"], "moderate": ["moderately"], "severe": ["severely", "markedly"]}
_EFF_SIZE = {"small": ["small", "small", "trace", "minimal", "tiny", "very small"],
             "moderate": ["moderate", "moderate-sized", "small to moderate", "medium-sized"],
             "large": ["large", "moderate to large", "sizable", "very large", "substantial"]}
_PTX_SIZE = {"small": ["small", "small", "tiny", "trace"], "moderate": ["moderate", "moderate-sized"],
             "large": ["large", "large", "sizable"]}
# Location phrases of each lobe: (prepositional phrase, adjective form). Segments, zones and
# regions a reader names for a finding in that lobe (the image draws it at the lobe's centre).
_LOBE_WORDS = {
    "right upper lobe": [("in the right upper lobe", "right upper lobe"), ("in the right upper lung zone", "right upper zone"),
                         ("in the right suprahilar region", "right suprahilar"), ("at the right apex", "right apical"),
                         ("in the apical segment of the right upper lobe", "right upper lobe"),
                         ("in the posterior segment of the right upper lobe", "right upper lobe"),
                         ("in the anterior segment of the right upper lobe", "right upper lobe"),
                         ("in the right infraclavicular region", "right infraclavicular"),
                         ("in the periphery of the right upper lung", "peripheral right upper lobe")],
    "right middle lobe": [("in the right middle lobe", "right middle lobe"), ("in the right mid lung", "right mid lung"),
                          ("in the right middle lobe, silhouetting the right heart border", "right middle lobe"),
                          ("in the lateral segment of the right middle lobe", "right middle lobe"),
                          ("in the medial segment of the right middle lobe", "right middle lobe"),
                          ("in the right perihilar region", "right perihilar"),
                          ("in the right paracardiac region", "right paracardiac")],
    "right lower lobe": [("in the right lower lobe", "right lower lobe"), ("at the right lung base", "right basilar"),
                         ("in the right infrahilar region", "right infrahilar"),
                         ("in the right lower lobe, obscuring the right hemidiaphragm", "right lower lobe"),
                         ("in the superior segment of the right lower lobe", "right lower lobe"),
                         ("in the posterior basal segment of the right lower lobe", "right lower lobe"),
                         ("in the lateral basal segment of the right lower lobe", "right lower lobe"),
                         ("in the right lower lung zone", "right lower zone")],
    "left upper lobe": [("in the left upper lobe", "left upper lobe"), ("in the left upper lung zone", "left upper zone"),
                        ("in the left suprahilar region", "left suprahilar"), ("at the left apex", "left apical"),
                        ("in the apicoposterior segment of the left upper lobe", "left upper lobe"),
                        ("in the anterior segment of the left upper lobe", "left upper lobe"),
                        ("in the left infraclavicular region", "left infraclavicular"),
                        ("in the left perihilar region", "left perihilar")],
    "lingula": [("in the lingula", "lingular"), ("in the left mid lung zone", "left mid lung"),
                ("in the lingula, silhouetting the left heart border", "lingular"),
                ("in the superior segment of the lingula", "lingular"),
                ("in the inferior lingular segment", "lingular")],
    "left lower lobe": [("in the left lower lobe", "left lower lobe"), ("at the left lung base", "left basilar"),
                        ("in the retrocardiac region", "retrocardiac"),
                        ("in the left lower lobe, obscuring the left hemidiaphragm", "left lower lobe"),
                        ("in the superior segment of the left lower lobe", "left lower lobe"),
                        ("in the posterior basal segment of the left lower lobe", "left lower lobe"),
                        ("in the anteromedial basal segment of the left lower lobe", "left lower lobe"),
                        ("in the left infrahilar region", "left infrahilar"),
                        ("in the left lower lung zone", "left lower zone")],
}
_RIB_WORDS = {"4th": "fourth", "5th": "fifth", "6th": "sixth", "7th": "seventh", "8th": "eighth", "9th": "ninth"}


def _loc(rng: np.random.Generator, lobe: str) -> tuple[str, str]:
    return _pick(rng, _LOBE_WORDS.get(lobe, [(f"in the {lobe}", _adj(lobe))]))


def _when(rng: np.random.Generator, style: ReaderStyle, allowed: Sequence[str]) -> str | None:
    """Comparison status of a finding against the prior study, or None (not compared)."""
    if style.prior is None or rng.random() < 0.25:
        return None
    return _pick(rng, allowed)


_CHANGE = ("new", "unchanged", "unchanged", "increased", "decreased")
# Comparison statuses a finding of each kind may have (repeats weight the draw); kinds not listed,
# hedged findings, healed fractures and compressive atelectasis are never compared.
_WHEN_ALLOWED: dict[str, tuple[str, ...]] = {
    "cardiomegaly": ("unchanged", "unchanged", "increased"), "mediastinum": ("new", "unchanged"),
    "edema": ("new", "unchanged", "increased", "decreased"), "effusion": _CHANGE,
    "consolidation": ("new", "new", "unchanged", "increased", "decreased"),
    "atelectasis": ("new", "unchanged", "decreased", "increased"),
    "opacity": ("new", "new", "unchanged", "increased", "decreased"),
    "nodule": ("new", "unchanged", "unchanged", "increased"), "pneumothorax": _CHANGE,
    "fracture": ("new", "unchanged"), "pleural_other": ("unchanged",),
}


def _draw_when(rng: np.random.Generator, style: ReaderStyle, f: Finding) -> str | None:
    """The comparison status of finding ``f``, drawn once per report and used by both sections."""
    if f.hedged or f.kind not in _WHEN_ALLOWED or f.detail in ("compressive", "healed"):
        return None
    return _when(rng, style, _WHEN_ALLOWED[f.kind])


def _draw_whens(findings: Sequence[Finding], rng: np.random.Generator, style: ReaderStyle) -> dict[str, str | None]:
    """Comparison status per finding kind; pneumonia shares the status of its consolidation."""
    whens = {f.kind: _draw_when(rng, style, f) for f in findings}
    if "pneumonia" in whens:
        whens["pneumonia"] = whens.get("consolidation")
    return whens


# Impression prefixes per comparison status; "increased" for a nodule or mass reads "enlarging".
_CMP_PREFIX = {"new": ("New", "New", "Newly developed"), "unchanged": ("Stable", "Unchanged", "Persistent"),
               "increased": ("Increasing", "Worsening", "Slightly increased"),
               "decreased": ("Improving", "Decreasing", "Slightly decreased")}


def _cmp(rng: np.random.Generator, when: str | None, text: str, kind: str = "") -> str:
    """Impression sentence ``text`` qualified by the finding's comparison status ``when`` (None: as is)."""
    if when is None:
        return text
    pre = _pick(rng, ("Enlarging", "Slightly enlarging") if when == "increased" and kind == "nodule"
                else _CMP_PREFIX[when])
    return f"{pre} {text[:1].lower()}{text[1:]}"


def _state(rng: np.random.Generator, style: ReaderStyle, np_: str, article: str, when: str | None,
           extra: Sequence[str] = ()) -> str:
    """A sentence stating noun phrase ``np_`` (article "a", "" for mass nouns or "pl").

    ``when`` adds the comparison with the prior ("new", "unchanged", "increased", "decreased");
    ``extra`` are kind-specific full sentences the reader may use instead.
    """
    pl = article == "pl"
    a = f"{_art(np_)} " if article == "a" else ""
    be, have = ("are", "have") if pl else ("is", "has")
    subj = _cap(a + np_)
    prior = style.prior or "the prior study"
    cmp_ = _pick(rng, ("Compared with", "Compared to", "As compared to", "In comparison with"))
    if when == "new":
        return _pick(rng, [f"New {np_}.", f"Interval development of {a}{np_}.", f"{subj} {be} new since {prior}.",
                           f"There {be} {'' if pl else 'a '}new {np_}." if article else f"New {np_} since {prior}.",
                           f"{cmp_} {prior}, there {be} {'' if pl or not article else 'a '}new {np_}.",
                           f"{subj} {have} developed since {prior}.", f"Newly seen {np_}.",
                           f"Since {prior}, there has been interval development of {a}{np_}."])
    if when == "unchanged":
        return _pick(rng, [f"Unchanged {np_}.", f"Stable {np_}.", f"{subj} {be} again noted.", f"{subj} {be} again seen.",
                           f"{subj} {be} unchanged from {prior}.", f"Redemonstration of {a}{np_}.",
                           f"Persistent {np_}.", f"{subj} {be} stable compared with {prior}.",
                           f"{subj} {be} not significantly changed.", f"{subj} {be} similar to {prior}.",
                           f"{cmp_} {prior}, {a}{np_} {be} unchanged."])
    if when == "increased":
        return _pick(rng, [f"{subj}, increased since {prior}.", f"{subj} {have} increased compared with {prior}.",
                           f"Interval increase in {np_}.", f"{subj} {have} slightly increased in the interval.",
                           f"Slight interval worsening of {a}{np_}.", f"{subj} {have} progressed since {prior}.",
                           f"{subj} {be} larger than on {prior}.", f"{cmp_} {prior}, {a}{np_} {have} worsened."])
    if when == "decreased":
        return _pick(rng, [f"{subj}, decreased since {prior}.", f"{subj} {have} decreased compared with {prior}.",
                           f"Interval improvement in {np_}.", f"{subj} {have} slightly improved in the interval.",
                           f"Interval decrease in {np_}.", f"{subj} {be} smaller than on {prior}.",
                           f"{cmp_} {prior}, {a}{np_} {have} improved."])
    if rng.random() < style.terse:
        return f"{_cap(np_)}."
    opts = [f"There {be} {a}{np_}.", f"{subj} {be} present.", f"{subj} {be} seen.", f"{subj} {be} noted.",
            f"{subj} {be} identified."] + list(extra)
    return _pick(rng, opts)


_UNSET = "unset"


def _positive_sentences(f: Finding, rng: np.random.Generator, style: ReaderStyle | None = None,
                        when: str | None = _UNSET) -> list[Sentence]:
    """Findings-section sentence(s) for one finding, with the labels each expresses.

    ``when`` is the finding's comparison status (``_draw_whens``; drawn here when not given);
    hedged findings, compressive atelectasis and healed fractures ignore it. The sentences of each
    finding kind are written by its ``_pos_<kind>`` helper (see ``_POSITIVE``).
    """
    style = style or _reader_style(rng)
    if when == _UNSET:
        when = _draw_when(rng, style, f)
    write = _POSITIVE.get(f.kind)
    if write is None:
        raise ValueError(f"unknown finding kind {f.kind!r}")
    return write(f, rng, style, when)


def _pos_cardiomegaly(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None) -> list[Sentence]:
    """Cardiomegaly: "Mild cardiomegaly.", "The heart is mildly enlarged.", "The heart remains ... enlarged."."""
    sev = f.severity or "mild"
    s, a = _pick(rng, _CM_ADJ[sev]), _pick(rng, _SEV_ADV[sev])
    np_ = _say(rng, style, "cm", [f"{s} cardiomegaly", f"{s} enlargement of the cardiac silhouette",
                                  f"{s} cardiac enlargement", f"{s} cardiomegaly with a left ventricular configuration"])
    extra = [f"The heart is {a} enlarged.", f"Heart size is {a} enlarged.", f"The cardiac silhouette is {a} enlarged.",
             f"The heart is {a} enlarged in size.", f"The cardiac silhouette is {a} enlarged and globular.",
             f"The cardiac silhouette is {a} enlarged, with prominence of the left ventricular contour."]
    if when == "unchanged" and rng.random() < 0.4:
        return [(_pick(rng, [f"The heart remains {a} enlarged.", f"Heart size remains {a} enlarged."]),
                 {"Cardiomegaly": 1})]
    return [(_state(rng, style, np_, "", when, extra), {"Cardiomegaly": 1})]


def _pos_mediastinum(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None) -> list[Sentence]:
    """Mediastinal widening: "Mediastinal widening.", "The mediastinum is widened."."""
    np_ = _pick(rng, ["widening of the superior mediastinum", "mediastinal widening", "widening of the mediastinum"])
    extra = ["The mediastinum is widened.", "The superior mediastinum appears widened.",
             "The mediastinal silhouette is widened.", "The mediastinal contour is widened."]
    return [(_state(rng, style, np_, "", when, extra), {"Enlarged Cardiomediastinum": 1})]


def _pos_edema(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None) -> list[Sentence]:
    """Pulmonary edema, hedged ("Possible mild pulmonary edema.") or stated; Kerley B lines from moderate on."""
    sev = f.severity or "mild"
    s = _pick(rng, _SEV_ADJ[sev])
    if f.hedged:
        opts = [(f"Possible {s} pulmonary edema.", {"Edema": -1}),
                (f"Findings may represent {s} interstitial edema.", {"Edema": -1}),
                (f"Findings suggestive of {s} pulmonary edema.", {"Edema": -1}),
                (f"Cannot exclude {s} interstitial edema.", {"Edema": -1}),
                (f"Probable {s} interstitial pulmonary edema.", {"Edema": -1}),
                (f"Prominent interstitial markings may represent {s} edema.", {"Lung Opacity": 1, "Edema": -1})]
        return [_pick(rng, opts)]
    np_ = _say(rng, style, "ed", [f"{s} pulmonary edema", f"{s} interstitial edema", f"{s} interstitial pulmonary edema",
                                  f"{s} pulmonary vascular congestion", f"{s} bilateral perihilar edema",
                                  f"{s} interstitial edema in both lungs"])
    extra = [f"Pulmonary vascular congestion with {s} interstitial edema.",
             f"Findings are consistent with {s} pulmonary edema.",
             f"Cephalization of the pulmonary vasculature with {s} interstitial edema.",
             f"{_cap(s)} interstitial edema with peribronchial cuffing.",
             f"{_cap(s)} pulmonary edema with indistinct perihilar vessels.",
             f"{_cap(s)} interstitial edema with thickening of the minor fissure.",
             f"{_cap(s)} pulmonary edema in a perihilar, bat-wing distribution.",
             f"{_cap(s)} pulmonary edema with septal lines at the lung bases."]
    if sev != "mild":  # the image draws Kerley B lines for moderate and severe edema
        extra += [f"{_cap(s)} interstitial edema with Kerley B lines.",
                  f"Kerley B lines and {s} interstitial edema are present."]
    return [(_state(rng, style, np_, "", when, extra), {"Edema": 1})]


def _pos_effusion(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None) -> list[Sentence]:
    """Pleural effusion: hedged, bilateral ("Small bilateral pleural effusions.") or one-sided."""
    size, side = f.severity or "small", _side_word(f.side)
    sz = _pick(rng, _EFF_SIZE[size])
    if f.hedged:
        return [_hedged_effusion(rng, side)]
    if side == "bilateral":
        np_ = _say(rng, style, "ef2", [f"{sz} bilateral pleural effusions", f"{sz} bilateral effusions",
                                       f"{sz} pleural effusions bilaterally", f"{sz} layering bilateral pleural effusions",
                                       f"{sz} left and right pleural effusions", f"{sz} pleural effusions on both sides"])
        return [(_state(rng, style, np_, "pl", when), {"Pleural Effusion": 1})]
    np_ = _say(rng, style, "ef1", [f"{sz} {side} pleural effusion", f"{sz} {side} effusion",
                                   f"{sz} {side}-sided pleural effusion", f"{sz} pleural effusion on the {side}"])
    extra = _effusion_extra(rng, size, side, sz)
    return [(_state(rng, style, np_, "a", when, extra), {"Pleural Effusion": 1})]


def _hedged_effusion(rng: np.random.Generator, side: str) -> Sentence:
    """A hedged pleural effusion ("Possible small right pleural effusion."), labels Pleural Effusion -1."""
    if side == "bilateral":
        return (_pick(rng, ["Possible small bilateral pleural effusions.", "Probable trace bilateral pleural effusions.",
                            "Small bilateral pleural effusions cannot be excluded.",
                            "Questionable small bilateral effusions."]), {"Pleural Effusion": -1})
    return (_pick(rng, [f"Possible small {side} pleural effusion.", f"A small {side} pleural effusion cannot be excluded.",
                        f"Cannot exclude a trace {side} pleural effusion.", f"Probable small {side} effusion.",
                        f"Questionable small {side} pleural effusion.", f"A trace {side} effusion is not excluded."]),
            {"Pleural Effusion": -1})


def _effusion_extra(rng: np.random.Generator, size: str, side: str, sz: str) -> list[str]:
    """Full sentences on a one-sided effusion of grade ``size`` (size word ``sz``), by grade."""
    if size == "small":
        return [f"Blunting of the {side} costophrenic angle, consistent with a small pleural effusion.",
                f"Blunting of the {side} costophrenic angle reflects a small effusion."]
    if size == "large":
        return [f"Large {side} pleural effusion opacifies much of the {side} hemithorax.",
                f"Large {side} pleural effusion occupies most of the {side} lower hemithorax."]
    return [f"{_cap(sz)} {side} pleural effusion obscures the {side} hemidiaphragm.",
            f"{_cap(sz)} {side} pleural effusion tracks along the lateral chest wall.",
            f"{_cap(sz)} layering {side} pleural effusion.", f"{_cap(sz)} subpulmonic {side} pleural effusion.",
            f"{_cap(sz)} loculated {side} pleural effusion.",
            f"{_cap(sz)} {side} pleural effusion with fluid tracking into the {_pick(rng, ['minor', 'major'])} fissure."]


def _pos_consolidation(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None
                       ) -> list[Sentence]:
    """Consolidation in a lobe: "Focal consolidation in the right lower lobe."."""
    prep, adj = _loc(rng, f.location or "right lower lobe")
    q = _pick(rng, ["focal", "dense", "confluent", "patchy", "lobar", "segmental", "heterogeneous", "wedge-shaped",
                    "rounded", "airspace", "homogeneous", "peripheral"])
    np_ = _say(rng, style, "co", [f"{q} consolidation {prep}", f"consolidation {prep}",
                                  f"{q} airspace consolidation {prep}", f"area of {q} consolidation {prep}",
                                  f"{q} {adj} consolidation", f"{adj} airspace consolidation"])
    extra = [f"Consolidation {prep} with air bronchograms.",
             f"There is a focal area of consolidation {prep}.",
             f"{_cap(q)} consolidation {prep} with internal air bronchograms.",
             f"{_cap(q)} consolidation {prep}, without cavitation."]
    return [(_state(rng, style, np_, "a" if np_.startswith("area") else "", when, extra), {"Consolidation": 1})]


def _pos_pneumonia(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None) -> list[Sentence]:
    """Pneumonia: no Findings sentence (its consolidation is stated; the Impression names the pneumonia)."""
    return []


def _pos_atelectasis(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None) -> list[Sentence]:
    """Atelectasis: compressive, hedged, or stated by type ("Plate-like right basilar atelectasis.")."""
    side = _side_word(f.side)
    if f.detail == "compressive":
        return [(_pick(rng, [f"Adjacent compressive atelectasis at the {side} base.",
                             f"Compressive atelectasis of the {side} lower lobe.",
                             f"Associated compressive atelectasis at the {side} lung base.",
                             f"There is adjacent passive atelectasis of the {side} lower lobe."]), {"Atelectasis": 1})]
    if f.hedged:
        return [(_pick(rng, [f"{_cap(side)} basilar opacity, likely atelectasis.",
                             f"Opacity at the {side} base may represent atelectasis.",
                             f"Streaky {side} basilar opacity likely reflects atelectasis.",
                             f"Patchy opacity at the {side} lung base, probably atelectasis.",
                             f"{_cap(side)} basilar opacity could reflect atelectasis.",
                             f"Linear opacity at the {side} base, possibly atelectasis."]),
                 {"Lung Opacity": 1, "Atelectasis": -1})]
    d = {"linear": ["linear", "streaky linear", "band-like", "curvilinear", "streaky"],
         "plate-like": ["plate-like", "discoid", "platelike"],
         "subsegmental": ["subsegmental", "linear subsegmental", "patchy subsegmental"],
         "mild": ["mild", "minimal", "minor", "mild dependent"]}.get(f.detail or "mild", ["mild"])
    d = _pick(rng, d)
    if f.location == "bibasilar":
        np_ = _say(rng, style, "at2", [f"{d} bibasilar atelectasis", f"{d} atelectasis at both lung bases",
                                       f"{d} left and right basilar atelectasis",
                                       f"{d} bilateral basilar atelectasis", f"{d} atelectasis at the lung bases",
                                       f"{d} atelectasis in both lower lobes",
                                       f"{d} atelectasis at the lung bases bilaterally"])
    else:
        where = [f"{d} atelectasis at the {side} lung base", f"{d} {side} basilar atelectasis",
                 f"{d} atelectasis in the {side} lower lobe", f"{d} atelectasis at the {side} base",
                 f"{d} atelectasis along the {side} hemidiaphragm", f"{d} atelectasis in the {side} infrahilar region"]
        if side == "left":
            where.append(f"{d} retrocardiac atelectasis")
        np_ = _say(rng, style, "at1", where)
    return [(_state(rng, style, np_, "", when), {"Atelectasis": 1})]


def _pos_opacity(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None) -> list[Sentence]:
    """A lung opacity in a lobe: "Patchy opacity in the right lower lobe."."""
    prep, adj = _loc(rng, f.location or "right lower lobe")
    q = _pick(rng, ["patchy", "hazy", "ill-defined", "faint", "streaky", "subtle", "ground-glass", "linear", "reticular",
                    "confluent", "wedge-shaped", "poorly defined", "vague", "mottled", "indistinct", "rounded",
                    "peripheral", "heterogeneous", "amorphous", "curvilinear", "focal", "irregular"])
    np_ = _say(rng, style, "op", [f"{q} opacity {prep}", f"{q} {adj} opacity", f"{q} airspace opacity {prep}",
                                  f"area of {q} opacity {prep}",
                                  f"{q} opacity measuring approximately {int(rng.integers(2, 6))} cm {prep}",
                                  f"small area of {q} opacity {prep}"])
    art = "a" if np_.startswith(("area", "small", q)) else ""
    return [(_state(rng, style, np_, art, when), {"Lung Opacity": 1})]


def _pos_nodule(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None) -> list[Sentence]:
    """A nodule or (``detail == "mass"``) a mass with its size: "8 mm nodule in the right upper lobe."."""
    prep, adj = _loc(rng, f.location or "right upper lobe")
    cm = float(f.size_cm or 1.0)
    x = f"{int(round(cm * 10))} mm" if cm < 1.0 and rng.random() < 0.6 else f"{cm:.1f} cm"
    if f.detail == "mass":
        q = _pick(rng, ["", "spiculated ", "lobulated ", "rounded ", "large ", "cavitary ", "irregular ",
                        "heterogeneous "])
        np_ = _say(rng, style, "ms", [f"{x} {q}mass {prep}", f"{q}{adj} mass measuring {x}",
                                      f"{q}mass {prep} measuring {x}"])
        extra = [f"A {x} {q}mass projects over the {adj if adj.endswith('lobe') else 'lung'}."]
        return [(_state(rng, style, np_, "a", when, extra), {"Lung Lesion": 1})]
    q = _pick(rng, ["", "", "well-circumscribed ", "rounded ", "solitary ", "noncalcified ", "smoothly marginated ",
                    "irregular ", "spiculated ", "faint ", "well-defined "])
    np_ = _say(rng, style, "nd", [f"{x} {q}nodule {prep}", f"{x} {q}pulmonary nodule {prep}",
                                  f"{q}{adj} pulmonary nodule measuring {x}", f"{x} {q}nodular density {prep}"])
    extra = [f"A {x} nodule projects over the {adj if adj.endswith('lobe') else 'lung'}."]
    return [(_state(rng, style, np_, "a", when, extra), {"Lung Lesion": 1})]


def _pos_pneumothorax(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None
                      ) -> list[Sentence]:
    """Pneumothorax, hedged ("Possible tiny right apical pneumothorax.") or stated with its size."""
    size, side = f.severity or "small", _side_word(f.side)
    if f.hedged:
        return [(_pick(rng, [f"Possible tiny {side} apical pneumothorax.",
                             f"A tiny {side} apical pneumothorax cannot be excluded.",
                             f"Questionable small {side} apical pneumothorax.",
                             f"Cannot exclude a trace {side} pneumothorax.",
                             f"Subtle lucency at the {side} apex may represent a small pneumothorax."]),
                 {"Pneumothorax": -1})]
    sz = _pick(rng, _PTX_SIZE[size])
    np_ = _say(rng, style, "px", [f"{sz} {side} pneumothorax", f"{sz} {side}-sided pneumothorax",
                                  f"{sz} {side} apical pneumothorax" if size == "small" else f"{sz} {side} pneumothorax",
                                  f"{sz} {side} apicolateral pneumothorax"])
    extra = [f"{_cap(sz)} {side} pneumothorax with a visible visceral pleural line.",
             f"{_cap(sz)} {side} pneumothorax without mediastinal shift.",
             f"{_cap(sz)} {side} pneumothorax without evidence of tension.",
             f"Deep sulcus sign on the {side}, consistent with a pneumothorax on this supine radiograph.",
             f"{_cap(sz)} {side} pneumothorax, with the visceral pleural line {int(rng.integers(1, 4))} cm from the "
             f"{_pick(rng, ['apex', 'lateral chest wall'])}."]
    return [(_state(rng, style, np_, "a", when, extra), {"Pneumothorax": 1})]


def _pos_fracture(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None) -> list[Sentence]:
    """A rib fracture, healed ("Old healed fracture of the right 6th rib.") or acute."""
    side, rib = _side_word(f.side), f.location or "6th"
    rib = rib if rng.random() < 0.5 else _RIB_WORDS.get(rib, rib)
    if f.detail == "healed":
        return [(_pick(rng, [f"Healed {side} rib fractures.", f"Old healed fracture of the {side} {rib} rib.",
                             f"Remote {side} {rib} rib fracture.", f"Healed fracture deformity of the {side} {rib} rib.",
                             f"Old {side} {rib} rib fracture with callus formation.",
                             f"Chronic deformity of the {side} {rib} rib from a healed fracture."]), {"Fracture": 1})]
    np_ = _pick(rng, [f"acute fracture of the {side} {rib} rib", f"nondisplaced fracture of the {side} {rib} rib",
                      f"minimally displaced {side} {rib} rib fracture", f"{side} lateral {rib} rib fracture",
                      f"displaced fracture of the {side} lateral {rib} rib", f"{side} posterolateral {rib} rib fracture",
                      f"{side} anterolateral {rib} rib fracture", f"comminuted fracture of the {side} {rib} rib",
                      f"fracture of the {side} {rib} rib with cortical step-off",
                      f"buckle fracture of the {side} {rib} rib"])
    return [(_state(rng, style, np_, "" if np_.startswith(("acute", "nondisplaced", "displaced", "comminuted"))
                    else "a", when),
             {"Fracture": 1})]


def _pos_pleural_other(f: Finding, rng: np.random.Generator, style: ReaderStyle, when: str | None
                       ) -> list[Sentence]:
    """Pleural thickening, apical ("Right apical pleural cap.") or along the chest wall, or calcified plaques."""
    side = _side_word(f.side)
    if f.detail == "apical":
        np_ = _pick(rng, [f"{side} apical pleural thickening", f"mild {side} apical pleural thickening",
                          f"{side} apical pleural cap" if side != "bilateral" else "bilateral apical pleural caps",
                          f"{side} apical pleural thickening" if side != "bilateral" else "biapical pleural thickening"])
        art = "pl" if np_.endswith("caps") else ("a" if np_.endswith("cap") else "")
        return [(_state(rng, style, np_, art, when), {"Pleural Other": 1})]
    if side == "bilateral":
        np_ = _pick(rng, ["pleural thickening along both lateral chest walls", "mild bilateral pleural thickening",
                          "bilateral lateral pleural thickening", "smooth pleural thickening on both sides",
                          "calcified pleural plaques along both hemidiaphragms"])
    else:
        np_ = _pick(rng, [f"pleural thickening along the {side} lateral chest wall", f"mild {side} pleural thickening",
                          f"{side} lateral pleural thickening", f"smooth {side} pleural thickening",
                          f"calcified pleural plaques along the {side} hemidiaphragm"])
    return [(_state(rng, style, np_, "pl" if np_.startswith("calcified") else "", when), {"Pleural Other": 1})]


#: the Findings-section writer of each finding kind (``_positive_sentences`` dispatches on ``Finding.kind``)
_POSITIVE: dict[str, Callable[[Finding, np.random.Generator, ReaderStyle, str | None], list[Sentence]]] = {
    "cardiomegaly": _pos_cardiomegaly, "mediastinum": _pos_mediastinum, "edema": _pos_edema,
    "effusion": _pos_effusion, "consolidation": _pos_consolidation, "pneumonia": _pos_pneumonia,
    "atelectasis": _pos_atelectasis, "opacity": _pos_opacity, "nodule": _pos_nodule,
    "pneumothorax": _pos_pneumothorax, "fracture": _pos_fracture, "pleural_other": _pos_pleural_other,
}


_DEVICE_SENT = {
    "ett": ["The endotracheal tube terminates {n} cm above the carina.", "The endotracheal tube is in standard position.",
            "An endotracheal tube is present with the tip {n} cm above the carina.",
            "Endotracheal tube tip is approximately {n} cm above the carina.",
            "The ET tube is in appropriate position, {n} cm above the carina."],
    "enteric": ["The enteric tube courses below the diaphragm with the tip in the stomach.",
                "The nasogastric tube tip projects over the stomach.", "An enteric tube extends into the stomach.",
                "An orogastric tube terminates in the gastric body.",
                "The nasogastric tube passes below the diaphragm, with the side port in the stomach."],
    "cvc": ["The right internal jugular central venous catheter terminates in the lower superior vena cava.",
            "The right internal jugular catheter tip is at the cavoatrial junction.",
            "A right-sided central venous catheter ends in the superior vena cava.",
            "Right IJ central line tip projects over the mid SVC.",
            "A right internal jugular line terminates in the distal superior vena cava."],
    "pacer": ["Left-sided pacemaker with leads in the right atrium and right ventricle.",
              "Left chest wall pacemaker with leads in standard position.",
              "Dual-chamber pacemaker leads are in expected position.",
              "A left pectoral pacemaker is present with leads terminating in the right heart.",
              "Transvenous pacemaker leads project over the right atrium and right ventricle."],
    "chest_tube": ["{Side} chest tube in place.", "A {side} chest tube is present with the tip at the apex.",
                   "A {side}-sided pigtail chest tube is in place.", "{Side} basilar chest tube is present."],
}


# Composed device sentences: device names (noun phrases) x where the tip is. Every name holds a
# Support Devices mention of the labeler ("tube", "catheter", "line", "PICC", "pacemaker").
_DEVICE_NAME = {
    "ett": ("endotracheal tube", "ET tube", "endotracheal tube", "tracheostomy tube"),
    "enteric": ("enteric tube", "nasogastric tube", "orogastric tube", "feeding tube", "Dobhoff tube",
                "weighted feeding tube", "nasogastric tube"),
    "cvc": ("right internal jugular central venous catheter", "right internal jugular line", "right IJ catheter",
            "right subclavian central venous catheter", "right-sided PICC", "right upper extremity PICC",
            "right internal jugular dialysis catheter", "tunneled right internal jugular catheter",
            "right IJ central line", "right subclavian line"),
    "pacer": ("left-sided pacemaker", "left chest wall pacemaker", "dual-chamber pacemaker", "left pectoral pacemaker",
              "single-chamber pacemaker", "biventricular pacemaker", "left subclavian pacemaker"),
    "chest_tube": ("{side} chest tube", "{side}-sided pigtail catheter", "{side} basilar chest tube",
                   "{side} apical chest tube", "small-bore {side} pleural catheter", "{side} thoracostomy tube"),
}
_DEVICE_TIP = {
    "ett": ("{n} cm above the carina", "approximately {n} cm above the carina", "at the level of the clavicular heads",
            "in the midthoracic trachea", "{n} cm above the carinal bifurcation", "at the thoracic inlet",
            "just above the carina", "near the right mainstem bronchus"),
    "enteric": ("in the stomach", "in the gastric fundus", "in the gastric body", "in the distal stomach",
                "in the region of the gastric antrum", "below the diaphragm, beyond the field of view",
                "in the proximal duodenum", "coiled in the stomach", "below the left hemidiaphragm",
                "in the gastric antrum, beyond the pylorus"),
    "cvc": ("at the cavoatrial junction", "in the mid SVC", "in the lower SVC", "in the upper SVC",
            "in the distal superior vena cava", "in the proximal right atrium", "in the expected region of the SVC",
            "at the junction of the brachiocephalic vein and the SVC", "in the low superior vena cava"),
    "pacer": ("in the right atrium and right ventricle", "in the right ventricle", "in standard position",
              "in the right atrium, right ventricle, and coronary sinus", "over the right ventricular apex",
              "in expected position", "in unchanged position"),
    "chest_tube": ("at the {side} apex", "directed toward the {side} apex", "in the {side} lower hemithorax",
                   "along the {side} lateral chest wall", "at the {side} lung base", "in the posterior {side} hemithorax"),
}
_TIP_VERB = ("terminates", "ends", "has its tip", "is positioned with its tip", "tip lies", "tip projects")


def _device_sentence(d: str, side: str, rng: np.random.Generator, style: ReaderStyle) -> Sentence:
    """One sentence on support device ``d`` (labels: Support Devices 1), composed or from ``_DEVICE_SENT``."""
    n = int(rng.integers(3, 7))
    if rng.random() < 0.4:
        t = _say(rng, style, "dev-" + d, _DEVICE_SENT[d])
    else:
        name = _say(rng, style, "devn-" + d, _DEVICE_NAME[d]).format(side=side)
        tip = _pick(rng, _DEVICE_TIP[d]).format(n=n, side=side)
        if d == "pacer":
            t = _pick(rng, [f"{_cap(_art(name))} {name} is present with leads {tip}.",
                            f"{_cap(_art(name))} {name} with leads {tip}.",
                            f"The {name} leads terminate {tip}." if not tip.startswith(("in standard", "in exp", "in unch"))
                            else f"The {name} leads are {tip}."])
        elif style.prior is not None and rng.random() < 0.25:
            t = f"Interval placement of {_art(name)} {name}, which terminates {tip}."
        else:
            verb = _pick(rng, _TIP_VERB)
            t = f"{_cap(_pick(rng, ['the', _art(name)]))} {name} {verb} {tip}."
            if d == "ett" and rng.random() < 0.15:
                t = (f"The {name} is low, terminating {int(rng.integers(1, 3))} cm above the carina; withdrawal by "
                     f"{int(rng.integers(1, 3))} cm is recommended.")
            elif d == "enteric" and rng.random() < 0.1:
                t = (f"The side port of the {name} is near the gastroesophageal junction; advancing it by "
                     f"{int(rng.integers(5, 11))} cm is recommended.")
    t = t.format(n=n, side=side, Side=_cap(side))
    if style.prior is not None and not t.startswith("Interval") and ";" not in t and rng.random() < 0.3:
        t = t[:-1] + _pick(rng, [", unchanged in position.", ", unchanged.", ", in unchanged position."])
    return t, {"Support Devices": 1}


# --- negated observations: composed lists ("No focal consolidation, pleural effusion, or pneumothorax.")
_NEG_ITEMS: dict[str, tuple[list[str], Labels, set[str]]] = {  # item -> (phrases, labels, kinds that forbid it)
    "cons": (["focal consolidation", "consolidation", "focal airspace consolidation", "confluent consolidation"],
             {"Consolidation": 0}, {"consolidation", "pneumonia", "opacity"}),
    "eff": (["pleural effusion", "effusion", "pleural effusions", "large pleural effusion"],
            {"Pleural Effusion": 0}, {"effusion"}),
    "ptx": (["pneumothorax", "visible pneumothorax", "pneumothorax"], {"Pneumothorax": 0}, {"pneumothorax"}),
    "edema": (["pulmonary edema", "edema", "pulmonary vascular congestion", "interstitial edema"],
              {"Edema": 0}, {"edema"}),
    "ads": (["focal airspace disease", "airspace disease"], {"Lung Opacity": 0},
            {"consolidation", "pneumonia", "opacity", "atelectasis", "edema"}),
    "nod": (["suspicious pulmonary nodule", "pulmonary nodules or masses", "focal mass", "discrete nodule"],
            {"Lung Lesion": 0}, {"nodule"}),
}


def _neg_body(rng: np.random.Generator, items: Sequence[str]) -> tuple[str, Labels]:
    """"A, B, or C" over items of ``_NEG_ITEMS`` and the negative labels of the list."""
    words = [_pick(rng, _NEG_ITEMS[i][0]) for i in items]
    if len(words) == 1:
        body = words[0]
    elif len(words) == 2:
        body = f"{words[0]} or {words[1]}"
    else:
        body = ", ".join(words[:-1]) + f", or {words[-1]}"
    labels = merge_labels(*[_NEG_ITEMS[i][1] for i in items])
    labels.pop("No Finding", None)
    return body, labels


def _neg_list(rng: np.random.Generator, style: ReaderStyle, items: Sequence[str]) -> Sentence:
    """One negative sentence over several items (each in ``_NEG_ITEMS``)."""
    body, labels = _neg_body(rng, items)
    new = "new " if style.prior is not None and rng.random() < 0.3 else ""
    t = _say(rng, style, "neg", [f"No {new}{body}.", f"There is no {new}{body}.", f"No evidence of {new}{body}.",
                                 f"No {new}{body} is seen.", f"No {new}{body} is identified.",
                                 f"No definite {new}{body}.", f"No radiographic evidence of {new}{body}."])
    return t, labels


def _allowed(item: str, kinds: set[str]) -> bool:
    return not (_NEG_ITEMS[item][2] & kinds)


_LUNG_KINDS = {"consolidation", "pneumonia", "opacity", "atelectasis", "edema", "nodule", "pneumothorax"}


def _slot(name: str, rng: np.random.Generator, style: ReaderStyle, kinds: set[str]) -> Sentence | None:
    """A normal / pertinent-negative sentence for one anatomical slot, or None when a finding forbids it.

    Whether the reader words the slot against the prior study is drawn here, for every slot, before
    the slot's own writer (``_SLOTS``) runs; each writer picks its preferred words under its slot name.
    """
    prior = style.prior is not None and rng.random() < 0.35
    write = _SLOTS.get(name)
    if write is None:
        raise ValueError(f"unknown report slot {name!r}")
    return write(rng, style, kinds, prior)


def _slot_heart(rng: np.random.Generator, style: ReaderStyle, kinds: set[str], prior: bool) -> Sentence | None:
    """Normal heart size (Cardiomegaly 0), "remains normal" against the prior; None beside cardiomegaly."""
    if "cardiomegaly" in kinds:
        return None
    opts = ["Heart size is normal.", "The heart is normal in size.", "Normal heart size.",
            "The cardiac silhouette is normal in size.", "Heart size is within normal limits.",
            "The heart is not enlarged.", "Cardiac size is normal.", "The cardiac silhouette is within normal limits.",
            "The heart size is at the upper limits of normal.", "The heart is normal in size and configuration.",
            "Cardiac size is normal for the projection."]
    if prior:
        opts = ["Heart size remains normal.", "Heart size is normal and unchanged.", "Stable normal heart size.",
                "The heart remains normal in size."]
    return _say(rng, style, "heart", opts), {"Cardiomegaly": 0}


def _slot_mediastinum(rng: np.random.Generator, style: ReaderStyle, kinds: set[str], prior: bool
                      ) -> Sentence | None:
    """Normal mediastinal contours (Enlarged Cardiomediastinum 0); None beside mediastinal widening."""
    if "mediastinum" in kinds:
        return None
    opts = ["Mediastinal contours are unremarkable.", "The mediastinal contours are normal.",
            "The mediastinum is not widened.", "Normal mediastinal contours.",
            "The mediastinal silhouette is within normal limits.", "Hilar and mediastinal contours are normal.",
            "The mediastinal and hilar contours are unremarkable.",
            "Mediastinal contours are normal, and the trachea is midline.", "Normal mediastinal configuration.",
            "Aortic and mediastinal contours are normal."]
    return _say(rng, style, "mediastinum", opts), {"Enlarged Cardiomediastinum": 0}


def _slot_cardiomediastinal(rng: np.random.Generator, style: ReaderStyle, kinds: set[str], prior: bool
                            ) -> Sentence | None:
    """Heart and mediastinum in one sentence; None beside cardiomegaly or mediastinal widening."""
    if kinds & {"cardiomegaly", "mediastinum"}:
        return None
    opts = [("Heart size and mediastinal contours are normal.", {"Cardiomegaly": 0, "Enlarged Cardiomediastinum": 0}),
            ("Normal heart size and mediastinal contours.", {"Cardiomegaly": 0, "Enlarged Cardiomediastinum": 0}),
            ("The heart and mediastinum are within normal limits.", {"Cardiomegaly": 0, "Enlarged Cardiomediastinum": 0}),
            ("Cardiac and mediastinal contours are unremarkable.", {"Cardiomegaly": 0, "Enlarged Cardiomediastinum": 0}),
            ("The cardiomediastinal silhouette is within normal limits.", {"Enlarged Cardiomediastinum": 0}),
            ("The cardiomediastinal silhouette is normal in size and contour.", {"Enlarged Cardiomediastinum": 0}),
            ("Cardiomediastinal and hilar contours are normal.", {"Enlarged Cardiomediastinum": 0}),
            ("The cardiomediastinal silhouette is stable and unremarkable." if prior else
             "The cardiomediastinal silhouette is unremarkable.", {"Enlarged Cardiomediastinum": 0})]
    return _say(rng, style, "cardiomediastinal", opts)


def _slot_lungs(rng: np.random.Generator, style: ReaderStyle, kinds: set[str], prior: bool) -> Sentence | None:
    """Clear lungs, "otherwise clear" beside a lung finding (or None), or clear "without" a negated list."""
    say = lambda opts: _say(rng, style, "lungs", opts)  # noqa: E731
    if kinds & _LUNG_KINDS:
        # only "otherwise clear" fits beside a lung finding
        if rng.random() < 0.5:
            return None
        return say(["The lungs are otherwise clear.", "Otherwise, the lungs are clear.",
                    "The remainder of the lungs is clear.", "The lungs are otherwise well aerated."]), {}
    if prior and rng.random() < 0.5:
        return say(["The lungs remain clear.", "Lungs remain well expanded and clear."]), {}
    if rng.random() < 0.35:
        items = [i for i in ("cons", "eff", "ptx", "edema") if _allowed(i, kinds)]
        items = [items[int(j)] for j in sorted(rng.permutation(len(items))[:int(rng.integers(1, 4))])]
        body, lab = _neg_body(rng, items)
        lead = say(["The lungs are clear", "Lungs are clear bilaterally", "The lungs are well expanded and clear",
                    "Clear lungs"])
        return f"{lead} without {body}.", lab
    return say([("The lungs are clear.", {}), ("Lungs are clear bilaterally.", {}),
                ("The lungs are well expanded and clear.", {}), ("The lungs are well aerated.", {}),
                ("Both lungs are clear.", {}), ("Clear lungs.", {}), ("The lungs are well inflated and clear.", {}),
                ("The lungs are clear of focal airspace disease.", {"Lung Opacity": 0}),
                ("Both lungs are well aerated and clear.", {}), ("The lung parenchyma is clear.", {}),
                ("The pulmonary parenchyma is clear bilaterally.", {}),
                ("There is no focal airspace opacity.", {"Lung Opacity": 0})])


def _slot_pleura(rng: np.random.Generator, style: ReaderStyle, kinds: set[str], prior: bool) -> Sentence | None:
    """No effusion / pneumothorax (those no finding forbids), or sharp costophrenic angles; None when both are."""
    items = [i for i in ("eff", "ptx") if _allowed(i, kinds)]
    if not items:
        return None
    if items == ["eff", "ptx"] and rng.random() < 0.2:
        return (_say(rng, style, "pleura", ["The costophrenic angles are sharp, and there is no pneumothorax.",
                                            "Sharp costophrenic angles without pneumothorax."]),
                {"Pleural Effusion": 0, "Pneumothorax": 0})
    if "ptx" in items and rng.random() < 0.15:
        items = ["ptx"]
    return _neg_list(rng, style, list(rng.permutation(items)) if rng.random() < 0.3 else items)


def _slot_airspace(rng: np.random.Generator, style: ReaderStyle, kinds: set[str], prior: bool) -> Sentence | None:
    """A negated list of one to three airspace / pleural observations no finding forbids; None when all are."""
    items = [i for i in ("cons", "ads", "edema", "eff", "ptx") if _allowed(i, kinds)]
    if not items:
        return None
    n = int(rng.integers(1, min(3, len(items)) + 1))
    chosen = [items[int(j)] for j in sorted(rng.permutation(len(items))[:n])]
    if "cons" in chosen and "ads" in chosen:
        chosen.remove("ads")
    return _neg_list(rng, style, chosen)


def _slot_vasculature(rng: np.random.Generator, style: ReaderStyle, kinds: set[str], prior: bool
                      ) -> Sentence | None:
    """Normal pulmonary vasculature or no edema (Edema 0); None beside edema."""
    if "edema" in kinds:
        return None
    opts = [("Pulmonary vascularity is normal.", {}), ("The pulmonary vasculature is within normal limits.", {}),
            ("No pulmonary edema.", {"Edema": 0}), ("No pulmonary vascular congestion.", {"Edema": 0}),
            ("There is no evidence of pulmonary edema.", {"Edema": 0}), ("Pulmonary vasculature is not engorged.", {}),
            ("Pulmonary vascularity is within normal limits.", {}), ("The pulmonary vessels are normal in caliber.", {}),
            ("No cephalization of the pulmonary vasculature.", {"Edema": 0})]
    return _say(rng, style, "vasculature", opts)


def _slot_lesion(rng: np.random.Generator, style: ReaderStyle, kinds: set[str], prior: bool) -> Sentence | None:
    """No nodule or mass (Lung Lesion 0); None beside a nodule."""
    if "nodule" in kinds:
        return None
    return _say(rng, style, "lesion", [("No suspicious pulmonary nodules.", {"Lung Lesion": 0}),
                                       ("No focal pulmonary nodule or mass.", {"Lung Lesion": 0}),
                                       ("No pulmonary nodules or masses are identified.", {"Lung Lesion": 0}),
                                       ("No discrete nodule or mass is seen.", {"Lung Lesion": 0})])


def _slot_bones(rng: np.random.Generator, style: ReaderStyle, kinds: set[str], prior: bool) -> Sentence | None:
    """Intact bones, some sentences negating a rib fracture (Fracture 0); None beside a fracture."""
    if "fracture" in kinds:
        return None
    return _say(rng, style, "bones",
                [("No acute osseous abnormality.", {}), ("The visualized osseous structures are unremarkable.", {}),
                 ("Osseous structures are intact.", {}), ("No acute bony abnormality.", {}),
                 ("No displaced rib fracture.", {"Fracture": 0}), ("No acute rib fractures are identified.", {"Fracture": 0}),
                 ("The bony thorax is intact.", {}),
                 ("Degenerative changes of the thoracic spine without acute fracture.", {"Fracture": 0}),
                 ("No acute osseous abnormality is identified.", {}), ("No suspicious osseous lesions.", {}),
                 ("The visualized skeletal structures are intact.", {}), ("The osseous structures are grossly intact.", {}),
                 ("No destructive osseous lesion.", {}), ("No acute bony abnormality in the visualized skeleton.", {})])


#: the writer of each normal-Findings slot (``_slot`` dispatches on the slot name; see ``_FAMILY_SLOTS``)
_SLOTS: dict[str, Callable[[np.random.Generator, ReaderStyle, set[str], bool], Sentence | None]] = {
    "heart": _slot_heart, "mediastinum": _slot_mediastinum, "cardiomediastinal": _slot_cardiomediastinal,
    "lungs": _slot_lungs, "pleura": _slot_pleura, "airspace": _slot_airspace, "vasculature": _slot_vasculature,
    "lesion": _slot_lesion, "bones": _slot_bones,
}


# Neutral remarks: real incidental findings and technique notes outside the CheXpert-14
# observations (no labels). Composed from parts, as readers vary them.
_NEUTRAL = ["The aorta is mildly tortuous.", "Calcification of the aortic knob.",
            "Atherosclerotic calcification of the aortic arch.", "Small hiatal hernia.", "Moderate hiatal hernia.",
            "Mild dextroscoliosis of the thoracic spine.", "Mild levoscoliosis of the thoracolumbar spine.",
            "The upper abdomen is unremarkable.", "No free air beneath the hemidiaphragms.",
            "Mild elevation of the right hemidiaphragm.", "Mild thoracic kyphosis.", "The trachea is midline.",
            "The hemidiaphragms are normal in contour.", "The soft tissues are unremarkable.",
            "Bilateral nipple shadows are noted.", "Unfolding of the thoracic aorta.", "Azygos fissure, a normal variant.",
            "Pectus excavatum deformity.", "Ectasia of the descending thoracic aorta.", "Prominent epicardial fat pad.",
            "Gaseous distention of the stomach.", "Interposition of colon beneath the right hemidiaphragm.",
            "Postoperative changes of the right axilla.", "Status post left mastectomy.",
            "Dense breast tissue limits evaluation of the lung bases.", "Skin folds project over the right hemithorax.",
            "Lung volumes are low, with crowding of the bronchovascular markings.",
            "The lungs are hyperexpanded with flattening of the hemidiaphragms.",
            "Hyperinflation, consistent with chronic obstructive pulmonary disease.",
            "Emphysematous changes in the upper lobes.", "Bridging osteophytes in the thoracic spine.",
            "Vertebral body heights are maintained.", "Cervical ribs are noted bilaterally.",
            "The right paratracheal stripe is normal.", "Tortuous and calcified thoracic aorta.",
            "Calcified mediastinal lymph nodes from prior granulomatous disease.", "Old granulomatous disease.",
            "Mild cardiophrenic fat.", "Anterior osteophytes of the midthoracic spine."]
_DJD_DEGREE = ("Mild", "Moderate", "Multilevel", "Advanced", "Minimal", "Chronic", "Scattered", "Age-appropriate")
_DJD_SITE = ("the thoracic spine", "the lower cervical spine", "the upper lumbar spine", "the thoracolumbar junction",
             "both shoulders", "the right shoulder", "the left shoulder", "the acromioclavicular joints",
             "the glenohumeral joints", "the sternoclavicular joints", "the lower thoracic spine",
             "the cervicothoracic junction", "the costovertebral joints")
_LIMIT_BY = ("patient rotation", "low lung volumes", "underpenetration", "overlying soft tissue", "patient positioning",
             "motion artifact", "the portable technique", "body habitus", "the lordotic projection", "overlying artifact",
             "shallow inspiration", "poor inspiratory effort", "the supine position", "semi-erect positioning",
             "overlying breast tissue", "the patient's arms", "respiratory motion", "large body habitus")
_LIMIT_WHAT = ("the lung bases", "the retrocardiac region", "the left lung base", "the costophrenic angles",
               "the lung apices", "fine parenchymal detail", "the right lung base", "the lower thorax",
               "subtle interstitial detail", "the lung periphery", "the left retrocardiac region")


def _comparison_sentence(rng: np.random.Generator, style: ReaderStyle) -> str:
    """A sentence naming the comparison study, or saying there is none (no labels)."""
    if style.prior is None:
        return _pick(rng, ["No prior studies are available for comparison.", "There are no prior examinations for comparison.",
                           "No previous radiographs are available.", "Comparison: none.",
                           "No prior chest imaging is available for comparison."])
    return _pick(rng, [f"Comparison is made to {style.prior}.", f"Comparison is made with {style.prior}.",
                       f"Findings are compared with {style.prior}.", f"{_cap(style.prior)} is available for comparison.",
                       f"Comparison: {style.prior}."])


_NEUTRAL += [
    "Coronary artery calcifications are noted.", "Mitral annular calcification is present.", "Dense mitral annular calcification.",
    "Calcified costal cartilages.", "Scattered calcified granulomas, sequela of prior granulomatous disease.",
    "Calcified right hilar lymph nodes.", "Calcified left hilar and subcarinal lymph nodes.",
    "A calcified lymph node in the aortopulmonary window.", "Cholecystectomy clips in the right upper quadrant.",
    "Surgical clips project over the right upper quadrant.", "Visualized upper abdomen is unremarkable.",
    "No free air under the diaphragm.", "No pneumoperitoneum.", "Nonobstructive bowel gas pattern in the visualized upper abdomen.",
    "Air-filled loops of colon in the left upper quadrant.", "Splenic calcifications, likely from prior granulomatous exposure.",
    "Patulous esophagus with an air-fluid level.", "Right-sided aortic arch.", "The bones are diffusely demineralized.",
    "Osteopenia.", "Schmorl's nodes in the lower thoracic spine.", "Exaggerated thoracic kyphosis.",
    "Mild rightward convex curvature of the thoracic spine.", "Sclerotic focus in the right humeral head, likely a bone island.",
    "Bilateral breast shadows overlie the lung bases.", "Mild central bronchial wall thickening.",
    "Apical bullous changes, compatible with emphysema.", "Increased retrosternal clear space.",
    "Flattening of the hemidiaphragms.", "The trachea is midline and normal in caliber.", "The thoracic inlet is unremarkable.",
    "No subcutaneous emphysema.", "Postsurgical changes of the left breast.", "Status post right mastectomy.",
    "Vertebral body heights are preserved.", "Thoracic spine alignment is normal.",
    "Multilevel bridging osteophytes, compatible with diffuse idiopathic skeletal hyperostosis.",
    "Bifid anterior right fourth rib, a normal variant.", "Congenital fusion of the left first and second ribs.",
    "Incidentally noted cervical rib on the right.", "Chronic elevation of the right hemidiaphragm with adjacent bowel interposition.",
    "Air is seen in the splenic flexure of the colon.", "Moderate stool burden in the visualized colon.",
    "Gallstones project over the right upper quadrant.", "Degenerative spurring of the acromioclavicular joints.",
    "Mild S-shaped scoliosis of the thoracolumbar spine.", "Thin linear calcification in the wall of the aortic arch.",
    "The visualized soft tissues are within normal limits.", "Biapical emphysematous changes.",
    "Mild pectus excavatum deformity.", "Pectus carinatum deformity.", "Apical lordotic positioning.",
    "Mild rightward tracheal deviation, likely from thyroid enlargement.", "Vascular calcifications in the axillae.",
    "Paraspinal soft tissues are unremarkable.", "Small sliding hiatal hernia.",
    "Retrocardiac air-fluid level, consistent with a hiatal hernia.", "Prominent pericardial fat.",
    "Lobulated contour of the left hemidiaphragm.", "Mild tenting of the right hemidiaphragm.",
    "Hair braids project over the lung apices.", "External artifact projects over the left hemithorax.",
    "Overlying clothing artifact.", "Postsurgical changes of anterior cervical discectomy and fusion.",
    "Old granulomatous disease with calcified hilar nodes.", "Surgical absence of the right breast.",
    "Subtle irregularity of the costochondral junctions.", "Symmetric soft tissues of the chest wall.",
    "Status post left lumpectomy.", "Postsurgical changes of bilateral reduction mammoplasty.",
    "Calcified left axillary lymph nodes.", "Calcified right supraclavicular lymph nodes.",
    "Mild anterior osteophytosis of the thoracic spine.", "Endplate sclerosis in the lower thoracic spine.",
    "Facet arthropathy of the lower cervical spine.", "Disc space narrowing at multiple thoracic levels.",
    "Calcific tendinopathy of the right rotator cuff.", "Distal clavicular resection on the right.",
    "High-riding right humeral head, suggesting chronic rotator cuff tear.",
    "Dilated loops of bowel in the partially imaged upper abdomen.",
    "Mild bronchiectasis in the lower lobes.", "Carotid artery calcifications.", "Scattered vascular calcifications in the neck.",
    "Soft tissue calcifications in the left shoulder region.", "Mild demineralization of the visualized ribs.",
    "The partially imaged cervical spine is unremarkable.", "Moderate gaseous distention of the transverse colon.",
    "A small gastric bubble is seen beneath the left hemidiaphragm.",
    "Relative elevation of the left hemidiaphragm, likely related to gastric distention.",
    "Chilaiditi sign, with colon interposed between the liver and the right hemidiaphragm.",
    "Tracheal calcification, a normal finding with age.", "Calcification of the tracheobronchial cartilages.",
    "The scapular tips overlie the upper lungs.", "Mild thoracic dextrocurvature.", "Levoconvex curvature of the lumbar spine.",
    "Postoperative changes of the left upper abdomen.", "Granulomatous calcifications in the spleen.",
    "Air in the gastric fundus.", "Bilateral humeral head osteophytes.", "Mild narrowing of the glenohumeral joint spaces.",
    "Streak artifact from overlying jewelry.", "Overlying snaps from the patient's gown.",
    "Sequelae of prior histoplasmosis.", "Bilateral gynecomastia.", "Prominent breast tissue bilaterally.",
    "Axillary soft tissues are symmetric.", "Mild kyphoscoliosis.", "Mild tortuosity of the brachiocephalic vessels.",
    "Calcified atherosclerotic plaque at the aortic arch.", "Mild atherosclerosis of the thoracic aorta.",
    "Diffusely sclerotic bones, compatible with renal osteodystrophy.", "Morgagni hernia at the right cardiophrenic angle.",
    "Small Bochdalek hernia at the left posterior hemidiaphragm.", "The stomach is distended with air.",
    "Abundant subcutaneous fat along the lateral chest walls.", "Mild soft tissue swelling over the left shoulder.",
    "Benign-appearing calcifications in the right breast.", "Punctate calcifications overlie the left axilla.",
    "Bony mineralization is within normal limits.", "Mild acromioclavicular joint arthrosis.",
    "Chondrocalcinosis of the shoulders.", "Osteonecrosis of the left humeral head.",
    "H-shaped vertebrae, compatible with sickle cell disease.", "Inferior rib notching bilaterally.",
    "Absent left pectoralis muscle, compatible with Poland syndrome.",
]
_AORTA_NOUN = ("tortuosity", "unfolding", "ectasia", "calcification", "atherosclerotic calcification", "mural calcification")
_AORTA_PART = ("the thoracic aorta", "the aortic arch", "the descending thoracic aorta", "the aortic knob", "the ascending aorta")
_ABDOMEN = ("the visualized upper abdomen", "the included upper abdomen", "the partially imaged upper abdomen",
            "the bowel gas pattern in the upper abdomen", "the subdiaphragmatic region")
_GRANULOMA = ("A calcified granuloma", "A small calcified granuloma", "A punctate calcified granuloma",
              "A densely calcified granuloma")


def _neutral(rng: np.random.Generator) -> str:
    """One incidental remark or technique note without CheXpert labels (composed from parts)."""
    r = rng.random()
    side = _pick(rng, ["right", "left"])
    if r < 0.18:
        deg, site = _pick(rng, _DJD_DEGREE), _pick(rng, _DJD_SITE)
        return _pick(rng, [f"{deg} degenerative changes of {site}.", f"Degenerative changes are seen in {site}.",
                           f"{deg} spondylosis of the {_pick(rng, ['thoracic', 'lower thoracic', 'midthoracic'])} spine.",
                           f"{deg} osteoarthritis of {_pick(rng, ['both shoulders', 'the glenohumeral joints', 'the acromioclavicular joints'])}.",
                           f"{deg} degenerative disc disease of {_pick(rng, ['the thoracic spine', 'the lower cervical spine'])}.",
                           f"Marginal osteophytes along {_pick(rng, ['the thoracic spine', 'the thoracolumbar junction'])}."])
    if r < 0.33:
        what, by = _pick(rng, _LIMIT_WHAT), _pick(rng, _LIMIT_BY)
        return _pick(rng, [f"Evaluation of {what} is limited by {by}.", f"The study is limited by {by}.",
                           f"{_cap(by)} limits assessment of {what}.", f"The patient is rotated to the {side}.",
                           f"The {side} costophrenic angle is partially excluded from the field of view.",
                           "The lung apices are partially excluded from the field of view.",
                           f"The patient's chin obscures {_pick(rng, ['the lung apices', 'the right apex', 'the left apex'])}.",
                           f"{_pick(rng, ['Suboptimal', 'Poor', 'Shallow'])} inspiratory effort.",
                           "Mildly underpenetrated radiograph.", f"Mild rotation of the patient to the {side}.",
                           f"Portable technique limits evaluation of {what}."])
    if r < 0.42:
        deg = _pick(rng, ["Mild", "Moderate", "Minimal", "Slight", "Marked", "Diffuse"])
        part = _pick(rng, _AORTA_PART)
        return _pick(rng, [f"{deg} {_pick(rng, _AORTA_NOUN)} of {part}.", f"{_cap(part)} is {deg.lower()}ly tortuous.",
                           f"{_cap(part)} is tortuous and calcified.", f"Atherosclerotic disease of {part}."])
    if r < 0.49:
        return _pick(rng, [f"{_cap(_pick(rng, _ABDOMEN))} is {_pick(rng, ['unremarkable', 'within normal limits'])}.",
                           f"{_cap(_pick(rng, _ABDOMEN))} appears unremarkable.",
                           f"No free air beneath the {_pick(rng, ['hemidiaphragms', 'right hemidiaphragm', 'diaphragm'])}."])
    if r < 0.55:
        prep = _pick(rng, [pr for lobe in _LOBE_WORDS.values() for pr, _ in lobe if "," not in pr])
        return _pick(rng, [f"{_pick(rng, _GRANULOMA)} {prep}.", f"{_pick(rng, _GRANULOMA)} projects {prep}.",
                           f"Several calcified granulomas {_pick(rng, ['in the upper lobes', 'in the right lung', 'in the left lung', 'at the lung bases'])}."])
    if r < 0.6:
        deg = _pick(rng, ["Mild", "Moderate", "Chronic", "Slight"])
        return _pick(rng, [f"{deg} elevation of the {side} hemidiaphragm.", f"Eventration of the {side} hemidiaphragm.",
                           f"The {side} hemidiaphragm is {_pick(rng, ['mildly', 'moderately', 'chronically'])} elevated.",
                           f"Eventration of the anteromedial {side} hemidiaphragm."])
    if r < 0.65:
        vol = _pick(rng, ["low", "diminished", "reduced", "slightly low", "somewhat low"])
        return _pick(rng, [f"Lung volumes are {vol}, with crowding of the bronchovascular markings.",
                           f"Lung volumes are {vol}, accentuating the bronchovascular markings.",
                           f"Lung volumes are {vol}.", "Low lung volumes accentuate the pulmonary vasculature.",
                           "The lungs are hyperinflated, with flattening of the hemidiaphragms.",
                           "Hyperexpanded lungs with an enlarged retrosternal clear space."])
    return _pick(rng, _NEUTRAL)


# Clinical context a reader ties the impression to (indication words; none names a CheXpert observation).
_CONTEXT = {
    "normal": ("chest pain", "shortness of breath", "cough", "syncope", "palpitations", "dyspnea on exertion",
               "atypical chest pain", "fatigue", "preoperative evaluation", "dizziness", "wheezing", "tachycardia",
               "hypertension", "a history of asthma", "intermittent chest tightness", "nausea and vomiting",
               "abdominal pain", "an abnormal electrocardiogram", "recent travel", "a remote smoking history",
               "generalized weakness", "atrial fibrillation", "an elevated troponin", "back pain", "epigastric discomfort",
               "chronic kidney disease", "diabetes mellitus", "rheumatoid arthritis", "upper respiratory symptoms",
               "chest wall tenderness", "lightheadedness", "anemia", "sickle cell disease", "a history of lymphoma",
               "pre-employment screening", "chest tightness after exercise", "a recent viral illness",
               "acute alcohol intoxication", "anxiety", "a cardiac murmur"),
    "pneumonia": ("fever and cough", "productive cough", "leukocytosis", "sepsis", "hypoxia", "aspiration risk",
                  "dysphagia", "night sweats", "neutropenic fever", "recent chemotherapy", "pleuritic chest pain",
                  "altered mental status", "rigors", "elevated procalcitonin", "purulent sputum", "fever and chills",
                  "immunosuppression", "crackles at the right base", "diminished breath sounds", "a new oxygen requirement",
                  "tachypnea", "a history of chronic obstructive pulmonary disease"),
    "chf": ("orthopnea", "lower extremity swelling", "end-stage renal disease", "missed dialysis", "elevated BNP",
            "weight gain", "paroxysmal nocturnal dyspnea", "ischemic cardiomyopathy", "valvular disease",
            "progressive dyspnea", "jugular venous distension", "a reduced ejection fraction", "aortic stenosis",
            "bibasilar rales", "acute kidney injury"),
    "pneumothorax": ("recent line placement", "recent thoracentesis", "transbronchial biopsy", "blunt trauma",
                     "sudden pleuritic pain", "barotrauma", "recent bronchoscopy", "penetrating injury",
                     "a recent lung biopsy", "mechanical ventilation", "a tall, thin body habitus"),
    "fracture": ("a recent fall", "blunt trauma", "a motor vehicle collision", "focal rib tenderness",
                 "chest wall pain after coughing", "an assault", "a ground-level fall", "a bicycle accident",
                 "a sports injury", "point tenderness over the ribs"),
    "nodule": ("a long smoking history", "unintentional weight loss", "hemoptysis", "hoarseness",
               "clubbing", "an incidental finding on abdominal imaging", "a former heavy smoker", "radon exposure",
               "chronic cough in a smoker"),
}
_CONTEXT_OF = {"pneumonia": "pneumonia", "consolidation": "pneumonia", "opacity": "pneumonia", "edema": "chf",
               "cardiomegaly": "chf", "effusion": "chf", "pneumothorax": "pneumothorax", "fracture": "fracture",
               "nodule": "nodule"}


def _with_context(rng: np.random.Generator, text: str, findings: list[Finding]) -> str:
    """Tie an impression sentence to the clinical context ("... in this patient with fever and cough.")."""
    key = next((_CONTEXT_OF[f.kind] for f in findings if f.kind in _CONTEXT_OF), "normal" if not findings else None)
    if key is None:
        return text
    ctx = _pick(rng, _CONTEXT[key])
    if key == "normal":
        return _pick(rng, [f"{text[:-1]} to explain the patient's {ctx}." if not ctx.startswith(("a ", "an ", "pre",
                                                                                                   "recent"))
                           else f"{text[:-1]} in this patient with {ctx}.", f"{text[:-1]} in this patient with {ctx}."])
    return _pick(rng, [f"{text[:-1]} in this patient with {ctx}.", f"{text[:-1]} in the setting of {ctx}.",
                       f"{text[:-1]}, given the history of {ctx}."])


_CLINICIAN = ("the referring physician", "the ordering provider", "the emergency department physician",
              "the covering resident", "the intensive care team", "the patient's nurse", "the clinical team")
_COMM_HOW = ("by telephone", "at the time of dictation", "shortly after the examination", "in person",
             "by telephone at the time of interpretation", "via the critical results system")


def _communication(rng: np.random.Generator) -> Sentence:
    """A read-back sentence for urgent findings (no labels: it names no observation)."""
    return (_pick(rng, [f"These findings were discussed with {_pick(rng, _CLINICIAN)} {_pick(rng, _COMM_HOW)}.",
                        f"Findings were communicated to {_pick(rng, _CLINICIAN)} {_pick(rng, _COMM_HOW)}.",
                        f"Results were called to {_pick(rng, _CLINICIAN)} {_pick(rng, _COMM_HOW)}."]), {})


# Recommendations closing an Impression, per finding kind; none names a CheXpert observation.
_RECOMMEND = {
    "pneumonia": ("Recommend follow-up radiographs in {w} weeks after treatment to document resolution.",
                  "Follow-up chest radiographs after a course of antibiotics are recommended.",
                  "Recommend repeat PA and lateral radiographs after treatment."),
    "nodule": ("Recommend a noncontrast chest CT for further characterization.",
               "Comparison with prior outside imaging would be helpful, if available.",
               "Recommend follow-up chest CT in {m} months.",
               "Further evaluation with dedicated chest CT is recommended."),
    "mediastinum": ("Recommend CT angiography of the chest for further evaluation.",
                    "Contrast-enhanced chest CT is recommended to evaluate the aorta."),
    "fracture": ("Recommend a dedicated rib series if clinically warranted.", "Correlate with focal point tenderness."),
    "pneumothorax": ("Recommend a short-interval follow-up radiograph.",
                     "A follow-up radiograph in {h} hours is recommended."),
    "chf": ("Correlate clinically for volume status.", "Recommend correlation with clinical assessment of fluid status."),
    "any": ("Clinical correlation is recommended.", "Recommend correlation with clinical findings.",
            "Recommend PA and lateral radiographs when the patient is able, for better evaluation.",
            "Correlate clinically.", "A dedicated PA and lateral examination could be obtained when clinically feasible."),
}
_RECOMMEND_OF = {"pneumonia": "pneumonia", "consolidation": "pneumonia", "opacity": "pneumonia", "nodule": "nodule",
                 "mediastinum": "mediastinum", "fracture": "fracture", "pneumothorax": "pneumothorax", "edema": "chf",
                 "cardiomegaly": "chf", "effusion": "chf"}


def _recommendation(rng: np.random.Generator, findings: list[Finding]) -> str:
    """A recommendation sentence for the Impression (no labels: it names no observation)."""
    keys = [_RECOMMEND_OF[f.kind] for f in findings if f.kind in _RECOMMEND_OF]
    key = _pick(rng, keys) if keys and rng.random() < 0.8 else "any"
    return _pick(rng, _RECOMMEND[key]).format(w=_pick(rng, ["4 to 6", "6 to 8", "3 to 4"]),
                                              m=_pick(rng, ["3", "6", "12"]), h=_pick(rng, ["4", "6", "24"]))


# Normal-Findings families: the slots a reader walks through, in order.
_FAMILY_SLOTS = {
    "systematic": ["heart", "mediastinum", "lungs", "pleura", "bones"],
    "combined": ["cardiomediastinal", "lungs", "pleura", "vasculature", "bones"],
    "compact": ["lungs", "airspace", "cardiomediastinal", "bones"],
    "pertinent": ["heart", "lungs", "airspace", "pleura", "lesion", "bones"],
}
_REGION = {"cardiomegaly": 1, "mediastinum": 1, "edema": 2, "consolidation": 2, "opacity": 2, "atelectasis": 2,
           "nodule": 2, "pneumonia": 2, "effusion": 3, "pneumothorax": 3, "pleural_other": 3, "fracture": 4}
_SLOT_REGION = {"heart": 1, "mediastinum": 1, "cardiomediastinal": 1, "lungs": 2, "airspace": 2, "vasculature": 2,
                "lesion": 2, "pleura": 3, "bones": 4}


_IMPRESSION_NORMAL = ["No acute cardiopulmonary process.", "No acute cardiopulmonary abnormality.",
                      "No acute intrathoracic process.", "Normal chest radiograph.",
                      "No radiographic evidence of acute cardiopulmonary disease.", "No active cardiopulmonary disease.",
                      "No acute cardiopulmonary findings.", "Unremarkable chest radiograph.",
                      "No acute disease in the chest.", "No acute abnormality.", "Normal chest x-ray.",
                      "No evidence of acute cardiopulmonary disease.", "No acute intrathoracic abnormality.",
                      "No radiographic evidence of acute intrathoracic pathology.", "No significant radiographic abnormality.",
                      "Unremarkable portable chest radiograph.", "No acute radiographic abnormality of the chest.",
                      "Normal frontal and lateral chest radiographs."]
_IMPRESSION_STABLE = ["No acute cardiopulmonary process. No significant interval change.",
                      "Stable chest radiograph without acute process.",
                      "No significant change from {prior}. No acute cardiopulmonary process.",
                      "No interval change. No acute cardiopulmonary abnormality."]


def _impression_sentences(findings: list[Finding], devices: list[str], rng: np.random.Generator,
                          style: ReaderStyle | None = None, whens: dict[str, str | None] | None = None
                          ) -> list[Sentence]:
    """Impression sentences (1-3) with their labels.

    ``whens`` holds each finding's comparison status (``_draw_whens``, the one the Findings used);
    the Impression qualifies a finding with the same status ("Stable ...", "New ...") or none.
    The findings' sentences come first (``_impression_findings``), then a read-back of urgent
    findings and a devices remark (``_add_impression_notes``), a normal statement when nothing else
    was said (``_add_normal_impression``), a recommendation, and a clinical context on a short opening.
    """
    style = style or _reader_style(rng)
    if whens is None:
        whens = _draw_whens(findings, rng, style)
    by = {f.kind: f for f in findings}
    out = _impression_findings(by, rng, whens)
    _add_impression_notes(out, by, devices, rng, style)
    if not out or all(lbl.get("Support Devices") for _, lbl in out):
        _add_normal_impression(out, findings, rng, style)
    if len(out) < 3 and rng.random() < (0.14 if findings else 0.04):
        out.append((_recommendation(rng, findings), {}))
    out = out[:3]
    # clinical context closes a short first sentence (one sentence only: "1.2 cm" has no ". ")
    if rng.random() < 0.4 and ". " not in out[0][0] and ";" not in out[0][0] and len(out[0][0].split()) < 9:
        out[0] = (_with_context(rng, out[0][0], findings), out[0][1])
    return out


def _impression_findings(by: dict[str, Finding], rng: np.random.Generator, whens: dict[str, str | None]
                         ) -> list[Sentence]:
    """The Impression's sentences on the findings ``by`` kind, most urgent first, at most three from effusions on."""
    out: list[Sentence] = []
    if "pneumothorax" in by:
        out.append(_imp_pneumothorax(by["pneumothorax"], rng, whens.get("pneumothorax")))
    if "pneumonia" in by:
        out.append(_imp_pneumonia(by["pneumonia"], rng, whens.get("pneumonia")))
    elif "consolidation" in by:
        _, adj = _loc(rng, by["consolidation"].location or "right lower lobe")
        out.append((_cmp(rng, whens.get("consolidation"), f"{_cap(adj)} consolidation."), {"Consolidation": 1}))
    out.extend(_imp_heart(by, rng, whens))
    if "effusion" in by and len(out) < 3:
        out.append(_imp_effusion(by["effusion"], rng, whens.get("effusion")))
    if "nodule" in by and len(out) < 3:
        out.append(_imp_nodule(by["nodule"], rng, whens.get("nodule")))
    if "opacity" in by and len(out) < 3:
        out.append(_imp_opacity(by["opacity"], rng, whens.get("opacity")))
    if "mediastinum" in by and len(out) < 3:
        out.append((_cmp(rng, whens.get("mediastinum"),
                         _pick(rng, ["Widened mediastinum.",
                                     "Mediastinal widening, further evaluation with chest CT is recommended.",
                                     "Widening of the mediastinum. Recommend CT for further evaluation."])),
                    {"Enlarged Cardiomediastinum": 1}))
    if "fracture" in by and by["fracture"].detail == "acute" and len(out) < 3:
        f = by["fracture"]
        out.append((_cmp(rng, whens.get("fracture"),
                         _pick(rng, [f"Acute {_side_word(f.side)} {f.location} rib fracture.",
                                     f"Acute fracture of the {_side_word(f.side)} "
                                     f"{_RIB_WORDS.get(f.location or '6th')} rib."])),
                    {"Fracture": 1}))
    if "atelectasis" in by and len(out) < 3 and (not out or rng.random() < 0.5):
        airspace = "consolidation" in by or "pneumonia" in by or "opacity" in by
        out.append(_imp_atelectasis(by["atelectasis"], rng, whens.get("atelectasis"), airspace))
    if "pleural_other" in by and not out and rng.random() < 0.5:
        side = _cap(_side_word(by["pleural_other"].side))
        out.append((_cmp(rng, whens.get("pleural_other"),
                         _pick(rng, [f"{side} pleural thickening.", f"{side} pleural thickening, likely chronic."])),
                    {"Pleural Other": 1}))
    return out


def _imp_pneumothorax(f: Finding, rng: np.random.Generator, when: str | None) -> Sentence:
    """Pneumothorax, hedged ("Possible tiny right apical pneumothorax.") or with its size and status."""
    side = _side_word(f.side)
    if f.hedged:
        return (_pick(rng, [f"Possible tiny {side} apical pneumothorax.", f"Questionable small {side} pneumothorax.",
                            f"A tiny {side} pneumothorax cannot be excluded."]), {"Pneumothorax": -1})
    sz = _pick(rng, _PTX_SIZE[f.severity or "small"])
    return (_cmp(rng, when, _pick(rng, [f"{_cap(sz)} {side} pneumothorax.", f"{_cap(sz)} {side}-sided pneumothorax.",
                                        f"{_cap(sz)} {side} pneumothorax, as above."])), {"Pneumothorax": 1})


def _imp_pneumonia(f: Finding, rng: np.random.Generator, w: str | None) -> Sentence:
    """Pneumonia in a lobe, hedged (Pneumonia -1) or stated, often with its consolidation."""
    _, adj = _loc(rng, f.location or "right lower lobe")
    if f.hedged:
        return _pick(rng, [(_cmp(rng, w, f"{_cap(adj)} consolidation, concerning for pneumonia."),
                            {"Consolidation": 1, "Pneumonia": -1}),
                           ("Findings may represent pneumonia in the appropriate clinical setting.", {"Pneumonia": -1}),
                           (_cmp(rng, w, f"{_cap(adj)} consolidation, which may represent pneumonia."),
                            {"Consolidation": 1, "Pneumonia": -1}),
                           (_cmp(rng, w, f"{_cap(adj)} consolidation, suspicious for pneumonia."),
                            {"Consolidation": 1, "Pneumonia": -1}),
                           (f"Possible early {adj} pneumonia.", {"Pneumonia": -1}),
                           (f"{_cap(adj)} airspace consolidation; infection cannot be excluded.",
                            {"Consolidation": 1, "Pneumonia": -1})])
    return _pick(rng, [(_cmp(rng, w, f"{_cap(adj)} pneumonia."), {"Pneumonia": 1}),
                       (_cmp(rng, w, f"{_cap(adj)} consolidation consistent with pneumonia."),
                        {"Consolidation": 1, "Pneumonia": 1}),
                       (f"Findings compatible with {adj} pneumonia.", {"Pneumonia": 1}),
                       (f"{_cap(adj)} airspace consolidation compatible with pneumonia.",
                        {"Consolidation": 1, "Pneumonia": 1}),
                       (_cmp(rng, w, f"{_cap(adj)} pneumonia.") + " Recommend follow-up radiographs after treatment.",
                        {"Pneumonia": 1})])


def _imp_heart(by: dict[str, Finding], rng: np.random.Generator, whens: dict[str, str | None]) -> list[Sentence]:
    """Cardiomegaly and edema: one heart-failure sentence when both are stated and not compared, else one each."""
    if ("cardiomegaly" in by and "edema" in by and not by["edema"].hedged
            and whens.get("edema") is None and whens.get("cardiomegaly") is None):
        s = _pick(rng, _SEV_ADJ[by["edema"].severity or "mild"])
        return [_pick(rng, [(f"Cardiomegaly with {s} pulmonary edema.", {"Cardiomegaly": 1, "Edema": 1}),
                            (f"{_cap(s)} congestive heart failure.", {"Edema": 1}),
                            (f"Cardiomegaly and {s} interstitial edema, compatible with congestive heart failure.",
                             {"Cardiomegaly": 1, "Edema": 1}),
                            (f"Findings consistent with {s} fluid overload.", {"Edema": 1})])]
    out: list[Sentence] = []
    if "edema" in by:
        f = by["edema"]
        s = _pick(rng, _SEV_ADJ[f.severity or "mild"])
        out.append((_pick(rng, [f"Possible {s} pulmonary edema.", f"Cannot exclude {s} pulmonary edema."]),
                    {"Edema": -1})
                   if f.hedged else (_cmp(rng, whens.get("edema"), f"{_cap(s)} pulmonary edema."), {"Edema": 1}))
    if "cardiomegaly" in by:
        out.append(_imp_cardiomegaly(by["cardiomegaly"], rng, whens.get("cardiomegaly"), "edema" in by))
    return out


def _imp_cardiomegaly(f: Finding, rng: np.random.Generator, w: str | None, edema: bool) -> Sentence:
    """Cardiomegaly on its own; "... without pulmonary edema." (Edema 0) only when ``edema`` is False."""
    s = _pick(rng, _CM_ADJ[f.severity or "mild"])
    opts = [(_cmp(rng, w, f"{_cap(s)} cardiomegaly."), {"Cardiomegaly": 1}),
            (_cmp(rng, w, "Cardiomegaly."), {"Cardiomegaly": 1})]
    if w in (None, "unchanged"):
        opts.append((_cmp(rng, w, "Enlarged cardiac silhouette."), {"Cardiomegaly": 1}))
    if not edema:
        opts.append((_cmp(rng, w, f"{_cap(s)} cardiomegaly without pulmonary edema."),
                     {"Cardiomegaly": 1, "Edema": 0}))
    return _pick(rng, opts)


def _imp_effusion(f: Finding, rng: np.random.Generator, when: str | None) -> Sentence:
    """Pleural effusion(s), hedged ("Possible small pleural effusion.") or with size, side and status."""
    side = _side_word(f.side)
    sz = _pick(rng, _EFF_SIZE[f.severity or "small"])
    if f.hedged:
        return (_pick(rng, ["Possible small pleural effusion.", "Possible trace pleural effusion.",
                            "A small pleural effusion cannot be excluded."]), {"Pleural Effusion": -1})
    if side == "bilateral":
        return (_cmp(rng, when, _pick(rng, [f"{_cap(sz)} bilateral pleural effusions.",
                                            f"{_cap(sz)} bilateral effusions.",
                                            f"{_cap(sz)} left and right pleural effusions."])),
                {"Pleural Effusion": 1})
    return (_cmp(rng, when, _pick(rng, [f"{_cap(sz)} {side} pleural effusion.", f"{_cap(sz)} {side} effusion."])),
            {"Pleural Effusion": 1})


def _imp_nodule(f: Finding, rng: np.random.Generator, w: str | None) -> Sentence:
    """A mass (with a CT recommendation) or a nodule with its size; "increased" reads "Enlarging"."""
    _, adj = _loc(rng, f.location or "right upper lobe")
    if f.detail == "mass":
        return (_cmp(rng, w, _pick(rng, [f"{_cap(adj)} mass, concerning for malignancy.",
                                         f"{_cap(adj)} mass, suspicious for neoplasm. Chest CT is recommended.",
                                         f"{_cap(adj)} mass. Recommend CT of the chest for further evaluation."]),
                     "nodule"), {"Lung Lesion": 1})
    return (_cmp(rng, w, _pick(rng, [f"{f.size_cm:.1f} cm {adj} nodule, recommend chest CT for further evaluation.",
                                     f"{_cap(adj)} pulmonary nodule. Recommend nonemergent chest CT.",
                                     f"{f.size_cm:.1f} cm {adj} nodule. Comparison with older studies would be "
                                     "helpful."]), "nodule"),
            {"Lung Lesion": 1})


def _imp_opacity(f: Finding, rng: np.random.Generator, w: str | None) -> Sentence:
    """A lung opacity in a lobe, often with its differential (Atelectasis / Pneumonia -1)."""
    _, adj = _loc(rng, f.location or "right lower lobe")
    return _pick(rng, [(_cmp(rng, w, f"{_cap(adj)} opacity, which may represent atelectasis or early pneumonia."),
                        {"Lung Opacity": 1, "Atelectasis": -1, "Pneumonia": -1}),
                       (_cmp(rng, w, f"Patchy {adj} opacity; infection cannot be excluded."),
                        {"Lung Opacity": 1, "Pneumonia": -1}),
                       (_cmp(rng, w, f"Nonspecific {adj} opacity."), {"Lung Opacity": 1}),
                       (_cmp(rng, w, f"{_cap(adj)} opacity, possibly early pneumonia in the appropriate clinical "
                                     "setting."),
                        {"Lung Opacity": 1, "Pneumonia": -1}),
                       (_cmp(rng, w, f"{_cap(adj)} opacity.") + " Follow-up radiographs are recommended.",
                        {"Lung Opacity": 1})])


def _imp_atelectasis(f: Finding, rng: np.random.Generator, w: str | None, airspace: bool) -> Sentence:
    """Basilar atelectasis, hedged or stated; "no focal consolidation" (Consolidation 0) only without ``airspace``.

    ``airspace``: the study has a consolidation, pneumonia or opacity, so "Bibasilar atelectasis, no
    focal consolidation." is rewritten as "Bibasilar atelectasis.".
    """
    side = _side_word(f.side)
    if f.hedged:
        return (_pick(rng, [f"{_cap(side)} basilar opacity, likely atelectasis.",
                            f"{_cap(side)} basilar opacity, possibly atelectasis."]),
                {"Lung Opacity": 1, "Atelectasis": -1})
    text = _cmp(rng, w, _pick(rng, ["Bibasilar atelectasis.", "Bibasilar atelectasis, no focal consolidation.",
                                    "Atelectasis at both lung bases."]
                              if f.location == "bibasilar" else [f"{_cap(side)} basilar atelectasis.",
                                                                 f"Atelectasis at the {side} base."]))
    if "no focal consolidation" not in text:
        return text, {"Atelectasis": 1}
    if airspace:
        return _cmp(rng, w, "Bibasilar atelectasis."), {"Atelectasis": 1}
    return text, {"Atelectasis": 1, "Consolidation": 0}


def _add_impression_notes(out: list[Sentence], by: dict[str, Finding], devices: list[str],
                          rng: np.random.Generator, style: ReaderStyle) -> None:
    """Append to ``out`` a read-back of urgent findings (when short) and a remark on support devices."""
    urgent = ("pneumothorax" in by and not by["pneumothorax"].hedged) or "mediastinum" in by or (
        "fracture" in by and by["fracture"].detail == "acute") or ("nodule" in by and by["nodule"].detail == "mass")
    if urgent and len(out) < 2 and rng.random() < 0.5:
        out.append(_communication(rng))
    if devices and len(out) < 3 and rng.random() < 0.5:
        out.append((_pick(rng, ["Support devices in standard position.", "Lines and tubes in appropriate position.",
                                "Support devices as described above.", "Lines and tubes are unchanged in position."
                                if style.prior is not None else "Lines and tubes in expected position."]),
                    {"Support Devices": 1}))


def _add_normal_impression(out: list[Sentence], findings: list[Finding], rng: np.random.Generator,
                           style: ReaderStyle) -> None:
    """Open ``out`` (no finding stated) with a normal or, against a prior, stable statement."""
    if style.prior is not None and not findings and rng.random() < 0.5:
        out.insert(0, (_pick(rng, _IMPRESSION_STABLE).format(prior=style.prior), {}))
    else:
        out.insert(0, (_pick(rng, _IMPRESSION_NORMAL), {}))
    if not findings and rng.random() < 0.15:
        out.append((_pick(rng, ["No evidence of pneumonia.", "Specifically, no evidence of pneumonia."]),
                    {"Pneumonia": 0}))


# --------------------------------------------------------------------------- real report language (module doc)
#: probability that a one-sided effusion / pneumothorax / consolidation / opacity whose other side is free also
#: gets a negative for the other side in the Findings (tuned so ~3.3 % of Findings sections have one, IU-Xray's rate)
P_OTHER_SIDE_FINDINGS = 0.16
#: the same in the Impression (tuned to ~0.8 % of Impressions, IU-Xray's 32 of 3,820)
P_OTHER_SIDE_IMPRESSION = 0.05
#: probability that an unchanged finding (against a prior) gets a "no new X" sentence (our estimate)
P_NO_NEW = 0.35
_OTHER = {"right": "left", "left": "right"}
# lung findings that keep a lung from being "clear"
_LUNG_SIDE_KINDS = {"consolidation", "pneumonia", "opacity", "atelectasis", "edema", "nodule", "pneumothorax",
                    "effusion", "pleural_other"}


def _sides_of(f: Finding) -> set[str]:
    """The sides ("right", "left") finding ``f`` touches: its side, else its lobe's; bilateral is both."""
    side = f.side or (_LOBES[f.location][2] if f.location in _LOBES else None)
    if side == "bilateral" or f.kind == "edema":
        return {"right", "left"}
    return {side} if side in _OTHER else set()


def other_side_negative(f: Finding, findings: Sequence[Finding], rng: np.random.Generator) -> Sentence | None:
    """A true negative on the side opposite to one-sided finding ``f`` ("No left pleural effusion."), or None.

    Only for an unhedged effusion, pneumothorax, consolidation or opacity on one side, and only when no finding
    touches the other side in a way the sentence would deny (another of the same observation, or any lung
    finding for "The left lung is clear."). Labels: the sentence alone, negative for its observation (0) or none.
    """
    sides = _sides_of(f)
    if f.hedged or f.kind not in ("effusion", "pneumothorax", "consolidation", "opacity") or len(sides) != 1:
        return None
    other = _OTHER[next(iter(sides))]
    busy = {g.kind for g in findings if g is not f and other in _sides_of(g)}
    lung_free = not (busy & _LUNG_SIDE_KINDS)
    if f.kind == "effusion" and "effusion" not in busy:
        return _pick(rng, [(f"No {other} pleural effusion.", {"Pleural Effusion": 0}),
                           (f"No pleural effusion on the {other}.", {"Pleural Effusion": 0}),
                           (f"No {other}-sided effusion.", {"Pleural Effusion": 0}),
                           (f"The {other} costophrenic angle is sharp.", {"Pleural Effusion": 0})])
    if f.kind == "pneumothorax" and "pneumothorax" not in busy:
        return _pick(rng, [(f"No {other} pneumothorax.", {"Pneumothorax": 0}),
                           (f"No pneumothorax on the {other}.", {"Pneumothorax": 0}),
                           (f"No {other}-sided pneumothorax.", {"Pneumothorax": 0})])
    if f.kind in ("consolidation", "opacity") and lung_free:
        obs = ("Consolidation", "consolidation") if f.kind == "consolidation" else ("Lung Opacity", "focal opacity")
        return _pick(rng, [(f"The {other} lung is clear.", {}), (f"The {other} lung is clear.", {}),
                           (f"No {obs[1]} in the {other} lung.", {obs[0]: 0}),
                           (f"No {obs[1]} on the {other}.", {obs[0]: 0})])
    return None


# "no new X" sentences per finding kind: they state no label (the project's convention, module doc)
_NO_NEW = {
    "consolidation": ("No new consolidation.", "No new focal consolidation.", "No new areas of consolidation.",
                      "No new or worsening consolidation."),
    "opacity": ("No new focal opacity.", "No new opacities.", "No new or worsening airspace opacity."),
    "effusion": ("No new or worsening effusion.", "No new or enlarging pleural effusion.",
                 "No new or increasing pleural effusion."),
    "pneumothorax": ("No new or enlarging pneumothorax.", "No new or increasing pneumothorax."),
    "edema": ("No new or worsening edema.", "No new or worsening pulmonary edema."),
}


def _no_new(f: Finding, when: str | None, rng: np.random.Generator) -> Sentence | None:
    """ "No new X." beside an unchanged finding ``f`` of a kind in ``_NO_NEW`` (labels: none), else None."""
    if when != "unchanged" or f.hedged or f.kind not in _NO_NEW:
        return None
    return _pick(rng, _NO_NEW[f.kind]), {}


_OBS_OF = {"effusion": ("Pleural Effusion",), "pneumothorax": ("Pneumothorax",), "edema": ("Edema",),
           "consolidation": ("Consolidation", "Pneumonia"), "opacity": ("Lung Opacity",)}


def _after_statement(f: Finding, impression: list[Sentence], s: Sentence) -> None:
    """Insert ``s`` after the first Impression sentence stating ``f``'s observation positive; nothing when the
    Impression does not state it or already has three sentences."""
    at = next((k for k, (_, lbl) in enumerate(impression) if any(lbl.get(o) == 1 for o in _OBS_OF[f.kind])), None)
    if at is not None and len(impression) < 3:
        impression.insert(at + 1, s)


def _add_real_language(findings: Sequence[Finding], whens: dict[str, str | None], style: ReaderStyle,
                       placed: list[tuple[float, Sentence]], impression: list[Sentence]) -> None:
    """Add pertinent negatives on the other side and "no new X" sentences (module doc) to both sections.

    Drawn from a generator of the reader's own (``style.seed``), not the report's, so a report that gets none of
    these sentences is word for word what the grammar wrote before they existed. Findings sentences go right
    after their finding's (``placed`` regions); Impression sentences right after the sentence stating it.
    """
    rng = np.random.default_rng([style.seed, 0x1A46])
    otherwise = any("otherwise" in t or "remainder of the lungs" in t for _, (t, _) in placed)
    for f in findings:
        region = _REGION[f.kind] + 0.1 + 0.01 * float(rng.random())
        neg = other_side_negative(f, findings, rng)
        if (neg is not None and rng.random() < P_OTHER_SIDE_FINDINGS
                and not (otherwise and neg[0].endswith("lung is clear."))):
            placed.append((region, neg))
        new = _no_new(f, whens.get(f.kind), rng)
        if new is not None and rng.random() < P_NO_NEW:
            if rng.random() < 0.6:
                placed.append((region + 0.001, new))
            else:
                _after_statement(f, impression, new)
        neg = other_side_negative(f, findings, rng)
        if neg is not None and rng.random() < P_OTHER_SIDE_IMPRESSION:
            _after_statement(f, impression, neg)


def write_report(findings: list[Finding], devices: list[str], rng: np.random.Generator
                 ) -> tuple[str, str, Labels, Labels]:
    """Findings and Impression texts with their CheXpert labels (each with "No Finding" set).

    Exactly one number is drawn from ``rng`` (the seed of the report's own generator), so the
    image drawn afterwards from the same ``rng`` does not depend on the report grammar.

    Example: ``write_report([], [], rng)`` -> ``("The lungs are clear. ...", "No acute ...", {...}, {...})``.
    """
    rng = np.random.default_rng(int(rng.integers(1 << 62)))
    style = _reader_style(rng)
    kinds = {f.kind for f in findings}
    # one comparison status per finding, shared by the Findings and the Impression
    whens = _draw_whens(findings, rng, style)
    # (region, sentence): region orders the Findings like a reader walking through the film
    placed: list[tuple[float, Sentence]] = []
    if style.technique is not None:
        placed.append((-3.0, (style.technique, {})))
    if rng.random() < 0.22:
        placed.append((-2.0, (_comparison_sentence(rng, style), {})))
    for f in findings:
        for s in _positive_sentences(f, rng, style, whens.get(f.kind)):
            placed.append((_REGION[f.kind] + 0.1 * float(rng.random()), s))
    side = next((f.side for f in findings if f.kind == "pneumothorax"), "right") or "right"
    dev_region = -1.0 if style.devices_first else 5.0
    for d in devices:
        placed.append((dev_region, _device_sentence(d, side, rng, style)))
    target = int(rng.choice([3, 4, 5, 6], p=[0.08, 0.34, 0.40, 0.18]))
    used: set[str] = set()
    for lbl in (lbl for _, (_, lbl) in placed):
        used |= set(lbl)
    r = rng.random()
    if r < 0.55:  # incidental remarks take the place of normal statements
        placed.append((4.6, (_neutral(rng), {})))
        if r < 0.12:
            second = _neutral(rng)
            if second != placed[-1][1][0]:
                placed.append((4.7, (second, {})))
    for name in _FAMILY_SLOTS[style.family]:
        if len(placed) >= target:
            break
        s = _slot(name, rng, style, kinds)
        if s is None or set(s[1]) & used:
            continue
        used |= set(s[1])
        placed.append((_SLOT_REGION[name] + 0.5, s))
    impression = _impression_sentences(findings, devices, rng, style, whens)
    _add_real_language(findings, whens, style, placed, impression)
    sentences = [s for _, s in sorted(placed, key=lambda x: x[0])]
    ftext = " ".join(t for t, _ in sentences)
    itext = " ".join(t for t, _ in impression)
    lf = merge_labels(*[lbl for _, lbl in sentences]) if sentences else merge_labels()
    li = merge_labels(*[lbl for _, lbl in impression])
    return ftext, itext, lf, li
