"""The study's pilot: does the policy measurably move, and how far, before the study spends its hours?

One GRPO run (one reward, one seed) from the profile's SFT policy, extended step bucket by step bucket
(``training.grpo(..., max_steps=k)`` continues from the last checkpoint: the learning rate is constant), and after
each bucket the policy is read on **validation** studies (never test): its mean training reward on them (the reward
the run optimises, :func:`sdrlib.experiments.audit.audit_scorer`), the share of Findings that state no positive
finding (``normal_share``: a policy that drifts to normal reports raises it), and per-report CheXpert-14 label F1
of the Findings (offline labeler, against the reference Findings' labels), and two readings that see a drift to
normal reports where the reward and per-report F1 rise through it: CXB-14 macro F1 and the gap between the
pathologies stated per Findings and the references'. Beside them, from the run's own log
(``curves.csv``), the bucket's mean KL to the SFT policy, mean training reward and step seconds. Bucket 0 is the SFT
policy itself.

The table (:func:`pilot_table`) is what the study's step count is chosen from (``configs/study_blind_start.yaml`` says
which rule it applied to the study on record); the pilot writes nothing but the run under ``runs/`` and its validation samples there.

Bad input (:class:`~sdrlib.experiments.study.runs.StudyError`, before any training): buckets and ``n_val`` that are not
whole numbers >= 1, ``n_val`` beyond the profile's validation studies, seeds outside [0, 2**32 - 1] or repeated,
no variant or seed, a variant that is not ``{key: value}`` overrides or that the profile refuses.

Example: ``pilot_table(cfg, "chamfer", buckets=[32, 64, 128], n_val=100)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.data import load_split
from sdrlib import training
from sdrlib.clinical import label_report
from sdrlib.experiments.audit import audit_scorer
from sdrlib.experiments.posttrain import generate_test
from sdrlib.experiments.study.runs import StudyError, check_seeds
from sdrlib.metrics.clinical import f1_counts, label_matrix, per_sample_f1
from sdrlib.reports import parse_template
from sdrlib.vocabulary import CHEXPERT_14

__all__ = ["val_reading", "pilot_table", "choice_table"]

#: the pathologies of the normal share: CheXpert's 14 without "No Finding" and "Support Devices"
_PATHO = [j for j, o in enumerate(CHEXPERT_14) if o not in ("No Finding", "Support Devices")]


def val_reading(cfg: Any, policy: Any, val_records: Sequence[Any], scorer: Any, *, seed: int) -> dict[str, float]:
    """One policy on validation studies: ``val_reward`` (mean total reward of ``scorer``), ``normal_share`` (Findings
    with no positive finding other than support devices), ``label_f1`` (mean per-report CheXpert-14 F1 of the
    Findings), ``parsed`` (share of reports on the template), and two readings that fall when the policy drifts to
    normal reports, a drift the reward and ``label_f1`` can rise through: ``macro14`` (CXB-14 macro F1 of the Findings, corpus counts) and
    ``pathologies`` / ``ref_pathologies`` / ``pathology_gap`` (mean pathologies stated per Findings, of the 12
    CheXpert pathologies, generated and reference, and generated minus reference)."""
    gens = generate_test(cfg, policy, val_records, seed=seed, split="val")
    refs_f = [r.findings for r in val_records]
    refs_i = [r.impression for r in val_records]
    total = np.asarray(scorer.score(gens, refs_f, refs_i).total, np.float64)
    parsed = [parse_template(g) for g in gens]
    findings = [p.findings if p is not None else "" for p in parsed]
    P = label_matrix([label_report(f) for f in findings])  # uncertain counts positive, as in the evaluation
    R = label_matrix([label_report(f) for f in refs_f])
    patho, ref_patho = float(P[:, _PATHO].sum(1).mean()), float(R[:, _PATHO].sum(1).mean())
    return {"val_reward": float(total.mean()), "normal_share": float((P[:, _PATHO].sum(1) == 0).mean()),
            "ref_normal_share": float((R[:, _PATHO].sum(1) == 0).mean()),
            "label_f1": float(per_sample_f1(P, R).mean()), "parsed": float(np.mean([p is not None for p in parsed])),
            "macro14": f1_counts(P, R)["macro14"], "pathologies": patho, "ref_pathologies": ref_patho,
            "pathology_gap": patho - ref_patho}


def _count(value: Any, what: str) -> int:
    """``value`` as a whole number >= 1 (not a bool, float or text), else :class:`StudyError` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise StudyError(f"{what} = {value!r}: a whole number >= 1")
    return int(value)


