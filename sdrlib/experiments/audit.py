"""Reward audit: what each reward configuration pays for edited and degenerate reports.

For every reward configuration and every test reference, thirteen completions are built from the reference and
scored against it (:func:`build_cases`, :func:`reward_audit`), by abnormality stratum
(:func:`sdrlib.data.stratum`: normal / single / multi finding):

- ``reference``        the reference itself (the ceiling);
- ``pertinent_negative_added`` the reference plus one true pertinent negative on the other side of a one-sided
  finding ("No left pleural effusion." beside a right one; the SynthCXR grammar's own sentence, from the ground
  truth, after the finding's first sentence): as good as the reference, a reward that pays less reads it as a
  contradiction (no grammar / no one-sided effusion, pneumothorax, consolidation or opacity with a free other
  side: skipped);
- ``paraphrase``       the Findings' finding sentences reworded: the SynthCXR report grammar
  (:func:`sdrlib.data.synthcxr.report.write_report`) renders each ground-truth finding again with a new seed,
  everything else verbatim, kept when the labeler reads the same findings (normal references and other datasets
  have nothing to reword / no grammar: skipped);
- ``another_reader``   the whole report of the same study by another reader (the grammar with a new seed: same
  positive labels, but other wording, technique line, normal statements and incidental remarks);
- ``omitted``          one positive finding left out: every sentence stating it positive removed (a section left
  empty gets the modal normal report's section, what a reader who missed it would write);
- ``hedged_vs_negated`` the finding ``contradicted`` negates, hedged instead ("Findings may represent ...", the
  other sentences verbatim): set beside ``contradicted`` it asks whether a reward ranks a hedged version of a
  finding above a negated one (and above leaving it out, ``omitted``);
- ``contradicted``     the same sentences replaced by the training corpus's most common sentence that states only
  that finding, negative ("No pleural effusion.");
- ``wrong_side``       one one-sided finding stated on the other side: every sentence stating it, and the sentences
  denying it on the other side ("No left pleural effusion.", "The left lung is clear."), mirrored right <-> left
  (right middle lobe <-> lingula); the labels are unchanged, so only a reward reading laterality sees it (no
  finding with a side word, or one written "left and right": skipped);
- ``hallucinated``     the corpus's most common sentence stating one finding the reference does not mention,
  positive, added to both sections;
- ``modal_normal``     the training set's most common normal report (:func:`modal_normal_report`);
- ``repeated``         the reference's first sentence of each section, repeated as often as the section has sentences;
- ``hedged``           every sentence stating a finding rewritten as uncertain ("Findings may represent ...");
- ``empty_impression`` the reference Findings with an empty Impression.

The finding a case edits is drawn per study with a seeded generator among those it can edit cleanly (a finding
whose sentences state no other positive finding). A case that **cannot be built** for a reference (no finding to
omit in a normal report, a finding sharing its sentences with another, a hedge the labeler still reads positive)
is **skipped and counted** (``n_skipped`` per row, the reasons in :attr:`AuditResult.skipped`), never scored as
something else. Findings come from the offline labeler per sentence (:func:`sdrlib.clinical.sentence_presence`).

:func:`broken_orderings` marks each ordering a clinician expects (:data:`EXPECTED_ORDERINGS`) that a reward
breaks, on the references where both cases exist (paired). :func:`expected_reward_view` compares, for abnormal
references, the mean reward of a policy's own samples with that of always answering the modal normal report:
when the normal report wins, the reward pays for silence.

Left out: severity edits (the labeler does not read them) and edits of the Impression alone; the audit's figure is
:func:`sdrlib.plots.plot_audit`. The three cases after ``empty_impression`` in :data:`CASES` (issue "SynthCXR speaks
it") draw their finding after the others, so the older cases are built exactly as before.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.clinical import OBSERVATIONS, label_report, observation_presence, sentence_presence
from sdrlib.data import stratum
from sdrlib.data.synthcxr.findings import Finding
from sdrlib.data.synthcxr.language import denied_side
from sdrlib.data.synthcxr.report import other_side_negative, write_report
from sdrlib.reports import build_template, split_sentences
from sdrlib.rewards import RewardScorer, parse_reward
from sdrlib.vocabulary import PATHOLOGIES

__all__ = ["CASES", "CASE_LABELS", "CORRECT_CASES", "EXPECTED_ORDERINGS", "AuditResult", "modal_normal_report", "sentence_bank",
           "build_cases", "audit_scorer", "reward_audit", "broken_orderings", "expected_reward_view",
           "states_a_finding", "paired_case_means"]

#: the audit's completions, best first as a clinician would rank them for an abnormal reference (roughly)
CASES: tuple[str, ...] = ("reference", "pertinent_negative_added", "paraphrase", "another_reader", "hedged_vs_negated",
                          "omitted", "contradicted", "wrong_side", "hallucinated", "modal_normal", "repeated", "hedged",
                          "empty_impression")
#: the cases that are correct reports (a reward a clinician trusts pays them about as much as the reference); every
#: other case is an edited or degenerate report that should earn less (:func:`sdrlib.plots.plot_audit` parts them)
CORRECT_CASES: tuple[str, ...] = ("reference", "pertinent_negative_added", "paraphrase", "another_reader")
CASE_LABELS = {"reference": "reference", "paraphrase": "paraphrase", "another_reader": "another reader, same findings",
               "omitted": "one finding omitted",
               "contradicted": "one finding contradicted", "hallucinated": "one finding hallucinated",
               "modal_normal": "modal normal report", "repeated": "one true sentence repeated",
               "hedged": "every finding hedged", "empty_impression": "empty Impression",
               "pertinent_negative_added": "true pertinent negative added", "wrong_side": "one finding on the wrong side",
               "hedged_vs_negated": "one finding hedged"}
ABNORMAL = ("single", "multi")
#: (case a clinician ranks higher, case ranked lower, strata where the expectation holds, what a break reads as)
EXPECTED_ORDERINGS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("paraphrase", "omitted", ABNORMAL, "omitted ranks above paraphrase"),
    ("paraphrase", "contradicted", ABNORMAL, "contradicted ranks above paraphrase"),
    ("paraphrase", "hallucinated", ABNORMAL, "hallucinated ranks above paraphrase"),
    ("hallucinated", "omitted", ABNORMAL, "omitted ranks above hallucinated (a miss is cheaper)"),
    ("omitted", "contradicted", ABNORMAL, "contradicted ranks above omitted"),
    ("hallucinated", "modal_normal", ABNORMAL, "modal normal report ranks above hallucinated"),
    ("omitted", "modal_normal", ("multi",), "modal normal report ranks above one omitted of several"),
    ("paraphrase", "modal_normal", ABNORMAL, "modal normal report ranks above paraphrase"),
    ("hedged", "modal_normal", ABNORMAL, "modal normal report ranks above every finding hedged"),
    ("modal_normal", "hallucinated", ("no_finding",), "hallucinated ranks above modal normal for a normal study"),
    ("paraphrase", "repeated", ABNORMAL, "one true sentence repeated ranks above paraphrase"),
    ("modal_normal", "repeated", ("no_finding",), "one true sentence repeated ranks above modal normal for a normal study"),
    ("another_reader", "hallucinated", ("no_finding", *ABNORMAL), "hallucinated ranks above another reader's correct report"),
    ("another_reader", "modal_normal", ABNORMAL, "modal normal report ranks above another reader's correct report"),
    ("paraphrase", "hedged", ABNORMAL, "every finding hedged ranks above paraphrase"),
    ("reference", "empty_impression", ("no_finding", *ABNORMAL), "empty Impression ranks above the reference"),
    ("paraphrase", "wrong_side", ABNORMAL, "one finding on the wrong side ranks above paraphrase"),
    ("pertinent_negative_added", "wrong_side", ABNORMAL,
     "one finding on the wrong side ranks above the reference with a true pertinent negative added"),
    ("pertinent_negative_added", "omitted", ABNORMAL,
     "one finding omitted ranks above the reference with a true pertinent negative added (read as a contradiction)"),
    ("pertinent_negative_added", "contradicted", ABNORMAL,
     "one finding contradicted ranks above the reference with a true pertinent negative added"),
    ("hedged_vs_negated", "contradicted", ABNORMAL, "one finding contradicted ranks above the same finding hedged"),
    ("hedged_vs_negated", "omitted", ABNORMAL, "one finding omitted ranks above the same finding hedged"),
)
HEDGES = ("Findings may represent {}.", "Cannot exclude {}.")
_PATH_IDX = [OBSERVATIONS.index(p) for p in PATHOLOGIES]


@dataclass
class AuditResult:
    """``table``: one row per (reward, label, stratum, case) with ``n``, ``n_skipped``, ``mean``, ``sem``,
    ``content`` (the content reward's mean); ``scores``: long per-reference values (reward, study_id, stratum,
    case, total); ``skipped``: (case, reason) -> count; ``cases``: study_id -> case -> completion text or skip reason."""

    table: pd.DataFrame
    scores: pd.DataFrame
    skipped: Counter = field(default_factory=Counter)
    cases: dict = field(default_factory=dict)

    def skipped_total(self, case: str) -> int:
        """References for which ``case`` could not be built (all reasons)."""
        return sum(n for (c, _), n in self.skipped.items() if c == case)


def _positives(sentences: Sequence[str]) -> np.ndarray:
    """(n, 14) bool: sentence i states observation j positive (the offline labeler, per sentence)."""
    return _stated(sentences) > 0


def _stated(sentences: Sequence[str]) -> np.ndarray:
    """(n, 14) int8 per sentence and CheXpert observation: +1 stated positive, -1 negated, 0 uncertain or not
    mentioned (the labeler's labels of each sentence alone). The audit edits *stated* findings, so a hedge is not
    one here (reward presence reads it positive: :mod:`sdrlib.clinical.presence`)."""
    out = np.zeros((len(sentences), len(OBSERVATIONS)), np.int8)
    for i, s in enumerate(sentences):
        for obs, v in label_report(s).items():
            if obs != "No Finding" and v in (0, 1):
                out[i, OBSERVATIONS.index(obs)] = 1 if v == 1 else -1
    return out


def states_a_finding(text: str) -> bool:
    """Whether a report states one of the 12 pathologies positive. Example: ``states_a_finding("No effusion.")`` -> False."""
    lab = label_report(text)
    return any(lab.get(p) == 1 for p in PATHOLOGIES)


def modal_normal_report(train_records: Sequence[Any]) -> tuple[str, str]:
    """The training set's most common normal report, ``(findings, impression)``.

    Normal = stratum ``no_finding`` (by the record's labels, else the labeler's). Free-text Findings are rarely
    repeated verbatim (SynthCXR: 973 distinct among 973 normal training reports), so the Findings is that of the
    normal report whose sentences are the most frequent in the normal corpus on average (ties: the first study
    id); the Impression is the most common normal Impression text.
    """
    normal = [r for r in train_records if stratum(r.labels or label_report(f"{r.findings} {r.impression}")) == "no_finding"
              and r.findings.strip() and r.impression.strip()]
    if not normal:
        raise ValueError("no normal training report with both sections: the modal normal report is undefined")
    freq = Counter(s for r in normal for s in split_sentences(r.findings))
    best = min(normal, key=lambda r: (-float(np.mean([freq[s] for s in split_sentences(r.findings)] or [0])), r.study_id))
    impression = Counter(r.impression for r in normal).most_common(1)[0][0]
    return best.findings, impression


def sentence_bank(train_records: Sequence[Any]) -> dict[str, dict[int, str]]:
    """Per observation index, the most common training sentence stating only it, ``{"pos": {j: s}, "neg": {j: s}}``.

    "Only it": the sentence's presence vector is +1 (or -1) at observation j and 0 elsewhere.
    """
    counts = Counter(s for r in train_records for t in (r.findings, r.impression) for s in split_sentences(t))
    sents = [s for s, _ in counts.most_common()]
    P = _stated(sents)
    out: dict[str, dict[int, str]] = {"pos": {}, "neg": {}}
    for s, p in zip(sents, P):
        nz = np.flatnonzero(p)
        if len(nz) == 1:
            out["pos" if p[nz[0]] > 0 else "neg"].setdefault(int(nz[0]), s)
    return out


def _truth(record: Any) -> tuple[list[Finding], list[str]] | None:
    meta = getattr(record, "meta", None) or {}
    if meta.get("truth") is None:
        return None
    return [Finding(**f) for f in meta["truth"]], list(meta.get("devices") or [])


def _mentions_pathology(sentence: str) -> bool:
    lab = label_report(sentence)
    return any(lab.get(p) in (1, -1) for p in PATHOLOGIES)


def _finding_labels(text: str) -> dict[str, int]:
    lab = label_report(text)
    return {p: lab[p] for p in PATHOLOGIES if lab.get(p) in (1, -1)}


def _paraphrase(record: Any, seed: int, tries: int = 16) -> tuple[str, str] | str:
    """The reference with the Findings' finding sentences reworded by the SynthCXR grammar, or a skip reason.

    Each ground-truth finding is rendered alone (:func:`write_report` with that finding only, a new seed) and its
    sentences that state a pathology replace the reference's, at the first one's place; everything else (normal
    statements, devices, the Impression) stays verbatim. Kept when the labeler reads the same pathologies with the
    same certainty as in the reference Findings and the text changed.
    """
    truth = _truth(record)
    if truth is None:
        return "no report grammar for this dataset"
    findings, _ = truth
    F = split_sentences(record.findings)
    at = [k for k, s in enumerate(F) if _mentions_pathology(s)]
    if not at or not findings:
        return "no finding sentence to reword"
    want = _finding_labels(record.findings)
    for t in range(tries):
        rng = np.random.default_rng([seed, t, 0xA0D17])
        new = [s for f in findings for s in split_sentences(write_report([f], [], rng)[0]) if _mentions_pathology(s)]
        out = F[:at[0]] + new + [s for k, s in enumerate(F) if k > at[0] and k not in at]
        text = " ".join(out)
        if text != record.findings and _finding_labels(text) == want:
            return text, record.impression
    return "no rewording with the same finding labels"


def _another_reader(record: Any, seed: int, tries: int = 8) -> tuple[str, str] | str:
    """Another reader's whole report of the same SynthCXR study (same positive labels), or a skip reason."""
    truth = _truth(record)
    if truth is None:
        return "no report grammar for this dataset"
    findings, devices = truth
    want = {k for k, v in (record.labels or {}).items() if v == 1}
    for t in range(tries):
        f, i, lf, li = write_report(findings, devices, np.random.default_rng([seed, t, 0xB0D17]))
        if {k for k, v in {**lf, **li}.items() if v == 1} == want and (f, i) != (record.findings, record.impression):
            return f, i
    return "no rewrite with the same positive labels"


def _hedge(sentence: str) -> str | None:
    body = sentence.strip().rstrip(".").strip()
    body = body[:1].lower() + body[1:]
    for h in HEDGES:
        s = h.format(body)
        lab = label_report(s)
        if not any(v == 1 for k, v in lab.items() if k != "No Finding"):
            return s
    return None


_SIDE_RE = re.compile(r"\b(right|left)\b", re.I)
_LUNG_OBS = {OBSERVATIONS.index(o) for o in ("Consolidation", "Lung Opacity", "Pneumonia")}


def _swap_side(m: re.Match) -> str:
    word = m.group(1)
    other = {"right": "left", "left": "right"}[word.lower()]
    return other.capitalize() if word[0].isupper() else other


def _mirror(sentence: str) -> str:
    """``sentence`` with right and left swapped, capitals kept, the right middle lobe and the lingula swapped.

    Example: ``_mirror("Right middle lobe opacity. No left effusion.")`` -> ``"Lingula opacity. No right effusion."``.
    """
    s = re.sub(r"right middle lobe", "\x01", sentence, flags=re.I)
    s = re.sub(r"lingular?", "\x02", s, flags=re.I)
    s = _SIDE_RE.sub(_swap_side, s).replace("\x01", "lingula").replace("\x02", "right middle lobe")
    return s[:1].upper() + s[1:]


def _wrong_side(F: list[str], I: list[str], pres: np.ndarray, clean: list[int], rng: np.random.Generator
                ) -> tuple[str, str] | str:
    """One one-sided finding (among ``clean``) mirrored to the other side in both sections, or a skip reason.

    Mirrored: the sentences stating it (``pres`` > 0), those denying it with a side word, and for a lung finding
    the "The left lung is clear." sentences (a consolidation, pneumonia or opacity moves with the others of these
    on its side); a finding whose sentences have no side word or both is not one-sided.
    """
    sents = F + I
    sided = lambda s: bool(_SIDE_RE.search(s))  # noqa: E731
    both = lambda s: {m.lower() for m in _SIDE_RE.findall(s)} == {"right", "left"}  # noqa: E731
    ok = [j for j in clean if any(sided(s) for s, p in zip(sents, pres[:, j]) if p > 0)
          and not any(both(s) for s, p in zip(sents, pres[:, j]) if p > 0)]
    if not ok:
        return "no one-sided finding to move"
    j = int(rng.choice(ok))
    group = sorted(_LUNG_OBS) if j in _LUNG_OBS else [j]  # a consolidation moves with its pneumonia
    side = next(m.lower() for s, p in zip(sents, pres[:, j]) if p > 0 for m in _SIDE_RE.findall(s))
    on_side = lambda s: side in {m.lower() for m in _SIDE_RE.findall(s)}  # noqa: E731
    move = [(p[group].max() > 0 and on_side(s)) or (p[j] < 0 and denied_side(s) is not None)
            or (j in _LUNG_OBS and not p.any() and denied_side(s) is not None and "clear" in s)
            for s, p in zip(sents, pres)]
    out = [_mirror(s) if m else s for s, m in zip(sents, move)]
    return " ".join(out[:len(F)]), " ".join(out[len(F):])


def _pertinent_negative_added(record: Any, F: list[str], seed: int) -> tuple[str, str] | str:
    """The reference plus a true negative on the other side of a one-sided finding (the grammar's sentence, from
    the ground truth), after the Findings sentence stating the finding; or a skip reason."""
    truth = _truth(record)
    if truth is None:
        return "no report grammar for this dataset"
    findings, _ = truth
    rng = np.random.default_rng([seed, 0xC0DE])
    denied = {denied_side(s) for s in F} - {None}  # a side the reference already denies something on is left alone
    negs = [(f, s) for f in findings if (s := other_side_negative(f, findings, rng)) is not None
            and denied_side(s[0]) not in denied]
    if not negs:
        return "no one-sided finding with a free other side"
    f, (text, labels) = negs[int(rng.integers(len(negs)))]
    obs = [OBSERVATIONS.index(o) for o in labels] or sorted(_LUNG_OBS)
    pos = _positives(F)
    at = next((k + 1 for k in range(len(F)) if pos[k, obs].any()), len(F))
    return " ".join(F[:at] + [text] + F[at:]), record.impression


def _hedge_one(F: list[str], I: list[str], pres_j: np.ndarray) -> tuple[str, str] | str:
    """The sentences stating one finding (``pres_j``: per sentence, it states it) hedged, or a skip reason."""
    out = []
    for s, p in zip(F + I, pres_j):
        h = _hedge(s) if p else s
        if h is None:
            return "a hedge the labeler still reads positive"
        out.append(h)
    return " ".join(out[:len(F)]), " ".join(out[len(F):])


def build_cases(record: Any, *, modal: tuple[str, str], bank: Mapping[str, Mapping[int, str]], seed: int = 0
                ) -> dict[str, tuple[str, str] | str]:
    """The audit's completions for one reference: case -> ``(findings, impression)`` or a skip reason (str).

    ``modal`` from :func:`modal_normal_report`, ``bank`` from :func:`sentence_bank`; ``seed`` (with the study id)
    draws the finding a case edits. Example: for a normal reference ``build_cases(r, ...)["omitted"]`` ->
    ``"no positive finding to edit"``.
    """
    rng = np.random.default_rng([seed, *map(ord, str(record.study_id))])
    F, I = split_sentences(record.findings), split_sentences(record.impression)
    sents = F + I
    pos = _positives(sents)
    out: dict[str, tuple[str, str] | str] = {"reference": (record.findings, record.impression)}
    out["paraphrase"] = _paraphrase(record, int(rng.integers(1 << 31)))
    out["another_reader"] = _another_reader(record, int(rng.integers(1 << 31)))
    # a finding whose sentences state no other positive finding can be omitted or contradicted cleanly
    present = [j for j in _PATH_IDX if pos[:, j].any()]
    clean = [j for j in present if not (pos[pos[:, j]].sum(axis=1) > 1).any()]
    j = None
    if not present:
        out["omitted"] = out["contradicted"] = "no positive finding to edit"
    elif not clean:
        out["omitted"] = out["contradicted"] = "every finding shares a sentence with another"
    else:
        j = int(rng.choice(clean))
        keep = ~pos[:, j]
        f_keep = [s for s, k in zip(F, keep[:len(F)]) if k]
        i_keep = [s for s, k in zip(I, keep[len(F):]) if k]
        out["omitted"] = (" ".join(f_keep) or modal[0], " ".join(i_keep) or modal[1])
        neg = bank["neg"].get(j)
        if neg is None:
            out["contradicted"] = f"no negative sentence for {OBSERVATIONS[j]} in the corpus"
        else:
            swap = [neg if p else s for s, p in zip(sents, pos[:, j])]
            fs, is_ = list(dict.fromkeys(swap[:len(F)])), list(dict.fromkeys(swap[len(F):]))
            out["contradicted"] = (" ".join(fs), " ".join(is_))
    mentioned = ((observation_presence(sentence_presence(sents)) != 0).any(axis=0) if sents
                 else np.zeros(len(OBSERVATIONS), bool))  # a hedged finding is mentioned: never hallucinated
    free = [j for j in _PATH_IDX if not mentioned[j] and j in bank["pos"]]
    if free:
        h = bank["pos"][int(rng.choice(free))]
        out["hallucinated"] = (f"{record.findings} {h}", f"{record.impression} {h}")
    else:
        out["hallucinated"] = "every finding is mentioned"
    out["modal_normal"] = modal
    out["repeated"] = (" ".join([F[0]] * len(F)) if F else record.findings, " ".join([I[0]] * len(I)) if I else record.impression)
    if not present:
        out["hedged"] = "no positive finding to hedge"
    else:
        hedged = []
        for s, p in zip(sents, pos):
            h = _hedge(s) if p[_PATH_IDX].any() else s
            if h is None:
                break
            hedged.append(h)
        out["hedged"] = ((" ".join(hedged[:len(F)]), " ".join(hedged[len(F):])) if len(hedged) == len(sents)
                         else "a hedge the labeler still reads positive")
    out["empty_impression"] = (record.findings, "")
    # the real-language cases draw last, so the cases above are built as before they existed
    out["hedged_vs_negated"] = _hedge_one(F, I, pos[:, j]) if j is not None else out["omitted"]
    pres = _stated(sents)  # per CheXpert observation, no side (the side words are read from the text)
    out["wrong_side"] = (_wrong_side(F, I, pres, clean, rng) if present else "no positive finding to edit")
    out["pertinent_negative_added"] = (_pertinent_negative_added(record, F, int(rng.integers(1 << 31))) if present
                                       else "no positive finding to edit")
    return out


def audit_scorer(reward: str, embedder: Any, grpo_cfg: Any, train_records: Sequence[Any]) -> RewardScorer:
    """The scorer a GRPO run of ``reward`` uses (profile weights and settings, the method's training data)."""
    spec = parse_reward(reward)
    data = spec.impl.grpo_data(spec, getattr(grpo_cfg, spec.method, None), train_records)
    return RewardScorer.from_profile(spec, embedder, grpo_cfg, data=data)


def _completion(case: tuple[str, str]) -> str:
    # an empty section is written as is: the template then fails R_fmt, which is what the reward would see
    f, i = case
    return f"<think> {f} </think> <answer> {i} </answer>" if not (f.strip() and i.strip()) else build_template(f, i)


def reward_audit(rewards: Sequence[str], references: Sequence[Any], train_records: Sequence[Any], embedder: Any,
                 grpo_cfg: Any, *, seed: int = 0, scorer_for: Callable[[str], RewardScorer] | None = None,
                 cases: Mapping[str, Mapping[str, Any]] | None = None) -> AuditResult:
    """Score every case of every reference under every reward configuration (module doc).

    ``rewards``: reward names (``"sft"`` is dropped: it scores nothing); ``references``: test records (labels
    used for the stratum when present, else the labeler's); ``scorer_for``: name -> scorer (default
    :func:`audit_scorer` with the profile's ``grpo`` section). Returns an :class:`AuditResult`.
    """
    rewards = [r for r in rewards if parse_reward(r).trains]
    if cases is None:
        modal, bank = modal_normal_report(train_records), sentence_bank(train_records)
        cases = {r.study_id: build_cases(r, modal=modal, bank=bank, seed=seed) for r in references}
    strata = {r.study_id: stratum(r.labels or label_report(f"{r.findings} {r.impression}")) for r in references}
    skipped = Counter((c, v) for cs in cases.values() for c, v in cs.items() if isinstance(v, str))
    items = [(r, c, v) for r in references for c, v in cases[r.study_id].items() if not isinstance(v, str)]
    comps = [_completion(v) for _, _, v in items]
    ref_f = [r.findings for r, _, _ in items]
    ref_i = [r.impression for r, _, _ in items]
    scorer_for = scorer_for or (lambda name: audit_scorer(name, embedder, grpo_cfg, train_records))
    long = []
    for name in rewards:
        b = scorer_for(name).score(comps, ref_f, ref_i)
        label = parse_reward(name).label
        long += [{"reward": name, "label": label, "study_id": r.study_id, "stratum": strata[r.study_id], "case": c,
                  "total": float(t), "content": float(x)} for (r, c, _), t, x in zip(items, b.total, b.content)]
    scores = pd.DataFrame(long)
    rows = []
    n_refs = Counter(strata.values())
    for (name, label), g in scores.groupby(["reward", "label"], sort=False):
        for st in ("no_finding", "single", "multi", "all"):
            gs = g if st == "all" else g[g["stratum"] == st]
            for c in CASES:
                v = gs.loc[gs["case"] == c, "total"]
                x = gs.loc[gs["case"] == c, "content"]
                n_ref = sum(n_refs.values()) if st == "all" else n_refs.get(st, 0)
                rows.append({"reward": name, "label": label, "stratum": st, "case": c, "n": len(v),
                             "n_skipped": n_ref - len(v), "mean": v.mean() if len(v) else np.nan,
                             "sem": v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan,
                             "content": x.mean() if len(x) else np.nan})
    return AuditResult(pd.DataFrame(rows), scores, skipped, dict(cases))


def paired_case_means(result: AuditResult, cases: Sequence[str] = CASES) -> tuple[pd.DataFrame, int]:
    """Mean reward of each case over the **same** references: those for which every case of ``cases`` could be
    built (all strata pooled). The table of :func:`reward_audit` averages each case over the references it exists
    for (a normal reference has no paraphrase or omission), so its columns mix reference sets; this view pairs them.

    Returns ``(table, n)``: rows reward labels (in the audit's order), columns ``cases``, and the number ``n`` of
    references in the common set (0 when none has every case: the table is then all NaN). The skipped counts are
    ``result.table`` rows ``stratum == "all"``, column ``n_skipped``.
    """
    s = result.scores
    built = s.groupby("study_id")["case"].agg(lambda c: set(cases) <= set(c))
    common = built[built].index
    t = s[s["study_id"].isin(common) & s["case"].isin(cases)]
    labels = list(dict.fromkeys(s["label"]))
    wide = t.pivot_table(index="label", columns="case", values="total", aggfunc="mean")
    return wide.reindex(index=labels, columns=list(cases)), len(common)


def broken_orderings(result: AuditResult | pd.DataFrame, tol: float = 1e-9) -> pd.DataFrame:
    """Every expected ordering (:data:`EXPECTED_ORDERINGS`) per reward and stratum, paired on the references
    that have both cases: ``diff`` = mean(reward of the higher case - of the lower), ``share_broken`` = share of
    references where the lower case scores higher, ``broken`` = ``diff < -tol`` (the reward ranks it the other way)."""
    scores = result.scores if isinstance(result, AuditResult) else result
    rows = []
    for (name, label), g in scores.groupby(["reward", "label"], sort=False):
        wide = g.pivot_table(index=["study_id", "stratum"], columns="case", values="total").reset_index()
        for hi, lo, strata, reads in EXPECTED_ORDERINGS:
            if hi not in wide or lo not in wide:
                continue
            for st in strata:
                w = wide[(wide["stratum"] == st)].dropna(subset=[hi, lo])
                if not len(w):
                    continue
                d = (w[hi] - w[lo]).to_numpy()
                rows.append({"reward": name, "label": label, "stratum": st, "expected": f"{hi} > {lo}",
                             "n": len(d), "diff": float(d.mean()), "share_broken": float((d < -tol).mean()),
                             "broken": bool(d.mean() < -tol), "reads": reads})
    return pd.DataFrame(rows)


def _silent(completion: str) -> bool:
    text = completion
    for tag in ("<think>", "</think>", "<answer>", "</answer>"):
        text = text.replace(tag, " ")
    return not states_a_finding(text)


def expected_reward_view(rewards: Sequence[str], references: Sequence[Any], samples: Mapping[str, Sequence[str]],
                         modal: tuple[str, str], *, scorer_for: Callable[[str], RewardScorer]) -> pd.DataFrame:
    """For abnormal references: mean reward of a policy's own samples vs always answering the modal normal report.

    ``samples``: study id -> the policy's completions for it (e.g. the SFT policy's test generations, one per
    seed). Columns, abnormal references: ``sft_mean`` (all samples), ``modal_normal_mean``, ``gap`` = sft - modal
    (<= 0: ``pays_for_silence``), ``share_sample_above_modal``; among the policy's samples ``silent_mean`` (no
    positive finding stated) vs ``stating_mean`` (``n_silent`` / ``n_stating``) and ``silence_margin`` =
    stating - silent (what stating a finding earns over silence, inside the policy's own samples: the contrast a
    GRPO group sees); the same split on normal references (``normal_silent_mean`` / ``normal_stating_mean``: the
    price of a wrong guess; ``normal_margin`` = stating - silent there) and ``mixed_margin``, the two margins
    weighted by the share of abnormal references: what stating a finding earns over silence on the references as
    they come (< 0: an uncertain policy like this one gains by staying silent).
    """
    strata = {r.study_id: stratum(r.labels or label_report(f"{r.findings} {r.impression}")) for r in references}
    refs = [r for r in references if r.study_id in samples]
    items = [(r, c) for r in refs for c in samples[r.study_id]]
    comps = [c for _, c in items]
    F, I = [r.findings for r, _ in items], [r.impression for r, _ in items]
    silent = np.array([_silent(c) for c in comps], bool)
    abn = np.array([strata[r.study_id] in ABNORMAL for r, _ in items], bool)
    ab_refs = [r for r in refs if strata[r.study_id] in ABNORMAL]
    modal_c = build_template(*modal)
    nan_mean = lambda v: float(v.mean()) if len(v) else np.nan  # noqa: E731
    share_ab = len(ab_refs) / max(len(refs), 1)  # the strata weighted as the references come
    rows = []
    for name in [r for r in rewards if parse_reward(r).trains]:
        sc = scorer_for(name)
        a = sc.score(comps, F, I).total
        m = sc.score([modal_c] * len(ab_refs), [r.findings for r in ab_refs], [r.impression for r in ab_refs]).total
        per_ref = dict(zip((r.study_id for r in ab_refs), m))
        mm = np.array([per_ref[r.study_id] for r, _ in items if strata[r.study_id] in ABNORMAL])
        aa = a[abn]
        rows.append({"reward": name, "label": parse_reward(name).label, "n_refs": len(ab_refs), "n_samples": int(abn.sum()),
                     "sft_mean": nan_mean(aa), "modal_normal_mean": nan_mean(m), "gap": nan_mean(aa) - nan_mean(m),
                     "share_sample_above_modal": float((aa > mm).mean()) if len(aa) else np.nan,
                     "pays_for_silence": bool(nan_mean(m) >= nan_mean(aa)),
                     "silent_mean": nan_mean(a[abn & silent]), "stating_mean": nan_mean(a[abn & ~silent]),
                     "silence_margin": nan_mean(a[abn & ~silent]) - nan_mean(a[abn & silent]),
                     "n_silent": int((abn & silent).sum()), "n_stating": int((abn & ~silent).sum()),
                     "normal_silent_mean": nan_mean(a[~abn & silent]), "normal_stating_mean": nan_mean(a[~abn & ~silent]),
                     "normal_n_stating": int((~abn & ~silent).sum()),
                     "normal_margin": nan_mean(a[~abn & ~silent]) - nan_mean(a[~abn & silent]),
                     "mixed_margin": share_ab * (nan_mean(a[abn & ~silent]) - nan_mean(a[abn & silent]))
                     + (1 - share_ab) * (nan_mean(a[~abn & ~silent]) - nan_mean(a[~abn & silent]))})
    return pd.DataFrame(rows)


def relative_table(table: pd.DataFrame, stratum_name: str) -> pd.DataFrame:
    """Mean reward of each case as a share of the reference's (rows: reward labels, columns: :data:`CASES`), one
    stratum: 1 = paid like the reference, 0 = nothing. The scales of the rewards differ (R_fmt in [0, 1],
    distances in [0, 3], EditGRPO in [0, 4]); the share makes them comparable."""
    t = table[table["stratum"] == stratum_name]
    wide = t.pivot_table(index="label", columns="case", values="mean", sort=False).reindex(columns=list(CASES))
    return wide.div(wide["reference"], axis=0)
