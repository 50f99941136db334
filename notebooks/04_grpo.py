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
# **The question.** Does post-training the SFT policy with a reward built from a *set distance* between the
# sentences of a generated report and those of the reference (R_Cham, R_Haus) make better reports than SFT alone,
# or than rewards that only check the format (R_fmt) or count exact sentence matches (R_exact)? And what does each
# reward actually pay for: does it reward a correct report more than an edited one, or does it pay for silence?
#
# The notebook answers in three steps. First it looks at the rewards before any training: on hand-made
# completions (section 1) and on an audit of edited and degenerate reports built from each test reference
# (section 1b).
# Then it trains and watches training (sections 2-4). Last it scores the test split (section 5), tests every
# comparison over seeds and studies (section 6) and closes with the sentences the result files allow.
#
# **A demonstration, not the answer.** On the default profile each configuration trains for a few dozen steps on a few
# seeds and is scored on a slice of the test split, so a difference of the paper's size is below what this notebook can
# detect (its conclusion prints the detectable difference beside each comparison). The paper's question is answered at
# the size it needs by the GRPO study: `configs/study.yaml` (more steps, more seeds, more test studies, an SFT start
# that reads the image, its setup chosen on validation), run by `python -m sdrlib.experiments.study run`, its evidence
# and comparison table in `docs/evidence/study_seeing_start/`; the study on record, from a start that could not see half
# the labels, is `configs/study_blind_start.yaml` (`docs/evidence/study/`).
#
# Post-train the SFT policy with GRPO under each reward configuration (SFT, R_fmt, R_exact, R_Cham, R_Haus,
# or any registered distance), over seeds, and compare them on the test split (paper sec. 3.2, 4, app. C.3, D).
# Beside them, two related methods on the same data, SFT policy, seeds and metrics: **EditGRPO**
# (half of each group edited sentence by sentence against the reference, Dr. GRPO, a composite clinical reward;
# `sdrlib.rewards.methods.editgrpo`) and **G-CARL**-style rewards (claim reward R_fact + reference-derived checklist
# R_check; `sdrlib.rewards.methods.gcarl`), plus the EditGRPO ablations the profile lists in `grpo.ablations` (at
# `grpo.ablation_seeds` seeds): none on the default cpu profile (time), all of them on the paper profile.
# The cpu profile trains two configurations of ours beside them. **C-noise** (reward `noise`), the drift
# control: a hashed random number per completion, with no signal about format or content, so what it does to the
# policy is what the training setup does by itself; every content reward is read against it (section 5).
# **R_Cham_rec1** (reward `chamfer_recall_1`, the cpu profile's setting of `chamfer_recall_<alpha>`): a
# negation-aware Chamfer reward that also charges for every finding the report misses, invents or contradicts, so
# that a normal report does not earn what a correct abnormal one does; section 1c picks its alpha on validation
# studies.

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
overrides: dict = {}  # dotted profile keys to values, e.g. {"grpo.max_steps": 10} (run_all.sh --set KEY=VALUE)
n_show: int = 3  # sample generations shown per configuration

# %%
import contextlib
import io
import json
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sdrlib import training
from sdrlib import table_names
from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.embedding import SentenceEmbedder
from sdrlib.experiments import grpo_report, posttrain
from sdrlib.experiments import tables as compare
from sdrlib.metrics import paper_names
from sdrlib.metrics.significance import format_p
from sdrlib.plots import plot_audit, style
from sdrlib.results import format_mean_sd, render_cell_table, save_fig, save_table
from sdrlib.reports import build_template, parse_template, split_sentences
from sdrlib.rewards import RewardScorer, parse_reward, reward_label
from sdrlib.rewards.methods.editgrpo import edit_report
from sdrlib.utils import folded_warnings, quiet, set_seed
from IPython.display import display

# %% [markdown]
# The setup: the profile's reward configurations (`grpo.rewards`, each trained at every seed), its EditGRPO
# ablations (at `grpo.ablation_seeds` seeds only), the group size G, the KL weight β and the loss. On a paper
# profile without a GPU or the model weights, `training.preflight` stops the notebook here, before any work.
# The test split is cut to its first `grpo.eval_n` studies: every configuration and seed is scored on the same
# studies, so every comparison below is paired. Notebook 03 scored the whole test split, so its SFT numbers are not
# this notebook's SFT column (section 5 says why the two differ).

# %%
cfg = load_profile(profile, overrides)
set_seed(cfg.seed)
quiet()  # no raw progress bars (transformers "Loading weights", datasets, hub downloads)
training.preflight(cfg)  # a paper profile without GPU or weights stops here, before any work
train, test = load_split(cfg, "train"), load_split(cfg, "test")
test = test[: cfg.grpo.eval_n] if cfg.grpo.eval_n else test  # studies scored per configuration and seed
rewards = [r for r in cfg.grpo.rewards if r != "sft"]
ablations = [r for r in cfg.grpo.ablations if r not in rewards]
grpo_configs = [*rewards, *ablations]
configs = ["sft", *grpo_configs]
seeds = posttrain.seeds_of(cfg)
model = posttrain.model_name(cfg)
emb = SentenceEmbedder.from_config(cfg)
print(cfg.name, model, configs, "seeds", seeds, f"ablation seeds {seeds[:cfg.grpo.ablation_seeds]}", f"G={cfg.grpo.num_generations}", f"beta={cfg.grpo.beta}",
      f"loss={cfg.grpo.loss_type}", f"scale_rewards={cfg.grpo.scale_rewards}")

# %% [markdown]
# ## 1. The rewards on hand-made completions
# `R = λ_fmt R_fmt + λ_sem R_sem`, with `R_sem = (1 - D(E^F(ŷ), E^F(y))) + (1 - D(E^I(ŷ), E^I(y)))` and
# `R_sem := 0` when the template is invalid. `R_exact` counts the sections whose set of normalised sentences
# equals the reference's. Reordering sentences changes nothing; dropping or adding one lowers Chamfer a
# little and Hausdorff a lot.

