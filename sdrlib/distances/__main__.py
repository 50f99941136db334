"""``python -m sdrlib.distances warm``: compile the engine's numba kernels once, into numba's on-disk cache.

The kernels are compiled on their first call in a fresh checkout (``cache=True`` keeps them beside the package for
every later process, or under ``NUMBA_CACHE_DIR`` when set): about 110 CPU seconds from an empty cache (measured on
a 2-core box shared with other work; 2 s when cached), otherwise paid by the first notebook 02 or 05 of a run, or
twice when two runs start at once (the test suite's smoke and rehearsal runs).
``scripts/setup.sh`` runs this once instead. It compiles every kernel signature the project's calls reach, on small
float32 unit-vector sets of 1-4 sentences (with per-sentence presence for the settings that read it):

- every registered setting, our extensions and the recall family through :func:`pairwise_distances` and
  :func:`paired_distances` (the stoppable drivers, the presence drivers);
- all of them at once through :func:`pairwise_distances_many` (path selection, selection against the bank): the
  drivers that solve several settings per pair (exact and partial OT, rescaled or not; the Hungarian variants);
- the unstoppable kernels that the tests and benchmarks call directly (the references of the stoppable drivers).

Values are computed and dropped; nothing else is written. On a warm cache every kernel is loaded, not compiled.
Left out: the CUDA kernels (compiled per process).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from sdrlib.clinical import section_presence
from sdrlib.distances import EXTENSIONS, REGISTRY, get, paired_distances, pairwise_distances, pairwise_distances_many
from sdrlib.distances import _kernels as K
from sdrlib.distances.costs import ZERO_COST_ATOL
from sdrlib.distances.engine import pack_sets
from sdrlib.distances.synthetic import random_sets

_SECTIONS = ("No pneumothorax. Small left pleural effusion.", "The heart is enlarged.",
             "No focal consolidation. No effusion. Mild edema.", "Lungs are clear. No pneumothorax. Normal heart.")

USAGE = "usage: python -m sdrlib.distances warm"


#: the parts of :func:`warm` that are not one setting (the keys of its answer besides the setting names)
PARTS = ("shared solves", "direct kernels")


def warm() -> dict[str, float]:
    """Call every registered setting once per engine entry point, all of them at once through
    :func:`pairwise_distances_many`, and the unstoppable kernels directly; returns the seconds per setting and per
    part (:data:`PARTS`)."""

    pres = section_presence(list(_SECTIONS))
    rng = np.random.default_rng(0)
    sets = [random_sets(rng, 1, d=16, n_min=len(p), n_max=len(p))[0].astype(np.float32) for p in pres]
    names = [*REGISTRY, *EXTENSIONS, "ot_neg", "chamfer_recall_1"]
    out = {}
    for name in names:
        t0 = time.perf_counter()
        kw = {"presence": (pres[:2], pres[2:])} if get(name).needs_presence else {}
        pairwise_distances(sets[:2], sets[2:], name, on_nonconvergence="ignore", **kw)
        kw = {"presence": (pres[:2], pres[2:4])} if get(name).needs_presence else {}
        paired_distances(sets[:2], sets[2:4], name, on_nonconvergence="ignore", **kw)
        out[name] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pairwise_distances_many(sets[:2], sets[2:], names, presence=(pres[:2], pres[2:]), on_nonconvergence="ignore")
    out["shared solves"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _direct_kernels(sets[:2], sets[2:])
    out["direct kernels"] = time.perf_counter() - t0
    return out


def _direct_kernels(cands: list[np.ndarray], bank: list[np.ndarray]) -> None:
    """The unstoppable kernels of :mod:`sdrlib.distances._kernels` on every (candidate, bank) pair, called with the
    argument types the engine passes their ``*_stoppable`` drivers (float64 C arrays, int64 ids, Python scalars)."""
    cp, bp = pack_sets(cands), pack_sets(bank)
    G = np.ascontiguousarray(bp.unique @ cp.unique.T)  # (U_bank, U_cand), as the engine's cosine product
    pk = np.tile(np.arange(cp.n_sets, dtype=np.int64), bp.n_sets)
    pj = np.repeat(np.arange(bp.n_sets, dtype=np.int64), cp.n_sets)
    nmax = int(max(cp.sizes.max(), bp.sizes.max()))
    head = (G, cp.index, cp.offsets, bp.index, bp.offsets, pk, pj)
    out, conv = np.empty(len(pk)), np.ones(len(pk), dtype=np.bool_)
    K.nn_pairs(*head, False, out)
    K.nn_grid(G, cp.index, cp.offsets, bp.index, bp.offsets, np.arange(bp.n_sets, dtype=np.int64), False,
              np.empty((bp.n_sets, cp.n_sets)))
    K.hung_pairs(*head, nmax, 1, 0.5, True, out)
    K.transport_pairs(*head, nmax, -1.0, ZERO_COST_ATOL, True, out)
    K.entropic_pairs(*head, nmax, 0.1, -1.0, 1e-9, 1000, False, ZERO_COST_ATOL, True, out, conv)
    ca, cao = cp.intra()
    cb, cbo = bp.intra()
    K.gw_pairs(ca, cao, cb, cbo, cp.offsets, bp.offsets, pk, pj, 0.1, 1e-9, 1000, out, conv)
    k, j = int(np.argmax(cp.sizes)), int(np.argmax(bp.sizes))
    n, m = cp.sizes[k], bp.sizes[j]
    K.gw_loss(ca[cao[k]:cao[k + 1]].reshape(n, n), cb[cbo[j]:cbo[j + 1]].reshape(m, m), n, m, 0.1, 1e-9, 1000,
              1000, 1e-9)


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
    n = len(warm()) - len(PARTS)
    print(f"sdrlib.distances: {n} settings' kernels, their shared solves and the direct kernels compiled or loaded "
          f"in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
