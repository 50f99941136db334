"""The GRPO study's command line: pilot, setup choices, resumable runs, status and the comparison table.

The work is :mod:`sdrlib.experiments.study.runs` (runs, table), :mod:`sdrlib.experiments.study.pilot` (pilot, choose).

    python -m sdrlib.experiments.study COMMAND [options]      # or: python scripts/study.py COMMAND [options]

    pilot  [--profile study] [--reward chamfer] [--buckets 32 64 128] [--n-val 100] [--out F]
    choose [--profile cpu] [--reward chamfer] --variants NAME[:KEY=VALUE,...] ... [--seeds 0 1] [--n-val 200] [--out F]
    run    [--profile study] [--evidence E] [--seeds 0 1 ...] [--max-runs N] [--sft-seed K]
    status [--profile study] [--evidence E] [--sft-seed K]
    table  [--profile study] [--evidence E] [--seeds 0 1 ...] [--out F.csv] [--markdown F.md]
           [--answer-block FILE]... [--resample-seeds S1 S2 ... [--stability-out F.csv]] [--behaviour-out F.csv]

Two profiles: ``study``, the study from the SFT start that reads the image (evidence folder, the default of
``--evidence``: ``docs/evidence/study_seeing_start``), and ``study_blind_start``, the study on record, trained from
the blind SFT start (``docs/evidence/study``); another profile needs ``--evidence`` (:data:`EVIDENCE`).

``pilot`` trains one seed of one reward bucket by bucket and reads it on validation studies (KL, validation reward,
normal share, label F1 per bucket; ``--out`` writes the table as CSV). ``choose`` trains the reward under each
variant's overrides (``dr_grpo`` alone: the profile as it is; ``grpo:grpo.loss_type=grpo``) from the profile's SFT
policy and reads every run on validation studies, the table a setup choice is made from. ``run`` trains and samples
every pending run of the profile (each finished run's evidence file is written at once, so an interrupted study
resumes where it stopped; ``--seeds`` adds or limits seeds without touching the others). ``status`` lists the runs on
disk. ``table`` scores the runs (``--seeds``: those seeds' only; each run's first ``grpo.eval_draws`` draws pooled
per study) and prints the comparisons under the project's rule (``--out``: CSV; ``--markdown``: the answer and every
family as a Markdown table, :func:`sdrlib.experiments.study.runs.study_markdown`: primary, secondary and, when the
profile runs controls (:data:`sdrlib.experiments.study.families.CONTROLS`), controls; ``--answer-block FILE``: the
answer and the compact primary table (and the compact controls table, when controls ran) between FILE's
``<!-- study-answer:start -->`` and ``<!-- study-answer:end -->``, e.g. the README's). The table draws ``metrics.bootstrap`` resamples with seed 0;
``--resample-seeds`` computes it again under each seed and lists, per comparison, the verdict under each and how many
agree (:func:`sdrlib.experiments.study.stability.verdict_stability`; printed, in ``--markdown`` (the controls family
in a section of its own), as CSV with ``--stability-out``). Beside the verdicts, what each configuration writes: pathologies per Findings, normal share,
per-label precision and recall (:func:`sdrlib.experiments.study.behaviour.study_behaviour`; printed, in
``--markdown``, as CSV with ``--behaviour-out``). ``run --sft-seed K`` trains and samples the runs of a second SFT
start (``<config>_s<seed>_sft<K>.json.gz``; SFT training variance); ``table`` then adds, per configuration, the
difference between the two starts' means on the GRPO seeds both have
(:func:`sdrlib.experiments.study.stability.start_table`), apart from the comparisons. Every argument is
checked before any work; a bad one is one line and exit 2: seeds are distinct integers in [0, 2**32 - 1], counts whole
numbers >= 1, ``--resample-seeds`` at least two, ``--stability-out`` only with them, ``--out`` / ``--markdown`` /
``--stability-out`` / ``--behaviour-out`` a file in a folder that exists and never inside the evidence's ``runs/`` that
``table`` reads, no two outputs one file, an existing output file one this command wrote (else
``--force``), and ``--evidence`` a folder (``run``: or one to create), given for a profile without its own. Runs whose workers spawn need the
``__main__`` guard (:mod:`sdrlib.experiments.study.__main__`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd
import yaml

from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.io import OneLineParser, one_line_errors, output_path, positive_int
from sdrlib.numerics import pin_kernel_path
from sdrlib.paths import repo_root

#: the command a user types (messages name it)
COMMAND = "python -m sdrlib.experiments.study"

#: each study profile's evidence folder, the default of ``--evidence`` (another profile needs ``--evidence``)
EVIDENCE = {"study": "docs/evidence/study_seeing_start", "study_blind_start": "docs/evidence/study"}
MAX_SEED = 2**32 - 1  # sdrlib.experiments.study.runs.MAX_SEED (imported late: the study module loads torch)


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = -1
    if not 0 <= v <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text!r}: a seed is an integer in [0, 2**32 - 1]")
    return v


def _parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog=COMMAND, description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("pilot", "choose", "run", "status", "table"):
        p = sub.add_parser(name)
        p.add_argument("--profile", default="study")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="profile override, e.g. paths.runs=/tmp/runs (repeatable)")
        if name in ("pilot", "choose"):
            p.add_argument("--reward", default="chamfer")
            p.add_argument("--n-val", type=positive_int, default=100)
            p.add_argument("--sft-policy", default=None, help="start from this saved SFT policy folder")
        if name == "pilot":
            p.add_argument("--buckets", type=positive_int, nargs="+", default=[32, 64, 128, 192, 256])
            p.add_argument("--seed", type=_seed, default=None)
        elif name == "choose":
            p.add_argument("--variants", nargs="+", required=True)
            p.add_argument("--seeds", type=_seed, nargs="+", default=[0, 1])
        else:
            p.add_argument("--evidence", default=None, help="the run files' folder (default: the profile's, EVIDENCE)")
        if name in ("run", "status", "table"):
            p.add_argument("--seeds", type=_seed, nargs="+", default=None)
        if name in ("run", "status"):
            p.add_argument("--sft-seed", type=_seed, default=None,
                           help="the runs of a second SFT start, its SFT policy trained with this seed")
        if name == "run":
            p.add_argument("--max-runs", type=positive_int, default=None)
            p.add_argument("--configs", nargs="+", default=None)
        if name in ("pilot", "choose", "table"):
            p.add_argument("--out", default=None)
            p.add_argument("--force", action="store_true",
                           help="overwrite an --out / --markdown file this command did not write")
        if name == "table":
            p.add_argument("--markdown", default=None, help="also write the answer and every family as Markdown")
            p.add_argument("--answer-block", action="append", default=[], metavar="FILE",
                           help="write the answer and the compact primary (and controls) table between FILE's "
                                "study-answer markers (repeatable; e.g. README.md)")
            p.add_argument("--resample-seeds", type=_seed, nargs="+", default=None, metavar="S",
                           help="compute the comparisons again under each resampling seed (at least two)")
            p.add_argument("--stability-out", default=None, help="the verdicts under each resampling seed as CSV")
            p.add_argument("--behaviour-out", default=None, help="what each configuration writes, as CSV")
    return ap


def _overrides(items: list[str], ap: argparse.ArgumentParser) -> dict[str, object]:
    """``KEY=VALUE`` items as profile overrides, each value read as YAML (``false``, ``4.0e-4``, ``[1, 2]``)."""
    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k:
            ap.error(f"--set {it!r}: write KEY=VALUE, e.g. paths.runs=/tmp/runs")
        if k in out:
            ap.error(f"{it!r}: {k} is given twice (the last would silently win); give each key once")
        try:
            out[k] = yaml.safe_load(v)
        except yaml.YAMLError:
            ap.error(f"{it!r}: the value is not YAML")
    return out


def _out(value: str, evidence: Path | None, ap: argparse.ArgumentParser, flag: str = "--out") -> Path:
    """``--out`` (or another output ``flag``): a file to write, in a folder that exists, never inside
    ``<evidence>/runs`` (the run files the command reads; the evidence folder itself is where the table belongs,
    e.g. ``docs/evidence/study/table.csv``)."""
    out = output_path(value, flag)
    if out.is_dir():
        ap.error(f"{flag} {value}: a folder; give a file name (e.g. {Path(value) / 'table.csv'})")
    if not out.parent.is_dir():
        ap.error(f"{flag} {value}: the folder {out.parent} does not exist")
    if evidence is not None and out.resolve().is_relative_to((evidence / "runs").resolve()):
        ap.error(f"{flag} {value}: inside {evidence / 'runs'}, whose run files the table reads; write it elsewhere "
                 f"(e.g. {evidence / 'table.csv'})")
    return out


def _evidence(args: argparse.Namespace, cfg, ap: argparse.ArgumentParser) -> Path:
    """``--evidence``, or the profile's own folder (:data:`EVIDENCE`); a profile without one needs it."""
    if args.evidence is not None:
        return output_path(args.evidence, "--evidence")
    if cfg.name not in EVIDENCE:
        ap.error(f"--evidence: profile {cfg.name} has no evidence folder of its own (" +
                 ", ".join(f"{k} -> {v}" for k, v in EVIDENCE.items()) + "); give --evidence FOLDER")
    return output_path(EVIDENCE[cfg.name], "--evidence")


