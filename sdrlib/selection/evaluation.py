"""Evaluation of best-of-K selection: every method's metric values, baselines, ceilings and the paper's tables.

Baselines and ceilings (:func:`evaluate_methods`): random selection as its exact expectation over
the K candidates (every candidate weighted 1/K), the first candidate, the oracle (per metric, the
candidate with the best per-sample score against the reference) and MBR consensus
(:func:`sdrlib.selection.mbr.mbr_scores`: the candidate with the smallest mean set distance to the other
K - 1). Metric values of a selection are corpus values of the chosen candidates' per-sample statistics
(:class:`sdrlib.metrics.base.MetricResult`), so corpus metrics (macro F1, corpus BLEU) are handled
exactly like means; ``oracle_share_pct`` says where a method lands between random (0 %) and oracle
(100 %). Tables 3 / 23 (:func:`best_vs_random`) and 25-28 (:func:`improvement_summary`); the numbers of
Fig. 2b (:func:`mean_vectors`, :func:`pca_2d`; the figure itself is drawn in notebook 05).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.metrics import paper_names as _paper_names
from sdrlib.metrics.base import MetricResult, mean_result
from sdrlib.metrics.suite import ReportScores, score_reports
from sdrlib.selection.errors import SelectionError
from sdrlib.selection.scoring import SelectionScores, _grid, argmin_first

__all__ = [
    "method_choices", "selected_result", "evaluate_methods", "study_values", "best_vs_random", "best_picked_on_val",
    "improvement_summary",
    "HEADLINE_METRICS", "score_candidate_metrics", "pick_metrics", "not_computed", "mean_vectors", "pca_2d",
]


def method_choices(sel: SelectionScores | None = None, mbr: Mapping[str, np.ndarray] | None = None, *,
                   n_studies: int | None = None, n_candidates: int | None = None) -> dict[str, np.ndarray]:
    """Every selection method as ``{label: (S,) candidate index}`` (``n_candidates``, K, is accepted and unused).

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


def selected_result(r, choice: "np.ndarray | str", n_candidates: int) -> MetricResult:
    """The metric over S studies for one selection: a :class:`MetricResult` of S rows.

    ``choice``: ``(S,)`` candidate indices, or ``"random"`` (each candidate weighted 1/K: the exact
    expectation of a uniformly random pick for mean metrics; for ratio metrics such as macro F1,
    the value of the expected counts); ``n_candidates``: candidates per study (K), ``r`` holding S*K rows. Usable with :func:`sdrlib.metrics.significance.paired_bootstrap`.
    """
    n = r.stats.shape[0]
    if n % n_candidates:
        raise SelectionError(f"{r.name}: {n} samples is not a multiple of n_candidates = {n_candidates}")
    S = n // n_candidates
    st = r.stats.reshape(S, n_candidates, -1)
    samp = None if r.sample is None else np.asarray(r.sample, dtype=np.float64).reshape(S, n_candidates)
    if isinstance(choice, str):
        if choice != "random":
            raise SelectionError(f"choice must be candidate indices or 'random', got {choice!r}")
        stats = st.mean(axis=1)
        sample = None if samp is None else _nanmean_rows(samp)
    else:
        c = np.asarray(choice, dtype=np.int64)
        if c.shape != (S,) or (len(c) and (c.min() < 0 or c.max() >= n_candidates)):
            raise SelectionError(f"{r.name}: choice must be {S} indices in [0, {n_candidates})")
        stats = st[np.arange(S), c]
        sample = None if samp is None else samp[np.arange(S), c]
    corpus = float(np.asarray(r.reducer(stats.sum(axis=0, keepdims=True)))[0])
    return MetricResult(r.name, r.backend, sample, corpus, stats, r.reducer, r.higher_is_better, dict(r.extra))


def _nanmean_rows(v: np.ndarray) -> np.ndarray:
    ok = np.isfinite(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok.any(axis=1), np.where(ok, v, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1), np.nan)


