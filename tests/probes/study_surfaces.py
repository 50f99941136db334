"""Run: ``PYTHONPATH=. .venv/bin/python tests/probes/study_surfaces.py`` (not collected by pytest; every fix it found has
a test and a row in docs/bad_input.md). Probe pass over the GRPO study's machinery: its command line
(``sdrlib.experiments.study.cli``: its arguments, run in-process with every training / scoring call replaced by a
sentinel, so an argument that reaches work was accepted), the evidence files and the functions of
:mod:`sdrlib.experiments.study` and :mod:`sdrlib.experiments.study.pilot`, the tower pretraining
(:mod:`sdrlib.training.tower`, ``sft.tiny_tower_*``) and the ``study_se`` column (``seed_study_test``,
``family_verdicts``, ``size_study``). Each probe: clear (a named error), defined (a documented result), crash (an
unhelpful exception), silent (a wrong result without a word: for a script, a bad argument that reached work), hang.
Takes about a minute (it scores a few tiny evidence folders)."""
import contextlib
import dataclasses
import gzip
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from sdrlib.errors import SDRError  # noqa: E402

from _harness import Probes  # noqa: E402


class Work(Exception):
    """Raised where the probed call would start work (training, scoring)."""


P = Probes(seconds=120, work=Work)
probe = P.probe
tmp = Path(tempfile.mkdtemp(prefix="study_probe_"))
os.environ["SDR_ROOT"] = str(tmp / "root")

from sdrlib.config import load_profile  # noqa: E402
from sdrlib.data import load_split  # noqa: E402
from sdrlib.experiments.study import pilot as study_pilot, runs as study  # noqa: E402
from sdrlib.reports import build_template  # noqa: E402

CFG = load_profile("smoke", {"data.n_test": 6, "grpo.rewards": ["exact", "chamfer"], "grpo.seeds": 2,
                             "grpo.workers": 1, "metrics.bootstrap": 50})
TEST = load_split(CFG, "test")


def _gens(config, seed):
    rng = np.random.default_rng([len(config), seed])
    other = lambda: TEST[int(rng.integers(len(TEST)))]  # noqa: E731
    return [build_template(*((r.findings, r.impression) if rng.random() < 0.5 else
                             (lambda o: (o.findings, o.impression))(other()))) for r in TEST]


def _record(config, seed, **extra):
    return {"config": config, "seed": seed, "study_ids": [r.study_id for r in TEST],
            "generations": _gens(config, seed), **extra}


def evidence(name, runs):
    """An evidence folder: ``runs`` maps a file name (or ``(config, seed)``) to a record dict or raw bytes."""
    ev = tmp / name
    (ev / "runs").mkdir(parents=True, exist_ok=True)
    for key, body in runs.items():
        fname = key if isinstance(key, str) else f"{key[0]}_s{key[1]}.json.gz"
        if body is None:
            body = _record(*key)
        raw = body if isinstance(body, bytes) else gzip.compress(json.dumps(body).encode())
        (ev / "runs" / fname).write_bytes(raw)
    return ev


def table(ev, n_studies=None):
    return study.study_table(study.study_scores(CFG, ev, TEST), n_studies=n_studies or len(TEST), n_resamples=50)


# --- the study's command line (sdrlib.experiments.study.cli; scripts/study.py wraps it), in-process, every call
# that would train or score replaced by Work
from sdrlib.experiments.study import cli as script  # noqa: E402


def _work(*a, **k):
    raise Work


@contextlib.contextmanager
def no_work():
    saved = [(study_pilot, "pilot_table"), (study_pilot, "choice_table"), (study, "score_all"),
             (study.training, "sft"), (study.training, "grpo")]
    old = [getattr(m, n) for m, n in saved]
    for m, n in saved:
        setattr(m, n, _work)
    try:
        yield
    finally:
        for (m, n), v in zip(saved, old):
            setattr(m, n, v)


