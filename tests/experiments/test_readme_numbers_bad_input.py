"""python -m sdrlib.experiments.claims (scripts/readme_numbers.py), bad input: every argument checked before any work
(one line, exit 2), nothing written into a results folder it reads, and a check against another profile's run says so
instead of listing hundreds of mismatches."""

from __future__ import annotations

import json
from pathlib import Path

from claims_helpers import without_missing_groups
from test_conclusions import ROWS, _run

from sdrlib.experiments.claims import cli


def _script():
    return cli


def _profile(folder: Path, name: str) -> None:
    (folder / "grpo_significance.meta.json").write_text(json.dumps({"profile": name}))


def test_print_mode_writes_nothing_into_the_folder_it_reads(tmp_path, capsys):
    a = _run(tmp_path / "a", ROWS)
    before = sorted(p.name for p in a.iterdir())
    assert _script().main([str(a)]) == 0
    assert sorted(p.name for p in a.iterdir()) == before
    out = tmp_path / "conclusions.csv"
    assert _script().main([str(a), "--conclusions-csv", str(out)]) == 0 and out.is_file()
    assert _script().main([str(a), "--conclusions-csv", str(a / "conclusions.csv")]) == 2
    assert "inside the results folder" in capsys.readouterr().err and not (a / "conclusions.csv").exists()


def test_only_here_with_a_label_no_run_has_is_refused(tmp_path, capsys):
    a = _run(tmp_path / "a", ROWS)
    assert _script().main([str(a), "--only-here", "G-CARL"]) == 0
    capsys.readouterr()
    assert _script().main([str(a), "--only-here", "G-CRAL"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{cli.PROG}: --only-here 'G-CRAL': no run compares") and "G-CARL" in err
    assert len(err.splitlines()) == 1


def test_a_check_against_another_profile_says_so_in_one_line(tmp_path, capsys):
    mod = _script()
    a = _run(tmp_path / "a", ROWS)
    _profile(a, "cpu")
    assert mod.main([str(a)]) == 0
    block = without_missing_groups(capsys.readouterr().out)
    assert "<!-- profile: cpu -->" in block
    readme = tmp_path / "README.md"
    readme.write_text(block)
    smoke = _run(tmp_path / "smoke", {k: (d / 3, p, s) for k, (d, p, s) in ROWS.items()})
    _profile(smoke, "smoke")
    assert mod.main([str(smoke), "--check", str(readme)]) == 2
    out = capsys.readouterr()
    assert "holds a run of profile 'smoke', the README block comes from profile 'cpu'" in out.err
    assert out.out == ""                                       # no list of mismatches
    same = _run(tmp_path / "same", ROWS)
    _profile(same, "cpu")
    assert mod.main([str(same), "--check", str(readme)]) == 0


def test_also_of_another_profile_is_refused_and_also_is_honoured_under_check(tmp_path, capsys):
    """Before: ``--also`` accepted another profile's run, whose disagreement (its numbers differ by design) erased
    the directions; and under ``--check`` ``--also`` was ignored, so a direction the other run contradicts passed."""
    mod = _script()
    a = _run(tmp_path / "a", ROWS)
    _profile(a, "cpu")
    smoke = _run(tmp_path / "smoke", ROWS)
    _profile(smoke, "smoke")
    assert mod.main([str(a), "--also", str(smoke)]) == 2
    out = capsys.readouterr()
    assert "--also " + str(smoke) + " holds a run of profile 'smoke'" in out.err and out.out == ""
    assert mod.main([str(a)]) == 0
    readme = tmp_path / "README.md"
    readme.write_text(without_missing_groups(capsys.readouterr().out))
    flipped = _run(tmp_path / "flipped", {**ROWS, "EditGRPO": (-0.06, 0.001, "3 of 3")})   # the same profile
    _profile(flipped, "cpu")
    assert mod.main([str(a), "--check", str(readme)]) == 0                           # this run alone: as stated
    capsys.readouterr()
    assert mod.main([str(a), "--also", str(flipped), "--check", str(readme)]) == 1
    out = capsys.readouterr()
    assert "EditGRPO vs SFT: the README says above" in out.out
    assert mod.main([str(a), "--also", str(smoke), "--check", str(readme)]) == 2     # refused under --check too


def test_usage_errors_are_one_line(tmp_path, capsys):
    # before: plain argparse printed its usage block (8 lines) above the error
    f = tmp_path / "f.txt"
    f.write_text("x")
    for argv, fragment in [([], "results_dir"), ([str(tmp_path / "nope")], "is not a folder"),
                           ([str(f)], "is not a folder"), ([str(tmp_path), "--mode", "x"], "--mode"),
                           ([str(tmp_path), "--min-int", "abc"], "--min-int"),
                           ([str(tmp_path), "--label", "a", "--label", "b"], "--label: 2 names for 1 runs"),
                           ([str(tmp_path), "--also", str(tmp_path / "nope")], "is not a folder")]:
        try:
            rc = cli.main(argv)
        except SystemExit as e:
            rc = e.code
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and err.startswith(cli.PROG) and fragment in err, (argv, err)
