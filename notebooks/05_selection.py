# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (sdr)
#     language: python
#     name: sdr
# ---

# %% [markdown]
# # 05 · Best-of-K selection by distance to the training distribution
# **The question.** A policy can write K different reports for one chest X-ray. Without the reference, which one
# should we keep? This notebook tests one answer of the paper (sec. 3.3 and 5; app. C.4, E, F): keep the candidate
# whose sentence-embedding sets lie closest, by a set distance, to a bank of N training reports. Is that pick
# better than a random one, than the first one, than the consensus (MBR) pick, and at what cost in clinical
# content?
#
# How it works, per study: every candidate is split into its Findings and Impression sentences, each sentence is
# embedded (notebook 01), and each section becomes a set of vectors. A set distance (notebook 02) compares a
# candidate section with the same section of each bank report (eq. 7); the N distances are aggregated into one
# score per section by `min` (the nearest bank report), `avg` (all of them) or `knn` (the mean of the k nearest)
# (eq. 8); the section scores are summed (eq. 9) and the smallest total wins (eq. 10). Nothing here looks at the
# reference report: the references only score the picks afterwards.
#
# What to expect from the outputs: on the `smoke` profile the policies have trained for seconds, write no
# parseable report (section 1's table), and every table is zeros or "n/a": the run checks the wiring, not the science. The numbers
# to read come from the `cpu` or `paper` profiles.

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
overrides: dict = {}  # dotted profile keys to values, e.g. {"grpo.max_steps": 10} (run_all.sh --set KEY=VALUE)
n_examples: int = 2  # qualitative examples shown at the end

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sdrlib import selection as sel
from sdrlib import table_names
from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.embedding import ReportBank, SentenceEmbedder
from sdrlib.experiments import tables as compare
from sdrlib.experiments.candidates import all_local_candidates, api_serve_dir, policy_dirs
from sdrlib.metrics.suite import metric_kwargs
from sdrlib.plots import plot_improvement_heatmap, plot_selection_space, style
from sdrlib.results import save_fig, save_table
from sdrlib.rewards import reward_label
from sdrlib.utils import folded_warnings, one_line, quiet, set_seed

# %% [markdown]
# The setup loads the profile, the test split (cut to `selection.n_test` studies when set) and the bank. The bank
# is a seeded random draw of `selection.bank_size` training reports from notebook 01's embedded bank, the same
# draw notebook 06 uses, so both notebooks rank candidates against the same N reports. The printed line names the
# sizes every later number depends on: K candidates per study, N bank reports, the number of test studies, the
# `knn` aggregation's k, the distance settings and the aggregations of the sweep.

# %%
cfg = load_profile(profile, overrides)
sc = cfg.selection
set_seed(cfg.seed)
quiet()  # no raw progress bars (transformers "Loading weights", datasets, hub downloads)
train, test = load_split(cfg, "train"), load_split(cfg, "test")
test = test[: sc.n_test] if sc.n_test else test
emb = SentenceEmbedder.from_config(cfg)
bank = ReportBank.load(cfg.cache_dir / "banks" / f"{cfg.name}_train", expected_encoder_id=emb.encoder_id)
bank = sel.sample_bank(bank, sc.bank_size, cfg.seed)  # drawn at random, as notebook 06 draws it
out_dir = cfg.runs_dir / cfg.name / "selection"
print(cfg.name, f"K={sc.n_candidates}", f"N={len(bank)} bank reports", f"{len(test)} test studies", f"knn k={sc.knn_k}",
      "settings:", sc.names, "aggregations:", sc.aggregations)

# %% [markdown]
# ## 1. Candidates
# Each local policy (SFT from notebook 03, every GRPO configuration from notebook 04, seed 0) samples K reports
# per test study at the profile's evaluation temperature. Candidates are cached in
# `runs/<profile>/selection/candidates_<policy>.jsonl` and reused on a re-run, so a second run of this notebook
# ranks exactly the same reports. API models (`selection.api_models`) are asked through `sdrlib.apigen` when the
# profile lists any; their free-text answers are parsed as `report` format rather than the policies'
# `<think>/<answer>` template.