# %%
ref = train[0]
sents = split_sentences(ref.findings)
cases = {
    "reference": build_template(ref.findings, ref.impression),
    "reordered": build_template(" ".join(sents[::-1]), ref.impression),
    "one sentence dropped": build_template(" ".join(sents[:-1]) or sents[0], ref.impression),
    "extra finding": build_template(ref.findings + " Large right pneumothorax.", ref.impression),
    "another study": build_template(train[1].findings, train[1].impression),
    "no template": ref.findings,
}
rows = {}
g = cfg.grpo
for name in ["fmt", "exact", "chamfer", "hausdorff", "editgrpo", "gcarl"]:
    # the profile's weights and method settings (grpo.gcarl.*, grpo.editgrpo.*), as a GRPO run scores
    b = RewardScorer.from_profile(name, emb, g).score(list(cases.values()), [ref.findings] * len(cases),
                                                      [ref.impression] * len(cases))
    rows[reward_label(name)] = b.total
pd.DataFrame(rows, index=list(cases)).round(3)

# %% [markdown]
# ### The related methods' rewards and EditGRPO's edits
# EditGRPO's column is its composite clinical reward on our template, `R_fmt + F1_14 + F1_ent + S_neg` (in [0, 4]):
# the offline labeler's positive-label F1 (for CheXbert micro-F1-14), its (finding, presence) F1 (for RadGraph F1)
# and the negation-aware Chamfer similarity (for RaTEScore). G-CARL's is `0.3 R_fmt + 0.4 R_fact + 0.3 R_check`
# (in [0, 1]; G-CARL claims here get no bank, so only reference sentences support them). Below: what EditGRPO's
# sentence-level edit (tau = `grpo.editgrpo.tau`, `grpo.editgrpo.ops` operations per section: 1, as its released
# configuration) makes of each hand-made completion: first the counts of each rule, then the edited reports in
# full, since the edited text is what EditGRPO puts into the group in place of the sample.

# %%
edit_rows, edited_text = [], {}
for name, text in cases.items():
    edited_text[name], counts = edit_report(text, ref.findings, ref.impression, emb, tau=g.editgrpo.tau,
                                            ops=g.editgrpo.ops)
    edit_rows.append({"case": name, **{k: counts.get(k, 0) for k in ("replace_conflict", "replace_fp", "delete", "add",
                                                                      "unchanged", "no_template")}})
pd.DataFrame(edit_rows).set_index("case")

# %% [markdown]
# Read the counts with the texts below: `delete` removes a sentence whose cosine to every reference sentence is
# below tau (in "extra finding", the added pneumothorax is the only such sentence), `replace_conflict` swaps a
# sentence that states a finding with the opposite presence, `add` appends a missing reference finding, and a
# completion without a template is rebuilt from reference sentences. Every edit moves the sample towards the
# reference; that is how EditGRPO guarantees reward spread within a group.

# %%
for name, text in edited_text.items():
    print(f"--- {name}\n{textwrap.fill(text, 118)}")

# %% [markdown]
# ## 1b. Reward audit: what each reward pays for edited and degenerate reports (before training)
# For every reward configuration and every test reference (the studies scored below), thirteen completions built from
# the reference (`sdrlib.experiments.audit`): the reference itself, a paraphrase (the finding sentences reworded by
# the SynthCXR grammar, the rest verbatim), another reader's whole report of the same findings, one finding omitted, one finding contradicted, one finding
# hallucinated, the training set's most common normal report, one true sentence repeated, every finding hedged,
# an empty Impression, one finding on the wrong side, a true pertinent negative on the other side added, and one
# finding hedged instead of contradicted, by stratum (normal / single / multi finding). A case that cannot be built for a reference
# (no finding to omit in a normal report) is skipped and counted (`n_skipped`), never scored as something else.
# Then each ordering a clinician expects (a paraphrase above an omission, a hallucination above a normal report for
# an abnormal study, ...) is checked on the references that have both cases; `broken` marks the ones a reward
# reverses. Last, the expected-reward view: for abnormal references, the SFT policy's own samples (notebook 03's
# test generations, one per seed) against always answering the modal normal report; when the normal report wins,
# the reward pays for silence.

# %%
from sdrlib.experiments import audit

audit_rewards = list(dict.fromkeys([*rewards, *(["chamfer_recall_0.8"] if "chamfer_recall_0.8" not in rewards else [])]))
aud = audit.reward_audit(audit_rewards, test, train, emb, cfg.grpo, seed=cfg.seed)
save_table(aud.table, table_names.REWARD_AUDIT, cfg, encoder_id=emb.encoder_id, n_references=len(test))
for (case, reason), k in aud.skipped.items():
    print(f"skipped: {case} for {k} references ({reason})")

# %% [markdown]
# The saved table `04_reward_audit` averages each case over the references it could be built for, so its
# columns mix reference sets (a paraphrase exists only for abnormal references, the modal normal report for all).
# Comparing columns of it compares different studies. Below, the paired view: each case's mean reward over the
# **same** references, the ones for which every case could be built, with each case's skipped count beside it
# (saved as `04_reward_audit_paired`). Read a row from left to right: a reward a clinician would trust pays the
# paraphrase and another reader nearly as much as the reference, and the modal normal report, a hallucination
# and the hedged report clearly less.

# %%
paired, n_common = audit.paired_case_means(aud)
skipped = aud.table[(aud.table.stratum == "all")].drop_duplicates("case").set_index("case")["n_skipped"]
paired_view = pd.concat([paired, skipped.reindex(paired.columns).to_frame("references skipped").T])
save_table(paired_view.reset_index(names="label"), table_names.REWARD_AUDIT_PAIRED, cfg, encoder_id=emb.encoder_id,
           n_references=n_common)
