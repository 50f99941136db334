"""``python -m sdrlib.distances warm``: compile the engine's numba kernels once, into numba's on-disk cache.

The kernels are compiled on their first call in a fresh checkout (``cache=True`` keeps them beside the package for
every later process): about 30 s on a quiet 2-core box, paid by the first notebook 02 of a run, or twice when two
runs start at once (the test suite's smoke and rehearsal runs). ``scripts/setup.sh`` runs this once instead. It calls
every registered setting, our extensions and the recall family through the engine (:func:`pairwise_distances`, :func:`paired_distances`)
on small float32 unit-vector sets of 1-4 sentences, with per-sentence presence for the settings that read it.
Values are computed and dropped; nothing else is written. Left out: the CUDA kernels (compiled per process).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from sdrlib.clinical import section_presence
from sdrlib.distances import EXTENSIONS, REGISTRY, get, paired_distances, pairwise_distances
from sdrlib.distances.synthetic import random_sets

_SECTIONS = ("No pneumothorax. Small left pleural effusion.", "The heart is enlarged.",
             "No focal consolidation. No effusion. Mild edema.", "Lungs are clear. No pneumothorax. Normal heart.")

USAGE = "usage: python -m sdrlib.distances warm"


def warm() -> dict[str, float]:
    """Call every registered setting once per engine entry point; returns the seconds per setting."""

    pres = section_presence(list(_SECTIONS))
    rng = np.random.default_rng(0)
    sets = [random_sets(rng, 1, d=16, n_min=len(p), n_max=len(p))[0].astype(np.float32) for p in pres]
    out = {}
    for name in [*REGISTRY, *EXTENSIONS, "ot_neg", "chamfer_recall_1"]:
        t0 = time.perf_counter()
        kw = {"presence": (pres[:2], pres[2:])} if get(name).needs_presence else {}
        pairwise_distances(sets[:2], sets[2:], name, on_nonconvergence="ignore", **kw)
        kw = {"presence": (pres[:2], pres[2:4])} if get(name).needs_presence else {}
        paired_distances(sets[:2], sets[2:4], name, on_nonconvergence="ignore", **kw)
        out[name] = time.perf_counter() - t0
    return out


def main(argv: list[str] | None = None) -> int:
    """``warm`` compiles the kernels (exit 0); ``-h`` / ``--help`` prints the usage (exit 0); anything else is one
    line on stderr naming what was given (exit 2)."""
    args = sys.argv[1:] if argv is None else argv
    if args in (["-h"], ["--help"]):
        print(f"{USAGE}\n\n{__doc__.splitlines()[0]}")
        return 0
    if args != ["warm"]:
        got = "no command" if not args else f"{' '.join(args)!r}"
        print(f"python -m sdrlib.distances: {got}: the one command is warm ({USAGE})", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    n = len(warm())
    print(f"sdrlib.distances: {n} settings' kernels compiled or loaded in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
