"""sdrlib.plots.plot_value_heatmap / plot_column_heatmap: one colour scale for a table, or one per column."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib.plots import PlotError, plot_column_heatmap, plot_value_heatmap, style  # noqa: E402


def test_column_heatmap_scales_each_column_on_its_own():
    t = pd.DataFrame({"small": [0.0, 0.01, 0.02], "large": [0.0, 0.5, 1.0]}, index=["a", "b", "c"])
    with style():
        fig = plot_column_heatmap(t)
    S = fig.axes[0].images[0].get_array()
    assert np.allclose(S, [[0, 0], [0.5, 0.5], [1, 1]])  # the same colours for the same share of the column max
    assert "0.02" in {x.get_text() for x in fig.axes[0].texts}  # the raw values are printed
    with pytest.raises(PlotError, match="NaN"):
        plot_column_heatmap(t.assign(small=[np.nan, 0, 0]))


def test_value_heatmap_shares_one_scale_unless_asked_per_column():
    t = pd.DataFrame({"a": [0.0, 0.08], "b": [0.0, 0.47]})
    with style():
        shared = plot_value_heatmap(t)
        column = plot_value_heatmap(t, scale="column")
    assert np.allclose(shared.axes[0].images[0].get_array(), t.to_numpy())
    assert shared.axes[0].images[0].get_clim() == (0.0, 0.47)
    assert np.allclose(column.axes[0].images[0].get_array(), [[0, 0], [1, 1]])
    with pytest.raises(PlotError, match="scale"):
        plot_value_heatmap(t, scale="row")


def test_value_heatmap_prints_every_cell_row_major_and_labels_rows_and_columns():
    t = pd.DataFrame({"chamfer": [0.0, 0.081], "ot": [-0.2, 0.47]}, index=["identical", "paraphrase"])
    with style():
        fig = plot_value_heatmap(t, fmt=".3f", center=0.0, title="edits")
    ax = fig.axes[0]
    assert [x.get_text() for x in ax.texts] == ["0.000", "-0.200", "0.081", "0.470"]
    assert [x.get_text() for x in ax.get_xticklabels()] == ["chamfer", "ot"]
    assert [x.get_text() for x in ax.get_yticklabels()] == ["identical", "paraphrase"]
    assert ax.images[0].get_clim() == (-0.47, 0.47) and ax.get_title() == "edits"
