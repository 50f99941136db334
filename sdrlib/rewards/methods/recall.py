"""``"chamfer_recall_<alpha>[_bal<w>]"`` (ours): a set-distance reward under which silence does not pay.

The distance is the registry's asymmetric family ``chamfer_recall_<alpha>`` (:mod:`sdrlib.distances.recall`:
recall-weighted Chamfer, the generated set first, on the negation-aware cost at c = 1 with one floor per wrong
sentence, missed / hallucinated positive findings floored at 1 and the wrong findings counted as items of its
means), computed by the engine like every distance reward (``RewardScorer.section_distances``). The
reward is ``R_fmt + R_sem``, ``R_sem = (1 - D_F) + (1 - D_I)`` in [0, 2], per section as every distance reward; an
empty generated section scores ``D = 1``; ``R_sem := 0`` when ``R_fmt = 0``.

**Prompt weight (optional, ``"chamfer_recall_<alpha>_bal<w>"``).** The whole reward of a completion, format and
content (``w * (lambda_fmt R_fmt + lambda_sem R_sem)``), is multiplied by ``w`` (in [1, 10]) when the *reference*
states a positive finding in either section (offline labeler presence of the reference text, no dataset label:
:func:`sdrlib.rewards.scorer.abnormal_references`); the components R_fmt / R_sem stay unweighted. Why: the reward
audit's expected-reward view (:func:`sdrlib.experiments.audit.expected_reward_view`) shows that on normal references
a sample stating a (wrong) finding can lose more than a sample stating a finding gains on abnormal ones, so over
the prompt mix silence can still win for a policy whose guesses are mostly wrong. Under Dr. GRPO
(``scale_rewards: none``) the advantage is ``r - mean(r)`` within a prompt's group, so multiplying a prompt's
rewards by ``w`` weights that prompt's policy-gradient term ``w`` times (the KL term is not weighted). Under
``scale_rewards: group`` each group is divided by its own std and the weight cancels: the profile check refuses
that combination (:meth:`RecallChamferMethod.check_profile`, asked by :mod:`sdrlib.config` when a profile loads, as
are the values of the recall grid ``grpo.recall_alphas`` / ``grpo.recall_weights``). The training log splits the
mean reward by this stratum (``reward_strata/*``), so a curve compares like with like whatever the batch's prompt
mix. Both R_sem and R_fmt are weighted: weighting R_sem alone would not be prompt weighting.

Left out: the distance itself (:mod:`sdrlib.distances.recall`) and the choice of ``alpha`` / ``w`` on validation
studies (:mod:`sdrlib.experiments.reward_choice`).

Example:

>>> from sdrlib.rewards import parse_reward
>>> from sdrlib.rewards.methods.recall import abnormal_references
>>> spec = parse_reward("chamfer_recall_0.75")
>>> spec.opts["alpha"], spec.label, spec.distance
(0.75, 'R_Cham_rec0.75', 'chamfer_recall_0.75')
>>> parse_reward("chamfer_recall_1_bal2").opts["weight"]  # prompts of abnormal references weigh 2x
2.0
>>> abnormal_references(["Small left pleural effusion.", "Lungs clear."], ["Effusion.", "Normal."])
array([ True, False])
>>> parse_reward("chamfer_recall")
Traceback (most recent call last):
...
sdrlib.rewards.spec.RewardError: unknown chamfer_recall configuration 'chamfer_recall': use chamfer_recall_<alpha>...
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from sdrlib import distances
from sdrlib.clinical import section_presence
from sdrlib.distances import reward
from sdrlib.distances.registry import RECALL_ALPHA_RANGE
from sdrlib.rewards.scorer import abnormal_references
from sdrlib.rewards.spec import (MethodScores, RewardError, RewardMethod, RewardSpec, parse_reward, register_method,
                                 reward_name_problem)

__all__ = ["RecallChamferMethod", "ALPHA_RANGE", "WEIGHT_RANGE", "abnormal_references", "recall_distance_name"]

#: allowed recall weights: 0.5 = symmetric, 1 = reference->generated only (the distance family's range)
ALPHA_RANGE = RECALL_ALPHA_RANGE
#: allowed stratum weights of abnormal references (1 = unweighted)
WEIGHT_RANGE = (1.0, 10.0)
_NAME = re.compile(r"chamfer_recall_(\d+(?:\.\d+)?)(?:_bal(\d+(?:\.\d+)?))?")


def recall_distance_name(alpha: float) -> str:
    """The distance setting of the reward at ``alpha``: ``"chamfer_recall_<alpha:g>"`` (the ``_bal`` weight has no
    part in the distance). Example: ``recall_distance_name(1.0) -> "chamfer_recall_1"``."""
    return distances.make_spec("chamfer_recall", alpha=float(alpha)).name


def check_weight(weight: float, name: str) -> float:
    if not math.isfinite(weight) or not WEIGHT_RANGE[0] <= weight <= WEIGHT_RANGE[1]:
        raise RewardError(f"reward {name!r}: the stratum weight after _bal must be in [{WEIGHT_RANGE[0]:g}, "
                          f"{WEIGHT_RANGE[1]:g}] (1 = unweighted), got {weight:g}")
    return weight


def check_alpha(alpha: float, name: str) -> float:
    if not math.isfinite(alpha) or not ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]:
        raise RewardError(f"reward {name!r}: alpha must be in [{ALPHA_RANGE[0]}, {ALPHA_RANGE[1]}] (0.5 = symmetric "
                          f"Chamfer, 1 = the reference->generated embedding costs only; missed and hallucinated "
                          f"findings cost at every alpha; below 0.5 extra text would weigh more than the "
                          f"reference's content, so an uncertain policy would gain by saying less), got {alpha}")
    return alpha


def _prompt_weighted(name: str) -> bool:
    """Whether a (valid) reward name weights prompts (``chamfer_recall_<alpha>_bal<w>`` with w != 1)."""
    try:
        return parse_reward(name).opts.get("weight", 1.0) != 1.0
    except (KeyError, ValueError, TypeError):
        return False


class RecallChamferMethod(RewardMethod):
    """``"chamfer_recall_<alpha>"``: R_fmt + (1 - D_F) + (1 - D_I) with the distance ``chamfer_recall_<alpha>``."""

    name = "chamfer_recall"
    order = 30  # before the distance fallback, which would take "chamfer_recall_<alpha>" as a plain distance reward
    prefix = "chamfer_recall"
    grammar = ("chamfer_recall_<alpha>[_bal<w>] (ours: recall-weighted negation-aware Chamfer with missed/"
               "hallucinated finding floors, alpha in [0.5, 1], e.g. chamfer_recall_0.75; _bal<w>: w in "
               "[1, 10]: the whole reward x w for prompts whose reference states a finding, e.g. chamfer_recall_1_bal2)")
    logs_failures = True

    def parse(self, name: str) -> RewardSpec | None:
        m = _NAME.fullmatch(name)
        if m is None:
            return None
        alpha = check_alpha(float(m.group(1)), name)
        weight = 1.0 if m.group(2) is None else check_weight(float(m.group(2)), name)
        return RewardSpec(name, self.name, distance=recall_distance_name(alpha),
                          options=(("alpha", alpha), ("weight", weight)), tags=frozenset({"negation_aware", "ours"}))

    def label(self, spec: RewardSpec) -> str:
        w = spec.opts.get("weight", 1.0)
        return f"R_Cham_rec{spec.opts['alpha']:g}" + (f"_bal{w:g}" if w != 1.0 else "")

    def score(self, scorer, valid, findings, impression, n) -> MethodScores:
        sem = {"findings": np.zeros(n), "impression": np.zeros(n)}
        if valid:
            idx = [i for i, _ in valid]
            for sec, refs in (("findings", findings), ("impression", impression)):
                gen = [getattr(s, sec) for _, s in valid]
                sem[sec][idx] = reward(scorer.section_distances(gen, [refs[i] for i in idx]))
        weight = scorer.spec.opts.get("weight", 1.0)
        prompt_weight = None
        if weight != 1.0:  # every completion, valid or not: R_fmt is weighted too
            prompt_weight = np.where(abnormal_references(findings, impression), weight, 1.0)
        return MethodScores(content=sem["findings"] + sem["impression"], sem_findings=sem["findings"],
                            sem_impression=sem["impression"], prompt_weight=prompt_weight)

    def check_profile(self, profile: Any) -> str | None:
        """The recall grid (``grpo.recall_alphas`` x ``grpo.recall_weights``: each value a valid setting of this
        reward) and no prompt weight under ``grpo.scale_rewards: group`` (it would cancel); one message or ``None``."""
        g = profile.grpo
        for key, values, make in (("recall_alphas", g.recall_alphas, lambda v: f"chamfer_recall_{v:g}"),
                                  ("recall_weights", g.recall_weights, lambda v: f"chamfer_recall_1_bal{v:g}")):
            for i, value in enumerate(values):
                problem = reward_name_problem(make(value))
                if problem:
                    return f"grpo.{key}[{i}] = {make(value)!r} is not a reward configuration: {problem}"
        weighted = [r for r in (*g.rewards, *g.ablations) if _prompt_weighted(r)]
        if weighted and g.scale_rewards == "group":
            return (f"grpo.scale_rewards = 'group' with {weighted}: a _bal<w> prompt weight multiplies every "
                    "reward of a prompt's group, and scaling each group by its own std cancels it (the run "
                    "would train the unweighted reward under the weighted name); allowed: 'none' (Dr. GRPO) or "
                    "'batch'")
        return None

    def trl_parts(self, spec, scorer) -> list[tuple]:
        return [(f"r_sem_{spec.name}", lambda b: b.sem, 1.0)]

    def breakdown_logs(self, b) -> list[tuple[str, float]]:
        return [("reward_components/sem_findings", float(b.sem_findings.mean())),
                ("reward_components/sem_impression", float(b.sem_impression.mean()))]


register_method(RecallChamferMethod())
