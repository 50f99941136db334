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

The house style (:func:`style`) fixes the resolution (:data:`DPI`), readable font sizes and a
colour-blind-safe colour cycle (Okabe-Ito, :data:`PALETTE`). Figure helpers used by the notebooks:
:func:`plot_report_embedding` (paper Fig. 1), :func:`set_distance_links` / :func:`plot_set_distance`
(Fig. 2a), :func:`plot_column_heatmap` (a table whose columns have their own scales),
:func:`plot_grpo_curves` (GRPO training curves, one panel per reward range), :func:`plot_gallery`
(thumbnails of finished figures).
"""

from __future__ import annotations

import contextlib
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np

from sdrlib.distances import set_distance
from sdrlib.distances.costs import as_pair, cosine_cost, rescale
from sdrlib.results import DPI, PlotError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["DPI", "PALETTE", "style", "PlotError", "plot_report_embedding", "set_distance_links",
           "plot_set_distance", "plot_column_heatmap", "plot_grpo_curves", "plot_gallery"]

#: Okabe-Ito colours (distinguishable under the common colour-vision deficiencies), in cycle order
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")


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


# --------------------------------------------------------------------------------------------------
# Figure helpers. Each returns a matplotlib Figure and saves nothing; wrap the call in ``with style():``.


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width) or [""]


def _pca2(X: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """2-D PCA fitted on the rows of ``X``, applied to ``X`` and ``others`` (fixed signs: deterministic)."""
    X = np.asarray(X, dtype=np.float64)
    mu = X.mean(axis=0)
    _, _, vt = np.linalg.svd(X - mu, full_matrices=False)
    W = vt[:2].T
    if W.shape[1] < 2:  # fewer than two directions of spread: pad with zeros
        W = np.pad(W, ((0, 0), (0, 2 - W.shape[1])))
    W = W * np.where(W[np.abs(W).argmax(axis=0), range(2)] < 0, -1.0, 1.0)  # largest loading positive
    return [(np.asarray(Y, dtype=np.float64) - mu) @ W for Y in (X, *others)]


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
    xy, cxy = _pca2(fit, fit)[1], None
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
    for t, (x, y) in zip(tags, xy):
        ax_p.annotate(t, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=9, fontweight="bold", zorder=4)
    ax_p.set_xlabel("PC 1")
    ax_p.set_ylabel("PC 2")
    ax_p.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8, frameon=False)
    ax_p.set_title("(c) the set in 2-D (PCA)", loc="left")
    if title:
        fig.suptitle(title, y=1.02)
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

    ``A`` ``(n, d)`` / ``B`` ``(m, d)``: the embeddings of ``a_sentences`` (amber circles ``G1..Gn``) and
    ``b_sentences`` (slate squares ``R1..Rm``). Top row, one panel per distance on the same 2-D PCA
    projection of both sets (positions are only a picture; every number is the true cosine cost in ``d``
    dimensions): Chamfer's nearest-neighbour links in both directions, Hausdorff's single worst link, and the
    exact OT plan (line width = transported mass). Under each panel the links it uses with their values;
    at the bottom the sentences.
    """
    import matplotlib.pyplot as plt

    A = _check_rows(a_sentences, A, a_name)
    B = _check_rows(b_sentences, B, b_name)
    L = set_distance_links(A, B)
    xa, xb = _pca2(np.concatenate([A, B]), A, B)[1:]
    amber, slate, red, green = PALETTE[1], "#44546A", PALETTE[3], PALETTE[2]
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
        ax.scatter(xa[:, 0], xa[:, 1], s=80, color=amber, edgecolor="black", linewidth=0.6, zorder=4,
                   label=f"G: {a_name}")
        ax.scatter(xb[:, 0], xb[:, 1], s=80, color=slate, marker="s", edgecolor="black", linewidth=0.6,
                   zorder=4, label=f"R: {b_name}")
        # G labels up-left, R labels down-right, so a close G-R pair stays readable; a point close to an
        # earlier point of its own set takes the opposite corner (up-right / down-left) instead
        span = float(np.ptp(np.vstack([xa, xb]), axis=0).max()) or 1.0

        def corner(pts: np.ndarray, i: int, first: tuple, second: tuple) -> tuple:
            close = any(np.linalg.norm(pts[i] - pts[j]) < 0.08 * span for j in range(i))
            return second if close else first

        for i, (t, (x, y)) in enumerate(zip(ta, xa)):
            (dx, dy), ha, va = corner(xa, i, ((-7, 6), "right", "bottom"), ((7, 6), "left", "bottom"))
            ax.annotate(t, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=10,
                        fontweight="bold", color="#8a5a00", zorder=5)
        for i, (t, (x, y)) in enumerate(zip(tb, xb)):
            (dx, dy), ha, va = corner(xb, i, ((7, -7), "left", "top"), ((-7, -7), "right", "top"))
            ax.annotate(t, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=10,
                        fontweight="bold", color=slate, zorder=5)
        ax.set_xticks([]); ax.set_yticks([])
        ax.margins(0.18)
        ax.set_aspect("equal", adjustable="datalim")

    def link(ax: Any, p: np.ndarray, q: np.ndarray, **kw: Any) -> None:
        ax.annotate("", xy=q, xytext=p, arrowprops={"arrowstyle": "-|>", "shrinkA": 7, "shrinkB": 7,
                                                    "mutation_scale": 12, **kw}, zorder=3)

    def note(ax: Any, lines: list[str]) -> None:
        ax.axis("off")
        ax.text(0.02, 1.0, "\n".join(lines), va="top", ha="left", fontsize=9, family="monospace",
                transform=ax.transAxes)

    ax = axes[0]; base(ax)
    for i, j in enumerate(L["nn_ab"]):
        link(ax, xa[i], xb[j], color=amber, linestyle="--", linewidth=1.4)
    for j, i in enumerate(L["nn_ba"]):
        link(ax, xb[j], xa[i], color=slate, linestyle=":", linewidth=1.4)
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
    link(ax, p, q, color=red, linewidth=2.8)
    ax.set_title(f"Hausdorff = {L['hausdorff']:.3f}\nthe worst nearest-neighbour link alone", fontsize=10)
    worst_ab = max(range(len(A)), key=lambda i: M[i, L["nn_ab"][i]])
    worst_ba = max(range(len(B)), key=lambda j: M[L["nn_ba"][j], j])
    note(notes[1], [f"worst G→R: {ta[worst_ab]}→{tb[L['nn_ab'][worst_ab]]} {M[worst_ab, L['nn_ab'][worst_ab]]:.3f}",
                    f"worst R→G: {tb[worst_ba]}→{ta[L['nn_ba'][worst_ba]]} {M[L['nn_ba'][worst_ba], worst_ba]:.3f}",
                    f"Hausdorff = max = {L['hausdorff']:.3f} ({name}, red);",
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

    ax = fig.add_subplot(gs[2, :]); ax.axis("off")
    dy = 1.0 / max(n_sent + 1, 4)
    for col, (head, tags, sents, c) in enumerate(((a_name, ta, a_sentences, "#8a5a00"),
                                                  (b_name, tb, b_sentences, slate))):
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
            "M = (1 - a·b) / 2 in the full embedding space; OT works on the rescaled M~.", fontsize=8,
            color="0.3", va="top", transform=ax.transAxes)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.965 if title else 0.995), ncol=2,
               frameon=False, fontsize=9)
    if title:
        fig.suptitle(title, y=0.995)
    return fig