def run_script(*argv, must=()):
    """``main(argv)`` with work replaced: a refusal in one line on stderr naming every ``must`` is a clear error;
    rc 0 is returned; anything else (a traceback, a usage block, a line naming something else) is a crash."""
    err = io.StringIO()
    with no_work(), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = script.main(list(argv))
        except SystemExit as e:
            rc = e.code
    lines = [x for x in err.getvalue().splitlines() if x.strip()]
    text = err.getvalue()
    if rc == 2 and len(lines) == 1 and "Traceback" not in text and all(m in text for m in must):
        raise _Clear(lines[-1])
    if rc == 0:
        return rc
    raise RuntimeError(f"rc {rc}, {len(lines)} line(s): {text.strip()[-150:]}")


class _Clear(SDRError):
    pass


file_ = tmp / "a_file.txt"
file_.write_text("x")
ev_empty = tmp / "ev_empty"
ev_empty.mkdir()
ev_runs_file = tmp / "ev_runs_file"
ev_runs_file.mkdir()
(ev_runs_file / "runs").write_text("x")
S = ("--profile", "smoke")
probe("script: pilot --n-val abc", lambda: run_script("pilot", *S, "--n-val", "abc", must=("--n-val", "whole number")), "error")
probe("script: pilot --n-val 0", lambda: run_script("pilot", *S, "--n-val", "0", must=("--n-val",)), "error")
probe("script: pilot --n-val nan", lambda: run_script("pilot", *S, "--n-val", "nan", must=("--n-val",)), "error")
probe("script: pilot --buckets (none)", lambda: run_script("pilot", *S, "--buckets", must=("--buckets",)), "error")
probe("script: pilot --buckets 32 abc", lambda: run_script("pilot", *S, "--buckets", "32", "abc",
                                                           must=("--buckets", "whole number")), "error")
probe("script: pilot --seed 2**32", lambda: run_script("pilot", *S, "--n-val", "4", "--seed", str(2**32),
                                                       must=("--seed",)), "error")
probe("script: pilot --seed 1.5", lambda: run_script("pilot", *S, "--seed", "1.5", must=("--seed",)), "error")
probe("script: pilot --sft-policy a file", lambda: run_script("pilot", *S, "--n-val", "4", "--sft-policy", str(file_),
                                                              must=("--sft-policy",)), "error")
probe("script: run --seeds (none)", lambda: run_script("run", *S, "--seeds", must=("--seeds",)), "error")
probe("script: run --seeds 0 0", lambda: run_script("run", *S, "--evidence", str(tmp / "ev_new1"), "--seeds", "0",
                                                    "0", must=("--seeds",)), "error")
probe("script: run --seeds 2**32", lambda: run_script("run", *S, "--evidence", str(tmp / "ev_new2"), "--seeds",
                                                      str(2**32), must=("--seeds",)), "error")
probe("script: run --max-runs 0", lambda: run_script("run", *S, "--max-runs", "0", must=("--max-runs",)), "error")
probe("script: run --max-runs -3", lambda: run_script("run", *S, "--max-runs", "-3", must=("--max-runs",)), "error")
probe("script: run --configs (none)", lambda: run_script("run", *S, "--configs", must=("--configs",)), "error")
probe("script: run --configs 'sft,chamfer' (one string)", lambda: run_script("run", *S, "--configs", "sft,chamfer",
                                                                             must=("--configs",)), "error")
probe("script: run --evidence a file", lambda: run_script("run", *S, "--evidence", str(file_),
                                                          must=("evidence", "not a folder")), "error")
probe("script: run --evidence whose runs/ is a file", lambda: run_script("run", *S, "--evidence", str(ev_runs_file),
                                                                         must=("evidence", "not a folder")), "error")
probe("script: run --evidence ~nosuchuser/ev", lambda: run_script("run", *S, "--evidence", "~nosuchuser/ev",
                                                                  must=("~nosuchuser",)), "error")
probe("script: status --evidence a file", lambda: run_script("status", *S, "--evidence", str(file_),
                                                             must=("--evidence",)), "error")
probe("script: status --seeds 0 0", lambda: run_script("status", *S, "--evidence", str(ev_empty), "--seeds", "0", "0",
                                                       must=("--seeds",)), "error")
