"""Clinical label F1 (CheXbert-style), per-observation F1 and ground-truth strata.

Labels come from a *backend* applied to the generated and the reference text
of the same section: the official CheXbert scorer (``f1chexbert``) when its
weights are local, else the offline rule labeler :mod:`sdrlib.clinical.labeler`.
Both give CheXpert values per observation: 1 positive, 0 negative, -1
uncertain, absent = not mentioned.

Positive-label convention (the one of ``f1chexbert``'s ``rrg`` mode, i.e. the
common "CheXbert F1" of report-generation papers): an observation counts as
*positive* when it is 1 **or -1 (uncertain)**; negative and not-mentioned both
count as 0. Pass ``uncertain="negative"`` for the stricter reading.

F1 definitions (match scikit-learn's ``f1_score`` with ``zero_division=0``,
which ``f1chexbert`` uses through ``classification_report``):

- per observation: ``2 TP / (2 TP + FP + FN)``; 0 when the observation is never
  positive in either text (so macro F1 is pulled down by absent classes, as in
  the official scorer);
- ``macro14`` / ``micro14``: over the 14 CheXpert observations;
- ``macro5`` / ``micro5``: over Atelectasis, Cardiomegaly, Consolidation,
  Edema, Pleural Effusion (the usual 5-observation subset);
- per sample: example-based F1 ``2 |P ∩ R| / (|P| + |R|)`` over the 14
  positives, 1.0 when both are empty (used for strata and per-sample tables).

Strata (paper appendix F) from *reference* labels: count the 12 pathologies
(CheXpert's list without No Finding and Support Devices) that are positive
under the same convention: 0 -> ``no_finding``, 1 -> ``single``, >= 2 -> ``multi``.

Example::

    >>> P = label_matrix([{"Edema": 1}, {}]); R = label_matrix([{"Edema": -1}, {"Edema": 0}])
    >>> f1_counts(P, R)["macro14"] == 1 / 14
    True
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from sdrlib.clinical import label_reports
from sdrlib.metrics.backends import BackendUnavailable, chexbert_available, package_version, why_unavailable
from sdrlib.metrics.base import EvaluationInputError, MetricResult, mean_result, stats_result
from sdrlib.vocabulary import CHEXPERT_14

__all__ = ["FIVE", "label_matrix", "f1_counts", "per_sample_f1", "strata_from_labels",
           "clinical_results", "STRATA", "get_labeler", "normalize_labels"]

FIVE = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Pleural Effusion")
STRATA = ("no_finding", "single", "multi")


def _chexpert_14() -> list[str]:
    return list(CHEXPERT_14)


def _pathologies() -> list[str]:
    return [o for o in _chexpert_14() if o not in ("No Finding", "Support Devices")]


def _label_value(v: Any, where: str, key: str) -> int | None:
    """One CheXpert value as 1 / 0 / -1, or None for "not mentioned" (None, NaN, blank)."""
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):  # True == 1 in Python; refuse rather than guess
        raise EvaluationInputError(f"{where}: {key!r} has value {v!r}; expected 1, 0, -1 or blank/NaN")
    if isinstance(v, str):  # CSV spellings: "1", "1.0", "-1.0", "" ...
        text = v.strip()
        if text.lower() in ("", "nan"):
            return None
        try:
            f = float(text)
        except ValueError:
            raise EvaluationInputError(f"{where}: {key!r} has value {v!r}; expected 1, 0, -1 or "
                                       "blank/NaN") from None
    elif isinstance(v, (int, float, np.integer, np.floating)):
        f = float(v)
    else:
        raise EvaluationInputError(f"{where}: {key!r} has value {v!r} ({type(v).__name__}); "
                                   "expected 1, 0, -1 or blank/NaN")
    if f != f:  # NaN: a blank cell of a CheXpert CSV
        return None
    if f in (1.0, 0.0, -1.0):
        return int(f)
    raise EvaluationInputError(f"{where}: {key!r} has value {v!r}; expected 1, 0, -1 or blank/NaN")


def _unknown_key(key: Any, where: str, obs: Sequence[str]) -> EvaluationInputError:
    import difflib

    close = difflib.get_close_matches(str(key), list(obs), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return EvaluationInputError(f"{where}: unknown observation {key!r}{hint}; observation names are "
                                f"exactly {list(obs)}")


def normalize_labels(labels: Any, *, observations: Sequence[str] | None = None,
                     name: str = "labels") -> list[dict[str, int]]:
    """Check and normalise CheXpert labels: one ``{observation: 1 | 0 | -1}`` dict per sample.

    The single entry point for label input (:func:`label_matrix`,
    :func:`strata_from_labels`, ``score_reports(reference_labels=...)``).

    Parameters
    ----------
    labels : sequence of mappings (or pandas Series rows), or a pandas DataFrame
        One item / row per sample. Keys / columns must be observation names
        (default: the 14 CheXpert observations, spelt exactly). Values: 1, 0,
        -1 as int, float or string (``"1.0"``); ``None``, NaN and ``""`` mean
        "not mentioned" and are dropped.
    observations : allowed names (default CheXpert-14).
    name : how the error messages call ``labels``.

    Returns
    -------
    list of dict, ``len == n_samples``; values are Python ints in {1, 0, -1}.

    Raises
    ------
    EvaluationInputError
        naming the sample index and key for: an unknown (e.g. misspelt) observation,
        listing every valid name; a value outside {1, 0, -1, blank/NaN} (booleans too);
        an item that is not a mapping (``None`` included: pass ``{}`` for
        "nothing mentioned"); a single mapping or string instead of one per sample.

    Example: ``normalize_labels([{"Edema": 1.0, "Pneumonia": ""}])`` -> ``[{"Edema": 1}]``.
    """
    obs = list(observations) if observations is not None else _chexpert_14()
    allowed = set(obs)
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(labels, pd.DataFrame):
        bad = [c for c in labels.columns if c not in allowed]
        if bad:
            raise _unknown_key(bad[0], f"{name} (DataFrame column)", obs)
        items: list[Any] = [dict(zip(labels.columns, row)) for row in labels.itertuples(index=False, name=None)]
    elif isinstance(labels, (str, bytes, Mapping)) or labels is None:
        raise EvaluationInputError(f"{name} must hold one label mapping per sample (a list of dicts or a "
                                   f"DataFrame), got {type(labels).__name__}")
    else:
        try:
            items = list(labels)
        except TypeError:
            raise EvaluationInputError(f"{name} must be a list of label dicts or a DataFrame, "
                                       f"got {type(labels).__name__}") from None
    out: list[dict[str, int]] = []
    for i, d in enumerate(items):
        where = f"{name}[{i}]"
        if d is None:
            raise EvaluationInputError(f"{where} is None; pass {{}} for 'nothing mentioned'")
        if pd is not None and isinstance(d, pd.Series):
            d = d.to_dict()
        if not isinstance(d, Mapping):
            raise EvaluationInputError(f"{where} is {type(d).__name__}; expected a mapping "
                                       "observation -> 1 / 0 / -1")
        clean: dict[str, int] = {}
        for k, v in d.items():
            if k not in allowed:
                raise _unknown_key(k, where, obs)
            val = _label_value(v, where, k)
            if val is not None:
                clean[k] = val
        out.append(clean)
    return out


def label_matrix(labels: Sequence[Mapping[str, int]], observations: Sequence[str] | None = None,
                 *, uncertain: str = "positive") -> np.ndarray:
    """Binary positives ``(n, L)`` from label dicts (values 1 / 0 / -1; absent = not mentioned).

    Input is checked by :func:`normalize_labels`: EvaluationInputError (a ValueError)
    naming the sample on unknown observations or values.
    Example: ``label_matrix([{"Edema": -1}], ["Edema"])`` -> ``[[1]]``.
    """
    obs = list(observations) if observations is not None else _chexpert_14()
    if uncertain not in ("positive", "negative"):
        raise EvaluationInputError(f"uncertain must be 'positive' or 'negative', got {uncertain!r}")
    pos = {1, -1} if uncertain == "positive" else {1}
    index = {o: j for j, o in enumerate(obs)}
    clean = normalize_labels(labels, observations=obs)
    out = np.zeros((len(clean), len(obs)), dtype=np.int8)
    for i, d in enumerate(clean):
        for k, v in d.items():
            out[i, index[k]] = 1 if v in pos else 0
    return out


def _f1(tp, fp, fn):
    tp, fp, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn))
    den = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 2 * tp / np.where(den > 0, den, 1.0), 0.0)


def _counts(P: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Per-sample ``[TP_1..L, FP_1..L, FN_1..L]``, shape ``(n, 3L)``."""
    P, R = P.astype(bool), R.astype(bool)
    return np.concatenate([(P & R), (P & ~R), (~P & R)], axis=1).astype(np.float64)