print(f"mean reward over the same {n_common} of {len(test)} references (every case built); last row: skipped")
paired_view.round(3)

# %% [markdown]
# Each ordering a clinician expects, checked on the references that have both cases: `diff` is the mean of the
# higher case's reward minus the lower case's, so a negative value means the reward ranks them the wrong way
# round. Only the broken ones are listed (rows: what the break reads as, in full; columns: rewards; blank: that
# reward keeps the ordering). The full table with every stratum is `results/04_reward_audit_orderings.csv`.
#
# The paraphrase here is not notebook 02's. Notebook 02 rewords every sentence of one hand-written report,
# the normal statements too, so the whole set moves, while a dropped sentence leaves the rest matched exactly:
# there a distance can find the paraphrase farther than the omission. This audit rewords only the sentences that
# state a finding, with the SynthCXR grammar's own other wording for the same finding, keeps everything else
# verbatim and averages over every abnormal test reference; "paraphrase above omitted" is an ordering a reward
# must keep. The two answer different questions (how far free rewording moves a set; whether a reward ranks a
# reworded finding above a missing one), so their rankings of paraphrase against omission can differ.

# %%
orderings = audit.broken_orderings(aud)
save_table(orderings, table_names.REWARD_AUDIT_ORDERINGS, cfg, encoder_id=emb.encoder_id)
broken = orderings[orderings["broken"]]
# the drift control's reward is random by design: its broken orderings are counted, not listed
controls = [reward_label(r) for r in audit_rewards if parse_reward(r).method in ("const", "noise")]
if controls:
    print(f"{int(broken.label.isin(controls).sum())} broken orderings of the drift control {', '.join(controls)} "
          "(a random reward) not shown")
with pd.option_context("display.max_colwidth", None, "display.width", 250):
    display(broken[~broken.label.isin(controls)]
            .pivot_table(index="reads", columns="label", values="diff", aggfunc="first", sort=False).round(3))

# %% [markdown]
# The expected-reward view: for each reward, the SFT policy's own test samples against always answering the
# training set's modal normal report, on abnormal references. A negative `gap` means the normal report earns more
# than what the policy writes; `silence_margin` is what stating a finding earns over staying silent inside the
# policy's own samples (the contrast a GRPO group sees), `mixed_margin` the same with normal references weighted
# in. A policy that writes no valid template (the smoke profile's tiny model) scores 0 under every reward but
# the drift control, and then the gap is simply the modal report's whole reward.

# %%
sft_dir = training.policy_dir(cfg, "sft")
samples: dict[str, list[str]] = {}
for s in seeds:
    for r, c in zip(test, posttrain.generate_test(cfg, sft_dir, test, seed=s)):
        samples.setdefault(r.study_id, []).append(c)
expected = audit.expected_reward_view(audit_rewards, test, samples, audit.modal_normal_report(train),
                                      scorer_for=lambda n: audit.audit_scorer(n, emb, cfg.grpo, train))
save_table(expected, table_names.REWARD_AUDIT_EXPECTED, cfg, encoder_id=emb.encoder_id, policy="sft", seeds=list(seeds))
expected[["label", "sft_mean", "modal_normal_mean", "gap", "silence_margin", "normal_margin", "mixed_margin"]].round(3)

# %% [markdown]
# The figure: per stratum, each case's mean reward as a share of the reference's (1 = paid like the reference, the
# colour bar reads the rest; "skip" = the case cannot be built there, e.g. nothing to omit in a normal report).
# Left of the white line are the correct reports, right of it the edited and degenerate ones; an error that a
# reward pays at least as much as the lowest-paid correct report of its row is outlined: that reward cannot tell
# the error from a correct report. The last panel answers "does silence pay?" with the table's `mixed_margin`, one
# bar per reward: below 0, a policy unsure of a finding earns more by writing a normal report.

# %%
with style():
    fig = plot_audit(aud.table, expected)
save_fig(fig, "04_reward_audit", cfg)
plt.show()

# %% [markdown]
# ## 1c. The recall setting, chosen on validation studies
# Our reward `chamfer_recall_<alpha>[_bal<w>]` has two knobs: the recall weight alpha and the weight w of prompts
# whose reference states a finding. They are chosen here on `grpo.recall_n_val` **validation** studies, never on
# the test studies scored below, from the grid `grpo.recall_alphas` x `grpo.recall_weights`, by a rule fixed in
# advance (`sdrlib.experiments.reward_choice`): a setting must keep the four orderings a clinician needs on the
# validation references (hallucinated below paraphrase, contradicted below omitted, omitted below paraphrase, the
# modal normal report below one of several findings missed), and among those the smallest w under which
# stating a finding pays over silence on the SFT policy's own validation samples (`mixed_margin > 0`; else w = 1),
# then the alpha with the largest margin. The whole grid and its scores are saved as `04_recall_choice`.

# %%
from sdrlib.experiments import reward_choice

