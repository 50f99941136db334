"""``"chamfer_recall_<alpha>"`` (ours): a set-distance reward under which silence does not pay.

Why. Under symmetric Chamfer (paper eq. 12) a wrong guess costs in both directions while a missed finding costs
only its one reference->generated term, and on the plain sentence-embedding cost a missed finding is cheap
(notebook 02's edit table: missing finding 0.025, paraphrase 0.078). An uncertain policy therefore earns more, in
expectation, by writing a normal report (the reward audit, :mod:`sdrlib.experiments.audit`). This reward keeps
Chamfer's shape (order-free, sentence embeddings, paraphrase-tolerant, no labels of the dataset) and changes two
things:

1. **Finding floors on the negation-aware cost.** The cost is ``chamfer_neg``'s
   ``M' = max(M, X, r_i, s_j)`` (:func:`sdrlib.distances.negation.negation_cost`, c = 1: a contradicted finding
   costs 1), and a sentence that states a finding *positive* which the other report never states positive costs
   at least 1 against every sentence: ``miss_j = 1`` for a reference sentence whose positive finding the
   generated report leaves out, ``hall_i = 1`` for a generated sentence whose positive finding the reference
   does not have. A missed finding is then as far as a contradicted one, whatever the wording; a paraphrase keeps
   the plain embedding cost. Presence comes from the offline labeler per sentence
   (:func:`sdrlib.clinical.section_presence`), as for ``chamfer_neg``: no dataset label is read.
2. **Recall weight.** ``D = alpha * mean_j d_ref(j) + (1 - alpha) * mean_i d_gen(i)`` with ``alpha`` in
   [0.5, 1] (``alpha = 0.5`` is symmetric Chamfer on the floored cost), ``d_ref(j) = max(min_i M'_ij, miss_j)``
   (reference sentence j to its nearest generated sentence), ``d_gen(i) = max(min_j M'_ij, hall_i)``. A missed
   finding adds ``alpha / m`` (m reference sentences), a hallucinated one ``(1 - alpha) / (n + 1)``: with
   ``alpha >= 0.5`` a miss costs at least as much as a hallucination.

``R_sem = (1 - D_F) + (1 - D_I)`` in [0, 2], per section as every distance reward; an empty generated section
scores ``D = 1``; ``R_sem := 0`` when ``R_fmt = 0``.

3. **Stratum weight (optional, ``"chamfer_recall_<alpha>_bal<w>"``).** ``R_sem`` is multiplied by ``w`` (in
   [1, 10]) when the *reference* states a positive finding in either section (offline labeler presence of the
   reference text; no dataset label), so ``R_sem`` is in [0, 2w]. Why: the reward audit's expected-reward view
   (:func:`sdrlib.experiments.audit.expected_reward_view`) shows that on normal references a sample stating a
   (wrong) finding loses more than a sample stating a finding gains on abnormal ones, so over the prompt mix
   silence still wins for a policy whose guesses are mostly wrong. Under Dr. GRPO (``scale_rewards: none``, the
   cpu profile) the advantage is ``r - mean(r)`` within a prompt's group, so multiplying a prompt's rewards by
   ``w`` is weighting that prompt ``w`` times in the policy gradient: class-balanced prompts without changing the
   sampler. Under ``scale_rewards: group`` the weight cancels (each group is divided by its own std); the
   registry says so, it does not refuse.

Left out: uncertain ("may represent") statements count as not stated (the presence vectors read them 0), so a
hedged finding costs like a missed one; severity and laterality are left to the embedding cost (as in
``chamfer_neg``). The batched engine of :mod:`sdrlib.distances` does not know this distance: it is computed
here per pair (reports have a handful of sentences, so NumPy is fast enough for GRPO and selection).

Example::

    spec = parse_reward("chamfer_recall_0.75")
    spec.opts["alpha"], spec.label       # -> (0.75, "R_Cham_rec0.75")
    parse_reward("chamfer_recall_1_bal2").opts["weight"]   # -> 2.0 (abnormal references weighted 2x)
    parse_reward("chamfer_recall")       # raises RewardError naming the grammar
"""

