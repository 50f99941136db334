"""Notebook 02's figures: two sentence sets with the links Chamfer, Hausdorff and OT read (paper Fig. 2a), the
distance engine's speed against the per-pair reference, and the fidelity of each setting to label disagreement.

:func:`set_distance_links` computes what Fig. 2a draws, with the registry's values
(:func:`sdrlib.distances.set_distance`), so every number in the figure is a reward's number. Left out: timing
(:mod:`sdrlib.distances.timing`) and the fidelity study itself (:mod:`sdrlib.experiments.fidelity`); their tables
come in, figures go out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sdrlib.distances import set_distance
from sdrlib.distances.costs import as_pair, cosine_cost, rescale
from sdrlib.experiments.fidelity import FidelityError
from sdrlib.plots._layout import _check_rows, _place_labels, _wrap
from sdrlib.plots._style import PALETTE
from sdrlib.selection import pca_2d

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["set_distance_links", "plot_set_distance", "plot_engine_speed", "plot_fidelity"]

#: Fig. 2a's colours (Okabe-Ito): the generated set vermillion, the reference blue, the Hausdorff link black and
#: the OT plan bluish green
_GEN, _REF, _WORST, _GREEN = PALETTE[3], PALETTE[0], PALETTE[6], PALETTE[2]

#: plot_fidelity's bar colours: the paper's settings blue, ours orange
_PAPER, _OURS = PALETTE[0], PALETTE[1]


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

@dataclass(frozen=True)
class _Pair:
    """The two sets of Fig. 2a as drawn: 2-D positions ``xa`` ``(n, 2)`` and ``xb`` ``(m, 2)``, their tags
    (``G1..Gn``, ``R1..Rm``) and the sets' names."""

    xa: np.ndarray
    xb: np.ndarray
    ta: list[str]
    tb: list[str]
    a_name: str
    b_name: str


def _base(ax: Any, s: _Pair) -> None:
    """Both sets' points on one panel, without ticks, at equal aspect."""
    ax.scatter(s.xa[:, 0], s.xa[:, 1], s=80, color=_GEN, edgecolor="black", linewidth=0.6, zorder=4,
               label=f"G: {s.a_name}")
    ax.scatter(s.xb[:, 0], s.xb[:, 1], s=80, color=_REF, marker="s", edgecolor="black", linewidth=0.6,
               zorder=4, label=f"R: {s.b_name}")
    ax.set_xticks([]); ax.set_yticks([])
    ax.margins(0.18)
    ax.set_aspect("equal", adjustable="datalim")


def _labels(ax: Any, s: _Pair) -> None:
    """The points' tags; call after the links, so that the labels avoid every point and each other."""
    _place_labels(ax, np.vstack([s.xa, s.xb]), s.ta + s.tb, [_GEN] * len(s.ta) + [_REF] * len(s.tb), fontsize=10,
                  fontweight="bold", zorder=5)


def _link(ax: Any, p: np.ndarray, q: np.ndarray, **kw: Any) -> None:
    """An arrow from ``p`` to ``q`` (2-D positions); ``kw`` are its arrow properties."""
    ax.annotate("", xy=q, xytext=p, arrowprops={"arrowstyle": "-|>", "shrinkA": 7, "shrinkB": 7,
                                                "mutation_scale": 12, **kw}, zorder=3)


def _note(ax: Any, lines: list[str]) -> None:
    """``lines`` in monospace on an axis-free panel (the links a distance uses, under its panel)."""
    ax.axis("off")
    ax.text(0.02, 1.0, "\n".join(lines), va="top", ha="left", fontsize=9, family="monospace",
            transform=ax.transAxes)


def _chamfer_panel(ax: Any, note_ax: Any, s: _Pair, L: dict[str, Any]) -> None:
    """Chamfer: every nearest-neighbour link in both directions, and the two directed means under the panel."""
    xa, xb, ta, tb, M = s.xa, s.xb, s.ta, s.tb, L["cost"]
    _base(ax, s)
    for i, j in enumerate(L["nn_ab"]):
        _link(ax, xa[i], xb[j], color=_GEN, linestyle="--", linewidth=1.4)
    for j, i in enumerate(L["nn_ba"]):
        _link(ax, xb[j], xa[i], color=_REF, linestyle=":", linewidth=1.4)
    ax.set_title(f"Chamfer = {L['chamfer']:.3f}\nmean of all nearest-neighbour links", fontsize=10)
    ab = [f"{ta[i]}→{tb[j]} {M[i, j]:.3f}" for i, j in enumerate(L["nn_ab"])]
    ba = [f"{tb[j]}→{ta[i]} {M[i, j]:.3f}" for j, i in enumerate(L["nn_ba"])]
    chunk = lambda xs: ["   " + "  ".join(xs[k:k + 3]) for k in range(0, len(xs), 3)]  # noqa: E731
    _note(note_ax, ["G→R, dashed (each G to its nearest R):"] + chunk(ab) + [f"   mean {L['mean_ab']:.3f}"]
          + ["R→G, dotted (each R to its nearest G):"] + chunk(ba) + [f"   mean {L['mean_ba']:.3f}"]
          + [f"Chamfer = ½ ({L['mean_ab']:.3f} + {L['mean_ba']:.3f}) = {L['chamfer']:.3f}"])


