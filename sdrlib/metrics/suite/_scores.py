"""What the suite returns: :class:`ReportScores` (every metric of every section, per sample and per corpus) and
its tables (tidy, summary, strata, per observation), :func:`pool_scores` (several sampled reports per study as one
system) and :func:`write_results` that saves them.

The tidy table's columns and levels are described in :mod:`sdrlib.metrics.suite`'s docstring. Leaves out
scoring (:mod:`._scoring`) and comparisons (:mod:`._compare`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.metrics.base import MetricResult
from sdrlib.metrics.clinical import STRATA
from sdrlib.results import save_table

__all__ = ["ISSUE_KINDS", "ReportScores", "pool_scores", "write_results"]

ISSUE_KINDS = ("invalid_template", "empty_prediction", "missing_prediction_section",
               "missing_reference_section", "non_ascii_prediction", "non_ascii_reference")


@dataclass
class ReportScores:
    """Everything :func:`score_reports` computed; ``to_frame()`` gives the tidy table."""

    sample_ids: list[str]
    sections: tuple[str, ...]
    results: dict[str, list[MetricResult]]
    defined: dict[str, np.ndarray]
    strata: np.ndarray | None
    issues: pd.DataFrame
    unavailable: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    def issue_counts(self) -> dict[str, int]:
        """Issue kind -> number of (sample, section) occurrences; every kind listed, zeros included."""
        vc = self.issues["issue"].value_counts()
        return {k: int(vc.get(k, 0)) for k in ISSUE_KINDS}

    def result(self, section: str, metric: str) -> MetricResult:
        """The :class:`MetricResult` of one section and metric name."""
        for r in self.results[section]:
            if r.name == metric:
                return r
        raise KeyError(f"no metric {metric!r} in section {section!r}")

    def to_frame(self, *, strata: bool = True) -> pd.DataFrame:
        """Tidy table (module docstring). ``strata=False`` skips per-stratum corpus rows."""
        ids = np.asarray(self.sample_ids, dtype=object)
        st = self.strata if self.strata is not None else np.full(len(ids), "all", dtype=object)
        frames = []
        for sec in self.sections:
            ok = self.defined[sec]
            for r in self.results[sec]:
                if r.sample is not None:
                    frames.append(pd.DataFrame({
                        "sample_id": ids, "section": sec, "metric": r.name, "value": r.sample,
                        "backend": r.backend, "level": "sample", "stratum": st, "n": ok.astype(int)}))
                rows = [(None, sec, r.name, r.corpus, r.backend, "corpus", "all", int(ok.sum()))]
                if strata and self.strata is not None:
                    for s in STRATA:
                        w = (self.strata == s).astype(np.float64)
                        if w.sum() == 0:
                            continue
                        v = float(r.value_for(w)[0])
                        rows.append((None, sec, r.name, v, r.backend, "corpus", s, int((ok & (w > 0)).sum())))
                frames.append(pd.DataFrame(rows, columns=["sample_id", "section", "metric", "value",
                                                          "backend", "level", "stratum", "n"]))
        counts = self.issues.groupby(["section", "issue"]).size() if len(self.issues) else pd.Series(dtype=int)
        irows = [(None, sec, f"issue/{kind}", float(c), "input check", "issue", "all", int(c))
                 for (sec, kind), c in counts.items()]
        irows += [(None, "all", f"unavailable/{g}", np.nan, why, "issue", "all", 0)
                  for g, why in sorted(self.unavailable.items())]
        frames.append(pd.DataFrame(irows, columns=["sample_id", "section", "metric", "value", "backend",
                                                   "level", "stratum", "n"]))
        frames = [f for f in frames if len(f)]
        df = (pd.concat(frames, ignore_index=True) if frames else
              pd.DataFrame(columns=["sample_id", "section", "metric", "value", "backend", "level", "stratum", "n"]))
        df.attrs.update(issue_counts=self.issue_counts(), unavailable=dict(self.unavailable),
                        versions=dict(self.versions))
        return df

    def summary(self) -> pd.DataFrame:
        """Corpus values, one row per metric, one column per section (+ backend)."""
        df = self.to_frame(strata=False)
        corp = df[df.level == "corpus"]
        wide = corp.pivot_table(index=["metric", "backend"], columns="section", values="value",
                                aggfunc="first", sort=False).reset_index()
        wide.columns.name = None
        return wide[["metric", *[s for s in self.sections if s in wide.columns], "backend"]]

    def strata_table(self) -> pd.DataFrame:
        """Corpus values per ground-truth stratum: rows metric x section, columns strata (+ n)."""
        df = self.to_frame()
        corp = df[df.level == "corpus"]
        wide = corp.pivot_table(index=["section", "metric"], columns="stratum", values="value",
                                aggfunc="first", sort=False)
        cols = [c for c in ("all", *STRATA) if c in wide.columns]
        out = wide[cols].reset_index()
        out.columns.name = None
        return out

    def per_observation(self) -> pd.DataFrame:
        """Per-observation clinical F1: rows observation, columns sections."""
        rows = []
        for sec in self.sections:
            for r in self.results[sec]:
                if r.extra.get("kind") == "per_observation":
                    rows.append((r.extra["observation"], sec, r.corpus, r.name.split("@")[-1]))
        df = pd.DataFrame(rows, columns=["observation", "section", "f1", "backend"])
        if df.empty:
            return df
        out = df.pivot_table(index=["observation", "backend"], columns="section", values="f1",
                             sort=False).reset_index()
        out.columns.name = None
        return out



def _pooled(results: list[MetricResult]) -> MetricResult:
    stats = np.sum([np.asarray(r.stats, np.float64) for r in results], axis=0)
    samples = [r.sample for r in results]
    sample = None
    if all(x is not None for x in samples):
        v = np.stack([np.asarray(x, np.float64) for x in samples])
        ok = np.isfinite(v)
        n = ok.sum(axis=0)  # a study undefined in every draw stays NaN
        sample = np.where(n > 0, np.where(ok, v, 0.0).sum(axis=0) / np.maximum(n, 1), np.nan)
    r0 = results[0]
    corpus = float(np.asarray(r0.reducer(stats.sum(axis=0, keepdims=True)))[0])
    return MetricResult(r0.name, r0.backend, sample, corpus, stats, r0.reducer, r0.higher_is_better, dict(r0.extra))


def pool_scores(draws: list[ReportScores]) -> ReportScores:
    """Several sampled reports per study (draws of one policy, each scored by :func:`score_reports` on the same
    studies) as one system: each metric's per-study statistics summed over draws, so its corpus value is the value
    over every draw's reports pooled (a mean over all of them; a label F1 from all their counts) and a bootstrap over
    studies (:meth:`MetricResult.value_for`) resamples a study with all its draws. ``sample``: the mean over the
    draws where defined; ``defined``: in every draw; ``issues``: every draw's, with a ``draw`` column; strata and
    versions: the first draw's (they depend on the references and the setup, not the reports).

    One draw is returned as it is. :class:`ValueError` when ``draws`` is empty or the draws differ in studies,
    sections or metrics. Example: ``pool_scores([score_reports(g, refs) for g in (draw0, draw1)])``."""
    if not draws:
        raise ValueError("pool_scores: no draws (a list of ReportScores of the same studies)")
    first = draws[0]
    if len(draws) == 1:
        return first
    shape = [(list(d.sample_ids), d.sections, {s: [r.name for r in d.results[s]] for s in d.sections})
             for d in draws]
    if any(x != shape[0] for x in shape[1:]):
        raise ValueError("pool_scores: the draws differ in studies, sections or metrics; score each draw of one "
                         "policy on the same studies with the same options")
    results = {sec: [_pooled([d.results[sec][i] for d in draws]) for i in range(len(first.results[sec]))]
               for sec in first.sections}
    defined = {sec: np.logical_and.reduce([np.asarray(d.defined[sec], bool) for d in draws])
               for sec in first.sections}
    issues = pd.concat([d.issues.assign(draw=k) for k, d in enumerate(draws)], ignore_index=True)
    unavailable = {k: v for d in draws for k, v in d.unavailable.items()}
    return ReportScores(list(first.sample_ids), first.sections, results, defined, first.strata, issues, unavailable,
                        dict(first.versions))


def write_results(scores: ReportScores, name: str, cfg: Any) -> list[Any]:
    """Write ``<name>`` (tidy), ``<name>_summary``, ``<name>_strata``, ``<name>_issues`` to results/.

    Uses :func:`sdrlib.results.save_table` (CSV + Markdown + provenance JSON);
    backends are a column of each table, library versions go to the provenance.
    """
    extra = {f"v_{k}": v for k, v in scores.versions.items() if v != "absent"}
    extra["unavailable"] = ",".join(sorted(scores.unavailable)) or "none"
    paths = []
    paths += save_table(scores.to_frame(), name, cfg, **extra)
    paths += save_table(scores.summary(), f"{name}_summary", cfg, **extra)
    paths += save_table(scores.strata_table(), f"{name}_strata", cfg, **extra)
    counts = pd.DataFrame(list(scores.issue_counts().items()), columns=["issue", "count"])
    paths += save_table(counts, f"{name}_issues", cfg, **extra)
    return paths
