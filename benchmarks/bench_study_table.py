"""Seconds of the GRPO study table's bootstrap at the new study's size, on synthetic scores (no run, no scoring).

Run (repository root):

    .venv/bin/python benchmarks/bench_study_table.py                       # 7 arms x 22 seeds x 400 studies, 10,000
    .venv/bin/python benchmarks/bench_study_table.py --resamples 1000 --seeds 5

Builds one :class:`~sdrlib.metrics.suite.ReportScores` per (configuration, seed) as the study's scoring would hold
it, with a per-study BERTScore F1 (``mean_result``) and every CheXpert-14 label metric (``clinical_results`` on
random label dicts, each configuration stating findings at its own rate), then times
:func:`sdrlib.experiments.study.runs.study_table` (its three families: 7 comparisons x 4 metrics in the primary and
secondary families, 6 in the controls family x 2 metrics, each row its own two-level bootstrap of ``--resamples``
resamples; ``--without-sharing``: each row drawing its own resample counts
and products, as before :func:`sdrlib.metrics.significance.shared_resamples`). Prints the wall and CPU seconds and the load average, which a
reader needs to judge them (the timings are wall-clock on whatever else the machine is doing). Not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import numpy as np
import pandas as pd

from sdrlib.experiments.study import runs as study
from sdrlib.metrics.base import mean_result
from sdrlib.metrics.clinical import clinical_results
from sdrlib.metrics.suite import ReportScores
from sdrlib.vocabulary import CHEXPERT_14

CONFIGS = ("sft", "fmt", "noise", "exact", "chamfer", "hausdorff", "chamfer_recall_1")


def synthetic_scores(n_seeds: int, n_studies: int, seed: int = 0) -> dict[tuple[str, int], ReportScores]:
    """``{(config, seed): ReportScores}`` of random but plausible Findings scores (module doc)."""
    rng = np.random.default_rng(seed)
    refs = [{o: int(v) for o, v in zip(CHEXPERT_14, rng.random(len(CHEXPERT_14)) < 0.1)} for _ in range(n_studies)]
    ids = [f"s{i}" for i in range(n_studies)]
    out = {}
    for k, c in enumerate(CONFIGS):
        for s in range(n_seeds):
            r = np.random.default_rng([seed, k, s])
            keep = r.random() * 0.5 + 0.3
            pred = [{o: (v if r.random() < keep else int(r.random() < 0.05)) for o, v in ref.items()} for ref in refs]
            results = [mean_result("bertscore_f1@all-MiniLM-L6-v2", "synthetic", r.normal(0.6 + 0.01 * k, 0.1,
                                                                                          n_studies)),
                       *clinical_results(pred, refs, "labeler")]
            out[(c, s)] = ReportScores(sample_ids=ids, sections=("findings",), results={"findings": results},
                                       defined={"findings": np.ones(n_studies, bool)}, strata=None,
                                       issues=pd.DataFrame({"issue": []}))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=22)
    ap.add_argument("--studies", type=int, default=400)
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--without-sharing", action="store_true",
                    help="every row draws its own resample counts and products (the table before "
                         "sdrlib.metrics.significance.shared_resamples; the same floats)")
    args = ap.parse_args(argv)
    if args.without_sharing:
        study.shared_resamples = contextlib.nullcontext
    scores = synthetic_scores(args.seeds, args.studies)
    t0, c0 = time.perf_counter(), time.process_time()
    t = study.study_table(scores, n_studies=args.studies, n_resamples=args.resamples)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{len(CONFIGS)} arms x {args.seeds} seeds x {args.studies} studies, {args.resamples} resamples: "
          f"{len(t)} rows in {wall:.1f} s wall, {cpu:.1f} s CPU (load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