def _hausdorff_panel(ax: Any, note_ax: Any, s: _Pair, L: dict[str, Any]) -> None:
    """Hausdorff: the nearest-neighbour links in grey, the worst one in black, and both directions' worst links."""
    xa, xb, ta, tb, M = s.xa, s.xb, s.ta, s.tb, L["cost"]
    _base(ax, s)
    for i, j in enumerate(L["nn_ab"]):
        _link(ax, xa[i], xb[j], color="0.72", linestyle="--", linewidth=1.0)
    for j, i in enumerate(L["nn_ba"]):
        _link(ax, xb[j], xa[i], color="0.72", linestyle=":", linewidth=1.0)
    direction, i, j = L["hausdorff_link"]
    p, q = (xa[i], xb[j]) if direction == "ab" else (xb[j], xa[i])
    name = f"{ta[i]}→{tb[j]}" if direction == "ab" else f"{tb[j]}→{ta[i]}"
    _link(ax, p, q, color=_WORST, linewidth=2.8)
    ax.set_title(f"Hausdorff = {L['hausdorff']:.3f}\nthe worst nearest-neighbour link alone", fontsize=10)
    worst_ab = max(range(len(xa)), key=lambda i: M[i, L["nn_ab"][i]])
    worst_ba = max(range(len(xb)), key=lambda j: M[L["nn_ba"][j], j])
    _note(note_ax, [f"worst G→R: {ta[worst_ab]}→{tb[L['nn_ab'][worst_ab]]} {M[worst_ab, L['nn_ab'][worst_ab]]:.3f}",
                    f"worst R→G: {tb[worst_ba]}→{ta[L['nn_ba'][worst_ba]]} {M[L['nn_ba'][worst_ba], worst_ba]:.3f}",
                    f"Hausdorff = max = {L['hausdorff']:.3f} ({name}, black);",
                    "every other link (grey) is ignored"])


def _ot_panel(ax: Any, note_ax: Any, s: _Pair, L: dict[str, Any]) -> None:
    """OT: the exact plan's links (line width = mass) and, under the panel, its first ten entries."""
    xa, xb, ta, tb = s.xa, s.xb, s.ta, s.tb
    M, Mt, P = L["cost"], L["cost_scaled"], L["plan"]
    _base(ax, s)
    pmax = float(P.max()) or 1.0
    edges = list(zip(*np.nonzero(P > 1e-12)))
    for i, j in edges:
        _link(ax, xa[i], xb[j], color=_GREEN, linewidth=0.8 + 4.0 * P[i, j] / pmax)
    ax.set_title(f"OT = {L['ot']:.3f}\nexact transport plan, width = mass", fontsize=10)
    _note(note_ax, [f"mass: each G sends 1/{len(xa)}, each R takes 1/{len(xb)};",
                    f"cost M~ = M / max M (max M = {M.max():.3f})"]
          + [f"{ta[i]}→{tb[j]}  mass {P[i, j]:.3f}  M~ {Mt[i, j]:.3f}" for i, j in edges[:10]]
          + ([f"... {len(edges) - 10} more"] if len(edges) > 10 else [])
          + [f"OT = sum mass x M~ = {L['ot']:.3f}"])


