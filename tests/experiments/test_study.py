"""The GRPO study (sdrlib.experiments.study; its command line sdrlib.experiments.study.cli): one evidence file per
finished run, resumed run by run, extended by seeds without retraining the others, a file of another setting redone,
the comparison table under the rule (both families, vs SFT and vs R_exact, the study half's standard error), and the
command line's bad arguments refused before any work; bad seeds, run requests, evidence files and tables named (the
probe pass of tests/probes/study_surfaces.py)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from training_helpers import TINY_POLICY

from sdrlib.experiments.paper_values import PAPER_TABLES, paper_effect
from sdrlib.experiments.study import families

ROOT = Path(__file__).resolve().parents[2]
#: the smallest runs that exercise every path (the table test writes its own varied evidence)
SMALL = {**TINY_POLICY, "sft.max_steps": 4, "sft.batch_size": 4, "grpo.max_steps": 1, "grpo.batch_size": 2,
         "grpo.num_generations": 2, "grpo.max_completion_length": 24, "grpo.save_steps": 1, "grpo.workers": 1,
         "grpo.rewards": ["exact", "chamfer"], "grpo.seeds": 2, "grpo.eval_n": 0, "data.n_test": 6,
         "sft.max_new_tokens": 24, "embedding.encoder": "all-MiniLM-L6-v2", "metrics.bootstrap": 50}


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    from sdrlib.config import load_profile
    from sdrlib.experiments.study import runs as study

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
    from sdrlib.experiments.study import runs as study

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
    from sdrlib.experiments.study import runs as study

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
    from sdrlib.experiments.study import runs as study
    from sdrlib.reports import build_template

    cfg, _, _, _ = study_run
    test = load_split(cfg, "test")
    ev = tmp_path / "ev"
    (ev / "runs").mkdir(parents=True)
    written = set()
    for k, (c, p_own) in enumerate((("sft", 0.4), ("exact", 0.5), ("chamfer", 0.7))):
        for s in (0, 1, 2):
            rng = np.random.default_rng([k, s])  # fixed per run (Python's hash of a str is salted per process)
            while True:  # copies of a run are refused by the table: every run's reports differ
                gens = [build_template(*((r.findings, r.impression) if rng.random() < p_own else
                                         (lambda o: (o.findings, o.impression))(test[int(rng.integers(len(test)))])))
                        for r in test]
                if tuple(gens) not in written:
                    written.add(tuple(gens))
                    break
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
    md = study.study_markdown(t).splitlines()
    assert len(md) == 2 + (t.family == "primary").sum() and all(x.count("|") == md[0].count("|") for x in md)
    assert [x.split(" | ")[0] for x in md[2:]] == ["| R_Cham vs SFT"] * 2 + ["| R_exact vs SFT"] * 2 + \
        ["| R_Cham vs R_exact"] * 2  # vs SFT first, the paper's set-distance rewards before R_exact
    prim = t[t.family == "primary"]
    for line in md[2:]:
        r = prim[(prim.A + " vs " + prim.B == line.split(" | ")[0][2:]) &
                 (prim.metric.map(families._metric_with_instrument) == line.split(" | ")[1])].iloc[0]
        assert line.endswith(f"| {r.verdict} |") and f"| {r.p_value:.3f} | {r.p_holm:.3f} |" in line
        assert f"| {r['diff']:+.3f} | [{r.ci_low:+.3f}, {r.ci_high:+.3f}] |" in line
        assert f"| {int(r.n_same_sign)} of {int(r.n_seeds)} | {r.mde:.3f} | {r.binding} |" in line
        # the paper's own difference of the same two configurations, Tab. 1 / Tab. 2 (sdrlib.experiments.paper_values)
        paper = " / ".join(f"{paper_effect(r.A, r.B, r.metric, tab):+.3f}" for tab in PAPER_TABLES)
        assert f"| {paper} |" in line, (line, paper)
    with pytest.raises(study.StudyError, match="no 'tertiary' row"):
        study.study_markdown(t, family="tertiary")


def test_answer_of_no_table_is_a_study_error():
    """Before: a plain ValueError (every other refusal of the study is a StudyError, which the scripts print in one
    line)."""
    import pandas as pd

    from sdrlib.experiments.study.runs import StudyError, study_answer

    with pytest.raises(StudyError, match="study_table's output"):
        study_answer(pd.DataFrame())


def test_pairs_compare_every_configuration_with_sft_then_with_exact():
    from sdrlib.experiments.study.runs import study_pairs

    assert study_pairs(["sft", "exact", "chamfer", "hausdorff"]) == [
        ("exact", "sft"), ("chamfer", "sft"), ("hausdorff", "sft"), ("chamfer", "exact"), ("hausdorff", "exact")]
    assert study_pairs(["sft", "chamfer"]) == [("chamfer", "sft")]


def test_the_study_profile_meets_its_floors():
    from sdrlib.config import load_profile
    from sdrlib.experiments.study.size import MIN_SEEDS, MIN_STUDIES

    cfg = load_profile("study")
    assert cfg.grpo.seeds >= MIN_SEEDS and cfg.data.n_test >= MIN_STUDIES and cfg.grpo.eval_n == 0
    assert {"exact", "chamfer", "hausdorff"} <= set(cfg.grpo.rewards)


def test_script_writes_the_table_beside_the_run_files_not_among_them(tmp_path):
    """``--out docs/evidence/study/table.csv`` (where the study's docs keep it) is accepted; a file under the
    evidence's ``runs/`` (whose ``*.json.gz`` the table reads) is not. Before: both were refused."""
    mod = _study_script()
    ev = tmp_path / "ev"
    (ev / "runs").mkdir(parents=True)
    assert mod._out(str(ev / "table.csv"), ev, mod._parser()) == ev / "table.csv"
    with pytest.raises(SystemExit):
        mod._out(str(ev / "runs" / "t.csv"), ev, mod._parser())


@pytest.mark.parametrize("argv, msg", [
    (["pilot", "--reward", "nope"], "unknown reward 'nope'"),
    (["pilot", "--buckets", "0"], "must be >= 1"),
    (["choose", "--variants", "a:notakeyvalue"], "KEY=VALUE"),
    (["choose", "--variants", "a", "a"], "new plain name"),
    (["choose", "--variants", "a:sft.max_steps=99"], "sft.max_steps is not applied"),
    (["choose", "--variants", "a:paths.runs=/tmp/x"], "paths.runs is not applied"),
    (["choose", "--variants", "a:grpo.beta=0.1,grpo.beta=0.2"], "grpo.beta is given twice"),
    (["pilot", "--set", "grpo.beta=0.1", "--set", "grpo.beta=0.2"], "grpo.beta is given twice"),
    (["run", "--configs", "gcarl"], "not configurations of profile study"),
    (["run", "--seeds", "-1"], "a seed is an integer in [0, 2**32 - 1]"),
    (["status", "--evidence", "/nonexistent/folder"], "not a folder"),
    (["pilot", "--sft-policy", "/nonexistent/policy"], "no saved policy there"),
    (["pilot", "--n-val", "100000"], "validation studies"),
    (["table", "--answer-block", "/nonexistent/README.md"], "--answer-block /nonexistent/README.md: not a file "
                                                           "holding <!-- study-answer:start --> once"),
    (["table", "--answer-block", str(ROOT / "configs" / "study.yaml")], "not a file holding"),
])
def test_script_refuses_bad_arguments_in_one_line(argv, msg, capsys):
    """In process (the script's main), so the cases cost no interpreter start each."""
    from sdrlib.experiments.study import cli as script

    try:
        rc = script.main(argv)
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and msg in err, (rc, err[-500:])
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err  # one line: no usage block above it


def test_the_answer_block_is_written_between_its_markers_and_nothing_else_changes(tmp_path):
    mod = _study_script()
    f = tmp_path / "README.md"
    f.write_text("# Title\n\nbefore\n" + mod.BLOCK[0] + "\nold block\n" + mod.BLOCK[1] + "\nafter\n", encoding="utf-8")
    assert mod._block_file(str(f), mod._parser()) == f
    mod._write_block(f, "new answer\n\n| table |")
    mod._write_block(f, "newer answer")  # twice: the markers stay, one block between them
    assert f.read_text(encoding="utf-8") == ("# Title\n\nbefore\n" + mod.BLOCK[0] + "\nnewer answer\n" +
                                             mod.BLOCK[1] + "\nafter\n")
    f.write_text(mod.BLOCK[1] + mod.BLOCK[0], encoding="utf-8")  # end before start
    with pytest.raises(SystemExit):
        mod._block_file(str(f), mod._parser())


# --- bad input (tests/probes/study_surfaces.py): refused by name before any work, nothing written into an input

@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """A smoke profile with two trained configurations and two seeds, and its 6 test studies."""
    from sdrlib.config import load_profile
    from sdrlib.data import load_split

    mp = pytest.MonkeyPatch()
    mp.setenv("SDR_ROOT", str(tmp_path_factory.mktemp("smoke_root")))
    cfg = load_profile("smoke", {"data.n_test": 6, "grpo.rewards": ["exact", "chamfer"], "grpo.seeds": 2,
                                 "grpo.workers": 1})
    yield cfg, load_split(cfg, "test")
    mp.undo()


@pytest.fixture
def no_work(monkeypatch):
    """Every call that would train or score fails the test: a refusal must come before any work."""
    from sdrlib import training
    from sdrlib.experiments.study import pilot as study_pilot, runs as study

    def work(*a, **k):
        raise AssertionError("work started")

    for module, name in ((training, "sft"), (training, "grpo"), (study, "score_all"), (study_pilot, "pilot_table"),
                         (study_pilot, "choice_table")):
        monkeypatch.setattr(module, name, work)


def _runs(ev, test, runs):
    """Write run files: ``runs`` maps ``(config, seed)`` (or a file name) to generations, a record or bytes."""
    (ev / "runs").mkdir(parents=True, exist_ok=True)
    for key, body in runs.items():
        name = key if isinstance(key, str) else f"{key[0]}_s{key[1]}.json.gz"
        if isinstance(body, list):
            body = {"config": key[0], "seed": key[1], "study_ids": [r.study_id for r in test], "generations": body}
        (ev / "runs" / name).write_bytes(body if isinstance(body, bytes) else gzip.compress(json.dumps(body).encode()))
    return ev


def _gens(test, tag):
    return [f"<think> {tag} {i} </think> <answer> x </answer>" for i in range(len(test))]


def _study_script():
    from sdrlib.experiments.study import cli as study_cli

    return study_cli


@pytest.mark.parametrize("argv, msg", [
    (["pilot", "--n-val", "abc"], "argument --n-val: expected a whole number, got 'abc'"),
    (["pilot", "--seed", "4294967296"], "a seed is an integer in [0, 2**32 - 1]"),
    (["run", "--seeds", "0", "0"], "--seeds [0, 0]: repeats [0]"),
    (["status", "--seeds", "1", "1"], "--seeds [1, 1]: repeats [1]"),
    (["run", "--evidence", "{file}"], "is not a folder"),
    (["run", "--evidence", "{runs_file}"], "runs is not a folder"),
    (["table", "--evidence", "{empty}"], "no run files"),
    (["table", "--evidence", "{ev}", "--out", "{ev}/runs/t.csv"], "whose run files the table reads"),
    (["table", "--evidence", "{ev}", "--out", "{tmp}"], "a folder; give a file name"),
    (["table", "--evidence", "{ev}", "--out", "{tmp}/nope/t.csv"], "does not exist"),
    (["table", "--evidence", "{bad}"], "sft_s0.json.gz: not a run record"),
])
def test_script_refuses_before_any_work_in_one_line_and_writes_nothing(argv, msg, tmp_path, capsys, no_work,
                                                                       monkeypatch, smoke):
    """Before: a usage block above the line; a seed beyond numpy's range, repeated seeds, an evidence path that is a
    file, an empty or corrupt evidence folder and an --out that could not be written (or lay in the folder read)
    reached training or scoring."""
    _, test = smoke
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "root"))
    (tmp_path / "file").write_text("x")
    (tmp_path / "runs_file" / "runs").parent.mkdir()
    (tmp_path / "runs_file" / "runs").write_text("x")
    (tmp_path / "empty").mkdir()
    _runs(tmp_path / "ev", test, {("sft", 0): _gens(test, "a"), ("chamfer", 0): _gens(test, "b")})
    _runs(tmp_path / "bad", test, {("sft", 0): b"not gzip"})
    before = sorted(p for p in tmp_path.rglob("*"))
    fill = {k: str(tmp_path / k) for k in ("file", "runs_file", "empty", "ev", "bad")} | {"tmp": str(tmp_path)}
    try:
        rc = _study_script().main([argv[0], "--profile", "smoke", *[a.format(**fill) for a in argv[1:]]])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "root")) == \
        [p for p in before if not p.is_relative_to(tmp_path / "root")]


