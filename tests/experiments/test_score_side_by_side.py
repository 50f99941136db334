"""Scoring side by side in worker processes gives the scores of scoring here.

Notebooks 03 and 04 and the GRPO study's table score every system's test generations with
:func:`sdrlib.experiments.scoring.score_all`: side by side in ``grpo.workers`` processes when there are enough
reports, else one after the other in the calling process. A system's scores must not depend on which path scored
it: every metric of the suite (BLEU, ROUGE, METEOR, chrF++, the labeler's F1) bit for bit on its per-study
statistics and corpus value, BERTScore (all-MiniLM-L6-v2) to 1e-6, since bert-score's float32 values may differ in
their last bit between any two processes (the one-process path's too). What a worker warns is raised in the caller.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from training_helpers import Rec

FINDINGS = [
    "The lungs are clear. Heart size is normal. No pleural effusion or pneumothorax.",
    "There is a right lower lobe opacity. Heart size is normal.",
    "The heart is enlarged. Small bilateral pleural effusions. No pneumothorax.",
    "Left basilar atelectasis. The cardiomediastinal silhouette is within normal limits.",
    "Nondisplaced fracture of the right sixth rib. Both lungs are clear.",
    "Mild pulmonary edema. Moderate cardiomegaly. Support devices in place.",
]
IMPRESSIONS = ["No acute cardiopulmonary process.", "Right lower lobe pneumonia.", "Cardiomegaly with effusions.",
               "Atelectasis.", "Rib fracture.", "Edema and cardiomegaly."]


def _systems(n: int) -> tuple[list[Rec], dict[tuple[str, int], list[str]]]:
    rng = np.random.default_rng(0)
    test = [Rec(f"s{i}", [], FINDINGS[i % 6], IMPRESSIONS[i % 6], None, "test") for i in range(n)]

    def report(i: int) -> str:
        return f"<think> {FINDINGS[i]} </think> <answer> {IMPRESSIONS[(i + 1) % 6]} </answer>"

    systems = {(name, seed): [report(int(rng.integers(6))) for _ in range(n)]
               for name, seed in (("sft", 0), ("chamfer", 0), ("chamfer", 1))}
    systems[("chamfer", 1)][3] = "no template here"  # a malformed report scores like the notebook's
    systems[("noise", 0)] = ["plain text, no template"] * n  # a system the suite warns about
    return test, systems


def _flat(scores) -> dict[tuple[str, str], tuple[bytes, float]]:
    """Every metric but BERTScore by its exact statistics and corpus value."""
    return {(sec, r.name): (np.asarray(r.stats, np.float64).tobytes(), float(r.corpus))
            for sec in scores.sections for r in scores.results[sec] if not r.name.startswith("bertscore_f1@")}


def _bertscore(scores) -> np.ndarray:
    return np.concatenate([np.asarray(r.stats, np.float64).ravel() for sec in scores.sections
                           for r in scores.results[sec] if r.name.startswith("bertscore_f1@")])


@pytest.mark.slow
def test_scores_side_by_side_match_one_process(sdr_root, monkeypatch):
    import torch

    from sdrlib.config import load_profile
    from sdrlib.experiments import posttrain, scoring
    from sdrlib.metrics.suite import TemplateFormatWarning

    test, systems = _systems(12)
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # a calling process on two threads, the workers on one
    try:
        monkeypatch.setattr(scoring, "SCORE_SIDE_BY_SIDE", 0)  # a worker pool for these few reports too
        with warnings.catch_warnings(record=True) as side_warned:
            warnings.simplefilter("always")
            side = posttrain.score_all(load_profile("smoke", {"grpo.workers": 2}), systems, test)
        monkeypatch.undo()
        with warnings.catch_warnings(record=True) as here_warned:
            warnings.simplefilter("always")
            here = posttrain.score_all(load_profile("smoke", {"grpo.workers": 1}), systems, test)
    finally:
        torch.set_num_threads(before)
    # what a worker warned is raised again here: a notebook's folded_warnings counts it as from one process
    template = [[str(w.message) for w in ws if w.category is TemplateFormatWarning]
                for ws in (side_warned, here_warned)]
    assert template[0] == template[1] and len(template[0]) == 1 and "12 of 12 predictions" in template[0][0]
    assert list(side) == list(here) == list(systems)
    for k in systems:
        flat = _flat(here[k])
        assert _flat(side[k]) == flat and len(flat) > 20, k
        bs = _bertscore(here[k])
        assert bs.size == 2 * 2 * len(test), k  # both sections, (value, defined) per study: the torch metric ran
        np.testing.assert_allclose(_bertscore(side[k]), bs, rtol=0, atol=1e-6, err_msg=str(k))
    assert _flat(here[("sft", 0)]) != _flat(here[("chamfer", 0)])  # the systems differ


def test_a_reducer_that_cannot_come_back_from_a_worker_is_named(monkeypatch):
    """A registered metric group whose corpus reducer is a closure cannot send its scores back from a worker: the
    worker's job names the metric and the two ways out, instead of pickle's message about a local object."""
    from types import SimpleNamespace

    from sdrlib.errors import SDRError
    from sdrlib.experiments import scoring
    from sdrlib.metrics.base import mean_result

    def local(summed):
        return summed

    ok = mean_result("fine", "x", np.ones(2))
    bad = mean_result("my_metric", "x", np.ones(2))
    bad.reducer = local
    monkeypatch.setattr(scoring, "_score_job", lambda *a: SimpleNamespace(sections=("findings",),
                                                                           results={"findings": [ok, bad]}))
    with pytest.raises(SDRError, match=r"metric my_metric: its reducer .* cannot be pickled .*grpo.workers: 1"):
        scoring._score_worker_job(None, [], [], [], None, {})
    bad.reducer = ok.reducer
    assert scoring._score_worker_job(None, [], [], [], None, {})[0].results["findings"][1] is bad
