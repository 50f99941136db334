"""sdrlib.plots.plot_sentence_geometry: notebook 01's geometry figure."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from sdrlib.plots import PlotError, check_fonts, plot_sentence_geometry, style  # noqa: E402


def test_sentence_geometry_labels_every_sentence_whole_and_every_cell():
    long = "A punctate calcified granuloma projects over the right apex, unchanged since the prior examination."
    sents = ["The heart size is normal.", "Heart size is within normal limits.", long, "Several granulomas."]
    S = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .7], [.2, .4, .7, 1]])
    with style():
        fig = plot_sentence_geometry(sents, ["P1", "P2", "A1", "N1"], S, [0.5, 0.9, 0.95], title="t")
        heat, hist, _ = fig.axes  # heatmap, histogram, then the colourbar
        fig.canvas.draw()
        check_fonts(fig)
    labels = [t.get_text() for t in heat.get_yticklabels()]
    assert " ".join(labels[2].replace("\n", " ").split()[1:]) == long  # wrapped, not cut
    assert sum(t.get_text() == "0.90" for t in heat.texts) == 2  # one value per cell
    assert len(heat.texts) == 16
    assert sum(p.get_height() for p in hist.patches) == 3
    plt.close(fig)


def test_sentence_geometry_refuses_mismatched_input():
    with pytest.raises(PlotError):
        plot_sentence_geometry(["a", "b", "c"], ["1", "2", "3"], np.eye(3), [0.5])
    with pytest.raises(PlotError):
        plot_sentence_geometry(["a", "b"], ["1"], np.eye(2), [0.5])
