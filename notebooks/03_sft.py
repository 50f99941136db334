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
# # 03 · Supervised fine-tuning
# **Question: after supervised fine-tuning, does the policy write reports that depend on the image?** GRPO
# (notebook 04) starts from this policy and can only sharpen what it already does: if the SFT policy ignores the
# image, a set-distance reward has nothing image-specific to reward. This notebook trains the policy to write
# `<think> Findings </think> <answer> Impression </answer>` from the image (paper sec. 4, appendix C.2): a tiny
# Qwen3-VL built from scratch on CPU, Qwen3-VL / Gemma3 with LoRA adapters through Unsloth (a library for fast
# fine-tuning on a GPU) on GPU. It then tests image dependence
# two ways, on sampled reports against image-blind baselines (section 4) and on the likelihood of the reference
# report with the right and a wrong image, and ends with what its result files support.

# %% tags=["parameters"]
profile: str = "cpu"  # profile in configs/ (smoke, cpu, paper)
overrides: dict = {}  # dotted profile keys to values, e.g. {"grpo.max_steps": 10} (run_all.sh --set KEY=VALUE)
n_show: int = 4  # sample generations shown next to their images

# %%
import json
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sdrlib import models, training
from sdrlib import table_names
from sdrlib.config import load_profile
from sdrlib.data import load_split
from sdrlib.data.stats import pick_examples
from sdrlib.experiments import posttrain
from sdrlib.experiments import tables as compare
from sdrlib.experiments.sft_summary import report_variety, sft_conclusion
from sdrlib.metrics import paper_names
from sdrlib.metrics.suite import TemplateFormatWarning
from sdrlib.plots import plot_generations, plot_sft_loss, style
from sdrlib.results import save_fig, save_table
from sdrlib.reports import parse_template
from sdrlib.utils import quiet, set_seed

# %% [markdown]
# The profile fixes the policy, the data split and the training budget; `training.preflight` stops a profile that
# needs a GPU or model weights this machine lacks before any work. The printout names the policy and the split sizes.

# %%
cfg = load_profile(profile, overrides)
set_seed(cfg.seed)
pd.set_option("display.width", 120)  # tables as text: one line per row where it fits
quiet()  # no raw progress bars (transformers "Loading weights", datasets, hub downloads)
training.preflight(cfg)  # a paper profile without GPU or weights stops here, before any work
train, test = load_split(cfg, "train"), load_split(cfg, "test")
print(cfg.name, cfg.sft.policy, f"{len(train)} train / {len(test)} test studies")

# %% [markdown]
# ## 1. Policy and data
# On CPU the policy is a randomly initialised `Qwen3VLForConditionalGeneration` from a shrunk config, with a
# byte-level BPE tokenizer trained on the training reports and an image-only Qwen3-VL processor (no video
# processor, so no torchvision). Each training example is a prompt (image + instruction) and a completion
# (the templated report); the loss covers the completion only. With `sft.tiny_freeze_vision` (on in the cpu
# profile) the vision tower (the image encoder) keeps its random initialisation and only the merger (the projection
# that feeds the tower's patch features into the text model) trains
# (a design choice of the cpu profile; this notebook does not compare it with end-to-end training). Section 4
# measures whether the resulting policy reads the image.
#
# The cell prints one training example as the trainer sees it: the prompt (a chat message holding the image
# placeholder and the instruction) and, whole, the completion the loss is computed on.

# %%
ds = training.sft_dataset(train[:2], cfg.sft.max_images)
print(json.dumps(ds[0]["prompt"]), "\n->", ds[0]["completion"][0]["content"])

# %% [markdown]
# ## 2. Train
# `training.sft` reuses a finished run (`runs/<profile>/sft/seed<k>/final`) and resumes an interrupted one
# from its last checkpoint, but only when `run_key.json` matches what would produce it now (the training
# data's digest, the profile's training values, the seed, the training code and library versions); otherwise
# the folder is cleared and trained again, with a warning naming what changed. `run.json` records steps, time
# and parameter count. The printout gives those numbers for this run; on the smoke profile the run is a few steps
# only, enough to exercise the code, not to learn.

