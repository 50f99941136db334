"""Scoring systems side by side in worker processes gives the one-process scores, float for float.

Notebooks 03 and 04 score every system's test generations with :func:`sdrlib.experiments.posttrain.score_all`;
with ``grpo.workers > 1`` and torch on one thread here (notebook 04's state once it has sampled a policy itself)
the systems are scored in that many spawned processes (one thread each), one whole system per job. Checked on the
smoke profile's metrics (every built-in group that runs here: BLEU, ROUGE, METEOR, chrF++, BERTScore on
all-MiniLM-L6-v2, the clinical labeler, and whatever else is installed) and SynthCXR's report texts: the scores,
the long table the notebooks save and the rendered reward table must be equal, not close.
"""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture(scope="module")
def systems():
    """The smoke profile with two workers, 6 test studies and stand-in generations of 5 systems (other studies'
    reports, one system's cut short so that some sections are empty)."""
    from sdrlib.config import load_profile
    from sdrlib.data.synthcxr import generate_report
    from sdrlib.reports import build_template

    cfg = load_profile("smoke", {"grpo.workers": 2})
    test = [generate_report(cfg.seed, "test", i) for i in range(6)]
    train = [generate_report(cfg.seed, "train", i) for i in range(40)]
    gens = {(c, s): [build_template(train[(j * 7 + i + s) % 40].findings, train[(j * 5 + i) % 40].impression)
                     for i in range(len(test))]
            for j, c in enumerate(("sft", "fmt", "chamfer")) for s in (0, 1)}
    gens[("fmt", 1)] = [g[: len(g) // 3] for g in gens[("fmt", 1)]]  # no closed template: empty sections
    return cfg, gens, test


@pytest.fixture()
def one_thread():
    """torch on one thread in this process, as notebook 04 runs once it has sampled a policy itself."""
    from sdrlib import models

    before = models.set_cpu_threads(1)
    yield
    models.set_cpu_threads(before)


@pytest.mark.slow
def test_scores_side_by_side_equal_one_process(systems, one_thread, monkeypatch):
    import dataclasses

    from sdrlib.experiments import posttrain

    cfg, gens, test = systems
    one = dataclasses.replace(cfg, grpo=dataclasses.replace(cfg.grpo, workers=1))
    pools = []
    real_pool = posttrain.worker_pool
    monkeypatch.setattr(posttrain, "worker_pool", lambda c: pools.append(c) or real_pool(c))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        side = posttrain.score_all(cfg, gens, test)
        assert len(pools) == 1  # the systems went to the workers
        here = posttrain.score_all(one, gens, test)
    assert len(pools) == 1  # one process
    assert list(side) == list(here) == list(gens)
    for key in gens:
        a, b = side[key], here[key]
        assert a.to_frame().equals(b.to_frame()), key
        assert a.per_observation().equals(b.per_observation()), key
        assert a.unavailable == b.unavailable and a.versions == b.versions, key
        for sec in a.sections:
            for ra, rb in zip(a.results[sec], b.results[sec], strict=True):
                assert ra.name == rb.name and ra.stats.tobytes() == rb.stats.tobytes(), (key, sec, ra.name)
    groups = {r.name.split("@")[0] for r in here[("sft", 0)].results["findings"]}
    assert {"rougeL", "bertscore_f1"} <= groups, groups  # the metrics that run in the default profile ran
    long_side, long_here = (posttrain.scores_long(s, "m") for s in (side, here))
    assert long_side.equals(long_here) and long_side.attrs == long_here.attrs
    configs = ["sft", "fmt", "chamfer"]
    assert posttrain.reward_table(long_side, "findings", "headline", configs).equals(
        posttrain.reward_table(long_here, "findings", "headline", configs))


def test_worker_output_and_warnings_reach_the_caller(systems, one_thread, capsys, monkeypatch):
    """A worker's printed lines and warnings come back to the calling process, in the systems' order (the pool
    replaced by one that runs each job at once, so the stand-in scorer is seen)."""
    import contextlib
    from concurrent.futures import Future

    from sdrlib.experiments import posttrain

    class Pool:
        def submit(self, fn, *args):
            fut = Future()
            fut.set_result(fn(*args))
            return fut

    def scorer(gens, refs, **kw):
        print(f"scored {len(gens)}")
        warnings.warn(f"first text {gens[0][:9]}", UserWarning)
        return len(gens)

    cfg, gens, test = systems
    monkeypatch.setattr(posttrain, "worker_pool", lambda cfg: contextlib.nullcontext(Pool()))
    monkeypatch.setattr(posttrain, "score_reports", scorer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = posttrain.score_all(cfg, gens, test)
    assert out == {k: len(test) for k in gens}
    assert capsys.readouterr().out == f"scored {len(test)}\n" * len(gens)
    assert [str(w.message) for w in caught] == [f"first text {g[0][:9]}" for g in gens.values()]
    assert {w.category for w in caught} == {UserWarning} and all(w.filename == __file__ for w in caught)


def test_runtime_groups_keep_scoring_in_this_process(systems, monkeypatch):
    """A metric group registered at run time is unknown to a fresh worker: every system is scored here."""
    from sdrlib.experiments import posttrain
    from sdrlib.metrics.registry import MetricGroup, register_metric_group, unregister_metric_group

    assert posttrain._builtin_groups_only()
    register_metric_group(MetricGroup("toyside", section=lambda p, r, d, s: []))
    try:
        assert not posttrain._builtin_groups_only()
        cfg, gens, test = systems
        monkeypatch.setattr(posttrain, "worker_pool", lambda cfg: pytest.fail("no worker pool with a run-time group"))
        monkeypatch.setattr(posttrain, "score_reports", lambda *a, **k: "here")
        assert posttrain.score_all(cfg, gens, test) == {k: "here" for k in gens}
    finally:
        unregister_metric_group("toyside")
    assert posttrain._builtin_groups_only()


def test_several_torch_threads_keep_scoring_in_this_process(systems, monkeypatch):
    """With torch on 2 threads here, a one-thread worker would not give the same BERTScore bits: scored here."""
    from sdrlib import models
    from sdrlib.experiments import posttrain

    cfg, gens, test = systems
    monkeypatch.setattr(posttrain, "worker_pool", lambda cfg: pytest.fail("no worker pool at 2 torch threads"))
    monkeypatch.setattr(posttrain, "score_reports", lambda *a, **k: "here")
    before = models.set_cpu_threads(2)
    try:
        assert posttrain.score_all(cfg, gens, test) == {k: "here" for k in gens}
    finally:
        models.set_cpu_threads(before)
