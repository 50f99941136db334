"""An offline, rule-based CheXpert-14 labeler for free-text chest X-ray reports.

Used for clinical label F1 when the official CheXbert weights are absent, and
for the no-finding / single / multi strata. No model, no download, no spaCy:
NegEx/ConText-style rules over regular expressions, a few milliseconds per report.

Conventions (CheXpert):

- ``1`` positive, ``0`` negative, ``-1`` uncertain; an observation that is not
  mentioned is *absent* from the returned dict.
- Mentions of one observation are aggregated over the report: positive if any
  mention is positive, else uncertain if any is uncertain, else negative.
- ``"No Finding"`` is ``1`` when none of the 12 pathologies (everything except
  No Finding and Support Devices) is positive or uncertain; it is never ``0``.

How a sentence is read:

1. mentions of each observation are found with phrase lists (``_MENTIONS``);
   heart-size and mediastinum phrases ("heart size", "cardiac silhouette",
   "mediastinal contours") only count together with a qualifier in the same
   clause ("enlarged" -> positive, "normal" / "unremarkable" -> negative,
   "borderline" -> uncertain), otherwise they are ignored;
2. negation and uncertainty triggers ("no", "without", "free of", "no evidence of",
   "may represent", "cannot exclude", "... is not excluded", "versus") open a
   scope that runs forward (pre-triggers) or backward (post-triggers) to the
   sentence edge, a termination word ("but", "however", "which", ...) or a
   window of words; pseudo-triggers ("no change", "not only") open nothing;
3. a mention inside a scope takes the closest trigger's status;
4. structured and templated reports ("Pneumothorax: none.", "Effusion, pneumothorax:
   none.", "Lines/tubes: none.", "Pneumothorax: none Effusion: small" with its line
   break lost) are read as ``key: value`` pairs (``_structure``): a short text before
   a colon (at most ``_KEY_MAX_WORDS`` words, no trigger) is a key, and every finding it
   names takes the status of its value. A value heading with "none" / "no" / "negative"
   / "absent" / "not seen" / "normal" / "resolved" is negative, with "possible" /
   "questionable" / "cannot be excluded" uncertain, anything else without a negation or
   hedge ("present", "yes", "small", "right lower lobe") positive; "unchanged",
   "improved", "no change" and other comparisons keep a finding positive (it is still
   there, as in "Unchanged moderate cardiomegaly."), "resolved" makes it negative. A
   trigger in such a value reaches nothing outside it ("Pneumothorax: no, effusion:
   small."). Headers ("Findings:", "Impression:", "Comparison:") are keys that name no
   finding; "Heart size: normal." stays an attribute anchor (Cardiomegaly negative).
   A value that mixes statuses ("none, but there is ...") falls back to the rules above.

Issue 36 decisions (remaining layouts and real-report errors), each against the CheXpert
labeler's published conventions (github.com/stanfordmlgroup/chexpert-labeler: ``phrases/``
and ``patterns/``) and each tested with its opposite in ``tests/clinical/test_labeler.py``:

5. Dash layouts: a spaced dash after a short key is a key separator like a colon
   ("Pneumothorax - none" -> 0, "Pneumothorax - small" -> 1, several on one line:
   "Pneumothorax - none, Effusion - small, Edema - none"); en / em dashes count as dashes.
   A hyphen inside a word is none ("right-sided"), and in prose a spaced dash ends a
   trigger's scope like "but" ("No pneumothorax - small left effusion." -> effusion 1).
   CheXpert reads sentences through a parser and has no template rule; we follow the
   reading a radiologist gives the template, as in point 4.
6. Sub-keys: a finding key with an empty value followed by side or zone keys ("Right",
   "left lung", "bilateral", "apical", "bases") takes their values' combined status
   (positive over uncertain over negative, as CheXpert aggregates mentions):
   "Pneumothorax: Right: none." -> 0, "Pneumothorax: right: none, left: small." -> 1.
   When a sentence ends in sub-keys, sentences that hold only sub-keys go on stating the
   same finding ("Pleural effusion: Left: none. Right: small." -> 1). That carry is the one
   place where the report's labels are more than the merge of its sentences' labels.
7. A value followed by another finding: a bare status ("no", "none", "yes", "possible")
   followed by a comma or semicolon and a further mention is the key's whole value, and
   the rest is prose ("Pneumothorax: no, large effusion." -> pneumothorax 0, effusion 1;
   "Pneumothorax: yes, no effusion." -> 1 and 0). CheXpert applies a negation only to the
   phrase it governs in the parse; "no" governs the answer, not "large effusion".
8. Hedges after the mention: a hedge word alone after a comma at the end of the sentence
   (", possibly." ", likely." ", probably." ", questionable." ...) makes the clause before it
   uncertain ("Small right pleural effusion, possibly." -> -1; "Pneumothorax, likely." -> -1;
   "Pneumothorax, small." stays 1), as CheXpert's uncertainty pattern "XXX modified by
   possible / probable / questionable / suspected" does.
9. Markdown / pipe tables: each row is read as ``key: value`` ("| Pneumothorax | none |"
   -> 0, "| ... | small |" -> 1), rule rows ("|---|---|") and the header row ("| Finding |
   Status |", which names no finding) add nothing, a third column is a sub-key's value.
10. Old disease. "History of XXX" is negative (a CheXpert negation pattern,
   ``{} <{dependency:/nmod:of/} {lemma:/history|.../}``). Pneumonia (an active infection)
   preceded in its noun phrase by "prior", "previous", "old", "remote", "past", "healed",
   "treated", "resolved" or by "sequela(e) / residua(ls) / residual changes of" is negative
   ("Residuals of prior granulomatous infection.", "Scarring from prior pneumonia" -> Pneumonia 0,
   the scarring still Lung Opacity 1); "Findings of acute infection", "Infection in the right
   upper lobe" stay 1. CheXpert has this only for "history of"; "prior infection" is the same
   statement. Fractures are not treated so: "Old healed rib fractures." and "Healing rib
   fracture." are Fracture 1, since CheXpert's Fracture mention has no age rule and a healed
   fracture is still seen on the film; "No acute rib fracture." and "No history of fracture."
   are 0.
11. Uncertainty that belongs to another finding stays with it (unchanged rule, now tested):
   "Opacities at the bases may represent scarring or edema." -> Lung Opacity 1, Edema -1;
   "Patchy right basilar airspace opacity." -> Lung Opacity 1 and no Pneumonia at all;
   "..., possibly pneumonia." -> Pneumonia -1. An opacity is not a pneumonia mention
   (CheXpert's Pneumonia phrases are pneumonia / infection / infectious (process)).
12. Devices the list missed (CheXpert's support-device phrases are broad: tube, line,
   catheter, lead-bearing "pacer", "device", "hardware", "apparatus", ...): monitor / ECG /
   EKG / telemetry leads, wires or electrodes; spinal cord / dorsal column / vagal nerve /
   deep brain stimulators and neurostimulators; Swan-Ganz; a line tip named by its route
   ("Right IJ tip in the distal SVC", "subclavian approach with tip at the cavoatrial
   junction", "Tip of the right IJ ...", "port tip"). Bare "leads" or "tip" stay no mention.
   Removal reads negative as for every device ("The monitor leads have been removed." -> 0).

Left out: coreference across sentences, temporal reasoning ("resolved since
prior" is read as negative; "Pneumonia in 2019, treated." is still positive),
hierarchical propagation (an opacity mention does
not imply Lung Opacity children or vice versa), clinical knowledge beyond
the phrase lists; sub-keys that name a finding rather than a side ("Lungs: Effusion: none")
are ordinary keys. Hedged mentions ("may represent pneumonia") are
uncertain (-1) as in CheXpert; human labels that leave hedges out (IU-Xray's MeSH
terms) count them as errors when uncertain is read as positive. ``evaluate_labeler``
measures what that costs.

Example::

    label_report("Mild cardiomegaly. No pleural effusion. Possible pneumonia.")
    # -> {'Cardiomegaly': 1, 'Pleural Effusion': 0, 'Pneumonia': -1}
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

from sdrlib.vocabulary import (CHEXPERT_14, PATHOLOGIES, apply_no_finding, check_labels, combine_status,
                               ordered_labels)

__all__ = ["label_report", "label_reports", "evaluate_labeler"]

# --------------------------------------------------------------------------- phrase lists
# Access routes whose tip names a line ("right IJ tip in the SVC": a device without the word "catheter").
_ROUTE = r"\bij\b|internal jugular|subclavian|jugular|femoral|hickman|port|picc"
# Direct mentions: any match is a mention of the observation.
_MENTIONS: dict[str, list[str]] = {
    "Enlarged Cardiomediastinum": [
        r"enlarged cardiomediastin\w*", r"cardiomediastinal (?:enlargement|widening)",
        r"widen(?:ed|ing) (?:of the )?(?:superior )?mediastin\w*",
        r"mediastinal (?:widening|enlargement)", r"mediastinum (?:is |appears )?widened",
    ],
    "Cardiomegaly": [
        r"cardiomegaly", r"cardiac enlargement", r"enlarged heart", r"enlargement of the heart",
        r"enlarged cardiac (?:silhouette|size|shadow|contour)",
        r"enlargement of the cardiac (?:silhouette|size|shadow|contour)",
    ],
    "Lung Opacity": [
        r"opacit(?:y|ies)", r"opacification", r"opacified", r"air[- ]?space (?:disease|process)",
        r"infiltrat(?:e|es|ion|ive)", r"hazy", r"haziness", r"increased density",
        r"(?<!pleural )(?<!pleural-)scar(?:ring)?", r"reticular (?:pattern|marking|markings|opacit\w*)",
        r"interstitial (?:marking|markings|pattern|opacit\w*|prominence)",
    ],
    "Lung Lesion": [
        r"nodules?", r"nodular (?:density|densities|opacit\w*)", r"mass(?:es)?", r"lesions?",
        r"neoplasm", r"tumou?r", r"carcinoma", r"malignancy", r"metasta\w+", r"cavitary lesion",
    ],
    "Edema": [
        r"edema", r"oedema", r"(?:pulmonary |pulmonary vascular |vascular )congestion",
        r"congestive heart failure", r"\bchf\b", r"heart failure", r"kerley b? ?lines",
        r"cephalization", r"fluid overload",
    ],
    "Consolidation": [r"consolidat\w*"],
    "Pneumonia": [
        r"pneumonias?", r"bronchopneumonia", r"infection", r"infectious (?:process|etiology)",
        r"infectious",
    ],
    "Atelectasis": [
        r"atelecta\w*", r"(?:lobar|lobe|lung|segmental) collapse", r"collapse of the \w+ (?:\w+ )?lobe",
        r"volume loss",
    ],
    "Pneumothorax": [r"pneumothora(?:x|ces)", r"hydropneumothorax"],
    "Pleural Effusion": [
        r"(?<!pericardial )(?<!joint )effusions?", r"pleural fluid", r"hydrothorax",
        r"hydropneumothorax", r"blunt(?:ed|ing) (?:of )?(?:the )?(?:\w+ )?costophrenic",
        r"costophrenic (?:angle|angles|sulcus|sulci) (?:is |are )?blunted",
    ],
    "Pleural Other": [
        r"pleural thickening", r"pleural scar(?:ring)?", r"pleural plaques?", r"fibrothorax",
        r"pleural calcifications?", r"apical (?:pleural )?caps?", r"pleural[- ]based (?:thickening|density)",
        r"thickening of the (?:\w+ ){0,2}pleura",
    ],
    "Fracture": [r"fractures?", r"fractured", r"\bfx\b"],
    "Support Devices": [
        r"(?:endotracheal|enteric|nasogastric|orogastric|feeding|chest|tracheostomy|et|ng|og|dobhoff|"
        r"gastric|nasoenteric|thoracostomy) tubes?",
        r"tracheostomy", r"catheters?", r"\bpicc\b", r"(?:central|central venous|venous|arterial|"
        r"midline|swan[- ]ganz|ij|subclavian|internal jugular|jugular|femoral|dialysis) (?:line|lines)",
        r"pacemaker", r"pacer", r"(?:pacemaker|pacer|icd|pacing|cardiac) leads?", r"defibrillator",
        r"\bicd\b", r"sternotomy wires?", r"median sternotomy", r"sternotomy", r"stents?",
        r"surgical clips?", r"port-?a-?cath", r"(?:chest|mediport|power) port", r"prosthe\w+",
        r"valve replacement", r"drains?", r"support devices?",
        r"\bett\b", r"\bngt?\b(?= tube| tip)", r"enteric tube", r"cardiac device",
        # structured-report keys and lists: "Lines/tubes: none.", "No lines or tubes."
        r"lines? ?(?:/|&|and|or) ?tubes?", r"tubes? ?(?:/|&|and|or) ?lines?",
        # issue 36: monitoring leads, stimulators, and line tips named by their route, not "catheter"
        r"(?:monitor(?:ing)?|cardiac monitor(?:ing)?|telemetry|ecg|ekg|electrocardiogram) (?:leads?|wires?|electrodes?)",
        r"(?:(?:spinal|spinal cord|dorsal column|vagal nerve|vagus nerve|phrenic nerve|nerve|deep brain) )"
        r"?stimulators?", r"neurostimulators?", r"swan[- ]ganz",
        rf"(?:{_ROUTE})(?: (?:approach|access|line|sheath|dialysis|port))?(?: with(?: the| its)?)? tip",
        rf"tip of the (?:(?:right|left)(?:[- ]sided)? )?(?:{_ROUTE})",
    ],
}

# Old disease (issue 36): a mention preceded by one of these within its noun phrase is past, not active, and
# read as negative (CheXpert negates "history of XXX"; "prior" / "old" / "sequelae of" are read alike).
# Only for observations that name an active process; a healed fracture is still a fracture.
_PAST_BEFORE = re.compile(
    r"(?:(?<![\w-])(?:prior|previous|old|remote|past|healed|treated|resolved)(?: \w+){0,2}"
    r"|(?<![\w-])(?:sequelae?|residua(?:ls?)?|residual changes?) (?:of|from) (?:(?:a|the) )?(?:\w+ ){0,3})[ ]?$")
_PAST_OBSERVATIONS = ("Pneumonia",)
_PAST_LOOKBACK = 60  # characters before a mention searched for a past marker

# Phrases that are negative statements by themselves ("the costophrenic angles are sharp").
_DIRECT_NEG: dict[str, list[str]] = {
    "Pleural Effusion": [
        r"sharp costophrenic (?:angles?|sulci|sulcus)",
        r"costophrenic (?:angles?|sulci|sulcus):? (?:is |are |remain )?(?:sharp|clear|preserved|normal)",
    ],
}

# Phrases that look like mentions but are not (removed before reading).
_NOT_MENTIONS: list[str] = [
    r"pericardial effusion", r"osseous lesions?", r"bony lesions?", r"skin lesions?", r"soft tissue mass", r"breast mass",
    r"mass effect", r"nodular (?:contour|contours)",
    # clips from abdominal surgery (cholecystectomy) are not a thoracic support device
    r"cholecystectomy clips?",
    r"(?:surgical |postsurgical )?clips? (?:(?:are |is )?(?:seen |noted )?(?:in|within|over|overlying)|projects? over|"
    r"projecting over) the (?:right |left )?upper (?:quadrant|abdomen)",
]

# Attribute anchors: count only with a qualifier in the same clause.
_ANCHORS: dict[str, list[str]] = {
    "Cardiomegaly": [
        r"heart size", r"size of the heart", r"cardiac (?:silhouette|size|shadow|contours?)",
        r"(?<!right )(?<!left )heart(?! failure)(?! size)", r"cardiac(?= and mediastinal)",
    ],
    "Enlarged Cardiomediastinum": [
        r"cardiomediastinal (?:silhouette|contours?|size|width)", r"cardiomediastinum",
        r"mediastinal (?:silhouette|contours?|width|configuration)", r"mediastinum",
        r"hilar and mediastinal contours?", r"mediastinal and hilar contours?",
        r"cardiomediastinal and hilar contours?", r"hilar and cardiomediastinal contours?",
    ],
}
_Q_POS = r"enlarged|enlargement|widened|widening|prominent|increased in size|large|cardiomegaly"
_Q_NEG = (r"normal|unremarkable|within normal limits|not enlarged|stable in size and normal|"
          r"upper limits? of normal|top[- ]normal|upper[- ]normal|normal in size")
_Q_UNC = r"borderline|mildly prominent|at the upper limit"

# Triggers. Longer matches win over shorter overlapping ones ("cannot exclude" beats "not").
_NEG_PRE = [
    r"\bno\b", r"\bnot\b", r"\bwithout\b", r"free of", r"no evidence of", r"negative for",
    r"absence of", r"resolution of", r"clear of", r"rules? out",
    r"ruled out", r"\bnor\b", r"no longer", r"removal of", r"interval removal of", r"no signs? of",
    r"never", r"fails? to (?:show|reveal|demonstrate)", r"nothing to suggest",
    r"history of",  # CheXpert: "history of XXX" is a negation pattern (issue 36)
]
_NEG_POST = [
    r"(?:is|are|was|were|has|have) (?:been )?(?:resolved|removed)", r"(?:is|are) (?:not seen|absent)",
    r"(?:is|are|was|were) not (?:seen|identified|appreciated|visualized|present|evident|demonstrated)",
    r"(?:has|have) resolved", r"no longer (?:seen|present|visualized|evident|identified)",
    r"not (?:seen|identified|appreciated|visualized|demonstrated)",
]
_NEG_BOTH = [r"resolved", r"removed", r"absent"]
_UNC_PRE = [
    r"\bmay\b", r"\bmight\b", r"\bcould\b", r"possible", r"possibly", r"probable", r"probably",
    r"likely", r"questionable", r"suspicious for", r"suspected", r"suggestive of", r"suggests?",
    r"concerning for", r"worrisome for", r"cannot (?:be )?exclude", r"can not (?:be )?exclude",
    r"cannot rule out", r"can not rule out", r"cannot be ruled out", r"difficult to exclude",
    r"differential diagnosis", r"differential (?:includes|considerations)", r"question of",
    r"presumed", r"equivocal", r"borderline", r"versus", r"\bvs\b\.?", r"either", r"or less likely",
    r"may (?:also )?represent", r"could represent", r"may reflect", r"could reflect", r"favor(?:ed|s)?",
    r"perhaps", r"not excluded", r"uncertain", r"indeterminate", r"\bvs\.", r"raises? the possibility",

]
_UNC_POST = [
    r"(?:is|are|cannot be|can not be|not) (?:entirely )?excluded", r"cannot be ruled out",
    r"can not be ruled out", r"not (?:be )?ruled out", r"(?:is|are) (?:possible|suspected|questioned|"
    r"likely|probable|not excluded)", r"versus", r"\bvs\b\.?", r"not entirely excluded",
    r"(?:is|are) difficult to exclude", r"(?:cannot|can not) be (?:entirely )?excluded",
    r"(?:would|may|might) be difficult to exclude", r"of (?:uncertain|unclear|indeterminate) (?:significance|etiology)",
]
# A hedge after its mention, ending the sentence: "Small right pleural effusion, possibly." (issue 36).
_UNC_TAIL = re.compile(r",\s*(?:most |very |quite )?(?:possibly|possible|likely|probably|probable|questionable|"
                       r"suspected|presumably|presumed|perhaps)\s*[.!?]*\s*$", re.IGNORECASE)
_PSEUDO = [
    r"no (?:significant |substantial |appreciable |definite |interval )*change", r"not changed",
    r"without (?:significant |interval )*change", r"no (?:significant )?(?:increase|decrease)",
    r"not only", r"gram negative", r"not necessarily", r"no (?:significant )?interval change",
    r"unchanged", r"not significantly changed", r"not (?:increased|decreased) (?:in size )?since",
    r"to suggest", r"(?:is |are )?(?:most )?(?:likely|probably|possibly) (?:due to|related to|secondary to|from)",
]
_TERMINATE = [
    r"\bbut\b", r"however", r"although", r"though", r"except", r"aside from", r"apart from",
    r"with the exception of", r"which", r"there (?:is|are)", r"otherwise", r";", r"\bwhile\b",
    r"whereas", r"\bnow\b", r"\bwith\b(?! (?:no|the exception))",
]
_WINDOW = 14  # words a pre-/post-trigger scope may span at most
_VERSUS_BACK = 0  # words "versus" reaches backward: only the mention right before it


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    kind: str  # neg_pre, neg_post, unc_pre, unc_post, unc_both, pseudo, term


def _alt(patterns: Iterable[str]) -> str:
    return "|".join(f"(?:{p})" for p in patterns)


def _word_re(patterns: Iterable[str]) -> re.Pattern[str]:
    # \b on both sides unless a pattern brings its own boundaries.
    return re.compile(rf"(?<![\w-])(?:{_alt(patterns)})(?![\w])", re.IGNORECASE)


_MENTION_RE = {obs: _word_re(p) for obs, p in _MENTIONS.items()}
_ANCHOR_RE = {obs: _word_re(p) for obs, p in _ANCHORS.items()}
_ANY_MENTION_RE = _word_re([p for ps in _MENTIONS.values() for p in ps])
_DIRECT_NEG_RE = {obs: _word_re(p) for obs, p in _DIRECT_NEG.items()}
_NOT_MENTION_RE = _word_re(_NOT_MENTIONS)
_QPOS_RE = _word_re([_Q_POS])
_QNEG_RE = _word_re([_Q_NEG])
_QUNC_RE = _word_re([_Q_UNC])
_TRIGGERS: list[tuple[str, re.Pattern[str]]] = [
    ("pseudo", _word_re(_PSEUDO)),
    ("unc_both", _word_re([r"versus", r"\bvs\b\.?"])),
    ("unc_post", _word_re(_UNC_POST)),
    ("unc_post", _UNC_TAIL),
    ("unc_pre", _word_re(_UNC_PRE)),
    ("neg_post", _word_re(_NEG_POST)),
    ("neg_both", _word_re(_NEG_BOTH)),
    ("neg_pre", _word_re(_NEG_PRE)),
    # a spaced dash ends a scope too: "No pneumothorax - small left effusion." (issue 36)
    ("term", re.compile(rf"(?<![\w-])(?:{_alt(_TERMINATE)})(?![\w])|;|[ \t]-{{1,2}}[ \t]", re.IGNORECASE)),
]
_CLAUSE_SPLIT = re.compile(r";|,? but |,? however,? |,? whereas |,? while |,? although ", re.IGNORECASE)
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|(?<=\.)(?=[A-Z])")
_WORD = re.compile(r"\w+")

# Structured ("templated") reports: "<key>: <value>". The key names findings ("Pneumothorax",
# "Effusion, pneumothorax", "Lines/tubes"), the value states them ("none", "small", "possible").
# A colon counts after a letter or bracket and not before a digit ("10:30" is no key).
# A spaced dash is a key separator too ("Pneumothorax - none"); a hyphen inside a word is not.
_KEY_COLON = re.compile(r"(?<=[a-z)\]])(?:[ \t]*:(?!\d)|[ \t]+-{1,2}[ \t]+(?![\d.]))")
_KEY_MAX_WORDS = 8  # a longer text before a colon is prose, not a key
# Sub-keys name a side or zone: "Pneumothorax: Right: none, left: small." (issue 36)
_SUBKEY = re.compile(r"(?:(?:on )?(?:the )?(?:right|left|bilateral(?:ly)?|both|apical|apex|apices|basal|basilar|"
                     r"bases?|upper|lower|mid(?:dle)?)(?: (?:side|sides|lung|lungs|hemithorax|lobe|zone|zones))?)",
                     re.IGNORECASE)
# Status words that are no trigger in prose (triggers at the head of a value count too:
# "no", "absent", "not seen", "resolved" -> 0; "possible", "cannot be excluded" -> -1; "unchanged" -> 1).
_VALUE_WORDS: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"(?:none(?: (?:seen|identified|noted|present|visuali[sz]ed|demonstrated|detected))?"
                r"|nil|negative|normal)(?![\w])"), 0),
    (re.compile(r"(?:present|yes|positive)(?![\w])"), 1),
]
# Words after a negative or uncertain head that state something present ("none on the left, small on the right").
_VALUE_POSITIVE = _word_re([r"small|moderate|large|mild|severe|trace|tiny|minimal|massive|extensive|present|yes"])


_DASHES = re.compile("[\u2010-\u2015\u2212]")  # en / em dashes, minus: "Fracture \u2013 none" keeps its dash
_TABLE_ROW_SPLIT = re.compile(r"\|[ \t]*\|")  # "| a | b | | c | d |": rows joined on one line
_TABLE_RULE = re.compile(r"[\s|:+=-]*")  # "|---|:---|"


def _tables(text: str) -> str:
    """Markdown / pipe table rows as ``key: value.`` sentences ("| Pneumothorax | none |" -> "Pneumothorax: none.").

    Rule rows ("|---|---|") are dropped; rows joined on one line are split; cells of a row are joined with
    ": ", so a third column reads as a sub-key's value ("| Effusion | right | small |").
    """
    if "|" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        if "|" not in line:
            lines.append(line)
            continue
        rows = []
        for row in _TABLE_ROW_SPLIT.split(line):
            cells = [c.strip().rstrip(".").strip() for c in row.split("|")]
            cells = [c for c in cells if c]
            if cells and not _TABLE_RULE.fullmatch(" ".join(cells)):
                rows.append(": ".join(cells) + ".")
        lines.append(" ".join(rows))
    return "\n".join(lines)


def _normalize(text: str) -> str:
    text = _tables(_DASHES.sub("-", text))
    text = unicodedata.normalize("NFKD", text)
    text = text.encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    return text


def _sentences(text: str) -> list[str]:
    """The labeler's units on normalised text: split at sentence ends and at **every line break**.

    Deliberately not :func:`sdrlib.reports.split_sentences`, which segments prose and reads a single newline as line
    wrapping: a structured report (``"Pneumothorax: none\nPleural effusion: small left"``, and the tables
    ``_tables`` turns into lines) would become one sentence there, and a ``key: value`` line's negation would reach
    the next line's finding. The rules were written and validated on these units
    (``tests/clinical/test_labeler.py``)."""
    out = []
    for s in _SENT_SPLIT.split(text):
        s = s.strip()
        if re.search(r"[A-Za-z]", s):
            out.append(s)
    return out


def _triggers(sent: str) -> list[_Span]:
    """All trigger spans; a span inside or overlapping an earlier-listed or longer one is dropped."""
    found: list[_Span] = []
    for kind, rx in _TRIGGERS:
        for m in rx.finditer(sent):
            found.append(_Span(m.start(), m.end(), kind))
    # Longest first; on ties, the order of _TRIGGERS (pseudo > unc > neg > term).
    order = {k: i for i, (k, _) in enumerate(_TRIGGERS)}
    found.sort(key=lambda s: (-(s.end - s.start), order[s.kind], s.start))
    kept: list[_Span] = []
    for s in found:
        if any(s.start < k.end and k.start < s.end for k in kept):
            continue
        kept.append(s)
    return sorted(kept, key=lambda s: s.start)


def _word_count(text: str) -> int:
    return len(_WORD.findall(text))


def _status(sent: str, start: int, end: int, trig: list[_Span]) -> int:
    """Status (1, 0, -1) of a mention at ``sent[start:end]`` given the sentence's triggers."""
    best: tuple[int, int] | None = None  # (distance in words, status)
    terms = [t for t in trig if t.kind == "term"]
    for t in trig:
        if t.kind in ("pseudo", "term"):
            continue
        status = 0 if t.kind.startswith("neg") else -1
        forward = t.kind in ("neg_pre", "unc_pre", "unc_both", "neg_both")
        backward = t.kind in ("neg_post", "unc_post", "unc_both", "neg_both")
        if forward and t.end <= start:
            gap = sent[t.end:start]
            blocked = any(t.end <= x.start and x.end <= start for x in terms)
            dist = _word_count(gap)
            if not blocked and dist <= _WINDOW and (best is None or dist < best[0]):
                best = (dist, status)
        if backward and t.start >= end:
            gap = sent[end:t.start]
            blocked = any(end <= x.start and x.end <= t.start for x in terms)
            dist = _word_count(gap)
            # "A versus B": backward only over the preceding noun phrase
            window = _VERSUS_BACK if t.kind == "unc_both" else _WINDOW
            if not blocked and dist <= window and (best is None or dist < best[0]):
                best = (dist, status)
    return 1 if best is None else best[1]


