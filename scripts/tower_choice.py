"""Does a label-pretrained vision tower help the tiny policy? SFT with and without it, read on validation studies.

    python scripts/tower_choice.py [--profile cpu] [--epochs 6] [--runs DIR] [--seeds 0 1 2] [--set KEY=VALUE ...]

Trains (or reuses, by run key) the profile's SFT twice under ``DIR`` (default ``runs/tower_choice``): with
``sft.tiny_tower_epochs`` = 0 (the random frozen tower) and = ``--epochs`` (sdrlib.training.tower). For each it
prints the tower probe (ridge per observation on the tower's features, fitted on train, AUROC on validation) and
the Findings label F1 of reports sampled on every validation study with each seed; then the paired test of the
two (``seed_study_test``: per-report, micro-14, macro-14 and macro-5 F1). Validation only: test studies are never
read. One line and exit 2 for a bad argument.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdrlib.config import load_profile  # noqa: E402
from sdrlib.io import OneLineParser, one_line_errors, positive_int  # noqa: E402
from sdrlib.numerics import pin_kernel_path  # noqa: E402

METRICS = ("clinical_f1_sample", "clinical_f1_micro14", "clinical_f1_macro14", "clinical_f1_macro5")


def _seed(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: a seed is a non-negative integer")
    return int(text)


@one_line_errors("tower_choice")
def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--epochs", type=positive_int, default=6)
    ap.add_argument("--runs", default="runs/tower_choice")
    ap.add_argument("--seeds", type=_seed, nargs="+", default=[0, 1, 2])
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    over = {}
    for it in args.set:
        k, sep, v = it.partition("=")
        if not sep or not k:
            ap.error(f"--set {it!r}: write KEY=VALUE")
        over[k] = v
    cfgs = {name: load_profile(args.profile, {**over, "paths.runs": str(Path(args.runs) / name),
                                              "sft.tiny_tower_epochs": e})
            for name, e in (("random", 0), ("pretrained", args.epochs))}
    if cfgs["random"].sft.policy != "tiny":
        ap.error(f"profile {args.profile} does not train the tiny policy (sft.policy: {cfgs['random'].sft.policy})")
    env = dict(os.environ)
    if argv is None and pin_kernel_path(cfgs["random"].kernel_path, env):
        # as scripts/study.py: start again on the profile's pinned kernel path (sdrlib.numerics)
        os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]], env)

    from sdrlib import training
    from sdrlib.data import load_split
    from sdrlib.experiments.posttrain import generate_test
    from sdrlib.metrics.clinical import clinical_results, get_labeler
    from sdrlib.metrics.significance import seed_study_test
    from sdrlib.reports import parse_template
    from sdrlib.training.tower import tower_probe

    cfg = cfgs["random"]
    train, val = load_split(cfg, "train"), load_split(cfg, "val")
    _, label, _ = get_labeler("labeler")
    ref = label([r.findings for r in val])
    results = {}
    for name, c in cfgs.items():
        final = training.sft(c, train).final
        model, proc = training.load_policy(c, final)
        probe = tower_probe(model, proc, train, val)
        print(f"{name}: tower probe mean AUROC {probe.auroc.mean():.3f} "
              + ", ".join(f"{o} {a:.3f}" for o, a in zip(probe.observation, probe.auroc)))
        results[name] = []
        for s in args.seeds:
            gens = generate_test(c, final, val, seed=s, split="val")
            found = [p.findings if (p := parse_template(g)) is not None else "" for g in gens]
            results[name].append({r.name.split("@")[0]: r for r in clinical_results(label(found), ref, "labeler")})
    for m in METRICS:
        r = seed_study_test([x[m] for x in results["pretrained"]], [x[m] for x in results["random"]],
                            n_resamples=2000, seed=0)
        print(f"{m}: pretrained {r['value_a']:.4f} random {r['value_b']:.4f} diff {r['diff']:+.4f} "
              f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}] p {r['p_value']:.3f} seeds {r['n_same_sign']}/"
              f"{r['n_seeds']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
