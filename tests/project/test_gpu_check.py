"""benchmarks/gpu_check.py on the CPU: its dry run (every part but the CUDA calls, tiny sizes; Unsloth skipped, as it
refuses vision models without a GPU), a part that runs out of time, the wheel install, the table parser, and the
Qwen3-VL-2B dimensions. The dry run takes well under a minute on a quiet 2-core machine."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
_spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("gpu_check", gpu_check)
_spec.loader.exec_module(gpu_check)


def _run(tmp_path: Path, *extra: str, timeout: float = 600) -> tuple[int, dict, str, str]:
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out), "--wheels",
                        str(tmp_path / "no-wheels"), *extra], capture_output=True, text=True, timeout=timeout,
                       cwd=ROOT)
    report = json.loads((out / "gpu_check.json").read_text(encoding="utf-8"))
    md = (out / "gpu_check.md").read_text(encoding="utf-8")
    return p.returncode, report, md, p.stdout + p.stderr


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """The whole dry run, once for the tests that read it (every part, and the RadGraph part on its own)."""
    tmp = tmp_path_factory.mktemp("gpu_check_dry")
    return (*_run(tmp), tmp)


@pytest.mark.slow
def test_dry_run_runs_every_part_but_unsloth(dry_run):
    rc, r, md, log, tmp_path = dry_run
    parts = r["parts"]
    assert rc == 0, log[-3000:]
    status = {n: p["status"] for n, p in parts.items()}
    radgraph = status.pop("radgraph")
    assert status == {"env": "ok", "engine": "ok", "prepare": "ok", "plain": "ok", "unsloth": "skipped",
                      "vllm": "skipped", "bertscore": "ok"}
    assert "Unsloth refuses vision models without a GPU" in parts["unsloth"]["reason"]
    # vLLM and RadGraph's compatibility layer: optional parts, skipped with a reason while absent
    assert "vLLM" in parts["vllm"]["reason"]
    assert radgraph == "ok" or "radgraph is not installed" in parts["radgraph"]["reason"]
    assert r["deadline_s"] == gpu_check.DRY_DEADLINE and set(r["unsloth_vs_plain"]) == {"sft", "grpo"}
    assert r["install"]["status"] == "skipped" and "no wheels" in r["install"]["reason"]
    # (a) every setting of the engine table, CPU against itself: identical values and flags
    from sdrlib.distances import EXTENSIONS, REGISTRY

    e = parts["engine"]
    n_settings = len(REGISTRY) + sum(not s.negation_aware for s in EXTENSIONS.values())  # the paper's 15 + _raw
    assert len(e["rows"]) == 2 * n_settings and e["agreement"] == {"max_abs_diff": "0.0e+00", "flags_differ": 0}
    assert set(e["paper_sweep"]) == {"random", "structured"} and e["paper_sweep"]["random"]["settings"] == 15
    assert all(x["gpu_pairs_per_s"] > 0 for x in e["rows"])
    # (b) the plain path trained both stages; the policy came from the tiny stand-in of the 2B dimensions
    assert parts["prepare"]["policy"]["dims_name"].startswith("tiny")
    for stage in ("sft", "grpo"):
        s = parts["plain"][stage]
        assert s["steps"] >= 2 and s["mean_step_s"] > 0 and s["peak_mem_mib"] is None  # no GPU memory on the CPU
    assert parts["plain"]["sft"]["final_loss"] > 0
    # (c) BERTScore on the "device" (the CPU) agrees with the CPU
    b = parts["bertscore"]
    assert b["pairs"] == 32 and b["pairs_per_s"] > 0 and b["max_abs_diff_vs_cpu"] == 0.0
    # the Markdown summary says all of it
    for text in ("# GPU check (dry run", "## (a) Distance engine", "## (b) Plain TRL vs Unsloth",
                 "## (c) BERTScore", "| unsloth | skipped |", "Projected paper sweep"):
        assert text in md
    assert sum(p.get("seconds", 0) for p in parts.values()) <= r["seconds"] + 1
    log_text = (tmp_path / "out" / "gpu_check.log").read_text(encoding="utf-8")
    assert "===== plain: ok" in log_text and "===== unsloth: skipped" in log_text


def test_a_part_out_of_time_is_reported_and_the_next_part_runs_on_time(tmp_path):
    rc, r, md, log = _run(tmp_path, "--parts", "engine,env", "--budget", "engine=2", timeout=300)
    e, env = r["parts"]["engine"], r["parts"]["env"]
    assert rc == 1, log[-3000:]  # a part out of time is a failure of the check
    assert e["status"] == "timeout" and e["budget_s"] == 2 and e["seconds"] < 15
    assert "ran out of its 2 s budget" in e["reason"]
    assert env["status"] == "ok" and env["versions"]["torch"] != "absent"
    assert "| engine | timeout |" in md


def test_the_step_time_ratio_and_the_budgets():
    """Plain / Unsloth mean step time per stage (None where a path did not run); the GPU budgets fit the 480 s
    deadline; docs/install.md points to the user's self-check (python -m sdrlib.gpu_check) and this benchmark."""
    parts = {"plain": {"sft": {"mean_step_s": 3.0, "peak_mem_mib": 1000.0}, "grpo": {"mean_step_s": 8.0}},
             "unsloth": {"sft": {"mean_step_s": 1.5, "peak_mem_mib": 600.0}}}
    r = gpu_check.step_time_ratio(parts)
    assert r["sft"] == {"step_time_plain_over_unsloth": 2.0, "peak_mem_unsloth_over_plain": 0.6}
    assert r["grpo"] == {"step_time_plain_over_unsloth": None, "peak_mem_unsloth_over_plain": None}
    assert set(gpu_check.BUDGETS) == {"install", *gpu_check.PARTS} == set(gpu_check.DRY_BUDGETS)
    assert sum(gpu_check.BUDGETS.values()) <= gpu_check.DEADLINE == 480
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert "python -m sdrlib.gpu_check" in install and "benchmarks/gpu_check.py" in install


