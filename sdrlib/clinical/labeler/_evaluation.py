"""How well the labeler reads text: per-observation precision / recall / F1 against gold labels."""

from __future__ import annotations

from typing import Mapping, Sequence

from sdrlib.clinical.labeler._sentence import label_reports
from sdrlib.vocabulary import CHEXPERT_14, apply_no_finding, check_labels

__all__ = ["evaluate_labeler"]


def evaluate_labeler(texts: Sequence[str], gold: Sequence[Mapping[str, int]],
                     *, predictions: Sequence[Mapping[str, int]] | None = None) -> "pd.DataFrame":
    """Per-observation precision / recall / F1 of the labeler against gold labels.

    Parameters
    ----------
    texts : sequence of str, length n
        Reports or sentences to label.
    gold : sequence of dict, length n
        Expected labels per text (CheXpert values; absent = not mentioned). "No Finding"
        is recomputed from the other gold labels by the CheXpert convention.
    predictions : sequence of dict, optional
        Precomputed labels (defaults to ``label_report`` on ``texts``).

    Returns
    -------
    pandas.DataFrame
        One row per observation in ``CHEXPERT_14`` plus a ``"micro (all)"`` row; for each
        class ``pos`` (1), ``neg`` (0) and ``unc`` (-1) the columns ``n_<c>`` (gold support),
        ``precision_<c>``, ``recall_<c>`` and ``f1_<c>`` (NaN where undefined), and
        ``accuracy`` over all n texts with absent treated as its own class.

    Raises
    ------
    ValueError
        Lengths differ, or a gold dict holds an unknown observation or value.
    """
    import numpy as np
    import pandas as pd

    if len(texts) != len(gold):
        raise ValueError(f"evaluate_labeler: {len(texts)} texts but {len(gold)} gold label dicts")
    for i, g in enumerate(gold):
        check_labels(g, f"gold[{i}]")
    preds = list(predictions) if predictions is not None else label_reports(list(texts))
    if len(preds) != len(texts):
        raise ValueError(f"evaluate_labeler: {len(preds)} predictions for {len(texts)} texts")
    gold_nf = [apply_no_finding(g) for g in gold]
    classes = {"pos": 1, "neg": 0, "unc": -1}
    rows = []
    for obs in CHEXPERT_14 + ["micro (all)"]:
        obs_list = CHEXPERT_14 if obs == "micro (all)" else [obs]
        row: dict[str, object] = {"observation": obs}
        correct = total = 0
        for cname, cval in classes.items():
            tp = n_pred = n_gold = 0
            for o in obs_list:
                for g, p in zip(gold_nf, preds):
                    gv, pv = g.get(o), p.get(o)
                    n_gold += gv == cval
                    n_pred += pv == cval
                    tp += (gv == cval) and (pv == cval)
            prec = tp / n_pred if n_pred else float("nan")
            rec = tp / n_gold if n_gold else float("nan")
            f1 = 2 * prec * rec / (prec + rec) if n_pred and n_gold and (prec + rec) > 0 else (
                0.0 if n_pred and n_gold else float("nan"))
            row.update({f"n_{cname}": n_gold, f"precision_{cname}": prec, f"recall_{cname}": rec,
                        f"f1_{cname}": f1})
        for o in obs_list:
            for g, p in zip(gold_nf, preds):
                correct += g.get(o) == p.get(o)
                total += 1
        row["accuracy"] = correct / total if total else float("nan")
        rows.append(row)
    df = pd.DataFrame(rows).set_index("observation")
    return df.replace({None: np.nan})
