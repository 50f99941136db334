"""The GRPO study (``configs/study.yaml``; the study on record: ``configs/study_blind_start.yaml``): do set-distance
rewards beat SFT and R_exact, with the power to see it?

The paper's headline (sec. 4) is that GRPO with a set-distance reward (R_Cham, R_Haus) writes better Findings than
SFT and than exact matching (R_exact). The default profile's notebook 04 asks the same question at a size that
cannot see an effect of the paper's size (a demonstration); this study is sized for it
(:mod:`sdrlib.experiments.study.size`, ``docs/evidence/study_sizing.md``) and kept as evidence in the repository.

**Runs.** SFT once (the profile's seed), then every ``grpo.rewards`` configuration at every seed of
``grpo.seeds`` from that policy, and the SFT policy sampled once per seed (:func:`study_runs`). Each run's test
generations (every test study, sampled with the run's seed) are written as one file,
``<evidence>/runs/<config>_s<seed>.json.gz`` (:func:`run_one`), with the key that decides them
(:func:`evidence_key`: the run key of :mod:`sdrlib.training.runkeys` without the source digest, plus the GRPO steps
and the decoding settings), the commit and source digest that produced them, the training and evaluation seconds,
the run's own training curve summary (KL, reward) and the machine. A run whose file holds the current key is done:
the study resumes run by run, and adding seeds (``--seeds``) trains only the new ones. The policies themselves live
under ``runs/<profile>/`` (not in git); the evidence files are small enough to commit.

**Draws.** With ``grpo.eval_draws`` = K > 1 each run's policy also samples K - 1 more reports per study (draw d with
:func:`draw_seed`), one file each, ``<config>_s<seed>_d<d>.json.gz`` (:func:`sample_draw`), naming the policy they
come from by its digest. More draws of a done run never retrain it: the policy is found in its run folder by that
digest (a run whose policy is gone is trained again first, and its draws follow the new policy). The table scores
every draw and pools them per study (:func:`sdrlib.metrics.suite.pool_scores`): each run's value is then its
policy's over K reports per study, so the seed-to-seed spread holds less of the sampling's noise.

**Evidence files** (names, keys, reading and writing, every check on what a file holds):
:mod:`sdrlib.experiments.study.evidence`, whose public names this module also exports.

**Beside the table** (what each configuration writes; the verdicts under other resampling seeds; a second SFT start,
``run_study(..., sft_seed=k)``): :mod:`sdrlib.experiments.study.behaviour`, :mod:`sdrlib.experiments.study.stability`.

**Bad input.** Seeds are distinct integers in [0, 2**32 - 1] (:func:`check_seeds`); a request to run names the
profile's configurations and an evidence folder that is a folder (or does not exist yet), checked before any
training. :func:`run_study` redoes a run whose file it cannot read. Every ``*.json.gz`` under ``<evidence>/runs``
is a run file for :func:`load_evidence`: one that is not gzip JSON, lacks a key, has other than one generation per
study id or whose name is not ``<config>_s<seed>[_d<draw>].json.gz`` of its content is a :class:`StudyError` naming
it, as is a draw without its run's file, from another policy than its run's, or after a missing draw. The table
(:func:`table_runs`) also refuses runs on other test studies, two runs (or draws) of one configuration holding the
same generations (a copy counts once: each seed samples its own), runs with unequal numbers of draws and
configurations it cannot pair with SFT.

**Why not the source digest.** A training run's folder is reused only when every file of ``sdrlib`` is unchanged
(:func:`sdrlib.training.runkeys.source_digest`); a study that spans sessions would retrain everything after any
commit. The evidence key keeps everything that decides the numbers (profile values, data, SFT policy digest,
library versions, kernel path) and records the code apart: :func:`study_status` says when the runs come from more
than one source digest, and the comparison table names the commits.

**The table.** :func:`study_table` scores every run's Findings (:func:`sdrlib.metrics.suite.score_reports`:
BERTScore F1 and CheXpert-14 label F1 from the offline labeler) and compares configurations over seeds and studies
(:func:`sdrlib.experiments.tables.significance_table`), then applies the project's rule within each family
(:func:`sdrlib.metrics.verdict.family_verdicts`: Holm and the interval) with the detectable effect beside each
comparison. The families go by the comparison's role (:mod:`sdrlib.experiments.study.families`): **primary**, the
paper's questions only (each configuration that is no control vs SFT and vs R_exact, :func:`study_pairs`) on the
paper's BERTScore F1 and CheXpert-14 macro F1 (:data:`PRIMARY`); **secondary**, the same pairs on micro-14 and
per-report label F1 (:data:`SECONDARY`); **controls**, when the profile runs any of :data:`CONTROLS` (``fmt``,
``noise``), each control vs SFT and each reward vs the noise control (:func:`control_pairs`) on the primary metrics,
so that the controls never lower the paper comparisons' Holm level. :func:`study_answer` and :func:`study_markdown`
read them.

Example::

    cfg = load_profile("study")                      # the study on record: load_profile("study_blind_start")
    run_study(cfg, "docs/evidence/study_seeing_start")   # resumes; one file per finished run
    test = load_split(cfg, "test")
    scores = study_scores(cfg, "docs/evidence/study_seeing_start", test)
    table = study_table(scores, n_studies=len(test)) # the comparisons under the rule
    print("\n".join(study_answer(table)))
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import as_completed
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.data import load_split
from sdrlib import training
from sdrlib.experiments.posttrain import generate_test, score_all, seeds_of, worker_pool
from sdrlib.experiments.study.evidence import (COMMAND, MAX_SEED, StudyError, check_seeds, draw_seed, evidence_key,
                                               evidence_path, is_int, load_evidence, profile_settings, read_run_file,
                                               settings_differences, write_run_file)
from sdrlib.experiments.study.families import (CONTROLS, FAMILIES, answer_block, control_pairs, study_answer,
                                               study_markdown, study_pairs)
from sdrlib.experiments.tables import metric_prefixes, significance_table
from sdrlib.metrics.significance import shared_resamples
from sdrlib.metrics.suite import metric_kwargs, pool_scores
from sdrlib.metrics.verdict import family_verdicts
from sdrlib.rewards import parse_reward, reward_label
from sdrlib.training.policy import has_policy
from sdrlib.training.runkeys import policy_dir

__all__ = ["PRIMARY", "SECONDARY", "METRIC_GROUPS", "CONTROLS", "FAMILIES", "MAX_SEED", "StudyError", "check_seeds",
           "draw_seed", "evidence_key", "evidence_path", "load_evidence", "study_runs", "run_one", "sample_draw",
           "run_study", "study_status", "table_runs", "study_scores", "run_policies", "study_pairs", "control_pairs",
           "study_table", "study_answer", "study_markdown", "answer_block"]

#: the study's primary metrics (one Holm family): the paper's two, BERTScore F1 and CheXpert-14 macro F1 (the offline
#: labeler in place of CheXbert); no other label F1 is less noisy here (docs/evidence/study_sizing.md: study half and
#: seed half of micro-14 and per-report F1 are as large), so the paper's metric stays primary
PRIMARY: tuple[str, ...] = ("bertscore_f1", "clinical_f1_macro14")
#: reported as a second family, with its own detectable effect: micro-14 and per-report label F1
SECONDARY: tuple[str, ...] = ("clinical_f1_micro14", "clinical_f1_sample")
#: the metric groups the table scores (:data:`PRIMARY` and :data:`SECONDARY` come from these two)
METRIC_GROUPS: tuple[str, ...] = ("bertscore", "clinical")

def study_runs(cfg: Any, seeds: Sequence[int] | None = None) -> list[tuple[str, int]]:
    """``(config, seed)`` pairs in the order they run: seed by seed (so a study stopped early has whole seeds), SFT
    first within each seed, then ``cfg.grpo.rewards`` in profile order. ``seeds`` defaults to the profile's
    (:func:`check_seeds`)."""
    seeds = check_seeds(seeds_of(cfg) if seeds is None else seeds)
    rewards = [r for r in cfg.grpo.rewards if r != "sft"]
    return [(c, s) for s in seeds for c in ["sft", *rewards]]


def _curve_summary(run_folder: Path) -> dict[str, Any]:
    """First / last quarter means of the run's logged KL and reward (``curves.csv``), when it has them."""
    f = run_folder / "curves.csv"
    if not f.is_file():
        return {}
    c = pd.read_csv(f)
    out: dict[str, Any] = {}
    for col in ("kl", "reward"):
        if col in c and c[col].notna().any():
            v = c[col].dropna().to_numpy()
            q = max(1, len(v) // 4)
            out[f"{col}_first"], out[f"{col}_last"] = float(v[:q].mean()), float(v[-q:].mean())
    return out


def run_one(cfg: Any, config: str, seed: int, train_records: Sequence[Any], test_records: Sequence[Any],
            sft_policy: str | Path, *, embedder: Any = None, progress: bool = False) -> dict[str, Any]:
    """Train (or reuse) one run and sample its test reports; returns the evidence record (not written)."""
    t0 = time.perf_counter()
    if config == "sft":
        policy, folder, train_s = Path(sft_policy), Path(sft_policy).parent, 0.0
    else:
        res = training.grpo(cfg, config, sft_policy, train_records, seed=seed, embedder=embedder, progress=progress)
        policy, folder, train_s = res.final, res.path, (res.info.get("seconds", res.seconds) or 0.0)
    t1 = time.perf_counter()
    gens = generate_test(cfg, policy, test_records, seed=seed)
    return {"config": config, "seed": seed, "label": reward_label(config),
            "train_seconds": round(float(train_s), 1), "eval_seconds": round(time.perf_counter() - t1, 1),
            "wall_seconds": round(time.perf_counter() - t0, 1), "policy": training.policy_digest(policy),
            "curves": _curve_summary(folder) if config != "sft" else {},
            "study_ids": [r.study_id for r in test_records], "generations": gens}


def sample_draw(cfg: Any, config: str, seed: int, draw: int, test_records: Sequence[Any],
                policy: str | Path) -> dict[str, Any]:
    """Draw ``draw`` (>= 1) of a run: its policy (the folder ``policy``) samples every test study again with
    :func:`draw_seed` (the profile's decoding); returns the draw's evidence record (not written)."""
    t0 = time.perf_counter()
    gens = generate_test(cfg, policy, test_records, seed=draw_seed(seed, draw))
    return {"config": config, "seed": seed, "draw": int(draw), "label": reward_label(config),
            "eval_seconds": round(time.perf_counter() - t0, 1), "policy": training.policy_digest(policy),
            "study_ids": [r.study_id for r in test_records], "generations": gens}


def _holds(folder: Path, policy: str | None) -> bool:
    """Whether ``folder`` holds the policy of digest ``policy`` (a saved policy whose weights hash to it)."""
    return policy is not None and has_policy(folder) and training.policy_digest(folder) == policy


def _job(cfg: Any, config: str, seed: int, train_records: list, test_records: list, sft_policy: Path,
         draws: Sequence[int] = (), policy: str | None = None) -> list[dict]:
    """One run's pending work in a worker process (:func:`sdrlib.experiments.workers.worker_pool`, one thread):
    the run (:func:`run_one`) unless its policy of digest ``policy`` (from its run file) is still in its folder,
    then the draws ``draws`` (:func:`sample_draw`); a run trained to another policy than ``policy`` has every draw
    sampled again. Returns the records to write, the run's first (when it has a new one)."""
    from sdrlib.embedding import SentenceEmbedder

    folder = Path(sft_policy) if config == "sft" else policy_dir(cfg, config, seed)
    out = []
    if not _holds(folder, policy):
        emb = None
        if config != "sft" and parse_reward(config).needs_embedder:
            emb = SentenceEmbedder.from_config(cfg)
            emb.threads = 1
        rec = run_one(cfg, config, seed, train_records, test_records, sft_policy, embedder=emb)
        if rec.get("policy") != policy:
            out.append(rec)
            draws = range(1, cfg.grpo.eval_draws)
    return out + [sample_draw(cfg, config, seed, d, test_records, folder) for d in draws]


def _planned(cfg: Any, evidence: Path, seeds: Sequence[int] | None, configs: Sequence[str] | None,
             max_runs: int | None) -> list[tuple[str, int]]:
    """:func:`run_study`'s request checked before any work: the runs it names, or :class:`StudyError`."""
    runs = study_runs(cfg, seeds)
    if configs is not None:
        known = ["sft", *(r for r in cfg.grpo.rewards if r != "sft")]
        if isinstance(configs, (str, bytes)) or any(c not in known for c in configs):
            raise StudyError(f"configs {configs!r}: a list of the profile's configurations {known}")
        runs = [r for r in runs if r[0] in configs]
    if max_runs is not None and (not is_int(max_runs) or max_runs < 1):
        raise StudyError(f"max_runs = {max_runs!r}: a whole number >= 1 (None: every pending run)")
    for p in (evidence, evidence / "runs"):
        if p.exists() and not p.is_dir():
            raise StudyError(f"evidence {evidence}: {p} is not a folder; give a folder for the run files")
    return runs


def _pending(cfg: Any, evidence: Path, planned: Sequence[tuple[str, int]], keyed: Callable[..., dict],
             sft_seed: int | None = None) -> list:
    """``(config, seed, draws, policy)`` of each planned run with work left: ``policy`` is the digest in its run
    file when that run is done (only ``draws``, the draws >= 1 without a file of the current key and policy, are
    left), else None (the run and every draw)."""
    todo = []
    for config, seed in planned:
        old = read_run_file(evidence_path(evidence, config, seed, sft_seed=sft_seed))
        done = old is not None and old.get("key") == keyed(config, seed, 0)
        policy = old.get("policy") if done else None
        draws = [d for d in range(1, cfg.grpo.eval_draws)
                 if not done or not _draw_done(read_run_file(evidence_path(evidence, config, seed, d, sft_seed)),
                                               keyed(config, seed, d), policy)]
        if not done or draws:
            todo.append((config, seed, draws, policy))
    return todo


def _draw_done(rec: dict | None, key: dict, policy: str | None) -> bool:
    return rec is not None and rec.get("key") == key and rec.get("policy") == policy


def run_study(cfg: Any, evidence: str | Path, *, seeds: Sequence[int] | None = None,
              configs: Sequence[str] | None = None, max_runs: int | None = None, sft_seed: int | None = None,
              log: Callable[[str], None] = print) -> list[Path]:
    """Train and sample every pending run of :func:`study_runs` (``configs`` limits them) and its pending draws
    (``grpo.eval_draws``; module doc), ``cfg.grpo.workers`` side by side; each finished run's evidence files are
    written as soon as it finishes. Done runs (file with the current key) are skipped, or only sample their missing
    draws; ``max_runs`` (>= 1) stops after that many runs with work. Returns the files written. Seeds,
    configurations, ``max_runs`` and the evidence folder are checked before any work (:class:`StudyError`).

    ``sft_seed``: the runs of a second SFT start (SFT training variance), the SFT policy trained with that seed
    instead of the profile's ``seed`` (``runs/<profile>/sft/seed<k>``); every configuration of ``seeds`` trains
    from it into its own folders (``runs/<profile>_sft<k>/...``, so the study's own runs are never retrained) and
    writes ``<config>_s<seed>_sft<k>.json.gz`` (:func:`~sdrlib.experiments.study.evidence.evidence_path`). The
    profile's own ``seed`` (or None): the study's own start."""
    evidence = Path(evidence)
    planned = _planned(cfg, evidence, seeds, configs, max_runs)
    if sft_seed is not None:
        sft_seed = check_seeds([sft_seed], "sft_seed")[0]
        sft_seed = None if sft_seed == cfg.seed else sft_seed
    train, test = load_split(cfg, "train"), load_split(cfg, "test")
    if cfg.grpo.eval_n:
        test = test[:cfg.grpo.eval_n]
    base = training.sft(cfg, train, seed=sft_seed)
    log(f"SFT{'' if sft_seed is None else f' seed {sft_seed}'}: {base.final} "
        f"({'reused' if base.reused else f'{base.seconds:.0f} s'})")
    start = cfg if sft_seed is None else dataclasses.replace(cfg, name=f"{cfg.name}_sft{sft_seed}")

    def keyed(config: str, seed: int, draw: int) -> dict:
        return evidence_key(cfg, config, seed, train, test, base.final, draw, sft_seed)

    todo = _pending(cfg, evidence, planned, keyed, sft_seed)
    todo = todo[:max_runs] if max_runs is not None else todo
    log(f"study: {sum(p is None for *_, p in todo)} run(s) to do, {sum(len(d) for _, _, d, _ in todo)} draw(s)"
        + (f" (first: {todo[0][0]} seed {todo[0][1]})" if todo else ""))
    written: list[Path] = []

    def write(c: str, s: int, records: list[dict]) -> None:
        for rec in records:
            rec = rec if sft_seed is None else {**rec, "sft_seed": sft_seed}
            written.append(write_run_file(evidence, cfg, rec, keyed(c, s, rec.get("draw", 0))))
            log(f"{c} seed {s}: {written[-1].name}")

    if cfg.grpo.workers > 1 and len(todo) > 1:
        with worker_pool(cfg) as pool:
            jobs = {pool.submit(_job, start, c, s, list(train), list(test), base.final, d, p): (c, s)
                    for c, s, d, p in todo}
            for job in as_completed(jobs):
                write(*jobs[job], job.result())
        return written
    for c, s, d, p in todo:
        write(c, s, _job(start, c, s, list(train), list(test), base.final, d, p))
    return written


def study_status(cfg: Any, evidence: str | Path, seeds: Sequence[int] | None = None,
                 sft_seed: int | None = None) -> pd.DataFrame:
    """One row per planned run: ``config, seed, done`` (a file exists), ``draws`` (of its reports on disk: 0 or
    1 + its draw files), ``commit``, ``source_digest``,
    ``train_seconds``, ``eval_seconds``, KL / reward first and last quarter (a file's key is checked by
    :func:`run_study`, not here: this reads what is on disk). ``sft_seed``: the runs of that second SFT start."""
    have = load_evidence(evidence, None if sft_seed == cfg.seed else sft_seed)
    rows = []
    for c, s in study_runs(cfg, seeds):
        r = have.get((c, s))
        rows.append({"config": c, "seed": s, "done": r is not None, "draws": len(r["draws"]) if r else 0,
                     **({k: r.get(k) for k in ("commit", "source_digest", "train_seconds", "eval_seconds")}
                        if r else {}), **((r or {}).get("curves") or {})})
    return pd.DataFrame(rows)


def table_runs(evidence: str | Path, test_records: Sequence[Any], seeds: Sequence[int] | None = None,
               cfg: Any = None, sft_seed: int | None = None) -> dict[tuple[str, int], dict[str, Any]]:
    """The runs a comparison table reads: every run file (:func:`load_evidence`), or those of ``seeds`` (each must
    have one), checked before any scoring. With ``cfg``, a run (or draw) whose key records other settings than the
    profile's (:func:`~sdrlib.experiments.study.evidence.profile_settings`: GRPO steps, learning rate, reward
    settings, decoding, ...) is a :class:`StudyError` naming the files and the settings: it is no seed of this
    study (before: a ``max_steps: 999`` run was read as one more seed beside ``max_steps: 2`` runs).

    :class:`StudyError` naming the files when there is no run, a run is not on ``test_records``' studies (in order),
    two runs (or draws) of one configuration hold the same generations (a copy counts once: each seed samples its
    own), a seed of ``seeds`` has no run, or a comparison of :func:`study_pairs` (each configuration with SFT, with
    R_exact) or :func:`control_pairs` (each control with SFT, each reward with the noise control) has no run on one
    side or no seed in common. ``sft_seed``: the runs of that second SFT start (:func:`run_study`), checked alike.

    The test studies are compared by their ids, in order, not by the data digest in each file's key
    (``eval.test``, :func:`~sdrlib.training.runkeys.records_digest`): that digest names the images too (file name and
    size), while scoring reads only the references (their Findings and the labels read from them). SynthCXR 2.3.0
    drew other images from byte-identical reports and labels, so the study on record (2.2.0 images) is scored on the
    same references under either version; a digest check would refuse it for images the table never reads. Likewise
    the training data digest (``data``) is not compared: a run's generations are what it holds, whatever trained it."""
    runs, where = load_evidence(evidence, sft_seed), Path(evidence) / "runs"
    if not runs:
        raise StudyError(f"{where}: no run files (`{COMMAND} run` writes them)")
    if seeds is not None:
        seeds = check_seeds(seeds)
        missing = sorted(set(seeds) - {s for _, s in runs})
        if missing:
            raise StudyError(f"{where}: no run of seed(s) {missing}; `{COMMAND} run --seeds ...` trains them")
        runs = {k: r for k, r in runs.items() if k[1] in seeds}
    if cfg is not None:
        _check_settings(cfg, runs, where)
    ids = [r.study_id for r in test_records]
    other = [evidence_path("", *k, sft_seed=sft_seed).name for k, r in runs.items() if r["study_ids"] != ids]
    if other:
        raise StudyError(f"{where}: {other[:3]} ({len(other)} run(s)) are not on this profile's {len(ids)} test "
                         "studies (another profile, test split or grpo.eval_n): read them with that profile, or move "
                         "them to another evidence folder")
    _check_copies(runs, where)
    configs = list(dict.fromkeys(c for c, _ in runs))
    seeds = {c: sorted(s for cc, s in runs if cc == c) for c in configs}
    pairs = study_pairs(configs) + control_pairs(configs)
    if "sft" not in configs or not pairs:
        raise StudyError(f"{where}: runs of {configs} only; the table compares trained configurations with SFT: run "
                         f"both (`{COMMAND} run`)")
    for a, b in pairs:
        if not set(seeds[a]) & set(seeds[b]):
            raise StudyError(f"{where}: {a} (seeds {seeds[a]}) and {b} (seeds {seeds[b]}) share no seed: seed s of "
                             "one is compared with seed s of the other; run the missing seeds")
    return runs


def _check_copies(runs: dict[tuple[str, int], dict[str, Any]], where: Path) -> None:
    """:class:`StudyError` when two runs of one configuration are one run: for a trained configuration whose run
    files record their policy digests, the same policy (two seeds that trained the very same weights); otherwise
    (SFT, sampled once per seed from one policy, or files without a digest) the same generations; a run's draws
    holding the same generations are a copied draw. Two separately trained policies that write the same reports
    (both collapsed to one text, both scoring 0) are two runs."""
    by_policy = {c for c, _ in runs if c != "sft" and all(r.get("policy") for (cc, _), r in runs.items() if cc == c)}
    by_digest: dict[tuple[str, str], str] = {}
    by_gens: dict[Any, dict[tuple[str, ...], str]] = {}
    for (c, s), r in runs.items():
        if c in by_policy:
            name = evidence_path("", c, s, sft_seed=r.get("sft_seed")).name
            other = by_digest.setdefault((c, r["policy"]), name)
            if other != name:
                raise StudyError(f"{where}: {other} and {name} come from the same policy ({str(r['policy'])[:12]}): "
                                 "a copy of one run counts once (each seed trains its own); delete the copy and "
                                 f"`{COMMAND} run` trains it again")
        for d, gens in enumerate(r["draws"]):
            name = evidence_path("", c, s, d, r.get("sft_seed")).name
            # one policy's draws are compared with each other; across runs, the policy digest decides (above)
            other = by_gens.setdefault((c, s) if c in by_policy else c, {}).setdefault(tuple(gens), name)
            if other != name:
                raise StudyError(f"{where}: {other} and {name} hold the same generations: a copy of one run counts "
                                 "once (each seed and draw samples its own); delete the copy and "
                                 f"`{COMMAND} run` samples it again")


def _check_settings(cfg: Any, runs: dict[tuple[str, int], dict[str, Any]], where: Path) -> None:
    """:class:`StudyError` when a run file (or one of its draws) was made under other settings than ``cfg``'s."""
    want: dict[str, dict[str, Any]] = {}
    off: list[str] = []
    for (c, s), r in runs.items():
        if c not in want:
            want[c] = profile_settings(cfg, c)
        for d, key in enumerate(r.get("keys") or [r.get("key")]):
            diff = settings_differences(want[c], key)
            if diff:
                off.append(f"{evidence_path('', c, s, d, r.get('sft_seed')).name} ({'; '.join(diff[:3])})")
    if off:
        raise StudyError(f"{where}: {len(off)} run file(s) were made under other settings than profile {cfg.name}'s, "
                         f"so they are no seeds of this study: {', '.join(off[:3])}. Read them with those settings "
                         "(--set KEY=VALUE), or move them to another evidence folder")


def study_scores(cfg: Any, evidence: str | Path, test_records: Sequence[Any],
                 seeds: Sequence[int] | None = None, sft_seed: int | None = None) -> dict[tuple[str, int], Any]:
    """:func:`sdrlib.experiments.scoring.score_all` of the runs :func:`table_runs` reads (its checks first; ``seeds``
    limits them), on the study's metrics (BERTScore and label F1), each run's first ``grpo.eval_draws`` draws pooled
    per study (:func:`sdrlib.metrics.suite.pool_scores`; one draw: its scores), so every run is read over as many
    reports per study. :class:`StudyError` naming the runs that hold fewer draws than the profile asks; draws beyond
    it are not read. ``sft_seed``: the runs of that second SFT start (:func:`table_runs`)."""
    runs = table_runs(evidence, test_records, seeds, cfg=cfg, sft_seed=sft_seed)
    k = cfg.grpo.eval_draws
    short = [evidence_path("", *key, sft_seed=sft_seed).name for key, r in runs.items() if len(r["draws"]) < k]
    if short:
        fewest = min(len(r["draws"]) for r in runs.values())
        raise StudyError(f"{Path(evidence) / 'runs'}: {len(short)} run(s) ({short[:3]}) hold fewer than the {k} "
                         f"draws per study the profile asks (grpo.eval_draws): `{COMMAND} run` samples the "
                         f"rest, or read {fewest} with --set grpo.eval_draws={fewest}")
    groups = [g for g in METRIC_GROUPS if g in metric_kwargs(cfg).get("metrics", METRIC_GROUPS)]
    scores = score_all(cfg, {(*key, d): r["draws"][d] for key, r in runs.items() for d in range(k)}, test_records,
                       metrics=groups)
    return {key: pool_scores([scores[(*key, d)] for d in range(k)]) for key in runs}


def _fingerprint(scores: Any) -> bytes:
    """A run's scores by content: every metric's per-study statistics and corpus value, every section."""
    h = hashlib.sha256()
    for sec in scores.sections:
        for r in scores.results[sec]:
            h.update(np.ascontiguousarray(np.asarray(r.stats, np.float64)).tobytes())
            h.update(np.float64(r.corpus).tobytes())
    return h.digest()


def run_policies(evidence: str | Path, seeds: Sequence[int] | None = None,
                 sft_seed: int | None = None) -> dict[tuple[str, int], str | None]:
    """``{(config, seed): policy digest}`` of the run files under ``evidence`` (None where a file records none; of
    the second SFT start ``sft_seed``, when given), for :func:`study_table`'s ``policies``."""
    runs = load_evidence(evidence, sft_seed)
    return {k: r.get("policy") for k, r in runs.items() if seeds is None or k[1] in seeds}


def study_table(scores: dict[tuple[str, int], Any], *, n_studies: int, section: str = "findings",
                n_resamples: int = 1000, seed: int = 0,
                policies: dict[tuple[str, int], str | None] | None = None) -> pd.DataFrame:
    """The study's comparisons under the rule: one row per (pair, metric) of ``section``, ``family`` ``primary``
    (:func:`study_pairs` on :data:`PRIMARY`), ``secondary`` (the same pairs on :data:`SECONDARY`) or ``controls``
    (:func:`control_pairs` on :data:`PRIMARY`, when the scores hold a control of :data:`CONTROLS`), in that order,
    each family with Holm over its own rows (:func:`sdrlib.metrics.verdict.family_verdicts`: ``p_holm``,
    ``verdict``, ``mde``, ``binding``, ...; :mod:`sdrlib.experiments.study.families` says why by role). A family
    holds the metrics the scores have: scored without BERTScore (``metrics.bertscore.enabled: false``) the primary family is
    CheXpert-14 macro F1 alone, a smaller family whose Holm level and detectable effects are not the full table's.
    ``n_studies``: the studies every score covers; :class:`StudyError` when it is not, when ``scores`` hold no
    comparison (no scores, SFT only), or when two runs of one configuration score the same on every metric and study
    (a copy counts once). Distinct runs that agree on one metric (every seed's reports state the same findings: the
    same label F1 per study) are that configuration without run-to-run noise on that metric, and are compared as
    such (``deterministic`` of :func:`~sdrlib.experiments.tables.significance_table`), not refused as copies.
    ``policies`` (:func:`run_policies`, for scores of runs :func:`table_runs` checked): a copy is then two runs of a
    trained configuration from one policy digest, and distinct policies that score the same on every metric and study
    (two runs that both collapsed and score 0) are compared as a configuration without run-to-run noise, not refused."""
    if not scores:
        raise StudyError("study_table: no scores (study_scores reads the runs of an evidence folder)")
    covered = sorted({len(sc.sample_ids) for sc in scores.values()})
    if covered != [n_studies]:
        raise StudyError(f"study_table: n_studies = {n_studies!r}, but the scores cover {covered} studies; pass the "
                         "test studies they were scored on (study_scores)")
    configs = list(dict.fromkeys(c for c, _ in scores))
    pairs, controls = study_pairs(configs), control_pairs(configs)
    if not pairs and not controls:
        raise StudyError(f"study_table: scores of {configs} only; the table compares trained configurations with SFT")
    first: dict[tuple, int] = {}
    for (c, s), sc in scores.items():
        if policies is not None:
            p = policies.get((c, s))
            if c == "sft" or p is None:
                continue  # table_runs compared their generations
            s0 = first.setdefault((c, p), s)
            if s0 != s:
                raise StudyError(f"study_table: {c} seeds {s0} and {s} come from one policy ({str(p)[:12]}): a copy "
                                 "of one run counts once")
            continue
        s0 = first.setdefault((c, _fingerprint(sc)), s)
        if s0 != s:
            raise StudyError(f"study_table: {c} seeds {s0} and {s} score the same on every metric and study: a copy "
                             "of one run counts once (study_scores names the run files)")
    several = {c for c in configs if sum(k[0] == c for k in scores) > 1}  # distinct runs (checked above)
    scored = metric_prefixes(scores)
    out = []
    with shared_resamples():  # one draw of the resample counts, one product per run and count matrix: same floats
        for fam, fam_pairs, metrics in (("primary", pairs, PRIMARY), ("secondary", pairs, SECONDARY),
                                        ("controls", controls, PRIMARY)):
            metrics = [m for m in metrics if m in scored]  # BERTScore off: label F1 alone
            if not metrics or not fam_pairs:
                continue
            t = significance_table(scores, fam_pairs, metrics, n_resamples=n_resamples, seed=seed,
                                   deterministic=several)
            t = t[t.section == section].reset_index(drop=True)
            if len(t):
                out.append(family_verdicts(t, n_studies=n_studies).assign(family=fam))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()
