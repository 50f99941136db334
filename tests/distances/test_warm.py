"""python -m sdrlib.distances warm: every registered setting, ours and the recall family through the engine."""

from __future__ import annotations

import pytest

from sdrlib.distances import EXTENSIONS, REGISTRY
from sdrlib.distances.__main__ import main, warm


def test_warm_calls_every_setting_once_per_entry_point():
    seconds = warm()
    assert set(REGISTRY) | set(EXTENSIONS) | {"ot_neg", "chamfer_recall_1"} == set(seconds)
    assert all(s >= 0 for s in seconds.values())


def test_warm_takes_one_command(capsys):
    assert main(["warm"]) == 0 and "settings' kernels" in capsys.readouterr().out
    assert main([]) == 2 and main(["cold"]) == 2


def test_the_command_line_names_what_was_given_and_help_is_not_an_error(monkeypatch, capsys):
    # before: every refusal printed the same usage line, and --help exited 2
    import sdrlib.distances.__main__ as cmd

    monkeypatch.setattr(cmd, "warm", lambda: pytest.fail("a refused command must not compile anything"))
    for argv, fragment in [([], "no command"), (["warm", "extra"], "'warm extra'"), (["WARM"], "'WARM'")]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and fragment in err and "the one command is warm" in err, err
    assert main(["--help"]) == 0 and "usage: python -m sdrlib.distances warm" in capsys.readouterr().out
