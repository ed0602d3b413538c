"""The occupancy of a compiled kernel on the device that runs it: the functions a harness expression reads it with.

A host program may size its grid from the occupancy API (``cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm,
k, 256, 0); k<<<per_sm * sms, 256>>>``, or ``cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, k, 0, 0)``).
The inferred harness writes that grid over :data:`~htam_core.source.analysis.device_queries.OCCUPANCY_FUNCTIONS`
(``blocks_per_sm(256, 0) * sm_count``), and the runner defines those functions for the function it compiled, on its
device, with :func:`occupancy_functions`. The answers are the driver's own (``cuOccupancyMaxActiveBlocksPerMultiprocessor``
and ``cuOccupancyMaxPotentialBlockSize`` through CuPy's ``cupy.cuda.driver``, with the compiled function's handle);
the potential block size is computed from the blocks per SM when the driver module lacks that call. Nothing here
guesses a number without a device: without one, the runner has no function to evaluate.

Idea source: CUDA Driver API, "Occupancy" (``cuOccupancyMaxActiveBlocksPerMultiprocessor``,
``cuOccupancyMaxPotentialBlockSize``: the block size of the most resident threads per SM, tried from the largest
down in steps of a warp, the larger kept on a tie); CUDA C++ Best Practices Guide, "Calculating Occupancy".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from htam_core.harness.base import HarnessError

#: Threads per warp (the step of the block sizes tried for the potential block size).
WARP = 32
#: The most threads a block may have on the devices htam runs on (compute capability 2.0 and later).
MAX_BLOCK = 1024


@dataclass(frozen=True)
class Compiled:
    """The compiled function the occupancy is asked for.

    Attributes:
        handle: the driver's function handle (``CUfunction`` as an integer).
        max_threads: the most threads per block it can launch with (``__launch_bounds__``, registers).
    """

    handle: int
    max_threads: int

    @classmethod
    def of(cls, func: Any) -> Compiled:
        """The handle and thread limit of a CuPy ``RawKernel`` (what ``RawModule.get_function`` gives: its compiled
        ``kernel.ptr`` on the current device) or of a ``cupy.cuda.Function`` (``ptr``), and its
        ``max_threads_per_block``."""
        inner = getattr(func, "kernel", None)
        handle = inner.ptr if inner is not None and hasattr(inner, "ptr") else func.ptr
        return cls(int(handle), int(func.max_threads_per_block))


class DeviceOccupancy:
    """The occupancy of one compiled function on one device.

    Args:
        compiled: the function (:class:`Compiled`).
        sm_count: the device's SMs.
        driver: an object with ``occupancyMaxActiveBlocksPerMultiprocessor(handle, threads, smem) -> int`` and,
            optionally, ``occupancyMaxPotentialBlockSize(handle, smem, limit) -> (min_grid, block)`` (CuPy's
            ``cupy.cuda.driver``).
    """

    def __init__(self, compiled: Compiled, sm_count: int, driver: Any) -> None:
        self.compiled, self.sm_count, self.driver = compiled, sm_count, driver

    def _driver_call(self, name: str) -> Callable[..., Any] | None:
        fn = getattr(self.driver, name, None)
        return fn if callable(fn) else None

    def blocks_per_sm(self, threads: int, smem: int = 0) -> int:
        """Resident blocks per SM of the function launched with ``threads`` threads per block and ``smem`` bytes of
        dynamic shared memory, as the driver answers the host program's own call (0 where the shared memory does
        not fit; a block over the function's thread limit is answered as the runtime answers it, and its launch
        fails as the program's would).

        Raises:
            HarnessError: the driver module has no occupancy call.
        """
        threads, smem = int(threads), int(smem)
        fn = self._driver_call("occupancyMaxActiveBlocksPerMultiprocessor")
        if fn is None:
            raise HarnessError("the occupancy of the kernel cannot be read on this device: the CUDA driver module "
                               "htam runs kernels with has no occupancy call (cuOccupancyMaxActiveBlocksPerMultiprocessor)")
        return int(fn(self.compiled.handle, threads, smem))

    def potential(self, smem: int = 0, limit: int = 0) -> tuple[int, int]:
        """``(min grid, block size)`` as ``cudaOccupancyMaxPotentialBlockSize`` gives them: the block size (at most
        ``limit`` threads, 0: no limit) with the most resident threads per SM, and the grid of that many blocks on
        every SM.

        Raises:
            HarnessError: as :meth:`blocks_per_sm`.
        """
        fn = self._driver_call("occupancyMaxPotentialBlockSize")
        if fn is not None:
            grid, block = fn(self.compiled.handle, int(smem), int(limit))
            return int(grid), int(block)
        cap = min(self.compiled.max_threads, MAX_BLOCK)
        cap = min(cap, int(limit)) if int(limit) > 0 else cap
        best = (0, 0, 0)  # (resident threads, block size, blocks per SM)
        for aligned in range(-(-cap // WARP) * WARP, 0, -WARP):
            block = min(aligned, cap)
            blocks = self.blocks_per_sm(block, smem)
            if blocks * block > best[0]:
                best = (blocks * block, block, blocks)
        return best[2] * self.sm_count, best[1]

    def functions(self) -> dict[str, Callable[..., int]]:
        """The harness functions of
        :data:`~htam_core.source.analysis.device_queries.OCCUPANCY_FUNCTIONS`, by name."""
        return {"blocks_per_sm": self.blocks_per_sm,
                "occupancy_grid": lambda smem=0, limit=0: self.potential(smem, limit)[0],
                "occupancy_block": lambda smem=0, limit=0: self.potential(smem, limit)[1]}


def occupancy_functions(func: Any) -> dict[str, Callable[..., int]]:
    """The harness's occupancy functions for the CuPy ``Function`` ``func`` on the current CUDA device (its SM
    count read through torch, the occupancy through ``cupy.cuda.driver``)."""
    import cupy
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    occ = DeviceOccupancy(Compiled.of(func), int(props.multi_processor_count), getattr(cupy.cuda, "driver", None))
    return occ.functions()
