"""Negation-aware set distances (our extension, not the paper's): a contradicted finding costs like a miss.

Sentence embeddings place "No pleural effusion." close to "Small left pleural effusion." (same
words, one negation), so every cosine-based distance of appendix A calls a contradicted finding
*close*. A negation-aware setting (registry names ``<setting>_neg`` / ``<setting>_neg_<c>``, e.g.
``chamfer_neg``, ``hung_nn_neg``; any family but GW) replaces the cost of eq. 11 by

    ``M'_ij = max(M_ij, c X_ij, c r_i, c s_j)``,  ``c`` in (0, 1] (the spec's ``contradiction``, default 1),

and then runs the family unchanged (transport families rescale ``M'`` by its max unless ``_raw``).
``X`` charges a contradicting *pair*; the sentence floors ``r`` / ``s`` charge a contradicted *sentence*
against every sentence of the other set. Without them a nearest-neighbour family lets the contradicted
sentence escape to another, uncontradicted neighbour: in a 5-sentence report, "No pleural effusion." against
"Small left pleural effusion." matched "No pneumothorax." instead, and ``chamfer_neg`` scored the contradiction
0.039, closer than a paraphrase of every sentence (0.078, notebook 02's edit table with all-mpnet-base-v2).

**Presence with a side** (issue 49). A presence row has :data:`PRESENCE_WIDTH` = 21 x 3 int8 columns: for each
finding of :data:`sdrlib.vocabulary.PRESENCE_FINDINGS` (CheXpert's 14, then 7 findings outside them: hernia, free
air, ...) three side slots, left / right / unspecified (:data:`sdrlib.vocabulary.PRESENCE_SLOTS`; column
``3 f + slot``), each ``+1`` stated positive, ``-1`` stated negative, ``0`` not stated. A sentence fills them
(:func:`sdrlib.clinical.sentence_presence`, from the labeler's mentions with their sides):

- positive on the left -> left slot ``+1``; on the right -> right slot; bilateral -> both; no side -> unspecified;
- negative on one side -> that slot ``-1``; negative without a side or bilateral ("No pleural effusion.") -> all
  three slots ``-1`` (it denies every side);
- uncertain ("possible pneumonia") counts as **positive**: the evaluation's convention (CheXbert / CheXpert
  uncertain-as-positive, :mod:`sdrlib.metrics.clinical`), so rewards and evaluation read a hedge alike; against a
  hedged reference, denying it contradicts it (costs more than omitting it) and against a positive one, hedging it
  states it (costs less than omitting it);
- a slot both ways in one sentence keeps the positive (CheXpert's aggregation).

A legacy (n, 14) array (one column per CheXpert observation, no side) is read as that observation with no side:
``+1`` -> unspecified slot, ``-1`` -> all three slots (:func:`check_presence`), so hand-made arrays keep their meaning.

**Contradiction and wrong side.** Two statements contradict when one slot is ``+1`` in one and ``-1`` in the
other: "Small left pleural effusion." against "No pleural effusion." or "No left pleural effusion.", never against
"No right pleural effusion." (a pertinent negative on the other side agrees with it). ``X_ij = 1`` when sentences
i and j contradict. ``r_i = 1`` when sentence i states a slot one way that the other set states only the other way,
**or** states a finding positive on a side the other set does not cover while the other set states that finding
positive elsewhere (a **wrong side**: "Small right pleural effusion." against "Small left pleural effusion.", an
omission plus a hallucination); ``s_j`` likewise (:func:`contradicted_sentences`). A positive *covers* a positive
of the same finding on the same side, and an unspecified positive covers (and is covered by) every side: "Pleural
effusion." matches "Small left pleural effusion." (:func:`coverage`); a positive child finding covers its parent on
its side (CheXpert's hierarchy: atelectasis, consolidation, pneumonia, edema and a lesion are lung opacities), so
"Left basilar atelectasis." does not miss the reference's "Left basilar opacity, likely atelectasis.".

**A report that contradicts itself** (issue 34). A set that states the same finding on the same side both ways
("No pleural effusion." and "Large right pleural effusion." in one section) gives no usable answer on it; one
side stated and the other denied ("Small left pleural effusion. No right pleural effusion.") is no contradiction.
So a slot that *exactly one* of the two sets states both ways is *void*: every sentence of either set that
mentions it is floored at ``c`` as well (:func:`self_contradicted`). A self-contradicting section then costs at
least what leaving the finding out costs (the reference sentence about it is floored either way), under every
family. Both sets stating it both ways agree (no floor), so a set against itself keeps distance 0.

**Scale.** A family that rescales its cost (``ot``, ``sinkhorn``, ``uot``, ``partial`` without ``_raw``: paper
``M~ = M / max M``) divides ``M'`` by ``max(max M', c)`` instead: the contradiction cost ``c`` is the top of the
scale. Dividing by ``max M'`` alone made leaving a finding out cost as much as contradicting it whenever the left-out
sentence was the farthest one (a one-sentence report against a two-sentence reference: both 0.5 under ``ot_neg``).
At ``c = 1`` the divisor is 1 (``M'`` never exceeds 1), so ``ot_neg`` equals ``ot_raw_neg`` there.

Hence ``M'`` stays in [0, 1], ``M'_ii = M_ii`` for a sentence against itself, and identical or reordered sets
keep distance 0 (as far as the plain setting gives 0).

**API.** There is one distance API; a set may carry presence. Every entry point takes
``presence=(P_A, P_B)``: :func:`sdrlib.distances.set_distance` (per-pair reference: POT / SciPy on
``M'`` from :func:`negation_cost`), :func:`~sdrlib.distances.engine.paired_distances` (zipped pairs:
rewards), :func:`~sdrlib.distances.engine.pairwise_distances` and
:func:`~sdrlib.distances.engine.pairwise_distances_many` (K x N: selection). A negation-aware setting
without ``presence`` raises :class:`~sdrlib.distances.errors.DistanceSpecError`; plain settings ignore
``presence`` (so one call may mix plain and negation-aware settings). In the batched engine ``X``
enters as a per-pair cosine cap ``g' = min(g, 1 - 2 c X)`` on the shared cosine block, the floors
through per-sentence and per-set observation bit masks in one driver (``_kernels.neg_pairs``) that
gathers each pair's block and runs the family's own solver (``nn_value``, ``hung_value``,
``transport_value``, ``entropic_value``), and sets are deduplicated on (vector, presence). CPU only:
``device: cuda`` does not apply to these settings.

This module holds the cost's definition (:func:`contradiction_matrix`, :func:`contradicted_sentences`,
:func:`negation_cost`) and the presence checks (:func:`check_presence`) that the registry's reference and
the engine share.

Left out: severity disagreements ("small" vs "large") and GW (it never compares a sentence of A with one of B).

Example (presence as :func:`sdrlib.clinical.section_presence` gives it for "No pleural effusion." and
"Small left pleural effusion.")::

    >>> from sdrlib.vocabulary import CHEXPERT_14
    >>> P = np.zeros((1, 14), np.int8); Q = np.zeros((1, 14), np.int8)
    >>> P[0, CHEXPERT_14.index("Pleural Effusion")] = -1; Q[0, CHEXPERT_14.index("Pleural Effusion")] = 1
    >>> contradiction_matrix(check_presence(P, 1, "P"), check_presence(Q, 1, "Q"))
    array([[1.]])
"""

