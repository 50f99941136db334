"""The labeler's rule tables: phrase lists (mentions, look-alikes, attribute anchors and their qualifiers),
NegEx / ConText trigger lists, the ``key: value`` layout patterns, and their compiled regular expressions.

Data only, no logic: how they are applied is :mod:`._scopes` (trigger scopes), :mod:`._structure` (templated
reports) and :mod:`._sentence` (one sentence's labels); what each rule is for, and the CheXpert conventions it
follows, is :mod:`sdrlib.clinical.labeler`'s docstring (numbered points).
"""

from __future__ import annotations

import re
from typing import Iterable

from sdrlib.vocabulary import OTHER_FINDINGS

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

# Findings outside the CheXpert 14 (issue 49): read only for reward presence (:func:`..label_mentions`), never
# for the labels (``label_report`` stays CheXpert's 14). Each is an abnormality a radiologist reports and a reward
# must not let pass for free; the list is ours (CheXpert has no such classes).
_OTHER_MENTIONS: dict[str, list[str]] = {
    "Hernia": [r"hernias?", r"herniation of (?:the )?(?:stomach|bowel|abdominal contents)"],
    "Pneumoperitoneum": [r"pneumoperitoneum", r"free (?:intraperitoneal |intra-abdominal |subdiaphragmatic )?air",
                         r"(?:sub)?diaphragmatic free air", r"air under the (?:\w+ )?(?:hemi)?diaphragms?"],
    "Pneumomediastinum": [r"pneumomediastinum", r"mediastinal (?:air|emphysema)"],
    "Subcutaneous Emphysema": [r"subcutaneous (?:emphysema|air|gas)", r"soft[- ]tissue (?:emphysema|air|gas)",
                               r"surgical emphysema"],
    "Emphysema": [r"(?<!subcutaneous )(?<!soft tissue )(?<!soft-tissue )(?<!surgical )(?<!mediastinal )emphysema\w*",
                  r"hyperinfla\w+", r"hyperexpan\w+", r"\bcopd\b", r"bullae", r"bullous (?:disease|changes?)"],
    "Granuloma": [r"granulomas?", r"calcified (?:nodules?|granulomas?|lymph nodes?)"],
    "Device Malposition": [
        r"malposition\w*", r"(?:right|left) main ?stem intubation",
        r"(?:in|into|within|enters?|entering|terminat\w* in|extends? into) the (?:right|left) main ?stem",
        r"coiled (?:in|within) the (?:esophagus|pharynx|hypopharynx|neck)",
        r"(?:tip|tube) (?:is )?(?:in|within|at) the (?:esophagus|pharynx|hypopharynx)",
        r"(?:should|could|may) be (?:withdrawn|retracted|advanced|repositioned)",
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
# Hedges toward absence (the convention in the package docstring, point 14): the writer leans to "not there", so the
# finding reads absent (0), the mirror of a hedge toward presence read uncertain and counted present. Forward ("Doubtful
# small left pleural effusion.", "Findings unlikely to represent pneumonia.") and backward over at most
# _ABSENT_HEDGE_BACK words within the clause ("Pneumothorax is unlikely.", "Pneumonia is less likely."). "X or less
# likely Y" stays a differential (uncertain, _UNC_PRE's "or less likely", the longer match).
_NEG_HEDGE = [
    r"(?:(?:is|are|was|were|seems?|appears?) )?(?:(?:very|quite|much|felt to be|thought to be|considered) )?"
    r"(?:unlikely|less likely|not likely|doubtful)(?: to (?:represent|reflect|be|indicate))?",
    r"doubt(?:ful)? (?:of|for)",
]
_ABSENT_HEDGE_BACK = 3  # words a backward hedge toward absence reaches ("pneumothorax is very unlikely")
# A hedge after its mention, ending the sentence: "Small right pleural effusion, possibly." (issue 36).
_UNC_TAIL = re.compile(r",\s*(?:most |very |quite )?(?:possibly|possible|likely|probably|probable|questionable|"
                       r"suspected|presumably|presumed|perhaps)\s*[.!?]*\s*$", re.IGNORECASE)
# "No new X" speaks of change, not presence: X is not stated at all (issue 49 point 13 of the package docstring).
_UNSTATED_PRE = [
    r"no (?:new|newly (?:developed|appearing|seen)|interval development of|(?:definite |significant )?(?:new|worsening|"
    r"developing|increasing|enlarging|further))(?: or (?:new|worsening|increasing|enlarging|developing|progressive))?",
    r"no (?:interval )?(?:progression|worsening) of",
]
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


def _alt(patterns: Iterable[str]) -> str:
    return "|".join(f"(?:{p})" for p in patterns)


def _word_re(patterns: Iterable[str]) -> re.Pattern[str]:
    # \b on both sides unless a pattern brings its own boundaries.
    return re.compile(rf"(?<![\w-])(?:{_alt(patterns)})(?![\w])", re.IGNORECASE)


_MENTION_RE = {obs: _word_re(p) for obs, p in _MENTIONS.items()}
_OTHER_RE = {obs: _word_re(p) for obs, p in _OTHER_MENTIONS.items()}
assert tuple(_OTHER_MENTIONS) == OTHER_FINDINGS, "the labeler's findings outside the 14 are the vocabulary's"
_ANCHOR_RE = {obs: _word_re(p) for obs, p in _ANCHORS.items()}
_ANY_MENTION_RE = _word_re([p for ps in _MENTIONS.values() for p in ps])
_DIRECT_NEG_RE = {obs: _word_re(p) for obs, p in _DIRECT_NEG.items()}
_NOT_MENTION_RE = _word_re(_NOT_MENTIONS)
_QPOS_RE = _word_re([_Q_POS])
_QNEG_RE = _word_re([_Q_NEG])
_QUNC_RE = _word_re([_Q_UNC])
_TRIGGERS: list[tuple[str, re.Pattern[str]]] = [
    ("pseudo", _word_re(_PSEUDO)),
    ("unstated", _word_re(_UNSTATED_PRE)),
    ("unc_both", _word_re([r"versus", r"\bvs\b\.?"])),
    ("unc_post", _word_re(_UNC_POST)),
    ("unc_post", _UNC_TAIL),
    ("unc_pre", _word_re(_UNC_PRE)),
    ("neg_hedge", _word_re(_NEG_HEDGE)),
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

# --------------------------------------------------------------------------- text the labeler does not read
# Markup around report text (HTML exports, rich-text fields): block tags end a sentence, inline tags go.
_BLOCK_TAG = re.compile(r"</?(?:p|br|div|li|ul|ol|tr|td|th|table|h[1-6]|section|article|hr)\b[^<>]*>", re.I)
# Elements whose content is no report text (a script, a style sheet, the page head) and comments: removed whole, so
# "<script>var no = 1;</script>Large pneumothorax." reads no negation; an element never closed runs to the end.
_HIDDEN_ELEMENT = re.compile(r"<(script|style|head|title|template|noscript|svg)\b[^>]*>.*?(?:</\1\s*>|\Z)"
                             r"|<!--.*?(?:-->|\Z)", re.I | re.S)
_ANY_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*\b[^<>]*>")
_ENTITY = re.compile(r"&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);")
# Another language: the rules are English. Negation cues of French, Spanish, Portuguese, Italian, German and
# Dutch reports, and function words English reports do not use; a sentence with a cue (or two such words) and no
# English function word is not read (every observation "not stated"), so "Pas de pneumothorax." is never a
# positive mention.
_FOREIGN_NEGATION = re.compile(
    r"\b(?:pas\s+d[e']|absence\s+d[e']|sans|aucune?|no\s+hay|sin|ausencia\s+de|ningun[oa]?|sem|nao|ausencia\s+de|"
    r"nenhuma?|assenza\s+di|senza|nessun[oa]?|kein(?:e|en|er|em|es)?|ohne|nicht|geen|zonder)\b", re.I)
_FOREIGN_WORDS = frozenset("le la les des du est et une el los las del y es con der das und ist mit il di della "
                           "um uma com het een van".split())
_ENGLISH_WORDS = frozenset("the is are no not of with there and or without in on at to a an this that was were be "
                           "been seen noted".split())
