"""sdrlib.plots' notebook 05 figures: best-of-K in 2-D (Fig. 2b) and the improvement heatmaps (Figs. 3-5, through
plot_value_heatmap, NaN cells as n/a)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib.plots import PlotError, plot_improvement_heatmap, plot_selection_space, style  # noqa: E402


def test_cells_print_one_decimal_and_nan_reads_n_a():
    import matplotlib.pyplot as plt

    t = pd.DataFrame([[1.26, -3.0], [np.nan, 0.04]], index=["chamfer + min", "chamfer + avg"],
                     columns=["BS-F1", "CXB-14"])
    fig = plot_improvement_heatmap(t, title="x")
    ax = fig.axes[0]
    assert [x.get_text() for x in ax.texts] == ["1.3", "-3.0", "n/a", "0.0"]
    assert [x.get_text() for x in ax.get_yticklabels()] == ["chamfer + min", "chamfer + avg"]
    assert "% improvement over random" in fig.axes[1].get_ylabel()
    assert len(ax.images) == 2  # the values and the grey patch over the n/a cell
    plt.close(fig)


def test_an_all_nan_table_still_draws():
    import matplotlib.pyplot as plt

    fig = plot_improvement_heatmap(pd.DataFrame(np.full((2, 3), np.nan)))
    assert [x.get_text() for x in fig.axes[0].texts] == ["n/a"] * 6
    plt.close(fig)


def test_the_scale_diverges_about_zero_so_the_sign_reads_from_the_colour():
    import matplotlib.pyplot as plt

    t = pd.DataFrame([[5.4, -42.1], [0.0, 2.0]], columns=["BS-F1", "CXB-14"])
    fig = plot_improvement_heatmap(t)
    im = fig.axes[0].images[0]
    lo, hi = im.get_clim()
    assert (lo, hi) == (-42.1, 42.1) and im.get_cmap().name == "PuOr"
    # +5.4 and 0 no longer share a colour (one-sided viridis_r from -42.1 to 5.4 drew both nearly alike)
    c = im.to_rgba(np.array([5.4, 0.0, -5.4]))
    assert not np.allclose(c[0], c[1], atol=0.02) and not np.allclose(c[0], c[2], atol=0.02)
    plt.close(fig)


def test_selection_space_has_axis_labels_and_the_legend_below():
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(1)
    bank, cands = rng.normal(size=(50, 2)), rng.normal(size=(5, 2))
    with style():
        fig = plot_selection_space(bank, cands, 3, xlabel="PC 1 x")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "PC 1 x" and ax.get_ylabel() == "PC 2"
    fig.canvas.draw()
    assert ax.get_legend().get_window_extent().y1 <= ax.get_window_extent().y0
    assert {f"#{j}" for j in range(5)} <= {t.get_text() for t in ax.texts}
    # the points are the given positions: the bank, the candidates, and the chosen one (the star)
    drawn = [c.get_offsets() for c in ax.collections]
    assert np.allclose(drawn[0], bank) and np.allclose(drawn[1], cands) and np.allclose(drawn[2], cands[[3]])
    with pytest.raises(PlotError, match="chosen = 7"):
        plot_selection_space(bank, cands, 7)
    plt.close(fig)
