"""One split's best-of-K selection from sampled candidates to the per-method metric table (notebook 05).

:func:`evaluate_split` runs, for every policy's candidates of one split (test or validation studies): the
sentence sets (:func:`~sdrlib.selection.scoring.candidate_sets`), finding presence when a negation-aware setting
needs it, the bank distances of every setting x aggregation (eqs. 7-9, :func:`~sdrlib.selection.scoring.bank_distances`),
MBR consensus (:func:`~sdrlib.selection.mbr.mbr_scores`), the metric suite on every candidate
(:func:`~sdrlib.selection.evaluation.score_candidate_metrics`) and every method's value
(:func:`~sdrlib.selection.evaluation.evaluate_methods`) per section. Notebook 05 calls it once for the test
studies and once for the validation studies, so both splits go through the same code.

:func:`normal_flags` / :func:`normal_share` measure how often a selection picks a report the offline labeler
reads as normal (no pathology positive or uncertain: stratum ``no_finding``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.clinical.labeler import label_report
from sdrlib.data.records import stratum
from sdrlib.distances import get as get_distance
from sdrlib.selection.errors import SelectionError
from sdrlib.selection.evaluation import evaluate_methods, method_choices, pick_metrics, score_candidate_metrics
from sdrlib.selection.mbr import mbr_scores
from sdrlib.selection.scoring import (AGGREGATIONS, DEFAULT_KNN_K, SelectionScores, _grid, bank_distances,
                                      bank_presence_of, candidate_presence, candidate_sets, parse_candidate)

__all__ = ["SplitSelection", "evaluate_split", "normal_flags", "normal_share", "normal_share_table", "headline_view",
           "policy_grid", "comparison_rows"]

SECTIONS = ("findings", "impression")


@dataclass
class SplitSelection:
    """Everything :func:`evaluate_split` computed for one split, per policy (keys: policy labels).

    Attributes
    ----------
    records : the S studies (test or validation records), in candidate order
    candidates : policy -> S x K candidate texts
    formats : policy -> ``"template"`` (local policies) or ``"report"`` (API models)
    sets : policy -> section -> S*K arrays ``(n, d)`` (study-major)
    presence : policy -> section -> S*K arrays ``(n, 14)``, or None when no setting needs presence
    scores : policy -> :class:`~sdrlib.selection.scoring.SelectionScores` (bank distances)
    mbr : policy -> setting -> ``(S, K)`` MBR consensus scores
    metrics : policy -> :class:`~sdrlib.metrics.suite.ReportScores` over the S*K candidates
    ev : :func:`~sdrlib.selection.evaluation.evaluate_methods` rows of every policy and section, with ``policy``
        and ``section`` columns (policies in input order, Findings then Impression)
    seconds : wall time of each phase: ``distances``, ``mbr``, ``metrics``
    """

    records: list
    candidates: dict[str, list]
    formats: dict[str, str]
    sets: dict[str, dict]
    presence: dict[str, dict | None]
    scores: dict[str, SelectionScores]
    mbr: dict[str, dict[str, np.ndarray]]
    metrics: dict[str, Any]
    ev: pd.DataFrame
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def n_candidates(self) -> int:
        """Candidates per study (K)."""
        return next(iter(self.scores.values())).n_candidates

    def choices(self, policy: str) -> dict[str, np.ndarray]:
        """``{method: (S,) chosen candidate}`` of one policy: first, every bank method, every MBR setting."""
        return method_choices(self.scores[policy], self.mbr[policy])

    def strata(self, policy: str) -> np.ndarray | None:
        """``(S,)`` ground-truth stratum per study (from the metric suite), or None."""
        st = self.metrics[policy].strata
        return None if st is None else np.asarray(st)[:: self.n_candidates]

    def pairs(self) -> tuple[int, int]:
        """(nominal candidate x bank pairs, pairs computed after deduplication), summed over policies."""
        return (sum(s.meta["pairs"] for s in self.scores.values()),
                sum(s.meta["computed_pairs"] for s in self.scores.values()))


def evaluate_split(candidates: Mapping[str, Sequence[Sequence[Any]]], records: Sequence[Any], embedder: Any,
                   bank: Any, names: Sequence[str], *, n_candidates: int, formats: Mapping[str, str] | None = None,
                   aggregations: Sequence[str] = AGGREGATIONS, knn_k: int = DEFAULT_KNN_K, device: str = "cpu",
                   bank_presence: Mapping[str, Any] | None = None, metric_kwargs: Mapping[str, Any] | None = None,
                   log: Callable[[str], None] | None = None) -> SplitSelection:
    """Bank distances, MBR, candidate metrics and every method's value for one split.

    Parameters
    ----------
    candidates : mapping policy -> S x K candidate texts (one row per record, K per row)
    records : the S studies the candidates were sampled for (references, ids, labels for the strata)
    embedder, bank : sentence embedder and the bank (:class:`~sdrlib.embedding.ReportBank` or mapping)
    names : distance settings; negation-aware ones get presence (``bank_presence`` computed from a ReportBank
        when not given)
    n_candidates : candidates per study (K)
    formats : policy -> candidate format, default ``"template"`` for every policy
    metric_kwargs : keyword arguments of :func:`sdrlib.metrics.suite.score_reports` (``metric_kwargs(cfg)``)
    log : receives one line per policy after its bank distances (pairs, seconds, unparseable candidates)

    Phases run over all policies in turn (distances, then MBR, then metrics), as notebook 05 always ran them.
    Raises :class:`SelectionError` when a policy's candidates are not ``len(records)`` rows of K.
    """
    formats = {p: (formats or {}).get(p, "template") for p in candidates}
    for p, cs in candidates.items():
        S, K = _grid(cs)
        if S != len(records) or K != n_candidates:
            raise SelectionError(f"policy {p}: candidates are {S} x {K}, expected {len(records)} x {n_candidates}")
    needs_presence = any(get_distance(n).needs_presence for n in names)
    if needs_presence and bank_presence is None:
        bank_presence = bank_presence_of(bank)
    ids = [r.study_id for r in records]
    sets, presence, scores, seconds = {}, {}, {}, {}
    t0 = time.perf_counter()
    for p, cs in candidates.items():
        t1 = time.perf_counter()
        sets[p] = candidate_sets(cs, embedder, candidate_format=formats[p])
        presence[p] = candidate_presence(cs, candidate_format=formats[p]) if needs_presence else None
        scores[p] = bank_distances(sets[p], bank, names, n_candidates=n_candidates, study_ids=ids,
                                   aggregations=aggregations, knn_k=knn_k, device=device, presence=presence[p],
                                   bank_presence=bank_presence if needs_presence else None, progress=None)
        if log:
            log(f"{p:10s} {scores[p].meta['pairs']:>12,} candidate x bank pairs, {time.perf_counter() - t1:5.1f} s, "
                f"{scores[p].meta['unparseable']} unparseable candidates")
    seconds["distances"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mbr = {p: mbr_scores(sets[p], names, n_candidates=n_candidates, device=device, presence=presence[p])
           for p in candidates}
    seconds["mbr"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mscores = {p: score_candidate_metrics(cs, records, candidate_format=formats[p], **dict(metric_kwargs or {}))
               for p, cs in candidates.items()}
    seconds["metrics"] = time.perf_counter() - t0
    out = SplitSelection(list(records), {p: list(cs) for p, cs in candidates.items()}, formats, sets, presence,
                         scores, mbr, mscores, pd.DataFrame(), seconds)
    evs = []
    for p in candidates:
        choices, strata = out.choices(p), out.strata(p)
        for section in SECTIONS:
            ev = evaluate_methods(choices, pick_metrics(mscores[p], section), n_candidates, strata=strata)
            evs.append(ev.assign(policy=p, section=section))
    out.ev = pd.concat(evs, ignore_index=True)
    return out


# --------------------------------------------------------------------------- how often a pick is a normal report
def normal_flags(candidates: Sequence[Sequence[Any]], *, candidate_format: str = "template") -> np.ndarray:
    """``(S, K)`` float: 1.0 where the offline labeler (:func:`sdrlib.clinical.labeler.label_report` on Findings
    and Impression together) reads the candidate as normal (stratum ``no_finding``: no pathology positive or
    uncertain), 0.0 where it finds one, NaN for an unparseable candidate.

    Example: ``normal_flags([["<think> Lungs are clear. </think> <answer> Normal. </answer>",
    "<think> Small left effusion. </think> <answer> Effusion. </answer>"]])`` -> ``[[1.0, 0.0]]``.
    """
    S, K = _grid(candidates)
    out = np.full((S, K), np.nan)
    for i, row in enumerate(candidates):
        for j, c in enumerate(row):
            p = parse_candidate(c, candidate_format)
            if p is not None:
                text = "\n".join(t for t in (p.findings, p.impression) if t)
                out[i, j] = float(stratum(label_report(text)) == "no_finding")
    return out


def normal_share(flags: np.ndarray, choices: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Share of studies whose chosen candidate is normal, per method, plus ``random`` (the exact expectation of a
    uniform pick: the mean over each study's parseable candidates, averaged over studies).

    ``flags``: :func:`normal_flags` ``(S, K)``; ``choices``: method -> ``(S,)`` candidate index. Studies whose
    chosen candidate (or, for random, every candidate) is unparseable are left out of that share.
    Example: flags ``[[1, 0], [0, 0]]``, choices ``{"a": [0, 0]}`` -> ``{"random": 0.25, "a": 0.5}``.
    """
    f = np.asarray(flags, dtype=np.float64)
    S = f.shape[0]
    ok = np.isfinite(f)
    with np.errstate(invalid="ignore"):
        per_study = np.where(ok.any(axis=1), np.where(ok, f, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1), np.nan)
    out = {"random": float(np.nanmean(per_study)) if np.isfinite(per_study).any() else float("nan")}
    for m, c in choices.items():
        v = f[np.arange(S), np.asarray(c, dtype=np.int64)]
        out[m] = float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
    return out