@dataclass(frozen=True)
class _Pair:
    key: tuple[int, int]  # span of the key in the sentence
    value: tuple[int, int]  # span of its value
    status: int | None  # what the value says of every finding the key names; None: read it as prose


def _trigger_status(kind: str) -> int:
    return 1 if kind == "pseudo" else 0 if kind.startswith("neg") else -1


def _head(sent: str, pos: int, end: int, trig: list[_Span]) -> tuple[int | None, int]:
    """(status, end) of a status word or trigger starting at ``pos``; ``(None, pos)`` if none does."""
    status, head_end = None, pos
    for rx, st in _VALUE_WORDS:
        m = rx.match(sent, pos, end)
        if m and m.end() > head_end:
            status, head_end = st, m.end()
    for t in trig:
        if t.start == pos and t.kind != "term" and head_end < t.end <= end:
            status, head_end = _trigger_status(t.kind), t.end
    return status, head_end


def _skip(sent: str, pos: int, end: int, chars: str = " \t") -> int:
    while pos < end and sent[pos] in chars:
        pos += 1
    return pos


def _value_status(sent: str, start: int, end: int, trig: list[_Span]) -> tuple[int | None, int]:
    """What the value ``sent[start:end]`` of a key says of the key's findings (1, 0, -1, or None), and where it ends.

    A negative or uncertain head ("none", "no", "not seen", "possible") decides when nothing after it
    (up to a termination word such as "but") mentions, negates or hedges anything ("none on the left" -> 0;
    "no pneumothorax is seen" -> None), and is positive when a size or presence word follows ("none on
    the left, small on the right" -> 1). A value without such a head is positive unless it negates or
    hedges something ("small left", "unchanged", "endotracheal tube in place" -> 1).

    A bare head followed by a comma or semicolon and another finding ends there ("no, large effusion": the
    value is "no", the effusion is read as prose); the returned end is then the head's end, else ``end``.
    """
    pos = _skip(sent, start, end)
    if not re.search(r"[a-z]", sent[pos:end]):
        return None, end
    status, head_end = _head(sent, pos, end, trig)
    inner = [t for t in trig if head_end <= t.start and t.end <= end]
    if status is not None:
        after = _skip(sent, head_end, end)
        if after < end and sent[after] in ",;" and _mentions(sent[after:end]):
            return status, head_end  # "Pneumothorax: no, large effusion."
    if status in (0, -1):
        stop = min((t.start for t in inner if t.kind == "term"), default=end)
        rest = sent[head_end:stop]
        if any(t.kind != "term" and t.end <= stop for t in inner) or _mentions(rest):
            return None, end
        return (1 if _VALUE_POSITIVE.search(rest) else status), end
    if any(t.kind not in ("term", "pseudo") for t in inner):
        return None, end
    return 1, end


