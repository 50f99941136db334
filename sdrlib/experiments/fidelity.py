"""Fidelity of set distances to clinical label disagreement (our analysis; not in the paper).

Question: over many pairs of reports, does a setting's distance rank the pairs like their
ground-truth CheXpert label disagreement does? For each setting, :func:`fidelity_analysis` gives
the Spearman and Kendall correlation between

- the report distance ``D(x, y) = D_F(x, y) + D_I(x, y)`` (Findings + Impression, the sum the
  rewards use; range [0, 2]), computed with the batched engine
  (:func:`sdrlib.distances.engine.paired_distances`; ``_neg`` settings get the sentences' presence through
  ``presence=``) on the packed sentence-embedding sets of all pairs at once; **empty sections**: a section empty in one report
  and not the other is maximally far (1, as in the rewards), empty in both is 0 (the reports agree
  that there is nothing to say);
- the label disagreement over the 14 CheXpert observations, as two targets: **Jaccard distance**
  ``1 - |P & Q| / |P | Q|`` of the positive sets (0 when both are empty) and **Hamming distance**
  ``|P ^ Q| / 14``. **Uncertain (-1) counts as positive**, as in the clinical F1 of
  :mod:`sdrlib.metrics.clinical` (the ``rrg`` convention); negative and not-mentioned are both
  "not positive". "No Finding" is one of the 14 (two normal reports agree on it).

Pairs are a seeded uniform sample of distinct report pairs of the given records. Correlations are
tie-corrected (Spearman on average ranks, Kendall tau-b: label distances have many ties). Confidence
intervals are percentile bootstraps over pairs (seeded; the same resamples for every setting, so
settings are compared on equal footing). Strata (``no_finding`` / ``single`` / ``multi``,
:func:`sdrlib.metrics.clinical.strata_from_labels` on each report's labels): **a pair belongs to a
stratum when both reports do**; mixed pairs count only in ``all``.

Labels: the records' own ``labels`` when every record has them (``labels_source = "dataset"``),
otherwise every record is labelled by the offline rule labeler on Findings + Impression
(:func:`sdrlib.clinical.labeler.label_report`; ``labels_source`` says so). A correlation on fewer
than :data:`MIN_PAIRS` pairs, or where either side is constant, is NaN.

Also here: :func:`identical_floor` (the value each setting gives two *identical* sets, by set size:
the entropic families are not 0 there). The figure (ranked bars with CI whiskers) is
:func:`sdrlib.plots.plot_fidelity`.

Example::

    res = fidelity_analysis(records, embedder, n_pairs=1500, seed=0)
    res.table.query("stratum == 'all' and target == 'jaccard'").sort_values("spearman")
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from sdrlib.clinical import label_report
from sdrlib.clinical.presence import OBSERVATIONS, section_presence
from sdrlib.distances.engine import paired_distances
from sdrlib.distances.registry import available_distances, get
from sdrlib.errors import SDRError
from sdrlib.metrics.clinical import label_matrix, normalize_labels, strata_from_labels
from sdrlib.vocabulary import CHEXPERT_14

__all__ = ["FidelityError", "FidelityResult", "label_disagreement", "pair_distances", "sample_pairs",
           "fidelity_analysis", "spearman_difference", "identical_floor", "TARGETS", "MIN_PAIRS"]

#: label-disagreement targets
TARGETS = ("jaccard", "hamming")
#: correlations on fewer pairs are NaN
MIN_PAIRS = 10


class FidelityError(SDRError, ValueError):
    """Unusable input to the fidelity analysis (too few records, bad sizes or parameters)."""


@dataclass
class FidelityResult:
    """Output of :func:`fidelity_analysis`.

    Attributes
    ----------
    table : DataFrame
        One row per (setting, target, stratum): ``setting, origin, target, stratum, n_pairs, spearman,
        spearman_lo, spearman_hi, kendall, kendall_lo, kendall_hi, labels_source``.
    pairs : DataFrame
        One row per pair: ``i, j, stratum, jaccard, hamming`` and one distance column per setting.
    labels_source : str
        ``"dataset"`` or ``"offline labeler (sdrlib.clinical.labeler.label_report on Findings + Impression)"``.
    """

    table: pd.DataFrame
    pairs: pd.DataFrame
    labels_source: str


def _positive_matrix(labels: Sequence[Mapping[str, int]]) -> np.ndarray:
    return label_matrix(normalize_labels(labels), list(CHEXPERT_14), uncertain="positive").astype(bool)


def label_disagreement(labels_a: Sequence[Mapping[str, int]], labels_b: Sequence[Mapping[str, int]]) -> pd.DataFrame:
    """Jaccard and Hamming label distances of paired label dicts (module doc): columns ``jaccard, hamming``.

    Example: ``label_disagreement([{"Edema": 1}], [{"Edema": -1, "Fracture": 1}]).jaccard[0] -> 0.5``.
    """
    if len(labels_a) != len(labels_b):
        raise FidelityError(f"{len(labels_a)} label dicts against {len(labels_b)}")
    P, Q = _positive_matrix(labels_a), _positive_matrix(labels_b)
    inter = (P & Q).sum(1)
    union = (P | Q).sum(1)
    jac = np.where(union > 0, 1.0 - inter / np.maximum(union, 1), 0.0)
    ham = (P ^ Q).sum(1) / P.shape[1]
    return pd.DataFrame({"jaccard": jac, "hamming": ham})


def sample_pairs(n: int, n_pairs: int, seed: int = 0) -> np.ndarray:
    """``n_pairs`` distinct unordered pairs ``(i, j)``, ``i < j < n``, uniformly at random (seeded): (P, 2).

    All pairs when ``n_pairs`` >= n (n - 1) / 2. Example: ``sample_pairs(10, 5, seed=0).shape -> (5, 2)``.
    """
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise FidelityError(f"need at least 2 records for pairs, got {n!r}")
    if not isinstance(n_pairs, (int, np.integer)) or isinstance(n_pairs, bool) or n_pairs < 1:
        raise FidelityError(f"n_pairs must be a positive int, got {n_pairs!r}")
    total = n * (n - 1) // 2
    rng = np.random.default_rng(seed)
    if n_pairs >= total:
        i, j = np.triu_indices(n, 1)
        return np.stack([i, j], 1).astype(np.int64)
    if total <= 4_000_000:
        flat = np.sort(rng.choice(total, size=n_pairs, replace=False))
        i, j = np.triu_indices(n, 1)
        return np.stack([i[flat], j[flat]], 1).astype(np.int64)
    seen: set[tuple[int, int]] = set()
    while len(seen) < n_pairs:  # large n: rejection sampling, collisions are rare
        a, b = rng.integers(0, n, size=2)
        if a != b:
            seen.add((int(min(a, b)), int(max(a, b))))
    return np.array(sorted(seen), dtype=np.int64)


def pair_distances(sets_f: Sequence[np.ndarray], sets_i: Sequence[np.ndarray], pairs: np.ndarray,
                   names: Sequence[str], *, presence_f: Sequence[np.ndarray] | None = None,
                   presence_i: Sequence[np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """``D_F + D_I`` of every pair for every setting (batched; empty sections as in the module doc).

    ``sets_f`` / ``sets_i``: per-report (n, d) embedding sets; ``presence_*`` per-report (n, 14) presence
    arrays, needed only for negation-aware settings. Returns ``{name: (P,) array in [0, 2]}``.
    """
    a, b = pairs[:, 0], pairs[:, 1]
    out: dict[str, np.ndarray] = {}
    for name in names:
        spec = get(name)
        total = np.zeros(len(pairs))
        for sets, pres in ((sets_f, presence_f), (sets_i, presence_i)):
            A, B = [sets[k] for k in a], [sets[k] for k in b]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # capped entropic solves: counted in notebook 02, not here
                if spec.needs_presence and pres is None:
                    raise FidelityError(f"{spec.name} is negation-aware: pass presence_f / presence_i")
                presence = None if pres is None else ([pres[k] for k in a], [pres[k] for k in b])
                d = paired_distances(A, B, spec, presence=presence, empty_value=1.0, on_nonconvergence="ignore")
            both_empty = np.array([len(sets[x]) == 0 and len(sets[y]) == 0 for x, y in zip(a, b)], bool)
            total += np.where(both_empty, 0.0, d)
        out[spec.name] = total
    return out


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank)."""
    from scipy.stats import rankdata

    return rankdata(x, axis=-1)