def _macro(summed, L: int, cols: np.ndarray) -> np.ndarray:
    s = np.atleast_2d(summed)
    return _f1(s[:, cols], s[:, L + cols], s[:, 2 * L + cols]).mean(axis=1)


def _micro(summed, L: int, cols: np.ndarray) -> np.ndarray:
    s = np.atleast_2d(summed)
    return _f1(s[:, cols].sum(1), s[:, L + cols].sum(1), s[:, 2 * L + cols].sum(1))


def _reducers(L: int, cols: np.ndarray) -> tuple[Callable, Callable]:
    """Macro and micro F1 over the label columns ``cols`` of summed counts ``(B, 3L)`` -> ``(B,)``; partials of
    module functions, so a :class:`~sdrlib.metrics.base.MetricResult` pickles (scores come back from worker
    processes: :func:`sdrlib.experiments.scoring.score_all`)."""
    return functools.partial(_macro, L=L, cols=cols), functools.partial(_micro, L=L, cols=cols)


def f1_counts(P: np.ndarray, R: np.ndarray, observations: Sequence[str] | None = None) -> dict:
    """Corpus F1 values from binary matrices ``P`` (generated) and ``R`` (reference), ``(n, L)``.

    Returns ``macro14, micro14, macro5, micro5`` and ``per_observation`` (name -> F1).
    """
    obs = list(observations) if observations is not None else _chexpert_14()
    if P.shape != R.shape or P.shape[1] != len(obs):
        raise EvaluationInputError(f"label matrices must both be (n, {len(obs)}); got {P.shape} and {R.shape}")
    L = len(obs)
    summed = _counts(P, R).sum(axis=0, keepdims=True)
    out = {}
    for tag, cols in (("14", np.arange(L)), ("5", np.array([obs.index(o) for o in FIVE]))):
        macro, micro = _reducers(L, cols)
        out["macro" + tag], out["micro" + tag] = float(macro(summed)[0]), float(micro(summed)[0])
    per = _f1(summed[0, :L], summed[0, L:2 * L], summed[0, 2 * L:])
    out["per_observation"] = dict(zip(obs, per.tolist()))
    return out