def _mentions(text: str) -> bool:
    """Whether ``text`` mentions any observation (a direct mention, not an attribute anchor)."""
    return _ANY_MENTION_RE.search(text) is not None


def _is_subkey(text: str) -> bool:
    """A key that only says where ("Right", "left lung", "bilateral"): a sub-key of the finding key before it."""
    return bool(_SUBKEY.fullmatch(text.strip(" \t,;.")))


def _is_key(sent: str, start: int, end: int, trig: list[_Span]) -> bool:
    n = _word_count(sent[start:end])
    return (0 < n <= _KEY_MAX_WORDS
            and not any(t.kind != "term" and t.start < end and start < t.end for t in trig))


def _structure(sent: str, trig: list[_Span]) -> list[_Pair]:
    """The ``key: value`` pairs of a sentence, left to right.

    The text before the first colon is a key if it is short and holds no trigger; the text between two
    colons is split into the value of the first key and the next key: after a leading status ("none, ",
    "no; ", "present "), or, without one, the whole of it is the next key ("Findings: Pneumothorax: none."
    is the header "findings" with an empty value, then "pneumothorax" with "none"). The text after the
    last colon is its key's value.
    """
    colons = list(_KEY_COLON.finditer(sent))
    if not colons:
        return []
    pairs: list[_Pair] = []
    key = (0, colons[0].start()) if _is_key(sent, 0, colons[0].start(), trig) else None
    for i, c in enumerate(colons):
        vstart = c.end()
        vend = nxt = colons[i + 1].start() if i + 1 < len(colons) else len(sent)
        next_key = None
        if i + 1 < len(colons):
            status, head_end = _head(sent, _skip(sent, vstart, nxt), nxt, trig)
            sep = max(sent.rfind(",", vstart, nxt), sent.rfind(";", vstart, nxt))
            if status is not None:
                kstart = _skip(sent, head_end, nxt, " \t,;")
                if _is_key(sent, kstart, nxt, trig):
                    vend, next_key = head_end, (kstart, nxt)
            elif (sep >= 0 and not _mentions(sent[vstart:sep])
                  and _is_key(sent, _skip(sent, sep + 1, nxt), nxt, trig)):
                # "Consolidation - right lower lobe; pneumothorax - none": the value ends at the separator
                vend, next_key = sep, (_skip(sent, sep + 1, nxt), nxt)
            elif _is_key(sent, vstart, nxt, trig):
                vend, next_key = vstart, (vstart, nxt)
        if key is not None:
            status, vend = _value_status(sent, vstart, vend, trig)
            pairs.append(_Pair(key, (vstart, vend), status))
        key = next_key
    return _subkeys(sent, pairs)


