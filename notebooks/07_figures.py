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
# # 07 · Figures and headline tables
# **The question.** Which of the paper's figures and headline tables has this run reproduced, which are missing
# (and which notebook would make them), does this run show what the paper reports (section 3b: each claim the
# notebooks reproduce, the paper's number beside this run's), and are the figures drawn in one readable,
# colour-blind-safe style?
#
# Every paper figure and headline table this run produced, in the paper's order, and `results/figure_index.md`:
# each file, the notebook that writes it and the paper figure or table it reproduces. The map itself lives in
# `sdrlib.results.FIGURE_INDEX` (one table); this notebook only reads `figures/` and `results/`, so it runs alone
# on whatever exists and lists what is missing and which notebook to run for it. All figures are drawn by the
# notebooks in the house style of `sdrlib.plots.style`: fixed dpi, fonts of at least 9 pt
# (`tests/plots/test_plots_style.py` draws every figure function on small synthetic data, measures each text and
# scans the notebooks and `sdrlib` for smaller font sizes) and the colour-blind-safe Okabe-Ito palette as the
# colour cycle. Every colour that marks a category (lines, bars, points, the sets and links of Fig. 2a) is an
# Okabe-Ito one; figures that colour by a value use colour maps instead, which are not Okabe-Ito: the heatmaps
# (viridis, PuOr for embeddings) and notebook 06's quality vs tokens, whose pruning fraction p (an ordered value) is
# coloured along viridis; X-ray images are grey. Section 2b measures, on each figure shown, how much of its
# coloured area is in the palette, so the claim can be checked figure by figure rather than taken on trust.

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
overrides: dict = {}  # dotted profile keys to values, e.g. {"grpo.max_steps": 10} (run_all.sh --set KEY=VALUE)

# %%
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Image, Markdown, display

from sdrlib import table_names
from sdrlib.config import load_profile
from sdrlib.experiments import paper_comparison
from sdrlib.experiments.figures import figure_conclusions, palette_table
from sdrlib.plots import plot_gallery, style
from sdrlib.results import figure_index, missing_summary, save_fig, save_table

cfg = load_profile(profile, overrides)
print(cfg.name, "results:", cfg.results_dir, "figures:", cfg.figures_dir)

# %% [markdown]
# ## 1. What this run produced
# One row per file found or per expected file that is missing; `not in index` marks a file no entry of
# `FIGURE_INDEX` names (add it there). This notebook's own files (the overview image, the palette table, the
# comparison with the paper) are written further down, so they are left out here; section 4 checks the whole
# index, them included, after they exist.

# %%
index = figure_index(cfg.results_dir, cfg.figures_dir)
own = index.notebook == "07_figures"  # written below, checked in section 4
print(index[~own].status.value_counts().to_string())
print(missing_summary(index[~own]))

# %% [markdown]
# ## 2. The paper's figures and headline tables
# In the paper's order (Fig. 1, 2a, 2b, 3-5, Tables 1-6 and 3 / 23, then pruning and our additions); each with the
# notebook that made it.

# %%
shown = index[(index.status == "present") & index.headline]
for r in shown.itertuples():
    path = (cfg.figures_dir if r.kind == "figure" else cfg.results_dir) / r.file.split("/", 1)[1]
    if r.kind == "figure":
        display(Markdown(f"**{r.paper or 'ours'}** · `{r.file}` ({r.notebook}): {r.what}"))
        display(Image(filename=str(path)))
    else:  # the tables are shown, rounded and cut to their key rows, in the notebook that makes them
        csv = path.with_suffix(".csv")
        shape = "{} rows x {} columns".format(*pd.read_csv(csv).shape) if csv.is_file() else "?"
        display(Markdown(f"**{r.paper or 'ours'}** · `{r.file}` ({r.notebook}, {shape}): {r.what}"))
if shown.empty:
    print("no paper figure or headline table yet: run the notebooks first (./run_all.sh)")

