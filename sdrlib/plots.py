"""Figures: the house style and the figure helpers the notebooks call (figures only).

Writing files lives one layer down, in :mod:`sdrlib.results`: ``save_fig`` / ``save_table``
(PNG at a fixed resolution; CSV + Markdown + provenance JSON), provenance, and the paper-item
map of every file the notebooks write (``FIGURE_INDEX``, ``figure_index``).

Nothing here changes global matplotlib state on import; use :func:`style`
as a context manager for the house style.

Example::

    with style():
        fig, ax = plt.subplots(); ax.plot([0, 1])
    save_fig(fig, "demo", cfg)          # from sdrlib.results

The house style (:func:`style`) fixes the resolution (:data:`DPI`), font sizes of at least :data:`MIN_FONT`
(9 pt; :func:`small_fonts` / :func:`check_fonts` measure every text of a drawn figure, and
``tests/results/test_plots_style.py`` holds every helper here to it) and a colour-blind-safe colour cycle
(Okabe-Ito, :data:`PALETTE`). Figure helpers used by the notebooks: :func:`plot_report_embedding` (paper Fig. 1),
:func:`set_distance_links` / :func:`plot_set_distance` (Fig. 2a), :func:`plot_selection_space` (Fig. 2b),
:func:`plot_value_heatmap` (a table of values on one colour scale; :func:`plot_column_heatmap` scales per column),
:func:`plot_grpo_curves` (GRPO training curves, one panel per reward range), :func:`plot_semantic_reward` (R_sem
per step; EditGRPO's S_neg on its own axis), :func:`plot_reward_sparsity` (exact-match sparsity and each content
reward's within-group spread), :func:`plot_pruning_sweep` (pruning quality vs tokens with bootstrap intervals,
:func:`result_ci`), :func:`plot_gallery` (finished figures near their own size). Point labels are placed so that
none overlaps another or a point (``_place_labels``). What is left out: no helper saves (``sdrlib.results``) or
computes a statistic beyond an error bar.
"""

from __future__ import annotations

import contextlib
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np

from sdrlib.distances import set_distance
from sdrlib.distances.costs import as_pair, cosine_cost, rescale
from sdrlib.metrics.significance import bootstrap_weights
from sdrlib.results import DPI, PlotError
from sdrlib.selection import pca_2d

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["DPI", "MIN_FONT", "PALETTE", "style", "PlotError", "small_fonts", "check_fonts", "result_ci",
           "plot_report_embedding", "plot_sentence_geometry", "set_distance_links", "plot_set_distance", "plot_value_heatmap",
           "plot_column_heatmap", "plot_grpo_curves", "plot_semantic_reward", "plot_reward_sparsity",
           "plot_selection_space", "plot_improvement_heatmap", "plot_pruning_sweep", "plot_gallery"]

#: Okabe-Ito colours (distinguishable under the common colour-vision deficiencies), in cycle order
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")

#: the smallest font size (pt) of any text in a figure of the house style; :func:`check_fonts` enforces it
MIN_FONT = 9.0


@contextlib.contextmanager
def style() -> Iterator[None]:
    """House plotting style, scoped to a ``with`` block.

    Seaborn ``whitegrid``; fixed resolution :data:`DPI`; fonts of at least 9 pt (ticks and legends 9,
    labels 10, titles 11); the colour cycle ``C0``, ``C1``, ... is the colour-blind-safe :data:`PALETTE`
    and the default colour map is ``viridis`` (perceptually uniform, colour-blind safe).
    """
    import matplotlib.pyplot as plt
    import seaborn as sns
    from cycler import cycler

    rc = {"figure.dpi": DPI, "savefig.dpi": DPI, "font.size": 10, "axes.titlesize": 11,
          "axes.labelsize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9,
          "figure.titlesize": 12, "image.cmap": "viridis"}
    with sns.axes_style("whitegrid"):
        with plt.rc_context({**rc, "axes.prop_cycle": cycler(color=list(PALETTE))}):
            yield


def small_fonts(fig: "Figure", min_size: float = MIN_FONT) -> list[tuple[str, float]]:
    """Every visible, non-empty text of ``fig`` set below ``min_size`` pt, as ``(text, size)`` pairs.

    Covers titles, labels, tick labels, legends, annotations and cell texts (every ``Text`` artist the
    figure holds). Example: ``small_fonts(fig) -> [("0.08", 8.0)]`` for a heatmap annotated at 8 pt.
    """
    from matplotlib.text import Text

    fig.canvas.draw()  # tick labels exist only once the figure is drawn
    out = []
    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip() and t.get_fontsize() < min_size - 1e-9:
            out.append((t.get_text(), float(t.get_fontsize())))
    return out


def check_fonts(fig: "Figure", min_size: float = MIN_FONT) -> "Figure":
    """``fig`` unchanged when every text is at least ``min_size`` pt (the house style); else :class:`PlotError`
    naming the offending texts. Example: ``save_fig(check_fonts(fig), "name", cfg)``."""
    bad = small_fonts(fig, min_size)
    if bad:
        shown = ", ".join(f"{t[:30]!r} {s:g} pt" for t, s in bad[:6]) + (f" and {len(bad) - 6} more" if len(bad) > 6 else "")
        raise PlotError(f"{len(bad)} text(s) below the house style's {min_size:g} pt: {shown}")
    return fig


