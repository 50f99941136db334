"""``"sft"``: no GRPO; the SFT policy is evaluated as it is (a column of the tables, never a GRPO run)."""

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