# %%
res = training.sft(cfg, train)
info = json.loads((res.path / "run.json").read_text())
print(f"SFT: {info['steps']} steps in {info['seconds']:.0f} s ({info['mean_step_seconds']:.2f} s/step), "
      f"{info['params']:,} parameters, {info['torch_threads']} torch thread(s)")

# %% [markdown]
# The loss curve is the teacher-forced cross-entropy of the report tokens (and, where the trainer logs it, the
# share of next tokens predicted exactly), both on the training batches: SFT runs without an evaluation split, so
# there is no validation loss to draw (the legend says so). A falling loss shows the policy learns the *text* of
# reports; it says nothing yet about the image, since a policy can lower this loss by learning the most common
# report. The held-out check is further down: the teacher-forced NLL per token of the test references under the
# final policy, with each study's own image and with another's (`sft_image_nll`).

# %%
curves = training.read_curves(res.path)
with style():
    fig = plot_sft_loss(curves, title=f"SFT ({posttrain.model_name(cfg)})")
    save_fig(fig, "sft_loss", cfg)
plt.show()

# %% [markdown]
# ## 3. Generations next to references
# One report per test study, decoded as the profile says (`sft.eval_do_sample`, `sft.eval_temperature`), cached
# next to the run. Two checks come first: the share of generations that parse as the template (a report GRPO
# can score at all), and how varied the reports are: how many distinct texts the policy wrote and how often its
# most frequent one occurs. A policy that writes one report for every study cannot be reading the image.

# %%
# with the shuffled-image control of section 4, side by side on `grpo.workers` processes: the same texts as one
# after the other (`posttrain.generate_side_by_side` says why); section 4 reads the control back from its cache
gens, _ = posttrain.generate_side_by_side(cfg, [{"policy_dir": res.final, "test_records": test},
                                               {"policy_dir": res.final, "test_records": test, "shuffle_images": True}])
valid = np.mean([parse_template(g) is not None for g in gens])
variety = report_variety(gens)
print(f"decoding: do_sample={cfg.sft.eval_do_sample}, temperature={cfg.sft.eval_temperature}\n"
      f"valid template: {valid:.1%} of {len(gens)} test generations; {variety['distinct']} distinct reports, "
      f"the most frequent one written {variety['modal_count']} time(s) ({variety['modal_share']:.0%})")

# %% [markdown]
# Reading a few generations next to their references shows what the numbers above mean. The studies are picked
# by `sdrlib.data.stats.pick_examples` (seeded, spread over the no-finding, single and multi-finding strata, so
# not only the mostly normal first studies); generated (GEN) and reference (REF) text is shown whole. Above each
# report, its findings judged against the study's labels: `ok` (in the labels and in the offline labeler's reading
# of the generated report), `missed` (in the labels only) and `hallucinated` (in the generated report only), over
# the 12 CheXpert pathologies; the title under the study id counts them.

# %%
picks = pick_examples(test, n_show, seed=cfg.seed)
row_of = {r.study_id: k for k, r in enumerate(test)}
with style():
    fig = plot_generations(picks, [gens[row_of[r.study_id]] for r in picks])
    save_fig(fig, "sft_samples", cfg)
plt.show()

# %% [markdown]
# When a sample above is a normal report where the reference states findings, that is this policy's commonest way
# to be wrong, not bad luck: many training studies are normal (notebook 00's strata give the share), most sentences
# of every report are normal statements, and a policy that reads the image only weakly (section 4 measures how
# much) does best on average by writing the likeliest text, a normal report. The line below counts it over the
# whole test split: the share of Findings sections the offline labeler reads with no positive finding, and the
# positive findings per section, for the references and for SFT.