# %%
# every policy's K candidate columns side by side on `grpo.workers` processes: the same candidates as one policy
# after the other (`sdrlib.experiments.candidates.all_local_candidates` says why)
dirs = policy_dirs(cfg)
local = all_local_candidates(cfg, dirs, test, sc.n_candidates, {n: out_dir / f"candidates_{n}.jsonl" for n in dirs})
cands = {reward_label(n): c for n, c in local.items()}
formats = {label: "template" for label in cands}

# %% [markdown]
# API models, when the profile lists any: each model is asked for K reports per study with each prompt of
# `selection.api_prompts` (`p2` adds `selection.api_exemplars` training reports as examples), answers cached
# like the policies' candidates. The printed line per model counts requests, failures and tokens.

# %%
if sc.api_models:
    from sdrlib.apigen import generate_api_candidates, last_stats  # only needed when the profile lists API models
    from sdrlib.serve import serve_policy

    # selection.api_serve: a local policy behind sdrlib.serve on loopback, asked like any provider
    with serve_policy(api_serve_dir(cfg), sc.api_base_url, max_new_tokens=cfg.sft.max_new_tokens,
                      model=sc.api_models[0]) as base_url:
        for model in sc.api_models:
            for prompt in sc.api_prompts:
                label = f"{model} [{prompt}]"
                cands[label] = generate_api_candidates(
                    test, model=model, base_url=base_url or None, n_candidates=sc.n_candidates, prompt=prompt,
                    exemplars=train[: sc.api_exemplars] if prompt == "p2" else [],
                    cache_path=out_dir / f"api_{model.replace('/', '_')}_{prompt}.jsonl",
                    temperature=sc.api_temperature, max_tokens=sc.api_max_tokens, seed=cfg.seed)
                formats[label] = "report"
                print(f"{label} via {base_url or 'the client default'}: {last_stats().summary()}")

# %% [markdown]
# Before ranking anything, two properties of the candidates decide whether selection can matter at all. The
# *parseable share* is the fraction of candidates from which a Findings or Impression section can be read: an
# unparseable candidate gets an infinite distance and is never picked unless all K are unparseable. *Distinct
# candidates per study* is how many of the K texts differ: with 1.0 every candidate is the same text and every
# method picks the same report, so all methods tie with random.

# %%
valid = {p: np.mean([sel.parse_candidate(c, formats[p]) is not None for row in cs for c in row]) for p, cs in cands.items()}
distinct = {p: np.mean([len(set(row)) for row in cs]) for p, cs in cands.items()}
pd.DataFrame({"parseable share": valid, "distinct candidates per study": distinct}).round(2)

# %% [markdown]
# ## 2. One pass over the test studies: distances, MBR, metrics, every method's value
# `sel.evaluate_split` does the whole pipeline for one split, and section 4 calls it again for validation
# studies, so both splits go through the same code:
#
# 1. the sentence sets of every candidate, and each sentence's finding presence (offline labeler) when a
#    negation-aware setting (`chamfer_neg`, notebook 02) is in the sweep;
# 2. the distance of every candidate to every bank report, for every setting, aggregation and section (eqs. 7-9),
#    in one pass of the batched engine per policy (identical candidate sets are computed once);
# 3. MBR consensus: each candidate's mean distance to the other K - 1 candidates of its study (no bank);
# 4. the metric suite on all S x K candidates against their study's reference, once;
# 5. every method's corpus value from the candidates it picked, next to three baselines: **random** (the exact
#    expectation of a uniform pick: each candidate weighted 1/K, so there is no sampling noise in the baseline),
#    **first** (candidate 0) and **oracle** (the best candidate per study by that metric: the headroom K candidates
#    leave; only for metrics with per-sample values).
#
# The lines printed per policy count candidate x bank pairs and unparseable candidates; warnings of the solvers
# are folded into one counted line per kind.

# %%
split_kw = dict(n_candidates=sc.n_candidates, aggregations=sc.aggregations, knn_k=sc.knn_k, device=cfg.distances.device,
                bank_presence=sel.bank_presence_of(bank), metric_kwargs=metric_kwargs(cfg))
sel.check_encoder(bank, emb)
with folded_warnings():  # Sinkhorn's iteration-cap warnings: one counted line, not one block per policy
    split = sel.evaluate_split(cands, test, emb, bank, sc.names, formats=formats, log=print, **split_kw)
