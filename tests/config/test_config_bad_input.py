"""Profiles refuse semantically bad values at load time.

Every refusal is a :class:`ConfigError` (an :class:`SDRError`) whose message names the key
path, the bad value and what is allowed; the runner turns it into exit code 2 and one line on stderr, before any
notebook starts (``tests/runner/test_runner.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import subprocess
import sys
import typing
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdrlib import config
from sdrlib.config import ConfigError, Profile, load_profile
from sdrlib.errors import SDRError

ROOT = Path(__file__).resolve().parents[2]


def _refuse(overrides, *fragments):
    with pytest.raises(ConfigError) as info:
        load_profile("smoke", overrides)
    msg = str(info.value)
    assert isinstance(info.value, SDRError) and "\n" not in msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    return msg


# --------------------------------------------------------------------------- single fields
@pytest.mark.parametrize("overrides, key, value, allowed", [
    ({"data.n_train": -5}, "data.n_train", "-5", ">= 1"),
    ({"data.n_test": 0}, "data.n_test", "0", ">= 1"),
    ({"data.image_size": 8}, "data.image_size", "8", ">= 16"),
    ({"sft.batch_size": 0}, "sft.batch_size", "0", ">= 1"),
    ({"embedding.batch_size": -1}, "embedding.batch_size", "-1", ">= 1"),
    ({"sft.learning_rate": -1.0e-4}, "sft.learning_rate", "-0.0001", "> 0"),
    ({"grpo.learning_rate": 0.0}, "grpo.learning_rate", "0.0", "> 0"),
    ({"grpo.num_generations": 1}, "grpo.num_generations", "1", ">= 2"),
    ({"grpo.beta": -0.1}, "grpo.beta", "-0.1", ">= 0"),
    ({"sft.warmup_ratio": 1.5}, "sft.warmup_ratio", "1.5", "in [0, 1]"),
    ({"seed": -1}, "seed", "-1", "in [0, 4294967295]"),
    ({"seed": 2**40}, "seed", str(2**40), "in [0, 4294967295]"),
    ({"metrics.bootstrap": 0}, "metrics.bootstrap", "0", ">= 1"),
    ({"sft.vocab_size": 100}, "sft.vocab_size", "100", f">= {config.TINY_VOCAB_MIN}"),
])
def test_numbers_out_of_range_are_refused(overrides, key, value, allowed):
    _refuse(overrides, f"{key} = {value}", f"allowed: {allowed}", "profile 'smoke' (configs/smoke.yaml)")


@pytest.mark.parametrize("key", ["grpo.lambda_fmt", "grpo.lambda_sem", "sft.weight_decay", "grpo.temperature",
                                 "sft.eval_temperature", "grpo.epsilon"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 10**400])
def test_non_finite_floats_are_refused_everywhere(key, bad):
    _refuse({key: bad}, key, "allowed: a finite number")


@pytest.mark.parametrize("overrides, key", [
    ({"data.source": "chexpert"}, "data.source"),
    ({"data.source": "MIMIC"}, "data.source"),
    ({"sft.lr_scheduler": "cosine_annealing"}, "sft.lr_scheduler"),
    ({"grpo.loss_type": "ppo"}, "grpo.loss_type"),
    ({"grpo.scale_rewards": "std"}, "grpo.scale_rewards"),
    ({"metrics.clinical.backend": "chexpert"}, "metrics.clinical.backend"),
    ({"metrics.clinical.uncertain": "maybe"}, "metrics.clinical.uncertain"),
])
def test_unknown_choices_are_refused_with_the_choices(overrides, key):
    _refuse(overrides, key, "allowed: one of [")


@pytest.mark.parametrize("old, new, value", [
    ("metrics.bertscore", "metrics.bertscore.enabled", False),
    ("metrics.bertscore_model", "metrics.bertscore.model", "all-mpnet-base-v2"),
    ("metrics.bertscore_batch_size", "metrics.bertscore.batch_size", 32),
    ("metrics.device", "metrics.bertscore.device", "auto"),
    ("metrics.clinical_backend", "metrics.clinical.backend", "labeler"),
    ("metrics.wordnet_dir", "metrics.meteor.wordnet_dir", "auto"),
    ("metrics.comet_model", "metrics.comet.model", ""),
])
def test_a_metric_option_outside_its_group_section_is_refused_naming_its_key(old, new, value, tmp_path):
    """A metric group's options are keys of its own section (``metrics.<group>``): the flat key, in a ``--set`` or
    in a profile file, is refused with the key to write instead, and the section's key takes the value."""
    shown = {True: "true", False: "false"}.get(value, value) if isinstance(value, bool) else value
    _refuse({old: value}, f"{old} = {value!r}: not a key here; allowed: {new}", f"--set {new}={shown}")
    path = tmp_path / "old.yaml"
    section, key = old.split(".")
    path.write_text(f"extends: smoke\n{section}:\n  {key}: {shown if shown != '' else chr(34) * 2}\n")
    with pytest.raises(ConfigError, match=rf"{re.escape(old)} = .*allowed: {re.escape(new)} "):
        load_profile(str(path))
    cfg = load_profile("smoke", {new: value})
    assert functools.reduce(getattr, new.split("."), cfg) == value