def per_sample_f1(P: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Example-based F1 per row, 1.0 when both rows are empty. Shape ``(n,)``."""
    P, R = P.astype(bool), R.astype(bool)
    inter = (P & R).sum(1).astype(np.float64)
    den = P.sum(1) + R.sum(1)
    return np.where(den > 0, 2 * inter / np.maximum(den, 1), 1.0)


def strata_from_labels(reference_labels: Sequence[Mapping[str, int]], *,
                       uncertain: str = "positive") -> np.ndarray:
    """``no_finding`` / ``single`` / ``multi`` per sample from reference labels (module docstring)."""
    patho = _pathologies()
    # check against all 14 names first, so a misspelt key is an error, not silently "not positive"
    clean = normalize_labels(reference_labels, name="reference_labels")
    M = label_matrix([{k: v for k, v in d.items() if k in patho} for d in clean], patho, uncertain=uncertain)
    k = M.sum(axis=1)
    return np.where(k == 0, "no_finding", np.where(k == 1, "single", "multi")).astype(object)


def clinical_results(pred_labels: Sequence[Mapping[str, int]], ref_labels: Sequence[Mapping[str, int]],
                     backend: str, *, defined: np.ndarray | None = None,
                     uncertain: str = "positive", backend_detail: str = "") -> list[MetricResult]:
    """All clinical metrics for one section as :class:`MetricResult` objects.

    Names: ``clinical_f1_{macro14,micro14,macro5,micro5}@<backend>`` (corpus),
    ``clinical_f1_sample@<backend>`` (per sample, mean as corpus value) and
    ``clinical_f1[<observation>]@<backend>`` (corpus, per observation).
    ``defined`` (bool ``(n,)``) marks samples with a usable reference; the
    others get zero weight and a NaN per-sample value.
    """
    obs = _chexpert_14()
    n = len(pred_labels)
    if len(ref_labels) != n:
        raise EvaluationInputError(f"{n} generated label dicts but {len(ref_labels)} reference label dicts")
    P = label_matrix(pred_labels, obs, uncertain=uncertain)
    R = label_matrix(ref_labels, obs, uncertain=uncertain)
    ok = np.ones(n, bool) if defined is None else np.asarray(defined, bool)
    stats = _counts(P, R) * ok[:, None]
    L = len(obs)
    detail = backend_detail or backend
    out: list[MetricResult] = []
    for tag, cols in (("14", np.arange(L)), ("5", np.array([obs.index(o) for o in FIVE]))):
        macro, micro = _reducers(L, cols)
        out.append(stats_result(f"clinical_f1_macro{tag}@{backend}", detail, stats, macro))
        out.append(stats_result(f"clinical_f1_micro{tag}@{backend}", detail, stats, micro))
    sample = np.where(ok, per_sample_f1(P, R), np.nan)
    out.append(mean_result(f"clinical_f1_sample@{backend}", detail, sample))
    for j, o in enumerate(obs):
        macro_j, _ = _reducers(L, np.array([j]))
        out.append(stats_result(f"clinical_f1[{o}]@{backend}", detail, stats, macro_j,
                                kind="per_observation", observation=o))
    return out


# --------------------------------------------------------------------------- label backends
def _chexbert_labeler() -> Callable[[Sequence[str]], list[dict[str, int]]]:
    from f1chexbert import F1CheXbert

    scorer = F1CheXbert(device="cpu")
    names = list(scorer.target_names)

    def label(texts: Sequence[str]) -> list[dict[str, int]]:
        out = []
        for t in texts:
            v = scorer.get_label(t, mode="classification")  # 1 / 0 / -1 / '' (blank)
            out.append({n: int(x) for n, x in zip(names, v) if x != ""})
        return out

    return label


def get_labeler(backend: str = "auto") -> tuple[str, Callable[[Sequence[str]], list[dict[str, int]]], str]:
    """``(name, label_fn, detail)`` for ``"auto"``, ``"chexbert"`` or ``"labeler"``.

    ``auto`` prefers the official CheXbert when it can run offline
    (:func:`sdrlib.metrics.backends.chexbert_available`), else the rule labeler.
    """
    if backend not in ("auto", "chexbert", "labeler"):
        raise EvaluationInputError(f"clinical backend must be auto, chexbert or labeler; got {backend!r}")
    if backend in ("auto", "chexbert") and chexbert_available():
        return "chexbert", _chexbert_labeler(), f"f1chexbert=={package_version('f1chexbert')}"
    if backend == "chexbert":
        raise BackendUnavailable(why_unavailable("chexbert"))
    return "labeler", label_reports, "sdrlib.clinical.labeler (rule-based, offline)"