trained_recall = [r for r in rewards if parse_reward(r).method == "chamfer_recall"]
if cfg.grpo.recall_n_val and trained_recall:
    val = load_split(cfg, "val")[: cfg.grpo.recall_n_val]
    val_samples: dict[str, list[str]] = {}
    for s in seeds:
        for r, c in zip(val, posttrain.generate_test(cfg, sft_dir, val, seed=s, split="val")):
            val_samples.setdefault(r.study_id, []).append(c)
    grid = reward_choice.grid_names(cfg.grpo.recall_alphas, cfg.grpo.recall_weights)
    choice, chosen = reward_choice.choose_recall_setting(grid, val, train, val_samples, emb, cfg.grpo, seed=cfg.seed)
    trained_keys = {parse_reward(r).key for r in trained_recall}
    choice["trained"] = [parse_reward(r).key in trained_keys for r in choice.reward]
    picked = chosen is not None and parse_reward(chosen).key in trained_keys
    save_table(choice, table_names.RECALL_CHOICE, cfg, encoder_id=emb.encoder_id, split="val", n_val=len(val),
               seeds=list(seeds), chosen=chosen, trained=trained_recall, trained_is_choice=picked)
    if chosen is None:
        print(f"NOTE: {reward_choice.NO_PICK}; the profile trains {trained_recall} unpicked")
    elif not picked:
        print(f"NOTE: validation picks {chosen}, but grpo.rewards trains {trained_recall}: every conclusion below "
              "about the recall reward is about a setting the rule did not pick (set grpo.rewards to train it)")
    print(f"validation pick on {len(val)} studies x {len(seeds)} SFT samples: {chosen}; trained: {trained_recall}")
    display(choice[["label", "broken_required", "worst_required_diff", "silence_margin", "normal_margin",
                    "mixed_margin", "chosen", "trained"]].round(3))
else:
    print("no chamfer_recall reward trained (or grpo.recall_n_val: 0): no validation pick")

# %% [markdown]
# The trained setting's audit on the **test** references, for each abnormal stratum (single and multi finding):
# each required ordering's paired mean difference (higher case minus lower case; positive = kept) and how many
# references it rests on.

# %%
if trained_recall:
    req = reward_choice.required_orderings(orderings)
    req = req[req.reward.isin(trained_recall)]
    display(req.pivot_table(index="expected", columns=["label", "stratum"], values=["diff", "n"], sort=False)
            .round(3))

# %% [markdown]
# ## 2. Train every configuration
# SFT once (notebook 03's run is reused), then one GRPO run per reward and seed from that policy. Finished
# runs are reused and an interrupted run resumes from its last checkpoint, when its `run_key.json` (SFT policy
# digest, reward and GRPO settings, code and versions) matches; otherwise it is trained again. With
# `grpo.workers: 2` (the cpu profile) two runs train side by side, one CPU thread each; a run's weights are the
# same either way (`sdrlib.experiments.posttrain.worker_pool` says why), only the wall time changes.

# %%
policies = posttrain.train_all(cfg, train, rewards=rewards, ablations=ablations, embedder=emb)
runs = {k: json.loads((p.parent / "run.json").read_text()) for k, p in policies.items() if k[0] != "sft"}

# %% [markdown]
# ## 3. Training curves
# TRL logs each reward function separately (`rewards/r_fmt/mean`, `rewards/r_sem_<distance>/mean`), plus the
# KL to the SFT policy (β > 0) and the completion length; our reward functions add the per-section
# components and the bad-completion counts through TRL's `log_metric` hook. What to look for: a reward curve that
# rises while the KL stays small means the policy found what the reward pays for without drifting far from SFT; a
# flat reward curve with zero KL means no group had reward spread, so GRPO had nothing to learn from (the next
# tables measure exactly that). A curve over two smoke steps shows only that logging works.
#
# The figure has one column per configuration: its total reward on its own axis (the rewards' ranges differ), each
# seed as a thin grey line and their mean as the thick one, and a dashed line at the mean of the first 4 logged
# steps (near the SFT policy's level): a reward that rises is a thick line that ends above the dashed one. Each
# title gives the first and the last 4 steps' mean reward (the movement table below). The KL and the completion
# length sit under it, on axes shared by every configuration.

# %%
curves = pd.concat([training.read_curves(p.parent).assign(config=k[0], seed=k[1])
                    for k, p in policies.items() if k[0] != "sft"], ignore_index=True)
from sdrlib.plots import plot_grpo_curves, plot_reward_sparsity, plot_semantic_reward

with style():
    fig = plot_grpo_curves(curves, grpo_configs, {r: reward_label(r) for r in grpo_configs}, smooth=5)
    save_fig(fig, "grpo_curves", cfg)
plt.show()

# %%
sem_cols = [c for c in curves.columns if c.startswith("rewards/r_sem_") and c.endswith("/mean")]
if sem_cols:  # R_sem (0-2) of the set-distance rewards; EditGRPO's S_neg (0-1) on its own axis
    with style():
        fig = plot_semantic_reward(curves, grpo_configs, {r: reward_label(r) for r in grpo_configs})
        save_fig(fig, "grpo_semantic_reward", cfg)
    plt.show()


# %% [markdown]
# How far did GRPO move the policy? The KL to the SFT policy at the end of training (mean of the last 4 logged
# steps) and the total reward of the first and last 4 steps, mean ± sample std over seeds
# (`sdrlib.experiments.grpo_report.movement_table`). A reward that did not change between the first and last
# steps, with a KL near 0, is a policy GRPO left where SFT put it: its test scores should then match SFT's.

# %%
movement = grpo_report.movement_table(curves, grpo_configs, label=reward_label, n_steps=4)
save_table(movement, table_names.GRPO_POLICY_MOVEMENT, cfg, shown=format_mean_sd(movement))
format_mean_sd(movement)

# %% [markdown]
# ### How sparse is exact match?
# GRPO learns from the spread of rewards *within* a group of G completions of one prompt: a group whose
# completions all score the same has zero advantage and teaches nothing. Every run logs, per step, the share of
# groups in which no completion matches a reference section exactly (R_exact = 0 for all G; measured on every
# configuration's own rollouts), the mean within-group std of the content reward (R_sem for R_Cham / R_Haus,
# R_exact for R_exact, none for R_fmt) and of the total reward, and TRL's share of groups with zero reward spread.

