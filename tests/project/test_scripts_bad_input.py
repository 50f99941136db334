"""The project scripts name the file they cannot read, in one line, with exit 2 (issue 36 item 6): every file
``scripts/hash_outputs.py`` and ``scripts/readme_numbers.py`` (``python -m sdrlib.experiments.claims``) read, each
way it can be wrong."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest

from sdrlib.experiments.claims.cli import PROG

ROOT = Path(__file__).resolve().parents[2]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _one_line(capsys, *fragments):
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    for f in fragments:
        assert f in err, (f, err)


@pytest.fixture()
def root(tmp_path):
    (tmp_path / "results").mkdir()
    pd.DataFrame({"a": [1, 2], "seconds": [0.1, 0.2]}).to_csv(tmp_path / "results" / "t.csv", index=False)
    return tmp_path


BAD_TABLES = {"latin-1": "caf\xe9,x\n1,2\n".encode("latin-1"), "utf-16": "a,b\n1,2\n".encode("utf-16"),
              "binary": bytes(range(256))}


@pytest.mark.parametrize("kind", BAD_TABLES)
def test_hash_outputs_names_a_table_that_is_not_utf8(root, capsys, kind):
    (root / "results" / "bad.csv").write_bytes(BAD_TABLES[kind])
    assert _load("hash_outputs").main([str(root)]) == 2
    _one_line(capsys, "hash_outputs:", "bad.csv", "not UTF-8")


@pytest.mark.parametrize("content, what", [
    ("{not json", "not JSON"), ("[1, 2]", "a JSON list"), ('"text"', "a JSON str"),
    ('{"results/t.csv": 3}', "entry 'results/t.csv'"), ('{"results/t.csv": {"values": "x"}}', "entry"),
    (b"\xff\xfe{}", "not UTF-8"), (None, "cannot read")])
def test_hash_outputs_names_a_compare_file_that_is_not_its_output(root, tmp_path, capsys, content, what):
    mod = _load("hash_outputs")
    path = tmp_path / "before.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert mod.main([str(root), "--compare", str(path)]) == 2
    _one_line(capsys, "hash_outputs:", "before.json", what)


def test_hash_outputs_still_compares_good_files(root, tmp_path, capsys):
    mod = _load("hash_outputs")
    path = tmp_path / "before.json"
    assert mod.main([str(root)]) == 0
    path.write_text(capsys.readouterr().out)
    assert mod.main([str(root), "--compare", str(path)]) == 0
    assert mod.main([str(tmp_path / "nowhere")]) == 2


def _results(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    pd.DataFrame({"Model": ["tiny"] * 2, "Metric": ["BERTScore F1"] * 2, "config": ["SFT", "R_Cham"],
                  "mean": [0.556, 0.557], "sd": [0.002, 0.001], "n": [3, 3], "best": [False, True],
                  "note": ["", ""]}).to_csv(res / "grpo_headline_findings.csv", index=False)
    # the pruning group is written only with both its tables: this one beside the 06_tokens of a case below
    pd.DataFrame({"policy": ["SFT"], "distance": ["chamfer"], "section": ["findings"], "metric": ["BS-F1"],
                  "value_a": [0.561], "value_b": [0.558], "diff": [0.003], "ci_low": [-0.004], "ci_high": [0.0101],
                  "p_value": [0.41]}).to_csv(res / "06_pruning_vs_standard.csv", index=False)
    return res


@pytest.mark.parametrize("table, content, what", [
    ("grpo_headline_findings", "Model,config,mean\ntiny,SFT,0.5\n", "no column 'Metric'"),
    ("grpo_headline_findings", "", "empty"),
    ("grpo_headline_findings", b"Model,Metric\n\xff\xfe,\xfa\n", "not UTF-8"),
    ("grpo_headline_findings", bytes(range(256)), "grpo_headline_findings.csv: not"),
    ("grpo_significance", "A,B\nx,y\n", "no column"),
    ("00_report_language", "only\n1\n", "no column"),
    ("06_tokens", b"\x00\x01\x02\xff", "not UTF-8"),
])
def test_readme_numbers_names_a_table_it_cannot_read(tmp_path, capsys, table, content, what):
    res = _results(tmp_path)
    p = res / f"{table}.csv"
    p.write_bytes(content) if isinstance(content, bytes) else p.write_text(content)
    mod = _load("readme_numbers")
    assert mod.main([str(res)]) == 2
    _one_line(capsys, f"{PROG}:", f"{table}.csv", what)  # the wrapper script runs the module's main


def test_readme_numbers_check_names_an_unreadable_readme_or_machine_record(tmp_path, capsys):
    res = _results(tmp_path)
    mod = _load("readme_numbers")
    assert mod.main([str(res)]) == 0
    readme = tmp_path / "README.md"
    readme.write_text(capsys.readouterr().out)
    (res / "machine.json").write_text("[1]")
    assert mod.main([str(res), "--check", str(readme)]) == 2
    _one_line(capsys, "machine.json", "not a JSON object")
    (res / "machine.json").unlink()
    readme.write_bytes(b"\xff\xfe\x00broken")
    assert mod.main([str(res), "--check", str(readme)]) == 2
    _one_line(capsys, "README.md", "not UTF-8")
    assert mod.main([str(res), "--check", str(tmp_path / "nope.md")]) == 2
    _one_line(capsys, "nope.md", "cannot read")
