"""The ``__device__`` functions a CUDA kernel calls, each with its own facts (loops, accesses, strides).

A kernel often does its work in a helper: ``k(...) { ...; helper(p, n, q); }`` with ``__device__ void
helper(...)``, or through a function pointer given as a template argument (``template<fn_ptr f> __global__
void k(...) { f(r, ...); }`` launched as ``k<f><<<...>>>`` inside ``template<fn_ptr f> void launch(...)``,
itself called as ``launch<naive>(...)``, the shape of llm.c's ``trimat_forward.cu``). :func:`device_callees`
finds those calls and, for each ``__device__`` definition a call can reach, the helper's facts: the analysis
of its body as if it were the kernel (:func:`htam_core.source.analysis.analyze` on the file text with the
helper's ``__device__`` keyword read as ``__global__``, a same-length swap, so every span and line of the facts
is a span and line of the real file). Its thread and block indices mean what they mean in the kernel that
calls it; the launch configuration is the kernel's (the helper's facts have no launches).

Template arguments are followed from the kernel's launch sites through the launching host functions' own
template parameters, up to :data:`MAX_HOPS` host functions.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis import analyze
from htam_core.source.analysis.device_defs import definition_head as _head
from htam_core.source.analysis.device_defs import device_functions, unit_functions
from htam_core.source.analysis.facts import KernelFacts, Span
from htam_core.source.analysis.instantiations import MAX_HOPS as MAX_HOPS
from htam_core.source.analysis.instantiations import called_name as _called_name
from htam_core.source.analysis.instantiations import template_arguments
from htam_core.source.analysis.instantiations import template_param_names as _template_params
from htam_core.source.analysis.syntax import of_type, text
from htam_core.source.analysis.unit import _cached, cuda_source
from htam_core.source.api import parse_text
from htam_core.source.model import Kernel, SourceModel
from htam_core.types.language import traits

_DEVICE = b"__device__"
_GLOBAL = b"__global__"


@dataclass(frozen=True)
class DeviceCallee:
    """One ``__device__`` function a call of the kernel reaches.

    Attributes:
        name: the helper's name.
        call_span: file bytes of the call expression in the kernel's body.
        statement_span: file bytes of the statement holding the call.
        top_level: the call's statement is a statement of the kernel's body itself (not inside a loop, a
            branch or a nested block), so every thread that reaches the end of the statements before it calls it.
        via: the kernel's template parameter the call goes through (``"matmul_tri"``), ``None`` for a call by name.
        bound: every ``__device__`` function the call can reach through the launch sites, sorted (one name for
            a direct call).
        span: file bytes of the helper's definition.
        returns_void: the helper is declared ``void``.
        other_callers: functions other than the kernel that call the helper by name.
        facts: the helper's facts, read as a kernel body (see the module docstring).
    """

    name: str
    call_span: Span
    statement_span: Span
    top_level: bool
    via: str | None
    bound: tuple[str, ...]
    span: Span
    returns_void: bool
    other_callers: tuple[str, ...]
    facts: KernelFacts


def _bindings(root: Node, src: bytes, kernel: Kernel, position: int,
              devices: set[str]) -> set[str]:
    """The ``__device__`` names bound to the kernel's template parameter at ``position`` through its launch sites,
    following host functions' template parameters (``launch<naive>(...)``) up to :data:`MAX_HOPS` hops."""
    found = template_arguments(root, src, kernel.name, position, stop=frozenset(devices))
    return {a for a in found.texts if a in devices}


def device_callees(model: SourceModel, kernel: Kernel) -> tuple[DeviceCallee, ...]:
    """The ``__device__`` functions ``kernel`` calls (by name or through a template parameter bound at its launch
    sites), one :class:`DeviceCallee` per (call, reachable definition), in call order; cached per file text with
    the parsed units.

    Only ``.cu`` files (``model.file_language == "cuda"``): CUDA held in Python strings gives ``()``. A helper
    defined more than once (overloads) is left out. Never raises for odd code (what cannot be read is left out).
    """
    if model.file_language != "cuda" or not traits(kernel.language).nvcc_build:
        return ()
    return _cached(("callees", model.text, model.path, kernel.name, kernel.name_span.start),
                   lambda: _build_safely(model, kernel))


def _build_safely(model: SourceModel, kernel: Kernel) -> tuple[DeviceCallee, ...]:
    try:
        return _build(model, kernel)
    except (RecursionError, ValueError, TypeError, AttributeError, KeyError):  # odd code: no helpers
        return ()


def _build(model: SourceModel, kernel: Kernel) -> tuple[DeviceCallee, ...]:
    src = cuda_source(model, kernel)
    if isinstance(src, str) or src.base != 0:
        return ()
    data, root = src.src, src.root
    functions = unit_functions(root, data)
    devices = set(device_functions(root, data))
    tparams = _template_params(src.func, data)
    out: list[DeviceCallee] = []
    for call in of_type(src.body, "call_expression"):
        name = _called_name(call.child_by_field_name("function"), data)
        if name is None:
            continue
        via = None
        if name in devices:
            bound = {name}
        elif name in tparams:
            via = name
            bound = _bindings(root, data, kernel, tparams.index(name), devices)
        else:
            continue
        stmt = call
        while stmt.parent is not None and stmt.parent != src.body and stmt.type != "expression_statement":
            stmt = stmt.parent
        top = stmt.parent == src.body and stmt.type == "expression_statement"
        for callee in sorted(bound):
            fn = functions[callee][0]
            facts = _callee_facts(model, data, fn, callee)
            if facts is None:
                continue
            mine = {(src.func.start_byte, src.func.end_byte), (fn.start_byte, fn.end_byte)}
            others = sorted({h for h, fns in functions.items() for f in fns if (f.start_byte, f.end_byte) not in mine
                             and any(_called_name(c.child_by_field_name("function"), data) == callee for c in of_type(f, "call_expression"))})
            ret = fn.child_by_field_name("type")
            out.append(DeviceCallee(callee, src.span(call), src.span(stmt), top, via, tuple(sorted(bound)),
                                    src.span(fn), ret is not None and text(ret, data).strip() == "void",
                                    tuple(others), facts))
    return tuple(out)


def _callee_facts(model: SourceModel, data: bytes, fn: Node, name: str) -> KernelFacts | None:
    """The facts of helper ``fn`` read as a kernel (its ``__device__`` swapped for ``__global__`` in place)."""
    head = _head(fn, data)
    at = head.find(_DEVICE)
    if at < 0:
        return None
    pos = fn.start_byte + at
    swapped = data[:pos] + _GLOBAL + data[pos + len(_DEVICE):]
    m2 = parse_text(swapped.decode("utf-8", errors="surrogatepass"), "cuda", model.path)
    k2 = next((k for k in m2.kernels if k.name == name and k.span.start == fn.start_byte
               or k.name == name and k.span.start <= pos < k.span.end), None)
    if k2 is None:
        return None
    return analyze(m2, k2)
