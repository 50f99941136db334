"""Draws of the GRPO study (``grpo.eval_draws``): each run's policy samples K reports per test study, one evidence
file per extra draw, pooled per study in the table (sdrlib.metrics.suite.pool_scores, checked against scoring every
draw's reports as one corpus); more draws of a done run never retrain it, a run whose policy is gone is trained
again and its draws follow the new policy; a draw file that cannot belong to its run is named."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from sdrlib.experiments.study import runs as study
from sdrlib.experiments.study.runs import StudyError

REFS = [{"findings": f, "impression": "No acute disease."} for f in (
    "Small left pleural effusion. Heart size is normal.", "No pleural effusion or pneumothorax.",
    "Mild cardiomegaly. Bibasilar atelectasis.", "Right lower lobe consolidation.", "Lungs are clear.")]


def _report(findings: str) -> str:
    from sdrlib.reports import build_template

    return build_template(findings, "No acute disease.")


DRAWS = [[_report(f) for f in ("Small left pleural effusion.", "Lungs are clear.", "Cardiomegaly.",
                               "Right lower lobe consolidation. Small effusion.", "Lungs are clear.")],
         [_report(f) for f in ("Heart size is normal.", "No pneumothorax.", "Mild cardiomegaly. Atelectasis.",
                               "Lungs are clear.", "Small right pneumothorax.")],
         [_report(f) for f in ("Left pleural effusion.", "Pleural effusion.", "Bibasilar atelectasis.",
                               "Consolidation.", "Lungs are clear.")]]


def _score(preds, refs, ids):
    from sdrlib.metrics.suite import score_reports

    return score_reports(preds, refs, sample_ids=ids, metrics=["rouge", "clinical"], sections=("findings",),
                         settings={"clinical": {"backend": "labeler"}})


def test_draw_seed_is_the_runs_own_for_draw_0_and_a_stable_distinct_seed_otherwise():
    assert study.draw_seed(3, 0) == 3 and study.draw_seed(3, 1) == study.draw_seed(3, 1)
    seeds = [study.draw_seed(s, d) for s in range(10) for d in range(1, 8)]
    assert len(set(seeds)) == len(seeds) and not set(seeds) & set(range(10))
    assert all(0 <= x <= study.MAX_SEED for x in seeds)
    for seed, draw, msg in ((3, -1, "draw = -1"), (3, 1.5, "draw = 1.5"), (3, True, "draw = True"),
                            (-1, 1, "seed \\[-1\\]"), (2**32, 0, "seed")):
        with pytest.raises(StudyError, match=msg):
            study.draw_seed(seed, draw)


def test_pooled_draws_score_as_every_draws_reports_in_one_corpus():
    """The reference: the three draws' 15 reports scored as one corpus (each reference repeated); pooling must give
    its corpus values, and a bootstrap weight on a study must weigh that study's three reports."""
    from sdrlib.metrics.suite import pool_scores

    ids = [f"s{i}" for i in range(len(REFS))]
    pooled = pool_scores([_score(g, REFS, ids) for g in DRAWS])
    flat = _score([g for d in DRAWS for g in d], REFS * len(DRAWS), [f"{i}#{k}" for k in range(3) for i in ids])
    assert pooled.sample_ids == ids
    names = [r.name for r in flat.results["findings"]]
    assert names == [r.name for r in pooled.results["findings"]] and "clinical_f1_macro14@labeler" in names
    assert all(0 < r.corpus < 1 for r in flat.results["findings"] if r.name in ("rouge1", "clinical_f1_micro14@labeler"))
    # the pooled value is not the mean of the draws' values (label F1 pools the counts)
    per_draw = [_score(g, REFS, ids).result("findings", "clinical_f1_macro14@labeler").corpus for g in DRAWS]
    assert pooled.result("findings", "clinical_f1_macro14@labeler").corpus != pytest.approx(np.mean(per_draw))
    w = np.random.default_rng(0).integers(0, 3, size=(4, len(ids))).astype(float)
    for r in flat.results["findings"]:
        p = pooled.result("findings", r.name)
        assert p.corpus == pytest.approx(r.corpus, abs=1e-12)
        assert p.value_for(w) == pytest.approx(r.value_for(np.tile(w, 3)), abs=1e-12)
        if r.sample is not None:
            assert p.sample == pytest.approx(np.asarray(r.sample).reshape(3, -1).mean(0), nan_ok=True)
    assert len(pooled.issues) == len(flat.issues)


