"""A kernel's ``__device__`` variables as harness outputs: ``atomicAdd(&g_count, 1u)`` writes no pointer argument,
yet ``g_count`` is what the kernel computes.

Each ``__device__`` variable the kernel writes (:class:`~htam_core.source.analysis.facts.DeviceGlobal` with
``written``) becomes one input of the harness that no launch argument names, listed in :attr:`Harness.outputs` and
mapped to its C++ name in :attr:`Harness.symbols`: a tensor of its element count, reset to its start value before
each launch (copied into the variable, as ``cudaMemcpyToSymbol`` does) and filled from the variable after it (as
``cudaMemcpyFromSymbol`` does; :func:`htam_core.harness.runner.symbol_copies`). The start value is zero (``init =
"zeros"``), the value a ``__device__`` variable without an initializer holds; the starting kernel and a candidate
start from the same value, so the comparison holds whatever ``main()`` writes before its launch. A variable whose
element type has no harness dtype, whose size is not a constant, or whose declaration starts it at another value
is left out with one line saying so.

Idea source: CUDA Runtime API, ``cudaMemcpyToSymbol`` / ``cudaMemcpyFromSymbol`` and ``cudaGetSymbolAddress``;
CuPy's ``RawModule.get_global``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from htam_core.harness.base import InputSpec
from htam_core.harness.cu_eval import DTYPE_OF, base_type
from htam_core.source.analysis.facts import DeviceGlobal

__all__ = ["SymbolOutputs", "symbol_outputs"]

_ZERO = re.compile(r"^\(?\s*[+-]?0*(?:\.0*)?(?:[eE][+-]?\d+)?[fFuUlL]*\s*\)?$|^\{\s*(?:0\s*,?\s*)*\}$|^\{\s*\}$")


@dataclass
class SymbolOutputs:
    """The harness inputs made for a kernel's written ``__device__`` variables.

    Attributes:
        inputs: one :class:`InputSpec` per variable compared (``init = "zeros"``, its element count as shape).
        symbols: input name -> the variable's qualified C++ name (``"ns::g_count"``).
        notes: one line per variable compared (how it is read) or left out (why).
    """

    inputs: list[InputSpec] = field(default_factory=list)
    symbols: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def symbol_outputs(globals_: tuple[DeviceGlobal, ...], kernel: str, name_of: Callable[[str], str]
                   ) -> SymbolOutputs:
    """The outputs of ``kernel``'s written ``__device__`` variables (module docstring).

    Args:
        globals_: the kernel's ``__device__`` variables (:attr:`KernelFacts.device_globals`).
        kernel: the kernel's name (for the notes).
        name_of: gives a variable's harness input name from its C++ name (unique among the harness's names).
    """
    out = SymbolOutputs()
    for g in globals_:
        if not g.written:
            continue
        dtype = DTYPE_OF.get(base_type(g.element_type))
        why = (f"its element type `{g.element_type}` has no harness dtype" if dtype is None or dtype == "bool" else
               f"its size `{g.count_text}` is not a compile-time constant" if g.count is None else
               f"it starts at `{g.initializer}`, not zero" if g.initializer and not _ZERO.match(g.initializer) else
               None)
        if why is not None:
            out.notes.append(f"{kernel} writes the __device__ variable {g.qualified}, which is not compared: {why} "
                             "(list it in htam.toml's outputs by hand)")
            continue
        name = name_of(g.qualified)
        out.inputs.append(InputSpec(name=name, dtype=dtype, shape=[g.count], init="zeros"))  # type: ignore[list-item]
        out.symbols[name] = g.qualified
        out.notes.append(f"the __device__ variable {g.qualified} ({g.element_type}, {g.count} element(s)) is an "
                         f"output: set to zero before each launch, read back after it (`{name}`)")
    return out
