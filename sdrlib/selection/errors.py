"""The error type of best-of-K selection."""

from sdrlib.errors import SDRError

__all__ = ["SelectionError"]


class SelectionError(SDRError, ValueError):
    """Inputs that best-of-K selection cannot use (encoder mismatch, shapes, names, missing policies)."""
