"""Paired bootstrap comparison of two systems scored on the same samples.

For every metric the statistic is the metric's own corpus value (a mean, a
corpus BLEU, a macro F1, ...), recomputed on each resample from per-sample
sufficient statistics (:class:`sdrlib.metrics.base.MetricResult`), so corpus
metrics are resampled correctly rather than approximated by means.

- confidence interval: percentile interval of the resampled difference
  ``d* = m_A(resample) - m_B(resample)`` (the same resample for both systems);
- p-value (two-sided): the shifted-null bootstrap test (Berg-Kirkpatrick et
  al. 2012; Koehn 2004): ``(1 + #{|d* - d| >= |d|}) / (1 + B)``, with ``d``
  the observed difference. Small p means the sign of ``d`` is reliable.

Over seeds and studies together, :func:`seed_study_test` (one test for a claim about a configuration
trained with several seeds; see its docstring for the procedure).

Limits of :func:`seed_study_test`: with 3 seeds the t-test has little power (a difference needs to be consistent across seeds,
about 4.3 standard errors); normal seed effects are assumed; the two-level bootstrap counts the study
noise twice (it is also in the between-seed spread), so it is conservative when seeds hardly differ;
no multiple-comparison correction. A single run of a stochastic B is refused (``b_deterministic``):
its run noise is one draw shared by all ``k`` differences, so neither the t-test over seeds nor the
seed level of the bootstrap sees it; in the synthetic setup below with B's 3 runs replaced by one, this test rejected 14 % at alpha = 0.05 with no true difference (t-test alone 16 %, bootstrap
alone 32 %).

Synthetic check (``tests/metrics/test_significance_seeds.py``, 200 replicates, 3 seeds, 100 studies,
no true difference): with seed SD 0.03 this test rejects 3.5 % at alpha = 0.05 (t-test alone 3.5 %,
two-level bootstrap alone 19 %), the per-seed study bootstrap rejects in at least one seed 91 % and
in at least two seeds 48 %. With no seed noise but a system-by-study effect (each system better on
some studies, the same in every seed; SD 0.1, run noise SD 0.01) the t-test alone rejects 80 %
(it holds the test studies fixed), the bootstrap 5 % and this test 5 %: each half guards the other's
blind spot.

**One schema for every comparison table** (:data:`COMPARISON_COLUMNS`): the systems ``A`` and ``B``, their values
``value_a`` and ``value_b``, ``diff = value_a - value_b``, the interval ``ci_low`` / ``ci_high`` and ``p_value``;
the tables are built in :mod:`sdrlib.experiments.tables` (notebooks 03-06), :func:`sdrlib.metrics.suite.compare_systems`
and :func:`sdrlib.experiments.decomposition.paired_f1_table`. How rows become direction words (Holm over a table's
family and the interval excluding 0) is :mod:`sdrlib.metrics.verdict`;
:func:`format_p` is the one way a p-value is printed.

Leaves out approximate randomization.

Example::

    >>> from sdrlib.metrics.base import mean_result
    >>> a = mean_result("m", "x", np.array([1.0, 1.0, 1.0, 0.0]))
    >>> b = mean_result("m", "x", np.array([0.0, 0.0, 0.0, 0.0]))
    >>> round(paired_bootstrap(a, b, n_resamples=200, seed=0)["diff"], 2)
    0.75
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from scipy import stats as _st

from sdrlib.errors import SDRError
from sdrlib.metrics.base import MetricResult, product_cache

__all__ = ["bootstrap_weights", "paired_bootstrap", "seed_study_test", "format_p", "COMPARISON_COLUMNS",
           "SignificanceInputError", "shared_resamples"]


class SignificanceInputError(SDRError, ValueError):
    """Runs, counts or levels a paired test cannot use; the message names the side (A or B) and what to pass."""


def _count(value, what: str, least: int = 1) -> int:
    """``value`` as an int >= ``least``; bools, fractions (2.5) and text are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < least:
        raise SignificanceInputError(f"{what} = {value!r}: a whole number >= {least}")
    return int(value)


def _ci(ci) -> float:
    if isinstance(ci, (bool, np.bool_)) or not isinstance(ci, (int, float, np.floating)) or not 0.0 < ci < 1.0:
        raise SignificanceInputError(f"ci = {ci!r}: a confidence level in (0, 1), e.g. 0.95")
    return float(ci)