def _variants(items: list[str], ap: argparse.ArgumentParser) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for it in items:
        name, _, rest = it.partition(":")
        if not name.isidentifier() or name in out:
            ap.error(f"--variants {it!r}: NAME[:KEY=VALUE,...] with a new plain name (e.g. grpo:grpo.loss_type=grpo)")
        out[name] = _overrides([kv for kv in rest.split(",") if kv], ap) if rest else {}
    return out


@one_line_errors("study")
def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    over = _overrides(args.set, ap)
    variants = _variants(args.variants, ap) if args.cmd == "choose" else {}
    if variants:
        from sdrlib.experiments.study.pilot import check_variant_keys

        check_variant_keys(variants)  # a key the choice would not apply: one line, before any profile or training
    cfg = load_profile(args.profile, over)
    for name, v in variants.items():  # every variant must load before any run trains
        load_profile(args.profile, {**over, **v})
    for flag in ("seeds", "resample_seeds"):
        seeds = getattr(args, flag, None) or []
        if len(set(seeds)) < len(seeds):
            ap.error(f"--{flag.replace('_', '-')} {seeds}: repeats {sorted({s for s in seeds if seeds.count(s) > 1})}; "
                     "give each seed once")
    resample = getattr(args, "resample_seeds", None)
    if resample is not None and len(resample) < 2:
        ap.error(f"--resample-seeds {resample}: give at least two seeds (the verdicts under each are compared)")
    if getattr(args, "stability_out", None) is not None and resample is None:
        ap.error("--stability-out: only with --resample-seeds S1 S2 ... (the seeds whose verdicts it lists)")
    evidence = _evidence(args, cfg, ap) if hasattr(args, "evidence") else None
    outs = {flag: _out(getattr(args, flag.strip("-").replace("-", "_")), evidence, ap, flag)
            for flag in ("--out", "--markdown", "--stability-out", "--behaviour-out")
            if getattr(args, flag.strip("-").replace("-", "_"), None) is not None}
    out, markdown = outs.get("--out"), outs.get("--markdown")
    blocks = [_block_file(f, ap) for f in getattr(args, "answer_block", [])]
    _check_outputs(args.cmd, outs, blocks, getattr(args, "force", False), ap)
    env = dict(os.environ)
    if argv is None and args.cmd in ("pilot", "choose", "run") and pin_kernel_path(cfg.kernel_path, env):
        # NumPy loaded with the CPU's own kernel path: start again with the profile's pinned one (sdrlib.numerics),
        # as python -m sdrlib.training and run_all.sh do, so the study trains the floats the profile names; with
        # this checkout's sdrlib first on the path, whichever way the command started (here or the script wrapper)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo_root()), env.get("PYTHONPATH", "")]))
        os.execve(sys.executable, [sys.executable, "-m", "sdrlib.experiments.study", *sys.argv[1:]], env)
    if args.cmd in ("pilot", "choose"):
        from sdrlib.experiments.study.pilot import choice_table, pilot_table
        from sdrlib.rewards import parse_reward

        parse_reward(args.reward)  # an unknown reward fails here, before any training
        if args.n_val > cfg.data.n_val:
            ap.error(f"--n-val {args.n_val}: the profile has {cfg.data.n_val} validation studies")
        from sdrlib.training.policy import has_policy

        sft = output_path(args.sft_policy, "--sft-policy") if args.sft_policy is not None else None
        if sft is not None and not has_policy(sft):
            ap.error(f"--sft-policy {args.sft_policy}: no saved policy there")
        if args.cmd == "pilot":
            t = pilot_table(cfg, args.reward, buckets=args.buckets, n_val=args.n_val, seed=args.seed, sft_policy=sft)
        else:
            t = choice_table(cfg, args.reward, variants, seeds=args.seeds, n_val=args.n_val, overrides=over,
                             sft_policy=sft)
        print(t.round(4).to_string(index=False))
        if out is not None:
            t.to_csv(out, index=False)
        return 0
    from sdrlib.experiments.study import runs as study

    if args.cmd == "run":
        unknown = sorted(set(args.configs or ()) - {"sft", *cfg.grpo.rewards})
        if unknown:
            ap.error(f"--configs {unknown}: not configurations of profile {cfg.name} ({['sft', *cfg.grpo.rewards]})")
        study.run_study(cfg, evidence, seeds=args.seeds, configs=args.configs, max_runs=args.max_runs,
                        sft_seed=args.sft_seed)
        return 0
    if not evidence.is_dir():
        ap.error(f"--evidence {args.evidence}: not a folder (run `{COMMAND} run` first)")
    if args.cmd == "status":
        pd.set_option("display.width", 200)
        print(study.study_status(cfg, evidence, args.seeds, sft_seed=args.sft_seed).to_string(index=False))
        return 0
    if not study.load_evidence(evidence):  # also names a file that is not a run record
        ap.error(f"--evidence {args.evidence}: no run files under {evidence / 'runs'} (run `{COMMAND} run` first)")
    return _table(cfg, evidence, out, markdown, args.seeds, blocks, resample=resample,
                  stability_out=outs.get("--stability-out"), behaviour_out=outs.get("--behaviour-out"))