def plot_column_heatmap(table: "pd.DataFrame", *, title: str = "", fmt: str = ".2f",
                        cbar_label: str = "share of the column's largest value") -> "Figure":
    """A heatmap whose colour is scaled per column (value / column max): for tables whose values are
    comparable within a column only (e.g. each distance's reaction to edits). Cells show the raw values."""
    import matplotlib.pyplot as plt

    V = table.to_numpy(dtype=np.float64)
    if V.size == 0:
        raise PlotError("plot_column_heatmap: the table is empty")
    if not np.isfinite(V).all():
        raise PlotError("plot_column_heatmap: the table holds NaN or inf")
    top = np.abs(V).max(axis=0)
    S = V / np.where(top > 0, top, 1.0)
    fig, ax = plt.subplots(figsize=(0.72 * V.shape[1] + 3.0, 0.48 * V.shape[0] + 1.8))
    im = ax.imshow(S, cmap="viridis_r", vmin=0, vmax=1, aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(V.shape[1]), [str(c) for c in table.columns], rotation=50, ha="right")
    ax.set_yticks(range(V.shape[0]), [str(i) for i in table.index])
    for (i, j), v in np.ndenumerate(V):
        ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize=8,
                color="white" if S[i, j] > 0.55 else "black")
    fig.colorbar(im, ax=ax, fraction=0.025, pad=0.02, label=cbar_label)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


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
    fig, axes = plt.subplots(1, len(panels), figsize=(4.1 * len(panels), 3.3), squeeze=False)
    for ax, (cols, name, ylim) in zip(axes[0], panels):
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
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("GRPO step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if ylim:
            ax.set_ylim(*ylim)
    n_seeds = int(curves["seed"].nunique()) if "seed" in curves else 1
    fig.text(0.5, -0.02, f"Lines: mean over {n_seeds} seed(s)" + (" (band: min-max over seeds)" if n_seeds > 1 else "")
             + (f"; thin: every logged step, thick: centred rolling mean of {smooth} steps" if smooth > 1 else
                "; no smoothing"), ha="center", va="top", fontsize=9, color="0.3")
    handles, names = axes[0][0].get_legend_handles_labels()
    for a in axes[0][1:]:  # the legend of the panel with the most configs
        h, n = a.get_legend_handles_labels()
        if len(n) > len(names):
            handles, names = h, n
    fig.legend(handles, names, loc="lower center", ncol=len(names), bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def plot_gallery(paths: Sequence[str | Path], titles: Sequence[str], *, ncols: int = 3,
                 width: float = 5.0) -> "Figure":
    """Thumbnails of finished figures (PNG files) in a grid, one title each: an overview of a run."""
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
    ncols = max(1, min(ncols, len(imgs)))
    nrows = -(-len(imgs) // ncols)
    heights = [max(im.shape[0] / im.shape[1] for im in imgs[r * ncols:(r + 1) * ncols]) for r in range(nrows)]
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, width * sum(heights) + 0.45 * nrows),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, im, t in zip(axes.ravel(), imgs, titles):
        ax.imshow(im)
        ax.set_title(t, fontsize=11)
    fig.tight_layout()
    return fig