def result_ci(result: Any, *, n_resamples: int = 1000, seed: int = 0, ci: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of a corpus metric over its samples (studies).

    ``result``: a :class:`sdrlib.metrics.MetricResult` (``stats`` ``(n, s)`` and its ``reducer``, as for the
    paired bootstrap), so ratio metrics such as macro F1 are recomputed from resampled counts. For error bars;
    differences between two systems need the paired test (:func:`sdrlib.metrics.significance.paired_bootstrap`).
    Example: ``result_ci(r) -> (0.571, 0.604)``.
    """

    stats = np.asarray(result.stats, dtype=np.float64)
    if stats.ndim == 1:
        stats = stats[:, None]
    W = bootstrap_weights(stats.shape[0], n_resamples, seed)
    vals = np.asarray(result.reducer(W @ stats), dtype=np.float64).reshape(-1)
    vals = vals[np.isfinite(vals)]
    if not vals.size:
        return float("nan"), float("nan")
    a = (1.0 - ci) / 2
    return float(np.quantile(vals, a)), float(np.quantile(vals, 1 - a))


def _place_labels(ax: Any, xy: np.ndarray, tags: Sequence[str], colours: Sequence[str], *, fontsize: float = 10,
                  avoid: np.ndarray | None = None, gap: float = 6.0, **kw: Any) -> None:
    """Label the points ``xy`` with ``tags`` so that no two labels overlap each other or a labelled point.

    Greedy: each label tries eight positions around its point (right, up-right, up, ... in that order) and takes
    the first whose box (estimated from the font size) touches neither an earlier label's box nor any point of
    ``xy`` / ``avoid``; when every position touches something, the one with the least overlap. Works in points
    on the axes as they will be drawn (call after the limits and aspect are final).
    """
    ax.figure.canvas.draw()  # final limits / aspect (equal aspect, margins)
    to_pt = lambda P: ax.transData.transform(np.asarray(P, dtype=np.float64).reshape(-1, 2)) * 72.0 / ax.figure.dpi  # noqa: E731
    pts = to_pt(xy)
    obst = pts if avoid is None or not len(avoid) else np.vstack([pts, to_pt(avoid)])
    r_pt = 7.0  # a marker's half-size in points, with a margin
    dirs = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)]
    placed: list[tuple[float, float, float, float]] = []

    def overlap(b: tuple, c: tuple) -> float:
        w = min(b[2], c[2]) - max(b[0], c[0]); h = min(b[3], c[3]) - max(b[1], c[1])
        return max(w, 0.0) * max(h, 0.0)

    for (px, py), tag, col in zip(pts, tags, colours):
        w, h = 0.62 * fontsize * max(len(tag), 1), 1.0 * fontsize
        best = None
        for k, (dx, dy) in enumerate(dirs):
            x0 = px + (gap if dx > 0 else -gap - w if dx < 0 else -w / 2)
            y0 = py + (gap if dy > 0 else -gap - h if dy < 0 else -h / 2)
            box = (x0, y0, x0 + w, y0 + h)
            cost = sum(overlap(box, b) for b in placed)
            cost += sum(overlap(box, (ox - r_pt, oy - r_pt, ox + r_pt, oy + r_pt)) for ox, oy in obst)
            if best is None or cost < best[0] - 1e-9:
                best = (cost, box, dx, dy)
            if cost == 0:
                break
        _, box, dx, dy = best
        placed.append(box)
        off = (box[0] - px, box[1] - py)
        kw.setdefault("bbox", {"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.7})
        ax.annotate(tag, (xy[len(placed) - 1][0], xy[len(placed) - 1][1]), textcoords="offset points", xytext=off,
                    ha="left", va="bottom", fontsize=fontsize, color=col, **kw)


# --------------------------------------------------------------------------------------------------
# Figure helpers. Each returns a matplotlib Figure and saves nothing; wrap the call in ``with style():``.


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width) or [""]


def _check_rows(sentences: Sequence[str], E: Any, name: str) -> np.ndarray:
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] != len(sentences):
        raise PlotError(f"{name}: {len(sentences)} sentences but embeddings of shape {E.shape}; "
                        f"pass one embedding row per sentence")
    if not np.isfinite(E).all():
        raise PlotError(f"{name}: embeddings contain NaN or inf")
    return E


def plot_report_embedding(findings: Sequence[str], impression: Sequence[str], E_findings: Any,
                          E_impression: Any, *, context: Any = None, title: str = "", n_dims: int = 24,
                          wrap: int = 58) -> "Figure":
    """Paper Fig. 1: one report, its sentences and their embedding set.

    Three panels: the report's Findings sentences ``F1..Fn`` and Impression sentences ``I1..Im`` as text;
    the first ``n_dims`` coordinates of each sentence's unit-norm embedding (rows ``e^F_i``, ``e^I_j``; the
    set is unordered, the row order is the text's); and the set in a 2-D PCA projection with each point
    labelled. ``E_findings`` ``(n, d)`` and ``E_impression`` ``(m, d)`` hold one row per sentence.
    ``context`` ``(k, d)`` (optional, e.g. other reports' sentences) is drawn in grey and the projection is
    fitted on it together with the report; without it, on the report's own sentences.
    """
    import matplotlib.pyplot as plt

    EF = _check_rows(findings, E_findings, "findings")
    EI = _check_rows(impression, E_impression, "impression")
    if len(findings) + len(impression) < 2:
        raise PlotError("plot_report_embedding needs at least two sentences in the report")
    if EF.shape[0] and EI.shape[0] and EF.shape[1] != EI.shape[1]:
        raise PlotError(f"findings embeddings have d = {EF.shape[1]}, impression d = {EI.shape[1]}")
    d = (EF if EF.shape[0] else EI).shape[1]
    E = np.concatenate([EF.reshape(-1, d), EI.reshape(-1, d)])
    C = None if context is None else np.asarray(context, dtype=np.float64).reshape(-1, d)
    fit = E if C is None or not len(C) else np.concatenate([C, E])
    xy, cxy = pca_2d(fit, fit)[1], None
    if C is not None and len(C):
        cxy, xy = xy[: len(C)], xy[len(C):]
    tags = [f"F{i + 1}" for i in range(len(findings))] + [f"I{j + 1}" for j in range(len(impression))]
    colours = [PALETTE[0]] * len(findings) + [PALETTE[1]] * len(impression)

    fig = plt.figure(figsize=(15, 5.2))
    gs = fig.add_gridspec(1, 3, width_ratios=[1.5, 0.85, 1.05], wspace=0.22)
    ax_t, ax_e, ax_p = fig.add_subplot(gs[0]), fig.add_subplot(gs[1]), fig.add_subplot(gs[2])
    # (a) the text
    lines: list[tuple[str, str, str]] = []  # (tag, text, colour)
    for head, sents, col, pre in (("Findings", findings, PALETTE[0], "F"), ("Impression", impression, PALETTE[1], "I")):
        lines.append(("", head, "black"))
        for i, s in enumerate(sents):
            for k, part in enumerate(_wrap(s, wrap)):
                lines.append((f"{pre}{i + 1}" if k == 0 else "", part, col))
        lines.append(("", "", "black"))
    step = 1.0 / max(len(lines), 16)
    for r, (tag, text, col) in enumerate(lines):
        y = 1.0 - (r + 0.5) * step
        if not tag and text in ("Findings", "Impression"):
            ax_t.text(0.0, y, text, fontsize=10, fontweight="bold", va="center", transform=ax_t.transAxes)
            continue
        ax_t.text(0.0, y, tag, fontsize=9, color=col, fontweight="bold", va="center", transform=ax_t.transAxes)
        ax_t.text(0.08, y, text, fontsize=9, va="center", transform=ax_t.transAxes)
    ax_t.axis("off")
    ax_t.set_title("(a) report sentences", loc="left")
    # (b) the vectors
    k = min(n_dims, d)
    lim = float(np.abs(E[:, :k]).max()) or 1.0
    im = ax_e.imshow(E[:, :k], cmap="PuOr", vmin=-lim, vmax=lim, aspect="auto")
    ax_e.grid(False)
    ax_e.set_yticks(range(len(tags)), [f"$e^{{{t[0]}}}_{{{t[1:]}}}$" for t in tags])
    for lbl, col in zip(ax_e.get_yticklabels(), colours):
        lbl.set_color(col)
    ax_e.set_xlabel(f"first {k} of d = {d} coordinates")
    ax_e.set_title(r"(b) embedding set $\mathcal{E}(r)$", loc="left")
    fig.colorbar(im, ax=ax_e, orientation="horizontal", fraction=0.06, pad=0.16, label="coordinate value")
    # (c) the projection
    if cxy is not None:
        ax_p.scatter(cxy[:, 0], cxy[:, 1], s=5, color="0.75", label="other reports' sentences", zorder=1)
    for sec, col, mk in (("F", PALETTE[0], "o"), ("I", PALETTE[1], "s")):
        idx = [i for i, t in enumerate(tags) if t[0] == sec]
        if idx:
            ax_p.scatter(xy[idx, 0], xy[idx, 1], s=55, color=col, marker=mk, edgecolor="black", linewidth=0.6,
                         zorder=3, label="Findings sentence" if sec == "F" else "Impression sentence")
    ax_p.set_xlabel("PC 1")
    ax_p.set_ylabel("PC 2")
    ax_p.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=9, frameon=False)
    _place_labels(ax_p, xy, tags, ["black"] * len(tags), fontsize=9, fontweight="bold", zorder=4)
    ax_p.set_title("(c) the set in 2-D (PCA)", loc="left")
    if title:
        fig.suptitle(title, y=1.02)
    return fig


def plot_sentence_geometry(sentences: Sequence[str], tags: Sequence[str], S: Any, nn_sim: Any, *,
                           title: str = "", wrap: int = 62) -> "Figure":
    """Notebook 01's sentence geometry: a cosine heatmap of sentences shown in pairs, and a nearest-neighbour histogram.

    Left: ``S`` ``(k, k)`` cosine similarities between ``sentences`` (``k`` texts, even ``k``, consecutive rows a
    pair: a paraphrase, or an anchor and its nearest neighbour), each row labelled with its tag (``tags``, e.g.
    ``P1``, ``A1``, ``N1``) and its whole text wrapped at ``wrap`` characters; every cell carries its value and white
    lines separate the pairs. Right: the histogram of ``nn_sim`` ``(n,)``, each sampled sentence's cosine to its
    nearest different sentence. Draws only; nothing is computed but the layout."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    S = np.asarray(S, dtype=np.float64)
    k = len(sentences)
    if S.shape != (k, k) or len(tags) != k or k % 2:
        raise PlotError(f"plot_sentence_geometry: {k} sentences, {len(tags)} tags, S of shape {S.shape}; "
                        "needs an even number of sentences, one tag each and a square S")
    nn_sim = np.asarray(nn_sim, dtype=np.float64).ravel()
    rows = [f"{g}  " + "\n      ".join(_wrap(t, wrap)) for g, t in zip(tags, sentences)]
    n_lines = sum(r.count("\n") + 1 for r in rows)
    fig, (a, b) = plt.subplots(1, 2, figsize=(15, 0.55 * max(k, 0.75 * n_lines) + 2.4),
                               gridspec_kw={"width_ratios": [1.5, 1], "wspace": 0.35})
    im = a.imshow(S, vmin=0, vmax=1, cmap="viridis")
    a.grid(False)
    a.set_yticks(range(k), rows, fontsize=9)
    a.set_xticks(range(k), list(tags), fontsize=9)
    a.set_xlabel("P = hand-written paraphrase pair; A = anchor, N = its nearest other bank sentence")
    for (i, j), v in np.ndenumerate(S):
        a.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=9, color="black" if v > 0.6 else "white")
    for p in range(1, k // 2):
        a.axhline(2 * p - 0.5, color="white", linewidth=2)
        a.axvline(2 * p - 0.5, color="white", linewidth=2)
    fig.colorbar(im, ax=a, fraction=0.046, label="cosine similarity")
    b.hist(nn_sim, bins=30, color=PALETTE[0])
    b.set_xlabel("cosine similarity to the nearest different sentence")
    b.set_ylabel("Findings sentences")
    b.yaxis.set_major_locator(MaxNLocator(integer=True))
    b.set_title(f"{len(nn_sim)} sampled Findings sentences", fontsize=10)
    if title:
        fig.suptitle(title)
    return fig


def set_distance_links(A: Any, B: Any) -> dict[str, Any]:
    """What Chamfer, Hausdorff and OT read from two embedding sets ``A`` ``(n, d)``, ``B`` ``(m, d)``.

    Returns a dict: ``cost`` the cosine cost ``M_ij = (1 - a_i . b_j) / 2`` ``(n, m)``; ``nn_ab`` (for each
    ``a_i`` the index of its nearest ``b``) and ``nn_ba``; ``chamfer``, ``hausdorff`` and ``ot`` as the
    registry computes them (:func:`sdrlib.distances.set_distance`, so the values are the rewards' values);
    ``mean_ab`` / ``mean_ba`` (Chamfer's two directed means); ``hausdorff_link`` ``(direction, i, j)``, the
    nearest-neighbour link that attains Hausdorff (``"ab"``: ``a_i`` -> ``b_j``); ``plan`` the exact OT plan
    ``(n, m)`` between uniform weights on ``M / max M`` (POT ``ot.emd``) and ``cost_scaled`` that matrix.
    Unusable sets raise :class:`sdrlib.distances.DistanceInputError`.
    """
    import ot

    A, B = as_pair(A, B)
    M = cosine_cost(A, B)
    nn_ab, nn_ba = M.argmin(axis=1), M.argmin(axis=0)
    d_ab, d_ba = M[np.arange(len(A)), nn_ab], M[nn_ba, np.arange(len(B))]
    if d_ab.max() >= d_ba.max():
        i = int(d_ab.argmax()); link = ("ab", i, int(nn_ab[i]))
    else:
        j = int(d_ba.argmax()); link = ("ba", int(nn_ba[j]), j)
    Mt = rescale(M)
    plan = ot.emd(np.full(len(A), 1.0 / len(A)), np.full(len(B), 1.0 / len(B)), Mt) if Mt.any() else \
        np.eye(len(A), len(B)) / max(len(A), len(B))
    return {"cost": M, "cost_scaled": Mt, "nn_ab": nn_ab, "nn_ba": nn_ba, "mean_ab": float(d_ab.mean()),
            "mean_ba": float(d_ba.mean()), "hausdorff_link": link, "plan": np.asarray(plan),
            "chamfer": set_distance(A, B, "chamfer"), "hausdorff": set_distance(A, B, "hausdorff"),
            "ot": set_distance(A, B, "ot")}


def plot_set_distance(A: Any, B: Any, a_sentences: Sequence[str], b_sentences: Sequence[str], *,
                      a_name: str = "generated", b_name: str = "reference", title: str = "",
                      wrap: int = 70) -> "Figure":
    """Paper Fig. 2a: two sentence sets in 2-D with their links, as Chamfer, Hausdorff and OT read them.

    ``A`` ``(n, d)`` / ``B`` ``(m, d)``: the embeddings of ``a_sentences`` (vermillion circles ``G1..Gn``) and
    ``b_sentences`` (blue squares ``R1..Rm``); every colour is an Okabe-Ito one of :data:`PALETTE` (the Hausdorff
    link black, the OT plan bluish green), and the two sets' colours are dark enough for their text tags. Top
    row, one panel per distance on the same 2-D PCA projection of both sets (positions are only a picture; every
    number is the true cosine cost in ``d`` dimensions): Chamfer's nearest-neighbour links in both directions,
    Hausdorff's single worst link, and the exact OT plan (line width = transported mass). Under each panel the
    links it uses with their values; at the bottom the sentences.
    """
    import matplotlib.pyplot as plt

    A = _check_rows(a_sentences, A, a_name)
    B = _check_rows(b_sentences, B, b_name)
    L = set_distance_links(A, B)
    xa, xb = pca_2d(np.concatenate([A, B]), A, B)[1:]
    gen, ref, worst, green = PALETTE[3], PALETTE[0], PALETTE[6], PALETTE[2]  # vermillion, blue, black, green
    ta, tb = [f"G{i + 1}" for i in range(len(A))], [f"R{j + 1}" for j in range(len(B))]
    M, Mt, P = L["cost"], L["cost_scaled"], L["plan"]

    n_sent = max(sum(len(_wrap(s, wrap)) for s in a_sentences), sum(len(_wrap(s, wrap)) for s in b_sentences))
    n_links = max(2 * ((len(A) + 2) // 3 + (len(B) + 2) // 3) + 1, min(int((P > 1e-12).sum()), 11) + 3)
    fig = plt.figure(figsize=(15, 5.0 + 0.2 * n_links + 0.22 * n_sent))
    gs = fig.add_gridspec(3, 3, height_ratios=[4.2, 0.3 * n_links + 0.4, 0.3 * n_sent + 0.5], hspace=0.12,
                          wspace=0.08)
    axes = [fig.add_subplot(gs[0, k]) for k in range(3)]
    notes = [fig.add_subplot(gs[1, k]) for k in range(3)]

    def base(ax: Any) -> None:
        ax.scatter(xa[:, 0], xa[:, 1], s=80, color=gen, edgecolor="black", linewidth=0.6, zorder=4,
                   label=f"G: {a_name}")
        ax.scatter(xb[:, 0], xb[:, 1], s=80, color=ref, marker="s", edgecolor="black", linewidth=0.6,
                   zorder=4, label=f"R: {b_name}")
        ax.set_xticks([]); ax.set_yticks([])
        ax.margins(0.18)
        ax.set_aspect("equal", adjustable="datalim")

    def labels(ax: Any) -> None:  # after the links: labels avoid every point and each other
        _place_labels(ax, np.vstack([xa, xb]), ta + tb, [gen] * len(ta) + [ref] * len(tb), fontsize=10,
                      fontweight="bold", zorder=5)

    def link(ax: Any, p: np.ndarray, q: np.ndarray, **kw: Any) -> None:
        ax.annotate("", xy=q, xytext=p, arrowprops={"arrowstyle": "-|>", "shrinkA": 7, "shrinkB": 7,
                                                    "mutation_scale": 12, **kw}, zorder=3)

    def note(ax: Any, lines: list[str]) -> None:
        ax.axis("off")
        ax.text(0.02, 1.0, "\n".join(lines), va="top", ha="left", fontsize=9, family="monospace",
                transform=ax.transAxes)

    ax = axes[0]; base(ax)
    for i, j in enumerate(L["nn_ab"]):
        link(ax, xa[i], xb[j], color=gen, linestyle="--", linewidth=1.4)
    for j, i in enumerate(L["nn_ba"]):
        link(ax, xb[j], xa[i], color=ref, linestyle=":", linewidth=1.4)
    ax.set_title(f"Chamfer = {L['chamfer']:.3f}\nmean of all nearest-neighbour links", fontsize=10)
    ab = [f"{ta[i]}→{tb[j]} {M[i, j]:.3f}" for i, j in enumerate(L["nn_ab"])]
    ba = [f"{tb[j]}→{ta[i]} {M[i, j]:.3f}" for j, i in enumerate(L["nn_ba"])]
    chunk = lambda xs: ["   " + "  ".join(xs[k:k + 3]) for k in range(0, len(xs), 3)]  # noqa: E731
    note(notes[0], ["G→R, dashed (each G to its nearest R):"] + chunk(ab) + [f"   mean {L['mean_ab']:.3f}"]
         + ["R→G, dotted (each R to its nearest G):"] + chunk(ba) + [f"   mean {L['mean_ba']:.3f}"]
         + [f"Chamfer = ½ ({L['mean_ab']:.3f} + {L['mean_ba']:.3f}) = {L['chamfer']:.3f}"])

    ax = axes[1]; base(ax)
    for i, j in enumerate(L["nn_ab"]):
        link(ax, xa[i], xb[j], color="0.72", linestyle="--", linewidth=1.0)
    for j, i in enumerate(L["nn_ba"]):
        link(ax, xb[j], xa[i], color="0.72", linestyle=":", linewidth=1.0)
    direction, i, j = L["hausdorff_link"]
    p, q = (xa[i], xb[j]) if direction == "ab" else (xb[j], xa[i])
    name = f"{ta[i]}→{tb[j]}" if direction == "ab" else f"{tb[j]}→{ta[i]}"
    link(ax, p, q, color=worst, linewidth=2.8)
    ax.set_title(f"Hausdorff = {L['hausdorff']:.3f}\nthe worst nearest-neighbour link alone", fontsize=10)
    worst_ab = max(range(len(A)), key=lambda i: M[i, L["nn_ab"][i]])
    worst_ba = max(range(len(B)), key=lambda j: M[L["nn_ba"][j], j])
    note(notes[1], [f"worst G→R: {ta[worst_ab]}→{tb[L['nn_ab'][worst_ab]]} {M[worst_ab, L['nn_ab'][worst_ab]]:.3f}",
                    f"worst R→G: {tb[worst_ba]}→{ta[L['nn_ba'][worst_ba]]} {M[L['nn_ba'][worst_ba], worst_ba]:.3f}",
                    f"Hausdorff = max = {L['hausdorff']:.3f} ({name}, black);",
                    "every other link (grey) is ignored"])

    ax = axes[2]; base(ax)
    pmax = float(P.max()) or 1.0
    edges = list(zip(*np.nonzero(P > 1e-12)))
    for i, j in edges:
        link(ax, xa[i], xb[j], color=green, linewidth=0.8 + 4.0 * P[i, j] / pmax)
    ax.set_title(f"OT = {L['ot']:.3f}\nexact transport plan, width = mass", fontsize=10)
    note(notes[2], [f"mass: each G sends 1/{len(A)}, each R takes 1/{len(B)};",
                    f"cost M~ = M / max M (max M = {M.max():.3f})"]
         + [f"{ta[i]}→{tb[j]}  mass {P[i, j]:.3f}  M~ {Mt[i, j]:.3f}" for i, j in edges[:10]]
         + ([f"... {len(edges) - 10} more"] if len(edges) > 10 else [])
         + [f"OT = sum mass x M~ = {L['ot']:.3f}"])

    for ax in axes:
        labels(ax)
    ax = fig.add_subplot(gs[2, :]); ax.axis("off")
    dy = 1.0 / max(n_sent + 1, 4)
    for col, (head, tags, sents, c) in enumerate(((a_name, ta, a_sentences, gen),
                                                  (b_name, tb, b_sentences, ref))):
        x0, y = 0.5 * col, 1.0
        ax.text(x0, y, head, fontweight="bold", fontsize=10, va="top", transform=ax.transAxes)
        y -= dy
        for t, s in zip(tags, sents):
            for k, part in enumerate(_wrap(s, wrap)):
                if k == 0:
                    ax.text(x0, y, t, color=c, fontweight="bold", fontsize=9, va="top", transform=ax.transAxes)
                ax.text(x0 + 0.03, y, part, fontsize=9, va="top", transform=ax.transAxes)
                y -= dy
    ax.text(0.0, y - 0.3 * dy, "Positions: 2-D PCA of both sets (a picture only). Numbers: the cosine cost "
            "M = (1 - a·b) / 2 in the full embedding space; OT works on the rescaled M~.", fontsize=9,
            color="0.3", va="top", transform=ax.transAxes)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.965 if title else 0.995), ncol=2,
               frameon=False, fontsize=9)
    if title:
        fig.suptitle(title, y=0.995)
    return fig


def plot_value_heatmap(table: "pd.DataFrame", *, title: str = "", fmt: str = ".2f", scale: str = "shared",
                       cbar_label: str | None = None, center: float | None = None) -> "Figure":
    """A heatmap of a table of numbers, each cell printed with its value.

    ``scale="shared"`` (default): one colour scale for the whole table, from 0 (or the table's minimum when it is
    negative) to its maximum, so equal values have equal colours in every column. ``scale="column"``: colour =
    value / the column's largest absolute value, for tables whose columns have unrelated units (then 0.08 in one
    column can look like 0.47 in another: say so in the title). ``center`` (shared scale only): a diverging,
    colour-blind-safe map (``PuOr``) symmetric about this value, for signed tables such as % change over a baseline,
    so that the sign reads from the colour. The colour bar names the scale.
    """
    import matplotlib.pyplot as plt

    if scale not in ("shared", "column"):
        raise PlotError(f"plot_value_heatmap: scale must be 'shared' or 'column', got {scale!r}")
    V = table.to_numpy(dtype=np.float64)
    if V.size == 0:
        raise PlotError("plot_value_heatmap: the table is empty")
    if not np.isfinite(V).all():
        raise PlotError("plot_value_heatmap: the table holds NaN or inf")
    if scale == "column":
        top = np.abs(V).max(axis=0)
        S, lo, hi = V / np.where(top > 0, top, 1.0), 0.0, 1.0
        cbar_label = cbar_label or "share of the column's largest value"
    elif center is not None:
        half = float(np.abs(V - center).max()) or 1.0
        S, lo, hi = V, center - half, center + half
        cbar_label = cbar_label or f"value (one scale, centred at {center:g})"
    else:
        S, lo, hi = V, min(0.0, float(V.min())), float(V.max()) or 1.0
        cbar_label = cbar_label or "value (one scale for the whole table)"
    fig, ax = plt.subplots(figsize=(0.78 * V.shape[1] + 3.0, 0.5 * V.shape[0] + 1.9))
    diverging = center is not None and scale == "shared"
    im = ax.imshow(S, cmap="PuOr" if diverging else "viridis_r", vmin=lo, vmax=hi, aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(V.shape[1]), [str(c) for c in table.columns], rotation=50, ha="right")
    ax.set_yticks(range(V.shape[0]), [str(i) for i in table.index])
    for (i, j), v in np.ndenumerate(V):
        t = (S[i, j] - lo) / (hi - lo)
        dark = abs(t - 0.5) > 0.3 if diverging else t > 0.55  # white text on the dark ends of the map
        ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize=9, color="white" if dark else "black")
    fig.colorbar(im, ax=ax, fraction=0.025, pad=0.02, label=cbar_label)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_column_heatmap(table: "pd.DataFrame", *, title: str = "", fmt: str = ".2f",
                        cbar_label: str = "share of the column's largest value") -> "Figure":
    """:func:`plot_value_heatmap` with the colour scaled per column (value / column max): only for tables whose
    values are comparable within a column alone. Cells show the raw values."""
    return plot_value_heatmap(table, title=title, fmt=fmt, scale="column", cbar_label=cbar_label)


def plot_grpo_curves(curves: "pd.DataFrame", configs: Sequence[str], labels: Mapping[str, str] | None = None,
                     *, smooth: int = 5) -> "Figure":
    """GRPO training curves, one panel per quantity so that no two reward ranges share an axis.

    ``curves``: TRL's logged columns per step (``step``, ``config``, ``seed``, ``rewards/r_fmt/mean``,
    ``rewards/r_sem_<distance>/mean``, ``rewards/r_exact/mean``, ``kl``, ``completions/mean_length``), one
    row per config x seed x step. Panels: R_fmt (range [0, 1]); the content reward (R_sem in [0, 2] for the
    set-distance configs, R_exact in [0, 2]); KL to the SFT policy; completion length. Each line is the
    mean over seeds, the band its min-max over seeds; thin lines are the raw per-step means and thick ones
    a centred rolling mean over ``smooth`` logged steps (1 = none), as the axis labels say. Step ticks are
    integers.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    need = {"step", "config"} - set(curves.columns)
    if need:
        raise PlotError(f"plot_grpo_curves: curves lack the columns {sorted(need)}")
    if smooth < 1:
        raise PlotError(f"plot_grpo_curves: smooth must be >= 1 logged steps, got {smooth}")
    labels = dict(labels or {})
    # the content reward of R_exact and of the set-distance rewards (both in [0, 2]); EditGRPO's r_sem_neg is one
    # [0, 1] component of its composite reward and G-CARL has none of these, so neither is drawn there
    content = [c for c in curves.columns if (c.startswith("rewards/r_sem_") or c == "rewards/r_exact/mean")
               and c.endswith("/mean") and c != "rewards/r_sem_neg/mean"]
    panels = [(["rewards/r_fmt/mean"], "R_fmt (format, 0-1)", (-0.03, 1.03)),
              (content, "content reward of R_exact / R_sem (0-2)", (-0.05, 2.05)),
              (["kl"], "KL to the SFT policy", None),
              (["completions/mean_length"], "completion length (tokens)", None)]
    panels = [p for p in panels if any(c in curves.columns and curves[c].notna().any() for c in p[0])]
    if not panels:
        raise PlotError("plot_grpo_curves: none of the reward / kl / length columns has a value")
    ncols = 2 if len(panels) > 2 else len(panels)  # a 2 x 2 grid stays readable when shrunk (gallery, README)
    nrows = -(-len(panels) // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.4 * nrows), squeeze=False)
    axes = list(grid.ravel())
    for ax in axes[len(panels):]:
        ax.axis("off")
    axes = axes[: len(panels)]
    for ax, (cols, name, ylim) in zip(axes, panels):
        for k, cfg_name in enumerate(configs):
            d = curves[curves.config == cfg_name]
            col = next((c for c in cols if c in d.columns and d[c].notna().any()), None)
            if col is None:
                continue
            per_seed = d.pivot_table(index="step", columns="seed", values=col) if "seed" in d else \
                d.groupby("step")[[col]].mean()
            m = per_seed.mean(axis=1)
            colour = PALETTE[k % len(PALETTE)]
            ax.plot(m.index, m, color=colour, alpha=0.3, linewidth=0.8)
            ax.plot(m.index, m.rolling(smooth, min_periods=1, center=True).mean(), color=colour, linewidth=2,
                    label=labels.get(cfg_name, cfg_name))
            if per_seed.shape[1] > 1:
                ax.fill_between(m.index, per_seed.min(axis=1), per_seed.max(axis=1), color=colour, alpha=0.08,
                                linewidth=0)
        ax.set_title(name, fontsize=11)
        ax.set_xlabel("GRPO step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if ylim:
            ax.set_ylim(*ylim)
    n_seeds = int(curves["seed"].nunique()) if "seed" in curves else 1
    fig.text(0.5, -0.02, f"Lines: mean over {n_seeds} seed(s)" + (" (band: min-max over seeds)" if n_seeds > 1 else "")
             + (f"; thin: every logged step, thick: centred rolling mean of {smooth} steps" if smooth > 1 else
                "; no smoothing"), ha="center", va="top", fontsize=9, color="0.3")
    handles, names = axes[0].get_legend_handles_labels()
    for a in axes[1:]:  # the legend of the panel with the most configs
        h, n = a.get_legend_handles_labels()
        if len(n) > len(names):
            handles, names = h, n
    fig.legend(handles, names, loc="lower center", ncol=min(len(names), 4), bbox_to_anchor=(0.5, 1.0),
               frameon=False, fontsize=10)
    fig.tight_layout()
    return fig


def _seed_lines(curves: "pd.DataFrame", cfg_name: str, col: str) -> "pd.DataFrame":
    """``(step, seed)`` table of one logged column for one config (one column per seed)."""
    d = curves[curves.config == cfg_name].dropna(subset=[col])
    if "seed" in d:
        return d.pivot_table(index="step", columns="seed", values=col)
    return d.groupby("step")[[col]].mean()


def _draw_mean_band(ax: Any, per_seed: "pd.DataFrame", colour: str, label: str, smooth: int) -> None:
    m = per_seed.mean(axis=1)
    ax.plot(m.index, m, color=colour, alpha=0.3, linewidth=0.8)
    ax.plot(m.index, m.rolling(smooth, min_periods=1, center=True).mean(), color=colour, linewidth=2, label=label)
    if per_seed.shape[1] > 1:
        ax.fill_between(m.index, per_seed.min(axis=1), per_seed.max(axis=1), color=colour, alpha=0.12, linewidth=0)


def plot_semantic_reward(curves: "pd.DataFrame", configs: Sequence[str], labels: Mapping[str, str] | None = None,
                         *, smooth: int = 5) -> "Figure":
    """The semantic reward per GRPO step, each configuration against its own reward's range.

    Left: ``R_sem`` in [0, 2] of the set-distance configurations (``rewards/r_sem_<distance>/mean``), on an axis
    from 0 to 2. Right (when logged): EditGRPO's ``S_neg`` (``rewards/r_sem_neg/mean``), the negation-aware
    Chamfer *similarity* in [0, 1] that is one of its three reward components, not an ``R_sem``; on its own axis
    from 0 to 1. Lines: mean over seeds (thin: every step; thick: centred rolling mean of ``smooth`` steps), band:
    min-max over seeds. Colours follow the order of ``configs`` (as in :func:`plot_grpo_curves`); legends sit below
    the panels, never over the data.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    labels = dict(labels or {})
    if "step" not in curves or "config" not in curves:
        raise PlotError("plot_semantic_reward: curves need the columns 'step' and 'config'")
    sem, neg = {}, {}
    for cfg_name in configs:
        d = curves[curves.config == cfg_name]
        logged = [c for c in d.columns if c.startswith("rewards/r_sem_") and c.endswith("/mean") and d[c].notna().any()]
        for c in logged:
            (neg if c == "rewards/r_sem_neg/mean" else sem).setdefault(cfg_name, c)
    if not sem and not neg:
        raise PlotError("plot_semantic_reward: no configuration logs a rewards/r_sem_*/mean column")
    panels = [p for p in (("sem", sem), ("neg", neg)) if p[1]]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels), 4.2), squeeze=False)
    for ax, (kind, cols) in zip(axes[0], panels):
        for cfg_name, col in cols.items():
            k = list(configs).index(cfg_name)
            dist = col.split("/")[1].removeprefix("r_sem_")
            name = labels.get(cfg_name, cfg_name) + (f" (R_sem, {dist})" if kind == "sem" else " (S_neg)")
            _draw_mean_band(ax, _seed_lines(curves, cfg_name, col), PALETTE[k % len(PALETTE)], name, smooth)
        if kind == "sem":
            # a stratum-weighted reward (chamfer_recall_<a>_bal<w>) spans 0-2w: the axis shows all of it
            top = max([2.0] + [float(np.nanmax(curves.loc[curves.config == c, col])) for c, col in cols.items()])
            ax.set_ylim(0, 2.05 if top <= 2.0 else top * 1.025)
            ax.set_ylabel("R_sem = (1 - D_F) + (1 - D_I), range 0-2")
            ax.set_title("set-distance rewards: R_sem" + (" (a _bal<w> reward: up to 2w)" if top > 2.0 else ""))
        else:
            ax.set_ylim(0, 1.025)
            ax.set_ylabel("S_neg = 1 - D_neg / 2, range 0-1")
            ax.set_title("EditGRPO: its S_neg component (not R_sem)")
        ax.set_xlabel("GRPO step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, frameon=False)
    n_seeds = int(curves["seed"].nunique()) if "seed" in curves else 1
    fig.text(0.5, 1.0, f"mean over {n_seeds} seed(s), band: min-max over seeds; thick: rolling mean of {smooth} steps",
             ha="center", va="bottom", fontsize=9, color="0.3")
    fig.tight_layout()
    return fig


#: what each configuration's ``reward_groups/content_std`` measures, by the reward column it logs
_CONTENT_NAMES = (("rewards/r_f1_14/", "F1_14 + F1_ent + S_neg, 0-3"), ("rewards/r_fact/", "w_fact R_fact + w_check R_check"),
                  ("rewards/r_exact/", "R_exact, 0-2"), ("rewards/r_sem_", "R_sem, 0-2"))


def plot_reward_sparsity(curves: "pd.DataFrame", configs: Sequence[str], labels: Mapping[str, str] | None = None,
                         *, smooth: int = 3) -> "Figure":
    """How much a GRPO group's rewards spread, per configuration.

    Top: the share of groups in which no completion matches a reference section exactly (``R_exact = 0`` for all
    G, ``reward_groups/exact_all_zero``), mean over steps, bar = mean over seeds, whisker = min-max over seeds.
    Below: one panel per configuration with its own y axis from 0: the mean within-group std of *its own* content
    reward (``reward_groups/content_std``; the panel title names that reward and its range). The rewards have
    different ranges, so the panels are not drawn on one axis; a configuration without a content reward
    (R_fmt: std 0 throughout) is left out and named in the note.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    labels = dict(labels or {})
    need = {"step", "config", "reward_groups/exact_all_zero", "reward_groups/content_std"} - set(curves.columns)
    if need:
        raise PlotError(f"plot_reward_sparsity: curves lack the columns {sorted(need)}")
    have = [c for c in configs if (curves.config == c).any()]
    if not have:
        raise PlotError("plot_reward_sparsity: none of the configs has curves")
    content = []
    for c in have:
        v = curves.loc[curves.config == c, "reward_groups/content_std"]
        if v.notna().any() and float(v.abs().max()) > 0:
            content.append(c)
    skipped = [labels.get(c, c) for c in have if c not in content]
    ncols = min(4, max(len(content), 1))
    nrows = -(-len(content) // ncols) if content else 0
    fig = plt.figure(figsize=(3.8 * ncols + 0.6, 0.32 * len(have) + 1.6 + 3.0 * nrows))
    gs = fig.add_gridspec(1 + nrows, ncols, height_ratios=[0.32 * len(have) + 0.9] + [2.2] * nrows, hspace=0.95,
                          wspace=0.32)
    ax = fig.add_subplot(gs[0, :])
    per_run = curves[curves.config.isin(have)].groupby(["config", "seed"] if "seed" in curves else ["config"])[
        "reward_groups/exact_all_zero"].mean()
    for y, c in enumerate(have):
        v = np.atleast_1d(per_run.loc[c].to_numpy(dtype=np.float64))
        m = float(np.nanmean(v))
        ax.barh(y, m, color=PALETTE[list(configs).index(c) % len(PALETTE)], height=0.65)
        if len(v) > 1:
            ax.errorbar(m, y, xerr=[[m - np.nanmin(v)], [np.nanmax(v) - m]], color="black", capsize=3, linewidth=1)
        ax.text(min(float(np.nanmax(v)), 1.0) + 0.012, y, f"{m:.2f}", va="center", fontsize=9)
    ax.set_yticks(range(len(have)), [labels.get(c, c) for c in have])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("share of groups with R_exact = 0 for every completion (mean over steps; whisker: min-max over seeds)")
    ax.set_title("(a) exact match is sparse: groups in which no completion matches a reference section", loc="left")
    axes = []
    for i, c in enumerate(content):
        a = fig.add_subplot(gs[1 + i // ncols, i % ncols])
        d = curves[curves.config == c]
        logged = [col for col in d.columns if col.endswith("/mean") and d[col].notna().any()]
        what = next((n for pre, n in _CONTENT_NAMES if any(col.startswith(pre) for col in logged)), "content reward")
        _draw_mean_band(a, _seed_lines(curves, c, "reward_groups/content_std"),
                        PALETTE[list(configs).index(c) % len(PALETTE)], labels.get(c, c), smooth)
        a.set_ylim(0, None)
        a.set_title(f"{labels.get(c, c)}\n({what})", fontsize=10)
        a.set_xlabel("GRPO step")
        a.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
        if i % ncols == 0:
            a.set_ylabel("within-group std")
        axes.append(a)
    if axes:
        axes[0].figure.text(0.02, axes[0].get_position().y1 + 0.62 / fig.get_figheight(),  # above 2-line titles
                            "(b) within-group std of each configuration's own content reward (own axis, from 0)",
                            fontsize=11, ha="left", va="bottom")
    n_seeds = int(curves["seed"].nunique()) if "seed" in curves else 1
    note = (f"(b): mean over {n_seeds} seed(s), band min-max over seeds, thick: rolling mean of {smooth} steps."
            + (f" Without a content reward (std 0): {', '.join(skipped)}." if skipped else ""))
    fig.text(0.02, 0.0, note, fontsize=9, color="0.3", ha="left", va="top")
    return fig


def plot_selection_space(bank_xy: Any, cand_xy: Any, chosen: int, *, title: str = "",
                         xlabel: str = "PC 1", ylabel: str = "PC 2") -> "Figure":
    """Paper Fig. 2b: best-of-K selection in 2-D: the bank's reports (grey), the K candidates (numbered) and the
    chosen one (star). ``bank_xy`` ``(n, 2)``, ``cand_xy`` ``(K, 2)``: positions in one projection. The legend sits
    below the axes, the candidate numbers avoid each other and the points."""
    import matplotlib.pyplot as plt

    B, C = np.asarray(bank_xy, dtype=np.float64), np.asarray(cand_xy, dtype=np.float64)
    if B.ndim != 2 or B.shape[1] != 2 or C.ndim != 2 or C.shape[1] != 2 or not len(C):
        raise PlotError(f"plot_selection_space: need (n, 2) and (K, 2) positions, got {B.shape} and {C.shape}")
    if not 0 <= int(chosen) < len(C):
        raise PlotError(f"plot_selection_space: chosen = {chosen} is not one of the {len(C)} candidates")
    fig, ax = plt.subplots(figsize=(6.0, 5.4))
    ax.scatter(B[:, 0], B[:, 1], s=6, color="0.6", alpha=0.45, label="bank reports", zorder=1)
    ax.scatter(C[:, 0], C[:, 1], s=55, color=PALETTE[1], edgecolor="black", linewidth=0.7, label="candidates",
               zorder=3)
    ax.scatter(*C[int(chosen)], s=300, marker="*", color=PALETTE[3], edgecolor="black", linewidth=0.8,
               label="chosen candidate", zorder=4)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    fig.tight_layout()
    _place_labels(ax, C, [f"#{j}" for j in range(len(C))], ["black"] * len(C), fontsize=10, fontweight="bold",
                  zorder=5)
    return fig


def plot_improvement_heatmap(table: "pd.DataFrame", *, title: str = "") -> "Figure":
    """Notebook 05's Figs. 3-5: a table of % improvement over random (rows: selection methods or distances,
    columns: metrics or policies) drawn by :func:`plot_value_heatmap` (one diverging colour scale for the whole
    table, centred at 0 so the sign reads from the colour, one decimal). A NaN cell (random's value is 0, so no relative change exists, or no parseable candidate) is drawn
    grey with the label ``n/a``. Example: ``plot_improvement_heatmap(summary[["BS-F1", "CXB-14"]])``."""
    V = table.to_numpy(dtype=np.float64)
    ok = np.isfinite(V)
    fig = plot_value_heatmap(table.where(ok, 0.0), title=title, fmt=".1f", center=0.0,
                             cbar_label="% improvement over random (0 = random; purple above, orange below)")
    ax = fig.axes[0]
    if not ok.all():  # grey over the n/a cells, so that they do not read as 0
        from matplotlib.colors import ListedColormap

        ax.imshow(np.ma.masked_array(np.ones_like(V), mask=ok), cmap=ListedColormap(["0.85"]), aspect="auto",
                  vmin=0, vmax=1, zorder=1)
    texts = ax.texts  # one per cell, row-major (plot_value_heatmap's order)
    for (i, j), good in np.ndenumerate(ok):
        if not good:
            texts[i * V.shape[1] + j].set_text("n/a")
            texts[i * V.shape[1] + j].set_color("black")
    return fig


def plot_pruning_sweep(sweep: "pd.DataFrame", key: str, *, k: int, n_studies: int, section: str = "Findings",
                       ci: float = 0.95) -> "Figure":
    """Pruning quality vs tokens saved over the (p, warm-up) sweep, one panel per policy x distance.

    ``sweep``: one row per ``policy``, ``distance``, ``p``, ``wu`` with ``tokens saved %``, the metric ``key`` of
    the survivors and the ``standard`` / ``random`` values; optional ``<key> lo`` / ``<key> hi`` (error bars) and
    ``standard lo`` / ``standard hi`` (a band around the standard line): bootstrap intervals over the studies
    (:func:`result_ci`). Distances whose rows are identical within a policy (they picked the same survivors) share
    one panel, titled with both names. Every panel shares the y axis, so the scale of the differences is the same
    everywhere; the note under the figure says how many studies each point averages.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    need = {"policy", "distance", "p", "wu", "tokens saved %", key, "standard", "random"} - set(sweep.columns)
    if need:
        raise PlotError(f"plot_pruning_sweep: sweep lacks the columns {sorted(need)}")
    if sweep.empty:
        raise PlotError("plot_pruning_sweep: the sweep is empty")
    policies = list(dict.fromkeys(sweep.policy))
    cols = ["tokens saved %", key]

    def differs(a: Any, b: Any) -> np.ndarray:  # per (p, wu) of a: does b's row differ?
        m = a.merge(b, on=["p", "wu"], how="left", suffixes=("", "_b"))
        return ~np.all([np.isclose(m[c], m[f"{c}_b"], rtol=0, atol=1e-9) for c in cols], axis=0)

    rows = []  # per policy: [(names, frames)], a distance that agrees with an earlier one on most settings joins it
    for pol in policies:
        groups: list[tuple[list[str], list[Any]]] = []
        for n in dict.fromkeys(sweep[sweep.policy == pol].distance):
            d = sweep[(sweep.policy == pol) & (sweep.distance == n)].sort_values(["p", "wu"])
            for names, frames in groups:
                if differs(frames[0], d).mean() <= 0.5:
                    names.append(n); frames.append(d)
                    break
            else:
                groups.append(([n], [d]))
        rows.append(groups)
    ncols = max(len(g) for g in rows)
    fig, axes = plt.subplots(len(rows), ncols, figsize=(4.3 * ncols + 2.2, 3.6 * len(rows)), squeeze=False,
                             sharey=True)
    ps, wus = sorted(sweep.p.unique()), sorted(sweep.wu.unique())
    cmap = plt.get_cmap("viridis")
    colour = {p: cmap(0.85 * i / max(len(ps) - 1, 1)) for i, p in enumerate(ps)}
    markers = dict(zip(wus, "oXsD^v"))
    has_ci = {f"{key} lo", f"{key} hi"} <= set(sweep.columns)
    has_band = {"standard lo", "standard hi"} <= set(sweep.columns)
    for r, (pol, groups) in enumerate(zip(policies, rows)):
        for c in range(ncols):
            ax = axes[r][c]
            if c >= len(groups):
                ax.axis("off")
                continue
            names, frames = groups[c]
            d = frames[0]
            if has_band:
                ax.axhspan(d["standard lo"].iloc[0], d["standard hi"].iloc[0], color="0.85", zorder=0)
            ax.axhline(d.standard.iloc[0], color="black", ls="--", lw=1.2, zorder=1)
            ax.axhline(d.random.iloc[0], color="0.4", ls=":", lw=1.2, zorder=1)
            notes = []
            for f_i, f in enumerate(frames):
                draw = f if f_i == 0 else f[differs(f, frames[0])]
                if f_i and not np.isclose(f.standard.iloc[0], d.standard.iloc[0], rtol=0, atol=1e-9):
                    ax.axhline(f.standard.iloc[0], color="black", ls="--", lw=0.8, zorder=1)  # its own standard pick
                if f_i:
                    notes.append(f"{names[f_i]}: same picks" if draw.empty else
                                 f"{names[f_i]}: same except {len(draw)} of {len(f)} (hollow)")
                for _, row in draw.iterrows():
                    yerr = [[row[key] - row[f"{key} lo"]], [row[f"{key} hi"] - row[key]]] if has_ci else None
                    ax.errorbar(row["tokens saved %"], row[key], yerr=yerr, fmt=markers.get(row.wu, "o"),
                                color=colour[row.p], markersize=8, markeredgecolor="black" if f_i == 0 else colour[row.p],
                                markeredgewidth=0.5 if f_i == 0 else 1.8,
                                markerfacecolor=colour[row.p] if f_i == 0 else "white", elinewidth=1, capsize=2,
                                zorder=3)
            ax.set_title(f"{pol} · {names[0]}" + "".join(f"\n{t}" for t in notes), fontsize=10)
            ax.set_xlabel("tokens saved vs K full generations (%)")
            ax.set_ylabel(f"{key}, {section}" if c == 0 else "")
    handles = ([Line2D([], [], marker="o", ls="", color=colour[p], markeredgecolor="black", markersize=8,
                       label=f"p = {p:g}") for p in ps]
               + [Line2D([], [], marker=markers.get(w, "o"), ls="", color="0.5", markeredgecolor="black",
                         markersize=8, label=f"warm-up = {w:g}") for w in wus]
               + [Line2D([], [], color="black", ls="--", label=f"standard best-of-{k}"),
                  Line2D([], [], color="0.4", ls=":", label="random pick")])
    if has_band:
        from matplotlib.patches import Patch
        handles.append(Patch(color="0.85", label=f"standard: {ci:.0%} CI"))
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.suptitle(f"Pruning replayed over p x warm-up ({n_studies} studies per policy)")
    fig.tight_layout()
    note = (f"Each point: the survivors' corpus {key} over {n_studies} studies"
            + (f"; bars: {ci:.0%} bootstrap CI over studies" if has_ci else "")
            + ". The y axis is zoomed: differences smaller than the bars are noise.")
    fig.text(0.02, 0.0, note, fontsize=9, color="0.3", ha="left", va="top")
    return fig


def plot_gallery(paths: Sequence[str | Path], titles: Sequence[str], *, ncols: int = 3,
                 row_px: int = 2600) -> "Figure":
    """Finished figures (PNG files) laid out near their own size, one title each: an overview of a run.

    Rows are filled in order with at most ``ncols`` figures whose widths (in pixels) add up to at most ``row_px``;
    a row wider than that is shrunk to fit, so a wide figure gets a row of its own and every figure is shown at
    no less than ``row_px`` / its own width of its size (text stays readable at the saved resolution).
    """
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt

    if len(paths) != len(titles):
        raise PlotError(f"plot_gallery: {len(paths)} paths but {len(titles)} titles")
    if not paths:
        raise PlotError("plot_gallery: no figures to show")
    imgs = []
    for p in paths:
        if not Path(p).is_file():
            raise PlotError(f"plot_gallery: {p} does not exist")
        imgs.append(mpimg.imread(str(p)))
    rows: list[list[int]] = [[]]
    for i, im in enumerate(imgs):
        cur = rows[-1]
        if cur and (len(cur) >= ncols or sum(imgs[j].shape[1] for j in cur) + im.shape[1] > row_px):
            rows.append([i])
        else:
            cur.append(i)
    title_px, pad = 60, 30
    layout, y = [], 0.0
    for row in rows:
        w = sum(imgs[j].shape[1] for j in row) + pad * (len(row) - 1)
        s = min(1.0, row_px / w)
        h = max(imgs[j].shape[0] for j in row) * s
        x = (row_px - w * s) / 2
        for j in row:
            layout.append((j, x, y + title_px, imgs[j].shape[1] * s, imgs[j].shape[0] * s))
            x += (imgs[j].shape[1] + pad) * s
        y += h + title_px + pad
    W, H = float(row_px), y
    fig = plt.figure(figsize=(W / DPI, H / DPI))
    for j, x0, y0, w, h in layout:
        ax = fig.add_axes((x0 / W, 1 - (y0 + h) / H, w / W, h / H))
        ax.imshow(imgs[j])
        ax.axis("off")
        ax.set_title(titles[j], fontsize=14)
    return fig
