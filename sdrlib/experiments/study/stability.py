"""Two checks beside the GRPO study's comparison table (:func:`sdrlib.experiments.study.runs.study_table`).

- **Resampling seeds** (:func:`verdict_stability`): the table's p-values and intervals come from a bootstrap of
  ``metrics.bootstrap`` resamples drawn with one seed (0). A verdict whose Holm-adjusted p sits near 0.05 can turn on
  which resamples were drawn; the table is computed again under each resampling seed and, per comparison, the
  verdict under each and how many seeds give the most common one are listed. A row whose verdicts differ rests on
  resampling noise (more resamples narrow it; the study profile draws 10,000).
- **SFT starts** (:func:`start_table`): every run of the study starts from one SFT policy, so the table's seed
  spread holds GRPO's training variance, not SFT's. Runs of a second SFT start (``run --sft-seed K``,
  :func:`~sdrlib.experiments.study.runs.run_study`) on a few GRPO seeds give, per configuration and metric, the
  difference between the two starts' means on the seeds both have: how far the SFT training alone moves each
  arm. A small table of its own, never mixed into the comparisons (its runs are not seeds of the study).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.experiments.study.evidence import StudyError, check_seeds
from sdrlib.experiments.study.runs import PRIMARY, SECONDARY, study_table
from sdrlib.rewards import reward_label

__all__ = ["STABILITY_COLUMNS", "START_COLUMNS", "verdict_stability", "stability_markdown", "start_table",
           "start_markdown"]

#: the columns of :func:`verdict_stability` before the per-seed ones (``p_holm_s<seed>``, ``verdict_s<seed>``)
STABILITY_COLUMNS: tuple[str, ...] = ("family", "A", "B", "metric", "diff", "verdict", "n_agree", "n_resample_seeds")
#: the columns of :func:`start_table`
START_COLUMNS: tuple[str, ...] = ("config", "metric", "sft_seed", "n_seeds", "mean_main", "mean_other",
                                  "start_diff", "seed_sd_main")

_KEY = ["family", "A", "B", "metric"]


def verdict_stability(scores: dict[tuple[str, int], Any], *, n_studies: int, resample_seeds: Sequence[int],
                      n_resamples: int = 1000, policies: dict | None = None,
                      tables: dict[int, pd.DataFrame] | None = None) -> pd.DataFrame:
    """:func:`~sdrlib.experiments.study.runs.study_table` of ``scores`` under each resampling seed of
    ``resample_seeds`` (at least two, distinct; ``tables``: those already computed, by seed), side by side: one row
    per comparison (``family, A, B, metric``, the mean difference ``diff``, which no resampling changes), then
    ``verdict`` (the most common verdict; among tied ones, the earliest seed's), ``n_agree`` (seeds giving it) and
    ``n_resample_seeds``, then per seed ``p_holm_s<seed>`` and ``verdict_s<seed>``. :class:`StudyError` for fewer
    than two seeds or a seed that is not one (:func:`~sdrlib.experiments.study.evidence.check_seeds`)."""
    seeds = check_seeds(resample_seeds, "resample seeds")
    if len(seeds) < 2:
        raise StudyError(f"resample seeds {seeds}: give at least two (the verdicts under each are compared)")
    tables = dict(tables or {})
    for s in seeds:
        if s not in tables:
            tables[s] = study_table(scores, n_studies=n_studies, n_resamples=n_resamples, seed=s, policies=policies)
    first = tables[seeds[0]]
    out = first[[*_KEY, "diff"]].copy()
    for s in seeds:
        t = tables[s].set_index(_KEY)
        out[f"p_holm_s{s}"] = t.p_holm.reindex(pd.MultiIndex.from_frame(first[_KEY])).to_numpy()
        out[f"verdict_s{s}"] = t.verdict.reindex(pd.MultiIndex.from_frame(first[_KEY])).to_numpy()
    votes = out[[f"verdict_s{s}" for s in seeds]].to_numpy()
    modal = [_modal(list(row)) for row in votes]
    out.insert(5, "verdict", modal)
    out.insert(6, "n_agree", [int(sum(v == m for v in row)) for row, m in zip(votes, modal)])
    out.insert(7, "n_resample_seeds", len(seeds))
    return out


def _modal(row: list[str]) -> str:
    """The most common verdict of ``row``; among tied ones, the one of the earliest seed."""
    counts = Counter(row)
    return next(v for v in row if counts[v] == max(counts.values()))


def stability_markdown(stability: pd.DataFrame) -> str:
    """:func:`verdict_stability` as a Markdown table: per comparison the metric, the difference, the verdict under
    each resampling seed with its Holm-adjusted p, and how many seeds agree."""
    seeds = [c[len("verdict_s"):] for c in stability.columns if c.startswith("verdict_s")]
    rows = ["| comparison | metric | A - B | " + " | ".join(f"resampling seed {s}" for s in seeds)
            + " | seeds agreeing |", "|" + "---|" * (4 + len(seeds))]
    for _, r in stability.iterrows():
        cells = [f"{r[f'verdict_s{s}']} (p {r[f'p_holm_s{s}']:.3f})" for s in seeds]
        rows.append(f"| {r.A} vs {r.B} | {r.metric.split('@')[0]} | {r['diff']:+.3f} | " + " | ".join(cells)
                    + f" | {int(r.n_agree)} of {int(r.n_resample_seeds)} |")
    return "\n".join(rows)


def _values(scores: dict[tuple[str, int], Any], section: str) -> dict[tuple[str, int], dict[str, float]]:
    """Per run, ``{metric: corpus value}`` of the study's metrics (:data:`PRIMARY`, :data:`SECONDARY`)."""
    want = set(PRIMARY) | set(SECONDARY)
    return {k: {r.name: float(r.corpus) for r in sc.results.get(section, []) if r.name.split("@")[0] in want}
            for k, sc in scores.items()}


def start_table(main: dict[tuple[str, int], Any], other: dict[tuple[str, int], Any], sft_seed: int, *,
                section: str = "findings") -> pd.DataFrame:
    """Per configuration both starts ran and metric of the study (:data:`PRIMARY`, then :data:`SECONDARY`): one
    row of :data:`START_COLUMNS` over the GRPO seeds both starts have for it: ``mean_main`` (the study's own start,
    ``main``: ``{(config, seed): ReportScores}``), ``mean_other`` (the start of SFT seed ``sft_seed``, ``other``),
    ``start_diff = mean_other - mean_main`` and, for scale, ``seed_sd_main`` (the SD over those seeds of the
    study's own runs; NaN for one seed). Configurations without a shared seed are left out; :class:`StudyError`
    when none is left."""
    vm, vo = _values(main, section), _values(other, section)
    rows = []
    configs = list(dict.fromkeys(c for c, _ in sorted(other, key=lambda k: (k[0] != "sft", k))))
    for c in configs:
        shared = sorted(s for cc, s in other if cc == c and (c, s) in main)
        if not shared:
            continue
        names = [m for p in (*PRIMARY, *SECONDARY) for m in vm[(c, shared[0])] if m.split("@")[0] == p]
        for m in names:
            a = np.array([vm[(c, s)].get(m, np.nan) for s in shared])
            b = np.array([vo[(c, s)].get(m, np.nan) for s in shared])
            rows.append({"config": reward_label(c), "metric": m, "sft_seed": int(sft_seed), "n_seeds": len(shared),
                         "mean_main": float(a.mean()), "mean_other": float(b.mean()),
                         "start_diff": float(b.mean() - a.mean()),
                         "seed_sd_main": float(a.std(ddof=1)) if len(a) > 1 else np.nan})
    if not rows:
        raise StudyError(f"SFT seed {sft_seed}: no configuration shares a GRPO seed with the study's own runs; run "
                         "those seeds of both starts")
    return pd.DataFrame(rows, columns=list(START_COLUMNS))


def start_markdown(table: pd.DataFrame) -> str:
    """:func:`start_table` (one or more second starts) as a Markdown table."""
    rows = ["| configuration | metric | SFT seed | GRPO seeds | mean, study's start | mean, other start | other - study's "
            "| seed SD, study's start |", "|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        sd = "" if pd.isna(r.seed_sd_main) else f"{r.seed_sd_main:.3f}"
        rows.append(f"| {r.config} | {r.metric.split('@')[0]} | {int(r.sft_seed)} | {int(r.n_seeds)} | "
                    f"{r.mean_main:.3f} | {r.mean_other:.3f} | {r.start_diff:+.3f} | {sd} |")
    return "\n".join(rows)