@pytest.mark.parametrize("device, ok", [("cpu", True), ("auto", True), ("cuda", True), ("cuda:1", True),
                                        ("gpu", False), ("cuda:", False), ("CPU", False), ("", False)])
@pytest.mark.parametrize("key", ["embedding.device", "distances.device", "metrics.bertscore.device"])
def test_devices(key, device, ok):
    if ok:
        assert load_profile("smoke", {key: device}) is not None
    else:
        _refuse({key: device}, key, "cpu, auto, cuda or cuda:<index>")


@pytest.mark.parametrize("overrides, key", [
    ({"paths.runs": ""}, "paths.runs"),
    ({"paths.data": "da\x00ta"}, "paths.data"),
    ({"embedding.encoder": ""}, "embedding.encoder"),
    ({"distances.names": []}, "distances.names"),
    ({"grpo.rewards": []}, "grpo.rewards"),
    ({"grpo.rewards": ["fmt", "chamfer", "fmt"]}, "grpo.rewards"),
    ({"distances.names": ["ot", "ot"]}, "distances.names"),
])
def test_empty_nul_and_repeated_values_are_refused(overrides, key):
    _refuse(overrides, key, "allowed:")


# --------------------------------------------------------------------------- registries
_NAMES = ["chamfer", "ot", "sinkhorn_0.05", "uot_0.5", "partial_0.8", "hung_pen_0.2", "gw", "wasserstein",
          "cosine", "sinkhorn_-1", "sinkhorn_abc", "partial_2", "uot_0", "gw_1e-5", "Chamfer", "", "hung_pen_nan"]


def _registry_accepts(name: str) -> bool:
    from sdrlib.distances import registry

    try:
        registry.get(name)
    except (KeyError, ValueError, TypeError, SDRError):
        return False
    return True


@pytest.mark.parametrize("name", _NAMES)
def test_distance_names_are_what_the_registry_parser_accepts(name):
    """The profile defers to the registry (``get``), so it follows any change of the registry's rules."""
    if _registry_accepts(name):
        assert load_profile("smoke", {"distances.names": ["hausdorff", name]}).distances.names[1] == name
    else:
        _refuse({"distances.names": ["hausdorff", name]}, f"distances.names[1] = {name!r}", "allowed:", "chamfer")


def test_distance_names_known_refusals():
    for name in ("wasserstein", "sinkhorn_-1", "partial_2", "sinkhorn_abc"):
        _refuse({"distances.names": [name]}, "distances.names[0]", repr(name), "sinkhorn_<eps>")


@pytest.mark.parametrize("name", ["sft", "fmt", "exact", *_NAMES])
def test_reward_names_are_what_validate_reward_name_accepts(name):
    from sdrlib.rewards import validate_reward_name

    try:
        validate_reward_name(name)
        valid = True
    except (ValueError, SDRError):
        valid = False
    if valid:
        # pruning.policies must name trained configurations (sft always is)
        assert name in load_profile("smoke", {"grpo.rewards": [name], "pruning.policies": ["sft"]}).grpo.rewards
    else:
        _refuse({"grpo.rewards": [name]}, f"grpo.rewards[0] = {name!r}", "fmt", "exact")