@pytest.mark.parametrize("argv, msg", [
    (["--out", ""], "--out '': not a usable path"),
    (["--out", "{tmp}/t.csv", "--markdown", "{tmp}/t.csv"], "--markdown {tmp}/t.csv: the same file as --out"),
    (["--markdown", "{notes}", "--answer-block", "{notes}"], "the same file as --markdown {notes}"),
    (["--out", "{notes}", "--answer-block", "{notes}"], "the same file as --out {notes}"),
    (["--answer-block", "{notes}", "--answer-block", "{notes}"], "the same file as --answer-block"),
    (["--out", "{data}"], "an existing file this command did not write"),
    (["--markdown", "{notes}"], "an existing file this command did not write"),
])
def test_table_outputs_never_clobber_a_users_file(argv, msg, tmp_path, capsys, no_work, monkeypatch, smoke):
    """Before: ``--markdown NOTES.md --answer-block NOTES.md`` (or ``--out X --answer-block X``) overwrote the file,
    then crashed; ``--out X --markdown X`` silently replaced the CSV; ``--out ''`` wrote nothing and exited 0; an
    existing file of the user's was replaced without a word. Every case: one line, exit 2, every file as it was."""
    _, test = smoke
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "root"))
    _runs(tmp_path / "ev", test, {("sft", 0): _gens(test, "a"), ("chamfer", 0): _gens(test, "b")})
    mod = _study_script()
    notes = tmp_path / "NOTES.md"
    notes.write_text("# my notes\n" + mod.BLOCK[0] + "\n" + mod.BLOCK[1] + "\n", encoding="utf-8")
    (tmp_path / "data.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    fill = {"tmp": str(tmp_path), "notes": str(notes), "data": str(tmp_path / "data.csv")}
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(tmp_path / "root")}
    try:
        rc = mod.main(["table", "--profile", "smoke", "--evidence", str(tmp_path / "ev"),
                       *[a.format(**fill) for a in argv]])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and msg.format(**fill) in err and len(err.strip().splitlines()) == 1, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*")
            if p.is_file() and not p.is_relative_to(tmp_path / "root")} == before


