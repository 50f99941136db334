"""sdrlib.experiments.figures: the palette measurement and notebook 07's conclusion sentences."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from sdrlib.experiments import figures  # noqa: E402


def _save(tmp_path, name, draw):
    fig, ax = plt.subplots(figsize=(3, 2))
    draw(ax)
    path = tmp_path / name
    fig.savefig(path, dpi=60)
    plt.close(fig)
    return path


def test_palette_share_tells_okabe_ito_bars_from_a_viridis_heatmap(tmp_path):
    bars = _save(tmp_path, "bars.png", lambda ax: ax.bar(range(4), [1, 2, 3, 4], color=figures.OKABE_ITO[:4]))
    heat = _save(tmp_path, "heat.png", lambda ax: ax.imshow(np.random.default_rng(0).random((8, 8)), cmap="viridis"))
    grey = _save(tmp_path, "grey.png", lambda ax: ax.plot([0, 1], [0, 1], color="0.5"))
    assert figures.palette_share(bars)["okabe_ito"] > 0.8
    assert figures.palette_share(heat)["okabe_ito"] < 0.2 and figures.palette_share(heat)["coloured"] > 0.2
    g = figures.palette_share(grey)
    assert g["coloured"] == 0.0 and np.isnan(g["okabe_ito"])
    t = figures.palette_table([bars, heat], ["b", "h"])
    assert t.file.tolist() == ["b", "h"] and list(t.columns) == ["file", "coloured", "okabe_ito"]


def test_figure_conclusions_from_the_result_files(tmp_path):
    pd.DataFrame({"paper": ["Fig. 1", "Fig. 3", "", ""], "file": ["figures/a.png", "figures/b*.png", "results/t.md",
                                                                    "figures/x.png"],
                  "notebook": ["01_embedding", "05_selection", "04_grpo", ""], "what": [""] * 4,
                  "kind": ["figure", "figure", "table", "figure"],
                  "status": ["present", "missing", "present", "not in index"]}).to_csv(tmp_path / "figure_index.csv",
                                                                                       index=False)
    pd.DataFrame({"file": ["figures/a.png", "figures/h.png"], "coloured": [0.1, 0.3], "okabe_ito": [0.9, 0.05]}
                 ).to_csv(tmp_path / "07_palette.csv", index=False)
    text = "\n".join(figures.figure_conclusions(tmp_path))
    assert "1 of 2 indexed figures and 1 of 1 indexed tables" in text
    assert "Missing, written by 05_selection: figures/b*.png." in text
    assert "in no index entry: figures/x.png" in text
    assert "1 of 2 figures shown have at least 50% of their coloured pixels" in text
    assert "below that: figures/h.png (0.05)" in text
    assert figures.figure_conclusions(tmp_path / "nothing") == []
