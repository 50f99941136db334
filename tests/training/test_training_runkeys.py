"""sdrlib.training.runkeys: run keys digest every file of the sdrlib package (no list of files to keep)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

import sdrlib
from sdrlib.config import load_profile
from sdrlib.training import run_key, runkeys, source_digest

SRC = Path(sdrlib.__file__).resolve().parent


@pytest.fixture
def copy(tmp_path):
    """A checkout-like folder holding a copy of the sdrlib package, a notebook and a test."""
    root = tmp_path / "repo"
    shutil.copytree(SRC, root / "sdrlib", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "notebooks").mkdir()
    (root / "notebooks" / "04_grpo.py").write_text("# %% [markdown]\n# GRPO\n", encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    return root


def _records():
    return [SimpleNamespace(study_id="s1", findings="Heart size is normal.", impression="Normal.", image_paths=[])]


def test_source_digest_covers_the_whole_package_and_nothing_else(copy):
    before = source_digest(copy / "sdrlib")
    assert before == source_digest(SRC)  # __pycache__ is not part of it
    # a notebook's Markdown or a test file changes nothing
    (copy / "notebooks" / "04_grpo.py").write_text("# %% [markdown]\n# GRPO, reworded\n", encoding="utf-8")
    (copy / "tests" / "test_x.py").write_text("def test_x():\n    assert True\n", encoding="utf-8")
    assert source_digest(copy / "sdrlib") == before
    # a change anywhere in the package does: the labeler, the distance costs, a new data file
    for rel in ("clinical/labeler/_rules.py", "distances/costs.py"):
        f = copy / "sdrlib" / rel
        f.write_text(f.read_text(encoding="utf-8") + "\n# a changed rule\n", encoding="utf-8")
        assert source_digest(copy / "sdrlib") != before, rel
        before = source_digest(copy / "sdrlib")
    (copy / "sdrlib" / "clinical" / "extra_rules.json").write_text("{}", encoding="utf-8")
    assert source_digest(copy / "sdrlib") != before


def test_a_labeler_change_changes_the_sft_and_grpo_keys(copy, monkeypatch):
    cfg = load_profile("smoke")
    monkeypatch.setattr(runkeys, "SOURCE_ROOT", copy / "sdrlib")
    keys = lambda: (run_key(cfg, "sft", _records(), seed=0),  # noqa: E731
                    run_key(cfg, "grpo", _records(), reward="chamfer", seed=0))
    sft0, grpo0 = keys()
    (copy / "notebooks" / "04_grpo.py").write_text("# %% [markdown]\n# other words\n", encoding="utf-8")
    assert keys() == (sft0, grpo0)
    labeler = copy / "sdrlib" / "clinical" / "labeler" / "_sentence.py"
    labeler.write_text(labeler.read_text(encoding="utf-8").replace("def ", "def  ", 1), encoding="utf-8")
    sft1, grpo1 = keys()
    assert sft1["code"] != sft0["code"] and grpo1["code"] != grpo0["code"]
    assert {k: v for k, v in sft1.items() if k != "code"} == {k: v for k, v in sft0.items() if k != "code"}


def test_grpo_keys_hold_only_the_runs_own_method_settings():
    cfg = load_profile("smoke")
    gk = run_key(cfg, "grpo", _records(), reward="gcarl")
    ek = run_key(cfg, "grpo", _records(), reward="editgrpo_tau0.3")
    ck = run_key(cfg, "grpo", _records(), reward="chamfer")
    assert set(gk["method"]) == {"gcarl"} and set(ek["method"]) == {"editgrpo"} and ck["method"] == {}
    assert gk["grpo"] == ek["grpo"] == ck["grpo"] and "gcarl" not in ck["grpo"]
    other = load_profile("smoke", {"grpo.editgrpo.tau": 0.5})
    assert run_key(other, "grpo", _records(), reward="gcarl") == gk  # another method's setting: same key
    assert run_key(other, "grpo", _records(), reward="editgrpo_tau0.3") != ek


def test_how_many_reports_the_study_samples_is_no_part_of_a_grpo_key():
    """Before: grpo.eval_draws entered the GRPO key, so adding it to the schema made every trained study run (and
    its evidence file) look like a run of other settings: the next `python -m sdrlib.experiments.study run` would
    have trained all of them again."""
    k1 = run_key(load_profile("smoke"), "grpo", _records(), reward="chamfer")
    k4 = run_key(load_profile("smoke", {"grpo.eval_draws": 4}), "grpo", _records(), reward="chamfer")
    assert k1 == k4 and "eval_draws" not in k1["grpo"]