def test_an_existing_output_is_overwritten_when_this_command_wrote_it_or_under_force(tmp_path):
    mod = _study_script()
    ap = mod._parser()
    own, md, other = tmp_path / "table.csv", tmp_path / "table.md", tmp_path / "mine.csv"
    own.write_text("A,B,section,metric\nx,y,findings,f1\n")
    md.write_text("Do set-distance rewards beat SFT after GRPO? ...\n")
    other.write_text("x,y\n")
    mod._check_outputs("table", {"--out": own, "--markdown": md}, [], False, ap)   # its own files: rewritten
    mod._check_outputs("table", {"--out": tmp_path / "new.csv"}, [], False, ap)
    (tmp_path / "empty.csv").write_text("")
    mod._check_outputs("table", {"--out": tmp_path / "empty.csv"}, [], False, ap)
    with pytest.raises(SystemExit):
        mod._check_outputs("table", {"--out": other}, [], False, ap)
    mod._check_outputs("table", {"--out": other}, [], True, ap)       # --force
    with pytest.raises(SystemExit):
        mod._check_outputs("pilot", {"--out": own}, [], False, ap)     # a table is not a pilot's CSV
    with pytest.raises(SystemExit):                                 # --force never allows one file twice
        mod._check_outputs("table", {"--out": own, "--markdown": own}, [], True, ap)
    stab, beh = tmp_path / "stability.csv", tmp_path / "behaviour.csv"
    stab.write_text("family,A,B,metric,diff,verdict,n_agree\n")
    beh.write_text("config,seeds,normal_share,normal_share_min\n")
    mod._check_outputs("table", {"--stability-out": stab, "--behaviour-out": beh}, [], False, ap)  # its own
    with pytest.raises(SystemExit):                                 # a comparison table is no stability table
        mod._check_outputs("table", {"--stability-out": own}, [], False, ap)


