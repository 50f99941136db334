"""The one map from the paper's metric names to the metric suite's names, and the tables that use them.

Each metric group declares the paper names of its metrics where it is registered (``paper_names=`` of
:func:`sdrlib.metrics.registry.register_metric_group`, the built-in ones in :mod:`sdrlib.metrics.groups`);
:data:`PAPER_METRICS` is read from the registry, so a group registered later shows here too.
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
from typing import Any

from sdrlib.metrics.registry import PaperMetric, metric_groups

__all__ = ["PaperMetric", "PAPER_METRICS", "TABLES", "BASES", "paper_metric", "paper_metrics", "find",
           "suite_prefixes", "not_computed", "row_label"]

#: what each ``basis`` value means
BASES = {
    "paper": "the paper names the metric and says what it is",
    "package": "the paper names it; the package computing it says which of its outputs that is",
    "interpretation": "the paper is silent on the exact computation: our reading (see source)",
    "ours": "our addition, in no paper table",
}


def paper_metrics() -> tuple[PaperMetric, ...]:
    """Every registered metric group's paper names (:mod:`sdrlib.metrics.registry`), in scoring order."""
    return tuple(m for g in metric_groups() for m in g.paper_names)


def _by_name() -> dict[str, PaperMetric]:
    return {n: m for m in paper_metrics() for n in m.names}


def __getattr__(name: str) -> Any:
    if name == "PAPER_METRICS":  # read from the registry each time: a group registered later shows too
        return paper_metrics()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    by_name = _by_name()
    try:
        return by_name[name]
    except KeyError:
        raise KeyError(f"unknown paper metric name {name!r}; known: {sorted(by_name)}") from None


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
