"""The roofline bound of a PyTorch reference: its compulsory DRAM traffic and its FLOPs.

A KernelBench problem gives no byte or FLOP counts, so its harness derives them from the reference
``Model`` itself, once per input set:

* **bytes**: compulsory traffic, i.e. every input tensor and every parameter or buffer read once, and
  every output tensor written once (the "compulsory misses" of the roofline model; Williams, Waterman and
  Patterson, *Roofline: an insightful visual performance model*, CACM 2009). A real kernel moves at least
  this much unless its inputs already sit in L2.
* **FLOPs**: :class:`torch.utils.flop_counter.FlopCounterMode` over one reference forward. It counts the
  operators that have FLOP formulas (matmul, bmm, addmm, convolution, attention); elementwise and
  reduction operators count zero, which is right for a roofline: their bound is the traffic.

These feed the same roofline fraction and SOL estimate as an ``htam.toml`` harness's ``bytes``/``flops``
expressions (:func:`htam_core.measure.gpu.roofline_sol`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _tensor_bytes(xs: Any) -> int:
    import torch

    if isinstance(xs, torch.Tensor):
        return xs.numel() * xs.element_size()
    if isinstance(xs, list | tuple):
        return sum(_tensor_bytes(x) for x in xs)
    if isinstance(xs, dict):
        return sum(_tensor_bytes(x) for x in xs.values())
    return 0


def compulsory_bound(model: Any, inputs: Sequence[Any]) -> tuple[float, float]:
    """Run ``model(*inputs)`` once (no grad) and return its roofline bound.

    Args:
        model: the reference ``torch.nn.Module`` (on the device the inputs are on).
        inputs: its positional inputs (tensors and plain values).

    Returns:
        ``(bytes, flops)``: compulsory DRAM bytes of one call (inputs + parameters + buffers read once,
        outputs written once) and the FLOPs FlopCounterMode counts (0.0 when no counted operator ran).

    Raises:
        Whatever the reference raises; the caller treats the bound as unknown then.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(*inputs)
    state = list(model.parameters()) + list(model.buffers()) if isinstance(model, torch.nn.Module) else []
    nbytes = _tensor_bytes(list(inputs)) + _tensor_bytes(state) + _tensor_bytes(out)
    return float(nbytes), float(counter.get_total_flops())
