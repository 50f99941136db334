"""The house style is true: every figure helper, built on small synthetic data inside ``style()``, draws no text
below :data:`sdrlib.plots.MIN_FONT` (9 pt), and no notebook cell or library module asks for a smaller font; every
colour that marks a category is an Okabe-Ito one (notebook 07's claim; the figures that colour by value are
named in ``VALUE_COLOURED``).

Two checks, because notebooks also draw inline: (1) each figure function is built and every ``Text`` artist of the
drawn figure (titles, labels, tick labels, legends, annotations, cell values) is measured
(:func:`sdrlib.plots.small_fonts`); (2) the sources of ``notebooks/*.py`` and ``sdrlib/`` are scanned for literal
font sizes below 9 pt (``fontsize=7``, ``"legend.fontsize": 8``, ``size="small"``, ...).
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from sdrlib import plots  # noqa: E402
from sdrlib.data.records import Record  # noqa: E402
from sdrlib.data.stats import prevalence_table, sentence_counts  # noqa: E402
from sdrlib.experiments.audit import CASES  # noqa: E402
from sdrlib.plots import MIN_FONT, PALETTE, PlotError, check_fonts, small_fonts, style  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _curves():
    rows = []
    for cfg_name in ("fmt", "exact", "chamfer", "editgrpo"):
        for seed in (0, 1):
            for step in range(1, 9):
                r = {"config": cfg_name, "seed": seed, "step": step, "rewards/r_fmt/mean": 0.9, "kl": 0.01 * step,
                     "reward": 1.0 + 0.01 * step,
                     "completions/mean_length": 70 - step, "reward_groups/exact_all_zero": 0.9 + 0.01 * seed,
                     "reward_groups/content_std": 0.0 if cfg_name == "fmt" else 0.1 + 0.01 * step}
                if cfg_name == "exact":
                    r["rewards/r_exact/mean"] = 0.02
                if cfg_name == "chamfer":
                    r["rewards/r_sem_chamfer/mean"] = 1.3 + 0.01 * step
                if cfg_name == "editgrpo":
                    r["rewards/r_f1_14/mean"] = 0.3
                    r["rewards/r_sem_neg/mean"] = 0.7
                rows.append(r)
    return pd.DataFrame(rows)


def _sweep():
    rows = []
    for pol in ("SFT", "R_Cham"):
        for n in ("chamfer", "hausdorff", "hung_nn"):
            for p in (0.25, 0.5):
                for wu in (0, 1):
                    v = 0.59 + 0.01 * p + 0.002 * wu + (0.003 if n == "hausdorff" else 0.0)
                    rows.append({"policy": pol, "distance": n, "p": p, "wu": wu, "tokens saved %": 40 + 30 * p - 5 * wu,
                                 "BS-F1": v, "standard": 0.59, "random": 0.585, "BS-F1 lo": v - 0.01,
                                 "BS-F1 hi": v + 0.01, "standard lo": 0.58, "standard hi": 0.60})
    return pd.DataFrame(rows)


def _png(tmp_path, name, size=(4, 3)):
    with style():
        fig, ax = plt.subplots(figsize=size)
        ax.plot([0, 1])
        fig.savefig(tmp_path / name, dpi=50)
    plt.close(fig)
    return tmp_path / name


def _image(tmp_path):
    from PIL import Image

    p = tmp_path / "img.png"
    Image.fromarray((np.random.default_rng(0).random((32, 32)) * 255).astype(np.uint8)).save(p)
    return str(p)


def _figures(tmp_path, unit):
    """(name, builder) for every figure function of the library."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"chamfer": [0.0, 0.08, 0.03], "hausdorff": [0.0, 0.47, 0.2]},
                         index=["identical", "paraphrase", "missing finding"])
    fidelity = pd.DataFrame({"target": "jaccard", "stratum": "all", "setting": ["chamfer", "hausdorff"],
                             "origin": ["paper", "sdr"], "spearman": [0.3, 0.2], "spearman_lo": [0.2, 0.1],
                             "spearman_hi": [0.4, 0.3], "n_pairs": 100})
    img = _image(tmp_path)
    recs = [Record(f"syn-{i}", [img], "Heart size is normal. The lungs are clear.", "No acute disease.",
                   {"No Finding": 1}, "test") for i in range(2)]
    audit = pd.DataFrame([{"label": "R_Cham", "stratum": st, "case": c, "n": 2, "mean": 1.0 - 0.05 * k}
                          for st in ("no_finding", "single", "multi") for k, c in enumerate(CASES)])
    expected = pd.DataFrame([{"label": "R_Cham", "gap": -0.5, "silence_margin": 0.1, "mixed_margin": 0.02}])
    speed = pd.DataFrame({"setting": ["chamfer", "ot"], "ref_us": [80.0, 200.0], "engine_us": [5.0, 10.0],
                          "speedup": [16.0, 20.0]})
    steps = np.arange(1, 21)
    sft = pd.DataFrame({"step": steps, "loss": 7.0 - 0.1 * steps, "mean_token_accuracy": 0.01 * steps})
    return [
        ("plot_report_embedding", lambda: plots.plot_report_embedding(
            ["F one.", "F two."], ["I one."], unit(rng, 2), unit(rng, 1), context=unit(rng, 30), title="Fig. 1")),
        ("plot_sentence_geometry", lambda: plots.plot_sentence_geometry(
            ["The heart size is normal.", "Heart size is within normal limits.", "No effusion.", "No pleural effusion."],
            ["P1", "P2", "A1", "N1"], np.eye(4) * 0.5 + 0.5, rng.uniform(0.5, 1.0, 40), title="sentences")),
        ("plot_set_distance", lambda: plots.plot_set_distance(unit(rng, 3), unit(rng, 4), ["g1", "g2", "g3"],
                                                              ["r1", "r2", "r3", "r4"], title="Fig. 2a")),
        ("plot_value_heatmap", lambda: plots.plot_value_heatmap(table, title="edits")),
        ("plot_column_heatmap", lambda: plots.plot_column_heatmap(table, title="edits")),
        ("plot_grpo_curves", lambda: plots.plot_grpo_curves(_curves(), ["fmt", "exact", "chamfer", "editgrpo"])),
        ("plot_semantic_reward", lambda: plots.plot_semantic_reward(_curves(), ["fmt", "exact", "chamfer", "editgrpo"])),
        ("plot_reward_sparsity", lambda: plots.plot_reward_sparsity(_curves(), ["fmt", "exact", "chamfer", "editgrpo"])),
        ("plot_improvement_heatmap", lambda: plots.plot_improvement_heatmap(table, title="improvement")),
        ("plot_selection_space", lambda: plots.plot_selection_space(rng.normal(size=(200, 2)), rng.normal(size=(5, 2)),
                                                                    2, title="Fig. 2b")),
        ("plot_pruning_sweep", lambda: plots.plot_pruning_sweep(_sweep(), "BS-F1", n_candidates=5, n_studies=24)),
        ("plot_gallery", lambda: plots.plot_gallery([_png(tmp_path, "a.png"), _png(tmp_path, "b.png", (8, 2))],
                                                    ["Fig. A", "Fig. B"])),
        ("plot_fidelity", lambda: plots.plot_fidelity(fidelity)),
        ("plot_examples", lambda: plots.plot_examples(recs, n=2)),
        ("plot_findings_gallery", lambda: plots.plot_findings_gallery(image_size=32)),
        ("plot_prevalence", lambda: plots.plot_prevalence(prevalence_table({"train": recs}))),
        ("plot_sentence_counts", lambda: plots.plot_sentence_counts({"train": sentence_counts(recs)})),
        ("plot_engine_speed", lambda: plots.plot_engine_speed(speed, title="engine")),
        ("plot_sft_loss", lambda: plots.plot_sft_loss(sft, title="SFT")),
        ("plot_generations", lambda: plots.plot_generations(recs, ["<think>A.</think><answer>B.</answer>", "x"])),
        ("plot_audit", lambda: plots.plot_audit(audit, expected)),
    ]


