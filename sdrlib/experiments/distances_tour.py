"""Notebook 02's steps that are logic rather than narration: the Fig. 2a report pair, the link table and its
explanation, the per-setting facts of the edit test and the notebook's conclusion sentences (read back from its
result files). The notebook's figures (Fig. 2a, the engine-speed bar chart) are in :mod:`sdrlib.plots`.

Scope: report sets are embedding matrices ``(n_sentences, d)`` with unit rows; distances are the registry's
(:mod:`sdrlib.distances`), so every value here is the value a reward would use.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from sdrlib import table_names
from sdrlib.data import stratum
from sdrlib.distances import get
from sdrlib.distances.engine import paired_distances
from sdrlib.distances.errors import DistanceSpecError
from sdrlib.distances.registry import PAPER_SETTINGS
from sdrlib.metrics.significance import format_p
from sdrlib.metrics.verdict import NO_DIFF, family_directions
from sdrlib.reports import split_sentences
from sdrlib.results import read_result_table

__all__ = ["Fig2Pair", "fig2_pair", "links_frame", "explain_links", "edit_facts", "distances_conclusion"]


@dataclass
class Fig2Pair:
    """The paper's Fig. 2a example: a candidate (3 Findings sentences) and a reference (4), their sentences and
    embeddings ``a`` ``(3, d)`` (candidate) and ``b`` ``(4, d)`` (reference)."""

    candidate: Any
    reference: Any
    a_sentences: list[str]
    b_sentences: list[str]
    a: np.ndarray
    b: np.ndarray


def fig2_pair(train: Sequence[Any], test: Sequence[Any], embedder: Any, *, n_ref: int = 4,
              n_cand: int = 3) -> Fig2Pair:
    """The first test report with ``n_ref`` Findings sentences and at least one finding (else ``test[0]``) as
    reference; as candidate, among training reports with ``n_cand`` sentences (else all), the one with the
    largest gap Hausdorff - 2 x Chamfer to it: close partners for most sentences, one sentence far from all.
    Records need ``findings`` (str), ``labels`` (dict or None) and ``study_id``; ``embedder.encode(list[str])``
    returns ``(n, d)`` unit rows."""
    ref = next((r for r in test if len(split_sentences(r.findings)) == n_ref
                and (r.labels is None or stratum(r.labels) != "no_finding")), test[0])
    b_s = split_sentences(ref.findings)
    b = embedder.encode(b_s)
    pool = [r for r in train if len(split_sentences(r.findings)) == n_cand] or list(train)
    sets = [embedder.encode(split_sentences(r.findings)) for r in pool]
    gap = paired_distances(sets, [b] * len(pool), "hausdorff") - 2 * paired_distances(sets, [b] * len(pool), "chamfer")
    k = int(np.argmax(gap))
    return Fig2Pair(pool[k], ref, split_sentences(pool[k].findings), b_s, sets[k], b)


def links_frame(L: Mapping[str, Any]) -> pd.DataFrame:
    """One row per sentence pair (G_i, R_j) of :func:`sdrlib.plots.set_distance_links`'s output ``L`` (cost
    ``(n, m)``): ``G, R, cost M``, whether the link is a Chamfer nearest neighbour in either direction, whether
    it is the Hausdorff link, its ``OT mass`` and the ``rescaled M~`` that OT pays. ``n * m`` rows."""
    n, m = L["cost"].shape
    return pd.DataFrame([{"G": f"G{i + 1}", "R": f"R{j + 1}", "cost M": L["cost"][i, j],
                          "G nearest R (Chamfer)": j == L["nn_ab"][i], "R nearest G (Chamfer)": i == L["nn_ba"][j],
                          "Hausdorff link": (i, j) == tuple(L["hausdorff_link"][1:]), "OT mass": L["plan"][i, j],
                          "rescaled M~": L["cost_scaled"][i, j]} for i in range(n) for j in range(m)])


def explain_links(L: Mapping[str, Any], a_sentences: Sequence[str], b_sentences: Sequence[str]) -> str:
    """Three lines that read Chamfer, Hausdorff and OT off ``L`` (:func:`sdrlib.plots.set_distance_links`): the
    values, the one sentence that sets Hausdorff, and why OT differs from Chamfer (its rescaled cost)."""
    hd, hi, hj = L["hausdorff_link"]
    lonely = f"R{hj + 1} '{b_sentences[hj]}'" if hd == "ba" else f"G{hi + 1} '{a_sentences[hi]}'"
    others = len(a_sentences) + len(b_sentences) - 1
    return (f"Chamfer {L['chamfer']:.3f}, Hausdorff {L['hausdorff']:.3f}, OT {L['ot']:.3f}.\n"
            f"Hausdorff is set by one sentence, {lonely}: its nearest partner is at cost {L['cost'][hi, hj]:.3f}; "
            f"Chamfer averages that link with {others} others and reads {L['chamfer']:.3f}.\n"
            f"OT {'>' if L['ot'] > L['chamfer'] else '<='} Chamfer here: OT must also move mass along links that "
            f"are not nearest neighbours, on M~ = M / max M (max M = {L['cost'].max():.3f}), which stretches every "
            "cost to [0, 1].")


def edit_facts(table: pd.DataFrame, *, tol: float = 1e-9) -> pd.DataFrame:
    """Per setting (a column of ``table``, rows = edits incl. ``identical``, ``reordered``, ``paraphrase``,
    ``missing finding``, ``contradicted finding``, ``extra hallucination``): the farthest edit, whether the
    contradiction lands closer than the paraphrase, whether a missing / extra sentence costs nothing beyond the
    identical report (``tol``), and the entropic floor (the ``identical`` value). One row per setting."""
    edits = table.drop(index=["identical", "reordered"])
    return pd.DataFrame({
        "farthest edit": edits.idxmax(),
        "contradiction closer than paraphrase": edits.loc["contradicted finding"] < edits.loc["paraphrase"],
        "forgives missing": edits.loc["missing finding"] <= table.loc["identical"] + tol,
        "forgives extra": edits.loc["extra hallucination"] <= table.loc["identical"] + tol,
        "entropic floor": table.loc["identical"],
    })


def _names(items: Sequence[str]) -> str:
    items = list(items)
    return "none" if not items else ", ".join(items)


def _battery_answer(results_dir: str | Path) -> str | None:
    """"Which distance should a reward use", answered from the real-language battery: the distance settings with the
    most passed cases, among all scored and among the paper's."""
    bat = read_result_table(results_dir, table_names.REAL_LANGUAGE_BATTERY)
    if bat is None or not len(bat):
        return None
    def is_distance(name: str) -> bool:
        try:
            get(name)
        except DistanceSpecError:
            return False
        return True

    d = bat[bat.reward.map(is_distance)]
    if not len(d):
        return None
    passed = d.assign(ok=d.passed.astype(str) == "True").groupby("reward", sort=False).ok.sum()
    n = int(d.groupby("reward").size().max())
    paper = {x.name for x in PAPER_SETTINGS}

    def best(names: list[str]) -> str:
        top = max(passed[names])
        return f"{_names([x for x in names if passed[x] == top])} ({int(top)} of {n} cases each)"

    ours = [x for x in passed.index if x not in paper]
    return (f"Answer: for a reward that must read real report language, use {best(list(passed.index))}, the settings "
            f"that pass the most cases of the real-language battery (02_battery); best of the paper's settings: "
            f"{best([x for x in passed.index if x in paper])}" + (f"; of ours: {best(ours)}" if ours else "")
            + ". The sentences below say what each setting measures.")


