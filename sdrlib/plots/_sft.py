"""Notebook 03's figures: the SFT loss curve and generated reports shown next to their references.

Draws only; the curves are a run's ``curves.csv`` (:func:`sdrlib.training.read_curves`) and the reports are
parsed with the one template parser (:func:`sdrlib.reports.parse_template`). Left out: training, generation and
the variety / significance numbers (:mod:`sdrlib.experiments.sft_summary`).
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any, Sequence

from sdrlib.data import stratum
from sdrlib.reports import parse_template

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["NO_VALIDATION_LOSS", "plot_sft_loss", "plot_generations"]

#: the legend's note when the run logged no validation loss (what :func:`sdrlib.training.sft` does: no eval split)
NO_VALIDATION_LOSS = "training split only: SFT logs no validation loss"


def plot_sft_loss(curves: "pd.DataFrame", *, title: str = "") -> "Figure":
    """The SFT loss curve of a run's ``curves.csv`` (:func:`sdrlib.training.read_curves`): the training loss (TRL's
    teacher-forced cross-entropy of the report tokens, logged every ``logging_steps``) on the left axis, the training
    token accuracy (``mean_token_accuracy``, where logged) on a right axis, one legend for both below the plot.

    :func:`sdrlib.training.sft` trains without an evaluation split, so there is no validation loss to draw; the legend
    says so (:data:`NO_VALIDATION_LOSS`). A curve with an ``eval_loss`` column (a trainer that evaluates) gets it
    drawn too. Colours are the house cycle's (Okabe-Ito under :func:`sdrlib.plots.style`). Returns the Figure;
    ``ValueError`` when no row has a loss."""
    import matplotlib.pyplot as plt

    logged = curves.dropna(subset=["loss"]) if "loss" in curves else curves.iloc[:0]
    if logged.empty:
        raise ValueError("plot_sft_loss: no logged training loss in the curves")
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    lines = ax.plot(logged["step"], logged["loss"], color="C0", label="training loss (cross-entropy)")
    evals = curves.dropna(subset=["eval_loss"]) if "eval_loss" in curves else curves.iloc[:0]
    if len(evals):
        lines += ax.plot(evals["step"], evals["eval_loss"], color="C2", marker="o", label="validation loss")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats / token)")
    if "mean_token_accuracy" in logged and logged["mean_token_accuracy"].notna().any():
        ax2 = ax.twinx()
        lines += ax2.plot(logged["step"], logged["mean_token_accuracy"], color="C1", linestyle="--",
                          label="training token accuracy")
        ax2.set_ylabel("token accuracy", color="C1")
        ax2.tick_params(axis="y", colors="C1")
        ax2.grid(False)
    ax.legend(lines, [ln.get_label() for ln in lines], loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
              frameon=False, title=None if len(evals) else NO_VALIDATION_LOSS, title_fontsize=9)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_generations(records: Sequence[Any], generations: Sequence[str], *, width: int = 110) -> "Figure":
    """One row per record: its first image (``record.image_paths[0]``) and, whole and wrapped at ``width``
    characters, the generated Findings / Impression (or the raw text when it does not parse as the template, its
    non-printable characters drawn as a middle dot)
    above the reference ones. ``generations[k]`` belongs to ``records[k]``. Returns the Figure."""
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    if len(records) != len(generations) or not records:
        raise ValueError(f"plot_generations: {len(records)} records against {len(generations)} generations")
    wrap = lambda t: textwrap.fill(t, width, subsequent_indent="        ")  # noqa: E731
    texts = []
    for rec, gen in zip(records, generations):
        s = parse_template(gen)
        shown = "".join(c if c.isprintable() else "\N{MIDDLE DOT}" for c in gen)  # control bytes of a tiny tokenizer
        lines = [f"GEN F: {s.findings}", f"GEN I: {s.impression}"] if s else [f"GEN (invalid): {shown}"]
        texts.append("\n".join(wrap(x) for x in lines + [f"REF F: {rec.findings}", f"REF I: {rec.impression}"]))
    heights = [max(2.5, 0.17 * t.count("\n") + 0.6) for t in texts]
    fig, axes = plt.subplots(len(records), 2, figsize=(12, sum(heights)),
                             gridspec_kw={"width_ratios": [1, 5], "height_ratios": heights})
    for row, rec, text in zip(np.atleast_2d(axes), records, texts):
        with Image.open(rec.image_paths[0]) as im:
            row[0].imshow(np.asarray(im.convert("L")), cmap="gray")
        row[0].set_title(f"{rec.study_id} ({stratum(rec.labels) if rec.labels else '?'})", fontsize=9)
        row[0].axis("off")
        row[1].text(0, 1, text, va="top", ha="left", fontsize=9, family="monospace")
        row[1].axis("off")
    return fig
