"""The README's first screen: the study's answer with its scale and detectable effects, every number from the
committed study table (``docs/evidence/study/table.csv``) and the paper's from ``sdrlib.experiments.paper_values``;
the glossary linked at the first use of its terms; each comparison with the paper naming both instruments."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from sdrlib.experiments.paper_values import PAPER_TABLES, paper_effect

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST_SCREEN = " ".join("\n".join(README.splitlines()[:60]).split())
TABLE = pd.read_csv(ROOT / "docs" / "evidence" / "study" / "table.csv")


def _rows(b: str, metric: str, verdict: str) -> pd.DataFrame:
    t = TABLE[(TABLE.family == "primary") & (TABLE.B == b) & TABLE.metric.str.startswith(metric)]
    return t[t.verdict == verdict]


def _span(x: pd.Series, fmt: str) -> str:
    lo, hi = sorted((f"{v:{fmt}}" for v in (x.min(), x.max())), key=lambda v: float(v))
    return lo if lo == hi else f"{lo} to {hi}"


def test_the_first_screen_states_the_studys_answer_from_its_table():
    assert "Not as the paper reports, at this scale" in FIRST_SCREEN and "22 seeds x 400 test studies" in FIRST_SCREEN
    above = _rows("SFT", "bertscore_f1", "above")
    below = _rows("SFT", "clinical_f1_macro14", "below")
    assert set(above.A) == {"R_Cham", "R_Haus", "R_Cham_rec1"} and len(below) == 4  # every configuration below
    for rows in (above, below):
        d = rows["diff"].abs()
        sign = "+" if rows["diff"].iloc[0] > 0 else "-"
        diffs = f"{sign}{d.min():.3f} to {sign}{d.max():.3f}" if sign == "+" else f"-{d.min():.3f} to -{d.max():.3f}"
        assert f"by {diffs} (detectable {_span(rows.mde, '.3f')})" in FIRST_SCREEN, diffs
    exact = _rows("R_exact", "clinical_f1_macro14", "below")
    assert set(exact.A) == {"R_Cham", "R_Haus"}
    assert f"by {exact['diff'].iloc[0]:+.3f} (detectable {' and '.join(f'{m:.3f}' for m in sorted(exact.mde))}" \
        in FIRST_SCREEN
    none = _rows("R_exact", "bertscore_f1", "no difference detected")
    assert len(none) == 3 and f"no BERTScore F1 difference is detected (detectable {_span(none.mde, '.3f')})" \
        in FIRST_SCREEN
    # the paper's numbers from the one source, with the paper's instruments named beside ours
    rex = PAPER_TABLES[0]
    assert (f"R_Cham {paper_effect('R_Cham', 'SFT', 'bertscore_f1', rex):+.3f} BERTScore F1 and "
            f"{paper_effect('R_Cham', 'SFT', 'clinical_f1_macro14', rex):+.3f} CheXbert F1 over SFT") in FIRST_SCREEN
    assert (f"R_Cham {paper_effect('R_Cham', 'R_exact', 'clinical_f1_macro14', rex):+.3f} and R_Haus "
            f"{paper_effect('R_Haus', 'R_exact', 'clinical_f1_macro14', rex):+.3f} CheXbert F1") in FIRST_SCREEN
    assert "all-MiniLM-L6-v2" in FIRST_SCREEN and "rule labeler" in FIRST_SCREEN
    # then what the default run demonstrates, and nothing before it that says effects cannot show
    assert FIRST_SCREEN.index("The answer") < FIRST_SCREEN.index("What the default run demonstrates")
    assert "not expected to be visible" not in README


@pytest.mark.parametrize("term, anchor", [("CXB-14", "#report-metrics-notebooks-03-06"), ("Holm", "#statistics"),
                                          ("MBR", "#selection-and-pruning-notebooks-02-05-06")])
def test_the_glossary_is_linked_at_a_terms_first_use(term, anchor):
    first = re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", README)
    assert first, term
    assert README[first.start() - 1:first.end() + 2 + len("docs/glossary.md") + len(anchor)] == \
        f"[{term}](docs/glossary.md{anchor}", README[first.start() - 40:first.end() + 40]
    headings = {"#" + re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
                for h in re.findall(r"^## (.+)$", (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8"), re.M)}
    assert anchor in headings


def test_the_readme_comparison_with_the_paper_takes_the_papers_numbers_from_one_source():
    rows = [line.split(" | ") for line in README.splitlines() if line.startswith("| GRPO: ")]
    assert len(rows) == 8
    for cells in rows:
        a, b = cells[0].removeprefix("| GRPO: ").split(" vs ")
        metric = "bertscore_f1" if cells[1].startswith("BERTScore") else "clinical_f1_macro14"
        paper = ", ".join(f"{paper_effect(a, b, metric, t):+.3f} ({t.split('(')[1][:-1]})" for t in PAPER_TABLES)
        assert cells[2].startswith(paper), cells  # as written here or as notebook 07's comparison_view writes it
        # both instruments named in the row: the paper's and this run's
        row = " | ".join(cells)
        assert ("CheXbert F1" in row and "CXB-14" in row) if metric.startswith("clinical") else \
            ("backbone not named" in row and "all-MiniLM-L6-v2" in row), row
