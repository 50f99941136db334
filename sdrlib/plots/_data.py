"""Notebook 00's figures: example studies (image and report), the synthetic findings one by one, label
prevalence and sentences per section.

Draws only; the tables come from :mod:`sdrlib.data.stats` (:func:`~sdrlib.data.stats.prevalence_table`,
:func:`~sdrlib.data.stats.sentence_counts`, :func:`~sdrlib.data.stats.pick_examples`) and the synthetic images
from :func:`sdrlib.data.synthcxr.render_image`. Left out: image statistics beyond what the example grid shows.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from sdrlib.data.records import Record, stratum
from sdrlib.data.synthcxr import Finding, render_image
from sdrlib.plots._style import PALETTE

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_prevalence", "plot_sentence_counts", "plot_examples", "plot_findings_gallery"]


def plot_prevalence(prev: "pd.DataFrame", split: str = "train") -> "Figure":
    """Horizontal stacked bars of positive / uncertain / negative percent for one split (``prev``:
    :func:`sdrlib.data.stats.prevalence_table`, one row per observation)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    y = np.arange(len(prev))
    left = np.zeros(len(prev))
    # Okabe-Ito vermillion / orange / blue: distinguishable under colour-vision deficiencies
    for tag, color, label in (("pos", PALETTE[3], "positive (1)"), ("unc", PALETTE[1], "uncertain (-1)"),
                              ("neg", PALETTE[0], "negative (0)")):
        vals = prev[f"{split} {tag}%"].to_numpy()
        ax.barh(y, vals, left=left, color=color, label=label)
        left += vals
    ax.set_yticks(y, prev.index)
    ax.invert_yaxis()
    ax.set_xlabel(f"% of {split} studies (absent = not mentioned)")
    ax.set_title(f"CheXpert-14 label prevalence ({split})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


def plot_sentence_counts(counts_by_split: Mapping[str, "pd.DataFrame"]) -> "Figure":
    """Histograms of sentences per study for Findings and Impression, one colour per split (each frame:
    :func:`sdrlib.data.stats.sentence_counts`)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    names = list(counts_by_split)
    w = 0.8 / max(len(names), 1)
    for ax, sec in zip(axes, ("findings", "impression")):
        hi = max(int(df[sec].max()) for df in counts_by_split.values())
        xs = np.arange(hi + 1)
        for j, name in enumerate(names):
            frac = np.bincount(counts_by_split[name][sec].to_numpy(dtype=int), minlength=hi + 1) / len(
                counts_by_split[name])
            ax.bar(xs + (j - (len(names) - 1) / 2) * w, frac, width=w, label=name)
        lo = min(int(df[sec].min()) for df in counts_by_split.values())
        ax.set_xlim(lo - 0.6, hi + 0.6)
        ax.set_xticks(np.arange(lo, hi + 1))
        ax.set_xlabel(f"sentences in {sec.capitalize()}")
        ax.set_ylabel("fraction of studies")
        ax.set_title(sec.capitalize())
    handles, labels = axes[0].get_legend_handles_labels()  # one legend above both panels, clear of the bars
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 1.0), ncol=len(labels), frameon=False,
               title="split")
    return fig


def _label_line(labels: Mapping[str, int] | None) -> str:
    """One line of a study's labels: ``+`` positive, ``?`` uncertain, and how many are negated."""
    if labels is None:
        return "labels: n/a"
    sym = {1: "+", -1: "?", 0: "-"}
    parts = [f"{sym[v]}{k}" for k, v in labels.items() if k != "No Finding" and v != 0]
    neg = [k for k, v in labels.items() if v == 0]
    line = ", ".join(parts) if parts else "No Finding"
    if neg:
        line += f"  | negated: {len(neg)}"
    return line


def plot_examples(records: Sequence[Record], n: int = 6, width: int = 62) -> "Figure":
    """Grid of example studies: image on the left, Findings / Impression / labels on the right."""
    import matplotlib.pyplot as plt
    from PIL import Image

    recs = list(records)[:n]
    fig, axes = plt.subplots(len(recs), 2, figsize=(9.5, 2.7 * len(recs)),
                             gridspec_kw={"width_ratios": [1, 2.6]})
    axes = np.atleast_2d(axes)
    for (ax_img, ax_txt), r in zip(axes, recs):
        with Image.open(r.image_paths[0]) as im:
            ax_img.imshow(np.asarray(im.convert("L")), cmap="gray", vmin=0, vmax=255)
        ax_img.set_axis_off()
        ax_img.set_title(f"{r.study_id} ({stratum(r.labels) if r.labels is not None else '?'})", fontsize=9)
        text = ("FINDINGS: " + textwrap.fill(r.findings, width) + "\n\nIMPRESSION: "
                + textwrap.fill(r.impression, width) + "\n\nLABELS: " + textwrap.fill(_label_line(r.labels), width))
        ax_txt.text(0.0, 1.0, text, va="top", ha="left", fontsize=9, family="monospace", wrap=True)
        ax_txt.set_axis_off()
    fig.tight_layout()
    return fig


def plot_findings_gallery(image_size: int = 96, seed: int = 0) -> "Figure":
    """One synthetic patient (fixed nuisance) drawn with each finding in turn, to show what the
    pixels carry. Returns the figure."""
    import matplotlib.pyplot as plt

    panels = [
        ("normal", [], []),
        ("cardiomegaly (severe)", [Finding("cardiomegaly", severity="severe")], []),
        ("widened mediastinum", [Finding("mediastinum")], []),
        ("edema (severe)", [Finding("edema", side="bilateral", severity="severe")], []),
        ("R effusion (moderate)", [Finding("effusion", side="right", severity="moderate")], []),
        ("LLL consolidation", [Finding("consolidation", location="left lower lobe")], []),
        ("RUL opacity", [Finding("opacity", location="right upper lobe")], []),
        ("bibasilar atelectasis", [Finding("atelectasis", location="bibasilar", side="bilateral")], []),
        ("LUL nodule 1.8 cm", [Finding("nodule", location="left upper lobe", size_cm=1.8)], []),
        ("L pneumothorax (mod.)", [Finding("pneumothorax", side="left", severity="moderate")], []),
        ("R rib fracture", [Finding("fracture", side="right", location="6th", detail="acute")], []),
        ("R pleural thickening", [Finding("pleural_other", side="right", detail="lateral")], []),
        ("ETT + enteric + CVC", [], ["ett", "enteric", "cvc"]),
        ("pacemaker", [], ["pacer"]),
    ]
    cols = 7
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(2.2 * cols, 2.4 * rows))
    for ax, (title, findings, devices) in zip(axes.ravel(), panels):
        img = render_image(findings, devices, np.random.default_rng(seed), size=image_size)
        ax.imshow(img, cmap="gray", vmin=0, vmax=255)
        ax.set_title(title, fontsize=9)
        ax.set_axis_off()
    for ax in axes.ravel()[len(panels):]:
        ax.set_axis_off()
    fig.tight_layout()
    return fig