def test_data_sources_are_the_ones_load_split_dispatches(tmp_path):
    """Every accepted source reaches a loader; a source outside the list is one load_split refuses too."""
    import sdrlib.data as data
    from sdrlib.data import registry

    synthetic = data.get_dataset("synthetic")
    registry.register_dataset(dataclasses.replace(
        synthetic, load=lambda cfg, split: ([], data.LoadReport("synthetic", split))), replace=True)
    try:
        smoke = load_profile("smoke")
        for source in registry.data_sources():
            cfg = load_profile("smoke", {"data.source": source, "data.root": str(tmp_path)})
            try:
                data.load_split(cfg, "train")
            except data.DataError as e:  # an empty folder is no dataset, but the loader was reached
                assert "unknown data.source" not in str(e)
    finally:
        registry.register_dataset(synthetic, replace=True)
    for source in ("chexpert", "padchest", "Synthetic"):
        _refuse({"data.source": source, "data.root": str(tmp_path)}, "data.source", "allowed: one of")
        bypass = dataclasses.replace(smoke, data=dataclasses.replace(smoke.data, source=source))
        with pytest.raises(data.DataError, match="unknown data.source"):
            data.load_split(bypass, "train")


# --------------------------------------------------------------------------- cross-field
def test_cross_field_rules():
    _refuse({"grpo.eval_n": 17}, "grpo.eval_n = 17", "data.n_test = 16", "allowed: 0 (all) to 16")
    assert load_profile("smoke", {"grpo.eval_n": 16}).grpo.eval_n == 16
    # the split sizes are synthetic-only: real data has its own test split
    assert load_profile("smoke", {"grpo.eval_n": 500, "data.source": "mimic", "data.root": "x"}).grpo.eval_n == 500
    _refuse({"data.source": "mimic"}, "data.root = ''", "'mimic'", "allowed: a non-empty path")
    _refuse({"data.source": "iuxray", "data.root": "  "}, "data.root", "allowed: a non-empty path")
    # whole groups of completions per generation batch (TRL)
    _refuse({"grpo.num_generations": 3}, "grpo.batch_size x grpo.grad_accum = 4 x 1", "num_generations = 3")
    assert load_profile("smoke", {"grpo.num_generations": 8, "grpo.grad_accum": 2}).grpo.num_generations == 8
    _refuse({"grpo.num_generations": 8, "grpo.grad_accum": 3}, "= 4 x 3", "num_generations = 8")


@pytest.mark.parametrize("overrides, key", [
    ({"sft.tiny_heads": 3}, "sft.tiny_heads"),
    ({"sft.tiny_head_dim": 31}, "sft.tiny_head_dim"),
    ({"sft.tiny_vision_hidden_size": 90}, "sft.tiny_vision_hidden_size"),
    ({"sft.tiny_image_size": 100}, "sft.tiny_image_size"),
])
def test_tiny_shapes_refused_for_the_tiny_policy_only(overrides, key):
    _refuse(overrides, key, "allowed:")
    assert load_profile("smoke", {**overrides, "sft.policy": "qwen3-vl-2b", "grpo.workers": 1, "sft.processes": 1}).sft.policy == "qwen3-vl-2b"


@pytest.mark.parametrize("shape", [
    {}, {"sft.tiny_heads": 6, "sft.tiny_kv_heads": 3, "sft.tiny_head_dim": 8},
    {"sft.tiny_patch_size": 8, "sft.tiny_merge_size": 3, "sft.tiny_image_size": 48},
    {"sft.tiny_vision_hidden_size": 30, "sft.tiny_vision_heads": 5, "sft.tiny_head_dim": 2},
])
def test_accepted_tiny_shapes_build_atiny_spec(shape):
    """What the profile accepts, sdrlib.models.TinyVLSpec accepts (the rules are the same)."""
    from sdrlib.training import tiny_spec

    spec = tiny_spec(load_profile("smoke", shape))
    assert spec.heads % spec.kv_heads == 0