def test_pooling_one_draw_is_that_draw_and_unlike_draws_are_refused():
    from sdrlib.metrics.suite import pool_scores

    ids = [f"s{i}" for i in range(len(REFS))]
    one = _score(DRAWS[0], REFS, ids)
    assert pool_scores([one]) is one
    with pytest.raises(ValueError, match="no draws"):
        pool_scores([])
    other = _score(DRAWS[1], REFS, [f"t{i}" for i in range(len(REFS))])
    with pytest.raises(ValueError, match="differ in studies"):
        pool_scores([one, other])


def _write(ev, name, rec):
    (ev / "runs").mkdir(parents=True, exist_ok=True)
    (ev / "runs" / name).write_bytes(gzip.compress(json.dumps(rec).encode()))


def _rec(config, seed, gens, draw=0, policy="p0"):
    return {"config": config, "seed": seed, **({"draw": draw} if draw else {}), "policy": policy,
            "study_ids": ["a", "b"], "generations": gens}


def test_a_runs_draws_are_read_in_order_and_a_draw_that_cannot_be_its_runs_is_named(tmp_path):
    ev = tmp_path / "ev"
    _write(ev, "sft_s0.json.gz", _rec("sft", 0, ["x", "y"]))
    _write(ev, "sft_s0_d1.json.gz", _rec("sft", 0, ["x1", "y1"], 1))
    _write(ev, "sft_s0_d2.json.gz", _rec("sft", 0, ["x2", "y2"], 2))
    run = study.load_evidence(ev)[("sft", 0)]
    assert run["draws"] == [["x", "y"], ["x1", "y1"], ["x2", "y2"]] and run["generations"] == ["x", "y"]
    cases = [({"sft_s1_d1.json.gz": _rec("sft", 1, ["a", "b"], 1)}, "without its run's file sft_s1.json.gz"),
             ({"sft_s0_d3.json.gz": _rec("sft", 0, ["a", "b"], 3, policy="p9")}, "sampled from policy p9"),
             ({"sft_s0_d4.json.gz": _rec("sft", 0, ["a", "b"], 4)}, "sft_s0_d3.json.gz is missing"),
             ({"sft_s0_d5.json.gz": _rec("sft", 0, ["a", "b"], 1)}, "holds sft seed 0 draw 1, whose file is "
                                                                     "sft_s0_d1.json.gz"),
             ({"sft_s0_d6.json.gz": _rec("sft", 0, ["a", "b"], -6)}, "draw -6: a whole number")]
    for i, (files, msg) in enumerate(cases):
        bad = tmp_path / f"bad{i}"
        for name in ("sft_s0.json.gz", "sft_s0_d1.json.gz", "sft_s0_d2.json.gz"):
            (bad / "runs").mkdir(parents=True, exist_ok=True)
            (bad / "runs" / name).write_bytes((ev / "runs" / name).read_bytes())
        for name, rec in files.items():
            _write(bad, name, rec)
        with pytest.raises(StudyError, match=msg):
            study.load_evidence(bad)


def _test_records(n=2):
    from types import SimpleNamespace

    return [SimpleNamespace(study_id=i) for i in ("a", "b")[:n]]


