"""Does an SFT start read the image? Its per-label Findings F1 on validation studies beside an image-blind guesser
and a supervised ceiling (ours; the paper's SFT models read pretrained images, ours is trained from scratch).

GRPO can only sharpen what its SFT start does: a start that cannot tell a label from the image writes the label at
its prior rate, and a reward then trades its recall for precision. This module measures where a start stands, per
CheXpert observation, on one split the caller names (choices are made on validation studies, never test):

- :func:`label_table`: per observation, from the Findings label dicts of the generated and the reference reports
  (the project's labeler, :func:`sdrlib.metrics.clinical.get_labeler`; uncertain counts positive, as CXB-14 does):
  prevalence ``p`` (share of references positive), the policy's positive rate ``q``, precision, recall, F1
  (:func:`sdrlib.metrics.clinical.f1_counts`), and the F1 of an **image-blind guesser** that calls the label
  positive at the policy's own rate ``q`` independently of the image: its expected counts give precision ``p``,
  recall ``q``, F1 ``2pq / (p + q)`` (:func:`guesser_f1`). ``margin`` = F1 - guesser F1; ``clears`` marks a label
  with positives whose margin is at least :data:`MARGIN`.
- :func:`start_summary`: CXB-14 micro / macro F1, macro F1 over the observations with positives, pathologies per
  Findings (the 12 of :data:`sdrlib.vocabulary.PATHOLOGIES`) generated and in the references, the all-normal share,
  and how many observations with positives clear the guesser.
- :func:`probe_ceiling`: a supervised classifier per observation on the same images (logistic regression on
  features of the training images, e.g. :func:`sdrlib.data.stats.pixel_features` or the frozen tower's
  :func:`sdrlib.training.tower.tower_features`), AUROC and F1 on the scored split, its threshold chosen by
  cross-validated F1 on the training split only: what the images carry for a label when a model is told it.

Several sampled draws per study pool their label counts (each reference counted once per draw), so a table rests on
all of them. Shapes: label dicts are one per report (``{observation: 1 | 0 | -1}``, absent = not mentioned);
``x_fit`` / ``x_score`` are ``(n, d)`` feature matrices, ``y_fit`` / ``y_score`` ``(n, L)`` 0/1 targets.

The command ``python -m sdrlib.experiments.sft_start --profile cpu --name default`` trains (or reuses, by run key)
the profile's SFT policy, samples one report per validation study and seed, and writes ``<out>/<name>.csv`` (the
per-observation table, with the ceiling's columns when ``--ceiling`` asks) and ``<out>/<name>.json`` (the summary,
the run's settings, seconds and provenance). Bad input: :class:`StartInputError` naming what is wrong.

Example::

    tab = label_table(pred_labels, ref_labels)
    summ = start_summary(pred_labels, ref_labels, tab)
    ceil = probe_ceiling(pixel_features(train), y_train, pixel_features(val), y_val, OBSERVATIONS)
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.data import load_split
from sdrlib.data.stats import pixel_features
from sdrlib.errors import SDRError
from sdrlib.io import OneLineParser, atomic_write_json, atomic_write_text, one_line_errors
from sdrlib.metrics.clinical import f1_counts, label_matrix
from sdrlib.reports import parse_template
from sdrlib.vocabulary import CHEXPERT_14, PATHOLOGIES

__all__ = ["OBSERVATIONS", "MARGIN", "StartInputError", "guesser_f1", "best_f1_threshold", "findings_of", "label_table",
           "start_summary", "label_targets", "probe_ceiling", "comparison", "draw_spread", "main"]

#: the observations a start is judged on: CheXpert-14 without No Finding (13)
OBSERVATIONS: tuple[str, ...] = tuple(c for c in CHEXPERT_14 if c != "No Finding")
#: F1 margin over the image-blind guesser that counts as reading a label
MARGIN = 0.05


class StartInputError(SDRError, ValueError):
    """Inputs the start's table or ceiling cannot use; the message names them and what to pass instead."""


