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
# # 04 · GRPO with set-distance rewards
# Post-train the SFT policy with GRPO under each reward configuration (SFT, R_fmt, R_exact, R_Cham, R_Haus,
# or any registered distance), over seeds, and compare them on the test split (paper sec. 3.2, 4, app. C.3, D).

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
n_show: int = 3  # sample generations shown per configuration

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sdrlib import posttrain, training
from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.embedding import SentenceEmbedder
from sdrlib.plots import save_fig, save_table, style
from sdrlib.reports import build_template, parse_template
from sdrlib.rewards import RewardScorer
from sdrlib.utils import set_seed

cfg = load_profile(profile)
set_seed(cfg.seed)
training.preflight(cfg)  # a paper profile without GPU or weights stops here, before any work
train, test = load_split(cfg, "train"), load_split(cfg, "test")
test = test[: cfg.grpo.eval_n] if cfg.grpo.eval_n else test  # studies scored per configuration and seed
rewards = [r for r in cfg.grpo.rewards if r != "sft"]
configs = ["sft", *rewards]
seeds = posttrain.seeds_of(cfg)
model = posttrain.model_name(cfg)
emb = SentenceEmbedder.from_config(cfg)
print(cfg.name, model, configs, "seeds", seeds, f"G={cfg.grpo.num_generations}", f"beta={cfg.grpo.beta}",
      f"loss={cfg.grpo.loss_type}", f"scale_rewards={cfg.grpo.scale_rewards}")

# %% [markdown]
# ## 1. The rewards on hand-made completions
# `R = λ_fmt R_fmt + λ_sem R_sem`, with `R_sem = (1 - D(E^F(ŷ), E^F(y))) + (1 - D(E^I(ŷ), E^I(y)))` and
# `R_sem := 0` when the template is invalid. `R_exact` counts the sections whose set of normalised sentences
# equals the reference's. Reordering sentences changes nothing; dropping or adding one lowers Chamfer a
# little and Hausdorff a lot.

# %%
ref = train[0]
sents = [s.strip() + "." for s in ref.findings.split(".") if s.strip()]
cases = {
    "reference": build_template(ref.findings, ref.impression),
    "reordered": build_template(" ".join(sents[::-1]), ref.impression),
    "one sentence dropped": build_template(" ".join(sents[:-1]) or sents[0], ref.impression),
    "extra finding": build_template(ref.findings + " Large right pneumothorax.", ref.impression),
    "another study": build_template(train[1].findings, train[1].impression),
    "no template": ref.findings,
}
rows = {}
for name in ["fmt", "exact", "chamfer", "hausdorff"]:
    b = RewardScorer(name, emb).score(list(cases.values()), [ref.findings] * len(cases), [ref.impression] * len(cases))
    rows[posttrain.config_label(name)] = b.total
pd.DataFrame(rows, index=list(cases)).round(3)

# %% [markdown]
# ## 2. Train every configuration
# SFT once (notebook 03's run is reused), then one GRPO run per reward and seed from that policy. Finished
# runs are reused and an interrupted run resumes from its last checkpoint, when its `run_key.json` (SFT policy
# digest, reward and GRPO settings, code and versions) matches; otherwise it is trained again.

# %%
policies = posttrain.train_all(cfg, train, rewards=rewards, embedder=emb)
runs = {k: json.loads((p.parent / "run.json").read_text()) for k, p in policies.items() if k[0] != "sft"}

# %% [markdown]
# ## 3. Training curves
# TRL logs each reward function separately (`rewards/r_fmt/mean`, `rewards/r_sem_<distance>/mean`), plus the
# KL to the SFT policy (β > 0) and the completion length; our reward functions add the per-section
# components and the bad-completion counts through TRL's `log_metric` hook.

# %%
curves = pd.concat([training.read_curves(p.parent).assign(config=k[0], seed=k[1])
                    for k, p in policies.items() if k[0] != "sft"], ignore_index=True)
panels = [("reward", "total reward"), ("rewards/r_fmt/mean", "R_fmt"), ("kl", "KL to SFT policy"),
          ("completions/mean_length", "completion length (tokens)")]
with style():
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3))
    for ax, (col, title) in zip(axes, panels):
        for i, r in enumerate(rewards):
            d = curves[curves.config == r]
            if col not in d or d[col].isna().all():
                continue
            m = d.groupby("step")[col].mean()
            ax.plot(m.index, m.rolling(5, min_periods=1).mean(), color=f"C{i}", label=posttrain.config_label(r))
        ax.set_title(title)
        ax.set_xlabel("step")
    axes[0].legend(fontsize=7)
    save_fig(fig, "grpo_curves", cfg)
plt.show()

# %%
sem_cols = [c for c in curves.columns if c.startswith("rewards/r_sem_") and c.endswith("/mean")]
if sem_cols:
    with style():
        fig, ax = plt.subplots(figsize=(5, 3))
        for i, c in enumerate(sem_cols):
            d = curves.dropna(subset=[c]).groupby("step")[c].mean()
            ax.plot(d.index, d.rolling(5, min_periods=1).mean(), color=f"C{i + 2}", label=c.split("/")[1])
        ax.set_xlabel("step")
        ax.set_ylabel("R_sem (0-2)")
        ax.legend(fontsize=7)
        save_fig(fig, "grpo_semantic_reward", cfg)
    plt.show()