def _metric_of(r) -> tuple[str, str]:
    if not isinstance(r, MetricResult):
        raise SignificanceInputError(f"a run is a MetricResult (one metric of one section), got {type(r).__name__}")
    return r.name, r.backend

#: the columns every paired comparison table has, in this order (keys such as section or metric before them)
COMPARISON_COLUMNS = ("A", "B", "value_a", "value_b", "diff", "ci_low", "ci_high", "p_value")


def format_p(p: float) -> str:
    """A p-value as every table, notebook and README sentence prints it: three decimals, and below 0.0005
    (which rounds to 0.000) ``"p < 0.001"``. Example: ``format_p(0.0412) -> "p = 0.041"``,
    ``format_p(2e-4) -> "p < 0.001"``; NaN gives ``"p = nan"``."""
    return "p < 0.001" if p < 0.0005 else f"p = {p:.3f}"


def bootstrap_weights(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """``(n_resamples, n)`` multinomial resample counts (each row sums to ``n``), seeded. Inside
    :func:`shared_resamples` the same (read-only) array for the same arguments."""
    _count(n, "bootstrap samples n (at least one sample)")
    _count(n_resamples, "n_resamples")
    _count(seed, "seed", least=0)
    key = (int(n), int(n_resamples), int(seed))
    if _WEIGHTS is not None and key in _WEIGHTS:
        return _WEIGHTS[key]
    rng = np.random.default_rng(seed)
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples).astype(np.float64)
    if _WEIGHTS is not None:
        w.flags.writeable = False
        _WEIGHTS.clear()  # one weight matrix at a time: a table resamples every row under the same one
        _WEIGHTS[key] = w
    return w


#: the open :func:`shared_resamples` block's weights, ``{(n, n_resamples, seed): array}``, or None
_WEIGHTS: dict | None = None


@contextmanager
def shared_resamples(max_bytes: int = 2**30) -> Iterator[None]:
    """Within the block, :func:`bootstrap_weights` draws the resample counts of one ``(n, n_resamples, seed)`` once
    and every :meth:`~sdrlib.metrics.base.MetricResult.value_for` of those counts and one run's statistics is
    computed once (:func:`sdrlib.metrics.base.product_cache`, up to ``max_bytes``). The p-values, intervals and
    standard errors are the same floats as without it; a table of many rows over the same runs
    (:func:`sdrlib.experiments.study.runs.study_table`: 11 comparisons x 4 metrics over 7 x 22 runs of 400 studies,
    10,000 resamples) takes about a third of the time (``benchmarks/bench_study_table.py``: 58.6 s -> 16.9 s wall on
    2 loaded cores)."""
    global _WEIGHTS
    if _WEIGHTS is not None:
        yield
        return
    _WEIGHTS = {}
    try:
        with product_cache(max_bytes):
            yield
    finally:
        _WEIGHTS = None


