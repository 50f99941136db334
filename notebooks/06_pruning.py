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
# # 06 · Pruning candidates while they are decoded
# **The question.** Best-of-K selection (notebook 05) pays for K full reports and keeps one. If the set distance
# to the training bank can already tell a poor candidate after its first sentences, can we stop decoding the
# poor ones early, generate far fewer tokens, and still keep a report as good as the one full best-of-K picks?
#
# This is Algorithm 1 of the paper (sec. 5.1, app. G): K candidates decode sentence by sentence, and after each
# sentence the worst fraction p by distance to the training bank stops decoding, until one survives. The
# notebook compares it with random selection and with the standard best-of-K pipeline (K full generations,
# then selection) on report quality, generated tokens and wall-clock, and ends with a conclusion written from
# its own result files (section 9).
#
# What it can and cannot show: one sampling seed per policy and a few test studies (`pruning.n_test`), so the
# quality comparisons are paired bootstraps over studies, and a difference counts only under the project's rule
# (each table's rows one family, Holm-corrected p below 0.05 and the 95 % interval excluding 0). Token counts are
# exact; wall-clock depends on the machine.

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
overrides: dict = {}  # dotted profile keys to values, e.g. {"grpo.max_steps": 10} (run_all.sh --set KEY=VALUE)
n_examples: int = 1  # pruning traces printed at the end

# %%
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sdrlib import pruning as pr, selection as sel
from sdrlib import table_names
from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.embedding import ReportBank, SentenceEmbedder
from sdrlib.experiments import pruning_checks as checks
from sdrlib.experiments import tables as compare
from sdrlib.generation import load_images
from sdrlib.metrics.suite import TemplateFormatWarning, metric_kwargs
from sdrlib.plots import plot_pruning_sweep, result_ci, style
from sdrlib.results import save_fig, save_table
from sdrlib.rewards import reward_label
from sdrlib.training import load_policy, policy_dir
from sdrlib.utils import one_line, quiet, set_seed

# %% [markdown]
# ## 0. Setup
# The bank is the training reports, subsampled at random to `selection.bank_size` as in notebook 05, so that a
# partial report is judged by the same distance that full selection uses. One `BankScorer` per distance setting
# (`pruning.names`) scores partial reports against it; `PruneParams` holds K, p, the warm-up `wu` (sentences
# decoded together before the first cut) and the cap on tokens per sentence. The policies are the ones
# notebooks 03 and 04 trained; the cell stops if one is missing. The printed line is the run's whole design:
# check K, p and wu there before reading any table.

# %%
cfg = load_profile(profile, overrides)
pc = cfg.pruning
set_seed(cfg.seed)
quiet()  # no raw progress bars (transformers "Loading weights", datasets, hub downloads)
test = load_split(cfg, "test")
test = test[: pc.n_test] if pc.n_test else test
emb = SentenceEmbedder.from_config(cfg)
bank = ReportBank.load(cfg.cache_dir / "banks" / f"{cfg.name}_train", expected_encoder_id=emb.encoder_id)
bank = sel.sample_bank(bank, cfg.selection.bank_size, cfg.seed)  # drawn at random, as notebook 05
params = pr.PruneParams(n_candidates=pc.n_candidates, p=pc.p, warmup=pc.warmup, min_sentences=pc.min_sentences,
                        sentence_token_cap=pc.sentence_token_cap)
scorers = checks.bank_scorers(bank, emb, pc.names, pc.aggregation, knn_k=cfg.selection.knn_k,
                              device=cfg.distances.device)
dirs = {k: policy_dir(cfg, k) for k in pc.policies}
checks.require_policies(dirs, cfg.name)
temp, max_new = cfg.sft.eval_temperature, cfg.sft.max_new_tokens
print(cfg.name, params, f"N={len(bank)} bank reports, {len(test)} test studies, aggregation {pc.aggregation}, "
      f"temperature {temp}, max_new_tokens {max_new}; live: {pc.live_names}, replayed: "
      f"{[n for n in pc.names if n not in pc.live_names]}; policies: {list(dirs)}")