from __future__ import annotations

import numpy as np

from sdrlib.distances.costs import cosine_cost
from sdrlib.distances.errors import DistanceInputError, DistanceSpecError
from sdrlib.vocabulary import CHEXPERT_14, PRESENCE_FINDINGS, PRESENCE_SLOTS, PRESENCE_WIDTH

__all__ = ["PRESENCE_WIDTH", "LEGACY_WIDTH", "check_presence", "presence_pair", "contradiction_matrix",
           "self_contradicted", "coverage", "contradicted_sentences", "wrong_slots", "negation_cost"]

#: columns of a legacy presence array: one per CheXpert observation, no side
LEGACY_WIDTH: int = len(CHEXPERT_14)
_NS = len(PRESENCE_SLOTS)
_UNSPEC = PRESENCE_SLOTS.index("unspecified")


def _from_legacy(a: np.ndarray) -> np.ndarray:
    """(n, 14) observation-level presence as (n, PRESENCE_WIDTH) slots: +1 -> unspecified, -1 -> every slot."""
    out = np.zeros((a.shape[0], len(PRESENCE_FINDINGS), _NS), np.int8)
    out[:, :LEGACY_WIDTH, _UNSPEC] = (a > 0)
    out[:, :LEGACY_WIDTH, :] -= (a < 0)[:, :, None].astype(np.int8)
    return out.reshape(a.shape[0], PRESENCE_WIDTH)


