"""Negation-aware set distances (our extension, not the paper's): a wrong finding costs ``c`` by being wrong, counted.

Sentence embeddings place "No pleural effusion." close to "Small left pleural effusion." (same
words, one negation), and "Large hiatal hernia." no farther from a normal report than any other sentence, so
every cosine-based distance of appendix A prices a contradicted or hallucinated finding by its wording. A
negation-aware setting (registry names ``<setting>_neg`` / ``<setting>_neg_<c>``, e.g. ``chamfer_neg``,
``hung_nn_neg``; any family but GW) reads each sentence's presence (below), drops the sentences its set repeats
verbatim, replaces the cost of eq. 11 by

    ``M'_ij = max(M_ij, c X_ij, c (k_i + k'_j))``,  ``c`` in (0, 1] (the spec's ``contradiction``, default 1),

and then runs the family unchanged (transport families rescale, unless ``_raw``: "Scale" below). ``k_i`` is the
number of **wrong findings** of sentence i of A against the set B (:func:`wrong_counts`), ``k'_j`` likewise for
sentence j of B against A, and ``X`` charges a contradicting *pair* (the one case without a wrong finding: both
sets state the slot both ways). The rule:

- **A wrong finding costs c, whatever its wording**, inside CheXpert's 14 or outside (hernia, free air, a
  malpositioned tube: :data:`sdrlib.vocabulary.OTHER_FINDINGS`). Without the floor a
  nearest-neighbour family let a wrong sentence escape to another neighbour: in a 5-sentence report, "No pleural
  effusion." against "Small left pleural effusion." matched "No pneumothorax." instead, and ``chamfer_neg`` (then
  without floors) scored the contradiction 0.039, closer than a paraphrase of every sentence (0.078, notebook 02's
  edit table with all-mpnet-base-v2). A sentence floored once per sentence priced a second wrong finding in the
  same sentence at nothing (the battery's ``out_two_in_one_sentence``).
- **Findings are counted, not sentences**: ``k_i`` counts distinct side slots, so "Large hiatal hernia and a 9 mm
  right upper lobe nodule." costs ``2 c`` against every reference sentence, as two wrong sentences would.
- **An entry carries the wrong findings of both its sentences** (``k_i + k'_j``, not their max): a matching family
  that pairs "No pneumonia." with the reference's "Possible right lower lobe pneumonia." pays for the denial and for
  the finding it denies, so a contradiction (two wrong findings: one in each report) costs more than leaving the
  finding out (one: the reference's). A nearest-neighbour family charges each sentence its own ``c k`` in its own
  direction (its nearest neighbour is a sentence without wrong findings when the other set has one).
- **A set is a set**: each set's sentences repeated verbatim (same embedding row and same presence row,
  :func:`unique_sentences`) count once, so writing a correct sentence ten times never lowers a distance. A
  sentence paraphrased (another vector) is another sentence, as in the plain settings.

**Presence with a side**. A presence row has :data:`PRESENCE_WIDTH` = 21 x 3 int8 columns: for each
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

**Wrong findings.** Two statements contradict when one slot is ``+1`` in one and ``-1`` in the other: "Small left
pleural effusion." against "No pleural effusion." or "No left pleural effusion.", never against "No right pleural
effusion." (a pertinent negative on the other side agrees with it). ``X_ij = 1`` when sentences i and j contradict.
A positive *covers* a positive of the same finding on the same side, and an unspecified positive covers (and is
covered by) every side: "Pleural effusion." matches "Small left pleural effusion." (:func:`coverage`); a positive
child finding covers its parent on its side (CheXpert's hierarchy: atelectasis, consolidation, pneumonia, edema and
a lesion are lung opacities), so "Left basilar atelectasis." does not miss the reference's "Left basilar opacity,
likely atelectasis.". Sentence i is **wrong** on a slot against the other set (:func:`wrong_findings`) when it

- states it one way that the other set states only the other way (contradicted, :func:`wrong_slots`);
- states it positive and the other set does not cover it (:func:`hallucinated`: a hallucination when i is generated,
  a miss when it is the reference; a finding on the wrong side, "Small right pleural effusion." against "Small left
  pleural effusion.", is one in each report: an omission plus a hallucination);
- mentions a slot that exactly one of the two sets states both ways (void, below).

``k_i`` is the number of such slots (a slot wrong for two reasons counts once); an omitted *negative* is not wrong.
``chamfer_recall`` (:mod:`sdrlib.distances.recall`) and G-CARL read :func:`wrong_slots` and :func:`hallucinated`
themselves and count them their own way, once: ``chamfer_recall``'s cost keeps 0 / 1 sentence floors
(:func:`floored_cost`).

**A report that contradicts itself**. A set that states the same finding on the same side both ways
("No pleural effusion." and "Large right pleural effusion." in one section) gives no usable answer on it; one
side stated and the other denied ("Small left pleural effusion. No right pleural effusion.") is no contradiction.
So a slot that *exactly one* of the two sets states both ways is *void*: it counts as a wrong finding of every
sentence of either set that mentions it (:func:`self_contradicted`). A self-contradicting section then costs at
least what leaving the finding out costs, under every family. Both sets stating it both ways agree (no floor), so
a set against itself keeps distance 0.

**Scale.** An entry of ``M'`` exceeds 1 where its two sentences carry more than one wrong finding at ``c = 1``
(``c (k_i + k'_j) > 1``). A family that rescales its cost (``ot``, ``sinkhorn``, ``uot``, ``partial`` without ``_raw``: paper
``M~ = M / max M``) divides ``M'`` by ``max(max M, c)`` over the *plain* cosine cost ``M`` of the two sets
(:func:`rescale_divisor`): ``c``, one wrong finding, is the top of the plain cost's scale, and a second wrong finding
adds another ``c`` above it. Dividing by ``max M'`` would shrink every other entry when a sentence carries two wrong
findings (a second hallucination would lower the cost of the rest); without ``c`` in the divisor, leaving a finding
out cost as much as contradicting it whenever the left-out sentence was the farthest one (a one-sentence report
against a two-sentence reference: both 0.5 under ``ot_neg``). At ``c = 1`` the
divisor is 1, so ``ot_neg`` equals ``ot_raw_neg`` there. A family's value above its upper end 1 (more wrong findings
than the report has sentences, e.g. a one-sentence report with two hallucinations against a one-sentence reference)
is clipped to 1 (:meth:`sdrlib.distances.DistanceSpec.reference`, the engine's ``PairBatch.finish``): the top of the
scale, where a report wrong in every sentence already is; ``hung_pen`` with ``clip=False`` keeps its raw value.
Sinkhorn runs in the log domain when the rescaled cost's top over ``eps`` exceeds ``1 / LOG_DOMAIN_EPS`` (a kernel
``exp(-M / eps)`` of floors of 8 or more underflows at ``eps = 0.01``).

``M'_ii = M_ii`` for a sentence against itself, and identical or reordered sets keep distance 0 (as far as the
plain setting gives 0).

**What the families make of it.** Chamfer, Hausdorff, ``hung_pen``, OT and partial OT are monotone in the cost, so
a wrong finding never lowers them (``hung_nn`` and the entropic families in practice, not by construction). Two
leave an *extra* sentence out by design and so price a hallucination in a sentence the other report has no
counterpart for only through their own rule: ``hung_pen`` pays a flat ``alpha`` per unmatched sentence (its content
is not read), and partial OT moves only part of the mass (``partial_adaptive``: ``min(n, m) / max(n, m)``, so the
extra sentence of a report one sentence longer may be the mass left behind). Hausdorff (a max) counts nothing: the
worst sentence decides, one wrong finding at ``c = 1`` already reaches the top.

**API.** There is one distance API; a set may carry presence. Every entry point takes
``presence=(P_A, P_B)``: :func:`sdrlib.distances.set_distance` (per-pair reference: POT / SciPy on
``M'`` from :func:`negation_cost`, each set through :func:`unique_sentences` first),
:func:`~sdrlib.distances.engine.paired_distances` (zipped pairs: rewards),
:func:`~sdrlib.distances.engine.pairwise_distances` and
:func:`~sdrlib.distances.engine.pairwise_distances_many` (K x N: selection). A negation-aware setting
without ``presence`` raises :class:`~sdrlib.distances.errors.DistanceSpecError`; plain settings ignore
``presence`` (so one call may mix plain and negation-aware settings). In the batched engine ``X``
enters as a per-pair cosine cap ``g' = min(g, 1 - 2 c X)`` on the shared cosine block, the floors
through per-sentence and per-set observation bit masks in one driver (``_kernels.neg_pairs``) that
gathers each pair's distinct sentences, counts each one's wrong slots (a popcount) and runs the family's own solver
(``nn_value``, ``hung_value``, ``transport_value``, ``entropic_value``); sets are deduplicated on (vector,
presence). CPU only: ``device: cuda`` does not apply to these settings.

This module holds the cost's definition (:func:`contradiction_matrix`, :func:`wrong_findings`,
:func:`wrong_counts`, :func:`unique_sentences`, :func:`negation_cost`, :func:`rescale_divisor`; ``chamfer_recall``'s
:func:`floored_cost`) and the presence checks (:func:`check_presence`) that the registry's reference and the engine
share.

Left out: severity disagreements ("small" vs "large"), a wrong finding restated in other words in two sentences
(two sentences, each counted), and GW (it never compares a sentence of A with one of B).

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
           "self_contradicted", "coverage", "contradicted_sentences", "wrong_slots", "hallucinated", "wrong_findings",
           "wrong_counts", "unique_sentences", "floored_cost", "negation_cost", "rescale_divisor"]

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


def _check_rows(P: np.ndarray, Q: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    P = np.asarray(P)
    Q = np.asarray(Q)
    if P.ndim != 2 or Q.ndim != 2 or P.shape[1] != PRESENCE_WIDTH or Q.shape[1] != PRESENCE_WIDTH:
        raise DistanceInputError(f"{what}: presence rows of {PRESENCE_WIDTH} columns on both sides (check_presence "
                                 f"reads a legacy (n, 14) array into them), got {P.shape} and {Q.shape}")
    return P, Q


def wrong_slots(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """(n, W) bool: the slots on which sentence i of ``P`` is wrong against the set ``Q`` (module doc): it states a
    slot one way that ``Q`` states only the other way, it states a finding positive on a side ``Q`` does not cover
    while ``Q`` states that finding positive elsewhere (wrong side), or it mentions a slot exactly one of P and Q
    states both ways (void). A positive ``Q`` does not mention at all is not here (:func:`hallucinated`):
    ``chamfer_recall`` and G-CARL count it on their own."""
    P, Q = _check_rows(P, Q, "wrong_slots")
    void = self_contradicted(P) ^ self_contradicted(Q)
    pos_q, neg_q = (Q > 0).any(axis=0), (Q < 0).any(axis=0)
    cov_q, fill_q = coverage(pos_q)
    return (((P > 0) & neg_q & ~pos_q) | ((P < 0) & pos_q & ~neg_q) | ((P > 0) & fill_q & ~cov_q)
            | ((P != 0) & void))


def hallucinated(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """(n, W) bool: the positive slots of sentence i of ``P`` that the set ``Q`` does not cover (:func:`coverage`):
    a hallucination when ``P`` is the generated set, a miss when it is the reference. A finding on the wrong side
    is one of them (the wrong-side term of :func:`wrong_slots` is the part ``Q`` states elsewhere).

    Example: ``hallucinated(sentence_presence(["Large hiatal hernia."]), sentence_presence(["No pneumothorax."]))``
    is True at the hernia's unspecified slot only."""
    P, Q = _check_rows(P, Q, "hallucinated")
    cov_q, _ = coverage((Q > 0).any(axis=0))
    return (P > 0) & ~cov_q


