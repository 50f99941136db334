"""The CPU kernel path: which instruction set torch, oneDNN, MKL and OpenBLAS run, pinned for CPU profiles, and a
record of it for every run.

Why: on one 2-core AMD EPYC box the smoke profile's SFT (4 steps) gives one policy digest natively and with
``ATEN_CPU_CAPABILITY=avx2``, another with ``ATEN_CPU_CAPABILITY=default``, another with ``ONEDNN_MAX_CPU_ISA=SSE41``
and another with ``MKL_CBWR=COMPATIBLE``, while the same run twice, with the other core busy, or with two OpenMP
threads gives the first digest every time (``benchmarks/kernel_path_digests.py``; docs/reproducibility.md,
"Machines and kernel paths"). The floats depend on which vectorised kernels a library picks for the CPU, not on
load: a box whose torch picks AVX-512 trains another policy. So a CPU profile (``kernel_path: avx2``) pins every library that picks a
kernel by CPU to its AVX2 path, which every x86-64 CPU since 2013 (Intel Haswell, AMD Zen) has:

========================  ==========  ==================================================================
variable                  value       read by
========================  ==========  ==================================================================
``ATEN_CPU_CAPABILITY``   ``avx2``    torch's own CPU kernels (elementwise, reductions, softmax, ...)
``ONEDNN_MAX_CPU_ISA``    ``AVX2``    oneDNN (torch's mkldnn: convolutions, some matmuls)
``MKL_CBWR``              ``AVX2``    MKL (torch's sgemm): conditional numerical reproducibility, AVX2 path
``OPENBLAS_CORETYPE``     ``Haswell`` OpenBLAS (NumPy / SciPy linear algebra): the AVX2 kernel set
========================  ==========  ==================================================================

Each is read once, when its library first loads or first runs a kernel, so :func:`pin_kernel_path` must run
before torch or NumPy is imported in the process that computes: ``sdrlib.runner`` (``run_all.sh``) sets them in
its own environment before any notebook kernel starts (kernels inherit it) and the training command line
(``python -m sdrlib.training``) does the same for itself. A variable the user already set is left as set (and
recorded), so an experiment with another path is one ``export`` away. On a CPU without AVX2 and FMA, or not x86-64,
nothing is pinned and the record says ``native``. ``kernel_path: native`` (the paper profile: a GPU run, whose CPU
side does not train) pins nothing.

What is not pinned, and why: numba's kernels (``sdrlib.distances``) are compiled for the host CPU, but without
fastmath and with every ``prange`` over independent pairs (no parallel reduction), so their floats do not depend on
the CPU's vector width or on scheduling (measured: every registered distance gives the same bits compiled for the
host, ``haswell``, ``znver4``, ``rocketlake`` or ``generic``, ``benchmarks/numba_target_bits.py``); thread
counts are set by the profile (``sft.threads``, ``embedding.threads``), not by the machine. :func:`machine_record` records all of these so that two runs that
differ say why. Costs, measured: ``benchmarks/kernel_path_digests.py --timing``.

Scope: x86-64 Linux is what is pinned and read in detail (``/proc/cpuinfo``); other systems get a record with
what the platform module knows.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any, Mapping, MutableMapping

__all__ = ["KERNEL_PINS", "KERNEL_PATHS", "cpu_info", "can_pin", "pin_kernel_path", "kernel_path_in_force",
           "machine_record", "same_kernel_path"]

KERNEL_PINS: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_CBWR": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",
}
KERNEL_PATHS = ("avx2", "native")  # a profile's ``kernel_path``
_NEEDED_FLAGS = frozenset({"avx2", "fma"})
# library variables that change floats or thread counts: recorded whether pinned or not
_RECORDED_ENV = (*KERNEL_PINS, "MKL_ENABLE_INSTRUCTIONS", "MKL_NUM_THREADS", "MKL_DYNAMIC", "OMP_NUM_THREADS",
                 "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER", "NUMBA_CPU_NAME",
                 "TORCH_MKLDNN_ENABLED", "CUBLAS_WORKSPACE_CONFIG")


def cpu_info(cpuinfo_text: str | None = None) -> dict[str, Any]:
    """``{"machine", "model", "vendor", "flags" (sorted list), "logical_cpus"}`` of this CPU.

    ``cpuinfo_text``: the text of ``/proc/cpuinfo`` (read when None; empty where it does not exist). Only the
    first processor's block is read: the flags that matter here are the same on every core of one machine.
    """
    if cpuinfo_text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo_text = f.read()
        except OSError:
            cpuinfo_text = ""
    fields: dict[str, str] = {}
    for line in cpuinfo_text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return {"machine": platform.machine(), "model": fields.get("model name") or platform.processor() or "unknown",
            "vendor": fields.get("vendor_id", "unknown"),
            "flags": sorted(set(fields.get("flags", "").split())), "logical_cpus": os.cpu_count()}


def can_pin(info: Mapping[str, Any] | None = None) -> bool:
    """Whether the AVX2 path exists on this CPU: x86-64 with the ``avx2`` and ``fma`` flags."""
    info = cpu_info() if info is None else info
    return info["machine"] in ("x86_64", "AMD64") and _NEEDED_FLAGS <= set(info["flags"])


def pin_kernel_path(kernel_path: str = "avx2", environ: MutableMapping[str, str] | None = None, *,
                    info: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Set :data:`KERNEL_PINS` in ``environ`` (``os.environ`` by default) where unset; returns what was set now.

    ``kernel_path``: ``"avx2"`` pins (on a CPU that :func:`can_pin`), ``"native"`` sets nothing. A variable
    already present keeps its value (the user's choice; :func:`kernel_path_in_force` reports it). Call it before
    torch or NumPy loads in the process whose floats should be pinned; a warning goes to stderr when torch is
    already imported (its capability is then fixed for this process, whatever the variable says).
    """
    if kernel_path not in KERNEL_PATHS:
        raise ValueError(f"kernel_path must be one of {', '.join(KERNEL_PATHS)}, got {kernel_path!r}")
    environ = os.environ if environ is None else environ
    if kernel_path == "native" or not can_pin(info):
        return {}
    set_now = {k: v for k, v in KERNEL_PINS.items() if k not in environ}
    environ.update(set_now)
    if set_now and environ is os.environ and "torch" in sys.modules:
        print("sdrlib.numerics: torch was imported before the kernel path was pinned; this process keeps the path "
              "torch picked (start a new kernel, or run through run_all.sh)", file=sys.stderr)
    return set_now


