"""The embedding layer's errors and warnings (re-exported by :mod:`sdrlib.embedding`)."""

from __future__ import annotations

from sdrlib.errors import SDRError

__all__ = ["EncoderNotFoundError", "EmbeddingError", "BankNotFoundError", "EmbeddingCacheWarning",
           "EncoderTruncationWarning"]


class EncoderNotFoundError(SDRError, FileNotFoundError):
    """No local copy of the requested encoder; the message says what to install."""


class EmbeddingError(SDRError, ValueError):
    """Bad input to the embedding layer (NaN vectors, wrong shapes, mismatched encoder, unusable files)."""


class BankNotFoundError(SDRError, FileNotFoundError):
    """No saved report bank at the given path; the message says how to build one."""


class EmbeddingCacheWarning(UserWarning):
    """The sentence cache was moved aside (corrupt) or is used read-only."""


class EncoderTruncationWarning(UserWarning):
    """Some sentences were longer than the encoder's window and were truncated by it."""