#: how the first line of each file this command writes begins (a CSV's header, the Markdown's answer: its first
#: question, or the controls' when only controls were compared; a tuple: any of them): an existing file that begins
#: otherwise was not written by it and is overwritten only under ``--force``
OWN_START = {("pilot", "--out"): "steps,", ("choose", "--out"): "variant,seed,", ("table", "--out"): "A,B,",
             ("table", "--markdown"): ("Do set-distance rewards beat ", "Is it the reward or GRPO's drift? "),
             ("table", "--stability-out"): "family,A,B,metric,diff,verdict,",
             ("table", "--behaviour-out"): "config,seeds,normal_share,"}


def _check_outputs(cmd: str, outs: dict[str, Path], blocks: list[Path], force: bool,
                   ap: argparse.ArgumentParser) -> None:
    """Before any work: no two outputs (``outs``, ``{flag: file}`` of ``--out``, ``--markdown``,
    ``--stability-out``, ``--behaviour-out``, and each ``--answer-block``) name one file, and an existing output
    file is one this command wrote (its first line begins as in :data:`OWN_START`; an empty file counts as free)
    unless ``--force``. An ``--answer-block`` file edits only the block between its markers, so it is the user's
    file by design."""
    named = list(outs.items()) + [("--answer-block", f) for f in blocks]
    seen: dict[str, str] = {}
    for flag, f in named:
        key = os.path.realpath(f)
        if key in seen:
            ap.error(f"{flag} {f}: the same file as {seen[key]}; give each output its own file")
        seen[key] = f"{flag} {f}"
    for flag, f in named:
        if flag == "--answer-block" or force or not f.is_file() or f.stat().st_size == 0:
            continue
        with open(f, encoding="utf-8", errors="replace") as fh:
            first = fh.readline()
        if not first.startswith(OWN_START[(cmd, flag)]):
            ap.error(f"{flag} {f}: an existing file this command did not write (it begins {first[:40].strip()!r}); "
                     "give a new file name, or add --force to overwrite it")


