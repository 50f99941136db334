"""The bad-input table (docs/bad_input.md) names tests that exist, so it cannot drift from them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _test_names() -> set[str]:
    names = set()
    for p in (ROOT / "tests").glob("test_*.py"):
        names.update(re.findall(r"^\s*def (test_\w+)", p.read_text(encoding="utf-8"), flags=re.M))
    return names


def test_every_test_named_in_the_bad_input_table_exists():
    doc = (ROOT / "docs" / "bad_input.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(?:tests/\w+\.py::)?(test_\w+)`", doc))
    assert len(named) > 40  # the table is not empty
    missing = sorted(named - _test_names())
    assert not missing, f"docs/bad_input.md names tests that do not exist: {missing}"
