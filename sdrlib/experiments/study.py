"""The GRPO study (``configs/study.yaml``): do set-distance rewards beat SFT and R_exact, with the power to see it?

The paper's headline (sec. 4) is that GRPO with a set-distance reward (R_Cham, R_Haus) writes better Findings than
SFT and than exact matching (R_exact). The default profile's notebook 04 asks the same question at a size that
cannot see an effect of the paper's size (a demonstration); this study is sized for it
(:mod:`sdrlib.experiments.study_size`, ``docs/evidence/study_sizing.md``) and kept as evidence in the repository.

**Runs.** SFT once (the profile's seed), then every ``grpo.rewards`` configuration at every seed of
``grpo.seeds`` from that policy, and the SFT policy sampled once per seed (:func:`study_runs`). Each run's test
generations (every test study, sampled with the run's seed) are written as one file,
``<evidence>/runs/<config>_s<seed>.json.gz`` (:func:`run_one`), with the key that decides them
(:func:`evidence_key`: the run key of :mod:`sdrlib.training.runkeys` without the source digest, plus the GRPO steps
and the decoding settings), the commit and source digest that produced them, the training and evaluation seconds,
the run's own training curve summary (KL, reward) and the machine. A run whose file holds the current key is done:
the study resumes run by run, and adding seeds (``--seeds``) trains only the new ones. The policies themselves live
under ``runs/<profile>/`` (not in git); the evidence files are small enough to commit.

**Why not the source digest.** A training run's folder is reused only when every file of ``sdrlib`` is unchanged
(:func:`sdrlib.training.runkeys.source_digest`); a study that spans sessions would retrain everything after any
commit. The evidence key keeps everything that decides the numbers (profile values, data, SFT policy digest,
library versions, kernel path) and records the code apart: :func:`study_status` says when the runs come from more
than one source digest, and the comparison table names the commits.

**The table.** :func:`study_table` scores every run's Findings (:func:`sdrlib.metrics.suite.score_reports`:
BERTScore F1 and CheXpert-14 label F1 from the offline labeler) and compares each configuration with SFT and with
R_exact over seeds and studies (:func:`sdrlib.experiments.tables.significance_table`), then applies the project's
rule over the family (:func:`sdrlib.metrics.verdict.family_verdicts`: Holm, interval, every seed's sign) with the
detectable effect beside each comparison. Primary metrics (one family, :data:`PRIMARY`): the paper's BERTScore F1
and CheXpert-14 macro F1; micro-14 and per-report label F1 are a secondary family (:data:`SECONDARY`) with their own
detectable effects.

Example::

    cfg = load_profile("study")
    run_study(cfg, "docs/evidence/study")            # resumes; one file per finished run
    table = study_table(cfg, "docs/evidence/study")  # the comparisons under the rule
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import as_completed
from pathlib import Path
from typing import Any

import pandas as pd

from sdrlib.data import load_split
from sdrlib import training
from sdrlib.experiments.posttrain import config_label, generate_test, score_all, seeds_of, worker_pool
from sdrlib.experiments.tables import significance_table
from sdrlib.io import atomic_write_bytes
from sdrlib.metrics.verdict import family_verdicts
from sdrlib.results import git_commit, provenance
from sdrlib.training.runkeys import records_digest, run_key, source_digest

__all__ = ["PRIMARY", "SECONDARY", "study_runs", "evidence_key", "evidence_path", "run_one", "run_study",
           "load_evidence", "study_status", "study_scores", "study_pairs", "study_table", "study_answer"]

#: the study's primary metrics (one Holm family): the paper's two, BERTScore F1 and CheXpert-14 macro F1 (the offline
#: labeler in place of CheXbert); no other label F1 is less noisy here (docs/evidence/study_sizing.md: study half and
#: seed half of micro-14 and per-report F1 are as large), so the paper's metric stays primary
PRIMARY: tuple[str, ...] = ("bertscore_f1", "clinical_f1_macro14")
#: reported as a second family, with its own detectable effect: micro-14 and per-report label F1
SECONDARY: tuple[str, ...] = ("clinical_f1_micro14", "clinical_f1_sample")


def study_runs(cfg: Any, seeds: Sequence[int] | None = None) -> list[tuple[str, int]]:
    """``(config, seed)`` pairs in the order they run: seed by seed (so a study stopped early has whole seeds), SFT
    first within each seed, then ``cfg.grpo.rewards`` in profile order. ``seeds`` defaults to the profile's."""
    seeds = list(seeds_of(cfg) if seeds is None else seeds)
    rewards = [r for r in cfg.grpo.rewards if r != "sft"]
    return [(c, s) for s in seeds for c in ["sft", *rewards]]


