"""sdrlib.rewards.spec: a reward name parsed once into a typed spec, the method registry, and what a new
reward method costs (one module: its name grammar, settings, reward, TRL functions, label, run-key settings)."""

from __future__ import annotations

import ast
import importlib
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sdrlib.config import ConfigError, load_profile
from sdrlib.reports import build_template
from sdrlib.rewards import (RewardError, RewardScorer, RewardSpec, parse_reward, registered_methods,
                            trl_reward_functions, unregister_method)

ROOT = Path(__file__).resolve().parents[2]


def test_names_are_parsed_once_into_frozen_specs():
    s = parse_reward("editgrpo_para_tau0.9")
    assert isinstance(s, RewardSpec) and s.method == "editgrpo" and s.distance is None
    assert s.opts == {"level": "paragraph", "tau": 0.9, "ops": None} and s.label == "EditGRPO-para-t0.9"
    with pytest.raises(AttributeError):
        s.name = "x"  # frozen
    assert parse_reward(s) is s  # a spec passes through
    d = parse_reward("chamfer_neg")
    assert (d.method, d.distance, d.label, "negation_aware" in d.tags) == ("distance", "chamfer_neg", "R_Cham_neg", True)
    assert parse_reward("gcarl").label == "G-CARL" and "related" in parse_reward("gcarl").tags
    assert parse_reward("sft").trains is False and parse_reward("fmt").needs_embedder is False
    assert {"sft", "fmt", "exact", "distance", "gcarl", "editgrpo"} <= {m.name for m in registered_methods()}


@pytest.mark.parametrize("bad, names", [
    ("editgrpo_tau", "editgrpo_opsall"), ("editgrpo_ops0", "editgrpo_ops<k>"), ("gcarl_x", "gcarl"),
    ("cosine", "chamfer"), ("", "non-empty"), (None, "non-empty")])
def test_unknown_or_half_specified_names_raise_naming_the_valid_ones(bad, names):
    with pytest.raises(RewardError, match=names):
        parse_reward(bad)


def test_no_import_circle_and_no_upward_import_in_the_rewards_package():
    """spec and completion sit below every method; no rewards module imports training, config or experiments."""
    pkg = ROOT / "sdrlib" / "rewards"
    for f in pkg.rglob("*.py"):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        up = {m for m in mods if m.split(".")[:2] in (["sdrlib", "training"], ["sdrlib", "config"],
                                                       ["sdrlib", "experiments"])}
        assert not up, f"{f.relative_to(ROOT)} imports {up}"
        if f.name in ("spec.py", "completion.py"):
            assert not {m for m in mods if m.startswith("sdrlib.rewards.methods") or m == "sdrlib.rewards.scorer"}, f


# --------------------------------------------------------------------------- a new method: one module