def test_the_radgraph_part_runs_radgraphs_annotator_through_the_compat_layer(dry_run):
    """The part the device runs, on the CPU: radgraph_compat installed, F1RadGraph around the tiny random model.
    Read from the dry run's report (the part ran in its own process there, as on the device)."""
    if importlib.util.find_spec("radgraph") is None:  # installed or not, without importing it here
        pytest.skip("radgraph is not installed")
    res = dry_run[1]["parts"]["radgraph"]
    assert res["status"] == "ok", res  # the part returned 0
    assert res["device"] == "cpu" and len(res["mean_reward"]) == 3
    assert all(0.0 <= x <= 1.0 for x in res["mean_reward"])


def test_the_engine_table_is_parsed():
    text = """
## random: 5 x 1000 pairs (7966 bank sentences, 7966 unique)
| setting | solver on GPU | CPU us/pair | GPU us/pair | speed-up | sweep CPU h | sweep GPU min | max abs diff | flags differ | not converged CPU / GPU |
|---|---|---:|---:|---:|---:|---:|---:|---:|---|
| chamfer | no (cosines only) | 2.10 | 0.150 | 14.0x | 0.029 | 0.13 | 2.2e-16 | 0 | 0 / 0 |
| gw | yes | 300.00 | 1.500 | 200.0x | 4.167 | 1.25 | 1.1e-15 | 1 | 2 / 3 |

# random: the paper's 15 settings, projected sweep (1000 studies x K=5 x N=5000 x 2 sections per setting, from these per-pair times): CPU engine 4.20 h, GPU engine 1.4 min (goal: < 10 min on one H200)
# agreement GPU vs CPU engine: max |diff| = 1.1e-15, convergence flags that differ: 1
"""
    t = gpu_check.parse_device_table(text)
    assert [x["setting"] for x in t["rows"]] == ["chamfer", "gw"]
    assert t["rows"][1] == {"data": "random", "setting": "gw", "solver_on_gpu": "yes", "cpu_us": 300.0, "gpu_us": 1.5,
                            "gpu_pairs_per_s": 1e6 / 1.5, "speedup": 200.0, "sweep_cpu_h": 4.167,
                            "sweep_gpu_min": 1.25, "max_abs_diff": "1.1e-15", "flags_differ": 1,
                            "not_converged": "2 / 3"}
    assert t["paper_sweep"] == {"random": {"settings": 15, "cpu_h": 4.2, "gpu_min": 1.4}}
    assert t["agreement"] == {"max_abs_diff": "1.1e-15", "flags_differ": 1}


