"""sdrlib.plots' notebook 02 figures: Fig. 2a's links and values, the engine-speed bars, the fidelity bars."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib.distances import set_distance  # noqa: E402
from sdrlib.distances.errors import DistanceInputError  # noqa: E402
from sdrlib.experiments.fidelity import FidelityError  # noqa: E402
from sdrlib.plots import (PALETTE, PlotError, plot_engine_speed, plot_fidelity, plot_set_distance,  # noqa: E402
                          set_distance_links, style)


# ---------------------------------------------------------------- Fig. 2a numbers


def test_set_distance_links_agree_with_the_registry_and_the_plan_is_a_coupling(unit):
    rng = np.random.default_rng(0)
    A, B = unit(rng, 3), unit(rng, 4)
    L = set_distance_links(A, B)
    M = L["cost"]
    assert np.allclose(M, (1 - A @ B.T) / 2)
    # Chamfer from the drawn links equals the registry's value; Hausdorff is the drawn worst link
    assert L["chamfer"] == pytest.approx(0.5 * (M[np.arange(3), L["nn_ab"]].mean() + M[L["nn_ba"], np.arange(4)].mean()))
    assert L["chamfer"] == pytest.approx(set_distance(A, B, "chamfer"))
    _, i, j = L["hausdorff_link"]
    assert M[i, j] == pytest.approx(L["hausdorff"]) == pytest.approx(set_distance(A, B, "hausdorff"))
    # the drawn plan moves 1/3 out of every G and 1/4 into every R, and its cost is the OT value
    assert np.allclose(L["plan"].sum(axis=1), 1 / 3) and np.allclose(L["plan"].sum(axis=0), 1 / 4)
    assert float((L["plan"] * L["cost_scaled"]).sum()) == pytest.approx(L["ot"]) == pytest.approx(set_distance(A, B, "ot"))


def test_set_distance_links_on_identical_sets_are_zero(unit):
    A = unit(np.random.default_rng(1), 3)
    L = set_distance_links(A, A)
    assert L["chamfer"] == pytest.approx(0, abs=1e-12) and L["hausdorff"] == pytest.approx(0, abs=1e-12)
    assert list(L["nn_ab"]) == [0, 1, 2]


def test_set_distance_helpers_refuse_unusable_sets(unit):
    rng = np.random.default_rng(2)
    with pytest.raises(DistanceInputError):
        set_distance_links(np.zeros((0, 16)), unit(rng, 2))
    with pytest.raises(PlotError, match="2 sentences but embeddings of shape"):
        plot_set_distance(unit(rng, 3), unit(rng, 2), ["a", "b"], ["c", "d"])


def test_plot_set_distance_titles_carry_the_three_values(unit):
    rng = np.random.default_rng(3)
    A, B = unit(rng, 3), unit(rng, 4)
    with style():
        fig = plot_set_distance(A, B, ["g1", "g2", "g3"], ["r1", "r2", "r3", "r4"])
    L = set_distance_links(A, B)
    titles = " ".join(ax.get_title() for ax in fig.axes)
    for key in ("chamfer", "hausdorff", "ot"):
        assert f"{L[key]:.3f}" in titles


def test_plot_set_distance_draws_each_distance_s_links_and_tags_every_sentence(unit):
    rng = np.random.default_rng(5)
    A, B = unit(rng, 3), unit(rng, 4)
    with style():
        fig = plot_set_distance(A, B, ["g1", "g2", "g3"], ["r1", "r2", "r3", "r4"], title="Fig. 2a")
    L = set_distance_links(A, B)
    chamfer, hausdorff, ot = fig.axes[:3]
    arrows = lambda ax: [t for t in ax.texts if t.arrow_patch is not None and not t.get_text()]  # noqa: E731
    assert len(arrows(chamfer)) == 3 + 4 and len(arrows(hausdorff)) == 3 + 4 + 1  # every NN link; + the worst
    assert len(arrows(ot)) == int((L["plan"] > 1e-12).sum())  # one arrow per transported pair
    for ax in (chamfer, hausdorff, ot):  # both sets on every panel, each point tagged
        assert [len(c.get_offsets()) for c in ax.collections] == [3, 4]
        assert {"G1", "G2", "G3", "R1", "R2", "R3", "R4"} <= {t.get_text() for t in ax.texts}
    note = fig.axes[3].texts[0].get_text()  # under Chamfer: both directed means and their average
    assert f"mean {L['mean_ab']:.3f}" in note and f"mean {L['mean_ba']:.3f}" in note
    assert note.endswith(f"= {L['chamfer']:.3f}")
    assert fig.axes[6].texts[0].get_text() == "generated" and fig._suptitle.get_text() == "Fig. 2a"


# ---------------------------------------------------------------- the engine's speed


def test_plot_engine_speed_labels_each_setting_with_its_speedup():
    sp = pd.DataFrame({"setting": ["chamfer", "ot"], "ref_us": [80.0, 200.0], "engine_us": [5.0, 10.0],
                       "speedup": [16.0, 20.0]})
    with style():
        fig = plot_engine_speed(sp, title="t")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["16x", "20x"]
    assert len(ax.patches) == 4 and ax.get_yscale() == "log"
    # the bars' heights are the table's microseconds: reference first, then the engine
    assert [p.get_height() for p in ax.patches] == [80.0, 200.0, 5.0, 10.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["chamfer", "ot"]
    assert ax.get_ylim()[1] == pytest.approx(600.0) and ax.get_title() == "t"


# ---------------------------------------------------------------- fidelity


def _fidelity_table():
    return pd.DataFrame({"target": "jaccard", "stratum": "all", "setting": ["chamfer", "gw", "ot_raw"],
                         "origin": ["paper", "sdr extension", "paper"], "spearman": [0.30, 0.10, 0.25],
                         "spearman_lo": [0.2, 0.05, 0.2], "spearman_hi": [0.4, 0.2, 0.3], "n_pairs": 200})


def test_plot_fidelity_ranks_bars():
    with style():
        fig = plot_fidelity(_fidelity_table())
    ax = fig.axes[0]
    bars = [p for p in ax.patches if p.get_width() != 0]
    assert [p.get_width() for p in bars] == [0.10, 0.25, 0.30]  # ranked, lowest at the bottom
    assert [t.get_text() for t in ax.get_yticklabels()] == ["gw", "ot_raw", "chamfer"]
    colours = [matplotlib.colors.to_hex(p.get_facecolor()) for p in bars]
    assert colours == [PALETTE[1].lower(), PALETTE[0].lower(), PALETTE[0].lower()]  # ours orange, the paper's blue
    assert "200 pairs" in ax.get_xlabel()
    with pytest.raises(FidelityError):
        plot_fidelity(_fidelity_table(), stratum="nope")
    with pytest.raises(FidelityError, match="measure"):
        plot_fidelity(_fidelity_table(), measure="pearson")
