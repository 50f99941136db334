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

**Presence and contradiction.** Each sentence carries a presence vector over the 14 CheXpert
observations (:data:`PRESENCE_WIDTH` columns, in the order of :data:`sdrlib.vocabulary.CHEXPERT_14`), int8:
``+1`` positive, ``-1`` negative, ``0`` not mentioned or uncertain. The distances never see text: the
arrays come from :func:`sdrlib.clinical.section_presence` / :func:`sdrlib.clinical.sentence_presence`
(the offline labeler, cached per sentence), which define them.
``X_ij = 1`` when some observation is ``+1`` in sentence i and ``-1`` in sentence j or vice versa,
else 0. ``r_i = 1`` when sentence i states some observation with a polarity that the other set states
only the other way (some sentence with the opposite sign, none with the same sign); ``s_j`` likewise
(:func:`contradicted_sentences`).

**A report that contradicts itself** (issue 34). A set that states an observation both positive and negative
("No pleural effusion." and "Large right pleural effusion." in one section) gives no usable answer on it, and
without a rule each of its two sentences finds a matching partner in the other set (the reference's "No pleural
effusion." matched the generated one at cost ~0). So an observation that *exactly one* of the two sets states
both ways is *void*: every sentence of either set that mentions it (+1 or -1) is floored at ``c`` as well
(:func:`self_contradicted`). A self-contradicting section then costs at least what leaving the finding out
costs (the reference sentence about it is floored either way), under every family. Both sets stating it both
ways agree (no floor), so a set against itself keeps distance 0.

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

Left out: severity / laterality disagreements
("small" vs "large", "left" vs "right") and GW (it never compares a sentence of A with one of B).

Example (presence as :func:`sdrlib.clinical.section_presence` gives it for "No pleural effusion." and
"Small left pleural effusion.")::

    >>> from sdrlib.vocabulary import CHEXPERT_14
    >>> P = np.zeros((1, PRESENCE_WIDTH), np.int8); Q = np.zeros((1, PRESENCE_WIDTH), np.int8)
    >>> P[0, CHEXPERT_14.index("Pleural Effusion")] = -1; Q[0, CHEXPERT_14.index("Pleural Effusion")] = 1
    >>> contradiction_matrix(P, Q)
    array([[1.]])
"""

from __future__ import annotations

import numpy as np

from sdrlib.distances.costs import cosine_cost
from sdrlib.distances.errors import DistanceInputError, DistanceSpecError
from sdrlib.vocabulary import CHEXPERT_14

__all__ = ["PRESENCE_WIDTH", "check_presence", "presence_pair", "contradiction_matrix", "self_contradicted",
           "contradicted_sentences", "negation_cost"]

#: columns of a presence array: the 14 CheXpert observations (``sdrlib.clinical.OBSERVATIONS``)
PRESENCE_WIDTH: int = len(CHEXPERT_14)


def check_presence(P: object, n: int, name: str) -> np.ndarray:
    """``P`` as an (n, 14) int8 array of -1 / 0 / 1 (:class:`DistanceInputError` otherwise)."""
    try:
        a = np.asarray(P)
    except (TypeError, ValueError) as exc:
        raise DistanceInputError(f"{name}: presence is not an array: {exc}") from None
    if a.size == 0 and n == 0:
        return np.zeros((0, PRESENCE_WIDTH), np.int8)
    if a.ndim != 2 or a.shape != (n, PRESENCE_WIDTH):
        raise DistanceInputError(f"{name}: presence must have shape ({n}, {PRESENCE_WIDTH}) (one row per "
                                 f"sentence of the set), got {a.shape}")
    if a.dtype.kind not in "biuf" or not np.isin(a, (-1, 0, 1)).all():
        raise DistanceInputError(f"{name}: presence values must be -1, 0 or 1")
    return a.astype(np.int8)


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
    """``X`` (n, m) float64: 1 where sentence i of P and sentence j of Q disagree on an observation's
    polarity (+1 vs -1), else 0 (module doc). Example: ``contradiction_matrix([[0]*9+[0, -1, 0, 0, 0]],
    [[0]*9+[0, 1, 0, 0, 0]]) -> [[1.]]``."""
    P = np.asarray(P, np.float64)
    Q = np.asarray(Q, np.float64)
    pos_p, neg_p = (P > 0).astype(np.float64), (P < 0).astype(np.float64)
    pos_q, neg_q = (Q > 0).astype(np.float64), (Q < 0).astype(np.float64)
    return ((pos_p @ neg_q.T + neg_p @ pos_q.T) > 0).astype(np.float64)


def self_contradicted(P: np.ndarray) -> np.ndarray:
    """Boolean (14,): the observations that set ``P`` (n, 14) states both positive and negative.

    Example: ``self_contradicted(section_presence(["No pleural effusion.", "Large right pleural effusion."])[0])``
    is True at Pleural Effusion only."""
    P = np.asarray(P)
    if P.shape[0] == 0:
        return np.zeros(P.shape[1] if P.ndim == 2 else PRESENCE_WIDTH, bool)
    return (P > 0).any(axis=0) & (P < 0).any(axis=0)


def contradicted_sentences(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which sentences of each set are floored: (r (n,), s (m,)) float64 0 / 1.

    ``r_i = 1`` when sentence i of P states an observation with one polarity that Q states with the other
    polarity and never with the same one, or when it mentions an observation that exactly one of P and Q states
    both ways (:func:`self_contradicted`, module doc); ``s`` likewise for Q. A sentence its own set repeats is
    never contradicted by an identical set. Example: P = ["No effusion.", "No pneumothorax."], Q =
    ["Small effusion.", "No pneumothorax."] -> r = [1, 0], s = [1, 0]; P = ["No effusion.", "Large effusion."],
    Q = ["No effusion."] -> r = [1, 1], s = [1].
    """
    P = np.asarray(P)
    Q = np.asarray(Q)
    void = self_contradicted(P) ^ self_contradicted(Q)

    def flags(A, B):
        pos_b, neg_b = (B > 0).any(axis=0), (B < 0).any(axis=0)
        other = ((A > 0) & neg_b & ~pos_b) | ((A < 0) & pos_b & ~neg_b)
        return (other | ((A != 0) & void)).any(axis=1).astype(np.float64)

    return flags(P, Q), flags(Q, P)


def negation_cost(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray, c: float) -> np.ndarray:
    """``M' = max(M, c X, c r_i, c s_j)`` for unit-norm sets A, B and their presence arrays (module doc)."""
    r, s = contradicted_sentences(PA, PB)
    floor = np.maximum(contradiction_matrix(PA, PB), np.maximum(r[:, None], s[None, :]))
    return np.maximum(cosine_cost(A, B), c * floor)