def test_constants_match_the_libraries_they_mirror():
    from sdrlib import models

    assert config.TINY_VOCAB_MIN == 256 + len(models.SPECIAL_TOKENS) + len(models.TEMPLATE_TOKENS)
    with pytest.raises(ValueError, match="vocab_size"):
        models.train_tokenizer(["No acute findings."], vocab_size=config.TINY_VOCAB_MIN - 1)
    from transformers.trainer_utils import SchedulerType

    assert set(config.LR_SCHEDULERS) <= {s.value for s in SchedulerType}


def test_every_field_constraint_is_known_and_every_float_finite():
    def walk(cls):
        for f in dataclasses.fields(cls):
            tp = typing.get_type_hints(cls)[f.name]
            if dataclasses.is_dataclass(tp):
                yield from walk(tp)
            else:
                yield cls, f, tp

    for cls, f, tp in walk(Profile):
        assert set(f.metadata) - {"help"} <= config.CONSTRAINT_KEYS, (cls.__name__, f.name)
        assert f.metadata.get("finite", True) is True, (cls.__name__, f.name)


# --------------------------------------------------------------------------- names and files
@pytest.mark.parametrize("name", ["../evil", "..", ".", "a/b", "a\\b", "", "x y", "/abs", "runs/../..", "é"])
def test_profile_name_must_be_one_safe_path_component(name):
    _refuse({"name": name}, "name = ", "one path component")


def test_profile_name_from_a_file_stem_is_checked_too(tmp_path):
    p = tmp_path / "my profile.yaml"
    p.write_text("extends: smoke\n")
    with pytest.raises(ConfigError, match="name = 'my profile'"):
        load_profile(str(p))
    p.write_text("extends: smoke\nname: my-profile.v2\n")
    assert load_profile(str(p)).name == "my-profile.v2"


@pytest.mark.parametrize("text, line", [
    ("extends: smoke\ndata:\n  n_train: 8\n   n_val: 4\n", 4),           # bad indentation
    ("extends: smoke\ngrpo:\n  rewards: [fmt, chamfer\n", 4),             # unclosed list (end of file)
    ("extends: smoke\nsft:\n  max_steps: 3\n  max_steps: 4\n", 4),        # a key twice
    ("extends: smoke\nseed: 1\n\ndata: {n_train: 8, n_train: 9}\n", 4),   # a key twice, flow style
])
def test_yaml_errors_name_the_file_and_line(tmp_path, text, line):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_profile(str(p))
    assert str(p) in str(info.value) and f"line {line}," in str(info.value)


def test_unreadable_profiles(tmp_path):
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(ConfigError, match="is not a file"):
        load_profile(str(tmp_path / "dir.yaml"))
    p = tmp_path / "latin1.yaml"
    p.write_bytes("extends: smoke\n# caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="latin1.yaml: cannot read"):
        load_profile(str(p))
    p = tmp_path / "list.yaml"
    p.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="list.yaml: top level must be a mapping"):
        load_profile(str(p))


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n", "~\n", "null\n"])
def test_an_empty_profile_is_refused_like_a_top_level_list(tmp_path, text):
    """An empty file loaded silently as the defaults (a profile truncated to nothing ran the cpu profile)."""
    p = tmp_path / "empty.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=r"empty.yaml: the file is empty \(or only comments\); allowed: a mapping "
                                          r"of sections, e\.g\. 'extends: cpu'"):
        load_profile(str(p))


_PATH_KEYS = ["paths.data", "paths.results", "paths.figures", "paths.cache", "paths.runs", "data.root",
              "embedding.encoder", "metrics.bertscore.model", "metrics.meteor.wordnet_dir", "metrics.comet.model",
              "sft.policy"]