pairs, computed = split.pairs()
secs = split.seconds
print(f"sweep: {secs['distances']:.1f} s for every setting, {pairs:,} candidate x bank pairs ({computed:,} after deduplication); "
      f"MBR: {secs['mbr']:.1f} s; metrics: {secs['metrics']:.0f} s")
for group, why in next(iter(split.metrics.values())).unavailable.items():  # rows "not computed: <why>" in tables
    print(f"not computed: {group}: {why}")
ev = split.ev
metrics = [m for m in sel.HEADLINE_METRICS if m in set(ev.metric)]
missing = sel.not_computed(next(iter(split.metrics.values())), "findings")  # e.g. RadGraph without its model
save_table(ev, table_names.SELECTION_METHODS, cfg)
split.scores[next(iter(split.scores))].frame().head().round(3)

# %% [markdown]
# The frame above is the raw material of every later table: one row per candidate, setting and aggregation, with
# its Findings and Impression scores, their sum (`score`) and whether it was `chosen` (smallest score of its
# study). Every method's value on every metric, for every policy and stratum, is in
# `results/05_selection_methods.csv`; below, only the three baselines on Findings, per policy. The gap between
# `random` and `oracle` is the most any selection could gain with these K candidates; `first` is a second,
# noisy, random pick.

# %%
ev[(ev.stratum == "all") & (ev.section == "findings") & ev.method.isin(["random", "first", "oracle"])].pivot_table(
    index="policy", columns=["metric", "method"], values="value", sort=False).round(3)

# %% [markdown]
# ## 3. Best selection per policy vs random (Tables 3 and 23)
# For every policy and metric, `sel.best_vs_random` takes the best of the sweep's (distance, aggregation)
# methods, its value, random's, the % improvement over random, and for reference the oracle, first and the best
# MBR. **Picked on the test set, as the paper does**: the best of all settings on the very studies it is scored
# on, so these improvements are optimistic (section 4 removes that bias). The cell shows two metrics: BERTScore
# F1 (text similarity) and a clinical metric (CheXpert-14 macro F1, CXB-14, when computed, else RG-E, else the
# per-report clinical F1); `results/05_headline_<section>.md` has every metric, with oracle and MBR.

# %%
protocol = (f"{len(test)} test studies, K = {sc.n_candidates} candidates per study from one sampling seed ({cfg.seed}) per "
            f"policy, N = {len(bank)} bank reports")
heads = {}
for section in ("findings", "impression"):
    heads[section] = sel.best_vs_random(ev[ev.section == section], metrics, not_computed=missing)
    save_table(heads[section], table_names.selection_headline(section), cfg, protocol=protocol, pick="on test (as the paper; optimistic)")
print("picked on test (as the paper; optimistic):", protocol)
key = "BS-F1" if "BS-F1" in metrics else metrics[0]
clin_key = next((m for m in ("CXB-14", "RG-E", "clin-F1 (sample)") if m in metrics), None)
shown = [m for m in (key, clin_key) if m]  # key rows here; results/05_headline_<section>.md has every metric
sel.headline_view(heads["findings"], shown)

# %% [markdown]
# The same view for the Impression section. Read the `best_method` columns as well as the numbers: when the
# winning method changes from policy to policy and metric to metric, "the best method" is partly the luck of
# the draw, which is what section 4 measures.

# %%
sel.headline_view(heads["impression"], shown)

# %% [markdown]
# ## 4. The same tables without selection on the test set
# Each local policy also samples K candidates for `selection.n_val` studies of the **validation** split, and
# `sel.evaluate_split` runs the identical pipeline on them. The best (distance, aggregation) per policy and metric
# is picked on validation and then reported on the test studies (`sel.best_picked_on_val`). Compare column
# `test` (the validation pick, scored on test) with `on_test_best` (the paper's pick on test): where `test` falls
# short, part of section 3's margin over random was selection on the evaluation set. With only a few validation
# studies the pick itself is noisy, so on small profiles the gap can be large for that reason alone.

