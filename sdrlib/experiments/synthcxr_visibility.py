"""Can the SynthCXR images carry each label? A per-observation pixel ceiling at two resolutions, and how strongly each
drawn finding shows in the pixels (ours: a check on the synthetic generator, not a method of the paper).

- :func:`ceilings`: :func:`sdrlib.experiments.sft_start.probe_ceiling` (logistic regression, C 0.1, threshold by
  3-fold cross-validated F1 on the training split) on the standardised pixels of the profile's training images at
  each size (:func:`sdrlib.data.stats.image_features`; 32 px is the ceiling of ``sft_start --ceiling pixels``, 96
  px the policy's input at the default ``data.image_size``), targets the labeler's reading of each Findings
  (uncertain counts positive), AUROC and F1 on the validation split. Columns ``auroc_<px>`` / ``f1_<px>``.
- :func:`finding_signal`: per drawn finding kind and variant (fracture acute / healed, atelectasis stated / hedged /
  compressive, nodule / mass, a severity where the kind has one), over the training studies that have it: the
  study's findings and devices drawn twice by :func:`sdrlib.data.synthcxr.render_image` with one seeded generator
  (the same pose, anatomy, exposure and noise), with and without that finding; the difference of their
  :func:`~sdrlib.data.stats.image_features` at ``signal_size`` px divided per pixel by the SD of the normal
  training studies' features (a d'). ``max_d``: the mean over studies of the largest absolute d' (the finding's
  most visible pixel against what normal images vary by there); ``sum_d``: the mean of their sum (its extent).
  Pneumonia is left out (drawn as its consolidation).

The ceiling is a linear probe: it reads a finding well when the finding adds the same pixels across studies, and
poorly when a small finding lands at many sites (a fracture at one of 6 ribs on either side), however visible each
one is; ``max_d`` does not depend on where the finding lands.

- :func:`cnn_ceiling` (``--ceiling cnn`` or ``both``): the position-tolerant ceiling, a small convolutional network
  (four 3 x 3 convolution blocks, two 2 x 2 poolings, a global max over positions, one linear layer to the 13
  observations; about 70k weights) trained from scratch on the training images at ``image_size`` px (standardised
  as above) with a class-weighted multi-label loss, seeded. It is fitted on 80 % of the training split; each
  observation's threshold is the one with the highest F1 on the other 20 %, so the scored split is read once.
  Columns ``auroc_cnn``, its 95 % interval over ``bootstrap`` resamples of the scored studies
  (``auroc_cnn_lo`` / ``auroc_cnn_hi``), and ``f1_cnn``. A finding that lands at many sites is read here wherever
  it lands, so a linear ceiling near chance beside a high one here means the images carry the finding and a reader
  must look for it in more than one place.

Command: ``python -m sdrlib.experiments.synthcxr_visibility --profile cpu --name NAME [--sizes 32 96]
[--ceiling linear|cnn|both] [--cnn-epochs 12] [--out DIR] [--set KEY=VALUE] [--force]`` writes ``<out>/<name>.csv``
(ceilings), ``<out>/<name>_signal.csv`` and ``<out>/<name>.json`` (settings, generator version, seconds,
provenance); ``--compare A B`` prints two written runs side by side (Markdown). The profile's SynthCXR folder is
generated on first use (``paths.data``). Bad input: :class:`VisibilityInputError` naming what is wrong.

Example::

    sig = finding_signal(train, image_size=96, seed=0)  # kind, variant, n_studies, max_d, sum_d
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.data import load_split
from sdrlib.data.records import Record
from sdrlib.data.stats import image_features, pixel_features
from sdrlib.data.synthcxr import GENERATOR_VERSION, Finding, render_image
from sdrlib.errors import SDRError
from sdrlib.experiments.sft_start import OBSERVATIONS, best_f1_threshold, label_targets, probe_ceiling
from sdrlib.io import OneLineParser, atomic_write_json, atomic_write_text, one_line_errors

__all__ = ["VisibilityInputError", "ceilings", "cnn_ceiling", "finding_signal", "variant", "comparison", "main"]

#: the first draw of each study's signal generator, after the run seed and the study index
_SIGNAL_STREAM = 0x715


class VisibilityInputError(SDRError, ValueError):
    """Inputs the visibility tables cannot use; the message names them and what to pass instead."""


def variant(f: Finding) -> str:
    """The row a finding counts in within its kind: ``acute`` / ``healed`` (fracture), ``stated`` / ``hedged`` /
    ``compressive`` (atelectasis), ``nodule`` / ``mass``, ``apical`` / ``lateral`` (pleural thickening), else its
    severity or ``""``."""
    if f.kind == "atelectasis":
        return "compressive" if f.detail == "compressive" else "hedged" if f.hedged else "stated"
    if f.kind in ("fracture", "nodule", "pleural_other"):
        return f.detail or ""
    return f.severity or ""


def ceilings(train: Sequence[Record], val: Sequence[Record], y_fit: np.ndarray, y_score: np.ndarray,
             sizes: Sequence[int] = (32, 96), seed: int = 0) -> pd.DataFrame:
    """Per observation of :data:`OBSERVATIONS`: ``n_pos_fit``, ``n_pos_score`` and ``auroc_<px>`` / ``f1_<px>`` of
    the pixel ceiling at each size in ``sizes`` (module docstring). ``y_fit`` / ``y_score``: ``(n, 13)`` 0/1
    targets of ``train`` / ``val`` (:func:`~sdrlib.experiments.sft_start.label_targets`)."""
    if not sizes or any(int(s) < 4 for s in sizes):
        raise VisibilityInputError(f"sizes {list(sizes)}: give one or more image sides of at least 4 px, e.g. 32 96")
    out = None
    for s in sizes:
        c = probe_ceiling(pixel_features(train, int(s)), y_fit, pixel_features(val, int(s)), y_score, seed=seed)
        c = c[["observation", "n_pos_fit", "n_pos_score", "auroc", "f1"]].rename(
            columns={"auroc": f"auroc_{int(s)}", "f1": f"f1_{int(s)}"})
        out = c if out is None else out.merge(c[["observation", f"auroc_{int(s)}", f"f1_{int(s)}"]], on="observation")
    return out


def cnn_ceiling(x_fit: np.ndarray, y_fit: np.ndarray, x_score: np.ndarray, y_score: np.ndarray,
                observations: Sequence[str] = OBSERVATIONS, *, epochs: int = 12, seed: int = 0, threads: int = 2,
                holdout: float = 0.2, bootstrap: int = 1000, min_class: int = 5) -> pd.DataFrame:
    """The position-tolerant ceiling (module docstring) per observation: ``observation``, ``n_pos_fit``,
    ``n_pos_score``, ``auroc_cnn``, ``auroc_cnn_lo``, ``auroc_cnn_hi``, ``f1_cnn``.

    ``x_fit`` / ``x_score``: ``(n, s, s)`` standardised images (:func:`~sdrlib.data.stats.pixel_features` reshaped);
    ``y_fit`` / ``y_score``: ``(n, len(observations))`` 0/1 targets. An observation with fewer than ``min_class``
    positives or negatives in the fitting part or the threshold part gets NaN; AUROC is NaN where the scored split
    has one class. Deterministic for a given ``seed`` and ``threads`` on one machine."""
    import torch
    from sklearn.metrics import f1_score, roc_auc_score

    x_fit, x_score = np.asarray(x_fit, np.float32), np.asarray(x_score, np.float32)
    y_fit, y_score, L = np.asarray(y_fit), np.asarray(y_score), len(observations)
    if x_fit.ndim != 3 or x_score.shape[1:] != x_fit.shape[1:] or x_fit.shape[1] != x_fit.shape[2]:
        raise VisibilityInputError(f"images must be (n, s, s) arrays of one size, got {x_fit.shape} and "
                                   f"{x_score.shape}")
    if y_fit.shape != (len(x_fit), L) or y_score.shape != (len(x_score), L) or not (
            np.isin(y_fit, (0, 1)).all() and np.isin(y_score, (0, 1)).all()):
        raise VisibilityInputError(f"targets must be 0 / 1 arrays (n, {L}) matching the images, got {y_fit.shape} "
                                   f"and {y_score.shape}")
    if not (np.isfinite(x_fit).all() and np.isfinite(x_score).all()):
        raise VisibilityInputError("images contain NaN or infinity")
    if epochs < 1 or not 0 < holdout < 1:
        raise VisibilityInputError(f"epochs {epochs}, holdout {holdout}: give epochs >= 1 and 0 < holdout < 1")
    rng = np.random.default_rng([seed, 0xC22])
    order = rng.permutation(len(x_fit))
    cut = int(round(len(order) * (1 - holdout)))
    fit, thr = order[:cut], order[cut:]
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(seed)
        net = _cnn(L)
        xf, yf = torch.from_numpy(x_fit[fit, None]), torch.from_numpy(y_fit[fit].astype(np.float32))
        pos = yf.mean(0).clamp(1e-3, 1 - 1e-3)
        loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=((1 - pos) / pos).clamp(max=20.0))
        opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=1e-4)
        for _ in range(epochs):
            net.train()
            perm = torch.randperm(len(xf))
            for i in range(0, len(xf), 64):
                b = perm[i:i + 64]
                opt.zero_grad()
                loss_fn(net(xf[b]), yf[b]).backward()
                opt.step()
        net.eval()
        with torch.no_grad():
            s_thr = torch.sigmoid(net(torch.from_numpy(x_fit[thr, None]))).numpy()
            s_score = torch.sigmoid(net(torch.from_numpy(x_score[:, None]))).numpy()
    finally:
        torch.set_num_threads(old_threads)
    boot = np.random.default_rng([seed, 0xB00]).integers(0, len(x_score), (bootstrap, len(x_score)))
    rows = []
    for k, o in enumerate(observations):
        a, t, b = y_fit[fit, k].astype(int), y_fit[thr, k].astype(int), y_score[:, k].astype(int)
        row = {"observation": o, "n_pos_fit": int(y_fit[:, k].sum()), "n_pos_score": int(b.sum()),
               "auroc_cnn": np.nan, "auroc_cnn_lo": np.nan, "auroc_cnn_hi": np.nan, "f1_cnn": np.nan}
        if min(a.sum(), len(a) - a.sum(), t.sum(), len(t) - t.sum()) >= min_class:
            cut = best_f1_threshold(t, s_thr[:, k])
            row["f1_cnn"] = float(f1_score(b, (s_score[:, k] >= cut).astype(int), zero_division=0))
            if 0 < b.sum() < len(b):
                row["auroc_cnn"] = float(roc_auc_score(b, s_score[:, k]))
                au = [roc_auc_score(b[i], s_score[i, k]) for i in boot if 0 < b[i].sum() < len(i)]
                row["auroc_cnn_lo"], row["auroc_cnn_hi"] = (float(q) for q in np.quantile(au, [0.025, 0.975]))
        rows.append(row)
    return pd.DataFrame(rows)


def _cnn(n_out: int):
    """The ceiling's network: (n, 1, s, s) -> (n, n_out) logits, s >= 4."""
    import torch

    def block(i: int, o: int) -> list:
        return [torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU()]

    return torch.nn.Sequential(*block(1, 16), torch.nn.MaxPool2d(2), *block(16, 32), torch.nn.MaxPool2d(2),
                               *block(32, 64), *block(64, 64), torch.nn.AdaptiveMaxPool2d(1), torch.nn.Flatten(),
                               torch.nn.Linear(64, n_out))


