"""``"fmt"``: the format reward R_fmt alone (paper sec. 3.1; :func:`sdrlib.rewards.check_completion`).

Example: a completion on the template scores 1, one without it 0 (no encoder needed):

>>> from sdrlib.rewards import RewardScorer
>>> good = "<think> Lungs clear. </think> <answer> Normal. </answer>"
>>> RewardScorer("fmt").score([good, "Lungs clear."], ["Lungs clear."] * 2, ["Normal."] * 2).total.tolist()
[1.0, 0.0]
"""

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
