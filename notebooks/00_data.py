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
# # 00 · Data
# **Question: what does the model see, and how far can the labels we score it with be trusted?** A set-distance
# reward compares generated sentences with reference sentences, and clinical F1 compares the labels an offline
# labeler reads from both; so before any model, this notebook looks at the reports (how varied their language is),
# the images (how much a linear probe reads from the pixels) and the labeler (how often it misreads a sentence).
#
# The profile's dataset arrives as one record type: synthetic chest X-rays with reports and CheXpert-14 labels
# (default), or MIMIC-CXR / ReXGradient / IU-Xray from your own download. Every metric, reward and abbreviation the
# notebooks use (CXB-14, RG-E, BS-F1, R_Cham, K, N, MBR, strata, ...) is defined in `docs/glossary.md`.

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
overrides: dict = {}  # dotted profile keys to values, e.g. {"grpo.max_steps": 10} (run_all.sh --set KEY=VALUE)
n_examples: int = 6  # example studies in the figure
probe_size: int = 32  # side of the downsampled image for the linear pixel probe

# %%
import time

import matplotlib.pyplot as plt
import pandas as pd

from sdrlib import table_names
from sdrlib.config import load_profile, repo_root
from sdrlib.data import SPLITS, load_split, records_to_frame
from sdrlib.data.stats import (data_conclusion, language_table, pick_examples, pixel_probe, prevalence_table,
                               sentence_counts, summary_table)
from sdrlib.clinical import label_report
from sdrlib.clinical.labeler_check import LABELER_COLUMNS, labeler_mistakes, labeler_summary, labeler_tables
from sdrlib.plots import plot_examples, plot_findings_gallery, plot_prevalence, plot_sentence_counts, style
from sdrlib.results import save_fig, save_table
from sdrlib.utils import quiet, set_seed

cfg = load_profile(profile, overrides)
set_seed(cfg.seed)
quiet()  # no raw progress bars (transformers "Loading weights", datasets, hub downloads)
print(cfg.name, cfg.data)

# %% [markdown]
# ## 1. Load (or generate) the splits
# For `data.source: synthetic` the first call generates `data/synthcxr/<profile>/` (Parquet + PNG +
# `manifest.json` with generator version, seed, sizes and file hashes); later calls reuse it unless the
# profile changed. Real-data loaders report what they skipped and why.

# %%
t0 = time.perf_counter()
splits, reports = {}, {}
for s in SPLITS:
    splits[s], reports[s] = load_split(cfg, s, with_report=True)
    print(reports[s].summary())
print(f"loaded in {time.perf_counter() - t0:.1f} s")

# %% [markdown]
# ## 2. Examples
# Images next to their reports and labels (`+` positive, `?` uncertain; negated observations counted),
# one per stratum in turn (`pick_examples`). Read a report against its label line: every finding the text asserts,
# hedges ("may represent") or denies should appear there with the matching sign, and that correspondence is what
# the labeler of section 4 has to recover from the text alone.

# %%
with style():
    fig = plot_examples(pick_examples(splits["test"], n_examples, seed=cfg.seed))
save_fig(fig, "00_examples", cfg)
plt.show()

# %% [markdown]
# What the pixels carry (synthetic data only): one patient, drawn with each finding in turn. Patient-level
# nuisance (rotation, scale, habitus, inspiration, exposure, noise) changes from study to study.

# %%
if cfg.data.source in ("synthetic", "synthcxr"):
    with style():
        fig = plot_findings_gallery(cfg.data.image_size, seed=cfg.seed)
    save_fig(fig, "00_findings_gallery", cfg)
    plt.show()

# %% [markdown]
# ## 3. Statistics
# Studies per split, mean sentences per section, unique-sentence ratio (distinct / all sentences of a
# section in the split) and the paper's strata (appendix F: no finding / single / multi, from the labels).
#
# How a study gets its stratum (`sdrlib.data.stratum`): count the 12 pathologies among the CheXpert-14
# observations, that is all except *No Finding* and *Support Devices*, whose label is positive (1) or uncertain
# (-1). None is `no_finding`, one is `single`, two or more are `multi`. A study whose only positive label is a
# tube or a pacemaker is therefore `no_finding`: a device is not an abnormality of the patient. The labels come
# from the dataset (synthetic ground truth, MIMIC-CXR's CheXpert file) or, where a dataset has none, from the
# offline labeler of section 4.

