"""Shared names of :mod:`sdrlib.apigen`: its errors, the failed-sample placeholder, prompt ids, the logger.

Holds no behaviour; the prompts, the cache, the request loop and the entry point live in the other parts.
"""

from __future__ import annotations

import logging

from sdrlib.errors import SDRError

# one logger for the package, under the name the module had before it became a package
log = logging.getLogger("sdrlib.apigen")

#: What a failed sample is returned as: no sections, so a selection ranks it last.
FAILED_PLACEHOLDER = ""
#: Number of exemplar reports in prompt p2.
N_EXEMPLARS = 5
PROMPTS = ("p1", "p2")
_CACHE_VERSION = 1
_KEY_PLACEHOLDER = "sk-no-key-required"  # sent to a loopback server when no key is set


class APIGenError(SDRError, ValueError):
    """An argument of the API generation is unusable (the message names it)."""


class APIKeyError(APIGenError):
    """No API key in the environment for a remote ``base_url``."""


class APIRequestError(SDRError, RuntimeError):
    """The API refused the run as a whole (401 / 403 / 404: key, model or URL wrong)."""


class CacheWarning(UserWarning):
    """A cache line was unreadable (torn by an interrupted write) and is ignored."""