def test_the_table_refuses_a_copied_draw_and_reads_the_seeds_asked(tmp_path):
    test = _test_records()
    ev = tmp_path / "ev"
    for c, s in (("sft", 0), ("chamfer", 0), ("sft", 1), ("chamfer", 1)):  # each chamfer seed its own policy
        _write(ev, f"{c}_s{s}.json.gz", _rec(c, s, [f"{c}{s}a", f"{c}{s}b"], policy="p0" if c == "sft" else f"p{s}"))
    _write(ev, "chamfer_s0_d1.json.gz", _rec("chamfer", 0, ["chamfer0a", "chamfer0b"], 1))
    with pytest.raises(StudyError, match="chamfer_s0.json.gz and chamfer_s0_d1.json.gz hold the same generations"):
        study.table_runs(ev, test)
    _write(ev, "chamfer_s0_d1.json.gz", _rec("chamfer", 0, ["c1a", "c1b"], 1))
    assert {k: len(r["draws"]) for k, r in study.table_runs(ev, test).items()} == \
        {("chamfer", 0): 2, ("chamfer", 1): 1, ("sft", 0): 1, ("sft", 1): 1}
    assert sorted(study.table_runs(ev, test, seeds=[1])) == [("chamfer", 1), ("sft", 1)]
    for seeds, msg in (([1, 2], "no run of seed\\(s\\) \\[2\\]"), ([1, 1], "repeats")):
        with pytest.raises(StudyError, match=msg):
            study.table_runs(ev, test, seeds=seeds)


def _smoke(draws):
    from sdrlib.config import load_profile

    return load_profile("smoke", {"data.n_test": 2, "grpo.rewards": ["chamfer"], "grpo.seeds": 1,
                                  "grpo.workers": 1, "grpo.eval_draws": draws})


@pytest.fixture
def fake_runs(tmp_path, monkeypatch):
    """run_study with its training and sampling replaced: a run's policy is a folder whose bytes say which training
    made it; ``calls`` records every training and every sampling seed."""
    from types import SimpleNamespace

    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "root"))
    cfg = _smoke(draws=3)
    sft_folder = tmp_path / "sft_policy"
    calls = {"train": [], "sample": [], "weights": "w1"}
    monkeypatch.setattr(study.training, "sft", lambda *a, **k: SimpleNamespace(final=sft_folder, reused=True,
                                                                               seconds=0.0))
    monkeypatch.setattr(study, "evidence_key", lambda cfg, c, s, tr, te, base, draw=0, sft_seed=None: {"c": c, "s": s, "d": draw})

    def train(cfg, config, seed, train_records, test_records, sft_policy, embedder=None, progress=False):
        folder = study.policy_dir(cfg, config, seed) if config != "sft" else sft_folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(calls["weights"])
        calls["train"].append((config, seed))
        gens = study.generate_test(cfg, folder, test_records, seed=seed)
        return {"config": config, "seed": seed, "policy": study.training.policy_digest(folder),
                "study_ids": [r.study_id for r in test_records], "generations": gens}

    def generate(cfg, policy, test_records, seed):
        calls["sample"].append(seed)
        return [f"{(policy / 'config.json').read_text()} {seed} {r.study_id}" for r in test_records]

    monkeypatch.setattr(study, "run_one", train)
    monkeypatch.setattr(study, "generate_test", generate)
    return cfg, tmp_path / "ev", calls


def test_more_draws_of_a_done_run_sample_its_policy_and_never_retrain_it(fake_runs):
    cfg, ev, calls = fake_runs
    first = study.run_study(cfg, ev, log=lambda s: None)
    names = ["sft_s0.json.gz", "sft_s0_d1.json.gz", "sft_s0_d2.json.gz",
             "chamfer_s0.json.gz", "chamfer_s0_d1.json.gz", "chamfer_s0_d2.json.gz"]
    assert [p.name for p in first] == names and calls["train"] == [("sft", 0), ("chamfer", 0)]
    assert calls["sample"] == [0, study.draw_seed(0, 1), study.draw_seed(0, 2)] * 2
    assert study.run_study(cfg, ev, log=lambda s: None) == []
    # two more draws: sampled from the run folders' policies, nothing trained
    calls["train"].clear()
    more = study.run_study(_smoke(draws=5), ev, log=lambda s: None)
    assert [p.name for p in more] == ["sft_s0_d3.json.gz", "sft_s0_d4.json.gz", "chamfer_s0_d3.json.gz",
                                      "chamfer_s0_d4.json.gz"] and calls["train"] == []
    assert [len(r["draws"]) for r in study.load_evidence(ev).values()] == [5, 5]