def test_seeds_are_distinct_integers_in_numpys_range(smoke):
    from sdrlib.experiments.study.runs import StudyError, study_runs

    cfg, _ = smoke
    assert study_runs(cfg, [1, 0])[:2] == [("sft", 1), ("exact", 1)] and study_runs(cfg, []) == []
    for bad, msg in (([0, 0], "repeats"), ([-1], "2\\*\\*32"), ([2**32], "2\\*\\*32"), ([1.5], "2\\*\\*32"),
                     ("01", "a list of seeds")):
        with pytest.raises(StudyError, match=msg):
            study_runs(cfg, bad)


@pytest.mark.parametrize("kw, msg", [
    ({"configs": "chamfer"}, "a list of the profile's configurations"),
    ({"configs": ["nope"]}, "a list of the profile's configurations"),
    ({"max_runs": -1}, "max_runs = -1"),
    ({"max_runs": 0}, "max_runs = 0"),
    ({"evidence": "file"}, "is not a folder"),
    ({"seeds": [0, 0]}, "repeats"),
])
def test_a_run_request_is_checked_before_any_work(kw, msg, smoke, tmp_path, no_work):
    """Before: a configs string matched by substring, max_runs -1 dropped the last run, max_runs 0 / unknown configs
    did nothing without a word, an evidence file failed only after training."""
    from sdrlib.experiments.study.runs import StudyError, run_study

    cfg, _ = smoke
    (tmp_path / "file").write_text("x")
    ev = tmp_path / kw.pop("evidence", "ev")
    with pytest.raises(StudyError, match=msg):
        run_study(cfg, ev, log=lambda s: None, **kw)


def test_a_run_file_that_is_no_run_record_is_redone(smoke, tmp_path, monkeypatch):
    """Before: a run file holding a JSON list stopped the study (AttributeError)."""
    from types import SimpleNamespace

    from sdrlib.experiments.study import runs as study

    cfg, test = smoke
    (tmp_path / "sft_policy").mkdir()
    monkeypatch.setattr(study.training, "sft", lambda *a, **k: SimpleNamespace(final=tmp_path / "sft_policy",
                                                                              reused=True, seconds=0.0))
    monkeypatch.setattr(study, "_job", lambda cfg, c, s, train, test, base, draws, policy: [{
        "config": c, "seed": s, "study_ids": [r.study_id for r in test], "generations": _gens(test, c)}])
    ev = _runs(tmp_path / "ev", test, {("sft", 0): gzip.compress(b"[1, 2]")})
    assert [p.name for p in study.run_study(cfg, ev, seeds=[0], configs=["sft"], log=lambda s: None)] == \
        ["sft_s0.json.gz"]
    assert study.load_evidence(ev)[("sft", 0)]["generations"] == _gens(test, "sft")


