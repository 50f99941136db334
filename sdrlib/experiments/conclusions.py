"""Conclusions that hold across machines and seeds, the machine a run came from, and a check that survives
another machine.

A README or notebook statement that one configuration is above or below another is made here, by the one rule of
:mod:`sdrlib.metrics.verdict`: in each run, the comparisons it reports form one family; their p-values (the paired
test over seeds and studies, ``seed_study_test``: the larger of a two-level bootstrap p and a t-test over the
seeds' differences) are Holm-adjusted; a direction needs the adjusted p below alpha and the interval excluding
0 (how many seeds share the mean's sign is reported, not required). Across runs (one commit on different CPU
kernel paths: ``sdrlib.numerics``) it must hold **in every distinct run given**, with the same direction; runs whose
trained numbers are identical (the same values of every comparison) count once. Everything else reads "no difference
detected at this size", with the smallest difference the combined test would detect with 80 % power at the
family's level (both halves: the study bootstrap's standard error and the seeds' spread; the binding one named)
and what a difference of the observed size would need: more seeds when seeds bind, more test studies otherwise.

- :func:`conclusions`: the table, one row per comparison of ``grpo_significance`` (configurations vs SFT, vs R_Cham
  and vs R_exact, Findings macro F1 and BERTScore F1) and ``sft_vs_baselines_significance`` (SFT vs the image-blind
  baselines);
- :func:`conclusion_lines` / :func:`machine_lines`: the README paragraphs (``python -m sdrlib.experiments.claims``);
- :func:`readme_machine`, :func:`check_mode`: which check a run gets against a README: **exact** (every number,
  ``claims.check_block``) when its ``machine.json`` has the README run's CPU vendor and model, kernel path and
  library versions,
  **tolerant** otherwise (``claims.check_tolerant``: the machine-independent paragraphs exactly, and of the
  conclusions only what they rest on: a stated difference must have the same direction in the new run under the
  rule; a "no difference detected" is contradicted only by a difference larger than the detectable effect the
  README states, with a direction under the rule).

Assumptions and limits: normal seed effects (the t half) and a normal study bootstrap (the z half); power at the
observed seed SD and study SE (rough with 3 seeds); a baseline comparison with one SFT policy has no seed level and
rests on the bootstrap alone; the family is what one run reports (Holm), not every table of the repository.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdrlib import table_names
from sdrlib.io import atomic_write_text
from sdrlib.metrics.significance import format_p
from sdrlib.metrics.verdict import (ALPHA, METRIC_RANGE, NO_DIFF, POWER, detectable_phrase, family_verdicts,
                                    rule_sentence)
from sdrlib.numerics import same_kernel_path
from sdrlib.results import ResultTableError, read_result_table

__all__ = ["ALPHA", "POWER", "NO_DIFF", "BASELINES", "same_sign_count", "conclusions", "conclusion_lines",
           "machine_lines", "readme_machine", "check_mode", "MACHINE_FILE", "TABLE",
           "MACHINE_INDEPENDENT", "COMPARED_VERSIONS", "TITLE", "check_verdicts", "read_machine", "split_groups",
           "run_profile", "readme_profile", "same_cpu"]

MACHINE_FILE, TABLE = "machine.json", table_names.CONCLUSIONS
#: claim groups whose numbers do not depend on the kernel path (data only): checked exactly in tolerant mode too
MACHINE_INDEPENDENT = ("Report language (notebook 00)",)
#: libraries whose version must match for an exact check (the rest of machine.json's versions are recorded only)
COMPARED_VERSIONS = ("torch", "transformers", "trl", "numpy", "scipy", "pot", "sentence-transformers", "peft",
                     "accelerate", "tokenizers", "numba")

_PROFILE_TAG = re.compile(r"<!--\s*profile:\s*([\w.-]+)\s*-->")
_MACHINE_TAG = re.compile(r"<!--\s*machine:\s*(\{.*?\})\s*-->", re.S)
_BULLET = re.compile(r"^- (?P<section>[A-Z]\w*) (?P<metric>[\w.]+), (?P<a>.+?) vs (?P<b>.+?): "
                     r"(?P<verdict>above|below|no difference detected)\b(?P<rest>.*)$", re.M)
_MDE = re.compile(r"detectable at this size: (\d+(?:\.\d+)?)")
#: the README paragraph :func:`conclusion_lines` fills (its verdicts are checked in every mode)
TITLE = "Conclusions across seeds, studies and kernel paths"


def same_sign_count(r: pd.Series) -> int:
    """Seeds whose difference has the mean's sign, from a ``grpo_significance`` row: ``n_same_sign``, or in the
    tables of runs before it was stored as a number (``docs/evidence/``) the ``same_sign`` text ``"k of n"``;
    0 when the row has neither."""
    if "n_same_sign" in r.index and pd.notna(r["n_same_sign"]):
        return int(r["n_same_sign"])
    if "same_sign" in r.index and pd.notna(r["same_sign"]):
        return int(str(r["same_sign"]).split()[0])
    return 0


#: the baselines a configuration is compared with in the conclusions: SFT, R_Cham, and R_exact (the paper's second
#: GRPO claim: set-distance rewards above the exact-match reward)
BASELINES = ("SFT", "R_Cham", "R_exact")
_COLUMNS = ["A", "B", "section", "metric", "diff", "p_value", "ci_low", "ci_high", "seeds", "same_sign", "seed_sd",
            "study_se", "value_a", "value_b"]


def _n_studies(results_dir: Path, table: str) -> int:
    """The test studies behind a significance table (its meta's ``protocol``: "100 test studies, ..."), 0 unknown."""
    try:
        meta = json.loads((results_dir / f"{table}.meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    m = re.search(r"(\d+) test studies", str(meta.get("protocol", ""))) if isinstance(meta, dict) else None
    return int(m.group(1)) if m else 0


def _comparisons(results_dir: Path, metrics: Sequence[str], section: str, alpha: float) -> pd.DataFrame:
    """One run's family: every comparison of the two significance tables on ``section`` and ``metrics``, with the
    rule applied over them (:func:`sdrlib.metrics.verdict.family_verdicts`)."""
    rows = []
    need = {"A", "B", "section", "metric", "diff", "p_value"}  # older tables (per-seed tests) give no conclusions
    t = read_result_table(results_dir, table_names.GRPO_SIGNIFICANCE)
    n_studies = _n_studies(results_dir, table_names.GRPO_SIGNIFICANCE)
    if t is not None and need <= set(t.columns):
        t = t[(t.section == section) & t.B.isin(list(BASELINES))]
        for _, r in t.iterrows():
            m = str(r.metric).split("@")[0]
            if m not in metrics:
                continue
            rows.append(dict(A=r.A, B=r.B, section=section, metric=m, diff=float(r["diff"]), p_value=float(r.p_value),
                             ci_low=_num(r, "ci_low"), ci_high=_num(r, "ci_high"),
                             seeds=int(r.n_seeds) if "n_seeds" in r.index and pd.notna(r.n_seeds) else 1,
                             same_sign=same_sign_count(r), seed_sd=_num(r, "seed_sd"),
                             study_se=_num(r, "study_se"),  # the study half's own SE (NaN in older tables)
                             value_a=_num(r, "value_a"), value_b=_num(r, "value_b")))
    t = read_result_table(results_dir, table_names.SFT_VS_BASELINES_SIGNIFICANCE)
    if t is not None and need - {"A"} | {"ci_low", "ci_high"} <= set(t.columns):
        n_studies = n_studies or _n_studies(results_dir, table_names.SFT_VS_BASELINES_SIGNIFICANCE)
        for _, r in t[t.section == section].iterrows():
            m = str(r.metric).split("@")[0]
            if m not in metrics:
                continue
            rows.append(dict(A="SFT", B=r.B, section=section, metric=m, diff=float(r["diff"]),
                             p_value=float(r.p_value), ci_low=float(r.ci_low), ci_high=float(r.ci_high), seeds=1,
                             same_sign=1, seed_sd=float("nan"), study_se=_num(r, "study_se"),
                             value_a=_num(r, "value_a"), value_b=_num(r, "value_b")))
    base = pd.DataFrame(rows, columns=_COLUMNS)
    if base.empty:
        return base.assign(p_holm=pd.Series(dtype=float), verdict=pd.Series(dtype=str))
    fam = family_verdicts(base.rename(columns={"seeds": "n_seeds", "same_sign": "n_same_sign"}),
                          n_studies=n_studies, alpha=alpha, power=POWER)
    return fam.rename(columns={"n_seeds": "seeds", "n_same_sign": "same_sign"})


def _num(r: pd.Series, col: str) -> float:
    return float(r[col]) if col in r.index and pd.notna(r[col]) else float("nan")


def _holds(r: pd.Series) -> int:
    """+1 / -1 when the run shows a difference under the rule (its family's verdict), else 0."""
    return {"above": 1, "below": -1}.get(r.verdict, 0)


def _same_numbers(a: pd.DataFrame, b: pd.DataFrame, only_here: Sequence[str] = ()) -> bool:
    """Two runs trained the same numbers: every comparison both hold (those of ``only_here`` configurations left
    out: their reward changed between the runs) has the same two values (a rerun on an identical machine, not a
    replication)."""
    keys = ["A", "B", "section", "metric"]
    a = a[~(a.A.isin(list(only_here)) | a.B.isin(list(only_here)))]
    m = a[keys + ["value_a", "value_b"]].merge(b[keys + ["value_a", "value_b"]], on=keys)
    if m.empty or m[["value_a_x", "value_b_x"]].isna().all().all():
        return False
    return bool(np.allclose(m[["value_a_x", "value_b_x"]].to_numpy(float), m[["value_a_y", "value_b_y"]].to_numpy(float),
                            rtol=0, atol=1e-12, equal_nan=True))


def conclusions(results_dirs: Sequence[str | Path], *, section: str = "findings",
                metrics: Sequence[str] = ("clinical_f1_macro14", "bertscore_f1"),
                alpha: float = ALPHA, only_here: Sequence[str] = ()) -> pd.DataFrame:
    """One row per comparison present in the first run, with ``verdict`` (``above`` / ``below`` / ``no difference
    detected``) under the module's rule: the first run's family verdict, and every other **distinct** run that has the
    comparison agreeing (at least two distinct runs when several distinct ones are given; a run that stopped early,
    or a rebuilt one that quoted fewer tables, leaves out what it lacks; a run with the same trained numbers as an
    earlier one is left out and named in ``duplicate_runs``). Columns: ``runs`` (distinct runs with the
    comparison), the first run's ``diff, p_value, p_holm, ci_low, ci_high, same_sign, seeds, seed_sd, mde, binding,
    seeds_needed, studies_needed, family_size`` and per other run ``i`` its ``diff_i``, ``p_value_i`` and
    ``p_holm_i``; ``mde`` is the largest over the runs. ``only_here``: configuration labels whose reward changed
    since the other runs (e.g. G-CARL after claim deduplication): their comparisons are not read from the other runs
    (a label alone does not make two runs of one reward), so they count as in the first run only."""
    dirs = [Path(d) for d in results_dirs]
    if not dirs:
        raise ValueError("conclusions needs at least one results folder")
    base = _comparisons(dirs[0], metrics, section, alpha)
    if base.empty:
        return base.assign(verdict=pd.Series(dtype=str), runs=pd.Series(dtype=int))
    keys = ["A", "B", "section", "metric"]
    votes = [base.apply(_holds, axis=1)]
    mde = base.mde.copy()
    runs = pd.Series(1, index=base.index)
    seen, duplicates = [base], []
    for i, d in enumerate(dirs[1:], start=2):
        theirs = _comparisons(d, metrics, section, alpha)
        if any(_same_numbers(x, theirs, only_here) for x in seen):
            duplicates.append(i)
            continue
        seen.append(theirs)
        other = base[keys].merge(theirs, on=keys, how="left")
        other.index = base.index
        changed = base.A.isin(list(only_here)) | base.B.isin(list(only_here))
        other.loc[changed, [c for c in other.columns if c not in keys]] = np.nan
        base[f"diff_{i}"], base[f"p_value_{i}"], base[f"p_holm_{i}"] = other["diff"], other.p_value, other.p_holm
        runs += other.p_value.notna().astype(int)
        votes.append(other.apply(lambda r: _holds(r) if pd.notna(r.p_value) else np.nan, axis=1))
        mde = np.fmax(mde, other.mde)
    v = pd.concat(votes, axis=1)
    # every distinct run that has the comparison shows it the same way, and at least two distinct runs have it (one
    # alone cannot show that it survives another machine) unless only one distinct run was given
    agree = (v.abs().min(axis=1) == 1) & (v.nunique(axis=1) == 1) & (runs >= min(2, len(seen)))
    base["verdict"] = np.where(agree, np.where(v.iloc[:, 0] > 0, "above", "below"), NO_DIFF)
    base["mde"], base["runs"] = mde, runs
    base["alpha"], base["power"] = alpha, POWER
    base["duplicate_runs"] = " ".join(str(i) for i in duplicates)
    return base


def conclusion_lines(results_dirs: Sequence[str | Path], *, labels: Sequence[str] | None = None,
                     alpha: float = ALPHA, write_to: str | Path | None = None,
                     only_here: Sequence[str] = ()) -> list[str]:
    """The README's conclusions paragraph from :func:`conclusions`. The table is written only where asked
    (``write_to``, a ``.csv`` path; never into a results folder it reads), and the bullets name it; without it they
    name the significance tables they are computed from. ``labels``: one name per run (default: run 1, run 2,
    ...); ``only_here``: as :func:`conclusions` (named in the rule's bullet)."""
    dirs = [Path(d) for d in results_dirs]
    t = conclusions(dirs, alpha=alpha, only_here=only_here)
    if t.empty:
        return []
    if write_to is not None:
        atomic_write_text(Path(write_to), t.to_csv(index=False, float_format="%.6g", lineterminator="\n"))
        src = f"`{Path(write_to).name}`"
    else:
        src = (f"computed from `results/{table_names.GRPO_SIGNIFICANCE}.csv` and "
               f"`results/{table_names.SFT_VS_BASELINES_SIGNIFICANCE}.csv`")
    labels = list(labels or [f"run {i + 1}" for i in range(len(dirs))])
    out = [_rule_line(t, labels, alpha, src)]
    if only_here and len(dirs) > 1:
        out.append(f"- Compared in this run only (their reward changed since the other runs): "
                   f"{', '.join(only_here)}; with one run the rule states no direction for them.")
    out += [_comparison_line(r, labels, src) for _, r in t.iterrows()]
    return out


def _rule_line(t: pd.DataFrame, labels: Sequence[str], alpha: float, src: str) -> str:
    """The rule's bullet: the family, Holm, the interval and the seeds, the runs, the detectable effect."""
    dup = [labels[int(i) - 1] for i in str(t.duplicate_runs.iloc[0]).split()]
    distinct = [x for x in labels if x not in dup]
    which = (f"in each of the {len(distinct)} distinct runs ({', '.join(distinct)}) that has the comparison (at "
             "least two)" if len(distinct) > 1 else f"in this run ({labels[0]})")
    same = (f"; {', '.join(dup)} trained the same numbers as an earlier run and count once" if dup else "")
    return (f"- The rule: the {int(t.family_size.iloc[0])} comparisons of a run are one family; "
            f"{rule_sentence(alpha, which)}{same}; otherwise \"{NO_DIFF}\", with the difference the "
            f"combined test (study bootstrap and seeds) detects with {POWER * 100:.0f} % power at the family's level "
            f"and the half that binds it ({src}).")


def _comparison_line(r: pd.Series, labels: Sequence[str], src: str) -> str:
    """One comparison's bullet: the verdict, each distinct run's difference with its raw and Holm p, and for "no
    difference" what it could detect and what more would need."""
    n = len(labels)
    runs = [f"{r['diff']:+.3f} ({format_p(r.p_value)}, Holm {format_p(r.p_holm).removeprefix('p ')}"
            + (f", {int(r.same_sign)} of {int(r.seeds)} seeds" if r.seeds > 1 else "") + f") in {labels[0]}"]
    runs += [f"{r[f'diff_{i}']:+.3f} ({format_p(r[f'p_value_{i}'])}, Holm "
             f"{format_p(r[f'p_holm_{i}']).removeprefix('p ')}) in {labels[i - 1]}"
             for i in range(2, n + 1) if pd.notna(r.get(f"p_value_{i}"))]
    head = f"- {r.section.capitalize()} {r.metric}, {r.A} vs {r.B}: {r.verdict}"
    if r.verdict != NO_DIFF:
        where = f"each of {int(r.runs)} distinct runs" if r.runs > 1 else "this run"
        return f"{head} in {where}: {'; '.join(runs)} ({src})."
    tail = ""
    if np.isfinite(r.mde) and r.mde > METRIC_RANGE:
        tail = f"; {detectable_phrase(r.mde)}"
    elif np.isfinite(r.mde):
        tail = f"; detectable at this size: {r.mde:.3f} ({r.binding} bind)"
        d = abs(r["diff"])
        if r.binding == "seeds" and np.isfinite(r.seeds_needed):
            tail += f"; a difference of {d:.3f} would need {int(r.seeds_needed)} seeds"
        elif r.binding == "seeds" and np.isinf(r.seeds_needed):
            tail += f"; a difference of {d:.3f} would need more than 200 seeds"
        elif r.binding == "studies" and np.isfinite(r.studies_needed):
            tail += f"; a difference of {d:.3f} would need {int(r.studies_needed)} test studies"
    return f"{head} at this size: {'; '.join(runs)}{tail} ({src})."


# --------------------------------------------------------------------------- the machine a run came from
def read_machine(results_dir: str | Path) -> dict | None:
    """A run's ``machine.json`` (written by ``sdrlib.runner``), or None when the run has none; a file that is not
    a JSON object raises ``ResultTableError`` naming it."""
    p = Path(results_dir) / MACHINE_FILE
    if not p.is_file():
        return None
    try:
        rec = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ResultTableError(f"{p}: not a JSON machine record ({type(e).__name__})") from None
    if not isinstance(rec, dict):
        raise ResultTableError(f"{p}: not a JSON object (a {type(rec).__name__})")
    return rec


def _key_fields(m: dict) -> dict:
    return {"cpu_model": m.get("cpu_model"), "cpu_vendor": m.get("cpu_vendor"), "avx512": m.get("avx512"),
            "kernel_path": m.get("kernel_path"),
            "torch_cpu_capability": m.get("torch_cpu_capability"), "logical_cpus": m.get("logical_cpus"),
            "versions": {k: v for k, v in (m.get("versions") or {}).items() if k in COMPARED_VERSIONS}}


def machine_lines(results_dir: str | Path) -> list[str]:
    """The README's machine paragraph: what the run's ``machine.json`` says, and the same fields as a
    machine-readable comment that ``--check`` compares a new run against."""
    m = read_machine(results_dir)
    if m is None:
        return []
    k = _key_fields(m)
    vers = ", ".join(f"{n} `{v}`" for n, v in sorted(k["versions"].items()))
    profile = run_profile(results_dir)
    vendor = f" ({k['cpu_vendor']})" if k["cpu_vendor"] else ""
    return [f"- This run: {k['cpu_model']}{vendor}, {k['logical_cpus']} CPUs{' with AVX-512' if k['avx512'] else ''}, "
            f"kernel path `{k['kernel_path']}`, torch CPU capability `{k['torch_cpu_capability']}`; {vers} "
            f"(`{MACHINE_FILE}` in the run's results folder).",
            f"<!-- machine: {json.dumps(k, sort_keys=True)} -->"] + (
            [f"<!-- profile: {profile} -->"] if profile else [])


def run_profile(results_dir: str | Path) -> str | None:
    """The profile a results folder was written by (the ``profile`` its tables' ``.meta.json`` record), or None
    when they record none or disagree."""
    seen = set()
    for meta in sorted(Path(results_dir).glob("*.meta.json")):
        try:
            rec = json.loads(meta.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(rec, dict) and isinstance(rec.get("profile"), str):
            seen.add(rec["profile"])
    return seen.pop() if len(seen) == 1 else None


def readme_profile(block: str) -> str | None:
    """The profile a README block was generated from (:func:`machine_lines`' tag), or None for a block without it."""
    m = _PROFILE_TAG.search(block)
    return m.group(1) if m else None


def readme_machine(block: str) -> dict | None:
    """The machine fields a README block records (:func:`machine_lines`), or None."""
    m = _MACHINE_TAG.search(block)
    return json.loads(m.group(1)) if m else None


def same_cpu(old: dict, new: dict) -> list[str]:
    """What differs between two machine records' CPU vendor and model (empty: the same CPU), as the one line
    :func:`check_mode` gives. A record without a vendor (a block written before vendors were recorded) is compared
    by model alone.

    Why the CPU itself and not only the kernel path: MKL's ``MKL_CBWR=AVX2`` branch holds on Intel CPUs only (on
    another vendor MKL falls back to its automatic branch, Intel's oneMKL guide, "Getting Started with Conditional
    Numerical Reproducibility"), and a default run of one commit on the pinned AVX2 path gave other trained numbers on
    an Intel Xeon than on an AMD EPYC (GRPO, selection and pruning tables; the numba kernels give the same bits for
    every LLVM target, docs/reproducibility.md "Machines and kernel paths").
    Example: ``{"cpu_model": "AMD EPYC"}`` vs ``{"cpu_model": "Intel Xeon"}`` -> one line naming both.
    """
    va, vb = old.get("cpu_vendor"), new.get("cpu_vendor")
    ma, mb = old.get("cpu_model"), new.get("cpu_model")
    if (va and vb and va != vb) or ma != mb:
        return [f"CPU {ma}{f' ({va})' if va else ''} vs {mb}{f' ({vb})' if vb else ''}: the exact check needs the "
                "README run's CPU vendor and model, as MKL's pinned AVX2 branch holds on Intel CPUs only"]
    return []


def check_mode(block: str, results_dir: str | Path) -> tuple[str, list[str]]:
    """``("exact", [])`` when the new run's machine record has the README run's CPU vendor and model
    (:func:`same_cpu`), kernel path and library versions, else ``("tolerant", reasons)``."""
    old, new = readme_machine(block), read_machine(results_dir)
    if old is None:
        return "tolerant", ["the README records no machine"]
    if new is None:
        return "tolerant", [f"{Path(results_dir) / MACHINE_FILE} is missing (a run before machine records)"]
    new = _key_fields(new)
    reasons = same_cpu(old, new) + same_kernel_path(old, new)
    for lib in sorted(set(old["versions"]) | set(new["versions"])):
        if old["versions"].get(lib) != new["versions"].get(lib):
            reasons.append(f"{lib} {old['versions'].get(lib)} vs {new['versions'].get(lib)}")
    return ("exact", []) if not reasons else ("tolerant", reasons)


def split_groups(block: str) -> list[tuple[str, str]]:
    """``[(title, text), ...]`` of a README block's ``**title**`` paragraphs (text before the first: title "")."""
    parts = re.split(r"^\*\*(.+?)\*\*[ \t]*$", block, flags=re.M)
    return [("", parts[0])] + [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def check_verdicts(block: str, results_dir: str | Path, *, alpha: float = ALPHA,
                   also: Sequence[str | Path] = ()) -> tuple[list[str], list[str]]:
    """``(problems, notes)``: every conclusion bullet of ``block`` against the run's own verdict
    (:func:`conclusions` of that run alone, or with ``also``, of it and those runs: a direction must then hold in
    every distinct run, as ``python -m sdrlib.experiments.claims --also`` prints it).
    A stated ``above`` / ``below`` must come out the same; a ``no
    difference detected`` whose comparison now shows a difference larger than the README's detectable effect is a
    problem, a smaller significant one a note (one run alone is what the rule refuses to conclude from). A
    conclusion the run lacks is a problem."""
    problems: list[str] = []
    notes: list[str] = []
    new = conclusions([results_dir, *also], alpha=alpha)
    seen = 0
    for m in _BULLET.finditer(block):
        seen += 1
        a, b, sec, met, verdict = m["a"], m["b"], m["section"].lower(), m["metric"], m["verdict"]
        name = f"{m['section']} {met}, {a} vs {b}"
        row = new[(new.A == a) & (new.B == b) & (new.section == sec) & (new.metric == met)] if len(new) else new
        if not len(row):
            problems.append(f"{name}: not in the run's tables")
            continue
        r = row.iloc[0]
        seen_as = (f"diff {r['diff']:+.3f}, {format_p(r.p_value)}, Holm {format_p(r.p_holm).removeprefix('p ')}, "
                   f"{int(r.same_sign)} of {int(r.seeds)} seeds")
        if verdict != NO_DIFF:
            if r.verdict != verdict:
                problems.append(f"{name}: the README says {verdict}; this run: {r.verdict} ({seen_as})")
        elif r.verdict != NO_DIFF:
            mde_m = _MDE.search(m["rest"])
            mde = float(mde_m.group(1)) if mde_m else float("nan")
            msg = f"{name}: the README detects no difference; this run: {r.verdict} ({seen_as})"
            if np.isfinite(mde) and abs(r["diff"]) > mde:
                problems.append(msg + f", larger than the detectable {mde:.3f}")
            else:
                notes.append(msg + " in this one run")
    if not seen:
        notes.append("the README states no conclusions to compare")
    return problems, notes