def test_a_draw_whose_policy_is_gone_trains_the_run_again_and_follows_the_new_policy(fake_runs):
    cfg, ev, calls = fake_runs
    study.run_study(cfg, ev, log=lambda s: None)
    folder = study.policy_dir(cfg, "chamfer", 0)
    # the same training again (same bytes): only the missing draw is written, the run's file stays
    (folder / "config.json").unlink()
    (ev / "runs" / "chamfer_s0_d2.json.gz").unlink()
    calls["train"].clear()
    assert [p.name for p in study.run_study(cfg, ev, log=lambda s: None)] == ["chamfer_s0_d2.json.gz"]
    assert calls["train"] == [("chamfer", 0)]
    # a training that gives another policy: its run file and every draw are written again
    (folder / "config.json").unlink()
    (ev / "runs" / "chamfer_s0_d2.json.gz").unlink()
    calls["weights"] = "w2"
    redo = study.run_study(cfg, ev, log=lambda s: None)
    assert [p.name for p in redo] == ["chamfer_s0.json.gz", "chamfer_s0_d1.json.gz", "chamfer_s0_d2.json.gz"]
    run = study.load_evidence(ev)[("chamfer", 0)]
    assert all(g.startswith("w2 ") for d in run["draws"] for g in d)


def test_the_table_pools_the_profiles_number_of_draws_and_refuses_fewer(tmp_path, monkeypatch):
    test = _test_records()
    ev = tmp_path / "ev"
    for c in ("sft", "chamfer"):
        _write(ev, f"{c}_s0.json.gz", _rec(c, 0, [f"{c}a", f"{c}b"]))
        for d in (1, 2):
            _write(ev, f"{c}_s0_d{d}.json.gz", _rec(c, 0, [f"{c}{d}a", f"{c}{d}b"], d))
    scored = {}
    monkeypatch.setattr(study, "score_all", lambda cfg, gens, test, **kw: scored.update(gens, kw=kw) or
                        {k: k for k in gens})
    monkeypatch.setattr(study, "pool_scores", lambda draws: tuple(draws))
    pooled = study.study_scores(_smoke(draws=2), ev, test)
    assert pooled == {("chamfer", 0): (("chamfer", 0, 0), ("chamfer", 0, 1)), ("sft", 0): (("sft", 0, 0), ("sft", 0, 1))}
    assert scored[("chamfer", 0, 1)] == ["chamfer1a", "chamfer1b"] and ("sft", 0, 2) not in scored
    assert scored["kw"] == {"metrics": ["bertscore", "clinical"]}
    with pytest.raises(StudyError, match="2 run\\(s\\) \\(\\['chamfer_s0.json.gz', 'sft_s0.json.gz'\\]\\) hold fewer "
                                         "than the 4 draws"):
        study.study_scores(_smoke(draws=4), ev, test)
    # a run with fewer draws than another is read when it has the profile's number
    (ev / "runs" / "sft_s0_d2.json.gz").unlink()
    assert study.study_scores(_smoke(draws=2), ev, test)[("sft", 0)] == (("sft", 0, 0), ("sft", 0, 1))


def test_scored_without_bertscore_the_table_compares_label_f1_alone():
    """Before: study_table asked significance_table for BERTScore F1 that the scores lack (an error)."""
    ids = [f"s{i}" for i in range(len(REFS))]
    pool = [g for d in DRAWS for g in d] + [_report(r["findings"]) for r in REFS]
    rng = np.random.default_rng(1)
    scores = {(c, s): _score(list(rng.choice(pool, size=len(REFS))), REFS, ids)
              for c in ("sft", "exact", "chamfer") for s in range(3)}
    t = study.study_table(scores, n_studies=len(REFS), n_resamples=50)
    assert set(t.metric.str.split("@").str[0]) == {"clinical_f1_macro14", "clinical_f1_micro14", "clinical_f1_sample"}
    assert (t[t.family == "primary"].metric == "clinical_f1_macro14@labeler").all()
    assert list(t[t.family == "primary"].family_size.unique()) == [3]
