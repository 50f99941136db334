"""The built-in metric groups, one module each, each registering its :class:`~sdrlib.metrics.registry.MetricGroup`.

:mod:`.bleu`, :mod:`.rouge`, :mod:`.meteor`, :mod:`.chrf` (text overlap, the shipped `evaluate` modules),
:mod:`.bertscore`, :mod:`.comet` (learned), :mod:`.clinical` (CheXpert label F1), :mod:`.radgraph` (RadGraph F1).
Each holds its scorer, its availability check and its paper names and calls
:func:`sdrlib.metrics.registry.register_metric_group`; the registry imports them on its first read, in the scoring
order it declares (:data:`sdrlib.metrics.registry.BUILTIN_GROUPS`). Read them through :mod:`sdrlib.metrics.registry`.
"""

__all__: list[str] = []
