"""Scoring partial reports against the bank: eq. (9) over the sections every scored candidate has begun
(:func:`partial_totals`) and the bank distance of sentence lists (:class:`BankScorer`, through
:func:`sdrlib.selection.bank_distances`).

Left out: which candidates are scored when (:mod:`._rounds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sdrlib.distances import get
from sdrlib.distances.engine import pack_sets
from sdrlib.pruning._params import PruningError
from sdrlib.selection import AGGREGATIONS, DEFAULT_KNN_K, bank_distances, check_encoder


# --------------------------------------------------------------------------- scoring partial reports
def partial_totals(section_scores: np.ndarray, empty: np.ndarray, scorable: np.ndarray | None = None) -> np.ndarray:
    """Eq. (9) for partial reports: sum over the sections every scored candidate has begun.

    Parameters
    ----------
    section_scores : (n, n_sections) eq. (8) per section (an empty section holds the setting's maximum)
    empty : (n, n_sections) bool, section without a complete sentence
    scorable : (n,) bool, candidates judged this round (default all); the others get NaN

    Returns (n,) totals: +inf for a candidate with no sentence; the sum over the common sections, or over all
    sections (empty = maximum, selection's rule) when none is common.
    Example: ``partial_totals(np.array([[.2, 1.], [.3, .1]]), np.array([[0, 1], [0, 0]], bool)) -> [.2, .3]``.
    """
    S = np.asarray(section_scores, dtype=np.float64)
    E = np.asarray(empty, dtype=bool)
    if S.ndim != 2 or S.shape != E.shape:
        raise PruningError(f"section_scores {S.shape} and empty {E.shape} must be the same (n, sections) shape")
    sc = np.ones(len(S), dtype=bool) if scorable is None else np.asarray(scorable, dtype=bool)
    nothing = E.all(axis=1)
    judged = sc & ~nothing
    common = ~E[judged].any(axis=0) if judged.any() else np.zeros(S.shape[1], dtype=bool)
    tot = S[:, common].sum(axis=1) if common.any() else S.sum(axis=1)
    tot = np.where(nothing, np.inf, tot)
    return np.where(sc, tot, np.nan)


def _pack_bank(bank: Any, sections: Sequence[str]) -> dict:
    """``{section: PackedSets}`` of the bank reports that hold the section (eq. 8 leaves the others out)."""
    packed = {}
    for s in sections:
        full = pack_sets((bank.matrix(s).astype(np.float64), bank.offsets(s)), f"bank[{s}]")
        keep = np.flatnonzero(full.sizes > 0)
        if not len(keep):
            raise PruningError(f"no bank report has a non-empty {s} section")
        packed[s] = full if len(keep) == full.n_sets else pack_sets(full.subset(keep), f"bank[{s}]")
    return packed


class BankScorer:
    """Distance of partial reports to a bank of training reports: one setting, one aggregation.

    ``bank`` is a :class:`~sdrlib.embedding.ReportBank` built with ``embedder``'s encoder (checked, as in
    selection); the bank is packed once per section (reports without the section left out, as eq. 8 does).
    :meth:`section_scores` embeds sentence lists (the embedder's cache) and runs
    :func:`sdrlib.selection.bank_distances` on them. :meth:`for_distance` gives a scorer for another setting
    or aggregation that shares the packed bank.
    """

    def __init__(self, bank: Any, embedder: Any, distance: str = "chamfer", aggregation: str = "avg", *,
                 knn_k: int | None = None, device: str = "cpu",
                 sections: Sequence[str] = ("findings", "impression")) -> None:
        check_encoder(bank, embedder)
        self._setup(bank, embedder, distance, aggregation, knn_k, device, sections)
        self._packed = _pack_bank(bank, self.sections)
        self.calls = 0

    @classmethod
    def _sharing(cls, packed: dict, bank: Any, embedder: Any, distance: str, aggregation: str, knn_k: int,
                 device: str, sections: Sequence[str]) -> "BankScorer":
        """A scorer on an already packed (and checked) bank: no encoder check, no packing."""
        self = cls.__new__(cls)
        self._setup(bank, embedder, distance, aggregation, knn_k, device, sections)
        self._packed = packed
        self.calls = 0
        return self

    def _setup(self, bank: Any, embedder: Any, distance: str, aggregation: str, knn_k: int | None, device: str,
               sections: Sequence[str]) -> None:
        get(distance)  # named DistanceSpecError for an unknown setting
        if aggregation not in AGGREGATIONS:
            raise PruningError(f"unknown aggregation {aggregation!r}; use one of {list(AGGREGATIONS)}")
        self.bank, self.embedder, self.distance, self.aggregation = bank, embedder, distance, aggregation
        self.knn_k = DEFAULT_KNN_K if knn_k is None else int(knn_k)
        self.device, self.sections = device, tuple(sections)

    def for_distance(self, distance: str, aggregation: str | None = None) -> "BankScorer":
        """A scorer for another setting (and aggregation) that shares this one's packed bank."""
        return BankScorer._sharing(self._packed, self.bank, self.embedder, distance, aggregation or self.aggregation,
                                   self.knn_k, self.device, self.sections)

    @property
    def label(self) -> str:
        return f"{self.distance}+{self.aggregation}"

    def section_scores(self, sentence_lists: Sequence[Sequence[tuple[str, str]]]) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, empty)``, both ``(n, len(sections))``, for n lists of ``(section, sentence)``."""
        n = len(sentence_lists)
        sets = {s: self.embedder.encode_sets([[x for sec, x in sl if sec == s] for sl in sentence_lists])
                for s in self.sections}
        empty = np.stack([[len(sets[s][i]) == 0 for s in self.sections] for i in range(n)])
        res = bank_distances(sets, self._packed, [self.distance], n_candidates=n, aggregations=[self.aggregation],
                             knn_k=self.knn_k, device=self.device, progress=None, on_nonconvergence="ignore")
        self.calls += 1
        return res.section_scores[0, 0, :, 0, :].T.copy(), empty

    def __call__(self, sentence_lists: Sequence[Sequence[tuple[str, str]]], scorable: np.ndarray | None = None) -> np.ndarray:
        return partial_totals(*self.section_scores(sentence_lists), scorable)
