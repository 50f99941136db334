"""Per-sentence finding presence with a side: which findings a sentence states, how, and on which side.

Each sentence gets a presence row of :data:`PRESENCE_WIDTH` int8 columns: for each finding of :data:`FINDINGS`
(CheXpert's 14, then 7 findings outside them: :data:`sdrlib.vocabulary.OTHER_FINDINGS`) three side slots, left /
right / unspecified (:data:`SLOTS`), column ``3 f + slot`` (:func:`column`). The offline labeler's mentions
(:func:`sdrlib.clinical.labeler.label_mentions`, run on the sentence alone, each with its status and side) fill
them by the rules of :mod:`sdrlib.distances.negation` (which owns the encoding): positive on a side -> that slot
``+1`` (bilateral -> left and right; no side -> unspecified), negative on a side -> that slot ``-1`` (no side or
bilateral -> all three), **uncertain counts as positive** (the evaluation's convention), a hedge toward absence
("pneumothorax is unlikely", "doubtful effusion") is negative (the labeler reads it 0: its docstring point 14, the
paper map's hedge rows), positive wins within a sentence. "No Finding" is always 0 (the labeler derives it, it is
never read negative). Negation-aware distances,
the recall family, G-CARL and EditGRPO take these arrays; distances never see the text. :func:`findings_of` reads a
row back as ``(finding, side, polarity)`` triples.

**Caching.** Rows are cached per sentence in an in-memory LRU (:data:`PRESENCE_CACHE_SIZE`
entries) keyed by the sentence with white space collapsed and ends stripped (the labeler itself is
case-insensitive and ignores spacing); a sentence is labelled once per process.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from sdrlib.clinical.labeler import label_mentions
from sdrlib.errors import SDRError
from sdrlib.reports import normalize_text, split_sentences
from sdrlib.vocabulary import CHEXPERT_14, PRESENCE_FINDINGS, PRESENCE_SLOTS, PRESENCE_WIDTH

__all__ = ["OBSERVATIONS", "FINDINGS", "SLOTS", "PRESENCE_WIDTH", "PRESENCE_CACHE_SIZE", "PresenceInputError",
           "sentence_presence", "section_presence", "presence_cache_info", "column", "findings_of", "observation_presence"]


class PresenceInputError(SDRError, ValueError):
    """Presence asked of something that is not a sequence of sentence / section strings."""


#: CheXpert's 14 observations (the first 14 findings of a presence row)
OBSERVATIONS: tuple[str, ...] = tuple(CHEXPERT_14)
#: the findings of a presence row, in column order (CheXpert's 14, then the others)
FINDINGS: tuple[str, ...] = PRESENCE_FINDINGS
#: the side slots of each finding
SLOTS: tuple[str, ...] = PRESENCE_SLOTS
_SLOTS_OF = {"left": (0,), "right": (1,), "bilateral": (0, 1), "unspecified": (2,)}


def column(finding: str, slot: str) -> int:
    """The presence column of ``finding`` (one of :data:`FINDINGS`) on side slot ``slot`` (one of :data:`SLOTS`);
    :class:`PresenceInputError` naming the allowed values otherwise. Example: ``column("Pleural Effusion", "left")``
    -> 30."""
    if finding not in FINDINGS:
        raise PresenceInputError(f"column: unknown finding {finding!r}; one of {list(FINDINGS)}")
    if slot not in SLOTS:
        raise PresenceInputError(f"column: unknown side slot {slot!r}; one of {list(SLOTS)}")
    return FINDINGS.index(finding) * len(SLOTS) + SLOTS.index(slot)


def _slots(P: np.ndarray, what: str) -> np.ndarray:
    """``P`` as (n, PRESENCE_WIDTH) slots: a legacy (n, 14) array without sides is read as
    :mod:`sdrlib.distances.negation` reads it (+1 -> unspecified, -1 -> every slot); any other width is an error."""
    a = np.asarray(P)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] not in (PRESENCE_WIDTH, len(OBSERVATIONS)):
        raise PresenceInputError(f"{what}: presence rows have {PRESENCE_WIDTH} columns (or {len(OBSERVATIONS)} "
                                 f"without sides), got shape {a.shape}")
    if a.shape[1] == PRESENCE_WIDTH:
        return a
    out = np.zeros((a.shape[0], len(FINDINGS), len(SLOTS)), np.int8)
    out[:, :len(OBSERVATIONS), SLOTS.index("unspecified")] = a > 0
    out[:, :len(OBSERVATIONS), :] -= (a < 0)[:, :, None].astype(np.int8)
    return out.reshape(a.shape[0], PRESENCE_WIDTH)


def observation_presence(P: np.ndarray) -> np.ndarray:
    """Presence rows without sides, over CheXpert's 14 only: an (n, 14) int8 array, ``+1`` where some slot of the
    observation is positive, else ``-1`` where some slot is negative, else 0 (the form before sides; findings
    outside the 14 dropped; a legacy (n, 14) array is returned as read). Example: ``observation_presence(sentence_presence(["No left effusion."]))`` is -1 at
    Pleural Effusion."""
    P = _slots(P, "observation_presence")
    f = P.reshape(len(P), len(FINDINGS), len(SLOTS))[:, :len(OBSERVATIONS)]
    return np.where((f > 0).any(axis=2), 1, np.where((f < 0).any(axis=2), -1, 0)).astype(np.int8)


def findings_of(row: np.ndarray) -> set[tuple[str, str, int]]:
    """A presence row read back: ``{(finding, slot, +1 | -1)}`` for every stated slot. A denial without a side
    shows as its three slots. Example: ``findings_of(sentence_presence(["Small left pleural effusion."])[0])`` ->
    ``{("Pleural Effusion", "left", 1)}``."""
    row = _slots(np.asarray(row).reshape(-1), "findings_of")[0]
    return {(FINDINGS[k // len(SLOTS)], SLOTS[k % len(SLOTS)], int(row[k])) for k in np.flatnonzero(row)}
#: sentences whose presence vectors are kept in memory
PRESENCE_CACHE_SIZE = 1 << 17


def _norm_sentence(s: str) -> str:
    return normalize_text(s, form=None)


@lru_cache(maxsize=PRESENCE_CACHE_SIZE)
def _presence_cached(sentence: str) -> bytes:
    v = np.zeros((len(FINDINGS), len(SLOTS)), np.int8)
    for obs, status, side in label_mentions(sentence):
        if obs == "No Finding":
            continue
        f = FINDINGS.index(obs)
        if status != 0:  # positive, or uncertain read as positive (module doc)
            v[f, list(_SLOTS_OF[side])] = 1
        else:
            for k in (_SLOTS_OF[side] if side in ("left", "right") else range(len(SLOTS))):
                if v[f, k] != 1:
                    v[f, k] = -1
    return v.tobytes()


def presence_cache_info() -> tuple[int, int, int | None, int]:
    """``functools`` cache statistics of the per-sentence presence cache: the named tuple ``(hits, misses,
    maxsize, currsize)``."""
    return _presence_cached.cache_info()


def sentence_presence(sentences: Sequence[str]) -> np.ndarray:
    """Presence rows of single sentences: an (n, :data:`PRESENCE_WIDTH`) int8 array (+1 / -1 / 0, module doc).

    Raises :class:`PresenceInputError` for a non-str item. Example:
    ``sentence_presence(["No pneumothorax."])[0][column("Pneumothorax", "left")] -> -1``.
    """
    if isinstance(sentences, str):
        raise PresenceInputError("sentence_presence expects a sequence of sentences, got one str")
    rows = []
    for i, s in enumerate(sentences):
        if not isinstance(s, str):
            raise PresenceInputError(f"sentence {i} is {type(s).__name__}, expected str")
        rows.append(np.frombuffer(_presence_cached(_norm_sentence(s)), np.int8))
    return np.array(rows, np.int8).reshape(len(rows), PRESENCE_WIDTH)


def section_presence(texts: Sequence[str]) -> list[np.ndarray]:
    """Per section text, the presence array of its sentences, shape (n_t, :data:`PRESENCE_WIDTH`), rows in the order of
    :func:`sdrlib.reports.split_sentences` (the rows of ``SentenceEmbedder.encode_sections``)."""
    if isinstance(texts, str):
        raise PresenceInputError("section_presence expects a sequence of section texts, got one str")
    return [sentence_presence(split_sentences(t)) for t in texts]
