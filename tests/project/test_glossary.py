"""docs/glossary.md defines every name the README (and the docs pages it links), the notebooks and the tables print.

The terms are collected, not listed: what counts as a term and how the glossary defines one (names and patterns
in the first cell of its table rows) is the rule of ``tests/glossary_terms.py``. Here: the terms of the README, of
the docs pages that hold its former sections (``README_PAGES``) and of the notebooks' Markdown cells, and the names
known without a run (reward labels and configuration names of every profile, the distance settings, the column
schemas the code declares). The column headers of the tables a real run writes are checked on the smoke run itself
(``tests/notebooks/test_notebooks_smoke.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from glossary_terms import (NOT_TERMS, PHRASES, Glossary, glossary, glossary_names, report, table_headers, text_terms,
                            texts, undefined)

from sdrlib.metrics.paper_names import TABLES

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def gloss() -> Glossary:
    return glossary()


def test_every_term_of_the_readme_and_the_notebooks_is_defined(gloss):
    found = text_terms()
    missing = undefined(found, gloss)
    assert not missing, ("docs/glossary.md does not define these terms of the README / notebooks (define them, or "
                         "if one is code and not a label, say why in tests/glossary_terms.NOT_TERMS):\n"
                         + report(missing, found))


def test_every_reward_configuration_and_distance_setting_is_defined(gloss):
    from sdrlib.config import load_profile
    from sdrlib.distances import available_distances
    from sdrlib.rewards import parse_reward

    names = set(available_distances(include_extensions=True))
    for profile in sorted(p.stem for p in (ROOT / "configs").glob("*.yaml")):
        g = load_profile(profile).grpo
        for r in ["sft", *g.rewards, *g.ablations]:
            names |= {r, parse_reward(r).label}
    names |= {"const", "C-const", "chamfer_neg", "R_Cham_neg", "hausdorff", "R_Haus"}
    missing = undefined(names, gloss)
    assert not missing, f"docs/glossary.md does not define these reward / distance names: {missing}"


def test_every_column_the_code_declares_is_defined(gloss):
    from sdrlib.clinical.labeler_check import LABELER_COLUMNS
    from sdrlib.experiments.paper_comparison import COLUMNS as PAPER_COMPARISON_COLUMNS
    from sdrlib.experiments.grpo_report import GROUP_COLUMNS, SIG_COLUMNS
    from sdrlib.metrics.significance import COMPARISON_COLUMNS
    from sdrlib.results import CELL_COLUMNS, SD_SUFFIX

    cols = {*COMPARISON_COLUMNS, *CELL_COLUMNS, *LABELER_COLUMNS, *SIG_COLUMNS, *GROUP_COLUMNS.values(),
            *PAPER_COMPARISON_COLUMNS}
    cols |= {f"{c}{SD_SUFFIX}" for c in GROUP_COLUMNS.values()}
    names = {n for t in TABLES.values() for n in t if "BLEU-" not in n} | {"S-BLEU-1", "S-BLEU-4", "C-BLEU-4"}
    missing = undefined(cols | names, gloss)
    assert not missing, f"docs/glossary.md does not define these columns / metric names: {missing}"


def test_every_column_of_the_study_tables_is_defined(gloss):
    """The GRPO study's behaviour, stability and SFT-starts tables (their CSV headers; a stability table's per-seed
    columns for seeds 0 and 12)."""
    from sdrlib.experiments.study.behaviour import BEHAVIOUR_COLUMNS
    from sdrlib.experiments.study.stability import STABILITY_COLUMNS, START_COLUMNS

    cols = {*BEHAVIOUR_COLUMNS, *STABILITY_COLUMNS, *START_COLUMNS, "p_holm_s0", "verdict_s0", "p_holm_s12",
            "verdict_s12"}
    missing = undefined(cols, gloss)
    assert not missing, f"docs/glossary.md does not define these study table columns: {missing}"


def test_every_column_of_the_recorded_runs_is_defined(gloss):
    """The tables the README quotes from earlier default runs (docs/evidence/) are real headers, older ones too."""
    folders = sorted(p for p in (ROOT / "docs" / "evidence").glob("run-*") if p.is_dir())
    assert folders
    for folder in folders:
        headers = table_headers(folder)
        missing = undefined(headers, gloss)
        assert headers and not missing, f"{folder.name}: docs/glossary.md does not define\n" + report(missing, headers)


def test_the_rule_keeps_its_lists_honest():
    """Every phrase of PHRASES occurs in the text, and every NOT_TERMS entry is something the rules would collect
    (a stale entry would hide nothing, but an allow-list should say only what it is for)."""
    raw = text_terms(keep_not_terms=True)
    assert not [p for p in PHRASES if p not in raw], "PHRASES not in the README / notebooks"
    stale = sorted(t for t in NOT_TERMS if t not in raw)
    assert not stale, f"NOT_TERMS entries the README / notebooks no longer use: {stale}"


def test_names_and_patterns():
    names = glossary_names("| name | what |\n|:--|:--|\n| **R_Cham_rec<alpha>[_bal<w>]**, `bad_*` | x |\n"
                           "| **<metric> pruning** | y |\n| **BS-F1** | z |\n| chamfer, hausdorff | w |\n")
    assert names == {"R_Cham_rec<alpha>[_bal<w>]", "bad_*", "<metric> pruning", "BS-F1", "chamfer", "hausdorff"}
    g = Glossary(names)
    assert all(g.defines(t) for t in ("R_Cham_rec1", "R_Cham_rec0.75_bal2", "bad_too_long", "BS-F1 pruning",
                                      "chamfer"))
    # a placeholder stands for a number or a defined name, not for any text
    assert not any(g.defines(t) for t in ("R_Cham_recx", "R_Cham_rec1_balx", "ROUGE pruning", "plain", "name"))
    assert undefined(["chamfer", "ot"], g) == ["ot"]


def test_a_term_outside_the_glossary_is_named(tmp_path):
    """The rules catch an all-caps abbreviation, a backticked label and a reward label in prose, and leave code,
    paths and commands alone; a run's table headers are read from its CSV and Markdown files."""
    src = {"x.md": "The FOO score and `new_column` of R_Bar, not `sdrlib.x`, `a/b.csv`, `run_all.sh --out`, "
                   "`split_sentences` or CPU.\n```\nBAZ in a code block\n```\n"}
    assert set(text_terms(src)) == {"FOO", "new_column", "R_Bar"}
    (tmp_path / "t.csv").write_text("a,b c\n1,2\n")
    (tmp_path / "t.md").write_text("<!-- x -->\n\n| a   | shown |\n|:----|------:|\n| 1   | 2 |\n")
    assert set(table_headers(tmp_path)) == {"a", "b c", "shown"}


def test_cxb14_is_not_called_chexbert_without_saying_which_backend():
    row = next(line for line in GLOSSARY.splitlines() if line.startswith("| **CXB-14**"))
    assert "offline rule labeler" in row and "Not CheXbert" in row


def test_readme_and_notebook_00_link_the_glossary():
    assert "docs/glossary.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/glossary.md" in (ROOT / "notebooks" / "00_data.py").read_text(encoding="utf-8")
    assert set(texts()) >= {"README.md", "docs/results.md", "00_data.ipynb", "07_figures.ipynb"}
