"""python -m sdrlib.distances warm: every registered setting, ours and the recall family through the engine, all of
them through pairwise_distances_many, and the unstoppable kernels; after it, the project's calls compile nothing."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

from sdrlib.clinical import section_presence
from sdrlib.distances import EXTENSIONS, REGISTRY, _kernels
from sdrlib.distances.__main__ import PARTS, _direct_kernels, main, warm
from sdrlib.distances.engine import paired_distances, pairwise_distances, pairwise_distances_many


def test_warm_calls_every_setting_once_per_entry_point():
    seconds = warm()
    assert set(REGISTRY) | set(EXTENSIONS) | {"ot_neg", "chamfer_recall_1"} | set(PARTS) == set(seconds)
    assert all(s >= 0 for s in seconds.values())


def _signatures() -> dict[str, int]:
    """Compiled or loaded signatures per numba kernel of ``_kernels`` in this process (one cache file each)."""
    return {name: len(obj.signatures) for name, obj in vars(_kernels).items() if isinstance(obj, CPUDispatcher)}


def test_after_warm_the_projects_calls_compile_no_new_kernel_signature():
    """Every kernel signature a call reaches is one warm compiled (or loaded from numba's cache): a new one would be
    compiled here, in the process, and written to the cache as a new file. Other sets than warm's (float64, more
    sentences, more sets), every setting through pairwise_distances_many (the shared drivers) with presence, the
    stoppable drivers under a time budget, and the unstoppable kernels as the tests call them."""
    warm()
    before = _signatures()
    assert before["transport_multi_pairs_stoppable"] and before["hung_multi_pairs_stoppable"] and before["gw_loss"]
    rng = np.random.default_rng(1)
    texts = ["No pneumothorax. Small left pleural effusion. Mild edema.", "The heart is enlarged. No effusion.",
             "Lungs are clear.", "No focal consolidation. Normal heart. No pneumothorax. Small effusion."]
    pres = section_presence(texts)
    sets = [rng.standard_normal((len(p), 24)) for p in pres]
    names = [*REGISTRY, *EXTENSIONS, "ot_neg", "hung_pen_0.5_neg", "sinkhorn_0.001", "sinkhorn_0.001_neg", "gw_0.05", "chamfer_recall_0.5"]
    pairwise_distances_many(sets[:3], sets[1:], names, presence=(pres[:3], pres[1:]), on_nonconvergence="ignore")
    for name in ("chamfer", "hung_pen_0.5", "partial_0.8_raw", "uot_1.0", "gw"):
        pairwise_distances(sets, sets, name, on_nonconvergence="ignore", time_budget_s=600)
        paired_distances(sets[:2], sets[2:], name, on_nonconvergence="ignore", time_budget_s=600)
    _direct_kernels(sets[:2], sets[2:])
    after = _signatures()
    assert after == before, {k: (before.get(k), v) for k, v in after.items() if before.get(k) != v}


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
