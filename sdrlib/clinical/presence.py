"""Per-sentence finding presence: which CheXpert observations a sentence states, and how.

Each sentence gets a presence vector over the 14 CheXpert observations (:data:`OBSERVATIONS`), int8:
``+1`` the offline labeler (:func:`sdrlib.clinical.labeler.label_report`, run on the sentence alone)
reads the observation positive, ``-1`` negative, ``0`` not mentioned **or uncertain** (a hedge
contradicts neither "effusion" nor "no effusion"). "No Finding" is always 0 (the labeler derives it,
it is never read negative). Negation-aware distances (:mod:`sdrlib.distances.negation`), G-CARL and
EditGRPO take these arrays; distances never see the text.

**Caching.** Vectors are cached per sentence in an in-memory LRU (:data:`PRESENCE_CACHE_SIZE`
entries) keyed by the sentence with white space collapsed and ends stripped (the labeler itself is
case-insensitive and ignores spacing); a sentence is labelled once per process.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from sdrlib.clinical.labeler import label_report
from sdrlib.errors import SDRError
from sdrlib.reports import normalize_text, split_sentences
from sdrlib.vocabulary import CHEXPERT_14

__all__ = ["OBSERVATIONS", "PRESENCE_CACHE_SIZE", "PresenceInputError", "sentence_presence", "section_presence",
           "presence_cache_info"]


class PresenceInputError(SDRError, ValueError):
    """Presence asked of something that is not a sequence of sentence / section strings."""


#: observation order of the presence columns (the labeler's CHEXPERT_14)
OBSERVATIONS: tuple[str, ...] = tuple(CHEXPERT_14)
#: sentences whose presence vectors are kept in memory
PRESENCE_CACHE_SIZE = 1 << 17


def _norm_sentence(s: str) -> str:
    return normalize_text(s, form=None)


@lru_cache(maxsize=PRESENCE_CACHE_SIZE)
def _presence_cached(sentence: str) -> bytes:
    v = np.zeros(len(OBSERVATIONS), np.int8)
    for obs, val in label_report(sentence).items():
        if obs == "No Finding":
            continue
        v[OBSERVATIONS.index(obs)] = 1 if val == 1 else (-1 if val == 0 else 0)
    return v.tobytes()


def presence_cache_info() -> tuple[int, int, int | None, int]:
    """``functools`` cache statistics of the per-sentence presence cache: the named tuple ``(hits, misses,
    maxsize, currsize)``."""
    return _presence_cached.cache_info()


def sentence_presence(sentences: Sequence[str]) -> np.ndarray:
    """Presence vectors of single sentences: an (n, 14) int8 array (+1 / -1 / 0, module doc).

    Raises :class:`PresenceInputError` for a non-str item. Example:
    ``sentence_presence(["No pneumothorax."])[0][OBSERVATIONS.index("Pneumothorax")] -> -1``.
    """
    if isinstance(sentences, str):
        raise PresenceInputError("sentence_presence expects a sequence of sentences, got one str")
    rows = []
    for i, s in enumerate(sentences):
        if not isinstance(s, str):
            raise PresenceInputError(f"sentence {i} is {type(s).__name__}, expected str")
        rows.append(np.frombuffer(_presence_cached(_norm_sentence(s)), np.int8))
    return np.array(rows, np.int8).reshape(len(rows), len(OBSERVATIONS))


def section_presence(texts: Sequence[str]) -> list[np.ndarray]:
    """Per section text, the presence array of its sentences, shape (n_t, 14), rows in the order of
    :func:`sdrlib.reports.split_sentences` (the rows of ``SentenceEmbedder.encode_sections``)."""
    if isinstance(texts, str):
        raise PresenceInputError("section_presence expects a sequence of section texts, got one str")
    return [sentence_presence(split_sentences(t)) for t in texts]