# %%
sparsity = grpo_report.sparsity_table(curves, grpo_configs, label=reward_label)
save_table(sparsity, table_names.GRPO_REWARD_SPARSITY, cfg, shown=format_mean_sd(sparsity))
if {"reward_groups/exact_all_zero", "reward_groups/content_std"} <= set(curves.columns):
    with style():  # (a) exact-match sparsity per config; (b) each content reward's spread on its own axis
        fig = plot_reward_sparsity(curves, grpo_configs, {r: reward_label(r) for r in grpo_configs})
        save_fig(fig, "grpo_reward_sparsity", cfg)
plt.show()
format_mean_sd(sparsity)

# %% [markdown]
# ## 4. Cost of the reward, and bad completions
# Reward time is measured inside the reward functions (parsing, sentence embedding through the cache,
# batched distances); step time is the wall time of whole GRPO steps (generation, reward, forward/backward).
# The reference sentences are embedded once before training; what the encoder still sees during training are the
# sentences a rollout writes for the first time (`new_sentences`, counted per run in `results/grpo_reward_cost`).
# This notebook times the reward as a whole, not its parts: the split of a run's seconds by stage (generation,
# rewards, scoring, loss, backward) is what `benchmarks/profile_run.py` prints.

# %%
cost = grpo_report.cost_table(runs, label=reward_label)
save_table(cost, table_names.GRPO_REWARD_COST, cfg)
cost_per_config = cost.groupby("config", sort=False)[["step_s_per_step", "reward_s_per_step", "edit_s_per_step",
                                                      "reward_share"]].mean()
# one row per configuration (mean over seeds); bad_* = completions the reward could not score (no template,
# an empty section, too long, non-text tokens): counted, not hidden, since a reward that sees many is mostly noise
bad = [c for c in cost.columns if c.startswith("bad_")]
print(f"bad completions: {int(cost[bad].to_numpy().sum())} of {int(cost.completions.sum()):,} over all runs")
# (times per step: the table under the reward-time figure below)
cost.groupby("config", sort=False)[["steps", "completions", *bad]].sum().astype(int)

# %% [markdown]
# Reward (and, for EditGRPO, edit) time per GRPO step, mean over each configuration's seeds. The reward time is
# also logged per step (`reward_time/seconds` in each run's `curves.csv`), plotted here.

# %%
with style():
    fig, ax = plt.subplots(figsize=(6, 3))
    for i, r in enumerate(grpo_configs):
        d = curves[curves.config == r]
        if "reward_time/seconds" in d:
            m = d.groupby("step")["reward_time/seconds"].mean()
            ax.plot(m.index, m, color=f"C{i}", label=reward_label(r))
    ax.set_xlabel("step")
    ax.set_ylabel("reward time per step (s)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    save_fig(fig, "grpo_reward_time", cfg)
plt.show()
cost_per_config.round(3)

# %% [markdown]
# ### EditGRPO's edits per step
# Every EditGRPO step edits half of each group (paragraph level: one completion per group) and logs how often each
# rule fired: (a) `replace_conflict` (a finding with the opposite presence of a reference sentence), (b) `replace_fp`
# (a false positive replaced by the most similar reference sentence, cosine >= tau), (c) `delete` (below tau),
# (d) `add` (a missing reference finding appended); `replace_section` for paragraph-level edits, `unchanged` for
# edits no rule touched (the slot keeps its own sample) and `no_template` for samples without a valid template,
# rebuilt from reference sentences (one operation per section, `grpo.editgrpo.ops`).

# %%
edit_cols = [c for c in curves.columns if c.startswith("edits/") and c != "edits/seconds"]
edit_cfgs = [r for r in grpo_configs if any(c in curves for c in edit_cols)
             and curves[curves.config == r][edit_cols].notna().any().any()] if edit_cols else []
edit_totals = pd.DataFrame([{"config": reward_label(k[0]), "seed": k[1], "level": v.get("edit_level"),
                             "tau": v.get("edit_tau"), **v["edits"]} for k, v in runs.items() if v.get("edits")])
if len(edit_totals):
    save_table(edit_totals, table_names.GRPO_EDIT_COUNTS, cfg)
edit_totals

# %% [markdown]
# The same counts per step, one panel per EditGRPO configuration (mean over seeds; a rule keeps its colour in
# every panel). A rule whose line falls over training fires less as the policy's samples get closer to the
# reference; a flat `no_template` line means the policy still writes samples the edit has to rebuild.

# %%
if len(edit_totals):
    with style():
        fig, axes = plt.subplots(1, len(edit_cfgs), figsize=(4.5 * len(edit_cfgs), 3), squeeze=False)
        for ax, r in zip(axes[0], edit_cfgs):
            d = curves[curves.config == r].groupby("step")[edit_cols].mean()
            for j, c in enumerate(edit_cols):
                if d[c].sum() > 0:
                    ax.plot(d.index, d[c], color=f"C{j}", label=c.split("/")[1])
            ax.set_title(reward_label(r))
            ax.set_xlabel("step")
        axes[0][0].set_ylabel("edits per step (mean over seeds)")
        seen = {}  # one legend for all panels: a rule keeps its colour in every panel
        for a in axes[0]:
            for h, lab in zip(*a.get_legend_handles_labels()):
                seen.setdefault(lab, h)
        fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=len(seen), bbox_to_anchor=(0.5, 1.0),
                   frameon=False)
        fig.tight_layout()
        save_fig(fig, "grpo_edit_counts", cfg)
    plt.show()

# %% [markdown]
# ## 5. Test-split evaluation
# Every policy writes one report per test study, sampled with the run's seed (`sft.eval_temperature`); the SFT
# policy is sampled once per seed. The metric suite scores Findings and Impression.

# %%
gens = posttrain.generate_all(cfg, posttrain.eval_runs(cfg, policies), test)  # grpo.workers side by side
# RadGraph prints "Using device: ..." once per scoring call; a policy that writes no template warns once per run
with contextlib.redirect_stdout(io.StringIO()), folded_warnings():
    scores = posttrain.score_all(cfg, gens, test)
