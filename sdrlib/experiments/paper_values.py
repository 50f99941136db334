"""The SDR paper's GRPO numbers and the names of its metrics beside ours: the one source every page that sets one of
this project's numbers beside the paper's reads (the README, the GRPO study's table, notebook 07's comparison).

- :data:`PAPER_GRPO`: Tables 1 (ReXGradient) and 2 (MIMIC-CXR), Findings, their "Mean" block (each reward's score
  averaged over Qwen3-VL-2B, Qwen3-VL-4B and Gemma3-4B, each a mean over 5 seeds), copied by hand;
  ``tests/experiments/test_paper_comparison.py`` recomputes the Mean block from the tables' per-model rows;
- :func:`paper_effect`: the paper's difference A - B of one metric in one table (None where the paper has no such
  configuration: the rewards that are ours);
- :func:`metric_pair`: what the paper measures and what this project measures under one metric name. They are not
  the same instrument: the paper's clinical metric is CheXbert F1, ours CXB-14 (CheXpert-14 macro F1 from the
  project's rule labeler unless CheXbert is installed); the paper's BERTScore F1 names no backbone (bert-score's
  English default is roberta-large, which the paper profile uses when cached), ours runs on the profile's
  ``metrics.bertscore.model`` (all-MiniLM-L6-v2 on the CPU profiles, without baseline rescaling). A difference of
  one is set beside the other's for scale only.

Example: ``paper_effect("R_Cham", "SFT", "bertscore_f1")`` -> 0.024 (Tab. 1: 0.353 - 0.329).
"""

from __future__ import annotations

__all__ = ["PAPER_GRPO", "PAPER_TABLES", "PAPER_METRIC", "paper_effect", "metric_pair"]

#: SDR Tables 1 (ReXGradient) and 2 (MIMIC-CXR), Findings, their "Mean" block (3 models x 5 seeds)
PAPER_GRPO: dict[str, dict[str, dict[str, float]]] = {
    "Tab. 1 (ReXGradient)": {"BERTScore F1": {"SFT": 0.329, "R_exact": 0.333, "R_Cham": 0.353, "R_Haus": 0.335},
                             "CheXbert F1": {"SFT": 0.688, "R_exact": 0.657, "R_Cham": 0.718, "R_Haus": 0.699}},
    "Tab. 2 (MIMIC-CXR)": {"BERTScore F1": {"SFT": 0.316, "R_exact": 0.287, "R_Cham": 0.333, "R_Haus": 0.336},
                           "CheXbert F1": {"SFT": 0.495, "R_exact": 0.473, "R_Cham": 0.498, "R_Haus": 0.515}},
}
PAPER_TABLES: tuple[str, ...] = tuple(PAPER_GRPO)
#: our metric (a suite name, before any ``@backend``) -> the paper's metric of its GRPO tables
PAPER_METRIC: dict[str, str] = {"bertscore_f1": "BERTScore F1", "clinical_f1_macro14": "CheXbert F1"}


def paper_effect(a: str, b: str, metric: str, table: str = PAPER_TABLES[0]) -> float | None:
    """The paper's Findings difference ``a - b`` (rounded to the tables' 3 decimals) on ``metric`` in ``table``.

    ``metric``: ours (``bertscore_f1``, ``clinical_f1_macro14``, with or without ``@backend``) or the paper's name
    (``BERTScore F1``, ``CheXbert F1``). None when the paper has no such configuration (``R_Cham_rec1``: ours) or
    metric. Example: ``paper_effect("R_Cham", "R_exact", "clinical_f1_macro14")`` -> 0.061.
    """
    name = PAPER_METRIC.get(metric.split("@")[0], metric)
    scores = PAPER_GRPO[table].get(name, {})
    if a not in scores or b not in scores:
        return None
    return round(scores[a] - scores[b], 3)


def metric_pair(metric: str) -> tuple[str, str]:
    """``(the paper's metric, ours)`` in words for one of our metric names (``suite@backend``, as the tables write
    them). Example: ``metric_pair("bertscore_f1@all-MiniLM-L6-v2/L6")`` -> ("BERTScore F1 (backbone not named)",
    "BERTScore F1 on all-MiniLM-L6-v2")."""
    base, _, backend = metric.partition("@")
    if base.startswith("bertscore"):
        model = backend.split("/")[0] if backend else "the profile's backbone"
        return "BERTScore F1 (backbone not named)", f"BERTScore F1 on {model}"
    if base.startswith("clinical_f1"):
        ours = "CheXbert" if backend.lower() == "chexbert" else "CXB-14 (rule labeler)"
        return "CheXbert F1", ours
    return base, base
