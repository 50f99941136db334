"""The profile key ``plugins``: user modules imported before the profile is checked (sdrlib.config._plugins).

A plugin registers what the profile then names: the toy distance family (tests/distances/toy_family.py), the toy
dataset (tests/data/toy_dataset.py) and a toy reward method. A profile naming them loads with the plugin and fails
without it; a plugin that cannot be imported is a ConfigError naming the key and the entry.
"""

from __future__ import annotations

import pickle
import sys
import textwrap
from pathlib import Path

import pytest

from sdrlib.config import ConfigError, import_plugins, load_profile
from sdrlib.data.registry import unregister_dataset
from sdrlib.distances import registry
from sdrlib.rewards import unregister_method

TESTS = Path(__file__).resolve().parents[1]

#: registers the toy family, the toy dataset and a toy reward method when imported (what a user's plugin does)
PLUGIN = f"""
import sys
for folder in ({str(TESTS / "distances")!r}, {str(TESTS / "data")!r}):
    if folder not in sys.path:
        sys.path.insert(0, folder)

import numpy as np
import toy_dataset
import toy_family
from sdrlib.rewards.spec import MethodScores, RewardMethod, register_method

toy_family.register()
toy_dataset.register()


class PluginRewardMethod(RewardMethod):
    name = "plugin_bonus"
    grammar = "plugin_bonus (a plugin's reward)"
    needs_embedder = False

    def score(self, scorer, valid, findings, impression, n):
        return MethodScores(content=np.ones(n))


register_method(PluginRewardMethod())
"""

#: a profile that names what the plugin registers, in each of the three registries' fields
USES = textwrap.dedent("""\
    data:
      source: toycxr
      root: toy_root
    distances:
      names: [chamfer, mean_cost]
    grpo:
      rewards: [fmt, chamfer, plugin_bonus]
    selection:
      policies: [sft, chamfer]
    """)


@pytest.fixture
def plugin_dir(tmp_path):
    """A folder holding ``toy_sdr_plugin.py``; the registrations are undone afterwards."""
    (tmp_path / "toy_sdr_plugin.py").write_text(PLUGIN, encoding="utf-8")
    before = set(sys.modules)
    yield tmp_path
    unregister_dataset("toycxr")
    unregister_method("plugin_bonus")
    registry.unregister_family("mean_cost")
    for name in set(sys.modules) - before:
        if "toy_sdr_plugin" in name or name in ("toy_family", "toy_dataset"):
            sys.modules.pop(name, None)


@pytest.fixture
def without_toys():
    """None of the toy registrations, whatever another test module of this process registered."""
    unregister_dataset("toycxr")
    unregister_method("plugin_bonus")
    registry.unregister_family("mean_cost")


def _profile(folder: Path, plugins: str) -> Path:
    p = folder / "uses_plugin.yaml"
    p.write_text(f"extends: smoke\n{plugins}{USES}", encoding="utf-8")
    return p


def test_a_profile_naming_a_plugins_family_dataset_and_reward_loads_with_the_plugin(plugin_dir):
    cfg = load_profile(str(_profile(plugin_dir, "plugins: [toy_sdr_plugin.py]\n")))
    assert cfg.data.source == "toycxr" and "mean_cost" in cfg.distances.names and "plugin_bonus" in cfg.grpo.rewards
    assert cfg.plugins == [str(plugin_dir / "toy_sdr_plugin.py")]  # relative to the profile file, made absolute
    assert pickle.loads(pickle.dumps(cfg)) == cfg  # a worker rebuilds it, plugins imported first


def test_a_plugin_given_as_a_module_name(plugin_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin_dir))
    cfg = load_profile(str(_profile(plugin_dir, "plugins: [toy_sdr_plugin]\n")))
    assert cfg.plugins == ["toy_sdr_plugin"] and cfg.data.source == "toycxr"


def test_the_same_profile_fails_without_the_plugin(tmp_path, without_toys):
    with pytest.raises(ConfigError, match="data.source = 'toycxr'"):
        load_profile(str(_profile(tmp_path, "")))
    for field, use in (("distances.names", "mean_cost"), ("grpo.rewards", "plugin_bonus")):
        body = f"extends: smoke\n{field.split('.')[0]}:\n  {field.split('.')[1]}: [chamfer, {use}]\n"
        (tmp_path / "one.yaml").write_text(body, encoding="utf-8")
        with pytest.raises(ConfigError, match=rf"{field}\[1\] = '{use}'"):
            load_profile(str(tmp_path / "one.yaml"))