def _truth(r: Record) -> list[Finding]:
    """The drawn findings of a SynthCXR record (``meta["truth"]``)."""
    if not isinstance(r.meta, dict) or "truth" not in r.meta:
        raise VisibilityInputError(f"{r.study_id} has no meta['truth']: the finding signal needs SynthCXR records")
    return [Finding(**d) for d in r.meta["truth"]]


def finding_signal(records: Sequence[Record], image_size: int = 96, seed: int = 0, signal_size: int = 32
                   ) -> pd.DataFrame:
    """Per kind and :func:`variant`: ``n_studies``, ``max_d``, ``sum_d`` over the SynthCXR ``records`` that have
    it (module docstring); the SD comes from the records without findings, of which there must be at least 10.
    Study ``i`` of ``records`` is drawn with ``numpy.random.default_rng([seed, i, 0x715])``."""
    truths = [_truth(r) for r in records]
    normal = [r for r, t in zip(records, truths) if not t]
    if len(normal) < 10:
        raise VisibilityInputError(f"{len(normal)} records without findings: the SD needs at least 10; pass more "
                                   "studies (about half of SynthCXR's are normal)")
    sd = pixel_features(normal, signal_size).std(axis=0) + 1e-6
    rows: dict[tuple[str, str], list[np.ndarray]] = {}
    for i, (r, truth) in enumerate(zip(records, truths)):
        devices = list(r.meta.get("devices") or [])
        for kind in sorted({f.kind for f in truth} - {"pneumonia"}):
            imgs = [render_image([f for f in truth if keep or f.kind != kind], devices,
                                 np.random.default_rng([seed, i, _SIGNAL_STREAM]), size=image_size)
                    for keep in (True, False)]
            x = image_features(imgs, signal_size)
            key = (kind, variant(next(f for f in truth if f.kind == kind)))
            rows.setdefault(key, []).append(np.abs(x[0] - x[1]) / sd)
    out = [{"kind": k, "variant": v, "n_studies": len(d), "max_d": float(np.mean([a.max() for a in d])),
            "sum_d": float(np.mean([a.sum() for a in d]))} for (k, v), d in sorted(rows.items())]
    return pd.DataFrame(out, columns=["kind", "variant", "n_studies", "max_d", "sum_d"])


