"""sdrlib.plots.plot_gallery: finished figures near their own size (notebook 07)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from sdrlib.plots import PlotError, plot_gallery, style  # noqa: E402


def test_gallery_refuses_missing_files(tmp_path):
    with pytest.raises(PlotError, match="does not exist"):
        plot_gallery([tmp_path / "nope.png"], ["x"])
    with pytest.raises(PlotError, match="1 paths but 2 titles"):
        plot_gallery([tmp_path / "nope.png"], ["x", "y"])
    with style():
        fig, ax = plt.subplots()
        ax.plot([0, 1])
        fig.savefig(tmp_path / "a.png")
        g = plot_gallery([tmp_path / "a.png"], ["Fig. A"])
    assert g.axes[0].get_title() == "Fig. A"


def test_gallery_keeps_figures_near_their_own_size(tmp_path):
    paths = []
    for i, size in enumerate(((4, 3), (16, 4))):
        with style():
            f, ax = plt.subplots(figsize=size)
            ax.plot([0, 1])
            f.savefig(tmp_path / f"{i}.png", dpi=100)
        paths.append(tmp_path / f"{i}.png")
    with style():
        g = plot_gallery(paths, ["small", "wide"], row_px=1700)
    small, wide = g.axes
    assert small.get_position().y0 > wide.get_position().y1  # the wide figure gets a row of its own
    assert wide.get_position().width == pytest.approx(1600 / 1700, rel=1e-6)
    assert small.images[0].get_array().shape[:2] == (300, 400)  # the file's pixels, drawn as they are