def _subkeys(sent: str, pairs: list[_Pair]) -> list[_Pair]:
    """A key with an empty value followed by sub-keys ("Pneumothorax: Right: none, left: small.") takes
    the combined status of their values (positive over uncertain over negative)."""
    out = list(pairs)
    for i, p in enumerate(pairs):
        if p.status is not None or re.search(r"[a-z]", sent[p.value[0]:p.value[1]]):
            continue
        status = None
        for q in pairs[i + 1:]:
            if not _is_subkey(sent[q.key[0]:q.key[1]]):
                break
            if q.status is not None:
                status = combine_status(status, q.status)
        if status is not None:
            out[i] = _Pair(p.key, p.value, status)
    return out


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for s, e in spans:
        for i in range(s, e):
            chars[i] = "_"
    return "".join(chars)


def _named(text: str) -> tuple[str, ...]:
    """Observations a key names ("Effusion, pneumothorax" -> both)."""
    return tuple(obs for obs, rx in _MENTION_RE.items() if rx.search(text))


def _carried_subkeys(low: str, pairs: list[_Pair], parent: tuple[str, ...], out: dict[str, int]
                     ) -> tuple[str, ...]:
    """Sub-keys across a sentence break ("Pleural effusion: Left: none. Right: small.").

    ``parent`` names the findings of a key whose sub-keys ended the previous sentence; a sentence made only
    of sub-keys states them, and passes the parent on. Returns the findings to carry into the next sentence.
    """
    if parent and pairs and pairs[0].key[0] == 0 and all(_is_subkey(low[p.key[0]:p.key[1]]) for p in pairs):
        for p in pairs:
            if p.status is not None:
                for obs in parent:
                    out[obs] = combine_status(out.get(obs), p.status)
        return parent
    for i, p in enumerate(pairs):
        rest = pairs[i + 1:]
        if (rest and not re.search(r"[a-z]", low[p.value[0]:p.value[1]])
                and all(_is_subkey(low[q.key[0]:q.key[1]]) for q in rest)):
            return _named(low[p.key[0]:p.key[1]])
    return ()


