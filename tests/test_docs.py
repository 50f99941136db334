"""The docs cannot drift from the code: the bad-input table (docs/bad_input.md) names tests that exist.
The profiles say where each of their values comes from (the SDR paper, EditGRPO, G-CARL, or ours)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


# --------------------------------------------------------------------------- profile provenance
_KEY_LINE = re.compile(r"^\s*[A-Za-z_][\w.]*:\s*(?P<value>[^#\s][^#]*?)?\s*(?:#\s*(?P<comment>.*))?$")
_SOURCE = re.compile(r"\bours\b|SDR paper|EditGRPO|G-CARL")


@pytest.mark.parametrize("profile", ["cpu", "paper", "smoke"])
def test_every_profile_value_says_where_it_comes_from(profile):
    """Each key with a value carries a comment naming its source: the SDR paper (with where), EditGRPO, G-CARL or ours."""
    lines = (ROOT / "configs" / f"{profile}.yaml").read_text(encoding="utf-8").splitlines()
    untagged = []
    for n, line in enumerate(lines, 1):
        m = _KEY_LINE.match(line)
        if m is None or m.group("value") is None:  # comments, section headers, list continuation lines
            continue
        comment = m.group("comment") or ""
        if not _SOURCE.search(comment):
            untagged.append(f"{profile}.yaml:{n}: {line.strip()}")
        elif (not re.search(r"\bours\b", comment) and "SDR paper" in comment
              and not re.search(r"SDR paper (sec|eq|app|Tab|Alg)\.? ?\w", comment)):
            untagged.append(f"{profile}.yaml:{n}: 'SDR paper' without a location: {line.strip()}")
    assert not untagged, "profile values without a source comment:\n" + "\n".join(untagged)


def test_cpu_profile_does_not_attribute_lora_or_its_step_counts_to_the_paper():
    """The SDR paper gives neither LoRA nor a step count: a cpu.yaml line naming them with the paper must deny it."""
    for n, line in enumerate((ROOT / "configs" / "cpu.yaml").read_text(encoding="utf-8").splitlines(), 1):
        if re.search(r"LoRA|\b1000 steps|max_steps: 1000", line) and "paper" in line:
            assert re.search(r"\b(not|no)\b", line), f"cpu.yaml:{n} calls LoRA / 1000 steps the paper's: {line.strip()}"
