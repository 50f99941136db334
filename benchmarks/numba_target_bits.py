"""Whether numba's compile target changes the distances' floats: every registered distance setting on fixed random
sets, compiled for the host CPU and for other LLVM CPU names, one digest of the output bits per setting and target
(docs/reproducibility.md, "Machines and kernel paths").

    .venv/bin/python benchmarks/numba_target_bits.py                          # host, haswell, znver4, generic
    .venv/bin/python benchmarks/numba_target_bits.py --targets host haswell   # fewer (each compiles every kernel)

Each target runs in a fresh process with its own ``NUMBA_CACHE_DIR`` (so no kernel compiled for another target is
reused) and ``NUMBA_CPU_NAME`` set (``host``: unset, numba's default). The thread counts are the caller's: OpenBLAS's
thread count moves the cosine product by an ulp, so compare targets at one setting. A target the CPU cannot run
(``znver4`` on a CPU without its instructions) fails in its own process and is reported as such. Prints one Markdown
table: a row per setting, a column per target, "same" where the digest equals the host's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_EXTRA = ("ot_raw", "sinkhorn_0.1_raw")


def _digests() -> dict[str, str]:
    """In the child: ``{setting: sha256 of pairwise_distances' bytes}`` on 24 x 24 random sets (d = 384)."""
    import numpy as np

    from sdrlib.distances import REGISTRY, pairwise_distances
    from sdrlib.distances.synthetic import random_sets

    rng = np.random.default_rng(0)
    A = random_sets(rng, 24, d=384, n_min=1, n_max=9)
    B = random_sets(rng, 24, d=384, n_min=1, n_max=9)
    out = {}
    for name in [*sorted(REGISTRY), *SETTINGS_EXTRA]:
        D = pairwise_distances(A, B, name, on_nonconvergence="ignore")
        out[name] = hashlib.sha256(np.ascontiguousarray(D, dtype=np.float64).tobytes()).hexdigest()[:12]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", nargs="+", default=["host", "haswell", "znver4", "generic"])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_digests()))
        return 0
    cols: dict[str, dict[str, str] | str] = {}
    for target in a.targets:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
            env.pop("NUMBA_CPU_NAME", None)
            if target != "host":
                env["NUMBA_CPU_NAME"] = target
            r = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True)
        lines = r.stdout.strip().splitlines()
        cols[target] = json.loads(lines[-1]) if r.returncode == 0 and lines else f"failed (exit {r.returncode})"
    ref = next((c for c in cols.values() if isinstance(c, dict)), None)
    if ref is None:
        print("every target failed")
        return 1
    print("| setting | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols))
    for name, digest in ref.items():
        cells = [c if isinstance(c, str) else ("same" if c.get(name) == digest else c.get(name, "?"))
                 for c in cols.values()]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
