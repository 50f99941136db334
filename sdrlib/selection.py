"""Best-of-K selection by set distance to the training distribution (paper sec. 3.3, 5; app. C.4, E, F).

For each test study a policy writes K candidate reports. A candidate ``y`` is scored by its
distance to a bank of N training reports (a :class:`~sdrlib.embedding.ReportBank`):

- eq. (7): per section S (Findings, Impression), the set distance ``D(E^S(y), E^S(r_t))`` to every
  bank report t;
- eq. (8): aggregated over the bank by ``min``, ``avg`` or ``knn`` (mean of the k smallest; the
  paper does not state k, :data:`DEFAULT_KNN_K` = 5 here);
- eq. (9): summed over the sections;
- eq. (10): the candidate with the smallest total is chosen; ties go to the lowest candidate index.

Hungarian with size penalty (``hung_pen_<alpha>``) is eq. (20) as written here, unbounded
(:func:`selection_spec`): the registry clips it at 1 for the reward ``1 - D``, which needs a bounded
value, but a ranking does not, and with the clip any sentence-count gap of ``1 / alpha`` (2 at alpha 0.5)
already scores 1, so the ``avg`` / ``knn`` aggregations flatten. Selection, MBR and pruning
(:mod:`sdrlib.pruning`, through :func:`bank_distances`) use the unclipped value under the setting's
own name; the rewards keep the clip.

The bank (paper C.4: N = 5000 training reports drawn at random) is a seeded uniform draw without
replacement (:func:`draw_bank_records` for notebook 01's bank, :func:`sample_bank` for the
``selection.bank_size`` subset notebooks 05 and 06 score against), recorded in the bank's ``meta``;
the first N reports of a split file would be a narrow group of patients and studies.

:func:`score_candidates` (texts + encoder) and :func:`bank_distances` (embedding sets) score every
candidate of every study for every requested distance x aggregation in one pass of the batched
engine (:func:`sdrlib.distances.pairwise_distances_many`): identical candidate sets are computed
once, the bank is packed once, candidates go through in memory-bounded chunks and progress is
printed as plain lines (works under papermill). The result, :class:`SelectionScores`, holds the
scores as arrays (``(settings, aggregations, sections, S, K)``) and as a long table (:meth:`SelectionScores.frame`).

Baselines and ceilings (:func:`evaluate_methods`): random selection as its exact expectation over
the K candidates (every candidate weighted 1/K), the first candidate, the oracle (per metric, the
candidate with the best per-sample score against the reference) and MBR consensus
(:func:`mbr_scores`: the candidate with the smallest mean set distance to the other K - 1). Metric
values of a selection are corpus values of the chosen candidates' per-sample statistics
(:class:`sdrlib.metrics.base.MetricResult`), so corpus metrics (macro F1, corpus BLEU) are handled
exactly like means; ``oracle_share_pct`` says where a method lands between random (0 %) and oracle
(100 %).

Bad input (defined behaviour):

==========================================  =====================================================
case                                        behaviour
==========================================  =====================================================
candidate with no parseable section         total score +inf in every setting (ranks last), counted
(template invalid, or no sentence at all)   in ``meta["unparseable"]``; chosen only when all K are,
                                            then candidate 0
candidate with one empty section            that section scores the setting's maximum against each
                                            bank report (1.0; for eq. 20 unclipped its largest value
                                            at those sizes, ``1 + alpha m``, m the bank report's
                                            sentences), aggregated over the bank like any other
bank built with another encoder             :class:`SelectionError` naming both encoder ids
K = 1                                       trivial: candidate 0 for every method
knn with k > N (bank reports holding the    k clipped to N for that section (recorded in
section)                                    ``meta["knn_k"]``)
identical candidates                        identical scores; the lowest index wins
bank report with an empty section           left out of that section's aggregation (eq. 8 runs over
                                            the bank reports that have the section; ``meta["n_bank"]``);
                                            a bank with no report holding a section raises
==========================================  =====================================================

Left out: distance-guided pruning during decoding (paper sec. 5.1), GPU solvers.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.errors import SDRError
from sdrlib.metrics import paper_names as _paper_names

__all__ = [
    "AGGREGATIONS", "DEFAULT_KNN_K", "SelectionError", "SelectionScores", "check_encoder", "head_bank", "draw_indices",
    "draw_bank_records", "sample_bank", "selection_spec", "aggregate", "parse_candidate",
    "candidate_sets", "candidate_presence", "bank_presence_of", "bank_distances", "score_candidates", "mbr_scores", "argmin_first", "method_choices",
    "selected_result", "evaluate_methods", "study_values", "best_vs_random", "improvement_summary",
    "HEADLINE_METRICS", "score_candidate_metrics", "pick_metrics", "not_computed", "mean_vectors", "pca_2d", "policy_dirs", "local_candidates", "read_candidates", "write_candidates",
]

#: aggregations of eq. (8)
AGGREGATIONS: tuple[str, ...] = ("min", "avg", "knn")
#: k of the knn aggregation; the paper does not state one
DEFAULT_KNN_K = 5
#: cap on the (chunk, N) distance blocks held at once, all settings together (float64 entries): 256 MiB
_MAX_ENTRIES = 32 * 1024 * 1024
#: a chunk is not split below this many candidate x bank x setting pairs just to print progress more often
_MIN_CHUNK_PAIRS = 2_000_000


class SelectionError(SDRError, ValueError):
    """Inputs that best-of-K selection cannot use (encoder mismatch, shapes, names, missing policies)."""


# --------------------------------------------------------------------------- aggregation (eq. 8)
def aggregate(D: np.ndarray, how: str, k: int = DEFAULT_KNN_K) -> np.ndarray:
    """Aggregate distances to the bank over its last axis: ``(..., N) -> (...)``.

    ``min``: the closest bank report; ``avg``: the mean over all N; ``knn``: the mean of the
    ``min(k, N)`` smallest (k is clipped to N, not an error).
    Example: ``aggregate(np.array([[0.1, 0.5, 0.3]]), "knn", 2) -> array([0.2])``.
    """
    D = np.asarray(D, dtype=np.float64)
    if D.shape[-1] == 0:
        raise SelectionError("cannot aggregate over an empty bank (N = 0)")
    if how == "min":
        return D.min(axis=-1)
    if how == "avg":
        return D.mean(axis=-1)
    if how == "knn":
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
            raise SelectionError(f"knn needs an integer k >= 1, got {k!r}")
        kk = min(int(k), D.shape[-1])
        if kk == D.shape[-1]:
            return D.mean(axis=-1)
        return np.partition(D, kk - 1, axis=-1)[..., :kk].mean(axis=-1)
    raise SelectionError(f"unknown aggregation {how!r}; use one of {list(AGGREGATIONS)}")


def argmin_first(scores: np.ndarray) -> np.ndarray:
    """Index of the smallest value along the last axis; ties (and an all-+inf row) give the lowest index.

    NaN is refused: a score is finite or +inf by construction.
    """
    s = np.asarray(scores, dtype=np.float64)
    if np.isnan(s).any():
        raise SelectionError("scores contain NaN; a candidate score is finite or +inf")
    return np.argmin(s, axis=-1)  # numpy returns the first occurrence of the minimum


# --------------------------------------------------------------------------- results
@dataclass
class SelectionScores:
    """Distances of every candidate to the bank, for every setting x aggregation.

    Attributes
    ----------
    study_ids : list of str, length S
    k : int
        Candidates per study (K); candidate j of study i is flat row ``i * K + j``.
    names, aggregations, sections : list of str
    section_scores : ndarray, shape (len(names), len(aggregations), len(sections), S, K)
        Eq. (8) per section (empty candidate section: the setting's maximum).
    unparseable : ndarray, shape (S, K), bool
        Candidates with no non-empty section; their total is +inf.
    meta : dict
        ``n_bank`` and ``knn_k`` per section, ``pairs`` (nominal candidate x bank pairs, all
        settings), ``computed_pairs`` (after deduplication), ``seconds``, ``pairs_per_second``,
        ``unparseable`` (count), ``nonconverged`` per setting.
    """

    study_ids: list[str]
    k: int
    names: list[str]
    aggregations: list[str]
    sections: list[str]
    section_scores: np.ndarray
    unparseable: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def total(self) -> np.ndarray:
        """Eq. (9): sum over sections, +inf for unparseable candidates; shape (names, aggregations, S, K)."""
        t = self.section_scores.sum(axis=2)
        t[..., self.unparseable] = np.inf
        return t

    def chosen(self) -> np.ndarray:
        """Eq. (10): chosen candidate per setting, aggregation and study, shape (names, aggregations, S)."""
        return argmin_first(self.total)

    def choices(self) -> dict[str, np.ndarray]:
        """``{"<name>+<aggregation>": (S,) chosen candidate}``."""
        ch = self.chosen()
        return {f"{n}+{a}": ch[i, j] for i, n in enumerate(self.names) for j, a in enumerate(self.aggregations)}

    def frame(self) -> pd.DataFrame:
        """Long table: ``study_id, candidate, distance, aggregation, <section>..., score, chosen``."""
        S, K = len(self.study_ids), self.k
        tot, ch = self.total, self.chosen()
        frames = []
        for i, n in enumerate(self.names):
            for j, a in enumerate(self.aggregations):
                d = {"study_id": np.repeat(np.asarray(self.study_ids, dtype=object), K),
                     "candidate": np.tile(np.arange(K), S), "distance": n, "aggregation": a}
                for s, sec in enumerate(self.sections):
                    d[sec] = self.section_scores[i, j, s].ravel()
                d["score"] = tot[i, j].ravel()
                d["chosen"] = (np.tile(np.arange(K), S) == np.repeat(ch[i, j], K))
                frames.append(pd.DataFrame(d))
        return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- candidates -> sets
def parse_candidate(text: Any, candidate_format: str = "template"):
    """Sections of one candidate, or ``None`` when it cannot be parsed.

    ``candidate_format="template"``: the policy's ``<think>/<answer>`` template
    (:func:`sdrlib.reports.parse_template`); ``"report"``: an API model's free-form answer,
    parsed by :func:`sdrlib.apigen.parse_api_answer` (template, ``Findings:`` / ``Impression:``
    headers, markdown headings, code fences); an answer it flags as malformed, or the ``""`` of a
    failed API sample, gives ``None`` (ranked last). A :class:`~sdrlib.reports.Sections` is
    returned as is; ``None`` and non-text give ``None``.
    """
    from sdrlib.reports import ReportTextError, Sections, parse_template

    if isinstance(text, Sections):
        return text
    if text is None or not isinstance(text, (str, bytes)):
        return None
    if candidate_format == "template":
        return parse_template(text)
    if candidate_format == "report":
        from sdrlib.apigen import parse_api_answer

        try:
            parsed = parse_api_answer(text)
        except ReportTextError:
            return None
        return None if parsed.malformed else parsed
    raise SelectionError(f"candidate_format must be 'template' or 'report', got {candidate_format!r}")


def _grid(candidates: Sequence[Sequence[Any]]) -> tuple[int, int]:
    if isinstance(candidates, (str, bytes)) or not len(candidates):
        raise SelectionError("candidates must be a non-empty list (studies) of lists (K candidates each)")
    ks = {len(c) if not isinstance(c, (str, bytes)) else -1 for c in candidates}
    if len(ks) != 1 or min(ks) < 1:
        raise SelectionError(f"every study needs the same number K >= 1 of candidates (a list each); got "
                             f"sizes {sorted(ks)[:5]}")
    return len(candidates), ks.pop()


def candidate_sets(candidates: Sequence[Sequence[Any]], embedder, *, candidate_format: str = "template",
                   sections: Sequence[str] = ("findings", "impression")) -> dict[str, list[np.ndarray]]:
    """Sentence-embedding sets of every candidate: ``{section: S*K arrays (n, d)}``, study-major.

    An unparseable candidate or an empty section gives a ``(0, d)`` array. All sentences are
    encoded in one cached pass per section.
    """
    S, K = _grid(candidates)
    parsed = [parse_candidate(c, candidate_format) for row in candidates for c in row]
    return {sec: embedder.encode_sections([getattr(p, sec) if p is not None else "" for p in parsed])
            for sec in sections}


# --------------------------------------------------------------------------- the sweep (eqs. 7-9)
def selection_spec(name: Any):
    """The distance setting as selection, MBR and pruning compute it: :func:`sdrlib.distances.get`, except that
    ``hung_pen`` is eq. (20) as written, without the reward's clip at 1 (module doc), under the same name.

    Example: ``selection_spec("hung_pen_0.5").params["clip"] -> False``; ``.name -> "hung_pen_0.5"``.
    """
    from sdrlib.distances import get
    from sdrlib.distances.registry import make_spec

    spec = get(name)
    if spec.family == "hung_pen" and spec.params["clip"]:
        return make_spec("hung_pen", name=spec.name, contradiction=spec.contradiction,
                         **{**spec.params, "clip": False})
    return spec


def _worst(spec, sizes: Any = 0) -> np.ndarray:
    """Score of an empty section against sets of ``sizes`` sentences: the setting's maximum there, shape of
    ``sizes`` (1.0; eq. 20 unclipped: ``1 + alpha * sizes``, every matched cost 1 and every sentence unmatched)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    if spec.upper is not None:
        return np.full(sizes.shape, float(spec.upper))
    return 1.0 + float(spec.params["alpha"]) * sizes


def _bank_sections(bank: Any, sections: Sequence[str]) -> dict[str, Any]:
    from sdrlib.embedding import ReportBank

    if isinstance(bank, ReportBank):
        return {s: (bank.matrix(s).astype(np.float64), bank.offsets(s)) for s in sections}
    if isinstance(bank, Mapping):
        missing = [s for s in sections if s not in bank]
        if missing:
            raise SelectionError(f"bank has no section(s) {missing}; it has {sorted(bank)}")
        return {s: bank[s] for s in sections}
    raise SelectionError(f"bank must be a ReportBank or a mapping section -> packed sets, got {type(bank).__name__}")


def bank_distances(cand_sets: Mapping[str, Sequence[np.ndarray]], bank: Any, names: Sequence[str], *, k: int,
                   study_ids: Sequence[str] | None = None, aggregations: Sequence[str] = AGGREGATIONS,
                   knn_k: int = DEFAULT_KNN_K, device: str = "cpu", on_nonconvergence: str = "warn",
                   progress: Callable[[str], None] | None = print, progress_every: float = 10.0,
                   presence: Mapping[str, Sequence[np.ndarray]] | None = None,
                   bank_presence: Mapping[str, Any] | None = None) -> SelectionScores:
    """Eqs. (7)-(9) for every candidate, setting and aggregation: one pass of the batched engine.

    Negation-aware settings (``chamfer_neg``, ``hung_nn_neg``, ...; ours, :mod:`sdrlib.distances.negation`)
    also need each sentence's finding presence: ``presence`` for the candidates (:func:`candidate_presence`)
    and, for a bank given as a mapping, ``bank_presence`` (a ReportBank is labelled from its own sentence
    texts, :func:`bank_presence_of`). They go through the negation module's engine path, one call per
    section and setting.

    Parameters
    ----------
    cand_sets : mapping section -> sequence of S*K arrays, shape (n, d)
        Candidate j of study i at position ``i * k + j``; ``(0, d)`` = empty section.
    bank : ReportBank or mapping section -> PackedSets / (matrix, offsets) / list of arrays
        N bank reports per section; empty bank sets are left out of that section's aggregation.
    names : sequence of str
        Distance settings (:func:`sdrlib.distances.get`).
    k : int
        Candidates per study (K).
    knn_k : int
        k of the knn aggregation; clipped to the number of bank reports holding the section.
    progress : callable or None
        Receives a plain progress line about every ``progress_every`` percent of each section.
    presence : mapping section -> sequence of S*K arrays, shape (n, 14), optional
        Per-sentence presence of every candidate (rows as in ``cand_sets``); needed only by
        negation-aware settings (:class:`SelectionError` when missing).
    bank_presence : mapping section -> (S_bank, 14) array or list of (n_t, 14) arrays, optional
        Presence of the bank's sentences when ``bank`` is a mapping (a ReportBank labels its own).

    Returns
    -------
    SelectionScores
    """
    from sdrlib.distances.engine import pack_sets, pairwise_distances_many
    from sdrlib.distances.registry import check_mode

    check_mode(on_nonconvergence)
    if isinstance(names, str) or not len(names):
        raise SelectionError("names must be a non-empty list of distance settings")
    all_specs = [selection_spec(n) for n in names]
    specs = [sp for sp in all_specs if not sp.negation_aware]
    neg_specs = [sp for sp in all_specs if sp.negation_aware]
    aggs = list(aggregations)
    for a in aggs:
        if a not in AGGREGATIONS:
            raise SelectionError(f"unknown aggregation {a!r}; use one of {list(AGGREGATIONS)}")
    if not isinstance(knn_k, (int, np.integer)) or isinstance(knn_k, bool) or knn_k < 1:
        raise SelectionError(f"knn_k must be an integer >= 1, got {knn_k!r}")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise SelectionError(f"k (candidates per study) must be an integer >= 1, got {k!r}")
    sections = list(cand_sets)
    if not sections:
        raise SelectionError("cand_sets has no section")
    n_flat = {len(cand_sets[s]) for s in sections}
    if len(n_flat) != 1 or next(iter(n_flat)) % k or next(iter(n_flat)) == 0:
        raise SelectionError(f"every section needs the same number of candidate sets, a positive multiple of "
                             f"k = {k}; got {sorted(n_flat)}")
    SK = n_flat.pop()
    S = SK // k
    ids = [str(i) for i in (study_ids if study_ids is not None else range(S))]
    if len(ids) != S:
        raise SelectionError(f"{len(ids)} study ids for {S} studies")
    banks = _bank_sections(bank, sections)
    neg_inputs = _neg_inputs(neg_specs, cand_sets, SK, bank, banks, presence, bank_presence) if neg_specs else {}
    engine_mode = "ignore" if on_nonconvergence == "warn" else on_nonconvergence
    out = np.empty((len(all_specs), len(aggs), len(sections), S, k))
    empty_any = np.ones(SK, dtype=bool)
    meta: dict[str, Any] = {"n_bank": {}, "knn_k": {}, "pairs": 0, "computed_pairs": 0,
                            "nonconverged": {s.name: 0 for s in all_specs}}
    t_start = time.perf_counter()
    for si, sec in enumerate(sections):
        bp_all = pack_sets(banks[sec], f"bank[{sec}]")
        keep = np.flatnonzero(bp_all.sizes > 0)
        if not len(keep):
            raise SelectionError(f"no bank report has a non-empty {sec} section; cannot score {sec}")
        bp = bp_all if len(keep) == bp_all.n_sets else pack_sets(bp_all.subset(keep), f"bank[{sec}]")
        N = bp.n_sets
        kk = min(int(knn_k), N)
        meta["n_bank"][sec], meta["knn_k"][sec] = N, kk
        cp = pack_sets(list(cand_sets[sec]), f"candidates[{sec}]", dim=bp.dim)
        nonempty = cp.sizes > 0
        empty_any &= ~nonempty
        # one representative per class of identical non-empty candidate sets (the engine dedups within a
        # call; classes across chunks are merged here so that a repeated report is computed once overall)
        cls = cp.classes()
        rows = np.flatnonzero(nonempty)
        reps, inv = (np.unique(cls[rows], return_index=True, return_inverse=True)[1:] if len(rows)
                     else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        reps = rows[reps]
        vals = np.empty((len(all_specs), len(aggs), len(reps)))
        # chunks: bounded by memory; split further (for progress lines) only while a chunk keeps >= 2e6 pairs,
        # since every engine call re-packs its candidates
        per = max(1, N * len(specs))
        step = max(1, min(_MAX_ENTRIES // per, max(-(-len(reps) // 10), -(-_MIN_CHUNK_PAIRS // per))))
        next_pct = progress_every
        t0 = time.perf_counter()
        for c0 in range(0, len(reps), step) if specs else ():
            sub = cp.subset(reps[c0:c0 + step])
            res = pairwise_distances_many(sub, bp, specs, device=device, on_nonconvergence=engine_mode,
                                          return_converged=True)
            for a_i, spec in enumerate(specs):
                D, ok = res[spec.name]
                meta["nonconverged"][spec.name] += int((~ok).sum())
                for g_i, how in enumerate(aggs):
                    vals[a_i, g_i, c0:c0 + step] = aggregate(D, how, kk)
            done = min(len(reps), c0 + step)
            pct = 100.0 * done / len(reps)
            if progress is not None and (pct >= next_pct or done == len(reps)):
                el = time.perf_counter() - t0
                progress(f"{sec}: {pct:5.1f}% ({done}/{len(reps)} distinct candidate sets x {N} bank reports x "
                         f"{len(specs)} settings, {el:.1f} s)")
                while next_pct <= pct:
                    next_pct += progress_every
        if neg_specs and len(reps):
            from sdrlib.distances.negation import pairwise_distances_neg

            cand_list, cand_pres, bank_list, bank_pres = neg_inputs[sec]
            t1 = time.perf_counter()
            for a_i, spec in enumerate(neg_specs, start=len(specs)):
                D = pairwise_distances_neg([cand_list[r] for r in reps], [cand_pres[r] for r in reps], bank_list,
                                           bank_pres, spec, on_nonconvergence=on_nonconvergence)
                for g_i, how in enumerate(aggs):
                    vals[a_i, g_i] = aggregate(D, how, kk)
            if progress is not None:
                progress(f"{sec}: negation-aware {[sp.name for sp in neg_specs]}: {len(reps)} distinct candidate "
                         f"sets x {len(bank_list)} bank reports, {time.perf_counter() - t1:.1f} s")
        meta["computed_pairs"] += len(reps) * N * len(all_specs)
        meta["pairs"] += SK * N * len(all_specs)
        full = np.empty((len(all_specs), len(aggs), SK))
        full[..., rows] = vals[..., inv.reshape(-1)] if len(rows) else 0.0
        for a_i, spec in enumerate(specs + neg_specs):
            for g_i, how in enumerate(aggs):
                full[a_i, g_i, ~nonempty] = aggregate(_worst(spec, bp.sizes)[None], how, kk)[0]
        out[:, :, si] = full.reshape(len(all_specs), len(aggs), S, k)
    meta["seconds"] = time.perf_counter() - t_start
    meta["pairs_per_second"] = meta["pairs"] / max(meta["seconds"], 1e-9)
    unparseable = empty_any.reshape(S, k)
    meta["unparseable"] = int(unparseable.sum())
    if on_nonconvergence == "warn" and any(meta["nonconverged"].values()):
        from sdrlib.distances.errors import ConvergenceWarning

        bad = {n: c for n, c in meta["nonconverged"].items() if c}
        warnings.warn(f"solver stopped at its iteration cap on {bad} computed pairs (values used as returned)",
                      ConvergenceWarning, stacklevel=2)
    done_order = [sp.name for sp in specs + neg_specs]
    out = out[[done_order.index(sp.name) for sp in all_specs]]  # back to the order of ``names``
    return SelectionScores(ids, int(k), [sp.name for sp in all_specs], aggs, sections, out, unparseable, meta)


# --------------------------------------------------------------------------- negation-aware settings
def candidate_presence(candidates: Sequence[Sequence[Any]], *, candidate_format: str = "template",
                       sections: Sequence[str] = ("findings", "impression")) -> dict[str, list[np.ndarray]]:
    """Per-sentence finding presence of every candidate (offline labeler, cached per sentence):
    ``{section: S*K arrays (n, 14) int8}``, study-major, rows as in :func:`candidate_sets`.

    Needed only by negation-aware settings (:mod:`sdrlib.distances.negation`). An unparseable
    candidate or an empty section gives a ``(0, 14)`` array.
    """
    from sdrlib.clinical.presence import section_presence

    _grid(candidates)
    parsed = [parse_candidate(c, candidate_format) for row in candidates for c in row]
    return {sec: section_presence([getattr(p, sec) if p is not None else "" for p in parsed]) for sec in sections}


def bank_presence_of(bank: Any, sections: Sequence[str] = ("findings", "impression")) -> dict[str, np.ndarray]:
    """Presence of a :class:`~sdrlib.embedding.ReportBank`'s sentences from its stored texts:
    ``{section: (S_section, 14) int8}``, rows as ``bank.matrix(section)``."""
    from sdrlib.clinical.presence import sentence_presence
    from sdrlib.embedding import ReportBank

    if not isinstance(bank, ReportBank):
        raise SelectionError("bank_presence_of needs a ReportBank (it labels the bank's sentence texts); for a "
                             "mapping bank pass bank_presence={section: (S, 14) presence} yourself")
    out = {}
    for sec in sections:
        texts = list(bank.sentences[sec])
        if len(texts) != bank.matrix(sec).shape[0]:
            raise SelectionError(f"bank section {sec!r} holds {len(texts)} sentence texts for "
                                 f"{bank.matrix(sec).shape[0]} embedding rows; rebuild the bank (notebook 01)")
        out[sec] = sentence_presence(texts)
    return out


def _as_set_list(packed: Any, where: str) -> list[np.ndarray]:
    """A bank section as a list of (n_t, d) arrays (the negation module needs the sentence order)."""
    from sdrlib.distances.engine import PackedSets

    if isinstance(packed, PackedSets):
        raise SelectionError(f"{where}: negation-aware settings need the bank as (matrix, offsets) or a list of "
                             "arrays (a PackedSets has lost the sentence order its presence refers to)")
    if isinstance(packed, tuple) and len(packed) == 2:
        M, off = np.asarray(packed[0]), np.asarray(packed[1])
        return [M[off[t]:off[t + 1]] for t in range(len(off) - 1)]
    return [np.asarray(x) for x in packed]


def _neg_inputs(neg_specs: Sequence[Any], cand_sets: Mapping[str, Sequence[np.ndarray]], SK: int, bank: Any,
                banks: Mapping[str, Any],
                presence: Mapping[str, Sequence[np.ndarray]] | None,
                bank_presence: Mapping[str, Any] | None) -> dict[str, tuple]:
    """Per section: (candidate sets, candidate presence, non-empty bank sets, their presence) for the
    negation-aware settings; clear errors when presence is missing or misaligned."""
    from sdrlib.embedding import ReportBank

    names = [sp.name for sp in neg_specs]
    sections = list(cand_sets)
    if presence is None:
        raise SelectionError(f"{names} are negation-aware: pass presence=candidate_presence(candidates) (the "
                             "per-sentence finding presence of every candidate), or use score_candidates")
    if bank_presence is None:
        if not isinstance(bank, ReportBank):
            raise SelectionError(f"{names} are negation-aware: with a mapping bank pass bank_presence="
                                 "{section: (S, 14) presence of the bank's sentences}")
        bank_presence = bank_presence_of(bank, sections)
    out = {}
    for sec in sections:
        if sec not in presence or sec not in bank_presence:
            raise SelectionError(f"presence for section {sec!r} missing (candidates: {sorted(presence)}, bank: "
                                 f"{sorted(bank_presence)})")
        cp = list(presence[sec])
        if len(cp) != SK:
            raise SelectionError(f"presence[{sec!r}] has {len(cp)} arrays for {SK} candidate sets")
        sets = _as_set_list(banks[sec], f"bank[{sec}]")
        bp = bank_presence[sec]
        if isinstance(bp, np.ndarray) and bp.ndim == 2:
            sizes = np.array([len(x) for x in sets])
            if bp.shape[0] != sizes.sum():
                raise SelectionError(f"bank_presence[{sec!r}] has {bp.shape[0]} rows for {sizes.sum()} bank sentences")
            off = np.concatenate([[0], np.cumsum(sizes)])
            bp = [bp[off[t]:off[t + 1]] for t in range(len(sets))]
        bp = list(bp)
        if len(bp) != len(sets):
            raise SelectionError(f"bank_presence[{sec!r}] has {len(bp)} arrays for {len(sets)} bank reports")
        keep = [t for t, x in enumerate(sets) if len(x)]
        out[sec] = (list(cand_sets[sec]), cp, [sets[t] for t in keep], [bp[t] for t in keep])
    return out


def check_encoder(bank: Any, embedder: Any) -> None:
    """Refuse a bank whose ``encoder_id`` differs from the embedder's (:class:`SelectionError` naming both)."""
    bank_id, emb_id = getattr(bank, "encoder_id", None), getattr(embedder, "encoder_id", None)
    if bank_id is None or emb_id is None:
        raise SelectionError("score_candidates needs a ReportBank and a SentenceEmbedder (both carry an encoder_id)")
    if bank_id != emb_id:
        raise SelectionError(f"the bank was built with encoder {bank_id} but the candidates would be embedded with "
                             f"encoder {emb_id}; distances between the two spaces mean nothing: rebuild the bank "
                             "(notebook 01) or use the bank's encoder")


def score_candidates(candidates: Sequence[Sequence[Any]], bank: Any, embedder: Any, names: Sequence[str], *,
                     candidate_format: str = "template", study_ids: Sequence[str] | None = None,
                     **kwargs: Any) -> SelectionScores:
    """Score raw candidates (``[S][K]`` texts) against a :class:`~sdrlib.embedding.ReportBank`.

    Refuses a bank built with another encoder than ``embedder`` (:class:`SelectionError` naming
    both ids). Parsing: :func:`parse_candidate`; embedding: :func:`candidate_sets`; scoring:
    :func:`bank_distances` (keyword arguments go there).
    Example: ``score_candidates([[g1, g2]], bank, emb, ["chamfer"]).chosen().shape -> (1, 3, 1)``.
    """
    from sdrlib.distances import get

    check_encoder(bank, embedder)
    S, K = _grid(candidates)
    sets = candidate_sets(candidates, embedder, candidate_format=candidate_format)
    if any(get(n).negation_aware for n in names) and kwargs.get("presence") is None:
        kwargs["presence"] = candidate_presence(candidates, candidate_format=candidate_format)
    return bank_distances(sets, bank, names, k=K, study_ids=study_ids, **kwargs)


# --------------------------------------------------------------------------- MBR consensus
def mbr_scores(cand_sets: Mapping[str, Sequence[np.ndarray]], names: Sequence[str], *, k: int,
               device: str = "cpu", on_nonconvergence: str = "warn",
               presence: Mapping[str, Sequence[np.ndarray]] | None = None) -> dict[str, np.ndarray]:
    """MBR consensus score of every candidate: mean distance to the other K - 1 candidates of its study.

    The distance between two candidates is summed over the sections (as eq. 9); a pair with an
    empty section on either side scores that section's maximum (1.0; eq. 20 unclipped, :func:`selection_spec`:
    ``1 + alpha m``, m the other side's sentences). Returns ``{name: (S, K)}``; an
    unparseable candidate (no non-empty section) scores +inf; with K = 1 every score is 0.
    All within-study ordered pairs of a setting go through one :func:`~sdrlib.distances.engine.paired_distances` call
    (negation-aware settings: :func:`~sdrlib.distances.negation.paired_distances_neg`, which needs
    ``presence`` as in :func:`bank_distances`).
    """
    from sdrlib.distances.engine import pack_sets, paired_distances

    sections = list(cand_sets)
    SK = len(cand_sets[sections[0]])
    if SK % k or any(len(cand_sets[s]) != SK for s in sections):
        raise SelectionError(f"every section needs the same number of candidate sets, a multiple of k = {k}")
    S = SK // k
    specs = [selection_spec(n) for n in names]
    out = {s.name: np.zeros((S, k)) for s in specs}
    empty_all = np.ones(SK, dtype=bool)
    packs = {}
    for sec in sections:
        packs[sec] = pack_sets(list(cand_sets[sec]), f"candidates[{sec}]")
        empty_all &= packs[sec].sizes == 0
    if k > 1:
        # ordered pairs (i, j), i != j, within each study: flat ids a -> b
        ii, jj = np.nonzero(~np.eye(k, dtype=bool))
        base = (np.arange(S) * k)[:, None]
        a, b = (base + ii).ravel(), (base + jj).ravel()
        for spec in specs:
            tot = np.zeros(len(a))
            for sec in sections:
                cp = packs[sec]
                ok = (cp.sizes[a] > 0) & (cp.sizes[b] > 0)
                d = _worst(spec, np.abs(cp.sizes[a] - cp.sizes[b]))
                if ok.any() and spec.negation_aware:
                    from sdrlib.distances.negation import paired_distances_neg

                    if presence is None or sec not in presence or len(presence[sec]) != SK:
                        raise SelectionError(f"{spec.name} is negation-aware: pass presence=candidate_presence("
                                             f"candidates) with {SK} arrays per section")
                    sets_, pres_ = list(cand_sets[sec]), list(presence[sec])
                    ia, ib = a[ok], b[ok]
                    d[ok] = paired_distances_neg([sets_[i] for i in ia], [pres_[i] for i in ia],
                                                 [sets_[i] for i in ib], [pres_[i] for i in ib], spec,
                                                 on_nonconvergence=on_nonconvergence)
                elif ok.any():
                    d[ok] = paired_distances(cp.subset(a[ok]), cp.subset(b[ok]), spec, device=device,
                                             on_nonconvergence=on_nonconvergence)
                tot += d
            out[spec.name] = tot.reshape(S, k, k - 1).mean(axis=2)
    for spec in specs:
        out[spec.name][empty_all.reshape(S, k)] = np.inf
    return out


# --------------------------------------------------------------------------- evaluation
def method_choices(sel: SelectionScores | None = None, mbr: Mapping[str, np.ndarray] | None = None, *,
                   n_studies: int | None = None, k: int | None = None) -> dict[str, np.ndarray]:
    """Every selection method as ``{label: (S,) candidate index}``.

    Labels: ``first`` (candidate 0), ``<setting>+<aggregation>`` (bank selection, eq. 10) and
    ``mbr:<setting>`` (MBR consensus). Random and oracle depend on the metric and are added by
    :func:`evaluate_methods`.
    """
    S = n_studies if n_studies is not None else (len(sel.study_ids) if sel is not None else
                                                  next(iter(mbr.values())).shape[0] if mbr else None)
    if S is None:
        raise SelectionError("method_choices needs sel, mbr or n_studies")
    out = {"first": np.zeros(S, dtype=np.int64)}
    if sel is not None:
        out.update(sel.choices())
    for name, sc in (mbr or {}).items():
        out[f"mbr:{name}"] = argmin_first(sc)
    return out


def _as_result(metric: Any, name: str, S: int, K: int):
    from sdrlib.metrics.base import MetricResult, mean_result

    if isinstance(metric, MetricResult):
        if metric.stats.shape[0] != S * K:
            raise SelectionError(f"metric {name}: {metric.stats.shape[0]} samples, expected S*K = {S}*{K}")
        return metric
    v = np.asarray(metric, dtype=np.float64)
    if v.shape != (S, K):
        raise SelectionError(f"metric {name}: per-candidate values of shape {v.shape}, expected (S, K) = {(S, K)}")
    return mean_result(name, "given", v.ravel())


def _oracle_choice(r, S: int, K: int) -> np.ndarray | None:
    if r.sample is None:
        return None
    v = np.asarray(r.sample, dtype=np.float64).reshape(S, K)
    v = np.where(np.isfinite(v), v, -np.inf)
    return np.argmax(v if r.higher_is_better else -v, axis=1)  # ties: lowest index


def selected_result(r, choice: "np.ndarray | str", k: int):
    """The metric over S studies for one selection: a :class:`MetricResult` of S rows.

    ``choice``: ``(S,)`` candidate indices, or ``"random"`` (each candidate weighted 1/K: the exact
    expectation of a uniformly random pick for mean metrics; for ratio metrics such as macro F1,
    the value of the expected counts). Usable with :func:`sdrlib.metrics.significance.paired_bootstrap`.
    """
    from sdrlib.metrics.base import MetricResult

    n = r.stats.shape[0]
    if n % k:
        raise SelectionError(f"{r.name}: {n} samples is not a multiple of k = {k}")
    S = n // k
    st = r.stats.reshape(S, k, -1)
    samp = None if r.sample is None else np.asarray(r.sample, dtype=np.float64).reshape(S, k)
    if isinstance(choice, str):
        if choice != "random":
            raise SelectionError(f"choice must be candidate indices or 'random', got {choice!r}")
        stats = st.mean(axis=1)
        sample = None if samp is None else _nanmean_rows(samp)
    else:
        c = np.asarray(choice, dtype=np.int64)
        if c.shape != (S,) or (len(c) and (c.min() < 0 or c.max() >= k)):
            raise SelectionError(f"{r.name}: choice must be {S} indices in [0, {k})")
        stats = st[np.arange(S), c]
        sample = None if samp is None else samp[np.arange(S), c]
    corpus = float(np.asarray(r.reducer(stats.sum(axis=0, keepdims=True)))[0])
    return MetricResult(r.name, r.backend, sample, corpus, stats, r.reducer, r.higher_is_better, dict(r.extra))


def _nanmean_rows(v: np.ndarray) -> np.ndarray:
    ok = np.isfinite(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok.any(axis=1), np.where(ok, v, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1), np.nan)


def evaluate_methods(choices: Mapping[str, np.ndarray], metrics: Mapping[str, Any], k: int, *,
                     strata: Sequence[str] | None = None) -> pd.DataFrame:
    """Corpus value of every method on every metric, with random, oracle and the relative position.

    Parameters
    ----------
    choices : mapping label -> (S,) candidate index (:func:`method_choices`)
    metrics : mapping metric name -> :class:`~sdrlib.metrics.base.MetricResult` over the S*K
        candidates (study-major, as scored once per candidate) or an ``(S, K)`` array of per-candidate values
    k : int
    strata : (S,) stratum per study, optional (``no_finding`` / ``single`` / ``multi``)

    Returns
    -------
    DataFrame with ``method, metric, stratum, value, random, oracle, improvement_pct, oracle_share_pct, n``;
    methods include ``random`` (exact expectation) and ``oracle`` (per-sample best; absent for
    corpus-only metrics, whose oracle_share is NaN). ``improvement_pct = 100 (v - random) / |random|``,
    ``oracle_share_pct = 100 (v - random) / (oracle - random)``.
    """
    if not metrics:
        raise SelectionError("no metrics given")
    S = None
    for lbl, c in choices.items():
        S = len(c) if S is None else S
        if len(c) != S:
            raise SelectionError(f"method {lbl}: {len(c)} choices, others have {S}")
    if S is None:
        first = next(iter(metrics.values()))
        S = (first.stats.shape[0] if hasattr(first, "stats") else np.asarray(first).size) // k
    groups = {"all": np.ones(S, dtype=bool)}
    if strata is not None:
        st = np.asarray(strata, dtype=object)
        if st.shape != (S,):
            raise SelectionError(f"strata: {st.shape}, expected ({S},)")
        for s in dict.fromkeys(st.tolist()):
            groups[str(s)] = st == s
    rows = []
    for mname, m in metrics.items():
        r = _as_result(m, mname, S, k)
        sel = {"random": selected_result(r, "random", k)}
        orc = _oracle_choice(r, S, k)
        if orc is not None:
            sel["oracle"] = selected_result(r, orc, k)
        for lbl, c in choices.items():
            sel[lbl] = selected_result(r, c, k)
        for g, mask in groups.items():
            w = mask.astype(np.float64)
            val = {lbl: float(res.value_for(w)[0]) for lbl, res in sel.items()}
            rnd, ora = val["random"], val.get("oracle", np.nan)
            for lbl, v in val.items():
                with np.errstate(invalid="ignore", divide="ignore"):
                    imp = 100.0 * (v - rnd) / abs(rnd) if rnd != 0 else np.nan
                    share = 100.0 * (v - rnd) / (ora - rnd) if np.isfinite(ora) and ora != rnd else np.nan
                rows.append({"method": lbl, "metric": mname, "stratum": g, "value": v, "random": rnd,
                             "oracle": ora, "improvement_pct": imp, "oracle_share_pct": share, "n": int(mask.sum())})
    return pd.DataFrame(rows)


def study_values(choices: Mapping[str, np.ndarray], values: np.ndarray) -> pd.DataFrame:
    """Per-study value of every method for one per-candidate metric ``values`` (S, K).

    Columns: the methods of ``choices`` plus ``random`` (mean over the K candidates: the exact
    expectation) and ``oracle`` (best candidate); one row per study.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise SelectionError(f"values must have shape (S, K), got {v.shape}")
    S = v.shape[0]
    out = {"random": _nanmean_rows(v), "oracle": np.where(np.isfinite(v), v, -np.inf).max(axis=1)}
    out["oracle"][~np.isfinite(v).any(axis=1)] = np.nan
    for lbl, c in choices.items():
        out[lbl] = v[np.arange(S), np.asarray(c, dtype=np.int64)]
    return pd.DataFrame(out)


def _split_method(m: str) -> tuple[str, str]:
    return tuple(m.rsplit("+", 1)) if "+" in m else (m, "")  # type: ignore[return-value]


def best_vs_random(ev: pd.DataFrame, metrics: Sequence[str] | None = None, *, stratum: str = "all",
                   not_computed: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Tables 3 / 23: per policy and metric, the best bank-selection method vs random.

    ``ev`` is :func:`evaluate_methods` output with a ``policy`` column. Bank methods are the
    ``<setting>+<aggregation>`` labels. Returns ``policy, metric, best_method, best, random,
    improvement_pct``, plus ``oracle`` and ``first`` and the best MBR for reference.
    ``not_computed`` (metric -> ``"not computed: <why>"``, as :func:`not_computed` gives it): each such
    metric gets a row per policy with that text as ``best_method`` and NaN values, so a metric the
    scores lack stays in the table.
    """
    d = ev[ev.stratum == stratum]
    if metrics is not None:
        d = d[d.metric.isin(list(metrics))]
    rows = []
    for (pol, met), g in d.groupby(["policy", "metric"], sort=False):
        bank = g[g.method.str.contains("+", regex=False) & ~g.method.str.startswith("mbr:")]
        mbr = g[g.method.str.startswith("mbr:")]
        if bank.empty:
            continue
        b = bank.loc[bank.value.idxmax()]
        get = lambda lbl: float(g[g.method == lbl].value.iloc[0]) if (g.method == lbl).any() else np.nan  # noqa: E731
        rows.append({"policy": pol, "metric": met, "best_method": b.method, "best": b.value, "random": b.random,
                     "improvement_pct": b.improvement_pct, "oracle": b.oracle, "first": get("first"),
                     "best_mbr": float(mbr.value.max()) if len(mbr) else np.nan})
    have = {(r["policy"], r["metric"]) for r in rows}
    for pol in dict.fromkeys(ev["policy"]):
        for met, why in (not_computed or {}).items():
            if (pol, met) not in have:
                rows.append({"policy": pol, "metric": met, "best_method": why, "best": np.nan, "random": np.nan,
                             "improvement_pct": np.nan, "oracle": np.nan, "first": np.nan, "best_mbr": np.nan})
    cols = ["policy", "metric", "best_method", "best", "random", "improvement_pct", "oracle", "first", "best_mbr"]
    pol_order = {p: i for i, p in enumerate(dict.fromkeys(ev["policy"]))}
    met_order = {m: i for i, m in enumerate(dict.fromkeys([*HEADLINE_METRICS, *(metrics or ()), *(not_computed or {})]))}
    rows.sort(key=lambda r: (pol_order.get(r["policy"], 0), met_order.get(r["metric"], len(met_order))))
    return pd.DataFrame(rows, columns=cols)


def improvement_summary(ev: pd.DataFrame, metrics: Sequence[str], *, stratum: str = "all") -> pd.DataFrame:
    """Tables 25-28: mean ± sample std over policies of % improvement over random per setting x aggregation.

    Returns rows ``distance, aggregation`` and one ``mean`` / ``std`` column pair per metric (``<metric>``,
    ``<metric>_std``), bank methods only, in their sweep order.
    """
    d = ev[(ev.stratum == stratum) & ev.metric.isin(list(metrics)) & ev.method.str.contains("+", regex=False)
           & ~ev.method.str.startswith("mbr:")]
    if d.empty:
        return pd.DataFrame(columns=["distance", "aggregation"])
    g = d.groupby(["method", "metric"], sort=False).improvement_pct
    stats = pd.DataFrame({"mean": g.mean(), "std": g.std(ddof=1)}).reset_index()
    out = []
    for m in dict.fromkeys(d.method):
        dist, agg = _split_method(m)
        row = {"distance": dist, "aggregation": agg}
        for met in metrics:
            s = stats[(stats.method == m) & (stats.metric == met)]
            row[met] = float(s["mean"].iloc[0]) if len(s) else np.nan
            row[f"{met}_std"] = float(s["std"].iloc[0]) if len(s) else np.nan
        out.append(row)
    return pd.DataFrame(out)


#: metrics of Tables 3 / 23 and 4 by the paper's names (RG-F1 there: F1RadGraph's complete level), plus RG-E
#: (what Tables 24-28 and Fig. 5 call RG-F1) and our per-sample clinical F1; each resolved to a suite metric by
#: :mod:`sdrlib.metrics.paper_names`, the one map of paper names.
HEADLINE_METRICS: tuple[str, ...] = _paper_names.TABLES["selection"]


def score_candidate_metrics(candidates: Sequence[Sequence[Any]], references: Sequence[Any], *,
                            candidate_format: str = "template", **kwargs: Any):
    """Score every candidate once against its study's reference: a
    :class:`~sdrlib.metrics.suite.ReportScores` over S*K samples (study-major, ids ``<study>#<j>``).

    ``references`` are the S test records (their labels give the strata); keyword arguments go to
    :func:`sdrlib.metrics.suite.score_reports` (e.g. ``**metric_kwargs(cfg)``).
    """
    from sdrlib.metrics.suite import score_reports

    S, K = _grid(candidates)
    if len(references) != S:
        raise SelectionError(f"{len(references)} references for {S} studies")
    refs = [{"findings": r.findings, "impression": r.impression} for r in references for _ in range(K)]
    ids = [f"{getattr(r, 'study_id', i)}#{j}" for i, r in enumerate(references) for j in range(K)]
    labels = [r.labels for r in references for _ in range(K)] if all(
        getattr(r, "labels", None) for r in references) else None
    preds = [c for row in candidates for c in row]
    fmt = "template" if candidate_format == "template" else "report"
    return score_reports(preds, refs, sample_ids=ids, reference_labels=labels, prediction_format=fmt, **kwargs)


def pick_metrics(scores: Any, section: str, metrics: Sequence[str] = HEADLINE_METRICS) -> dict[str, Any]:
    """``{name: MetricResult}`` of ``section`` for each of the paper's metric names in ``metrics`` the scores have.

    Each name is resolved by :func:`sdrlib.metrics.paper_names.find` (exact suite name, e.g. ``RG-F1`` ->
    ``radgraph_complete@<model>``, ``METEOR`` -> ``meteor`` or, without WordNet, ``meteor_exact_stem``).
    Names the scores lack are not in the result: :func:`not_computed` says why, for the tables.
    """
    res = {r.name: r for r in scores.results[section]}
    out = {}
    for name in metrics:
        found = _paper_names.find(name, res)
        if found is not None:
            out[name] = res[found]
    return out


def not_computed(scores: Any, section: str, metrics: Sequence[str] = HEADLINE_METRICS) -> dict[str, str]:
    """``{name: "not computed: <why>"}`` for the names in ``metrics`` that :func:`pick_metrics` cannot find.

    The reason is the suite's (``scores.unavailable``: package or model missing, scorer failed), e.g.
    ``{"RG-F1": "not computed: package radgraph is not installed ..."}``.
    """
    have = pick_metrics(scores, section, metrics)
    unavailable = getattr(scores, "unavailable", {}) or {}
    return {name: _paper_names.not_computed(name, unavailable) for name in metrics if name not in have}


# --------------------------------------------------------------------------- figure 2b helpers
def mean_vectors(*section_sets: Sequence[np.ndarray]) -> np.ndarray:
    """Mean sentence embedding per report over all its sections: ``(n, d)``; a report without sentences gives NaN."""
    n = len(section_sets[0])
    d = next((a.shape[1] for sets in section_sets for a in sets if np.ndim(a) == 2), 0)
    out = np.full((n, d), np.nan)
    for i in range(n):
        rows = [np.asarray(sets[i], dtype=np.float64) for sets in section_sets if len(sets[i])]
        if rows:
            out[i] = np.concatenate(rows).mean(axis=0)
    return out


def pca_2d(fit: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """2-D PCA fitted on the rows of ``fit`` (NaN rows ignored), applied to ``fit`` and ``others``."""
    X = np.asarray(fit, dtype=np.float64)
    ok = np.isfinite(X).all(axis=1)
    if ok.sum() < 2:
        raise SelectionError("PCA needs at least two finite rows")
    mu = X[ok].mean(axis=0)
    _, _, vt = np.linalg.svd(X[ok] - mu, full_matrices=False)
    W = vt[:2].T
    return [(np.asarray(Y, dtype=np.float64) - mu) @ W for Y in (X, *others)]


def head_bank(bank: Any, n: int) -> Any:
    """The first ``n`` reports of a :class:`~sdrlib.embedding.ReportBank` (``n <= 0`` or ``n >= N``: the bank itself).

    Not the paper's draw (C.4 draws the bank at random): notebooks 05 and 06 use :func:`sample_bank`.
    """
    return _bank_rows(bank, np.arange(n), f"[:{n}]") if 0 < n < len(bank) else bank


def _bank_rows(bank: Any, rows: np.ndarray, tag: str, meta: dict | None = None) -> Any:
    """The reports ``rows`` (increasing) of a ReportBank, as a new bank."""
    from sdrlib.embedding import ReportBank

    mats, offs, sents = {}, {}, {}
    for s in bank.section_offsets:
        o, m, txt = bank.offsets(s), bank.matrix(s), bank.sentences[s]
        lens = o[rows + 1] - o[rows]
        take = (np.concatenate([np.arange(o[r], o[r + 1]) for r in rows]) if len(rows)
                else np.zeros(0, np.int64)).astype(np.int64)
        mats[s], offs[s] = m[take], np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        sents[s] = [txt[i] for i in take]
    return ReportBank(ids=[bank.ids[r] for r in rows], section_matrices=mats, section_offsets=offs, sentences=sents,
                      encoder_id=bank.encoder_id, corpus_hash=f"{bank.corpus_hash}{tag}",
                      meta={**bank.meta, **(meta or {})})


def draw_indices(n_total: int, n: int, seed: int) -> np.ndarray:
    """``n`` of ``range(n_total)`` drawn uniformly without replacement with ``seed``, increasing; shape (n,).

    ``n <= 0`` or ``n >= n_total``: all of them (``arange(n_total)``). The same seed gives the same draw
    (numpy's ``default_rng(seed).choice``). Example: ``draw_indices(10, 3, 0)`` -> three increasing indices.
    """
    if isinstance(n_total, bool) or not isinstance(n_total, (int, np.integer)) or n_total < 0:
        raise SelectionError(f"n_total must be an integer >= 0, got {n_total!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise SelectionError(f"n (reports to draw) must be an integer, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SelectionError(f"seed must be an integer >= 0, got {seed!r}")
    if n <= 0 or n >= n_total:
        return np.arange(n_total, dtype=np.int64)
    return np.sort(np.random.default_rng(int(seed)).choice(int(n_total), size=int(n), replace=False)).astype(np.int64)


def _draw_meta(n_total: int, n: int, seed: int) -> dict:
    whole = n <= 0 or n >= n_total
    return {"draw": "all" if whole else "random", "seed": int(seed), "n": int(n_total if whole else n),
            "of": int(n_total)}


def draw_bank_records(records: Sequence[Any], n: int, seed: int) -> tuple[list, dict]:
    """The training reports of the selection bank: ``n`` of ``records`` drawn at random (paper C.4).

    Returns ``(records, meta)``: the drawn records in their split order (:func:`draw_indices`; ``n <= 0`` or
    ``n >= len(records)``: all of them) and ``{"bank_draw": {"draw": "random" | "all", "seed", "n", "of"}}``
    for :attr:`ReportBank.meta <sdrlib.embedding.ReportBank>` (notebook 01 records it in the saved bank).
    """
    rows = draw_indices(len(records), n, seed)
    return [records[i] for i in rows], {"bank_draw": _draw_meta(len(records), n, seed)}


def sample_bank(bank: Any, n: int, seed: int) -> Any:
    """``n`` reports of a :class:`~sdrlib.embedding.ReportBank` drawn at random with ``seed`` (``selection.bank_size``).

    Notebooks 05 (selection) and 06 (pruning) both call it with the profile's seed, so they score against
    the same reports. ``n <= 0`` or ``n >= N``: the bank itself, unchanged. The result's ``meta`` adds
    ``{"bank_sample": {"draw", "seed", "n", "of"}}`` to the bank's own (notebook 01's ``bank_draw``).
    """
    rows = draw_indices(len(bank), n, seed)
    if len(rows) == len(bank):
        return bank
    return _bank_rows(bank, rows, f"[random {n} seed {seed}]", {"bank_sample": _draw_meta(len(bank), n, seed)})


# --------------------------------------------------------------------------- candidates on disk
def policy_dirs(cfg) -> dict[str, Path]:
    """The local policies notebook 05 samples: SFT (notebook 03) and every GRPO configuration (notebook 04), or
    the subset ``selection.policies``, seed ``cfg.seed`` each: ``{configuration: final policy folder}``. A missing one raises naming the notebook."""
    from sdrlib.training import run_dir

    out = {"sft": run_dir(cfg, "sft", seed=cfg.seed) / "final"}
    for r in cfg.grpo.rewards:
        if r != "sft":
            out[r] = run_dir(cfg, "grpo", r, cfg.seed) / "final"
    if cfg.selection.policies:  # the profile's subset, in its order
        out = {r: out[r] for r in cfg.selection.policies}
    missing = {k: str(p) for k, p in out.items() if not p.is_dir()}
    if missing:
        raise SelectionError(f"trained policies not found: {missing}; run notebooks 03 (SFT) and 04 (GRPO) "
                             f"on profile {cfg.name!r} first")
    return out


def write_candidates(path: str | Path, key: Mapping[str, Any], study_ids: Sequence[str],
                     candidates: Sequence[Sequence[str]]) -> Path:
    """JSONL: a first line ``{"key": ...}`` (what produced them), then one ``{"study_id", "candidates"}`` per study."""
    from sdrlib.io import atomic_write_text

    lines = [json.dumps({"key": dict(key)})]
    lines += [json.dumps({"study_id": s, "candidates": list(c)}) for s, c in zip(study_ids, candidates)]
    return atomic_write_text(Path(path), "\n".join(lines) + "\n")


def read_candidates(path: str | Path, key: Mapping[str, Any], study_ids: Sequence[str]) -> list[list[str]] | None:
    """Candidates of :func:`write_candidates` when the file's key and study ids match, else ``None``."""
    p = Path(path)
    if not p.is_file():
        return None
    try:
        lines = [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    except (OSError, ValueError):
        return None
    if not lines or lines[0].get("key") != json.loads(json.dumps(dict(key))):
        return None
    rows = lines[1:]
    if [r.get("study_id") for r in rows] != list(study_ids):
        return None
    return [list(r["candidates"]) for r in rows]


def local_candidates(cfg, policy_dir: str | Path, records: Sequence[Any], k: int, path: str | Path, *,
                     seed: int | None = None, log: Callable[[str], None] | None = print) -> list[list[str]]:
    """K sampled reports per study from a local policy (:func:`sdrlib.generation.generate_candidates`),
    batched, at the profile's evaluation temperature (``sft.eval_temperature``), cached in ``path`` (JSONL).

    The cache is reused when the policy folder, K, decoding settings, seed and study ids match.
    """
    from sdrlib.generation import generate_candidates, load_images
    from sdrlib.training import load_policy

    s = cfg.sft
    seed = cfg.seed if seed is None else seed
    ids = [r.study_id for r in records]
    key = {"policy": str(Path(policy_dir).resolve()), "k": int(k), "temperature": s.eval_temperature,
           "max_new_tokens": s.max_new_tokens, "seed": int(seed)}
    cached = read_candidates(path, key, ids)
    if cached is not None:
        if log:
            log(f"{Path(path).name}: reused ({len(cached)} studies x {k})")
        return cached
    t0 = time.perf_counter()
    model, processor = load_policy(cfg, policy_dir)
    images = [load_images(r.image_paths, s.max_images) for r in records]
    cands = generate_candidates(model, processor, images, k, temperature=s.eval_temperature, seed=seed,
                                max_new_tokens=s.max_new_tokens, batch_size=s.eval_batch_size)
    write_candidates(path, key, ids, cands)
    if log:
        log(f"{Path(path).name}: {len(cands)} studies x {k} sampled in {time.perf_counter() - t0:.0f} s")
    return cands
