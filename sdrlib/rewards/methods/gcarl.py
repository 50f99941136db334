"""G-CARL-style rewards for report generation: a claim reward R_fact and a checklist reward R_check.

After G-CARL (Xie et al., *Grounded Checklist-Aligned Reward Learning*, sec. 3), transferred from
patient-facing report interpretation to report generation, with offline components only:

- **R_fact** (its eqs. 6-9). The claims of a generated report are its sentences (Findings and
  Impression, :func:`sdrlib.reports.split_sentences`). Claim ``c`` is *valid* (``z = 1``) when it is
  **supported**: its sentence embedding has cosine >= ``threshold`` with some reference sentence or
  some bank sentence (the training reports' sentences: statements radiologists write), **true to the
  reference** on the findings' side slots (:mod:`sdrlib.clinical.presence`, :mod:`sdrlib.distances.negation`:
  it contradicts no reference statement, puts no finding on a side the reference does not, states nothing
  positive the reference does not cover; "Small left pleural effusion." against a reference with a left
  effusion and "No right pleural effusion." is true), **and relevant** (its sec. 3: a claim must speak of the
  case): every finding it names is one the reference speaks of or one the checklist asks about (the pitfall
  findings); a claim naming no finding must be supported by a *reference* sentence, so generic normal filler
  from the bank ("No pneumothorax." against a reference silent about it, pneumothorax not a pitfall) is no
  valid claim. Uncertain statements count as positive (the evaluation's convention). Then
  ``P = mean z``, ``C = min(sum z / K, 1)`` with ``K`` the reference's claim count (its number of
  sentences after deduplication, below), and ``R_fact = 2PC / (P + C)`` (0 when ``P + C = 0``), in [0, 1].
- **Claim deduplication** (its sec. 3: "After claim deduplication, the final claim set ..."; the paper
  deduplicates with its LLM extractor and gives no rule, so the rule here is **our reading**): before
  ``z``, ``P`` and ``C``, the generated report's sentences are deduplicated by :func:`dedup_claims`,
  greedily in sentence order, keeping the first of each group: a sentence is dropped when it states the
  same findings on the same sides with the same polarity as an earlier kept one **and** equals it after
  :func:`~sdrlib.rewards.methods.exact.normalize_sentence` (case, white space, trailing punctuation) or has
  embedding cosine >= ``dedup`` with it (the profile's ``grpo.gcarl.dedup``, default 0.95, ours). Without the
  presence condition "left" merged with "right" (cosine 0.988) and "small" with "large" (0.963), so a wrong-side
  claim written first removed the correct one. The reference's sentences are
  deduplicated the same way, and ``K`` is the number kept (support and relevance still check a claim
  against every reference sentence). So one true sentence written ``K`` times is one claim:
  ``P = 1``, ``C = 1 / K``, not ``P = C = 1``.
- **R_check** (its eqs. 10-13). A weighted checklist is built from the reference's CheXpert-14
  labels (:func:`sdrlib.clinical.labeler.label_report`), no clinician in the loop:
  *essential* (weight :data:`WEIGHTS` ``["essential"]`` = 4): every positive finding of the reference,
  and "No Finding" for a normal reference; satisfied when the generated report reads it positive or
  uncertain (the evaluation's uncertain-as-positive: hedging a finding costs less than leaving it out).
  *important* (2): every pertinent negative of the reference; satisfied when the generated report
  explicitly negates it. *optional* (1): every uncertain finding; satisfied when the generated report
  mentions it positive or uncertain. *pitfall* (-2): every critical finding of ``pitfalls``
  (default :data:`CRITICAL_FINDINGS`) that the reference does not read positive or uncertain;
  triggered when the generated report reads it positive or uncertain (a hallucinated critical finding).
  ``V_pos = sum_P w z / sum_P w``, ``V_neg = sum_N |w| z / sum_P w`` and
  ``R_check = clip(V_pos - V_neg, 0, 1)`` (eq. 13).

The trainer's reward is ``lambda_fmt R_fmt + lambda_fact R_fact + lambda_check R_check`` (its eq. 14;
paper weights 0.3 / 0.4 / 0.3, the profile's ``grpo.gcarl.lambda_*``), with R_fact and R_check 0 when
R_fmt is 0 (as every content reward in :mod:`sdrlib.rewards`).

**Not reproduced**, and why: the *patient-facing task* (PMRI: explaining a report to a patient from a
query and a dialogue history; here the policy writes the report itself, there is no query); *retrieval
over a medical datastore* (drug labels, textbooks, guidelines; nothing may be downloaded, and a
chest X-ray sentence is checked against the reference and a bank of training-report sentences
instead); *claim extraction by an LLM* (claims are sentences, which for these short templated reports
is what the extractor would return); *clinician-written checklists* (built here automatically from the
reference labels, so "demand satisfaction" and "expression quality" items, which need a person or an
LLM, are absent); the *LLM verifier* (support is an embedding match, truth and relevance a check of the
labeler's findings with their sides, so a fluent sentence with a wrong severity still counts as supported).

Example: the checklist of a reference with cardiomegaly and no pneumothorax, a report that gets both right,
one that misses the pertinent negative, one that states a pitfall; then R_fact of three claims, two valid,
against a reference of two:

>>> import numpy as np
>>> from sdrlib.rewards.methods.gcarl import build_checklist, check_reward, dedup_claims, fact_reward
>>> checklist = build_checklist({"Cardiomegaly": 1, "Pneumothorax": 0})
>>> [(i.observation, i.level, i.weight) for i in checklist]  # doctest: +NORMALIZE_WHITESPACE
[('Cardiomegaly', 'essential', 4.0), ('Pneumothorax', 'important', 2.0), ('Pneumothorax', 'pitfall', -2.0),
 ('Fracture', 'pitfall', -2.0)]
>>> [round(check_reward(labels, checklist)[0], 3)
...  for labels in ({"Cardiomegaly": 1, "Pneumothorax": 0}, {"Cardiomegaly": 1}, {"Fracture": 1})]
[1.0, 0.667, 0.0]
>>> [round(x, 3) for x in fact_reward(np.array([1, 1, 0]), 2)]  # R_fact, P, C
[0.8, 0.667, 1.0]
>>> dedup_claims(["Lungs clear.", "lungs clear", "No effusion."], np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
[0, 2]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdrlib.clinical import label_report
from sdrlib.clinical.presence import FINDINGS, PRESENCE_WIDTH, SLOTS, sentence_presence
from sdrlib.distances.negation import coverage, wrong_slots
from sdrlib.errors import SDRError
from sdrlib.reports import split_sentences
from sdrlib.rewards.completion import check_weight
from sdrlib.rewards.methods.exact import normalize_sentence
from sdrlib.rewards.scorer import as_list, encode_sentences, usable_set
from sdrlib.rewards.spec import MethodScores, RewardError, RewardMethod, RewardSpec, register_method
from sdrlib.vocabulary import PATHOLOGIES

__all__ = ["GCARLError", "CRITICAL_FINDINGS", "WEIGHTS", "ChecklistItem", "build_checklist", "check_reward",
           "claim_validity", "dedup_claims", "fact_reward", "report_presence", "GCARLSettings", "GCARLMethod",
           "check_pitfalls", "check_threshold", "check_dedup"]

#: critical findings whose hallucination is a pitfall item (the issue's example: pneumothorax)
CRITICAL_FINDINGS: tuple[str, ...] = ("Pneumothorax", "Fracture")
#: checklist weights per importance level (G-CARL: essential 4-5, important 2-3, optional 1-2, pitfall -2..-1)
WEIGHTS: dict[str, float] = {"essential": 4.0, "important": 2.0, "optional": 1.0, "pitfall": -2.0}


class GCARLError(SDRError, ValueError):
    """A G-CARL reward input is unusable (unknown pitfall finding, threshold out of range, misaligned arrays)."""


def pitfall_name(name: str, where: str = "pitfall") -> None:
    """Refuse a pitfall that is not one of the 12 CheXpert pathologies (the profile's ``each`` check)."""
    if name not in PATHOLOGIES:
        raise GCARLError(f"not a CheXpert-14 pathology; allowed: one of {PATHOLOGIES}")


@dataclass(frozen=True)
class GCARLSettings:
    """G-CARL's profile settings (``grpo.gcarl.*``): eq. 14 weights, claim threshold, pitfall findings."""

    lambda_fmt: float = field(default=0.3, metadata={"min": 0, "help": "weight of R_fmt (G-CARL eq. 14, sec. 4.1: 0.3)"})
    lambda_fact: float = field(default=0.4, metadata={"min": 0, "help": "weight of R_fact (G-CARL sec. 4.1: 0.4)"})
    lambda_check: float = field(default=0.3, metadata={"min": 0, "help": "weight of R_check (G-CARL sec. 4.1: 0.3)"})
    threshold: float = field(default=0.7, metadata={"min": -1, "max": 1,
        "help": "cosine a claim needs with a reference or bank sentence to be supported (ours)"})
    dedup: float = field(default=0.95, metadata={"gt": 0, "max": 1,
        "help": "cosine at or above which a claim duplicates an earlier one and is dropped before P, C and K "
                "(ours: the paper deduplicates with its LLM extractor)"})
    pitfalls: list[str] = field(default_factory=lambda: list(CRITICAL_FINDINGS), metadata={
        "unique": True, "each": pitfall_name,
        "help": "critical findings whose hallucination is a pitfall item (ours; the issue's example: pneumothorax)"})


def check_pitfalls(pitfalls: Sequence[str]) -> tuple[str, ...]:
    """``pitfalls`` as a tuple of CheXpert-14 pathology names; anything else raises :class:`GCARLError`."""
    if isinstance(pitfalls, str):
        raise GCARLError(f"pitfalls must be a list of CheXpert-14 findings, got one string {pitfalls!r}")
    out = tuple(pitfalls)
    bad = [p for p in out if p not in PATHOLOGIES]
    if bad:
        raise GCARLError(f"unknown pitfall finding(s) {bad}; allowed: {PATHOLOGIES}")
    return out


def check_threshold(value) -> float:
    """A cosine threshold: a real number in [-1, 1] (not bool, not NaN)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or not -1.0 <= float(value) <= 1.0:
        raise GCARLError(f"similarity threshold must be a number in [-1, 1], got {value!r}")
    return float(value)


def check_dedup(value) -> float:
    """The dedup cosine threshold: a real number in (0, 1] (not bool, not NaN); else :class:`GCARLError`
    naming ``dedup``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or not 0.0 < float(value) <= 1.0:
        raise GCARLError(f"dedup must be a cosine threshold in (0, 1], got {value!r}")
    return float(value)


# --------------------------------------------------------------------------- checklist


@dataclass(frozen=True)
class ChecklistItem:
    """One checklist item: ``observation`` (CheXpert-14), ``level`` (essential / important / optional / pitfall)
    and ``weight`` (negative for a pitfall)."""

    observation: str
    level: str
    weight: float

    def satisfied(self, labels: dict[str, int]) -> bool:
        """Whether the generated report's labels satisfy the item (a pitfall: whether it is triggered)."""
        v = labels.get(self.observation)
        if self.level in ("essential", "pitfall"):
            return v in (1, -1)  # positive or uncertain: the evaluation's uncertain-as-positive (module doc)
        if self.level == "important":
            return v == 0
        return v in (1, -1)  # optional: mentioned as positive or uncertain


def build_checklist(reference_labels: dict[str, int], pitfalls: Sequence[str] = CRITICAL_FINDINGS) -> list[ChecklistItem]:
    """The weighted checklist of one reference from its CheXpert-14 labels (module doc).

    Example: ``build_checklist({"Cardiomegaly": 1, "Pneumothorax": 0})`` -> essential Cardiomegaly,
    important Pneumothorax (a pertinent negative), pitfall Fracture.
    """
    items = []
    for obs, v in reference_labels.items():
        if v == 1:
            items.append(ChecklistItem(obs, "essential", WEIGHTS["essential"]))
        elif v == 0 and obs != "No Finding":
            items.append(ChecklistItem(obs, "important", WEIGHTS["important"]))
        elif v == -1:
            items.append(ChecklistItem(obs, "optional", WEIGHTS["optional"]))
    for obs in check_pitfalls(pitfalls):
        if reference_labels.get(obs) not in (1, -1):
            items.append(ChecklistItem(obs, "pitfall", WEIGHTS["pitfall"]))
    return items


def check_reward(generated_labels: dict[str, int], checklist: Sequence[ChecklistItem]) -> tuple[float, float, float]:
    """``(R_check, V_pos, V_neg)`` of one generated report's labels against a checklist (eqs. 12-13).

    ``R_check`` is in [0, 1]; a checklist without positive items scores 0.
    """
    pos = [i for i in checklist if i.weight > 0]
    neg = [i for i in checklist if i.weight < 0]
    total = sum(i.weight for i in pos)
    if total <= 0:
        return 0.0, 0.0, 0.0
    v_pos = sum(i.weight for i in pos if i.satisfied(generated_labels)) / total
    v_neg = sum(-i.weight for i in neg if i.satisfied(generated_labels)) / total
    return float(np.clip(v_pos - v_neg, 0.0, 1.0)), float(v_pos), float(v_neg)


# --------------------------------------------------------------------------- claims


def report_presence(sentences: Sequence[str]) -> np.ndarray:
    """Report-level presence (:data:`~sdrlib.clinical.presence.PRESENCE_WIDTH`,) int8 over the findings' side slots
    (:mod:`sdrlib.clinical.presence`): +1 when some sentence states the slot positive, else -1 when some sentence
    denies it, else 0."""
    P = sentence_presence(list(sentences))
    if not len(P):
        return np.zeros(PRESENCE_WIDTH, np.int8)
    return np.where((P == 1).any(0), 1, np.where((P == -1).any(0), -1, 0)).astype(np.int8)


def _findings_spoken(P: np.ndarray, extra: Sequence[str] = ()) -> np.ndarray:
    """Bool (len(FINDINGS),): the findings a set of presence rows states (either way, a child covering its parent),
    plus the named ``extra`` findings."""
    stated, _ = coverage((np.asarray(P) != 0).any(axis=0) if len(P) else np.zeros(PRESENCE_WIDTH, bool))
    spoken = stated.reshape(-1, len(SLOTS)).any(axis=1)
    for name in extra:
        spoken[FINDINGS.index(name)] = True
    return spoken


def claim_validity(claims: Sequence[str], claim_vecs: np.ndarray, reference: Sequence[str], ref_vecs: np.ndarray,
                   bank_vecs: np.ndarray | None = None, threshold: float = GCARLSettings.threshold,
                   checklist: Sequence[str] = CRITICAL_FINDINGS) -> np.ndarray:
    """``z`` (bool, shape (n_claims,)): a claim is valid when it is **supported** (cosine >= ``threshold`` with a
    reference or bank sentence), **true to the reference** (on the findings' side slots of
    :mod:`sdrlib.distances.negation`: it contradicts no reference statement, names no finding on a side the
    reference does not, states nothing positive the reference does not cover) and **relevant** (G-CARL sec. 3):
    every finding it names is one the reference speaks of (either way) or one of ``checklist`` (the pitfall
    findings the checklist asks about); a claim that names no finding ("The lungs are clear.") is relevant only
    when a *reference* sentence supports it, so generic normal filler from the bank is no valid claim.

    ``claim_vecs`` (n, d), ``ref_vecs`` (m, d) and ``bank_vecs`` (b, d) are sentence embeddings
    (normalised here); rows of ``claim_vecs`` must match ``claims``.
    """
    threshold = check_threshold(threshold)
    n = len(claims)
    if n == 0:
        return np.zeros(0, bool)
    A = _unit(claim_vecs)
    if A.shape[0] != n or len(ref_vecs) != len(reference):
        raise GCARLError(f"{n} claims / {A.shape[0]} claim vectors, {len(reference)} reference sentences / "
                         f"{len(ref_vecs)} vectors: the rows must match")
    by_ref = (A @ _unit(ref_vecs).T).max(1) if len(ref_vecs) else np.full(n, -np.inf)
    best = by_ref.copy()
    if bank_vecs is not None and len(bank_vecs):
        best = np.maximum(best, (A @ _unit(bank_vecs).T).max(1))
    supported = best >= threshold - 1e-9
    P = sentence_presence(list(claims))
    R = sentence_presence(list(reference))
    cov_r, _ = coverage((R > 0).any(axis=0) if len(R) else np.zeros(PRESENCE_WIDTH, bool))
    wrong = np.array([wrong_slots(P[i:i + 1], R).any() for i in range(n)])  # each claim alone against the reference
    true = ~(wrong | ((P > 0) & ~cov_r).any(axis=1))
    spoken = _findings_spoken(R, check_pitfalls(checklist))
    named = (P != 0).reshape(n, -1, len(SLOTS)).any(axis=2)
    relevant = np.where(named.any(axis=1), ~(named & ~spoken).any(axis=1), by_ref >= threshold - 1e-9)
    return supported & true & relevant


def dedup_claims(claims: Sequence[str], vecs: np.ndarray, dedup: float = GCARLSettings.dedup) -> list[int]:
    """Indices of the claims kept after deduplication (module doc), in order: greedy in claim order, a claim is
    dropped when it states the same findings on the same sides with the same polarity as a kept claim (equal
    presence rows, :mod:`sdrlib.clinical.presence`) **and** its :func:`~sdrlib.rewards.methods.exact.normalize_sentence`
    equals that claim's or their embeddings' cosine is >= ``dedup`` (in (0, 1]); the first of each group is kept.
    "Small left pleural effusion." and "Small right pleural effusion." (cosine 0.99) are two claims.

    ``vecs`` (n, d) are the claims' embeddings (normalised here). Example: with ``dedup=0.95``,
    ``dedup_claims(["A.", "a", "B."], vecs)`` -> ``[0, 2]``.
    """
    dedup = check_dedup(dedup)
    if len(claims) == 0:
        return []
    A = _unit(vecs)
    if A.shape[0] != len(claims):
        raise GCARLError(f"{len(claims)} claims / {A.shape[0]} claim vectors: the rows must match")
    P = sentence_presence(list(claims))
    keys = [normalize_sentence(c) for c in claims]
    kept: list[int] = []
    for i in range(len(claims)):
        if any((keys[k] == keys[i] or float(A[k] @ A[i]) >= dedup - 1e-9) and np.array_equal(P[k], P[i])
               for k in kept):
            continue
        kept.append(i)
    return kept


def fact_reward(z: np.ndarray, n_ref_claims: int) -> tuple[float, float, float]:
    """``(R_fact, P, C)`` from claim validities ``z`` and the reference claim count ``n_ref_claims`` (eqs. 7-9).

    ``n_ref_claims`` is the paper's K (the reference's claims, deduplicated); ``z`` holds one validity per
    generated claim. ``C = min(sum(z) / K, 1)``; no claim or K <= 0 gives ``(0, 0, 0)``.
    """
    z = np.asarray(z, bool)
    if z.size == 0 or n_ref_claims <= 0:
        return 0.0, 0.0, 0.0
    p = float(z.mean())
    c = min(float(z.sum()) / n_ref_claims, 1.0)
    return (2 * p * c / (p + c) if p + c > 0 else 0.0), p, c


def _unit(a) -> np.ndarray:
    a = np.asarray(a, np.float64)
    if a.ndim != 2:
        raise GCARLError(f"sentence embeddings must be 2-D (n, d), got shape {a.shape}")
    norm = np.linalg.norm(a, axis=1, keepdims=True)
    return a / np.where(norm > 0, norm, 1.0)


# --------------------------------------------------------------------------- the method


class GCARLMethod(RewardMethod):
    """``"gcarl"``: ``lambda_fmt R_fmt + lambda_sem (lambda_fact R_fact + lambda_check R_check)`` (module doc).

    TRL functions ``r_fmt, r_fact, r_check`` with weights ``lambda_fmt, lambda_sem * lambda_fact,
    lambda_sem * lambda_check``; ``lambda_fmt`` is G-CARL's (0.3) and ``lambda_sem`` 1 unless given.
    Method data: ``{"bank": sentences}``, sentences a claim may match besides the reference's
    (training: every training-report sentence).
    """

    name = "gcarl"
    settings = GCARLSettings
    order = 20
    prefix = "gcarl"
    grammar = "gcarl (G-CARL: R_fact + R_check)"
    logs_failures = True

    def parse(self, name: str) -> RewardSpec | None:
        return RewardSpec(name, self.name, tags=frozenset({"related"})) if name == self.name else None

    def label(self, spec: RewardSpec) -> str:
        return "G-CARL"

    def check_settings(self, settings: Any) -> Any:
        settings = super().check_settings(settings)
        check_weight(settings.lambda_fmt, "lambda_fmt")
        check_weight(settings.lambda_fact, "lambda_fact")
        check_weight(settings.lambda_check, "lambda_check")
        try:
            check_threshold(settings.threshold)
            check_dedup(settings.dedup)
            check_pitfalls(settings.pitfalls)
        except GCARLError as exc:
            raise RewardError(str(exc)) from None
        return settings

    def default_lambdas(self, settings: Any) -> tuple[float, float]:
        return settings.lambda_fmt, 1.0  # eq. 14: the content weights are lambda_fact / lambda_check

    def prepare(self, scorer, data: Mapping[str, Any] | None) -> dict:
        data = dict(data or {})
        unknown = sorted(set(data) - {"bank"})
        if unknown:
            raise RewardError(f"G-CARL data takes the key 'bank' only, got {unknown}")
        bank = data.get("bank")
        if bank is not None:
            bank = as_list(bank, "bank")
            if not all(isinstance(b, str) and b.strip() for b in bank):
                raise RewardError("bank must be a sequence of non-blank sentences")
            bank = list(dict.fromkeys(bank))
        return {"bank": bank, "bank_vecs": None}

    def score(self, scorer, valid, findings, impression, n) -> MethodScores:
        """G-CARL's R_fact and R_check with their parts, for the parsed completions."""
        st, settings = scorer.state, scorer.settings
        out = {k: np.zeros(n) for k in ("fact", "check", "precision", "coverage", "v_pos", "v_neg")}
        if valid:
            emb = scorer.get_embedder()
            if st["bank"] and st["bank_vecs"] is None:
                st["bank_vecs"] = encode_sentences(emb, st["bank"])
            split = [(split_sentences(s.findings) + split_sentences(s.impression),
                      split_sentences(findings[i]) + split_sentences(impression[i])) for i, s in valid]
            flat = [x for claims, ref in split for x in claims + ref]
            vecs = encode_sentences(emb, flat)  # one encoder call for the batch
            start = 0
            for (i, s), (claims, ref) in zip(valid, split):
                cv = vecs[start:start + len(claims)]
                rv = vecs[start + len(claims):start + len(claims) + len(ref)]
                start += len(claims) + len(ref)
                if not usable_set(cv) or not usable_set(rv):
                    scorer.counts["sem_failed"] += 1
                    continue
                keep = dedup_claims(claims, cv, settings.dedup)  # G-CARL sec. 3: claims deduplicated first
                k = len(dedup_claims(ref, rv, settings.dedup))  # K: the reference's claims, deduplicated alike
                z = claim_validity([claims[j] for j in keep], cv[keep], ref, rv, st["bank_vecs"], settings.threshold,
                                   settings.pitfalls)
                out["fact"][i], out["precision"][i], out["coverage"][i] = fact_reward(z, k)
                checklist = build_checklist(label_report(f"{findings[i]} {impression[i]}"), settings.pitfalls)
                out["check"][i], out["v_pos"][i], out["v_neg"][i] = check_reward(
                    label_report(f"{s.findings} {s.impression}"), checklist)
        content = settings.lambda_fact * out["fact"] + settings.lambda_check * out["check"]
        return MethodScores(content=content, components=out)

    def trl_parts(self, spec, scorer) -> list[tuple]:
        s = scorer.settings
        return [("r_fact", lambda b: b.components["fact"], s.lambda_fact),
                ("r_check", lambda b: b.components["check"], s.lambda_check)]

    def grpo_data(self, spec, settings, train_records) -> dict:
        """Claims may match the training sentences (the bank)."""
        return {"bank": [x for r in train_records for t in (r.findings, r.impression) for x in split_sentences(t)]}


register_method(GCARLMethod())