def _wheel(folder: Path, name: str, requires: list[str]) -> Path:
    """A minimal pure-Python wheel holding module ``name`` (enough for pip)."""
    dist = f"{name}-1.0.dist-info"
    path = folder / f"{name}-1.0-py3-none-any.whl"
    meta = "Metadata-Version: 2.1\nName: {}\nVersion: 1.0\n{}".format(
        name, "".join(f"Requires-Dist: {r}\n" for r in requires))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}.py", "VALUE = 42\n")
        z.writestr(f"{dist}/METADATA", meta)
        z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", f"{name}.py,,\n{dist}/METADATA,,\n{dist}/WHEEL,,\n{dist}/RECORD,,\n")
    return path


def test_wheels_install_into_a_temporary_folder_and_unmet_requirements_are_named(tmp_path):
    wheels = tmp_path / "whl"
    wheels.mkdir()
    _wheel(wheels, "sdr_probe_pkg", ["numpy>=1", "sdr-no-such-package>=2", "numpy<1; python_version < '3'"])
    site = tmp_path / "site"
    info = gpu_check.install_wheels(wheels, site, 120, dry_run=False)
    assert info["status"] == "ok", info
    assert (site / "sdr_probe_pkg.py").is_file() and info["wheels"] == ["sdr_probe_pkg-1.0-py3-none-any.whl"]
    assert info["requirements"] == ["sdr_probe_pkg 1.0 requires sdr-no-such-package>=2: not installed"]
    empty = gpu_check.install_wheels(tmp_path / "none", tmp_path / "site2", 120, dry_run=False)
    assert empty["status"] == "skipped" and "no wheels" in empty["reason"]


def test_the_policy_has_qwen3_vl_2b_published_size():
    """The published dimensions give Qwen3-VL-2B-Instruct's 2.13 B parameters (4.26 GB in bf16, the size of its
    model.safetensors); counted on the meta device, nothing allocated."""
    import torch
    from transformers import Qwen3VLForConditionalGeneration

    from sdrlib import models

    tok = models.train_tokenizer(["No acute findings. The heart is normal."] * 20, vocab_size=300)
    cfg = gpu_check.qwen3_vl_config(gpu_check.QWEN3_VL_2B, tok)
    with torch.device("meta"):
        model = Qwen3VLForConditionalGeneration(cfg)
    n = sum(p.numel() for p in model.parameters())
    assert 2.12e9 < n < 2.14e9
    assert cfg.text_config.vocab_size == 151936 and cfg.vision_config.depth == 24
    assert cfg.image_token_id == tok.convert_tokens_to_ids("<|image_pad|>")  # the local tokenizer's ids


@pytest.mark.parametrize("extra, says", [
    (["--parts", ","], "names no part"),
    (["--parts", "env,gpu"], "unknown parts ['gpu']"),
    (["--budget", "env=nan"], "positive, finite"),
    (["--budget", "env=inf"], "positive, finite"),
    (["--budget", "env=0"], "positive, finite"),
    (["--budget", "env=abc"], "takes seconds"),
    (["--budget", "env"], "takes PART=SECONDS"),
    (["--budget", "gpu=10"], "unknown part 'gpu'"),
    (["--deadline", "nan"], "--deadline must be a positive, finite"),
    (["--deadline", "-5"], "--deadline must be a positive, finite"),
    (["--engine-K", "0"], "--engine-K must be at least 1"),
    (["--engine-N", "-1"], "--engine-N must be at least 1"),
    (["--pairs", "0"], "--pairs must be at least 1"),
    (["--steps-sft", "0"], "--steps-sft must be at least 1"),
])
def test_a_bad_argument_is_one_line_and_exit_2_before_any_work(tmp_path, capsys, extra, says):
    out = tmp_path / "out"
    rc = gpu_check.main(["--dry-run", "--out", str(out), "--wheels", str(tmp_path / "none"), *extra])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and err.startswith("gpu_check: ") and says in err, err
    assert not out.exists()                     # nothing written, nothing run


def test_an_out_that_is_a_file_is_refused(tmp_path, capsys):
    out = tmp_path / "report.txt"
    out.write_text("keep me")
    rc = gpu_check.main(["--dry-run", "--out", str(out)])
    assert rc == 2 and "is a file, not a folder" in capsys.readouterr().err
    assert out.read_text() == "keep me"


def test_budgets_parse_and_apply():
    b = gpu_check.parse_budgets(["env=10", "engine=12.5"], dry_run=False)
    assert b["env"] == 10.0 and b["engine"] == 12.5 and b["install"] == gpu_check.BUDGETS["install"]
    assert gpu_check.parse_parts("") == list(gpu_check.PARTS)
    assert gpu_check.parse_parts("env, engine") == ["env", "engine"]
