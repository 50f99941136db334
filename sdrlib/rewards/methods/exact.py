"""``"exact"``: R_fmt + R_exact, the paper's "discrete exact-match accuracy reward" (sec. 4).

``R_exact(y_hat, y)`` in {0, 1, 2}: the number of sections (Findings, Impression) whose *set of normalised
sentences* equals the reference's. A sentence is normalised by lower-casing, collapsing white space and
dropping trailing punctuation (:func:`sdrlib.reports.normalize_sentence`); sentence order and duplicates are
ignored, matching the paper's view of a section as an unordered set of findings. ``R_exact := 0`` when ``R_fmt = 0``.

Example: sentence order, case and trailing punctuation do not matter; a missing sentence does:

>>> from sdrlib.rewards import RewardScorer
>>> from sdrlib.rewards.methods.exact import exact_match_section
>>> exact_match_section("Lungs are clear. No effusion.", "no effusion. Lungs are clear")
1.0
>>> exact_match_section("Lungs are clear.", "Lungs are clear. No effusion.")
0.0
>>> b = RewardScorer("exact").score(["<think> Lungs clear. </think> <answer> Normal. </answer>"],
...                                 ["Lungs clear."], ["Edema."])
>>> b.fmt.tolist(), b.exact.tolist(), b.total.tolist()  # Findings match, Impression does not
([1.0], [1.0], [2.0])
"""

from __future__ import annotations

import numpy as np

from sdrlib.reports import normalize_sentence, split_sentences
from sdrlib.rewards.spec import MethodScores, RewardMethod, RewardSpec, register_method

__all__ = ["normalize_sentence", "exact_match_section", "ExactMethod"]


def exact_match_section(generated: str, reference: str) -> float:
    """1.0 when both sections have the same set of normalised sentences, else 0.0.

    Empty sets never match (an empty reference section scores 0; :class:`RewardScorer`
    refuses blank references before they get here). Non-text input raises
    :class:`~sdrlib.reports.ReportTextError`. Returns 0.0 or 1.0.
    Example: ``exact_match_section("B. A.", "a. b.") -> 1.0``.
    """
    gen = {normalize_sentence(s) for s in split_sentences(generated)} - {""}
    ref = {normalize_sentence(s) for s in split_sentences(reference)} - {""}
    return float(bool(gen) and gen == ref)


class ExactMethod(RewardMethod):
    name = "exact"
    order = 10
    grammar = "exact (R_fmt + R_exact)"
    needs_embedder = False
    scores_exact = True

    def label(self, spec: RewardSpec) -> str:
        return "R_exact"

    def score(self, scorer, valid, findings, impression, n) -> MethodScores:
        ex_f, ex_i = np.zeros(n), np.zeros(n)
        for i, s in valid:
            ex_f[i] = exact_match_section(s.findings, findings[i])
            ex_i[i] = exact_match_section(s.impression, impression[i])
        return MethodScores(content=ex_f + ex_i, exact_findings=ex_f, exact_impression=ex_i)

    def trl_parts(self, spec, scorer) -> list[tuple]:
        return [("r_exact", lambda b: b.exact, 1.0)]

    def breakdown_logs(self, b) -> list[tuple[str, float]]:
        return [("reward_components/exact_findings", float(b.exact_findings.mean())),
                ("reward_components/exact_impression", float(b.exact_impression.mean()))]


register_method(ExactMethod())
