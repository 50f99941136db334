"""SynthCXR's writer never deletes a user's files, and its seed is an integer."""

from __future__ import annotations

import os

import pytest

from sdrlib.data.synthcxr import generate_dataset, generate_study
from sdrlib.data.synthcxr.dataset import SynthCXRError
from sdrlib.errors import SDRError

KW = dict(seed=0, n_train=1, n_val=0, n_test=0, image_size=48)


@pytest.mark.parametrize("where", ["", "."])
def test_the_current_folder_is_never_emptied(tmp_path, monkeypatch, where):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SynthCXRError, match="out_dir"):
        generate_dataset(where, **KW)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_an_existing_folder_that_is_not_a_dataset_is_refused_and_kept(tmp_path):
    proj = tmp_path / "my_project"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "main.py").write_text("print(1)")
    with pytest.raises(SDRError, match="not a SynthCXR dataset"):
        generate_dataset(proj, **KW)
    assert (proj / "src" / "main.py").read_text() == "print(1)"


def test_a_file_saved_inside_a_dataset_is_not_deleted_by_regeneration(tmp_path):
    out = tmp_path / "ds"
    generate_dataset(out, **KW)
    (out / "my_notes.md").write_text("keep")
    with pytest.raises(SynthCXRError, match="my_notes.md"):
        generate_dataset(out, **{**KW, "seed": 1})
    assert (out / "my_notes.md").read_text() == "keep"
    (out / "my_notes.md").unlink()
    generate_dataset(out, **{**KW, "seed": 1})       # its own folder is replaced, as before
    assert sorted(os.listdir(out)) == ["images", "manifest.json", "test.parquet", "train.parquet", "val.parquet"]


def test_an_empty_folder_is_used(tmp_path):
    (tmp_path / "empty").mkdir()
    assert generate_dataset(tmp_path / "empty", **KW)["counts"]["train"] == 1


@pytest.mark.parametrize("seed", [1.7, True, -1, float("nan"), "1"])
def test_a_seed_that_is_not_a_non_negative_integer_is_refused(tmp_path, seed):
    with pytest.raises(SynthCXRError, match="seed"):
        generate_dataset(tmp_path / "x", **{**KW, "seed": seed})
    with pytest.raises(SynthCXRError, match="seed"):
        generate_study(seed, "train", 0, 48)
    assert not (tmp_path / "x").exists()