# %% [markdown]
# How far did GRPO move the policy? The KL to the SFT policy at the end of training (mean of the last 4 logged
# steps) and the total reward of the first and last 4 steps, mean ± sample std over seeds.

# %%
def _ms(v):
    v = np.asarray(v, float)
    return f"{v.mean():.3f} ±{v.std(ddof=1) if v.size > 1 else 0.0:.3f}"

move_rows = []
for r in rewards:
    per = [d.sort_values("step").dropna(subset=["reward"]) for _, d in curves[curves.config == r].groupby("seed")]
    move_rows.append({"config": posttrain.config_label(r), "seeds": len(per),
                      "reward first 4 steps": _ms([d.reward.head(4).mean() for d in per]),
                      "reward last 4 steps": _ms([d.reward.tail(4).mean() for d in per]),
                      "KL last 4 steps": _ms([d.kl.tail(4).mean() for d in per]) if "kl" in curves else "n/a"})
movement = pd.DataFrame(move_rows)
save_table(movement, "grpo_policy_movement", cfg)
movement

# %% [markdown]
# ### How sparse is exact match?
# GRPO learns from the spread of rewards *within* a group of G completions of one prompt: a group whose
# completions all score the same has zero advantage and teaches nothing. Every run logs, per step, the share of
# groups in which no completion matches a reference section exactly (R_exact = 0 for all G; measured on every
# configuration's own rollouts), the mean within-group std of the content reward (R_sem for R_Cham / R_Haus,
# R_exact for R_exact, none for R_fmt) and of the total reward, and TRL's share of groups with zero reward spread.

# %%
gcols = {"reward_groups/exact_all_zero": "groups with R_exact = 0 for all G",
         "reward_groups/content_std": "within-group std, content reward",
         "reward_groups/total_std": "within-group std, total reward",
         "frac_reward_zero_std": "groups with zero total-reward spread"}
have = [c for c in gcols if c in curves]
per_seed = curves.groupby(["config", "seed"])[have].mean()  # mean over steps, one value per run
sparsity = pd.DataFrame([{"config": posttrain.config_label(r), "steps x seeds": int(curves[curves.config == r]
                          [have[0]].notna().sum()) if have else 0,
                          **{gcols[c]: _ms(per_seed.loc[r][c]) for c in have}} for r in rewards])
save_table(sparsity, "grpo_reward_sparsity", cfg)
with style():
    panels = [c for c in ("reward_groups/exact_all_zero", "reward_groups/content_std") if c in curves]
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(4.5 * max(len(panels), 1), 3), squeeze=False)
    for ax, col in zip(axes[0], panels):
        for i, r in enumerate(rewards):
            m = curves[curves.config == r].groupby("step")[col].mean()
            ax.plot(m.index, m, color=f"C{i}", label=posttrain.config_label(r))
        ax.set_title(gcols[col], fontsize=9)
        ax.set_xlabel("step")
    axes[0][0].set_ylim(-0.02, 1.02)
    axes[0][0].legend(fontsize=7)
    save_fig(fig, "grpo_reward_sparsity", cfg)
plt.show()
sparsity

# %% [markdown]
# ## 4. Cost of the reward, and bad completions
# Reward time is measured inside the reward functions (parsing, sentence embedding through the cache,
# batched distances); step time is the wall time of whole GRPO steps (generation, reward, forward/backward).
# The reference sentences are embedded once before training; what remains is embedding the sentences a
# rollout writes for the first time (`new_sentences`), which dominates the reward time on CPU.

# %%
cost = pd.DataFrame([{
    "config": posttrain.config_label(k[0]), "seed": k[1], "steps": v["steps"],
    "step_s": v["step_seconds"], "reward_s": v["reward_seconds"], "reward_share": v["reward_share"],
    "completions": v["counts"].get("total", 0), "new_sentences": v["counts"].get("new_sentences", 0),
    **{f"bad_{r}": v["counts"].get(r, 0) for r in ("no_template", "empty_section", "too_long", "non_text_tokens")},
} for k, v in runs.items()])
save_table(cost, "grpo_reward_cost", cfg)
cost.round(3)

# %% [markdown]
# ## 5. Test-split evaluation
# Every policy writes one report per test study, sampled with the run's seed (`sft.eval_temperature`); the SFT
# policy is sampled once per seed. The metric suite scores Findings and Impression.

# %%
gens = {k: posttrain.generate_test(cfg, p, test, seed=k[1]) for k, p in posttrain.eval_runs(cfg, policies).items()}
scores = posttrain.score_all(cfg, gens, test)
long = posttrain.scores_long(scores, model)
save_table(long, f"grpo_scores_{cfg.name}", cfg)
valid = {posttrain.config_label(k[0]) + f"/s{k[1]}": np.mean([parse_template(g) is not None for g in v])
         for k, v in gens.items()}
