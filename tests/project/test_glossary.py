"""docs/glossary.md defines every name the tables print, and the README and notebook 00 point to it (issue 26)."""

from __future__ import annotations

from pathlib import Path

from sdrlib.metrics.paper_names import TABLES

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")


def test_every_table_metric_and_reward_label_is_defined():
    names = {n for t in TABLES.values() for n in t if "BLEU-" not in n} | {"S-BLEU-1", "S-BLEU-4", "C-BLEU-4"}
    names |= {"R_fmt", "R_exact", "R_Cham", "R_Haus", "R_Cham_neg", "EditGRPO", "G-CARL", "R_sem", "KL", "MBR",
              "kNN", "strata", "wu", "tok-save %", "bad_*", "distinct_words_findings"}
    missing = sorted(n for n in names if n not in GLOSSARY)
    assert not missing, f"docs/glossary.md does not define {missing}"


def test_cxb14_is_not_called_chexbert_without_saying_which_backend():
    row = next(line for line in GLOSSARY.splitlines() if line.startswith("| **CXB-14**"))
    assert "offline rule labeler" in row and "Not CheXbert" in row


def test_readme_and_notebook_00_link_the_glossary():
    assert "docs/glossary.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/glossary.md" in (ROOT / "notebooks" / "00_data.py").read_text(encoding="utf-8")