long = posttrain.scores_long(scores, model)
save_table(long, table_names.grpo_scores(cfg.name), cfg)
valid = {reward_label(k[0]) + f"/s{k[1]}": np.mean([parse_template(g) is not None for g in v])
         for k, v in gens.items()}
valid_cfg = pd.Series(valid).groupby(lambda k: k.rsplit("/", 1)[0], sort=False).mean()
print("valid template share (mean over seeds):", ", ".join(f"{k} {v:.2f}" for k, v in valid_cfg.items()))

# %% [markdown]
# Does a reward pull the policy towards normal reports? Positive findings the labeler reads in each
# configuration's Findings, and the share of Findings that state none, against the references.

# %%
positives = posttrain.positive_findings_table(gens, test)
save_table(positives, table_names.GRPO_POSITIVE_FINDINGS, cfg)
positives.round(3)

# %% [markdown]
# ### Decomposing a change in Findings macro F1
# In an earlier default-profile run (`ef27b0d`, not this one) every configuration, R_fmt included, lowered
# Findings macro F1 below SFT. Whether this run shows a drop at all is in the table and the tests below; what this
# section provides is the means to take a change apart. Three suspects:
# (a) **drift without signal**: the `noise` control (`sdrlib.rewards.methods.control`) trains exactly like the
# others with a hashed uniform reward that says nothing about format or content, so its advantages are pure noise
# and its change from SFT is what the optimiser, learning rate and loss do alone (`const`, reward 1 everywhere,
# has zero advantages and does not move the policy at all: `tests/rewards/test_control.py`); (b) **length
# pressure**: reports cut at the decoding limit (a cut report scores R_fmt = 0), report length and the number of
# stated positive findings, per stratum of the reference (no finding / single / multi); (c) the **content reward**.
# `sdrlib.experiments.decomposition` measures them on the test generations above and on the training curves.
# Since that run the vision tower stays frozen in GRPO as in SFT (`sdrlib.training.grpo`) and the loss is Dr.
# GRPO's (`grpo.loss_type`, `docs/evidence/cpu_profile_choices.md`): both were chosen to keep the drift step small. How
# small it is in this run is the `SFT -> C-noise` row of the decomposition table below, not a number quoted here.

# %% [markdown]
# First the generations themselves, per stratum of the reference: positive findings stated, length in policy
# tokens and the share cut at the decoding limit (a cut report never closes its template). A reward that pushes
# towards short, normal reports shows up as fewer positives in the single / multi strata; one that pushes
# towards long reports as a larger cut share.

# %%
from transformers import AutoTokenizer

from sdrlib.experiments import decomposition

tok = AutoTokenizer.from_pretrained(policies[("sft", cfg.seed)])
n_tokens = lambda t: len(tok(t, add_special_tokens=False).input_ids)  # noqa: E731
by_stratum = decomposition.stratum_table(gens, test, count_tokens=n_tokens, limit=cfg.sft.max_new_tokens,
                                         label=reward_label)
save_table(by_stratum, table_names.GRPO_DECOMPOSITION_STRATA, cfg)
# shown: positives stated, tokens and cut share per stratum (the saved table has every column)
by_stratum.pivot_table(index="config", columns="stratum", values=["positives", "tokens", "cut"], sort=False).round(1)

# %% [markdown]
# Over training: the share of sampled completions cut at `grpo.max_completion_length` (TRL's
# `completions/clipped_ratio`, over the whole batch: TRL logs no per-prompt lengths, so no strata here), the mean
# completion length, R_fmt and the KL to SFT, first and last 4 steps (mean over seeds).

# %%
during = decomposition.training_table(curves, label=reward_label)
save_table(during, table_names.GRPO_DECOMPOSITION_TRAINING, cfg)
during.round({c: (0 if c.startswith("length") else 3) for c in during.columns if c not in ("config", "seeds")})

# %% [markdown]
# How much of the drop each part explains. The drift control has non-zero advantages in every group, as every
# content reward has; R_fmt has them only in the few groups with a malformed sample, so it is a step of its own.
# Per content reward: SFT -> drift control (`noise`) -> content reward, the mean change of Findings macro F1 over
# seeds and its share of the whole change SFT -> content reward; R_fmt's own row is SFT -> R_fmt. A share is a
# fraction of the total, so it only means something when every step moves the same way and the total is larger
# than its run-to-run spread (the SD of the per-seed totals): with a total near zero, or steps of opposite sign, a
# step's "share" can read far above 1 or below 0. The table below shows a share only then and says in `share shown?` why
# it is blank otherwise (`sdrlib.experiments.decomposition.share_view`); the saved `grpo_decomposition` keeps the
# raw ratio for readers that filter it themselves. Then the paired bootstrap of each step, seed by seed (same
# test studies, same resamples for both systems).

# %%
with folded_warnings():  # one counted line instead of a template warning per scored run
    f1 = {k: float(decomposition.findings_f1(v, test).corpus) for k, v in gens.items()}
control = "noise" if "noise" in configs else None
content = [r for r in grpo_configs if parse_reward(r).method not in ("const", "noise", "fmt")]
chains = [[("sft", control), (control, c)] if control else [("sft", c)] for c in content]
chains += [[("sft", "fmt")]] if "fmt" in configs else []
decomp = pd.concat([decomposition.decomposition_table(f1, ch, label=reward_label)
                    .assign(chain=reward_label(ch[-1][1])) for ch in chains], ignore_index=True)
save_table(decomp, table_names.GRPO_DECOMPOSITION, cfg)
step_pairs = list(dict.fromkeys([(b, a) for ch in chains for a, b in ch] + [(c, "sft") for c in content]))
with folded_warnings():
    decomp_sig = decomposition.paired_f1_table(gens, test, step_pairs, n_resamples=cfg.metrics.bootstrap,
                                               seed=cfg.seed, label=reward_label)