print("valid template share:", {k: round(v, 3) for k, v in valid.items()})

# %% [markdown]
# Tables in the paper's layout: rows model x metric, columns reward configurations, mean ± sample std over
# seeds, a Mean block across models (when there are several), best per row in bold (Tables 1-2, 5-6 headline; 7-22 per metric group).
# Metrics whose backend is not installed (COMET, RadGraph) are left out and listed below.

# %%
tables = {}
for section in ("findings", "impression"):
    for group in posttrain.TABLE_GROUPS:
        t = posttrain.reward_table(long, section, group, configs)
        tables[(section, group)] = t
        save_table(t, f"grpo_{group}_{section}", cfg)
print("unavailable:", next(iter(scores.values())).unavailable)
tables[("findings", "headline")]

# %%
tables[("impression", "headline")]

# %%
tables[("findings", "clinical")]

# %% [markdown]
# ## 6. Paired significance
# Paired bootstrap over test studies (same resamples for both systems), seed by seed: R_Cham and R_Haus
# against SFT and against R_exact. `n_sig` counts seeds with p < 0.05 in the direction of the mean difference.

# %%
pairs = [(a, b) for a in ("chamfer", "hausdorff") for b in ("sft", "exact") if a in configs and b in configs]
metrics = ["bertscore_f1", "clinical_f1_macro14", "clinical_f1_micro14", "bleu_c4", "rougeL", "meteor"]
sig = posttrain.significance_table(scores, pairs, metrics, n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)
save_table(sig, "grpo_significance", cfg)
sig.round(4)

# %% [markdown]
# ## 7. Sample generations

# %%
for i, rec in enumerate(test[:n_show]):
    print(f"--- {rec.study_id}\nREF   {build_template(rec.findings, rec.impression)}")
    for c in configs:
        print(f"{posttrain.config_label(c):7s} {gens[(c, cfg.seed)][i][:300]}")

# %% [markdown]
# ## 8. Headline file
# `results/headline.md` collects the run's headline numbers (notebook 03's SFT-vs-baselines comparison, the GRPO
# headline tables with mean ± std over seeds, the paired p-values, the policy movement) so the README can quote a
# file the run writes rather than numbers typed by hand.

# %%
from sdrlib.io import atomic_write_text

g = cfg.grpo
head = [f"# Headline numbers: profile `{cfg.name}`, seed {cfg.seed}", "",
        f"Written by notebooks/04_grpo.ipynb. Data: {cfg.data.source} ({len(train)} train / {len(test)} test studies "
        f"scored); policy {model}; GRPO {g.max_steps} steps x {len(seeds)} seeds, G = {g.num_generations}, "
        f"lr {g.learning_rate:g}, beta {g.beta:g}, loss {g.loss_type}.", ""]
base = cfg.results_dir / "sft_vs_baselines_significance.csv"
if base.is_file():
    b = pd.read_csv(base)
    b = b[b.metric.str.split("@").str[0].isin(["clinical_f1_macro14", "clinical_f1_micro14"])]
    head += ["## SFT vs image-blind baselines (notebook 03, one SFT sample, paired bootstrap)", ""]
    head += [f"- {r.section.capitalize()} {r.metric.split('@')[0]}: SFT {r.value_a:.3f} vs {r.B} {r.value_b:.3f} "
             f"(diff {r.diff:+.3f}, 95% CI [{r.ci_low:+.3f}, {r.ci_high:+.3f}], p = {r.p_value:.3f})"
             for r in b.itertuples()]
    head.append("")
else:
    head += ["(notebook 03's sft_vs_baselines_significance.csv is missing: run notebook 03 first)", ""]
for section in ("findings", "impression"):
    head += [f"## GRPO, {section}: mean ± sample std over {len(seeds)} seeds", "",
             tables[(section, "headline")].to_markdown(index=False), ""]
head += ["## Policy movement (KL to SFT, total reward)", "", movement.to_markdown(index=False), "",
         "## Exact-match sparsity and within-group spread", "", sparsity.to_markdown(index=False), ""]
if len(sig):
    s2 = sig[sig.metric.str.split("@").str[0].isin(["bertscore_f1", "clinical_f1_macro14"])]
    head += ["## Paired bootstrap, seed by seed (p per seed; n_sig = seeds with p < 0.05 in the mean's direction)", "",
             s2.assign(mean_diff=s2.mean_diff.round(4))[["A", "B", "section", "metric", "mean_diff", "p_values",
                                                         "n_sig", "n_seeds"]].to_markdown(index=False), ""]
atomic_write_text(cfg.results_dir / "headline.md", "\n".join(head))
print("\n".join(head))

# %% [markdown]
# Whatever the tables show is reported as it is: on the smoke profile (a couple of GRPO steps) no
# configuration can differ meaningfully from SFT; on the default profile compare the R_Cham / R_Haus
# columns with SFT and R_exact together with the significance table above.