# --------------------------------------------------------------------------- views and comparisons of notebook 05
def headline_view(table: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Policy x metric view of a :func:`~sdrlib.selection.evaluation.best_vs_random` table: for each of ``metrics``
    the picked method (``best_method``) and its % improvement over random rounded to 0.1 (``improvement_pct``);
    policies in the table's order. Example: columns ``("best_method", "BS-F1"), ("improvement_pct", "BS-F1")``."""
    t = table[table.metric.isin(list(metrics))].assign(improvement_pct=lambda d: d.improvement_pct.round(1))
    return t.pivot(index="policy", columns="metric", values=["best_method", "improvement_pct"]).loc[
        list(dict.fromkeys(t.policy))]


def policy_grid(ev: pd.DataFrame, metric: str, *, aggregation: str = "avg", section: str = "findings",
                stratum: str = "all", policies: Sequence[str] | None = None) -> pd.DataFrame:
    """Distance x policy table of % improvement over random for one metric and one aggregation (paper Figs. 4-5).

    ``ev``: :func:`evaluate_split`'s ``ev`` (``policy``, ``section`` columns). Rows: the distance settings of the
    ``<distance>+<aggregation>`` methods in sweep order; columns: ``policies`` (default: the order in ``ev``).
    Raises :class:`SelectionError` when no such method is in ``ev``."""
    suffix = f"+{aggregation}"
    d = ev[(ev.section == section) & (ev.stratum == stratum) & (ev.metric == metric)
           & ev.method.str.endswith(suffix) & ~ev.method.str.startswith("mbr:")]
    if d.empty:
        raise SelectionError(f"policy_grid: no '<distance>{suffix}' rows for {metric} ({section}, {stratum})")
    d = d.assign(distance=d.method.str[: -len(suffix)])
    grid = d.pivot(index="distance", columns="policy", values="improvement_pct")
    cols = list(policies) if policies is not None else list(dict.fromkeys(d.policy))
    return grid.loc[list(dict.fromkeys(d.distance)), cols]


def comparison_rows(split: SplitSelection, best_method: str, *,
                    metrics: Sequence[str] = ("BS-F1", "RG-F1", "CXB-14", "clin-F1 (sample)")
                    ) -> Iterator[tuple[dict, Any, Any, dict]]:
    """The comparisons of notebook 05's paired bootstrap, as :func:`sdrlib.experiments.tables.paired_table` takes
    them: per policy, section and metric (those of ``metrics`` the scores have), ``best_method``
    (``<distance>+<aggregation>``) against ``random`` (the exact expectation over the K candidates) and against
    ``mbr:<distance>``. Yields ``(keys, a, b, {})`` with ``keys = {policy, section, metric, A, B}`` and ``a``, ``b``
    :class:`~sdrlib.metrics.base.MetricResult` over the S studies (the same studies, so the bootstrap is paired)."""
    from sdrlib.selection.evaluation import selected_result

    dist = best_method.rsplit("+", 1)[0]
    n_candidates = split.n_candidates
    for p in split.candidates:
        ch = split.choices(p)
        for section in SECTIONS:
            for m, r in pick_metrics(split.metrics[p], section).items():
                if m not in metrics:
                    continue
                a = selected_result(r, ch[best_method], n_candidates)
                for other, b in (("random", selected_result(r, "random", n_candidates)),
                                 (f"mbr:{dist}", selected_result(r, ch[f"mbr:{dist}"], n_candidates))):
                    yield {"policy": p, "section": section, "metric": m, "A": best_method, "B": other}, a, b, {}


def normal_share_table(split: SplitSelection, methods: Sequence[str]) -> pd.DataFrame:
    """Per policy, the share of normal reads (:func:`normal_share`) for the ``references`` (ground-truth labels of
    the split's records), ``random`` and each of ``methods`` the policy has (e.g. the best bank method, its other
    aggregations, its MBR). Columns ``policy, method, normal_share, n`` (n: studies with a parseable pick)."""
    ref = np.array([float(stratum(r.labels) == "no_finding") if getattr(r, "labels", None) else np.nan
                    for r in split.records])
    rows = []
    for p, cs in split.candidates.items():
        flags = normal_flags(cs, candidate_format=split.formats[p])
        ch = {m: c for m, c in split.choices(p).items() if m in methods}
        share = normal_share(flags, ch)
        n_ok = {m: int(np.isfinite(flags[np.arange(len(c)), np.asarray(c)]).sum()) for m, c in ch.items()}
        n_ok["random"] = int(np.isfinite(flags).any(axis=1).sum())
        if np.isfinite(ref).any():
            rows.append({"policy": p, "method": "references", "normal_share": float(np.nanmean(ref)),
                         "n": int(np.isfinite(ref).sum())})
        rows += [{"policy": p, "method": m, "normal_share": v, "n": n_ok[m]} for m, v in share.items()]
    return pd.DataFrame(rows, columns=["policy", "method", "normal_share", "n"])