def _val(cfg: Any, n_val: Any) -> list:
    """The first ``n_val`` validation studies; :class:`StudyError` when ``n_val`` is no count or exceeds them."""
    val = load_split(cfg, "val")
    if _count(n_val, "n_val") > len(val):
        raise StudyError(f"n_val = {n_val}: the profile has {len(val)} validation studies (data.n_val)")
    return val[:n_val]


def _bucket_log(curves: pd.DataFrame, lo: int, hi: int) -> dict[str, float]:
    c = curves[(curves["step"] > lo) & (curves["step"] <= hi)]
    out = {}
    for col, name in (("kl", "kl"), ("reward", "train_reward"), ("step_seconds", "step_seconds")):
        out[name] = float(c[col].mean()) if col in c and len(c) else float("nan")
    return out


def pilot_table(cfg: Any, reward: str, *, buckets: Sequence[int], n_val: int, seed: int | None = None,
                embedder: Any = None, sft_policy: str | Path | None = None, log: Any = print) -> pd.DataFrame:
    """Train ``reward`` at ``seed`` (default the profile's) up to each step count of ``buckets`` in turn and read
    the policy on the first ``n_val`` validation studies after each (module doc). One row per bucket (0 = SFT):
    ``steps, kl, train_reward, step_seconds`` (the bucket's log means; NaN at 0), then :func:`val_reading`'s
    columns. ``sft_policy``: start from this saved policy instead of the profile's
    SFT run (trained or reused by :func:`sdrlib.training.sft`)."""
    from sdrlib.embedding import SentenceEmbedder

    if isinstance(buckets, (str, bytes)) or not buckets:
        raise StudyError(f"buckets = {buckets!r}: a list of step counts (whole numbers >= 1)")
    b = sorted({_count(x, "a bucket") for x in buckets})
    seed = cfg.seed if seed is None else check_seeds([seed], "seed")[0]
    train, val = load_split(cfg, "train"), _val(cfg, n_val)
    embedder = embedder or SentenceEmbedder.from_config(cfg)
    scorer = audit_scorer(reward, embedder, cfg.grpo, train)
    base = Path(sft_policy) if sft_policy is not None else training.sft(cfg, train).final
    rows = [{"steps": 0, "kl": float("nan"), "train_reward": float("nan"), "step_seconds": float("nan"),
             **val_reading(cfg, base, val, scorer, seed=seed)}]
    log(f"pilot: SFT {rows[-1]}")
    prev = 0
    for k in b:
        res = training.grpo(cfg, reward, base, train, seed=seed, embedder=embedder, max_steps=k)
        curves = pd.read_csv(res.curves)
        rows.append({"steps": k, **_bucket_log(curves, prev, k),
                     **val_reading(cfg, res.final, val, scorer, seed=seed)})
        log(f"pilot: {k} steps {rows[-1]}")
        prev = k
    return pd.DataFrame(rows)


#: the ``sft.*`` settings a choice's GRPO runs and their validation reading take from a variant (the SFT policy
#: itself is the profile's, so every other ``sft.*`` key would not apply)
CHOICE_SFT_KEYS = ("tiny_freeze_vision", "threads", "max_images", "max_new_tokens", "eval_do_sample",
                   "eval_temperature", "eval_batch_size")
#: ``grpo.*`` keys the choice sets itself (``--reward``, ``--seeds``) or never reads
CHOICE_GRPO_FIXED = ("rewards", "seeds", "eval_n", "eval_draws")