# %%
summary = summary_table(splits)
save_table(summary, table_names.DATASET_SUMMARY, cfg, data_source=cfg.data.source)
summary.round(3)

# %% [markdown]
# How much does the report language vary? Exact-match rewards are sparse only when reports say the
# same finding in many ways. The training split's language beside 2,000 public IU-Xray reports
# measured with the same definitions (sentences from `split_sentences`, words = lower-cased alphabetic
# tokens) and the targets the synthetic grammar is built to meet. `top_findings_set_pct` is the share of
# reports whose Findings sentences, as a set, are the most common one. Column `counts` says what each row
# counts, for both corpora: compare like with like. IU-Xray's vocabulary was counted over Findings only, so it
# sits beside our Findings-only count (`distinct_words_findings`), not beside both sections (`distinct_words`,
# which has no IU-Xray number); the printed line puts the two like-for-like numbers side by side. A vocabulary
# count grows with corpus size, so on a small profile it sits below the target without saying the grammar is poor.

# %%
lang = language_table(splits["train"])
save_table(lang, table_names.REPORT_LANGUAGE, cfg, data_source=cfg.data.source)
v = lang.set_index("statistic")
print(f"distinct words, Findings only: {v.loc['distinct_words_findings', 'this corpus']:,.0f} here vs "
      f"{v.loc['distinct_words_findings', 'IU-Xray reference']:,.0f} in IU-Xray; both sections here: "
      f"{v.loc['distinct_words', 'this corpus']:,.0f}")
lang.round(3)

# %% [markdown]
# Label prevalence per split: the share of studies where each observation is positive, uncertain or negative
# (mentioned as absent); the rest do not mention it. Rare labels matter twice later: clinical F1 on a label with
# two positive test studies moves in large steps, and the pixel probe below cannot score a label without
# positives in the test split.

# %%
prev = prevalence_table(splits)
if len(prev.columns):
    save_table(prev.reset_index(), table_names.LABEL_PREVALENCE, cfg, data_source=cfg.data.source)
    with style():
        fig = plot_prevalence(prev, "train")
    save_fig(fig, "00_label_prevalence", cfg)
    plt.show()
prev.round(1)

# %% [markdown]
# Sentences per section: the sizes of the sets a set distance compares. The rewards compare each section with its
# own reference (R_sem adds a Findings term and an Impression term, notebook 04), so read the two rows of each split
# separately. The Findings sets are the larger ones; most Impressions hold one or two sentences (the quartiles in
# the table), so an Impression term compares very small sets.

# %%
counts = {s: sentence_counts(r) for s, r in splits.items() if r}
with style():
    fig = plot_sentence_counts(counts)
save_fig(fig, "00_sentence_counts", cfg)
plt.show()
pd.concat({s: c[["findings", "impression"]].describe().T for s, c in counts.items()}).round(2)

# %% [markdown]
# How readable are the images? A ridge classifier on raw `probe_size`² pixels, trained on the train split,
# scored by test AUROC per observation (positive or uncertain vs the rest). Near 0.5: little linear
# signal (rib fractures are subtle on purpose); near 1.0: the finding is plainly visible. The AUROC is blank where
# the train split has fewer than 5 positive or 5 negative studies or the test split has one class only; read
# `n_pos_test` before the AUROC, since an AUROC from one or two positive studies can land anywhere.

# %%
labelled = all(r.labels is not None for r in splits["train"] + splits["test"])
if labelled and splits["train"] and splits["test"]:
    probe = pixel_probe(splits["train"], splits["test"], size=probe_size, seed=cfg.seed)
    save_table(probe, table_names.PIXEL_PROBE, cfg, data_source=cfg.data.source)
    display(probe.round(3))