save_table(decomp_sig, table_names.GRPO_DECOMPOSITION_SIGNIFICANCE, cfg)
decomposition.share_view(decomp, f1, chains, label=reward_label)

# %%
# one row per step: mean difference over seeds, and each seed's p (full table: grpo_decomposition_significance)
decomp_sig.groupby(["A", "B"], sort=False).agg(
    seeds=("seed", "size"), diff=("diff", "mean"),
    p_per_seed=("p_value", lambda p: "; ".join(format_p(v) for v in p))).round(3)

# %% [markdown]
# Tables in the paper's layout: rows model x metric, columns reward configurations, mean ± sample std over
# seeds, a Mean block across models (when there are several), best per row in bold (Tables 1-2 and 5-6 headline, Tables 7-22 per metric group).
# Rows are the paper's metric names, looked up in `sdrlib.metrics.paper_names` (RadGraph F1 = F1RadGraph's complete
# level, RG-E / RG-ER its simple / partial levels); a metric whose backend is not installed or failed (COMET,
# RadGraph) stays as a row "not computed: <why>".

# %%
tables = {}
for section in ("findings", "impression"):
    for group in posttrain.TABLE_GROUPS:
        cells = posttrain.reward_cells(long, section, group, configs)  # numbers, one row per cell (the CSV)
        t = render_cell_table(cells, [reward_label(r) for r in configs])  # shown
        tables[(section, group)] = t
        save_table(cells, table_names.grpo_group(group, section), cfg, shown=t)
for group, why in next(iter(scores.values())).unavailable.items():  # rows "not computed: <why>" in the tables
    print(f"not computed: {group}: {why}")
tables[("findings", "headline")]

# %% [markdown]
# Two columns of this table surprise at first; the cell below gives their numbers from the run's files
# (`sdrlib.experiments.grpo_report.headline_notes`).
#
# **This SFT column is not notebook 03's SFT number.** It is the same policy, but notebook 03 scores every test
# study with one sample at the profile's seed, while this notebook scores the first `grpo.eval_n` test studies with
# one sample per GRPO seed and averages them (at the profile's seed mostly the same samples as notebook 03's, for
# the studies both score). CheXpert-14 macro F1 is one corpus-level F1 per observation, averaged over all of them,
# several rare, so another set of studies or another sample moves it visibly; the `±` here is the spread over
# samples alone. Compare a configuration with this table's SFT column, never with notebook 03's number.
#
# **The drift control C-noise.** Its reward is a random number, so its advantages carry no information: it moves
# the policy only as far as the training setup drifts it, in no preferred direction. A content reward moves the
# policy towards what it pays for, and the reward audit (section 1b) measures whether that includes writing no
# finding (`mixed_margin` below 0: an uncertain policy earns more by staying silent); GRPO then lowers the number
# of stated findings (`grpo_positive_findings`, section 5), which costs clinical F1. So when C-noise ranks at or
# near the top of the clinical F1 row, no content reward has added clinical content at this size beyond what
# training without any signal keeps: read a content reward against C-noise (the decomposition's
# `C-noise -> reward` step above), not only against SFT. The ranks are means; section 6 tests the differences.

# %%
scored = f"the first {len(test)} test studies, one sample per seed at T = {cfg.sft.eval_temperature:g}"
print("\n".join(grpo_report.headline_notes(cfg.results_dir, protocol=scored))
      or "no headline table or notebook 03 file to read")

# %%
tables[("impression", "headline")]

# %%
tables[("findings", "clinical")]

# %% [markdown]
# ## 6. Paired significance, over seeds and studies
# One test per comparison (`sdrlib.metrics.significance.seed_study_test`): the mean over seeds of the corpus
# difference, with a two-level paired bootstrap (seeds with replacement, the shared test studies within) and a
# t-test over the seeds' differences; p is the larger of the two, the interval the hull of both. Seed `s` of A
# meets seed `s` of B (SFT: the one SFT policy sampled with seed `s`). Pairs: every configuration against SFT; R_Cham
# and R_Haus against R_exact; the related methods (EditGRPO and its ablations, G-CARL) and our negation-aware rewards
# (R_Cham_neg, the recall reward) against R_Cham; the recall reward also against EditGRPO and R_exact. `seed_sd`: SD of the per-seed differences; `n_same_sign` of `n_seeds`: seeds whose difference has the mean's sign;
# `p_seeds` (in the file): each seed's study-only bootstrap (detail; ablations have `grpo.ablation_seeds` seeds, and a
# row with one seed is a single run's study bootstrap).

# %%
pairs = [(a, "sft") for a in grpo_configs]  # every configuration (the drift control included) against SFT
pairs += [(a, "exact") for a in ("chamfer", "hausdorff") if a in configs and "exact" in configs]
methods = [r for r in grpo_configs if parse_reward(r).tags & {"related", "negation_aware"}]
pairs += [(a, "chamfer") for a in methods if "chamfer" in configs]
# our recall reward against the related method and the exact-match reward too
pairs += [(a, b) for a in grpo_configs if parse_reward(a).method == "chamfer_recall"
          for b in ("editgrpo", "exact") if b in configs]
metrics = paper_names.suite_prefixes("BERTScore F1", "CheXbert F1", "CheXpert-14 micro F1", "RadGraph F1",
                                     "C-BLEU-4", "ROUGE-L", "METEOR")
metrics = [m for m in metrics if m in compare.metric_prefixes(scores)]  # RadGraph, METEOR variant: where run
sig = compare.significance_table(scores, pairs, metrics, n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)
protocol = (f"{len(test)} test studies, {len(seeds)} seed(s) (SFT: one policy sampled with each seed), "
            f"1 sample per study at T = {cfg.sft.eval_temperature:g}")