# %% [markdown]
# ## 1. Standard best-of-K and live pruning, side by side
# Per policy and study: the K full generations (candidate j sampled with seed `seed + j`, one batch, KV cache) and,
# for each setting in `pruning.live_names`, Algorithm 1 decoding live with the same decoder and seeds. Because the
# seeds are per candidate, a pruned candidate's tokens are a prefix of its full generation and the survivor is
# one of the K standard candidates: the two pipelines differ only in which candidate they keep and in how much
# they decode, which is what makes the later comparisons paired. Both are timed per study in this process, one
# after the other.
#
# A partial report is scored on its first t sentences over the sections every candidate has begun (Findings until
# all reach the Impression; `sdrlib.pruning.partial_totals` says why: scoring an unbegun Impression as empty would
# drop the candidates with the longest Findings first). A policy that writes fewer than
# `pruning.min_template_share` of its candidates (0.5; smoke: 0) on the `<think>/<answer>` template stops the
# notebook here: every metric of such text is 0, so the tables below would compare zeros. The output is one
# timing line per policy, then the template table: how many of each policy's S x K candidates parse as the
# template, and the start of the first that does not (the smoke profile's untrained policies write none).

# %%
std, live = {}, {}
for name, path in dirs.items():
    label = reward_label(name)
    model, processor = load_policy(cfg, path)
    std[label], live[label] = [], {n: [] for n in pc.live_names}
    t0 = time.perf_counter()
    for r in test:
        imgs = load_images(r.image_paths, cfg.sft.max_images)
        std[label].append(pr.generate_standard(model, processor, imgs, pc.n_candidates, seed=cfg.seed, temperature=temp,
                                               max_new_tokens=max_new))
        for n in pc.live_names:
            live[label][n].append(pr.prune_live(model, processor, imgs, scorers[n], params, seed=cfg.seed,
                                                temperature=temp, max_new_tokens=max_new))
    print(f"{label}: {len(test)} studies, standard + {len(pc.live_names)} live setting(s) in "
          f"{time.perf_counter() - t0:.0f} s")
    del model, processor
# off-template text scores as an empty report: refuse before any table (sdrlib.experiments.pruning_checks)
checks.require_template({label: [s.texts for s in runs] for label, runs in std.items()},
                        min_share=pc.min_template_share)

# %% [markdown]
# ## 2. Live vs replay
# Live decoding needs the model in the loop. Replay runs the same rounds over the finished standard candidates
# (their sampled token ids, decoded prefix by prefix), which is how one would prune an API model's answers after
# the fact and how section 6 sweeps p and wu cheaply. Replay is only trustworthy if it makes live decoding's
# decisions, so the table counts, per policy and live setting, the studies where the two agree: same survivor,
# same tokens per candidate, survivor text equal to its standard text, live tokens a prefix of the standard ones.
# Two weaker replays are counted too: re-encoding the text with the policy's tokenizer (what an API model's
# replay would do; a sample need not be the tokenizer's canonical split) and a word-level proxy.
#
# What to look at: every count should equal `studies`. A smaller count in the first four columns is a decoder
# bug; in the last two, the price of not having the sampled ids.

# %%
tok = load_policy(cfg, next(iter(dirs.values())))[1].tokenizer  # the same tokenizer for every policy
rep = {label: {n: [pr.replay_prune(s.texts, scorers[n], params, tokenizer=tok, token_ids=s.ids) for s in runs]
               for n in pc.names} for label, runs in std.items()}
agree = checks.live_vs_replay_table(std, live, rep, scorers, params, tok)
save_table(agree, table_names.LIVE_VS_REPLAY, cfg)
agree

# %% [markdown]
# ## 3. Tokens (Tables 4 / 29, token columns)
# Generated tokens per study: the standard pipeline's K full generations, pruning's (every candidate until it
# was dropped, plus the survivor to its end), the survivor alone, and the share saved. Live settings use the
# live counts, the others the replayed counts on the same token ids (equal, by section 2). Pruning never
# decodes a token the standard pipeline would not (`sdrlib.pruning`, token accounting), so `tokens saved %`
# cannot be negative; how large it is
# depends on how early the first cut comes (wu) and how many it drops (p).

