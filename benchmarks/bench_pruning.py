"""Live pruning (Algorithm 1, sdrlib.pruning.prune_live) vs the standard best-of-K generations, side by side.

Run (repository root), after notebooks 00-03 on a profile (the policy of notebook 03 and the bank of 01):

    .venv/bin/python benchmarks/bench_pruning.py --root /tmp/prune-smoke --profile smoke            # 8 studies
    .venv/bin/python benchmarks/bench_pruning.py --root /tmp/prune-smoke --profile smoke --quick    # 3 studies

For each test study, in one process and one after the other: the K full generations of the standard pipeline
(``generate_standard``: one batch, KV cache, candidate j with seed ``seed + j``) and live pruning at
``--p`` (default 0.5), K = ``--K`` (default 5), with the same decoder and seeds. Reported: generated tokens
(exact counts) and wall-clock, each summed over studies, and their ratios pruning / standard; the pruning time
includes its scoring of partial reports (embedding + distance to the bank). Wall-clock on whatever else the
machine does (the load average is printed). Not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 studies instead of 8")
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--root", default=None, help="output root of the run that trained the policy (SDR_ROOT)")
    ap.add_argument("--policy", default="sft", help="sft or a GRPO configuration of the profile")
    ap.add_argument("--studies", type=int, default=None)
    ap.add_argument("--K", type=int, default=5)
    ap.add_argument("--p", type=float, default=0.5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--distance", default="chamfer")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: the profile's sft.max_new_tokens")
    args = ap.parse_args(argv)
    if args.root:
        os.environ["SDR_ROOT"] = os.path.abspath(args.root)

    import torch

    from sdrlib import pruning as pr, selection as sel
    from sdrlib.config import load_profile
    from sdrlib.data import load_split
    from sdrlib.embedding import ReportBank, SentenceEmbedder
    from sdrlib.generation import load_images
    from sdrlib.training import load_policy, policy_dir

    cfg = load_profile(args.profile)
    n = args.studies or (3 if args.quick else 8)
    test = load_split(cfg, "test")[:n]
    path = policy_dir(cfg, args.policy)
    model, proc = load_policy(cfg, path)
    emb = SentenceEmbedder.from_config(cfg)
    bank = sel.head_bank(ReportBank.load(cfg.cache_dir / "banks" / f"{cfg.name}_train",
                                         expected_encoder_id=emb.encoder_id), cfg.selection.bank_size)
    scorer = pr.BankScorer(bank, emb, args.distance, cfg.pruning.aggregation, knn_k=cfg.selection.knn_k)
    params = pr.PruneParams(n_candidates=args.K, p=args.p, warmup=args.warmup, min_sentences=cfg.pruning.min_sentences,
                            sentence_token_cap=cfg.pruning.sentence_token_cap)
    max_new = args.max_new_tokens or cfg.sft.max_new_tokens
    temp = cfg.sft.eval_temperature
    print(f"# bench_pruning: profile {cfg.name}, policy {args.policy} ({path}), {len(test)} studies, K={args.K}, "
          f"p={args.p}, wu={args.warmup}, {args.distance}+{cfg.pruning.aggregation}, N={len(bank)} bank reports, "
          f"max_new_tokens={max_new}, temperature={temp}, torch threads={torch.get_num_threads()}, "
          f"load average={os.getloadavg()[0]:.1f}")
    # warm-up call (first-call allocations), not counted
    imgs0 = load_images(test[0].image_paths, cfg.sft.max_images)
    pr.prune_live(model, proc, imgs0, scorer, params, seed=cfg.seed, temperature=temp, max_new_tokens=max_new)
    tot = {"std_tok": 0, "pr_tok": 0, "std_s": 0.0, "pr_s": 0.0, "std_fw": 0, "pr_fw": 0, "same": 0}
    print(f"{'study':>10} {'std tok':>8} {'prune tok':>9} {'std s':>7} {'prune s':>7} {'survivor':>8}")
    for r in test:
        imgs = load_images(r.image_paths, cfg.sft.max_images)
        t0 = time.perf_counter()
        std = pr.generate_standard(model, proc, imgs, args.K, seed=cfg.seed, temperature=temp, max_new_tokens=max_new)
        s_std = time.perf_counter() - t0
        t0 = time.perf_counter()
        live = pr.prune_live(model, proc, imgs, scorer, params, seed=cfg.seed, temperature=temp, max_new_tokens=max_new)
        s_pr = time.perf_counter() - t0
        tot["std_tok"] += std.total_tokens
        tot["pr_tok"] += live.total_tokens
        tot["std_s"] += s_std
        tot["pr_s"] += s_pr
        tot["std_fw"] += std.meta["forwards"]
        tot["pr_fw"] += live.meta["forwards"]
        tot["same"] += live.survivor_text == std.texts[live.survivor]
        print(f"{r.study_id:>10} {std.total_tokens:>8} {live.total_tokens:>9} {s_std:>7.2f} {s_pr:>7.2f} {live.survivor:>8}")
    print(f"\ntokens: standard {tot['std_tok']}, pruning {tot['pr_tok']}, ratio {tot['pr_tok'] / tot['std_tok']:.3f} "
          f"({pr.tokens_saved_pct(tot['pr_tok'], tot['std_tok']):.1f} % saved)")
    print(f"wall-clock: standard {tot['std_s']:.2f} s, pruning {tot['pr_s']:.2f} s, ratio "
          f"{tot['pr_s'] / tot['std_s']:.3f}")
    print(f"forward passes: standard {tot['std_fw']}, pruning {tot['pr_fw']}, ratio {tot['pr_fw'] / tot['std_fw']:.3f}")
    print(f"survivor's text equals its standard generation in {tot['same']} of {len(test)} studies; "
          f"load average now {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
