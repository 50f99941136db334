"""``"sft"``: no GRPO; the SFT policy is evaluated as it is (a column of the tables, never a GRPO run).

Example: the name parses (a table column labelled ``SFT``) but there is nothing to score:

>>> from sdrlib.rewards import RewardScorer, parse_reward
>>> spec = parse_reward("sft")
>>> spec.label, spec.trains
('SFT', False)
>>> RewardScorer("sft")
Traceback (most recent call last):
...
sdrlib.rewards.spec.RewardError: reward 'sft' means no GRPO: there is nothing to score
"""

from __future__ import annotations

from sdrlib.rewards.spec import RewardMethod, RewardSpec, register_method


class SFTMethod(RewardMethod):
    name = "sft"
    order = 0
    grammar = "sft (no GRPO)"
    trains = False
    needs_embedder = False

    def label(self, spec: RewardSpec) -> str:
        return "SFT"


register_method(SFTMethod())
