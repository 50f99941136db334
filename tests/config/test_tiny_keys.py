"""The tiny policy's shape is one dataclass: the profile's ``sft.tiny_*`` keys are :class:`sdrlib.config.TinyVLSpec`'s
fields, and the model builder takes the same class."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from sdrlib import config
from sdrlib.config import SFTConfig, TinyVLSpec, load_profile
from sdrlib.config._tiny import PROFILE_PREFIX, profile_fields, with_tiny_keys


def test_every_shape_field_with_a_help_is_one_sft_key_with_its_default_and_constraints():
    sft = {f.name: f for f in dataclasses.fields(SFTConfig)}
    shape = profile_fields()
    assert [f.name for f in shape] == [f.name for f in dataclasses.fields(TinyVLSpec)
                                       if f.name not in ("max_positions", "mrope_section")]
    for f in shape:
        key = sft[PROFILE_PREFIX + f.name]
        assert (key.type, key.default, dict(key.metadata)) == (f.type, f.default, dict(f.metadata))
    names = list(sft)  # the keys sit where they always did: after vocab_size, before the tower settings
    i = names.index("vocab_size")
    assert names[i + 1:i + 1 + len(shape)] == [PROFILE_PREFIX + f.name for f in shape]
    assert names[i + 1 + len(shape)] == "tiny_tower_epochs"


def test_the_model_builder_and_the_profile_share_the_class():
    from sdrlib import models
    from sdrlib.training import tiny_spec

    assert models.TinyVLSpec is config.TinyVLSpec
    cfg = load_profile("smoke", {"sft.tiny_head_dim": 8, "sft.tiny_layers": 1})
    spec = tiny_spec(cfg)
    assert (spec.head_dim, spec.layers, spec.mrope_section) == (8, 1, (2, 1, 1))
    assert all(getattr(spec, f.name) == getattr(cfg.sft, PROFILE_PREFIX + f.name) for f in profile_fields())


def test_default_profile_values_are_the_class_defaults():
    assert TinyVLSpec.from_profile(SFTConfig()) == TinyVLSpec()


def test_an_unknown_anchor_field_is_refused():
    with pytest.raises(TypeError, match="no field 'nope'"):
        @dataclass(frozen=True)
        @with_tiny_keys(after="nope")
        class Broken:
            a: int = 1
