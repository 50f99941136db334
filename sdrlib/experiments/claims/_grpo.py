"""The claim groups of notebook 04's GRPO tables: the headline table, each configuration against SFT (or
R_Cham), the policy movement, the share of normal reports and the decomposition of the Findings macro F1 change.

Scope: one function per group, each returning the group's lines (an empty list when the run lacks what it
reads); the recall setting's and the reward audit's groups live in :mod:`._audit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdrlib import table_names
from sdrlib.experiments.claims._common import _join, _name, _rows, _shown, _src
from sdrlib.metrics.significance import format_p
from sdrlib.results import CELL_COLUMNS, SD_SUFFIX, read_result_table, render_cell_table


def _seeds(results_dir: str | Path) -> dict[str, int]:
    for name in (table_names.GRPO_POLICY_MOVEMENT, table_names.GRPO_POSITIVE_FINDINGS):
        t = read_result_table(results_dir, name)
        if t is not None and {"config", "seeds"} <= set(t.columns):
            return {str(r.config): int(r.seeds) for r in t.itertuples()}
    return {}


def grpo_headline(results_dir: str | Path, *, table: str = table_names.GRPO_HEADLINE_FINDINGS,
                  base: str = "SFT") -> list[str]:
    """The headline table as Markdown (bold removed; one-seed configurations marked ``(1 seed)``; rows that read
    ``not computed`` listed after it) and, per metric, the configurations above and below ``base``."""
    cells = read_result_table(results_dir, table)
    if cells is None:
        return []
    for col in CELL_COLUMNS:
        if col not in cells.columns:
            raise KeyError(col)  # named with its file by results_section
    t = render_cell_table(cells)  # the table as notebook 04 shows it (numbers in the file, formatted here)
    value = {(r.Model, r.Metric, r.config): _shown(r.mean) for r in cells.itertuples()}
    seeds = _seeds(results_dir)
    configs = [c for c in t.columns if c not in ("Model", "Metric")]
    shown = {c: f"{c} (1 seed)" if seeds.get(c) == 1 else c for c in configs}
    head = [shown[c] for c in configs]
    computed = t[~t[configs[0]].astype(str).str.startswith("not computed")]
    lines = [f"GRPO, Findings, mean ± std over seeds ({_src(table)}):", "",
             "| | " + " | ".join(head) + " |", "| --- |" + " ---: |" * len(configs) + ""]
    for _, r in computed.iterrows():
        lines.append(f"| {r['Metric']} | " + " | ".join(str(r[c]).replace("**", "") for c in configs) + " |")
    skipped = [str(m) for m in t[~t.index.isin(computed.index)].Metric]
    lines.append("")
    if skipped:
        lines.append(f"Not computed on this run: {', '.join(skipped)} (the file says why).")
    if base in configs:
        for _, r in computed.iterrows():
            v = {c: value[(r["Model"], r["Metric"], c)] for c in configs}
            b = v[base]
            others = [c for c in configs if c != base and np.isfinite(v[c])]
            up = [f"{shown[c]} {v[c]:.3f}" for c in others if v[c] > b]
            down = [f"{shown[c]} {v[c]:.3f}" for c in others if v[c] < b]
            multi = [c for c in others if seeds.get(c, 2) > 1]
            best = max(multi + [base], key=lambda c: v[c]) if multi else None
            lines.append(f"- {r['Metric']} (mean over seeds, {_src(table)}; higher / lower means, not tested: the "
                         f"tested comparisons are the conclusions'): {base} {b:.3f}; higher mean than {base}: "
                         f"{_join(up)}; lower: {_join(down)} ({len(down)} of {len(others)} configurations lower)."
                         + (f" Highest mean of {base} and the configurations with more than one seed: {best}." if best
                            else ""))
    return lines


def grpo_vs_sft(results_dir: str | Path, *, table: str = table_names.GRPO_SIGNIFICANCE, base: str = "SFT",
                section: str = "findings", metrics: Sequence[str] = ("clinical_f1_macro14", "bertscore_f1"),
                p_col: str | None = "p_value", diff_col: str | None = None, alpha: float = 0.05) -> list[str]:
    """Each configuration against ``base`` from a paired-test table with columns ``A, B, section, metric``, a
    difference (``diff_col``; default ``diff``, else ``mean_diff``) and either ``p_col`` (one p per row, the
    across-seed test) or, when the table has no such column, the per-seed ``n_sig`` / ``n_seeds`` columns.
    One sentence per metric: the configurations above and below, and how many differ significantly."""
    t = read_result_table(results_dir, table)
    if t is None:
        return []
    diff_col = diff_col or ("diff" if "diff" in t.columns else "mean_diff")
    if p_col is not None and p_col not in t.columns:
        p_col = None
    t = t[(t.B == base) & (t.section == section)]
    out = []
    for m in metrics:
        g = t[t.metric.str.split("@").str[0] == m]
        if not len(g):
            continue

        def sig(r) -> str:
            if p_col is not None:
                if "n_same_sign" in r.index and "n_seeds" in r.index and pd.notna(r["n_same_sign"]):
                    seeds = f"{int(r['n_same_sign'])} of {int(r['n_seeds'])}"
                elif "same_sign" in r.index and pd.notna(r["same_sign"]):  # runs before it was a number: "k of n"
                    seeds = str(r["same_sign"])
                else:
                    seeds = None
                return format_p(r[p_col]) + (f"; same sign in {seeds} seeds" if seeds else "")
            return f"p < {alpha:g} in {int(r.n_sig)} of {int(r.n_seeds)} seeds"

        up = [f"{r.A} {r[diff_col]:+.3f} ({sig(r)})" for _, r in g.iterrows() if r[diff_col] > 0]
        down = [f"{r.A} {r[diff_col]:+.3f} ({sig(r)})" for _, r in g.iterrows() if r[diff_col] < 0]
        if p_col is not None:
            n_sig = int(((g[p_col] < alpha) & (g[diff_col] != 0)).sum())
            sig_txt = f"{n_sig} of {len(g)} differences have p < {alpha:g}"
        else:
            all_seeds = int((g.n_sig == g.n_seeds).sum())
            sig_txt = f"{all_seeds} of {len(g)} configurations have p < {alpha:g} in each of their seeds"
        how = "mean difference over seeds" + (f", {p_col} over seeds and studies" if p_col is not None else "")
        out.append(f"- {section.capitalize()} {m} against {base} ({_src(table)}, {how}): "
                   f"higher for {_join(up)}; lower for {_join(down)}; {sig_txt}.")
    return out


def policy_movement(results_dir: str | Path, *, table: str = table_names.GRPO_POLICY_MOVEMENT) -> list[str]:
    """Total reward over the first vs the last steps per configuration (higher / lower / equal means, no test: no
    direction word) and the KL range, from notebook 04's movement table."""
    t = read_result_table(results_dir, table)
    if t is None:
        return []
    means = [c for c in t.columns if not c.endswith(SD_SUFFIX)]  # each mean has its "<name> (sd)" beside it
    first, last = [c for c in means if c.startswith("reward first")], [c for c in means if c.startswith("reward last")]
    kl = [c for c in means if c.startswith("KL")]
    if not first or not last:
        return []
    rows = [(_name(r), _shown(r[first[0]]), _shown(r[last[0]])) for _, r in t.iterrows()]
    up = [f"{c} ({a:.3f} -> {b:.3f})" for c, a, b in rows if b > a]
    down = [f"{c} ({a:.3f} -> {b:.3f})" for c, a, b in rows if b < a]
    same = [c for c, a, b in rows if b == a]
    s = (f"- Total reward, {first[0]} vs {last[0]} ({_src(table)}; means over steps and seeds, not tested): "
         f"higher at the end for {len(up)} of {len(rows)} configurations ({_join(up)}); lower for {len(down)} "
         f"({_join(down)})")
    s += f"; equal for {', '.join(same)}." if same else "."
    if kl:
        v = [_shown(x) for x in t[kl[0]]]
        s += f" {kl[0]}: {min(v):.3f} to {max(v):.3f}."
    return [s]