def check_presence(P: object, n: int, name: str) -> np.ndarray:
    """``P`` as an (n, :data:`PRESENCE_WIDTH`) int8 array of -1 / 0 / 1 (:class:`DistanceInputError` otherwise); a
    legacy (n, 14) array is read without sides (module doc)."""
    try:
        a = np.asarray(P)
    except (TypeError, ValueError) as exc:
        raise DistanceInputError(f"{name}: presence is not an array: {exc}") from None
    if a.size == 0 and n == 0:
        return np.zeros((0, PRESENCE_WIDTH), np.int8)
    if a.ndim != 2 or a.shape not in ((n, PRESENCE_WIDTH), (n, LEGACY_WIDTH)):
        raise DistanceInputError(f"{name}: presence must have shape ({n}, {PRESENCE_WIDTH}) (one row per "
                                 f"sentence of the set; or ({n}, {LEGACY_WIDTH}) without sides), got {a.shape}")
    if a.dtype.kind not in "biuf" or not np.isin(a, (-1, 0, 1)).all():
        raise DistanceInputError(f"{name}: presence values must be -1, 0 or 1")
    a = a.astype(np.int8)
    return _from_legacy(a) if a.shape[1] == LEGACY_WIDTH and LEGACY_WIDTH != PRESENCE_WIDTH else a


def presence_pair(presence: object, setting: str) -> tuple:
    """``presence`` as the pair ``(P_A, P_B)`` a negation-aware ``setting`` needs, or a
    :class:`DistanceSpecError` saying how to get it (missing, or not a pair)."""
    if presence is None:
        raise DistanceSpecError(f"{setting} is negation-aware: pass presence=(P_A, P_B), the per-sentence presence "
                                "arrays of both sides (from sdrlib.clinical.section_presence or "
                                "sdrlib.clinical.sentence_presence)")
    if not isinstance(presence, tuple) or len(presence) != 2:
        raise DistanceSpecError(f"{setting}: presence must be a tuple (P_A, P_B), one entry per side, got "
                                f"{type(presence).__name__}" + (f" of length {len(presence)}" if
                                                                 isinstance(presence, (tuple, list)) else ""))
    return presence[0], presence[1]