# %%
normal = posttrain.positive_findings_table({("sft", cfg.seed): gens}, test).set_index("config")
print("Findings with no positive finding: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                        normal["share with no positive finding"].items())
      + "; positive findings per section: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                          normal["positives per report"].items()))

# %% [markdown]
# ## 4. Does the report depend on the image?
# Two image-blind baselines: `majority` writes the most frequent training report for every study;
# `random_train` writes a random training report, so its labels follow the training label prior. A third
# control, `SFT shuffled images`, runs the same policy with every study given another study's image. A policy
# that reads the image should beat all three on clinical label F1 (offline CheXpert-14 labeler); the paired tests
# below compare SFT with `random_train` and with `SFT shuffled images` (the `majority` column is shown, not tested). Text metrics are shown for reference.
#
# The table has one row per metric and one column per system, Findings section (the Impression columns are in
# `results/sft_vs_baselines.md`). Look first at the clinical F1 rows: SFT against `majority` and `random_train` says whether it beats
# writing without the image; SFT against `SFT shuffled images` whether its own image matters. The point values
# alone do not say whether a gap is larger than chance on this many studies; the next cell tests that.

# %%
shuffled = posttrain.generate_test(cfg, res.final, test, shuffle_images=True)
systems = {"SFT": gens, "SFT shuffled images": shuffled, **posttrain.baseline_reports(train, len(test), seed=cfg.seed)}
with warnings.catch_warnings():  # the share of invalid templates is printed in section 3; don't repeat it per system
    warnings.simplefilter("ignore", TemplateFormatWarning)
    scores = posttrain.score_all(cfg, systems, test)
keep = paper_names.suite_prefixes("CheXbert F1", "CheXpert-14 micro F1", "CheXpert-5 macro F1", "C-BLEU-4", "ROUGE-L",
                                  "BERTScore F1")
rows = []
for name, sc in scores.items():
    summ = sc.summary()
    summ = summ[summ.metric.str.split("@").str[0].isin(keep)]
    for r in summ.itertuples():
        rows.append({"system": name, "metric": r.metric.split("@")[0], "findings": r.findings,
                     "impression": r.impression})
table = pd.DataFrame(rows).pivot_table(index="metric", columns="system", values=["findings", "impression"])
table.columns = [f"{section}: {system}" for section, system in table.columns]
table = table.round(3)
save_table(table.reset_index(), table_names.SFT_VS_BASELINES, cfg,
           protocol=f"{len(test)} test studies, one report per study and system (SFT sampled once, seed {cfg.seed})")
table.filter(like="findings:")

# %% [markdown]
# Of the three controls, `SFT shuffled images` is the sharpest: the same weights, the same decoding, only the
# image is wrong, so any gap between SFT and it can come from the image alone. The image-blind baselines answer a
# weaker question, whether SFT writes clinically better reports than text statistics do.
#
# The SFT column here is every test study with one sample at the profile's seed. Notebook 04 scores the same
# policy on the first `grpo.eval_n` test studies, once per GRPO seed, and shows the mean: a different set of studies
# and, at the other seeds, other samples. CheXpert-14 macro F1 averages one corpus-level F1 per observation, several
# of them rare, so those differences alone move it visibly; the two SFT numbers are two measurements of one
# policy, not two policies (notebook 04 prints both beside its headline table).
#
# Paired bootstrap over test studies (every system wrote a report for the same studies, so each study is compared
# with itself): the difference SFT - baseline per metric and section, its 95 % interval and p-value. A difference
# counts only when its interval excludes 0. Only one policy is trained here, so there are no seeds to test over:
# the interval covers the choice of test studies, not the training run. Full table:
# `results/sft_vs_baselines_significance.md`.

# %%
sig = compare.system_comparisons(scores["SFT"], {b: scores[b] for b in ("random_train", "SFT shuffled images")},
                                metrics=paper_names.suite_prefixes("CheXbert F1", "CheXpert-14 micro F1"),
                                n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)
protocol = (f"{len(test)} test studies, one report per study and system (SFT sampled once, seed {cfg.seed}); "
            "paired bootstrap over studies (one policy: no seeds to test over)")
save_table(sig, table_names.SFT_VS_BASELINES_SIGNIFICANCE, cfg, protocol=protocol)
print(protocol)
sig[["B", "section", "metric", "value_a", "value_b", "diff", "ci_low", "ci_high", "p_value"]].round(4)

# %% [markdown]
# ### Without sampling noise: the likelihood of the reference report
# Sampled reports carry the noise of sampling. Teacher forcing asks the policy directly: the negative
# log-likelihood per token of each test study's *reference* report given its own image, and given the image of
# another study (the same permutation as above). An image-blind policy gives both the same value; the gap, with a
# paired bootstrap interval over studies, is how many nats per token the image is worth to this policy.
# Unlike the sampled reports, this measurement has no decoding randomness: the only noise left is which test
# studies were drawn, and that is what the interval covers. The cell loads the policy once, scores both image
# assignments, and frees the model again.
# The table (`results/sft_image_nll.md`) holds both mean NLLs, their difference (another study's image - own
# image: positive when the own image helps) and its interval.

# %%
from sdrlib.generation import load_images, reference_nll
from sdrlib.metrics.base import stats_result
from sdrlib.reports import build_template

model, processor = training.load_policy(cfg, res.final)
imgs = [load_images(r.image_paths, cfg.sft.max_images) for r in test]
perm = np.random.default_rng(cfg.seed).permutation(len(imgs))  # as posttrain.generate_test(shuffle_images=True)
refs = [build_template(r.findings, r.impression) for r in test]
per_token = lambda st: st[:, 0] / st[:, 1]  # noqa: E731  (corpus NLL per token from (sum, count) rows)
nll = {name: stats_result("nll_per_token", "teacher forcing",
                          reference_nll(model, processor, im, refs, batch_size=cfg.sft.eval_batch_size), per_token)
       for name, im in (("own image", imgs), ("another study's image", [imgs[j] for j in perm]))}
del model
# A - B = NLL with another study's image - NLL with its own: the gap, positive when the own image helps
image_gap = compare.paired_table([({"A": "another study's image", "B": "own image"}, nll["another study's image"],
                                   nll["own image"], {})], n_resamples=cfg.metrics.bootstrap, seed=cfg.seed)
save_table(image_gap.round(4), table_names.SFT_IMAGE_NLL, cfg,
           protocol=f"{len(test)} test studies, teacher-forced reference NLL, paired bootstrap over studies")
image_gap.round(4)

# %% [markdown]
# ## Conclusion
# Sentences generated from this run's result files (`sft_vs_baselines_significance`, `sft_image_nll`) by
# `sdrlib.experiments.sft_summary.sft_conclusion`, Findings section. Each comparison is worded by
# the project's rule (`sdrlib.metrics.verdict.family_directions`): the comparisons of the table are one family,
# Holm-corrected; "above" or "below" only when the corrected p is below 0.05 and the 95 % paired bootstrap interval
# excludes 0, otherwise "no difference detected at this size". On the smoke profile (a few training steps) expect a policy
# that has learnt nothing about the image yet; the cpu and paper profiles train long enough to ask the question.

# %% tags=["conclusion"]
print("\n".join(sft_conclusion(cfg.results_dir)))

# %% [markdown]
# **What this start reads, per finding.** Beating image-blind baselines on average is not the same as stating each
# finding the image shows. Read per CheXpert observation on validation studies (`docs/evidence/sft_start`,
# `python -m sdrlib.experiments.sft_start`), the start is judged against a guesser that ignores the image but states
# each finding at the same rate, and against a pixel classifier on the same images (how much the image itself
# carries). This profile's start is the default run's short budget (its `sft` section): GRPO (notebook 04) refines
# whatever it reads and misses. The GRPO study (`configs/study.yaml`, `python -m sdrlib.experiments.study`) starts
# from a longer recipe chosen on validation studies one lever at a time on that page: twice the steps, an auxiliary
# label loss (`sft.aux_label_weight`), balanced sampling (`sft.balanced_sampling`), a label-pretrained vision tower
# (`sft.tiny_tower_epochs`) and twice the training studies. It costs more than twice this notebook's training time, so
# the default run keeps its own start; the evidence page gives both starts' per-label tables, SFT seed to seed.
