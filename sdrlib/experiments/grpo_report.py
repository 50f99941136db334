"""Notebook 04's ``results/headline.md``: the run's headline numbers gathered in one Markdown file.

:func:`headline_markdown` builds the file's lines from the frames notebook 04 has already computed (nothing is
recomputed here, so the file shows the numbers of the tables beside it): notebook 03's SFT-vs-baselines
comparison read from ``results/sft_vs_baselines_significance.csv``, the GRPO headline tables (mean ± sample SD over
seeds), the policy movement, the exact-match sparsity, the cost per step, EditGRPO's edit counts and the paired
tests over seeds and studies. :func:`write_headline` writes them atomically. The README quotes this file rather
than numbers typed by hand.

Scope: one run's results folder; sections whose input is empty are left out (the baselines section says which
file is missing). Example: ``write_headline(cfg.results_dir, headline_markdown(...))``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdrlib import table_names
from sdrlib.io import atomic_write_text
from sdrlib.metrics import paper_names
from sdrlib.metrics.significance import format_p
from sdrlib.metrics.verdict import NO_DIFF, detectable_phrase, family_directions
from sdrlib.results import SD_SUFFIX, format_mean_sd, read_result_table

__all__ = ["SIG_COLUMNS", "HEAD_METRICS", "headline_markdown", "write_headline", "grpo_conclusions", "headline_notes",
           "GROUP_COLUMNS", "movement_table", "sparsity_table", "cost_table"]

#: the columns of the significance section (``p_seeds``: each seed's study-only bootstrap)
SIG_COLUMNS = ["A", "B", "section", "metric", "diff", "ci_low", "ci_high", "p_value", "seed_sd", "n_same_sign",
               "n_seeds", "p_seeds"]
#: the metrics of the significance section (paper names, looked up in :mod:`sdrlib.metrics.paper_names`)
HEAD_METRICS = ("BERTScore F1", "CheXbert F1", "CheXpert-14 micro F1", "RadGraph F1")


def _baselines(results_dir: Path) -> list[str]:
    base = results_dir / f"{table_names.SFT_VS_BASELINES_SIGNIFICANCE}.csv"
    if not base.is_file():
        return ["(notebook 03's sft_vs_baselines_significance.csv is missing: run notebook 03 first)", ""]
    b = pd.read_csv(base)
    b = b[b.metric.str.split("@").str[0].isin(paper_names.suite_prefixes("CheXbert F1", "CheXpert-14 micro F1"))]
    n03 = int(b.n.iloc[0]) if "n" in b.columns and len(b) else "?"
    out = [f"## SFT vs image-blind baselines (notebook 03: {n03} test studies, one SFT sample, paired bootstrap "
           f"over studies; not the GRPO protocol below)", ""]
    out += [f"- {r.section.capitalize()} {r.metric.split('@')[0]}: SFT {r.value_a:.3f} vs {r.B} {r.value_b:.3f} "
            f"(diff {r.diff:+.3f}, 95% CI [{r.ci_low:+.3f}, {r.ci_high:+.3f}], {format_p(r.p_value)})"
            for r in b.itertuples()]
    return [*out, ""]


def headline_markdown(*, results_dir: str | Path, run: Mapping[str, Any], protocol: str,
                      tables: Mapping[tuple[str, str], pd.DataFrame], movement: pd.DataFrame,
                      sparsity: pd.DataFrame, cost_per_config: pd.DataFrame, edit_totals: pd.DataFrame,
                      sig: pd.DataFrame) -> list[str]:
    """The lines of ``headline.md`` (join with newlines).

    ``run``: ``profile, seed, source, n_train, n_test, model, steps, n_seeds, G, lr, beta, loss`` (the header);
    ``protocol``: the evaluation protocol sentence; ``tables[(section, "headline")]``: the rendered headline table
    of ``findings`` and ``impression``; ``movement`` / ``sparsity``: numbers with ``<name> (sd)`` columns (shown
    through :func:`sdrlib.results.format_mean_sd`); ``cost_per_config``: one row per configuration (index), seconds;
    ``edit_totals``: EditGRPO's counts (section left out when empty); ``sig``: the paired tests with
    :data:`SIG_COLUMNS` (section left out when empty; rows of :data:`HEAD_METRICS` only).
    """
    r = run
    head = [f"# Headline numbers: profile `{r['profile']}`, seed {r['seed']}", "",
            f"Written by notebooks/04_grpo.ipynb. Data: {r['source']} ({r['n_train']} train / {r['n_test']} test "
            f"studies scored); policy {r['model']}; GRPO {r['steps']} steps x {r['n_seeds']} seeds, G = {r['G']}, "
            f"lr {r['lr']:g}, beta {r['beta']:g}, loss {r['loss']}.", ""]
    head += _baselines(Path(results_dir))
    for section in ("findings", "impression"):
        head += [f"## GRPO, {section}: mean ± sample std over {r['n_seeds']} seeds ({protocol})", "",
                 tables[(section, "headline")].to_markdown(index=False), ""]
    head += ["## Policy movement (KL to SFT, total reward)", "", format_mean_sd(movement).to_markdown(index=False), "",
             "## Exact-match sparsity and within-group spread", "", format_mean_sd(sparsity).to_markdown(index=False),
             "", "## Cost per GRPO step (mean over seeds; seconds)", "", cost_per_config.round(3).to_markdown(), ""]
    if len(edit_totals):
        head += ["## EditGRPO edit counts (whole run, per seed)", "", edit_totals.to_markdown(index=False), ""]
    if len(sig):
        s2 = sig[sig.metric.str.split("@").str[0].isin(paper_names.suite_prefixes(*HEAD_METRICS))]
        s2 = s2.assign(metric=s2.metric.str.split("@").str[0])
        head += [f"## Across seeds and studies (seed_study_test; {protocol})", "",
                 "diff = mean over seeds of A - B; 95% CI and p from a two-level paired bootstrap (seeds, then the "
                 "shared test studies) and a t-test over seeds (p = the larger); seed_sd = SD of the per-seed "
                 "differences; n_same_sign = seeds whose difference has the mean's sign; p_seeds = each seed's "
                 "study-only bootstrap (detail).", "",
                 s2[SIG_COLUMNS].round(4).to_markdown(index=False), ""]
    return head


def write_headline(results_dir: str | Path, lines: list[str]) -> Path:
    """Write ``lines`` to ``<results_dir>/headline.md`` (atomically) and return the path."""
    path = Path(results_dir) / f"{table_names.HEADLINE}.md"
    atomic_write_text(path, "\n".join(lines))
    return path


def _verdict_lines(results_dir: Path, alpha: float) -> list[str]:
    from sdrlib.experiments.conclusions import NO_DIFF, conclusions

    v = conclusions([results_dir], alpha=alpha)
    v = v[v.B.isin(["SFT", "R_Cham", "R_exact"]) & (v.A != "SFT")] if len(v) else v  # notebook 04's pairs
    if v.empty:
        return []
    out = [_answer_line(v)]
    for metric, g in v.groupby("metric", sort=False):
        differ = g[g.verdict != NO_DIFF]
        for r in differ.itertuples():
            out.append(f"- Findings {metric}: {r.A} {r.verdict} {r.B} by {r.diff:+.3f} ({format_p(r.p_value)}, "
                       f"same sign in {int(r.same_sign)} of {int(r.seeds)} seeds; `results/grpo_significance.csv`).")
        rest = g[g.verdict == NO_DIFF]
        if len(rest):
            big = rest.loc[rest["diff"].abs().idxmax()]
            mde = rest.mde[np.isfinite(rest.mde)]
            tail = f"; {detectable_phrase(mde)}" if len(mde) else \
                "; one seed, so no across-seed spread to size a detectable difference"
            out.append(f"- Findings {metric}: {NO_DIFF} at this size for {len(rest)} of {len(g)} comparisons "
                       f"(largest difference {big.A} vs {big.B} {big['diff']:+.3f}, {format_p(big.p_value)}{tail}; "
                       "`results/grpo_significance.csv`).")
    return out


def _answer_line(v: pd.DataFrame) -> str:
    """The conclusion's first sentence: do the set-distance rewards beat SFT and R_exact in this run, by the rule
    (:func:`sdrlib.experiments.conclusions.conclusions`), and what size of difference the run could see."""
    from sdrlib.experiments.conclusions import NO_DIFF

    key = v[v.B.isin(["SFT", "R_exact"]) & v.A.isin(["R_Cham", "R_Haus"])]
    key = key if len(key) else v[v.B.isin(["SFT", "R_exact"])]
    differ = key[key.verdict != NO_DIFF]
    mde = key.mde[np.isfinite(key.mde)]
    size = f" ({detectable_phrase(mde)})" if len(mde) else ""
    words = ("; ".join(f"{r.A} {r.verdict} {r.B} on {r.metric}" for r in differ.itertuples()) if len(differ) else
             f"no difference detected for any of the {len(key)} comparisons{size}")
    return (f"- Answer (this run is a demonstration; the paper's question is answered at the size it needs by the "
            f"GRPO study, `configs/study.yaml`, `docs/evidence/study_seeing_start/`): do the set-distance rewards beat SFT and "
            f"R_exact on Findings after GRPO? {words[:1].upper() + words[1:]}.")


def _decomposition_lines(results_dir: Path) -> list[str]:
    t = read_result_table(results_dir, table_names.GRPO_DECOMPOSITION_SIGNIFICANCE)
    if t is None or t.empty:
        return []
    t = t[t.B == "SFT"].reset_index(drop=True)
    words = pd.Series(family_directions(t), index=t.index)  # the table is one family (Holm), the project's rule
    outside = t[words != NO_DIFF]
    out = [f"- Findings macro F1, each configuration against SFT seed by seed (paired bootstrap; the project's rule: "
           f"Holm over the {len(t)} rows, interval excluding 0): {len(outside)} of {len(t)} differ"
           + (": " + "; ".join(f"{r.A} {words[i]} SFT by {r['diff']:+.3f} in seed {r.seed}"
                               for i, r in outside.iterrows()) if len(outside) else
              f"; {NO_DIFF_WORDS} for every configuration")
           + " (`results/grpo_decomposition_significance.csv`)."]
    return out


NO_DIFF_WORDS = "no difference detected at this size"


def grpo_conclusions(results_dir: str | Path, *, alpha: float = 0.05) -> list[str]:
    """Notebook 04's closing sentences, every number read back from the run's result files.

    Under the project's rule (:mod:`sdrlib.experiments.conclusions`): across seeds and studies a direction only
    when the Holm-adjusted p < ``alpha`` and the interval excludes 0 (``grpo_significance``, Findings CheXpert-14
    macro F1 and BERTScore F1, each configuration against SFT and the related methods against R_Cham); the
    single-seed paired bootstraps of the decomposition only when the 95 % interval excludes 0; otherwise "no
    difference detected at this size". Then the reward audit's broken orderings and the silence test (:func:`sdrlib.experiments.claims.reward_audit`)
    and the policy movement (:func:`sdrlib.experiments.claims.policy_movement`). Files missing: their lines are left out.
    """
    from sdrlib.experiments import claims

    d = Path(results_dir)
    return [*_verdict_lines(d, alpha), *_decomposition_lines(d), *claims.policy_movement(d),
            *claims.reward_audit(d)]


def _protocol(results_dir: Path, name: str) -> str:
    """The ``protocol`` a table's meta records (which studies, samples and seeds), "" when it records none."""
    try:
        meta = json.loads((results_dir / f"{name}.meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(meta.get("protocol", "")) if isinstance(meta, dict) else ""


#: the reward labels of the controls (no content signal): read apart from the content rewards
CONTROL_LABELS = ("C-noise", "C-const")


def _sft_note(d: Path, values: pd.DataFrame, metric: str, protocol: str | None = None) -> list[str]:
    """SFT in notebook 04's headline table against SFT in notebook 03's ``sft_vs_baselines``: one policy, measured
    on other studies with other samples."""
    base = read_result_table(d, table_names.SFT_VS_BASELINES)
    prefix = paper_names.suite_prefixes("CheXbert F1")[0]
    if "SFT" not in values.index or base is None or "findings: SFT" not in base.columns:
        return []
    row = base[base.metric.astype(str).str.split("@").str[0] == prefix]
    if row.empty:
        return []
    here, there = values.loc["SFT"], float(row["findings: SFT"].iloc[0])
    p04 = protocol or _protocol(d, table_names.GRPO_SIGNIFICANCE) or "see grpo_significance"
    p03 = _protocol(d, table_names.SFT_VS_BASELINES) or "see sft_vs_baselines"
    return [f"- SFT, Findings {metric}: {float(here['mean']):.3f} ±{float(here['sd']):.3f} here (mean ± SD over "
            f"{int(here['n'])} sample{'s' if int(here['n']) != 1 else ''}; {p04}) and {there:.3f} in notebook 03 ({p03}; `results/sft_vs_baselines.csv`): "
            "one SFT policy scored under two protocols (the test studies and the samples each names), so the gap "
            "between the two is measurement noise (which studies, which samples), not a change of the policy."]


def _control_note(d: Path, values: pd.DataFrame, metric: str) -> list[str]:
    """Where the drift control lands among the GRPO configurations on ``metric``, and the positive findings it
    states against the content rewards' (``grpo_positive_findings``); means, not tested."""
    ctrl = next((c for c in CONTROL_LABELS if c in values.index), None)
    grpo = values.drop(index="SFT", errors="ignore")
    if ctrl is None or len(grpo) < 2:
        return []
    x = float(grpo.loc[ctrl, "mean"])
    rank = 1 + int((grpo["mean"].astype(float) > x).sum())
    top = grpo["mean"].astype(float).idxmax()
    sft = f"; SFT {float(values.loc['SFT', 'mean']):.3f}" if "SFT" in values.index else ""
    line = (f"- The drift control {ctrl}, Findings {metric}: {x:.3f}, rank {rank} of {len(grpo)} GRPO configurations "
            f"(highest {top} {float(grpo.loc[top, 'mean']):.3f}{sft})")
    pos = read_result_table(d, table_names.GRPO_POSITIVE_FINDINGS)
    if pos is not None and ctrl in set(pos.config):
        k = pos.set_index("config")["positives per report"].astype(float)
        content = k.drop(index=["reference", "SFT", "R_fmt", *CONTROL_LABELS], errors="ignore")
        ref = f", the references {k['reference']:.2f}" if "reference" in k.index else ""
        rng = f"{content.min():.2f} to {content.max():.2f} for the content rewards" if len(content) else ""
        line += (f"; positive findings per Findings section: {ctrl} {k[ctrl]:.2f}, "
                 + ", ".join(x for x in (rng, f"SFT {k['SFT']:.2f}" if "SFT" in k.index else "") if x)
                 + f"{ref} (`results/grpo_positive_findings.csv`)")
    return [line + "; higher / lower means, not tested (section 6 tests each configuration against SFT)."]


def headline_notes(results_dir: str | Path, *, metric: str = "CheXpert-14 macro F1",
                   protocol: str | None = None) -> list[str]:
    """The sentences beside notebook 04's Findings headline table that explain two of its surprises, every number
    read from the run's files: why its SFT value is not notebook 03's (one policy, other studies and samples:
    ``sft_vs_baselines`` and both tables' recorded ``protocol``) and where the drift control lands among the GRPO
    configurations on ``metric`` (the first headline row whose name starts with it), with the positive findings
    each states (``grpo_positive_findings``). ``protocol``: how notebook 04 scored SFT (its studies and samples;
    default: the ``protocol`` recorded with ``grpo_significance``, which a fresh run writes only later). Means only:
    "not tested" (section 6 of the notebook tests). A missing file leaves its sentence out. Example line: ``"- The drift control C-noise, Findings CheXpert-14 macro F1
    (labeler): 0.199, rank 4 of 8 GRPO configurations (highest G-CARL 0.208; SFT 0.238); ..."``."""
    d = Path(results_dir)
    cells = read_result_table(d, table_names.grpo_group("headline", "findings"))
    if cells is None or "Metric" not in cells.columns:
        return []
    rows = cells[cells.Metric.astype(str).str.startswith(metric) & pd.to_numeric(cells["mean"], errors="coerce").notna()]
    if rows.empty:
        return []
    name = str(rows.Metric.iloc[0])
    values = rows[rows.Metric == name].drop_duplicates("config").set_index("config")
    return [*_sft_note(d, values, name, protocol), *_control_note(d, values, name)]


def _ms(name: str, v: Any) -> dict[str, float]:
    """``{name: mean, name (sd): sample SD}`` over seeds (SD 0 for one seed): numbers in the file, "mean ±sd" shown."""
    v = np.asarray(v, float)
    return {name: v.mean() if v.size else np.nan, f"{name}{SD_SUFFIX}": v.std(ddof=1) if v.size > 1 else 0.0}


def movement_table(curves: pd.DataFrame, configs: Sequence[str], *, label: Callable[[str], str] = str,
                   n_steps: int = 4) -> pd.DataFrame:
    """How far GRPO moved each configuration's policy, from the runs' training curves.

    ``curves``: the ``curves.csv`` rows of every run with ``config``, ``seed``, ``step``, ``reward`` and (β > 0)
    ``kl`` columns. One row per configuration of ``configs``: ``config`` (``label``-ed), ``seeds`` and, as mean
    with a ``<name> (sd)`` column over seeds, the total reward of the first and last ``n_steps`` logged steps and
    the KL to SFT over the last ``n_steps``."""
    rows = []
    for r in configs:
        per = [d.sort_values("step").dropna(subset=["reward"]) for _, d in curves[curves.config == r].groupby("seed")]
        rows.append({"config": label(r), "seeds": len(per),
                     **_ms(f"reward first {n_steps} steps", [d.reward.head(n_steps).mean() for d in per]),
                     **_ms(f"reward last {n_steps} steps", [d.reward.tail(n_steps).mean() for d in per]),
                     **_ms(f"KL last {n_steps} steps",
                           [d.kl.tail(n_steps).mean() for d in per] if "kl" in curves else [])})
    return pd.DataFrame(rows)


#: the per-step group statistics each run logs, and their names in :func:`sparsity_table`
GROUP_COLUMNS = {"reward_groups/exact_all_zero": "groups with R_exact = 0 for all G",
                 "reward_groups/content_std": "within-group std, content reward",
                 "reward_groups/total_std": "within-group std, total reward",
                 "frac_reward_zero_std": "groups with zero total-reward spread"}


def sparsity_table(curves: pd.DataFrame, configs: Sequence[str], *, label: Callable[[str], str] = str) -> pd.DataFrame:
    """Exact-match sparsity and within-group reward spread per configuration: each :data:`GROUP_COLUMNS` statistic
    averaged over a run's steps, then mean and ``(sd)`` over seeds; ``steps x seeds`` counts the logged steps.
    Columns missing from ``curves`` (older runs) are left out."""
    have = [c for c in GROUP_COLUMNS if c in curves]
    per_seed = curves.groupby(["config", "seed"])[have].mean()  # mean over steps, one value per run
    return pd.DataFrame([{"config": label(r), "steps x seeds": int(curves[curves.config == r][have[0]].notna().sum())
                          if have else 0,
                          **{k: v for c in have for k, v in _ms(GROUP_COLUMNS[c], per_seed.loc[r][c]).items()}}
                         for r in configs])


def cost_table(runs: Mapping[tuple[str, int], Mapping[str, Any]], *, label: Callable[[str], str] = str) -> pd.DataFrame:
    """One row per GRPO run from its ``run.json`` (``runs[(config, seed)]``): steps, step and reward seconds (whole
    run and per step), the reward's share of the step time, EditGRPO's edit seconds per step, completions scored,
    sentences embedded for the first time and the bad completions the reward could not score (``bad_*``)."""
    return pd.DataFrame([{
        "config": label(k[0]), "seed": k[1], "steps": v["steps"],
        "step_s": v["step_seconds"], "reward_s": v["reward_seconds"], "reward_share": v["reward_share"],
        "step_s_per_step": v["step_seconds"] / max(v["steps"], 1),
        "reward_s_per_step": v["reward_seconds"] / max(v["steps"], 1),
        "edit_s_per_step": v.get("edit_seconds", 0.0) / max(v["steps"], 1),
        "completions": v["counts"].get("total", 0), "new_sentences": v["counts"].get("new_sentences", 0),
        **{f"bad_{r}": v["counts"].get(r, 0) for r in ("no_template", "empty_section", "too_long", "non_text_tokens")},
    } for k, v in runs.items()])