def comparison(out: str | Path, names: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs ``names`` written to ``out``, side by side: ``(ceilings, signal)``, each value column prefixed
    ``<name>: ``. The runs must share the observations' supports (``n_pos_fit`` / ``n_pos_score``: the same
    studies and labels): :class:`VisibilityInputError` otherwise, or when a file is missing."""
    out = Path(out)
    if not names or len(set(names)) != len(names):
        raise VisibilityInputError(f"runs {list(names)}: name one or more runs, each once")
    ceil, sig = None, None
    for n in names:
        files = [out / f"{n}.csv", out / f"{n}_signal.csv"]
        if not all(f.is_file() for f in files):
            raise VisibilityInputError(f"{[str(f) for f in files if not f.is_file()]} missing: run --name {n} first")
        c, s = pd.read_csv(files[0]), pd.read_csv(files[1], keep_default_na=False)  # variant "" stays ""
        vals = [k for k in c.columns if k.startswith(("auroc_", "f1_"))]
        c = c.rename(columns={k: f"{n}: {k}" for k in vals})
        s = s.rename(columns={k: f"{n}: {k}" for k in ("n_studies", "max_d", "sum_d")})
        if ceil is None:
            ceil, sig = c, s
            continue
        if list(c.n_pos_fit) != list(ceil.n_pos_fit) or list(c.n_pos_score) != list(ceil.n_pos_score):
            raise VisibilityInputError(f"run {n} has other supports than {names[0]}: not the same studies or labels")
        ceil = ceil.merge(c.drop(columns=["n_pos_fit", "n_pos_score"]), on="observation", how="left")
        sig = sig.merge(s, on=["kind", "variant"], how="outer", sort=True)
    return ceil, sig


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sdrlib.experiments.synthcxr_visibility --profile cpu --name NAME [--sizes 32 96]
    [--ceiling linear|cnn|both] [--cnn-epochs N] [--out DIR] [--set KEY=VALUE ...] [--force]`` or ``--compare A B``
    (module docstring); one line and exit 2 for a bad argument, an existing output without ``--force``, or a profile
    error."""
    @one_line_errors("synthcxr_visibility")
    def run(argv: Sequence[str] | None) -> int:
        from sdrlib.experiments.sft_start import _parse_set

        ap = OneLineParser(prog="python -m sdrlib.experiments.synthcxr_visibility",
                           description="per-observation pixel ceilings and per-finding pixel signal of SynthCXR")
        ap.add_argument("--profile", default="cpu")
        ap.add_argument("--name", help="the run's name: <out>/<name>.csv, <name>_signal.csv and <name>.json")
        ap.add_argument("--compare", nargs="+", metavar="NAME", help="no run: print runs NAME ... side by side")
        ap.add_argument("--sizes", type=int, nargs="+", default=[32, 96], help="image sides of the ceilings (px)")
        ap.add_argument("--ceiling", choices=["linear", "cnn", "both"], default="linear",
                        help="the linear pixel ceilings (at --sizes), the position-tolerant one, or both")
        ap.add_argument("--cnn-epochs", type=int, default=12, help="training epochs of the position-tolerant ceiling")
        ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a profile value (YAML), e.g. --set paths.data=/tmp/data (repeatable)")
        ap.add_argument("--out", default="docs/evidence/synthcxr_visibility", help="folder of the tables")
        ap.add_argument("--force", action="store_true", help="overwrite <out>/<name>.* written before")
        args = ap.parse_args(argv)
        if args.compare:
            ceil, sig = comparison(args.out, args.compare)
            print(ceil.to_markdown(index=False, floatfmt=".3f") + "\n\n" + sig.to_markdown(index=False, floatfmt=".2f"))
            return 0
        if not args.name or not args.name.replace("-", "_").replace(".", "_").isidentifier():
            ap.error(f"--name {args.name!r}: give a name of letters, digits, '.', '-' and '_' (or --compare A B)")
        from sdrlib.config import load_profile

        over = _parse_set(args.set)
        cfg = load_profile(args.profile, over)
        if cfg.data.source not in ("synthetic", "synthcxr"):
            raise VisibilityInputError(f"profile {args.profile} reads data.source {cfg.data.source!r}: the "
                                       "visibility tables are for SynthCXR (data.source synthetic)")
        out = Path(args.out)
        targets = [out / f"{args.name}{s}" for s in (".csv", "_signal.csv", ".json")]
        if not args.force and any(t.exists() for t in targets):
            raise VisibilityInputError(f"{[str(t) for t in targets if t.exists()]} exist: pass --force, or another "
                                       "--name")
        if args.cnn_epochs < 1:
            ap.error(f"--cnn-epochs {args.cnn_epochs}: give 1 or more")
        return _run(cfg, args.name, out, args.sizes, over, kind=args.ceiling, cnn_epochs=args.cnn_epochs)

    return run(argv)