from __future__ import annotations

import math
import re

import numpy as np

from sdrlib.clinical import section_presence
from sdrlib.distances import reward
from sdrlib.distances.costs import unit_rows
from sdrlib.distances.negation import negation_cost
from sdrlib.errors import SDRError
from sdrlib.rewards.scorer import usable_set
from sdrlib.rewards.spec import MethodScores, RewardError, RewardMethod, RewardSpec, register_method

__all__ = ["RecallChamferMethod", "recall_chamfer", "recall_terms", "ALPHA_RANGE", "WEIGHT_RANGE",
           "abnormal_references"]

#: allowed recall weights: 0.5 = symmetric, 1 = reference->generated only
ALPHA_RANGE = (0.5, 1.0)
#: allowed stratum weights of abnormal references (1 = unweighted)
WEIGHT_RANGE = (1.0, 10.0)
_NAME = re.compile(r"chamfer_recall_(\d+(?:\.\d+)?)(?:_bal(\d+(?:\.\d+)?))?")


def recall_terms(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sentence costs ``(d_gen (n,), d_ref (m,))`` of generated set ``A`` against reference set ``B``.

    ``A`` (n, d), ``B`` (m, d) sentence embeddings (normalised here), ``PA`` (n, 14), ``PB`` (m, 14) their presence
    (module doc). ``d_gen[i]`` is generated sentence i's cost to its nearest reference sentence, at least 1 when it
    states a finding positive that the reference never does; ``d_ref[j]`` likewise for reference sentence j.
    Example: a reference ["Small left effusion."] against a generated ["No acute process."] gives ``d_ref = [1.]``.
    """
    A, B = unit_rows(np.asarray(A, np.float64), "generated"), unit_rows(np.asarray(B, np.float64), "reference")
    PA, PB = np.asarray(PA, np.int8), np.asarray(PB, np.int8)
    M = negation_cost(A, B, PA, PB, 1.0)
    pos_a, pos_b = (PA > 0).any(axis=0), (PB > 0).any(axis=0)
    hall = ((PA > 0) & ~pos_b[None, :]).any(axis=1)
    miss = ((PB > 0) & ~pos_a[None, :]).any(axis=1)
    return np.maximum(M.min(axis=1), hall), np.maximum(M.min(axis=0), miss)


def recall_chamfer(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray, alpha: float = 0.75) -> float:
    """``D = alpha * mean(d_ref) + (1 - alpha) * mean(d_gen)`` in [0, 1] (module doc); 1 when a set is empty.

    ``A`` is the generated set, ``B`` the reference (the direction matters for ``alpha != 0.5``).
    """
    if len(A) == 0 or len(B) == 0:
        return 1.0
    d_gen, d_ref = recall_terms(A, B, PA, PB)
    return float(np.clip(alpha * d_ref.mean() + (1.0 - alpha) * d_gen.mean(), 0.0, 1.0))


def check_weight(weight: float, name: str) -> float:
    if not math.isfinite(weight) or not WEIGHT_RANGE[0] <= weight <= WEIGHT_RANGE[1]:
        raise RewardError(f"reward {name!r}: the stratum weight after _bal must be in [{WEIGHT_RANGE[0]:g}, "
                          f"{WEIGHT_RANGE[1]:g}] (1 = unweighted), got {weight:g}")
    return weight


def abnormal_references(findings: list[str], impression: list[str]) -> np.ndarray:
    """Boolean ``(n,)``: reference k states a positive finding in its Findings or Impression (offline labeler).

    Example: ``abnormal_references(["Small left effusion."], ["Effusion."])`` -> ``array([ True])``.
    """
    pf, pi = section_presence(list(findings)), section_presence(list(impression))
    return np.array([bool((a > 0).any() or (b > 0).any()) for a, b in zip(pf, pi)], dtype=bool)


def check_alpha(alpha: float, name: str) -> float:
    if not math.isfinite(alpha) or not ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]:
        raise RewardError(f"reward {name!r}: alpha must be in [{ALPHA_RANGE[0]}, {ALPHA_RANGE[1]}] (0.5 = symmetric "
                          f"Chamfer, 1 = reference->generated only), got {alpha}")
    return alpha


class RecallChamferMethod(RewardMethod):
    """``"chamfer_recall_<alpha>"``: R_fmt + (1 - D_F) + (1 - D_I) with :func:`recall_chamfer` (module doc)."""

    name = "chamfer_recall"
    order = 30  # before the distance fallback: "chamfer_recall..." is never a distance name
    prefix = "chamfer_recall"
    grammar = ("chamfer_recall_<alpha>[_bal<w>] (ours: recall-weighted negation-aware Chamfer with missed/"
               "hallucinated finding floors, alpha in [0.5, 1], e.g. chamfer_recall_0.75; _bal<w>: R_sem x w, w in "
               "[1, 10], for references stating a finding, e.g. chamfer_recall_1_bal2)")
    logs_failures = True

    def parse(self, name: str) -> RewardSpec | None:
        m = _NAME.fullmatch(name)
        if m is None:
            return None
        alpha = check_alpha(float(m.group(1)), name)
        weight = 1.0 if m.group(2) is None else check_weight(float(m.group(2)), name)
        return RewardSpec(name, self.name, options=(("alpha", alpha), ("weight", weight)),
                          tags=frozenset({"negation_aware", "ours"}))

    def label(self, spec: RewardSpec) -> str:
        w = spec.opts.get("weight", 1.0)
        return f"R_Cham_rec{spec.opts['alpha']:g}" + (f"_bal{w:g}" if w != 1.0 else "")

    def score(self, scorer, valid, findings, impression, n) -> MethodScores:
        alpha = scorer.spec.opts["alpha"]
        sem = {"findings": np.zeros(n), "impression": np.zeros(n)}
        if valid:
            idx = [i for i, _ in valid]
            for sec, refs in (("findings", findings), ("impression", impression)):
                gen = [getattr(s, sec) for _, s in valid]
                ref = [refs[i] for i in idx]
                sem[sec][idx] = reward(section_recall_distances(scorer, gen, ref, alpha))
            weight = scorer.spec.opts.get("weight", 1.0)
            if weight != 1.0:
                w = np.where(abnormal_references([findings[i] for i in idx], [impression[i] for i in idx]), weight, 1.0)
                for sec in sem:
                    sem[sec][idx] *= w
        return MethodScores(content=sem["findings"] + sem["impression"], sem_findings=sem["findings"],
                            sem_impression=sem["impression"])

    def trl_parts(self, spec, scorer):
        return [(f"r_sem_{spec.name}", lambda b: b.sem, 1.0)]

    def breakdown_logs(self, b):
        return [("reward_components/sem_findings", float(b.sem_findings.mean())),
                ("reward_components/sem_impression", float(b.sem_impression.mean()))]


def section_recall_distances(scorer, generated: list[str], references: list[str], alpha: float) -> np.ndarray:
    """:func:`recall_chamfer` of ``generated[k]`` against ``references[k]``, one encoder pass for all.

    A generated section the encoder refuses, or that is not usable, scores ``D = 1`` and is counted in
    ``scorer.counts["sem_failed"]``; a reference the encoder refuses raises its error.
    """
    emb = scorer.get_embedder()
    k = len(generated)
    try:
        sets = emb.encode_sections(list(generated) + list(references))
    except SDRError:  # find the culprit one text at a time (the references must encode)
        sets = []
        for t in generated:
            try:
                sets.append(emb.encode_sections([t])[0])
            except SDRError:
                sets.append(None)
        sets += [emb.encode_sections([t])[0] for t in references]
    pres = section_presence(list(generated) + list(references))
    out = np.ones(k)
    failed = 0
    for j in range(k):
        A, B = sets[j], sets[k + j]
        if A is None or not usable_set(A):
            failed += 1
            continue
        out[j] = recall_chamfer(A, B, pres[j], pres[k + j], alpha)
    scorer.counts["sem_failed"] += failed
    return out


register_method(RecallChamferMethod())
