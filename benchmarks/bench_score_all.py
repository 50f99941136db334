"""Time notebook 04's scoring of every policy's test generations in one process against ``grpo.workers`` processes.

Reads a finished run's test generations (``<root>/runs/<profile>/**/test_generations_s<seed>.json``, the files
:func:`sdrlib.experiments.posttrain.generate_test` writes) and its test split, and scores them with
:func:`sdrlib.experiments.posttrain.score_all` twice in this process: ``grpo.workers: 1`` (the one-process path) and
``grpo.workers: N`` (the systems side by side, pool start included). Both long tables
(:func:`~sdrlib.experiments.posttrain.scores_long`) must be equal; with ``--check`` they are also compared with the
run's own saved ``results/grpo_scores_<profile>.csv``.

Usage::

    .venv/bin/python benchmarks/bench_score_all.py --root /path/to/finished/run --profile cpu
    .venv/bin/python benchmarks/bench_score_all.py --root RUN --profile cpu --units 8 --workers 2

Wall time only: on a shared machine run both paths in the same call, so that load affects both (the order is
``--order``: one-process first by default).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _generations(cfg, test) -> dict[tuple[str, int], list[str]]:
    """Every evaluated (configuration, seed) of the run in notebook 04's order, read from its generation caches."""
    from sdrlib.experiments import posttrain

    seeds = posttrain.seeds_of(cfg)
    keys = [("sft", s) for s in seeds] + [(r, s) for r in cfg.grpo.rewards if r != "sft" for s in seeds]
    keys += [(r, s) for r in cfg.grpo.ablations if r not in cfg.grpo.rewards for s in seeds[:cfg.grpo.ablation_seeds]]
    ids = [r.study_id for r in test]
    runs = cfg.runs_dir / cfg.name
    out = {}
    for reward, seed in keys:
        where = runs / "sft" / "seed0" if reward == "sft" else runs / "grpo" / reward / f"seed{seed}"
        path = where / f"test_generations_s{seed}.json"
        if not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["study_ids"] != ids:
            raise SystemExit(f"{path}: generated for other test studies than the profile's split")
        out[(reward, seed)] = data["generations"]
    if not out:
        raise SystemExit(f"no test generations under {runs}")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="output root of a finished run (run_all.sh --out)")
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--units", type=int, default=0, help="score only the first N systems (0: all)")
    ap.add_argument("--order", choices=("one-first", "workers-first"), default="one-first")
    ap.add_argument("--check", action="store_true", help="compare with the run's saved grpo_scores table")
    a = ap.parse_args(argv)
    os.environ["SDR_ROOT"] = str(Path(a.root).resolve())
    from sdrlib.numerics import pin_kernel_path

    pin_kernel_path("avx2")  # the CPU profiles' kernel_path, as run_all.sh pins it: before NumPy or torch loads
    from sdrlib.config import load_profile

    cfg = load_profile(a.profile)

    import pandas as pd

    from sdrlib import models, table_names
    from sdrlib.data import load_split
    from sdrlib.experiments import posttrain

    models.set_cpu_threads(1)  # notebook 04's process once it has sampled a policy (score_all's workers need it)
    test = load_split(cfg, "test")
    test = test[: cfg.grpo.eval_n] if cfg.grpo.eval_n else test
    gens = _generations(cfg, test)
    if a.units:
        gens = dict(list(gens.items())[: a.units])
    paths = {1: dataclasses.replace(cfg, grpo=dataclasses.replace(cfg.grpo, workers=1)),
             a.workers: dataclasses.replace(cfg, grpo=dataclasses.replace(cfg.grpo, workers=a.workers))}
    order = [1, a.workers] if a.order == "one-first" else [a.workers, 1]
    seconds, longs = {}, {}
    for w in order:
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scores = posttrain.score_all(paths[w], gens, test)
        seconds[w] = time.perf_counter() - t0
        longs[w] = posttrain.scores_long(scores, posttrain.model_name(cfg))
    same = longs[1].equals(longs[a.workers]) and longs[1].attrs == longs[a.workers].attrs
    print(f"{len(gens)} systems x {len(test)} test studies, profile {a.profile}, load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    print(f"one process: {seconds[1]:.1f} s; {a.workers} workers: {seconds[a.workers]:.1f} s; "
          f"ratio {seconds[a.workers] / seconds[1]:.2f}; long tables equal: {same}")
    if a.check:
        saved = pd.read_csv(cfg.results_dir / f"{table_names.grpo_scores(cfg.name)}.csv")
        mine = longs[a.workers].reset_index(drop=True)
        cols = [c for c in saved.columns if c in mine.columns]
        keyed = saved.merge(mine[cols], on=[c for c in cols if c != "value"], suffixes=("_saved", "_now"))
        diff = (keyed.value_saved - keyed.value_now).abs().max()
        print(f"against the run's saved table: {len(keyed)} of {len(mine)} rows matched, max abs difference {diff:.3g}")
    if not same:
        a_, b_ = longs[1].reset_index(drop=True), longs[a.workers].reset_index(drop=True)
        if a_.shape == b_.shape:
            bad = a_[(a_.value != b_.value) & ~(a_.value.isna() & b_.value.isna())]
            print(bad.assign(other=b_.value[bad.index]).to_string(max_rows=20))
        else:
            print("shapes", a_.shape, b_.shape, "attrs", longs[1].attrs, longs[a.workers].attrs)
        raise SystemExit("the two paths' long tables differ")


if __name__ == "__main__":
    main()
