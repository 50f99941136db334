"""scripts/hash_outputs.py: the before / after hashes of a behaviour-preserving change."""

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("hash_outputs", Path(__file__).parents[2] / "scripts" / "hash_outputs.py")
hash_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hash_outputs)


def _run(root: Path, value: str = "0.083", seconds: str = "1.2", weights: bytes = b"w1") -> Path:
    (root / "results").mkdir(parents=True)
    trace = "".join(f"{2 * i}.0,1.9\n" for i in range(1, 2 + int(float(seconds))))  # as long as the run
    (root / "results" / "run_cpu.csv").write_text("seconds,busy_cores\n" + trace)
    (root / "results" / "t.csv").write_text(f"config,macro_f1,seconds\nR_Cham,{value},{seconds}\n")
    (root / "results" / "t.md").write_text(f"| R_Cham | {value} | {seconds} |\n")
    (root / "results" / "t.meta.json").write_text(json.dumps({"commit": seconds}))
    (root / "runs" / "cpu" / "grpo" / "chamfer" / "seed0" / "final").mkdir(parents=True)
    (root / "runs" / "cpu" / "grpo" / "chamfer" / "seed0" / "final" / "model.safetensors").write_bytes(weights)
    return root


def _compare(tmp_path, capsys, **kw) -> tuple[int, str]:
    before = tmp_path / "before.json"
    before.write_text(json.dumps(hash_outputs.hash_outputs(_run(tmp_path / "a"))))
    rc = hash_outputs.main([str(_run(tmp_path / "b", **kw)), "--compare", str(before)])
    return rc, capsys.readouterr().out


def test_same_values_different_times_and_metadata_match(tmp_path, capsys):
    rc, out = _compare(tmp_path, capsys, seconds="9.9")
    assert rc == 0 and "timing only: results/t.csv" in out and "every value identical" in out
    assert "timing only: results/run_cpu.csv" in out  # the cores-busy trace is timing as a whole
    assert "meta" not in out and "t.md" not in out  # metadata is not hashed; the Markdown goes with its CSV


@pytest.mark.parametrize("kw, what", [({"value": "0.084"}, "results/t.csv"),
                                      ({"weights": b"w2"}, "final/model.safetensors")])
def test_a_changed_value_or_weight_is_reported(tmp_path, capsys, kw, what):
    rc, out = _compare(tmp_path, capsys, **kw)
    assert rc == 1 and "DIFFERS" in out and what in out


def test_csv_without_timing_drops_only_timing_columns():
    assert hash_outputs.csv_without_timing(b"name,seconds,macro_f1,step_time\nchamfer,1.2,0.5,3\n") == \
        b"name,macro_f1\r\nchamfer,0.5\r\n"


def test_a_root_without_results_is_refused(tmp_path):
    with pytest.raises(hash_outputs.Unreadable, match="no results"):
        hash_outputs.hash_outputs(tmp_path)
    assert hash_outputs.main([str(tmp_path)]) == 2  # one line on stderr, not a traceback


@pytest.mark.parametrize("column", ["normal_share", "share_broken", "ref_normal_share", "beats_share",
                                    "share of pairs stopped at max_iter", "stopped_at_cap"])
def test_a_changed_share_column_is_a_changed_value_not_timing(tmp_path, capsys, column):
    """Before: every header containing "share" (9 value columns in 9 tables) was dropped as timing, so a changed
    ``normal_share`` printed "every value identical", exit 0."""
    for name, value in (("a", "0.49"), ("b", "0.51")):
        _run(tmp_path / name)
        (tmp_path / name / "results" / "s.csv").write_text(
            f"config,\"{column}\",seconds\nR_Cham,{value},1.{name == 'b'}\n")
    before = tmp_path / "before.json"
    before.write_text(json.dumps(hash_outputs.hash_outputs(tmp_path / "a")))
    rc = hash_outputs.main([str(tmp_path / "b"), "--compare", str(before)])
    out = capsys.readouterr().out
    assert rc == 1 and "DIFFERS: results/s.csv" in out and "every value identical" not in out


@pytest.mark.parametrize("header", ["seconds", "step_seconds", "mean_step_s", "first s", "ref_us", "sweep_ref_h",
                                    "speedup", "gflops_matmul", "first/warm", "wall-clock ratio (pruning / standard)",
                                    "reward_share", "reward_time/seconds", "git_commit", "started_at", "executed"])
def test_every_timing_column_of_the_results_is_timing(header):
    assert hash_outputs.is_timing(header)
