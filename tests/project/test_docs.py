"""The docs cannot drift from the code: the bad-input table (docs/bad_input.md) names tests that exist, and the
paper map (docs/paper_map.md) cites code names, profile keys and files that exist, with verdicts that add up.
The profiles say where each of their values comes from (the SDR paper, EditGRPO, G-CARL, or ours)."""

from __future__ import annotations

import importlib
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAPER_MAP = ROOT / "docs" / "paper_map.md"
VERDICTS = ("as written", "interpretation", "substitution", "ours")
NOT_REPRODUCED = "—"


def _test_names() -> set[str]:
    names = set()
    for p in (ROOT / "tests").rglob("test_*.py"):
        names.update(re.findall(r"^\s*def (test_\w+)", p.read_text(encoding="utf-8"), flags=re.M))
    return names


def test_every_test_named_in_the_bad_input_table_exists():
    doc = (ROOT / "docs" / "bad_input.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(?:tests/\w+\.py::)?(test_\w+)`", doc))
    assert len(named) > 40  # the table is not empty
    missing = sorted(named - _test_names())
    assert not missing, f"docs/bad_input.md names tests that do not exist: {missing}"


# --------------------------------------------------------------------------- the paper map
#: `sdrlib.module.name[.attr]`, `configs/<profile>.yaml: section.key`, and a repository file path
_CODE_NAME = re.compile(r"`(sdrlib(?:\.[A-Za-z_]\w*)+)`")
_PROFILE_KEY = re.compile(r"`configs/([\w-]+)\.yaml: ([A-Za-z_][\w.]*)`")
_PATH = re.compile(r"`((?:configs|notebooks|sdrlib|docs|tests|benchmarks|scripts)/[^`\s]+)`")


def _resolve(dotted: str) -> bool:
    """Whether ``sdrlib.a.b.c`` names something: the longest importable module prefix, then getattr for the rest."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as exc:
            if exc.name is not None and not dotted.startswith(exc.name):
                raise  # a dependency of the module is missing: an environment problem, not a map problem
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _has_key(profile: str, dotted: str, cache: dict) -> bool:
    """Whether ``dotted`` is a key of the loaded profile (``extends`` applied; an unlisted key is a schema default)."""
    from sdrlib.config import ConfigError, load_profile

    if profile not in cache:
        try:
            cache[profile] = load_profile(profile)
        except ConfigError:
            cache[profile] = None
    obj = cache[profile]
    if obj is None:
        return False
    for attr in dotted.split("."):
        if not hasattr(obj, attr):
            return False
        obj = getattr(obj, attr)
    return True


def missing_citations(text: str) -> list[str]:
    """Every code name, profile key and path ``text`` cites in backticks that does not exist, as readable lines."""
    missing, cache = [], {}
    for name in sorted(set(_CODE_NAME.findall(text))):
        if not _resolve(name):
            missing.append(f"code name {name}")
    for profile, key in sorted(set(_PROFILE_KEY.findall(text))):
        if not _has_key(profile, key, cache):
            missing.append(f"profile key configs/{profile}.yaml: {key}")
    for path in sorted(set(_PATH.findall(text))):
        if not (ROOT / path).exists():
            missing.append(f"path {path}")
    return missing


def _map_rows(text: str) -> list[list[str]]:
    """The table rows of the map as lists of cells (header and separator rows left out)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("| Paper item") or line.startswith("| ---"):
            continue
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_every_name_the_paper_map_cites_exists():
    text = PAPER_MAP.read_text(encoding="utf-8")
    assert len(_CODE_NAME.findall(text)) > 100 and len(_PROFILE_KEY.findall(text)) > 50  # the map cites code
    missing = missing_citations(text)
    assert not missing, "docs/paper_map.md cites names that do not exist:\n" + "\n".join(missing)


def test_the_citation_check_fails_on_a_missing_name():
    """A renamed function, a dropped profile key or a moved notebook is reported (the check above is not vacuous)."""
    good = ("`sdrlib.rewards.trl_reward_functions` `configs/paper.yaml: grpo.editgrpo.tau` "
            "`configs/cpu.yaml: selection.api_temperature` `notebooks/05_selection.py`")
    assert missing_citations(good) == []  # editgrpo.tau via extends, api_temperature a schema default
    bad = ("`sdrlib.rewards.trl_reward_function` `sdrlib.no_such_module.x` `configs/paper.yaml: grpo.no_such_key` "
           "`configs/nope.yaml: grpo.beta` `notebooks/99_missing.py`")
    assert missing_citations(bad) == [
        "code name sdrlib.no_such_module.x", "code name sdrlib.rewards.trl_reward_function",
        "profile key configs/nope.yaml: grpo.beta", "profile key configs/paper.yaml: grpo.no_such_key",
        "path notebooks/99_missing.py"]


