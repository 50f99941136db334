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

1. **Finding floors on the negation-aware cost.** The cost is ``chamfer_neg``'s ``M' = max(M, X, r_i, s_j)``
   (:func:`sdrlib.distances.negation.negation_cost`, c = 1: a contradicted finding costs 1, and so does every
   sentence about a finding one report states both ways), and a sentence that states a finding *positive* which
   the other report never states positive costs at least 1 against every sentence: ``miss_j = 1`` for a
   reference sentence whose positive finding the generated report leaves out, ``hall_i = 1`` for a generated
   sentence whose positive finding the reference does not have. A missed finding is then as far as a
   contradicted one, whatever the wording; a paraphrase keeps the plain embedding cost.
2. **A sentence wrong about a finding costs in both directions** (issue 34). A generated sentence is *wrong* when
   it is floored for a finding (hallucinated, contradicted by the reference, or about a finding one report states
   both ways: ``w_gen(i)``); a reference sentence likewise (missed or contradicted: ``w_ref(j)``). Each
   direction's mean also counts the other side's wrong sentences as items of cost 1:
   ``R = (sum_j d_ref(j) + W_gen) / (m + W_gen)`` over the m reference sentences plus the ``W_gen = sum_i
   w_gen(i)`` wrong generated ones (the reference has nothing for them), ``G = (sum_i d_gen(i) + W_ref) / (n +
   W_ref)``, with ``d_ref(j) = max(min_i M'_ij, miss_j)``, ``d_gen(i) = max(min_j M'_ij, hall_i)``.
3. **Recall weight.** ``D = alpha * R + (1 - alpha) * G`` with ``alpha`` in [0.5, 1] (``alpha = 0.5`` is
   symmetric). A missed finding adds about ``alpha / m + (1 - alpha) / (n + 1)``, a hallucinated one about
   ``alpha / (m + 1) + (1 - alpha) / n``: both cost at every allowed alpha (before issue 34 the hallucination
   entered only through G, so ``alpha = 1`` made it free: a normal reference against the same normal sentences
   plus "Large right pleural effusion." scored D = 0), and a contradicted finding costs more than an omitted one
   (its wrong generated sentence adds to R as well). ``alpha`` weights the embedding costs of the two
   directions (how far the wording of the reference's content may drift vs how much extra text costs); below
   0.5 a missed finding's wording would count less than extra text, which is refused.

Presence comes from the offline labeler per sentence (:func:`sdrlib.clinical.section_presence`), as for
``chamfer_neg``: no dataset label is read. Left out: uncertain ("may represent") statements count as not stated
(the presence vectors read them 0), so a hedged finding costs like a missed one; severity and laterality are left
to the embedding cost.

Example: a reference ``["Small left effusion."]`` against a generated ``["No acute process."]`` gives
``d_ref = [1.]``, ``R = 1``, ``G = 1 / 2`` at least (the generated sentence's cost plus the missed one), so
``D >= (1 + alpha) / 2``.
"""

from __future__ import annotations

import numpy as np

from sdrlib.distances.negation import contradicted_sentences, negation_cost

__all__ = ["recall_terms", "recall_chamfer"]


def recall_terms(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-sentence costs ``(d_gen (n,), d_ref (m,), wrong_gen (n,), wrong_ref (m,))`` of generated set ``A``
    against reference set ``B``.

    ``A`` (n, d), ``B`` (m, d) unit-row float64 sentence embeddings (as :func:`sdrlib.distances.costs.as_pair`
    returns them), ``PA`` (n, 14), ``PB`` (m, 14) their presence (module doc). ``d_gen[i]`` is generated sentence
    i's cost to its nearest reference sentence, at least 1 when it states a finding positive that the reference
    never does; ``d_ref[j]`` likewise for reference sentence j (a missed finding). ``wrong_gen[i]`` (bool): that
    floor or the negation floor (:func:`sdrlib.distances.negation.contradicted_sentences`) holds for sentence i;
    ``wrong_ref[j]`` likewise.
    """
    PA, PB = np.asarray(PA, np.int8), np.asarray(PB, np.int8)
    M = negation_cost(A, B, PA, PB, 1.0)
    r, s = contradicted_sentences(PA, PB)
    pos_a, pos_b = (PA > 0).any(axis=0), (PB > 0).any(axis=0)
    hall = ((PA > 0) & ~pos_b[None, :]).any(axis=1)
    miss = ((PB > 0) & ~pos_a[None, :]).any(axis=1)
    return np.maximum(M.min(axis=1), hall), np.maximum(M.min(axis=0), miss), hall | (r > 0), miss | (s > 0)


def recall_chamfer(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray, alpha: float = 0.75
                   ) -> tuple[float, bool]:
    """The reference: ``(D, True)``, ``D = alpha * R + (1 - alpha) * G`` in [0, 1] (module doc, items 2-3).

    ``A`` is the generated set, ``B`` the reference (the direction matters for ``alpha != 0.5``); both non-empty,
    validated as for every reference (the registry's :func:`~sdrlib.distances.set_distance` does that).
    """
    d_gen, d_ref, wrong_gen, wrong_ref = recall_terms(A, B, PA, PB)
    wg, wr = float(wrong_gen.sum()), float(wrong_ref.sum())
    ref = (d_ref.sum() + wg) / (d_ref.size + wg)
    gen = (d_gen.sum() + wr) / (d_gen.size + wr)
    return float(np.clip(alpha * ref + (1.0 - alpha) * gen, 0.0, 1.0)), True