def paired_bootstrap(a: MetricResult, b: MetricResult, *, n_resamples: int = 1000, seed: int = 0,
                     ci: float = 0.95, weights: np.ndarray | None = None) -> dict[str, float]:
    """Paired bootstrap of ``a - b`` for one metric.

    Parameters
    ----------
    a, b : MetricResult
        The same metric on the same ``n`` samples (same order) for systems A and B.
    n_resamples, seed : int
        Number of resamples and RNG seed (ignored when ``weights`` is given).
    ci : float
        Confidence level of the percentile interval.
    weights : array, shape (B, n), optional
        Precomputed resample counts, so that every metric of one comparison uses
        the very same resamples.

    Returns
    -------
    dict with ``value_a, value_b, diff, ci_low, ci_high, p_value, n, n_resamples``.
    """
    if _metric_of(a) != _metric_of(b):
        raise SignificanceInputError(f"paired_bootstrap: A is scored on {a.name} ({a.backend}), B on {b.name} "
                                     f"({b.backend}); compare one metric on both sides")
    if a.stats.shape[0] != b.stats.shape[0]:
        raise SignificanceInputError(f"{a.name}: systems cover {a.stats.shape[0]} vs {b.stats.shape[0]} samples")
    ci = _ci(ci)
    n = a.stats.shape[0]
    w = bootstrap_weights(n, n_resamples, seed) if weights is None else np.asarray(weights, np.float64)
    va, vb = float(a.corpus), float(b.corpus)
    d = va - vb
    ds = a.value_for(w) - b.value_for(w)
    ds = ds[np.isfinite(ds)]
    if ds.size == 0 or not np.isfinite(d):
        return dict(value_a=va, value_b=vb, diff=d, ci_low=np.nan, ci_high=np.nan, p_value=np.nan,
                    n=n, n_resamples=int(w.shape[0]))
    lo, hi = np.quantile(ds, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    p = (1.0 + np.count_nonzero(np.abs(ds - d) >= abs(d))) / (1.0 + ds.size)
    return dict(value_a=va, value_b=vb, diff=d, ci_low=float(lo), ci_high=float(hi),
                p_value=float(min(p, 1.0)), n=n, n_resamples=int(w.shape[0]))


def seed_study_test(a: Sequence[MetricResult], b: Sequence[MetricResult], *, n_resamples: int = 1000,
                    seed: int = 0, ci: float = 0.95, b_deterministic: bool = False,
                    a_deterministic: bool = False) -> dict[str, float | int | list[float]]:
    """One test of configuration A against B over training seeds *and* test studies.

    ``a[s]``, ``b[s]``: one metric of seed ``s`` of A and of B, all on the same ``n`` test studies in the
    same order. For the SFT column (one SFT policy, sampled with each seed), ``b[s]`` is the SFT policy's
    sample drawn with seed ``s``, so sampling noise enters the seed variance like training noise does.
    ``b`` may hold a single run, used against every seed of A, only with ``b_deterministic=True``: the
    caller states that B has no run-to-run noise (a fixed baseline, greedy decoding of one policy). A
    single B run against several seeds of A (or one B run object repeated in ``b``) otherwise raises
    ``ValueError``: one run of a stochastic B puts its run noise into every seed difference identically,
    where the t-test over seeds cannot see it (see Limits). A and B alike (``a_deterministic`` for A; one metric
    on both sides; an all-NaN side refused): :func:`_paired_runs`, :class:`SignificanceInputError` naming the side.

    The statistic is ``D = mean_s [m(a_s) - m(b_s)]``, ``m`` the metric's corpus value (recomputed from
    per-sample sufficient statistics, so macro F1 / corpus BLEU are resampled correctly). Two checks:

    1. **Two-level paired bootstrap** (``p_boot``): each resample draws seeds with replacement and, within,
       study weights shared by both systems and every seed (the studies are the same, so pairing is kept);
       shifted-null two-sided p as in :func:`paired_bootstrap`. This carries the study sampling noise.
    2. **t-test over seeds** (``p_seed_t``): one-sample t on the ``k`` per-seed corpus differences,
       ``k - 1`` degrees of freedom. With ``k = 3`` seeds the seed level of the bootstrap alone is far too
       coarse (10 distinct seed multisets, a seed variance shrunk by ``(k-1)/k`` and normal rather than
       t(2) tails: on pure seed noise it rejects about a fifth of the time, 19 % in the synthetic check
       below), while a sign-flip permutation over 3 seeds cannot go below p = 0.25; the t-test is exact
       for normal seed effects (and holds the test studies fixed: the bootstrap carries their noise).

    ``p_value = max(p_boot, p_seed_t)``: significant only when both agree (an intersection-union test,
    level ``alpha`` whenever either check is). The interval is the hull of the bootstrap percentile
    interval and the t interval ``D ± t_{k-1} · sd / sqrt(k)``, so it excludes 0 roughly when p < 1 - ci.
    With one seed (``k = 1``) there is no seed variance to test: ``p_value`` is the study bootstrap's, the
    per-seed test of old, and ``p_seed_t`` is NaN; read such rows as a single run.

    Limits and the synthetic check behind the numbers above: the module docstring.

    Returns
    -------
    dict with ``value_a, value_b`` (means over seeds), ``diff`` (D), ``ci_low, ci_high, p_value, p_boot,
    p_seed_t, seed_sd`` (sample SD of the per-seed differences), ``n_same_sign`` (seeds whose difference has
    D's sign), ``study_se`` (the study half's standard error: the SD of D over the study resamples with the seeds
    held fixed, the noise that more test studies remove and more seeds cannot; the interval above also holds the
    seed half; NaN for one study, whose resamples cannot vary), ``n_seeds, n, n_resamples``, and per seed ``seed_diffs`` and ``seed_p`` (the per-seed paired
    bootstrap p over studies, same resamples).

    Example::

        >>> from sdrlib.metrics.base import mean_result
        >>> rng = np.random.default_rng(0)
        >>> a = [mean_result("m", "x", rng.normal(0.6 + u, 0.1, 100)) for u in (0.0, 0.01, -0.01)]
        >>> b = [mean_result("m", "x", rng.normal(0.5, 0.1, 100))]  # one run of a fixed baseline
        >>> r = seed_study_test(a, b, n_resamples=200, b_deterministic=True)
        >>> r["n_same_sign"], r["p_value"] < 0.05
        (3, True)
    """
    a, b = _paired_runs(a, b, b_deterministic, a_deterministic)
    ci, _, _ = _ci(ci), _count(n_resamples, "n_resamples"), _count(seed, "seed", least=0)
    n = a[0].stats.shape[0]
    if any(r.stats.shape[0] != n for r in (*a, *b)):
        raise SignificanceInputError(f"{a[0].name}: every run must cover the same {n} studies")
    k = len(a)
    w = bootstrap_weights(n, n_resamples, seed)
    d_s = np.array([float(x.corpus) - float(y.corpus) for x, y in zip(a, b)])
    boot = np.stack([x.value_for(w) - y.value_for(w) for x, y in zip(a, b)])  # (k, B)
    out: dict = dict(value_a=float(np.mean([x.corpus for x in a])), value_b=float(np.mean([y.corpus for y in b])),
                     diff=float(d_s.mean()), n_seeds=k, n=n, n_resamples=n_resamples,
                     seed_diffs=[float(x) for x in d_s])
    ok = np.isfinite(boot).all(axis=0)
    out["seed_p"] = _per_seed_p(boot, d_s, ok)
    d = out["diff"]
    if not np.isfinite(d) or not ok.any():
        return {**out, **dict(ci_low=np.nan, ci_high=np.nan, p_value=np.nan, p_boot=np.nan, p_seed_t=np.nan,
                              seed_sd=np.nan, n_same_sign=0, study_se=np.nan)}
    lo, hi, p_boot = _seed_level_bootstrap(boot, ok, d, n_resamples, seed, ci)
    sd, p_t, lo, hi, p = _seed_t_test(d_s, d, ci, lo, hi, p_boot)
    same = int(np.sum(np.sign(d_s) == np.sign(d))) if d != 0 else 0
    study = boot[:, ok].mean(axis=0)  # the study half alone: the seed mean under the study resamples, seeds fixed
    study_se = float(np.std(study, ddof=1)) if study.size > 1 and n > 1 else float("nan")  # one study: no variance
    return {**out, "ci_low": float(lo), "ci_high": float(hi), "p_value": float(p), "p_boot": float(p_boot),
            "p_seed_t": p_t, "seed_sd": sd, "n_same_sign": same, "study_se": study_se}


def _run_content(r: MetricResult) -> tuple:
    """What makes two runs the same run: the per-study statistics and the corpus value, by content (a deep copy
    or a re-read of one run is that run again), not by object identity."""
    stats = np.ascontiguousarray(np.asarray(r.stats, dtype=np.float64))
    return stats.shape, stats.tobytes(), np.float64(r.corpus).tobytes()


def _paired_runs(a: Sequence[MetricResult], b: Sequence[MetricResult], b_deterministic: bool,
                 a_deterministic: bool = False) -> tuple[list[MetricResult], list[MetricResult]]:
    """``(a, b)`` as lists of equal length ``k``: a single deterministic run of either side repeated for every run
    of the other. Both sides are checked alike: one metric, no copies of one run unless that side is declared
    deterministic, not every run NaN."""
    if isinstance(a, MetricResult) or isinstance(b, MetricResult):
        raise SignificanceInputError("seed_study_test: a and b are sequences of runs (one MetricResult per seed); "
                                     "wrap a single run in a list")
    sides = {"A": list(a), "B": list(b)}
    det = {"A": a_deterministic, "B": b_deterministic}
    if not sides["A"] or not sides["B"]:
        raise SignificanceInputError(f"seed_study_test needs runs on both sides, got {len(sides['A'])} A and "
                                     f"{len(sides['B'])} B")
    metrics = {side: {_metric_of(r) for r in runs} for side, runs in sides.items()}
    if len(metrics["A"] | metrics["B"]) > 1:
        raise SignificanceInputError(f"seed_study_test: A is scored on {sorted(metrics['A'])}, B on "
                                     f"{sorted(metrics['B'])}; every run of both sides must be one metric")
    for side, runs in sides.items():
        if all(not np.isfinite(float(r.corpus)) for r in runs):
            raise SignificanceInputError(f"seed_study_test: every run of {side} ({runs[0].name}) is NaN: nothing "
                                         "was scored there; score the runs first (or leave the metric out)")
    for side, other in (("B", "A"), ("A", "B")):
        runs, k = sides[side], len(sides[other])
        distinct = len({_run_content(r) for r in runs})
        single = len(runs) == 1 and k > 1
        if (single or distinct < len(runs)) and not det[side]:
            copies = (f" ({side}'s {len(runs)} runs hold {distinct} distinct one(s): copies of a run count once)"
                      if len(runs) > 1 else "")
            raise SignificanceInputError(
                f"seed_study_test: one run of {side} against {k} seeds of {other}{copies}: one run of a stochastic "
                f"{side} puts its run noise into every seed difference identically, so the test cannot see it "
                f"(about 14 % false rejections at alpha = 0.05 in the synthetic check); pass one {side} run per seed "
                f"of {other}, or {side.lower()}_deterministic=True when {side} has no run-to-run noise (e.g. a fixed "
                "baseline)")
    a, b = sides["A"], sides["B"]
    if len(b) == 1:
        b = b * len(a)
    elif len(a) == 1:
        a = a * len(b)
    if len(a) != len(b):
        raise SignificanceInputError(f"seed_study_test needs one run of a side or one per seed of the other, got "
                                     f"{len(a)} A vs {len(b)} B")
    return a, b


def _per_seed_p(boot: np.ndarray, d_s: np.ndarray, ok: np.ndarray) -> list[float]:
    """Per seed, the shifted-null p of its study bootstrap: ``boot`` ``(k, B)`` resampled differences, ``d_s``
    ``(k,)`` observed ones, ``ok`` ``(B,)`` resamples finite for every seed."""
    return [float((1.0 + np.count_nonzero(np.abs(boot[s, ok] - d_s[s]) >= abs(d_s[s]))) / (1.0 + ok.sum()))
            if ok.any() and np.isfinite(d_s[s]) else np.nan for s in range(len(d_s))]


def _seed_level_bootstrap(boot: np.ndarray, ok: np.ndarray, d: float, n_resamples: int, seed: int,
                          ci: float) -> tuple[float, float, float]:
    """``(lo, hi, p_boot)`` of the two-level bootstrap: each resample draws the ``k`` seeds with replacement (its
    own RNG stream, reproducible from ``seed``) on top of the shared study weights behind ``boot`` ``(k, B)``."""
    k = boot.shape[0]
    counts = np.random.default_rng([seed, 1]).multinomial(k, np.full(k, 1.0 / k), size=n_resamples)
    ds = (counts * boot.T).sum(axis=1)[ok] / k
    lo, hi = np.quantile(ds, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    p_boot = min(1.0, (1.0 + np.count_nonzero(np.abs(ds - d) >= abs(d))) / (1.0 + ds.size))
    return lo, hi, p_boot


def _seed_t_test(d_s: np.ndarray, d: float, ci: float, lo: float, hi: float, p_boot: float
                 ) -> tuple[float, float, float, float, float]:
    """``(seed_sd, p_seed_t, lo, hi, p)``: the one-sample t-test over the ``k`` per-seed differences ``d_s``,
    the interval widened to the hull with the t interval and ``p = max(p_boot, p_seed_t)`` (``k = 1``: no seed
    variance, ``p_seed_t`` NaN and ``p = p_boot``)."""
    k = len(d_s)
    sd = float(d_s.std(ddof=1)) if k > 1 else np.nan
    if k > 1:
        se = sd / np.sqrt(k)
        if se > 0:
            p_t = float(2 * _st.t.sf(abs(d) / se, k - 1))
            half = float(_st.t.ppf(1 - (1 - ci) / 2, k - 1) * se)
        else:  # identical per-seed differences: no seed variance to test against
            p_t, half = (0.0 if d != 0 else 1.0), 0.0
        lo, hi = min(lo, d - half), max(hi, d + half)
        p = max(p_boot, p_t)
    else:
        p_t, p = np.nan, p_boot
    return sd, p_t, lo, hi, p