@pytest.mark.parametrize("runs, msg", [
    ({("sft", 0): b"plain bytes"}, "sft_s0.json.gz: not a run record"),
    ({("sft", 0): gzip.compress(b"{oops")}, "sft_s0.json.gz: not a run record"),
    ({("sft", 0): gzip.compress(json.dumps({"config": "sft"}).encode())[:20]}, "not a run record"),
    ({("sft", 0): [1, 2]}, "holds a JSON list"),
    ({("sft", 0): {"config": "sft", "seed": 0, "study_ids": []}}, "lacks \\['generations'\\]"),
    ({("sft", 0): {"config": "sft", "seed": "abc", "study_ids": [], "generations": []}}, "an integer"),
    ({("sft", 0): {"config": "sft", "seed": 0, "study_ids": ["a", "b"], "generations": ["x"]}}, "1 generations"),
    ({("sft", 0): {"config": "sft", "seed": 0, "study_ids": ["a"], "generations": [None]}}, "not text"),
    ({"chamfer.json.gz": {"config": "chamfer", "seed": 0, "study_ids": [], "generations": []}},
     "whose file is chamfer_s0.json.gz"),
    ({"chamfer_s1.json.gz": {"config": "chamfer", "seed": 0, "study_ids": [], "generations": []}},
     "chamfer_s1.json.gz: holds chamfer seed 0"),
])
def test_an_evidence_file_that_is_no_run_record_of_its_name_is_named(runs, msg, tmp_path):
    """Before: skipped without a word (not gzip, not JSON, a key missing), a KeyError / TypeError / ValueError, or
    read under the name of its content (a copy replaced the run it copies)."""
    from sdrlib.experiments.study import runs as study

    ev = tmp_path / "ev"
    (ev / "runs").mkdir(parents=True)
    for name, body in runs.items():
        name = name if isinstance(name, str) else f"{name[0]}_s{name[1]}.json.gz"
        (ev / "runs" / name).write_bytes(body if isinstance(body, bytes) else gzip.compress(json.dumps(body).encode()))
    (ev / "runs" / "notes.txt").write_text("not a run file")
    with pytest.raises(study.StudyError, match=msg):
        study.load_evidence(ev)


def test_the_table_refuses_runs_made_under_other_settings(smoke, tmp_path, no_work):
    """Before: a run trained with ``grpo.max_steps: 999`` (``run --set grpo.max_steps=3 --max-runs 1`` leaves one) was
    read as one more seed beside the profile's runs. Now the table names the file and the setting; the same runs
    are read under the settings they were made with."""
    from sdrlib.config import load_profile
    from sdrlib.experiments.study import runs as study
    from sdrlib.experiments.study.evidence import profile_settings

    cfg, test = smoke
    key = {c: profile_settings(cfg, c) for c in ("sft", "exact", "chamfer")}

    def rec(c, s, tag, **over):
        return {"config": c, "seed": s, "study_ids": [r.study_id for r in test], "generations": _gens(test, tag),
                "key": {**key[c], **over}}

    ok = {("sft", 0): rec("sft", 0, "a"), ("sft", 1): rec("sft", 1, "b"), ("chamfer", 0): rec("chamfer", 0, "c"),
          ("exact", 0): rec("exact", 0, "e"), ("exact", 1): rec("exact", 1, "f")}
    ev = _runs(tmp_path / "ok", test, ok)
    assert len(study.table_runs(ev, test, cfg=cfg)) == 5
    ev = _runs(tmp_path / "mixed", test, {**ok, ("chamfer", 1): rec("chamfer", 1, "d", max_steps=999)})
    with pytest.raises(study.StudyError, match=r"chamfer_s1.json.gz \(max_steps: 999 \(profile 2\)\)"):
        study.table_runs(ev, test, cfg=cfg)
    lr = {**key["exact"]["grpo"], "learning_rate": 1.0}
    ev = _runs(tmp_path / "lr", test, {**ok, ("exact", 1): rec("exact", 1, "f", grpo=lr)})
    with pytest.raises(study.StudyError, match="exact_s1.json.gz \\(grpo.learning_rate: 1.0"):
        study.table_runs(ev, test, cfg=cfg)
    with pytest.raises(study.StudyError, match="other settings"):
        study.study_scores(cfg, tmp_path / "mixed", test)       # the table's own path checks before scoring
    steps999 = {k: (r if k[0] == "sft" else {**r, "key": {**r["key"], "max_steps": 999}}) for k, r in ok.items()}
    ev = _runs(tmp_path / "other", test, steps999)
    assert len(study.table_runs(ev, test, cfg=load_profile("smoke", {"data.n_test": 6, "grpo.rewards": [
        "exact", "chamfer"], "grpo.seeds": 2, "grpo.workers": 1, "grpo.max_steps": 999}))) == 5


def test_the_table_reads_only_runs_it_can_compare(smoke, tmp_path, no_work):
    """Before: runs on other studies were dropped without a word, a copied run reached the statistics (SFT: a bare
    ValueError; a trained configuration: counted twice, silently), SFT alone crashed after scoring."""
    from sdrlib.experiments.study import runs as study

    _, test = smoke
    other = {"config": "sft", "seed": 1, "study_ids": [f"x{i}" for i in range(len(test))],
             "generations": _gens(test, "c")}
    cases = [
        ({}, "no run files"),
        ({("sft", 0): _gens(test, "a"), ("chamfer", 0): _gens(test, "b"), ("sft", 1): other}, "not on this profile"),
        ({("sft", 0): _gens(test, "a"), ("sft", 1): _gens(test, "a"), ("chamfer", 0): _gens(test, "b"),
          ("chamfer", 1): _gens(test, "c")}, "sft_s0.json.gz and sft_s1.json.gz hold the same generations"),
        ({("sft", 0): _gens(test, "a"), ("sft", 1): _gens(test, "d"), ("chamfer", 0): _gens(test, "b"),
          ("chamfer", 1): _gens(test, "b")}, "chamfer_s0.json.gz and chamfer_s1.json.gz hold the same generations"),
        ({("sft", 0): _gens(test, "a"), ("sft", 1): _gens(test, "b")}, "runs of \\['sft'\\] only"),
        ({("sft", 0): _gens(test, "a"), ("chamfer", 1): _gens(test, "b")}, "share no seed"),
    ]
    for i, (runs, msg) in enumerate(cases):
        ev = _runs(tmp_path / f"ev{i}", test, runs)
        with pytest.raises(study.StudyError, match=msg):
            study.study_scores(None, ev, test)


