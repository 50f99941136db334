"""The dataset registry, bad input round five: a name means one dataset everywhere; built-ins are replaced only
when asked and never removed; a loader or a profile check that answers in the wrong shape is named, not unpacked."""

from __future__ import annotations

import dataclasses

import pytest

import toy_dataset
from sdrlib.config import ConfigError, load_profile
from sdrlib.data import DataError, LoadReport, get_dataset, load_split, register_dataset
from sdrlib.data.registry import Dataset, unregister_dataset


@pytest.fixture()
def restore():
    """Put the built-in SynthCXR and MIMIC registrations back, whatever a test did."""
    synth, mimic = get_dataset("synthetic"), get_dataset("mimic")
    yield
    register_dataset(synth, replace=True)
    register_dataset(mimic, replace=True)


def test_a_second_mimic_needs_replace_and_then_replaces_it(restore):
    other = dataclasses.replace(get_dataset("mimic"), title="My MIMIC")
    with pytest.raises(DataError, match=r"'mimic' is already registered \(built in\); pass replace=True"):
        register_dataset(other)
    assert get_dataset("mimic").title == "MIMIC-CXR"
    register_dataset(other, replace=True)
    assert get_dataset("mimic").title == "My MIMIC"


def test_replacing_synthetic_keeps_its_aliases_consistent(restore):
    old = get_dataset("synthetic")
    no_alias = dataclasses.replace(old, title="Mine", aliases=())
    register_dataset(no_alias, replace=True)
    assert get_dataset("synthetic").title == "Mine"
    with pytest.raises(DataError, match="unknown data.source 'synthcxr'"):  # not left on the old dataset
        get_dataset("synthcxr")
    register_dataset(dataclasses.replace(old, title="Mine too"), replace=True)
    assert get_dataset("synthcxr") is get_dataset("synthetic")
    assert get_dataset("synthcxr").title == "Mine too"


@pytest.mark.parametrize("name", ["mimic", "synthetic", "synthcxr"])
def test_a_builtin_is_never_removed(name):
    with pytest.raises(DataError, match="built in and cannot be removed"):
        unregister_dataset(name)
    assert get_dataset(name)


@pytest.mark.parametrize("name", ["", " ", "My Data", "1abc", None])
def test_a_name_that_is_not_a_source_word_is_refused(name):
    with pytest.raises(DataError, match="dataset name"):
        register_dataset(Dataset(name, "X", lambda cfg, split: ([], LoadReport("x", "train"))))


@pytest.mark.parametrize("returned, shown", [
    ([], "list"), (([], None), r"\(list, NoneType\)"), (None, "NoneType"),
    ((["not a record"], LoadReport("x", "train")), r"\(list, LoadReport\)"),
])
def test_a_loader_returning_the_wrong_shape_is_named(tmp_path, monkeypatch, returned, shown):
    ds = toy_dataset.register()
    try:
        register_dataset(dataclasses.replace(ds, load=lambda cfg, split: returned), replace=True)
        cfg = load_profile("smoke", {"data.source": "toycxr", "data.root": str(tmp_path)})
        with pytest.raises(DataError, match=rf"dataset 'toycxr': its loader returned {shown}.*\(list of Record, "
                                            "LoadReport\\)"):
            load_split(cfg, "train")
    finally:
        toy_dataset.unregister()


@pytest.mark.parametrize("answer", [True, 1, ["too small"]])
def test_a_profile_check_answering_in_the_wrong_shape_is_named(tmp_path, answer):
    ds = toy_dataset.register()
    try:
        register_dataset(dataclasses.replace(ds, check_profile=lambda p: answer), replace=True)
        with pytest.raises(ConfigError, match=r"dataset 'toycxr''s check_profile returned .* must return None"):
            load_profile("smoke", {"data.source": "toycxr", "data.root": str(tmp_path)})
    finally:
        toy_dataset.unregister()


def test_aliases_given_as_one_string_are_refused_not_read_as_characters():
    with pytest.raises(DataError, match=r"aliases must be a tuple of names, got 'abc' \(one alias: \('abc',\)\)"):
        register_dataset(Dataset("mydata", "X", lambda cfg, split: ([], LoadReport("x", "train")), aliases="abc"))
    with pytest.raises(DataError, match="unknown data.source 'a'"):
        get_dataset("a")
