"""``chamfer_recall_<alpha>`` (ours): recall-weighted, negation-aware Chamfer under which silence does not pay.

A distance family of the registry (:mod:`sdrlib.distances.registry`, ``presence="required"``): every entry point
(:func:`sdrlib.distances.set_distance`, the engine's ``pairwise_distances`` / ``paired_distances``, the rewards,
best-of-K selection and MBR) computes it from the two sets and their per-sentence presence. It is **asymmetric**:
``A`` (the candidates / first argument) is the *generated* set, ``B`` (the bank / second argument) the
*reference*. This module is its per-pair reference; the batched kernel is ``_kernels.recall_pairs`` (equal to
1e-12, tested).

Why. Under symmetric Chamfer (paper eq. 12) a wrong guess costs in both directions while a missed finding costs
only its one reference->generated term, and on the plain sentence-embedding cost a missed finding is cheap
(notebook 02's edit table: missing finding 0.025, paraphrase 0.078). An uncertain policy therefore earns more, in
expectation, by writing a normal report (the reward audit, :mod:`sdrlib.experiments.audit`). This distance keeps
Chamfer's shape (order-free, sentence embeddings, paraphrase-tolerant, no labels of the dataset) and changes two
things:

1. **Finding floors on the negation-aware cost.** The cost is ``M'' = max(M, X, r_i, s_j)``
   (:func:`sdrlib.distances.negation.floored_cost`, c = 1: a contradicted finding costs 1, and so does every
   sentence about a finding one report states both ways; 0 / 1 sentence floors, where ``chamfer_neg`` floors a
   sentence at its number of wrong findings: here they are counted by item 2 instead), and a sentence that states a finding *positive* which
   the other report never states positive costs at least 1 against every sentence: ``miss_j = 1`` for a
   reference sentence whose positive finding the generated report leaves out, ``hall_i = 1`` for a generated
   sentence whose positive finding the reference does not have. A missed finding is then as far as a
   contradicted one, whatever the wording; a paraphrase keeps the plain embedding cost.
2. **A wrong finding costs in both directions**. A generated finding is *wrong* when it is hallucinated,
   contradicted by the reference, on the wrong side, or about a finding one report states both ways; a reference
   finding likewise when missed or contradicted. Each direction's mean also counts the other side's wrong findings
   as items of cost 1: ``R = (sum_j d_ref(j) + W_gen) / (m + W_gen)`` over the m reference sentences plus the
   ``W_gen`` wrong generated findings (the reference has nothing for them), ``G = (sum_i d_gen(i) + W_ref) / (n +
   W_ref)``, with ``d_ref(j) = max(min_i M'_ij, miss_j)``, ``d_gen(i) = max(min_j M'_ij, hall_i)`` (item 4 says
   what is counted).
3. **Recall weight.** ``D = alpha * R + (1 - alpha) * G`` with ``alpha`` in [0.5, 1] (``alpha = 0.5`` is
   symmetric). A missed finding adds about ``alpha / m + (1 - alpha) / (n + 1)``, a hallucinated one about
   ``alpha / (m + 1) + (1 - alpha) / n``: both cost at every allowed alpha (were the hallucination to enter
   only through G, ``alpha = 1`` would make it free: a normal reference against the same normal sentences
   plus "Large right pleural effusion." would score D = 0), and a contradicted finding costs more than an omitted one
   (its wrong generated sentence adds to R as well). ``alpha`` weights the embedding costs of the two
   directions (how far the wording of the reference's content may drift vs how much extra text costs); below
   0.5 a missed finding's wording would count less than extra text, which is refused.

4. **Findings, not sentences; repetition never pays**. ``W_gen`` and ``W_ref`` count the distinct
   wrong *findings* (side slots of :mod:`sdrlib.distances.negation`: hallucinated, missed, contradicted, on the
   wrong side, void) of each set, not its wrong sentences: two hallucinated findings in one sentence cost two
   items, the same hallucination written twice one. Each set is read as a set: a sentence repeated verbatim (same
   embedding, same presence) counts once in ``n`` / ``m``, so padding a report with copies of a correct sentence
   lowers D at no alpha.

Presence comes from the offline labeler per sentence (:func:`sdrlib.clinical.section_presence`), as for
``chamfer_neg``: no dataset label is read. Sides count (:mod:`sdrlib.distances.negation`): a finding on the wrong
side is a miss plus a hallucination, a pertinent negative on the other side is neither; an uncertain statement
("possible pneumonia") counts as positive, as in the evaluation; findings outside CheXpert's 14 (hernia, free air,
...) count like the 14. Severity is left to the embedding cost.

Example: a reference ``["Small left effusion."]`` against a generated ``["No acute process."]`` gives
``d_ref = [1.]``, ``R = 1``, ``G = 1 / 2`` at least (the generated sentence's cost plus the missed one), so
``D >= (1 + alpha) / 2``.
"""

