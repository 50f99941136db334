"""The SFT -> GRPO experiment: every reward configuration over seeds, test generations, tables.

Paper sec. 4 and appendix D. :func:`train_all` runs SFT once and GRPO for each
reward configuration and seed (reusing finished runs); :func:`generate_test`
writes each policy's test-split generations next to it
(``test_generations.json``, reused when present); :func:`score_all` scores them
with :func:`sdrlib.metrics.suite.score_reports`; :func:`reward_table` builds
the paper's table layout (rows model x metric, columns SFT / R_fmt / R_exact /
R_Cham / R_Haus, cells ``mean ± sample std`` over seeds, a ``Mean`` block
averaging each cell across models, the best column of each row in bold) and
:func:`sdrlib.experiments.tables.significance_table` the paired bootstrap of chosen pairs of
configurations over seeds and studies together (per-seed p as detail).

Seeds: SFT is trained once (``cfg.seed``); every GRPO configuration is run once
per seed from that SFT policy. Test reports are sampled (profile:
``sft.eval_do_sample``, ``sft.eval_temperature``) with the run's seed, and the
SFT policy is sampled once per seed, so every column has a spread over seeds.
(Greedy decoding collapses the tiny CPU policy onto the modal, normal report.)

Baselines (:func:`baseline_reports`): ``majority`` writes the most frequent
training report for every study; ``random_train`` writes a random training
report, so its labels follow the training label prior. Neither looks at the
image: a policy that reads the image beats both on label F1.

Metrics whose backend is not installed (COMET, RadGraph) or that failed to run stay in the tables as
rows ``not computed: <why>`` (the suite's ``unavailable`` reasons, which :func:`scores_long` carries in
``attrs``). Left out: multi-dataset layout (run the notebook once per dataset).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdrlib import training
from sdrlib.clinical import label_report
from sdrlib.embedding import SentenceEmbedder
from sdrlib.generation import generate_reports, load_images
from sdrlib.io import atomic_write_text
from sdrlib.results import CELL_COLUMNS, render_cell_table
from sdrlib.metrics import paper_names as _paper_names
from sdrlib.experiments.scoring import score_all
from sdrlib.experiments.workers import worker_pool
from sdrlib.reports import parse_template
from sdrlib.rewards import parse_reward, prewarm, reward_label
from sdrlib.training.runlog import log_name, short_path

__all__ = [
    "TABLE_GROUPS",
    "reward_cells",
    "train_all",
    "generate_test",
    "generate_all",
    "generate_side_by_side",
    "worker_pool",
    "longest_first",
    "eval_runs",
    "baseline_reports",
    "score_all",
    "scores_long",
    "reward_table",
    "positive_findings_table",
    "model_name",
    "seeds_of",
]

#: Table groups of appendix D: table name -> the paper's metric names, one row each, looked up in
#: :mod:`sdrlib.metrics.paper_names` (the one map from paper names to suite names). A metric the scores
#: lack is a row ``not computed: <why>``, never left out.
TABLE_GROUPS: dict[str, tuple[str, ...]] = {
    g: _paper_names.TABLES[f"grpo_{g}"] for g in ("headline", "bleu", "rouge", "lexical", "clinical")}


def model_name(cfg) -> str:
    """Row label of the profile's policy (``tiny-Qwen3-VL`` on CPU)."""
    return "tiny-Qwen3-VL" if cfg.sft.policy == "tiny" else Path(cfg.sft.policy).name


def seeds_of(cfg) -> list[int]:
    """GRPO seeds of the profile: ``cfg.seed, cfg.seed + 1, ...`` (``cfg.grpo.seeds`` of them)."""
    if cfg.grpo.seeds < 1:
        raise ValueError(f"grpo.seeds must be >= 1, got {cfg.grpo.seeds}")
    return [cfg.seed + k for k in range(cfg.grpo.seeds)]


# --------------------------------------------------------------------------- training


