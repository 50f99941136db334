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

**Presence and contradiction.** Each sentence gets a presence vector over the 14 CheXpert
observations (:data:`OBSERVATIONS`), int8: ``+1`` the offline labeler
(:func:`sdrlib.clinical.label_report`, run on the sentence alone) reads the observation
positive, ``-1`` negative, ``0`` not mentioned **or uncertain** ("possible effusion" contradicts
neither "effusion" nor "no effusion": a hedge is a partial agreement, which the cosine cost
already prices). "No Finding" is always 0 (the labeler derives it, it is never read negative, and a
normal sentence does not contradict a finding about another observation).
``X_ij = 1`` when some observation is ``+1`` in sentence i and ``-1`` in sentence j or vice versa,
else 0. ``r_i = 1`` when sentence i states some observation with a polarity that the other set states
only the other way (some sentence with the opposite sign, none with the same sign); ``s_j`` likewise
(:func:`contradicted_sentences`). Hence ``M'`` stays in [0, 1], ``M'_ii = M_ii`` for a sentence against
itself, a self-contradictory report is not contradicted by itself, and identical or reordered sets keep
distance 0 (as far as the plain setting gives 0).

**Caching.** Presence vectors are cached per sentence in an in-memory LRU
(:data:`PRESENCE_CACHE_SIZE` entries) keyed by the sentence with white space collapsed and ends
stripped (the labeler itself is case-insensitive and ignores spacing); like embeddings, a sentence is
labelled once per process.

**API.** Distances take embedding sets *and* presence arrays of matching row counts:
:func:`set_distance_neg` (per-pair reference, on :mod:`sdrlib.distances.reference` with the cost
passed in), :func:`paired_distances_neg` (zipped pairs: rewards) and :func:`pairwise_distances_neg`
(K x N: selection), both on the batched engine's kernels: ``X`` enters as a per-pair cosine cap
``g' = min(g, 1 - 2 c X)`` on the shared cosine block, the floors through per-sentence and per-set
observation bit masks in one driver (``_kernels.neg_pairs``) that gathers each pair's block and runs the
family's own solver (``nn_value``, ``hung_value``, ``transport_value``, ``entropic_value``), and sets are
deduplicated on (vector, presence). CPU only: ``device: cuda`` does not apply to these settings. :func:`text_distances` is the text-level convenience
(split with :func:`sdrlib.reports.split_sentences`, the split of ``SentenceEmbedder.encode_sections``).
The plain entry points (``set_distance``, ``pairwise_distances``, ``paired_distances``) refuse a
negation-aware setting with a :class:`~sdrlib.distances.errors.DistanceSpecError`.

Left out: contradictions across two sentences of one set, severity / laterality disagreements
("small" vs "large", "left" vs "right") and GW (it never compares a sentence of A with one of B).

Example::

    >>> P = section_presence(["No pleural effusion."])[0]; Q = section_presence(["Small left pleural effusion."])[0]
    >>> contradiction_matrix(P, Q)
    array([[1.]])
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from sdrlib.distances.costs import as_pair, check_range, cosine_cost
from sdrlib.distances.errors import DistanceInputError, DistanceSpecError
from sdrlib.distances.registry import DistanceSpec, check_mode, get, handle_nonconvergence
from sdrlib.clinical.presence import OBSERVATIONS, section_presence, sentence_presence

__all__ = ["contradiction_matrix", "contradicted_sentences", "negation_cost",
           "set_distance_neg", "paired_distances_neg", "pairwise_distances_neg", "text_distances"]


def _check_presence(P: object, n: int, name: str) -> np.ndarray:
    """``P`` as an (n, 14) int8 array of -1 / 0 / 1."""
    try:
        a = np.asarray(P)
    except (TypeError, ValueError) as exc:
        raise DistanceInputError(f"{name}: presence is not an array: {exc}") from None
    if a.size == 0 and n == 0:
        return np.zeros((0, len(OBSERVATIONS)), np.int8)
    if a.ndim != 2 or a.shape != (n, len(OBSERVATIONS)):
        raise DistanceInputError(f"{name}: presence must have shape ({n}, {len(OBSERVATIONS)}) (one row per "
                                 f"sentence of the set), got {a.shape}")
    if a.dtype.kind not in "biuf" or not np.isin(a, (-1, 0, 1)).all():
        raise DistanceInputError(f"{name}: presence values must be -1, 0 or 1")
    return a.astype(np.int8)


