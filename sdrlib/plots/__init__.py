"""Figures: the house style and every figure function the notebooks call (figures only).

One private module per concept, re-exported here (``from sdrlib.plots import name`` is the public path):

- ``_style``      the house style: :func:`style` (a context manager; nothing changes global matplotlib state on
  import), the resolution :data:`DPI`, fonts of at least :data:`MIN_FONT` (9 pt; :func:`small_fonts` /
  :func:`check_fonts` measure every text of a drawn figure, and ``tests/plots/test_plots_style.py`` holds every figure
  function here to it) and the colour-blind-safe colour cycle (Okabe-Ito, :data:`PALETTE`);
- ``_data``       notebook 00: :func:`plot_examples`, :func:`plot_findings_gallery`, :func:`plot_prevalence`,
  :func:`plot_sentence_counts`;
- ``_embedding``  notebook 01: :func:`plot_report_embedding` (paper Fig. 1), :func:`plot_sentence_geometry`;
- ``_distances``  notebook 02: :func:`set_distance_links` / :func:`plot_set_distance` (Fig. 2a),
  :func:`plot_engine_speed`, :func:`plot_fidelity`;
- ``_heatmap``    a table of values on one colour scale (:func:`plot_value_heatmap`; :func:`plot_column_heatmap`
  scales per column);
- ``_sft``        notebook 03: :func:`plot_sft_loss` (:data:`NO_VALIDATION_LOSS`), :func:`plot_generations` (each
  sample's findings ok / missed / hallucinated, :func:`finding_verdicts`);
- ``_grpo``       notebook 04: :func:`plot_grpo_curves` (one column per configuration: reward against its start, KL,
  length), :func:`plot_semantic_reward` (R_sem per step; EditGRPO's S_neg on its own axis), :func:`plot_reward_sparsity`
  (exact-match sparsity and each content reward's within-group spread), :func:`plot_audit` (the reward audit);
- ``_selection``  notebook 05: :func:`plot_selection_space` (Fig. 2b), :func:`plot_improvement_heatmap` (Figs. 3-5);
- ``_pruning``    notebook 06: :func:`plot_pruning_sweep` (pruning quality vs tokens with bootstrap intervals,
  :func:`result_ci`);
- ``_gallery``    notebook 07: :func:`plot_gallery` (finished figures near their own size);
- ``_layout``     shared helpers: point labels placed so that none overlaps another or a point, text wrapping.

Writing files lives one layer down, in :mod:`sdrlib.results`: ``save_fig`` / ``save_table`` (PNG at a fixed
resolution; CSV + Markdown + provenance JSON), provenance, and the paper-item map of every file the notebooks write
(``FIGURE_INDEX``, ``figure_index``). Every figure function returns a matplotlib Figure and saves nothing; wrap the
call in ``with style():``. Example::

    with style():
        fig, ax = plt.subplots(); ax.plot([0, 1])
    save_fig(fig, "demo", cfg)          # from sdrlib.results

What is left out: no function here saves (``sdrlib.results``) or computes a statistic beyond an error bar; the
tables a figure draws come from the layers below (``sdrlib.data.stats``, ``sdrlib.experiments``, ...).
"""

from __future__ import annotations

from sdrlib.plots._data import plot_examples, plot_findings_gallery, plot_prevalence, plot_sentence_counts
from sdrlib.plots._distances import plot_engine_speed, plot_fidelity, plot_set_distance, set_distance_links
from sdrlib.plots._embedding import plot_report_embedding, plot_sentence_geometry
from sdrlib.plots._gallery import plot_gallery
from sdrlib.plots._grpo import plot_audit, plot_grpo_curves, plot_reward_sparsity, plot_semantic_reward
from sdrlib.plots._heatmap import plot_column_heatmap, plot_value_heatmap
from sdrlib.plots._pruning import plot_pruning_sweep, result_ci
from sdrlib.plots._selection import plot_improvement_heatmap, plot_selection_space
from sdrlib.plots._sft import NO_VALIDATION_LOSS, finding_verdicts, plot_generations, plot_sft_loss
from sdrlib.plots._style import DPI, MIN_FONT, PALETTE, PlotError, check_fonts, small_fonts, style

__all__ = ["DPI", "MIN_FONT", "PALETTE", "style", "PlotError", "small_fonts", "check_fonts", "result_ci",
           "plot_report_embedding", "plot_sentence_geometry", "set_distance_links", "plot_set_distance", "plot_value_heatmap",
           "plot_column_heatmap", "plot_grpo_curves", "plot_semantic_reward", "plot_reward_sparsity",
           "plot_selection_space", "plot_improvement_heatmap", "plot_pruning_sweep", "plot_gallery",
           # moved here from sdrlib.data.stats and sdrlib.experiments (plots sits above both layers)
           "plot_examples", "plot_findings_gallery", "plot_prevalence", "plot_sentence_counts",
           "plot_engine_speed", "plot_fidelity", "NO_VALIDATION_LOSS", "plot_sft_loss", "plot_generations",
           "finding_verdicts",
           "plot_audit"]
