"""The paper's metrics or a loud refusal: with ``metrics.allow_substitutes: false`` (the paper profile) a missing
CheXbert scorer or roberta-large stops the run before any notebook (the runner's preflight) and before training
(``sdrlib.training`` preflight), naming the commands that install them; ``run_all.sh --allow-substitutes`` goes on;
every result table records which clinical backend and BERTScore backbone its profile's settings gave, marked where
they substitute for the paper's. The machine's availability is set per test (present / missing) through the two
probes, so the tests do not depend on what this machine has cached."""

from __future__ import annotations

import importlib
import json
import types
from pathlib import Path

import pandas as pd

import pytest

ROOT = Path(__file__).resolve().parents[2]

from runner_helpers import install_fakes
from sdrlib.config import load_profile
from sdrlib.metrics import backends
from sdrlib.metrics.backends import (CHEXBERT_INSTALL, ROBERTA_LARGE_INSTALL, Backbone, BackendUnavailable,
                                     metric_backends, missing_paper_metrics)
from sdrlib.results import save_table

ROBERTA = Backbone("roberta-large", "/hf/roberta-large", 17, "roberta-large.tsv")


@pytest.fixture()
def missing(monkeypatch):
    monkeypatch.setattr(backends, "chexbert_available", lambda: False)
    monkeypatch.setattr(backends, "_roberta_large", lambda: None)


@pytest.fixture()
def present(monkeypatch):
    monkeypatch.setattr(backends, "chexbert_available", lambda: True)
    monkeypatch.setattr(backends, "_roberta_large", lambda: ROBERTA)
    monkeypatch.setattr(backends, "package_version", lambda name: "0.0.2")


def test_the_paper_profile_refuses_substitutes_and_the_default_keeps_them():
    assert load_profile("paper").metrics.allow_substitutes is False
    assert load_profile("cpu").metrics.allow_substitutes is True
    assert load_profile("rehearsal").metrics.allow_substitutes is True  # a CPU rehearsal of the paper's paths


def test_missing_paper_metrics_names_each_missing_backend_with_its_install_command(missing):
    found = missing_paper_metrics("auto", "auto")
    assert len(found) == 2
    assert "CheXbert" in found[0] and CHEXBERT_INSTALL in found[0]
    assert "roberta-large" in found[1] and ROBERTA_LARGE_INSTALL in found[1]
    assert "hf download StanfordAIMI/RRG_scorers chexbert.pth --local-dir ~/.cache/chexbert" in CHEXBERT_INSTALL
    # backends the profile names explicitly are its own choice: nothing to refuse
    assert missing_paper_metrics("labeler", "all-MiniLM-L6-v2") == []


def test_nothing_is_missing_when_both_are_present(present):
    assert missing_paper_metrics("auto", "auto") == []
    assert metric_backends("auto", "auto") == {"clinical_backend": "chexbert (f1chexbert==0.0.2)",
                                               "bertscore_backbone": "roberta-large/L17+rescaled"}


def test_metric_backends_mark_every_substitute(missing):
    got = metric_backends("auto", "all-MiniLM-L6-v2")
    assert got == {"clinical_backend": "offline-labeler (substitute for CheXbert)",
                   "bertscore_backbone": "all-MiniLM-L6-v2/L6 (substitute for roberta-large)"}
    assert metric_backends("labeler", "auto")["clinical_backend"] == "offline-labeler (substitute for CheXbert)"
    assert metric_backends("chexbert", "auto")["clinical_backend"].startswith("chexbert (not installed")


def test_every_table_records_the_backends_that_produced_its_columns(missing, monkeypatch, tmp_path):
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    cfg = load_profile("cpu")
    cfg.results_dir.mkdir(parents=True)
    csv_path, md_path = save_table(pd.DataFrame({"metric": ["BERTScore F1"], "value": [0.5]}), "t", cfg)
    header = md_path.read_text(encoding="utf-8").splitlines()[0]
    assert 'clinical_backend="offline-labeler (substitute for CheXbert)"' in header
    assert 'bertscore_backbone="all-MiniLM-L6-v2/L6 (substitute for roberta-large)"' in header
    meta = json.loads((cfg.results_dir / "t.meta.json").read_text(encoding="utf-8"))
    assert meta["clinical_backend"] == "offline-labeler (substitute for CheXbert)"
    assert meta["bertscore_backbone"] == "all-MiniLM-L6-v2/L6 (substitute for roberta-large)"
    assert csv_path.read_text(encoding="utf-8") == "metric,value\nBERTScore F1,0.5\n"  # the numbers as before


def test_the_runner_stops_before_any_notebook_and_allow_substitutes_goes_on(missing, monkeypatch, capsys, tmp_path,
                                                                            machine_probed_once):
    calls: list = []
    pm = types.ModuleType("papermill")
    pm.PapermillExecutionError = type("PapermillExecutionError", (Exception,), {})
    pm.execute_notebook = lambda src, dest, **kw: calls.append(kw)
    install_fakes(monkeypatch, pm)
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "root"))
    from sdrlib import runner

    argv = ["--profile", "rehearsal", "--set", "metrics.allow_substitutes=false", "--only", "00",
            "--out", str(tmp_path / "o")]
    rc = runner.main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and calls == [] and err.count("\n") == 1
    assert CHEXBERT_INSTALL in err and ROBERTA_LARGE_INSTALL in err and "--allow-substitutes" in err
    assert runner.main([*argv, "--allow-substitutes"]) == 2 and calls == []  # the two contradict each other
    assert "contradict" in capsys.readouterr().err
    strict = tmp_path / "strict.yaml"  # a profile that asks for the paper's metrics, as the paper profile does
    strict.write_text(f"extends: {ROOT / 'configs' / 'rehearsal.yaml'}\nname: rehearsal\n"
                      "metrics:\n  allow_substitutes: false\n", encoding="utf-8")
    rc = runner.main(["--profile", str(strict), "--only", "00", "--out", str(tmp_path / "o"), "--allow-substitutes"])
    assert rc == 0, capsys.readouterr().err
    assert calls[0]["parameters"]["overrides"]["metrics.allow_substitutes"] is True


def test_training_stops_before_any_work_without_the_papers_metrics(missing):
    preflight = importlib.import_module("sdrlib.training.policy").preflight
    with pytest.raises(BackendUnavailable, match="needs the paper's metrics before training") as e:
        preflight(load_profile("rehearsal", {"metrics.allow_substitutes": False}))  # tiny policy: no GPU asked
    assert CHEXBERT_INSTALL in str(e.value)
    preflight(load_profile("rehearsal"))  # allowed: goes on