def positive_findings(results_dir: str | Path, *, table: str = table_names.GRPO_POSITIVE_FINDINGS, base: str = "SFT",
                      column: str = "share with no positive finding") -> list[str]:
    """The share of Findings sections with no positive finding (labeler), per configuration: more or fewer
    normal reports than ``base``, and where the references are."""
    t = read_result_table(results_dir, table)
    if t is None:
        return []
    if column not in t.columns:
        raise KeyError(column)  # named with its file by results_section
    if base not in set(t.config):  # a run without the base policy has nothing to compare against
        return []
    v = {_name(r) if r.config not in (base, "reference") else r.config: float(r[column]) for _, r in t.iterrows()}
    b = v[base]
    others = [c for c in v if c not in (base, "reference")]
    more = [f"{c} {100 * v[c]:.0f} %" for c in others if v[c] > b]
    fewer = [f"{c} {100 * v[c]:.0f} %" for c in others if v[c] < b]
    ref = f"the references {100 * v['reference']:.0f} %, " if "reference" in v else ""
    return [f"- Findings sections with no positive finding ({_src(table)}): {ref}{base} {100 * b:.0f} %; more often "
            f"than {base} ({len(more)} of {len(others)}): {_join(more)}; less often ({len(fewer)}): {_join(fewer)}."]


def decomposition(results_dir: str | Path, *, table: str = table_names.GRPO_DECOMPOSITION) -> list[str]:
    """Notebook 04's decomposition of the Findings macro F1 change: per chain (SFT -> drift control -> reward),
    each step's mean over seeds and its change (no share of the total: see the comment)."""
    t = _rows(results_dir, table)
    if t is None:
        return []
    out = []
    for chain, g in t.groupby("chain", sort=False):
        steps = []
        for _, r in g.iterrows():
            # no "share of the change" here: a ratio of two differences of this size carries no uncertainty we
            # report (issue 34); the notebook's paired table tests each step
            steps.append(f"{r.step} {r['F1 from']:.3f} -> {r['F1 to']:.3f} ({r.change:+.3f})")
        n = int(g.seeds.max())
        out.append(f"- {chain} ({n} seed{'s' if n != 1 else ''}): {'; '.join(steps)} ({_src(table)}).")
    return out


def grpo_vs_rcham(results_dir: str | Path) -> list[str]:
    """:func:`grpo_vs_sft` against R_Cham (the related methods and our negation-aware rewards)."""
    return grpo_vs_sft(results_dir, base="R_Cham")
