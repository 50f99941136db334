"""sdrlib.results: tables, figures and provenance written one way (the figure index is tested in test_figure_index.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib import results  # noqa: E402
from sdrlib.results import git_commit, library_versions, provenance, save_fig, save_table  # noqa: E402


def _cfg(tmp_path):
    return SimpleNamespace(name="smoke", seed=3, embedding=SimpleNamespace(encoder="all-MiniLM-L6-v2"),
                           data=SimpleNamespace(source="synthetic"), results_dir=tmp_path / "results",
                           figures_dir=tmp_path / "figures")


def test_save_table_writes_csv_markdown_and_meta(tmp_path):
    cfg = _cfg(tmp_path)
    df = pd.DataFrame({"a": [1, 2], "b": [0.5, 0.123456789]})
    csv, md = save_table(df, "t", cfg, backend="x")
    assert csv.read_text() == "a,b\n1,0.5\n2,0.123457\n"
    text = md.read_text()
    assert text.startswith("<!-- profile=smoke seed=3 encoder=all-MiniLM-L6-v2 backend=x -->\n\n")
    assert "0.1235" in text and "| 1 |" in text.replace("|   1 |", "| 1 |")
    meta = json.loads((cfg.results_dir / "t.meta.json").read_text())
    assert meta["profile"] == "smoke" and meta["backend"] == "x" and meta["rows"] == 2 and meta["columns"] == ["a", "b"]
    assert meta["data_source"] == "synthetic" and "written_at" in meta and "numpy" in meta["versions"]
    again = save_table(df, "t", cfg, backend="x")
    assert again[0].read_bytes() == csv.read_bytes()  # no timestamp in the tables


def test_numbers_stay_numbers_in_the_csv_and_are_formatted_where_shown(tmp_path):
    from sdrlib.results import format_mean_sd, render_cell_table

    cfg = _cfg(tmp_path)
    df = pd.DataFrame({"config": ["R_fmt", "R_Cham"], "KL": [0.0591, float("nan")], "KL (sd)": [0.0064, float("nan")]})
    csv, md = save_table(df, "mv", cfg, shown=format_mean_sd(df))
    back = pd.read_csv(csv)
    assert list(back.columns) == ["config", "KL", "KL (sd)"] and back.KL.iloc[0] == 0.0591
    assert "0.059 ±0.006" in md.read_text() and "n/a" in md.read_text() and "(sd)" not in md.read_text()
    cells = pd.DataFrame({"Model": ["m"] * 3, "Metric": ["BS"] * 3, "config": ["SFT", "R_fmt", "R_Cham"],
                          "mean": [0.5561, 0.5, float("nan")], "sd": [0.002, 0.0, float("nan")], "n": [3, 1, 0],
                          "best": [True, False, False], "note": ["", "", "n/a"]})
    wide = render_cell_table(cells)
    assert wide.iloc[0].tolist() == ["m", "BS", "**0.556 ±0.002**", "0.500 ±0.000", "n/a"]


def test_save_fig_writes_a_png(tmp_path):
    cfg = _cfg(tmp_path)
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    p = save_fig(fig, "f", cfg)
    plt.close(fig)
    assert p == cfg.figures_dir / "f.png" and p.read_bytes()[:4] == b"\x89PNG"


def test_library_versions_leaves_out_or_names_missing_packages():
    v = library_versions(["numpy", "no-such-package-sdr"])
    assert list(v) == ["numpy"]
    v = library_versions(["no-such-package-sdr", "numpy"], missing="absent")
    assert list(v) == ["no-such-package-sdr", "numpy"] and v["no-such-package-sdr"] == "absent"


def test_git_commit_is_short_or_unknown(monkeypatch):
    c = git_commit()
    assert c == "unknown" or (4 <= len(c) <= 12 and c.isalnum())
    d = git_commit(mark_dirty=True)
    assert d == "unknown" or d.split("+")[0] == c

    def broken(*a, **k):
        raise OSError("no git")

    monkeypatch.setattr(results.subprocess, "run", broken)
    assert git_commit() == "unknown" and git_commit(mark_dirty=True) == "unknown"
    monkeypatch.setattr(results.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout="", stderr=""))
    assert git_commit() == "unknown"


def test_provenance_records_profile_and_extra(tmp_path):
    rec = provenance(_cfg(tmp_path), foo=1)
    assert rec["profile"] == "smoke" and rec["seed"] == 3 and rec["foo"] == 1 and "git_commit" in rec
    assert set(provenance()) == {"python", "versions", "git_commit", "machine"}
    assert {"cpu_model", "kernel_path", "logical_cpus"} <= set(provenance()["machine"])  # what decides floats


def test_table_reader_records_what_was_read_and_a_plain_path_records_nothing(tmp_path):
    cfg = _cfg(tmp_path)
    save_table(pd.DataFrame({"a": [1]}), "t1", cfg)
    save_table(pd.DataFrame({"b": [2]}), "t2", cfg)
    reader = results.TableReader(cfg.results_dir)
    assert results.read_result_table(reader, "t2").b.tolist() == [2]
    assert results.read_result_table(reader, "absent") is None  # not written: not recorded
    results.read_result_table(reader, "t1")
    assert reader.read == [cfg.results_dir / "t2.csv", cfg.results_dir / "t1.csv"]
    other = results.TableReader(cfg.results_dir)  # each reader its own record: no state shared between them
    results.read_result_table(cfg.results_dir, "t1")
    assert other.read == [] and len(reader.read) == 2
    assert Path(reader) == cfg.results_dir and not hasattr(results, "TABLES_READ")


def test_a_missing_results_folder_is_named_not_read_as_a_table_not_written(tmp_path):
    """Before: ``read_result_table`` of a folder that does not exist answered None, "not written by this run"."""
    from sdrlib.results import ResultTableError, read_result_table

    with pytest.raises(ResultTableError, match="no such results folder \\(missing\\)"):
        read_result_table(tmp_path / "nope", "grpo_significance")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ResultTableError, match="no such results folder \\(a file\\)"):
        read_result_table(tmp_path / "file", "grpo_significance")
    (tmp_path / "results").mkdir()
    assert read_result_table(tmp_path / "results", "grpo_significance") is None   # a folder without the table
