"""MBR consensus among a study's K candidates (ours: a baseline next to bank selection).

A candidate's MBR score is its mean set distance to the other K - 1 candidates of its study, summed over the
sections as eq. (9); the candidate with the smallest score is the consensus pick
(:func:`sdrlib.selection.evaluation.method_choices`, label ``mbr:<setting>``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sdrlib.distances.engine import pack_sets, paired_distances
from sdrlib.selection.errors import SelectionError
from sdrlib.selection.scoring import _worst, selection_spec

__all__ = ["mbr_scores"]


def mbr_scores(cand_sets: Mapping[str, Sequence[np.ndarray]], names: Sequence[str], *, n_candidates: int,
               device: str = "cpu", on_nonconvergence: str = "warn",
               presence: Mapping[str, Sequence[np.ndarray]] | None = None) -> dict[str, np.ndarray]:
    """MBR consensus score of every candidate: mean distance to the other K - 1 candidates of its study
    (``n_candidates`` = K candidates per study; candidate j of study i at row ``i * K + j`` of ``cand_sets``).

    The distance between two candidates is summed over the sections (as eq. 9); a pair with an
    empty section on either side scores that section's maximum (1.0; eq. 20 unclipped, :func:`selection_spec`:
    ``1 + alpha m``, m the other side's sentences). Returns ``{name: (S, K)}``; an
    unparseable candidate (no non-empty section) scores +inf; with K = 1 every score is 0.
    All within-study ordered pairs of a setting go through one :func:`~sdrlib.distances.engine.paired_distances` call
    (negation-aware settings need ``presence`` as in :func:`~sdrlib.selection.scoring.bank_distances`; it goes to
    the engine as ``presence=``, which plain settings ignore).
    """
    sections = list(cand_sets)
    SK = len(cand_sets[sections[0]])
    if SK % n_candidates or any(len(cand_sets[s]) != SK for s in sections):
        raise SelectionError(f"every section needs the same number of candidate sets, a multiple of "
                             f"n_candidates = {n_candidates}")
    S = SK // n_candidates
    specs = [selection_spec(n) for n in names]
    out = {s.name: np.zeros((S, n_candidates)) for s in specs}
    empty_all = np.ones(SK, dtype=bool)
    packs = {}
    for sec in sections:
        packs[sec] = pack_sets(list(cand_sets[sec]), f"candidates[{sec}]")
        empty_all &= packs[sec].sizes == 0
    if n_candidates > 1:
        # ordered pairs (i, j), i != j, within each study: flat ids a -> b
        ii, jj = np.nonzero(~np.eye(n_candidates, dtype=bool))
        base = (np.arange(S) * n_candidates)[:, None]
        a, b = (base + ii).ravel(), (base + jj).ravel()
        for spec in specs:
            tot = np.zeros(len(a))
            for sec in sections:
                cp = packs[sec]
                ok = (cp.sizes[a] > 0) & (cp.sizes[b] > 0)
                d = _worst(spec, np.abs(cp.sizes[a] - cp.sizes[b]))
                if ok.any():
                    pres = _pair_presence(presence, sec, SK, a[ok], b[ok])
                    if pres is None and spec.needs_presence:
                        raise SelectionError(f"{spec.name} is negation-aware (reads presence): pass presence=candidate_presence("
                                             f"candidates) with {SK} arrays per section")
                    d[ok] = paired_distances(cp.subset(a[ok]), cp.subset(b[ok]), spec, presence=pres, device=device,
                                             on_nonconvergence=on_nonconvergence)
                tot += d
            out[spec.name] = tot.reshape(S, n_candidates, n_candidates - 1).mean(axis=2)
    for spec in specs:
        out[spec.name][empty_all.reshape(S, n_candidates)] = np.inf
    return out


def _pair_presence(presence: Mapping[str, Sequence[np.ndarray]] | None, sec: str, SK: int, a: np.ndarray,
                   b: np.ndarray) -> tuple[list, list] | None:
    """The presence of the pairs' two sides, ``(P[a], P[b])``, or None when ``presence`` lacks the section
    (or holds another number of arrays than candidate sets)."""
    if presence is None or sec not in presence or len(presence[sec]) != SK:
        return None
    p_sec = presence[sec]
    return [p_sec[i] for i in a], [p_sec[i] for i in b]
