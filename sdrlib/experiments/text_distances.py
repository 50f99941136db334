"""Set distances between section *texts*: split, embed, label presence, then the one distance API.

The distance layer (:mod:`sdrlib.distances`) takes embedding sets and presence arrays, never text; this
is the text-level convenience notebook 02 uses for its edit table: sentences are split and embedded by
``embedder.encode_sections`` (a :class:`~sdrlib.embedding.SentenceEmbedder`, cached; the split of
:func:`sdrlib.reports.split_sentences`) and labelled by :func:`sdrlib.clinical.section_presence`
(cached per sentence), then scored by :func:`sdrlib.distances.engine.paired_distances` with
``presence=(...)`` (a plain setting ignores the presence).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from sdrlib.clinical.presence import section_presence
from sdrlib.distances.engine import paired_distances
from sdrlib.distances.errors import DistanceInputError
from sdrlib.distances.registry import DistanceSpec

__all__ = ["text_distances"]


def text_distances(generated: Sequence[str], references: Sequence[str], name: "str | DistanceSpec", embedder: Any,
                   *, empty_value: float = 1.0, on_nonconvergence: str = "warn") -> np.ndarray:
    """``D`` between section texts ``generated[k]`` and ``references[k]``: (K,) float64.

    A section without sentences scores ``empty_value`` (default 1, as in the rewards).
    Example: ``text_distances(["No effusion."], ["Small effusion."], "chamfer_neg", emb) -> [1.0]``.
    """
    gen, ref = list(generated), list(references)
    if len(gen) != len(ref):
        raise DistanceInputError(f"{len(gen)} generated texts but {len(ref)} references")
    sets = embedder.encode_sections(gen + ref)
    pres = section_presence(gen + ref)
    k = len(gen)
    return paired_distances(sets[:k], sets[k:], name, presence=(pres[:k], pres[k:]), empty_value=empty_value,
                            on_nonconvergence=on_nonconvergence)
