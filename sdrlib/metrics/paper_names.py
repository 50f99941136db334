"""The one map from the paper's metric names to the metric suite's names, and the tables that use them.

Every table that reproduces a paper table looks its metrics up here (GRPO tables in
:mod:`sdrlib.experiments.posttrain`, selection / pruning tables in :mod:`sdrlib.selection` and notebooks 03-06),
never by a hand-typed suite name or a prefix match. A name the suite did not compute is not skipped:
:func:`not_computed` says why, and the tables show it as a row (or column) ``not computed: <why>``.

Each entry records its ``basis``:

- ``paper``: the paper names the metric and what it is (e.g. ``CheXbert macro F1``, ``RL-F``);
- ``package``: the paper names it, and the package that computes it says which of its outputs that is
  (RG-E / RG-ER: the radgraph README unpacks ``F1RadGraph(reward_level="all")``'s mean as
  ``rg_e, rg_er, rg_bar_er`` = levels ``simple, partial, complete``);
- ``interpretation``: the paper is silent on the exact computation; ``source`` says what we chose and why;
- ``ours``: our addition, in no paper table.

How it is computed where the paper's setting is out of reach (BERTScore's backbone, the CheXpert labeler
standing in for CheXbert, METEOR without WordNet) shows in the metric's backend, the part after ``@``.

Example::

    >>> find("RG-ER", ["bertscore_f1@all-MiniLM-L6-v2/L6", "radgraph_partial@radgraph"])
    'radgraph_partial@radgraph'
    >>> find("RadGraph F1", ["bertscore_f1@all-MiniLM-L6-v2/L6"]) is None
    True
    >>> not_computed("RadGraph F1", {"radgraph": "package radgraph is not installed"})
    'not computed: package radgraph is not installed'
    >>> suite_prefixes("METEOR", "RG-F1")
    ['meteor', 'meteor_exact_stem', 'radgraph_complete']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["PaperMetric", "PAPER_METRICS", "TABLES", "BASES", "paper_metric", "find", "suite_prefixes",
           "not_computed", "row_label"]

#: what each ``basis`` value means
BASES = {
    "paper": "the paper names the metric and says what it is",
    "package": "the paper names it; the package computing it says which of its outputs that is",
    "interpretation": "the paper is silent on the exact computation: our reading (see source)",
    "ours": "our addition, in no paper table",
}


@dataclass(frozen=True)
class PaperMetric:
    """One metric: the names the paper's tables give it and the suite metric(s) that compute it.

    ``names``: every name a paper table uses for it, the canonical first; ``suite``: suite metric
    names (the part before ``@``), preferred first (a later one stands in when the first is absent,
    e.g. METEOR without WordNet); ``group``: the :func:`~sdrlib.metrics.suite.score_reports` metric
    group that yields it (the key of its ``unavailable`` reason); ``label``: our row label when it
    differs from the paper's name, with ``(<backend>)`` appended when ``show_backend``.
    """

    names: tuple[str, ...]
    suite: tuple[str, ...]
    group: str
    basis: str
    source: str
    label: str | None = None
    show_backend: bool = False


_TABLES_1_22 = "Tabs. 1-2, 5-22"
PAPER_METRICS: tuple[PaperMetric, ...] = (
    PaperMetric(("BERTScore F1", "BS-F1"), ("bertscore_f1",), "bertscore", "paper",
                f"{_TABLES_1_22} (BERTScore F1), Tabs. 3-4, 23-28 (BS-F1). The paper does not name its backbone: "
                "ours is roberta-large L17 (rescaled) when cached, else a local sentence encoder (after '@')"),
    PaperMetric(("COMET",), ("comet",), "comet", "paper",
                "Tabs. 1-2, 5-6, 9, 13, 17, 21; checkpoint not named by the paper: metrics.comet_model"),
    PaperMetric(("RadGraph F1", "RG-F1"), ("radgraph_complete",), "radgraph", "interpretation",
                "the paper never says which F1RadGraph level its 'RadGraph F1' (Tabs. 1-2, 5-6, 10, 14, 18, 22; "
                "RG-F1 in Tabs. 3, 4, 23) is. We take the complete level (relations matched with their "
                "targets; the package README's rg_bar_er): Tabs. 10-22 list it as a third row besides RG-E and "
                "RG-ER, the package's other two levels, and it is at or below RG-ER in all 80 cells, as the "
                "strictest level would be; Tab. 24's note calls Tab. 3's RG-F1 'the relation-aware variant', and "
                "Tab. 3's random baselines equal Tab. 1's RadGraph F1 row (Qwen3-VL-4B: 0.242 / 0.282 / 0.242 "
                "for R_exact / R_Cham / R_Haus). The note's 'not defined per-sample' does not hold for the "
                "package, which scores every level per report: ours is the mean of per-report values"),
    PaperMetric(("RG-E",), ("radgraph_simple",), "radgraph", "package",
                "Tabs. 10, 14, 18, 22 (entities only). Also what Tabs. 24-28 and Fig. 5 call RG-F1: "
                "'per-sample RadGraph entity F1' (Tab. 24's note)"),
    PaperMetric(("RG-ER",), ("radgraph_partial",), "radgraph", "package",
                "Tabs. 10, 14, 18, 22 (entities and whether each has a relation)"),
    PaperMetric(("CheXbert F1", "CXB-14", "CXB-F1"), ("clinical_f1_macro14",), "clinical", "paper",
                "'CheXbert macro F1' over the 14 CheXpert observations (Sec. 4; CXB-14 in Tabs. 3, 23); "
                "backend after '@': the official CheXbert when installed, else the offline labeler",
                label="CheXpert-14 macro F1", show_backend=True),
    PaperMetric(("METEOR",), ("meteor", "meteor_exact_stem"), "meteor", "paper",
                "Tabs. 3, 9, 13, 17, 21, 23-28; meteor_exact_stem (no synonyms) only when WordNet is missing"),
    PaperMetric(("ROUGE-L", "RL-F"), ("rougeL",), "rouge", "paper", "Tabs. 8, 12, 16, 20 (RL-F), 3, 23-28"),
    PaperMetric(("ROUGE-1", "R1-F"), ("rouge1",), "rouge", "paper", "Tabs. 8, 12, 16, 20"),
    PaperMetric(("ROUGE-2", "R2-F"), ("rouge2",), "rouge", "paper", "Tabs. 8, 12, 16, 20"),
    *(PaperMetric((f"S-BLEU-{n}",), (f"bleu_s{n}",), "bleu", "paper", "Tabs. 7, 11, 15, 19 (sentence BLEU)")
      for n in range(1, 5)),
    *(PaperMetric((f"C-BLEU-{n}",), (f"bleu_c{n}",), "bleu", "paper", "Tabs. 7, 11, 15, 19 (corpus BLEU)")
      for n in range(1, 5)),
    PaperMetric(("chrF++", "ChrF++"), ("chrf++",), "chrf", "paper",
                "Tabs. 9, 13, 17, 21; the paper prints it on sacrebleu's 0-100 scale, ours is 0-1"),
    PaperMetric(("CheXpert-14 micro F1",), ("clinical_f1_micro14",), "clinical", "ours",
                "micro F1 over the 14 observations (EditGRPO's reward uses CheXbert micro-F1-14)", show_backend=True),
    PaperMetric(("CheXpert-5 macro F1",), ("clinical_f1_macro5",), "clinical", "ours",
                "macro F1 over the 5 common observations", show_backend=True),
    PaperMetric(("clin-F1 (sample)",), ("clinical_f1_sample",), "clinical", "ours",
                "per-report (example-based) F1 of the 14 positive labels, 1.0 when neither report has one, averaged "
                "over reports: a per-sample clinical metric for oracle picks, strata and bootstraps. Not CXB-14: "
                "a normal report read as normal scores 1.0, so it can rise while the corpus macro F1 falls "
                "(docs/glossary.md)"),
)

_BY_NAME: dict[str, PaperMetric] = {n: m for m in PAPER_METRICS for n in m.names}

#: the metrics each of our reproductions of a paper table shows, by the name that table prints
TABLES: dict[str, tuple[str, ...]] = {
    # notebook 04 (sdrlib.experiments.posttrain.TABLE_GROUPS)
    "grpo_headline": ("BERTScore F1", "COMET", "RadGraph F1", "CheXbert F1"),          # Tabs. 1-2, 5-6
    "grpo_bleu": tuple(f"S-BLEU-{n}" for n in range(1, 5)) + tuple(f"C-BLEU-{n}" for n in range(1, 5)),
    "grpo_rouge": ("ROUGE-1", "ROUGE-2", "ROUGE-L"),                                   # Tabs. 8, 12, 16, 20
    "grpo_lexical": ("METEOR", "BERTScore F1", "COMET", "chrF++"),                     # Tabs. 9, 13, 17, 21
    "grpo_clinical": ("RG-E", "RG-ER", "RadGraph F1", "CheXbert F1",                   # Tabs. 10, 14, 18, 22
                      "CheXpert-14 micro F1", "CheXpert-5 macro F1"),                  # (+ ours)
    # notebooks 05 / 06 (sdrlib.selection.HEADLINE_METRICS): Tabs. 3 / 23 (RL-F ... CXB-14), Tab. 4 (BS-F1,
    # RG-F1, CXB-F1); RG-E for Tabs. 24-28 and Fig. 5 (their RG-F1 is entity-level); clin-F1 (sample) is ours
    "selection": ("RL-F", "METEOR", "BS-F1", "RG-F1", "CXB-14", "RG-E", "clin-F1 (sample)"),
}


def paper_metric(name: str) -> PaperMetric:
    """The entry for one of the paper's metric names (any of its ``names``)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown paper metric name {name!r}; known: {sorted(_BY_NAME)}") from None


