"""The launch a candidate runs on when it is checked against the starting kernel with an inferred harness.

An inferred CUDA harness (:mod:`htam_core.harness.infer_cuda`) holds the grid and block of the starting kernel's
``main()``. A candidate that has its own ``main()`` launching the kernel (a retuned block size, or another mapping:
one warp per row launches 32 times the blocks of one thread per row) runs on the configuration its own ``main()``
gives, read the same way, while the starting kernel keeps its own: both run on the same inputs, and the candidate
must match the starting kernel's outputs (the oracle rule). Its launch is taken when its ``main()`` calls the kernel
with the same inputs (by position: the same count, element types and shapes, the same integer values: the sizes
its grid was computed from); parameter names may differ. Otherwise the candidate keeps the starting kernel's
launch, and :func:`relaunch` says why.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.infer_cuda import infer_cuda_harness
from htam_core.types.language import traits

__all__ = ["relaunch", "relaunched"]


def _signature(h: Harness) -> list[tuple[Any, ...]]:
    """The inputs of ``h`` by position: dtype, shape and integer value, size names read through its first set."""
    sizes = h.sizes[0] if h.sizes else {}

    def value(x: Any) -> Any:
        return sizes.get(x, x) if isinstance(x, str) else x
    out: list[tuple[Any, ...]] = []
    for i in h.inputs:
        if i.shape is not None:
            out.append((i.dtype, tuple(value(d) for d in i.shape)))
        else:
            v = value(i.value)
            out.append((i.dtype, v if isinstance(v, int) and not isinstance(v, bool) else None))
    return out


def _launch_text(h: Harness) -> str:
    return f"grid {h.grid}, block {h.block}" + (f", {h.shared_bytes} B shared" if h.shared_bytes else "")


def relaunch(h: Harness) -> tuple[Harness, str]:
    """``h`` with the grid, block and shared bytes the candidate's own ``main()`` launches with, and one line that
    says which launch the candidate runs on (``""`` when that needs no word: ``h`` is not an inferred CUDA direct
    launch, its candidate is the starting kernel, or the candidate launches the kernel as the start does).

    Only for an inferred CUDA direct launch whose candidate (:attr:`Harness.path`) is not the starting kernel: its
    ``main()`` is read again (:func:`~htam_core.harness.infer_cuda.infer_cuda_harness`) and, when it launches the
    kernel with the same inputs (see the module docstring), its launch configuration replaces the inferred one.
    Any other harness (a ``grid`` written in ``htam.toml`` is the user's) comes back unchanged. Never raises: a
    candidate with no ``main()`` that can be read keeps the inferred configuration.
    """
    if (not h.traits.inferred or not traits(h.language).nvcc_build or h.grid is None
            or Path(h.path).resolve() == Path(h.oracle_path or "").resolve()):
        return h, ""
    name = Path(h.path).name
    try:
        again = infer_cuda_harness(h.path, h.kernel)
    except (HarnessError, OSError):
        return h, ""
    if again.grid is None:
        return h, ""
    if _signature(again) != _signature(h):
        return h, (f"{name}'s main() launches {h.kernel} on other inputs ({_launch_text(again)}), so the candidate "
                   f"runs on the starting kernel's launch ({_launch_text(h)})")
    moved = dataclasses.replace(h, grid=again.grid, block=again.block, shared_bytes=again.shared_bytes)
    if (moved.grid, moved.block, moved.shared_bytes) == (h.grid, h.block, h.shared_bytes):
        return moved, ""
    return moved, (f"the candidate runs on its own launch (main() of {name}): {_launch_text(moved)}; the starting "
                   f"kernel on its own: {_launch_text(h)}")


def relaunched(h: Harness) -> Harness:
    """``h`` with the launch the candidate's ``main()`` gives (:func:`relaunch`, without its line)."""
    return relaunch(h)[0]
