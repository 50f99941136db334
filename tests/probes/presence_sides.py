"""Run: ``PYTHONPATH=. .venv/bin/python tests/probes/presence_sides.py`` (not collected by pytest; every fix it found has a
test and a row in docs/bad_input.md). Probe pass over the surfaces the side-aware wave added: the labeler's mentions
with sides, presence rows and their helpers, the negation-aware cost's new checks, the recall family's counting,
G-CARL's claims, the verdict words per family and SynthCXR's language rates. Each probe: clear (named error), defined
(a documented result), crash (an unhelpful exception), silent (a wrong result without a word), hang."""
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _harness import Probes  # noqa: E402

P = Probes(seconds=60)
probe = P.probe

from sdrlib.clinical import (column, findings_of, label_mentions, observation_presence,  # noqa: E402
                             sentence_presence)
from sdrlib.distances.engine import paired_distances  # noqa: E402
from sdrlib.distances.negation import check_presence, coverage, wrong_slots  # noqa: E402

sides = lambda t: sorted((m.observation, m.status, m.side) for m in label_mentions(t))  # noqa: E731
# --- the labeler's mentions with sides
probe("mentions: None", lambda: label_mentions(None), TypeError)
probe("mentions: empty text", lambda: label_mentions(""), lambda m: m == ())
probe("mentions: a side word alone", lambda: label_mentions("Left."), lambda m: m == ())
probe("mentions: upper case", lambda: sides("SMALL LEFT PLEURAL EFFUSION."), lambda s: s == [("Pleural Effusion", 1, "left")])
probe("mentions: abbreviation L (not read as a side)", lambda: sides("Small L pleural effusion."),
      lambda s: s == [("Pleural Effusion", 1, "unspecified")])
probe("mentions: left and right after the finding", lambda: sides("Pleural effusions on the left and right."),
      lambda s: s == [("Pleural Effusion", 1, "bilateral")])
probe("mentions: 'no left or right' denies both", lambda: sides("No left or right pleural effusion."),
      lambda s: s == [("Pleural Effusion", 0, "bilateral")])
probe("mentions: control characters", lambda: sides("Small left\x00 pleural effusion\x07."), lambda s: len(s) <= 1)
probe("mentions: 100 kB of sides", lambda: len(label_mentions("left right bilateral " * 5000 + "effusion.")),
      lambda n: n == 1)
probe("mentions: 'no new' alone states nothing", lambda: sides("No new focal consolidation."), lambda s: s == [])
probe("mentions: a hedge is uncertain with its side", lambda: sides("Possible right lower lobe pneumonia."),
      lambda s: s == [("Pneumonia", -1, "right")])
probe("mentions: another language", lambda: sides("Pas d'épanchement pleural gauche."), lambda s: s == [])
# --- presence rows and their helpers
probe("presence: no sentences", lambda: sentence_presence([]).shape, lambda s: s == (0, 63))
probe("presence: one str", lambda: sentence_presence("No effusion."), "error")
probe("presence: None item", lambda: sentence_presence([None]), "error")
probe("column: unknown side", lambda: column("Pleural Effusion", "middle"), "error")
probe("column: unknown finding", lambda: column("Effusion", "left"), "error")
probe("findings_of: a legacy 14-wide row (read without sides)", lambda: findings_of(np.ones(14, np.int8)),
      lambda f: ("Pleural Effusion", "unspecified", 1) in f and ("Pleural Effusion", "left", 1) not in f)
probe("findings_of: width 20", lambda: findings_of(np.ones(20, np.int8)), "error")
probe("observation_presence: a legacy (n, 14) array", lambda: observation_presence(np.ones((2, 14), np.int8)).shape,
      lambda s: s == (2, 14))
probe("observation_presence: width 20", lambda: observation_presence(np.ones((2, 20), np.int8)), "error")
probe("check_presence: width 20", lambda: check_presence(np.zeros((1, 20)), 1, "P"), "error")
probe("check_presence: value 2", lambda: check_presence(np.full((1, 63), 2), 1, "P"), "error")
probe("coverage: width 14", lambda: coverage(np.ones(14, bool)), "error")
probe("wrong_slots: widths 63 and 14", lambda: wrong_slots(np.zeros((1, 63)), np.zeros((1, 14))), "error")
A = [np.eye(3)[:2]]
probe("engine: legacy and side-aware presence mixed", lambda: paired_distances(
    A, A, "chamfer_neg", presence=([np.zeros((2, 14), np.int8)], [np.zeros((2, 63), np.int8)]))[0], lambda d: d == 0)
probe("engine: recall with a repeated sentence", lambda: paired_distances(
    [np.repeat(np.eye(3)[:1], 5, 0)], [np.eye(3)[:1]], "chamfer_recall_0.5",
    presence=([np.zeros((5, 63), np.int8)], [np.zeros((1, 63), np.int8)]))[0], lambda d: d == 0)
# --- G-CARL's claims
from sdrlib.rewards.methods import gcarl  # noqa: E402

v = np.eye(4)
probe("gcarl: checklist of an unknown finding", lambda: gcarl.claim_validity(["No effusion."], v[:1], ["No effusion."],
                                                                           v[:1], checklist=["Hernia?"]), "error")
probe("gcarl: checklist as one string", lambda: gcarl.claim_validity(["No effusion."], v[:1], ["No effusion."], v[:1],
                                                                   checklist="Pneumothorax"), "error")
probe("gcarl: dedup rows that do not match", lambda: gcarl.dedup_claims(["a", "b"], v[:1]), "error")
probe("gcarl: a claim with no finding and no reference", lambda: gcarl.claim_validity(
    ["The lungs are clear."], v[:1], [], np.zeros((0, 4))).tolist(), lambda z: z == [False])
# --- verdict words per family
from sdrlib.metrics import verdict as V  # noqa: E402

probe("family_directions: p-values that are text", lambda: V.family_directions(pd.DataFrame(
    {"diff": [0.1], "ci_low": [0.05], "ci_high": [0.2], "p_value": ["abc"]})), "error")
probe("family_directions: NaN diff", lambda: V.family_directions(pd.DataFrame(
    {"diff": [np.nan], "ci_low": [0.05], "ci_high": [0.2], "p_value": [0.01]})), lambda w: w == [V.NO_DIFF])
probe("family_directions: empty table", lambda: V.family_directions(pd.DataFrame(
    columns=["diff", "ci_low", "ci_high", "p_value"])), lambda w: w == [])
# --- SynthCXR's language rates
from sdrlib.data.synthcxr.language import phenomenon_rates  # noqa: E402

probe("rates: no records", lambda: phenomenon_rates([]), lambda r: all(x == 0 for x in r.values()))
probe("rates: a record without text", lambda: phenomenon_rates([SimpleNamespace(findings=None, impression=None,
                                                                                labels=None)]),
      lambda r: all(x == 0 for x in r.values()))
probe("rates: one string", lambda: phenomenon_rates("Small left effusion."), "error")

P.report()
