"""EditGRPO's edits per rollout: operations per edited completion and how close the edit comes to the reference.

Samples ``--k`` completions for each of ``--n`` training studies from a profile's SFT policy (notebook 03), as
GRPO's rollouts are sampled (``grpo.temperature``, ``grpo.max_completion_length``), and edits every one of them
against its reference with :func:`sdrlib.rewards.methods.editgrpo.edit_report` at the profile's tau, once per ``ops`` value
(``1``: EditGRPO's released configuration; ``all``: rules repeated until none applies). ``--old <commit>`` also
runs the EditGRPO module as it was at that commit (``sdrlib/rewards/methods/editgrpo.py``, or
``sdrlib/editgrpo.py`` before issue 25; read with ``git show``) on the same rollouts.

Per variant: edit operations per edited completion (mean, median, max), the share left unchanged, the share
whose sections equal the reference's sentence for sentence, the share of edited sentences taken from the
reference, the share of the sample's sentences the edit keeps, and the labeler's F1_14 / F1_ent of the edits
(:func:`sdrlib.rewards.methods.editgrpo.clinical_components`) next to the samples', with the share whose labeler findings
(with presence) are exactly the reference's (F1_ent = 1).

Usage (after notebooks 00, 01 and 03 of the profile)::

    SDR_ROOT=/tmp/cpu-edit .venv/bin/python benchmarks/bench_edits.py --profile cpu --n 50 --k 4 --old 1329f79
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OPS = ("replace_conflict", "replace_fp", "delete", "add", "replace_section")


def _old_module(commit: str):
    for rel in ("sdrlib/rewards/methods/editgrpo.py", "sdrlib/editgrpo.py"):  # the module's path after / before issue 25
        run = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{rel}"], capture_output=True, text=True)
        if run.returncode == 0:
            src = run.stdout
            break
    else:
        raise SystemExit(f"no EditGRPO module at commit {commit}")
    path = Path(tempfile.mkdtemp()) / f"editgrpo_{commit}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"editgrpo_{commit}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _mean(v) -> float:
    v = [x for x in v if not np.isnan(x)]
    return float(np.mean(v)) if v else float("nan")


def _summary(samples, edits, counts, refs) -> dict:
    from sdrlib.reports import parse_template, split_sentences
    from sdrlib.rewards import check_completion
    from sdrlib.rewards.methods.editgrpo import clinical_components

    ops = np.array([sum(c.get(k, 0) for k in OPS) for c in counts])
    same = np.array([e == s for e, s in zip(edits, samples)])
    ident, from_ref, kept, ef, ei = [], [], [], [], []
    for s, e, (rf, ri) in zip(samples, edits, refs):
        pe = parse_template(e)
        ps, _ = check_completion(s, 4000)
        es = [split_sentences(pe.findings), split_sentences(pe.impression)] if pe else [[], []]
        ss = [split_sentences(ps.findings), split_sentences(ps.impression)] if ps else [[], []]
        rs = [split_sentences(rf), split_sentences(ri)]
        ident.append(es == rs)
        flat_e, flat_s, flat_r = sum(es, []), sum(ss, []), set(sum(rs, []))
        from_ref.append(np.mean([x in flat_r for x in flat_e]) if flat_e else np.nan)
        kept.append(np.mean([x in flat_e for x in flat_s]) if flat_s else np.nan)
        ef.append(pe.findings if pe else "")
        ei.append(pe.impression if pe else "")
    comp = clinical_components(ef, ei, [r[0] for r in refs], [r[1] for r in refs])
    changed = ~same
    return {"rollouts": len(samples), "edited (changed)": int(changed.sum()),
            "ops per edited completion, mean": float(ops[changed].mean()) if changed.any() else 0.0,
            "ops median": float(np.median(ops[changed])) if changed.any() else 0.0,
            "ops max": int(ops.max()) if len(ops) else 0,
            "share unchanged": float(same.mean()),
            "share identical to the reference": float(np.mean(ident)),
            "edited sentences from the reference": _mean(from_ref),
            "sample sentences kept (of samples with a template)": _mean(kept),
            "F1_14 of the edits": float(comp["f1_14"].mean()), "F1_ent of the edits": float(comp["f1_entity"].mean()),
            "share with the reference's labeler findings (F1_ent = 1)": float(np.mean(comp["f1_entity"] == 1))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--n", type=int, default=50, help="training studies")
    ap.add_argument("--k", type=int, default=4, help="rollouts per study")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--old", default="", help="also run the EditGRPO module of this commit")
    ap.add_argument("--out", default="", help="write the rollouts, edits and summary as JSON here")
    args = ap.parse_args(argv)

    from sdrlib import training
    from sdrlib.config import load_profile
    from sdrlib.data import load_split
    from sdrlib.embedding import SentenceEmbedder
    from sdrlib.generation import generate_candidates, load_images
    from sdrlib.models import set_cpu_threads
    from sdrlib.rewards import check_completion
    from sdrlib.rewards.methods import editgrpo
    from sdrlib.rewards.methods.editgrpo import clinical_components

    cfg = load_profile(args.profile)
    set_cpu_threads(cfg.sft.threads)
    recs = load_split(cfg, "train")[: args.n]
    model, proc = training.load_policy(cfg, training.policy_dir(cfg, "sft"))
    imgs = [load_images(r.image_paths, cfg.sft.max_images) for r in recs]
    cands = generate_candidates(model, proc, imgs, args.k, temperature=cfg.grpo.temperature, seed=args.seed,
                                max_new_tokens=cfg.grpo.max_completion_length, batch_size=cfg.sft.eval_batch_size)
    samples = [c for row in cands for c in row]
    refs = [(r.findings, r.impression) for r in recs for _ in range(args.k)]
    emb = SentenceEmbedder.from_config(cfg)
    variants = {"new, ops=1 (default)": (editgrpo, {"ops": 1}), "new, ops=all": (editgrpo, {"ops": None})}
    if args.old:
        variants[f"old ({args.old})"] = (_old_module(args.old), {})
    table, edits_out = {}, {}
    for name, (mod, kw) in variants.items():
        rng = np.random.default_rng(args.seed)
        out = [mod.edit_report(s, rf, ri, emb, tau=cfg.grpo.editgrpo.tau, level="sentence", rng=rng,
                               max_chars=cfg.grpo.max_chars, **kw) for s, (rf, ri) in zip(samples, refs)]
        edits_out[name] = [e for e, _ in out]
        table[name] = _summary(samples, [e for e, _ in out], [c for _, c in out], refs)
    parsed = [check_completion(s, cfg.grpo.max_chars)[0] for s in samples]
    comp = clinical_components([p.findings if p else "" for p in parsed], [p.impression if p else "" for p in parsed],
                               [r[0] for r in refs], [r[1] for r in refs])
    table["samples"] = {"rollouts": len(samples), "share with a valid template": float(np.mean([p is not None
                                                                                                for p in parsed])),
                        "F1_14": float(comp["f1_14"].mean()), "F1_ent": float(comp["f1_entity"].mean()),
                        "share with the reference's labeler findings (F1_ent = 1)":
                            float(np.mean(comp["f1_entity"] == 1))}
    print(json.dumps(table, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "summary": table, "samples": samples,
                                              "references": refs, "edits": edits_out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
