"""benchmarks/profile_run.py on roots that hold no readable run: one line naming the root or the file, exit 2, instead
of an empty report with exit 0 or a pandas traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def profile_run():
    spec = importlib.util.spec_from_file_location("profile_run", ROOT / "benchmarks" / "profile_run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _summary(root: Path, data: bytes) -> Path:
    (root / "results").mkdir(parents=True)
    (root / "results" / "run_summary.csv").write_bytes(data)
    return root


def _rc(profile_run, argv):
    try:
        return profile_run.main(argv)
    except SystemExit as e:  # argparse's usage error
        return e.code


@pytest.mark.parametrize("case, fragment", [
    ("missing", "no such folder"),
    ("file", "not a folder"),
    ("empty", "no run of profile 'cpu' there"),
    ("no_columns", "not a run summary (no column notebook, status, seconds)"),
    ("binary", "not a run summary (UnicodeDecodeError)"),
])
def test_a_root_without_a_readable_run_is_one_line_exit_2(profile_run, tmp_path, capsys, case, fragment):
    # before: missing / file / empty roots printed "(none)" tables with exit 0; a malformed summary a KeyError
    root = tmp_path / case
    if case == "file":
        root.write_text("x")
    elif case == "empty":
        root.mkdir()
    elif case == "no_columns":
        _summary(root, b"this is,not\na run summary\n")
    elif case == "binary":
        _summary(root, b"\x00\xff\xfe binary")
    assert _rc(profile_run, ["--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("profile_run: ") and fragment in err, err


@pytest.mark.parametrize("argv, fragment", [(["--cells", "-1"], "--cells: must be >= 1"),
                                            (["--cells", "abc"], "--cells"), (["--bogus"], "--bogus")])
def test_bad_arguments_are_one_line(profile_run, tmp_path, capsys, argv, fragment):
    # before: --cells -1 showed every cell but one, --cells abc / --bogus printed the usage block
    root = _summary(tmp_path / "run", b"notebook,status,seconds\n00_data,ok,1.5\n")
    assert _rc(profile_run, ["--root", str(root), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err


def test_a_run_summary_alone_is_a_run(profile_run, tmp_path, capsys):
    root = _summary(tmp_path / "run", b"notebook,status,seconds\n00_data,ok,1.5\n")
    assert profile_run.main(["--root", str(root)]) == 0 and "00_data" in capsys.readouterr().out
    assert _rc(profile_run, ["--root", str(root), "--before", str(tmp_path / "nope")]) == 2
    assert "--before" in capsys.readouterr().err