def _sentences_panel(ax: Any, s: _Pair, a_sentences: Sequence[str], b_sentences: Sequence[str], wrap: int,
                     n_sent: int) -> None:
    """The two sets' sentences side by side, each under its tag, and a note on what positions and numbers mean."""
    ax.axis("off")
    dy = 1.0 / max(n_sent + 1, 4)
    for col, (head, tags, sents, c) in enumerate(((s.a_name, s.ta, a_sentences, _GEN),
                                                  (s.b_name, s.tb, b_sentences, _REF))):
        x0, y = 0.5 * col, 1.0
        ax.text(x0, y, head, fontweight="bold", fontsize=10, va="top", transform=ax.transAxes)
        y -= dy
        for t, sent in zip(tags, sents):
            for k, part in enumerate(_wrap(sent, wrap)):
                if k == 0:
                    ax.text(x0, y, t, color=c, fontweight="bold", fontsize=9, va="top", transform=ax.transAxes)
                ax.text(x0 + 0.03, y, part, fontsize=9, va="top", transform=ax.transAxes)
                y -= dy
    ax.text(0.0, y - 0.3 * dy, "Positions: 2-D PCA of both sets (a picture only). Numbers: the cosine cost "
            "M = (1 - a·b) / 2 in the full embedding space; OT works on the rescaled M~.", fontsize=9,
            color="0.3", va="top", transform=ax.transAxes)



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
    s = _Pair(xa, xb, [f"G{i + 1}" for i in range(len(A))], [f"R{j + 1}" for j in range(len(B))], a_name, b_name)
    P = L["plan"]

    n_sent = max(sum(len(_wrap(t, wrap)) for t in a_sentences), sum(len(_wrap(t, wrap)) for t in b_sentences))
    n_links = max(2 * ((len(A) + 2) // 3 + (len(B) + 2) // 3) + 1, min(int((P > 1e-12).sum()), 11) + 3)
    fig = plt.figure(figsize=(15, 5.0 + 0.2 * n_links + 0.22 * n_sent))
    gs = fig.add_gridspec(3, 3, height_ratios=[4.2, 0.3 * n_links + 0.4, 0.3 * n_sent + 0.5], hspace=0.12,
                          wspace=0.08)
    axes = [fig.add_subplot(gs[0, k]) for k in range(3)]
    notes = [fig.add_subplot(gs[1, k]) for k in range(3)]
    _chamfer_panel(axes[0], notes[0], s, L)
    _hausdorff_panel(axes[1], notes[1], s, L)
    _ot_panel(axes[2], notes[2], s, L)
    for ax in axes:
        _labels(ax, s)
    _sentences_panel(fig.add_subplot(gs[2, :]), s, a_sentences, b_sentences, wrap, n_sent)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.965 if title else 0.995), ncol=2,
               frameon=False, fontsize=9)
    if title:
        fig.suptitle(title, y=0.995)
    return fig


def plot_engine_speed(speed: "pd.DataFrame", *, title: str = "") -> "Figure":
    """Bars of microseconds per pair, reference (grey) and engine (house colour ``C0``), log scale, each setting
    labelled with its speed-up. ``speed``: rows of :func:`sdrlib.distances.timing.compare` (``setting, ref_us,
    engine_us, speedup``). Draw inside :func:`style`. Returns the Figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    x = np.arange(len(speed))
    ax.bar(x - 0.2, speed["ref_us"], 0.4, label="per-pair reference (POT / SciPy)", color="0.65")
    ax.bar(x + 0.2, speed["engine_us"], 0.4, label="batched engine", color="C0")
    ax.set_yscale("log")
    ax.set_xticks(x, speed["setting"], rotation=30, ha="right")
    ax.set_ylabel("microseconds per pair")
    for i, s in enumerate(speed["speedup"]):
        ax.text(i - 0.2, speed["ref_us"].iloc[i] * 1.15, f"{s:.0f}x", ha="center", fontsize=9)  # over the reference bar
    ax.set_ylim(top=float(speed["ref_us"].max()) * 3)  # room for the speed-up labels
    ax.yaxis.set_minor_formatter(plt.NullFormatter())
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    if title:
        ax.set_title(title)
    return fig


def plot_fidelity(table: "pd.DataFrame", *, target: str = "jaccard", stratum: str = "all", measure: str = "spearman",
                  ax: Any = None) -> "Figure":
    """Ranked horizontal bars of one correlation with CI whiskers, coloured by origin (paper / ours).

    ``table`` is :attr:`sdrlib.experiments.fidelity.FidelityResult.table`; an unknown ``measure`` or no row for
    ``target`` / ``stratum`` raises :class:`sdrlib.experiments.fidelity.FidelityError`. Draws on ``ax`` when given.
    Returns the matplotlib Figure. Draw it inside ``with style():`` for the house style.
    """
    import matplotlib.pyplot as plt

    if measure not in ("spearman", "kendall"):
        raise FidelityError(f"measure must be 'spearman' or 'kendall', got {measure!r}")
    sub = table[(table.target == target) & (table.stratum == stratum)].sort_values(measure)
    if sub.empty:
        raise FidelityError(f"no rows for target={target!r}, stratum={stratum!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 0.28 * len(sub) + 1.2))
    else:
        fig = ax.figure
    colours = np.where(sub.origin == "paper", _PAPER, _OURS)
    y = np.arange(len(sub))
    v = sub[measure].to_numpy()
    err = np.abs(np.stack([v - sub[f"{measure}_lo"].to_numpy(), sub[f"{measure}_hi"].to_numpy() - v]))
    ax.barh(y, v, color=colours, xerr=np.nan_to_num(err), capsize=2, error_kw={"elinewidth": 0.8})
    ax.set_yticks(y, sub.setting)
    ax.set_xlabel(f"{measure} with label {target} distance ({stratum}; {int(sub.n_pairs.iloc[0])} pairs)")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=_PAPER, label="paper"), Patch(color=_OURS, label="sdr extension")],
              loc="lower right", fontsize=9)
    return fig