# %%
pruned = {label: {n: live[label].get(n, rep[label][n]) for n in pc.names} for label in std}
tokens = checks.token_table(std, pruned, pc.live_names, params)
save_table(tokens, table_names.PRUNING_TOKENS, cfg)
tokens.round({"standard tokens / study": 0, "pruning tokens / study": 0, "survivor tokens / study": 0,
              "tokens saved %": 1, "rounds / study": 1})

# %% [markdown]
# ## 4. Quality: Random vs Standard vs Pruning (Tables 4 / 29)
# Every standard candidate is scored once against its reference (the metric suite of notebook 03). Standard picks
# the candidate with the smallest full-report distance to the bank (notebook 05's rule, same setting and
# aggregation), Pruning picks the survivor, Random is the exact expectation over the K candidates. Since all
# three choose among the same K texts, the table isolates the choice. The printed view has one column per policy
# and setting and one row per metric value, rounded to 3 decimals (tokens saved are in section 3); metrics the
# suite could not compute are named above it. Full tables: `06_pruning_findings` and `06_pruning_impression` (per-method rows in `06_methods`).

# %%
t0 = time.perf_counter()
with warnings.catch_warnings():  # off-template candidates: counted by the template table of section 1
    warnings.simplefilter("ignore", TemplateFormatWarning)
    mscores = {label: sel.score_candidate_metrics([s.texts for s in runs], test, **metric_kwargs(cfg))
               for label, runs in std.items()}
print(f"metrics: {time.perf_counter() - t0:.0f} s")

# %% [markdown]
# Then the choices: per policy and setting, the standard pick (full-report distance to the bank) and the pruning
# survivor, one candidate index per study, and the corpus value of each method next to random
# (`sdrlib.selection.evaluate_methods`). Only the choice differs between the columns of the view below.

# %%
per_section = {label: {s: sel.pick_metrics(mscores[label], s) for s in ("findings", "impression")} for label in std}
choices, evs = {}, []
for label, runs in std.items():
    full = sel.score_candidates([s.texts for s in runs], bank, emb, pc.names, aggregations=[pc.aggregation],
                                knn_k=cfg.selection.knn_k, progress=None, device=cfg.distances.device)
    choices[label] = {f"{method}:{n}": full.chosen()[i, 0] if method == "standard" else
                      np.array([q.survivor for q in pruned[label][n]])
                      for i, n in enumerate(pc.names) for method in ("standard", "pruning")}
    evs += [sel.evaluate_methods(choices[label], m, pc.n_candidates).assign(policy=label, section=s)
            for s, m in per_section[label].items()]
ev = pd.concat(evs, ignore_index=True)
metrics = [m for m in sel.HEADLINE_METRICS if m in set(ev.metric)]
missing = sel.not_computed(next(iter(mscores.values())), "findings")  # saved as columns "not computed: <why>"
save_table(ev, table_names.PRUNING_METHODS, cfg)
tables = {s: checks.quality_table(ev, tokens, metrics, s, missing=missing) for s in ("findings", "impression")}
for s, t in tables.items():
    save_table(t, table_names.pruning_section(s), cfg, protocol=f"{len(test)} test studies, K = {pc.n_candidates} candidates per study, one sampling seed per policy")
view, gone = checks.quality_view(tables["findings"])
print("not computed:", ", ".join(gone) or "none")
view

# %% [markdown]
# The same for the Impression section. On a collapsed policy (section 5b) the three columns coincide: there is
# nothing to choose between.

# %%
checks.quality_view(tables["impression"])[0]

# %% [markdown]
# ## 5. Pruning vs standard: paired bootstrap
# The tables above give point values; whether the survivor is worse than the standard pick needs a test. Per
# policy, setting, metric and section, the difference pruning - standard over the same test studies, with a
# 95 % paired bootstrap interval and p (`sdrlib.experiments.tables.paired_table`); `same pick %` is the share of
# studies where both chose the same candidate (there the difference is 0 by construction). Shown: the Findings
# rows of the live setting(s) for the headline metrics; every row is in `06_pruning_vs_standard`. Read the
# interval, not the sign of `diff`: an interval that includes 0 is "no difference detected at this size".

