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
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sdrlib import selection as sel
from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.embedding import ReportBank, SentenceEmbedder
from sdrlib.plots import plot_report_embedding, style
from sdrlib.results import save_fig, save_table

# Progress bars are plain text (tqdm's console bar): readable in JupyterLab and in papermill's logs alike. Without
# ipywidgets, tqdm.auto says so once ("IProgress not found") and falls back to exactly that bar; silence the notice.
warnings.filterwarnings("ignore", message="IProgress not found")
from sdrlib.reports import build_template, parse_template, split_report, split_sentences
from sdrlib.rewards import format_reward
from sdrlib.utils import quiet, set_seed

cfg = load_profile(profile)
set_seed(cfg.seed)
quiet()  # no raw progress bars (transformers "Loading weights", datasets, hub downloads)
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
# The policy writes `<think> Findings </think> <answer> Impression </answer>`. Under the paper's rule (sec. 3.2)
# R_fmt is 1 only when each tag occurs exactly once, in order, around non-empty content, with nothing else outside.
# Training scores a stricter rule (`format_reward(text)`, mode `"training"`): the paper's, and no chat or vision
# special token, no control character and at most 4,000 characters, so a completion that leaks `<|im_end|>` into
# its Findings earns nothing.

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
# the bank: embedding.bank_size training reports drawn at random with the profile's seed (paper C.4), in split
# order; the draw is recorded in the saved bank's meta (0 or more than the split: all of it)
records, draw = sel.draw_bank_records(train, cfg.embedding.bank_size, cfg.seed)
print(draw)
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
bank.meta.update(draw)
bank_path = bank.save(cfg.cache_dir / "banks" / f"{cfg.name}_train")
bank = ReportBank.load(bank_path, expected_encoder_id=emb.encoder_id)
pd.DataFrame({s: {"reports": len(bank), "sentences": bank.matrix(s).shape[0], "dim": bank.matrix(s).shape[1],
                  "mean per report": float(np.diff(bank.offsets(s)).mean()),
                  "empty sets": int((np.diff(bank.offsets(s)) == 0).sum())}
              for s in ("findings", "impression")})

# %% [markdown]
# ## 7. Figure 1: a report of this profile as a set of sentence embeddings
# The paper's Fig. 1 on this profile's data: a test study's report, split into its Findings sentences
# $s^F_i$ and Impression sentences $s^I_j$, each embedded on its own; the report *is* the set
# $\mathcal{E}(r) = \{e^F_1, \dots, e^I_1, \dots\}$ (eq. 1). The study is the first test study with the most
# sentences up to nine (the paper shows 5 + 4). The projection panel places the set among 400 distinct bank
# sentences (grey), by a PCA fitted on all of them; the table after it says which Findings sentence each
# Impression sentence is closest to (an Impression usually restates the main findings).

# %%
test = load_split(cfg, "test")
n_sents = [(len(split_sentences(r.findings)), len(split_sentences(r.impression))) for r in test]
ex_i = max(range(len(test)), key=lambda i: (sum(n_sents[i]) if sum(n_sents[i]) <= 9 else -1, n_sents[i][1]))
ex = test[ex_i]
F_ex, I_ex = split_sentences(ex.findings), split_sentences(ex.impression)
EF, EI = emb.encode(F_ex), emb.encode(I_ex)
# context: 400 distinct bank sentences (their rows of the bank matrices, no encoder call)
bank_sents = bank.sentences["findings"] + bank.sentences["impression"]
bank_rows = np.concatenate([bank.matrix("findings"), bank.matrix("impression")])
first = list({t: i for i, t in reversed(list(enumerate(bank_sents)))}.values())
ctx = bank_rows[np.sort(np.random.default_rng(cfg.seed).choice(first, size=min(400, len(first)), replace=False))]
with style():
    fig = plot_report_embedding(F_ex, I_ex, EF, EI, context=ctx,
                                title=f"Fig. 1 · study {ex.study_id} ({cfg.name} profile, {emb.encoder_id.split('@')[0]})")
save_fig(fig, "01_report_embedding", cfg)
plt.show()
# which Findings sentence each Impression sentence is closest to (cosine similarity)
sim_IF = EI @ EF.T
pd.DataFrame({"Impression sentence": [f"I{j + 1}" for j in range(len(I_ex))],
              "closest Findings sentence": [f"F{int(i) + 1}" for i in sim_IF.argmax(axis=1)],
              "cosine": sim_IF.max(axis=1).round(3)})