def distances_conclusion(results_dir: str | Path, *, target: str = "jaccard") -> list[str]:
    """Notebook 02's conclusion, one sentence per result file that exists under ``results_dir``:
    ``02_edit_facts`` (paper settings that rate a contradiction closer than a paraphrase, that forgive a missing
    sentence), ``02_edit_reactions_extensions`` (whether the ``_neg`` settings invert that), ``02_fidelity`` and
    ``02_fidelity_vs_chamfer`` (Spearman with label disagreement; a direction only when the paired 95 % bootstrap
    interval excludes 0, else "no difference detected at this size"), ``02_convergence`` and
    ``02_identical_floor``. The first sentence answers the notebook's question from ``02_battery`` (the distance
    settings that pass the most real-language cases, ours and the paper's). Missing files give no sentence."""
    out = []
    answer = _battery_answer(results_dir)
    if answer:
        out.append(answer)
    facts = read_result_table(results_dir, table_names.EDIT_FACTS)
    if facts is not None:
        closer = facts.loc[facts["contradiction closer than paraphrase"].astype(bool), "setting"]
        forgive = facts.loc[facts["forgives missing"].astype(bool), "setting"]
        out.append(f"On the one edited report (02_edit_facts), {len(closer)} of {len(facts)} paper settings put the "
                   f"contradicted finding closer to the original than a harmless paraphrase (exceptions: "
                   f"{_names(sorted(set(facts.setting) - set(closer)))}); settings that charge nothing for a "
                   f"missing finding: {_names(forgive)}.")
    ext = read_result_table(results_dir, table_names.EDIT_REACTIONS_EXTENSIONS)
    if ext is not None:
        e = ext.set_index("edit")
        neg = [c for c in e.columns if c.endswith("_neg")]
        parts = [f"{c} {e.loc['contradicted finding', c]:.3f} vs {e.loc['paraphrase', c]:.3f}" for c in neg]
        flipped = all(e.loc["contradicted finding", c] > e.loc["paraphrase", c] for c in neg)
        out.append(f"The negation-aware settings (02_edit_reactions_extensions, contradiction vs paraphrase: "
                   f"{'; '.join(parts)}) {'rank the contradiction farther' if flipped else 'do not all fix this'}.")
    fid = read_result_table(results_dir, table_names.FIDELITY)
    cmp = read_result_table(results_dir, table_names.FIDELITY_VS_CHAMFER)
    if fid is not None:
        sub = fid[(fid.stratum == "all") & (fid.target == target)].sort_values("spearman", ascending=False)
        top = sub.iloc[0]
        s = (f"Spearman of distance with label {target} distance over {int(top.n_pairs)} report pairs (02_fidelity): "
             f"highest point estimate {top.setting} ({top.origin}) {top.spearman:.2f} "
             f"[{top.spearman_lo:.2f}, {top.spearman_hi:.2f}]")
        if cmp is not None and len(cmp):
            r = cmp.iloc[0]
            verdict_word = family_directions(cmp.iloc[:1])[0]  # the project's rule (one test: a family of one)
            if verdict_word != NO_DIFF:
                word = ("tracks label disagreement more closely than" if verdict_word == "above" else
                        "tracks it less closely than")
                s += (f"; paired bootstrap (02_fidelity_vs_chamfer): {r.A} {word} {r.B}, difference "
                      f"{r['diff']:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}], {format_p(r.p_value)}.")
            else:
                s += (f"; {r.A} vs {r.B} (02_fidelity_vs_chamfer): difference {r['diff']:+.2f} "
                      f"[{r.ci_low:+.2f}, {r.ci_high:+.2f}], {format_p(r.p_value)}: no difference detected at this size.")
        else:
            s += "."
        out.append(s)
    conv = read_result_table(results_dir, table_names.CONVERGENCE)
    if conv is not None:
        worst = conv.sort_values("share", ascending=False).iloc[0]
        stopped = sorted(set(conv.loc[conv["stopped at max_iter"] > 0, "setting"]))
        out.append(f"Settings with pairs stopped at max_iter on real reports (02_convergence): {_names(stopped)}"
                   + (f"; worst {worst.setting} on {worst.section}, {worst.share:.0%} of {int(worst.pairs)} pairs."
                      if stopped else "."))
    floor = read_result_table(results_dir, table_names.IDENTICAL_FLOOR)
    if floor is not None:
        top = floor.groupby("setting")["mean"].max()
        nonzero = top[top > 1e-3].sort_values(ascending=False)
        out.append(f"Settings that cannot reach 0 for a perfect report (02_identical_floor, D(A, A) > 0.001 at some "
                   f"set size): {_names(f'{k} (up to {v:.3f})' for k, v in nonzero.items())}.")
    return out
