"""What each configuration of the GRPO study writes (:mod:`sdrlib.experiments.study.runs`), beside the verdicts.

Context for the comparison table, not a test: the label F1 rows of
:func:`~sdrlib.experiments.study.runs.study_table` move with how many findings a policy states (a policy that
states fewer findings loses recall on rare labels), and the two tables here say what each configuration's Findings
state, read by the offline labeler (:func:`sdrlib.clinical.label_report`; CheXpert-14, uncertain counts positive,
as in the evaluation):

- :func:`study_reading`: per configuration and the references, the share of Findings stating no pathology, the
  pathologies per Findings and the share of reports on the template (the study on record's reading table);
- :func:`study_behaviour`: per configuration, the same two per-Findings values and, per CheXpert-14 label that the
  references state at least once, the precision and recall of the generated Findings against the references'
  labels (the offline labeler on the reference Findings, as the table's label F1 reads them).

Each value is a run's (one configuration, one seed: every report of its first ``draws`` draws), then the mean
over seeds with its range over seeds (``*_min``, ``*_max``). Both read the run files
:func:`~sdrlib.experiments.study.runs.table_runs` accepts (its checks first); :func:`run_labels` labels every run's
Findings once for both (pass its result as ``labels``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.clinical import label_report
from sdrlib.experiments.study.runs import table_runs
from sdrlib.metrics.clinical import label_matrix
from sdrlib.reports import parse_template
from sdrlib.rewards import reward_label
from sdrlib.vocabulary import CHEXPERT_14, PATHOLOGIES

__all__ = ["BEHAVIOUR_COLUMNS", "run_labels", "study_reading", "study_behaviour", "behaviour_markdown"]

#: the columns of :func:`study_behaviour` (one row per configuration and label); docs/glossary.md defines each
BEHAVIOUR_COLUMNS: tuple[str, ...] = (
    "config", "seeds", "normal_share", "normal_share_min", "normal_share_max", "pathologies", "pathologies_min",
    "pathologies_max", "label", "n_ref_pos", "precision", "precision_min", "precision_max", "recall", "recall_min",
    "recall_max")

_PATHOLOGY_COLS = [CHEXPERT_14.index(o) for o in PATHOLOGIES]


def _labels(findings: Sequence[str]) -> np.ndarray:
    """``(n, 14)`` CheXpert-14 positives (uncertain counts positive) of each Findings text, offline labeler."""
    return label_matrix([label_report(f) for f in findings])


def run_labels(runs: dict[tuple[str, int], dict[str, Any]], draws: int = 1
               ) -> dict[tuple[str, int], tuple[np.ndarray, float]]:
    """Per run of ``runs`` (:func:`~sdrlib.experiments.study.runs.table_runs`): the ``(draws x n, 14)`` CheXpert-14
    label matrix of its Findings (draw after draw, each in study order; a report off the template: empty
    Findings) and the share of its reports on the template."""
    out = {}
    for key, r in runs.items():
        parsed = [parse_template(g) for gens in r["draws"][:draws] for g in gens]
        out[key] = (_labels([x.findings if x is not None else "" for x in parsed]),
                    float(np.mean([x is not None for x in parsed])))
    return out


def _configs(keys) -> list[str]:
    """Configurations in table order: SFT first, then the rest by name (as the files sort)."""
    return list(dict.fromkeys(c for c, _ in sorted(keys, key=lambda k: (k[0] != "sft", k))))


def _spread(name: str, v: np.ndarray) -> dict[str, float]:
    """``{name: mean, name_min, name_max}`` over seeds, NaN seeds left out (all NaN: NaN)."""
    ok = v[np.isfinite(v)]
    if not ok.size:
        return {name: np.nan, f"{name}_min": np.nan, f"{name}_max": np.nan}
    return {name: float(ok.mean()), f"{name}_min": float(ok.min()), f"{name}_max": float(ok.max())}


def _labelled(evidence: str | Path, test_records: Sequence[Any], seeds: Sequence[int] | None, draws: int,
              labels: dict | None) -> dict[tuple[str, int], tuple[np.ndarray, float]]:
    return labels if labels is not None else run_labels(table_runs(evidence, test_records, seeds), draws)


def study_reading(evidence: str | Path, test_records: Sequence[Any], seeds: Sequence[int] | None = None,
                  draws: int = 1, labels: dict | None = None) -> pd.DataFrame:
    """What each configuration's Findings state, beside the references: one row per configuration (SFT first, then
    the references as ``reference``) with ``seeds``, ``normal_share`` (Findings stating no pathology: CheXpert-14
    without No Finding and Support Devices), ``pathologies`` (mean positive pathologies per Findings), each a mean
    over seeds (a seed's value: over all its draws' reports) with its range over seeds (``*_min``, ``*_max``), and
    ``parsed`` (share of reports on the template). ``seeds`` and ``draws`` (each run's first ``draws`` draws): as the
    table reads them (:func:`~sdrlib.experiments.study.runs.study_scores`); ``labels``: :func:`run_labels` of those
    runs, when already computed."""
    labels = _labelled(evidence, test_records, seeds, draws, labels)
    rows = []
    for config in _configs(labels):
        per_seed = []
        for (c, s), (L, parsed) in sorted(labels.items()):
            if c == config:
                P = L[:, _PATHOLOGY_COLS]
                per_seed.append(((P.sum(1) == 0).mean(), P.sum(1).mean(), parsed))
        v = np.asarray(per_seed, np.float64)
        rows.append({"config": reward_label(config), "seeds": len(v),
                     "normal_share": v[:, 0].mean(), "normal_share_min": v[:, 0].min(),
                     "normal_share_max": v[:, 0].max(), "pathologies": v[:, 1].mean(),
                     "pathologies_min": v[:, 1].min(), "pathologies_max": v[:, 1].max(), "parsed": v[:, 2].mean()})
    R = _labels([r.findings for r in test_records])[:, _PATHOLOGY_COLS]
    rows.append({"config": "reference", "seeds": 0, "normal_share": (R.sum(1) == 0).mean(),
                 "pathologies": R.sum(1).mean(), "parsed": 1.0})
    return pd.DataFrame(rows)


def study_behaviour(evidence: str | Path, test_records: Sequence[Any], seeds: Sequence[int] | None = None,
                    draws: int = 1, labels: dict | None = None) -> pd.DataFrame:
    """Per configuration (SFT first) and CheXpert-14 label with at least one positive among the references'
    Findings: one row of :data:`BEHAVIOUR_COLUMNS`. ``normal_share`` and ``pathologies`` as
    :func:`study_reading` (the configuration's, on every row of it); ``n_ref_pos`` the references stating the label;
    ``precision`` (of the generated Findings stating it, the share whose reference states it; a run that never
    states it has none and is left out of the mean and range, NaN when no run states it) and ``recall`` (of the
    references stating it, the share whose generated Findings state it), each the mean over seeds with its range.
    A study's reference is compared with each of the run's reports of it (every draw). Arguments as
    :func:`study_reading`."""
    labels = _labelled(evidence, test_records, seeds, draws, labels)
    R = _labels([r.findings for r in test_records])
    n_pos = R.sum(0)
    rows = []
    for config in _configs(labels):
        runs = [L for (c, _), (L, _) in sorted(labels.items()) if c == config]
        Rk = [np.tile(R, (len(L) // len(R), 1)) for L in runs]  # the references, once per draw
        P = [L[:, _PATHOLOGY_COLS] for L in runs]
        base = {"config": reward_label(config), "seeds": len(runs),
                **_spread("normal_share", np.array([(p.sum(1) == 0).mean() for p in P])),
                **_spread("pathologies", np.array([p.sum(1).mean() for p in P]))}
        for j, label in enumerate(CHEXPERT_14):
            if not n_pos[j]:
                continue
            tp = np.array([float((L[:, j] & r[:, j]).sum()) for L, r in zip(runs, Rk)])
            stated = np.array([float(L[:, j].sum()) for L in runs])
            ref = np.array([float(r[:, j].sum()) for r in Rk])
            with np.errstate(invalid="ignore", divide="ignore"):
                rows.append({**base, "label": label, "n_ref_pos": int(n_pos[j]),
                             **_spread("precision", np.where(stated > 0, tp / stated, np.nan)),
                             **_spread("recall", tp / ref)})
    return pd.DataFrame(rows, columns=list(BEHAVIOUR_COLUMNS))


def behaviour_markdown(behaviour: pd.DataFrame) -> str:
    """:func:`study_behaviour` as two Markdown tables: per configuration the pathologies per Findings and the
    normal share (mean over seeds [range]); then per label (with its reference positives) one column per
    configuration, ``precision / recall`` (means over seeds; the ranges are in the CSV)."""
    if behaviour.empty:
        return "(no configuration)"
    conf = behaviour.drop_duplicates("config")

    def cell(r, col: str, fmt: str) -> str:
        lo, hi = r[f"{col}_min"], r[f"{col}_max"]
        return f"{r[col]:{fmt}}" + (f" [{lo:{fmt}}, {hi:{fmt}}]" if r.seeds > 1 and pd.notna(lo) else "")

    rows = ["| configuration | seeds | pathologies per Findings | Findings stating no pathology |", "|---|---|---|---|"]
    rows += [f"| {r.config} | {int(r.seeds)} | {cell(r, 'pathologies', '.2f')} | {cell(r, 'normal_share', '.3f')} |"
             for _, r in conf.iterrows()]
    configs = list(conf.config)

    def pr(v: float) -> str:
        return "-" if pd.isna(v) else f"{v:.2f}"

    lab = ["| label | reference positives | " + " | ".join(f"{c} precision / recall" for c in configs) + " |",
           "|" + "---|" * (2 + len(configs))]
    for label, g in behaviour.groupby("label", sort=False):
        by = g.set_index("config")
        lab.append(f"| {label} | {int(g.n_ref_pos.iloc[0])} | "
                   + " | ".join(f"{pr(by.precision[c])} / {pr(by.recall[c])}" for c in configs) + " |")
    return "\n".join(rows) + "\n\n" + "\n".join(lab)