def test_every_figure_function_is_covered(tmp_path, unit):
    built = {name for name, _ in _figures(tmp_path, unit)}
    public = {n for n in plots.__all__ if n.startswith("plot_")}
    assert public <= built, f"add a synthetic build of {sorted(public - built)} to _figures"


def _unit(rng: np.random.Generator, n: int, d: int = 16) -> np.ndarray:
    """As the ``unit`` fixture (tests/plots/conftest.py): ``n`` random unit-norm rows ``(n, d)``."""
    X = rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def figure_checks(tmp_path_factory) -> dict[str, tuple[set[str], list[tuple[str, float]]]]:
    """Every figure function built once inside ``style()`` for the two checks that read all of them: name ->
    (its off-palette colours, read first on the figure as built, as :func:`test_every_category_colour_is_okabe_ito`
    always read them; its texts below the house minimum, :func:`sdrlib.plots.small_fonts`, which then draws it)."""
    out = {}
    for name, build in _figures(tmp_path_factory.mktemp("figures"), _unit):
        with style():
            fig = build()
            off = _off_palette(fig)
            small = small_fonts(fig)
        plt.close(fig)
        out[name] = (off, small)
    return out


def test_every_figure_function_draws_no_text_below_the_house_minimum(figure_checks):
    bad = {}
    for name, (_, small) in figure_checks.items():
        if small:
            bad[name] = small[:5]
    assert not bad, f"texts below {MIN_FONT:g} pt: {bad}"


