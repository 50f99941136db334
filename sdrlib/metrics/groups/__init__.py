"""The built-in metric groups, one module each, registered on import in scoring order.

:mod:`.bleu`, :mod:`.rouge`, :mod:`.meteor`, :mod:`.chrf` (text overlap, the shipped `evaluate` modules),
:mod:`.bertscore`, :mod:`.comet` (learned), :mod:`.clinical` (CheXpert label F1), :mod:`.radgraph` (RadGraph F1).
Each holds its scorer, its availability check and its paper names and calls
:func:`sdrlib.metrics.registry.register_metric_group`; read them through :mod:`sdrlib.metrics.registry`.
"""

from sdrlib.metrics import _registry
from sdrlib.metrics.groups import bleu, rouge, meteor, chrf, bertscore, comet, clinical, radgraph  # noqa: F401

_registry.seal_builtins()

__all__: list[str] = []