TOY = '''
"""A toy reward method: R_fmt + bonus for every valid completion (the test's example of a new method)."""

from dataclasses import dataclass, field

import numpy as np

from sdrlib.rewards.spec import MethodScores, RewardMethod, register_method


@dataclass(frozen=True)
class ToySettings:
    bonus: float = field(default=0.5, metadata={"min": 0, "help": "ours: the content reward of a valid completion"})


class ToyMethod(RewardMethod):
    name = "toy"
    settings = ToySettings
    prefix = "toy"
    grammar = "toy (a test method)"
    needs_embedder = False

    def label(self, spec):
        return "Toy"

    def score(self, scorer, valid, findings, impression, n):
        bonus = np.zeros(n)
        for i, _ in valid:
            bonus[i] = scorer.settings.bonus
        return MethodScores(content=bonus.copy(), components={"bonus": bonus})

    def trl_parts(self, spec, scorer):
        return [("r_toy", lambda b: b.components["bonus"], 1.0)]


register_method(ToyMethod())
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "toy_reward_method.py").write_text(textwrap.dedent(TOY), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("toy_reward_method")  # importing the module registers the method
    yield mod
    unregister_method("toy")
    sys.modules.pop("toy_reward_method", None)


def test_a_new_method_is_one_module_usable_everywhere_by_name(toy):
    from sdrlib.rewards import reward_label
    from sdrlib.training import run_key

    # the name grammar and the label
    assert parse_reward("toy").method == "toy" and reward_label("toy") == "Toy" == parse_reward("toy").label
    with pytest.raises(RewardError, match="toy"):
        parse_reward("toy_x")
    # its TRL functions and weights, by name
    funcs, weights = trl_reward_functions("toy")
    assert [f.__name__ for f in funcs] == ["r_fmt", "r_toy"] and weights == [1.0, 1.0]
    cs, kw = [build_template("A.", "B."), "no template"], {"findings": ["A."] * 2, "impression": ["B."] * 2}
    vals = np.array([f(cs, **kw) for f in funcs])
    assert np.allclose(np.array(weights) @ vals, funcs[0].scorer.score(cs, ["A."] * 2, ["B."] * 2).total)
    assert vals[1].tolist() == [0.5, 0.0]
    # its profile section grpo.toy (built from the settings dataclass), and the reward names it validates
    cfg = load_profile("smoke", {"grpo.rewards": ["fmt", "chamfer", "toy"], "grpo.toy.bonus": 0.25})
    assert cfg.grpo.toy.bonus == 0.25 and cfg.grpo.gcarl.lambda_fact == 0.4
    with pytest.raises(ConfigError, match="grpo.toy.bonus"):
        load_profile("smoke", {"grpo.toy.bonus": -1.0})
    # the scorer a GRPO run builds, and the run key (its own settings only, the other methods' left out)
    assert RewardScorer.from_profile("toy", None, cfg.grpo).settings.bonus == 0.25
    recs = [SimpleNamespace(study_id="s1", findings="A.", impression="B.", image_paths=[])]
    key = run_key(cfg, "grpo", recs, reward="toy")
    assert key["method"] == {"toy": {"bonus": 0.25}} and "gcarl" not in key["grpo"] and "toy" not in key["grpo"]
    assert "encoder" not in key


def test_an_unregistered_method_leaves_the_profile(toy):
    unregister_method("toy")
    with pytest.raises(ConfigError, match="toy"):
        load_profile("smoke", {"grpo.toy.bonus": 0.25})
    with pytest.raises(ConfigError, match="grpo.rewards"):
        load_profile("smoke", {"grpo.rewards": ["toy"]})


def test_a_configuration_has_one_label_the_one_its_reward_method_gives():
    """The tables' and notebooks' label is the reward registry's ``reward_label`` (no other name for it),
    which is the method's ``spec.label``: for every configuration any profile trains, ablates, selects with or
    prunes with, and distinct configurations never share one (a shared label would merge two table columns). A name
    no method parses (a baseline column) gets the default ``R_<name>``, as a method that names no label of its own."""
    from sdrlib.config import profile_names
    from sdrlib.experiments import posttrain
    from sdrlib.rewards import reward_label
    from sdrlib.rewards.spec import RewardMethod, default_label

    assert not hasattr(posttrain, "config_label")  # one label, one name
    names = set()
    for p in profile_names():
        c = load_profile(p)
        names |= {*c.grpo.rewards, *c.grpo.ablations, *c.selection.policies, *c.pruning.policies}
    labels = {n: reward_label(n) for n in sorted(names)}
    assert all(labels[n] == parse_reward(n).label for n in names)
    assert len(set(labels.values())) == len(labels), labels
    assert labels["chamfer"] == "R_Cham" and labels["sft"] == "SFT" and labels["editgrpo_tau0.3"] == "EditGRPO-t0.3"
    assert reward_label("random") == default_label("random") == "R_random"  # a baseline: no reward method
    assert RewardMethod().label(RewardSpec("x", "x")) == default_label("x")  # a method naming no label of its own



@pytest.mark.parametrize("name", ["", "  ", None, 3, "editgrpo_tau", "gcarl_x", "chamfer_recall_9x"])
def test_reward_label_refuses_what_is_no_name_and_a_method_s_misspelt_configuration(name):
    # before: "R_", "R_  ", "R_None", "R_3", "R_editgrpo_tau": a column labelled without a word
    from sdrlib.rewards import RewardError, reward_label

    with pytest.raises(RewardError, match="non-empty string|configuration"):
        reward_label(name)
    assert reward_label("fmt") == "R_fmt" and reward_label("random") == "R_random"  # baseline columns: R_<name>