def test_the_font_check_catches_a_small_text():
    with style():
        fig, ax = plt.subplots()
        ax.text(0.5, 0.5, "tiny", fontsize=7)
        ax.set_title("fine")
    assert small_fonts(fig) == [("tiny", 7.0)]
    with pytest.raises(PlotError, match="below the house style's 9 pt: 'tiny' 7 pt"):
        check_fonts(fig)
    fig2, ax2 = plt.subplots()
    ax2.set_title("fine", fontsize=9)
    assert check_fonts(fig2) is fig2


def test_style_sets_every_font_size_to_at_least_the_minimum():
    with style():
        for key in ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
                    "legend.fontsize", "figure.titlesize"):
            size = matplotlib.font_manager.FontProperties(size=plt.rcParams[key]).get_size_in_points()
            assert size >= MIN_FONT, key


# ------------------------------------------------------------------------------------ sources

_NAMED_SMALL = ("xx-small", "x-small", "small", "smaller")
_PATTERNS = (
    re.compile(r"""\b(?:fontsize|size|labelsize|titlesize)\s*=\s*(?P<v>\d+(?:\.\d+)?)\b"""),
    re.compile(r"""["'](?:font\.size|[a-z]+\.(?:label|title)?(?:font)?size|fontsize|size)["']\s*:\s*(?P<v>\d+(?:\.\d+)?)"""),
    re.compile(r"""\b(?:fontsize|labelsize|titlesize)\s*=\s*["'](?P<n>[a-z-]+)["']"""),
)


def _small_literals(text: str) -> list[str]:
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        if "font" not in code and "size" not in code:
            continue
        for pat in _PATTERNS:
            for m in pat.finditer(code):
                v, n = m.groupdict().get("v"), m.groupdict().get("n")
                if (v is not None and "size" in m.group(0) and "figsize" not in m.group(0)
                        and "image_size" not in m.group(0) and float(v) < MIN_FONT and _is_font(m.group(0))) \
                        or (n is not None and n in _NAMED_SMALL):
                    out.append(f"{i}: {line.strip()}")
    return out


def _is_font(expr: str) -> bool:
    """``size=3`` is a font size only in a text call; keep to names that always are."""
    return bool(re.search(r"fontsize|labelsize|titlesize|font\.size|\"size\"|'size'", expr))


def test_small_literal_scan_finds_what_it_should():
    assert _small_literals('ax.text(0, 0, "x", fontsize=7)')
    assert _small_literals('ax.legend(fontsize="small")')
    assert _small_literals('rc = {"legend.fontsize": 8}')
    assert _small_literals('sns.heatmap(t, annot_kws={"size": 7})')
    assert not _small_literals('ax.text(0, 0, "x", fontsize=9)')
    assert not _small_literals('fig, ax = plt.subplots(figsize=(5, 3))')
    assert not _small_literals('render(image_size=96)  # fontsize=7 in a comment')