# %% [markdown]
# ## 2b. Which figures use the Okabe-Ito palette?
# `sdrlib.experiments.figures.palette_share` reads each PNG shown above and counts its coloured pixels (white,
# greys and black carry no hue and are left out), then the share of those within a small distance of one of
# the eight Okabe-Ito colours. Anti-aliased line edges blend with the background and count as off-palette, so even
# a figure drawn wholly in the palette reads somewhat below 1; a heatmap drawn with viridis reads near 0. The table
# is saved as `results/07_palette` and read back by the conclusion.

# %%
shown_figs = shown[shown.kind == "figure"]
palette = palette_table([cfg.figures_dir / f.split("/", 1)[1] for f in shown_figs.file], list(shown_figs.file))
save_table(palette, table_names.PALETTE, cfg)
palette.round(2)

# %% [markdown]
# ## 3. One overview image
# Thumbnails of the paper figures present, for a quick look (and the gallery of docs/results.md).

# %%
figs = shown[(shown.kind == "figure") & (shown.paper != "")]
if len(figs):
    with style():
        fig = plot_gallery([cfg.figures_dir / f.split("/", 1)[1] for f in figs.file],
                           [f"{p} ({n})" for p, n in zip(figs.paper, figs.notebook)])
    save_fig(fig, "07_overview", cfg)
    plt.close(fig)
    print(f"figures/07_overview.png: {len(figs)} figures")
else:
    print("no paper figure present yet: no overview written")

# %% [markdown]
# ## 3b. This run against the paper
# The paper's claims that notebooks 04-06 reproduce, on the Findings section: GRPO with the set-distance rewards
# against SFT and against R_exact (Tables 1-2), best-of-K selection against random (Table 3) and pruning while
# decoding (Table 4). For each: the paper's number and where it stands, this run's number from its result tables,
# and the verdict of the project's rule, the same word the notebook that wrote the table uses
# (`sdrlib.experiments.paper_comparison`, whose docstring gives the scope and the source of every paper number).
# The paper tests none of its differences, and its numbers come from real models on real data while this run's come
# from a tiny policy on synthetic data: read the direction first and the size only roughly. CXB-14 stands for the
# paper's CheXbert F1 (the offline labeler's CheXpert-14 macro F1 unless CheXbert is installed). The saved
# `results/07_paper_comparison` adds each number's source and the reading: the verdict beside the paper's direction
# and, for GRPO, whether a difference of the paper's size was within what this run could detect.

# %%
comparison = paper_comparison.comparison_table(cfg.results_dir)
save_table(comparison, table_names.PAPER_COMPARISON, cfg)
display(Markdown(paper_comparison.comparison_view(comparison)))

# %% [markdown]
# ## 4. The index file
# Written after the overview, so it lists it too: `results/figure_index.md` (and `.csv`, `.meta.json`).

# %%
index = figure_index(cfg.results_dir, cfg.figures_dir)
out = index.drop(columns=["headline"])
save_table(out, table_names.FIGURE_INDEX_TABLE, cfg)
print(f"results/figure_index.md: {(index.status == 'present').sum()} present, {(index.status == 'missing').sum()} missing, "
      f"{(index.status == 'not in index').sum()} not in the index")
absent = out[out.status != "present"]
if len(absent):
    display(absent)

# %% [markdown]
# ## 5. Conclusion
# Generated from this run's files. The first line answers whether this run reproduces the paper's claims
# (`sdrlib.experiments.paper_comparison.comparison_conclusion` reads `results/07_paper_comparison.csv` back), the
# next lines give each claim's reading; then `sdrlib.experiments.figures.figure_conclusions` reads
# `results/figure_index.csv` and `results/07_palette.csv`: what the run has, what is missing and which notebook
# writes it, and which figures shown are mostly in the Okabe-Ito palette. A figure below the 50 % line is usually a
# heatmap drawn with a sequential colour map, which is readable by colour-blind readers too but is not the
# categorical palette.

# %% tags=["conclusion"]
print("\n".join([*paper_comparison.comparison_conclusion(cfg.results_dir), *figure_conclusions(cfg.results_dir)]))
