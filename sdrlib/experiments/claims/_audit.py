"""The claim groups of notebook 04's reward audit and of the recall setting (picked on validation studies,
audited on the test references, compared against SFT, R_Cham, EditGRPO and R_exact).

Scope: one function per group, each returning the group's lines (an empty list when the run lacks what it reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from sdrlib import table_names
from sdrlib.experiments.claims._common import _join, _rows, _src
from sdrlib.experiments.reward_choice import REQUIRED
from sdrlib.metrics.significance import format_p
from sdrlib.results import read_result_table


def reward_audit(results_dir: str | Path, *, orderings: str = table_names.REWARD_AUDIT_ORDERINGS,
                 expected: str = table_names.REWARD_AUDIT_EXPECTED) -> list[str]:
    """Notebook 04's reward audit: in one line, per reward how many clinician orderings break (stratum by stratum)
    with the first kind of break named, then the expected-reward view (the SFT policy's samples vs always the modal
    normal report, abnormal references)."""
    out = []
    o = _rows(results_dir, orderings)
    if o is not None and len(o):
        per = []
        for label, g in o.groupby("label", sort=False):
            broken = g[g.broken.astype(str) == "True"]
            kinds = sorted(set(broken.reads))
            more = len(kinds) - 1
            shown = f" ({kinds[0]}" + (f"; {more} more kind{'s' * (more > 1)}" if more else "") + ")" if kinds else ""
            per.append(f"{label} {len(broken)} of {len(g)}{shown}")
        out.append(f"- Clinician orderings each reward breaks, of those checked per stratum ({_src(orderings)}; "
                   f"the first kind named): {'; '.join(per)}.")
    e = _rows(results_dir, expected)
    if e is not None:
        rows = [f"{r.label} {r.sft_mean:.3f} vs {r.modal_normal_mean:.3f}"
                + (" (pays for silence)" if str(r.pays_for_silence) == "True" else "") for _, r in e.iterrows()]
        n = int(e.n_refs.iloc[0]) if "n_refs" in e.columns else None
        refs = f"{n} abnormal references" if n is not None else "abnormal references"
        out.append(f"- Mean reward of the SFT policy's own samples vs always the modal normal report, {refs} "
                   f"({_src(expected)}): {'; '.join(rows)}.")
        if "silence_margin" in e.columns:
            m = [f"{r.label} {r.silence_margin:+.3f}" for _, r in e.iterrows()]
            out.append(f"- Among those samples, stating a finding minus staying silent ({_src(expected)}): "
                       f"{'; '.join(m)}.")
        if "mixed_margin" in e.columns:
            m = [f"{r.label} {r.normal_margin:+.3f} / {r.mixed_margin:+.3f}" for _, r in e.iterrows()]
            out.append(f"- The same on normal references (the price of a wrong guess) / over the references as they "
                       f"come, normal and abnormal ({_src(expected)}: normal_margin / mixed_margin; below 0 an "
                       f"uncertain policy gains by staying silent): {'; '.join(m)}.")
    return out


def _trained_recall(results_dir: str | Path, choice: str = table_names.RECALL_CHOICE) -> list[str]:
    """Labels of the trained ``chamfer_recall`` settings: the choice table's ``trained`` rows, else none."""
    c = _rows(results_dir, choice)
    if c is None or "trained" not in c.columns:
        return []
    return [str(x) for x in c.loc[c.trained.astype(str) == "True", "label"]]


def recall_choice(results_dir: str | Path, *, table: str = table_names.RECALL_CHOICE) -> list[str]:
    """Notebook 04's pick of the recall setting on validation studies (:mod:`sdrlib.experiments.reward_choice`)."""
    c = _rows(results_dir, table)
    if c is None:
        return []
    chosen = c.loc[c.chosen.astype(str) == "True", "label"]
    sound = c[c.sound.astype(str) == "True"]
    n, k = int(c.n_references.iloc[0]), int(c.n_samples.iloc[0])
    grid = "; ".join(f"{r.label} {r.mixed_margin:+.3f}" if pd.notna(r.mixed_margin) else f"{r.label} n/a"
                     for _, r in c.iterrows())
    trained = _trained_recall(results_dir, table)
    same = bool(len(chosen)) and list(chosen) == trained
    if not len(chosen):  # reward_choice.NO_PICK: nothing to compare the settings by
        note = " (no pick: no setting has a finite mixed_margin on these samples)"
    else:
        note = "" if same else " (not the pick)"
    return [f"- On {n} validation studies ({k} SFT samples), {len(sound)} of {len(c)} settings of the grid keep "
            f"the four required orderings; stating a finding minus silence over the prompts as they come "
            f"(mixed_margin): {grid}; picked: {_join(list(chosen))}; trained: {_join(trained)}"
            + note + f" ({_src(table)})."]


def recall_audit(results_dir: str | Path, *, table: str = table_names.REWARD_AUDIT_ORDERINGS) -> list[str]:
    """The trained recall setting's required orderings on the test references, per abnormal stratum: paired mean
    difference of the higher case's reward minus the lower's (positive = kept)."""
    o = _rows(results_dir, table)
    labels = _trained_recall(results_dir)
    if o is None or not labels:
        return []
    want = [f"{hi} > {lo}" for hi, lo in REQUIRED]
    out = []
    for label in labels:
        g = o[(o.label == label) & o.expected.isin(want)]
        items = [f"{r.expected} ({r.stratum}, {int(r.n)} references) {r['diff']:+.3f}" for _, r in g.iterrows()]
        kept = int((g["diff"] > 0).sum())
        out.append(f"- {label}, test references: {kept} of {len(g)} required orderings kept; {'; '.join(items)} "
                   f"({_src(table)}).")
    return out


def recall_vs_others(results_dir: str | Path, *, table: str = table_names.GRPO_SIGNIFICANCE, section: str = "findings",
                     metrics: Sequence[str] = ("clinical_f1_macro14", "bertscore_f1")) -> list[str]:
    """The trained recall setting against SFT, R_Cham, EditGRPO and R_exact (across-seed test)."""
    t = read_result_table(results_dir, table)
    labels = _trained_recall(results_dir)
    if t is None or not labels:
        return []
    out = []
    for label in labels:
        for m in metrics:
            g = t[(t.A == label) & (t.section == section) & (t.metric.str.split("@").str[0] == m)
                  & t.B.isin(["SFT", "R_Cham", "EditGRPO", "R_exact"])]
            if not len(g):
                continue
            items = [f"vs {r.B} {r['diff']:+.3f} ({format_p(r.p_value)}, same sign in {int(r.n_same_sign)} of "
                     f"{int(r.n_seeds)} seeds)" for _, r in g.iterrows()]
            out.append(f"- {label}, {section.capitalize()} {m} ({_src(table)}, over seeds and studies): "
                       f"{'; '.join(items)}.")
    return out
