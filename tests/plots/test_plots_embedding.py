"""sdrlib.plots' notebook 01 figures: one report as its embedding set (Fig. 1) and the sentence geometry."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from sdrlib.plots import PlotError, check_fonts, plot_report_embedding, plot_sentence_geometry, style  # noqa: E402


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


def test_plot_report_embedding_labels_every_sentence(unit):
    rng = np.random.default_rng(4)
    F, I = ["F one.", "F two.", "F three."], ["I one.", "I two."]
    EF, EI = unit(rng, 3), unit(rng, 2)
    with style():
        fig = plot_report_embedding(F, I, EF, EI, context=unit(rng, 50), n_dims=8)
    ann = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {"F1", "F2", "F3", "I1", "I2"} <= ann
    vectors = next(a for a in fig.axes if a.get_title(loc="left").startswith("(b)"))
    assert np.allclose(vectors.images[0].get_array(), np.vstack([EF, EI])[:, :8])  # one row per sentence, in order
    proj = next(a for a in fig.axes if a.get_title(loc="left").startswith("(c)"))
    assert [len(c.get_offsets()) for c in proj.collections] == [50, 3, 2]  # context, Findings, Impression
    with pytest.raises(PlotError, match="3 sentences"):
        plot_report_embedding(F, I, unit(rng, 2), unit(rng, 2))


def _boxes(ax, texts):
    ax.figure.canvas.draw()
    r = ax.figure.canvas.get_renderer()
    return [t.get_window_extent(r) for t in ax.texts if t.get_text() in texts]


def test_labels_of_coincident_points_do_not_overlap():
    rng = np.random.default_rng(0)
    v = rng.normal(size=16)
    F = np.vstack([v, rng.normal(size=16)])
    I = np.vstack([v + 1e-3, rng.normal(size=16)])  # I1 sits on F1
    F, I = (X / np.linalg.norm(X, axis=1, keepdims=True) for X in (F, I))
    with style():
        fig = plot_report_embedding(["a.", "b."], ["c.", "d."], F, I)
    ax = next(a for a in fig.axes if a.get_title(loc="left").startswith("(c)"))
    boxes = _boxes(ax, {"F1", "F2", "I1", "I2"})
    assert len(boxes) == 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
