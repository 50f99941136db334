"""The GRPO study table's companions (sdrlib.experiments.study.stability, .behaviour) and runs of a second SFT start:
the verdicts under several resampling seeds (seed 0's are the table's; the shared resamples change no float), what
each configuration writes (pathologies, normal share, per-label precision and recall), the SFT starts' differences,
``run --sft-seed`` writing its own files from its own SFT policy without touching the study's, and every new option's
bad values refused in one line before any work."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from sdrlib.experiments.study import runs as study
from sdrlib.experiments.study.runs import StudyError


def _scores(configs=("sft", "exact", "chamfer"), seeds=(0, 1, 2), n=30, shift=0.0, salt=0):
    """``{(config, seed): ReportScores}``: per-study BERTScore and every CheXpert-14 label metric, each run its own."""
    from sdrlib.metrics.base import mean_result
    from sdrlib.metrics.clinical import clinical_results
    from sdrlib.metrics.suite import ReportScores
    from sdrlib.vocabulary import CHEXPERT_14

    rng = np.random.default_rng(0)
    refs = [{o: int(v) for o, v in zip(CHEXPERT_14, rng.random(14) < 0.2)} for _ in range(n)]
    out = {}
    for k, c in enumerate(configs):
        for s in seeds:
            r = np.random.default_rng([salt, k, s])
            pred = [{o: (v if r.random() < 0.4 + 0.1 * k else int(r.random() < 0.1)) for o, v in ref.items()}
                    for ref in refs]
            res = [mean_result("bertscore_f1@m", "m", r.normal(0.5 + 0.02 * k + shift, 0.1, n)),
                   *clinical_results(pred, refs, "labeler")]
            out[(c, s)] = ReportScores(sample_ids=[f"s{i}" for i in range(n)], sections=("findings",),
                                       results={"findings": res}, defined={"findings": np.ones(n, bool)},
                                       strata=None, issues=pd.DataFrame({"issue": []}))
    return out


def test_shared_resamples_change_no_float_of_the_table():
    from sdrlib.experiments.tables import significance_table
    from sdrlib.metrics.verdict import family_verdicts

    sc = _scores()
    t = study.study_table(sc, n_studies=30, n_resamples=200)
    parts = []
    for fam, ms in (("primary", study.PRIMARY), ("secondary", study.SECONDARY)):  # every row its own resamples
        x = significance_table(sc, study.study_pairs(["sft", "exact", "chamfer"]), list(ms), n_resamples=200)
        parts.append(family_verdicts(x[x.section == "findings"].reset_index(drop=True), n_studies=30)
                     .assign(family=fam))
    pd.testing.assert_frame_equal(t, pd.concat(parts, ignore_index=True), check_exact=True)


def test_the_verdicts_are_listed_under_each_resampling_seed():
    from sdrlib.experiments.study.stability import STABILITY_COLUMNS, stability_markdown, verdict_stability

    sc = _scores()
    t0 = study.study_table(sc, n_studies=30, n_resamples=200, seed=0)
    st = verdict_stability(sc, n_studies=30, resample_seeds=[0, 7, 9], n_resamples=200)
    assert list(st.columns[:len(STABILITY_COLUMNS)]) == list(STABILITY_COLUMNS) and len(st) == len(t0)
    assert list(st.verdict_s0) == list(t0.verdict) and np.allclose(st.p_holm_s0, t0.p_holm)
    assert (st.n_resample_seeds == 3).all() and st.n_agree.between(1, 3).all()
    for _, r in st.iterrows():  # n_agree counts the seeds giving the listed verdict, the most common one
        votes = [r[f"verdict_s{s}"] for s in (0, 7, 9)]
        assert r.n_agree == votes.count(r.verdict) == max(votes.count(v) for v in votes)
    # a table already computed is reused, not recomputed
    again = verdict_stability(sc, n_studies=30, resample_seeds=[0, 7], n_resamples=200,
                              tables={0: t0.assign(verdict="above")})
    assert set(again.verdict_s0) == {"above"}
    md = stability_markdown(st).splitlines()
    assert md[0].startswith("| comparison | metric | A - B | resampling seed 0 |") and len(md) == 2 + len(st)
    for seeds, msg in (([0], "at least two"), ([0, 0], "repeats"), ([0, -1], "a seed is an integer")):
        with pytest.raises(StudyError, match=msg):
            verdict_stability(sc, n_studies=30, resample_seeds=seeds, n_resamples=50)


def test_the_sft_starts_table_takes_the_difference_on_the_shared_seeds():
    from sdrlib.experiments.study.stability import START_COLUMNS, start_markdown, start_table

    main = _scores(seeds=(0, 1, 2, 3))
    other = _scores(configs=("sft", "chamfer"), seeds=(0, 1), shift=0.05, salt=1)
    t = start_table(main, other, 1)
    assert list(t.columns) == list(START_COLUMNS) and list(t.config.unique()) == ["SFT", "R_Cham"]
    assert (t.n_seeds == 2).all() and (t.sft_seed == 1).all()
    r = t[(t.config == "R_Cham") & t.metric.str.startswith("bertscore_f1")].iloc[0]
    want = [main[("chamfer", s)].result("findings", r.metric).corpus for s in (0, 1)]
    got = [other[("chamfer", s)].result("findings", r.metric).corpus for s in (0, 1)]
    assert r.mean_main == pytest.approx(np.mean(want)) and r.start_diff == pytest.approx(np.mean(got) - np.mean(want))
    assert r.seed_sd_main == pytest.approx(np.std(want, ddof=1)) and r.start_diff > 0.02
    assert {m.split("@")[0] for m in t.metric} == set(study.PRIMARY) | set(study.SECONDARY)
    assert start_markdown(t).count("\n") == 1 + len(t)
    with pytest.raises(StudyError, match="shares a GRPO seed"):
        start_table(main, _scores(seeds=(7,)), 1)


def _write(ev, test, runs):
    (ev / "runs").mkdir(parents=True, exist_ok=True)
    for (c, s), gens in runs.items():
        body = {"config": c, "seed": s, "study_ids": [r.study_id for r in test], "generations": gens}
        (ev / "runs" / f"{c}_s{s}.json.gz").write_bytes(gzip.compress(json.dumps(body).encode()))
    return ev


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    from sdrlib.config import load_profile
    from sdrlib.data import load_split

    mp = pytest.MonkeyPatch()
    mp.setenv("SDR_ROOT", str(tmp_path_factory.mktemp("smoke_root")))
    cfg = load_profile("smoke", {"data.n_test": 6, "grpo.rewards": ["exact", "chamfer"], "grpo.seeds": 2,
                                 "grpo.workers": 1})
    yield cfg, load_split(cfg, "test")
    mp.undo()


def test_behaviour_reads_precision_and_recall_per_label_against_the_references(smoke, tmp_path):
    """SFT writing the references states each of their labels with precision and recall 1; a configuration
    writing a normal report for every study states no pathology (recall 0, precision undefined: NaN)."""
    from sdrlib.clinical import label_report
    from sdrlib.experiments.study.behaviour import (BEHAVIOUR_COLUMNS, behaviour_markdown, run_labels,
                                                    study_behaviour, study_reading)
    from sdrlib.reports import build_template

    _, test = smoke
    refs = [build_template(r.findings, r.impression) for r in test]
    refs1 = [build_template(test[0].findings, "Reworded impression.")] + refs[1:]
    normal = [build_template(f"The lungs are clear {i}. No pleural effusion or pneumothorax.", "No acute disease.")
              for i in range(len(test))]
    ev = _write(tmp_path / "ev", test, {("sft", 0): refs, ("sft", 1): refs1, ("chamfer", 0): normal,
                                        ("chamfer", 1): normal[::-1]})
    b = study_behaviour(ev, test)
    assert list(b.columns) == list(BEHAVIOUR_COLUMNS) and list(b.config.unique()) == ["SFT", "R_Cham"]
    stated = {o for r in test for o, v in label_report(r.findings).items() if v != 0}
    assert set(b.label) == stated and (b.n_ref_pos > 0).all()
    sft, cham = b[b.config == "SFT"], b[b.config == "R_Cham"]
    assert (sft.precision == 1).all() and (sft.recall == 1).all() and (sft.seeds == 2).all()
    pathology = cham[~cham.label.isin(["No Finding", "Support Devices"])]
    assert (pathology.recall == 0).all() and pathology.precision.isna().all()
    assert (cham.pathologies == 0).all() and (cham.normal_share == 1).all()
    # one labelling for both tables: the same values as labelling again
    labels = run_labels(study.table_runs(ev, test), 1)
    pd.testing.assert_frame_equal(study_reading(ev, test, labels=labels), study_reading(ev, test))
    pd.testing.assert_frame_equal(study_behaviour(ev, test, labels=labels), b)
    md = behaviour_markdown(b)
    assert "| SFT | 2 | " in md and "| label | reference positives | SFT precision / recall |" in md
    assert "1.00 / 1.00" in md and "- / 0.00" in md


# --- runs of a second SFT start: run_study with its training and sampling replaced (as tests/experiments/
# test_study_draws.py's fake_runs)

@pytest.fixture
def fake_runs(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from sdrlib.config import load_profile

    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "root"))
    cfg = load_profile("smoke", {"data.n_test": 2, "grpo.rewards": ["chamfer"], "grpo.seeds": 2, "grpo.workers": 1})
    calls = {"sft": [], "train": []}

    def sft(cfg, train, seed=None, **k):
        folder = tmp_path / f"sft{seed}"
        folder.mkdir(exist_ok=True)
        (folder / "w").write_text(f"sft seed {seed}")
        calls["sft"].append(seed)
        return SimpleNamespace(final=folder, reused=True, seconds=0.0)

    def train(cfg, config, seed, train_records, test_records, sft_policy, embedder=None, progress=False):
        folder = study.policy_dir(cfg, config, seed) if config != "sft" else sft_policy
        folder.mkdir(parents=True, exist_ok=True)
        if config != "sft":
            (folder / "w").write_text(f"{config} {seed} from {sft_policy}")
        calls["train"].append((cfg.name, config, seed))
        return {"config": config, "seed": seed, "policy": study.training.policy_digest(folder),
                "study_ids": [r.study_id for r in test_records],
                "generations": [f"{(folder / 'w').read_text()} {seed} {r.study_id}" for r in test_records]}

    monkeypatch.setattr(study.training, "sft", sft)
    monkeypatch.setattr(study, "run_one", train)
    monkeypatch.setattr(study, "evidence_key", lambda cfg, c, s, tr, te, base, draw=0, sft_seed=None:
                        {"c": c, "s": s, "init": str(base), "sft_seed": sft_seed})
    return cfg, tmp_path / "ev", calls


def test_a_second_sft_start_writes_its_own_files_and_never_touches_the_studys(fake_runs):
    from sdrlib.experiments.study.evidence import load_evidence, sft_starts

    cfg, ev, calls = fake_runs
    first = study.run_study(cfg, ev, log=lambda s: None)
    assert [p.name for p in first] == ["sft_s0.json.gz", "chamfer_s0.json.gz", "sft_s1.json.gz", "chamfer_s1.json.gz"]
    before = {p.name: p.read_bytes() for p in (ev / "runs").iterdir()}
    calls["train"].clear()
    second = study.run_study(cfg, ev, seeds=[0], sft_seed=1, log=lambda s: None)
    assert [p.name for p in second] == ["sft_s0_sft1.json.gz", "chamfer_s0_sft1.json.gz"]
    assert calls["sft"] == [None, 1]  # the profile's SFT seed, then seed 1
    # its GRPO runs train in folders of their own: the study's seed-0 policy stays where it was
    assert calls["train"] == [("smoke_sft1", "sft", 0), ("smoke_sft1", "chamfer", 0)]
    assert {p.name: p.read_bytes() for p in (ev / "runs").iterdir() if "_sft" not in p.name} == before
    assert sft_starts(ev) == [1] and sorted(load_evidence(ev)) == [("chamfer", 0), ("chamfer", 1), ("sft", 0),
                                                                    ("sft", 1)]
    other = load_evidence(ev, 1)
    assert sorted(other) == [("chamfer", 0), ("sft", 0)] and other[("chamfer", 0)]["sft_seed"] == 1
    assert other[("chamfer", 0)]["key"]["init"].endswith("sft1")
    assert other[("chamfer", 0)]["policy"] != load_evidence(ev)[("chamfer", 0)]["policy"]
    assert study.run_study(cfg, ev, seeds=[0], sft_seed=1, log=lambda s: None) == []  # done: nothing again
    # the profile's own seed is the study's own start
    assert study.run_study(cfg, ev, sft_seed=cfg.seed, log=lambda s: None) == []
    st = study.study_status(cfg, ev, [0], sft_seed=1)
    assert st.done.all() and len(st) == 2


def test_a_second_starts_file_named_otherwise_than_its_content_is_named(tmp_path):
    from sdrlib.experiments.study.evidence import evidence_path, load_evidence

    assert evidence_path("e", "chamfer", 3, sft_seed=1).name == "chamfer_s3_sft1.json.gz"
    assert evidence_path("e", "chamfer", 3, 2, 1).name == "chamfer_s3_sft1_d2.json.gz"
    (tmp_path / "runs").mkdir()
    body = {"config": "chamfer", "seed": 0, "sft_seed": 1, "study_ids": ["a"], "generations": ["x"]}
    (tmp_path / "runs" / "chamfer_s0.json.gz").write_bytes(gzip.compress(json.dumps(body).encode()))
    with pytest.raises(StudyError, match="chamfer seed 0 from SFT seed 1, whose file is chamfer_s0_sft1.json.gz"):
        load_evidence(tmp_path)
    body["sft_seed"] = -1
    (tmp_path / "runs" / "chamfer_s0.json.gz").write_bytes(gzip.compress(json.dumps(body).encode()))
    with pytest.raises(StudyError, match="sft_seed -1: a seed"):
        load_evidence(tmp_path)


# --- the command line's new options: one line, exit 2, before any work

@pytest.fixture
def no_work(monkeypatch):
    from sdrlib import training
    from sdrlib.experiments.study import pilot as study_pilot

    def work(*a, **k):
        raise AssertionError("work started")

    for module, name in ((training, "sft"), (training, "grpo"), (study, "score_all"), (study_pilot, "pilot_table")):
        monkeypatch.setattr(module, name, work)


@pytest.mark.parametrize("argv, msg", [
    (["table", "--resample-seeds", "1"], "--resample-seeds [1]: give at least two seeds"),
    (["table", "--resample-seeds", "1", "1"], "--resample-seeds [1, 1]: repeats [1]"),
    (["table", "--resample-seeds", "1", "x"], "'x': a seed is an integer in [0, 2**32 - 1]"),
    (["table", "--resample-seeds", "0", "4294967296"], "a seed is an integer in [0, 2**32 - 1]"),
    (["table", "--stability-out", "{tmp}/s.csv"], "--stability-out: only with --resample-seeds"),
    (["table", "--resample-seeds", "0", "1", "--stability-out", "{ev}/runs/s.csv"], "whose run files the table reads"),
    (["table", "--resample-seeds", "0", "1", "--stability-out", "{tmp}"], "--stability-out {tmp}: a folder"),
    (["table", "--behaviour-out", "{tmp}/nope/b.csv"], "--behaviour-out {tmp}/nope/b.csv: the folder"),
    (["table", "--behaviour-out", "{tmp}/t.csv", "--out", "{tmp}/t.csv"], "the same file as --out"),
    (["table", "--behaviour-out", "{data}"], "--behaviour-out {data}: an existing file this command did not write"),
    (["run", "--sft-seed", "-1"], "'-1': a seed is an integer in [0, 2**32 - 1]"),
    (["run", "--sft-seed", "1.5"], "'1.5': a seed is an integer"),
    (["status", "--sft-seed", "abc"], "'abc': a seed is an integer"),
    (["table", "--sft-seed", "1"], "unrecognized arguments: --sft-seed 1"),
])
def test_new_options_refuse_bad_values_in_one_line_before_any_work(argv, msg, tmp_path, capsys, no_work, smoke,
                                                                   monkeypatch):
    from sdrlib.experiments.study import cli

    _, test = smoke
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "root"))
    ev = _write(tmp_path / "ev", test, {("sft", 0): ["a"] * len(test), ("chamfer", 0): ["b"] * len(test)})
    (tmp_path / "data.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    fill = {"tmp": str(tmp_path), "ev": str(ev), "data": str(tmp_path / "data.csv")}
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(tmp_path / "root")}
    try:
        rc = cli.main([argv[0], "--profile", "smoke", "--evidence", str(ev), *[a.format(**fill) for a in argv[1:]]])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and msg.format(**fill) in err and len(err.strip().splitlines()) == 1, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*")
            if p.is_file() and not p.is_relative_to(tmp_path / "root")} == before


def test_the_table_command_writes_every_companion(smoke, tmp_path, monkeypatch, capsys):
    """``table --resample-seeds 0 1 --stability-out --behaviour-out --markdown`` on runs of the study's own start and
    of a second SFT start: the stability and behaviour CSVs begin as the command's own files do (so it may rewrite
    them), the Markdown holds the behaviour, the stability and the two starts' tables, and the second start's runs
    are no seeds of the comparisons."""
    from sdrlib.experiments.study import cli
    from sdrlib.reports import build_template

    _, test = smoke
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "root"))
    rng = np.random.default_rng(0)

    def gens(p_own):
        return [build_template(*((r.findings, r.impression) if rng.random() < p_own else
                                 (test[int(rng.integers(len(test)))].findings, "Other.")))
                for r in test]

    runs = {(c, s): gens(p) for c, p in (("sft", 0.5), ("exact", 0.6), ("chamfer", 0.8)) for s in (0, 1)}
    ev = _write(tmp_path / "ev", test, runs)
    for c in ("sft", "exact", "chamfer"):  # the second start's seed 0
        body = {"config": c, "seed": 0, "sft_seed": 1, "study_ids": [r.study_id for r in test],
                "generations": gens(0.3)}
        (ev / "runs" / f"{c}_s0_sft1.json.gz").write_bytes(gzip.compress(json.dumps(body).encode()))
    out = {k: tmp_path / f"{k}.{'md' if k == 'md' else 'csv'}" for k in ("table", "md", "stability", "behaviour")}
    rc = cli.main(["table", "--profile", "smoke", "--evidence", str(ev), "--set", "metrics.bertscore.enabled=false",
                   "--set", "data.n_test=6", "--out", str(out["table"]), "--markdown", str(out["md"]), "--resample-seeds", "0", "1",
                   "--stability-out", str(out["stability"]), "--behaviour-out", str(out["behaviour"])])
    assert rc == 0
    for flag, key in (("--out", "table"), ("--markdown", "md"), ("--stability-out", "stability"),
                      ("--behaviour-out", "behaviour")):
        assert out[key].read_text(encoding="utf-8").startswith(cli.OWN_START[("table", flag)]), flag
    t = pd.read_csv(out["table"])
    assert (t.n_seeds == 2).all()  # the second start's run is no third seed
    st = pd.read_csv(out["stability"])
    assert len(st) == len(t) and list(st.verdict_s0) == list(t.verdict)
    md = out["md"].read_text(encoding="utf-8")
    for part in ("**What each configuration writes**", "**The verdicts under other resampling seeds**",
                 "**Two SFT starts**", "| SFT | clinical_f1_macro14 | 1 | 1 |"):
        assert part in md, part
    capsys.readouterr()
