"""The registry of metric groups: what :func:`~sdrlib.metrics.suite.score_reports` can score, one registration each.

A *metric group* (``"bleu"``, ``"rouge"``, ``"clinical"``, ...) is the unit a caller asks for
(``score_reports(metrics=["rouge"])``) and yields one or more metrics (``rouge1``, ``rouge2``, ``rougeL``). Each is
one :func:`register_metric_group` call in a module of its own (the built-in ones in :mod:`sdrlib.metrics.groups`,
loaded with this module), holding

- ``compute(ctx, setup)``: the group's :class:`~sdrlib.metrics.base.MetricResult` objects per section, from the
  checked texts of a :class:`ScoreContext`; or ``section(predictions, references, defined, setup)`` for one
  section alone, which the registry turns into ``compute`` (and which :func:`sdrlib.metrics.nlg.nlg_results` runs);
- ``available(ctx)``: whether the group can run on this machine and with what (a BERTScore backbone, a COMET
  checkpoint): returns the group's ``setup`` (handed to ``compute``; ``None`` is fine) or raises
  :class:`MetricUnavailable`, whose reason the suite reports as ``unavailable/<group>`` instead of failing;
- ``paper_names``: the :class:`PaperMetric` entries naming its metrics in the paper's tables
  (:mod:`sdrlib.metrics.paper_names` reads them from here);
- ``versions``: the packages whose versions go into the results' provenance.

Groups are scored in registration order, so the built-in order (BLEU, ROUGE, METEOR, chrF++, BERTScore, COMET,
clinical, RadGraph) is the order of every result list. A registered name is taken: replacing it (a built-in one
too) needs ``replace=True``; built-in groups cannot be removed. ``tests/metrics/toy_metric.py`` registers a group
from a module of its own, and it is scored end to end through :func:`~sdrlib.metrics.suite.score_reports` with no
other edit.

Leaves out: the scoring loop and input checks (:mod:`sdrlib.metrics.suite`), the metrics themselves
(:mod:`sdrlib.metrics.groups`).

Example::

    >>> metric_group_names()
    ('bleu', 'rouge', 'meteor', 'chrf', 'bertscore', 'comet', 'clinical', 'radgraph')
    >>> metric_group("rouge").paper_names[0].names
    ('ROUGE-L', 'RL-F')
"""

from __future__ import annotations

import sdrlib.metrics.groups  # noqa: F401  (registers the built-in groups, in scoring order)
from sdrlib.metrics._registry import (MetricGroup, MetricUnavailable, PaperMetric, ScoreContext, ScoreOptions,
                                      metric_group, metric_group_names, metric_groups, register_metric_group,
                                      unregister_metric_group)

__all__ = ["MetricGroup", "MetricUnavailable", "PaperMetric", "ScoreContext", "ScoreOptions", "metric_group",
           "metric_group_names", "metric_groups", "register_metric_group", "unregister_metric_group"]