# %%
val_split = None
if sc.n_val:
    val = load_split(cfg, "val")[: sc.n_val]
    vlocal = all_local_candidates(cfg, dirs, val, sc.n_candidates, {n: out_dir / f"candidates_{n}_val.jsonl" for n in dirs},
                                  log=None)
    vcands = {reward_label(n): c for n, c in vlocal.items()}
    with folded_warnings():  # the same solver / template warnings as in section 2, counted
        val_split = sel.evaluate_split(vcands, val, emb, bank, sc.names, **split_kw)
    vprotocol = f"picked on {len(val)} validation studies, reported on " + protocol
    for section in ("findings", "impression"):
        t = sel.best_picked_on_val(val_split.ev[val_split.ev.section == section], ev[ev.section == section], metrics)
        heads[f"{section}_val"] = t
        save_table(t, table_names.selection_headline(section, val=True), cfg, protocol=vprotocol, pick="on validation")
    print(f"validation pick: {len(val)} val studies x K = {sc.n_candidates}, {len(vcands)} policies; {vprotocol}")
(heads["findings_val"][heads["findings_val"].metric.isin(shown)]
 .set_index(["policy", "metric"])[["picked_on_val", "test", "on_test_best_method", "on_test_best"]].round(3)
 if val_split is not None else "selection.n_val = 0: no validation pick")

# %% [markdown]
# ## 5. Every method, averaged over policies (Tables 25-28)
# Which (distance, aggregation) works across policies? `sel.improvement_summary` gives, per method, the mean and
# sample std over policies of the % improvement over random (Findings), for all studies and per ground-truth
# stratum: no finding, a single finding, several findings (appendix F). The std is over policies, not over
# studies: it says how much the answer depends on which policy wrote the candidates (NaN with one policy).
# The strata ask whether selection helps normal studies and hurts abnormal ones.

# %%
summ = {}
for stratum in ["all", "no_finding", "single", "multi"]:
    d = ev[ev.section == "findings"]
    if stratum not in set(d.stratum):
        continue
    summ[stratum] = sel.improvement_summary(d, metrics, stratum=stratum)
    save_table(summ[stratum], table_names.selection_improvement(stratum), cfg)
n_strata = ev[(ev.section == "findings") & (ev.method == "random") & (ev.policy == next(iter(cands)))].groupby("stratum").n.first()
print("studies per stratum:", ", ".join(f"{k} {v}" for k, v in n_strata.items()))
key_metrics = [m for m in ("BS-F1", "CXB-14") if m in metrics] or metrics[:2]  # every metric: the saved tables
ranked = summ["all"].set_index(["distance", "aggregation"])[[c for m in key_metrics for c in (m, f"{m}_std")]]
ends = [*ranked.sort_values(key_metrics[0], ascending=False).index[:3], *ranked.sort_values(key_metrics[0]).index[:3]]
ranked.loc[list(dict.fromkeys(ends))].round(1)  # top 3 and bottom 3 by the first key metric

# %% [markdown]
# Above: the three methods with the largest and the three with the smallest mean improvement in the first key
# metric, with each metric's std over policies (`_std`). The full table, every method and metric, is
# `results/05_improvement_all.md`; when the std is as large as the mean, the sign of the mean is not a property
# of the method. Below, per stratum, the same two key metrics for every method (full tables:
# `results/05_improvement_<stratum>.md`).

# %%
pd.concat({s: t.set_index(["distance", "aggregation"])[key_metrics] for s, t in summ.items() if s != "all"},
          axis=1).round(1)

# %% [markdown]
# ## 6. Heatmaps (Figs. 3-5)
# The same numbers as pictures. First, method x metric: the mean % improvement over random across policies
# (Findings), one colour scale for the whole figure, diverging about 0 = random (purple above random, orange
# below, white at random); "n/a" marks a cell without a relative change
# (random's value is 0, as on smoke). Look for rows that are good in one column and bad in another: a method that
# raises text similarity while lowering clinical F1 trades one for the other.
#
# CXB-14 and clin-F1 (sample) can disagree in sign: CXB-14 is a corpus macro F1 over 14 observations, pulled
# down whenever a rare finding is missed, while clin-F1 (sample) averages a per-report F1 that is 1.0 for a
# normal report read as normal, so picking more normal-sounding candidates raises it and can lower CXB-14
# (section 10 measures how often picks are normal). Terms: `docs/glossary.md`.

