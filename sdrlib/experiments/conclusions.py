"""Conclusions that hold across machines and seeds, the machine a run came from, and a check that survives
another machine.

A README or notebook statement that one configuration is above or below another is made here, and only when it
holds **in every run given** (runs of one commit on different CPU kernel paths: ``sdrlib.numerics``) **across
seeds and studies**: in each run the paired test over seeds and studies (``seed_study_test``: the larger of a
two-level bootstrap p and a t-test over the seeds' differences) has p < alpha, every seed's difference has the
mean's sign, and the direction is the same in every run. Everything else reads "no difference detected at this
size", with the smallest difference the test would detect with 80 % power (:func:`detectable_effect`) and the
seeds a difference of the observed size would need (:func:`seeds_needed`).

- :func:`conclusions`: the table (``conclusions.csv`` in the first run's results folder, written by
  :func:`conclusion_lines`), one row per comparison of ``grpo_significance`` (configurations vs SFT and vs R_Cham,
  Findings macro F1 and BERTScore F1) and ``sft_vs_baselines_significance`` (SFT vs the image-blind baselines);
- :func:`conclusion_lines` / :func:`machine_lines`: the README paragraphs (``scripts/readme_numbers.py``);
- :func:`readme_machine`, :func:`check_mode`: which check a run gets against a README: **exact** (every number,
  ``claims.check_block``) when its ``machine.json`` has the README run's kernel path and library versions,
  **tolerant** otherwise (``claims.check_tolerant``: the machine-independent paragraphs exactly, and of the
  conclusions only what they rest on: a stated difference must have the same direction and p < alpha in the new
  run; a "no difference detected" is contradicted only by a difference larger than the detectable effect the README
  states, significant in every seed).

Assumptions and limits: normal seed effects (the t-test), power computed at the observed seed SD (one estimate
from 3 seeds: rough); a baseline comparison with one SFT policy has no seed level and uses the bootstrap interval;
no multiple-comparison correction, so across 16 comparisons about one "difference" in a run is expected by
chance at alpha 0.05: the every-run rule is what guards against it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from sdrlib import table_names
from sdrlib.io import atomic_write_text
from sdrlib.metrics.significance import format_p
from sdrlib.numerics import same_kernel_path
from sdrlib.results import ResultTableError, read_result_table

__all__ = ["ALPHA", "POWER", "detectable_effect", "seeds_needed", "same_sign_count", "conclusions", "conclusion_lines",
           "machine_lines", "readme_machine", "check_mode", "MACHINE_FILE", "TABLE",
           "MACHINE_INDEPENDENT", "COMPARED_VERSIONS", "TITLE", "check_verdicts", "read_machine", "split_groups",
           "run_profile", "readme_profile"]

ALPHA, POWER = 0.05, 0.8
MACHINE_FILE, TABLE = "machine.json", table_names.CONCLUSIONS
#: claim groups whose numbers do not depend on the kernel path (data only): checked exactly in tolerant mode too
MACHINE_INDEPENDENT = ("Report language (notebook 00)",)
#: libraries whose version must match for an exact check (the rest of machine.json's versions are recorded only)
COMPARED_VERSIONS = ("torch", "transformers", "trl", "numpy", "scipy", "pot", "sentence-transformers", "peft",
                     "accelerate", "tokenizers", "numba")
NO_DIFF = "no difference detected"
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


def detectable_effect(seed_sd: float, n_seeds: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """Smallest true difference the t-test over ``n_seeds`` seeds detects with probability ``power`` at level
    ``alpha``: ``(t_{1-alpha/2, k-1} + t_{power, k-1}) * seed_sd / sqrt(k)``, k = ``n_seeds`` (NaN for k < 2 or
    no SD).
    Example: ``detectable_effect(0.02, 3)`` -> 0.062 (3 seeds need about 3.1 seed SDs)."""
    if n_seeds < 2 or not np.isfinite(seed_sd):
        return float("nan")
    t = stats.t.ppf(1 - alpha / 2, n_seeds - 1) + stats.t.ppf(power, n_seeds - 1)
    return float(t * seed_sd / math.sqrt(n_seeds))


def seeds_needed(diff: float, seed_sd: float, *, alpha: float = ALPHA, power: float = POWER,
                 most: int = 200) -> float:
    """Seeds at which :func:`detectable_effect` falls to ``|diff|`` (NaN when ``diff`` is 0 or the SD is
    unknown; ``inf`` beyond ``most``). Example: ``seeds_needed(0.03, 0.02)`` -> 6."""
    if not (np.isfinite(diff) and np.isfinite(seed_sd)) or diff == 0:
        return float("nan")
    for k in range(2, most + 1):
        if detectable_effect(seed_sd, k, alpha=alpha, power=power) <= abs(diff):
            return float(k)
    return float("inf")


def _bootstrap_mde(ci_low: float, ci_high: float, *, alpha: float = ALPHA, power: float = POWER) -> float:
    se = (ci_high - ci_low) / (2 * stats.norm.ppf(1 - alpha / 2))
    return float((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * se)


def _comparisons(results_dir: Path, metrics: Sequence[str], section: str) -> pd.DataFrame:
    rows = []
    need = {"A", "B", "section", "metric", "diff", "p_value"}  # older tables (per-seed tests) give no conclusions
    t = read_result_table(results_dir, table_names.GRPO_SIGNIFICANCE)
    if t is not None and need <= set(t.columns):
        t = t[(t.section == section) & t.B.isin(["SFT", "R_Cham"])]
        for _, r in t.iterrows():
            m = str(r.metric).split("@")[0]
            if m not in metrics:
                continue
            k = int(r.n_seeds) if "n_seeds" in r.index and pd.notna(r.n_seeds) else 1
            same = same_sign_count(r)
            sd = float(r.seed_sd) if "seed_sd" in r.index and pd.notna(r.seed_sd) else float("nan")
            rows.append(dict(A=r.A, B=r.B, section=section, metric=m, diff=float(r["diff"]),
                             p_value=float(r.p_value), seeds=k, same_sign=same, seed_sd=sd,
                             mde=detectable_effect(sd, k), seeds_needed=seeds_needed(float(r["diff"]), sd)))
    t = read_result_table(results_dir, table_names.SFT_VS_BASELINES_SIGNIFICANCE)
    if t is not None and need - {"A"} | {"ci_low", "ci_high"} <= set(t.columns):
        for _, r in t[t.section == section].iterrows():
            m = str(r.metric).split("@")[0]
            if m not in metrics:
                continue
            rows.append(dict(A="SFT", B=r.B, section=section, metric=m, diff=float(r["diff"]),
                             p_value=float(r.p_value), seeds=1, same_sign=1, seed_sd=float("nan"),
                             mde=_bootstrap_mde(float(r.ci_low), float(r.ci_high)), seeds_needed=float("nan")))
    return pd.DataFrame(rows, columns=["A", "B", "section", "metric", "diff", "p_value", "seeds", "same_sign",
                                       "seed_sd", "mde", "seeds_needed"])


def _holds(r: pd.Series, alpha: float) -> int:
    """+1 / -1 when the run shows a difference (p < alpha, every seed with the mean's sign), else 0."""
    if not (r.p_value < alpha and r.same_sign == r.seeds and r["diff"] != 0):
        return 0
    return 1 if r["diff"] > 0 else -1


def conclusions(results_dirs: Sequence[str | Path], *, section: str = "findings",
                metrics: Sequence[str] = ("clinical_f1_macro14", "bertscore_f1"),
                alpha: float = ALPHA, only_here: Sequence[str] = ()) -> pd.DataFrame:
    """One row per comparison present in the first run, with ``verdict`` (``above`` / ``below`` / ``no difference
    detected``) under the every-run rule above (every run that has the comparison, and at least two of them when
    several runs are given: a run that stopped early, or a rebuilt one that quoted fewer tables, leaves out what it
    lacks), ``runs`` (how many runs have the comparison), the first run's
    ``diff, p_value, same_sign, seeds, seed_sd, mde, seeds_needed``, and per other run ``i`` its ``diff_i`` and
    ``p_value_i``; ``mde`` is the largest over the runs. ``only_here``: configuration labels whose reward changed
    since the other runs (e.g. G-CARL after claim deduplication, issue 34): their comparisons are not read from the
    other runs (a label alone does not make two runs of one reward), so they count as in the first run only."""
    dirs = [Path(d) for d in results_dirs]
    if not dirs:
        raise ValueError("conclusions needs at least one results folder")
    base = _comparisons(dirs[0], metrics, section)
    if base.empty:
        return base.assign(verdict=pd.Series(dtype=str), runs=pd.Series(dtype=int))
    keys = ["A", "B", "section", "metric"]
    votes = [base.apply(_holds, axis=1, alpha=alpha)]
    mde = base.mde.copy()
    runs = pd.Series(1, index=base.index)
    for i, d in enumerate(dirs[1:], start=2):
        other = base[keys].merge(_comparisons(d, metrics, section), on=keys, how="left")
        other.index = base.index
        changed = base.A.isin(list(only_here)) | base.B.isin(list(only_here))
        other.loc[changed, [c for c in other.columns if c not in keys]] = np.nan
        base[f"diff_{i}"], base[f"p_value_{i}"] = other["diff"], other.p_value
        have = other.p_value.notna()
        runs += have.astype(int)
        votes.append(other.apply(lambda r: _holds(r, alpha) if pd.notna(r.p_value) else np.nan, axis=1))
        mde = np.fmax(mde, other.mde)
    v = pd.concat(votes, axis=1)
    # every run that has the comparison shows it the same way, and at least two runs have it (one alone cannot
    # show that it survives another machine) unless only one run was given
    agree = (v.abs().min(axis=1) == 1) & (v.nunique(axis=1) == 1) & (runs >= min(2, len(dirs)))
    base["verdict"] = np.where(agree, np.where(v.iloc[:, 0] > 0, "above", "below"), NO_DIFF)
    base["mde"], base["runs"] = mde, runs
    base["alpha"], base["power"] = alpha, POWER
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
    n = len(dirs)
    which = (f"in each of the {n} runs ({', '.join(labels)}) that has the comparison (at least two)" if n > 1
             else f"in this run ({labels[0]})")
    out = [f"- The rule: a difference is stated only when, {which}, p < {alpha:g} over seeds and studies, each seed has the mean's sign and the "
           f"direction agrees; otherwise \"{NO_DIFF}\", with the difference a test of this size detects with "
           f"{POWER * 100:.0f} % power ({src})."]
    if only_here and n > 1:
        out.append(f"- Compared in this run only (their reward changed since the other runs): "
                   f"{', '.join(only_here)}; with one run the rule states no direction for them.")
    for _, r in t.iterrows():
        runs = [f"{r['diff']:+.3f} ({format_p(r.p_value)}"
                + (f", {int(r.same_sign)} of {int(r.seeds)} seeds" if r.seeds > 1 else "") + f") in {labels[0]}"]
        runs += [f"{r[f'diff_{i}']:+.3f} ({format_p(r[f'p_value_{i}'])}) in {labels[i - 1]}"
                 for i in range(2, n + 1) if pd.notna(r.get(f"p_value_{i}"))]
        head = f"- {r.section.capitalize()} {r.metric}, {r.A} vs {r.B}: {r.verdict}"
        if r.verdict == NO_DIFF:
            tail = (f"; detectable at this size: {r.mde:.3f}" if np.isfinite(r.mde) else "")
            if np.isfinite(r.seeds_needed) and r.seeds_needed > r.seeds:  # more seeds would help
                tail += f"; a difference of {abs(r['diff']):.3f} would need {int(r.seeds_needed)} seeds"
            elif r.seeds > 1 and np.isinf(r.seeds_needed):
                tail += f"; a difference of {abs(r['diff']):.3f} would need more than 200 seeds"
            out.append(f"{head} at this size: {'; '.join(runs)}{tail} ({src}).")
        else:
            out.append(f"{head} in {'each of ' + str(int(r.runs)) + ' runs' if n > 1 else 'this run'}: {'; '.join(runs)} ({src}).")
    return out


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
    return {"cpu_model": m.get("cpu_model"), "avx512": m.get("avx512"), "kernel_path": m.get("kernel_path"),
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
    return [f"- This run: {k['cpu_model']}, {k['logical_cpus']} CPUs{' with AVX-512' if k['avx512'] else ''}, "
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


def check_mode(block: str, results_dir: str | Path) -> tuple[str, list[str]]:
    """``("exact", [])`` when the new run's machine record has the README run's kernel path and library versions,
    else ``("tolerant", reasons)``."""
    old, new = readme_machine(block), read_machine(results_dir)
    if old is None:
        return "tolerant", ["the README records no machine"]
    if new is None:
        return "tolerant", [f"{Path(results_dir) / MACHINE_FILE} is missing (a run before machine records)"]
    new = _key_fields(new)
    reasons = same_kernel_path(old, new)
    for lib in sorted(set(old["versions"]) | set(new["versions"])):
        if old["versions"].get(lib) != new["versions"].get(lib):
            reasons.append(f"{lib} {old['versions'].get(lib)} vs {new['versions'].get(lib)}")
    return ("exact", []) if not reasons else ("tolerant", reasons)


def split_groups(block: str) -> list[tuple[str, str]]:
    """``[(title, text), ...]`` of a README block's ``**title**`` paragraphs (text before the first: title "")."""
    parts = re.split(r"^\*\*(.+?)\*\*[ \t]*$", block, flags=re.M)
    return [("", parts[0])] + [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def check_verdicts(block: str, results_dir: str | Path, *, alpha: float = ALPHA) -> tuple[list[str], list[str]]:
    """``(problems, notes)``: every conclusion bullet of ``block`` against the run's own verdict
    (:func:`conclusions` of that run alone). A stated ``above`` / ``below`` must come out the same; a ``no
    difference detected`` whose comparison now shows a difference larger than the README's detectable effect is a
    problem, a smaller significant one a note (one run alone is what the rule refuses to conclude from). A
    conclusion the run lacks is a problem."""
    problems: list[str] = []
    notes: list[str] = []
    new = conclusions([results_dir], alpha=alpha)
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
        seen_as = f"diff {r['diff']:+.3f}, {format_p(r.p_value)}, {int(r.same_sign)} of {int(r.seeds)} seeds"
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
