"""Best-of-K selection by set distance to the training distribution (paper sec. 3.3, 5; app. C.4, E, F).

For each test study a policy writes K candidate reports; a candidate is scored by its set distance to a
bank of N training reports, per section, aggregated over the bank and summed over the sections (eqs. 7-9),
and the smallest total wins (eq. 10).

- :mod:`.scoring`    bank scoring, eqs. 7-10 (kNN / min / avg): :func:`bank_distances`, :func:`score_candidates`,
  :class:`SelectionScores`, :func:`selection_spec` (Hung-Pen unclipped), candidate parsing, sets and presence
- :mod:`.mbr`        MBR consensus among a study's K candidates: :func:`mbr_scores`
- :mod:`.evaluation` metric values of every method, random / oracle / first baselines, Tables 3 / 23 and 25-28
  (:func:`evaluate_methods`, :func:`best_vs_random`, :func:`best_picked_on_val`, :func:`improvement_summary`, :func:`pick_metrics`) and the
  numbers of Fig. 2b (:func:`mean_vectors`, :func:`pca_2d`)
- :mod:`.pipeline`   one split end to end (distances, MBR, metrics, every method's value): :func:`evaluate_split`,
  :class:`SplitSelection`; the share of picks the labeler reads as normal: :func:`normal_flags`, :func:`normal_share`,
  :func:`normal_share_table`; notebook 05's views :func:`headline_view`, :func:`policy_grid`, :func:`comparison_rows`
- :mod:`.bank`       the seeded random bank draw (paper C.4): :func:`draw_indices`, :func:`draw_bank_records`,
  :func:`sample_bank`, :func:`head_bank`
- :mod:`.errors`     :class:`SelectionError`

Distances come from the one API of :mod:`sdrlib.distances` (negation-aware settings get per-sentence presence
through ``presence=``). Sampling candidates from the trained policies and caching them on disk is the
experiments layer's (:mod:`sdrlib.experiments.candidates`). Left out: distance-guided pruning during decoding
(paper sec. 5.1, :mod:`sdrlib.pruning`), GPU solvers.

Names: ``n_candidates`` is K, the candidates per study (profile key ``selection.k``); ``knn_k`` the k of the
knn aggregation (profile key ``selection.knn_k``).

Example: eq. (8) over a tiny distance matrix, two candidates x three bank reports, then eq. (10) (ties go to
the lowest index):

>>> import numpy as np
>>> from sdrlib.selection import aggregate, argmin_first
>>> D = np.array([[0.1, 0.5, 0.3], [0.2, 0.2, 0.9]])
>>> aggregate(D, "min"), aggregate(D, "avg").round(3), aggregate(D, "knn", knn_k=2)
(array([0.1, 0.2]), array([0.3  , 0.433]), array([0.2, 0.2]))
>>> int(argmin_first(aggregate(D, "avg"))), int(argmin_first(aggregate(D, "knn", knn_k=2)))
(0, 0)

MBR without a bank (eq. 9 between the K candidates of a study), and each method's pick scored by a metric given
per candidate as an ``(S, K)`` array, beside a random pick (its expectation) and the oracle:

>>> from sdrlib.selection import evaluate_methods, mbr_scores, method_choices
>>> e = np.eye(3)  # one study, K = 3 candidates of unit sentence embeddings (one section)
>>> mbr = mbr_scores({"findings": [e[[2]], e[[0]], e[[0, 1]]]}, ["chamfer"], n_candidates=3)
>>> mbr["chamfer"].round(3)  # candidates 1 and 2 agree most
array([[0.5  , 0.312, 0.312]])
>>> choices = method_choices(mbr=mbr)
>>> choices
{'first': array([0]), 'mbr:chamfer': array([1])}
>>> table = evaluate_methods(choices, {"toy": np.array([[0.1, 0.8, 0.6]])}, 3)
>>> table.set_index("method")["value"].round(3).to_dict()
{'random': 0.5, 'oracle': 0.8, 'first': 0.1, 'mbr:chamfer': 0.8}
"""

from sdrlib.selection.bank import draw_bank_records, draw_indices, head_bank, sample_bank
from sdrlib.selection.errors import SelectionError
from sdrlib.selection.evaluation import (HEADLINE_METRICS, best_picked_on_val, best_vs_random, evaluate_methods, improvement_summary,
                                         mean_vectors, method_choices, not_computed, pca_2d, pick_metrics,
                                         score_candidate_metrics, selected_result, study_values)
from sdrlib.selection.mbr import mbr_scores
from sdrlib.selection.pipeline import (SplitSelection, comparison_rows, evaluate_split, headline_view, normal_flags,
                                      normal_share, normal_share_table, policy_grid)
from sdrlib.selection.scoring import (AGGREGATIONS, DEFAULT_KNN_K, SelectionScores, aggregate, argmin_first,
                                      bank_distances, bank_presence_of, candidate_presence, candidate_sets,
                                      check_encoder, parse_candidate, score_candidates, selection_spec)

__all__ = [
    "AGGREGATIONS", "DEFAULT_KNN_K", "SelectionError", "SelectionScores", "check_encoder", "head_bank", "draw_indices",
    "draw_bank_records", "sample_bank", "selection_spec", "aggregate", "parse_candidate",
    "candidate_sets", "candidate_presence", "bank_presence_of", "bank_distances", "score_candidates", "mbr_scores",
    "argmin_first", "method_choices", "selected_result", "evaluate_methods", "study_values", "best_vs_random",
    "best_picked_on_val", "improvement_summary", "HEADLINE_METRICS", "score_candidate_metrics", "pick_metrics", "not_computed",
    "mean_vectors", "pca_2d", "SplitSelection", "evaluate_split", "normal_flags", "normal_share",
    "normal_share_table", "headline_view", "policy_grid", "comparison_rows",
]
