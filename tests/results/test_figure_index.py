"""sdrlib.results: the figure index against a run's folders, and bad input (the figures: tests/plots/)."""

from __future__ import annotations

import pytest

from sdrlib.errors import SDRError
from sdrlib.results import FIGURE_INDEX, FigureEntry, PlotError, figure_index, missing_summary


def _touch(path, text="x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ---------------------------------------------------------------- the index


def test_figure_index_marks_present_missing_and_unindexed_files(tmp_path):
    res, figs = tmp_path / "results", tmp_path / "figures"
    _touch(figs / "01_report_embedding.png")
    _touch(res / "05_headline_findings.md")
    _touch(res / "05_headline_findings.csv")  # the CSV twin is not a second entry
    _touch(res / "grpo_bleu_findings.md")
    _touch(res / "grpo_rouge_findings.md")
    _touch(figs / "05_policy_heatmap_CXB_14.png")  # Fig. 5's stand-in when RadGraph is not installed
    _touch(figs / "mystery.png")
    _touch(res / "README.md")
    _touch(res / "figure_index.md")  # the index never lists itself
    idx = figure_index(res, figs)
    st = dict(zip(idx.file, idx.status))
    assert st["figures/01_report_embedding.png"] == "present"
    assert st["results/05_headline_findings.md"] == "present"
    assert st["results/grpo_bleu_findings.md"] == st["results/grpo_rouge_findings.md"] == "present"
    assert st["figures/05_policy_heatmap_CXB_14.png"] == "present"
    assert not any("RG_E" in f for f in idx.file)  # an alternative present: Fig. 5 is not missing
    # and its caption names what it plots (issue 26: it said RadGraph F1 over a CXB-14 heatmap)
    cap = idx.set_index("file").loc["figures/05_policy_heatmap_CXB_14.png", "what"]
    assert cap.split("(")[0].endswith("CXB-14 ") and "RadGraph entity F1 (RG-E" not in cap
    assert st["figures/02_set_distance_example.png"] == "missing"
    assert st["results/05_headline_impression.md"] == "missing"
    assert st["figures/mystery.png"] == "not in index"
    assert not any(f.endswith(("README.md", "figure_index.md", ".csv")) for f in idx.file)
    row = idx.set_index("file").loc["figures/01_report_embedding.png"]
    assert (row.notebook, row.paper) == ("01_embedding", "Fig. 1")
    assert idx.set_index("file").loc["results/05_headline_findings.md", "paper"] == "Table 3"
    # every file appears once, even when two entries' patterns match it (a group's names and the headline)
    _touch(res / "grpo_headline_findings.md")
    idx = figure_index(res, figs)
    assert idx.file.is_unique
    assert idx.set_index("file").loc["results/grpo_headline_findings.md", "paper"].startswith("Tables 1-2")
    # a table named like a metric group is not labelled as one (issue 26: grpo_positive_findings)
    _touch(res / "grpo_positive_findings.md")
    row = figure_index(res, figs).set_index("file").loc["results/grpo_positive_findings.md"]
    assert row.paper == "" and row.what.startswith("positive findings")
    text = missing_summary(idx)
    assert "02_distances" in text and "--only 02" in text and "mystery.png" in text


def test_figure_index_on_folders_that_do_not_exist_lists_everything_as_missing(tmp_path):
    idx = figure_index(tmp_path / "no_results", tmp_path / "no_figures")
    assert len(idx) and (idx.status == "missing").all()
    papers = set(idx.paper)
    for item in ("Fig. 1", "Fig. 2a", "Fig. 2b", "Fig. 3", "Fig. 4", "Fig. 5", "Table 3", "Table 23"):
        assert item in papers, item


def test_figure_index_with_every_entry_present_has_nothing_missing(tmp_path):
    res, figs = tmp_path / "r", tmp_path / "f"
    for e in FIGURE_INDEX:
        name = e.name.split("|")[0].replace("*", "x")
        _touch((figs / f"{name}.png") if e.kind == "figure" else (res / f"{name}.md"))
    idx = figure_index(res, figs)
    assert (idx.status == "present").all()
    assert missing_summary(idx).startswith("every indexed file is present")


def test_figure_index_refuses_a_file_for_a_folder(tmp_path):
    f = tmp_path / "results"
    f.write_text("not a folder")
    with pytest.raises(PlotError, match="is a file, not a folder") as e:
        figure_index(f, tmp_path / "figures")
    assert isinstance(e.value, SDRError) and isinstance(e.value, ValueError)


def test_figure_index_entries_name_known_notebooks_and_kinds():
    for e in FIGURE_INDEX:
        assert isinstance(e, FigureEntry)
        assert e.kind in ("figure", "table"), e
        assert e.notebook[:2].isdigit() and e.notebook[2] == "_", e