def check_variant_keys(variants: dict[str, dict[str, Any]]) -> None:
    """:class:`StudyError` naming a variant key a choice would not apply: anything but ``grpo.*`` (less
    :data:`CHOICE_GRPO_FIXED`) and ``sft.`` + :data:`CHOICE_SFT_KEYS`. Before: ``sft.max_steps=99`` was never applied
    (the SFT policy is the profile's), ``paths.runs=...`` was replaced by the choice's own folder, ``data.*`` and
    ``embedding.*`` were read from the profile."""
    for name, over in variants.items():
        for key in over:
            section, _, rest = str(key).partition(".")
            ok = ((section == "grpo" and rest and rest.split(".")[0] not in CHOICE_GRPO_FIXED)
                  or (section == "sft" and rest in CHOICE_SFT_KEYS))
            if not ok:
                raise StudyError(
                    f"variant {name!r}: {key} is not applied by a choice (it trains GRPO of one reward from the "
                    f"profile's SFT policy, on the profile's data, in its own runs folder): a variant sets grpo.* "
                    f"(not {', '.join('grpo.' + k for k in CHOICE_GRPO_FIXED)}: --reward / --seeds) or "
                    f"{', '.join('sft.' + k for k in CHOICE_SFT_KEYS)}; settings for every variant go in --set")


def choice_table(cfg: Any, reward: str, variants: dict[str, dict[str, Any]], *, seeds: Sequence[int], n_val: int,
                 overrides: dict[str, Any] | None = None, sft_policy: str | Path | None = None,
                 log: Any = print) -> pd.DataFrame:
    """A setup choice made on validation studies: GRPO of ``reward`` under each variant's profile overrides (e.g.
    ``{"dr_grpo": {}, "grpo": {"grpo.loss_type": "grpo"}}``), every seed of ``seeds``, all from the profile's own
    SFT policy, each variant in its own runs folder (``<runs>/choice/<variant>``, so a variant never reuses
    another's run), read on the first ``n_val`` validation studies (:func:`val_reading`). One row per (variant,
    seed): ``variant, seed, kl_last`` (mean KL of the last quarter of steps), then :func:`val_reading`'s columns. A variant sets only what the choice applies (:func:`check_variant_keys`:
    ``grpo.*`` and the ``sft.*`` keys GRPO reads, :data:`CHOICE_SFT_KEYS`): the SFT policy is the profile's.
    ``overrides``: those ``cfg`` was loaded with
    (each variant is the profile ``cfg.name`` with ``overrides`` and then its own); ``sft_policy`` as in
    :func:`pilot_table`."""
    from sdrlib.config import load_profile
    from sdrlib.embedding import SentenceEmbedder

    if not isinstance(variants, dict) or not variants or not all(
            isinstance(k, str) and k.isidentifier() and isinstance(v, dict) for k, v in variants.items()):
        raise StudyError(f"variants = {variants!r}: at least one, as {{name: {{key: value}}}} (e.g. {{'grpo': "
                         "{'grpo.loss_type': 'grpo'}})")
    check_variant_keys(variants)
    if not check_seeds(seeds):
        raise StudyError("seeds = []: at least one seed")
    vcfgs = {name: load_profile(cfg.name, {**(overrides or {}), **over,  # every variant loads before any training
                                           "paths.runs": str(cfg.runs_dir / "choice" / name)})
             for name, over in variants.items()}
    train, val = load_split(cfg, "train"), _val(cfg, n_val)
    embedder = SentenceEmbedder.from_config(cfg)
    scorer = audit_scorer(reward, embedder, cfg.grpo, train)
    base = Path(sft_policy) if sft_policy is not None else training.sft(cfg, train).final
    rows = []
    for name, vcfg in vcfgs.items():
        for s in seeds:
            res = training.grpo(vcfg, reward, base, train, seed=s, embedder=embedder)
            c = pd.read_csv(res.curves)
            kl = c["kl"].dropna().to_numpy() if "kl" in c else np.array([])
            rows.append({"variant": name, "seed": s,
                         "kl_last": float(kl[-max(1, len(kl) // 4):].mean()) if len(kl) else float("nan"),
                         **val_reading(vcfg, res.final, val, scorer, seed=s)})
            log(f"choice: {name} seed {s} {rows[-1]}")
    return pd.DataFrame(rows)
