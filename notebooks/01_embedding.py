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
# # 01 · Sentences and their embeddings
# **Question: what does a set-distance reward actually compare?** Not words and not whole reports: two unordered
# sets of unit-norm sentence vectors, one per report section. This notebook builds those sets step by step from a
# free-text report (section split, sentence segmentation, the `<think>/<answer>` template, the frozen encoder with
# its on-disk cache, the packed bank of training reports that selection and pruning read; paper sec. 3.1-3.3), then
# asks what the vectors capture: how close an Impression is to its own Findings, and whether a sentence's nearest
# neighbour means the same thing.

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
overrides: dict = {}  # dotted profile keys to values, e.g. {"grpo.max_steps": 10} (run_all.sh --set KEY=VALUE)
n_show: int = 6  # example sentences in the similarity heatmap

# %% [markdown]
# Progress bars are plain text (tqdm's console bar), readable in JupyterLab and in papermill's logs alike. Without
# ipywidgets, `tqdm.auto` says so once ("IProgress not found") and falls back to exactly that bar; the filter below
# silences that notice, and `quiet()` the Hugging Face progress bars.

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sdrlib import selection as sel
from sdrlib.clinical import label_report
from sdrlib import table_names
from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.embedding import ReportBank, SentenceEmbedder, bank_stats, geometry
from sdrlib.plots import plot_report_embedding, plot_sentence_geometry, style
from sdrlib.reports import build_template, parse_template, split_report, split_sentences
from sdrlib.results import save_fig, save_table
from sdrlib.rewards import format_reward
from sdrlib.utils import quiet, set_seed

warnings.filterwarnings("ignore", message="IProgress not found")
cfg = load_profile(profile, overrides)
set_seed(cfg.seed)
quiet()
print(cfg.name, cfg.embedding.encoder, cfg.cache_dir)

# %% [markdown]
# ## 1. Sections
# MIMIC-CXR reports are free text with headers. `split_report` keeps the text under `FINDINGS:` and
# `IMPRESSION:` (any case) and stops at any other known header, so the indication (`___M with cough`) stays out.
# Look at the output: the Findings keep the measurement, the Impression keeps its list numbers for now.

# %%
report = '''FINAL REPORT
 INDICATION:  ___M with cough // ?pna
 FINDINGS: The heart is mildly enlarged, measuring approx. 15.5 cm.  There is a small
 left pleural effusion.  No pneumothorax.
 IMPRESSION:
 1. Mild cardiomegaly.
 2. Small left pleural effusion.'''
sections = split_report(report)
sections

# %% [markdown]
# ## 2. Sentences
# `split_sentences` uses pysbd (a rule-based sentence splitter) and keeps abbreviations (`approx.`), decimals (`15.5`) and placeholders (`___`) inside
# their sentence, strips numbered-list markers and drops fragments without a letter. The sentence is the unit every
# set distance works on, so a wrong split here changes the set size and every distance downstream.

# %%
F = split_sentences(sections.findings)
I = split_sentences(sections.impression)
assert I == ["Mild cardiomegaly.", "Small left pleural effusion."]
F, I

# %% [markdown]
# ## 3. The template and the format reward
# The policy writes `<think> Findings </think> <answer> Impression </answer>`. Under the paper's rule (sec. 3.2)
# R_fmt is 1 only when each tag occurs exactly once, in order, around non-empty content, with nothing else outside.
# Training scores a stricter rule (`format_reward(text)`, mode `"training"`): the paper's, and no chat or vision
# special token, no control character and at most 4,000 characters, so a completion that leaks `<|im_end|>` into
# its Findings earns nothing. In the table, only the last row separates the two rules; "chatter after" scores 0
# under both (exercise `lenient_template` asks what would change if it did not).

# %%
target = build_template(sections.findings, sections.impression)
cases = {
    "target": target,
    "no tags": sections.findings,
    "reordered": "<answer> x </answer> <think> y </think>",
    "nested": "<think> a <think> b </think> </think> <answer> c </answer>",
    "empty answer": "<think> a </think> <answer>  </answer>",
    "chatter after": target + " Hope this helps!",
    "chat token inside": build_template(sections.findings + " <|im_end|>", sections.impression),
}
pd.DataFrame({"R_fmt (paper's rule)": {k: format_reward(v, "paper") for k, v in cases.items()},
              "R_fmt (training)": {k: format_reward(v) for k, v in cases.items()}})

# %% [markdown]
# The template is also how the rewards read a completion back: `parse_template` must return exactly the sections
# that went in.

# %%
assert parse_template(target) == sections

# %% [markdown]
# ## 4. The frozen encoder and its cache
# Each sentence becomes a unit-norm vector, so the cosine similarity of two sentences is their dot product and the
# set distances' cosine cost is `(1 - a.b) / 2`. The cache is keyed by encoder identity and normalised text, so a
# sentence is encoded once per encoder, across runs. The printed line gives the encoder's identity (name and a
# digest of its weights), the shape (sentences x dimension) and the norms, which must all be 1.