probe("script: status of an empty folder (every run pending)", lambda: run_script(
    "status", *S, "--evidence", str(ev_empty)), lambda rc: rc == 0)
probe("script: table of a folder with no runs", lambda: run_script("table", *S, "--evidence", str(ev_empty),
                                                                   must=("no run",)), "error")
ev_ok = evidence("ev_ok", {("sft", 0): None, ("sft", 1): None, ("chamfer", 0): None, ("chamfer", 1): None})
probe("script: table --out inside the evidence's runs/", lambda: run_script(
    "table", *S, "--evidence", str(ev_ok), "--out", str(ev_ok / "runs" / "t.csv"), must=("--out",)), "error")
probe("script: table --out a folder", lambda: run_script("table", *S, "--evidence", str(ev_ok), "--out", str(tmp),
                                                         must=("--out",)), "error")
probe("script: table --out in a missing folder", lambda: run_script(
    "table", *S, "--evidence", str(ev_ok), "--out", str(tmp / "nope" / "t.csv"), must=("--out",)), "error")
probe("script: table --out under a file", lambda: run_script(
    "table", *S, "--evidence", str(ev_ok), "--out", str(file_ / "t.csv"), must=("--out",)), "error")
probe("script: table --out ~nosuchuser/t.csv", lambda: run_script(
    "table", *S, "--evidence", str(ev_ok), "--out", "~nosuchuser/t.csv", must=("~nosuchuser",)), "error")
ev_bad = evidence("ev_bad", {("sft", 0): b"not gzip at all"})
probe("script: table over a corrupt evidence file", lambda: run_script(
    "table", *S, "--evidence", str(ev_bad), must=("sft_s0.json.gz",)), "error")
probe("script: choose --variants ''", lambda: run_script("choose", *S, "--variants", "", must=("--variants",)), "error")
probe("script: choose a variant the profile refuses", lambda: run_script(
    "choose", *S, "--variants", "a", "b:grpo.loss_type=nope", must=("loss_type",)), "error")
probe("script: choose --seeds (none)", lambda: run_script("choose", *S, "--variants", "a", "--seeds",
                                                          must=("--seeds",)), "error")
probe("script: choose --seeds 0 0", lambda: run_script("choose", *S, "--n-val", "4", "--variants", "a", "--seeds",
                                                       "0", "0", must=("--seeds",)), "error")
probe("script: --set grpo.seeds=abc", lambda: run_script("status", *S, "--set", "grpo.seeds=abc",
                                                         must=("grpo.seeds",)), "error")
probe("script: --set =3", lambda: run_script("status", *S, "--set", "=3", must=("--set",)), "error")
probe("script: --profile nosuch", lambda: run_script("status", "--profile", "nosuch", must=("nosuch",)), "error")

# --- evidence files (load_evidence, study_status, study_scores)
probe("evidence: not gzip", lambda: study.load_evidence(evidence("e1", {("sft", 0): b"plain bytes"})), "error")
probe("evidence: gzip of non-JSON", lambda: study.load_evidence(evidence("e2", {("sft", 0): gzip.compress(b"{oops")})),
      "error")
probe("evidence: truncated gzip", lambda: study.load_evidence(evidence(
    "e2b", {("sft", 0): gzip.compress(json.dumps(_record("sft", 0)).encode())[:60]})), "error")
probe("evidence: JSON list", lambda: study.load_evidence(evidence("e3", {("sft", 0): [1, 2]})), "error")
probe("evidence: JSON string", lambda: study.load_evidence(evidence("e3b", {("sft", 0): "config generations"})),
      "error")
probe("evidence: no generations", lambda: study.load_evidence(evidence(
    "e4", {("sft", 0): {k: v for k, v in _record("sft", 0).items() if k != "generations"}})), "error")
probe("evidence: no seed", lambda: study.load_evidence(evidence(
    "e5", {("sft", 0): {k: v for k, v in _record("sft", 0).items() if k != "seed"}})), "error")
