"""Where an engine call runs: the cosine product (:func:`_cosines`, numpy or torch), the caller's ``device``
(:func:`_resolve_device`) and the device of the iterative solvers (:func:`_pick_solver`: a CUDA device, or the CPU
when numba's CUDA target cannot run under ``device="auto"``). Leaves out the solvers themselves
(:mod:`sdrlib.distances._kernels`, :mod:`sdrlib.distances._cuda_kernels`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from sdrlib.distances.errors import DistanceSpecError
from sdrlib.distances.registry import FAMILIES, DistanceSpec


def _cosines(A: np.ndarray, B: np.ndarray, device: str) -> np.ndarray:
    """(U_a, U_b) float64 cosines ``A @ B.T``, on numpy or on a torch device."""
    if device == "cpu":
        if A.shape[0] * B.shape[0] * A.shape[1] < 4_000_000:
            # small products: single-threaded einsum; a BLAS thread pool wake-up costs more here
            return np.einsum("id,jd->ij", A, B)
        return A @ B.T
    import torch

    ta = torch.as_tensor(A, device=device)
    tb = torch.as_tensor(B, device=device)
    return (ta @ tb.T).cpu().numpy()


def _resolve_device(device: str) -> str:
    """``device`` as ``"cpu"`` or a CUDA device torch sees; :class:`DistanceSpecError` otherwise."""
    if not isinstance(device, (str, type(None))):
        raise DistanceSpecError(f"device must be 'cpu', 'cuda[:i]' or 'auto', got {device!r}")
    if device in ("cpu", None):
        return "cpu"
    if device == "auto":
        try:
            import torch

            return "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            return "cpu"
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise DistanceSpecError(f"device={device!r} requested but torch sees no CUDA device; use 'cpu' or 'auto'")
        return device
    raise DistanceSpecError(f"device must be 'cpu', 'cuda[:i]' or 'auto', got {device!r}")


def _pick_solver(requested: "str | None", dev: str, specs: Sequence[DistanceSpec],
                 ready: "tuple[bool, str] | None" = None) -> str:
    """Where the iterative solvers run: ``dev`` (a CUDA device) or ``"cpu"``.

    ``requested`` is the caller's ``device``, ``dev`` its resolution (:func:`_resolve_device`),
    ``ready`` the answer of ``_cuda_kernels.available()`` (asked here when None and needed). No GPU
    solver is needed (CPU device, or no setting of a family with :attr:`~sdrlib.distances.registry.Family.cuda`):
    ``"cpu"``. Numba's CUDA
    target cannot run: ``"auto"`` falls back to ``"cpu"``, an explicit ``"cuda[:i]"`` raises
    :class:`DistanceSpecError` naming the device and the reason.
    """
    if not dev.startswith("cuda") or not any(FAMILIES[s.family].cuda for s in specs):
        return "cpu"
    if ready is None:
        from sdrlib.distances import _cuda_kernels

        ready = _cuda_kernels.available()
    if ready[0]:
        return dev
    if requested == "auto":
        return "cpu"
    raise DistanceSpecError(f"device={requested!r}: torch sees a GPU, but numba's CUDA target, which runs the "
                            f"Sinkhorn / UOT / GW solvers there, cannot ({ready[1]}); install the CUDA toolkit's "
                            "NVVM and libdevice for numba, or use device='auto' (these solvers then run on the "
                            "CPU) or device='cpu'")