def train_all(cfg, train_records: Sequence[Any], *, rewards: Sequence[str] | None = None, embedder: Any = None,
              log=print, ablations: Sequence[str] | None = None) -> dict[tuple[str, int], Path]:
    """SFT once, then GRPO for every reward in ``rewards`` (default ``cfg.grpo.rewards``) x seed, and every
    configuration in ``ablations`` (default ``cfg.grpo.ablations``) at its first ``cfg.grpo.ablation_seeds`` seeds.

    Returns ``{(reward, seed): policy folder}`` with ``("sft", cfg.seed)`` first. Finished runs
    are reused; interrupted ones resume from their last checkpoint. Each run shows one progress
    line ending in its summary (:func:`sdrlib.training.grpo`); ``log`` gets one line per run (runs trained side by
    side: without the log's path, named once at the end).
    """
    rewards = [r for r in (cfg.grpo.rewards if rewards is None else rewards) if r != "sft"]
    ablations = [r for r in (cfg.grpo.ablations if ablations is None else ablations) if r not in rewards and r != "sft"]
    runs = [(r, s) for r in rewards for s in seeds_of(cfg)]
    runs += [(r, s) for r in ablations for s in seeds_of(cfg)[:cfg.grpo.ablation_seeds]]
    base = training.sft(cfg, train_records)
    log(f"SFT: {base.final} ({'reused' if base.reused else f'{base.seconds:.0f} s'})")
    out: dict[tuple[str, int], Path] = {("sft", cfg.seed): base.final}
    needs_embedder = any(parse_reward(r).needs_embedder for r, _ in runs)
    if needs_embedder and embedder is None:
        embedder = SentenceEmbedder.from_config(cfg)
    if needs_embedder:
        stats = prewarm(embedder, [r.findings for r in train_records], [r.impression for r in train_records])
        log(f"reference sentences cached: {stats.get('hits', 0):,} found, {stats.get('misses', 0):,} encoded "
            f"({float(stats.get('encode_seconds', 0.0)):.1f} s)")
    if cfg.grpo.workers > 1 and len(runs) > 1:
        with worker_pool(cfg) as pool:
            # started longest first, so the workers finish close together; a run's arguments are the same either way
            jobs = {rs: pool.submit(_grpo_job, cfg, rs[0], rs[1], base.final, list(train_records))
                    for rs in longest_first(runs)}
            for reward, seed in runs:  # in the profile's order: the log reads the same every time
                res = jobs[(reward, seed)].result()
                log(f"GRPO {reward} seed {seed}: reused" if res.reused else training.summary_line(res, with_log=False))
                out[(reward, seed)] = res.final
        # one line for every run's log, not its path on each line (the notebook cell stays short)
        where = training.run_dir(cfg, "grpo", "<reward>", 0).parent / f"seed<k>/{log_name()}"
        log(f"each run's log: {short_path(where)}")
        return out
    for reward, seed in runs:
        res = training.grpo(cfg, reward, base.final, train_records, seed=seed, embedder=embedder)
        if res.reused:
            log(f"GRPO {reward} seed {seed}: reused")
        out[(reward, seed)] = res.final
    return out


