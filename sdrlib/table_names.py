"""The name of every result table a run writes (``results/<name>.csv`` / ``.md``), defined once.

A notebook writes a table with ``save_table(df, table_names.PRUNING_TOKENS, cfg)`` and a reader (the README claims
of :mod:`sdrlib.experiments.claims`, a notebook's conclusion, :data:`sdrlib.results.FIGURE_INDEX`) reads it by the
same constant, so a renamed table is renamed everywhere at once. A family of tables that differ by one word (a
report section, a stratum, a metric group) has a function that builds the name (:func:`grpo_group`,
:func:`selection_headline`, :func:`selection_improvement`, :func:`pruning_section`, :func:`grpo_scores`,
:func:`labeler`).

:data:`TABLES` maps each name to one line saying what the table holds; a family is listed once, its varying part
in angle brackets (``grpo_<group>_<section>``: what the function returns for the arguments ``"<group>"``,
``"<section>"``). ``tests/table_names/test_table_names.py`` checks that every table a notebook writes is named here
and that every name here is written.

Scope: names only (strings). Where a table is written, what its columns are and the paper item it reproduces live
with its writer and in :data:`sdrlib.results.FIGURE_INDEX`. The lowest layer: imports nothing of ``sdrlib``.
Figure names (``figures/<name>.png``) are not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["TABLES", "SECTIONS", "grpo_group", "grpo_scores", "labeler", "selection_headline",
           "selection_improvement", "pruning_section",
           # notebook 00
           "DATASET_SUMMARY", "REPORT_LANGUAGE", "LABEL_PREVALENCE", "PIXEL_PROBE",
           # notebook 01
           "EMBEDDING_CACHE", "IMPRESSION_RESTATEMENT", "SENTENCE_GEOMETRY", "OPPOSITE_NEIGHBOURS",
           # notebook 02
           "DISTANCE_REGISTRY", "SET_DISTANCE_EXAMPLE", "EDIT_REACTIONS", "EDIT_REACTIONS_EXTENSIONS", "EDIT_FACTS",
           "REAL_LANGUAGE_BATTERY",
           "ENGINE_SPEED", "CONVERGENCE", "FIDELITY", "FIDELITY_VS_CHAMFER", "IDENTICAL_FLOOR",
           # notebook 03
           "SFT_VS_BASELINES", "SFT_VS_BASELINES_SIGNIFICANCE", "SFT_IMAGE_NLL",
           # notebook 04
           "REWARD_AUDIT", "REWARD_AUDIT_PAIRED", "REWARD_AUDIT_ORDERINGS", "REWARD_AUDIT_EXPECTED", "RECALL_CHOICE",
           "GRPO_POLICY_MOVEMENT", "GRPO_REWARD_SPARSITY", "GRPO_REWARD_COST", "GRPO_EDIT_COUNTS",
           "GRPO_POSITIVE_FINDINGS", "GRPO_DECOMPOSITION", "GRPO_DECOMPOSITION_STRATA", "GRPO_DECOMPOSITION_TRAINING",
           "GRPO_DECOMPOSITION_SIGNIFICANCE", "GRPO_SIGNIFICANCE", "GRPO_HEADLINE_FINDINGS", "HEADLINE",
           # notebook 05
           "SELECTION_METHODS", "SELECTION_SIGNIFICANCE", "NORMAL_SHARE", "SELECTION_RECALL",
           "SELECTION_HEADLINE_FINDINGS", "SELECTION_HEADLINE_FINDINGS_VAL",
           # notebook 06
           "LIVE_VS_REPLAY", "PRUNING_TOKENS", "PRUNING_METHODS", "PRUNING_VS_STANDARD", "PRUNING_VS_RANDOM",
           "SURVIVOR_VS_STANDARD_PICK", "CANDIDATE_COLLAPSE", "PRUNING_SWEEP", "PRUNING_WALLCLOCK",
           # notebook 07, the runner, the README claims
           "PALETTE", "PAPER_COMPARISON", "FIGURE_INDEX_TABLE", "RUN_SUMMARY", "CONCLUSIONS"]

#: the report sections a per-section table family is written for
SECTIONS = ("findings", "impression")

_TABLES: dict[str, str] = {}


def _table(name: str, what: str) -> str:
    """Register ``name`` with its one-line description in :data:`TABLES` and return it."""
    if name in _TABLES:
        raise ValueError(f"table name {name!r} defined twice")
    _TABLES[name] = what
    return name


# ----------------------------------------------------------------------------------------- the families
def _section(section: str) -> str:
    """A report section, or the placeholder ``"<section>"`` that :data:`TABLES` lists a family under."""
    if section not in SECTIONS and section != "<section>":
        raise ValueError(f"section {section!r}: a table is per report section, one of {SECTIONS}")
    return section


def grpo_group(group: str, section: str) -> str:
    """Notebook 04's paper-style table of one metric group (``headline``, ``bleu``, ...; the keys of
    :data:`sdrlib.experiments.posttrain.TABLE_GROUPS`) and section. Example: ``grpo_group("headline", "findings")``
    -> ``"grpo_headline_findings"``; a section not in :data:`SECTIONS` raises ``ValueError``."""
    return f"grpo_{group}_{_section(section)}"


def grpo_scores(profile: str) -> str:
    """Notebook 04's long table of every score of a profile's run. Example: ``grpo_scores("cpu")`` ->
    ``"grpo_scores_cpu"``."""
    return f"grpo_scores_{profile}"


def labeler(slug: str) -> str:
    """Notebook 00's offline labeler evaluation on one sentence source (``slug``: the source's name as a file name
    part). Example: ``labeler("fixture")`` -> ``"00_labeler_fixture"``."""
    return "00_labeler_" + slug


def selection_headline(section: str, *, val: bool = False) -> str:
    """Notebook 05's best selection per policy and metric vs random (Tables 3 / 23); ``val``: the setting picked on
    validation studies. Example: ``selection_headline("findings", val=True)`` -> ``"05_headline_findings_val"``."""
    return f"05_headline_{_section(section)}" + ("_val" if val else "")


def selection_improvement(stratum: str) -> str:
    """Notebook 05's % improvement over random per method in one stratum (``all``, ``no_finding``, ``single``,
    ``multi``; Tables 25-28). Example: ``selection_improvement("all")`` -> ``"05_improvement_all"``."""
    return f"05_improvement_{stratum}"


def pruning_section(section: str) -> str:
    """Notebook 06's random vs standard best-of-K vs pruning table of one section (Tables 4 / 29). Example:
    ``pruning_section("findings")`` -> ``"06_pruning_findings"``."""
    return f"06_pruning_{_section(section)}"


_table(grpo_group("<group>", "<section>"), "GRPO results per metric group and section, one row per cell")
_table(grpo_scores("<profile>"), "every metric per policy, seed and section (long form)")
_table(labeler("<slug>"), "offline labeler precision / recall on one sentence source")
_table(selection_headline("<section>"), "best selection per policy and metric vs random, oracle, first, MBR")
_table(selection_headline("<section>", val=True), "the selection method picked on validation studies, scored on test")
_table(selection_improvement("<stratum>"), "% improvement over random per method, mean ± std over policies")
_table(pruning_section("<section>"), "random vs standard best-of-K vs distance-guided pruning while decoding")

#: members of the families that readers name
GRPO_HEADLINE_FINDINGS = grpo_group("headline", "findings")
SELECTION_HEADLINE_FINDINGS = selection_headline("findings")
SELECTION_HEADLINE_FINDINGS_VAL = selection_headline("findings", val=True)

# ----------------------------------------------------------------------------------------- notebook 00
DATASET_SUMMARY = _table("00_dataset_summary", "studies, sentences and strata per split")
REPORT_LANGUAGE = _table("00_report_language", "report-language statistics of this corpus vs IU-Xray")
LABEL_PREVALENCE = _table("00_label_prevalence", "CheXpert-14 label prevalence per split")
PIXEL_PROBE = _table("00_pixel_probe", "linear pixel probe AUROC per observation")

# ----------------------------------------------------------------------------------------- notebook 01
EMBEDDING_CACHE = _table("01_embedding_cache", "sentences, unique sentences, encoder calls")
IMPRESSION_RESTATEMENT = _table("01_impression_restatement",
                                "how close an Impression sentence is to its own Findings vs other reports'")
SENTENCE_GEOMETRY = _table("01_sentence_geometry", "paraphrase and nearest-neighbour similarities")
OPPOSITE_NEIGHBOURS = _table("01_opposite_neighbours",
                             "Findings sentences whose nearest neighbour the labeler reads with the opposite polarity")

# ----------------------------------------------------------------------------------------- notebook 02
DISTANCE_REGISTRY = _table("02_registry", "the registered distance settings")
SET_DISTANCE_EXAMPLE = _table("02_set_distance_example",
                              "Fig. 2a's values: every link's cosine cost and the three distances")
EDIT_REACTIONS = _table("02_edit_reactions", "each distance setting's reaction to report edits")
EDIT_REACTIONS_EXTENSIONS = _table("02_edit_reactions_extensions", "the edits under our _raw / _neg settings")
EDIT_FACTS = _table("02_edit_facts", "per setting: farthest edit, contradiction vs paraphrase")
REAL_LANGUAGE_BATTERY = _table("02_battery", "every reward on the real-language battery: one row per reward and case")
ENGINE_SPEED = _table("02_engine_speed", "batched distance engine vs per-pair reference")
CONVERGENCE = _table("02_convergence", "share of pairs stopped at max_iter")
FIDELITY = _table("02_fidelity", "rank correlation of each distance with label disagreement")
FIDELITY_VS_CHAMFER = _table("02_fidelity_vs_chamfer",
                             "paired bootstrap: the best setting's rank correlation minus Chamfer's")
IDENTICAL_FLOOR = _table("02_identical_floor", "D(A, A) per setting and set size")

# ----------------------------------------------------------------------------------------- notebook 03
SFT_VS_BASELINES = _table("sft_vs_baselines", "SFT vs the image-blind baselines")
SFT_VS_BASELINES_SIGNIFICANCE = _table("sft_vs_baselines_significance",
                                       "paired bootstrap of SFT vs the image-blind baselines")
SFT_IMAGE_NLL = _table("sft_image_nll", "reference NLL per token, own vs another study's image")

# ----------------------------------------------------------------------------------------- notebook 04
REWARD_AUDIT = _table("04_reward_audit", "each reward's score of constructed completions, per stratum")
REWARD_AUDIT_PAIRED = _table("04_reward_audit_paired", "the reward audit's cases over the same references")
REWARD_AUDIT_ORDERINGS = _table("04_reward_audit_orderings", "the orderings a clinician expects, kept or broken")
REWARD_AUDIT_EXPECTED = _table("04_reward_audit_expected",
                               "expected reward of the SFT policy's own samples vs the modal normal report")
RECALL_CHOICE = _table("04_recall_choice", "the recall reward's setting picked on validation studies")
GRPO_POLICY_MOVEMENT = _table("grpo_policy_movement", "KL to SFT and reward, first vs last steps")
GRPO_REWARD_SPARSITY = _table("grpo_reward_sparsity", "exact-match sparsity and within-group spread, mean over steps")
GRPO_REWARD_COST = _table("grpo_reward_cost", "reward time vs step time, bad completions")
GRPO_EDIT_COUNTS = _table("grpo_edit_counts", "EditGRPO edit totals per configuration")
GRPO_POSITIVE_FINDINGS = _table("grpo_positive_findings",
                                "positive findings per Findings section and share with none, per configuration")
GRPO_DECOMPOSITION = _table("grpo_decomposition",
                            "Findings macro F1 along SFT -> drift control -> format -> content reward, per step")
GRPO_DECOMPOSITION_STRATA = _table("grpo_decomposition_strata", "the decomposition per stratum")
GRPO_DECOMPOSITION_TRAINING = _table("grpo_decomposition_training", "the decomposition's training-side statistics")
GRPO_DECOMPOSITION_SIGNIFICANCE = _table("grpo_decomposition_significance",
                                         "paired bootstrap of each decomposition step")
GRPO_SIGNIFICANCE = _table("grpo_significance", "each configuration vs the others, across seeds and studies")
HEADLINE = _table("headline", "the run's headline numbers in one Markdown file (no CSV)")

# ----------------------------------------------------------------------------------------- notebook 05
SELECTION_METHODS = _table("05_selection_methods", "every policy x method x metric x stratum selection value")
SELECTION_SIGNIFICANCE = _table("05_significance", "paired bootstrap: best selection method vs random and vs MBR")
NORMAL_SHARE = _table("05_normal_share", "share of picks the offline labeler reads as normal, per method")
SELECTION_RECALL = _table("05_selection_recall", "best-of-K and MBR with the recall-weighted distance vs random")

# ----------------------------------------------------------------------------------------- notebook 06
LIVE_VS_REPLAY = _table("06_live_vs_replay", "live pruning vs its replay on standard candidates")
PRUNING_TOKENS = _table("06_tokens", "tokens generated per study, pruning vs standard best-of-K")
PRUNING_METHODS = _table("06_methods", "every pruning method x metric value")
PRUNING_VS_STANDARD = _table("06_pruning_vs_standard", "paired bootstrap: pruning vs standard best-of-K")
PRUNING_VS_RANDOM = _table("06_pruning_vs_random", "paired bootstrap: pruning vs random selection")
SURVIVOR_VS_STANDARD_PICK = _table("06_survivor_vs_standard_pick",
                                   "how often the survivor is standard best-of-K's pick, vs chance 1/K")
CANDIDATE_COLLAPSE = _table("06_candidate_collapse",
                            "share of studies whose K candidates carry identical labels / text")
PRUNING_SWEEP = _table("06_sweep", "the p x warm-up pruning sweep")
PRUNING_WALLCLOCK = _table("06_wallclock", "wall-clock per study")

# ----------------------------------------------------------------------------------------- notebook 07 and others
PALETTE = _table("07_palette", "share of each figure's coloured pixels in the Okabe-Ito palette")
PAPER_COMPARISON = _table("07_paper_comparison", "each paper claim the notebooks reproduce: the paper's number and "
                          "source, this run's number, the rule's verdict and how it reads against the paper")
FIGURE_INDEX_TABLE = _table("figure_index", "every indexed figure and table of the run: present or missing")
RUN_SUMMARY = _table("run_summary", "wall-clock and status per notebook (written by sdrlib.runner)")
CONCLUSIONS = _table("conclusions", "the README's conclusions across seeds, studies and kernel paths "
                                    "(written by sdrlib.experiments.conclusions)")

#: every table name (a family once, its varying part in angle brackets) -> one line saying what it holds
TABLES: Mapping[str, str] = MappingProxyType(_TABLES)
