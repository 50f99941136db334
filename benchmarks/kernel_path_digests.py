"""Which settings change the trained weights: the smoke SFT (or a short GRPO) trained under several CPU kernel
paths, thread counts and loads, one policy digest each (``sdrlib.numerics``;
docs/reproducibility.md, "Machines and kernel paths").

    .venv/bin/python benchmarks/kernel_path_digests.py                 # the table (about 1 min per row on 2 cores)
    .venv/bin/python benchmarks/kernel_path_digests.py --stage grpo    # SFT then a 4-step GRPO (numba rewards)
    .venv/bin/python benchmarks/kernel_path_digests.py --only native,busy --repeat 2

Each row is a fresh ``python -m sdrlib.training --profile smoke --stage sft --force`` (then ``--stage grpo`` with
``--stage grpo``) in its own output root, with the row's environment on top of a clean one (the pins of
``sdrlib.numerics`` and the thread-count variables removed first: "native" is the machine's defaults) and ``--set kernel_path=native`` (so the command pins nothing itself), except
the "pinned" rows, which train with the profile's own ``kernel_path: avx2``. "busy" runs a CPU-bound process on every core
while it trains. Rows whose digest equals the first row's say "same"; the table is printed as Markdown and, with
``--out FILE``, written as CSV.
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sdrlib.numerics import KERNEL_PINS  # noqa: E402

# name -> (environment on top of the clean one, whether to load every core)
SETTINGS: dict[str, tuple[dict[str, str], bool]] = {
    "native": ({}, False),
    "native again": ({}, False),
    "busy": ({}, True),
    "omp2": ({"OMP_NUM_THREADS": "2"}, False),
    "numba 1 thread": ({"NUMBA_NUM_THREADS": "1"}, False),
    "openblas 1 thread": ({"OPENBLAS_NUM_THREADS": "1"}, False),
    "pinned (avx2)": (dict(KERNEL_PINS), False),
    "pinned, busy": (dict(KERNEL_PINS), True),
    "aten default": ({"ATEN_CPU_CAPABILITY": "default"}, False),
    "aten avx2": ({"ATEN_CPU_CAPABILITY": "avx2"}, False),
    "onednn sse41": ({"ONEDNN_MAX_CPU_ISA": "SSE41"}, False),
    "mkl compatible": ({"MKL_CBWR": "COMPATIBLE"}, False),
    "mkl avx2": ({"MKL_CBWR": "AVX2"}, False),
    "openblas prescott": ({"OPENBLAS_CORETYPE": "Prescott"}, False),
}


def _burn(stop) -> None:  # pragma: no cover - a load generator
    x = 0
    while not stop.is_set():
        x = (x * 1103515245 + 12345) % 2**31


def _train(env: dict[str, str], root: Path, stage: str, kernel_path: str) -> tuple[str, float]:
    cmd = [sys.executable, "-m", "sdrlib.training", "--profile", "smoke", "--force", "--set", f"kernel_path={kernel_path}"]
    t0 = time.perf_counter()
    for st in (["sft"] if stage == "sft" else ["sft", "grpo"]):
        extra = ["--reward", "chamfer"] if st == "grpo" else []
        r = subprocess.run(cmd + ["--stage", st] + extra, env=env, cwd=ROOT, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"{st} failed:\n{r.stderr[-2000:]}")
    seconds = time.perf_counter() - t0
    probe = ("import sys; from sdrlib.training.runkeys import policy_digest; from pathlib import Path; "
             "print(policy_digest(sorted(Path(sys.argv[1]).glob(sys.argv[2]))[0]))")
    pattern = "runs/smoke/sft/seed0/final" if stage == "sft" else "runs/smoke/grpo/*/seed0/final"
    d = subprocess.run([sys.executable, "-c", probe, str(root), pattern], env=env, cwd=ROOT,
                       capture_output=True, text=True, check=True).stdout.strip()
    return d, seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stage", choices=("sft", "grpo"), default="sft")
    ap.add_argument("--only", help="comma-separated row names (default: all)")
    ap.add_argument("--repeat", type=int, default=1, help="train each row this many times")
    ap.add_argument("--out", type=Path, help="also write the table as CSV here")
    a = ap.parse_args(argv)
    names = a.only.split(",") if a.only else list(SETTINGS)
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        ap.error(f"unknown rows {unknown}; choose from {list(SETTINGS)}")
    threads = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
    base = {k: v for k, v in os.environ.items() if k not in KERNEL_PINS and k not in threads}
    base["PYTHONPATH"] = str(ROOT)
    rows = []
    first = None
    for name in names:
        extra, busy = SETTINGS[name]
        for rep in range(a.repeat):
            stop = mp.Event()
            burners = [mp.Process(target=_burn, args=(stop,)) for _ in range(os.cpu_count() or 1)] if busy else []
            for p in burners:
                p.start()
            try:
                with tempfile.TemporaryDirectory(prefix="kp-") as tmp:
                    env = {**base, **extra, "SDR_ROOT": tmp}
                    digest, secs = _train(env, Path(tmp), a.stage, "avx2" if name.startswith("pinned") else "native")
            finally:
                stop.set()
                for p in burners:
                    p.join()
            first = first or digest
            rows.append({"setting": name + (f" #{rep + 1}" if a.repeat > 1 else ""),
                         "environment": " ".join(f"{k}={v}" for k, v in extra.items()) or "(none)",
                         "load": "every core busy" if busy else "quiet", "digest": digest[:12],
                         "same as first": "same" if digest == first else "DIFFERENT", "seconds": f"{secs:.1f}"})
            print(" | ".join(rows[-1].values()), flush=True)
    cols = list(rows[0])
    print("\n| " + " | ".join(cols) + " |\n|" + " --- |" * len(cols))
    for r in rows:
        print("| " + " | ".join(r[c] for c in cols) + " |")
    if a.out:
        with open(a.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
