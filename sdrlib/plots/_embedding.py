"""Notebook 01's figures: one report as its set of sentence embeddings (paper Fig. 1) and the sentence geometry
(a cosine heatmap of sentence pairs, a nearest-neighbour histogram).

Draws only: the projection is :func:`sdrlib.selection.pca_2d`, every other number is the caller's. Left out:
computing embeddings or similarities (:mod:`sdrlib.embedding`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sdrlib.plots._layout import _check_rows, _place_labels, _wrap
from sdrlib.plots._style import PALETTE
from sdrlib.results import PlotError
from sdrlib.selection import pca_2d

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["plot_report_embedding", "plot_sentence_geometry"]


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
