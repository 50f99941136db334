"""README sentences written from the result tables, and a check that quoted numbers come from the files named.

The "Expected results" page (docs/results.md, linked from the README) quotes a run. So that no sentence outruns its
table, the block between ``<!-- results:begin -->`` and ``<!-- results:end -->`` is written here from the files a run
leaves in ``results/`` (``<name>.csv`` as written by :func:`sdrlib.results.save_table`, names from
:mod:`sdrlib.table_names`), one function per claim group:

- :func:`report_language`: notebook 00's corpus statistics beside IU-Xray's, each saying what it counts;
- :func:`grpo_headline`: the GRPO headline table (``grpo_headline_findings``) as Markdown, configurations with
  one seed marked, and per row which configurations are above / below SFT;
- :func:`grpo_vs_sft`: each configuration against SFT from the paired test table (``grpo_significance`` by
  default; the p-value column is a parameter, so an across-seed test can replace the per-seed one);
- :func:`policy_movement`: the total reward's first vs last steps per configuration (rises / falls) and KL;
- :func:`positive_findings`: the share of Findings sections with no positive finding, per configuration vs SFT;
- :func:`sft_vs_baselines`: SFT against the image-blind baselines (paired bootstrap);
- :func:`selection_best_vs_random`: notebook 05's best setting per policy and metric against random;
- :func:`pruning`: tokens saved, survivor vs standard best-of-K, and (when the run wrote them) pruning vs
  random, survivor = standard pick vs 1/K, collapsed candidates;
- :func:`reward_audit`, :func:`recall_choice`, :func:`recall_audit`, :func:`recall_vs_others`: notebook 04's
  reward audit and its recall setting; :func:`decomposition`, :func:`selection_recall`, :func:`run_time`.

Every sentence names the file it quotes, states a direction per configuration and says "every" / "all" only
when the count says so. :data:`GROUPS` lists the groups with the tables each needs; :func:`results_section` joins
them (a group whose table is missing gets a visible note in its place, :func:`missing_tables` lists those);
:func:`check_block` verifies that every number in a marked block appears in the files its paragraph names
(``python -m sdrlib.experiments.claims RESULTS --check docs/results.md``).

The parts: ``_grpo`` (notebook 04's GRPO groups), ``_audit`` (the reward audit and the recall setting), ``_runs``
(notebooks 00, 03, 05, 06 and the run time), ``_common`` (what the groups share), ``_section`` (the block) and
``_check`` (the number check); ``cli`` is the command line (``python -m sdrlib.experiments.claims``).

Left out: numbers measured outside the run (they have no result file), and claims about figures.
"""

from __future__ import annotations

from sdrlib.experiments.claims._audit import recall_audit, recall_choice, recall_vs_others, reward_audit
from sdrlib.experiments.claims._check import (BEGIN, END, check_block, check_tolerant, marked_block, numbers_in,
                                              sweeping_words)
from sdrlib.experiments.claims._grpo import (decomposition, grpo_headline, grpo_vs_rcham, grpo_vs_sft,
                                             policy_movement, positive_findings)
from sdrlib.experiments.claims._runs import (pruning, report_language, run_time, selection_best_vs_random,
                                             selection_conclusion, selection_recall, sft_vs_baselines)
from sdrlib.experiments.claims._section import GROUPS, ClaimGroup, missing_tables, results_section

__all__ = ["BEGIN", "END", "report_language", "grpo_headline", "grpo_vs_sft", "policy_movement",
           "positive_findings", "sft_vs_baselines", "selection_best_vs_random", "pruning", "results_section",
           "numbers_in", "sweeping_words", "check_block", "check_tolerant", "marked_block", "GROUPS", "ClaimGroup",
           "missing_tables", "run_time", "reward_audit", "decomposition", "grpo_vs_rcham", "recall_choice",
           "recall_audit", "recall_vs_others", "selection_recall", "selection_conclusion"]
