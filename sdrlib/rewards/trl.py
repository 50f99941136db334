"""TRL adapters: a reward configuration as ``GRPOTrainer`` reward functions and weights.

Each function has TRL's signature ``f(completions, **kwargs) -> list[float]`` and reads the reference from
the ``findings`` and ``impression`` dataset columns (``impressions`` also accepted); TRL sums
``weight * f``, so the trainer's reward equals :attr:`sdrlib.rewards.RewardBreakdown.total` (each function
returns its component times the prompt weight, :attr:`~sdrlib.rewards.RewardBreakdown.weight`, so a ``_bal<w>``
reward weights format and content alike). The training log gets the unweighted mean reward per reference stratum
(``reward_strata/normal``, ``reward_strata/abnormal``, ``reward_strata/abnormal_share``). The functions
of one configuration share one :class:`~sdrlib.rewards.RewardScorer`, whose cache scores each batch once.

Left out: scoring itself (:mod:`sdrlib.rewards.scorer`) and the trainer (:mod:`sdrlib.training.grpo`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from sdrlib.rewards.completion import BAD_REASONS, DEFAULT_MAX_CHARS, check_max_chars, check_weight
from sdrlib.rewards.scorer import RewardBreakdown, RewardScorer, reference_texts
from sdrlib.rewards.spec import RewardError, parse_reward

__all__ = ["trl_reward_functions"]


def _column(kwargs: dict, *names: str) -> list[str]:
    """The first present reference column among ``names``, checked by :func:`sdrlib.rewards.scorer.reference_texts`.

    Values are never converted with ``str()``: ``None`` / NaN / ``pd.NA`` / blank raise
    :class:`ReferenceTextError` naming the column and row.
    """
    for name in names:
        if name in kwargs and kwargs[name] is not None:
            return reference_texts(kwargs[name], name)
    raise RewardError(
        f"reward function needs a reference column {names[0]!r} in the dataset "
        f"(TRL passes dataset columns as keyword arguments); got columns {sorted(kwargs)}"
    )


def _scorer(reward: Any, embedder: Any, lambda_fmt: float | None, lambda_sem: float | None, max_chars: int | None,
            scorer: RewardScorer | None, settings: Any, data: Mapping[str, Any] | None) -> RewardScorer:
    """The scorer behind :func:`trl_reward_functions`: built from the arguments, or ``scorer`` checked against them
    (same reward; an explicit weight or ``max_chars`` must be the scorer's; no settings or data beside it)."""
    if scorer is None:
        # None weights: the method's own (RewardMethod.lambdas, the one owner, through the constructor)
        return RewardScorer(reward, embedder, lambda_fmt, lambda_sem,
                            DEFAULT_MAX_CHARS if max_chars is None else max_chars, settings=settings, data=data)
    if settings is not None or data is not None:
        raise RewardError("settings and data belong to the scorer; set them on the RewardScorer")
    if not isinstance(scorer, RewardScorer):
        raise RewardError(f"scorer must be a RewardScorer, got {type(scorer).__name__}")
    if scorer.reward != parse_reward(reward).name:
        raise RewardError(f"scorer computes {scorer.reward!r}, asked for {reward!r}")
    for key, given, have in (("lambda_fmt", lambda_fmt, scorer.lambda_fmt),
                             ("lambda_sem", lambda_sem, scorer.lambda_sem),
                             ("max_chars", max_chars, scorer.max_chars)):
        if given is None:
            continue
        checked = check_max_chars(given) if key == "max_chars" else check_weight(given, key)
        if checked != have:
            raise RewardError(f"{key}={given!r} differs from the scorer's {have!r}; set it on the scorer")
    return scorer


def _log_breakdown(impl: Any, b: RewardBreakdown, log: Callable[[str, float], Any]) -> None:
    """Log a freshly scored batch through TRL's ``log_metric``: the method's own values, the bad-completion shares,
    the components, the failures (methods that log them), the unweighted reward per reference stratum, the time."""
    n = max(len(b.reasons), 1)
    for name, value in impl.breakdown_logs(b):
        log(name, value)
    for reason in BAD_REASONS:
        log(f"bad_completions/{reason}", sum(r == reason for r in b.reasons) / n)
    for name, values in b.components.items():
        log(f"reward_components/{name}", float(np.mean(values)))
    if impl.logs_failures:
        log("reward_components/sem_failed", float(b.sem_failed))
        log("reward_components/truncated_sentences", float(b.truncated))
    # like with like: the unweighted reward per stratum of the reference (a batch's prompt mix varies)
    plain = b.total / b.weight
    for stratum, rows in (("normal", ~b.abnormal), ("abnormal", b.abnormal)):
        if rows.any():
            log(f"reward_strata/{stratum}", float(plain[rows].mean()))
    log("reward_strata/abnormal_share", float(b.abnormal.mean()) if len(b.abnormal) else 0.0)
    log("reward_time/seconds", b.seconds)
    log("reward_time/new_sentences", float(b.new_sentences))


def trl_reward_functions(
    reward: Any,
    embedder: Any = None,
    *,
    lambda_fmt: float | None = None,
    lambda_sem: float | None = None,
    max_chars: int | None = None,
    scorer: RewardScorer | None = None,
    settings: Any = None,
    data: Mapping[str, Any] | None = None,
) -> tuple[list[Callable[..., list[float]]], list[float]]:
    """Reward functions and weights for ``GRPOTrainer(reward_funcs=..., args=GRPOConfig(reward_weights=...))``.

    Returns ``([r_fmt], [lambda_fmt])`` for ``"fmt"``, ``([r_fmt, r_exact], [lambda_fmt, lambda_sem])``
    for ``"exact"``, ``([r_fmt, r_sem_<name>], [lambda_fmt, lambda_sem])`` for a distance,
    ``([r_fmt, r_fact, r_check], [lambda_fmt, lambda_sem * lambda_fact, lambda_sem * lambda_check])`` for
    ``"gcarl"`` (``lambda_fmt`` defaults to G-CARL's 0.3 there) and ``([r_fmt, r_f1_14, r_f1_entity,
    r_sem_neg], [lambda_fmt, lambda_sem, lambda_sem, lambda_sem])`` for an EditGRPO name: ``r_fmt`` then the
    method's :meth:`~sdrlib.rewards.spec.RewardMethod.trl_parts`. ``settings`` (the method's settings
    object) and ``data`` (its data, G-CARL: ``{"bank": sentences}``) go to the :class:`RewardScorer`
    built here. Each function reads the reference from the ``findings`` and ``impression`` dataset
    columns (``impressions`` also accepted).

    ``lambda_fmt`` / ``lambda_sem`` / ``max_chars`` default to 1.0 / 1.0 /
    :data:`~sdrlib.rewards.DEFAULT_MAX_CHARS` (or the method's own weights); with ``scorer`` given they
    default to the scorer's, and a different explicit value raises :class:`RewardError` (the weights TRL
    applies must be the scorer's). Bad values raise :class:`RewardError` here. A missing reference value
    raises :class:`ReferenceTextError` at call time; a bad completion scores 0.
    Example: ``funcs, w = trl_reward_functions("hausdorff")``.
    """
    scorer = _scorer(reward, embedder, lambda_fmt, lambda_sem, max_chars, scorer, settings, data)
    lambda_fmt, lambda_sem = scorer.lambda_fmt, scorer.lambda_sem
    impl = scorer.impl

    def _run(completions, kwargs) -> RewardBreakdown:
        b, fresh = scorer.score_cached(
            completions, _column(kwargs, "findings"), _column(kwargs, "impression", "impressions")
        )
        log = kwargs.get("log_metric")
        if fresh and callable(log):
            _log_breakdown(impl, b, log)
        return b

    def r_fmt(completions, **kwargs) -> list[float]:
        """R_fmt per completion, stricter than the paper's (module doc): no visible text outside the tags."""
        b = _run(completions, kwargs)
        return (b.fmt * b.weight).tolist()

    funcs: list[Callable[..., list[float]]] = [r_fmt]
    weights = [float(lambda_fmt)]
    for fname, get, factor in impl.trl_parts(scorer.spec, scorer):

        def component(completions, _get=get, **kwargs) -> list[float]:
            b = _run(completions, kwargs)
            return (_get(b) * b.weight).tolist()

        component.__name__ = component.__qualname__ = fname
        funcs.append(component)
        weights.append(float(lambda_sem) * factor)
    for f in funcs:
        f.scorer = scorer  # type: ignore[attr-defined]
    return funcs, weights