def _spearman_many(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Row-wise Spearman of (B, P) arrays: Pearson of average ranks; NaN where a row is constant."""
    rx, ry = _ranks(X), _ranks(Y)
    rx = rx - rx.mean(1, keepdims=True)
    ry = ry - ry.mean(1, keepdims=True)
    den = np.sqrt((rx ** 2).sum(1) * (ry ** 2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (rx * ry).sum(1) / np.where(den > 0, den, 1.0), np.nan)


def _kendall(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import kendalltau

    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(kendalltau(x, y).statistic)


def _correlate(d: np.ndarray, t: np.ndarray, boot: np.ndarray, ci: float) -> dict[str, float]:
    """Spearman, Kendall and their percentile bootstrap CIs (``boot``: (B, P) resampled positions)."""
    nan = float("nan")
    if len(d) < MIN_PAIRS:
        return dict(spearman=nan, spearman_lo=nan, spearman_hi=nan, kendall=nan, kendall_lo=nan, kendall_hi=nan)
    lo_q, hi_q = 50 * (1 - ci), 100 - 50 * (1 - ci)
    s = float(_spearman_many(d[None], t[None])[0])
    sb = _spearman_many(d[boot], t[boot])
    kb = np.array([_kendall(d[r], t[r]) for r in boot])

    def q(v: np.ndarray) -> tuple[float, float]:
        v = v[np.isfinite(v)]
        return (float(np.percentile(v, lo_q)), float(np.percentile(v, hi_q))) if len(v) else (nan, nan)

    (slo, shi), (klo, khi) = q(sb), q(kb)
    return dict(spearman=s, spearman_lo=slo, spearman_hi=shi, kendall=_kendall(d, t), kendall_lo=klo,
                kendall_hi=khi)


def fidelity_analysis(records: Sequence[Any], embedder: Any, names: Sequence[str] | None = None, *,
                      n_pairs: int = 1500, n_boot: int = 200, seed: int = 0, ci: float = 0.95) -> FidelityResult:
    """Correlation of every setting's report distance with label disagreement (module doc).

    Parameters
    ----------
    records : sequence of Record-like
        ``findings``, ``impression`` (str) and ``labels`` (CheXpert dict or None) per report.
    embedder : SentenceEmbedder
        Embeds the section sentences (``encode_sections``, cached).
    names : sequence of str, optional
        Settings; default: the paper's 15 and our extensions (``available_distances(True)``).
    n_pairs : int
        Pairs sampled (seeded; all pairs if fewer exist).
    n_boot : int
        Bootstrap resamples of the pairs (0: no intervals).
    seed : int
        Seeds the pair sample and the bootstrap.
    ci : float in (0, 1)
        Interval coverage.

    Returns
    -------
    FidelityResult
    """
    if not (isinstance(ci, float) and 0 < ci < 1):
        raise FidelityError(f"ci must be a float in (0, 1), got {ci!r}")
    if not isinstance(n_boot, (int, np.integer)) or isinstance(n_boot, bool) or n_boot < 0:
        raise FidelityError(f"n_boot must be a non-negative int, got {n_boot!r}")
    records = list(records)
    names = list(available_distances(include_extensions=True) if names is None else names)
    if not names:
        raise FidelityError("no settings given")
    specs = [get(n) for n in names]
    findings = [r.findings for r in records]
    impression = [r.impression for r in records]
    if all(getattr(r, "labels", None) for r in records):
        labels, source = [dict(r.labels) for r in records], "dataset"
    else:
        labels = [label_report(f"{f} {i}".strip()) for f, i in zip(findings, impression)]
        source = "offline labeler (sdrlib.clinical.labeler.label_report on Findings + Impression)"
    pairs = sample_pairs(len(records), n_pairs, seed)
    sets_f = embedder.encode_sections(findings)
    sets_i = embedder.encode_sections(impression)
    need_presence = any(s.needs_presence for s in specs)
    pres_f = section_presence(findings) if need_presence else None
    pres_i = section_presence(impression) if need_presence else None
    dist = pair_distances(sets_f, sets_i, pairs, [s.name for s in specs], presence_f=pres_f, presence_i=pres_i)

    a, b = pairs[:, 0], pairs[:, 1]
    dis = label_disagreement([labels[k] for k in a], [labels[k] for k in b])
    st = strata_from_labels(labels)
    pair_stratum = np.where(st[a] == st[b], st[a], "mixed").astype(object)
    frame = pd.DataFrame({"i": a, "j": b, "stratum": pair_stratum, "jaccard": dis.jaccard, "hamming": dis.hamming})
    for name, v in dist.items():
        frame[name] = v

    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1]))
    rows = []
    for stratum in ("all", "no_finding", "single", "multi"):
        pos = np.arange(len(pairs)) if stratum == "all" else np.flatnonzero(pair_stratum == stratum)
        boot = rng.integers(0, len(pos), size=(n_boot, len(pos))) if len(pos) and n_boot else \
            np.zeros((0, len(pos)), np.int64)
        for spec in specs:
            d = frame[spec.name].to_numpy()[pos]
            for target in TARGETS:
                t = frame[target].to_numpy()[pos]
                r = _correlate(d, t, boot, ci)
                rows.append({"setting": spec.name, "origin": spec.origin, "target": target, "stratum": stratum,
                             "n_pairs": len(pos), **r, "labels_source": source})
    return FidelityResult(pd.DataFrame(rows), frame, source)


def spearman_difference(pairs: pd.DataFrame, a: str, b: str, *, target: str = "jaccard", n_boot: int = 200,
                        seed: int = 0, ci: float = 0.95) -> dict[str, Any]:
    """Paired bootstrap of Spearman(``a``, target) - Spearman(``b``, target) over the same report pairs.

    ``pairs`` is :attr:`FidelityResult.pairs` (one row per pair, a distance column per setting and the
    ``target`` column); both settings are resampled with the same pairs. Returns a row of the comparison schema
    (:data:`sdrlib.metrics.significance.COMPARISON_COLUMNS`): ``A, B, value_a, value_b, diff, ci_low, ci_high,
    p_value`` plus ``target, n, n_resamples``. ``p_value`` is two-sided, ``(1 + #|d* - d| >= |d|) / (1 + B)``
    as :func:`sdrlib.metrics.significance.paired_bootstrap` computes it.
    """
    if not (isinstance(ci, float) and 0 < ci < 1):
        raise FidelityError(f"ci must be a float in (0, 1), got {ci!r}")
    if not isinstance(n_boot, (int, np.integer)) or isinstance(n_boot, bool) or n_boot < 1:
        raise FidelityError(f"n_boot must be a positive int, got {n_boot!r}")
    for col in (a, b, target):
        if col not in pairs:
            raise FidelityError(f"no column {col!r} in the pair table")
    if len(pairs) < MIN_PAIRS:
        raise FidelityError(f"{len(pairs)} pairs: need at least {MIN_PAIRS}")
    da, db, t = (pairs[c].to_numpy(np.float64) for c in (a, b, target))
    boot = np.random.default_rng(np.random.SeedSequence([int(seed), 2])).integers(0, len(t), (n_boot, len(t)))
    va, vb = float(_spearman_many(da[None], t[None])[0]), float(_spearman_many(db[None], t[None])[0])
    ds = _spearman_many(da[boot], t[boot]) - _spearman_many(db[boot], t[boot])
    ds = ds[np.isfinite(ds)]
    d = va - vb
    lo, hi = np.quantile(ds, [(1 - ci) / 2, 1 - (1 - ci) / 2]) if ds.size else (np.nan, np.nan)
    p = min(1.0, (1.0 + np.count_nonzero(np.abs(ds - d) >= abs(d))) / (1.0 + ds.size))
    return {"A": a, "B": b, "value_a": va, "value_b": vb, "diff": d, "ci_low": float(lo), "ci_high": float(hi),
            "p_value": float(p), "target": target, "n": len(t), "n_resamples": int(ds.size)}


def identical_floor(names: Sequence[str] | None = None, sizes: Sequence[int] = (1, 2, 3, 4, 6, 8, 12), *,
                    dim: int = 384, n_sets: int = 20, seed: int = 0) -> pd.DataFrame:
    """The value each setting gives two **identical** sets, by set size (mean and max over random sets).

    Sets are ``n`` random unit vectors (seeded Gaussian directions, ``dim``-d, ``n_sets`` sets per size)
    compared with themselves on the batched engine. Exact families give 0; the entropic ones
    (Sinkhorn, UOT, GW) do not, because the regularised plan leaks mass off the diagonal, and how much
    depends on the set size (GW: exactly 0.5 for any two 2-sentence sets at every eps). Negation-aware settings get
    all-zero presence (no contradictions), so they equal their plain setting here.

    Returns a DataFrame: ``setting, origin, size, mean, max``. Example:
    ``identical_floor(["ot", "gw"], sizes=(2, 6)).pivot(index="setting", columns="size", values="mean")``.
    """
    names = list(available_distances(include_extensions=True) if names is None else names)
    sizes = list(sizes)
    if not sizes or any(not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1 for n in sizes):
        raise FidelityError(f"sizes must be positive ints, got {sizes!r}")
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        sets = [rng.standard_normal((int(n), dim)) for _ in range(n_sets)]
        sets = [s / np.linalg.norm(s, axis=1, keepdims=True) for s in sets]
        pres = [np.zeros((int(n), len(OBSERVATIONS)), np.int8) for _ in sets]
        for name in names:
            spec = get(name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                d = paired_distances(sets, sets, spec, presence=(pres, pres), on_nonconvergence="ignore")
            rows.append({"setting": spec.name, "origin": spec.origin, "size": int(n), "mean": float(d.mean()),
                         "max": float(d.max())})
    return pd.DataFrame(rows)
