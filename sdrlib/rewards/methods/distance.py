"""Set-distance rewards: ``R_fmt + R_sem`` for any setting :mod:`sdrlib.distances` knows (paper sec. 3.2).

``R_sem(y_hat, y) = (1 - D(E^F(y_hat), E^F(y))) + (1 - D(E^I(y_hat), E^I(y)))`` in [0, 2], ``E^S`` the set of
sentence embeddings of section ``S``; ``R_sem := 0`` when ``R_fmt = 0``. Names: a registered distance
(``"chamfer"``, ``"hausdorff"``, ...) or a parsable setting (``"sinkhorn_0.05"``); a negation-aware setting
(``"chamfer_neg"``) also labels the sentences (:mod:`sdrlib.distances.negation`). The distance's spec is
built when the name is parsed, so a setting :mod:`sdrlib.distances` refuses fails then, not at the first
score. The distances themselves are computed by :meth:`sdrlib.rewards.RewardScorer.section_distances`.

Example with the sentence embeddings written out (any object with ``encode_sections`` stands in for the
encoder: one ``(n_sentences, d)`` array per section text). The second completion's Findings sentence is
orthogonal to the reference's, so its Chamfer distance is 0.5 and its Findings term ``1 - D`` is 0.5:

>>> import numpy as np
>>> from sdrlib.reports import split_sentences
>>> from sdrlib.rewards import RewardScorer
>>> class Given:
...     vec = {"Lungs clear.": [1.0, 0.0], "No effusion.": [0.0, 1.0], "Normal.": [0.6, 0.8]}
...     def encode_sections(self, texts):
...         return [np.array([self.vec[s] for s in split_sentences(t)], np.float32).reshape(-1, 2) for t in texts]
>>> b = RewardScorer("chamfer", Given()).score(
...     ["<think> Lungs clear. </think> <answer> Normal. </answer>",
...      "<think> No effusion. </think> <answer> Normal. </answer>"], ["Lungs clear."] * 2, ["Normal."] * 2)
>>> b.sem_findings.round(3).tolist(), b.sem_impression.round(3).tolist(), b.total.round(3).tolist()
([1.0, 0.5], [1.0, 1.0], [3.0, 2.5])
"""

from __future__ import annotations

import numpy as np

from sdrlib import distances
from sdrlib.errors import SDRError
from sdrlib.rewards.spec import MethodScores, RewardError, RewardMethod, RewardSpec, register_method

#: table labels of the paper's distance rewards (and our negation-aware Chamfer); any other is ``R_<name>``
LABELS = {"chamfer": "R_Cham", "hausdorff": "R_Haus", "chamfer_neg": "R_Cham_neg"}


class DistanceMethod(RewardMethod):
    name = "distance"
    order = 100  # the fallback: a name no other method claims is asked of the distance registry
    logs_failures = True

    @property
    def grammar(self) -> str:  # type: ignore[override]
        return (f"a distance in {distances.available_distances()} or a family_value setting (sinkhorn_<eps>, "
                "uot_<tau>, gw_<eps>, hung_pen_<alpha>, partial_<rho>)")

    def parse(self, name: str) -> RewardSpec | None:
        try:
            d = distances.get(name)
        except KeyError:  # not a distance name at all
            return None
        except (SDRError, ValueError, TypeError) as exc:  # a distance whose parameters are refused
            raise RewardError(f"reward {name!r}: sdrlib.distances refuses this setting: {exc}") from exc
        return RewardSpec(name, self.name, distance=name,
                          tags=frozenset({"negation_aware"}) if d.needs_presence else frozenset())

    def label(self, spec: RewardSpec) -> str:
        return LABELS.get(spec.name) or super().label(spec)

    def score(self, scorer, valid, findings, impression, n) -> MethodScores:
        sem_f, sem_i = np.zeros(n), np.zeros(n)
        if valid:
            idx = [i for i, _ in valid]
            gen_f = [s.findings for _, s in valid]
            gen_i = [s.impression for _, s in valid]
            sem_f[idx] = distances.reward(scorer.section_distances(gen_f, [findings[i] for i in idx]))
            sem_i[idx] = distances.reward(scorer.section_distances(gen_i, [impression[i] for i in idx]))
        return MethodScores(content=sem_f + sem_i, sem_findings=sem_f, sem_impression=sem_i)

    def trl_parts(self, spec, scorer) -> list[tuple]:
        return [(f"r_sem_{spec.name}", lambda b: b.sem, 1.0)]

    def breakdown_logs(self, b) -> list[tuple[str, float]]:
        return [("reward_components/sem_findings", float(b.sem_findings.mean())),
                ("reward_components/sem_impression", float(b.sem_impression.mean()))]


register_method(DistanceMethod())
