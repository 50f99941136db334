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
# Algorithm 1 of the paper (sec. 5.1, app. G): K candidates decode sentence by sentence, and after each sentence
# the worst fraction p by distance to the training bank stops decoding, until one survives. Compared with random
# and with the standard best-of-K pipeline (K full generations, then selection) on quality, generated tokens
# and wall-clock.

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
n_examples: int = 1  # pruning traces printed at the end

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sdrlib import pruning as pr, selection as sel
from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.embedding import ReportBank, SentenceEmbedder
from sdrlib.experiments import posttrain, pruning_checks as checks
from sdrlib.experiments import tables as compare
from sdrlib.generation import load_images
from sdrlib.metrics.suite import metric_kwargs
from sdrlib.plots import plot_pruning_sweep, result_ci, style
from sdrlib.results import save_fig, save_table
from sdrlib.training import load_policy, policy_dir
from sdrlib.utils import quiet, set_seed

cfg = load_profile(profile)
pc = cfg.pruning
set_seed(cfg.seed)
quiet()  # no raw progress bars (transformers "Loading weights", datasets, hub downloads)
test = load_split(cfg, "test")
test = test[: pc.n_test] if pc.n_test else test
emb = SentenceEmbedder.from_config(cfg)
bank = ReportBank.load(cfg.cache_dir / "banks" / f"{cfg.name}_train", expected_encoder_id=emb.encoder_id)
bank = sel.sample_bank(bank, cfg.selection.bank_size, cfg.seed)  # drawn at random, as notebook 05
params = pr.PruneParams(k=pc.k, p=pc.p, warmup=pc.warmup, min_sentences=pc.min_sentences,
                        sentence_token_cap=pc.sentence_token_cap)
scorers = {n: pr.BankScorer(bank, emb, n, pc.aggregation, knn_k=cfg.selection.knn_k, device=cfg.distances.device)
           for n in pc.names[:1]}
for n in pc.names[1:]:
    scorers[n] = scorers[pc.names[0]].for_distance(n)
dirs = {k: policy_dir(cfg, k) for k in pc.policies}
missing = {k: str(v) for k, v in dirs.items() if not v.is_dir()}
if missing:
    raise pr.PruningError(f"policies not found: {missing}; run notebooks 03 (SFT) and 04 (GRPO) on profile "
                          f"{cfg.name!r} first")
temp, max_new = cfg.sft.eval_temperature, cfg.sft.max_new_tokens
print(cfg.name, params, f"N={len(bank)} bank reports, {len(test)} test studies, aggregation {pc.aggregation}, "
      f"temperature {temp}, max_new_tokens {max_new}; live: {pc.live_names}, replayed: "
      f"{[n for n in pc.names if n not in pc.live_names]}; policies: {list(dirs)}")

# %% [markdown]
# ## 1. Standard best-of-K and live pruning, side by side
# Per policy and study: the K full generations (candidate j sampled with seed `seed + j`, one batch, KV cache) and,
# for each setting in `pruning.live_names`, Algorithm 1 decoding live with the same decoder and seeds, so a
# pruned candidate's tokens are a prefix of its full generation and the survivor is one of the K standard
# candidates. Both are timed per study in this process, one after the other. A partial report is scored on its
# first t sentences over the sections every candidate has begun (Findings until all reach the Impression;
# `sdrlib.pruning.partial_totals` says why).
# A policy that writes fewer than `pruning.min_template_share` of its candidates (0.5; smoke: 0) on the
# `<think>/<answer>` template stops the notebook here:
# every metric of such text is 0, so the tables below would compare zeros.

