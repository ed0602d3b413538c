"""The L2 flush that starts every cold-cache timing trial, shared by the timer and the event calibration.

A trial of :mod:`htam_core.measure.timer` and a calibration run of :mod:`htam_core.measure.calibrate` both begin
with the same asynchronous write of a buffer larger than any current L2 (so the kernel reads from DRAM, as
KernelBench-style harnesses and Triton's ``do_bench`` flush), and CUPTI must count that flush's device
operations once to subtract them. Both read them here, so neither module imports the other for them.

Needs torch and CUDA when called (imported inside the functions: an optional heavy dependency).
"""

from __future__ import annotations

from typing import Any

from htam_core.measure import cupti

#: Size of the L2-flush buffer, bytes (256 MB: larger than any current L2; H100/H200 have 50-60 MB).
L2_FLUSH_BYTES = 256 * 1024 * 1024

_FLUSH: dict[int, Any] = {}
_FLUSH_OPS: dict[int, tuple[str, ...]] = {}


def flush_l2() -> None:
    """Write a 256 MB buffer on the current device (evicts the whole L2); asynchronous.

    Raises:
        RuntimeError: from CUDA (no device, or a device fault).
    """
    import torch

    dev = torch.cuda.current_device()
    buf = _FLUSH.get(dev)
    if buf is None:
        buf = _FLUSH[dev] = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    buf.zero_()


def flush_ops() -> int:
    """Device operations one :func:`flush_l2` launches (counted once per device by CUPTI).

    Raises:
        RuntimeError: from CUDA or CUPTI.
    """
    return len(flush_op_names())


def flush_op_names() -> tuple[str, ...]:
    """The names of the device operations one :func:`flush_l2` launches, in device order (read once per device
    by CUPTI): :func:`htam_core.measure.cupti.split_calls` checks that every call's cut begins with them.

    Raises:
        RuntimeError: from CUDA or CUPTI.
    """
    import torch

    dev = torch.cuda.current_device()
    if dev not in _FLUSH_OPS:
        flush_l2()
        _FLUSH_OPS[dev] = tuple(o.name for o in cupti.device_ops([flush_l2]))
    return _FLUSH_OPS[dev]