def _label_sentence(sent: str, out: dict[str, int], parent: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Add one sentence's labels to ``out``; returns the findings whose sub-keys may go on in the next one."""
    low = sent.lower()
    # Remove look-alike phrases ("pericardial effusion") so they do not match.
    low = _blank(low, [(m.start(), m.end()) for m in _NOT_MENTION_RE.finditer(low)])
    trig = _triggers(low)
    trig_spans = [(t.start, t.end) for t in trig if t.kind != "term"]

    def overlaps_trigger(s: int, e: int) -> bool:
        return any(s < te and ts < e for ts, te in trig_spans)

    # "Pneumothorax: none.": a key takes its value's status; a trigger inside a value that has one
    # ("no" in "Pneumothorax: no, effusion: small.") reaches nothing outside that value.
    pairs = _structure(low, trig)
    stated = [p.value for p in pairs if p.status is not None]
    carry = _carried_subkeys(low, pairs, parent, out) if pairs else ()

    def triggers_at(pos: int) -> list[_Span]:
        if not stated:
            return trig
        return [t for t in trig if not any(vs <= t.start and t.end <= ve and not vs <= pos < ve
                                           for vs, ve in stated)]

    for obs, rx in _MENTION_RE.items():
        for m in rx.finditer(low):
            if overlaps_trigger(m.start(), m.end()):
                continue
            pair = next((p for p in pairs if p.key[0] <= m.start() and m.end() <= p.key[1]), None)
            if pair is not None and pair.status is not None:
                status = pair.status
            elif pair is not None and any(pair.value[0] <= v.start() and v.end() <= pair.value[1]
                                          for v in rx.finditer(low)):
                continue  # "Pneumothorax: no pneumothorax is seen." the value's own mention decides
            else:
                status = _status(low, m.start(), m.end(), triggers_at(m.start()))
            if status == 1 and obs in _PAST_OBSERVATIONS and _PAST_BEFORE.search(
                    low, max(0, m.start() - _PAST_LOOKBACK), m.start()):
                status = 0  # "residuals of prior granulomatous infection": not an active pneumonia
            out[obs] = combine_status(out.get(obs), status)

    for obs, rx in _DIRECT_NEG_RE.items():
        if rx.search(low):
            out[obs] = combine_status(out.get(obs), 0)

    # Attribute anchors ("heart size is normal"): nearest qualifier in the same clause decides.
    offset = 0
    for clause in _CLAUSE_SPLIT.split(low):
        cstart = low.find(clause, offset)
        offset = cstart + len(clause)
        quals = ([(m.start(), m.end(), "pos") for m in _QPOS_RE.finditer(clause)]
                 + [(m.start(), m.end(), "neg") for m in _QNEG_RE.finditer(clause)]
                 + [(m.start(), m.end(), "unc") for m in _QUNC_RE.finditer(clause)])
        if not quals:
            continue
        # "not enlarged" is one negative qualifier, not a positive one inside it.
        quals.sort(key=lambda q: (-(q[1] - q[0]), q[0]))
        kept_q: list[tuple[int, int, str]] = []
        for q in quals:
            if not any(q[0] < k[1] and k[0] < q[1] for k in kept_q):
                kept_q.append(q)
        for obs, rx in _ANCHOR_RE.items():
            for m in rx.finditer(clause):
                # skip anchors inside a direct mention already counted ("enlarged cardiac silhouette")
                if any(m.start() < d.end() and d.start() < m.end()
                       for d in _MENTION_RE[obs].finditer(clause)):
                    continue
                q = min(kept_q, key=lambda q: min(abs(q[0] - m.end()), abs(m.start() - q[1])))
                if q[2] == "neg":
                    status = 0
                elif q[2] == "unc":
                    status = -1
                else:
                    status = _status(low, cstart + q[0], cstart + q[1], triggers_at(cstart + q[0]))
                out[obs] = combine_status(out.get(obs), status)
    return carry


@lru_cache(maxsize=65536)
def _label_cached(text: str) -> tuple[tuple[str, int], ...]:
    out: dict[str, int] = {}
    carry: tuple[str, ...] = ()
    for sent in _sentences(_normalize(text)):
        carry = _label_sentence(sent, out, carry)
    return tuple(ordered_labels(apply_no_finding(out)).items())


def label_report(text: str) -> dict[str, int]:
    """CheXpert-14 labels of one free-text report (or one section).

    Parameters
    ----------
    text : str
        Report text; section headers are harmless, several sentences allowed.

    Returns
    -------
    dict[str, int]
        Observation -> 1 (positive), 0 (negative), -1 (uncertain), in ``CHEXPERT_14``
        order; observations not mentioned are absent. "No Finding" follows the
        CheXpert convention (see module docstring).

    Raises
    ------
    TypeError
        ``text`` is not a string.

    Example: ``label_report("No pneumothorax.")`` -> ``{"Pneumothorax": 0, "No Finding": 1}``.
    """
    if not isinstance(text, str):
        raise TypeError(f"label_report expects a str, got {type(text).__name__}")
    return dict(_label_cached(text))


def label_reports(texts: Sequence[str]) -> list[dict[str, int]]:
    """``label_report`` over a list. Example: ``label_reports(["No edema."])`` -> ``[{...}]``."""
    return [label_report(t) for t in texts]


# --------------------------------------------------------------------------- evaluation
def evaluate_labeler(texts: Sequence[str], gold: Sequence[Mapping[str, int]],
                     *, predictions: Sequence[Mapping[str, int]] | None = None):
    """Per-observation precision / recall / F1 of the labeler against gold labels.

    Parameters
    ----------
    texts : sequence of str, length n
        Reports or sentences to label.
    gold : sequence of dict, length n
        Expected labels per text (CheXpert values; absent = not mentioned). "No Finding"
        is recomputed from the other gold labels by the CheXpert convention.
    predictions : sequence of dict, optional
        Precomputed labels (defaults to ``label_report`` on ``texts``).

    Returns
    -------
    pandas.DataFrame
        One row per observation in ``CHEXPERT_14`` plus a ``"micro (all)"`` row; for each
        class ``pos`` (1), ``neg`` (0) and ``unc`` (-1) the columns ``n_<c>`` (gold support),
        ``precision_<c>``, ``recall_<c>`` and ``f1_<c>`` (NaN where undefined), and
        ``accuracy`` over all n texts with absent treated as its own class.

    Raises
    ------
    ValueError
        Lengths differ, or a gold dict holds an unknown observation or value.
    """
    import numpy as np
    import pandas as pd

    if len(texts) != len(gold):
        raise ValueError(f"evaluate_labeler: {len(texts)} texts but {len(gold)} gold label dicts")
    for i, g in enumerate(gold):
        check_labels(g, f"gold[{i}]")
    preds = list(predictions) if predictions is not None else label_reports(list(texts))
    if len(preds) != len(texts):
        raise ValueError(f"evaluate_labeler: {len(preds)} predictions for {len(texts)} texts")
    gold_nf = [apply_no_finding(g) for g in gold]
    classes = {"pos": 1, "neg": 0, "unc": -1}
    rows = []
    for obs in CHEXPERT_14 + ["micro (all)"]:
        obs_list = CHEXPERT_14 if obs == "micro (all)" else [obs]
        row: dict[str, object] = {"observation": obs}
        correct = total = 0
        for cname, cval in classes.items():
            tp = n_pred = n_gold = 0
            for o in obs_list:
                for g, p in zip(gold_nf, preds):
                    gv, pv = g.get(o), p.get(o)
                    n_gold += gv == cval
                    n_pred += pv == cval
                    tp += (gv == cval) and (pv == cval)
            prec = tp / n_pred if n_pred else float("nan")
            rec = tp / n_gold if n_gold else float("nan")
            f1 = 2 * prec * rec / (prec + rec) if n_pred and n_gold and (prec + rec) > 0 else (
                0.0 if n_pred and n_gold else float("nan"))
            row.update({f"n_{cname}": n_gold, f"precision_{cname}": prec, f"recall_{cname}": rec,
                        f"f1_{cname}": f1})
        for o in obs_list:
            for g, p in zip(gold_nf, preds):
                correct += g.get(o) == p.get(o)
                total += 1
        row["accuracy"] = correct / total if total else float("nan")
        rows.append(row)
    df = pd.DataFrame(rows).set_index("observation")
    return df.replace({None: np.nan})