def wrong_findings(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """(n, W) bool: every slot on which sentence i of ``P`` is wrong against the set ``Q``, the findings a
    negation-aware setting counts (module doc): :func:`wrong_slots` (contradicted, wrong side, void) or
    :func:`hallucinated` (a positive ``Q`` does not cover: hallucinated or missed)."""
    return wrong_slots(P, Q) | hallucinated(P, Q)


def wrong_counts(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(k (n,), k' (m,))`` int64: how many distinct slots each sentence of ``P`` is wrong on against the set
    ``Q`` and each sentence of ``Q`` against ``P`` (:func:`wrong_findings`); the floors of :func:`negation_cost`
    are ``c k_i`` and ``c k'_j``.

    Example: ``P = sentence_presence(["Large hiatal hernia and a 9 mm right upper lobe nodule."])`` against
    ``Q = sentence_presence(["The lungs are clear."])`` -> ``k = [2]`` (hernia, right lung lesion), ``k' = [0]``.
    """
    return (wrong_findings(P, Q).sum(axis=1).astype(np.int64), wrong_findings(Q, P).sum(axis=1).astype(np.int64))


def contradicted_sentences(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which sentences of each set are wrong on some slot of :func:`wrong_slots`: (r (n,), s (m,)) float64 0 / 1,
    the sentence floors of :func:`floored_cost` (``chamfer_recall``'s cost; a negation-aware setting counts
    instead, :func:`wrong_counts`).

    ``r_i = 1`` when sentence i of P is wrong against Q on some slot (contradicted, wrong side, or void); ``s``
    likewise for Q. A sentence its own set repeats is never contradicted by an identical set. Example (no sides):
    P = ["No effusion.", "No pneumothorax."], Q = ["Small effusion.", "No pneumothorax."] -> r = [1, 0],
    s = [1, 0]; P = ["No effusion.", "Large effusion."], Q = ["No effusion."] -> r = [1, 1], s = [1].
    """
    return (wrong_slots(P, Q).any(axis=1).astype(np.float64), wrong_slots(Q, P).any(axis=1).astype(np.float64))


def unique_sentences(A: np.ndarray, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A set read as a set: ``A`` (n, d) and its presence ``P`` (n, W) without the sentences repeated verbatim (same
    embedding row and same presence row), first occurrences in order (module doc, "A set is a set")."""
    key = np.ascontiguousarray(np.concatenate([np.ascontiguousarray(A).view(np.uint8).reshape(len(A), -1),
                                               np.ascontiguousarray(P).view(np.uint8).reshape(len(P), -1)], axis=1))
    _, first = np.unique(key, axis=0, return_index=True)
    keep = np.sort(first)
    return A[keep], P[keep]


def floored_cost(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray, c: float) -> np.ndarray:
    """``max(M, c X, c r_i, c s_j)`` with the 0 / 1 sentence floors of :func:`contradicted_sentences`: the cost
    ``chamfer_recall`` reads (:mod:`sdrlib.distances.recall` counts the wrong findings itself, as items of its
    means, so its floors stay 0 / 1); unit-norm sets A, B and their presence arrays."""
    PA = check_presence(PA, len(A), "A")
    PB = check_presence(PB, len(B), "B")
    r, s = contradicted_sentences(PA, PB)
    floor = np.maximum(contradiction_matrix(PA, PB), np.maximum(r[:, None], s[None, :]))
    return np.maximum(cosine_cost(A, B), c * floor)


def negation_cost(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray, c: float) -> np.ndarray:
    """``M' = max(M, c X, c (k_i + k'_j))`` for unit-norm sets A, B and their presence arrays (module doc): ``k``,
    ``k'`` the wrong findings of each sentence (:func:`wrong_counts`). The sets are used as given: the callers
    (:func:`sdrlib.distances.set_distance`, the engine) first drop repeated sentences (:func:`unique_sentences`).
    Entries above 1 are pairs that carry more than one wrong finding at ``c = 1``."""
    PA = check_presence(PA, len(A), "A")
    PB = check_presence(PB, len(B), "B")
    k, kk = wrong_counts(PA, PB)
    floor = np.maximum(contradiction_matrix(PA, PB), (k[:, None] + kk[None, :]).astype(np.float64))
    return np.maximum(cosine_cost(A, B), c * floor)


def rescale_divisor(A: np.ndarray, B: np.ndarray, c: float) -> float:
    """The divisor of a rescaled transport family's negation-aware cost (module doc, "Scale"): ``max(max M, c)``
    over the plain cosine cost ``M`` of the two (deduplicated) sets, so that the floors above ``c`` (a second wrong
    finding in a sentence) add to the cost instead of shrinking every other entry."""
    return max(float(cosine_cost(A, B).max()), float(c))