# %%
emb = SentenceEmbedder.from_config(cfg)
E = emb.encode(F + I)
print(emb.encoder_id, E.shape, E.dtype, "norms:", np.linalg.norm(E, axis=1).round(4))

# %% [markdown]
# A set is unordered: permuting the sentences permutes rows, so any set distance sees the same set.

# %%
rng = np.random.default_rng(cfg.seed)
perm = rng.permutation(len(F))
E_perm = emb.encode([F[i] for i in perm])
assert np.array_equal(E_perm, E[: len(F)][perm])

# %% [markdown]
# ## 5. A training corpus through the cache: first build, then warm
# The bank: `embedding.bank_size` training reports drawn at random with the profile's seed (paper app. C.4), kept
# in split order; the draw is recorded in the saved bank's meta (a size of 0, or more than the split, takes all of
# it). `build_cold_then_warm` builds the bank twice. The first build encodes what the on-disk cache lacks (on a fresh
# cache every distinct sentence: the cold cost); the second must be served from the cache alone and fails loudly if
# it calls the encoder. In the table, read `sentences per unique` (how often report language repeats itself, the
# reason a cache pays) and `encoder calls (warm)`, which must be 0. The timings depend on the machine and on what
# earlier runs left in the cache; `results/01_embedding_cache.md` keeps them with the run's provenance.

# %%
train = load_split(cfg, "train")
records, draw = sel.draw_bank_records(train, cfg.embedding.bank_size, cfg.seed)
print(draw)
bank, stats = bank_stats.build_cold_then_warm(emb, [r.findings for r in records], [r.impression for r in records],
                                              ids=[r.study_id for r in records])
save_table(stats, table_names.EMBEDDING_CACHE, cfg, encoder_id=emb.encoder_id)
stats.round(3)

# %% [markdown]
# ## 6. The bank
# One sentence matrix plus offsets per section; saved without pickle and tied to the encoder identity, so loading it
# against another encoder fails loudly. The table is what notebooks 05 and 06 compare candidates against: per
# section, the number of reports and sentences, the embedding dimension, and how many reports have an empty set
# (the distances are defined for non-empty sets only: `sdrlib.distances` rejects an empty set, and the batched
# engine scores one only when its caller passes an `empty_value`).

# %%
bank.meta.update(draw)
bank_path = bank.save(cfg.cache_dir / "banks" / f"{cfg.name}_train")
bank = ReportBank.load(bank_path, expected_encoder_id=emb.encoder_id)
bank_stats.bank_table(bank).round(2)

# %% [markdown]
# ## 7. Figure 1: a report of this profile as a set of sentence embeddings
# The paper's Fig. 1 on this profile's data: a test study's report, split into its Findings sentences
# $s^F_i$ and Impression sentences $s^I_j$, each embedded on its own; the report *is* the set
# $\mathcal{E}(r) = \{e^F_1, \dots, e^I_1, \dots\}$ (eq. 1). `pick_figure_study` takes the first test study with
# the most sentences up to nine (the paper shows 5 + 4). Panel (b) shows what a reward actually receives: rows of
# numbers with no order and no section headers beyond the F / I split. Panel (c) places the set among 400 distinct
# bank sentences (grey, `distinct_context`: rows of the bank matrices, no encoder call) by a PCA fitted on all of
# them. Two dimensions of the encoder's hundreds (768 for all-mpnet-base-v2) keep little of the geometry: read (c) for where the report sits among others, not
# for distances between its own sentences; the table after the figure gives those, as cosines.

# %%
test = load_split(cfg, "test")
ex = test[geometry.pick_figure_study(test, max_sentences=9)]
F_ex, I_ex = split_sentences(ex.findings), split_sentences(ex.impression)
EF, EI = emb.encode(F_ex), emb.encode(I_ex)
ctx = geometry.distinct_context(bank.sentences["findings"] + bank.sentences["impression"],
                       np.concatenate([bank.matrix("findings"), bank.matrix("impression")]), 400, cfg.seed)
with style():
    fig = plot_report_embedding(F_ex, I_ex, EF, EI, context=ctx,
                                title=f"Fig. 1 · study {ex.study_id} ({cfg.name} profile, {emb.encoder_id.split('@')[0]})")
save_fig(fig, "01_report_embedding", cfg)
plt.show()
# which Findings sentence each Impression sentence is closest to (cosine similarity)
sim_IF = EI @ EF.T
with pd.option_context("display.max_colwidth", None):  # sentences whole: they are what the table is about
    display(pd.DataFrame({"Impression sentence": I_ex, "cosine": sim_IF.max(axis=1).round(2),
                          "closest Findings sentence": [F_ex[i] for i in sim_IF.argmax(axis=1)]}))