probe("evidence: seed 'abc'", lambda: study.load_evidence(evidence("e6", {"sft_s0.json.gz": {**_record("sft", 0),
                                                                                            "seed": "abc"}})), "error")
probe("evidence: generations shorter than study ids", lambda: study.load_evidence(evidence(
    "e7", {("sft", 0): {**_record("sft", 0), "generations": _gens("sft", 0)[:3]}})), "error")
probe("evidence: a generation that is None", lambda: study.load_evidence(evidence(
    "e7b", {("sft", 0): {**_record("sft", 0), "generations": [None] * len(TEST)}})), "error")
probe("evidence: study ids of another split", lambda: study.study_scores(CFG, evidence(
    "e8", {("sft", 0): {**_record("sft", 0), "study_ids": [f"syn-val-{i:05d}" for i in range(len(TEST))]}}), TEST),
    "error")
probe("evidence: a file name that does not parse", lambda: study.load_evidence(evidence(
    "e9", {"chamfer.json.gz": _record("chamfer", 0)})), "error")
probe("evidence: a name that is not its content (chamfer_s1 holds seed 0)", lambda: study.load_evidence(evidence(
    "e10", {("chamfer", 0): None, "chamfer_s1.json.gz": _record("chamfer", 0)})), "error")
probe("evidence: a copy under another name (chamfer_s0 (copy).json.gz)", lambda: study.load_evidence(evidence(
    "e10b", {("chamfer", 0): None, "chamfer_s0 (copy).json.gz": _record("chamfer", 0)})), "error")
probe("evidence: a folder without runs/ (nothing on disk)", lambda: study.load_evidence(ev_empty),
      lambda d: d == {})
probe("evidence: status of a missing folder (every run pending)", lambda: study.study_status(CFG, tmp / "missing"),
      lambda t: len(t) == 6 and not t.done.any())
probe("evidence: another file in runs/ (notes.txt) is not a run", lambda: len(study.load_evidence(evidence(
    "e11", {("sft", 0): None, "notes.txt": b"hello"}))), lambda n: n == 1)

# --- the comparison table
probe("table: runs of SFT only", lambda: table(evidence("t1", {("sft", 0): None, ("sft", 1): None})), "error")
probe("table: runs of one GRPO config only", lambda: table(evidence("t2", {("chamfer", 0): None, ("chamfer", 1): None})),
      "error")
probe("table: configurations with no seed in common", lambda: table(evidence(
    "t3", {("sft", 0): None, ("chamfer", 1): None})), "error")
probe("table: one seed each (read as a single run)", lambda: table(evidence(
    "t4", {("sft", 0): None, ("chamfer", 0): None})), lambda t: len(t) > 0 and (t.n_seeds == 1).all())
probe("table: SFT's seed 1 a copy of seed 0", lambda: table(evidence(
    "t5", {("sft", 0): None, ("sft", 1): _record("sft", 1, generations=_gens("sft", 0)), ("chamfer", 0): None,
           ("chamfer", 1): None})), "error")
probe("table: a GRPO config's seed 1 a copy of seed 0", lambda: table(evidence(
    "t6", {("sft", 0): None, ("sft", 1): None, ("chamfer", 0): None,
           ("chamfer", 1): _record("chamfer", 1, generations=_gens("chamfer", 0))})), "error")


class FakeScores:
    """One run's scores: each study metric per study (``findings`` only), as ``score_reports`` returns them."""

    def __init__(self, labels, shift):
        from sdrlib.metrics.base import mean_result

        self.sample_ids, self.sections = [f"s{i}" for i in range(len(labels))], ("findings",)
        self.results = {"findings": [mean_result(m, "x", labels if m.startswith("clinical") else
                                                 rng.normal(0.5 + shift, 0.05, len(labels)))
                                     for m in (*study.PRIMARY, *study.SECONDARY)]}

    def result(self, section, name):
        return next(r for r in self.results[section] if r.name == name)