def contradiction_matrix(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``X`` (n, m) float64: 1 where sentence i of P and sentence j of Q disagree on a slot's polarity (+1 vs -1),
    else 0 (module doc); P (n, W), Q (m, W) presence of one width."""
    P = np.asarray(P, np.float64)
    Q = np.asarray(Q, np.float64)
    pos_p, neg_p = (P > 0).astype(np.float64), (P < 0).astype(np.float64)
    pos_q, neg_q = (Q > 0).astype(np.float64), (Q < 0).astype(np.float64)
    return ((pos_p @ neg_q.T + neg_p @ pos_q.T) > 0).astype(np.float64)


def self_contradicted(P: np.ndarray) -> np.ndarray:
    """Boolean (W,): the slots that set ``P`` (n, W) states both positive and negative.

    Example: ``self_contradicted(sentence_presence(["No pleural effusion.", "Large right pleural effusion."]))``
    is True at the pleural effusion's right slot only; with "No left pleural effusion." instead, nowhere."""
    P = np.asarray(P)
    if P.shape[0] == 0:
        return np.zeros(P.shape[1] if P.ndim == 2 else PRESENCE_WIDTH, bool)
    return (P > 0).any(axis=0) & (P < 0).any(axis=0)


#: CheXpert's hierarchy, one level: a positive child finding is a positive parent on the same side ("Left basilar
#: atelectasis." covers "Left basilar opacity."); the labeler does not propagate it, coverage does
_PARENT_OF_CHILDREN: dict[str, tuple[str, ...]] = {
    "Lung Opacity": ("Edema", "Consolidation", "Pneumonia", "Lung Lesion", "Atelectasis")}
_HIERARCHY = [(PRESENCE_FINDINGS.index(p), [PRESENCE_FINDINGS.index(c) for c in cs])
              for p, cs in _PARENT_OF_CHILDREN.items()]


def coverage(pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cov, fill)`` of positive slots ``pos`` (..., W) bool: ``cov`` the slots a positive statement covers (its
    own; an unspecified positive covers every side of its finding, any positive covers the unspecified slot; a
    positive child finding covers its parent, :data:`_PARENT_OF_CHILDREN`), ``fill`` every slot of a finding
    stated positive anywhere (module doc)."""
    pos = np.asarray(pos, bool)
    if pos.ndim == 0 or pos.shape[-1] != PRESENCE_WIDTH:
        raise DistanceInputError(f"coverage: positive slots have {PRESENCE_WIDTH} columns (check_presence reads a "
                                 f"legacy (n, 14) array into them), got shape {pos.shape}")
    f = pos.reshape(*pos.shape[:-1], -1, _NS).copy()
    for parent, children in _HIERARCHY:
        f[..., parent, :] |= f[..., children, :].any(axis=-2)
    anyf = f.any(axis=-1, keepdims=True)
    cov = f | f[..., _UNSPEC:_UNSPEC + 1]
    cov[..., _UNSPEC] |= anyf[..., 0]
    fill = np.broadcast_to(anyf, f.shape)
    return cov.reshape(pos.shape), np.ascontiguousarray(fill).reshape(pos.shape)


def wrong_slots(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """(n, W) bool: the slots on which sentence i of ``P`` is wrong against the set ``Q`` (module doc): it states a
    slot one way that ``Q`` states only the other way, it states a finding positive on a side ``Q`` does not cover
    while ``Q`` states that finding positive elsewhere (wrong side), or it mentions a slot exactly one of P and Q
    states both ways (void)."""
    P = np.asarray(P)
    Q = np.asarray(Q)
    if P.ndim != 2 or Q.ndim != 2 or P.shape[1] != PRESENCE_WIDTH or Q.shape[1] != PRESENCE_WIDTH:
        raise DistanceInputError(f"wrong_slots: presence rows of {PRESENCE_WIDTH} columns on both sides (check_presence "
                                 f"reads a legacy (n, 14) array into them), got {P.shape} and {Q.shape}")
    void = self_contradicted(P) ^ self_contradicted(Q)
    pos_q, neg_q = (Q > 0).any(axis=0), (Q < 0).any(axis=0)
    cov_q, fill_q = coverage(pos_q)
    return (((P > 0) & neg_q & ~pos_q) | ((P < 0) & pos_q & ~neg_q) | ((P > 0) & fill_q & ~cov_q)
            | ((P != 0) & void))


def contradicted_sentences(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which sentences of each set are floored: (r (n,), s (m,)) float64 0 / 1 (module doc).

    ``r_i = 1`` when sentence i of P is wrong against Q on some slot (:func:`wrong_slots`: contradicted, wrong
    side, or void); ``s`` likewise for Q. A sentence its own set repeats is never contradicted by an identical
    set. Example (no sides): P = ["No effusion.", "No pneumothorax."], Q = ["Small effusion.", "No pneumothorax."]
    -> r = [1, 0], s = [1, 0]; P = ["No effusion.", "Large effusion."], Q = ["No effusion."] -> r = [1, 1], s = [1].
    """
    return (wrong_slots(P, Q).any(axis=1).astype(np.float64), wrong_slots(Q, P).any(axis=1).astype(np.float64))


def negation_cost(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray, c: float) -> np.ndarray:
    """``M' = max(M, c X, c r_i, c s_j)`` for unit-norm sets A, B and their presence arrays (module doc)."""
    PA = check_presence(PA, len(A), "A")
    PB = check_presence(PB, len(B), "B")
    r, s = contradicted_sentences(PA, PB)
    floor = np.maximum(contradiction_matrix(PA, PB), np.maximum(r[:, None], s[None, :]))
    return np.maximum(cosine_cost(A, B), c * floor)