# %%
sig = compare.paired_table(checks.versus_standard(choices, per_section, pc.names, pc.n_candidates),
                           n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)
protocol = (f"{len(test)} test studies, K = {pc.n_candidates} candidates per study from one sampling seed ({cfg.seed}) per policy; "
            "paired bootstrap over studies (one run per policy: no seeds to test over)")
save_table(sig, table_names.PRUNING_VS_STANDARD, cfg, protocol=protocol)
shown = list(pc.live_names) or list(pc.names[:1])  # every setting is in the saved tables
rows = (sig.section == "findings") & sig.distance.isin(shown) & sig.metric.isin(["BS-F1", "CXB-14", "clin-F1 (sample)", "RG-F1"])
sig.loc[rows, ["policy", "metric", "distance", "value_a", "value_b", "diff", "ci_low", "ci_high", "p_value",
               "same pick %"]].round(3).round({"same pick %": 0})

# %% [markdown]
# ## 5b. The paper's other comparisons: random, the standard pick, collapsed policies
# Three checks the paper's pruning claims rest on (`sdrlib.experiments.pruning_checks`), each a table and the
# sentences written from it:
#
# - **pruning vs random**: the survivors against the exact random expectation over the same K candidates, paired
#   per study (bootstrap over studies), per metric; the paper reports that pruning beats random in all metrics.
#   The sentence counts the signs of the differences and names those with p < 0.05; a sign alone is not a
#   result at this size;
# - **survivor = standard pick**: how often pruning keeps the candidate standard best-of-K picks with the same
#   setting, against 1/K, the rate of two independent random picks (exact binomial test). A rate well above
#   1/K would suggest that the partial reports already carry the ranking of the full ones;
# - **collapsed policies**: the share of studies whose K candidates carry the same positive CheXpert-14 labels
#   (offline labeler) or the same text; there, no choice among the candidates changes the clinical content.
#
# The sentences cover the live setting(s); the saved tables (`06_pruning_vs_random`,
# `06_survivor_vs_standard_pick`, `06_candidate_collapse`) have every setting.

# %%
vs_random = compare.paired_table(checks.versus_random(choices, per_section, pc.names, pc.n_candidates),
                                 n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)
save_table(vs_random, table_names.PRUNING_VS_RANDOM, cfg)
print("\n".join(checks.random_verdicts(vs_random[vs_random.distance.isin(shown)])))

# %%
agreement = checks.agreement_table(choices, pc.names, pc.n_candidates)
save_table(agreement, table_names.SURVIVOR_VS_STANDARD_PICK, cfg)
print("\n".join(checks.agreement_sentences(agreement[agreement.distance.isin(shown)])))

# %%
collapse = checks.collapse_table({label: [s.texts for s in runs] for label, runs in std.items()})
save_table(collapse, table_names.CANDIDATE_COLLAPSE, cfg)
print("\n".join(checks.collapse_warnings(collapse)))

# %% [markdown]
# ## 6. Quality vs tokens across p and warm-up (replay)
# Replay over the same token ids makes the sweep cheap: every (p, wu) for every setting, each policy; x is the
# share of tokens saved against the K full generations, y the Findings BERTScore F1 of the survivors (the
# dashed lines: standard selection and random, per policy). Bars and the grey band are 95 % bootstrap intervals
# over the studies: with this few studies, most differences between settings are inside them. Larger p and
# smaller wu move points right (more saved); whether they also move down is what the figure asks.
#
# The sweep is descriptive and runs on the test studies: the p and wu of Tables 4 / 29 and of the tests above
# are fixed by the profile (`pruning.p`, `pruning.warmup`; the paper's p = 0.5), not picked here. A "best"
# (p, wu) read off this figure would be picked on the test set (optimistic); pick it on validation studies
# before quoting it. Full grid: `06_sweep`.

# %%
key = "BS-F1" if "BS-F1" in metrics else metrics[0]
sweep = checks.sweep_table(
    std, {label: per_section[label]["findings"][key] for label in std},
    {label: {n: choices[label][f"standard:{n}"] for n in pc.names} for label in std}, scorers, params,
    pc.sweep_p, pc.sweep_warmup, key=key, tokenizer=tok,
    ci=lambda r: result_ci(r, n_resamples=cfg.metrics.bootstrap, seed=cfg.seed))