def test_study_table_refuses_scores_it_cannot_compare():
    """Before: SFT-only scores crashed (AttributeError on an empty table); an n_studies other than the scores'
    sized the study on the wrong count without a word."""
    from types import SimpleNamespace

    from sdrlib.experiments.study.runs import StudyError, study_table

    six = SimpleNamespace(sample_ids=list("abcdef"))
    with pytest.raises(StudyError, match="no scores"):
        study_table({}, n_studies=6)
    with pytest.raises(StudyError, match="cover \\[6\\] studies"):
        study_table({("sft", 0): six, ("chamfer", 0): six}, n_studies=5)
    with pytest.raises(StudyError, match="scores of \\['sft'\\] only"):
        study_table({("sft", 0): six, ("sft", 1): six}, n_studies=6)


class _Scores:
    """Scores of one run: each of the study's metrics per study (``findings`` section only)."""

    def __init__(self, values: dict):
        from sdrlib.metrics.base import mean_result

        n = len(next(iter(values.values())))
        self.sample_ids, self.sections = [f"s{i}" for i in range(n)], ("findings",)
        self.results = {"findings": [mean_result(m, "x", v) for m, v in values.items()]}

    def result(self, section, name):
        return next(r for r in self.results[section] if r.name == name)


def _run_scores(rng, shift=0.0, labels=None):
    from sdrlib.experiments.study.runs import PRIMARY, SECONDARY

    n = 30
    labels = rng.integers(0, 2, n).astype(float) if labels is None else labels
    return _Scores({m: (labels if m.startswith("clinical") else rng.normal(0.5 + shift, 0.05, n))
                    for m in (*PRIMARY, *SECONDARY)})


def test_distinct_runs_equal_on_one_metric_are_compared_and_copies_are_refused():
    """Before: every seed of SFT stating the same findings (distinct reports, the same label F1 per study: a policy
    writing normal reports) stopped the table with a bare ValueError from the statistics; two scores of one run
    passed to study_table were refused only by that ValueError."""
    import numpy as np

    from sdrlib.experiments.study.runs import StudyError, study_table

    rng = np.random.default_rng(0)
    same = rng.integers(0, 2, 30).astype(float)
    scores = {**{("sft", s): _run_scores(rng, labels=same) for s in range(3)},
              **{("chamfer", s): _run_scores(rng, 0.02) for s in range(3)}}
    t = study_table(scores, n_studies=30, n_resamples=50)
    assert (t.n_seeds == 3).all() and set(t.family) == {"primary", "secondary"}
    scores[("chamfer", 2)] = scores[("chamfer", 1)]
    with pytest.raises(StudyError, match="chamfer seeds 1 and 2 score the same"):
        study_table(scores, n_studies=30, n_resamples=50)


def test_separately_trained_runs_that_score_the_same_are_two_runs_and_one_policy_is_a_copy(smoke, tmp_path,
                                                                                            no_work):
    """Before: after a real smoke study two separately trained runs that both scored 0 (collapsed to one text) were
    refused as copies of one run (same generations, same scores). A copy is now one policy digest, read from the run
    files; files without a digest (and SFT, one policy sampled per seed) keep the generations rule."""
    import numpy as np

    from sdrlib.experiments.study import runs as study

    cfg, test = smoke
    same = ["<think> </think> <answer> </answer>"] * len(test)   # both policies write the same empty template

    def rec(c, s, gens, policy):
        return {"config": c, "seed": s, "study_ids": [r.study_id for r in test], "generations": gens,
                "policy": policy}

    base = {("sft", 0): rec("sft", 0, _gens(test, "a"), "sftpol"),
            ("sft", 1): rec("sft", 1, _gens(test, "b"), "sftpol"),
            ("exact", 0): rec("exact", 0, _gens(test, "e"), "p_e0"),
            ("exact", 1): rec("exact", 1, _gens(test, "f"), "p_e1")}
    ev = _runs(tmp_path / "two", test, {**base, ("chamfer", 0): rec("chamfer", 0, same, "p_c0"),
                                         ("chamfer", 1): rec("chamfer", 1, same, "p_c1")})
    assert len(study.table_runs(ev, test)) == 6
    assert study.run_policies(ev)[("chamfer", 1)] == "p_c1"
    ev = _runs(tmp_path / "copy", test, {**base, ("chamfer", 0): rec("chamfer", 0, _gens(test, "c"), "p_c0"),
                                          ("chamfer", 1): rec("chamfer", 1, _gens(test, "d"), "p_c0")})
    with pytest.raises(study.StudyError, match="chamfer_s0.json.gz and chamfer_s1.json.gz come from the same policy"):
        study.table_runs(ev, test)
    # the table's own check: equal scores of two policies are compared, one policy twice is a copy
    rng = np.random.default_rng(0)
    scores = {**{("sft", s): _run_scores(rng) for s in range(3)}, **{("chamfer", s): _run_scores(rng, 0.02)
                                                                    for s in range(3)}}
    scores[("chamfer", 2)] = scores[("chamfer", 1)]
    pol = {("sft", s): "sftpol" for s in range(3)} | {("chamfer", s): f"p{s}" for s in range(3)}
    t = study.study_table(scores, n_studies=30, n_resamples=50, policies=pol)
    assert (t.n_seeds == 3).all()
    with pytest.raises(study.StudyError, match="chamfer seeds 1 and 2 come from one policy"):
        study.study_table(scores, n_studies=30, n_resamples=50, policies={**pol, ("chamfer", 2): "p1"})


