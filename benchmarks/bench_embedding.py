"""Encoder calls and time, cold vs warm cache, on a corpus of real-style reports.

Run: ``.venv/bin/python benchmarks/bench_embedding.py [--profile cpu] [--n 2000]``

Cold = an empty cache folder; warm = the same corpus again through a new
embedder on the same folder (what a re-run of a notebook sees). Prints
sentences, unique sentences, encoder forward calls cold and warm, and the
cold/warm time ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.embedding import ReportBank, SentenceEmbedder, load_encoder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--n", type=int, default=2000, help="training reports to encode")
    ap.add_argument("--encoder", default=None, help="override the profile's encoder")
    args = ap.parse_args()
    cfg = load_profile(args.profile)
    recs = load_split(cfg, "train")[: args.n]
    f, i, ids = [r.findings for r in recs], [r.impression for r in recs], [r.study_id for r in recs]
    model = load_encoder(args.encoder or cfg.embedding.encoder)
    with tempfile.TemporaryDirectory() as tmp:
        cold = SentenceEmbedder(model, cache_dir=Path(tmp), batch_size=cfg.embedding.batch_size)
        t0 = time.perf_counter()
        bank = ReportBank.build(cold, f, i, ids)
        t_cold = time.perf_counter() - t0
        warm = SentenceEmbedder(model, cache_dir=Path(tmp), batch_size=cfg.embedding.batch_size)
        t0 = time.perf_counter()
        ReportBank.build(warm, f, i, ids)
        t_warm = time.perf_counter() - t0
    n_sent = sum(len(bank.sentences[s]) for s in ("findings", "impression"))
    n_uniq = len(set(bank.sentences["findings"]) | set(bank.sentences["impression"]))
    print(f"encoder            {cold.encoder_id}")
    print(f"reports            {len(recs)}")
    print(f"sentences          {n_sent}")
    print(f"unique sentences   {n_uniq}  ({n_sent / max(n_uniq, 1):.2f} sentences per unique)")
    print(f"encoder calls      cold {cold.stats['forward_calls']}  warm {warm.stats['forward_calls']}")
    print(f"sentences encoded  cold {cold.stats['encoded']}  warm {warm.stats['encoded']}")
    print(f"time               cold {t_cold:.2f} s  warm {t_warm:.3f} s  cold/warm {t_cold / t_warm:.0f}x")


if __name__ == "__main__":
    main()
