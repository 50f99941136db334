"""The runner (``sdrlib.runner``, ``run_all.sh``) refuses bad usage with exit 2 and one stderr line.

A bad ``--from`` / ``--only`` / ``--out`` / ``--cell-timeout``, an invalid profile (its :class:`ConfigError`), a
missing kernel and what the profile needs that the machine lacks (:func:`sdrlib.runner.preflight`) are all answered
before any notebook starts. Papermill and the kernel registry are stubbed: nothing runs for real.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from runner_helpers import install_fakes
from sdrlib.config import load_profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def no_notebooks(monkeypatch, tmp_path):
    """Stub papermill and the kernel registry; record what would have run (nothing runs for real)."""
    calls: list = []
    pm = types.ModuleType("papermill")
    pm.PapermillExecutionError = type("PapermillExecutionError", (Exception,), {})
    pm.execute_notebook = lambda src, dest, **kw: calls.append((src, dest, kw))
    install_fakes(monkeypatch, pm)
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "root"))
    return calls


@pytest.fixture()
def paper_metrics_present(monkeypatch):
    """The paper's metric backends (CheXbert, roberta-large) present, so a paper-profile test sees only what it
    checks (their absence: tests/metrics/test_paper_metrics.py)."""
    from sdrlib.metrics import backends

    monkeypatch.setattr(backends, "missing_paper_metrics", lambda *a, **k: [])


def _main(capsys, *argv):
    from sdrlib import runner

    rc = runner.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("argv, fragment", [
    (["--from", "99"], "--from 99: no notebook numbered '99'; available: 00, 01, 02"),
    (["--from", "abc"], "available: 00, 01"),
    (["--only", "01", "--only", "9"], "--only 9"),
    (["--only", "-1"], "--only -1"),
    (["--from", "01", "--only", "02"], "either --from or --only"),
    (["--cell-timeout", "0"], "--cell-timeout: must be >= 1"),
    (["--cell-timeout", "soon"], "--cell-timeout"),
    (["--no-such-flag"], "unrecognized arguments"),
    (["--profile", "nope"], "invalid profile: profile 'nope' not found"),
])
def test_runner_usage_errors_exit_2_with_one_line(no_notebooks, capsys, tmp_path, argv, fragment):
    rc, out, err = _main(capsys, *argv, "--out", str(tmp_path / "o"))
    assert rc == 2 and err.count("\n") == 1 and err.startswith("run_all: ") and fragment in err, err
    assert "Traceback" not in err and no_notebooks == []


def test_runner_refuses_an_out_that_is_no_writable_folder(no_notebooks, capsys, tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    for out, fragment in ((f, "exists and is not a folder"), (f / "sub", "not a writable folder"),
                          (Path("/proc/sdr-run-test"), "not a writable folder")):
        rc, _, err = _main(capsys, "--profile", "smoke", "--only", "01", "--out", str(out))
        assert rc == 2 and err.count("\n") == 1 and fragment in err and str(out) in err, err
    assert no_notebooks == [] and f.read_text() == "x"


@pytest.mark.parametrize("body, fragment", [
    ("data:\n  n_train: -5\n", "data.n_train = -5"),
    ("name: ../../escape\n", "name = '../../escape'"),
    ("distances:\n  names: [wasserstein]\n", "distances.names[0] = 'wasserstein'"),
    ("grpo:\n  lambda_sem: .nan\n", "grpo.lambda_sem = nan"),
    ("data:\n  n_train: 8\n  bad indent: [\n", "prof.yaml, line 5"),  # unclosed [ found at the end
])
def test_runner_refuses_an_invalid_profile_before_any_notebook(no_notebooks, capsys, tmp_path, body, fragment):
    p = tmp_path / "prof.yaml"
    p.write_text("extends: smoke\n" + body)
    out = tmp_path / "out"
    rc, _, err = _main(capsys, "--profile", str(p), "--out", str(out))
    assert rc == 2 and err.count("\n") == 1 and "invalid profile" in err and fragment in err, err
    assert no_notebooks == [] and not out.exists() and not (tmp_path / "escape").exists()


def test_runner_relative_out_and_profile_follow_the_callers_folder(no_notebooks, capsys, tmp_path, monkeypatch):
    (tmp_path / "prof.yaml").write_text("extends: smoke\nname: mine\n")
    monkeypatch.chdir(tmp_path)
    rc, out, err = _main(capsys, "--profile", "prof.yaml", "--out", "o", "--only", "01", "--only", "2")
    assert rc == 0, err
    assert [Path(src).name[:2] for src, _, _ in no_notebooks] == ["01", "02"]
    for _, dest, kw in no_notebooks:
        assert Path(dest).parent == tmp_path / "o" / "runs" / "mine" / "notebooks"
        assert kw["parameters"] == {"profile": str(tmp_path / "prof.yaml")}  # absolute: the kernel runs in notebooks/
    assert os.environ["SDR_ROOT"] == str(tmp_path / "o")


def test_runner_expands_tilde_in_out_and_profile(no_notebooks, capsys, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "prof.yaml").write_text("extends: smoke\nname: mine\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    rc, out, err = _main(capsys, "--profile", "~/prof.yaml", "--out", "~/o", "--only", "01")
    assert rc == 0, err
    assert [kw["parameters"] for _, _, kw in no_notebooks] == [{"profile": str(home / "prof.yaml")}]
    assert Path(no_notebooks[0][1]).parent == home / "o" / "runs" / "mine" / "notebooks"
    assert not (tmp_path / "~").exists()
    rc, _, err = _main(capsys, "--profile", "smoke", "--only", "01", "--out", "~no-such-user-sdr/o")
    assert rc == 2 and "cannot expand '~no-such-user-sdr'" in err and not (tmp_path / "~no-such-user-sdr").exists()


def test_run_all_sh_from_99_exits_2_before_papermill(tmp_path):
    """The shell entry point: one stderr line, exit 2, papermill never imported, nothing written."""
    fake = tmp_path / "fake"
    fake.mkdir()
    marker = tmp_path / "papermill-imported"
    (fake / "papermill.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    env = {**os.environ, "PYTHONPATH": str(fake), "SDR_ROOT": str(tmp_path / "root")}
    proc = subprocess.run([str(ROOT / "run_all.sh"), "--from", "99", "--profile", "smoke"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "available: 00, 01" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == "" and not marker.exists() and not (tmp_path / "root").exists()
    # the fake shadows the real papermill: with a valid selection it is imported (so the check above can fail)
    proc = subprocess.run([str(ROOT / "run_all.sh"), "--only", "00", "--profile", "smoke", "--kernel",
                           "no-such-kernel-here"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and marker.exists(), proc.stderr


def test_runner_stops_a_profile_whose_gpu_weights_or_dataset_are_missing(no_notebooks, capsys, tmp_path, monkeypatch,
                                                                          paper_metrics_present):
    """The paper profile on a machine without a GPU, Qwen3-VL weights or a MIMIC-CXR folder: exit 2 before any
    notebook, one line naming each missing thing and how to provide it; nothing written under the output root."""
    from sdrlib import models, runner

    monkeypatch.setattr(runner, "_cuda_available", lambda: False)
    monkeypatch.setattr(models, "local_weights", lambda name: None)
    out = tmp_path / "out"
    rc, _, err = _main(capsys, "--profile", "paper", "--out", str(out))
    assert rc == 2 and err.count("\n") == 1 and "profile 'paper' cannot run here" in err, err
    assert "no CUDA GPU (sft.policy=qwen3-vl-2b need one)" in err and "--profile rehearsal" in err
    assert "no weights for sft.policy=qwen3-vl-2b" in err and "hf download unsloth/Qwen3-VL-2B-Instruct" in err
    assert f"no MIMIC-CXR folder at {out / 'data' / 'mimic-cxr'} (data.root)" in err
    assert "python -m sdrlib.data.standin mimic" in err and "Traceback" not in err
    assert no_notebooks == [] and [p.name for p in out.iterdir()] == []
    # each one alone: a GPU and weights present, only the dataset missing; an explicit cuda device without a GPU
    monkeypatch.setattr(runner, "_cuda_available", lambda: True)
    monkeypatch.setattr(runner, "_module_available", lambda module: True)  # unsloth
    monkeypatch.setattr(models, "local_weights", lambda name: "/weights")
    rc, _, err = _main(capsys, "--profile", "paper", "--out", str(out))
    assert rc == 2 and "GPU" not in err and "weights" not in err and "no MIMIC-CXR folder" in err, err
    (out / "data" / "mimic-cxr").mkdir(parents=True)
    rc, _, err = _main(capsys, "--profile", "paper", "--out", str(out), "--only", "00")
    assert rc == 0 and len(no_notebooks) == 1, err
    monkeypatch.setattr(runner, "_cuda_available", lambda: False)
    p = tmp_path / "prof.yaml"
    p.write_text("extends: smoke\ndistances:\n  device: cuda\n")
    rc, _, err = _main(capsys, "--profile", str(p), "--out", str(out))
    assert rc == 2 and "no CUDA GPU (distances.device=cuda need one)" in err, err


def test_preflight_names_each_missing_package_the_profile_asks_for(monkeypatch, tmp_path, paper_metrics_present):
    """Unsloth for a paper policy, vLLM for grpo.use_vllm: one phrase each with its install command; the paper
    profile leaves vLLM off (no release installs beside the gpu pins)."""
    from sdrlib import models, runner

    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    monkeypatch.setattr(runner, "_cuda_available", lambda: True)
    monkeypatch.setattr(models, "local_weights", lambda name: "/weights")
    missing = {"unsloth", "vllm"}
    monkeypatch.setattr(runner, "_module_available", lambda module: module not in missing)
    paper = load_profile("paper", {"data.standin_n": 8})
    assert paper.grpo.use_vllm is False
    assert runner.packages_needed(paper) == [("unsloth", "sft.policy=qwen3-vl-2b")]
    assert runner.preflight(paper) == [
        'unsloth is not installed (sft.policy=qwen3-vl-2b needs it): scripts/setup.sh --gpu (the gpu extra: unsloth 2026.10.9; docs/gpu.md)']
    got = runner.preflight(load_profile("paper", {"data.standin_n": 8, "grpo.use_vllm": True}))
    assert len(got) == 2 and got[1].startswith("vllm is not installed (grpo.use_vllm needs it): no vLLM release")
    assert "set grpo.use_vllm: false" in got[1]
    missing.clear()
    assert runner.preflight(load_profile("paper", {"data.standin_n": 8, "grpo.use_vllm": True})) == []


def test_preflight_refuses_a_trl_that_cannot_train_on_the_cpu(monkeypatch, tmp_path, paper_metrics_present):
    """trl 1.15's SFT / GRPO log-probabilities are Triton-only (None on a CPU torch): the tiny policy (CPU) needs
    trl >= 1.16, said in one line with the install command; a paper policy (GPU, Unsloth's trl 1.15) does not."""
    from sdrlib import models, runner

    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    monkeypatch.setattr(runner, "_cuda_available", lambda: True)
    monkeypatch.setattr(runner, "_module_available", lambda module: True)
    monkeypatch.setattr(models, "local_weights", lambda name: "/weights")
    monkeypatch.setattr(runner, "_version", lambda dist: "1.15.0")
    got = runner.preflight(load_profile("rehearsal"))
    assert len(got) == 1 and got[0].startswith("trl 1.15.0 cannot train the tiny policy on the CPU")
    assert 'pip install "trl==1.16.0"' in got[0]
    assert runner.preflight(load_profile("paper", {"data.standin_n": 8})) == []
    monkeypatch.setattr(runner, "_version", lambda dist: "1.16.0")
    assert runner.preflight(load_profile("rehearsal")) == []


def test_rehearsal_profile_needs_nothing_this_machine_lacks(monkeypatch, tmp_path):
    """The rehearsal writes its own MIMIC-CXR stand-in (data.standin_n), trains the tiny policy on CPU: no preflight
    complaint even with no GPU and no data folder."""
    from sdrlib import runner

    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    monkeypatch.setattr(runner, "_cuda_available", lambda: False)
    assert runner.preflight(load_profile("rehearsal")) == []
    assert runner.preflight(load_profile("rehearsal", {"data.standin_n": 0}))[0].startswith(
        f"no MIMIC-CXR folder at {tmp_path / 'data' / 'mimic-cxr-standin'}")


# --------------------------------------------------------------------------- argument checking
def test_select_pads_numbers_and_from_runs_to_the_end():
    from sdrlib import runner

    nbs = [("00", Path("00_a.ipynb")), ("01", Path("01_b.ipynb")), ("02", Path("02_c.ipynb"))]
    assert [nn for nn, _ in runner._select(nbs, "1", None)] == ["01", "02"]
    assert [nn for nn, _ in runner._select(nbs, None, ["2", "00"])] == ["00", "02"]
    assert runner._select(nbs, None, None) == nbs
    with pytest.raises(runner.UsageError, match="available: 00, 01, 02"):
        runner._select(nbs, None, ["3"])
    with pytest.raises(runner.UsageError, match="available: none"):
        runner._select([], "0", None)


@pytest.mark.parametrize("text, ok", [("1", True), ("3600", True), ("0", False), ("-5", False), ("1.5", False),
                                      ("", False)])
def test_cell_timeout_is_a_whole_positive_number(text, ok):
    import argparse

    from sdrlib import runner

    if ok:
        assert runner._seconds(text) == int(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="whole number of seconds|must be >= 1"):
            runner._seconds(text)


def test_list_and_help_exit_0_without_running(no_notebooks, capsys):
    rc, out, err = _main(capsys, "--list")
    assert rc == 0 and err == "" and out.splitlines()[0].startswith("00 00_") and no_notebooks == []
    rc, out, _ = _main(capsys, "--help")
    assert rc == 0 and "--profile" in out and no_notebooks == []


def test_a_missing_or_moved_kernel_exits_2_before_any_notebook(no_notebooks, capsys, tmp_path, monkeypatch):
    ks = sys.modules["jupyter_client.kernelspec"]

    def missing(name):
        raise ks.NoSuchKernel(name)

    monkeypatch.setattr(ks, "KernelSpecManager", lambda: types.SimpleNamespace(get_kernel_spec=missing))
    rc, _, err = _main(capsys, "--profile", "smoke", "--only", "00", "--out", str(tmp_path / "o"), "--kernel", "k1")
    assert rc == 2 and "Jupyter kernel 'k1' is not registered; run scripts/setup.sh" in err and no_notebooks == []
    gone = str(tmp_path / "gone" / "python")
    monkeypatch.setattr(ks, "KernelSpecManager", lambda: types.SimpleNamespace(
        get_kernel_spec=lambda name: types.SimpleNamespace(argv=[gone])))
    rc, _, err = _main(capsys, "--profile", "smoke", "--only", "00", "--out", str(tmp_path / "o"))
    assert rc == 2 and f"points to {gone}, which does not exist" in err and err.count("\n") == 1
    assert no_notebooks == []


# --------------------------------------------------------------------------- --set KEY=VALUE


def test_set_overrides_reach_every_notebook_as_a_parameter(no_notebooks, capsys, tmp_path):
    rc, out, err = _main(capsys, "--profile", "smoke", "--only", "01", "--only", "04", "--out", str(tmp_path / "o"),
                         "--set", "grpo.max_steps=3", "--set", "sft.learning_rate=2.0e-4", "--set", "grpo.seeds=2")
    assert rc == 0, err
    want = {"grpo.max_steps": 3, "sft.learning_rate": 2.0e-4, "grpo.seeds": 2}
    assert [kw["parameters"] for _, _, kw in no_notebooks] == [{"profile": "smoke", "overrides": want}] * 2
    assert "overrides=" in out
    # what each notebook then loads: the profile with the overrides, as the runner validated it
    cfg = load_profile("smoke", no_notebooks[0][2]["parameters"]["overrides"])
    assert (cfg.grpo.max_steps, cfg.sft.learning_rate, cfg.grpo.seeds) == (3, 2.0e-4, 2)


def test_without_set_the_parameters_are_the_profile_alone(no_notebooks, capsys, tmp_path):
    rc, _, err = _main(capsys, "--profile", "smoke", "--only", "01", "--out", str(tmp_path / "o"))
    assert rc == 0, err
    assert no_notebooks[0][2]["parameters"] == {"profile": "smoke"}


@pytest.mark.parametrize("sets, fragment", [
    (["grpo.no_such_key=1"], "no_such_key"),
    (["grpo.max_steps=many"], "grpo.max_steps"),
    (["grpo.max_steps=0"], "grpo.max_steps = 0"),
    (["sft.effective_batch=7"], "sft.effective_batch = 7"),
    (["nokey"], "--set takes KEY=VALUE"),
    (["=3"], "--set takes KEY=VALUE"),
    (["grpo.max_steps=2", "grpo.max_steps=3"], "--set grpo.max_steps given twice"),
    # before: --allow-substitutes silently replaced the --set that said false
    (["metrics.allow_substitutes=false", "--allow-substitutes"], "they contradict each other"),
])
def test_a_bad_set_is_refused_before_any_notebook(no_notebooks, capsys, tmp_path, sets, fragment):
    argv = [a for s in sets for a in (() if s.startswith("--") else ("--set",)) + (s,)]
    out = tmp_path / "o"
    rc, _, err = _main(capsys, "--profile", "smoke", "--out", str(out), *argv)
    assert rc == 2 and err.count("\n") == 1 and err.startswith("run_all: ") and fragment in err, err
    assert no_notebooks == [] and "Traceback" not in err


# --------------------------------------------------------------------------- stage estimates and the cell timeout


def test_stage_estimates_are_runs_x_steps_x_the_stated_step_cost():
    from sdrlib import runner

    est = runner.stage_estimates(load_profile("paper"))
    assert [(e["stage"], e["runs"], e["steps"], e["seconds"]) for e in est] == [
        ("SFT", 1, 3000, 3000 * 2.5), ("GRPO", 6 * 5 + 5 * 1, 1000, 35 * 1000 * 60.0)]
    two = runner.stage_estimates(load_profile("cpu", {"grpo.workers": 2, "grpo.step_seconds": 1.0}))
    cpu = load_profile("cpu").grpo
    runs = len(cpu.rewards) * cpu.seeds + len(cpu.ablations) * cpu.ablation_seeds
    assert two == [{"stage": "GRPO", "notebook": "04", "runs": runs, "steps": cpu.max_steps, "step_s": 1.0,
                    "seconds": runs * cpu.max_steps / 2}]  # two runs side by side
    assert runner.stage_estimates(load_profile("cpu")) == []  # no stated step cost: no estimate


def test_the_cell_timeout_is_sized_from_the_profile_and_stated():
    from sdrlib import runner

    limit, lines = runner.sized_cell_timeout(load_profile("cpu"), None)
    assert (limit, lines) == (runner.DEFAULT_CELL_TIMEOUT, [])  # the default profile: as before, unsaid
    limit, lines = runner.sized_cell_timeout(load_profile("paper"), None)
    assert limit == 2 * 2_100_000 + 1
    assert lines[0] == ("estimate: SFT (notebook 03): 1 run(s) x 3000 steps x 2.5 s = 7,500 s (2.1 h) "
                        "(stated per-step cost, training only)")
    assert "GRPO (notebook 04): 35 run(s) x 1000 steps x 60 s = 2,100,000 s (24.3 days)" in lines[1]
    assert lines[2] == "cell timeout: 4,200,001 s (twice the longest stage's estimate; --cell-timeout to choose)"
    limit, lines = runner.sized_cell_timeout(load_profile("paper"), 3600)
    assert limit == 3600 and sum(line.startswith("WARNING") for line in lines) == 2
    assert "notebook 04 would be stopped before it finishes" in lines[-1]


def test_the_runner_prints_the_estimate_and_hands_the_sized_timeout_to_papermill(no_notebooks, capsys, tmp_path):
    rc, out, err = _main(capsys, "--profile", "smoke", "--only", "03", "--out", str(tmp_path / "o"),
                         "--set", "sft.step_seconds=100")
    assert rc == 0, err
    steps = load_profile("smoke").sft.max_steps
    assert f"estimate: SFT (notebook 03): 1 run(s) x {steps} steps x 100 s" in out
    assert no_notebooks[0][2]["execution_timeout"] == max(3600, 2 * steps * 100 + 1)
    rc, out, err = _main(capsys, "--profile", "smoke", "--only", "03", "--out", str(tmp_path / "o"))
    assert rc == 0 and "estimate:" not in out and no_notebooks[1][2]["execution_timeout"] == 3600