def evidence_key(cfg: Any, config: str, seed: int, train_records: Sequence[Any], test_records: Sequence[Any],
                 sft_policy: str | Path) -> dict[str, Any]:
    """What decides a run's test generations (module doc): the training run key without ``code``, the GRPO steps,
    the test studies and the decoding settings."""
    if config == "sft":
        key = run_key(cfg, "sft", train_records, seed=cfg.seed)
    else:
        key = run_key(cfg, "grpo", train_records, reward=config, seed=seed, init_from=sft_policy)
        key["max_steps"] = cfg.grpo.max_steps
    key.pop("code", None)
    s = cfg.sft
    key["eval"] = {"test": records_digest(test_records), "n_test": len(test_records), "seed": seed,
                   "max_new_tokens": s.max_new_tokens, "do_sample": s.eval_do_sample,
                   "temperature": s.eval_temperature, "threads": s.threads}
    return json.loads(json.dumps(key, default=str))


def evidence_path(evidence: str | Path, config: str, seed: int) -> Path:
    """``<evidence>/runs/<config>_s<seed>.json.gz``."""
    return Path(evidence) / "runs" / f"{config}_s{seed}.json.gz"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    except (OSError, ValueError, EOFError):
        return None


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
    return {"config": config, "seed": seed, "label": config_label(config),
            "train_seconds": round(float(train_s), 1), "eval_seconds": round(time.perf_counter() - t1, 1),
            "wall_seconds": round(time.perf_counter() - t0, 1), "policy": training.policy_digest(policy),
            "curves": _curve_summary(folder) if config != "sft" else {},
            "study_ids": [r.study_id for r in test_records], "generations": gens}


def _job(cfg: Any, config: str, seed: int, train_records: list, test_records: list, sft_policy: Path) -> dict:
    """:func:`run_one` in a worker process (:func:`sdrlib.experiments.posttrain.worker_pool`, one thread)."""
    from sdrlib.embedding import SentenceEmbedder
    from sdrlib.rewards import parse_reward

    emb = None
    if config != "sft" and parse_reward(config).needs_embedder:
        emb = SentenceEmbedder.from_config(cfg)
        emb.threads = 1
    return run_one(cfg, config, seed, train_records, test_records, sft_policy, embedder=emb)


def _write(evidence: Path, cfg: Any, record: dict, key: dict) -> Path:
    path = evidence_path(evidence, record["config"], record["seed"])
    body = {"key": key, "key_digest": hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16],
            "commit": git_commit(mark_dirty=True), "source_digest": source_digest()[:16],
            "provenance": provenance(cfg), **record}
    atomic_write_bytes(path, gzip.compress(json.dumps(body, indent=1, sort_keys=True).encode("utf-8"), mtime=0))
    return path


def run_study(cfg: Any, evidence: str | Path, *, seeds: Sequence[int] | None = None,
              configs: Sequence[str] | None = None, max_runs: int | None = None,
              log: Callable[[str], None] = print) -> list[Path]:
    """Train and sample every pending run of :func:`study_runs` (``configs`` limits them), ``cfg.grpo.workers`` side
    by side; each finished run's evidence file is written as soon as it finishes. Done runs (file with the current
    key) are skipped; ``max_runs`` stops after that many new runs. Returns the files written."""
    evidence = Path(evidence)
    train, test = load_split(cfg, "train"), load_split(cfg, "test")
    if cfg.grpo.eval_n:
        test = test[:cfg.grpo.eval_n]
    base = training.sft(cfg, train)
    log(f"SFT: {base.final} ({'reused' if base.reused else f'{base.seconds:.0f} s'})")
    todo = []
    for config, seed in study_runs(cfg, seeds):
        if configs is not None and config not in configs:
            continue
        key = evidence_key(cfg, config, seed, train, test, base.final)
        old = _read(evidence_path(evidence, config, seed))
        if old is not None and old.get("key") == key:
            continue
        todo.append((config, seed, key))
    todo = todo[:max_runs] if max_runs is not None else todo
    log(f"study: {len(todo)} run(s) to do" + (f" (first: {todo[0][0]} seed {todo[0][1]})" if todo else ""))
    written: list[Path] = []
    if cfg.grpo.workers > 1 and len(todo) > 1:
        with worker_pool(cfg) as pool:
            jobs = {pool.submit(_job, cfg, c, s, list(train), list(test), base.final): (c, s, k) for c, s, k in todo}
            for job in as_completed(jobs):
                c, s, k = jobs[job]
                written.append(_write(evidence, cfg, job.result(), k))
                log(f"{c} seed {s}: {written[-1].name}")
        return written
    for c, s, k in todo:
        written.append(_write(evidence, cfg, _job(cfg, c, s, list(train), list(test), base.final), k))
        log(f"{c} seed {s}: {written[-1].name}")
    return written


