"""README blocks of small test runs: the groups a run cannot write removed, for the tests of
``python -m sdrlib.experiments.claims --check`` that are about other things than missing tables."""

from __future__ import annotations

import re

#: a ``**title**`` paragraph that is only the notes of its missing tables (sdrlib.experiments.claims.results_section)
_MISSING_GROUP = re.compile(r"\n\*\*[^\n]+\*\*\n\n(?:- \*table `[^`]+` missing: [^\n]+\*\n)+")


def without_missing_groups(block: str) -> str:
    """``block`` without the paragraphs written in place of a group whose table the run lacks (title and notes)."""
    return _MISSING_GROUP.sub("", block)