def contradiction_matrix(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``X`` (n, m) float64: 1 where sentence i of P and sentence j of Q disagree on an observation's
    polarity (+1 vs -1), else 0 (module doc). Example: ``contradiction_matrix([[0]*9+[0, -1, 0, 0, 0]],
    [[0]*9+[0, 1, 0, 0, 0]]) -> [[1.]]``."""
    P = np.asarray(P, np.float64)
    Q = np.asarray(Q, np.float64)
    pos_p, neg_p = (P > 0).astype(np.float64), (P < 0).astype(np.float64)
    pos_q, neg_q = (Q > 0).astype(np.float64), (Q < 0).astype(np.float64)
    return ((pos_p @ neg_q.T + neg_p @ pos_q.T) > 0).astype(np.float64)


def contradicted_sentences(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which sentences of each set the *other set* contradicts: (r (n,), s (m,)) float64 0 / 1.

    ``r_i = 1`` when sentence i of P states an observation with one polarity that Q states with the other
    polarity and never with the same one (``s`` likewise for Q against P). A sentence its own set repeats
    is never contradicted by an identical set. Example: P = ["No effusion.", "No pneumothorax."], Q =
    ["Small effusion.", "No pneumothorax."] -> r = [1, 0], s = [1, 0].
    """
    P = np.asarray(P)
    Q = np.asarray(Q)

    def flags(A, B):
        pos_b, neg_b = (B > 0).any(axis=0), (B < 0).any(axis=0)
        return (((A > 0) & neg_b & ~pos_b) | ((A < 0) & pos_b & ~neg_b)).any(axis=1).astype(np.float64)

    return flags(P, Q), flags(Q, P)


def negation_cost(A: np.ndarray, B: np.ndarray, PA: np.ndarray, PB: np.ndarray, c: float) -> np.ndarray:
    """``M' = max(M, c X, c r_i, c s_j)`` for unit-norm sets A, B and their presence arrays (module doc)."""
    r, s = contradicted_sentences(PA, PB)
    floor = np.maximum(contradiction_matrix(PA, PB), np.maximum(r[:, None], s[None, :]))
    return np.maximum(cosine_cost(A, B), c * floor)


def _neg_spec(name: "str | DistanceSpec") -> DistanceSpec:
    spec = get(name)
    if not spec.negation_aware:
        raise DistanceSpecError(f"{spec.name} is not negation-aware: use {spec.name}_neg (or make_spec(..., "
                                "contradiction=c)), or the plain functions for the plain distance")
    return spec


def set_distance_neg(A: object, B: object, PA: object, PB: object, name: "str | DistanceSpec", *,
                     on_nonconvergence: str = "warn") -> float:
    """Reference value of a negation-aware setting for one pair (POT / SciPy on ``M'``).

    Parameters
    ----------
    A, B : array-like (n, d), (m, d)
        Non-empty embedding sets (normalised here, as in ``set_distance``).
    PA, PB : array-like (n, 14), (m, 14)
        Presence arrays of the sentences (:func:`sentence_presence`).
    name : str or DistanceSpec
        A negation-aware setting (``"chamfer_neg"``).

    Example: ``set_distance_neg(E(["No effusion."]), E(["Effusion."]), P1, P2, "chamfer_neg") -> 1.0``.
    """
    import importlib

    from sdrlib.distances.registry import FAMILIES

    spec = _neg_spec(name)
    check_mode(on_nonconvergence)
    a, b = as_pair(A, B)
    pa, pb = _check_presence(PA, len(a), "PA"), _check_presence(PB, len(b), "PB")
    fn = getattr(importlib.import_module("sdrlib.distances.reference"), FAMILIES[spec.family].fn_name)
    val, ok = fn(a, b, **spec.params, M=negation_cost(a, b, pa, pb, spec.contradiction))
    handle_nonconvergence(spec, int(not ok), 1, on_nonconvergence)
    return check_range(float(val), spec.name, spec.upper)


def _pack(sets: Any, presence: Any, name: str, dim: int | None = None):
    """Pack sets with the engine, then split unique rows by presence: returns (PackedSets, (U, 14) presence)."""
    from sdrlib.distances.engine import PackedSets, pack_sets

    if isinstance(sets, PackedSets):
        raise DistanceInputError(f"{name}: pass the sets as a list of arrays or (matrix, offsets); a PackedSets "
                                 "has lost the sentence order the presence arrays refer to")
    ps = pack_sets(sets, name, dim=dim)
    sizes = ps.sizes
    if isinstance(presence, np.ndarray) and presence.ndim == 2:
        P = _check_presence(presence, int(sizes.sum()), f"{name} presence")  # stacked like the matrix
    else:
        try:
            plist = list(presence)
        except TypeError:
            raise DistanceInputError(f"{name}: presence must be a list of (n_t, 14) arrays or one stacked "
                                     "(S, 14) array") from None
        if len(plist) != ps.n_sets:
            raise DistanceInputError(f"{name}: {ps.n_sets} sets but {len(plist)} presence arrays")
        P = np.concatenate([_check_presence(p, int(n), f"{name} presence[{t}]") for t, (p, n)
                            in enumerate(zip(plist, sizes))] or [np.zeros((0, len(OBSERVATIONS)), np.int8)])
    # one unique row per (vector, presence): the contradiction is a property of the sentence, not the vector
    key = np.concatenate([ps.index[:, None], P.astype(np.int64)], axis=1)
    if len(key):
        ukey, inv = np.unique(key, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
    else:
        ukey, inv = np.zeros((0, 1 + len(OBSERVATIONS)), np.int64), np.zeros(0, np.int64)
    unique = np.ascontiguousarray(ps.unique[ukey[:, 0]]) if len(ukey) else ps.unique[:0]
    return PackedSets(unique, inv.astype(np.int64), ps.offsets, _checked=True), \
        np.ascontiguousarray(ukey[:, 1:].astype(np.int8))


def _capped_cosines(bank, pb: np.ndarray, cand, pc: np.ndarray, c: float) -> np.ndarray:
    """(U_bank, U_cand) cosines with contradicted pairs capped: ``cost(g') = max(M, c X)``."""
    from sdrlib.distances.engine import _cosines

    G = _cosines(bank.unique, cand.unique, "cpu")
    X = contradiction_matrix(pb, pc)
    return np.ascontiguousarray(np.minimum(G, 1.0 - 2.0 * c * X))


def _masks(ps, presence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positive, negative) observation bit masks: per unique row (U, 2) and per set (S, 2), int64."""
    bits = np.int64(1) << np.arange(len(OBSERVATIONS), dtype=np.int64)
    row = np.stack([((presence > 0) * bits).sum(axis=1), ((presence < 0) * bits).sum(axis=1)], axis=1)
    row = np.ascontiguousarray(row.astype(np.int64))
    per_sentence = row[ps.index] if len(ps.index) else np.zeros((0, 2), np.int64)
    sets = np.zeros((ps.n_sets, 2), np.int64)
    nonempty = np.flatnonzero(ps.sizes > 0)
    if len(nonempty):
        sets[nonempty] = np.bitwise_or.reduceat(per_sentence, ps.offsets[:-1][nonempty], axis=0)
    return row, sets


def _kernels(spec: DistanceSpec, G: np.ndarray, cand, pc: np.ndarray, bank, pb: np.ndarray, pk: np.ndarray,
             pj: np.ndarray):
    """The negation driver (``_kernels.neg_pairs``) on the capped block with the sentence floors,
    single-threaded below the engine's threshold (as ``_run``): (values, converged)."""
    import numba

    from sdrlib.distances import _kernels as K
    from sdrlib.distances.engine import _SERIAL_BELOW, ZERO_COST_ATOL

    out = np.empty(len(pk))
    conv = np.ones(len(pk), dtype=np.bool_)
    if not len(pk):
        return out, conv
    crow, cset = _masks(cand, pc)
    brow, bset = _masks(bank, pb)
    fam, prm = spec.family, spec.params
    rho = prm.get("rho", -1.0)
    rho = 0.0 if rho == "adaptive" else float(rho)
    eps = float(prm.get("eps", 1.0))
    nmax = int(max(cand.sizes.max(), bank.sizes.max()))
    threads = numba.get_num_threads()
    if len(pk) < _SERIAL_BELOW:
        numba.set_num_threads(1)
    try:
        K.neg_pairs(G, cand.index, cand.offsets, bank.index, bank.offsets, pk, pj, nmax, crow, brow, cset, bset,
                    float(spec.contradiction), K.NEG_FAMILY_CODES[fam], float(prm.get("alpha", 0.0)),
                    bool(prm.get("clip", False)), rho, eps, float(prm.get("tau", -1.0)),
                    float(prm.get("stop_thr", 1e-9)), int(prm.get("max_iter", 1000)),
                    fam == "sinkhorn" and eps < K.LOG_DOMAIN_EPS, ZERO_COST_ATOL, bool(prm.get("rescale", False)),
                    out, conv)
    finally:
        numba.set_num_threads(threads)
    return check_range(out, spec.name, spec.upper), conv


def _empty(ps, name: str, empty_value: "float | None") -> np.ndarray:
    from sdrlib.distances.engine import _check_empty

    return _check_empty(ps, name, empty_value)


def paired_distances_neg(A_sets: Any, A_presence: Any, B_sets: Any, B_presence: Any, name: "str | DistanceSpec",
                         *, on_nonconvergence: str = "warn", empty_value: "float | None" = None) -> np.ndarray:
    """``D'(A_sets[k], B_sets[k])`` for each k on the batched engine: shape (K,), float64 in [0, 1].

    ``A_presence`` / ``B_presence``: a list of (n_t, 14) presence arrays (one per set, rows as in the
    set) or one stacked (S, 14) array. ``empty_value`` as in ``paired_distances`` (empty sets raise by
    default). Example: ``paired_distances_neg([A], [PA], [B], [PB], "chamfer_neg").shape -> (1,)``.
    """
    from sdrlib.distances.engine import _check_empty_value

    spec = _neg_spec(name)
    check_mode(on_nonconvergence)
    _check_empty_value(empty_value)
    ap, pa = _pack(A_sets, A_presence, "A_sets")
    bp, pb = _pack(B_sets, B_presence, "B_sets", dim=ap.dim)
    if ap.n_sets != bp.n_sets:
        raise DistanceInputError(f"A_sets has {ap.n_sets} sets, B_sets {bp.n_sets}: paired distances need equal counts")
    e = _empty(ap, "A_sets", empty_value) | _empty(bp, "B_sets", empty_value)
    out = np.full(ap.n_sets, np.nan if empty_value is None else float(empty_value))
    idx = np.flatnonzero(~e).astype(np.int64)
    if not len(idx):
        return out
    keys = np.stack([ap.classes()[idx], bp.classes()[idx]], axis=1)
    _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    rep = idx[first]
    G = _capped_cosines(bp, pb, ap, pa, spec.contradiction)
    vals, ok = _kernels(spec, G, ap, pa, bp, pb, rep, rep)
    inv = inv.reshape(-1)
    out[idx] = vals[inv]
    handle_nonconvergence(spec, int((~ok[inv]).sum()), len(idx), on_nonconvergence)
    return out


def pairwise_distances_neg(cands: Any, cand_presence: Any, bank: Any, bank_presence: Any,
                           name: "str | DistanceSpec", *, on_nonconvergence: str = "warn",
                           empty_value: "float | None" = None) -> np.ndarray:
    """All ``D'`` between K candidate sets and N bank sets: (K, N) float64 (selection's case).

    Presence arguments as in :func:`paired_distances_neg`. Identical (vector, presence) multisets are
    computed once. Example: ``pairwise_distances_neg(C, PC, B, PB, "hung_nn_neg").shape -> (K, N)``.
    """
    from sdrlib.distances.engine import _check_empty_value, _representatives

    spec = _neg_spec(name)
    check_mode(on_nonconvergence)
    _check_empty_value(empty_value)
    cp, pc = _pack(cands, cand_presence, "cands")
    bp, pb = _pack(bank, bank_presence, "bank", dim=cp.dim)
    e_c, e_b = _empty(cp, "cands", empty_value), _empty(bp, "bank", empty_value)
    out = np.full((cp.n_sets, bp.n_sets), np.nan if empty_value is None else float(empty_value))
    conv = np.ones_like(out, dtype=bool)
    kk_all, jj_all = np.flatnonzero(~e_c), np.flatnonzero(~e_b)
    kk, kinv = _representatives(cp.classes()[kk_all], kk_all)
    jj, jinv = _representatives(bp.classes()[jj_all], jj_all)
    if len(kk) and len(jj):
        G = _capped_cosines(bp, pb, cp, pc, spec.contradiction)
        pj = np.repeat(jj.astype(np.int64), len(kk))
        pk = np.tile(kk.astype(np.int64), len(jj))
        vals, ok = _kernels(spec, G, cp, pc, bp, pb, pk, pj)
        out[np.ix_(kk_all, jj_all)] = vals.reshape(len(jj), len(kk)).T[np.ix_(kinv, jinv)]
        conv[np.ix_(kk_all, jj_all)] = ok.reshape(len(jj), len(kk)).T[np.ix_(kinv, jinv)]
    handle_nonconvergence(spec, int((~conv).sum()), conv.size, on_nonconvergence)
    return out


def text_distances(generated: Sequence[str], references: Sequence[str], name: "str | DistanceSpec", embedder: Any,
                   *, empty_value: float = 1.0, on_nonconvergence: str = "warn") -> np.ndarray:
    """``D'`` between section texts ``generated[k]`` and ``references[k]``: (K,) float64.

    Sentences are split and embedded by ``embedder.encode_sections`` (a
    :class:`~sdrlib.embedding.SentenceEmbedder`, cached) and labelled by :func:`section_presence`
    (cached). A section without sentences scores ``empty_value`` (default 1, as in the rewards).
    Example: ``text_distances(["No effusion."], ["Small effusion."], "chamfer_neg", emb) -> [1.0]``.
    """
    gen, ref = list(generated), list(references)
    if len(gen) != len(ref):
        raise DistanceInputError(f"{len(gen)} generated texts but {len(ref)} references")
    sets = embedder.encode_sections(gen + ref)
    pres = section_presence(gen + ref)
    k = len(gen)
    return paired_distances_neg(sets[:k], pres[:k], sets[k:], pres[k:], name, empty_value=empty_value,
                                on_nonconvergence=on_nonconvergence)