@pytest.mark.parametrize("folder,glob", [("notebooks", "*.py"), ("sdrlib", "**/*.py")])
def test_no_source_asks_for_a_font_below_the_minimum(folder, glob):
    bad = {str(p.relative_to(ROOT)): hits for p in sorted((ROOT / folder).glob(glob))
           if (hits := _small_literals(p.read_text(encoding="utf-8")))}
    assert not bad, f"font sizes below {MIN_FONT:g} pt (the house style, notebook 07): {bad}"


# ------------------------------------------------------------------------------------ colours (issue 38)
#: figure functions that colour by a value through a colour map (notebook 07 says which and why)
VALUE_COLOURED = {"plot_pruning_sweep": "the pruning fraction p, an ordered value, along viridis"}


def _off_palette(fig) -> set[str]:
    """Colours of a figure's lines, markers, texts, patches and uncoloured-by-value collections that are neither
    Okabe-Ito (:data:`sdrlib.plots.PALETTE`) nor achromatic (white, greys, black); images and colour-mapped
    collections (a heatmap, a colour bar) colour by value and are left out."""
    from matplotlib.collections import Collection
    from matplotlib.colors import to_hex, to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    ok = {c.lower() for c in plots.PALETTE}
    out = set()
    for art in fig.findobj():
        if isinstance(art, Line2D):
            cs = [art.get_color(), art.get_markerfacecolor(), art.get_markeredgecolor()]
        elif isinstance(art, Text):
            cs = [art.get_color()] if art.get_text() else []
        elif isinstance(art, Patch):
            cs = [art.get_facecolor(), art.get_edgecolor()]
        elif isinstance(art, Collection) and art.get_array() is None:
            cs = [*art.get_facecolors(), *art.get_edgecolors()]
        else:
            cs = []
        for c in cs:
            if isinstance(c, str) and c in ("none", "auto"):
                continue
            r, g, b, a = to_rgba(c)
            if a > 0 and not (abs(r - g) < 1e-6 and abs(g - b) < 1e-6) and to_hex((r, g, b)) not in ok:
                out.add(to_hex((r, g, b)))
    return out


def test_every_category_colour_is_okabe_ito(figure_checks):
    """Notebook 07's claim: every colour that marks a category is an Okabe-Ito one (Fig. 2a's reference set and its
    text tags were not: slate #44546a and a dark amber #8a5a00); the figures that colour by value say so."""
    bad, mapped = {}, set()
    for name, (off, _) in figure_checks.items():
        if name in VALUE_COLOURED:
            if off:
                mapped.add(name)
        elif off:
            bad[name] = sorted(off)
    assert not bad, f"colours outside the Okabe-Ito palette: {bad}"
    assert mapped == set(VALUE_COLOURED), "a VALUE_COLOURED entry no longer colours by value: drop it"
    with style():
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1], color="#44546A")
        ax.plot([0, 1], [1, 0], color="C1")
        ax.text(0, 0, "grey is fine", color="0.3")
        assert _off_palette(fig) == {"#44546a"}  # "C1" is read in the house cycle, inside style()


def test_no_source_names_a_colour_outside_the_palette():
    """Hex colours written in the plotting code and the notebooks are Okabe-Ito ones (greys are written as "0.x")."""
    ok = {c.lower() for c in plots.PALETTE}
    bad = {}
    for p in sorted([*(ROOT / "sdrlib").glob("**/*.py"), *(ROOT / "notebooks").glob("*.py")]):
        hexes = {h.lower() for h in re.findall(r"[\"']#([0-9A-Fa-f]{6})[\"']", p.read_text(encoding="utf-8"))}
        if off := sorted(f"#{h}" for h in hexes if f"#{h}" not in ok):
            bad[str(p.relative_to(ROOT))] = off
    assert not bad, f"hex colours outside sdrlib.plots.PALETTE: {bad}"


def test_style_uses_the_colour_blind_safe_cycle_and_fixed_dpi():
    with style():
        assert [c["color"] for c in plt.rcParams["axes.prop_cycle"]][: len(PALETTE)] == list(PALETTE)
        assert plt.rcParams["savefig.dpi"] == plt.rcParams["figure.dpi"]
        assert plt.rcParams["font.size"] >= 9
