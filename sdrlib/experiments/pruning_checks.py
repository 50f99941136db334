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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from sdrlib import table_names
from sdrlib.clinical.labeler import label_report
from sdrlib.metrics.significance import format_p
from sdrlib.metrics.verdict import NO_DIFF, family_directions, holm
from sdrlib.pruning import (BankScorer, PruneParams, PruneResult, PruningError, StandardResult, replay_prune,
                            tokens_saved_pct, with_params)
from sdrlib.reports import parse_template
from sdrlib.results import read_result_table
from sdrlib.selection.evaluation import selected_result

__all__ = ["versus_random", "random_verdicts", "pick_agreement", "agreement_table", "agreement_sentences",
           "label_vector", "collapse_rates", "collapse_table", "collapse_warnings", "template_table",
           "require_template", "bank_scorers", "require_policies", "live_vs_replay_table", "token_table",
           "quality_table", "quality_view", "versus_standard", "sweep_table", "wallclock_table", "conclusion_lines",
           "NO_DIFFERENCE"]

_TAG = re.compile(r"</?\w+>")


# --------------------------------------------------------------------------- pruning vs random
def versus_random(choices: Mapping[str, Mapping[str, np.ndarray]],
                  metrics: Mapping[str, Mapping[str, Mapping[str, Any]]], names: Sequence[str], n_candidates: int,
                  *, method: str = "pruning") -> Iterator[tuple[dict, Any, Any, dict]]:
    """Pairs ``(keys, survivors' metric, random's metric, {})`` for :func:`~sdrlib.experiments.tables.paired_table`.

    ``choices[policy][f"{method}:{name}"]``: ``(S,)`` survivor index per study; ``metrics[policy][section]``:
    metric name -> :class:`~sdrlib.metrics.base.MetricResult` over the S*K candidates (study-major; K = ``n_candidates``). Random is the
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
                           selected_result(r, c, n_candidates), selected_result(r, "random", n_candidates), {})



def _fmt_row(r: Any, a: str, b: str, p_col: str) -> str:
    return f"{r.metric} {r['diff']:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}], {format_p(r[p_col])}"


def random_verdicts(table: pd.DataFrame, *, p_col: str = "p_value", alpha: float = 0.05,
                    a: str | None = None, b: str | None = None) -> list[str]:
    """One sentence per (policy, distance, section) of a :func:`versus_random` table: on how many metrics the
    survivors have the higher / lower mean (not a test), which differences the project's rule calls above / below
    (:func:`sdrlib.metrics.verdict.family_directions`, Holm over the whole table at ``alpha``, p-values in
    ``p_col``), and whether the paper's "pruning beats random in all metrics" holds under it (every metric above).
    Each metric is written as its difference ``a - b`` with the 95 % interval and p. Higher is better for every
    metric compared.

    Example: ``"SFT, chamfer, Findings: pruning has the higher mean on 1 of 2 metrics (BS-F1 +0.031 [+0.004,
    +0.058], p = 0.010) and the lower on 1 (RL-F -0.004 [-0.020, +0.012], p = 0.610); under the rule (Holm over
    the table, interval excluding 0): BS-F1 above random. The paper's 'pruning beats random in all metrics' is not
    shown here."``
    ``a`` / ``b``: the systems' names, by default the table's ``A`` / ``B`` columns (pruning, random).
    """
    a = a if a is not None else (str(table["A"].iloc[0]) if "A" in table and len(table) else "pruning")
    b = b if b is not None else (str(table["B"].iloc[0]) if "B" in table and len(table) else "random")
    out = []
    table = table.reset_index(drop=True)
    fam = table.rename(columns={p_col: "p_value"}) if p_col != "p_value" else table
    table = table.assign(word=family_directions(fam, alpha=alpha))  # the table is one family (Holm)
    for (policy, n, section), g in table.groupby(["policy", "distance", "section"], sort=False):
        g = g[np.isfinite(g["diff"].astype(float))]
        if not len(g):
            continue
        up, down = g[g["diff"] > 0], g[g["diff"] < 0]
        tie = len(g) - len(up) - len(down)
        sig = g[g.word != NO_DIFF]
        parts = [f"{policy}, {n}, {section.capitalize()}: {a} has the higher mean on {len(up)} of {len(g)} metrics"]
        if len(up):
            parts[-1] += " (" + "; ".join(_fmt_row(r, a, b, p_col) for _, r in up.iterrows()) + ")"
        below = "; ".join(_fmt_row(r, a, b, p_col) for _, r in down.iterrows())
        parts.append(f"the lower on {len(down)}" + (f" ({below})" if len(down) else ""))
        if tie:
            parts.append(f"equal on {tie}")
        s = ", ".join(parts[:1]) + " and " + "; ".join(parts[1:])
        s += ("; under the rule (Holm over the table, interval excluding 0): "
              + (", ".join(f"{r.metric} {r.word} {b}" for _, r in sig.iterrows()) if len(sig)
                 else f"{NO_DIFFERENCE} on every metric") + ".")
        holds = bool((g.word == "above").all())
        s += f" The paper's '{a} beats {b} in all metrics' {'holds' if holds else 'is not shown'} here."
        out.append(s)
    return out


# --------------------------------------------------------------------------- survivor == standard pick
def pick_agreement(pruned: Sequence[int], standard: Sequence[int], n_candidates: int) -> dict[str, float]:
    """How often two picks among ``n_candidates`` (K) candidates agree, against the rate ``1/K`` of two independent
    uniform picks.

    Returns ``same, n, rate, chance, p_value`` (exact two-sided binomial test of ``same`` of ``n`` against
    ``1/K``, :func:`scipy.stats.binomtest`). Example: ``pick_agreement([0, 1, 2, 3], [0, 2, 1, 4], 5)`` ->
    ``{"same": 1, "n": 4, "rate": 0.25, "chance": 0.2, "p_value": 1.0}``.
    """
    a, b = np.asarray(pruned, dtype=np.int64), np.asarray(standard, dtype=np.int64)
    if a.shape != b.shape or a.ndim != 1 or not len(a):
        raise ValueError(f"pick_agreement: two equal-length 1-D picks needed, got {a.shape} and {b.shape}")
    if n_candidates < 1:
        raise ValueError(f"pick_agreement: n_candidates = {n_candidates}")
    same, n = int(np.sum(a == b)), int(len(a))
    return {"same": same, "n": n, "rate": same / n, "chance": 1.0 / n_candidates,
            "p_value": float(binomtest(same, n, 1.0 / n_candidates).pvalue)}


def agreement_table(choices: Mapping[str, Mapping[str, np.ndarray]], names: Sequence[str],
                    n_candidates: int) -> pd.DataFrame:
    """:func:`pick_agreement` of ``pruning:<name>`` against ``standard:<name>`` per policy and setting: columns
    ``policy, distance, same, n, rate, chance, p_value``."""
    return pd.DataFrame([{"policy": policy, "distance": n,
                          **pick_agreement(ch[f"pruning:{n}"], ch[f"standard:{n}"], n_candidates)}
                         for policy, ch in choices.items() for n in names])


def agreement_sentences(table: pd.DataFrame, *, p_col: str = "p_value", alpha: float = 0.05,
                        undetected: str | None = None) -> list[str]:
    """One sentence per row of :func:`agreement_table`, with the direction against chance. ``undetected``: the
    words for a rate not distinguishable from chance (default ``"not distinguishable from chance (<side> it)"``;
    the conclusion passes the project's "no difference detected at this size")."""
    out = []
    for _, r in table.iterrows():
        side = "above" if r.rate > r.chance else "below" if r.rate < r.chance else "at"
        verdict = (f"{side} chance (p < {alpha:g})" if r[p_col] < alpha and side != "at"
                   else undetected or f"not distinguishable from chance ({side} it)")
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


# --------------------------------------------------------------------------- the notebook's tables
def bank_scorers(bank: Any, embedder: Any, names: Sequence[str], aggregation: str, *, knn_k: int,
                 device: str = "cpu") -> dict[str, BankScorer]:
    """One :class:`~sdrlib.pruning.BankScorer` per distance setting in ``names``, sharing the first one's bank
    packing (:meth:`~sdrlib.pruning.BankScorer.for_distance`). ``names`` must not be empty."""
    if not len(names):
        raise PruningError("bank_scorers: no distance setting given")
    first = BankScorer(bank, embedder, names[0], aggregation, knn_k=knn_k, device=device)
    return {names[0]: first, **{n: first.for_distance(n) for n in names[1:]}}


def require_policies(dirs: Mapping[str, Any], profile: str) -> None:
    """Refuse (:class:`~sdrlib.pruning.PruningError`) when a policy folder in ``dirs`` (name -> path) is missing,
    naming the notebooks that write it."""
    missing = {k: str(v) for k, v in dirs.items() if not Path(v).is_dir()}
    if missing:
        raise PruningError(f"policies not found: {missing}; run notebooks 03 (SFT) and 04 (GRPO) on profile "
                           f"{profile!r} first")


def live_vs_replay_table(std: Mapping[str, Sequence[StandardResult]],
                         live: Mapping[str, Mapping[str, Sequence[PruneResult]]],
                         rep: Mapping[str, Mapping[str, Sequence[PruneResult]]],
                         scorers: Mapping[str, Any], params: PruneParams, tokenizer: Any) -> pd.DataFrame:
    """Does replay (:func:`~sdrlib.pruning.replay_prune`) make live decoding's decisions? One row per policy and
    live setting, each count over the S studies.

    ``std[policy]``: (S,) standard runs; ``live[policy][name]`` / ``rep[policy][name]``: (S,) live / replayed
    (on the standard token ids) runs. Columns: ``policy, distance, studies``, ``same survivor``, ``same tokens
    per candidate``, ``survivor text = its standard text``, ``pruned tokens are a prefix`` (every candidate's
    live ids a prefix of its standard ids), ``same survivor, re-encoded text`` (replay re-encoding the text
    with ``tokenizer``) and ``same survivor, word proxy`` (replay without a tokenizer)."""
    rows = []
    for label, runs in std.items():
        for n, lv in live[label].items():
            rp = rep[label][n]
            rows.append({
                "policy": label, "distance": n, "studies": len(lv),
                "same survivor": sum(a.survivor == b.survivor for a, b in zip(lv, rp)),
                "same tokens per candidate": sum(a.tokens == b.tokens for a, b in zip(lv, rp)),
                "survivor text = its standard text": sum(a.survivor_text == s.texts[a.survivor]
                                                         for a, s in zip(lv, runs)),
                "pruned tokens are a prefix": sum(all(s.ids[j][:len(a.meta["ids"][j])] == a.meta["ids"][j]
                                                      for j in range(len(s.ids))) for a, s in zip(lv, runs)),
                "same survivor, re-encoded text": sum(
                    a.survivor == replay_prune(s.texts, scorers[n], params, tokenizer=tokenizer, eos=s.eos).survivor
                    for a, s in zip(lv, runs)),
                "same survivor, word proxy": sum(
                    a.survivor == replay_prune(s.texts, scorers[n], params, eos=s.eos).survivor
                    for a, s in zip(lv, runs))})
    return pd.DataFrame(rows)


def token_table(std: Mapping[str, Sequence[StandardResult]], pruned: Mapping[str, Mapping[str, Sequence[PruneResult]]],
                live_names: Sequence[str], params: PruneParams) -> pd.DataFrame:
    """Generated tokens per study (Tables 4 / 29, token columns), one row per policy and setting of
    ``pruned[policy]`` (name -> (S,) runs; live runs for ``live_names``, replayed ones for the rest).

    Columns: ``policy, distance, wu, p, source`` (live / replay), ``standard tokens / study`` (the K full
    generations), ``pruning tokens / study`` (every candidate until dropped, the survivor to its end),
    ``survivor tokens / study``, ``tokens saved %`` (:func:`~sdrlib.pruning.tokens_saved_pct` over all
    studies) and ``rounds / study``."""
    rows = []
    for label, runs in std.items():
        for n, q in pruned[label].items():
            rows.append({"policy": label, "distance": n, "wu": params.warmup, "p": params.p,
                         "source": "live" if n in live_names else "replay",
                         "standard tokens / study": np.mean([s.total_tokens for s in runs]),
                         "pruning tokens / study": np.mean([x.total_tokens for x in q]),
                         "survivor tokens / study": np.mean([x.survivor_tokens for x in q]),
                         "tokens saved %": tokens_saved_pct([x.total_tokens for x in q], [s.total_tokens for s in runs]),
                         "rounds / study": np.mean([len(x.rounds) for x in q])})
    return pd.DataFrame(rows)


def quality_table(ev: pd.DataFrame, tokens: pd.DataFrame, metrics: Sequence[str], section: str, *,
                  missing: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Random vs standard vs pruning on ``section`` (Tables 4 / 29): one row per (policy, distance) of
    ``tokens`` (:func:`token_table`), columns ``policy, distance, wu, tok-save %`` and ``<metric> random /
    standard / pruning`` per metric.

    ``ev``: :func:`~sdrlib.selection.evaluate_methods` rows with ``policy`` and ``section`` columns and methods
    named ``standard:<name>`` / ``pruning:<name>``; stratum ``all`` is read. ``missing``: metric -> "not computed:
    <why>", added as constant columns."""
    d = ev[(ev.section == section) & (ev.stratum == "all")]
    rows = []
    for _, t in tokens.iterrows():
        row = {"policy": t.policy, "distance": t.distance, "wu": t.wu, "tok-save %": float(t["tokens saved %"])}
        for m in metrics:
            g = d[(d.policy == t.policy) & (d.metric == m)]
            row[f"{m} random"] = float(g.random.iloc[0])
            row[f"{m} standard"] = float(g[g.method == f"standard:{t.distance}"].value.iloc[0])
            row[f"{m} pruning"] = float(g[g.method == f"pruning:{t.distance}"].value.iloc[0])
        rows.append(row)
    out = pd.DataFrame(rows)
    for m, why in (missing or {}).items():
        out[m] = why
    return out


def quality_view(table: pd.DataFrame, digits: int = 3) -> tuple[pd.DataFrame, list[str]]:
    """A :func:`quality_table` for reading: the metric values only (``wu`` and ``tok-save %`` are in
    :func:`token_table`), transposed (one column ``"<policy>, <distance>"`` per row of ``table``, one row per
    value), rounded to ``digits``, without the "not computed" columns, whose names are returned as the second
    item."""
    gone = [c for c in table.columns if table[c].astype(str).str.startswith("not computed").all()]
    t = table.drop(columns=gone + [c for c in ("wu", "tok-save %") if c in table.columns])
    t.index = [f"{p}, {n}" for p, n in zip(t.policy, t.distance)]
    return t.drop(columns=["policy", "distance"]).astype(float).round(digits).T, gone


def versus_standard(choices: Mapping[str, Mapping[str, np.ndarray]],
                    metrics: Mapping[str, Mapping[str, Mapping[str, Any]]], names: Sequence[str],
                    n_candidates: int) -> Iterator[tuple[dict, Any, Any, dict]]:
    """Pairs ``(keys, survivors' metric, standard pick's metric, {"same pick %": ...})`` for
    :func:`~sdrlib.experiments.tables.paired_table`, shaped as :func:`versus_random` (same ``choices`` and
    ``metrics``; ``choices[policy]`` holds ``pruning:<name>`` and ``standard:<name>``); ``same pick %`` is the
    share of studies where the survivor is the standard pick."""
    for policy, by_section in metrics.items():
        for section, by_metric in by_section.items():
            for m, r in by_metric.items():
                for n in names:
                    a, b = choices[policy][f"pruning:{n}"], choices[policy][f"standard:{n}"]
                    yield ({"policy": policy, "section": section, "metric": m, "distance": n, "A": "pruning",
                            "B": "standard"},
                           selected_result(r, a, n_candidates), selected_result(r, b, n_candidates),
                           {"same pick %": 100 * float(np.mean(np.asarray(a) == np.asarray(b)))})


def sweep_table(std: Mapping[str, Sequence[StandardResult]], results: Mapping[str, Any],
                standard: Mapping[str, Mapping[str, np.ndarray]], scorers: Mapping[str, Any], params: PruneParams,
                grid_p: Sequence[float], grid_warmup: Sequence[int], *, key: str, tokenizer: Any,
                ci: Callable[[Any], tuple[float, float]]) -> pd.DataFrame:
    """Replayed pruning over a (p, warm-up) grid, per policy and setting of ``scorers``: tokens saved and the
    survivors' ``key`` metric next to standard best-of-K and random.

    ``results[policy]``: the ``key`` :class:`~sdrlib.metrics.base.MetricResult` over the S*K candidates;
    ``standard[policy][name]``: (S,) standard picks; ``ci``: a result's 95 % interval (e.g.
    :func:`sdrlib.plots.result_ci` with its resamples and seed). Columns: ``policy, distance, p, wu,
    tokens saved %, <key>, standard, random, <key> lo, <key> hi, standard lo, standard hi``."""
    rows = []
    for label, runs in std.items():
        r = results[label]
        for n, scorer in scorers.items():
            std_res = selected_result(r, standard[label][n], params.n_candidates)
            for p in grid_p:
                for wu in grid_warmup:
                    prm = with_params(params, p=p, warmup=wu)
                    q = [replay_prune(s.texts, scorer, prm, tokenizer=tokenizer, token_ids=s.ids) for s in runs]
                    res = selected_result(r, np.array([x.survivor for x in q]), params.n_candidates)
                    rows.append({"policy": label, "distance": n, "p": p, "wu": wu,
                                 "tokens saved %": tokens_saved_pct([x.total_tokens for x in q],
                                                                    [s.total_tokens for s in runs]),
                                 key: res.corpus, "standard": std_res.corpus,
                                 "random": selected_result(r, "random", params.n_candidates).corpus,
                                 **dict(zip((f"{key} lo", f"{key} hi"), ci(res))),
                                 **dict(zip(("standard lo", "standard hi"), ci(std_res)))})
    return pd.DataFrame(rows)


def wallclock_table(std: Mapping[str, Sequence[StandardResult]],
                    live: Mapping[str, Mapping[str, Sequence[PruneResult]]]) -> pd.DataFrame:
    """Live pruning against the K full generations per policy and live setting: ``standard s / study``,
    ``pruning s / study``, ``wall-clock ratio (pruning / standard)`` (sums over studies), forward passes per
    study (``meta["forwards"]``) and ``token ratio (pruning / standard)``."""
    rows = []
    for label, runs in std.items():
        for n, lv in live[label].items():
            s_std, s_pr = np.array([s.seconds for s in runs]), np.array([q.seconds for q in lv])
            rows.append({"policy": label, "distance": n, "standard s / study": s_std.mean(),
                         "pruning s / study": s_pr.mean(),
                         "wall-clock ratio (pruning / standard)": s_pr.sum() / s_std.sum(),
                         "standard forwards / study": np.mean([s.meta["forwards"] for s in runs]),
                         "pruning forwards / study": np.mean([q.meta["forwards"] for q in lv]),
                         "token ratio (pruning / standard)": sum(q.total_tokens for q in lv)
                         / sum(s.total_tokens for s in runs)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the conclusion, from the result files
#: the words for a comparison whose 95 % interval includes 0 (or a rate not distinguishable from chance)
NO_DIFFERENCE = "no difference detected at this size"


def _interval_words(r: Any) -> str:
    """The row's word under the project's rule as a family of one (:func:`sdrlib.metrics.verdict.family_directions`):
    ``"above"`` / ``"below"`` when its ``p_value`` is below 0.05 **and** its 95 % interval of ``diff`` excludes 0,
    else :data:`NO_DIFFERENCE` (no p-value: not tested). The percentile interval and the shifted-null p can disagree
    at the boundary (the default run of bdbd0e1: R_Cham's survivor +0.006, interval [+0.000, +0.012], p = 0.060,
    read "above" before): a direction is stated only when both agree. Tables use :func:`_family_words` (Holm)."""
    d = {k: getattr(r, k, np.nan) for k in ("diff", "ci_low", "ci_high", "p_value")}
    if not np.isfinite(float(d["diff"])):
        d["diff"] = (float(d["ci_low"]) + float(d["ci_high"])) / 2
    w = family_directions(pd.DataFrame([d]))[0]
    return NO_DIFFERENCE if w == NO_DIFF else w


def _family_words(g: pd.DataFrame) -> pd.Series:
    """Each row's word under the rule, the table ``g`` one family (Holm over its p-values)."""
    w = family_directions(g)
    return pd.Series([NO_DIFFERENCE if x == NO_DIFF else x for x in w], index=g.index)


def _holm_words(p_holm: float) -> str:
    """``", Holm = 0.060"``: the adjusted p the row's word rests on, beside the raw one; "" where none."""
    return f", Holm {format_p(p_holm).removeprefix('p ')}" if np.isfinite(p_holm) else ""


def _interval_counts(g: pd.DataFrame) -> str:
    """How the rows of a paired table split under the rule (Holm over ``g``'s rows, :func:`_family_words`): ``"above
    on 2 (BS-F1 findings, ...), below on 0, no difference detected at this size on 8"``."""
    words = g["word"] if "word" in g.columns else _family_words(g)
    parts = []
    for w in ("above", "below"):
        hit = g[words == w]
        parts.append(f"{w} on {len(hit)}" + (" (" + ", ".join(f"{r.metric} {r.section}" for _, r in hit.iterrows())
                                             + ")" if len(hit) else ""))
    return ", ".join(parts) + f", {NO_DIFFERENCE} on {int((words == NO_DIFFERENCE).sum())}"


def _pruning_answer(results_dir: str | Path, live: pd.DataFrame | None) -> str | None:
    """The conclusion's first sentence: does pruning keep best-of-K's quality with fewer tokens, per live setting:
    tokens saved, how many metric x section rows differ from standard best-of-K under the rule, wall-clock ratio."""
    if live is None or not len(live):
        return None
    vs = read_result_table(results_dir, table_names.PRUNING_VS_STANDARD)
    wall = read_result_table(results_dir, table_names.PRUNING_WALLCLOCK)
    words = _family_words(vs) if vs is not None and len(vs) else None
    parts = []
    for _, r in live.iterrows():
        saved = float(r["tokens saved %"])
        s = f"{r.policy}, {r.distance}: {abs(saved):.0f} % {'fewer' if saved >= 0 else 'more'} tokens"
        if words is not None:
            g = (vs.policy == r.policy) & (vs.distance == r.distance)
            n_diff = int((words[g] != NO_DIFFERENCE).sum())
            s += (f", {NO_DIFFERENCE} in quality on any of {int(g.sum())} metric x section rows" if n_diff == 0 else
                  f", a quality difference on {n_diff} of {int(g.sum())} metric x section rows")
        w = wall[(wall.policy == r.policy) & (wall.distance == r.distance)] if wall is not None else ()
        if len(w):
            ratio = float(w.iloc[0]["wall-clock ratio (pruning / standard)"])
            s += f", wall-clock ratio pruning / standard {ratio:.2f} (timed once, not tested)"
        parts.append(s)
    return "Answer: does pruning keep best-of-K's quality with fewer tokens? " + "; ".join(parts) + "."


def conclusion_lines(results_dir: str | Path, *, metric: str = "BS-F1", section: str = "findings",
                     p_col: str = "p_value") -> list[str]:
    """Notebook 06's conclusion, read back from its result files, one sentence per finding and live setting
    (all settings when no row of ``06_tokens`` is live); each names the file it comes from.

    - tokens and wall-clock (``06_tokens``, ``06_wallclock``): counts, so "fewer" / "more" is a measurement;
    - pruning vs standard best-of-K on ``metric`` / ``section`` (``06_pruning_vs_standard``), and how every
      metric and section of that table and of ``06_pruning_vs_random`` splits: a direction only under the
      project's rule (:func:`sdrlib.metrics.verdict.family_directions`: Holm over each table's rows, the 95 %
      paired-bootstrap interval excluding 0), else :data:`NO_DIFFERENCE`;
    - survivor = standard pick against 1/K (``06_survivor_vs_standard_pick``, :func:`agreement_sentences`).

    A missing file leaves its sentences out. Example line: ``"SFT, chamfer, Findings BS-F1: survivor 0.412 vs
    standard best-of-K 0.420 (diff -0.008, 95 % CI [-0.030, +0.015], p = 0.480, Holm = 1.000): no difference
    detected at this size (06_pruning_vs_standard)."``"""
    out: list[str] = []
    tok = read_result_table(results_dir, table_names.PRUNING_TOKENS)
    live = tok[tok.source == "live"] if tok is not None and (tok.source == "live").any() else tok
    answer = _pruning_answer(results_dir, live)
    if answer:
        out.append(answer)
    keep = (lambda t: t[t.distance.isin(set(live.distance))]) if live is not None else (lambda t: t)
    wall = read_result_table(results_dir, table_names.PRUNING_WALLCLOCK)
    for _, r in (live.iterrows() if live is not None else ()):
        saved = r["tokens saved %"]
        s = (f"{r.policy}, {r.distance} ({r.source}): pruning generated {r['pruning tokens / study']:.0f} tokens per "
             f"study against {r['standard tokens / study']:.0f} for the K full generations, {abs(saved):.1f} % "
             f"{'fewer' if saved > 0 else 'more' if saved < 0 else 'tokens, the same count'} (06_tokens)")
        w = wall[(wall.policy == r.policy) & (wall.distance == r.distance)] if wall is not None else ()
        if len(w):
            w = w.iloc[0]
            s += (f"; wall-clock {w['pruning s / study']:.2f} s against {w['standard s / study']:.2f} s per study, "
                  f"ratio {w['wall-clock ratio (pruning / standard)']:.2f} (06_wallclock, timed in this run)")
        out.append(s + ".")
    vs = read_result_table(results_dir, table_names.PRUNING_VS_STANDARD)
    if vs is not None:
        vs = keep(vs)
        vs = vs.assign(word=_family_words(vs),  # the table the run reports is one family (Holm)
                       p_holm=holm(vs["p_value"].tolist()) if "p_value" in vs else np.nan)
        for (policy, n), g in vs.groupby(["policy", "distance"], sort=False):
            head = g[(g.metric == metric) & (g.section == section)]
            for _, r in head.iterrows():
                words = f"survivor {r.word} standard" if r.word != NO_DIFFERENCE else NO_DIFFERENCE
                out.append(f"{policy}, {n}, {section.capitalize()} {metric}: survivor {r.value_a:.3f} vs standard "
                           f"best-of-K {r.value_b:.3f} (diff {r['diff']:+.3f}, 95 % CI [{r.ci_low:+.3f}, "
                           f"{r.ci_high:+.3f}], {format_p(r[p_col])}{_holm_words(r.p_holm)}): {words} "
                           "(06_pruning_vs_standard).")
            out.append(f"{policy}, {n}, pruning vs standard over all {len(g)} metric x section rows: "
                       f"{_interval_counts(g)} (06_pruning_vs_standard).")
    vr = read_result_table(results_dir, table_names.PRUNING_VS_RANDOM)
    if vr is not None:
        vr = keep(vr)
        vr = vr.assign(word=_family_words(vr))
        for (policy, n), g in vr.groupby(["policy", "distance"], sort=False):
            out.append(f"{policy}, {n}, pruning vs random over all {len(g)} metric x section rows: "
                       f"{_interval_counts(g)} (06_pruning_vs_random).")
    ag = read_result_table(results_dir, table_names.SURVIVOR_VS_STANDARD_PICK)
    if ag is not None:
        out += [s[:-1] + " (06_survivor_vs_standard_pick)." for s in
                agreement_sentences(keep(ag), undetected=NO_DIFFERENCE)]
    return out
