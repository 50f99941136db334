"""``"fmt"``: the format reward R_fmt alone (paper sec. 3.1; :func:`sdrlib.rewards.check_completion`)."""

from __future__ import annotations

import numpy as np

from sdrlib.rewards.spec import MethodScores, RewardMethod, RewardSpec, register_method


class FmtMethod(RewardMethod):
    name = "fmt"
    order = 10
    grammar = "fmt (R_fmt alone)"
    needs_embedder = False

    def label(self, spec: RewardSpec) -> str:
        return "R_fmt"

    def score(self, scorer, valid, findings, impression, n) -> MethodScores:
        return MethodScores(content=np.zeros(n))


register_method(FmtMethod())