# %%
hm = summ["all"].assign(method=lambda t: t.distance + " + " + t.aggregation).set_index("method")[metrics]
with style():
    fig = plot_improvement_heatmap(hm, title=f"Findings, mean over {len(cands)} policies")
    save_fig(fig, "05_method_metric_heatmap", cfg)
plt.show()

# %% [markdown]
# Then distance x policy with the `avg` aggregation, once for BERTScore F1 and once for the clinical metric
# (Fig. 5: the paper's RG-E when RadGraph runs; without it CXB-14, else clin-F1 (sample); the title and file name
# say which). A column that is uniformly good or bad says more about the policy's candidates (how different its
# K reports are) than about the distances.

# %%
clin = next((m for m in ("RG-E", "CXB-14", "clin-F1 (sample)") if m in metrics), None)  # Fig. 5: Tab. 25's entity F1
for m in [x for x in ("BS-F1", clin) if x in metrics]:
    grid = sel.policy_grid(ev, m, aggregation="avg", policies=list(cands))
    with style():
        fig = plot_improvement_heatmap(grid, title=f"{m}, Findings, avg aggregation")
        save_fig(fig, f"05_policy_heatmap_{m.split()[0].replace('-', '_')}", cfg)
    plt.show()

# %% [markdown]
# ## 7. Paired bootstrap: the best method vs random and vs MBR
# Tables and heatmaps show point estimates; this section asks whether a difference is larger than the noise of
# which studies happen to be in the test set. The best method is the one with the highest mean % improvement in
# BERTScore F1 (Findings) over policies, **picked on the validation studies** when `selection.n_val` > 0
# (otherwise on the test set, as the paper, and labelled so). Per policy, a paired bootstrap over test studies
# (`sdrlib.experiments.tables.paired_table`: the same resamples for both sides) compares it with random (its exact
# expectation per study) and with MBR under the same distance. One candidate set per policy (one sampling seed),
# so there are no seeds to test over: each row is a single run's study bootstrap, and the project's rule reads a
# row as a difference only when its 95 % interval excludes 0.

# %%
pick_on = "validation" if val_split is not None else "test (as the paper; optimistic)"
pick_summ = (sel.improvement_summary(val_split.ev[val_split.ev.section == "findings"], metrics)
             if val_split is not None else summ["all"])
best = pick_summ.sort_values(key, ascending=False).iloc[0]
best_method, best_dist = f"{best.distance}+{best.aggregation}", best.distance
sig = compare.paired_table(sel.comparison_rows(split, best_method), n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)
save_table(sig, table_names.SELECTION_SIGNIFICANCE, cfg, protocol=protocol + "; paired bootstrap over studies", pick=pick_on)
print(f"best method: {best_method} (picked on {pick_on})")
sig[(sig.section == "findings") & (sig.metric == key)][["policy", "metric", "B", "value_a", "value_b", "diff",
                                                        "ci_low", "ci_high", "p_value"]].round(3)

# %% [markdown]
# Read `diff` (A - B) with its interval `ci_low`..`ci_high`: an interval that includes 0 means no difference is
# detected with this many test studies, whatever the sign of `diff`. Shown: the key metric on Findings; the
# clinical metrics and the Impression rows are in `results/05_significance.md`, and the conclusion at the end
# summarises every Findings metric.
#
# ## 8. Selection in embedding space (Fig. 2b)
# What does "closest to the bank" look like? One study of the first policy, the one whose candidates' distances
# spread widest under the best method: each dot is a whole report drawn at the mean of its sentence embeddings
# (Findings and Impression), projected to 2-D by a PCA fitted on the bank; the star is the chosen candidate. Two
# dimensions keep only part of the geometry, so the star need not look closest in the picture: the distance is
# computed between sets of sentences, not between these mean points.

