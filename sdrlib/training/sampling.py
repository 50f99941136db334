"""Balanced sampling of SFT studies: studies with rare findings drawn more often (ours; none of the three papers
samples by finding).

Trained on studies drawn uniformly, the tiny policy sees a pneumothorax in about 3 of every 100 reports and learns
to write the findings it sees often (docs/evidence/sft_start). With ``sft.balanced_sampling`` = a > 0, SFT draws
each batch's studies with replacement, study i with probability proportional to ``rarity_i ** -a``, where
``rarity_i`` is the training prevalence of the rarest of its positive (or uncertain) observations among
:data:`sdrlib.training.tower.TOWER_OBSERVATIONS`, or the share of studies without any for a study with none. ``a``
= 1 draws each finding about as often as the others (inverse frequency of the rarest), ``a`` = 0.5 halfway (in
logs); 0 keeps TRL's uniform shuffle. Labels are the **training split's** (:func:`sdrlib.training.tower.tower_labels`).

- :func:`balanced_weights`: the weights ``(n,)`` from the label matrix ``(n, 13)``.
- :class:`BalancedSampler`: a ``torch`` sampler of ``n`` indices per epoch, drawn with a generator seeded by the
  run's seed and the epoch (``set_epoch``), so a run and its resume draw the same studies.
- :func:`balanced_trainer`: a trainer class (e.g. TRL's ``SFTTrainer``) whose training sampler is a
  :class:`BalancedSampler` over the keyword ``sample_weights``; under several processes each takes its shard of
  every global batch, as with the uniform sampler.

Bad input: weights that are not finite and positive, or an exponent below 0, raise :class:`SamplingError`.

Example:

>>> import numpy as np
>>> y = np.zeros((6, 13), np.float32); y[0, 8] = 1; y[1:3, 1] = 1   # 1 pneumothorax, 2 cardiomegaly, 3 normal
>>> w = balanced_weights(y, 1.0)
>>> [round(float(v), 3) for v in w / w.sum()]   # prevalence 1/6, 2/6 and 3/6 (no finding): weights 6, 3, 2
[0.333, 0.167, 0.167, 0.111, 0.111, 0.111]
>>> s = BalancedSampler(w, seed=0); first = list(s); s.set_epoch(1)
>>> len(first), first == list(BalancedSampler(w, seed=0)), first == list(s)   # the epoch's draws: seed and epoch
(6, True, False)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from sdrlib.errors import SDRError

__all__ = ["SamplingError", "balanced_weights", "BalancedSampler", "balanced_trainer"]


class SamplingError(SDRError, ValueError):
    """Weights or an exponent balanced sampling cannot use; the message names the value."""


def balanced_weights(labels: np.ndarray, exponent: float) -> np.ndarray:
    """``(n,)`` float64 sampling weights from ``labels`` ``(n, L)`` (1 = positive or uncertain): each study's
    ``rarity ** -exponent`` (module doc). ``exponent`` 0 gives equal weights. Raises :class:`SamplingError` for an
    exponent below 0 or not finite, or labels that are not ``(n, L)`` with ``n`` >= 1."""
    y = np.asarray(labels, np.float64)
    if y.ndim != 2 or not len(y):
        raise SamplingError(f"labels of shape {y.shape}: balanced sampling needs an (n, L) label matrix, n >= 1")
    if not np.isfinite(exponent) or exponent < 0:
        raise SamplingError(f"sft.balanced_sampling = {exponent!r}: an exponent >= 0 (0 = uniform)")
    pos = y > 0
    prevalence = pos.mean(axis=0)
    none = ~pos.any(axis=1)
    rarity = np.where(pos, prevalence[None, :], np.inf).min(axis=1)
    rarity[none] = none.mean()
    return rarity ** -float(exponent)


class BalancedSampler:
    """``len(weights)`` study indices per epoch, drawn with replacement in proportion to ``weights``; the generator
    is seeded by ``seed`` and the epoch (``set_epoch``, called by the trainer each epoch), so an epoch's draws are a
    function of both alone. Raises :class:`SamplingError` for weights that are not finite and positive."""

    def __init__(self, weights: Any, seed: int) -> None:
        w = np.asarray(weights, np.float64)
        if w.ndim != 1 or not len(w) or not np.isfinite(w).all() or (w <= 0).any():
            raise SamplingError("sampling weights must be a non-empty 1-D array of finite values > 0")
        self.weights, self.seed, self.epoch = w, int(seed), 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.weights)

    def __iter__(self) -> Iterator[int]:
        rng = np.random.default_rng([self.seed, self.epoch])
        return iter(rng.choice(len(self.weights), size=len(self.weights), p=self.weights / self.weights.sum()).tolist())


def balanced_trainer(base: type) -> type:
    """``base`` (a ``transformers.Trainer`` subclass) whose training sampler is a :class:`BalancedSampler` over the
    keyword ``sample_weights`` (one per training row), seeded by the run's ``args.data_seed`` (else ``args.seed``)."""

    class BalancedTrainer(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, sample_weights: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if len(sample_weights) != len(self.train_dataset):
                raise SamplingError(f"{len(sample_weights)} sampling weights for {len(self.train_dataset)} "
                                    "training rows")
            seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
            self._sdr_sampler = BalancedSampler(sample_weights, seed)

        def _get_train_sampler(self, train_dataset: Any = None) -> Any:
            return self._sdr_sampler

    BalancedTrainer.__name__ = BalancedTrainer.__qualname__ = f"Balanced{base.__name__}"
    return BalancedTrainer
