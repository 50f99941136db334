"""Random and structured embedding sets for tests, benchmarks and the notebook.

``structured_bank`` imitates sentence embeddings of radiology reports: a pool of
unique "sentences" built as ``normalise(g * w_g + c_topic * w_t + noise)`` (a
shared component ``g``, one of a few topic centres, isotropic noise), which gives
cosine similarities of about 0.2 across topics and 0.5-0.9 within one; reports draw
their sentences from the pool so that each unique sentence occurs ``repeat`` times
on average (IU-Xray: 2.8). Left out: any claim that these match a real encoder's
geometry beyond that spread.
"""

from __future__ import annotations

import numpy as np


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _sizes(rng: np.random.Generator, count: int, n_min: int, n_max: int, sizes) -> np.ndarray:
    """``count`` set sizes: uniform in [n_min, n_max], or drawn with replacement from ``sizes``."""
    if sizes is None:
        return rng.integers(n_min, n_max + 1, size=count)
    pool = np.asarray(sizes, dtype=np.int64)
    if pool.ndim != 1 or not len(pool) or pool.min() < 1:
        raise ValueError("sizes must be a non-empty 1-D array of positive set sizes")
    return rng.choice(pool, size=count)


def random_sets(rng: np.random.Generator, count: int, d: int = 768, n_min: int = 1,
                n_max: int = 15, sizes=None) -> list[np.ndarray]:
    """``count`` sets of i.i.d. Gaussian unit vectors, sizes uniform in [n_min, n_max] (or drawn from ``sizes``).

    Example: ``len(random_sets(np.random.default_rng(0), 4, d=8)) -> 4``.
    """
    return [_unit(rng.normal(size=(int(n), d))) for n in _sizes(rng, count, n_min, n_max, sizes)]


def make_space(rng: np.random.Generator, d: int = 768, topics: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """The shared component ``g`` (d,) and ``topics`` topic centres (topics, d) of a sentence space."""
    return _unit(rng.normal(size=d)), _unit(rng.normal(size=(topics, d)))


def sentence_pool(rng: np.random.Generator, size: int, space: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``size`` unit vectors of ``space`` with a sentence-embedding-like cosine spread (see module doc)."""
    g, centres = space
    d = g.shape[0]
    t = rng.integers(0, len(centres), size=size)
    w_t = rng.uniform(0.55, 1.1, size=(size, 1))        # how typical of its topic a sentence is
    noise = _unit(rng.normal(size=(size, d))) * rng.uniform(0.35, 0.8, size=(size, 1))
    return _unit(0.5 * g + w_t * centres[t] + noise)


def structured_bank(rng: np.random.Generator, count: int, space: tuple[np.ndarray, np.ndarray],
                    n_min: int = 1, n_max: int = 15, repeat: float = 2.8,
                    sizes=None) -> tuple[list[np.ndarray], np.ndarray]:
    """``count`` report-like sets whose sentences repeat ``repeat`` times on average, and their pool.

    Example: ``structured_bank(rng, 10, make_space(rng, 16))[0][0].shape[1] -> 16``.
    """
    sizes = _sizes(rng, count, n_min, n_max, sizes)
    pool = sentence_pool(rng, max(1, int(round(sizes.sum() / repeat))), space)
    # every pool sentence is used at least once when the pool is sized for it, then repeats
    order = np.concatenate([rng.permutation(len(pool)),
                            rng.integers(0, len(pool), size=max(0, int(sizes.sum()) - len(pool)))])[:sizes.sum()]
    rng.shuffle(order)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    return [pool[order[offs[t]:offs[t + 1]]] for t in range(count)], pool


def structured_candidates(rng: np.random.Generator, count: int, pool: np.ndarray,
                          space: tuple[np.ndarray, np.ndarray], n_min: int = 1, n_max: int = 15,
                          novel: float = 0.3, sizes=None) -> list[np.ndarray]:
    """Candidate reports: sentences from ``pool`` or, with probability ``novel``, fresh ones."""
    out = []
    for n in _sizes(rng, count, n_min, n_max, sizes):
        n = int(n)
        picks = pool[rng.integers(0, len(pool), size=n)]
        fresh = sentence_pool(rng, n, space)
        mask = rng.random(n) < novel
        out.append(np.where(mask[:, None], fresh, picks))
    return out
