"""A reward built directly (``RewardScorer(name)``), from a profile (``from_profile``) and for TRL
(``trl_reward_functions``) gets its weights from one place, the scorer's constructor (issue 36 item 1): the
controls' and G-CARL's fixed weights hold however it is built, an explicit contradicting weight is refused, and a
wrong ``from_profile`` argument is named."""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.config import load_profile
from sdrlib.rewards import RewardScorer, trl_reward_functions
from sdrlib.rewards.spec import RewardError

from training_helpers import FakeEmbedder

GOOD = "<think> The lungs are clear. </think> <answer> Normal. </answer>"
# one name per registered training method, and settings of the distance family
NAMES = ["fmt", "exact", "const", "noise", "chamfer", "sinkhorn_0.1", "chamfer_neg", "chamfer_recall_1",
         "chamfer_recall_0.8_bal2", "gcarl", "editgrpo"]
FIXED = {"const": (0.0, 1.0), "noise": (0.0, 1.0)}


@pytest.fixture(scope="module")
def cfg():
    return load_profile("smoke")


@pytest.mark.parametrize("name", NAMES)
def test_every_way_of_building_a_reward_gives_the_same_weights(cfg, name):
    direct = RewardScorer(name, FakeEmbedder())
    profiled = RewardScorer.from_profile(name, FakeEmbedder(), cfg.grpo)
    trl = trl_reward_functions(name, FakeEmbedder())[0][0].scorer
    expected = FIXED.get(name) or ((cfg.grpo.gcarl.lambda_fmt, 1.0) if name == "gcarl"
                                   else (cfg.grpo.lambda_fmt, cfg.grpo.lambda_sem))
    assert (direct.lambda_fmt, direct.lambda_sem) == (trl.lambda_fmt, trl.lambda_sem) == expected
    assert (profiled.lambda_fmt, profiled.lambda_sem) == expected


@pytest.mark.parametrize("name", ["const", "noise"])
def test_a_control_built_directly_keeps_its_documented_range(name):
    total = RewardScorer(name).score([GOOD, "no template", None, ""], ["F."] * 4, ["I."] * 4).total
    if name == "const":
        assert total.tolist() == [1.0] * 4  # a garbage completion scores 1: no format signal
    else:
        assert ((total >= 0) & (total < 1)).all()


@pytest.mark.parametrize("name, key, value", [("const", "lambda_fmt", 1.0), ("noise", "lambda_sem", 2.0),
                                              ("gcarl", "lambda_fmt", 1.0)])
def test_an_explicit_weight_against_a_fixed_one_is_refused(name, key, value):
    with pytest.raises(RewardError, match=f"fixes {key}"):
        RewardScorer(name, FakeEmbedder(), **{key: value})
    with pytest.raises(RewardError, match=f"fixes {key}"):
        trl_reward_functions(name, FakeEmbedder(), **{key: value})


def test_an_explicit_weight_equal_to_the_fixed_one_is_accepted():
    s = RewardScorer("const", lambda_fmt=0.0, lambda_sem=1.0)
    assert (s.lambda_fmt, s.lambda_sem) == (0.0, 1.0)
    assert RewardScorer("chamfer", FakeEmbedder(), lambda_fmt=0.5).lambda_fmt == 0.5


@pytest.mark.parametrize("bad, hint", [("profile", "that is the whole profile"), (None, "got NoneType"),
                                       ({"lambda_fmt": 1.0}, "got dict")])
def test_from_profile_names_a_wrong_argument(cfg, bad, hint):
    arg = cfg if bad == "profile" else bad
    with pytest.raises(TypeError, match=f"grpo_cfg must be a profile's grpo section, e.g. cfg.grpo.*{hint}"):
        RewardScorer.from_profile("chamfer", FakeEmbedder(), arg)


def test_weights_are_still_checked(cfg):
    for bad in (-1.0, float("nan"), True):
        with pytest.raises(RewardError):
            RewardScorer("chamfer", FakeEmbedder(), lambda_fmt=bad)
    assert np.isfinite(RewardScorer("chamfer", FakeEmbedder()).lambda_sem)
