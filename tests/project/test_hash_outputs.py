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
    with pytest.raises(SystemExit, match="no results"):
        hash_outputs.hash_outputs(tmp_path)


@pytest.mark.parametrize("content, says", [
    (b"not json {", "not JSON"),
    (b"", "not JSON"),
    (b"[1, 2]", "a JSON list, not the object of file hashes"),
    (b"42", "a JSON int"),
    (b'{"results/t.csv": "abc"}', "entry 'results/t.csv'"),
    (b'{"results/t.csv": {"values": "x"}}', "entry 'results/t.csv'"),
    (b"\x89PNG\r\n\x1a\n\xff\xfe\xfd", "not UTF-8"),
])
def test_an_unusable_compare_file_is_one_line_naming_it(tmp_path, capsys, content, says):
    """Was a bare JSONDecodeError / TypeError / AttributeError / UnicodeDecodeError."""
    before = tmp_path / "before.json"
    before.write_bytes(content)
    rc = hash_outputs.main([str(_run(tmp_path / "b")), "--compare", str(before)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"hash_outputs: {before}") and says in err and err.count("\n") == 1, err
    assert hash_outputs.main([str(tmp_path / "b"), "--compare", str(tmp_path / "none.json")]) == 2
    assert "none.json: No such file" in capsys.readouterr().err


@pytest.mark.parametrize("compare", [False, True])
def test_a_results_table_that_is_not_text_is_one_line_naming_it(tmp_path, capsys, compare):
    """Was a bare UnicodeDecodeError, in both modes."""
    root = _run(tmp_path / "a")
    (root / "results" / "t.csv").write_bytes(b"config,macro_f1\nR_Cham,0.08\xe9\n")  # cp1252, not UTF-8
    before = tmp_path / "before.json"
    before.write_text("{}")
    rc = hash_outputs.main([str(root)] + (["--compare", str(before)] if compare else []))
    out, err = capsys.readouterr()
    assert rc == 2 and not out and err == f"hash_outputs: {root / 'results' / 't.csv'}: not UTF-8 text " \
                                        "(invalid continuation byte at byte 27); re-save it as UTF-8 (a results " \
                                        "table is text written by the notebooks)\n", err
    (root / "results" / "t.csv").write_bytes("config,macro_f1\nR_Cham,0.08\n".encode("utf-16"))  # with its mark
    assert hash_outputs.main([str(root)]) == 0