rng = np.random.default_rng(0)
same = rng.integers(0, 2, 30).astype(float)
probe("table: distinct SFT runs stating the same findings (label F1 equal per study)", lambda: study.study_table(
    {**{("sft", s): FakeScores(same, 0) for s in range(3)},
     **{("chamfer", s): FakeScores(rng.integers(0, 2, 30).astype(float), 0.02) for s in range(3)}},
    n_studies=30, n_resamples=50), lambda t: (t.n_seeds == 3).all())
probe("table: no runs at all", lambda: table(ev_empty), "error")
probe("table: n_studies not the scores' (5 for 6)", lambda: table(ev_ok, n_studies=5), "error")
probe("table: study_table of no scores", lambda: study.study_table({}, n_studies=6), "error")

# --- planning and running (training replaced by Work)
probe("runs: seeds [0, 0]", lambda: study.study_runs(CFG, [0, 0]), "error")
probe("runs: seeds [-1]", lambda: study.study_runs(CFG, [-1]), "error")
probe("runs: seeds '01' (one string)", lambda: study.study_runs(CFG, "01"), "error")
probe("runs: seeds [1.5]", lambda: study.study_runs(CFG, [1.5]), "error")
probe("runs: seeds [2**32]", lambda: study.study_runs(CFG, [2**32]), "error")
probe("runs: seeds [] (nothing planned)", lambda: study.study_runs(CFG, []), lambda r: r == [])
sft_folder = tmp / "sft_policy"
sft_folder.mkdir()
fake_sft = lambda *a, **k: SimpleNamespace(final=sft_folder, reused=True, seconds=0.0)  # noqa: E731


@contextlib.contextmanager
def fake_training():
    old = study.training.sft, study._job
    study.training.sft, study._job = fake_sft, _work
    try:
        yield
    finally:
        study.training.sft, study._job = old


def run_study(ev, **kw):
    with fake_training(), contextlib.redirect_stdout(io.StringIO()):
        return study.run_study(CFG, ev, log=lambda s: None, **kw)


probe("run_study: evidence is a file", lambda: run_study(file_), "error")
probe("run_study: evidence whose runs/ is a file", lambda: run_study(ev_runs_file), "error")
probe("run_study: configs 'chamfer' (one string)", lambda: run_study(tmp / "r1", configs="chamfer"), "error")
probe("run_study: configs ['nope']", lambda: run_study(tmp / "r2", configs=["nope"]), "error")
probe("run_study: max_runs -1", lambda: run_study(tmp / "r3", max_runs=-1), "error")
probe("run_study: max_runs 0", lambda: run_study(tmp / "r3b", max_runs=0), "error")
probe("run_study: a JSON-list evidence file is redone", lambda: run_study(evidence("r4", {("sft", 0): [1]}),
                                                                         seeds=[0], configs=["sft"]),
      lambda out: False)  # Work (the run redone) is the defined result

# --- the pilot and the setup choice (training replaced by Work)
@contextlib.contextmanager
def fake_pilot():
    from sdrlib import embedding

    old = study_pilot.training, study_pilot.audit_scorer, embedding.SentenceEmbedder.from_config
    study_pilot.training = SimpleNamespace(sft=_work, grpo=_work)
    study_pilot.audit_scorer = lambda *a, **k: None
    embedding.SentenceEmbedder.from_config = staticmethod(lambda cfg: object())
    try:
        yield
    finally:
        study_pilot.training, study_pilot.audit_scorer = old[:2]
        embedding.SentenceEmbedder.from_config = old[2]


def pilot(**kw):
    with fake_pilot():
        return study_pilot.pilot_table(CFG, "chamfer", **{"buckets": [1], "n_val": 4, "embedder": object(), **kw},
                                       log=lambda s: None)


def choose(variants, **kw):
    with fake_pilot():
        return study_pilot.choice_table(CFG, "chamfer", variants, **{"seeds": [0], "n_val": 4, **kw},
                                        log=lambda s: None)