#: the markers of ``--answer-block`` in a Markdown file
BLOCK = ("<!-- study-answer:start -->", "<!-- study-answer:end -->")


def _block_file(value: str, ap: argparse.ArgumentParser) -> Path:
    """``--answer-block``: a file that exists and holds each study-answer marker once, the start before the end."""
    f = output_path(value, "--answer-block")
    text = f.read_text(encoding="utf-8") if f.is_file() else None
    if text is None or [text.count(m) for m in BLOCK] != [1, 1] or text.index(BLOCK[0]) > text.index(BLOCK[1]):
        ap.error(f"--answer-block {value}: not a file holding {BLOCK[0]} once and then {BLOCK[1]} once (the block "
                 "the table writes between them)")
    return f


def _write_block(f: Path, block: str) -> None:
    text = f.read_text(encoding="utf-8")
    head, rest = text.split(BLOCK[0])
    f.write_text(head + BLOCK[0] + "\n" + block + "\n" + BLOCK[1] + rest.split(BLOCK[1], 1)[1], encoding="utf-8")


def _table(cfg, evidence: Path, out: Path | None, markdown: Path | None = None, seeds: list[int] | None = None,
           blocks: list[Path] = (), *, resample: list[int] | None = None, stability_out: Path | None = None,
           behaviour_out: Path | None = None) -> int:
    """``table``: score the runs (:func:`sdrlib.experiments.study.runs.table_runs` checks them first), print the
    comparisons (``metrics.bootstrap`` resamples, seed 0), the verdicts under each ``resample`` seed, what each
    configuration writes and, when the evidence holds runs of a second SFT start, the starts' differences."""
    from sdrlib.experiments.study import runs as study
    from sdrlib.experiments.study.behaviour import run_labels, study_behaviour, study_reading
    from sdrlib.experiments.study.evidence import sft_starts
    from sdrlib.experiments.study.stability import start_table, verdict_stability

    test = load_split(cfg, "test")
    test = test[:cfg.grpo.eval_n] if cfg.grpo.eval_n else test
    n_boot, draws = cfg.metrics.bootstrap, cfg.grpo.eval_draws
    scores = study.study_scores(cfg, evidence, test, seeds)
    policies = study.run_policies(evidence, seeds)  # copies: one policy, not equal scores
    t = study.study_table(scores, n_studies=len(test), n_resamples=n_boot, policies=policies)
    print(f"{len(test)} test studies, {draws} sampled report(s) per study and run (grpo.eval_draws), {n_boot} "
          "resamples (metrics.bootstrap)")
    pd.set_option("display.width", 250)
    cols = [c for c in ("family", "A", "B", "metric", "value_a", "value_b", "diff", "ci_low", "ci_high", "p_value",
                        "p_holm", "n_same_sign", "n_seeds", "study_se", "seed_sd", "mde", "binding", "verdict")
            if c in t.columns]
    print(t[cols].round(4).to_string(index=False))
    answer = study.study_answer(t)
    print("\n".join(answer))
    labels = run_labels(study.table_runs(evidence, test, seeds), draws)
    reading = study_reading(evidence, test, seeds, draws=draws, labels=labels)
    print(reading.round(3).to_string(index=False))
    behaviour = study_behaviour(evidence, test, seeds, draws=draws, labels=labels)
    print(behaviour.round(3).to_string(index=False))
    stability = None
    if resample is not None:
        stability = verdict_stability(scores, n_studies=len(test), resample_seeds=resample, n_resamples=n_boot,
                                      policies=policies, tables={0: t})
        print(stability.round(4).to_string(index=False))
    starts = []
    for k in sft_starts(evidence):
        other = study.study_scores(cfg, evidence, test, None, sft_seed=k)
        starts.append(start_table(scores, other, k))
    starts = pd.concat(starts, ignore_index=True) if starts else None
    if starts is not None:
        print(starts.round(4).to_string(index=False))
    if out is not None:
        t.to_csv(out, index=False)
    if stability_out is not None:
        stability.to_csv(stability_out, index=False)
    if behaviour_out is not None:
        behaviour.to_csv(behaviour_out, index=False)
    if markdown is not None:
        head = [f"{len(test)} test studies; every run's Findings scored over {draws} sampled report(s) per study, "
                "pooled per study (grpo.eval_draws)."]
        parts = _markdown_parts(t, answer, head, reading, behaviour, stability, starts, n_boot)
        markdown.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    for f in blocks:
        _write_block(f, study.answer_block(t))
    return 0


