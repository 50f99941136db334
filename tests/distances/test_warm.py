"""python -m sdrlib.distances warm: every registered setting, ours and the recall family through the engine."""

from __future__ import annotations

from sdrlib.distances import EXTENSIONS, REGISTRY
from sdrlib.distances.__main__ import main, warm


def test_warm_calls_every_setting_once_per_entry_point():
    seconds = warm()
    assert set(REGISTRY) | set(EXTENSIONS) | {"ot_neg", "chamfer_recall_1"} == set(seconds)
    assert all(s >= 0 for s in seconds.values())


def test_warm_takes_one_command(capsys):
    assert main(["warm"]) == 0 and "settings' kernels" in capsys.readouterr().out
    assert main([]) == 2 and main(["cold"]) == 2