from __future__ import annotations

import numpy as np

from sdrlib.distances.negation import check_presence, floored_cost, hallucinated, unique_sentences, wrong_slots

__all__ = ["recall_terms", "recall_chamfer"]


def recall_terms(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Per-sentence costs ``(d_gen (n,), d_ref (m,), W_gen, W_ref)`` of generated set ``A`` against reference set
    ``B``, each set without its repeated sentences (item 4: ``n``, ``m`` count distinct sentences;
    :func:`sdrlib.distances.negation.unique_sentences`).

    ``A`` (n, d), ``B`` (m, d) unit-row float64 sentence embeddings (as :func:`sdrlib.distances.costs.as_pair`
    returns them), ``PA``, ``PB`` their presence ((n, W) / (m, W), or legacy (n, 14)). ``d_gen[i]`` is generated
    sentence i's cost to its nearest reference sentence, at least 1 when it states a finding positive that the
    reference does not cover (a hallucination, :func:`sdrlib.distances.negation.hallucinated`); ``d_ref[j]``
    likewise for reference sentence j (a miss). ``W_gen``: the number of distinct slots on which the generated set
    is wrong (hallucinated, or :func:`sdrlib.distances.negation.wrong_slots`); ``W_ref`` likewise for the
    reference. The cost is :func:`sdrlib.distances.negation.floored_cost` at c = 1 (0 / 1 sentence floors: the
    wrong findings are counted here, once, as items of the means, not again in the floors).
    """
    PA, PB = check_presence(PA, len(A), "PA"), check_presence(PB, len(B), "PB")
    A, PA = unique_sentences(np.ascontiguousarray(A), PA)
    B, PB = unique_sentences(np.ascontiguousarray(B), PB)
    M = floored_cost(A, B, PA, PB, 1.0)
    hall = hallucinated(PA, PB)
    miss = hallucinated(PB, PA)
    wrong_gen = int(((hall | wrong_slots(PA, PB)).any(axis=0)).sum())
    wrong_ref = int(((miss | wrong_slots(PB, PA)).any(axis=0)).sum())
    return (np.maximum(M.min(axis=1), hall.any(axis=1)), np.maximum(M.min(axis=0), miss.any(axis=1)),
            wrong_gen, wrong_ref)


def recall_chamfer(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray, alpha: float = 0.75
                   ) -> tuple[float, bool]:
    """The reference: ``(D, True)``, ``D = alpha * R + (1 - alpha) * G`` in [0, 1] (module doc, items 2-4).

    ``A`` is the generated set, ``B`` the reference (the direction matters for ``alpha != 0.5``); both non-empty,
    validated as for every reference (the registry's :func:`~sdrlib.distances.set_distance` does that).
    """
    d_gen, d_ref, wg, wr = recall_terms(A, B, PA, PB)
    ref = (d_ref.sum() + wg) / (d_ref.size + wg)
    gen = (d_gen.sum() + wr) / (d_gen.size + wr)
    return float(np.clip(alpha * ref + (1.0 - alpha) * gen, 0.0, 1.0)), True
