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
# From a free-text report to two unordered sets of unit-norm sentence vectors: section split, sentence
# segmentation, the `<think>/<answer>` template, the frozen encoder with its on-disk cache, and the packed
# bank of training reports that selection and pruning read (paper sec. 3.1-3.3).

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
n_show: int = 6  # example sentences in the similarity heatmap

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.embedding import ReportBank, SentenceEmbedder
from sdrlib.plots import save_fig, save_table, style
from sdrlib.reports import build_template, format_reward, parse_template, split_report, split_sentences
from sdrlib.utils import set_seed

cfg = load_profile(profile)
set_seed(cfg.seed)
print(cfg.name, cfg.embedding.encoder, cfg.cache_dir)

# %% [markdown]
# ## 1. Sections
# MIMIC-CXR reports are free text with headers. `split_report` keeps the text under `FINDINGS:` and
# `IMPRESSION:` (any case) and stops at any other known header.

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
# `split_sentences` uses pysbd and keeps abbreviations (`approx.`), decimals and placeholders (`___`) inside
# their sentence, strips numbered-list markers and drops fragments without a letter.

# %%
F = split_sentences(sections.findings)
I = split_sentences(sections.impression)
assert I == ["Mild cardiomegaly.", "Small left pleural effusion."]
F, I

# %% [markdown]
# ## 3. The template and the format reward
# The policy writes `<think> Findings </think> <answer> Impression </answer>`. `format_reward` is 1 only when each
# tag occurs exactly once, in order, around non-empty content, with nothing else outside (paper sec. 3.2).

# %%
target = build_template(sections.findings, sections.impression)
cases = {
    "target": target,
    "no tags": sections.findings,
    "reordered": "<answer> x </answer> <think> y </think>",
    "nested": "<think> a <think> b </think> </think> <answer> c </answer>",
    "empty answer": "<think> a </think> <answer>  </answer>",
    "chatter after": target + " Hope this helps!",
}
pd.DataFrame({"R_fmt": {k: format_reward(v) for k, v in cases.items()}})

# %%
assert parse_template(target) == sections

# %% [markdown]
# ## 4. The frozen encoder and its cache
# Each sentence becomes a unit-norm vector. The cache is keyed by encoder identity and normalised text, so a
# sentence is encoded once per encoder, across runs.

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

# %%
train = load_split(cfg, "train")
n_bank = len(train) if cfg.embedding.bank_size == 0 else min(cfg.embedding.bank_size, len(train))
records = train[:n_bank]
findings = [r.findings for r in records]
impressions = [r.impression for r in records]

# The first build encodes what the on-disk cache lacks (on a fresh run: every unique sentence, the
# cold cost); the second must be served from the cache alone.
emb.reset_stats()
t0 = time.perf_counter(); bank = ReportBank.build(emb, findings, impressions, ids=[r.study_id for r in records])
t_first = time.perf_counter() - t0
first = emb.stats.copy()
emb.reset_stats()
t0 = time.perf_counter(); bank = ReportBank.build(emb, findings, impressions, ids=[r.study_id for r in records])
t_warm = time.perf_counter() - t0
assert emb.stats["forward_calls"] == 0, "a warm re-run must not call the encoder"

# %%
n_sent = sum(len(bank.sentences[s]) for s in ("findings", "impression"))
n_unique = len(set(bank.sentences["findings"]) | set(bank.sentences["impression"]))
stats = pd.DataFrame([
    {"reports": len(bank), "sentences": n_sent, "unique sentences": n_unique,
     "sentences per unique": n_sent / max(n_unique, 1),
     "encoded at first build": first["encoded"], "cache hits at first build": first["hits"],
     "encoder calls (first)": first["forward_calls"], "encoder calls (warm)": emb.stats["forward_calls"],
     "first s": t_first, "warm s": t_warm, "first/warm": t_first / max(t_warm, 1e-9),
     "truncated sentences": first["truncated"]}
])
save_table(stats, "01_embedding_cache", cfg, encoder_id=emb.encoder_id)
stats

# %% [markdown]
# ## 6. The bank
# One sentence matrix plus offsets per section; saved without pickle and tied to the encoder identity, so loading it
# against another encoder fails loudly.

# %%
bank_path = bank.save(cfg.cache_dir / "banks" / f"{cfg.name}_train")
bank = ReportBank.load(bank_path, expected_encoder_id=emb.encoder_id)
pd.DataFrame({s: {"reports": len(bank), "sentences": bank.matrix(s).shape[0], "dim": bank.matrix(s).shape[1],
                  "mean per report": float(np.diff(bank.offsets(s)).mean()),
                  "empty sets": int((np.diff(bank.offsets(s)) == 0).sum())}
              for s in ("findings", "impression")})

# %% [markdown]
# ## 7. What the geometry looks like
# Cosine similarity between a few bank sentences (left) and the distribution of nearest-neighbour similarities of
# Findings sentences to the *other* reports' sentences (right): paraphrases sit close, different findings far.

# %%
uniq = list(dict.fromkeys(bank.sentences["findings"]))[:n_show]
S = emb.encode(uniq) @ emb.encode(uniq).T
M = bank.matrix("findings").astype(np.float64)
take = rng.choice(M.shape[0], size=min(300, M.shape[0]), replace=False)
sims = M[take] @ M.T
sims[sims > 0.9999] = -1  # ignore identical sentences
with style():
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1.2, 1], "wspace": 0.45})
    im = a.imshow(S, vmin=0, vmax=1, cmap="viridis")
    a.grid(False)
    short = [u if len(u) <= 45 else u[:44] + "…" for u in uniq]
    a.set_yticks(range(len(uniq)), short, fontsize=7); a.set_xticks([])
    fig.colorbar(im, ax=a, fraction=0.046, label="cosine similarity")
    b.hist(sims.max(axis=1), bins=30, color="#2a9d8f")
    b.set_xlabel("similarity to nearest *different* sentence"); b.set_ylabel("sentences")
    fig.suptitle(f"{emb.encoder_id}: sentence geometry ({cfg.name} profile)")
    save_fig(fig, "01_sentence_geometry", cfg)