def load_evidence(evidence: str | Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Every readable run file under ``<evidence>/runs``: ``{(config, seed): record}``."""
    out = {}
    for f in sorted((Path(evidence) / "runs").glob("*_s*.json.gz")):
        rec = _read(f)
        if rec is not None and "config" in rec and "generations" in rec:
            out[(rec["config"], int(rec["seed"]))] = rec
    return out


def study_status(cfg: Any, evidence: str | Path, seeds: Sequence[int] | None = None) -> pd.DataFrame:
    """One row per planned run: ``config, seed, done`` (a file exists), ``commit``, ``source_digest``,
    ``train_seconds``, ``eval_seconds``, KL / reward first and last quarter (a file's key is checked by
    :func:`run_study`, not here: this reads what is on disk)."""
    have = load_evidence(evidence)
    rows = []
    for c, s in study_runs(cfg, seeds):
        r = have.get((c, s))
        rows.append({"config": c, "seed": s, "done": r is not None,
                     **({k: r.get(k) for k in ("commit", "source_digest", "train_seconds", "eval_seconds")}
                        if r else {}), **((r or {}).get("curves") or {})})
    return pd.DataFrame(rows)


def study_scores(cfg: Any, evidence: str | Path, test_records: Sequence[Any]) -> dict[tuple[str, int], Any]:
    """:func:`sdrlib.experiments.posttrain.score_all` of every run on disk whose study ids are ``test_records``'."""
    ids = [r.study_id for r in test_records]
    runs = {k: r for k, r in load_evidence(evidence).items() if r["study_ids"] == ids}
    return score_all(cfg, {k: r["generations"] for k, r in runs.items()}, test_records)


def study_pairs(configs: Sequence[str]) -> list[tuple[str, str]]:
    """Every configuration against SFT, then every configuration other than R_exact against R_exact (when run)."""
    trained = [c for c in configs if c != "sft"]
    pairs = [(c, "sft") for c in trained]
    if "exact" in trained:
        pairs += [(c, "exact") for c in trained if c != "exact"]
    return pairs


def study_table(scores: dict[tuple[str, int], Any], *, n_studies: int, section: str = "findings",
                n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The study's comparisons under the rule: one row per (pair, metric) of ``section``, ``family`` ``primary``
    (:data:`PRIMARY`) or ``secondary`` (:data:`SECONDARY`), each family with Holm over its own rows
    (:func:`sdrlib.metrics.verdict.family_verdicts`: ``p_holm``, ``verdict``, ``mde``, ``binding``, ...)."""
    configs = list(dict.fromkeys(c for c, _ in scores))
    pairs = study_pairs(configs)
    out = []
    for fam, metrics in (("primary", PRIMARY), ("secondary", SECONDARY)):
        t = significance_table(scores, pairs, list(metrics), n_resamples=n_resamples, seed=seed)
        t = t[t.section == section].reset_index(drop=True)
        if len(t):
            out.append(family_verdicts(t, n_studies=n_studies).assign(family=fam))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def _metric_name(metric: str) -> str:
    base = metric.split("@")[0]
    return {"bertscore_f1": "BERTScore F1", "clinical_f1_macro14": "CXB-14 macro F1",
            "clinical_f1_micro14": "CXB-14 micro F1", "clinical_f1_sample": "per-report label F1"}.get(base, base)


def study_answer(table: pd.DataFrame, *, family: str = "primary") -> list[str]:
    """The study's answer to the paper's two GRPO questions, one sentence each (set-distance rewards vs SFT, vs
    R_exact), every direction word from the rule's ``verdict`` column of :func:`study_table` and the detectable
    effect beside each comparison. Rows of R_Cham and R_Haus (the paper's set-distance rewards) are the answer;
    other configurations are listed after them."""
    if table.empty or "verdict" not in table.columns:
        raise ValueError("study_answer needs study_table's output (no comparison in it)")
    t = table[table.family == family]
    out = []
    for b, question in (("SFT", "Do set-distance rewards beat SFT after GRPO?"),
                        ("R_exact", "Do set-distance rewards beat exact matching (R_exact)?")):
        rows = t[t.B == b]
        if rows.empty:
            continue
        order = sorted(rows.A.unique(), key=lambda a: (a not in ("R_Cham", "R_Haus"), a))
        parts = []
        for a in order:
            cells = [f"{_metric_name(r.metric)} {r.verdict} ({r['diff']:+.3f}, detectable {r.mde:.3f}, "
                     f"{int(r.n_same_sign)} of {int(r.n_seeds)} seeds)" for _, r in rows[rows.A == a].iterrows()]
            parts.append(f"{a}: " + "; ".join(cells))
        out.append(f"{question} " + ". ".join(parts) + ".")
    return out
