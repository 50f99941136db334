"""Bank scoring of best-of-K selection (paper sec. 3.3; eqs. 7-10; app. C.4, E).

For each test study a policy writes K candidate reports. A candidate ``y`` is scored by its
distance to a bank of N training reports (a :class:`~sdrlib.embedding.ReportBank`):

- eq. (7): per section S (Findings, Impression), the set distance ``D(E^S(y), E^S(r_t))`` to every
  bank report t;
- eq. (8): aggregated over the bank by ``min``, ``avg`` or ``knn`` (mean of the ``knn_k`` smallest; the
  paper does not state that k, :data:`DEFAULT_KNN_K` = 5 here);
- eq. (9): summed over the sections;
- eq. (10): the candidate with the smallest total is chosen; ties go to the lowest candidate index.

Hungarian with size penalty (``hung_pen_<alpha>``) is eq. (20) as written here, unbounded
(:func:`selection_spec`): the registry clips it at 1 for the reward ``1 - D``, which needs a bounded
value, but a ranking does not, and with the clip any sentence-count gap of ``1 / alpha`` (2 at alpha 0.5)
already scores 1, so the ``avg`` / ``knn`` aggregations flatten. Selection, MBR and pruning
(:mod:`sdrlib.pruning`, through :func:`bank_distances`) use the unclipped value under the setting's
own name; the rewards keep the clip.

:func:`score_candidates` (texts + encoder) and :func:`bank_distances` (embedding sets) score every
candidate of every study for every requested distance x aggregation in one pass of the batched
engine (:func:`sdrlib.distances.engine.pairwise_distances_many`, the one distance API: negation-aware
settings get the candidates' and the bank's per-sentence presence through ``presence=``): identical
candidate sets are computed once, the bank is packed once, candidates go through in memory-bounded chunks
and progress is printed as plain lines (works under papermill). The result, :class:`SelectionScores`,
holds the scores as arrays (``(settings, aggregations, sections, S, K)``) and as a long table
(:meth:`SelectionScores.frame`).

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
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.clinical.presence import section_presence, sentence_presence
from sdrlib.distances.engine import PackedSets, pack_sets, pairwise_distances_many
from sdrlib.distances.errors import ConvergenceWarning
from sdrlib.distances.registry import DistanceSpec, get, make_spec
from sdrlib.distances.registry.per_pair import check_mode
from sdrlib.embedding import ReportBank
from sdrlib.reports import ReportTextError, Sections, parse_api_answer, parse_template
from sdrlib.selection.errors import SelectionError

__all__ = [
    "AGGREGATIONS", "DEFAULT_KNN_K", "SelectionScores", "aggregate", "argmin_first", "parse_candidate",
    "candidate_sets", "candidate_presence", "bank_presence_of", "selection_spec", "bank_distances", "check_encoder",
    "score_candidates",
]

#: aggregations of eq. (8)
AGGREGATIONS: tuple[str, ...] = ("min", "avg", "knn")
#: k of the knn aggregation; the paper does not state one
DEFAULT_KNN_K = 5
#: cap on the (chunk, N) distance blocks held at once, all settings together (float64 entries): 256 MiB
_MAX_ENTRIES = 32 * 1024 * 1024
#: a chunk is not split below this many candidate x bank x setting pairs just to print progress more often
_MIN_CHUNK_PAIRS = 2_000_000


# --------------------------------------------------------------------------- aggregation (eq. 8)
def aggregate(D: np.ndarray, how: str, knn_k: int = DEFAULT_KNN_K) -> np.ndarray:
    """Aggregate distances to the bank over its last axis: ``(..., N) -> (...)``.

    ``min``: the closest bank report; ``avg``: the mean over all N; ``knn``: the mean of the
    ``min(knn_k, N)`` smallest (knn_k is clipped to N, not an error).
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
        if not isinstance(knn_k, (int, np.integer)) or isinstance(knn_k, bool) or knn_k < 1:
            raise SelectionError(f"knn needs an integer knn_k >= 1, got {knn_k!r}")
        kk = min(int(knn_k), D.shape[-1])
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
    n_candidates : int
        Candidates per study (the paper's K); candidate j of study i is flat row ``i * K + j``.
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
    n_candidates: int
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
        S, K = len(self.study_ids), self.n_candidates
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
def parse_candidate(text: Any, candidate_format: str = "template") -> Sections | None:
    """Sections of one candidate, or ``None`` when it cannot be parsed.

    ``candidate_format="template"``: the policy's ``<think>/<answer>`` template
    (:func:`sdrlib.reports.parse_template`); ``"report"``: an API model's free-form answer,
    parsed by :func:`sdrlib.reports.parse_api_answer` (template, ``Findings:`` / ``Impression:``
    headers, markdown headings, code fences); an answer it flags as malformed, or the ``""`` of a
    failed API sample, gives ``None`` (ranked last). A :class:`~sdrlib.reports.Sections` is
    returned as is; ``None`` and non-text give ``None``.
    """
    if isinstance(text, Sections):
        return text
    if text is None or not isinstance(text, (str, bytes)):
        return None
    if candidate_format == "template":
        return parse_template(text)
    if candidate_format == "report":
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
def selection_spec(name: Any) -> DistanceSpec:
    """The distance setting as selection, MBR and pruning compute it: :func:`sdrlib.distances.get`, except that
    ``hung_pen`` is eq. (20) as written, without the reward's clip at 1 (module doc), under the same name.

    Example: ``selection_spec("hung_pen_0.5").params["clip"] -> False``; ``.name -> "hung_pen_0.5"``.
    """
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
    if isinstance(bank, ReportBank):
        return {s: (bank.matrix(s).astype(np.float64), bank.offsets(s)) for s in sections}
    if isinstance(bank, Mapping):
        missing = [s for s in sections if s not in bank]
        if missing:
            raise SelectionError(f"bank has no section(s) {missing}; it has {sorted(bank)}")
        return {s: bank[s] for s in sections}
    raise SelectionError(f"bank must be a ReportBank or a mapping section -> packed sets, got {type(bank).__name__}")


@dataclass
class _Sweep:
    """The settings of one :func:`bank_distances` call, shared by its per-section steps; ``meta`` is filled in."""

    specs: list
    chunked: list  # settings chunked over the candidates (one shared packing and cosine product)
    whole: list  # settings scored on all distinct candidate sets at once (they carry presence)
    aggs: list[str]
    knn_k: int
    device: str
    engine_mode: str
    on_nonconvergence: str
    progress: Callable[[str], None] | None
    progress_every: float
    meta: dict
    row_of: dict = field(default_factory=dict)


def _check_sweep(names: Sequence[str], aggregations: Sequence[str], knn_k: Any, n_candidates: Any,
                 on_nonconvergence: str) -> tuple[list, list[str]]:
    """The selection specs of ``names`` and the aggregations, after checking every argument of the sweep."""
    check_mode(on_nonconvergence)
    if isinstance(names, str) or not len(names):
        raise SelectionError("names must be a non-empty list of distance settings")
    all_specs = [selection_spec(n) for n in names]
    aggs = list(aggregations)
    for a in aggs:
        if a not in AGGREGATIONS:
            raise SelectionError(f"unknown aggregation {a!r}; use one of {list(AGGREGATIONS)}")
    if not isinstance(knn_k, (int, np.integer)) or isinstance(knn_k, bool) or knn_k < 1:
        raise SelectionError(f"knn_k must be an integer >= 1, got {knn_k!r}")
    if not isinstance(n_candidates, (int, np.integer)) or isinstance(n_candidates, bool) or n_candidates < 1:
        raise SelectionError(f"n_candidates (candidates per study) must be an integer >= 1, got {n_candidates!r}")
    return all_specs, aggs


def _check_grid(cand_sets: Mapping[str, Sequence[np.ndarray]], n_candidates: int,
                study_ids: Sequence[str] | None) -> tuple[list[str], int, int, list[str]]:
    """``(sections, S*K, S, study ids)`` of the candidate sets; refuses sections of unequal or wrong length."""
    sections = list(cand_sets)
    if not sections:
        raise SelectionError("cand_sets has no section")
    n_flat = {len(cand_sets[s]) for s in sections}
    if len(n_flat) != 1 or next(iter(n_flat)) % n_candidates or next(iter(n_flat)) == 0:
        raise SelectionError(f"every section needs the same number of candidate sets, a positive multiple of "
                             f"n_candidates = {n_candidates}; got {sorted(n_flat)}")
    SK = n_flat.pop()
    S = SK // n_candidates
    ids = [str(i) for i in (study_ids if study_ids is not None else range(S))]
    if len(ids) != S:
        raise SelectionError(f"{len(ids)} study ids for {S} studies")
    return sections, SK, S, ids


def _section_bank(bank_sec: Any, sec: str) -> tuple[PackedSets, np.ndarray]:
    """The bank reports that hold section ``sec``, packed, and their indices in the whole bank."""
    bp_all = pack_sets(bank_sec, f"bank[{sec}]")
    keep = np.flatnonzero(bp_all.sizes > 0)
    if not len(keep):
        raise SelectionError(f"no bank report has a non-empty {sec} section; cannot score {sec}")
    bp = bp_all if len(keep) == bp_all.n_sets else pack_sets(bp_all.subset(keep), f"bank[{sec}]")
    return bp, keep


def _distinct(cp: PackedSets, nonempty: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, reps, inv)``: the non-empty candidate rows, one representative row per class of identical
    non-empty sets (the engine dedups within a call; classes across chunks are merged here so that a repeated
    report is computed once overall), and each non-empty row's class."""
    cls = cp.classes()
    rows = np.flatnonzero(nonempty)
    reps, inv = (np.unique(cls[rows], return_index=True, return_inverse=True)[1:] if len(rows)
                 else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    return rows, rows[reps], inv


def _chunked_scores(sw: _Sweep, sec: str, cp: PackedSets, bp: PackedSets, reps: np.ndarray, kk: int,
                    vals: np.ndarray) -> None:
    """Eq. (8) of the chunked settings for the representatives ``reps`` into ``vals``, in memory-bounded chunks;
    a chunk is split further (for progress lines) only while it keeps >= 2e6 pairs, since every engine call
    re-packs its candidates."""
    N = bp.n_sets
    per = max(1, N * len(sw.chunked))
    step = max(1, min(_MAX_ENTRIES // per, max(-(-len(reps) // 10), -(-_MIN_CHUNK_PAIRS // per))))
    next_pct = sw.progress_every
    t0 = time.perf_counter()
    for c0 in range(0, len(reps), step) if sw.chunked else ():
        sub = cp.subset(reps[c0:c0 + step])
        res = pairwise_distances_many(sub, bp, sw.chunked, device=sw.device, on_nonconvergence=sw.engine_mode,
                                      return_converged=True)
        for spec in sw.chunked:
            D, ok = res[spec.name]
            sw.meta["nonconverged"][spec.name] += int((~ok).sum())
            for g_i, how in enumerate(sw.aggs):
                vals[sw.row_of[spec.name], g_i, c0:c0 + step] = aggregate(D, how, kk)
        done = min(len(reps), c0 + step)
        pct = 100.0 * done / len(reps)
        if sw.progress is not None and (pct >= next_pct or done == len(reps)):
            el = time.perf_counter() - t0
            sw.progress(f"{sec}: {pct:5.1f}% ({done}/{len(reps)} distinct candidate sets x {N} bank reports x "
                        f"{len(sw.chunked)} settings, {el:.1f} s)")
            while next_pct <= pct:
                next_pct += sw.progress_every


def _whole_scores(sw: _Sweep, sec: str, cp: PackedSets, bp: PackedSets, reps: np.ndarray, keep: np.ndarray,
                  kk: int, vals: np.ndarray, pres_sec: tuple[list, list]) -> None:
    """Eq. (8) of the negation-aware settings for all representatives ``reps`` in one engine call, into ``vals``."""
    cand_pres, bank_pres = pres_sec
    t1 = time.perf_counter()
    res = pairwise_distances_many(cp.subset(reps), bp, sw.whole, on_nonconvergence=sw.on_nonconvergence,
                                  presence=([cand_pres[r] for r in reps], [bank_pres[t] for t in keep]))
    for spec in sw.whole:
        for g_i, how in enumerate(sw.aggs):
            vals[sw.row_of[spec.name], g_i] = aggregate(res[spec.name], how, kk)
    if sw.progress is not None:
        sw.progress(f"{sec}: negation-aware {[sp.name for sp in sw.whole]}: {len(reps)} distinct candidate "
                    f"sets x {bp.n_sets} bank reports, {time.perf_counter() - t1:.1f} s")


def _score_section(sw: _Sweep, sec: str, cand_list: Sequence[np.ndarray], bank_sec: Any,
                   pres_sec: tuple[list, list] | None) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. (7)-(8) of one section: ``(scores (settings, aggregations, S*K), non-empty candidates (S*K,))``;
    an empty candidate section scores the setting's maximum against each bank report, aggregated."""
    bp, keep = _section_bank(bank_sec, sec)
    N = bp.n_sets
    kk = min(int(sw.knn_k), N)
    sw.meta["n_bank"][sec], sw.meta["knn_k"][sec] = N, kk
    cp = pack_sets(list(cand_list), f"candidates[{sec}]", dim=bp.dim)
    nonempty = cp.sizes > 0
    rows, reps, inv = _distinct(cp, nonempty)
    vals = np.empty((len(sw.specs), len(sw.aggs), len(reps)))
    _chunked_scores(sw, sec, cp, bp, reps, kk, vals)
    if sw.whole and len(reps):
        _whole_scores(sw, sec, cp, bp, reps, keep, kk, vals, pres_sec)
    SK = len(cand_list)
    sw.meta["computed_pairs"] += len(reps) * N * len(sw.specs)
    sw.meta["pairs"] += SK * N * len(sw.specs)
    full = np.empty((len(sw.specs), len(sw.aggs), SK))
    full[..., rows] = vals[..., inv.reshape(-1)] if len(rows) else 0.0
    for a_i, spec in enumerate(sw.specs):
        for g_i, how in enumerate(sw.aggs):
            full[a_i, g_i, ~nonempty] = aggregate(_worst(spec, bp.sizes)[None], how, kk)[0]
    return full, nonempty


def bank_distances(cand_sets: Mapping[str, Sequence[np.ndarray]], bank: Any, names: Sequence[str], *,
                   n_candidates: int, study_ids: Sequence[str] | None = None,
                   aggregations: Sequence[str] = AGGREGATIONS, knn_k: int = DEFAULT_KNN_K, device: str = "cpu",
                   on_nonconvergence: str = "warn", progress: Callable[[str], None] | None = print,
                   progress_every: float = 10.0, presence: Mapping[str, Sequence[np.ndarray]] | None = None,
                   bank_presence: Mapping[str, Any] | None = None) -> SelectionScores:
    """Eqs. (7)-(9) for every candidate, setting and aggregation: one pass of the batched engine.

    Negation-aware settings (``chamfer_neg``, ``hung_nn_neg``, ...; ours, :mod:`sdrlib.distances.negation`)
    also need each sentence's finding presence: ``presence`` for the candidates (:func:`candidate_presence`)
    and, for a bank given as a mapping, ``bank_presence`` (a ReportBank is labelled from its own sentence
    texts, :func:`bank_presence_of`); both go to the one distance API as ``presence=``. The engine
    deduplicates these settings on (vector, presence), so they are scored on all distinct candidate sets of a
    section in one call (chunking would change their cosine block); the other settings go through
    memory-bounded chunks that share one cosine product.

    Parameters
    ----------
    cand_sets : mapping section -> sequence of S*K arrays, shape (n, d)
        Candidate j of study i at position ``i * n_candidates + j``; ``(0, d)`` = empty section.
    bank : ReportBank or mapping section -> PackedSets / (matrix, offsets) / list of arrays
        N bank reports per section; empty bank sets are left out of that section's aggregation.
    names : sequence of str
        Distance settings (:func:`sdrlib.distances.get`).
    n_candidates : int
        Candidates per study (the paper's K).
    knn_k : int
        k of the knn aggregation; clipped to the number of bank reports holding the section.
    progress : callable or None
        Receives a plain progress line about every ``progress_every`` percent of each section.
    presence : mapping section -> sequence of S*K arrays, shape (n, 14), optional
        Per-sentence presence of every candidate (rows as in ``cand_sets``); needed only by
        negation-aware settings (:class:`SelectionError` when missing).
    bank_presence : mapping section -> (S_bank, 14) array or list of (n_t, 14) arrays, optional
        Presence of the bank's sentences when ``bank`` is a mapping (a ReportBank labels its own); rows
        as the bank section's sentences (a PackedSets keeps each set's sentence order).

    Returns
    -------
    SelectionScores
    """
    all_specs, aggs = _check_sweep(names, aggregations, knn_k, n_candidates, on_nonconvergence)
    sections, SK, S, ids = _check_grid(cand_sets, n_candidates, study_ids)
    banks = _bank_sections(bank, sections)
    chunked = [sp for sp in all_specs if not sp.needs_presence]
    whole = [sp for sp in all_specs if sp.needs_presence]
    pres = _presence_inputs([sp.name for sp in whole], cand_sets, SK, bank, banks, presence, bank_presence) \
        if whole else {}
    meta: dict[str, Any] = {"n_bank": {}, "knn_k": {}, "pairs": 0, "computed_pairs": 0,
                            "nonconverged": {s.name: 0 for s in all_specs}}
    sw = _Sweep(all_specs, chunked, whole, aggs, knn_k, device, "ignore" if on_nonconvergence == "warn"
                else on_nonconvergence, on_nonconvergence, progress, progress_every, meta,
                {sp.name: i for i, sp in enumerate(all_specs)})
    out = np.empty((len(all_specs), len(aggs), len(sections), S, n_candidates))
    empty_any = np.ones(SK, dtype=bool)
    t_start = time.perf_counter()
    for si, sec in enumerate(sections):
        full, nonempty = _score_section(sw, sec, cand_sets[sec], banks[sec], pres.get(sec))
        empty_any &= ~nonempty
        out[:, :, si] = full.reshape(len(all_specs), len(aggs), S, n_candidates)
    meta["seconds"] = time.perf_counter() - t_start
    meta["pairs_per_second"] = meta["pairs"] / max(meta["seconds"], 1e-9)
    unparseable = empty_any.reshape(S, n_candidates)
    meta["unparseable"] = int(unparseable.sum())
    if on_nonconvergence == "warn" and any(meta["nonconverged"].values()):
        bad = {n: c for n, c in meta["nonconverged"].items() if c}
        warnings.warn(f"solver stopped at its iteration cap on {bad} computed pairs (values used as returned)",
                      ConvergenceWarning, stacklevel=2)
    return SelectionScores(ids, int(n_candidates), [sp.name for sp in all_specs], aggs, sections, out, unparseable,
                           meta)


# --------------------------------------------------------------------------- presence (negation-aware settings)
def candidate_presence(candidates: Sequence[Sequence[Any]], *, candidate_format: str = "template",
                       sections: Sequence[str] = ("findings", "impression")) -> dict[str, list[np.ndarray]]:
    """Per-sentence finding presence of every candidate (offline labeler, cached per sentence):
    ``{section: S*K arrays (n, 14) int8}``, study-major, rows as in :func:`candidate_sets`.

    Needed only by negation-aware settings (:mod:`sdrlib.distances.negation`). An unparseable
    candidate or an empty section gives a ``(0, 14)`` array.
    """
    _grid(candidates)
    parsed = [parse_candidate(c, candidate_format) for row in candidates for c in row]
    return {sec: section_presence([getattr(p, sec) if p is not None else "" for p in parsed]) for sec in sections}


def bank_presence_of(bank: Any, sections: Sequence[str] = ("findings", "impression")) -> dict[str, np.ndarray]:
    """Presence of a :class:`~sdrlib.embedding.ReportBank`'s sentences from its stored texts:
    ``{section: (S_section, 14) int8}``, rows as ``bank.matrix(section)``."""
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


def _set_sizes(packed: Any) -> np.ndarray:
    """Sentences per set of a bank section given as PackedSets, (matrix, offsets) or a list of arrays."""
    if isinstance(packed, PackedSets):
        return packed.sizes
    if isinstance(packed, tuple) and len(packed) == 2:
        return np.diff(np.asarray(packed[1]))
    return np.array([len(x) for x in packed], dtype=np.int64)


def _presence_inputs(names: Sequence[str], cand_sets: Mapping[str, Sequence[np.ndarray]], SK: int, bank: Any,
                     banks: Mapping[str, Any], presence: Mapping[str, Sequence[np.ndarray]] | None,
                     bank_presence: Mapping[str, Any] | None) -> dict[str, tuple[list, list]]:
    """Per section: (candidate presence, S*K arrays; bank presence, one array per bank report) for the
    negation-aware settings ``names``; clear errors when presence is missing or misaligned."""
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
        sizes = _set_sizes(banks[sec])
        bp = bank_presence[sec]
        if isinstance(bp, np.ndarray) and bp.ndim == 2:
            if bp.shape[0] != sizes.sum():
                raise SelectionError(f"bank_presence[{sec!r}] has {bp.shape[0]} rows for {sizes.sum()} bank sentences")
            off = np.concatenate([[0], np.cumsum(sizes)])
            bp = [bp[off[t]:off[t + 1]] for t in range(len(sizes))]
        bp = list(bp)
        if len(bp) != len(sizes):
            raise SelectionError(f"bank_presence[{sec!r}] has {len(bp)} arrays for {len(sizes)} bank reports")
        out[sec] = (cp, bp)
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
    check_encoder(bank, embedder)
    S, K = _grid(candidates)
    sets = candidate_sets(candidates, embedder, candidate_format=candidate_format)
    if any(get(n).needs_presence for n in names) and kwargs.get("presence") is None:
        kwargs["presence"] = candidate_presence(candidates, candidate_format=candidate_format)
    return bank_distances(sets, bank, names, n_candidates=K, study_ids=study_ids, **kwargs)
