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

Layout and real-report decisions, each against the CheXpert
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

13. Sides, change and findings outside the 14, for reward presence only (:func:`label_mentions`;
   ``label_report``'s labels keep CheXpert's per-observation form). Each mention carries the side it is stated
   on (:mod:`._sides`: left, right, bilateral, unspecified). "No new X", "no new or worsening X", "no interval
   development of X", "no progression of X" (a trigger of kind ``unstated``) speak of change, not presence:
   "No new consolidation." beside "Persistent left lower lobe consolidation." says the consolidation is still
   there. CheXpert's labeler negates the noun phrase ("no new X" reads like "no X") and its report-level
   aggregation lets the stated X win, so ``label_report`` keeps that reading (negative, and positive at report
   level whenever X is stated elsewhere). Reward presence is per sentence, where that negative would read the
   report as contradicting itself: :func:`label_mentions` leaves such a mention out (not stated), the reading a
   radiologist gives (ours, in the paper map). "Persistent / stable / unchanged / redemonstrated X" and "interval decrease in X" stay positive
   (the finding is still seen), "resolved X" / "resolution of X" negative, as before. Findings outside CheXpert's
   14 (:data:`OTHER_FINDINGS`: hiatal hernia, free air, pneumomediastinum, subcutaneous emphysema, emphysema,
   granuloma, a malpositioned device) are read with the same scopes, so a reward can charge for them.
14. Hedges toward absence (ours, beside the hedge convention of the paper map): "X is unlikely", "X is less likely",
   "X is not likely", "doubtful X", "unlikely to represent X" lean to "not there", so X reads **absent** (0) in
   the labels and in reward presence (a ``-1`` slot), the mirror of a hedge toward presence ("possible X"),
   read uncertain (-1) and counted present. CheXpert reads "less likely" uncertain; counted present under the
   evaluation's convention that would make "pneumonia is less likely" a pneumonia. Backward such a hedge reaches
   X over at most three words of its clause ("Small effusion, pneumothorax is unlikely." keeps the effusion);
   "X or less likely Y" stays a differential (Y uncertain).
15. Text the rules cannot read: markup goes before labelling (script, style and head elements and comments with
   their content, then every tag); a sentence in another language is not read (its findings not stated) and the
   text then gets no "No Finding" (the unread sentence may state a finding), with an
   :class:`UnreadableTextWarning`.

Left out: coreference across sentences, temporal reasoning ("resolved since
prior" is read as negative; "Pneumonia in 2019, treated." is still positive),
hierarchical propagation (an opacity mention does
not imply Lung Opacity children or vice versa), clinical knowledge beyond
the phrase lists; sub-keys that name a finding rather than a side ("Lungs: Effusion: none")
are ordinary keys. Hedged mentions ("may represent pneumonia") are
uncertain (-1) as in CheXpert; human labels that leave hedges out (IU-Xray's MeSH
terms) count them as errors when uncertain is read as positive. ``evaluate_labeler``
measures what that costs.

A package of private parts: :mod:`._rules` (the phrase and trigger tables), :mod:`._text` (normalisation and
sentence units), :mod:`._scopes` (NegEx scopes), :mod:`._structure` (``key: value`` layouts), :mod:`._sentence`
(a sentence's and a report's labels, cached), :mod:`._evaluation` (against gold labels).

Example::

    >>> label_report("Mild cardiomegaly. No pleural effusion. Possible pneumonia.")
    {'Cardiomegaly': 1, 'Pneumonia': -1, 'Pleural Effusion': 0}
"""

from __future__ import annotations

from sdrlib.clinical.labeler._evaluation import evaluate_labeler
from sdrlib.clinical.labeler._sentence import (UnreadableTextWarning, label_mentions, label_report,
                                               label_reports)
from sdrlib.clinical.labeler._sides import NO_SIDE, SIDES, Mention
from sdrlib.clinical.labeler._text import _normalize, _sentences  # noqa: F401  (tests read the text units)

from sdrlib.vocabulary import OTHER_FINDINGS  # findings outside CheXpert's 14 that label_mentions reads (point 13)

__all__ = ["label_report", "label_reports", "label_mentions", "UnreadableTextWarning",
           "evaluate_labeler", "Mention", "SIDES", "NO_SIDE",
           "OTHER_FINDINGS"]