def longest_first(runs: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """The GRPO runs ``[(reward, seed), ...]`` in the order :func:`train_all` starts them on its workers: runs
    whose reward needs the sentence encoder first (most of such a run's time goes to the encoder: about twice the
    time of an ``fmt``, ``exact`` or control run), the profile's order within each kind.
    Started longest first, the last run to finish is a short one, so neither worker waits long for the other.
    Only the start order changes: each run is a function of its own profile, reward, seed, SFT policy and
    records (:func:`worker_pool`). Example: ``longest_first([("fmt", 0), ("chamfer", 0)])`` ->
    ``[("chamfer", 0), ("fmt", 0)]``."""
    return sorted(runs, key=lambda rs: not parse_reward(rs[0]).needs_embedder)


_WORKER_EMBEDDER: dict[str, Any] = {}


def _grpo_job(cfg, reward: str, seed: int, init_from: Path, train_records: list) -> Any:
    """One GRPO run in a worker process (:func:`worker_pool`): the profile's encoder on one thread, shared
    across the worker's runs; no progress line (the parent prints :func:`sdrlib.training.summary_line`)."""
    embedder = None
    if parse_reward(reward).needs_embedder:
        if "e" not in _WORKER_EMBEDDER:
            _WORKER_EMBEDDER["e"] = SentenceEmbedder.from_config(cfg)
            _WORKER_EMBEDDER["e"].threads = 1
        embedder = _WORKER_EMBEDDER["e"]
    return training.grpo(cfg, reward, init_from, train_records, seed=seed, embedder=embedder, progress=False)


def _generate_job(cfg, kwargs: dict[str, Any]) -> list[str]:
    """:func:`generate_test` in a worker process (:func:`worker_pool`)."""
    return generate_test(cfg, **kwargs)


def generate_side_by_side(cfg, calls: Sequence[dict[str, Any]]) -> list[list[str]]:
    """:func:`generate_test` for each of ``calls`` (its keyword arguments: ``policy_dir``, ``test_records``, and
    ``seed``, ``shuffle_images``, ``split`` where not the defaults), side by side in ``cfg.grpo.workers`` processes
    when two or more are not cached yet (cached ones are read here, a single one runs here). Returns the
    generations in the order of ``calls``.

    Why the texts are the same as one call after the other: each call seeds its own sampling before its first
    batch and decodes its batches in order in one process, on ``sft.threads`` threads wherever it runs
    (:func:`worker_pool`; ``tests/experiments/test_generate_side_by_side.py`` compares them). A call itself is
    never split across processes: its batches draw from one random stream in turn, so a study's sample depends
    on the studies decoded before it in the same call. Example: a policy's test generations and its
    shuffled-image control, ``generate_side_by_side(cfg, [{"policy_dir": p, "test_records": t},
    {"policy_dir": p, "test_records": t, "shuffle_images": True}])``.
    """
    calls = [dict(c) for c in calls]
    todo = [i for i, c in enumerate(calls) if cfg.grpo.workers > 1 and _generated(
        cfg, Path(c["policy_dir"]), c["test_records"], c.get("seed"), c.get("shuffle_images", False),
        c.get("split", "test")) is None]
    out: dict[int, list[str]] = {}
    if len(todo) > 1:
        with worker_pool(cfg) as pool:
            jobs = {i: pool.submit(_generate_job, cfg, {**calls[i], "test_records": list(calls[i]["test_records"])})
                    for i in todo}
            out.update({i: job.result() for i, job in jobs.items()})
    return [out[i] if i in out else generate_test(cfg, **c) for i, c in enumerate(calls)]


def generate_all(cfg, runs: dict[tuple[str, int], Path], test_records: Sequence[Any]) -> dict[tuple[str, int], list[str]]:
    """:func:`generate_test` for every ``(config, seed) -> policy folder`` of ``runs`` (e.g. :func:`eval_runs`),
    with the seed of each key; side by side in ``cfg.grpo.workers`` processes when there are several
    (:func:`generate_side_by_side`). Returns the same keys, same order."""
    gens = generate_side_by_side(cfg, [{"policy_dir": p, "test_records": test_records, "seed": k[1]}
                                       for k, p in runs.items()])
    return dict(zip(runs, gens))


# --------------------------------------------------------------------------- generation


def generate_test(cfg, policy_dir: str | Path, test_records: Sequence[Any], *, seed: int | None = None,
                  shuffle_images: bool = False, force: bool = False, split: str = "test") -> list[str]:
    """Test-split generations of one policy, cached in ``<run>/test_generations_s<seed>.json``; records of another
    split name it (``split="val"``: ``<run>/val_generations_s<seed>.json``), so they never overwrite the test cache.

    Decoding follows the profile (``sft.eval_do_sample``, ``sft.eval_temperature``,
    ``sft.max_new_tokens``); ``seed`` (default ``cfg.seed``) fixes the samples, so the SFT
    policy evaluated with several seeds has a spread like the GRPO runs. The cache is keyed by
    the test study ids, the decoding settings, the policy thread count and the policy itself
    (:func:`sdrlib.training.policy_digest` of ``policy_dir``, so a retrained policy in the same
    folder never reuses the old policy's reports); anything else regenerates.
    ``shuffle_images=True`` is the image-dependence control: study i gets the image of a
    random other study (a fixed permutation), so its report can only match by chance.
    """
    s = cfg.sft
    seed = cfg.seed if seed is None else seed
    policy_dir = Path(policy_dir)
    cache, key = _generation_key(cfg, policy_dir, test_records, seed, shuffle_images, split)
    cached = None if force else _read_generations(cache, key)
    if cached is not None:
        return cached
    t0 = time.perf_counter()
    with training.logs_to(policy_dir.parent / "eval.log"):  # weight-loading bars and warnings go to the run's eval.log
        model, processor = training.load_policy(cfg, policy_dir)
    images = [load_images(r.image_paths, s.max_images) for r in test_records]
    if shuffle_images:
        perm = np.random.default_rng(seed).permutation(len(images))
        images = [images[j] for j in perm]
    gens = generate_reports(model, processor, images, max_new_tokens=s.max_new_tokens, batch_size=s.eval_batch_size,
                            do_sample=s.eval_do_sample, temperature=s.eval_temperature, seed=seed)
    # "seconds": the wall time of this generation (policy load included), for benchmarks/profile_run.py
    atomic_write_text(cache, json.dumps({**key, "seconds": round(time.perf_counter() - t0, 3), "generations": gens},
                                        indent=1))
    return gens


def _generation_key(cfg, policy_dir: Path, test_records: Sequence[Any], seed: int,
                    shuffle_images: bool, split: str = "test") -> tuple[Path, dict]:
    """Where :func:`generate_test` caches one policy's generations of ``split``, and the key they must match."""
    if not split.isidentifier():
        raise ValueError(f"split must be a plain name such as 'test' or 'val', got {split!r}")
    s = cfg.sft
    tag = "_shuffled" if shuffle_images else ""
    cache = Path(policy_dir).parent / f"{split}_generations{tag}_s{seed}.json"
    key = {"study_ids": [r.study_id for r in test_records], "max_new_tokens": s.max_new_tokens,
           "do_sample": s.eval_do_sample, "temperature": s.eval_temperature, "seed": seed,
           "threads": s.threads, "policy": training.policy_digest(Path(policy_dir))}
    return cache, key


def _generated(cfg, policy_dir: Path, test_records: Sequence[Any], seed: int | None,
               shuffle_images: bool = False, split: str = "test") -> list[str] | None:
    """The cached generations of :func:`generate_test` when their key matches, else ``None``."""
    seed = cfg.seed if seed is None else seed
    return _read_generations(*_generation_key(cfg, policy_dir, test_records, seed, shuffle_images, split))


def _read_generations(cache: Path, key: dict) -> list[str] | None:
    """The generations cached in ``cache`` when every value of ``key`` matches, else ``None``."""
    if not cache.is_file():
        return None
    data = json.loads(cache.read_text(encoding="utf-8"))
    return list(data["generations"]) if all(data.get(k) == v for k, v in key.items()) else None


def eval_runs(cfg, policies: dict[tuple[str, int], Path]) -> dict[tuple[str, int], Path]:
    """The (configuration, seed) pairs to evaluate: every GRPO run, and SFT once per seed.

    SFT is trained once; with sampled decoding each seed draws different test reports.
    """
    sft = policies[("sft", cfg.seed)]
    out = {("sft", s): sft for s in seeds_of(cfg)}
    out.update({k: v for k, v in policies.items() if k[0] != "sft"})
    return out


def baseline_reports(train_records: Sequence[Any], n: int, seed: int = 0) -> dict[str, list[str]]:
    """Image-blind baselines as templated reports: ``majority`` and ``random_train`` (see module doc)."""
    texts, _ = training.report_texts(train_records)
    if not texts:
        raise ValueError("no training report has both sections")
    majority = Counter(texts).most_common(1)[0][0]
    rng = np.random.default_rng(seed)
    return {"majority": [majority] * n, "random_train": [texts[i] for i in rng.integers(len(texts), size=n)]}


# --------------------------------------------------------------------------- scoring


def scores_long(scores: dict[tuple[str, int], Any], model: str) -> pd.DataFrame:
    """Corpus values as a long table: ``model, reward, seed, section, metric, value``.

    ``attrs["unavailable"]``: metric group -> why it was not computed (the suite's ``unavailable``,
    merged over the scored systems; a reason that only some systems have names them), which
    :func:`reward_table` prints in its ``not computed`` rows.
    """
    rows = []
    why: dict[str, dict[str, list[str]]] = {}
    for (reward, seed), sc in scores.items():
        summ = sc.summary()
        for sec in sc.sections:
            if sec not in summ:  # nothing computed for this section (e.g. every requested backend missing)
                continue
            for metric, value in zip(summ["metric"], summ[sec]):
                rows.append((model, reward, seed, sec, metric, float(value)))
        for group, reason in getattr(sc, "unavailable", {}).items():
            why.setdefault(group, {}).setdefault(reason, []).append(f"{reward_label(reward)}/s{seed}")
    out = pd.DataFrame(rows, columns=["model", "reward", "seed", "section", "metric", "value"])
    n = len(scores)
    out.attrs["unavailable"] = {
        g: "; ".join(r if len(who) == n else f"{r} ({', '.join(who)})" for r, who in reasons.items())
        for g, reasons in why.items()}
    return out


def reward_cells(long: pd.DataFrame, section: str, group: str, rewards: Sequence[str], *,
                 unavailable: dict[str, str] | None = None) -> pd.DataFrame:
    """The paper-style table (module doc) for one section and metric group of :data:`TABLE_GROUPS`, as numbers:
    one row per cell, columns :data:`CELL_COLUMNS` (``Model``, ``Metric`` row label, ``config`` column label,
    ``mean``, ``sd`` (sample std over seeds; across models in the ``Mean`` block; 0 for one value), ``n`` (seeds,
    or models), ``best`` (the highest mean of its row; ties all), ``note`` (empty where there are numbers, else
    what the cell says instead: ``not computed: <why>``, ``not computed``, ``n/a``)).
    :func:`sdrlib.results.render_cell_table` shows it in the paper's layout.

    ``long`` may hold several models. Each of the group's paper metric names is looked up with
    :func:`sdrlib.metrics.paper_names.find`; one the scores lack (COMET or RadGraph not installed,
    a scorer that failed) is a row whose first cell notes ``not computed: <why>`` (reason from
    ``unavailable``, default ``long.attrs["unavailable"]`` as :func:`scores_long` sets it) and whose
    other cells ``not computed``; a configuration that was scored but lacks a metric the others
    have notes ``not computed`` in that cell, one never run ``n/a``. The ``Mean`` block (mean over
    models, sample std across models) is written only when there are several models: with one it
    would repeat the model's rows with a meaningless ±0.
    """
    if group not in TABLE_GROUPS:
        raise ValueError(f"unknown table group {group!r}; known: {sorted(TABLE_GROUPS)}")
    if unavailable is None:
        unavailable = dict(long.attrs.get("unavailable", {}))
    d = long[long.section == section]
    cols = [reward_label(r) for r in rewards]
    models = list(dict.fromkeys(d.model))
    stats, missing, labels, scored = _group_stats(d, models, TABLE_GROUPS[group], rewards, unavailable)
    if not labels:
        return pd.DataFrame(columns=CELL_COLUMNS)
    blocks = [(m, {lbl: stats.get((m, lbl)) for lbl in labels if (m, lbl) in stats or (m, lbl) in missing})
              for m in models]
    mean_block = _mean_block(stats, missing, models, labels, cols)
    if len(models) > 1:
        blocks.append(("Mean", mean_block))
        scored["Mean"] = set().union(*scored.values())
    return pd.DataFrame(_cell_rows(blocks, cols, missing, scored), columns=CELL_COLUMNS)


#: one cell's numbers: mean, sample std (0 for one value), count
_Cell = tuple[float, float, int]


def _group_stats(d: pd.DataFrame, models: list[str], names: Sequence[str], rewards: Sequence[str],
                 unavailable: dict[str, str]
                 ) -> tuple[dict[tuple[str, str], dict[str, _Cell]], dict[tuple[str, str], str], list[str],
                            dict[str, set[str]]]:
    """Per model, each paper metric of ``names`` looked up in the scores ``d`` (one section): ``(stats, missing,
    labels, scored)``: ``stats[(model, row label)][config]`` the cell's numbers over seeds; ``missing[(model, row
    label)]`` ``not computed: <why>`` for a metric the model's scores lack; the row labels in order; the
    configurations scored per model."""
    stats: dict[tuple[str, str], dict[str, _Cell]] = {}
    missing: dict[tuple[str, str], str] = {}  # (model, row label) -> "not computed: <why>"
    labels: list[str] = []
    scored: dict[str, set[str]] = {}
    for model in models:
        dm = d[d.model == model]
        scored[model] = {reward_label(r) for r in set(dm.reward)}
        present = list(dict.fromkeys(dm.metric))
        for name in names:
            metric = _paper_names.find(name, present)
            label = _paper_names.row_label(name, metric)
            if metric is None:
                label = _paper_names.row_label(name)
                missing[(model, label)] = _paper_names.not_computed(name, unavailable)
            else:
                dmm = dm[dm.metric == metric]
                cell = {}
                for r in rewards:
                    v = dmm[dmm.reward == r].value.to_numpy(float)
                    v = v[np.isfinite(v)]
                    if v.size:
                        cell[reward_label(r)] = (float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0,
                                                 int(v.size))
                stats[(model, label)] = cell
            if label not in labels:
                labels.append(label)
    return stats, missing, labels, scored


def _mean_block(stats: dict[tuple[str, str], dict[str, _Cell]], missing: dict[tuple[str, str], str],
                models: list[str], labels: list[str], cols: list[str]) -> dict[str, dict[str, _Cell] | None]:
    """The ``Mean`` block: per row label and configuration, the mean over models of their means and the sample std
    across models; None for a row no model has (its reason is added to ``missing`` under ``("Mean", label)``)."""
    mean_block: dict[str, dict[str, _Cell] | None] = {}
    for lbl in labels:
        cell = {}
        for c in cols:
            means = [stats[(m, lbl)][c][0] for m in models if (m, lbl) in stats and c in stats[(m, lbl)]]
            if means:
                cell[c] = (float(np.mean(means)), float(np.std(means, ddof=1)) if len(means) > 1 else 0.0,
                           len(means))
        if any((m, lbl) in stats for m in models):
            mean_block[lbl] = cell
        else:
            mean_block[lbl] = None
            missing[("Mean", lbl)] = next(missing[(m, lbl)] for m in models if (m, lbl) in missing)
    return mean_block


def _cell_rows(blocks: list[tuple[str, dict[str, dict[str, _Cell] | None]]], cols: list[str],
               missing: dict[tuple[str, str], str], scored: dict[str, set[str]]) -> list[tuple]:
    """The rows of :data:`CELL_COLUMNS`, block by block: a row no model has gives its reason in the first cell
    (``not computed`` in the others); a configuration without numbers reads ``not computed`` when it was scored,
    ``n/a`` when never run; ``best`` marks the highest mean of the row (ties all)."""
    nan = float("nan")
    rows = []
    for model, block in blocks:
        for lbl, cell in block.items():
            if cell is None:  # no model has it: the reason, never a silent gap
                why = missing[(model, lbl)]
                rows += [(model, lbl, c, nan, nan, 0, False, why if j == 0 else "not computed")
                         for j, c in enumerate(cols)]
                continue
            best = max((v[0] for v in cell.values()), default=np.nan)
            for c in cols:
                if c in cell:
                    rows.append((model, lbl, c, *cell[c], bool(np.isclose(cell[c][0], best)), ""))
                else:
                    rows.append((model, lbl, c, nan, nan, 0, False,
                                 "not computed" if c in scored[model] else "n/a"))
    return rows


def reward_table(long: pd.DataFrame, section: str, group: str, rewards: Sequence[str], *,
                 unavailable: dict[str, str] | None = None) -> pd.DataFrame:
    """The paper-style table shown (:func:`sdrlib.results.render_cell_table` of :func:`reward_cells`): cells are strings
    ``mean ±std`` (``**`` marks the best column of each row, ties all bold), or the cell's note."""
    return render_cell_table(reward_cells(long, section, group, rewards, unavailable=unavailable),
                             [reward_label(r) for r in rewards])


def positive_findings_table(generations: dict[tuple[str, int], list[str]], test_records: Sequence[Any]) -> pd.DataFrame:
    """How many positive findings each configuration's Findings state: does a reward pull towards normal reports?

    ``generations``: ``{(config, seed): [templated report per test study]}`` (as from :func:`generate_test`);
    ``test_records`` the same studies in the same order (their Findings are the ``reference`` row). Each
    Findings section is labelled by the offline labeler (:func:`sdrlib.clinical.labeler.label_report`);
    positive = an observation other than "No Finding" read 1 (uncertain is not positive); a completion
    without a valid template counts as 0 positives. Returns one row per configuration (``reference``
    first): ``seeds``, ``positives per report`` and ``share with no positive finding``, means over seeds.
    Example: ``positive_findings_table({("sft", 0): [r]}, [rec])`` -> 2 rows (reference, sft).
    """
    def npos(text: str) -> int:
        return sum(1 for obs, v in label_report(text).items() if obs != "No Finding" and v == 1)

    refs = [npos(r.findings) for r in test_records]
    rows = [{"config": "reference", "seeds": 1, "positives per report": float(np.mean(refs)),
             "share with no positive finding": float(np.mean([k == 0 for k in refs]))}]
    per: dict[str, list[tuple[float, float]]] = {}
    for (config, _seed), texts in generations.items():
        if len(texts) != len(test_records):
            raise ValueError(f"{config}: {len(texts)} generations for {len(test_records)} test studies")
        ks = [npos(t.findings) if (t := parse_template(x)) is not None else 0 for x in texts]
        per.setdefault(config, []).append((float(np.mean(ks)), float(np.mean([k == 0 for k in ks]))))
    for config, vals in per.items():
        rows.append({"config": reward_label(config), "seeds": len(vals),
                     "positives per report": float(np.mean([v[0] for v in vals])),
                     "share with no positive finding": float(np.mean([v[1] for v in vals]))})
    return pd.DataFrame(rows)