def evaluate_methods(choices: Mapping[str, np.ndarray], metrics: Mapping[str, Any], n_candidates: int, *,
                     strata: Sequence[str] | None = None) -> pd.DataFrame:
    """Corpus value of every method on every metric, with random, oracle and the relative position.

    Parameters
    ----------
    choices : mapping label -> (S,) candidate index (:func:`method_choices`)
    metrics : mapping metric name -> :class:`~sdrlib.metrics.base.MetricResult` over the S*K
        candidates (study-major, as scored once per candidate) or an ``(S, K)`` array of per-candidate values
    n_candidates : int
        Candidates per study (K).
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
        S = (first.stats.shape[0] if hasattr(first, "stats") else np.asarray(first).size) // n_candidates
    groups = {"all": np.ones(S, dtype=bool)}
    if strata is not None:
        st = np.asarray(strata, dtype=object)
        if st.shape != (S,):
            raise SelectionError(f"strata: {st.shape}, expected ({S},)")
        for s in dict.fromkeys(st.tolist()):
            groups[str(s)] = st == s
    rows = []
    for mname, m in metrics.items():
        r = _as_result(m, mname, S, n_candidates)
        sel = {"random": selected_result(r, "random", n_candidates)}
        orc = _oracle_choice(r, S, n_candidates)
        if orc is not None:
            sel["oracle"] = selected_result(r, orc, n_candidates)
        for lbl, c in choices.items():
            sel[lbl] = selected_result(r, c, n_candidates)
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


def best_picked_on_val(ev_val: pd.DataFrame, ev_test: pd.DataFrame, metrics: Sequence[str] | None = None, *,
                       stratum: str = "all") -> pd.DataFrame:
    """Tables 3 / 23 without selection on the test set: per policy and metric, the bank method (setting +
    aggregation) with the highest value on validation studies, reported on the test studies.

    ``ev_val`` / ``ev_test``: :func:`evaluate_methods` output with a ``policy`` column, for candidates of
    validation and of test studies. Returns ``policy, metric, picked_on_val, val, test, random,
    improvement_pct`` (the picked method on test, against test's random) and, for reference, the paper's
    pick on test (``on_test_best_method``, ``on_test_best``: optimistic, picked and scored on the same
    studies). Leaves out MBR, first and oracle (not picked). Example: a method best on val but second on
    test gives ``test < on_test_best``.
    """
    def bank(ev):
        d = ev[(ev.stratum == stratum) & ev.method.str.contains("+", regex=False) & ~ev.method.str.startswith("mbr:")]
        return d[d.metric.isin(list(metrics))] if metrics is not None else d

    v, t = bank(ev_val), bank(ev_test)
    rows = []
    for (pol, met), g in t.groupby(["policy", "metric"], sort=False):
        gv = v[(v.policy == pol) & (v.metric == met)].dropna(subset=["value"])
        if gv.empty or g.value.isna().all():
            continue
        pick = gv.loc[gv.value.idxmax()]
        on_test = g.loc[g.value.idxmax()]
        got = g[g.method == pick.method]
        tv = got.iloc[0] if len(got) else None
        rows.append({"policy": pol, "metric": met, "picked_on_val": pick.method, "val": float(pick.value),
                     "test": float(tv.value) if tv is not None else np.nan,
                     "random": float(tv.random) if tv is not None else np.nan,
                     "improvement_pct": float(tv.improvement_pct) if tv is not None else np.nan,
                     "on_test_best_method": on_test.method, "on_test_best": float(on_test.value)})
    return pd.DataFrame(rows, columns=["policy", "metric", "picked_on_val", "val", "test", "random",
                                       "improvement_pct", "on_test_best_method", "on_test_best"])


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
                            candidate_format: str = "template", **kwargs: Any) -> ReportScores:
    """Score every candidate once against its study's reference: a
    :class:`~sdrlib.metrics.suite.ReportScores` over S*K samples (study-major, ids ``<study>#<j>``).

    ``references`` are the S test records (their labels give the strata); keyword arguments go to
    :func:`sdrlib.metrics.suite.score_reports` (e.g. ``**metric_kwargs(cfg)``).
    """
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


# --------------------------------------------------------------------------- numbers of figure 2b
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
    """2-D PCA fitted on the rows of ``fit``, applied to ``fit`` and each of ``others``: the one PCA of the
    package (Fig. 2b here, the embedding figures of :mod:`sdrlib.plots`).

    ``fit`` is ``(n, d)``, each of ``others`` ``(m, d)``; returns ``[(n, 2), (m, 2), ...]``. Rows of ``fit``
    with a NaN or inf are left out of the fit (their projection is NaN); each component's sign is fixed
    (its largest loading positive), so the same rows always give the same picture; with fewer than two
    directions of spread (``d = 1``) the second coordinate is 0. Raises :class:`SelectionError` with fewer
    than two finite rows.
    """
    X = np.asarray(fit, dtype=np.float64)
    ok = np.isfinite(X).all(axis=1)
    if ok.sum() < 2:
        raise SelectionError("PCA needs at least two finite rows")
    mu = X[ok].mean(axis=0)
    _, _, vt = np.linalg.svd(X[ok] - mu, full_matrices=False)
    W = vt[:2].T
    if W.shape[1] < 2:  # fewer than two directions of spread: pad with zeros
        W = np.pad(W, ((0, 0), (0, 2 - W.shape[1])))
    W = W * np.where(W[np.abs(W).argmax(axis=0), range(2)] < 0, -1.0, 1.0)  # largest loading positive
    return [(np.asarray(Y, dtype=np.float64) - mu) @ W for Y in (X, *others)]
