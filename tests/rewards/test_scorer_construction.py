"""A scorer built directly weighs like the one a profile's run builds (issue 36 item 1).

One place owns a method's weights (:meth:`sdrlib.rewards.spec.RewardMethod.lambdas`); the constructor,
``RewardScorer.from_profile`` and ``trl_reward_functions`` all go through it. Covered for every registered
method (a new method without an example name here fails the first test), not only the controls.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdrlib.config import load_profile
from sdrlib.rewards import RewardScorer, trl_reward_functions
from sdrlib.rewards.spec import registered_methods
from training_helpers import FakeEmbedder

GOOD = "<think> The lungs are clear. </think> <answer> Normal. </answer>"
GARBAGE = "no template at all"

#: one reward name per registered method that trains
EXAMPLES = {"exact": "exact", "fmt": "fmt", "const": "const", "noise": "noise", "editgrpo": "editgrpo",
            "gcarl": "gcarl", "chamfer_recall": "chamfer_recall_0.8", "distance": "chamfer"}


def _weights(s):
    return s.lambda_fmt, s.lambda_sem, s.max_chars


def test_every_registered_method_has_an_example():
    assert {m.name for m in registered_methods() if m.trains} == set(EXAMPLES)


@pytest.mark.parametrize("method", sorted(EXAMPLES))
def test_built_directly_equals_built_from_the_profile(method):
    name, g = EXAMPLES[method], load_profile("smoke").grpo
    assert (g.lambda_fmt, g.lambda_sem) == (1.0, 1.0)  # the profile's defaults are the constructor's
    prof = RewardScorer.from_profile(name, FakeEmbedder(), g)
    direct = RewardScorer(name, FakeEmbedder(), max_chars=g.max_chars)
    assert _weights(direct) == _weights(prof) and direct.settings == prof.settings
    trl = trl_reward_functions(name, FakeEmbedder(), max_chars=g.max_chars)[0][0].scorer
    assert _weights(trl) == _weights(prof)
    comps, refs = [GOOD, GARBAGE], (["The lungs are clear."] * 2, ["Normal."] * 2)
    assert np.array_equal(direct.score(comps, *refs).total, prof.score(comps, *refs).total)


@pytest.mark.parametrize("name", ["const", "noise"])
def test_controls_built_directly_ignore_format(name):
    s = RewardScorer(name)
    assert (s.lambda_fmt, s.lambda_sem) == (0.0, 1.0)
    b = s.score([GOOD, GARBAGE, None], ["F."] * 3, ["I."] * 3)
    assert b.fmt.tolist() == [1.0, 0.0, 0.0]
    assert ((b.total >= 0) & (b.total < 1)).all() if name == "noise" else b.total.tolist() == [1.0] * 3


def test_fixed_weights_beat_the_profile_and_explicit_weights_beat_both():
    g = load_profile("smoke", {"grpo.lambda_fmt": 0.5, "grpo.lambda_sem": 2.0}).grpo
    assert _weights(RewardScorer.from_profile("noise", None, g))[:2] == (0.0, 1.0)
    assert _weights(RewardScorer.from_profile("gcarl", FakeEmbedder(), g))[:2] == (g.gcarl.lambda_fmt, 1.0)
    assert _weights(RewardScorer.from_profile("exact", None, g))[:2] == (0.5, 2.0)
    assert _weights(RewardScorer("exact", lambda_fmt=0.5, lambda_sem=2.0))[:2] == (0.5, 2.0)
    assert _weights(RewardScorer("noise", lambda_fmt=0.25))[:2] == (0.25, 1.0)


@pytest.mark.parametrize("bad", ["profile", None, 3, {"lambda_fmt": 1.0}], ids=repr)
def test_from_profile_names_a_wrong_grpo_argument(bad):
    cfg = load_profile("smoke")
    arg = cfg if bad == "profile" else bad
    with pytest.raises(TypeError, match=r"grpo_cfg.*cfg\.grpo"):
        RewardScorer.from_profile("const", None, arg)
    with pytest.raises(TypeError, match="grpo_cfg"):
        RewardScorer.from_profile("gcarl", None, arg)


@pytest.mark.parametrize("state", ["counts", "seconds", "_last"])
def test_the_constructor_takes_no_internal_state(state):
    with pytest.raises(TypeError, match=state):
        RewardScorer("fmt", **{state: None})
    s = RewardScorer("fmt")
    assert s.counts == {} and s.seconds == 0.0  # accumulated by score(), starting empty
