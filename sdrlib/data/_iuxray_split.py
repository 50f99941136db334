"""IU-Xray's split rule: the download has no official split, so a study's split is a seeded hash of its uid.

One function, :func:`iuxray_split_of`, in a module of its own because two modules need it that must not import
each other: the IU-Xray loader (:mod:`sdrlib.data.iuxray`, which re-exports it) and the stand-in writer's
:class:`~sdrlib.data.standin.StandIn`, which says in which split the loader will put each written study (the
loader's module imports the stand-in writer, through :func:`~sdrlib.data.download.real_root`).

Left out: everything else about IU-Xray (:mod:`sdrlib.data.iuxray`).
"""

from __future__ import annotations

import hashlib

__all__ = ["iuxray_split_of"]


def iuxray_split_of(uid: str, seed: int = 0, fractions: tuple[float, float, float] = (0.7, 0.1, 0.2)) -> str:
    """Deterministic split of a uid: ``sha256(f"{seed}:{uid}")`` as a number in [0, 1).

    Example: ``iuxray_split_of("1")`` -> one of ``"train"``, ``"val"``, ``"test"`` (always the same).
    """
    if len(fractions) != 3 or abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) < 0:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions!r}")
    h = int.from_bytes(hashlib.sha256(f"{seed}:{uid}".encode()).digest()[:8], "big") / 2**64
    if h < fractions[0]:
        return "train"
    return "val" if h < fractions[0] + fractions[1] else "test"