def test_an_extending_profile_keeps_the_plugins_of_the_one_it_extends(plugin_dir):
    base = plugin_dir / "base.yaml"
    base.write_text("extends: smoke\nplugins: [toy_sdr_plugin.py]\n", encoding="utf-8")
    sub = plugin_dir / "sub" / "child.yaml"
    sub.parent.mkdir()
    sub.write_text(f"extends: ../base.yaml\n{USES}", encoding="utf-8")
    assert load_profile(str(sub)).plugins == [str(plugin_dir / "toy_sdr_plugin.py")]


@pytest.mark.parametrize("plugins, match", [
    ("[no_such_module_xyz]", r"plugins\[0\] = 'no_such_module_xyz': cannot import the plugin \(ModuleNotFoundError"),
    ("[missing.py]", r"plugins\[0\] = '.*missing.py': no such file"),
    ("[broken.py]", r"plugins\[0\] = '.*broken.py': cannot import the plugin \(RuntimeError: broken on purpose"),
    ("['../x y']", r"plugins\[0\] = '../x y': not a module name or a .py path"),
    ("toy", r"plugins = 'toy': expected a list"),
    ("[3]", r"plugins\[0\] = 3: expected a string"),
])
def test_a_plugin_that_cannot_be_imported_names_the_key_and_the_entry(tmp_path, plugins, match):
    (tmp_path / "broken.py").write_text("raise RuntimeError('broken on purpose')\n", encoding="utf-8")
    (tmp_path / "p.yaml").write_text(f"extends: smoke\nplugins: {plugins}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=match):
        load_profile(str(tmp_path / "p.yaml"))
    assert not any("broken" in name for name in sys.modules if name.startswith("sdr_plugin_"))


def test_plugins_by_override_are_relative_to_the_current_folder(plugin_dir, monkeypatch):
    monkeypatch.chdir(plugin_dir)
    cfg = load_profile("smoke", {"plugins": ["toy_sdr_plugin.py"], "data.source": "toycxr", "data.root": "r"})
    assert cfg.plugins == [str(plugin_dir / "toy_sdr_plugin.py")]


def test_shipped_profiles_have_no_plugins_and_import_plugins_of_none_is_empty():
    assert load_profile("smoke").plugins == [] and import_plugins(None) == []


def test_a_plugins_code_is_in_the_run_key(plugin_dir):
    from sdrlib.training.runkeys import plugins_digest, run_key

    cfg = load_profile(str(_profile(plugin_dir, "plugins: [toy_sdr_plugin.py]\n")))
    key = run_key(cfg, "sft", [])
    assert key["plugins"] == plugins_digest(cfg.plugins) and len(key["plugins"]) == 1
    (plugin_dir / "toy_sdr_plugin.py").write_text(PLUGIN + "\n# edited\n", encoding="utf-8")
    assert run_key(cfg, "sft", [])["plugins"] != key["plugins"]     # an edited plugin is another run
    assert "plugins" not in run_key(load_profile("smoke"), "sft", [])  # no plugins: the key is as before
    assert plugins_digest(["json"])["json"] != "missing"             # a module name: its source file


def test_a_plugin_registers_a_metric_group_that_every_scoring_then_runs(tmp_path):
    """The fourth registry: a metric group (tests/metrics/toy_metric.py) registered by a profile's plugin is scored
    wherever the notebooks score every registered group (``metrics=None``)."""
    from sdrlib.metrics import suite
    from sdrlib.metrics.registry import metric_group_names

    plugin = tmp_path / "metric_plugin.py"
    plugin.write_text(f"import sys\nsys.path.insert(0, {str(TESTS / 'metrics')!r})\nimport toy_metric\n"
                      "toy_metric.register()\n", encoding="utf-8")
    profile = tmp_path / "p.yaml"
    profile.write_text("extends: smoke\nplugins: [metric_plugin.py]\n", encoding="utf-8")
    try:
        load_profile(str(profile))
        assert "sentence_count" in metric_group_names()
        assert "sentence_count" in suite.METRIC_GROUPS          # what metrics=None scores (read live)
        scores = suite.score_reports(["<think> One. Two. </think> <answer> Three. </answer>"],
                                     [{"findings": "One.", "impression": "Three."}], metrics=["sentence_count"])
        assert scores.result("findings", "sentence_count_diff").corpus == 1.0
    finally:
        sys.modules["toy_metric"].unregister()
        for name in [m for m in sys.modules if "metric_plugin" in m or m == "toy_metric"]:
            sys.modules.pop(name, None)


def test_a_plugin_that_exits_is_a_config_error_not_the_end_of_the_process(tmp_path):
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    profile = tmp_path / "p.yaml"
    profile.write_text("extends: smoke\nplugins: [exits.py]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"plugins\[0\] = '.*exits.py': cannot import the plugin \(SystemExit: 3\)"):
        load_profile(str(profile))
