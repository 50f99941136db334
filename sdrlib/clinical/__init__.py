"""The clinical layer: the offline CheXpert-14 labeler and per-sentence finding presence.

Below :mod:`sdrlib.distances` (negation-aware settings take presence arrays from here, never
text), :mod:`sdrlib.metrics` (clinical F1, strata) and :mod:`sdrlib.rewards` (G-CARL, EditGRPO).
The vocabulary (observation names, label algebra) is :mod:`sdrlib.vocabulary`.

- :mod:`.labeler`: :func:`label_report`, :func:`label_reports`, :func:`label_mentions` (each mention with its
  status and side), :func:`evaluate_labeler`;
- :mod:`.presence`: :func:`sentence_presence`, :func:`section_presence` (+1 / -1 / 0 per sentence, finding and
  side slot, cached per sentence), :func:`column`, :func:`findings_of`.
"""

from sdrlib.clinical.labeler import Mention, evaluate_labeler, label_mentions, label_report, label_reports
from sdrlib.clinical.presence import (FINDINGS, OBSERVATIONS, PRESENCE_CACHE_SIZE, PRESENCE_WIDTH, SLOTS,
                                      PresenceInputError, column, findings_of, observation_presence, presence_cache_info,
                                      section_presence, sentence_presence)

__all__ = ["label_report", "label_reports", "label_mentions", "Mention", "evaluate_labeler", "OBSERVATIONS",
           "FINDINGS", "SLOTS", "PRESENCE_WIDTH", "PRESENCE_CACHE_SIZE", "PresenceInputError", "sentence_presence",
           "section_presence", "presence_cache_info", "column", "findings_of", "observation_presence"]