probe("pilot: buckets []", lambda: pilot(buckets=[]), "error")
probe("pilot: buckets ['abc']", lambda: pilot(buckets=["abc"]), "error")
probe("pilot: buckets [1.5]", lambda: pilot(buckets=[1.5]), "error")
probe("pilot: buckets [nan]", lambda: pilot(buckets=[float("nan")]), "error")
probe("pilot: n_val 0", lambda: pilot(n_val=0), "error")
probe("pilot: n_val '5'", lambda: pilot(n_val="5"), "error")
probe("pilot: n_val beyond the validation studies", lambda: pilot(n_val=10**6), "error")
probe("pilot: seed -1", lambda: pilot(seed=-1), "error")
probe("pilot: seed 2**32", lambda: pilot(seed=2**32), "error")
probe("choose: no variant", lambda: choose({}), "error")
probe("choose: no seed", lambda: choose({"a": {}}, seeds=[]), "error")
probe("choose: seeds [0, 0]", lambda: choose({"a": {}}, seeds=[0, 0]), "error")
probe("choose: a later variant the profile refuses (before any training)", lambda: choose(
    {"a": {}, "b": {"grpo.loss_type": "nope"}}), "error")
probe("choose: a variant's overrides as one string", lambda: choose({"a": "grpo.loss_type=grpo"}), "error")

# --- tower pretraining
from sdrlib import models  # noqa: E402
from sdrlib.training.policy import tiny_spec  # noqa: E402
from sdrlib.training.tower import pretrain_tower, tower_features, tower_probe  # noqa: E402
from training_helpers import TINY_POLICY, make_records  # noqa: E402

LAB = {0: {"No Finding": 1}, 1: {"Lung Opacity": 1}, 2: {"Cardiomegaly": 1}}
RECS = [dataclasses.replace(r, labels=LAB[r.labels["k"]]) for r in make_records(12, tmp / "img")]
TCFG = load_profile("smoke", TINY_POLICY)


def policy():
    texts = [f"<think> {r.findings} </think> <answer> {r.impression} </answer>" for r in RECS]
    return models.build_tiny_policy(texts, tiny_spec(TCFG), vocab_size=TCFG.sft.vocab_size, seed=0)


def pre(recs, **kw):
    m, p = policy()
    return pretrain_tower(m, p, recs, **{"epochs": 1, "learning_rate": 1e-3, "batch_size": 4, **kw})


def _wide(r, i):
    from PIL import Image

    f = tmp / f"wide{i}.png"
    Image.new("L", (64, 160), 128).save(f)
    return dataclasses.replace(r, image_paths=[str(f)])


probe("tower: no records", lambda: pre([]), "error")
probe("tower: records with no images", lambda: pre([dataclasses.replace(r, image_paths=[]) for r in RECS]), "error")
probe("tower: images of different sizes", lambda: pre([_wide(r, i) if i % 2 else r for i, r in enumerate(RECS)]),
      "error")
probe("tower: labels with unknown keys only", lambda: pre([dataclasses.replace(r, labels={"Effusion": 1})
                                                           for r in RECS]), "error")
probe("tower: every label negative", lambda: pre([dataclasses.replace(r, labels={"Cardiomegaly": 0}) for r in RECS]),
      "error")
probe("tower: label values that are text ('1')", lambda: pre([dataclasses.replace(r, labels={"Cardiomegaly": "1"})
                                                              for r in RECS]), "error")
probe("tower: epochs -1", lambda: pre(RECS, epochs=-1), "error")
probe("tower: epochs 1.5", lambda: pre(RECS, epochs=1.5), "error")
probe("tower: learning rate NaN", lambda: pre(RECS, learning_rate=float("nan")), "error")
probe("tower: learning rate 0", lambda: pre(RECS, learning_rate=0.0), "error")
probe("tower: features of no records", lambda: tower_features(*policy(), []), "error")
probe("tower: probe fitted on 4 records (every AUROC NaN)", lambda: tower_probe(*policy(), RECS[:4], RECS[4:]),
      lambda t: t.auroc.isna().all())


def prof(key, value):
    return getattr(load_profile("smoke", {key: value}).sft, key.split(".")[1])


