"""Control rewards for decomposing what GRPO does to a policy: ``"const"`` and ``"noise"`` (ours).

Neither carries any signal about the report, so a GRPO run under them measures what the training setup does
by itself (the reward comparison of notebook 04 is then about what the content rewards add):

- ``"const"``: every completion, well-formed or not, scores 1. Every group's rewards are equal, so every
  advantage is 0 (TRL's group-relative advantage ``r - mean(group)``); at the start the KL term's gradient is 0
  too (the policy *is* the reference), so the policy does not move at all. A sanity check, not a control of
  drift: ``tests/rewards/test_control.py`` trains the tiny policy under it and finds its weights unchanged.
- ``"noise"``: every completion scores a pseudo-random number in [0, 1), a deterministic hash of its text (the
  two template sections when it has them, else the literal ``"<invalid>"`` and its row in the batch) and of
  its reference. The advantages are non-zero and independent of format and content, so the run measures the
  drift that the optimiser, learning rate and loss cause by themselves (the **drift control**). Same inputs,
  same rewards: a rerun is reproducible.

Both fix ``lambda_fmt = 0, lambda_sem = 1`` (:meth:`RewardMethod.default_lambdas`, read through
:meth:`RewardMethod.lambdas` by the scorer built directly, from a profile or for TRL alike): ``r_fmt`` is still
logged, with weight 0, so the total reward TRL sees is the control alone, ``const`` = 1 and ``noise`` in [0, 1).
An explicit ``lambda_fmt`` given to the scorer wins (then the control is no longer one).
Left out: a label-permutation control (a content reward scored against another study's reference).
Example: ``const`` scores every completion 1, on the template or not; ``noise`` gives the same completion and
reference the same value in [0, 1):

>>> from sdrlib.rewards import RewardScorer
>>> good = "<think> Lungs clear. </think> <answer> Normal. </answer>"
>>> RewardScorer("const").score([good, "junk"], ["Lungs clear."] * 2, ["Normal."] * 2).total.tolist()
[1.0, 1.0]
>>> r = RewardScorer("noise").score([good, good], ["Lungs clear."] * 2, ["Normal."] * 2).total
>>> bool(r[0] == r[1] and 0 <= r[0] < 1)
True
"""

from __future__ import annotations

import hashlib

import numpy as np

from sdrlib.rewards.spec import MethodScores, RewardMethod, RewardSpec, register_method

__all__ = ["noise_value"]


def noise_value(text: str, findings: str, impression: str) -> float:
    """The ``"noise"`` reward of one completion: a uniform number in [0, 1) hashed from the texts.

    Example: ``noise_value("a", "b", "c") == noise_value("a", "b", "c")``; a different text gives another value.
    """
    h = hashlib.sha256("\x1f".join((text, findings, impression)).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2.0 ** 64


class ControlMethod(RewardMethod):
    """``const`` / ``noise``: a reward without format or content signal (module doc)."""

    order = 12
    needs_embedder = False

    def __init__(self, name: str, grammar: str, label: str) -> None:
        self.name, self.grammar, self._label = name, grammar, label

    def label(self, spec: RewardSpec) -> str:
        return self._label

    def default_lambdas(self, settings) -> tuple[float, float]:
        return 0.0, 1.0  # the control alone: R_fmt logged with weight 0

    def score(self, scorer, valid, findings, impression, n) -> MethodScores:
        if self.name == "const":
            return MethodScores(content=np.ones(n))
        # invalid completions are not passed to methods: they hash as "<invalid>" and their row
        texts = {i: f"{s.findings}\x1e{s.impression}" for i, s in valid}
        return MethodScores(content=np.array([noise_value(texts.get(i, f"<invalid>{i}"), findings[i], impression[i])
                                              for i in range(n)]))

    def trl_parts(self, spec: RewardSpec, scorer) -> list:
        return [(f"r_{self.name}", lambda b: b.content, 1.0)]


register_method(ControlMethod("const", "const (control: reward 1 for every completion)", "C-const"))
register_method(ControlMethod("noise", "noise (control: hashed uniform reward, no signal)", "C-noise"))
