"""Notebook 03's steps that are logic rather than narration: the loss figure, generations shown next to their
references, how varied the sampled reports are, and the notebook's conclusion sentences read back from its result files
(``sft_vs_baselines_significance``, ``sft_image_nll``), worded with :func:`sdrlib.metrics.significance.verdict`.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from sdrlib.data import stratum
from sdrlib.metrics.significance import format_p, verdict
from sdrlib.reports import parse_template
from sdrlib.results import read_result_table

__all__ = ["report_variety", "plot_generations", "NO_VALIDATION_LOSS", "plot_sft_loss", "comparison_sentence",
           "sft_conclusion"]

#: what a comparison whose 95 % interval includes 0 is called in every sentence here
NO_DIFFERENCE = "no difference detected at this size"


def report_variety(generations: Sequence[str]) -> dict[str, Any]:
    """How varied a list of generated reports is: ``n`` reports, ``distinct`` (exact string matches counted
    once), ``modal_count`` (how often the most frequent report occurs) and ``modal_share`` (``modal_count / n``).
    An empty list raises ``ValueError``."""
    if not generations:
        raise ValueError("report_variety: no generations")
    counts = Counter(generations)
    top = counts.most_common(1)[0][1]
    return {"n": len(generations), "distinct": len(counts), "modal_count": top, "modal_share": top / len(generations)}


def plot_generations(records: Sequence[Any], generations: Sequence[str], *, width: int = 110):
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


#: the legend's note when the run logged no validation loss (what :func:`sdrlib.training.sft` does: no eval split)
NO_VALIDATION_LOSS = "training split only: SFT logs no validation loss"


def plot_sft_loss(curves: "pd.DataFrame", *, title: str = ""):
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


def comparison_sentence(a: str, r: Any, *, unit: str = "", digits: int = 3) -> str:
    """``"<a> is above|below <B> (value_a vs value_b, diff [ci_low, ci_high], p)"`` for one row ``r`` (an
    ``itertuples`` row, a Series or a dict) of the
    comparison schema (``B, value_a, value_b, diff, ci_low, ci_high, p_value``); a direction only when the 95 %
    interval excludes 0 (:func:`verdict`), else ``"<a> vs <B>: no difference detected at this size (...)"``."""
    d = r._asdict() if hasattr(r, "_asdict") else dict(r)  # an itertuples row or a Series / dict
    v = verdict(d["ci_low"], d["ci_high"])
    k = digits
    nums = (f"{d['value_a']:.{k}f} vs {d['value_b']:.{k}f}{unit}, difference {d['diff']:+.{k}f} "
            f"[{d['ci_low']:+.{k}f}, {d['ci_high']:+.{k}f}], {format_p(d['p_value'])}")
    if v == "not distinguishable from":
        return f"{a} vs {d['B']}: {NO_DIFFERENCE} ({nums})"
    return f"{a} is {v} {d['B']} ({nums})"


def sft_conclusion(results_dir: str | Path, *, section: str = "findings") -> list[str]:
    """Notebook 03's conclusion from ``sft_vs_baselines_significance`` (SFT against ``random_train`` and
    ``SFT shuffled images`` per clinical metric, ``section`` only) and ``sft_image_nll`` (teacher-forced NLL of the
    reference with another study's image vs its own). One sentence per comparison, then what they mean for the
    question "does the policy read the image"; a missing file gives no sentence."""
    out = []
    sig = read_result_table(results_dir, "sft_vs_baselines_significance")
    if sig is not None:
        sub = sig[sig.section == section]
        for r in sub.itertuples():
            out.append(f"{section.capitalize()} {str(r.metric).split('@')[0]} (sft_vs_baselines_significance): "
                       + comparison_sentence("SFT", r) + ".")
        shuffled = sub[sub.B == "SFT shuffled images"]
        if len(shuffled):
            reads = bool((shuffled.ci_low > 0).any())
            out.append("=> sampled reports: " + ("SFT's labels are better with the right image: the policy reads it."
                       if reads else "no evidence that the policy's labels depend on the image."))
    nll = read_result_table(results_dir, "sft_image_nll")
    if nll is not None and len(nll):
        r = nll.iloc[0]
        out.append(f"Teacher forcing (sft_image_nll), NLL of the reference per token: "
                   + comparison_sentence(f"with {r.A}", r, unit=" nats", digits=4) + ".")
        out.append("=> teacher forcing: " + ("the own image makes the reference more likely: the policy uses it."
                   if r.ci_low > 0 else "the own image does not make the reference measurably more likely."))
    return out