def _run(cfg: Any, name: str, out: Path, sizes: Sequence[int], over: dict[str, Any], *, kind: str = "linear",
         cnn_epochs: int = 12) -> int:
    """The command's work: the profile's splits, the labeler, both tables, the files."""
    from sdrlib.metrics.clinical import get_labeler
    from sdrlib.results import provenance

    t0 = time.perf_counter()
    train, val = load_split(cfg, "train"), load_split(cfg, "val")
    backend, label, detail = get_labeler(cfg.metrics.clinical.backend)
    y_fit = label_targets(label([r.findings for r in train]))
    y_score = label_targets(label([r.findings for r in val]))
    t1 = time.perf_counter()
    ceil = ceilings(train, val, y_fit, y_score, sizes, seed=cfg.seed) if kind != "cnn" else None
    if kind != "linear":
        n = int(cfg.data.image_size)
        cnn = cnn_ceiling(pixel_features(train, n).reshape(-1, n, n), y_fit, pixel_features(val, n).reshape(-1, n, n),
                          y_score, epochs=cnn_epochs, seed=cfg.seed)
        ceil = cnn if ceil is None else ceil.merge(cnn.drop(columns=["n_pos_fit", "n_pos_score"]), on="observation")
    t2 = time.perf_counter()
    sig = finding_signal(train, cfg.data.image_size, seed=cfg.seed)
    t3 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{name}.csv", ceil.to_csv(index=False, float_format="%.4f"))
    atomic_write_text(out / f"{name}_signal.csv", sig.to_csv(index=False, float_format="%.3f"))
    atomic_write_json(out / f"{name}.json", {
        "name": name, "generator_version": GENERATOR_VERSION, "profile": cfg.name, "overrides": dict(over),
        "seed": cfg.seed, "n_train": len(train), "n_val": len(val), "image_size": cfg.data.image_size,
        "sizes": [int(s) for s in sizes] if kind != "cnn" else [], "ceiling": kind,
        "cnn": {"image_size": int(cfg.data.image_size), "epochs": cnn_epochs, "holdout": 0.2, "bootstrap": 1000}
        if kind != "linear" else None, "observations": list(OBSERVATIONS), "labeler": f"{backend}: {detail}",
        "seconds": {"data_and_labels": round(t1 - t0, 1), "ceilings": round(t2 - t1, 1),
                    "signal": round(t3 - t2, 1)}, "provenance": provenance(cfg)})
    print(ceil.to_markdown(index=False, floatfmt=".3f") + "\n\n" + sig.to_markdown(index=False, floatfmt=".2f"))
    print(f"wrote {out / name}.csv, {name}_signal.csv, {name}.json ({t3 - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