# %% [markdown]
# ## 4. The offline CheXpert-14 labeler
# `label_report` reads mentions with negation and uncertainty scope (NegEx/ConText-style rules, no model: a trigger
# phrase such as "no" or "may represent" opens a scope over the words next to it, and a finding inside it is read
# negative or uncertain).
# Per observation and class (pos = 1, neg = 0, unc = -1): precision and recall against (a) the synthetic
# ground truth of the test split, (b) the hand-written real-style sentences in
# `tests/fixtures/labeler_sentences.csv` (`dev`: written with the rules; `heldout`: written afterwards and
# never used to change a rule).
#
# Expect (a) to be perfect or nearly so, and do not read it as the labeler's accuracy on real reports. The
# synthetic generator (`sdrlib.data.synthcxr`) writes every sentence from a template that carries the labels
# it expresses, and its vocabulary (finding names, negation and hedging cues such as "no", "may represent",
# "cannot be excluded") is the one the labeler's rules were written for: the study labels are, by
# construction, what a perfect labeler reads from the text. Score (a) only checks that generator and labeler
# agree. The hand-written sentences (b), above all the `heldout` set, are the honest estimate.

# %%
label_report("Mild cardiomegaly. No pleural effusion. Right basilar opacity may represent pneumonia.")

# %% [markdown]
# `labeler_tables` runs `evaluate_labeler` on each source; one table per source is saved (`results/00_labeler_*.md`,
# every observation). The printed lines summarise each table over its 14 observations; accuracy counts "not
# mentioned" as a class, so it is high whenever most observations are absent, and the recall columns of the
# table below are the ones to read. The table keeps only the observations with an error somewhere.

# %%
sentences = pd.read_csv(repo_root() / "tests" / "fixtures" / "labeler_sentences.csv", keep_default_na=False)
tables = labeler_tables(sentences, splits["test"] if labelled else None)
for name, t in tables.items():
    slug = name.replace(" ", "_").replace("(", "").replace(")", "")
    save_table(t[LABELER_COLUMNS].reset_index(), table_names.labeler(slug), cfg, backend="offline-labeler")
    print(labeler_summary(name, t))
errs = pd.concat({name: t.loc[t["accuracy"] < 1, LABELER_COLUMNS] for name, t in tables.items()},
                 names=["set", "observation"])
errs.round(3) if len(errs) else print("no observation with an error in any set")

# %% [markdown]
# The hand-written sentences the labeler reads wrongly, each whole with its gold and predicted labels (1 positive,
# 0 negative, -1 uncertain), and at the end how many of them are a missed hedge: gold uncertain because of a word
# such as "may represent" or "possibly", read as positive. That distinction is one a report generator must get
# right too, and a reward built on this labeler inherits the labeler's blind spots, so the exact wording is the
# lesson here.

# %%
mistakes = labeler_mistakes(sentences)
for m in mistakes.itertuples():
    print(f"[{m.set}] {m.text}\n    gold:      {m.gold}\n    predicted: {m.predicted}")
print(f"{int(mistakes['hedge_missed'].sum())} of {len(mistakes)} mistakes read an uncertain finding as positive")

# %% [markdown]
# Records as a table, for later notebooks: `records_to_frame` gives one row per study with its texts (`findings`,
# `impression`), one column per observation (1, 0, -1, or empty when not mentioned) and the stratum. The texts are
# left out of the view below (the example figure shows reports whole); the frame keeps them.

# %%
frame = records_to_frame(splits["val"])
print(f"{len(frame)} rows x {frame.shape[1]} columns")
frame.drop(columns=["findings", "impression"]).head()

# %% [markdown]
# ## Conclusion
# Generated from this run's tables (`results/00_dataset_summary`, `00_report_language`, `00_pixel_probe`,
# `00_labeler_*`) by `sdrlib.data.stats.data_conclusion`. It describes the data and the labeler; nothing is compared
# between systems, so no sentence claims a direction.

# %% tags=["conclusion"]
print("\n".join(data_conclusion(cfg.results_dir)))
