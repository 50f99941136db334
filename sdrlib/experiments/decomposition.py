"""Decomposing the GRPO drop in clinical accuracy: length, truncation and stated findings.

In an earlier default-profile run (`ef27b0d`) every GRPO configuration, R_fmt included, lowered Findings CheXpert-14
macro F1 below SFT.
This module measures, for test generations of each (configuration, seed), what a drop is made of:

- :func:`generation_stats`: per generated report, its template validity, its length in policy tokens and in
  Findings sentences, whether it was **cut** (as many tokens as the decoding limit, so it never closed its
  template), and the positive findings the offline labeler reads in its Findings
  (:func:`sdrlib.clinical.label_report`; 1 = positive, uncertain is not positive, an invalid template states
  none), next to the study's stratum (``no_finding`` / ``single`` / ``multi`` from the *reference* labels,
  :func:`sdrlib.metrics.clinical.strata_from_labels`).
- :func:`stratum_table`: those means per configuration and stratum (seeds averaged, ``reference`` first).
- :func:`training_table`: from each run's ``curves.csv``, the share of sampled completions cut at
  ``max_completion_length`` (TRL's ``completions/clipped_ratio``), their mean length, R_fmt and the KL, over the
  first and last 4 steps. TRL logs these over the whole batch, so training-time truncation has no strata.
- :func:`findings_f1` and :func:`paired_f1_table`: Findings macro F1 (the suite's
  ``clinical_f1_macro14@labeler``, exactly as notebook 04 scores it) and the paired bootstrap of one
  configuration against another, seed by seed (:func:`sdrlib.metrics.significance.paired_bootstrap`).
- :func:`decomposition_table`: the steps SFT -> drift control -> R_fmt -> content reward, each step's mean
  change in macro F1 over seeds and its share of the total drop.

Left out: per-stratum truncation during training (TRL logs no per-prompt lengths); an across-seed test.
Example: ``stratum_table({("sft", 0): texts}, test, count_tokens=len)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.clinical import label_report
from sdrlib.metrics.clinical import strata_from_labels
from sdrlib.metrics.significance import paired_bootstrap
from sdrlib.metrics.suite import score_reports
from sdrlib.reports import build_template, parse_template, split_sentences

__all__ = ["MACRO_F1", "generation_stats", "stratum_table", "training_table", "findings_f1", "paired_f1_table",
           "decomposition_table", "share_view"]

#: the suite's name of Findings CheXpert-14 macro F1 under the offline labeler (notebook 04's headline metric)
MACRO_F1 = "clinical_f1_macro14@labeler"


def _positives(text: str) -> int:
    """Observations other than "No Finding" the labeler reads as positive (1). Example: ``"Small effusion." -> 1``."""
    return sum(1 for obs, v in label_report(text).items() if obs != "No Finding" and v == 1)


def generation_stats(texts: Sequence[str], records: Sequence[Any], *, count_tokens: Callable[[str], int],
                     limit: int | None = None) -> pd.DataFrame:
    """One row per generated report: ``stratum, valid, tokens, sentences, positives, cut``.

    ``count_tokens`` maps a text to its length in policy tokens (the processor's tokenizer; ``len`` of
    ``str.split`` in tests); ``limit`` is the decoding limit (``sft.max_new_tokens`` for test generations):
    a report with at least that many tokens is ``cut`` (``False`` everywhere without a limit). ``sentences``
    and ``positives`` read the Findings section; an invalid template has 0 of both. ``records`` are the test
    studies in the same order (their ``labels`` give the stratum).
    """
    if len(texts) != len(records):
        raise ValueError(f"{len(texts)} generations for {len(records)} studies")
    strata = strata_from_labels([r.labels for r in records])
    rows = []
    for text, stratum in zip(texts, strata):
        sec = parse_template(text)
        n_tok = int(count_tokens(text))
        rows.append({"stratum": stratum, "valid": sec is not None, "tokens": n_tok,
                     "sentences": len(split_sentences(sec.findings)) if sec is not None else 0,
                     "positives": _positives(sec.findings) if sec is not None else 0,
                     "cut": bool(limit is not None and n_tok >= limit)})
    return pd.DataFrame(rows)


def stratum_table(generations: Mapping[tuple[str, int], Sequence[str]], records: Sequence[Any], *,
                  count_tokens: Callable[[str], int], limit: int | None = None,
                  label: Callable[[str], str] = str) -> pd.DataFrame:
    """Means per configuration and stratum (``all`` too), averaged over seeds; the references first.

    Columns ``config, stratum, n, seeds, valid, cut, tokens, sentences, positives, no positive`` (``valid``,
    ``cut`` and ``no positive`` are shares). ``label`` names a configuration (:func:`sdrlib.rewards.reward_label`).
    Example: ``stratum_table({("sft", 0): texts}, test, count_tokens=lambda t: len(t.split()))``.
    """
    refs = [build_template(r.findings, r.impression) for r in records]
    per: dict[str, list[pd.DataFrame]] = {"reference": [generation_stats(refs, records, count_tokens=count_tokens)]}
    for (config, _seed), texts in generations.items():
        per.setdefault(label(config), []).append(generation_stats(texts, records, count_tokens=count_tokens,
                                                                  limit=limit))
    rows = []
    for config, frames in per.items():
        for stratum in ("all", "no_finding", "single", "multi"):
            seed_means = []
            for f in frames:
                d = f if stratum == "all" else f[f.stratum == stratum]
                if len(d):
                    seed_means.append({"n": len(d), "valid": d.valid.mean(), "cut": d.cut.mean(),
                                       "tokens": d.tokens.mean(), "sentences": d.sentences.mean(),
                                       "positives": d.positives.mean(), "no positive": (d.positives == 0).mean()})
            if seed_means:
                m = pd.DataFrame(seed_means).mean()
                rows.append({"config": config, "stratum": stratum, "n": int(m.n), "seeds": len(seed_means),
                             **{k: float(m[k]) for k in ("valid", "cut", "tokens", "sentences", "positives",
                                                         "no positive")}})
    return pd.DataFrame(rows)


def training_table(curves: pd.DataFrame, *, label: Callable[[str], str] = str, n_steps: int = 4) -> pd.DataFrame:
    """First / last ``n_steps`` steps of every run's training curves, means over seeds.

    ``curves``: the runs' ``curves.csv`` rows with ``config`` and ``seed`` columns (as notebook 04 builds it).
    Columns: ``config, seeds`` and, for each of ``cut`` (``completions/clipped_ratio``), ``length``
    (``completions/mean_length``), ``R_fmt`` (``rewards/r_fmt/mean``) and ``kl``, ``<name> first`` / ``<name> last``.
    """
    cols = {"cut": "completions/clipped_ratio", "length": "completions/mean_length", "R_fmt": "rewards/r_fmt/mean",
            "kl": "kl"}
    rows = []
    for config, d in curves.groupby("config", sort=False):
        row: dict[str, Any] = {"config": label(config), "seeds": int(d.seed.nunique())}
        for name, col in cols.items():
            if col not in d:
                continue
            first, last = [], []
            for _, s in d.dropna(subset=[col]).sort_values("step").groupby("seed"):
                first.append(s[col].head(n_steps).mean())
                last.append(s[col].tail(n_steps).mean())
            row[f"{name} first"], row[f"{name} last"] = float(np.mean(first)), float(np.mean(last))
        rows.append(row)
    return pd.DataFrame(rows)


def findings_f1(texts: Sequence[str], records: Sequence[Any], **score_kwargs) -> Any:
    """The :class:`sdrlib.metrics.base.MetricResult` of Findings macro F1 (:data:`MACRO_F1`) of one set of
    generations; ``score_kwargs`` go to :func:`sdrlib.metrics.suite.score_reports` (default: the offline labeler,
    ``settings={"clinical": {"backend": "labeler"}}``)."""
    refs = [{"findings": r.findings, "impression": r.impression} for r in records]
    kw = {"settings": {"clinical": {"backend": "labeler"}}, **score_kwargs}
    sc = score_reports(list(texts), refs, sections=("findings",), metrics=("clinical",),
                       sample_ids=[r.study_id for r in records], **kw)
    return sc.result("findings", MACRO_F1)


def paired_f1_table(generations: Mapping[tuple[str, int], Sequence[str]], records: Sequence[Any],
                    pairs: Sequence[tuple[str, str]], *, n_resamples: int = 1000, seed: int = 0,
                    label: Callable[[str], str] = str, **score_kwargs) -> pd.DataFrame:
    """Paired bootstrap of Findings macro F1, ``A - B`` for each pair, seed by seed (the seeds both have).

    Rows ``A, B, seed, value_a, value_b, diff, ci_low, ci_high, p_value`` (the one comparison schema,
    :data:`sdrlib.metrics.significance.COMPARISON_COLUMNS`, plus the seed); the same resamples for every pair of
    one seed.
    """
    cache: dict[tuple[str, int], Any] = {}

    def res(key):
        if key not in cache:
            cache[key] = findings_f1(generations[key], records, **score_kwargs)
        return cache[key]

    rows = []
    for a, b in pairs:
        seeds = sorted({s for c, s in generations if c == a} & {s for c, s in generations if c == b})
        for s in seeds:
            t = paired_bootstrap(res((a, s)), res((b, s)), n_resamples=n_resamples, seed=seed + s)
            rows.append({"A": label(a), "B": label(b), "seed": s, "value_a": t["value_a"], "value_b": t["value_b"],
                         "diff": t["diff"], "ci_low": t["ci_low"], "ci_high": t["ci_high"], "p_value": t["p_value"]})
    return pd.DataFrame(rows)


def decomposition_table(f1: Mapping[tuple[str, int], float], steps: Sequence[tuple[str, str]], *,
                        label: Callable[[str], str] = str) -> pd.DataFrame:
    """How much of the drop each step explains: ``steps`` are ``(from, to)`` configurations in order
    (e.g. ``[("sft", "noise"), ("noise", "fmt"), ("fmt", "chamfer")]``); ``f1[(config, seed)]`` the macro F1.

    Rows ``step, seeds, F1 from, F1 to, change, share of drop``: means over the seeds both configurations
    have; ``share of drop`` = change / (F1 of the last ``to`` - F1 of the first ``from``), so the shares of a
    chain add up to 1 when every step has the same seeds. Example: ``decomposition_table(f1, [("sft", "fmt")])``.
    """
    def mean(c, seeds):
        return float(np.mean([f1[(c, s)] for s in seeds]))

    def seeds_of(c):
        return {s for k, s in f1 if k == c}

    all_seeds = sorted(seeds_of(steps[0][0]) & seeds_of(steps[-1][1])) if steps else []
    total = mean(steps[-1][1], all_seeds) - mean(steps[0][0], all_seeds) if all_seeds else np.nan
    rows = []
    for a, b in steps:
        seeds = sorted(seeds_of(a) & seeds_of(b))
        if not seeds:
            continue
        fa, fb = mean(a, seeds), mean(b, seeds)
        rows.append({"step": f"{label(a)} -> {label(b)}", "seeds": len(seeds), "F1 from": fa, "F1 to": fb,
                     "change": fb - fa, "share of drop": (fb - fa) / total if total and np.isfinite(total) else np.nan})
    return pd.DataFrame(rows)


def share_view(decomp: pd.DataFrame, f1: Mapping[tuple[str, int], float], chains: Sequence[Sequence[tuple[str, str]]],
               *, label: Callable[[str], str] = str, digits: int = 3) -> pd.DataFrame:
    """:func:`decomposition_table` rows (concatenated, with a ``chain`` column: the label of each chain's last
    configuration) as a reader should see them: ``share of drop`` shown only where it means something, else blank
    with the reason in ``share shown?``.

    A share is shown when every step of the chain moves the same way (no zero step) **and** the chain's total
    change is larger than its run-to-run spread (|mean over seeds| > sample SD of the per-seed totals, so at least
    two seeds). Otherwise a step's share can read 4.5 or -3.5 (a total near zero, or steps that cancel) and says
    nothing. The saved table keeps every number; this is the display. ``chains``: the ``(from, to)`` steps of each
    chain, as given to :func:`decomposition_table`; ``f1[(config, seed)]``: the macro F1. Returns a new frame with
    ``change`` rounded to ``digits`` and ``share of drop`` as text.
    """
    out = decomp.copy()
    share, why = [], []
    reasons = {}
    for ch in chains:
        name = label(ch[-1][1])
        first, last = ch[0][0], ch[-1][1]
        seeds = sorted({s for c, s in f1 if c == first} & {s for c, s in f1 if c == last})
        tot = np.array([f1[(last, s)] - f1[(first, s)] for s in seeds], float)
        g = out[out["chain"] == name]
        signs = np.sign(np.round(g["change"].to_numpy(float), digits))
        if not len(tot) or round(abs(tot.mean()), digits) == 0:
            reasons[name] = "total change 0"
        elif (signs == 0).any() or len(set(signs)) > 1:
            reasons[name] = "steps move in opposite directions (or one does not move)"
        elif len(tot) < 2:
            reasons[name] = "1 seed: run-to-run spread not measured"
        elif abs(tot.mean()) <= tot.std(ddof=1):
            reasons[name] = f"total {tot.mean():+.{digits}f} within its seed SD {tot.std(ddof=1):.{digits}f}"
        else:
            reasons[name] = ""
    for _, r in out.iterrows():
        reason = reasons.get(r["chain"], "chain not given")
        share.append(f"{r['share of drop']:.2f}" if not reason and pd.notna(r["share of drop"]) else "")
        why.append(reason or "yes")
    out["change"] = out["change"].round(digits)
    out["F1 from"], out["F1 to"] = out["F1 from"].round(digits), out["F1 to"].round(digits)
    out["share of drop"], out["share shown?"] = share, why
    return out
