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

Command: ``python -m sdrlib.experiments.synthcxr_visibility --profile cpu --name NAME [--sizes 32 96] [--out DIR]
[--set KEY=VALUE] [--force]`` writes ``<out>/<name>.csv`` (ceilings), ``<out>/<name>_signal.csv`` and
``<out>/<name>.json`` (settings, generator version, seconds, provenance); ``--compare A B`` prints two written runs
side by side (Markdown). The profile's SynthCXR folder is generated on first use (``paths.data``). Bad input:
:class:`VisibilityInputError` naming what is wrong.

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
from sdrlib.experiments.sft_start import OBSERVATIONS, label_targets, probe_ceiling
from sdrlib.io import OneLineParser, atomic_write_json, atomic_write_text, one_line_errors

__all__ = ["VisibilityInputError", "ceilings", "finding_signal", "variant", "comparison", "main"]

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
    """``python -m sdrlib.experiments.synthcxr_visibility --profile cpu --name NAME [--sizes 32 96] [--out DIR]
    [--set KEY=VALUE ...] [--force]`` or ``--compare A B`` (module docstring); one line and exit 2 for a bad
    argument, an existing output without ``--force``, or a profile error."""
    @one_line_errors("synthcxr_visibility")
    def run(argv: Sequence[str] | None) -> int:
        from sdrlib.experiments.sft_start import _parse_set

        ap = OneLineParser(prog="python -m sdrlib.experiments.synthcxr_visibility",
                           description="per-observation pixel ceilings and per-finding pixel signal of SynthCXR")
        ap.add_argument("--profile", default="cpu")
        ap.add_argument("--name", help="the run's name: <out>/<name>.csv, <name>_signal.csv and <name>.json")
        ap.add_argument("--compare", nargs="+", metavar="NAME", help="no run: print runs NAME ... side by side")
        ap.add_argument("--sizes", type=int, nargs="+", default=[32, 96], help="image sides of the ceilings (px)")
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
        return _run(cfg, args.name, out, args.sizes, over)

    return run(argv)


def _run(cfg: Any, name: str, out: Path, sizes: Sequence[int], over: dict[str, Any]) -> int:
    """The command's work: the profile's splits, the labeler, both tables, the files."""
    from sdrlib.metrics.clinical import get_labeler
    from sdrlib.results import provenance

    t0 = time.perf_counter()
    train, val = load_split(cfg, "train"), load_split(cfg, "val")
    backend, label, detail = get_labeler(cfg.metrics.clinical.backend)
    y_fit = label_targets(label([r.findings for r in train]))
    y_score = label_targets(label([r.findings for r in val]))
    t1 = time.perf_counter()
    ceil = ceilings(train, val, y_fit, y_score, sizes, seed=cfg.seed)
    t2 = time.perf_counter()
    sig = finding_signal(train, cfg.data.image_size, seed=cfg.seed)
    t3 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{name}.csv", ceil.to_csv(index=False, float_format="%.4f"))
    atomic_write_text(out / f"{name}_signal.csv", sig.to_csv(index=False, float_format="%.3f"))
    atomic_write_json(out / f"{name}.json", {
        "name": name, "generator_version": GENERATOR_VERSION, "profile": cfg.name, "overrides": dict(over),
        "seed": cfg.seed, "n_train": len(train), "n_val": len(val), "image_size": cfg.data.image_size,
        "sizes": [int(s) for s in sizes], "observations": list(OBSERVATIONS), "labeler": f"{backend}: {detail}",
        "seconds": {"data_and_labels": round(t1 - t0, 1), "ceilings": round(t2 - t1, 1),
                    "signal": round(t3 - t2, 1)}, "provenance": provenance(cfg)})
    print(ceil.to_markdown(index=False, floatfmt=".3f") + "\n\n" + sig.to_markdown(index=False, floatfmt=".2f"))
    print(f"wrote {out / name}.csv, {name}_signal.csv, {name}.json ({t3 - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