@pytest.fixture
def no_training(monkeypatch):
    """Training, the encoder and the reward scorer fail the test: the pilot's and the choice's checks come first."""
    from sdrlib import embedding, training
    from sdrlib.experiments.study import pilot as study_pilot

    def work(*a, **k):
        raise AssertionError("work started")

    for module, name in ((training, "sft"), (training, "grpo"), (study_pilot, "audit_scorer")):
        monkeypatch.setattr(module, name, work)
    monkeypatch.setattr(embedding.SentenceEmbedder, "from_config", staticmethod(work))


@pytest.mark.parametrize("kw, msg", [
    ({"buckets": []}, "buckets = \\[\\]"), ({"buckets": "32"}, "a list of step counts"),
    ({"buckets": ["abc"]}, "a bucket = 'abc'"), ({"buckets": [1.5]}, "a bucket = 1.5"),
    ({"buckets": [float("nan")]}, "a bucket = nan"), ({"n_val": 0}, "n_val = 0"), ({"n_val": "5"}, "n_val = '5'"),
    ({"n_val": 10**6}, "the profile has 16 validation studies"), ({"seed": -1}, "2\\*\\*32"),
    ({"seed": 2**32}, "2\\*\\*32"),
])
def test_the_pilot_refuses_bad_buckets_counts_and_seeds_before_training(kw, msg, smoke, no_training):
    """Before: bare ValueError / TypeError (text, NaN, no bucket, n_val text), or accepted: a bucket of 1.5 read as
    1, n_val beyond the validation studies read as all of them, a seed outside numpy's range failing in training."""
    from sdrlib.experiments.study.runs import StudyError
    from sdrlib.experiments.study.pilot import pilot_table

    cfg, _ = smoke
    with pytest.raises(StudyError, match=msg):
        pilot_table(cfg, "chamfer", **{"buckets": [1], "n_val": 4, **kw}, log=lambda s: None)


@pytest.mark.parametrize("variants, seeds, msg", [
    ({}, [0], "variants = \\{\\}"), ({"a": "grpo.loss_type=grpo"}, [0], "\\{name: \\{key: value\\}\\}"),
    ({"../a": {}}, [0], "\\{name: \\{key: value\\}\\}"), ({"a": {}}, [], "at least one seed"),
    ({"a": {}}, [0, 0], "repeats \\[0\\]"), ({"a": {}, "b": {"grpo.loss_type": "nope"}}, [0], "grpo.loss_type"),
    # keys a choice would not apply (before: sft.max_steps never applied, paths.runs replaced, data.* ignored)
    ({"a": {"sft.max_steps": 99}}, [0], "variant 'a': sft.max_steps is not applied"),
    ({"a": {"paths.runs": "/tmp/x"}}, [0], "paths.runs is not applied"),
    ({"a": {"data.n_train": 4}}, [0], "data.n_train is not applied"),
    ({"a": {"grpo.seeds": 4}}, [0], "grpo.seeds is not applied"),
])
def test_the_choice_refuses_bad_variants_and_seeds_before_training(variants, seeds, msg, smoke, no_training):
    """Before: a bare ValueError, a variant given as text or a name with a path read until training, repeated seeds
    trained twice, and a later variant the profile refuses failed only after the earlier ones trained."""
    from sdrlib.errors import SDRError
    from sdrlib.experiments.study.pilot import choice_table

    cfg, _ = smoke
    with pytest.raises(SDRError, match=msg):
        choice_table(cfg, "chamfer", variants, seeds=seeds, n_val=4, log=lambda s: None)