def guesser_f1(prevalence: Any, rate: Any) -> np.ndarray:
    """F1 of an image-blind guesser that calls a label positive at ``rate`` ``q`` on reports whose reference is
    positive at ``prevalence`` ``p``, from its expected counts (per report: TP ``pq``, FP ``q(1-p)``, FN ``p(1-q)``):
    ``2pq / (p + q)``, 0 where ``p + q = 0``. Arrays broadcast; values must lie in [0, 1]."""
    p, q = np.asarray(prevalence, np.float64), np.asarray(rate, np.float64)
    if np.any(~np.isfinite(p)) or np.any(~np.isfinite(q)) or np.any((p < 0) | (p > 1) | (q < 0) | (q > 1)):
        raise StartInputError(f"prevalence and rate are shares in [0, 1], got {prevalence!r} and {rate!r}")
    s = p + q
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s > 0, 2 * p * q / np.where(s > 0, s, 1.0), 0.0)


def findings_of(generations: Sequence[str]) -> list[str]:
    """The Findings text of each templated generation (:func:`sdrlib.reports.parse_template`); ``""`` (asserts
    nothing) for one off the template."""
    return [p.findings if (p := parse_template(g)) is not None else "" for g in generations]


def _matrices(pred_labels: Sequence[Mapping[str, int]], ref_labels: Sequence[Mapping[str, int]]
              ) -> tuple[np.ndarray, np.ndarray]:
    """``(P, R)``, ``(n, 14)`` 0/1 over :data:`CHEXPERT_14`; the references repeat over pooled draws."""
    n, m = len(pred_labels), len(ref_labels)
    if m == 0 or n == 0 or n % m:
        raise StartInputError(f"{n} generated label dicts for {m} references: pass one generated report per reference "
                              "and draw (draws concatenated, each in the references' order)")
    return label_matrix(pred_labels), np.tile(label_matrix(ref_labels), (n // m, 1))


def label_table(pred_labels: Sequence[Mapping[str, int]], ref_labels: Sequence[Mapping[str, int]]) -> pd.DataFrame:
    """Per observation of :data:`OBSERVATIONS` (and No Finding last, shown, not judged): ``n_ref_pos`` (references
    positive, per draw), ``prevalence``, ``rate`` (the policy's positive share), ``precision`` and ``recall`` (NaN
    where undefined), ``f1``, ``guesser_f1`` (:func:`guesser_f1` at the policy's rate), ``margin`` and ``clears``
    (margin >= :data:`MARGIN`, only for a judged label with positives; NA otherwise).

    ``pred_labels``: one label dict per generated report; ``ref_labels``: one per reference. Several draws: the
    generated dicts of all draws concatenated (``len(pred_labels)`` a multiple of ``len(ref_labels)``)."""
    P, R = _matrices(pred_labels, ref_labels)
    per = f1_counts(P, R)["per_observation"]
    n_draws = len(pred_labels) // len(ref_labels)
    rows = []
    for o in OBSERVATIONS + ("No Finding",):
        j = CHEXPERT_14.index(o)
        pj, rj = P[:, j].astype(bool), R[:, j].astype(bool)
        tp = int((pj & rj).sum())
        p, q = float(rj.mean()), float(pj.mean())
        g = float(guesser_f1(p, q))
        judged = o != "No Finding" and rj.any()
        rows.append({"observation": o, "n_ref_pos": int(rj.sum()) // n_draws,
                     "prevalence": p, "rate": q,
                     "precision": tp / pj.sum() if pj.any() else math.nan,
                     "recall": tp / rj.sum() if rj.any() else math.nan,
                     "f1": float(per[o]), "guesser_f1": g, "margin": float(per[o]) - g,
                     "clears": (float(per[o]) - g >= MARGIN) if judged else pd.NA})
    return pd.DataFrame(rows)


def start_summary(pred_labels: Sequence[Mapping[str, int]], ref_labels: Sequence[Mapping[str, int]],
                  table: pd.DataFrame | None = None) -> dict[str, Any]:
    """One start's numbers: ``micro14``, ``macro14``, ``micro5``, ``macro5`` (CXB-14 conventions,
    :func:`sdrlib.metrics.clinical.f1_counts`), ``macro_present`` (mean F1 over the 14 observations with a
    positive reference) and ``observations_present``; ``pathologies_generated`` / ``pathologies_reference`` (mean
    positive pathologies of :data:`PATHOLOGIES` per Findings) and their ratio; ``normal_share_generated`` /
    ``_reference`` (Findings stating none); ``judged`` (observations of :data:`OBSERVATIONS` with positives) and
    ``clear_guesser`` (how many of them clear the guesser by :data:`MARGIN`). ``table``: :func:`label_table` of
    the same input (computed when None). Point values of one set of draws: not a test."""
    P, R = _matrices(pred_labels, ref_labels)
    tab = label_table(pred_labels, ref_labels) if table is None else table
    f = f1_counts(P, R)
    present = [o for o in CHEXPERT_14 if R[:, CHEXPERT_14.index(o)].any()]
    cols = [CHEXPERT_14.index(o) for o in PATHOLOGIES]
    gp, rp = P[:, cols].sum(1), R[:, cols].sum(1)
    judged = tab[tab.clears.notna()]
    return {"n_reports": len(P), "micro14": f["micro14"], "macro14": f["macro14"], "micro5": f["micro5"],
            "macro5": f["macro5"], "macro_present": float(np.mean([f["per_observation"][o] for o in present])),
            "observations_present": len(present), "pathologies_generated": float(gp.mean()),
            "pathologies_reference": float(rp.mean()),
            "pathologies_ratio": float(gp.mean() / rp.mean()) if rp.mean() > 0 else math.nan,
            "normal_share_generated": float((gp == 0).mean()), "normal_share_reference": float((rp == 0).mean()),
            "judged": int(len(judged)), "clear_guesser": int(judged.clears.astype(bool).sum())}


def label_targets(label_dicts: Sequence[Mapping[str, int]], observations: Sequence[str] = OBSERVATIONS) -> np.ndarray:
    """``(n, L)`` int8 0/1 targets (positive or uncertain) of ``observations`` (CheXpert-14 names) from label dicts
    over CheXpert-14 (other observations in a dict are read, then left out)."""
    unknown = [o for o in observations if o not in CHEXPERT_14]
    if unknown:
        raise StartInputError(f"observations {unknown} are not CheXpert-14 names (sdrlib.vocabulary.CHEXPERT_14)")
    return label_matrix(label_dicts)[:, [CHEXPERT_14.index(o) for o in observations]]


def best_f1_threshold(y: np.ndarray, scores: np.ndarray) -> float:
    """The score threshold with the highest F1 of ``scores >= threshold`` against 0/1 ``y`` (scikit-learn's
    precision-recall curve; the first of equal best). Example: ``best_f1_threshold([0, 1, 1], [0.1, 0.8, 0.6])`` ->
    ``0.6``."""
    from sklearn.metrics import precision_recall_curve

    pr, rc, th = precision_recall_curve(y, scores)
    f = np.where(pr[:-1] + rc[:-1] > 0, 2 * pr[:-1] * rc[:-1] / np.maximum(pr[:-1] + rc[:-1], 1e-12), 0)
    return float(th[int(np.argmax(f))])


def probe_ceiling(x_fit: np.ndarray, y_fit: np.ndarray, x_score: np.ndarray, y_score: np.ndarray,
                  observations: Sequence[str] = OBSERVATIONS, *, C: float = 0.1, folds: int = 3, seed: int = 0,
                  min_class: int = 5) -> pd.DataFrame:
    """A supervised classifier per observation on the same images: logistic regression (scikit-learn, L2, ``C``)
    on ``x_fit`` standardised by its own column means and SDs, scored on ``x_score``.

    The decision threshold is the one with the highest F1 on ``folds``-fold cross-validated probabilities of the
    fitting split (stratified, seeded), so the scored split is read once. An observation with fewer than
    ``min_class`` (or ``folds``) positives or negatives in the fitting split gets NaN; AUROC is NaN where the scored
    split has one class (F1, precision and recall are then scikit-learn's with ``zero_division=0``).
    Returns observation, n_pos_fit, n_pos_score, auroc, f1, precision, recall, threshold."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score, precision_score, recall_score, roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    x_fit, x_score = np.asarray(x_fit, np.float64), np.asarray(x_score, np.float64)
    y_fit, y_score = np.asarray(y_fit), np.asarray(y_score)
    L = len(observations)
    if x_fit.ndim != 2 or x_score.ndim != 2 or x_fit.shape[1] != x_score.shape[1]:
        raise StartInputError(f"features must be (n, d) matrices of one width, got {x_fit.shape} and {x_score.shape}")
    if y_fit.shape != (len(x_fit), L) or y_score.shape != (len(x_score), L):
        raise StartInputError(f"targets must be (n, {L}) for {L} observations, got {y_fit.shape} for {len(x_fit)} "
                              f"fitting rows and {y_score.shape} for {len(x_score)} scored rows")
    if not np.isin(y_fit, (0, 1)).all() or not np.isin(y_score, (0, 1)).all():
        raise StartInputError("targets are 0 / 1 (positive or uncertain = 1): use label_targets")
    if not (np.isfinite(x_fit).all() and np.isfinite(x_score).all()):
        raise StartInputError("features contain NaN or infinity")
    mu, sd = x_fit.mean(0), x_fit.std(0) + 1e-6
    xf, xs = (x_fit - mu) / sd, (x_score - mu) / sd
    rows = []
    for k, o in enumerate(observations):
        a, b = y_fit[:, k].astype(int), y_score[:, k].astype(int)
        row = {"observation": o, "n_pos_fit": int(a.sum()), "n_pos_score": int(b.sum()), "auroc": math.nan,
               "f1": math.nan, "precision": math.nan, "recall": math.nan, "threshold": math.nan}
        if min(a.sum(), len(a) - a.sum()) >= max(min_class, folds):
            clf = LogisticRegression(C=C, max_iter=2000)
            cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
            oof = cross_val_predict(clf, xf, a, cv=cv, method="predict_proba")[:, 1]
            t = best_f1_threshold(a, oof)
            s = clf.fit(xf, a).predict_proba(xs)[:, 1]
            hat = (s >= t).astype(int)
            row.update(threshold=t, f1=float(f1_score(b, hat, zero_division=0)),
                       precision=float(precision_score(b, hat, zero_division=0)),
                       recall=float(recall_score(b, hat, zero_division=0)))
            if len(set(b.tolist())) == 2:
                row["auroc"] = float(roc_auc_score(b, s))
        rows.append(row)
    return pd.DataFrame(rows)


#: the per-observation columns :func:`comparison` sets side by side, one block per start
COMPARED = ("f1", "guesser_f1", "precision", "recall")
#: the summary values :func:`comparison` lists under the observations
SUMMARY_ROWS = ("micro14", "macro14", "macro_present", "pathologies_generated", "pathologies_reference",
                "normal_share_generated", "normal_share_reference", "clear_guesser", "judged")

#: the summary values the command also records per sampling seed (how much one draw moves them)
SEED_KEYS = ("micro14", "macro14", "macro_present", "pathologies_generated", "clear_guesser")


def comparison(out: str | Path, names: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The starts ``names`` written to ``out`` by the command, side by side: ``(per_observation, summary)``.

    ``per_observation``: observation, n_ref_pos, the ceiling columns of the first start that has them, then
    ``<name>: f1`` / ``guesser_f1`` / ``precision`` / ``recall`` per start. ``summary``: one row per
    :data:`SUMMARY_ROWS` value, one column per start. Every start must be on the same studies (``n_ref_pos``
    equal): :class:`StartInputError` otherwise, or when a file is missing."""
    out = Path(out)
    if not names:
        raise StartInputError("name at least one start to compare")
    tabs, infos = {}, {}
    for n in names:
        csv, js = out / f"{n}.csv", out / f"{n}.json"
        if not csv.is_file() or not js.is_file():
            raise StartInputError(f"{csv} or {js} missing: run the command with --name {n} first")
        tabs[n], infos[n] = pd.read_csv(csv), json.loads(js.read_text(encoding="utf-8"))
    first = tabs[names[0]]
    for n, t in tabs.items():
        if list(t.observation) != list(first.observation) or list(t.n_ref_pos) != list(first.n_ref_pos):
            raise StartInputError(f"{n} and {names[0]} were read on different studies (n_ref_pos differ)")
    wide = first[["observation", "n_ref_pos"]].copy()
    for t in tabs.values():
        ceil = [c for c in t.columns if c.startswith("ceiling_")]
        if ceil:
            wide = wide.join(t[ceil])
            break
    for n, t in tabs.items():
        wide = wide.join(t[list(COMPARED)].rename(columns={c: f"{n}: {c}" for c in COMPARED}))
    summ = pd.DataFrame({n: [infos[n]["summary"][k] for k in SUMMARY_ROWS] for n in names},
                        index=pd.Index(SUMMARY_ROWS, name="value"))
    return wide, summ


def draw_spread(out: str | Path, names: Sequence[str]) -> pd.DataFrame:
    """Per start and :data:`SEED_KEYS` value, over its draws (the ``.json`` files' ``per_seed``): n, mean, sd, min,
    max, and Welch's t-test of the draws against the first start's (``p_vs_first``; NaN for the first start and
    where a start has fewer than 2 draws). The starts are read on the same studies, so the draws differ by sampling
    only: the test says whether two policies differ **on these studies** beyond sampling noise, not on other studies
    and not across SFT training seeds (one run per start). :class:`StartInputError` for a missing file."""
    from scipy.stats import ttest_ind

    out = Path(out)
    draws: dict[str, dict[str, np.ndarray]] = {}
    for n in names:
        js = out / f"{n}.json"
        if not js.is_file():
            raise StartInputError(f"{js} missing: run the command with --name {n} first")
        per = json.loads(js.read_text(encoding="utf-8"))["per_seed"]
        draws[n] = {k: np.array([float(v[k]) for v in per.values()]) for k in SEED_KEYS}
    rows = []
    for n in names:
        for k in SEED_KEYS:
            x, x0 = draws[n][k], draws[names[0]][k]
            p = (float(ttest_ind(x, x0, equal_var=False).pvalue) if n != names[0] and len(x) > 1 and len(x0) > 1
                 and (x.std() > 0 or x0.std() > 0) else math.nan)
            rows.append({"start": n, "value": k, "n": len(x), "mean": x.mean(), "sd": x.std(ddof=1) if len(x) > 1
                         else math.nan, "min": x.min(), "max": x.max(), "p_vs_first": p})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- command


def _parse_set(items: Sequence[str]) -> dict[str, Any]:
    import yaml

    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k.strip():
            raise StartInputError(f"--set {it!r}: write KEY=VALUE, e.g. --set sft.max_steps=2000")
        out[k.strip()] = yaml.safe_load(v)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sdrlib.experiments.sft_start --profile cpu --name NAME [--set KEY=VALUE ...] [--runs DIR]
    [--out DIR] [--seeds 0 1] [--ceiling pixels|tower] [--force]`` (module docstring); one line and exit 2 for a
    bad argument, an existing output without ``--force``, or a profile error."""
    @one_line_errors("sft_start")
    def run(argv: Sequence[str] | None) -> int:
        ap = OneLineParser(prog="python -m sdrlib.experiments.sft_start",
                           description="an SFT start's per-label Findings F1 on validation studies")
        ap.add_argument("--profile", default="cpu")
        ap.add_argument("--name", help="the run's name: <out>/<name>.csv and .json")
        ap.add_argument("--compare", nargs="+", metavar="NAME",
                        help="no run: print the starts NAME ... of --out side by side (Markdown)")
        ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a profile value (YAML), e.g. --set sft.max_steps=2000 (repeatable)")
        ap.add_argument("--runs", default=None, help="paths.runs for this start (default: runs/sft_start/<name>)")
        ap.add_argument("--out", default="docs/evidence/sft_start", help="folder of the tables")
        ap.add_argument("--seeds", type=int, nargs="+", default=None, help="sampling seeds (default: the profile's)")
        ap.add_argument("--ceiling", choices=("none", "pixels", "tower"), default="none",
                        help="also fit the supervised ceiling on pixels (32 x 32) or the policy's tower features")
        ap.add_argument("--force", action="store_true", help="overwrite <out>/<name>.* written before")
        ap.add_argument("--sft-seed", type=int, default=None,
                        help="the SFT run's seed (default: the profile's seed, which also makes the data; this one "
                             "seeds the policy only, so two SFT seeds are read on the same studies)")
        args = ap.parse_args(argv)
        if args.compare:
            wide, summ = comparison(args.out, args.compare)
            print(wide.to_markdown(index=False, floatfmt=".3f") + "\n\n" + summ.to_markdown(floatfmt=".3f")
                  + "\n\n" + draw_spread(args.out, args.compare).to_markdown(index=False, floatfmt=".3f"))
            return 0
        if not args.name:
            ap.error("--name is required to run a start (or --compare NAME ... to show written ones)")
        if not args.name.replace("-", "_").isidentifier():
            ap.error(f"--name {args.name!r}: letters, digits, - and _ only")
        if args.seeds is not None and any(s < 0 for s in args.seeds):
            ap.error("--seeds are non-negative integers")
        if args.sft_seed is not None and args.sft_seed < 0:
            ap.error("--sft-seed is a non-negative integer")
        from sdrlib.config import load_profile
        from sdrlib.numerics import pin_kernel_path

        over = _parse_set(args.set)
        runs = args.runs or str(Path("runs") / "sft_start" / args.name)
        cfg = load_profile(args.profile, {**over, "paths.runs": runs})
        out = Path(args.out)
        targets = [out / f"{args.name}.csv", out / f"{args.name}.json"]
        if not args.force and any(t.exists() for t in targets):
            raise StartInputError(f"{[str(t) for t in targets if t.exists()]} exist: pass --force to overwrite, or "
                                  "another --name")
        env = dict(os.environ)
        if argv is None and pin_kernel_path(cfg.kernel_path, env):  # as python -m sdrlib.training (sdrlib.numerics)
            os.execve(sys.executable, [sys.executable, "-m", "sdrlib.experiments.sft_start", *sys.argv[1:]], env)
        return _run(cfg, args.name, out, args.seeds or [cfg.seed], args.ceiling, over, args.sft_seed)

    return run(argv)


def _run(cfg: Any, name: str, out: Path, seeds: Sequence[int], ceiling: str, over: Mapping[str, Any],
         sft_seed: int | None = None) -> int:
    """The command's work: SFT (reused by run key), validation draws, the labeler, the tables."""
    from sdrlib import training
    from sdrlib.experiments.posttrain import generate_test
    from sdrlib.metrics.clinical import get_labeler
    from sdrlib.results import provenance

    train, val = load_split(cfg, "train"), load_split(cfg, "val")
    t0 = time.perf_counter()
    sft_seed = cfg.seed if sft_seed is None else sft_seed
    res = training.sft(cfg, train, seed=sft_seed)
    t_sft = time.perf_counter() - t0
    backend, label, detail = get_labeler(cfg.metrics.clinical.backend)
    ref = label([r.findings for r in val])
    t1 = time.perf_counter()
    per_seed: dict[int, list[dict[str, int]]] = {
        s: label(findings_of(generate_test(cfg, res.final, val, seed=s, split="val"))) for s in seeds}
    t_gen = time.perf_counter() - t1
    preds = [d for s in seeds for d in per_seed[s]]
    tab = label_table(preds, ref)
    summ = start_summary(preds, ref, tab)
    spread = {str(s): {k: start_summary(v, ref)[k] for k in SEED_KEYS} for s, v in per_seed.items()}
    ceil = None
    if ceiling != "none":
        y_fit, y_score = label_targets(label([r.findings for r in train])), label_targets(ref)
        if ceiling == "pixels":
            xf, xs = pixel_features(train), pixel_features(val)
        else:
            from sdrlib.training.tower import tower_features

            model, proc = training.load_policy(cfg, res.final)
            xf, xs = tower_features(model, proc, train), tower_features(model, proc, val)
        ceil = probe_ceiling(xf, y_fit, xs, y_score, seed=cfg.seed)
        tab = tab.merge(ceil[["observation", "auroc", "f1"]].rename(
            columns={"auroc": f"ceiling_auroc_{ceiling}", "f1": f"ceiling_f1_{ceiling}"}), on="observation", how="left")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{name}.csv", tab.to_csv(index=False, float_format="%.4f"))
    info = {"name": name, "split": "val", "n_studies": len(val), "seeds": list(seeds), "overrides": dict(over),
            "labeler": f"{backend}: {detail}", "summary": summ, "per_seed": spread,
            "sft_seconds": round(res.seconds, 1),
            "sft_reused": bool(res.reused), "wall_seconds_sft_call": round(t_sft, 1),
            "wall_seconds_generation": round(t_gen, 1), "sft_steps": cfg.sft.max_steps, "sft_seed": sft_seed,
            "n_train": len(train),
            "ceiling": ceiling, "provenance": provenance(cfg)}
    atomic_write_json(out / f"{name}.json", info, sort_keys=False)
    show = tab.drop(columns=["clears"]).round(3)
    print(show.to_string(index=False))
    print(json.dumps(summ, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
