"""The paper's pruning comparisons that notebook 06 adds to Tables 4 / 29: pruning vs random selection (paired, per
metric), how often the pruning survivor is standard best-of-K's pick (against the chance rate 1/K) and whether a
policy's K candidates differ at all (a collapsed policy).

Each check is a table function plus a function that writes its sentences from that table, so the notebook's text
says what the numbers say, in whichever direction they go:

- :func:`versus_random` yields the ``(keys, pruning, random)`` pairs for
  :func:`sdrlib.experiments.tables.paired_table`; :func:`random_verdicts` reads that table back, per policy, setting
  and section (the paper: "pruning beats random in all metrics").
- :func:`pick_agreement` / :func:`agreement_table`: survivor == standard pick, with an exact binomial test against
  1/K (the rate two independent uniform picks would agree); :func:`agreement_sentences`.
- :func:`collapse_rates` / :func:`collapse_table`: the share of studies whose K candidates carry the same
  positive CheXpert-14 labels (offline labeler) or the same text; :func:`collapse_warnings`.
- :func:`template_table` / :func:`require_template`: the share of candidates on the ``<think>/<answer>`` template,
  refused below a floor before any table is written.

Left out: significance over seeds (notebook 06 prunes one policy seed) and multiple-comparison correction (the
p-values are per row, as everywhere in the notebooks).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from sdrlib.clinical.labeler import label_report
from sdrlib.metrics.significance import format_p
from sdrlib.pruning import PruningError
from sdrlib.reports import parse_template
from sdrlib.selection.evaluation import selected_result

__all__ = ["versus_random", "random_verdicts", "pick_agreement", "agreement_table", "agreement_sentences",
           "label_vector", "collapse_rates", "collapse_table", "collapse_warnings", "template_table",
           "require_template"]

_TAG = re.compile(r"</?\w+>")


# --------------------------------------------------------------------------- pruning vs random
def versus_random(choices: Mapping[str, Mapping[str, np.ndarray]],
                  metrics: Mapping[str, Mapping[str, Mapping[str, Any]]], names: Sequence[str], k: int,
                  *, method: str = "pruning") -> Iterator[tuple[dict, Any, Any, dict]]:
    """Pairs ``(keys, survivors' metric, random's metric, {})`` for :func:`~sdrlib.experiments.tables.paired_table`.

    ``choices[policy][f"{method}:{name}"]``: ``(S,)`` survivor index per study; ``metrics[policy][section]``:
    metric name -> :class:`~sdrlib.metrics.base.MetricResult` over the S*K candidates (study-major). Random is the
    exact expectation over the K candidates of each study (:func:`~sdrlib.selection.evaluation.selected_result`),
    so the pair is per study and the bootstrap resamples studies. Keys: policy, section, metric, distance.
    """
    for policy, by_section in metrics.items():
        for section, by_metric in by_section.items():
            for m, r in by_metric.items():
                for n in names:
                    c = choices[policy][f"{method}:{n}"]
                    yield ({"policy": policy, "section": section, "metric": m, "distance": n, "A": method,
                            "B": "random"},
                           selected_result(r, c, k), selected_result(r, "random", k), {})



def _fmt_row(r: Any, a: str, b: str, p_col: str) -> str:
    return f"{r.metric} {r['diff']:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}], {format_p(r[p_col])}"


def random_verdicts(table: pd.DataFrame, *, p_col: str = "p_value", alpha: float = 0.05,
                    a: str | None = None, b: str | None = None) -> list[str]:
    """One sentence per (policy, distance, section) of a :func:`versus_random` table: on how many metrics the
    survivors are above / below random, which differences have ``p < alpha`` (column ``p_col``), and whether
    the paper's "pruning beats random in all metrics" holds here. Each metric is written as its difference
    ``a - b`` with the 95 % interval and p. Higher is better for every metric compared.

    Example: ``"SFT, chamfer, Findings: pruning is above random on 1 of 2 metrics (BS-F1 +0.031 [+0.004, +0.058],
    p = 0.030) and below on 1 (RL-F -0.004 [-0.020, +0.012], p = 0.610); p < 0.05 for BS-F1 (above). The
    paper's 'pruning beats random in all metrics' does not hold here."``
    ``a`` / ``b``: the systems' names, by default the table's ``A`` / ``B`` columns (pruning, random).
    """
    a = a if a is not None else (str(table["A"].iloc[0]) if "A" in table and len(table) else "pruning")
    b = b if b is not None else (str(table["B"].iloc[0]) if "B" in table and len(table) else "random")
    out = []
    for (policy, n, section), g in table.groupby(["policy", "distance", "section"], sort=False):
        g = g[np.isfinite(g["diff"].astype(float))]
        if not len(g):
            continue
        up, down = g[g["diff"] > 0], g[g["diff"] < 0]
        tie = len(g) - len(up) - len(down)
        sig = g[g[p_col] < alpha]
        parts = [f"{policy}, {n}, {section.capitalize()}: {a} is above {b} on {len(up)} of {len(g)} metrics"]
        if len(up):
            parts[-1] += " (" + "; ".join(_fmt_row(r, a, b, p_col) for _, r in up.iterrows()) + ")"
        below = "; ".join(_fmt_row(r, a, b, p_col) for _, r in down.iterrows())
        parts.append(f"below on {len(down)}" + (f" ({below})" if len(down) else ""))
        if tie:
            parts.append(f"equal on {tie}")
        s = ", ".join(parts[:1]) + " and " + "; ".join(parts[1:])
        s += (f"; p < {alpha:g} for " + (", ".join(f"{r.metric} ({'above' if r['diff'] > 0 else 'below'})"
                                                    for _, r in sig.iterrows()) if len(sig) else "none") + ".")
        holds = len(up) == len(g)
        s += (f" The paper's '{a} beats {b} in all metrics' {'holds' if holds else 'does not hold'} here"
              + (f" (significantly on {len(sig[sig['diff'] > 0])} of {len(g)})." if holds else "."))
        out.append(s)
    return out


# --------------------------------------------------------------------------- survivor == standard pick
def pick_agreement(pruned: Sequence[int], standard: Sequence[int], k: int) -> dict[str, float]:
    """How often two picks among K candidates agree, against the rate ``1/k`` of two independent uniform picks.

    Returns ``same, n, rate, chance, p_value`` (exact two-sided binomial test of ``same`` of ``n`` against
    ``1/k``, :func:`scipy.stats.binomtest`). Example: ``pick_agreement([0, 1, 2, 3], [0, 2, 1, 4], 5)`` ->
    ``{"same": 1, "n": 4, "rate": 0.25, "chance": 0.2, "p_value": 1.0}``.
    """
    a, b = np.asarray(pruned, dtype=np.int64), np.asarray(standard, dtype=np.int64)
    if a.shape != b.shape or a.ndim != 1 or not len(a):
        raise ValueError(f"pick_agreement: two equal-length 1-D picks needed, got {a.shape} and {b.shape}")
    if k < 1:
        raise ValueError(f"pick_agreement: k = {k}")
    same, n = int(np.sum(a == b)), int(len(a))
    return {"same": same, "n": n, "rate": same / n, "chance": 1.0 / k,
            "p_value": float(binomtest(same, n, 1.0 / k).pvalue)}


def agreement_table(choices: Mapping[str, Mapping[str, np.ndarray]], names: Sequence[str], k: int) -> pd.DataFrame:
    """:func:`pick_agreement` of ``pruning:<name>`` against ``standard:<name>`` per policy and setting: columns
    ``policy, distance, same, n, rate, chance, p_value``."""
    return pd.DataFrame([{"policy": policy, "distance": n,
                          **pick_agreement(ch[f"pruning:{n}"], ch[f"standard:{n}"], k)}
                         for policy, ch in choices.items() for n in names])


def agreement_sentences(table: pd.DataFrame, *, p_col: str = "p_value", alpha: float = 0.05) -> list[str]:
    """One sentence per row of :func:`agreement_table`, with the direction against chance."""
    out = []
    for _, r in table.iterrows():
        side = "above" if r.rate > r.chance else "below" if r.rate < r.chance else "at"
        verdict = (f"{side} chance (p < {alpha:g})" if r[p_col] < alpha and side != "at"
                   else f"not distinguishable from chance ({side} it)")
        out.append(f"{r.policy}, {r.distance}: the pruning survivor is standard best-of-{round(1 / r.chance)}'s "
                   f"pick in {int(r.same)} of {int(r.n)} studies ({100 * r.rate:.1f} %), against "
                   f"{100 * r.chance:.0f} % for two independent random picks (exact binomial {format_p(r[p_col])}): "
                   f"{verdict}.")
    return out


# --------------------------------------------------------------------------- collapsed policies
def label_vector(text: str, labeler: Callable[[str], Mapping[str, int]] = label_report) -> tuple[str, ...]:
    """The observations the labeler calls positive in a candidate (template tags removed), "No Finding" included:
    the clinical content a CheXpert-14 F1 scores (negative and unmentioned observations count alike there).
    Example: ``label_vector("<think> No pneumothorax. </think>")`` -> ``("No Finding",)``."""
    return tuple(sorted(o for o, v in labeler(_TAG.sub(" ", text)).items() if v == 1))


def collapse_rates(candidates: Sequence[Sequence[str]], *,
                   labeler: Callable[[str], Mapping[str, int]] = label_report) -> dict[str, float]:
    """How alike a policy's K candidates are, over studies.

    ``candidates``: per study, its K candidate texts. Returns ``studies``, ``same labels`` (share of studies
    whose candidates all carry one set of positive labels, :func:`label_vector`), ``same text`` (share whose candidates
    are one text after whitespace normalisation) and ``label vectors / study`` (mean number of distinct ones).
    Example: ``collapse_rates([["No edema.", "No edema."], ["Edema.", "No edema."]])`` -> same labels 0.5,
    same text 0.5, label vectors / study 1.5.
    """
    if not len(candidates):
        raise ValueError("collapse_rates: no studies")
    vecs = [{label_vector(t, labeler) for t in c} for c in candidates]
    texts = [{" ".join(t.split()) for t in c} for c in candidates]
    return {"studies": len(candidates), "same labels": float(np.mean([len(v) == 1 for v in vecs])),
            "same text": float(np.mean([len(t) == 1 for t in texts])),
            "label vectors / study": float(np.mean([len(v) for v in vecs]))}


def collapse_table(candidates: Mapping[str, Sequence[Sequence[str]]], **kwargs: Any) -> pd.DataFrame:
    """:func:`collapse_rates` per policy (``{policy: per-study candidate lists}``), one row each."""
    return pd.DataFrame([{"policy": p, **collapse_rates(c, **kwargs)} for p, c in candidates.items()])


def collapse_warnings(table: pd.DataFrame, *, threshold: float = 0.5, collapsed: float = 0.95) -> list[str]:
    """One sentence per policy of :func:`collapse_table`; a policy whose candidates share one set of positive labels
    in at least ``threshold`` of studies gets a warning that selection and pruning cannot change the clinical content of
    what they return there."""
    out = []
    for _, r in table.iterrows():
        k_same = round(r["same labels"] * r.studies)
        s = (f"{r.policy}: the candidates of a study carry identical positive CheXpert-14 labels in {k_same} of "
             f"{int(r.studies)} studies ({100 * r['same labels']:.0f} %) and identical text in "
             f"{round(r['same text'] * r.studies)} ({100 * r['same text']:.0f} %); {r['label vectors / study']:.2f} distinct label sets per study.")
        if r["same labels"] >= threshold:
            kind = "collapsed policy" if r["same labels"] >= collapsed else "candidates mostly alike"
            s = (f"WARNING, {kind}: " + s + " In those studies any choice among the candidates (standard "
                 "best-of-K, pruning, random) returns the same positive labels, so selection cannot change the "
                 "clinical content; its differences there are wording only.")
        out.append(s)
    return out


# --------------------------------------------------------------------------- generations on the template
def template_table(candidates: Mapping[str, Sequence[Sequence[str]]]) -> pd.DataFrame:
    """Per policy: how many of its S x K candidates parse as the ``<think>/<answer>`` template
    (:func:`sdrlib.reports.parse_template`, strict), with the first one that does not."""
    rows = []
    for label, runs in candidates.items():
        texts = [t for row in runs for t in row]
        bad = [t for t in texts if parse_template(t) is None]
        rows.append({"policy": label, "candidates": len(texts), "on template": len(texts) - len(bad),
                     "share on template": (len(texts) - len(bad)) / len(texts) if texts else float("nan"),
                     "first off template": bad[0][:160] if bad else ""})
    return pd.DataFrame(rows)


def require_template(candidates: Mapping[str, Sequence[Sequence[str]]], *, min_share: float = 0.5) -> pd.DataFrame:
    """:func:`template_table`, refusing (:class:`~sdrlib.pruning.PruningError`) when a policy writes fewer than
    ``min_share`` of its candidates on the template. Off-template text scores as an empty report, so every metric
    of every pick would be 0 and every comparison "equal": a broken decoder or an untrained policy, not a result
    (the default run of 9b33e39 wrote such tables when the KV cache went in under a name the model ignored)."""
    table = template_table(candidates)
    low = table[~(table["share on template"] >= min_share)]
    if len(low):
        detail = "; ".join(f"{r.policy}: {r['on template']} of {r.candidates} on template, e.g. "
                           f"{r['first off template']!r}" for _, r in low.iterrows())
        raise PruningError(f"generations off the <think>/<answer> template (fewer than {min_share:.0%}): {detail}. "
                           "Check the policy (notebooks 03/04) and the decoder (sdrlib.pruning) before reading "
                           "any table of this notebook")
    return table