# %%
p0 = next(iter(cands))
res0 = split.scores[p0]
i_m, j_m = res0.names.index(best_dist), res0.aggregations.index(best.aggregation)
tot = res0.total[i_m, j_m]
fin = np.isfinite(tot)  # unparseable candidates are +inf
width = np.where(fin.any(axis=1), np.where(fin, tot, -np.inf).max(axis=1) - np.where(fin, tot, np.inf).min(axis=1), -1.0)
study = int(np.argmax(width))  # the study whose candidates' distances spread widest
rows_k = slice(study * sc.n_candidates, (study + 1) * sc.n_candidates)
bank_mean = sel.mean_vectors(bank.sets("findings"), bank.sets("impression"))
cand_mean = sel.mean_vectors(split.sets[p0]["findings"][rows_k], split.sets[p0]["impression"][rows_k])
bank_xy, cand_xy = sel.pca_2d(bank_mean, cand_mean)
chosen = int(res0.chosen()[i_m, j_m, study])
with style():
    fig = plot_selection_space(bank_xy, cand_xy, chosen, title=f"{p0}, study {test[study].study_id}, {best_method}",
                               xlabel="PC 1 of the bank's mean sentence embeddings", ylabel="PC 2")
    save_fig(fig, "05_selection_space", cfg)
plt.show()

# %% [markdown]
# ## 9. Qualitative examples
# Numbers hide what the method prefers. For the `n_examples` studies with the widest spread of distances, the
# image, the reference, the chosen candidate and the most distant rejected one under the best method, each with
# its distance to the bank and its BERTScore F1 (Findings) against the reference. Read the texts for what the
# chosen one has that the rejected one lacks (or the reverse): shorter, more generic, more "normal"? Two examples
# show a tendency at best; the next section measures it.

# %%
from sdrlib.generation import load_images

bs = sel.pick_metrics(split.metrics[p0], "findings").get("BS-F1")
bs_v = bs.sample.reshape(-1, sc.n_candidates) if bs is not None and bs.sample is not None else np.full(tot.shape, np.nan)
for s_i in np.argsort(-width, kind="stable")[:n_examples]:
    rec = test[s_i]
    ch = int(res0.chosen()[i_m, j_m, s_i])
    rej = int(np.argmax(np.where(fin[s_i], tot[s_i], -np.inf)))  # the most distant parseable candidate
    with style():
        fig, ax = plt.subplots(figsize=(2.2, 2.2))
        ax.imshow(load_images(rec.image_paths, 1)[0], cmap="gray")
        ax.axis("off")
        ax.set_title(rec.study_id, fontsize=9)
    plt.show()
    print(f"REFERENCE  F: {rec.findings}\n           I: {rec.impression}")
    for tag, j in (("CHOSEN  ", ch), ("REJECTED", rej)):
        print(f"{tag} #{j}  distance {res0.total[i_m, j_m, s_i, j]:.4f}  BS-F1 {bs_v[s_i, j]:.3f}\n   {one_line(cands[p0][s_i][j])}")
    print()

# %% [markdown]
# When the chosen candidate is the more normal one (fewer findings than the rejected one, or none where the
# reference has some), that is what distance to the bank asks for, not a quirk of these studies: the bank is the
# training reports, many of them normal and most of their sentences normal statements, so a normal candidate
# lies close to many bank reports and a candidate stating a finding lies far from most. BS-F1 can still prefer the
# normal pick, since most sentences of any reference are normal statements too; the clinical metrics pay for the
# trade. Section 10 counts it over all test studies.

# %% [markdown]
# ## 10. Does bank selection pick normal reports? And the recall-weighted distance (ours)
# If most reports in the data are normal (the `references` column below gives their share among the test
# studies), a report close to the bank is plausibly a normal one. The first cell measures that instead of
# assuming it: the share of picks the offline labeler reads as normal (no pathology positive or uncertain,
# `sel.normal_flags`) for the references of the test studies, for random (the expected share over all K
# candidates), for the best method and its other aggregations, and for its MBR. If the bank methods sit above
# random while the references sit lower, selection is trading findings for typicality. An unparseable pick is
# left out (on smoke every candidate is, so only `references` has a value). Saved as
# `results/05_normal_share.csv`.

# %%
methods = [m for m in split.choices(p0) if m.startswith(f"{best_dist}+")] + [f"mbr:{best_dist}"]
normal = sel.normal_share_table(split, methods)
save_table(normal, table_names.NORMAL_SHARE, cfg, protocol=protocol, best_method=best_method, labeler="offline")
normal.pivot(index="policy", columns="method", values="normal_share").loc[list(cands), list(dict.fromkeys(normal.method))].round(2)

