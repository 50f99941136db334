"""The house style of every figure: resolution, fonts, colour cycle, and the check that a drawn figure keeps them.

:func:`style` is a context manager (nothing changes global matplotlib state on import); :data:`PALETTE` is the
Okabe-Ito colour cycle, :data:`MIN_FONT` the smallest font size of any text, :func:`small_fonts` /
:func:`check_fonts` measure every text of a drawn figure against it. :data:`DPI` and :class:`PlotError` come from
:mod:`sdrlib.results`, which writes the files. Left out: drawing any particular figure and saving (``save_fig``
lives in :mod:`sdrlib.results`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator

from sdrlib.results import DPI, PlotError

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["DPI", "MIN_FONT", "PALETTE", "PlotError", "style", "small_fonts", "check_fonts"]

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
