"""The reward encoder's padded passes against the unpadded ones, side by side on GRPO-step-sized calls.

Run (repository root; the cpu profile's SynthCXR data must exist, e.g. after notebook 00)::

    .venv/bin/python benchmarks/bench_padded_passes.py [--n 130] [--step 13] [--threads 1] [--rows 4 8 16] [--alone 40] [--battery]

``--n`` unique training sentences (all-mpnet-base-v2, the kernel path pinned to AVX2 as in a run) are encoded in
calls of ``--step`` sentences (a GRPO step's new sentences), by a fresh uncached embedder per path
(:class:`sdrlib.embedding.SentenceEmbedder` with ``passes="unpadded"`` and ``"padded"``), the paths alternating
call by call so that load on a shared machine hits both alike. Printed: sentences per second, passes, the ratio,
the minimum cosine between the two paths' vectors, with ``--alone N`` how many of the first N sentences get the same
bits encoded alone as in the mixed calls (other rows, other neighbours), and with ``--battery`` how many real-language battery outcomes
(``sdrlib.experiments.battery``, R_Cham and R_Haus) differ between the paths.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=130)
    ap.add_argument("--step", type=int, default=13)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--battery", action="store_true")
    ap.add_argument("--rows", type=int, nargs="+", default=[4], help="rows of a padded pass (the first is checked)")
    ap.add_argument("--alone", type=int, default=0, help="check the first N sentences bit for bit, each alone")
    a = ap.parse_args(argv)
    from sdrlib.numerics import pin_kernel_path

    pin_kernel_path("avx2")
    warnings.filterwarnings("ignore")
    import numpy as np
    import torch

    from bench_encoder_paths import BATTERY_REWARDS, sentences
    from sdrlib.embedding import SentenceEmbedder, load_encoder

    torch.set_num_threads(a.threads)
    model = load_encoder("all-mpnet-base-v2")
    texts = sentences(a.n)
    embs = {"unpadded": SentenceEmbedder(model, cache_dir=None, passes="unpadded"),
            "padded": SentenceEmbedder(model, cache_dir=None, pass_rows=a.rows[0])}
    embs.update({f"padded, {r} rows": SentenceEmbedder(model, cache_dir=None, pass_rows=r) for r in a.rows[1:]})
    secs = {p: 0.0 for p in embs}
    for i in range(0, len(texts), a.step):
        for p, e in embs.items():
            t0 = time.perf_counter()
            e.encode(texts[i:i + a.step])
            secs[p] += time.perf_counter() - t0
    vec = {p: embs[p].encode(texts) for p in ("unpadded", "padded")}
    cos = (vec["unpadded"] * vec["padded"]).sum(axis=1)
    print(f"{len(texts)} sentences in calls of {a.step}, {a.threads} thread(s), load average {__import__('os').getloadavg()[0]:.1f}")
    for p, e in embs.items():
        print(f"{p}: {secs[p]:.2f} s, {len(texts) / secs[p]:.2f} sentences/s, {e.stats['forward_calls']} passes")
    for p in list(embs)[1:]:
        print(f"{p} / unpadded time: {secs[p] / secs['unpadded']:.2f}")
    print(f"min cosine padded to unpadded {cos.min():.7f}")
    if a.alone:  # each sentence alone in its pass (the free rows copies of it) against its vector of the mixed calls
        alone = SentenceEmbedder(model, cache_dir=None, pass_rows=a.rows[0])
        same = sum(alone.encode([t])[0].tobytes() == v.tobytes() for t, v in zip(texts[:a.alone], vec["padded"]))
        print(f"padded: {same} of {min(a.alone, len(texts))} sentences bitwise the same alone as among other sentences")
    if a.battery:
        from sdrlib.config import load_profile
        from sdrlib.data import load_split
        from sdrlib.experiments.battery import run_battery

        cfg = load_profile("cpu")
        recs = load_split(cfg, "train")[:200]
        got = {}
        for p in ("unpadded", "padded"):
            e = SentenceEmbedder(model, cache_dir=None, passes=p, pass_rows=a.rows[0])
            table = run_battery(list(BATTERY_REWARDS), e, cfg.grpo, recs)
            got[p] = {r: table[table.reward == r].sort_values("case")["passed"].tolist() for r in BATTERY_REWARDS}
        flips = sum(x != y for r in BATTERY_REWARDS for x, y in zip(got["padded"][r], got["unpadded"][r]))
        print(f"battery: {sum(len(v) for v in got['padded'].values())} outcomes, {flips} differ between the paths")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