@pytest.mark.parametrize("key", _PATH_KEYS)
def test_tilde_in_every_path_key_is_the_home_folder(monkeypatch, tmp_path, key):
    """``paths.results: ~/sdr/results`` became a folder literally named ``~`` under the output root."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    one = {"grpo.workers": 1, "sft.processes": 1} if key == "sft.policy" else {}  # a policy folder is not the tiny CPU policy
    cfg = load_profile("smoke", {key: "~/sdr/x", **one})
    *sections, field_name = key.split(".")
    section = functools.reduce(getattr, sections, cfg)
    assert getattr(section, field_name) == str(tmp_path / "home" / "sdr" / "x")
    if sections == ["paths"]:
        assert cfg.path(field_name) == tmp_path / "home" / "sdr" / "x"
    assert load_profile("smoke", {key: "not~/x", **one}) is not None  # only a leading ~ means home
    with pytest.raises(ConfigError, match=rf"{key} = '~no-such-user-sdr/x': cannot expand '~no-such-user-sdr'"):
        load_profile("smoke", {key: "~no-such-user-sdr/x", **one})


def test_tilde_in_a_profile_file_sdr_root_and_extends(monkeypatch, tmp_path):
    home = tmp_path / "home"
    (home / "profiles").mkdir(parents=True)
    (home / "profiles" / "base.yaml").write_text("extends: smoke\ndata:\n  n_train: 7\n")
    (home / "profiles" / "mine.yaml").write_text("extends: ~/profiles/base.yaml\npaths:\n  results: ~/res\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SDR_ROOT", "~/out")
    cfg = load_profile("~/profiles/mine.yaml")
    assert cfg.data.n_train == 7 and cfg.results_dir == home / "res"
    assert config.output_root() == home / "out" and cfg.figures_dir == home / "out" / "figures"


def test_extends_resolves_against_the_including_file(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "base.yaml").write_text("extends: smoke\ndata:\n  n_train: 7\n")   # bare name: configs/
    (tmp_path / "a" / "child.yaml").write_text("extends: base.yaml\nseed: 5\n")         # next to child.yaml
    (tmp_path / "b" / "grand.yaml").write_text("extends: ../a/child.yaml\ngrpo:\n  seeds: 2\n")
    elsewhere = tmp_path / "b"
    monkeypatch.chdir(elsewhere)  # no base.yaml here: the old behaviour (cwd) would not find it
    cfg = load_profile(str(tmp_path / "b" / "grand.yaml"))
    assert (cfg.name, cfg.data.n_train, cfg.seed, cfg.grpo.seeds, cfg.data.n_val) == ("grand", 7, 5, 2, 16)
    monkeypatch.chdir(tmp_path / "a")
    assert load_profile("child.yaml").data.n_train == 7  # the top level is relative to the current folder


@pytest.mark.parametrize("extends, match", [
    ("5", "expected a profile name"), ("''", "expected a profile name"), ("", "expected a profile name"),
    ("../configs/cpu", "not a profile name"), ("nope", "not found"), ("missing.yaml", "not found"),
])
def test_bad_extends(tmp_path, extends, match):
    p = tmp_path / "x.yaml"
    p.write_text(f"extends: {extends}\n")
    with pytest.raises(ConfigError, match=match) as info:
        load_profile(str(p))
    assert "x.yaml: extends" in str(info.value)


def test_extends_cycle(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ConfigError, match="extends itself"):
        load_profile(str(tmp_path / "a.yaml"))


@pytest.mark.parametrize("overrides, match", [
    ({"data.n_train.x": 1}, "is not a section"), ({"": 1}, "dotted key"), ({"data..n_train": 1}, "dotted key"),
    ({3: 1}, "dotted key"), ({"data": [1]}, "expected a mapping"), ({"extends": "cpu"}, "unknown key"),
])
def test_malformed_overrides(overrides, match):
    with pytest.raises(ConfigError, match=match):
        load_profile("smoke", overrides)
    with pytest.raises(ConfigError, match="expected a dict"):
        load_profile("smoke", [("seed", 1)])  # type: ignore[arg-type]


def test_import_stays_cheap_and_validation_never_loads_the_engine():
    # numpy is imported: reward and distance names are checked by their registries, imported at module level
    # (the layer rule: in-package imports at module level); POT, torch and the numba engine are not
    code = ("import sys, sdrlib.config as c; heavy = {'ot', 'torch', 'numba', 'transformers'} & set(sys.modules); "
            "assert not heavy, heavy; c.load_profile('smoke'); assert 'numba' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# --------------------------------------------------------------------------- property test
_FIELDS = {}
for _sec in dataclasses.fields(Profile):
    _tp = typing.get_type_hints(Profile)[_sec.name]
    if dataclasses.is_dataclass(_tp):
        for _f in dataclasses.fields(_tp):
            _FIELDS[f"{_sec.name}.{_f.name}"] = _f
    else:
        _FIELDS[_sec.name] = _sec
_FIELDS.pop("plugins")  # its values are modules to import, not values to range-check: tests/config/test_config_plugins.py

_scalar = st.one_of(
    st.integers(-3, 3), st.integers(-10**6, 10**6), st.just(2**40), st.just(10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.5, 1e-4]),
    st.text(max_size=8), st.none(), st.booleans(),
    st.sampled_from(["chamfer", "fmt", "ot", "sinkhorn_0.1", "wasserstein", "cpu", "cuda:0", "gpu", "mimic",
                     "synthetic", "cosine", "linear", "grpo", "dr_grpo", "none", "group", "../x", "ok-name", ""]),
)
_value = st.one_of(_scalar, st.lists(_scalar, max_size=4), st.dictionaries(st.text(max_size=4), _scalar, max_size=2))
# plausible values too, so that a fair share of the random profiles is accepted and checked
_plausible = st.one_of(st.integers(0, 64), st.floats(0.0, 1.0), st.booleans(),
                       st.lists(st.sampled_from(["chamfer", "hausdorff", "ot", "fmt", "sinkhorn_0.2"]), min_size=1,
                                max_size=3, unique=True))


def _assert_satisfies(p: Profile) -> None:
    """Hand-written oracle for an accepted profile (independent of the metadata where it matters)."""
    from sdrlib.distances import registry
    from sdrlib.rewards import validate_reward_name

    for key, f in _FIELDS.items():
        sec, _, name = key.rpartition(".")
        v = getattr(getattr(p, sec) if sec else p, name)
        tp = typing.get_type_hints(type(getattr(p, sec)) if sec else Profile)[name]
        if tp is float:
            assert type(v) is float and math.isfinite(v), key
        elif tp is int:
            assert type(v) is int, key
        elif tp is bool:
            assert type(v) is bool, key
        elif tp is str:
            assert type(v) is str and "\x00" not in v, key
        m = f.metadata
        if "min" in m:
            assert v >= m["min"], key
        if "max" in m:
            assert v <= m["max"], key
        if "gt" in m:
            assert v > m["gt"], key
        if "choices" in m:
            assert v in (m["choices"]() if callable(m["choices"]) else m["choices"]), key
    d, g, s = p.data, p.grpo, p.sft
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", p.name) and p.name not in (".", "..")
    assert min(d.n_train, d.n_val, d.n_test, s.batch_size, g.batch_size, s.max_steps, g.max_steps) >= 1
    assert s.learning_rate > 0 and g.learning_rate > 0 and g.num_generations >= 2 and 0 <= p.seed < 2**32
    assert g.lambda_fmt >= 0 and g.lambda_sem >= 0 and g.temperature > 0
    assert d.source in ("synthetic", "synthcxr", "mimic", "rexgradient", "iuxray")
    assert d.source in ("synthetic", "synthcxr") or d.root.strip()
    assert d.source not in ("synthetic", "synthcxr") or g.eval_n <= d.n_test
    assert (g.batch_size * g.grad_accum) % g.num_generations == 0
    assert p.distances.names and len(set(p.distances.names)) == len(p.distances.names)
    for n in p.distances.names:
        registry.get(n)
    assert g.rewards and len(set(g.rewards)) == len(g.rewards)
    for r in g.rewards:
        validate_reward_name(r)
    assert all(getattr(p.paths, k) for k in ("data", "results", "figures", "cache", "runs"))


def test_random_overrides_give_a_valid_profile_or_a_config_error():
    counts: Counter = Counter()

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(st.dictionaries(st.sampled_from(sorted(_FIELDS)), st.one_of(_value, _plausible), min_size=1, max_size=4))
    def check(overrides):
        try:
            p = load_profile("smoke", overrides)
        except ConfigError as e:
            assert "\n" not in str(e) and str(e).startswith("profile ")
            counts["refused"] += 1
            return
        _assert_satisfies(p)
        counts["accepted"] += 1

    check()
    print(f"\nrandom overrides: {dict(counts)}")
    assert counts["accepted"] >= 5 and counts["refused"] >= 100, counts


# --------------------------------------------------------------------------- one reward, one name (issue 36.2)
# Two spellings of one setting (a numeric option written another way, a registered setting and its
# family_value form) repeat it; every list the profile checks for repeats compares canonical keys.
SAME_REWARD = [("chamfer_recall_1", "chamfer_recall_1.0"), ("chamfer_recall_0.8", "chamfer_recall_0.80"),
               ("chamfer_recall_1_bal2", "chamfer_recall_1.0_bal2.0"), ("sinkhorn_0.1", "sinkhorn_0.10"),
               ("uot_1", "uot_1.0"), ("chamfer", "chamfer")]
SAME_DISTANCE = [("sinkhorn_0.1", "sinkhorn_0.10"), ("sinkhorn_0.1", "sinkhorn_1e-1"), ("hung_pen_0.5", "hung_pen_.5"),
                 ("chamfer_neg", "chamfer_neg_1"), ("chamfer", "chamfer")]


@pytest.mark.parametrize("a, b", SAME_REWARD)
def test_two_spellings_of_one_reward_share_a_key_and_repeat_in_every_reward_list(a, b):
    from sdrlib.rewards import parse_reward

    assert parse_reward(a).key == parse_reward(b).key
    for key in ("grpo.rewards", "grpo.ablations"):
        with pytest.raises(ConfigError, match=rf"{key}.*repeats"):
            load_profile("smoke", {key: ["fmt", a, b]})
    with pytest.raises(ConfigError, match="grpo.ablations.*already in grpo.rewards"):
        load_profile("smoke", {"grpo.rewards": ["fmt", a], "grpo.ablations": [b]})
    for key in ("selection.policies", "pruning.policies"):
        with pytest.raises(ConfigError, match=rf"{key}.*repeats"):
            load_profile("smoke", {"grpo.rewards": ["fmt", a], key: [a, b]})


@pytest.mark.parametrize("a, b", SAME_DISTANCE)
def test_two_spellings_of_one_distance_share_a_key_and_repeat_in_every_distance_list(a, b):
    from sdrlib.distances.registry import distance_key

    assert distance_key(a) == distance_key(b)
    for key in ("distances.names", "selection.names", "pruning.names", "pruning.live_names"):
        with pytest.raises(ConfigError, match=rf"{key}.*repeats"):
            load_profile("smoke", {key: ["hausdorff", a, b]})


@pytest.mark.parametrize("a, b", [("chamfer_recall_0.8", "chamfer_recall_0.9"), ("sinkhorn_0.1", "sinkhorn_0.01"),
                                  ("chamfer", "chamfer_neg"), ("chamfer_recall_1", "chamfer_recall_1_bal2")])
def test_different_settings_keep_different_keys(a, b):
    from sdrlib.rewards import parse_reward

    assert parse_reward(a).key != parse_reward(b).key
    ok = load_profile("smoke", {"grpo.rewards": ["fmt", a, b], "pruning.policies": ["sft"]})
    assert ok.grpo.rewards == ["fmt", a, b]


@pytest.mark.parametrize("name", ["chamfer_neg", "chamfer_recall_1"])
def test_pruning_refuses_settings_that_read_presence(name):
    """The pruning scorer embeds partial candidates and has no per-sentence presence: refused at load, named."""
    with pytest.raises(ConfigError, match=rf"pruning.names = \['{name}'\]: these settings read per-sentence"):
        load_profile("smoke", {"pruning.names": [name], "pruning.live_names": []})


def test_parallel_grpo_runs_refused_for_a_gpu_policy():
    """grpo.workers > 1 trains runs side by side on CPU threads: a GPU policy is refused, naming the key."""
    assert load_profile("smoke", {"grpo.workers": 2}).grpo.workers == 2
    with pytest.raises(ConfigError, match=r"grpo.workers = 2: parallel GRPO runs are for the tiny CPU policy"):
        load_profile("smoke", {"sft.policy": "qwen3-vl-2b", "grpo.workers": 2})
    with pytest.raises(ConfigError, match=r"grpo.workers"):
        load_profile("smoke", {"grpo.workers": 0})