def find(name: str, available: Iterable[str]) -> str | None:
    """The full suite metric name (with ``@backend``) among ``available`` that computes ``name``, else ``None``.

    Exact match on the part before ``@``, in the entry's order of preference (never a prefix match).
    """
    avail = list(available)
    for base in paper_metric(name).suite:
        for m in avail:
            if m.split("@")[0] == base:
                return m
    return None


def suite_prefixes(*names: str) -> list[str]:
    """Suite metric names (before ``@``) of the given paper names, in order: for filters on ``metric.split('@')[0]``."""
    return list(dict.fromkeys(b for n in names for b in paper_metric(n).suite))


def not_computed(name: str, unavailable: Mapping[str, str] | None = None) -> str:
    """``"not computed: <why>"`` for a metric the scores lack; ``unavailable``: the suite's group -> reason."""
    m = paper_metric(name)
    why = (unavailable or {}).get(m.group)
    if not why:
        why = f"no {' / '.join(m.suite)} values in the scores (metric group {m.group!r} was not scored)"
    return f"not computed: {why}"


def row_label(name: str, metric: str | None = None) -> str:
    """The row label our tables print for ``name``, given the suite metric found (for its backend).

    Example: ``row_label("CheXbert F1", "clinical_f1_macro14@labeler") -> "CheXpert-14 macro F1 (labeler)"``.
    """
    m = paper_metric(name)
    canonical = name == m.names[0]
    label = m.label if (m.label and canonical) else name
    if m.show_backend and canonical and metric and "@" in metric:
        label = f"{label} ({metric.split('@', 1)[1]})"
    return label