def test_the_command_line_restarts_itself_on_the_profiles_kernel_path(monkeypatch, tmp_path):
    """Like python -m sdrlib.training and run_all.sh: NumPy is loaded when the profile is known, so a command line
    that trains re-executes itself with the profile's pins set (sdrlib.numerics), never a caller's process."""
    from sdrlib import numerics

    from sdrlib.experiments.study import cli as script
    for k in numerics.KERNEL_PINS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(script, "pin_kernel_path", lambda path, env: env.update(numerics.KERNEL_PINS) or
                        dict(numerics.KERNEL_PINS) if path == "avx2" else {})
    seen = {}

    class Restarted(Exception):
        pass

    def execve(exe, args, env):
        seen.update(args=args, env=env)
        raise Restarted

    monkeypatch.setattr(script.os, "execve", execve)
    monkeypatch.setattr(script.sys, "argv", ["scripts/study.py", "run", "--evidence", str(tmp_path / "ev")])
    with pytest.raises(Restarted):
        script.main()
    assert seen["args"][1:] == ["-m", "sdrlib.experiments.study", "run", "--evidence", str(tmp_path / "ev")]
    assert all(seen["env"][k] == v for k, v in numerics.KERNEL_PINS.items())
    assert seen["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)  # this checkout's sdrlib, however started


def test_reading_counts_what_each_configuration_states_beside_the_references(smoke, tmp_path):
    """SFT writing the reference reports states what they state (same normal share, same pathologies per report);
    a configuration that writes a normal report for every study has normal share 1 and 0 pathologies, over each
    seed; a seed writing off the template lowers ``parsed``."""
    import numpy as np

    from sdrlib.experiments.study import behaviour as study
    from sdrlib.reports import build_template

    _, test = smoke
    refs = [build_template(r.findings, r.impression) for r in test]
    normal = [build_template(f"The lungs are clear {i}. No pleural effusion or pneumothorax.", "No acute disease.")
              for i in range(len(test))]
    off = ["not a report"] + normal[1:]
    # two seeds may not hold the same reports (a copy counts once): SFT's second seed rewords one Impression
    refs1 = [build_template(test[0].findings, "Reworded impression.")] + refs[1:]
    ev = _runs(tmp_path / "ev", test, {("sft", 0): refs, ("sft", 1): refs1, ("chamfer", 0): normal,
                                       ("chamfer", 1): off})
    r = study.study_reading(ev, test).set_index("config")
    assert list(r.index) == ["SFT", "R_Cham", "reference"]
    assert r.at["R_Cham", "normal_share"] == 1.0 and r.at["R_Cham", "pathologies"] == 0.0
    assert r.at["R_Cham", "seeds"] == 2 and r.at["R_Cham", "parsed"] == pytest.approx(1 - 0.5 / len(test))
    assert r.at["SFT", "normal_share"] == pytest.approx(r.at["reference", "normal_share"])
    assert r.at["SFT", "pathologies"] == pytest.approx(r.at["reference", "pathologies"])
    assert r.at["reference", "pathologies"] > 0 and np.isnan(r.at["reference", "normal_share_min"])
    md = _study_script()._reading_markdown(study.study_reading(ev, test)).splitlines()
    assert md[2].startswith("| SFT | 2 | ")
    assert md[3].startswith("| R_Cham | 2 | 1.000 [1.000, 1.000] | 0.00 [0.00, 0.00]")
    assert md[4].startswith("| reference |  | ")


def test_the_committed_answer_blocks_are_the_committed_tables():
    # every committed answer block is answer_block of its study's table.csv (the README's: the study from the start
    # that reads the image; each evidence page's: its own), so the paper column is sdrlib.experiments.paper_values'
    # (the one source of the paper's numbers)
    import pandas as pd

    from sdrlib.experiments.study import runs as study

    for folder, pages in (("study_seeing_start", ("README.md", "docs/evidence/study_seeing_start/README.md")),
                          ("study", ("docs/evidence/study/README.md",))):
        t = pd.read_csv(ROOT / "docs" / "evidence" / folder / "table.csv")
        block = study.answer_block(t)
        for page in pages:
            text = (ROOT / page).read_text(encoding="utf-8")
            assert f"<!-- study-answer:start -->\n{block}\n<!-- study-answer:end -->" in text, page
        full = (ROOT / "docs" / "evidence" / folder / "table.md").read_text(encoding="utf-8")
        assert study.study_markdown(t) in full and study.study_markdown(t, family="secondary") in full


def test_the_validation_reading_sees_a_drift_to_normal_reports(monkeypatch, smoke):
    """val_reading's macro14 and pathology gap fall when a policy writes normal reports for abnormal studies, which a
    reward and the per-report F1 (1.0 for a normal study read as normal) can rise through."""
    from types import SimpleNamespace

    from sdrlib.experiments.study import pilot

    cfg, _ = smoke
    refs = ["There is a large left pleural effusion.", "The heart is enlarged. There is pulmonary edema.",
            "The lungs are clear.", "The lungs are clear."]
    val = [SimpleNamespace(study_id=f"v{i}", findings=f, impression="See findings.") for i, f in enumerate(refs)]
    scorer = SimpleNamespace(score=lambda gens, rf, ri: SimpleNamespace(total=[1.0] * len(gens)))

    def reading(findings):
        gens = [f"<think> {f} </think> <answer> See findings. </answer>" for f in findings]
        monkeypatch.setattr(pilot, "generate_test", lambda *a, **k: gens)
        return pilot.val_reading(cfg, "policy", val, scorer, seed=0)

    reads = reading(refs)
    assert reads["pathology_gap"] == 0 and reads["pathologies"] == reads["ref_pathologies"] == 0.75
    assert reads["macro14"] > 0 and reads["normal_share"] == reads["ref_normal_share"] == 0.5
    normal = reading(["The lungs are clear."] * 4)
    assert normal["pathologies"] == 0 and normal["pathology_gap"] == -0.75 and normal["macro14"] < reads["macro14"]
    assert normal["normal_share"] == 1.0 and normal["parsed"] == 1.0
