"""``python -m sdrlib.gpu_check`` on the CPU: its arguments, its report (JSON + Markdown) in a CPU rehearsal of the
parts that need no training (what it skips and why), the arithmetic of its per-stage estimate, and that neither it nor
the benchmark it wraps names any remote-execution API. The rehearsal of the tiny SFT / GRPO steps and the CPU engine
is ``python -m sdrlib.gpu_check --cpu-rehearsal`` (about half a minute); the benchmark's own dry run is
tests/project/test_gpu_check.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sdrlib import gpu_check
from sdrlib.config import load_profile

ROOT = Path(__file__).resolve().parents[2]


def _cli(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sdrlib.gpu_check", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_parts_run_in_their_order_and_an_unknown_one_is_named():
    assert gpu_check.parse_parts("") == list(gpu_check.PARTS)
    assert gpu_check.parse_parts("engine, cuda_torch") == ["cuda_torch", "engine"]
    with pytest.raises(ValueError, match="unknown part 'cuda'; allowed: cuda_torch, unsloth"):
        gpu_check.parse_parts("cuda")
    assert sum(gpu_check.LIMITS.values()) <= 600 and set(gpu_check.LIMITS) == set(gpu_check.PARTS)


@pytest.mark.parametrize("argv, fragment", [
    (["--only", "gpu"], "unknown part 'gpu'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, fragment, tmp_path):
    p = _cli(*argv, "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and fragment in p.stderr, p.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, fragment", [
    (["--only", ","], "--only ,: names no part"),
    (["--out", ""], "--out '': an empty path"),
    (["--out", "~nosuchuser_sdr/x"], "cannot expand '~nosuchuser_sdr'"),
    (["--out", "/proc/sdr_gpu_check"], "cannot create the folder"),
    (["--out", "FILE/sub"], "cannot create the folder"),
])
def test_an_out_or_only_it_cannot_use_is_one_line_before_any_part(argv, fragment, tmp_path, monkeypatch, capsys):
    # before: --only , and --out '' ran (no part / into the current folder), --out under a file, in /proc or
    # ~nosuchuser ended in a traceback (NotADirectoryError, FileNotFoundError, RuntimeError)
    (tmp_path / "FILE").write_text("x")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(gpu_check, "run_part", lambda *a, **k: pytest.fail("a part ran"))
    assert gpu_check.main([a.replace("FILE", str(tmp_path / "FILE")) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["FILE"]


def test_an_out_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    p = _cli("--out", str(f))
    assert p.returncode == 2 and "exists and is not a folder" in p.stderr and f.read_text() == "x"


def test_cpu_rehearsal_reports_each_part_and_says_why_it_skips(tmp_path):
    import torch

    out = tmp_path / "o"
    p = _cli("--cpu-rehearsal", "--only", "cuda_torch,unsloth,estimate", "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads((out / "gpu_check.json").read_text(encoding="utf-8"))
    parts = r["parts"]
    assert r["cpu_rehearsal"] is True and set(parts) == {"cuda_torch", "unsloth", "estimate"}
    cuda = parts["cuda_torch"]
    assert cuda["torch"] == torch.__version__ and cuda["cuda_build"] == torch.version.cuda
    if torch.cuda.is_available():
        assert cuda["status"] == "ok" and cuda["device"]
    else:
        assert cuda["status"] == "skipped" and "no CUDA device visible" in cuda["reason"]
    assert parts["unsloth"] == {"status": "skipped", "reason": gpu_check.GPU_ONLY["unsloth"], "seconds": 0.0}
    assert parts["estimate"]["status"] == "skipped" and "2-billion-parameter" in parts["estimate"]["reason"]
    md = (out / "gpu_check.md").read_text(encoding="utf-8")
    assert md.startswith("# GPU self-check (CPU rehearsal)")
    assert "| part | status | seconds | detail |" in md and "| unsloth | skipped | 0.0 |" in md
    assert md in p.stdout  # printed too


def test_without_a_gpu_and_without_the_rehearsal_flag_it_stops_after_the_torch_report(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    p = _cli("--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "no CUDA GPU" in p.stderr and "--cpu-rehearsal" in p.stderr
    r = json.loads((tmp_path / "o" / "gpu_check.json").read_text(encoding="utf-8"))
    assert list(r["parts"]) == ["cuda_torch"] and r["parts"]["cuda_torch"]["status"] == "error"


def test_stage_estimates_scale_measured_steps_to_the_paper_profile():
    cfg = load_profile("paper")
    measured = {"sft": {"mean_step_s": 0.5, "peak_mem_mib": 20480}, "grpo": {"mean_step_s": 2.0, "peak_mem_mib": 30720}}
    est = gpu_check.stage_estimates(cfg, measured)
    # SFT: 96 studies per step / 8 measured = 12 x 0.5 s = 6 s; 3000 steps, once
    assert est["sft"] == {"steps": 3000, "runs": 1, "rows_per_step": 96, "est_step_s": 6.0, "est_run_h": 5.0,
                          "est_stage_h": 5.0, "peak_mem_gib": 20.0}
    # GRPO: 64 / 16 completions x 384 / 96 tokens = 16 x 2 s = 32 s; 1000 steps; 6 rewards x 5 seeds + 5 ablations
    g = est["grpo"]
    assert (g["rows_per_step"], g["est_step_s"], g["runs"]) == (64, 32.0, 35)
    assert g["est_run_h"] == round(1000 * 32 / 3600, 2) and g["est_stage_h"] == round(35 * 1000 * 32 / 3600, 1)
    assert gpu_check.stage_estimates(cfg, {})["sft"] == {"reason": "not measured"}


def test_the_report_shows_the_estimate_table():
    report = {"cpu_rehearsal": False, "started": "t", "seconds": 1.0, "parts": {"estimate": {
        "status": "ok", "seconds": 1.0, "paper": gpu_check.stage_estimates(
            load_profile("paper"), {"sft": {"mean_step_s": 0.5, "peak_mem_mib": 1024}})}}}
    md = gpu_check.markdown(report)
    assert "# GPU self-check (GPU)" in md and "estimated time and memory per stage" in md
    assert "| sft | 1 | 3000 | 96 | 6.0 | 5.0 | 5.0 | 1.0 |" in md and "| grpo |" not in md


def test_no_remote_execution_api_is_named():
    for path in (ROOT / "sdrlib" / "gpu_check.py", ROOT / "benchmarks" / "gpu_check.py", ROOT / "docs" / "gpu.md",
                 ROOT / "docs" / "install.md"):
        if path.exists():
            text = path.read_text(encoding="utf-8")
            assert "run(command" not in text and "carry=" not in text and not re.search(r"\blease", text), path