save_table(sig, table_names.GRPO_SIGNIFICANCE, cfg, protocol=protocol, test="seed_study_test (two-level bootstrap + t over seeds)")
head_metrics = paper_names.suite_prefixes("BERTScore F1", "CheXbert F1", "CheXpert-14 micro F1", "RadGraph F1")
show = paper_names.suite_prefixes("BERTScore F1", "CheXbert F1")  # key rows here; the file has every metric
print(protocol)

# %% [markdown]
# The full table has one row per pair, section and metric (`results/grpo_significance.csv`, too long to read
# here). Shown: Findings BERTScore F1 and CheXpert-14 macro F1, one row per pair, each cell the difference A - B
# with its 95 % interval and p (before the correction over the family that the next cell's rule applies). An
# interval that contains 0 is the usual case on a small run.

# %%
with pd.option_context("display.width", 120):  # one block: the plain text wraps at 80 characters otherwise
    display(compare.compact_significance(sig, show) if len(sig) else sig)

# %% [markdown]
# ### What this run concludes
# A configuration is called above or below another only when the test over seeds **and** studies gives p < 0.05
# after Holm's correction over the comparisons listed below **and** its interval excludes 0; how many seeds
# share the mean's sign is shown beside it, not required (`sdrlib.experiments.conclusions`); everything else reads "no
# difference detected at this size", with the smallest difference this test would detect with 80 % power at this
# run's seed spread and the seeds a difference of the observed size would need. The conclusions of docs/results.md add one
# more condition: the same verdict in a run of the same commit on another CPU kernel path (docs/reproducibility.md,
# "Machines and kernel paths"), because the trained weights, and with them these differences, move with the kernel path.
# The table below lists, for Findings CheXpert-14 macro F1, every comparison the rule looks at: this notebook's
# pairs and notebook 03's SFT-vs-baseline rows (one seed each, judged by their bootstrap interval). `detectable`
# is blank when one seed leaves no across-seed spread to size it.

# %%
from sdrlib.experiments.conclusions import conclusions

verdicts = conclusions([cfg.results_dir])
differ = verdicts[verdicts.verdict != "no difference detected"]
print(f"{len(differ)} of {len(verdicts)} comparisons (Findings macro F1 and BERTScore F1) show a difference: "
      + (", ".join(f"{r.A} {r.verdict} {r.B} on {r.metric}" for r in differ.itertuples()) or "none"))
print("Findings CheXpert-14 macro F1 (the file results/grpo_significance.csv has every metric):")
(verdicts[verdicts.metric == "clinical_f1_macro14"][["A", "B", "diff", "p_value", "same_sign", "mde", "verdict"]]
 .rename(columns={"mde": "detectable", "same_sign": "seeds +/-"}).head(30).round(3))

# %% [markdown]
# ## 7. Sample generations
# A glance at what each policy writes for the first test studies, next to the reference: the first 80
# characters of each report, enough to see whether a policy writes the `<think> ... </think> <answer> ...
# </answer>` template at all and whether configurations differ from SFT. Whole reports are in each run's
# `test_generations_s<seed>.json`; do not judge content from these openings.

# %%
w = max(len(reward_label(c)) for c in configs)
print(f"first 80 characters of each report (all of them: test_generations_s{cfg.seed}.json in each run's folder)")
for i, rec in enumerate(test[:n_show]):
    print(f"--- {rec.study_id}\n{'REF':{w}s} {textwrap.shorten(build_template(rec.findings, rec.impression), 80)}")
    for c in configs:
        print(f"{reward_label(c):{w}s} {textwrap.shorten(gens[(c, cfg.seed)][i], 80)}")

# %% [markdown]
# ## 8. Headline file
# `results/headline.md` collects the run's headline numbers (notebook 03's SFT-vs-baselines comparison, the GRPO
# headline tables with mean ± std over seeds, the paired p-values, the policy movement) so docs/results.md can quote a
# file the run writes rather than numbers typed by hand.

# %%
run = {"profile": cfg.name, "seed": cfg.seed, "source": cfg.data.source, "n_train": len(train), "n_test": len(test),
       "model": model, "steps": g.max_steps, "n_seeds": len(seeds), "G": g.num_generations, "lr": g.learning_rate,
       "beta": g.beta, "loss": g.loss_type}
head = grpo_report.headline_markdown(results_dir=cfg.results_dir, run=run, protocol=protocol, tables=tables,
                                     movement=movement, sparsity=sparsity, cost_per_config=cost_per_config,
                                     edit_totals=edit_totals, sig=sig)
path = grpo_report.write_headline(cfg.results_dir, head)
print(f"wrote {path} ({len(head)} lines), sections:")
print("\n".join("  " + h[3:] for h in head if h.startswith("## ")))

# %% [markdown]
# ## 9. Conclusion
# The sentences below are generated from this run's result files (`sdrlib.experiments.grpo_report.grpo_conclusions`
# reads `grpo_significance`, `grpo_decomposition_significance`, `grpo_policy_movement` and the audit tables back
# from `results/`), under the project's rule (`sdrlib.metrics.verdict`): the comparisons a table reports are one
# family, Holm-corrected; a direction only when the corrected p of the test over seeds and studies is below 0.05,
# and its interval excludes 0 (for a single run's paired bootstrap: the corrected p and
# its 95 % interval); otherwise "no difference detected at this size". The first line answers the opening question (R_Cham
# and R_Haus against SFT and R_exact, Findings BERTScore F1 and CheXpert-14 macro F1) with that rule's words; the
# lines after it give every comparison per metric, the seed-by-seed decomposition, the policy movement and the
# audit. The smoke profile (two GRPO steps, a tiny policy) checks the plumbing, so expect "no difference detected"
# there; the audit's lines do not depend on training.

# %% tags=["conclusion"]
print("\n".join(grpo_report.grpo_conclusions(cfg.results_dir)))