# %% [markdown]
# The counterpart of the reward that does not pay for silence (the profile's `chamfer_recall_<alpha>[_bal<w>]`,
# `sdrlib.rewards.methods.recall`; notebook 04's reward audit) is the same distance, `chamfer_recall_<alpha>`, an
# (asymmetric) family of the distance registry like any other: with each bank report as the reference (bank
# selection, min / avg / knn) or each other candidate (MBR), a candidate is far from a bank report whose findings
# it leaves out. It reads each sentence's finding presence, so it takes `presence=` as the negation-aware settings
# do. The cell reports Findings CheXpert-14 macro F1 (CXB-14) per policy for its methods, random (the exact
# expectation over the K candidates, the last row) and the standard Chamfer methods of section 2, saved as
# `results/05_selection_recall.md`.

# %%
from sdrlib.rewards import parse_reward

# the profile's trained recall reward (cpu: chamfer_recall_1_bal2) names its distance (the _bal weight scales
# rewards per reference during training and has no role in ranking one study's candidates)
rec_name = parse_reward(next((r for r in cfg.grpo.rewards if r.startswith("chamfer_recall_")), "chamfer_recall_0.8")).distance
rec_bank_pres = split_kw["bank_presence"]
rec_rows = []
for p in cands:
    p_pres = split.presence[p] if split.presence[p] is not None else sel.candidate_presence(cands[p], candidate_format=formats[p])
    rec_scores = sel.bank_distances(split.sets[p], bank, [rec_name], n_candidates=sc.n_candidates, study_ids=[r.study_id for r in test],
                                    aggregations=sc.aggregations, knn_k=sc.knn_k, presence=p_pres,
                                    bank_presence=rec_bank_pres, progress=None)
    rec_mbr = sel.mbr_scores(split.sets[p], [rec_name], n_candidates=sc.n_candidates, presence=p_pres)
    e = sel.evaluate_methods(sel.method_choices(rec_scores, rec_mbr), sel.pick_metrics(split.metrics[p], "findings", ["CXB-14"]),
                             sc.n_candidates, strata=split.strata(p))
    rec_rows.append(e.assign(policy=p, section="findings"))
rec_ev = pd.concat(rec_rows, ignore_index=True)
std = ev[(ev.section == "findings") & (ev.metric == "CXB-14") & (ev.method.str.startswith("chamfer+") | (ev.method == "mbr:chamfer"))]
rec_table = pd.concat([rec_ev[~rec_ev.method.isin(["random", "oracle", "first"])], std], ignore_index=True)
rec_table = rec_table[rec_table.stratum == "all"][["policy", "method", "value", "random", "improvement_pct", "oracle"]]
save_table(rec_table, table_names.SELECTION_RECALL, cfg, distance=rec_name)
rec_shown = rec_table.pivot_table(index="method", columns="policy", values="value", sort=False)
rec_shown.loc["random"] = rec_table.groupby("policy").random.first()  # the exact expectation over the K candidates
rec_shown.round(3)

# %% [markdown]
# Compare each `chamfer_recall_*` row with the `chamfer+` row of the same aggregation, and both with the `random`
# row: the recall-weighted distance should not pick the candidate that drops findings, so its CXB-14 should not fall
# below random where plain Chamfer's does. This is one sampling seed per policy and no bootstrap: a row above or
# below `random` is a higher or lower mean, not tested; read it as a direction to test, not as a result.
#
# ## Conclusion
# The cell below reads this notebook's result files back (`05_headline_findings_val` or `05_headline_findings`,
# `05_significance`, `05_normal_share`) and writes one sentence per finding with `sdrlib.experiments.claims.
# selection_conclusion`. A comparison is called "above" or "below" only under the project's rule
# (`sdrlib.metrics.verdict.family_directions`): the rows of `05_significance` are one family, Holm-corrected, and a
# row needs its corrected p below 0.05 and its paired bootstrap's 95 % interval excluding 0; everything else reads
# "no difference detected at this size", which on a small profile is the expected answer, not evidence that
# selection does nothing. The best-setting lines give higher or lower means than random, not tested.

# %% tags=["conclusion"]
from sdrlib.experiments.claims import selection_conclusion

print("\n".join(selection_conclusion(cfg.results_dir)) or "no result files of notebook 05 found")