# %%
std, live = {}, {}
for name, path in dirs.items():
    label = posttrain.config_label(name)
    model, processor = load_policy(cfg, path)
    std[label], live[label] = [], {n: [] for n in pc.live_names}
    t0 = time.perf_counter()
    for r in test:
        imgs = load_images(r.image_paths, cfg.sft.max_images)
        std[label].append(pr.generate_standard(model, processor, imgs, pc.k, seed=cfg.seed, temperature=temp,
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
# Replay runs the same rounds over the finished standard candidates (their sampled token ids, decoded prefix by
# prefix). It must choose the same survivor as live decoding and count the same tokens; it also gives the
# settings not decoded live, and with the policy's tokenizer re-encoding the text (what an API model's replay
# would do) or a word-level proxy.

# %%
tok = load_policy(cfg, next(iter(dirs.values())))[1].tokenizer  # the same tokenizer for every policy
rep, agree_rows = {}, []
for label, runs in std.items():
    rep[label] = {n: [pr.replay_prune(s.texts, scorers[n], params, tokenizer=tok, token_ids=s.ids) for s in runs]
                  for n in pc.names}
    for n in pc.live_names:
        lv, rp = live[label][n], rep[label][n]
        agree_rows.append({
            "policy": label, "distance": n, "studies": len(lv),
            "same survivor": sum(a.survivor == b.survivor for a, b in zip(lv, rp)),
            "same tokens per candidate": sum(a.tokens == b.tokens for a, b in zip(lv, rp)),
            "survivor text = its standard text": sum(a.survivor_text == s.texts[a.survivor] for a, s in zip(lv, runs)),
            "pruned tokens are a prefix": sum(all(s.ids[j][:len(a.meta["ids"][j])] == a.meta["ids"][j]
                                                  for j in range(pc.k)) for a, s in zip(lv, runs)),
            "same survivor, re-encoded text": sum(
                a.survivor == pr.replay_prune(s.texts, scorers[n], params, tokenizer=tok, eos=s.eos).survivor
                for a, s in zip(lv, runs)),
            "same survivor, word proxy": sum(
                a.survivor == pr.replay_prune(s.texts, scorers[n], params, eos=s.eos).survivor
                for a, s in zip(lv, runs))})
agree = pd.DataFrame(agree_rows)
save_table(agree, "06_live_vs_replay", cfg)
agree

# %% [markdown]
# ## 3. Tokens (Tables 4 / 29, token columns)
# Generated tokens per study: the standard pipeline's K full generations, pruning's (every candidate until it
# was dropped, plus the survivor to its end), the survivor alone, and the share saved. Live settings use the
# live counts, the others the replayed counts on the same token ids.

# %%
def pruned_runs(label, n):
    return live[label][n] if n in live[label] else rep[label][n]


tok_rows = []
for label, runs in std.items():
    for n in pc.names:
        pruned = pruned_runs(label, n)
        tok_rows.append({
            "policy": label, "distance": n, "wu": pc.warmup, "p": pc.p, "source": "live" if n in live[label] else "replay",
            "standard tokens / study": np.mean([s.total_tokens for s in runs]),
            "pruning tokens / study": np.mean([q.total_tokens for q in pruned]),
            "survivor tokens / study": np.mean([q.survivor_tokens for q in pruned]),
            "tokens saved %": pr.tokens_saved_pct([q.total_tokens for q in pruned], [s.total_tokens for s in runs]),
            "rounds / study": np.mean([len(q.rounds) for q in pruned])})
tokens = pd.DataFrame(tok_rows)
save_table(tokens, "06_tokens", cfg)
tokens.round(2)

# %% [markdown]
# ## 4. Quality: Random vs Standard vs Pruning (Tables 4 / 29)
# Every standard candidate is scored once against its reference; Standard picks the candidate with the smallest
# full-report distance to the bank (notebook 05's rule, same setting and aggregation), Pruning picks the
# survivor, Random is the exact expectation over the K candidates.

# %%
t0 = time.perf_counter()
mscores = {label: sel.score_candidate_metrics([s.texts for s in runs], test, **metric_kwargs(cfg))
           for label, runs in std.items()}
print(f"metrics: {time.perf_counter() - t0:.0f} s")
choices, evs = {}, []
for label, runs in std.items():
    full = sel.score_candidates([s.texts for s in runs], bank, emb, pc.names, aggregations=[pc.aggregation],
                                knn_k=cfg.selection.knn_k, progress=None, device=cfg.distances.device)
    ch = {}
    for i, n in enumerate(pc.names):
        ch[f"standard:{n}"] = full.chosen()[i, 0]
        ch[f"pruning:{n}"] = np.array([q.survivor for q in pruned_runs(label, n)])
    choices[label] = ch
    for section in ("findings", "impression"):
        ev = sel.evaluate_methods(ch, sel.pick_metrics(mscores[label], section), pc.k)
        evs.append(ev.assign(policy=label, section=section))
ev = pd.concat(evs, ignore_index=True)
metrics = [m for m in sel.HEADLINE_METRICS if m in set(ev.metric)]
missing = sel.not_computed(next(iter(mscores.values())), "findings")  # shown as columns "not computed: <why>"
save_table(ev, "06_methods", cfg)


def quality_table(section):
    d = ev[(ev.section == section) & (ev.stratum == "all")]
    rows = []
    for (label, n), _ in tokens.groupby(["policy", "distance"], sort=False):
        row = {"policy": label, "distance": n, "wu": pc.warmup,
               "tok-save %": float(tokens[(tokens.policy == label) & (tokens.distance == n)]["tokens saved %"].iloc[0])}
        for m in metrics:
            g = d[(d.policy == label) & (d.metric == m)]
            row[(m, "random")] = float(g.random.iloc[0])
            row[(m, "standard")] = float(g[g.method == f"standard:{n}"].value.iloc[0])
            row[(m, "pruning")] = float(g[g.method == f"pruning:{n}"].value.iloc[0])
        rows.append(row)
    t = pd.DataFrame(rows)
    t.columns = [c if isinstance(c, str) else f"{c[0]} {c[1]}" for c in t.columns]
    for m, why in missing.items():
        t[m] = why
    return t


tables = {s: quality_table(s) for s in ("findings", "impression")}
for s, t in tables.items():
    save_table(t, f"06_pruning_{s}", cfg, protocol=f"{len(test)} test studies, K = {pc.k} candidates per study, one sampling seed per policy")


def show(t):
    """Transposed (one column per policy and distance, one row per value); metrics not computed named once."""
    gone = [c for c in t.columns if t[c].astype(str).str.startswith("not computed").all()]
    if gone:
        print("not computed (columns of the saved table):", ", ".join(gone))
    return t.drop(columns=gone).round(3).T


show(tables["findings"])

# %%
show(tables["impression"])

# %% [markdown]
# ## 5. Pruning vs standard: paired bootstrap
# Per policy, setting and metric (Findings and Impression): the difference pruning - standard over the same
# test studies, with a 95 % paired bootstrap interval (`sdrlib.experiments.tables.paired_table`).

# %%
def comparisons():
    for label in std:
        for section in ("findings", "impression"):
            for m, r in sel.pick_metrics(mscores[label], section).items():
                for n in pc.names:
                    pruned, standard = choices[label][f"pruning:{n}"], choices[label][f"standard:{n}"]
                    yield ({"policy": label, "section": section, "metric": m, "distance": n, "A": "pruning",
                            "B": "standard"},
                           sel.selected_result(r, pruned, pc.k), sel.selected_result(r, standard, pc.k),
                           {"same pick %": 100 * np.mean(pruned == standard)})


sig = compare.paired_table(comparisons(), n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)
protocol = (f"{len(test)} test studies, K = {pc.k} candidates per study from one sampling seed ({cfg.seed}) per policy; "
            "paired bootstrap over studies (one run per policy: no seeds to test over)")
save_table(sig, "06_pruning_vs_standard", cfg, protocol=protocol)
sig[(sig.section == "findings") & sig.metric.isin(["BS-F1", "CXB-14", "clin-F1 (sample)", "RG-F1"])].round(4)

# %% [markdown]
# ## 5b. The paper's other comparisons: random, the standard pick, collapsed policies
# Three checks the paper's pruning claims rest on (`sdrlib.experiments.pruning_checks`), each a table and the
# sentences written from it:
#
# - **pruning vs random**: the survivors against the exact random expectation over the same K candidates, paired
#   per study (bootstrap over studies), per metric; the paper reports that pruning beats random in all metrics;
# - **survivor = standard pick**: how often pruning keeps the candidate standard best-of-K picks with the same
#   setting, against 1/K, the rate of two independent random picks (exact binomial test);
# - **collapsed policies**: the share of studies whose K candidates carry the same positive CheXpert-14 labels
#   (offline labeler) or the same text; there, no choice among the candidates changes the clinical content.

# %%
per_section = {label: {s: sel.pick_metrics(mscores[label], s) for s in ("findings", "impression")} for label in std}
vs_random = compare.paired_table(checks.versus_random(choices, per_section, pc.names, pc.k),
                                 n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)
save_table(vs_random, "06_pruning_vs_random", cfg)
shown = list(pc.live_names) or list(pc.names[:1])  # every setting is in the saved table
print("\n".join(checks.random_verdicts(vs_random[vs_random.distance.isin(shown)])))

# %%
agreement = checks.agreement_table(choices, pc.names, pc.k)
save_table(agreement, "06_survivor_vs_standard_pick", cfg)
print("\n".join(checks.agreement_sentences(agreement)))

# %%
collapse = checks.collapse_table({label: [s.texts for s in runs] for label, runs in std.items()})
save_table(collapse, "06_candidate_collapse", cfg)
print("\n".join(checks.collapse_warnings(collapse)))

# %% [markdown]
# ## 6. Quality vs tokens across p and warm-up (replay)
# Replay over the same token ids makes the sweep cheap: every (p, wu) for every setting, each policy; x is the
# share of tokens saved against the K full generations, y the Findings BERTScore F1 of the survivors (the
# dashed lines: standard selection and random, per policy). Bars and the grey band are 95 % bootstrap intervals over
# the studies: with this few studies, most differences between settings are inside them. The sweep is descriptive and
# runs on the test studies: the p and wu of Tables 4 / 29 and of the tests above are fixed by the profile
# (`pruning.p`, `pruning.warmup`; the paper's p = 0.5), not picked here. A "best" (p, wu) read off this figure would be
# picked on the test set (optimistic); pick it on validation studies before quoting it.

# %%
key = "BS-F1" if "BS-F1" in metrics else metrics[0]
sweep_rows = []
for label, runs in std.items():
    r_key = sel.pick_metrics(mscores[label], "findings")[key]
    for n in pc.names:
        for p in pc.sweep_p:
            for wu in pc.sweep_warmup:
                prm = pr.with_params(params, p=p, warmup=wu)
                q = [pr.replay_prune(s.texts, scorers[n], prm, tokenizer=tok, token_ids=s.ids) for s in runs]
                surv = np.array([x.survivor for x in q])
                res, std_res = sel.selected_result(r_key, surv, pc.k), sel.selected_result(r_key, choices[label][f"standard:{n}"], pc.k)
                sweep_rows.append({"policy": label, "distance": n, "p": p, "wu": wu,
                                   "tokens saved %": pr.tokens_saved_pct([x.total_tokens for x in q],
                                                                         [s.total_tokens for s in runs]),
                                   key: res.corpus, "standard": std_res.corpus,
                                   "random": sel.selected_result(r_key, "random", pc.k).corpus,
                                   # 95 % bootstrap intervals over the studies, for the figure's error bars
                                   **dict(zip((f"{key} lo", f"{key} hi"), result_ci(res, n_resamples=cfg.metrics.bootstrap, seed=cfg.seed))),
                                   **dict(zip(("standard lo", "standard hi"), result_ci(std_res, n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)))})
sweep = pd.DataFrame(sweep_rows)
save_table(sweep, "06_sweep", cfg, protocol=f"{len(test)} test studies, K = {pc.k}, replayed pruning",
           pick="none (descriptive sweep on test; Tables 4 / 29 use the profile's p and wu)")

with style():  # one panel per policy x distance; distances that picked alike share a panel; 95 % CIs over studies
    fig = plot_pruning_sweep(sweep, key, k=pc.k, n_studies=len(test))
    save_fig(fig, "06_quality_vs_tokens", cfg)
plt.show()

# %% [markdown]
# ## 7. Wall-clock per study
# Live pruning and the standard K full generations, timed per study in this process (same decoder, same seeds;
# the standard time excludes selection, pruning's includes its scoring). Generated tokens are what a metered
# API charges; wall-clock is what a local user pays: pruning saves forward work on the dropped rows but keeps
# one forward per token of its slowest sentence in each round and of the survivor.

# %%
wall_rows = []
for label, runs in std.items():
    for n in pc.live_names:
        lv = live[label][n]
        s_std, s_pr = np.array([s.seconds for s in runs]), np.array([q.seconds for q in lv])
        wall_rows.append({"policy": label, "distance": n, "standard s / study": s_std.mean(),
                          "pruning s / study": s_pr.mean(), "wall-clock ratio (pruning / standard)": s_pr.sum() / s_std.sum(),
                          "standard forwards / study": np.mean([s.meta["forwards"] for s in runs]),
                          "pruning forwards / study": np.mean([q.meta["forwards"] for q in lv]),
                          "token ratio (pruning / standard)": sum(q.total_tokens for q in lv) / sum(s.total_tokens for s in runs)})
wall = pd.DataFrame(wall_rows)
save_table(wall, "06_wallclock", cfg)
wall.round(3)

# %% [markdown]
# ## 8. What the numbers say

# %%
t_f = tables["findings"]
lines = []
for _, r in tokens.iterrows():
    lines.append(f"- {r.policy}, {r.distance}: pruning generated {r['pruning tokens / study']:.0f} tokens per study "
                 f"against {r['standard tokens / study']:.0f} for the K = {pc.k} full generations "
                 f"({r['tokens saved %']:.1f} % saved, {r.source}).")
s_f = sig[(sig.section == "findings") & (sig.metric == key)]
for _, r in s_f.iterrows():
    inside = r.ci_low <= 0 <= r.ci_high
    lines.append(f"- {r.policy}, {r.distance}, Findings {key}: pruning {r.value_a:.3f} vs standard {r.value_b:.3f} "
                 f"(diff {r['diff']:+.3f}, 95 % CI [{r.ci_low:+.3f}, {r.ci_high:+.3f}], "
                 f"{'includes' if inside else 'excludes'} 0; same pick in {r['same pick %']:.0f} % of studies).")
for _, r in wall.iterrows():
    lines.append(f"- {r.policy}, {r.distance}: wall-clock per study {r['pruning s / study']:.2f} s pruning vs "
                 f"{r['standard s / study']:.2f} s standard (ratio {r['wall-clock ratio (pruning / standard)']:.2f}) at a "
                 f"token ratio of {r['token ratio (pruning / standard)']:.2f}.")
for _, r in agree.iterrows():
    lines.append(f"- live vs replay ({r.policy}, {r.distance}): same survivor in {r['same survivor']} of {r.studies} "
                 f"studies, same per-candidate token counts in {r['same tokens per candidate']}.")
print("\n".join(lines))

# %% [markdown]
# ## 9. One pruning trace
# Rounds of the first live setting on the first studies of the first policy: which candidates were active, their
# partial-report scores and which were dropped; then the survivor's text.

# %%
label0, n0 = next(iter(std)), pc.live_names[0] if pc.live_names else pc.names[0]
for i in range(min(n_examples, len(test))):
    q = pruned_runs(label0, n0)[i]
    print(f"study {test[i].study_id}: tokens per candidate {q.tokens}, survivor #{q.survivor}")
    for rd in q.rounds:
        print(f"  round t={rd['t']}: active {rd['active']} sentences {rd['sentences']} scores "
              f"{[round(x, 4) for x in rd['scores']]} -> dropped {rd['dropped']}")
    print("  SURVIVOR:", q.survivor_text[:400])
    print("  REFERENCE F:", test[i].findings, "| I:", test[i].impression)

# %% [markdown]
# On the smoke profile the policies are barely trained and these numbers mean nothing; on the cpu profile read
# the token saving, the paired intervals and the wall-clock ratio together: they are computed above, whichever
# way they go.
