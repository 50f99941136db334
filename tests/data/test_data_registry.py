"""Datasets as registrations (issue 35): the built-in ones through the registry, and a toy dataset written as one
module (``toy_dataset.py``) working end to end (profile, preflight, stand-in, loader) without another edit."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import toy_dataset  # noqa: E402

from sdrlib import runner  # noqa: E402
from sdrlib.config import ConfigError, load_profile  # noqa: E402
from sdrlib.data import DataError, get_dataset, load_split, register_dataset  # noqa: E402
from sdrlib.data.registry import data_sources, dataset_names, standin_layouts  # noqa: E402
from sdrlib.data.standin import write_standin  # noqa: E402
from sdrlib.data.standin.__main__ import LAYOUTS  # noqa: E402


@pytest.fixture()
def toy():
    ds = toy_dataset.register()
    yield ds
    toy_dataset.unregister()


def test_builtin_datasets_are_registrations():
    assert dataset_names()[:4] == ["mimic", "rexgradient", "iuxray", "synthetic"]
    assert set(data_sources()) >= {"synthetic", "synthcxr", "mimic", "rexgradient", "iuxray"}
    assert get_dataset("synthcxr") is get_dataset("synthetic") and not get_dataset("synthetic").real
    assert LAYOUTS == standin_layouts() == ("mimic", "rexgradient", "iuxray")
    assert [get_dataset(n).standin_code for n in LAYOUTS] == [1, 2, 3]  # the stand-ins' random streams, unchanged
    assert get_dataset("rexgradient").standin_unpack is not None and not get_dataset("iuxray").standin_splits
    with pytest.raises(DataError, match="unknown data.source 'chexpert'; expected one of mimic"):
        get_dataset("chexpert")


def test_registering_refuses_a_taken_name_or_random_stream(toy):
    with pytest.raises(ValueError, match="taken by 'mimic'"):
        register_dataset(dataclasses.replace(toy, name="other", aliases=("mimic",)))
    with pytest.raises(ValueError, match="standin_code 1"):
        register_dataset(dataclasses.replace(toy, name="other", standin_code=1))
    assert register_dataset(toy) is toy  # the same dataset again: nothing changes


def test_a_toy_dataset_module_runs_end_to_end(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    root = tmp_path / "toy-download"
    # the profile accepts the new source and runs its check
    with pytest.raises(ConfigError, match="ToyCXR needs at least 32"):
        load_profile("smoke", {"data.source": "toycxr", "data.root": str(root), "data.image_size": 16})
    cfg = load_profile("smoke", {"data.source": "toycxr", "data.root": str(root)})
    # the run's preflight names the missing download and the stand-in command
    assert any("no ToyCXR folder at" in p and "python -m sdrlib.data.standin toycxr" in p
               for p in runner.preflight(cfg))
    # a stand-in in the toy layout, checked against what the loader makes of it
    st = write_standin("toycxr", tmp_path / "standin", n=12, seed=3, defect=None, p_missing_section=0.2)
    for split in ("train", "val", "test"):
        recs, rep = toy_dataset.load_toy(st.root, split)
        ids, skipped = st.expected(split)
        assert [r.study_id for r in recs] == ids and dict(rep.skipped) == dict(skipped)
    # data.standin_n writes the stand-in where data.root points, and load_split loads it
    cfg = load_profile("smoke", {"data.source": "toycxr", "data.root": str(root), "data.standin_n": 10})
    assert not any("ToyCXR" in p for p in runner.preflight(cfg))
    with pytest.warns(UserWarning, match="wrote a toycxr stand-in"):
        train = load_split(cfg, "train")
    assert train and all(Path(r.image_paths[0]).is_file() and r.findings and r.impression for r in train)
    assert (root / "studies.csv").is_file()


def test_an_unregistered_dataset_is_refused_everywhere(toy, tmp_path):
    cfg = load_profile("smoke", {"data.source": "toycxr", "data.root": str(tmp_path)})
    toy_dataset.unregister()
    with pytest.raises(DataError, match="unknown data.source 'toycxr'"):
        load_split(cfg, "train")
    with pytest.raises(ConfigError, match="not a valid choice"):
        load_profile("smoke", {"data.source": "toycxr", "data.root": str(tmp_path)})
    toy_dataset.register()