def kernel_path_in_force(environ: Mapping[str, str] | None = None, *,
                         info: Mapping[str, Any] | None = None) -> str:
    """``"avx2"`` when every pin holds its pinned value (on a CPU that has the path), else ``"native"`` or
    ``"custom: VAR=value, ..."`` (the variables that differ from the pins)."""
    environ = os.environ if environ is None else environ
    set_vars = {k: environ[k] for k in KERNEL_PINS if k in environ}
    if not set_vars:
        return "native"
    if set_vars == KERNEL_PINS and can_pin(info):
        return "avx2"
    return "custom: " + ", ".join(f"{k}={environ.get(k, '(unset)')}" for k in KERNEL_PINS
                                  if environ.get(k) != KERNEL_PINS[k])


def _torch_record() -> dict[str, Any]:
    torch = sys.modules.get("torch")  # never imported here: recording must not load torch
    if torch is None:
        return {}
    rec: dict[str, Any] = {"torch_threads": torch.get_num_threads(),
                           "torch_interop_threads": torch.get_num_interop_threads()}
    try:
        rec["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except Exception as e:  # pragma: no cover - very old torch
        rec["torch_cpu_capability"] = f"unknown ({type(e).__name__})"
    try:
        rec["torch_mkl"] = bool(torch.backends.mkl.is_available())
        rec["torch_mkldnn"] = bool(torch.backends.mkldnn.is_available())
    except Exception:  # pragma: no cover
        pass
    return rec


def _numba_record() -> dict[str, Any]:
    numba = sys.modules.get("numba")
    if numba is None:
        return {}
    rec: dict[str, Any] = {"numba_threads": numba.config.NUMBA_NUM_THREADS}
    try:
        rec["numba_threading_layer"] = numba.threading_layer()  # only known once a parallel kernel ran
    except ValueError:
        rec["numba_threading_layer"] = "not started"
    return rec


def _threadpools() -> list[dict[str, Any]]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keep = ("user_api", "internal_api", "version", "num_threads", "threading_layer", "architecture")
    return [{k: p.get(k) for k in keep if p.get(k) is not None} for p in threadpool_info()]


def machine_record(cfg: Any = None) -> dict[str, Any]:
    """What on this machine can change a float: CPU, the kernel path in force, threads and threading layers.

    Keys: ``cpu_model``, ``cpu_vendor``, ``machine``, ``logical_cpus``, ``avx512`` (any avx512 flag),
    ``kernel_path`` (:func:`kernel_path_in_force`), ``kernel_path_profile`` (the profile's choice, when ``cfg``
    is given), ``env`` (the recorded library variables that are set), and, for libraries this process has
    already loaded (nothing is imported to record it): torch's CPU capability and threads, numba's threading
    layer and threads, and threadpoolctl's BLAS / OpenMP pools (library, version, architecture, threads).
    """
    info = cpu_info()
    rec: dict[str, Any] = {
        "cpu_model": info["model"], "cpu_vendor": info["vendor"], "machine": info["machine"],
        "logical_cpus": info["logical_cpus"], "avx512": any(f.startswith("avx512") for f in info["flags"]),
        "avx2_fma": can_pin(info), "kernel_path": kernel_path_in_force(info=info),
    }
    if cfg is not None and getattr(cfg, "kernel_path", None) is not None:
        rec["kernel_path_profile"] = cfg.kernel_path
    rec["env"] = {k: os.environ[k] for k in _RECORDED_ENV if k in os.environ}
    rec.update(_torch_record())
    rec.update(_numba_record())
    pools = _threadpools()
    if pools:
        rec["threadpools"] = pools
    return rec


def same_kernel_path(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What differs between two machine records in what decides floats (empty: the same kernel path).

    Compared: the kernel path in force; whether the CPU has AVX-512, on every path (measured: an AVX-512 box pinned to
    ``avx2`` trains other weights than an AVX2 box, docs/reproducibility.md, so the pins do not make two
    CPU generations agree); when the path is ``native`` or custom, the CPU model too; torch's CPU capability where
    both recorded it.
    """
    diffs = []
    if a.get("kernel_path") != b.get("kernel_path"):
        diffs.append(f"kernel path {a.get('kernel_path')} vs {b.get('kernel_path')}")
    if a.get("avx512") != b.get("avx512"):
        diffs.append(f"avx512 {a.get('avx512')} vs {b.get('avx512')} (the pins do not make these agree)")
    if a.get("kernel_path") == b.get("kernel_path") != "avx2" and a.get("cpu_model") != b.get("cpu_model"):
        diffs.append(f"cpu_model {a.get('cpu_model')} vs {b.get('cpu_model')} (native kernel path)")
    ca, cb = a.get("torch_cpu_capability"), b.get("torch_cpu_capability")
    if ca and cb and ca != cb:
        diffs.append(f"torch CPU capability {ca} vs {cb}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    """``python -m sdrlib.numerics``: this machine's record as JSON (torch, NumPy and numba loaded first);
    ``--export``: the pins as shell ``export`` lines for this CPU (nothing where it has no AVX2 path), e.g.
    ``eval "$(.venv/bin/python -m sdrlib.numerics --export)"; .venv/bin/jupyter lab`` pins a JupyterLab session
    as ``run_all.sh`` pins its notebooks."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m sdrlib.numerics", description=main.__doc__.split(";")[0])
    ap.add_argument("--export", action="store_true", help="print the pins as shell export lines")
    a = ap.parse_args(argv)
    if a.export:
        env: dict[str, str] = {}
        pin_kernel_path("avx2", env)
        print("\n".join(f"export {k}={v}" for k, v in env.items()))
        return 0
    import numpy  # noqa: F401  (loaded so that the record has their fields)
    import torch  # noqa: F401

    print(json.dumps(machine_record(), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