# %% [markdown]
# Is the Impression a restatement of the Findings? In one report the cosines above range widely, so measure it
# on the whole bank: for every Impression sentence, the highest cosine to its *own* report's Findings sentences,
# against the same number for every *other* report's Findings (`impression_restatement`). `beats_share` is the share
# of other reports whose Findings are less close than its own: 1.0 would mean every Impression sentence finds its
# own report first. A set-distance reward that compares a generated Impression with the reference Impression
# only sees this overlap indirectly; the number says how much one section tells about the other.

# %%
rest = geometry.impression_restatement(bank.sets("findings"), bank.sets("impression"))
rest_summary = pd.DataFrame([{"impression_sentences": len(rest), "own_median": rest["own"].median(),
                              "others_median": rest["others_median"].median(),
                              "beats_share_mean": rest["beats_share"].mean()}])
save_table(rest_summary, table_names.IMPRESSION_RESTATEMENT, cfg, encoder_id=emb.encoder_id)
rest_summary.round(2)

# %% [markdown]
# ## 8. What the geometry looks like
# Left: cosine similarity between sentences shown in pairs (blocks of two along the diagonal). The first pair is a
# hand-written paraphrase (P: the same finding in other words). Each further pair is an anchor sentence A, chosen
# spread out over the bank's distinct Findings sentences (`spread_anchor_pairs`: greedy farthest-point picks), and
# N, its nearest *other* sentence. Right: for up to 300 sampled bank Findings sentences, the cosine to the nearest
# different sentence (`nearest_other_similarity`). What to look at: whether the paraphrase scores above the
# unrelated pairs off the blocks, and where the histogram's mass lies. A high nearest-neighbour cosine means the
# bank holds close variants of most sentences, which is what best-of-K selection against the bank (notebook 05)
# relies on; it does not say the variants mean the same thing (the next cell checks that).

# %%
uniq = list(dict.fromkeys(bank.sentences["findings"]))
U = emb.encode(uniq).astype(np.float64)
order = geometry.spread_anchor_pairs(U, max(1, n_show // 2))
paraphrase = ["The heart size is normal.", "Heart size is within normal limits."]
shown = paraphrase + [uniq[k] for k in order]
tags = ["P1", "P2"] + [f"{'A' if k % 2 == 0 else 'N'}{k // 2 + 1}" for k in range(len(order))]
V = np.concatenate([emb.encode(paraphrase).astype(np.float64), U[order]])
S = V @ V.T
M = bank.matrix("findings").astype(np.float64)
nn_sim = geometry.nearest_other_similarity(M, rng.choice(M.shape[0], size=min(300, M.shape[0]), replace=False))
with style():
    fig = plot_sentence_geometry(shown, tags, S, nn_sim,
                                 title=f"{emb.encoder_id.split('@')[0]}: sentence geometry ({cfg.name} profile)")
    save_fig(fig, "01_sentence_geometry", cfg)
plt.show()
geo = geometry.geometry_summary(S, nn_sim)
save_table(geo, table_names.SENTENCE_GEOMETRY, cfg, encoder_id=emb.encoder_id)
geo.round(3)

# %% [markdown]
# A near neighbour is not always a synonym. Sentence encoders are trained on general text, where "the heart is
# enlarged" and "the heart is normal in size" are about the same topic. `opposite_neighbours` labels every distinct
# bank Findings sentence and its nearest other sentence with the offline labeler of notebook 00 and keeps the
# pairs where one reads a finding as present and the other as absent. The count is a lower bound (the labeler reads
# only the 14 CheXpert observations, and a grade such as mild vs large is not an opposite here); the pairs are
# shown whole, since the wording is the point. An anchor pair of the figure above may be one of them: compare its
# cosine with the paraphrase pair's. Notebook 02's negation-aware settings start from this.

# %%
opp = geometry.opposite_neighbours(uniq, U, label_report)
opp_summary = pd.DataFrame([{"sentences": opp.attrs["n_sentences"], "opposite": len(opp),
                             "max_cosine": opp["cosine"].max() if len(opp) else float("nan")}])
save_table(opp_summary, table_names.OPPOSITE_NEIGHBOURS, cfg, encoder_id=emb.encoder_id)
print(f"{len(opp)} of {opp.attrs['n_sentences']} distinct Findings sentences have an opposite nearest neighbour")
with pd.option_context("display.max_colwidth", None):
    display(opp.head(5).round(2))

# %% [markdown]
# ## Conclusion
# Generated from this run's tables (`results/01_embedding_cache`, `01_sentence_geometry`,
# `01_impression_restatement`, `01_opposite_neighbours`) by `sdrlib.embedding.geometry.embedding_conclusion`.
# Everything here describes one encoder on one corpus; no two systems are compared, so no sentence claims one is
# better.

# %% tags=["conclusion"]
print("\n".join(geometry.embedding_conclusion(cfg.results_dir)))
