"""Notebook 03's steps that are logic rather than narration: how varied the sampled reports are, and the notebook's
conclusion sentences read back from its result files (``sft_vs_baselines_significance``, ``sft_image_nll``), worded
with :func:`sdrlib.metrics.verdict.family_directions` (Holm over each table's comparisons). The notebook's figures (the loss curve, generations next to their
references) are :func:`sdrlib.plots.plot_sft_loss` and :func:`sdrlib.plots.plot_generations`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from sdrlib import table_names
from sdrlib.metrics.significance import format_p
from sdrlib.metrics.verdict import NO_DIFF, family_directions
from sdrlib.results import read_result_table

__all__ = ["report_variety", "comparison_sentence", "sft_conclusion"]

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


def comparison_sentence(a: str, r: Any, *, unit: str = "", digits: int = 3, word: str | None = None) -> str:
    """``"<a> is above|below <B> (value_a vs value_b, diff [ci_low, ci_high], p)"`` for one row ``r`` (an
    ``itertuples`` row, a Series or a dict) of the
    comparison schema (``B, value_a, value_b, diff, ci_low, ci_high, p_value``); ``word``: the row's verdict in its
    family (:func:`sdrlib.metrics.verdict.family_directions` over the table the row comes from); without it the row
    is a family of one. A direction only under that rule, else ``"<a> vs <B>: no difference detected at this size
    (...)"``."""
    d = r._asdict() if hasattr(r, "_asdict") else dict(r)  # an itertuples row or a Series / dict
    v = word if word is not None else family_directions(pd.DataFrame([d]))[0]
    k = digits
    nums = (f"{d['value_a']:.{k}f} vs {d['value_b']:.{k}f}{unit}, difference {d['diff']:+.{k}f} "
            f"[{d['ci_low']:+.{k}f}, {d['ci_high']:+.{k}f}], {format_p(d['p_value'])}")
    if v == NO_DIFF:
        return f"{a} vs {d['B']}: {NO_DIFFERENCE} ({nums})"
    return f"{a} is {v} {d['B']} ({nums})"


def sft_conclusion(results_dir: str | Path, *, section: str = "findings") -> list[str]:
    """Notebook 03's conclusion from ``sft_vs_baselines_significance`` (SFT against ``random_train`` and
    ``SFT shuffled images`` per clinical metric, ``section`` only) and ``sft_image_nll`` (teacher-forced NLL of the
    reference with another study's image vs its own). First the answer to "does the policy read the image" in one
    sentence, then one sentence per comparison and what each test says; a missing file gives no sentence."""
    out: list[str] = []
    reads: dict[str, bool] = {}
    sig = read_result_table(results_dir, table_names.SFT_VS_BASELINES_SIGNIFICANCE)
    if sig is not None:
        sig = sig.reset_index(drop=True).assign(word=family_directions(sig))  # the table is one family (Holm)
        sub = sig[sig.section == section]
        for r in sub.itertuples():
            out.append(f"{section.capitalize()} {str(r.metric).split('@')[0]} (sft_vs_baselines_significance): "
                       + comparison_sentence("SFT", r, word=r.word) + ".")
        shuffled = sub[sub.B == "SFT shuffled images"]
        if len(shuffled):
            reads["sampled reports"] = bool((shuffled.word == "above").any())
            out.append("=> sampled reports: " + ("SFT's labels are better with the right image: the policy reads it."
                       if reads["sampled reports"] else "no evidence that the policy's labels depend on the image."))
    nll = read_result_table(results_dir, table_names.SFT_IMAGE_NLL)
    if nll is not None and len(nll):
        r = nll.iloc[0]
        word = family_directions(nll.iloc[:1])[0]
        out.append(f"Teacher forcing (sft_image_nll), NLL of the reference per token: "
                   + comparison_sentence(f"with {r.A}", r, unit=" nats", digits=4, word=word) + ".")
        reads["teacher forcing"] = word == "above"
        out.append("=> teacher forcing: " + ("the own image makes the reference more likely: the policy uses it."
                   if word == "above" else "the own image does not make the reference measurably more likely."))
    return ([_answer(reads)] + out) if reads else out


def _answer(reads: dict[str, bool]) -> str:
    """The conclusion's first sentence: does the SFT policy read the image, by the tests that ran."""
    yes = [k for k, v in reads.items() if v]
    if len(yes) == len(reads):
        return f"Answer: yes, the SFT policy reads the image ({' and '.join(yes)} both show it under the project's rule)."
    if yes:
        return (f"Answer: partly: {' and '.join(yes)} show that the SFT policy uses the image, "
                f"{' and '.join(k for k in reads if not reads[k])} do not.")
    return (f"Answer: no evidence at this size that the SFT policy reads the image ({' or '.join(reads)}: no "
            "difference detected under the project's rule).")
