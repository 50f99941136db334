"""How well the offline labeler reads text: notebook 00's evaluation against gold labels.

- :func:`labeler_tables`: :func:`~sdrlib.clinical.evaluate_labeler` on the synthetic test reports (optional) and on
  each set (``dev``, ``heldout``) of the hand-written sentences of ``tests/fixtures/labeler_sentences.csv``;
- :func:`labeler_summary`: one line per table (mean and lowest accuracy, observations with an error);
- :func:`labeler_mistakes`: the hand-written sentences the labeler reads differently from their gold labels.

The sentence frame has the columns of the fixture: ``set``, ``text`` and ``labels`` (a label string,
:func:`sdrlib.vocabulary.parse_label_string`). "No Finding" is compared by the CheXpert convention
(:func:`sdrlib.vocabulary.apply_no_finding` on the gold labels), as :func:`evaluate_labeler` does.
"""
from __future__ import annotations

from typing import Any, Sequence

from sdrlib.clinical.labeler import evaluate_labeler, label_report
from sdrlib.vocabulary import apply_no_finding, parse_label_string

__all__ = ["LABELER_COLUMNS", "MICRO", "labeler_tables", "labeler_summary", "labeler_mistakes"]

#: the columns notebook 00 keeps of :func:`evaluate_labeler`'s table (support, precision, recall per class)
LABELER_COLUMNS = ["n_pos", "precision_pos", "recall_pos", "n_neg", "precision_neg", "recall_neg",
                   "n_unc", "precision_unc", "recall_unc", "accuracy"]
#: the pooled row of :func:`evaluate_labeler`'s table
MICRO = "micro (all)"


def labeler_tables(sentences: "pd.DataFrame", test_records: Sequence[Any] | None = None) -> dict[str, "pd.DataFrame"]:
    """``{name: table}``: ``"synthetic test"`` (when ``test_records`` is given: records with ``findings``,
    ``impression`` and ``labels``, scored on Findings + Impression) and ``"sentences (<set>)"`` per set of
    ``sentences``, each :func:`evaluate_labeler`'s table (one row per observation plus :data:`MICRO`)."""
    tables = {}
    if test_records is not None:
        tables["synthetic test"] = evaluate_labeler([r.findings + " " + r.impression for r in test_records],
                                                    [r.labels for r in test_records])
    for part, df in sentences.groupby("set"):
        tables[f"sentences ({part})"] = evaluate_labeler(df["text"].tolist(),
                                                         [parse_label_string(s) for s in df["labels"]])
    return tables


def labeler_summary(name: str, table: "pd.DataFrame") -> str:
    """``"<name>: mean accuracy over the k observations a, lowest b (<observation>); e of k with an error"``, the
    :data:`MICRO` row left out (it pools the others)."""
    acc = table["accuracy"].drop(MICRO, errors="ignore")
    return (f"{name}: mean accuracy over the {len(acc)} observations {acc.mean():.3f}, lowest {acc.min():.3f} "
            f"({acc.idxmin()}); {int((acc < 1).sum())} of {len(acc)} with an error")


def labeler_mistakes(sentences: "pd.DataFrame") -> "pd.DataFrame":
    """The rows of ``sentences`` whose labels :func:`label_report` reads differently from the gold labels (No
    Finding by the CheXpert convention): columns ``set``, ``text``, ``gold``, ``predicted`` (label dicts) and
    ``hedge_missed`` (True when some observation is uncertain, -1, in gold and positive, 1, in the prediction: the
    hedge was not read), in the frame's order."""
    import pandas as pd

    rows = []
    for r in sentences.itertuples():
        gold, pred = apply_no_finding(parse_label_string(r.labels)), label_report(r.text)
        if gold != pred:
            missed = any(v == -1 and pred.get(k) == 1 for k, v in gold.items())
            rows.append({"set": r.set, "text": r.text, "gold": gold, "predicted": pred, "hedge_missed": missed})
    return pd.DataFrame(rows, columns=["set", "text", "gold", "predicted", "hedge_missed"])
