"""Notebook 03's figures: the SFT loss curve and generated reports shown next to their references.

Draws only; the curves are a run's ``curves.csv`` (:func:`sdrlib.training.read_curves`) and the reports are
parsed with the one template parser (:func:`sdrlib.reports.parse_template`) and judged per finding against the
study's labels with the offline labeler (:func:`finding_verdicts`). Left out: training, generation and the variety /
significance numbers (:mod:`sdrlib.experiments.sft_summary`).
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any, Sequence

from sdrlib.clinical import label_report
from sdrlib.data import stratum
from sdrlib.plots._style import PALETTE
from sdrlib.reports import parse_template
from sdrlib.vocabulary import PATHOLOGIES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["NO_VALIDATION_LOSS", "VERDICTS", "finding_verdicts", "plot_sft_loss", "plot_generations"]

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


#: the verdicts :func:`plot_generations` writes per finding, with their colours (Okabe-Ito)
VERDICTS = (("ok", PALETTE[2]), ("missed", PALETTE[3]), ("hallucinated", PALETTE[4]))


def finding_verdicts(record: Any, generation: str) -> dict[str, list[str]]:
    """Which of the 12 pathologies (:data:`sdrlib.vocabulary.PATHOLOGIES`) a generated report gets right.

    The reference's findings are the study's CheXpert labels (``record.labels``; the offline labeler's reading of
    its Findings and Impression where a dataset has none), the generated report's are the offline labeler's
    (:func:`sdrlib.clinical.label_report`) reading of its parsed Findings and Impression (nothing when it does not
    parse as the template); a finding counts as stated when positive or uncertain (as :func:`sdrlib.data.stratum`
    counts it). Returns ``{"ok": both, "missed": reference only, "hallucinated": generated only}``, each in
    CheXpert order. Example: a reference with Cardiomegaly and a generation stating Edema ->
    ``{"ok": [], "missed": ["Cardiomegaly"], "hallucinated": ["Edema"]}``.
    """
    ref_labels = record.labels if record.labels is not None else label_report(f"{record.findings} {record.impression}")
    s = parse_template(generation)
    gen_labels = label_report(f"{s.findings} {s.impression}") if s else {}
    ref = [p for p in PATHOLOGIES if ref_labels.get(p) in (1, -1)]
    gen = [p for p in PATHOLOGIES if gen_labels.get(p) in (1, -1)]
    return {"ok": [p for p in ref if p in gen], "missed": [p for p in ref if p not in gen],
            "hallucinated": [p for p in gen if p not in ref]}


def _verdict_lines(v: dict[str, list[str]], valid: bool = True) -> list[tuple[str, str]]:
    """``(text, colour)`` of each verdict line of one sample: ``ok``, ``missed``, ``hallucinated``; a generation
    that is not the template reads as nothing, so it says so and lists only what it missed."""
    if not valid:
        return [("not a report: the generation does not parse as the template", VERDICTS[1][1])] + (
            [(f"{'missed:':<14}{', '.join(v['missed'])}", VERDICTS[1][1])] if v["missed"] else [])
    if not any(v.values()):
        return [("ok:           no finding in either report", VERDICTS[0][1])]
    return [(f"{name + ':':<14}{', '.join(v[name]) or 'none'}", colour) for name, colour in VERDICTS]


def plot_generations(records: Sequence[Any], generations: Sequence[str], *, width: int = 110) -> "Figure":
    """One row per record: its first image (``record.image_paths[0]``), titled with the study id, its stratum and
    how many findings the generation got right, and beside it the verdict per finding
    (:func:`finding_verdicts`: the study's labels against the offline labeler's reading of the generated report,
    "ok" / "missed" / "hallucinated", one coloured line each; a generation that does not parse as the template is
    called no report and only its misses are listed) above, whole and wrapped at ``width`` characters, the
    generated Findings / Impression (or the raw text when it does not parse as the template, its non-printable
    characters drawn as a middle dot) and the reference ones. ``generations[k]`` belongs to ``records[k]``. Returns
    the Figure."""
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    if len(records) != len(generations) or not records:
        raise ValueError(f"plot_generations: {len(records)} records against {len(generations)} generations")
    wrap = lambda t: textwrap.fill(t, width, subsequent_indent="        ")  # noqa: E731
    texts, verdicts, valid = [], [], []
    for rec, gen in zip(records, generations):
        s = parse_template(gen)
        shown = "".join(c if c.isprintable() else "\N{MIDDLE DOT}" for c in gen)  # control bytes of a tiny tokenizer
        lines = [f"GEN F: {s.findings}", f"GEN I: {s.impression}"] if s else [f"GEN (invalid): {shown}"]
        texts.append("\n".join(wrap(x) for x in lines + [f"REF F: {rec.findings}", f"REF I: {rec.impression}"]))
        verdicts.append(finding_verdicts(rec, gen))
        valid.append(s is not None)
    line_pt = 12.0  # one 9 pt line of text
    lines = [_verdict_lines(v, ok) for v, ok in zip(verdicts, valid)]
    tops = [len(x) * line_pt + 6.0 for x in lines]  # the verdict lines and a gap above the text
    heights = [max(2.5, 0.17 * t.count("\n") + 0.6 + top / 72.0) for t, top in zip(texts, tops)]
    fig, axes = plt.subplots(len(records), 2, figsize=(12, sum(heights) + 0.5),
                             gridspec_kw={"width_ratios": [1, 5], "height_ratios": heights})
    for row, rec, text, v, vlines, top in zip(np.atleast_2d(axes), records, texts, verdicts, lines, tops):
        with Image.open(rec.image_paths[0]) as im:
            row[0].imshow(np.asarray(im.convert("L")), cmap="gray")
        n_ref = len(v["ok"]) + len(v["missed"])
        found = f"{len(v['ok'])} of {n_ref} found, " if n_ref else ""
        row[0].set_title(f"{rec.study_id} ({stratum(rec.labels) if rec.labels else '?'})\n"
                         f"{found}{len(v['hallucinated'])} hallucinated", fontsize=9)
        row[0].axis("off")
        for k, (line, colour) in enumerate(vlines):
            row[1].annotate(line, (0, 1), xycoords="axes fraction", xytext=(0, -k * line_pt),
                            textcoords="offset points", va="top", ha="left", fontsize=9, family="monospace",
                            fontweight="bold", color=colour)
        row[1].annotate(text, (0, 1), xycoords="axes fraction", xytext=(0, -top), textcoords="offset points",
                        va="top", ha="left", fontsize=9, family="monospace")
        row[1].axis("off")
    fig.suptitle("Per finding (12 CheXpert pathologies, positive or uncertain): ok = in the study's labels and in the "
                 "offline labeler's reading of the generated report,\nmissed = in the labels only, hallucinated = in "
                 "the generated report only", fontsize=9, x=0.02, ha="left")
    fig.tight_layout()
    return fig
