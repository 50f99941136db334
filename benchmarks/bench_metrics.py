"""Time every metric group of sdrlib.metrics per 1000 samples x 2 sections, and print
the hand-check table of every metric on a fixed set of (prediction, reference) pairs.

Usage::

    .venv/bin/python benchmarks/bench_metrics.py                 # timings, n=1000
    .venv/bin/python benchmarks/bench_metrics.py --table         # hand-check table only
    .venv/bin/python benchmarks/bench_metrics.py --backbones all-MiniLM-L6-v2 all-mpnet-base-v2

Timings exclude one-off costs (imports, model and WordNet loading), which are
measured once and printed separately. Reports are synthetic but report-like
(4-7 Findings sentences, 1-3 Impression sentences from a radiology phrase
list); predictions are perturbed references (sentences dropped, replaced,
reordered). Wall-clock on a shared machine is noisy: run twice and compare.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

SENTENCES = [
    "The heart is normal in size.", "The heart is mildly enlarged.", "Moderate cardiomegaly is present.",
    "The lungs are clear.", "There is no focal consolidation.", "Right lower lobe consolidation is seen.",
    "There is a small left pleural effusion.", "No pleural effusion or pneumothorax.",
    "A small right apical pneumothorax is noted.", "Mild pulmonary edema.", "No pulmonary edema.",
    "Bibasilar atelectasis is present.", "Patchy opacity in the left lower lobe may represent pneumonia.",
    "The mediastinal contours are within normal limits.", "The cardiomediastinal silhouette is widened.",
    "A nodule is seen in the right upper lobe.", "Degenerative changes of the thoracic spine.",
    "An endotracheal tube terminates 4 cm above the carina.", "A left rib fracture is seen.",
    "Pleural thickening at the left apex.",
]
IMPRESSIONS = [
    "No acute cardiopulmonary process.", "Cardiomegaly with mild pulmonary edema.",
    "Small left pleural effusion.", "Right lower lobe pneumonia.", "Small right pneumothorax.",
    "Bibasilar atelectasis.", "Stable appearance of the chest.", "Support devices in standard position.",
]


def synthetic_pairs(n: int, seed: int = 0):
    """``n`` (prediction Sections-dict, reference Sections-dict) pairs, seeded."""
    rng = np.random.default_rng(seed)
    preds, refs = [], []
    for _ in range(n):
        f = list(rng.choice(SENTENCES, size=rng.integers(4, 8), replace=False))
        im = list(rng.choice(IMPRESSIONS, size=rng.integers(1, 4), replace=False))
        pf, pi = list(f), list(im)
        if rng.random() < 0.5:
            pf.pop(rng.integers(len(pf)))
        if rng.random() < 0.5:
            pf[rng.integers(len(pf))] = str(rng.choice(SENTENCES))
        if rng.random() < 0.5:
            rng.shuffle(pf)
        if rng.random() < 0.4:
            pi = [str(rng.choice(IMPRESSIONS))]
        refs.append({"findings": " ".join(f), "impression": " ".join(im)})
        preds.append({"findings": " ".join(pf), "impression": " ".join(pi)})
    return preds, refs


# --------------------------------------------------------------------------- hand-check table
HAND_PAIRS = [
    ("identical", "The heart is enlarged. There is a small left pleural effusion.",
     "The heart is enlarged. There is a small left pleural effusion."),
    ("disjoint", "Quartz xylophones hum beneath violet zeppelins", "Large right pneumothorax. No pleural effusion."),
    ("partial", "The heart is enlarged. No pleural effusion.",
     "The heart is enlarged. There is a small left pleural effusion."),
    ("synonym", "The chest is clear.", "The thorax is clear."),
    ("empty", "", "Mild pulmonary edema."),
]


def hand_table(backbone: str = "auto") -> pd.DataFrame:
    from sdrlib.metrics import score_reports

    preds = [{"findings": p, "impression": p} for _, p, _ in HAND_PAIRS]
    refs = [{"findings": r, "impression": r} for _, _, r in HAND_PAIRS]
    s = score_reports(preds, refs, sections=("findings",), sample_ids=[k for k, _, _ in HAND_PAIRS],
                      settings={"bertscore": {"model": backbone}})
    df = s.to_frame(strata=False)
    samp = df[(df.level == "sample")].pivot_table(index=["metric", "backend"], columns="sample_id",
                                                  values="value", sort=False)
    samp = samp[[k for k, _, _ in HAND_PAIRS]].reset_index()
    corp = df[(df.level == "corpus") & (df.section == "findings")][["metric", "backend", "value"]]
    corp = corp.rename(columns={"value": "corpus"})
    out = corp.merge(samp, on=["metric", "backend"], how="left")
    out = out[~out.metric.str.startswith("clinical_f1[")]
    out.attrs["unavailable"] = s.unavailable
    return out


# --------------------------------------------------------------------------- timings
def _time(fn, repeat: int = 1) -> float:
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench(n: int, backbones: list[str], repeat: int) -> pd.DataFrame:
    import torch

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    from sdrlib.metrics import compare_systems, score_reports
    from sdrlib.metrics.backends import resolve_bertscore_backbone
    from sdrlib.metrics.nlg import bertscore_f1, load_module
    from sdrlib.metrics.wordnet import load_wordnet

    rows: list = []

    class _Rows(list):  # print each timing as it lands (a long run shows progress)
        def append(self, row):
            print(f"  {row[1]}: {row[2]:.2f} s {row[3]}", flush=True)
            super().append(row)

    rows = _Rows()
    t = time.perf_counter()
    for m in ("sdr_bleu", "sdr_rouge", "sdr_meteor", "sdr_chrf", "sdr_bertscore"):
        load_module(m)
    rows.append(("one-off", "import evaluate + load 5 local modules", time.perf_counter() - t, ""))
    t = time.perf_counter()
    load_wordnet()
    rows.append(("one-off", "load WordNet 3.0", time.perf_counter() - t, ""))

    preds, refs = synthetic_pairs(n)
    scale = 1000.0 / n
    for group in ("bleu", "rouge", "meteor", "chrf", "clinical"):
        score_reports(preds[:5], refs[:5], metrics=[group])  # warm-up
        sec = _time(lambda: score_reports(preds, refs, metrics=[group]), repeat)
        rows.append(("per 1000 x 2 sections", group, sec * scale, ""))
    for name in backbones:
        t = time.perf_counter()
        try:
            bb = resolve_bertscore_backbone(name)
        except Exception as e:  # noqa: BLE001
            rows.append(("per 1000 x 2 sections", f"bertscore {name}", np.nan, f"unavailable: {e}"))
            continue
        bertscore_f1(["warm up"], ["warm up"], bb)
        rows.append(("one-off", f"load BERTScore backbone {bb.label}", time.perf_counter() - t, ""))
        sec = _time(lambda: score_reports(preds, refs, metrics=["bertscore"],
                                          settings={"bertscore": {"model": name}}), repeat)
        rows.append(("per 1000 x 2 sections", f"bertscore {bb.label}", sec * scale, "batch 64, CPU"))
    kw = dict(metrics=["bleu", "rouge", "meteor", "chrf", "clinical"])
    a = score_reports(preds, refs, **kw)
    b = score_reports([{"findings": r["findings"], "impression": r["impression"]} for r in refs], refs, **kw)
    n_metrics = sum(len(v) for v in a.results.values())
    sec = _time(lambda: compare_systems(a, b, n_resamples=1000, seed=0), repeat)
    rows.append(("per 1000 x 2 sections", f"paired bootstrap, 1000 resamples, {n_metrics} metrics", sec * scale, ""))
    sec = _time(lambda: a.to_frame(), repeat)
    rows.append(("per 1000 x 2 sections", "tidy table incl. strata rows", sec * scale, ""))
    return pd.DataFrame(rows, columns=["kind", "what", "seconds", "note"])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="samples (each has 2 sections)")
    ap.add_argument("--backbones", nargs="*", default=["all-MiniLM-L6-v2"],
                    help="BERTScore backbones to time (add all-mpnet-base-v2 / roberta-large: slow on CPU)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--table", action="store_true", help="only print the hand-check table")
    ap.add_argument("--table-backbone", default="all-MiniLM-L6-v2")
    args = ap.parse_args(argv)
    print(f"# python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    if not args.table:  # timings first, so one-off loads are measured cold
        res = bench(args.n, args.backbones, args.repeat)
        print(f"\n## Timings (n={args.n}, seconds scaled to 1000 samples x 2 sections)\n")
        print(res.to_markdown(index=False, floatfmt=".2f"))
        print(f"# load after: {os.getloadavg()}")
    tab = hand_table(args.table_backbone)
    print("\n## Hand-check table (Findings = Impression = the text; corpus = whole set)\n")
    print(tab.to_markdown(index=False, floatfmt=".4f"))
    print("\nunavailable:", tab.attrs["unavailable"])


if __name__ == "__main__":
    main()
