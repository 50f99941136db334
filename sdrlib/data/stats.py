"""Dataset statistics of notebook 00: split summaries, label prevalence, sentences per section, report language,
the example picks and the pixel probe, and the notebook's closing sentences.

Left out: the figures that draw these tables (``plot_examples``, ``plot_prevalence``, ``plot_sentence_counts``,
``plot_findings_gallery``), which live in :mod:`sdrlib.plots` (the layer above), and image statistics beyond
the pixel probe.

Example::

    splits = {s: load_split(cfg, s) for s in ("train", "val", "test")}
    summary_table(splits); prevalence_table(splits)
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from sdrlib import table_names
from sdrlib.data.records import STRATA, Record, stratum
from sdrlib.reports import split_sentences
from sdrlib.vocabulary import CHEXPERT_14

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["summary_table", "prevalence_table", "sentence_counts", "image_features", "pixel_features", "pixel_probe",
           "pick_examples", "language_stats", "language_table", "data_conclusion", "IU_XRAY_LANGUAGE", "LANGUAGE_COUNTS",
           "LANGUAGE_TARGETS"]

# Report-language statistics of 2,000 IU-Xray reports with both sections, with what each number counts: the
# vocabulary was counted over Findings only (issue 26: set beside our both-sections count it looked like 1,006
# vs 1,321; Findings against Findings it is ~806 vs 1,321), so the synthetic corpus is compared on Findings too.
# The sentence ratio and words per sentence were recorded as measured over both sections with the definitions of
# ``language_stats``; none of these numbers is re-measured here (IU-Xray is not downloaded by the default run).
IU_XRAY_LANGUAGE: dict[str, float] = {
    "unique_sentence_ratio": 0.39, "distinct_words_findings": 1321, "words_per_sentence": 6.8,
    "findings_sentences": 4.6, "impression_sentences": 1.4, "top_findings_set_pct": 1.4,
}
#: what each statistic counts (the same for this corpus and the IU-Xray reference)
LANGUAGE_COUNTS: dict[str, str] = {
    "unique_sentence_ratio": "Findings + Impression sentences", "distinct_words": "Findings + Impression words",
    "distinct_words_findings": "Findings words", "words_per_sentence": "Findings + Impression sentences",
    "findings_sentences": "Findings sentences per report", "impression_sentences": "Impression sentences per report",
    "top_findings_set_pct": "Findings sections, read as sets of sentences",
}
# the targets the synthetic corpus must meet at 2,000 training studies (its grammar was tuned to them)
LANGUAGE_TARGETS: dict[str, str] = {
    "unique_sentence_ratio": ">= 0.30", "distinct_words": ">= 1000", "distinct_words_findings": "",
    "words_per_sentence": "6-8", "findings_sentences": "4-5", "impression_sentences": "1-2",
    "top_findings_set_pct": "<= 3",
}
_WORD_RE = re.compile(r"[a-z]+(?:[-'][a-z]+)*")


def sentence_counts(records: Sequence[Record]) -> "pd.DataFrame":
    """Sentences per section per study: DataFrame with columns study_id, findings, impression.

    Uses ``sdrlib.reports.split_sentences`` (the segmenter the rewards use).
    """
    import pandas as pd

    return pd.DataFrame({"study_id": [r.study_id for r in records],
                         "findings": [len(split_sentences(r.findings)) for r in records],
                         "impression": [len(split_sentences(r.impression)) for r in records]})


def language_stats(records: Sequence[Any]) -> dict[str, float]:
    """Report-language statistics of a corpus (anything with ``findings`` / ``impression`` strings).

    Sentences come from ``sdrlib.reports.split_sentences``; words are lower-cased alphabetic tokens
    (hyphenated compounds such as "right-sided" count as one word, numbers are not words, so
    measurements do not inflate the vocabulary).

    Returns
    -------
    dict with
        ``unique_sentence_ratio`` distinct / all sentences of both sections (1.0: nothing repeats),
        ``distinct_words`` vocabulary size of both sections, ``distinct_words_findings`` of Findings alone
        (what the IU-Xray reference counts), ``words_per_sentence`` mean words per sentence,
        ``findings_sentences`` / ``impression_sentences`` mean sentences per report, and
        ``top_findings_set_pct`` the percent of reports sharing the most common Findings section
        read as a set of sentences (order ignored). Empty input gives zeros.
    """
    recs = list(records)
    sents: list[str] = []
    findings_words: set[str] = set()
    n_f = n_i = 0
    sets: Counter = Counter()
    for r in recs:
        f, i = split_sentences(r.findings or ""), split_sentences(r.impression or "")
        n_f, n_i = n_f + len(f), n_i + len(i)
        sets[frozenset(f)] += 1
        findings_words.update(w for x in f for w in _WORD_RE.findall(x.lower()))
        sents.extend(f)
        sents.extend(i)
    words = [_WORD_RE.findall(s.lower()) for s in sents]
    n = max(len(recs), 1)
    return {
        "unique_sentence_ratio": len(set(sents)) / max(len(sents), 1),
        "distinct_words": float(len({w for ws in words for w in ws})),
        "distinct_words_findings": float(len(findings_words)),
        "words_per_sentence": sum(map(len, words)) / max(len(sents), 1),
        "findings_sentences": n_f / n,
        "impression_sentences": n_i / n,
        "top_findings_set_pct": 100.0 * max(sets.values(), default=0) / n,
    }


def language_table(records: Sequence[Any]) -> "pd.DataFrame":
    """``language_stats`` beside the IU-Xray reference and the target, for notebook 00.

    Returns a DataFrame with columns ``statistic``, ``counts`` (what the statistic counts, for this corpus and
    the reference alike: :data:`LANGUAGE_COUNTS`), ``this corpus``, ``IU-Xray reference`` (NaN where IU-Xray
    has no number counted that way) and ``target``; one row per statistic of ``language_stats``, in its order.
    """
    import pandas as pd

    st = language_stats(records)
    return pd.DataFrame({"statistic": list(st), "counts": [LANGUAGE_COUNTS[k] for k in st],
                         "this corpus": [round(v, 3) for v in st.values()],
                         "IU-Xray reference": [IU_XRAY_LANGUAGE.get(k, float("nan")) for k in st],
                         "target": [LANGUAGE_TARGETS[k] for k in st]})


def summary_table(splits: Mapping[str, Sequence[Record]]) -> "pd.DataFrame":
    """One row per split: studies, images, mean sentences per section, unique-sentence ratio, strata.

    The unique-sentence ratio is (distinct sentences) / (all sentences) of a section over the split;
    low values mean a small, repetitive vocabulary, 1.0 means no sentence repeats.
    """
    import pandas as pd

    rows = []
    for name, recs in splits.items():
        row: dict[str, object] = {"split": name, "studies": len(recs),
                                  "images": int(sum(len(r.image_paths) for r in recs))}
        for sec in ("findings", "impression"):
            sents = [s for r in recs for s in split_sentences(getattr(r, sec))]
            row[f"mean_sent_{sec}"] = len(sents) / max(len(recs), 1)
            row[f"unique_ratio_{sec}"] = len(set(sents)) / max(len(sents), 1)
        labelled = [r for r in recs if r.labels is not None]
        for st in STRATA:
            row[st] = sum(stratum(r.labels) == st for r in labelled)
        rows.append(row)
    return pd.DataFrame(rows)


def prevalence_table(splits: Mapping[str, Sequence[Record]]) -> "pd.DataFrame":
    """Per observation and split: percent of studies labelled positive / uncertain / negative.

    Returns a DataFrame indexed by observation with columns ``<split> pos%``, ``<split> unc%``,
    ``<split> neg%``; splits without labels are left out.
    """
    import pandas as pd

    cols = {}
    for name, recs in splits.items():
        labelled = [r.labels for r in recs if r.labels is not None]
        if not labelled:
            continue
        n = len(labelled)
        for tag, val in (("pos", 1), ("unc", -1), ("neg", 0)):
            cols[f"{name} {tag}%"] = [100.0 * sum(lab.get(o) == val for lab in labelled) / n for o in CHEXPERT_14]
    return pd.DataFrame(cols, index=pd.Index(CHEXPERT_14, name="observation"))


def pick_examples(records: Sequence[Record], n: int = 6, seed: int = 0) -> list[Record]:
    """Up to ``n`` records spread over the strata (no finding, single, multi), seeded."""
    rng = np.random.default_rng(seed)
    by: dict[str, list[Record]] = {s: [] for s in STRATA}
    for r in records:
        by[stratum(r.labels) if r.labels is not None else "single"].append(r)
    out: list[Record] = []
    while len(out) < n and any(by.values()):
        for s in STRATA:
            if by[s] and len(out) < n:
                out.append(by[s].pop(int(rng.integers(len(by[s])))))
    return out


def image_features(images: Sequence[np.ndarray], size: int = 32) -> np.ndarray:
    """``(n, size * size)`` float32 features of greyscale uint8 images (each ``(h, w)``): resized to ``size`` x
    ``size`` (bilinear), scaled to [0, 1] and standardised per image (mean 0, SD 1). Another shape or dtype raises
    :class:`ValueError`."""
    from PIL import Image

    out = []
    for k, im in enumerate(images):
        im = np.asarray(im)
        if im.ndim != 2 or im.dtype != np.uint8:
            raise ValueError(f"image {k} is {im.dtype} of shape {im.shape}: pass greyscale uint8 (h, w) arrays")
        out.append(np.asarray(Image.fromarray(im, mode="L").resize((size, size), Image.BILINEAR),
                              dtype=np.float32).ravel())
    if not out:
        raise ValueError("no images: pass at least one")
    x = np.stack(out) / 255.0
    return ((x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1e-6)).astype(np.float32)


def pixel_features(records: Sequence[Record], size: int = 32) -> np.ndarray:
    """``(n, size * size)`` float32 features of each record's first image, greyscale (:func:`image_features`), as
    :func:`pixel_probe` reads them."""
    from PIL import Image

    out = []
    for r in records:
        with Image.open(r.image_paths[0]) as im:
            out.append(np.asarray(im.convert("L"), dtype=np.uint8))
    return image_features(out, size)


def pixel_probe(train: Sequence[Record], test: Sequence[Record], observations: Sequence[str] | None = None,
                size: int = 32, seed: int = 0) -> "pd.DataFrame":
    """How much a linear model on raw pixels reads from the images: test AUROC per observation.

    Each image is resized to ``size`` x ``size``, standardised (:func:`pixel_features`), and a ridge classifier
    (scikit-learn) predicts "positive or uncertain" for each observation with at least 5
    positive and 5 negative training studies. A probe near 0.5 means the pixels carry little
    linear signal for that observation; near 1.0 means it is trivially readable.
    Returns a DataFrame: observation, n_pos_train, n_pos_test, auroc.
    """
    import pandas as pd
    from sklearn.linear_model import RidgeClassifier
    from sklearn.metrics import roc_auc_score

    def target(recs, o):
        return np.array([int((r.labels or {}).get(o) in (1, -1)) for r in recs])

    xtr, xte = pixel_features(train, size), pixel_features(test, size)
    rows = []
    for o in observations or [c for c in CHEXPERT_14 if c != "No Finding"]:
        ytr, yte = target(train, o), target(test, o)
        if min(ytr.sum(), len(ytr) - ytr.sum()) < 5 or len(set(yte)) < 2:
            rows.append({"observation": o, "n_pos_train": int(ytr.sum()), "n_pos_test": int(yte.sum()),
                         "auroc": float("nan")})
            continue
        clf = RidgeClassifier(alpha=100.0)
        clf.fit(xtr, ytr)
        auc = roc_auc_score(yte, clf.decision_function(xte))
        rows.append({"observation": o, "n_pos_train": int(ytr.sum()), "n_pos_test": int(yte.sum()),
                     "auroc": float(auc)})
    return pd.DataFrame(rows)


def _pct(value: float) -> str:
    """A percentage with three significant digits (``0.05%``, ``2.25%``, ``66.7%``): a share as small as one report in
    two thousand keeps its digit instead of rounding to ``0.1%``, so the sentence says what the table shows."""
    return f"{value:.3g}%"


def data_conclusion(results_dir) -> list[str]:
    """Notebook 00's closing sentences, every number read from its result tables in ``results_dir``:
    ``00_dataset_summary`` (studies and strata per split), ``00_report_language`` (this corpus beside IU-Xray),
    ``00_pixel_probe`` (AUROC per observation and the positives it rests on) and ``00_labeler_synthetic_test`` /
    ``00_labeler_sentences_dev`` / ``00_labeler_sentences_heldout`` (accuracy, observations with an error; the
    pooled ``micro (all)`` row left out). A missing table gives a line saying so. Descriptive only: nothing here is
    a comparison of two systems, so no sentence states a direction. The first line answers the notebook's question
    (:func:`_data_answer`)."""
    from sdrlib.results import table_or_note

    out = []
    summ = table_or_note(results_dir, table_names.DATASET_SUMMARY, out)
    if summ is not None:
        sizes = ", ".join(f"{r.split} {int(r.studies):,}" for r in summ.itertuples())
        strata = "; ".join(f"{r.split}: " + ", ".join(f"{int(getattr(r, s)):,} {s.replace('_', ' ')}" for s in STRATA)
                           for r in summ.itertuples())
        out.append(f"Splits (studies): {sizes}. Strata per split: {strata}.")
    lang = table_or_note(results_dir, table_names.REPORT_LANGUAGE, out)
    if lang is not None:
        v = lang.set_index("statistic")
        here, iu = v["this corpus"], v["IU-Xray reference"]
        out.append(f"Language (train split): unique-sentence ratio {here['unique_sentence_ratio']:.2f} here, "
                   f"{iu['unique_sentence_ratio']:.2f} in IU-Xray; distinct Findings words {here['distinct_words_findings']:,.0f} "
                   f"here, {iu['distinct_words_findings']:,.0f} in IU-Xray; the most common Findings set covers "
                   f"{_pct(here['top_findings_set_pct'])} of reports here, {_pct(iu['top_findings_set_pct'])} in IU-Xray.")
    probe = table_or_note(results_dir, table_names.PIXEL_PROBE, out, why="it needs labelled train and test splits")
    if probe is not None:
        p = probe.dropna(subset=["auroc"])
        if not len(p):
            out.append(f"Pixel probe: no observation had enough positive and negative studies for an AUROC "
                       f"({len(probe)} tried).")
        else:
            lo, hi = p.loc[p["auroc"].idxmin()], p.loc[p["auroc"].idxmax()]
            out.append(f"Pixel probe: AUROC for {len(p)} of {len(probe)} observations, from {lo['auroc']:.2f} "
                       f"({lo['observation']}) to {hi['auroc']:.2f} ({hi['observation']}), each resting on "
                       f"{int(p['n_pos_test'].min())} to {int(p['n_pos_test'].max())} positive test studies.")
    for name, label in (("synthetic_test", "synthetic test reports (generator and labeler agree by construction)"),
                        ("sentences_dev", "hand-written dev sentences (the rules were written on them)"),
                        ("sentences_heldout", "hand-written heldout sentences (the honest estimate)")):
        t = table_or_note(results_dir, f"00_labeler_{name}", out)
        if t is None:
            continue
        micro = t[t["observation"] == "micro (all)"]
        t = t[t["observation"] != "micro (all)"]
        bad = t.loc[t["accuracy"] < 1, "observation"].tolist()
        recall = ("" if micro.empty else "; pooled recall " + ", ".join(
            f"{c} {micro.iloc[0][f'recall_{k}']:.2f}" for k, c in (("pos", "positive"), ("neg", "negative"),
                                                                   ("unc", "uncertain"))
            if micro.iloc[0][f"recall_{k}"] == micro.iloc[0][f"recall_{k}"]))  # NaN: no gold label of that class
        out.append(f"Labeler on {label}: mean accuracy {t['accuracy'].mean():.3f} over {len(t)} observations"
                   f"{recall}; " + (f"errors on {len(bad)} ({', '.join(bad)})." if bad else "no error."))
    answer = _data_answer(results_dir)
    return ([answer] if answer else []) + out


def _data_answer(results_dir) -> str | None:
    """Notebook 00's first sentence: what the model sees (the pixel probe) and how far the labels can be trusted
    (the labeler on the held-out hand-written sentences), from the same tables; None when both are missing."""
    from sdrlib.results import read_result_table

    parts = []
    probe = read_result_table(results_dir, table_names.PIXEL_PROBE)
    if probe is not None and len(probe.dropna(subset=["auroc"])):
        p = probe.dropna(subset=["auroc"])
        seen = p[p["auroc"] >= 0.7]
        parts.append(f"the model sees synthetic radiographs in which {len(seen)} of {len(p)} probed observations are "
                     f"visible to a linear pixel probe (AUROC >= 0.70)")
    held = read_result_table(results_dir, table_names.labeler("sentences_heldout"))
    classes = _class_scores(held) if held is not None else []
    if classes:
        parts.append("the labels it is scored with, read by the labeler on hand-written held-out sentences, have "
                     "recall / F1 " + ", ".join(f"{c} {r:.2f} / {f:.2f}" for c, r, f in classes)
                     + " (pooled over the observations; synthetic reports: exact by construction)")
    return ("Answer: " + "; ".join(parts) + ".") if parts else None


def _class_scores(table) -> list[tuple[str, float, float]]:
    """``[(class, recall, F1), ...]`` of the pooled row (``micro (all)``) of a labeler table, per reading class
    (positive, negative, uncertain; a class without gold labels is left out). Accuracy over all readings is not
    reported: most readings are "not mentioned", which the labeler gets right by saying nothing.
    Example: precision 1.0, recall 0.9524 on uncertain -> ``("uncertain", 0.9524, 0.9756)``."""
    micro = table[table["observation"] == "micro (all)"]
    if micro.empty:
        return []
    row, out = micro.iloc[0], []
    for k, c in (("pos", "positive"), ("neg", "negative"), ("unc", "uncertain")):
        r, p = float(row.get(f"recall_{k}", float("nan"))), float(row.get(f"precision_{k}", float("nan")))
        if r == r:  # NaN: no gold label of that class
            f = 2 * p * r / (p + r) if p == p and p + r > 0 else float("nan")
            out.append((c, r, f))
    return out
