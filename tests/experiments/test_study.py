"""The GRPO study (sdrlib.experiments.study, scripts/study.py): one evidence file per finished run, resumed run by
run, extended by seeds without retraining the others, a file of another setting redone, the comparison table
under the rule (both families, vs SFT and vs R_exact, the study half's standard error), and the script's bad
arguments refused before any work."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from training_helpers import TINY_POLICY

ROOT = Path(__file__).resolve().parents[2]
#: the smallest runs that exercise every path (the table test writes its own varied evidence)
SMALL = {**TINY_POLICY, "sft.max_steps": 4, "sft.batch_size": 4, "grpo.max_steps": 1, "grpo.batch_size": 2,
         "grpo.num_generations": 2, "grpo.max_completion_length": 24, "grpo.save_steps": 1, "grpo.workers": 1,
         "grpo.rewards": ["exact", "chamfer"], "grpo.seeds": 2, "grpo.eval_n": 0, "data.n_test": 6,
         "sft.max_new_tokens": 24, "embedding.encoder": "all-MiniLM-L6-v2", "metrics.bootstrap": 50}


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    from sdrlib.config import load_profile
    from sdrlib.experiments import study

    root = tmp_path_factory.mktemp("study")
    mp = pytest.MonkeyPatch()
    mp.setenv("SDR_ROOT", str(root))
    cfg = load_profile("smoke", SMALL)
    ev = root / "evidence"
    log: list[str] = []
    first = study.run_study(cfg, ev, log=log.append)
    yield cfg, ev, first, log
    mp.undo()


@pytest.mark.slow
def test_every_run_writes_one_evidence_file_with_its_key(study_run):
    from sdrlib.experiments import study

    cfg, ev, first, log = study_run
    assert [p.name for p in first] == [f"{c}_s{s}.json.gz" for s in (0, 1) for c in ("sft", "exact", "chamfer")]
    rec = json.loads(gzip.decompress(first[2].read_bytes()))
    assert rec["config"] == "chamfer" and rec["seed"] == 0 and len(rec["generations"]) == 6
    assert rec["key"]["max_steps"] == 1 and "code" not in rec["key"] and rec["source_digest"] and rec["commit"]
    assert rec["key"]["eval"]["n_test"] == 6 and rec["key"]["init"]
    st = study.study_status(cfg, ev)
    assert st.done.all() and len(st) == 6


@pytest.mark.slow
def test_the_study_resumes_and_extends_by_seeds_only(study_run):
    from sdrlib.config import load_profile
    from sdrlib.experiments import study

    cfg, ev, _, _ = study_run
    assert study.run_study(cfg, ev, log=lambda s: None) == []  # nothing left to do
    more = study.run_study(cfg, ev, seeds=[0, 1, 2], log=lambda s: None)
    assert [p.name for p in more] == ["sft_s2.json.gz", "exact_s2.json.gz", "chamfer_s2.json.gz"]
    # a run of another setting (more GRPO steps) is redone, the SFT files are not
    longer = load_profile("smoke", {**SMALL, "grpo.max_steps": 2})
    redo = study.run_study(longer, ev, seeds=[0], log=lambda s: None)
    assert [p.name for p in redo] == ["exact_s0.json.gz", "chamfer_s0.json.gz"]


@pytest.mark.slow
def test_table_compares_with_sft_and_exact_in_two_families(study_run, tmp_path):
    """On evidence files holding varied reports (each run writes its own study's report with a probability that
    depends on the configuration and the seed, another study's report otherwise), so every seed has its own noise."""
    import numpy as np

    from sdrlib.data import load_split
    from sdrlib.experiments import study
    from sdrlib.reports import build_template

    cfg, _, _, _ = study_run
    test = load_split(cfg, "test")
    ev = tmp_path / "ev"
    (ev / "runs").mkdir(parents=True)
    for c, p_own in (("sft", 0.4), ("exact", 0.5), ("chamfer", 0.7)):
        for s in (0, 1, 2):
            rng = np.random.default_rng(hash((c, s)) % 2**32)
            gens = [build_template(*((r.findings, r.impression) if rng.random() < p_own else
                                     (lambda o: (o.findings, o.impression))(test[int(rng.integers(len(test)))])))
                    for r in test]
            body = {"config": c, "seed": s, "study_ids": [r.study_id for r in test], "generations": gens}
            (ev / "runs" / f"{c}_s{s}.json.gz").write_bytes(gzip.compress(json.dumps(body).encode()))
    t = study.study_table(study.study_scores(cfg, ev, test), n_studies=len(test), n_resamples=50)
    pairs = set(zip(t.A, t.B))
    assert pairs == {("R_exact", "SFT"), ("R_Cham", "SFT"), ("R_Cham", "R_exact")}
    assert set(t.family) == {"primary", "secondary"}
    assert {m.split("@")[0] for m in t[t.family == "primary"].metric} == set(study.PRIMARY)
    assert (t.study_se.dropna() >= 0).all() and t.study_se.notna().any()
    assert {"p_holm", "verdict", "mde", "binding"} <= set(t.columns)
    assert (t.groupby("family").family_size.nunique() == 1).all() and (t.n_seeds == 3).all()
    answer = study.study_answer(t)
    assert len(answer) == 2 and answer[0].startswith("Do set-distance rewards beat SFT after GRPO? R_Cham: BERTScore")
    assert answer[1].startswith("Do set-distance rewards beat exact matching (R_exact)? R_Cham:")
    for _, r in t[t.family == "primary"].iterrows():  # every direction word is the rule's verdict of its row
        assert f"{r.verdict} ({r['diff']:+.3f}, detectable {r.mde:.3f}" in " ".join(answer)


def test_pairs_compare_every_configuration_with_sft_then_with_exact():
    from sdrlib.experiments.study import study_pairs

    assert study_pairs(["sft", "exact", "chamfer", "hausdorff"]) == [
        ("exact", "sft"), ("chamfer", "sft"), ("hausdorff", "sft"), ("chamfer", "exact"), ("hausdorff", "exact")]
    assert study_pairs(["sft", "chamfer"]) == [("chamfer", "sft")]


def test_the_study_profile_meets_its_floors():
    from sdrlib.config import load_profile
    from sdrlib.experiments.study_size import MIN_SEEDS, MIN_STUDIES

    cfg = load_profile("study")
    assert cfg.grpo.seeds >= MIN_SEEDS and cfg.data.n_test >= MIN_STUDIES and cfg.grpo.eval_n == 0
    assert {"exact", "chamfer", "hausdorff"} <= set(cfg.grpo.rewards)


@pytest.mark.parametrize("argv, msg", [
    (["pilot", "--reward", "nope"], "unknown reward 'nope'"),
    (["pilot", "--buckets", "0"], "must be >= 1"),
    (["choose", "--variants", "a:notakeyvalue"], "KEY=VALUE"),
    (["choose", "--variants", "a", "a"], "new plain name"),
    (["run", "--configs", "gcarl"], "not configurations of profile study"),
    (["run", "--seeds", "-1"], "non-negative"),
    (["status", "--evidence", "/nonexistent/folder"], "not a folder"),
    (["pilot", "--sft-policy", "/nonexistent/policy"], "no saved policy there"),
    (["pilot", "--n-val", "100000"], "validation studies"),
])
def test_script_refuses_bad_arguments_in_one_line(argv, msg, capsys):
    """In process (the script's main), so the nine cases cost no interpreter start each."""
    spec = importlib.util.spec_from_file_location("study_script", ROOT / "scripts" / "study.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    try:
        rc = script.main(argv)
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and msg in err, (rc, err[-500:])
    assert "Traceback" not in err and msg in err.strip().splitlines()[-1]  # the last line names it