#: the heading of each family's table in ``--markdown``
FAMILY_HEADINGS = {
    "primary": "**Primary metrics** (one Holm family):",
    "secondary": "**Secondary metrics** (one Holm family):",
    "controls": "**Controls** (one Holm family of their own, the primary metrics: each control vs SFT, how far GRPO "
                "moves the policy without signal; each reward vs the noise control, or R_fmt without it, whether "
                "the reward's signal moves it beyond that drift):",
}


def _markdown_parts(t: pd.DataFrame, answer: list[str], head: list[str], reading: pd.DataFrame,
                    behaviour: pd.DataFrame, stability: pd.DataFrame | None, starts: pd.DataFrame | None,
                    n_boot: int) -> list[str]:
    """The sections of ``table --markdown``: the answer, ``head``, each family's table (:data:`FAMILY_HEADINGS`),
    what the Findings state, what each configuration writes, the verdicts under other resampling seeds (the
    controls' in a section of their own) and the two SFT starts."""
    from sdrlib.experiments.study import runs as study
    from sdrlib.experiments.study.behaviour import behaviour_markdown
    from sdrlib.experiments.study.stability import stability_markdown, start_markdown

    parts = ["\n\n".join(answer), *head]
    for fam in study.FAMILIES:
        if (t.family == fam).any():
            parts.append(f"{FAMILY_HEADINGS[fam]}\n\n" + study.study_markdown(t, family=fam))
    parts.append("**What the Findings state** (offline labeler; mean over seeds, range over seeds in brackets; "
                 "context, not a test):\n\n" + _reading_markdown(reading))
    parts.append("**What each configuration writes** (offline labeler, CheXpert-14 labels the references state; "
                 "mean over seeds, range over seeds in brackets, the per-label ranges in the behaviour CSV; "
                 "context, not a test):\n\n" + behaviour_markdown(behaviour))
    if stability is not None:
        paper = stability[stability.family != "controls"]
        controls = stability[stability.family == "controls"]
        if len(paper):
            parts.append(f"**The verdicts under other resampling seeds** ({n_boot} resamples each; a row whose "
                         "verdicts differ rests on resampling noise):\n\n" + stability_markdown(paper))
        if len(controls):
            parts.append(f"**The controls' verdicts under other resampling seeds** ({n_boot} resamples each; the "
                         "controls family):\n\n" + stability_markdown(controls))
    if starts is not None:
        parts.append("**Two SFT starts** (each configuration's mean on the GRPO seeds both starts ran; not part "
                     "of the comparisons):\n\n" + start_markdown(starts))
    return parts


def _reading_markdown(reading: pd.DataFrame) -> str:
    """:func:`sdrlib.experiments.study.behaviour.study_reading` as a Markdown table."""
    def cell(r, col, fmt):
        lo, hi = r.get(f"{col}_min"), r.get(f"{col}_max")
        rng = f" [{lo:{fmt}}, {hi:{fmt}}]" if r.seeds > 1 and pd.notna(lo) else ""
        return f"{r[col]:{fmt}}{rng}"
    rows = ["| configuration | seeds | Findings stating no pathology | pathologies per Findings | on the template |",
            "|---|---|---|---|---|"]
    for _, r in reading.iterrows():
        rows.append(f"| {r.config} | {int(r.seeds) or ''} | {cell(r, 'normal_share', '.3f')} | "
                    f"{cell(r, 'pathologies', '.2f')} | {r.parsed:.3f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
