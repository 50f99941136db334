"""sdrlib.plots and sdrlib.results: the figure index against a run's folders, the figure helpers' numbers, bad input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib.distances import set_distance  # noqa: E402
from sdrlib.distances.errors import DistanceInputError  # noqa: E402
from sdrlib.errors import SDRError  # noqa: E402
from sdrlib.plots import (PALETTE, PlotError, plot_column_heatmap, plot_gallery, plot_grpo_curves,  # noqa: E402
                          plot_report_embedding, plot_set_distance, set_distance_links, style)
from sdrlib.results import FIGURE_INDEX, FigureEntry, figure_index, missing_summary  # noqa: E402


def _unit(rng, n, d=16):
    X = rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _touch(path, text="x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ---------------------------------------------------------------- the index


def test_figure_index_marks_present_missing_and_unindexed_files(tmp_path):
    res, figs = tmp_path / "results", tmp_path / "figures"
    _touch(figs / "01_report_embedding.png")
    _touch(res / "05_headline_findings.md")
    _touch(res / "05_headline_findings.csv")  # the CSV twin is not a second entry
    _touch(res / "grpo_bleu_findings.md")
    _touch(res / "grpo_rouge_findings.md")
    _touch(figs / "05_policy_heatmap_CXB_14.png")  # Fig. 5's stand-in when RadGraph is not installed
    _touch(figs / "mystery.png")
    _touch(res / "README.md")
    _touch(res / "figure_index.md")  # the index never lists itself
    idx = figure_index(res, figs)
    st = dict(zip(idx.file, idx.status))
    assert st["figures/01_report_embedding.png"] == "present"
    assert st["results/05_headline_findings.md"] == "present"
    assert st["results/grpo_bleu_findings.md"] == st["results/grpo_rouge_findings.md"] == "present"
    assert st["figures/05_policy_heatmap_CXB_14.png"] == "present"
    assert not any("RG_E" in f for f in idx.file)  # an alternative present: Fig. 5 is not missing
    # and its caption names what it plots (issue 26: it said RadGraph F1 over a CXB-14 heatmap)
    cap = idx.set_index("file").loc["figures/05_policy_heatmap_CXB_14.png", "what"]
    assert cap.split("(")[0].endswith("CXB-14 ") and "RadGraph entity F1 (RG-E" not in cap
    assert st["figures/02_set_distance_example.png"] == "missing"
    assert st["results/05_headline_impression.md"] == "missing"
    assert st["figures/mystery.png"] == "not in index"
    assert not any(f.endswith(("README.md", "figure_index.md", ".csv")) for f in idx.file)
    row = idx.set_index("file").loc["figures/01_report_embedding.png"]
    assert (row.notebook, row.paper) == ("01_embedding", "Fig. 1")
    assert idx.set_index("file").loc["results/05_headline_findings.md", "paper"] == "Table 3"
    # every file appears once, even when two entries' patterns match it (a group's names and the headline)
    _touch(res / "grpo_headline_findings.md")
    idx = figure_index(res, figs)
    assert idx.file.is_unique
    assert idx.set_index("file").loc["results/grpo_headline_findings.md", "paper"].startswith("Tables 1-2")
    # a table named like a metric group is not labelled as one (issue 26: grpo_positive_findings)
    _touch(res / "grpo_positive_findings.md")
    row = figure_index(res, figs).set_index("file").loc["results/grpo_positive_findings.md"]
    assert row.paper == "" and row.what.startswith("positive findings")
    text = missing_summary(idx)
    assert "02_distances" in text and "--only 02" in text and "mystery.png" in text


def test_figure_index_on_folders_that_do_not_exist_lists_everything_as_missing(tmp_path):
    idx = figure_index(tmp_path / "no_results", tmp_path / "no_figures")
    assert len(idx) and (idx.status == "missing").all()
    papers = set(idx.paper)
    for item in ("Fig. 1", "Fig. 2a", "Fig. 2b", "Fig. 3", "Fig. 4", "Fig. 5", "Table 3", "Table 23"):
        assert item in papers, item


def test_figure_index_with_every_entry_present_has_nothing_missing(tmp_path):
    res, figs = tmp_path / "r", tmp_path / "f"
    for e in FIGURE_INDEX:
        name = e.name.split("|")[0].replace("*", "x")
        _touch((figs / f"{name}.png") if e.kind == "figure" else (res / f"{name}.md"))
    idx = figure_index(res, figs)
    assert (idx.status == "present").all()
    assert missing_summary(idx).startswith("every indexed file is present")


def test_figure_index_refuses_a_file_for_a_folder(tmp_path):
    f = tmp_path / "results"
    f.write_text("not a folder")
    with pytest.raises(PlotError, match="is a file, not a folder") as e:
        figure_index(f, tmp_path / "figures")
    assert isinstance(e.value, SDRError) and isinstance(e.value, ValueError)


def test_figure_index_entries_name_known_notebooks_and_kinds():
    for e in FIGURE_INDEX:
        assert isinstance(e, FigureEntry)
        assert e.kind in ("figure", "table"), e
        assert e.notebook[:2].isdigit() and e.notebook[2] == "_", e


# ---------------------------------------------------------------- Fig. 2a numbers


def test_set_distance_links_agree_with_the_registry_and_the_plan_is_a_coupling():
    rng = np.random.default_rng(0)
    A, B = _unit(rng, 3), _unit(rng, 4)
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


def test_set_distance_links_on_identical_sets_are_zero():
    A = _unit(np.random.default_rng(1), 3)
    L = set_distance_links(A, A)
    assert L["chamfer"] == pytest.approx(0, abs=1e-12) and L["hausdorff"] == pytest.approx(0, abs=1e-12)
    assert list(L["nn_ab"]) == [0, 1, 2]


def test_set_distance_helpers_refuse_unusable_sets():
    rng = np.random.default_rng(2)
    with pytest.raises(DistanceInputError):
        set_distance_links(np.zeros((0, 16)), _unit(rng, 2))
    with pytest.raises(PlotError, match="2 sentences but embeddings of shape"):
        plot_set_distance(_unit(rng, 3), _unit(rng, 2), ["a", "b"], ["c", "d"])


def test_plot_set_distance_titles_carry_the_three_values():
    rng = np.random.default_rng(3)
    A, B = _unit(rng, 3), _unit(rng, 4)
    with style():
        fig = plot_set_distance(A, B, ["g1", "g2", "g3"], ["r1", "r2", "r3", "r4"])
    L = set_distance_links(A, B)
    titles = " ".join(ax.get_title() for ax in fig.axes)
    for key in ("chamfer", "hausdorff", "ot"):
        assert f"{L[key]:.3f}" in titles


# ---------------------------------------------------------------- Fig. 1 and the other helpers


def test_plot_report_embedding_labels_every_sentence():
    rng = np.random.default_rng(4)
    F, I = ["F one.", "F two.", "F three."], ["I one.", "I two."]
    with style():
        fig = plot_report_embedding(F, I, _unit(rng, 3), _unit(rng, 2), context=_unit(rng, 50))
    ann = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {"F1", "F2", "F3", "I1", "I2"} <= ann
    with pytest.raises(PlotError, match="3 sentences"):
        plot_report_embedding(F, I, _unit(rng, 2), _unit(rng, 2))


def test_column_heatmap_scales_each_column_on_its_own():
    t = pd.DataFrame({"small": [0.0, 0.01, 0.02], "large": [0.0, 0.5, 1.0]}, index=["a", "b", "c"])
    with style():
        fig = plot_column_heatmap(t)
    S = fig.axes[0].images[0].get_array()
    assert np.allclose(S, [[0, 0], [0.5, 0.5], [1, 1]])  # the same colours for the same share of the column max
    assert "0.02" in {x.get_text() for x in fig.axes[0].texts}  # the raw values are printed
    with pytest.raises(PlotError, match="NaN"):
        plot_column_heatmap(t.assign(small=[np.nan, 0, 0]))


def _curves():
    rows = []
    for cfg_name, has_sem in (("fmt", False), ("chamfer", True)):
        for seed in (0, 1):
            for step in range(1, 11):
                r = {"config": cfg_name, "seed": seed, "step": step, "rewards/r_fmt/mean": 0.5 + 0.04 * step,
                     "kl": 0.01 * step, "completions/mean_length": 80 - step}
                if has_sem:
                    r["rewards/r_sem_chamfer/mean"] = 1.0 + 0.05 * step + 0.01 * seed
                rows.append(r)
    return pd.DataFrame(rows)


def test_grpo_curves_put_each_reward_range_on_its_own_axis_with_integer_steps():
    with style():
        fig = plot_grpo_curves(_curves(), ["fmt", "chamfer"], {"fmt": "R_fmt", "chamfer": "R_Cham"}, smooth=3)
    axes = fig.axes
    titles = [a.get_title() for a in axes]
    assert titles[0].startswith("R_fmt") and titles[1].startswith("content reward")
    assert axes[0].get_ylim()[1] <= 1.05 and axes[1].get_ylim()[1] >= 2.0
    # R_fmt (range 0-1) never shares the axis of the content reward (0-2): only R_Cham draws in panel 2
    assert {ln.get_label() for ln in axes[1].lines if not ln.get_label().startswith("_")} == {"R_Cham"}
    assert all(float(t).is_integer() for t in axes[0].get_xticks())
    note = " ".join(t.get_text() for t in fig.texts)
    assert "rolling mean of 3 steps" in note and "2 seed" in note
    with pytest.raises(PlotError, match="lack the columns"):
        plot_grpo_curves(_curves().drop(columns="step"), ["fmt"])
    with pytest.raises(PlotError, match="smooth"):
        plot_grpo_curves(_curves(), ["fmt"], smooth=0)


def test_gallery_refuses_missing_files(tmp_path):
    with pytest.raises(PlotError, match="does not exist"):
        plot_gallery([tmp_path / "nope.png"], ["x"])
    with style():
        fig, ax = plt.subplots()
        ax.plot([0, 1])
        fig.savefig(tmp_path / "a.png")
        g = plot_gallery([tmp_path / "a.png"], ["Fig. A"])
    assert g.axes[0].get_title() == "Fig. A"


def test_style_uses_the_colour_blind_safe_cycle_and_fixed_dpi():
    with style():
        assert [c["color"] for c in plt.rcParams["axes.prop_cycle"]][: len(PALETTE)] == list(PALETTE)
        assert plt.rcParams["savefig.dpi"] == plt.rcParams["figure.dpi"]
        assert plt.rcParams["font.size"] >= 9