probe("profile: tiny_tower_epochs -1", lambda: prof("sft.tiny_tower_epochs", -1), "error")
probe("profile: tiny_tower_epochs 1.5", lambda: prof("sft.tiny_tower_epochs", 1.5), "error")
probe("profile: tiny_tower_epochs '3'", lambda: prof("sft.tiny_tower_epochs", "3"), "error")
probe("profile: tiny_tower_epochs 10**9 (trains as asked)", lambda: prof("sft.tiny_tower_epochs", 10**9),
      lambda v: v == 10**9)
probe("profile: tiny_tower_lr 0", lambda: prof("sft.tiny_tower_lr", 0), "error")
probe("profile: tiny_tower_lr NaN", lambda: prof("sft.tiny_tower_lr", float("nan")), "error")
probe("profile: tiny_tower_lr 'abc'", lambda: prof("sft.tiny_tower_lr", "abc"), "error")

# --- study_se: seed_study_test, family_verdicts, size_study
from sdrlib.experiments.study.size import size_study  # noqa: E402
from sdrlib.metrics import verdict as V  # noqa: E402
from sdrlib.metrics.base import mean_result  # noqa: E402
from sdrlib.metrics.significance import seed_study_test  # noqa: E402

rng = np.random.default_rng(0)
probe("seed_study_test: one test study (no study variance)", lambda: seed_study_test(
    [mean_result("m", "x", np.array([0.5 + u])) for u in (0.0, 0.1, 0.2)],
    [mean_result("m", "x", np.array([0.4 + u])) for u in (0.05, 0.0, 0.1)], n_resamples=50)["study_se"],
    lambda v: np.isnan(v))
SAME = [mean_result("m", "x", rng.normal(0.5, 0.1, 30) + u) for u in (0.0, 0.01)]
probe("seed_study_test: A and B the same runs (study_se 0)", lambda: seed_study_test(SAME, SAME, n_resamples=50)[
    "study_se"], lambda v: v == 0)
ROW = {"diff": [0.01], "p_value": [0.2], "ci_low": [-0.01], "ci_high": [0.03], "seed_sd": [0.005],
       "n_same_sign": [3], "n_seeds": [3]}
base_mde = V.family_verdicts(pd.DataFrame(ROW), n_studies=100).mde[0]
fv = lambda se: V.family_verdicts(pd.DataFrame({**ROW, "study_se": [se]}), n_studies=100)  # noqa: E731
probe("family_verdicts: study_se NaN (the interval stands in)", lambda: fv(np.nan).mde[0], lambda m: m == base_mde)
probe("family_verdicts: study_se None (the interval stands in)", lambda: fv(None).mde[0], lambda m: m == base_mde)
probe("family_verdicts: study_se inf (not finite: the interval stands in)", lambda: fv(np.inf).mde[0],
      lambda m: m == base_mde)
probe("family_verdicts: study_se negative", lambda: fv(-0.01), "error")
probe("family_verdicts: study_se 'abc'", lambda: fv("abc"), "error")
probe("family_verdicts: study_se '0.004' (numeric text, as a CSV may hold)", lambda: fv("0.004").mde[0],
      lambda m: np.isfinite(m) and m < base_mde)
SROW = {"A": ["R_Cham"], "B": ["SFT"], "metric": ["bertscore_f1"], "ci_low": [-0.012], "ci_high": [0.017],
        "seed_sd": [0.004]}
base_st = size_study(pd.DataFrame(SROW), n_studies=100).studies_for_target[0]
ss = lambda se: size_study(pd.DataFrame({**SROW, "study_se": [se]}), n_studies=100)  # noqa: E731
probe("size_study: study_se NaN (the interval stands in)", lambda: ss(np.nan).studies_for_target[0],
      lambda v: v == base_st)
probe("size_study: study_se inf (the interval stands in)", lambda: ss(np.inf).studies_for_target[0],
      lambda v: v == base_st)
probe("size_study: study_se negative", lambda: ss(-0.01), "error")
probe("size_study: study_se 'abc'", lambda: ss("abc"), "error")
probe("size_study: study_se None (the interval stands in)", lambda: ss(None).studies_for_target[0],
      lambda v: v == base_st)

P.report()