def test_every_paper_map_row_has_one_verdict_and_the_counts_add_up():
    text = PAPER_MAP.read_text(encoding="utf-8")
    rows = _map_rows(text)
    assert len(rows) > 80
    bad = [r for r in rows if len(r) != 4]
    assert not bad, f"rows without exactly 4 cells (a stray '|'?): {bad[:3]}"
    wrong = [r[0] for r in rows if r[2] not in VERDICTS + (NOT_REPRODUCED,)]
    assert not wrong, f"rows whose verdict is not one of {VERDICTS} or {NOT_REPRODUCED!r}: {wrong}"
    unexplained = [r[0] for r in rows if (r[2] == NOT_REPRODUCED) != r[1].startswith("not reproduced:")]
    assert not unexplained, f"'{NOT_REPRODUCED}' exactly for rows whose code cell says 'not reproduced: why': {unexplained}"
    silent = [r[0] for r in rows if r[2] in ("interpretation", "substitution") and not r[3]]
    assert not silent, f"interpretation / substitution rows must say what was chosen: {silent}"
    counts = Counter("not reproduced" if r[2] == NOT_REPRODUCED else r[2] for r in rows)
    stated = dict(re.findall(r"(as written|interpretation|substitution|ours|not reproduced)=(\d+)",
                             re.search(r"<!-- counts: (.*?) -->", text).group(1)))
    assert {k: int(v) for k, v in stated.items()} == dict(counts), f"header counts {stated} vs rows {dict(counts)}"
    header = re.search(r"\*\*Counts\*\* \((\d+) rows", text)
    assert header and int(header.group(1)) == len(rows)
    for verdict, n in counts.items():  # the sentence a reader sees says the same as the machine-read comment
        assert f"{n} {verdict}" in text.split("<!-- counts")[0], f"header sentence lacks '{n} {verdict}'"


# --------------------------------------------------------------------------- profile provenance
_KEY_LINE = re.compile(r"^\s*[A-Za-z_][\w.]*:\s*(?P<value>[^#\s][^#]*?)?\s*(?:#\s*(?P<comment>.*))?$")
_SOURCE = re.compile(r"\bours\b|SDR paper|EditGRPO|G-CARL")


@pytest.mark.parametrize("profile", ["cpu", "paper", "smoke", "study", "study_blind_start", "rehearsal"])
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


@pytest.mark.parametrize("profile", ["cpu", "study", "study_blind_start", "smoke"])
def test_profile_values_take_one_line_each_and_the_history_lives_in_an_evidence_page(profile):
    """Below the header a profile holds key lines only: each value's comment is on its own line (no comment block, no
    continuation line); the measurements behind the values are on the evidence page the header names, which exists."""
    lines = (ROOT / "configs" / f"{profile}.yaml").read_text(encoding="utf-8").splitlines()
    first_key = next(n for n, line in enumerate(lines) if re.match(r"[A-Za-z_]", line))
    blocks = [f"{profile}.yaml:{n + 1}: {line.strip()}" for n, line in enumerate(lines[first_key:], first_key)
              if line.lstrip().startswith("#")]
    assert not blocks, "comment lines among the values (move the history to docs/evidence/):\n" + "\n".join(blocks)
    if profile != "smoke":  # smoke's values are test sizes: no measurement behind them
        header = " ".join(lines[:first_key])
        pages = re.findall(r'"evidence page" =\s*#?\s*(docs/evidence/\S+\.md)', header)
        assert pages and (ROOT / pages[0]).is_file(), f"{profile}.yaml's header names no existing evidence page"
        assert any("evidence page" in line for line in lines[first_key:]), f"{profile}.yaml never points to it"


def test_every_file_a_profile_names_exists():
    """A profile's comments point to docs, benchmarks, tests and evidence pages by path; each one is there."""
    missing = []
    for f in sorted((ROOT / "configs").glob("*.yaml")):
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for path in re.findall(r"\b((?:docs|benchmarks|tests|configs)/[\w./-]+\.(?:md|py|yaml|csv))", line):
                if not (ROOT / path).is_file():
                    missing.append(f"{f.name}:{n}: {path}")
    assert not missing, "profiles name files that do not exist:\n" + "\n".join(missing)


def test_cpu_profile_does_not_attribute_lora_or_its_step_counts_to_the_paper():
    """The SDR paper gives neither LoRA nor a step count: a cpu.yaml line naming them with the paper must deny it."""
    for n, line in enumerate((ROOT / "configs" / "cpu.yaml").read_text(encoding="utf-8").splitlines(), 1):
        if re.search(r"LoRA|\b1000 steps|max_steps: 1000", line) and "paper" in line:
            assert re.search(r"\b(not|no)\b", line), f"cpu.yaml:{n} calls LoRA / 1000 steps the paper's: {line.strip()}"