# %% [markdown]
# ## 8. What the geometry looks like
# Left: cosine similarity between sentences shown in pairs (blocks of two along the diagonal). The first pair is a
# hand-written paraphrase (P: the same finding in other words). Each further pair is an anchor sentence A, chosen
# spread out over the bank, followed by N, its nearest *other* sentence in the bank: a variant of the same
# finding, and sometimes its opposite (the encoder sees the topic more than the negation or the grade; notebook
# 02's negation-aware settings start from this). Right: for up to 300 bank Findings sentences, the similarity to
# the nearest different sentence. The printed lines below the figure give the numbers.

# %%
uniq = list(dict.fromkeys(bank.sentences["findings"]))
U = emb.encode(uniq).astype(np.float64)
n_pairs = max(1, n_show // 2)
# anchors: greedy farthest-point picks (deterministic, start at the first sentence), then each one's nearest other sentence
anchors = [0]
for _ in range(n_pairs - 1):
    anchors.append(int(np.argmin((U @ U[anchors].T).max(axis=1))))
SU = U @ U.T
np.fill_diagonal(SU, -1)
order = [k for a in anchors for k in (a, int(np.argmax(SU[a])))]
paraphrase = ["The heart size is normal.", "Heart size is within normal limits."]
shown = paraphrase + [uniq[k] for k in order]
tags = ["P1", "P2"] + [f"{'A' if k % 2 == 0 else 'N'}{k // 2 + 1}" for k in range(len(order))]
V = np.concatenate([emb.encode(paraphrase).astype(np.float64), U[order]])
S = V @ V.T
n_pairs += 1
pair_sim = np.array([S[2 * p, 2 * p + 1] for p in range(len(shown) // 2)])  # P1-P2, A1-N1, ...
cross_sim = np.array([S[i, j] for i in range(len(shown)) for j in range(i + 1, len(shown)) if not (i % 2 == 0 and j == i + 1)])
M = bank.matrix("findings").astype(np.float64)
take = rng.choice(M.shape[0], size=min(300, M.shape[0]), replace=False)
sims = M[take] @ M.T
sims[sims > 0.9999] = -1  # ignore identical sentences
nn_sim = sims.max(axis=1)
with style():
    fig, (a, b) = plt.subplots(1, 2, figsize=(15, 0.55 * len(shown) + 2.4),
                               gridspec_kw={"width_ratios": [1.5, 1], "wspace": 0.35})
    im = a.imshow(S, vmin=0, vmax=1, cmap="viridis")
    a.grid(False)
    rows = [f"{g}  {t if len(t) <= 60 else t[:59] + '…'}" for g, t in zip(tags, shown)]
    a.set_yticks(range(len(shown)), rows, fontsize=9)
    a.set_xticks(range(len(shown)), tags, fontsize=9)
    a.set_xlabel("P = hand-written paraphrase pair; A = anchor, N = its nearest other bank sentence")
    for (i, j), v in np.ndenumerate(S):
        a.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=9, color="black" if v > 0.6 else "white")
    for p in range(1, n_pairs):
        a.axhline(2 * p - 0.5, color="white", linewidth=2); a.axvline(2 * p - 0.5, color="white", linewidth=2)
    fig.colorbar(im, ax=a, fraction=0.046, label="cosine similarity")
    b.hist(nn_sim, bins=30, color="C0")
    b.set_xlabel("cosine similarity to the nearest different sentence")
    b.set_ylabel("Findings sentences")
    b.set_title(f"{len(take)} sampled Findings sentences", fontsize=10)
    fig.suptitle(f"{emb.encoder_id.split('@')[0]}: sentence geometry ({cfg.name} profile)")
    save_fig(fig, "01_sentence_geometry", cfg)
plt.show()
print(f"paraphrase pair P1-P2: cosine {pair_sim[0]:.3f}; anchor and nearest: "
      + ", ".join(f"A{p}-N{p} {v:.3f}" for p, v in enumerate(pair_sim[1:], 1))
      + f"; unpaired sentences shown: mean {cross_sim.mean():.3f} (max {cross_sim.max():.3f})")
print(f"nearest different sentence: median cosine {np.median(nn_sim):.3f}, "
      f"{(nn_sim >= 0.9).mean():.0%} of the sampled sentences have one at >= 0.9")