save_table(sweep, table_names.PRUNING_SWEEP, cfg, protocol=f"{len(test)} test studies, K = {pc.n_candidates}, replayed pruning",
           pick="none (descriptive sweep on test; Tables 4 / 29 use the profile's p and wu)")
with style():  # one panel per policy x distance; distances that picked alike share a panel; 95 % CIs over studies
    fig = plot_pruning_sweep(sweep, key, n_candidates=pc.n_candidates, n_studies=len(test))
    save_fig(fig, "06_quality_vs_tokens", cfg)
plt.show()

# %% [markdown]
# ## 7. Wall-clock per study
# Generated tokens are what a metered API charges; wall-clock is what a local user pays, and the two need not
# move together. Live pruning and the standard K full generations are timed per study in this process (same
# decoder, same seeds; the standard time excludes selection, pruning's includes its scoring). Pruning saves
# work on the dropped rows, but each round waits for its slowest sentence (rows that finished theirs are fed pad
# tokens) and the survivor decodes alone to its end, so it can need more forward passes than the K full
# generations decoded as one batch (the two `forwards / study` columns count them), plus the bank scoring.
# So compare the two ratios: a token ratio below 1 with a wall-clock ratio above 1 means pruning is
# cheaper to meter and slower to run here. Seconds are rounded to 0.01, ratios to 0.01; timings change from run
# to run (`06_wallclock`).

# %%
wall = checks.wallclock_table(std, live)
save_table(wall, table_names.PRUNING_WALLCLOCK, cfg)
wall.round(2)

# %% [markdown]
# ## 8. One pruning trace
# To see the algorithm rather than its totals: the rounds of the first live setting on the first study of the
# first policy. Each round lists the active candidates, how many complete sentences each has, their partial-report
# scores (distance to the bank, lower is kept) and which were dropped; then the survivor's text, whole, and the
# reference. Look for whether the dropped candidates' scores are clearly worse or a near tie decided by noise.

# %%
label0, n0 = next(iter(std)), pc.live_names[0] if pc.live_names else pc.names[0]
for i in range(min(n_examples, len(test))):
    q = pruned[label0][n0][i]
    print(f"study {test[i].study_id}: tokens per candidate {q.tokens}, survivor #{q.survivor}")
    for rd in q.rounds:
        print(f"  round t={rd['t']}: active {rd['active']} sentences {rd['sentences']} scores "
              f"{[round(x, 3) for x in rd['scores']]} -> dropped {rd['dropped']}")
    print("  SURVIVOR:", one_line(q.survivor_text))
    print("  REFERENCE F:", test[i].findings, "| I:", test[i].impression)

# %% [markdown]
# If the survivor is a normal report while the reference states a finding, the trace shows why: every round keeps
# the partial reports closest to the training bank (the reference is unknown while decoding), and the first
# sentences of a report are mostly normal statements, so the scores of a round can lie close together and the
# most typical candidate survives. Pruning inherits best-of-K selection's preference for typical, normal text
# (notebook 05, section 10) and decides earlier, on less text; how often its survivor is standard best-of-K's pick
# is in `06_survivor_vs_standard_pick` (section 5b).

# %% [markdown]
# ## 9. What the numbers say
# The sentences below are written by `sdrlib.experiments.pruning_checks.conclusion_lines` from the files this
# notebook saved (each sentence names its file), for the live setting(s). A direction ("above", "below") is
# stated only under the project's rule (`sdrlib.metrics.verdict.family_directions`: the rows of each table one
# family, Holm-corrected p below 0.05 and the 95 % paired-bootstrap interval excluding 0; for the survivor =
# standard pick rate, the binomial p < 0.05); otherwise the sentence says "no difference detected at this size". Token counts are exact;
# the wall-clock part is one timing of this run.

# %% tags=["conclusion"]
print("\n".join("- " + s for s in checks.conclusion_lines(cfg.results_dir, metric=key)))
