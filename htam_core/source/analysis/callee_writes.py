"""Which pointer parameters of a CUDA kernel a ``__device__`` helper it calls stores through.

A kernel may do its stores in a helper (``__device__ void apply(float* out, const float* in, int i) { out[i] =
...; }`` called as ``apply(out, in, i)``): the kernel's own facts see ``out`` only passed on (mode
``"unknown"``). :func:`callee_writes` reads each helper's facts (:func:`~htam_core.source.analysis.callees.
device_callees`), maps the helper's parameters to the call's arguments by position, and names the kernel
parameter each written helper parameter receives (an argument that is the parameter, a pointer-offset local of
it, or an expression over exactly one pointer parameter such as ``out + row * n``).
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis import analyze
from htam_core.source.analysis.callees import device_callees
from htam_core.source.analysis.syntax import of_type, text
from htam_core.source.analysis.unit import cuda_source
from htam_core.source.model import Kernel, SourceModel

__all__ = ["callee_writes"]


def _param_names(fn: Node, src: bytes) -> list[str | None]:
    """The names of ``fn``'s parameters in order (``None`` for an unnamed one)."""
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    out: list[str | None] = []
    for p in (plist.named_children if plist is not None else []):
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        ids = list(of_type(p.child_by_field_name("declarator"), "identifier")) \
            if p.child_by_field_name("declarator") is not None else []
        out.append(text(ids[-1], src) if ids else None)
    return out


def callee_writes(model: SourceModel, kernel: Kernel) -> dict[str, str]:
    """``{kernel pointer parameter: helper}`` for each pointer parameter of ``kernel`` that a ``__device__``
    helper it calls by name stores through (the helper's parameter at that position has mode ``"write"`` or
    ``"readwrite"`` in the helper's facts). ``{}`` for Triton, CUDA in Python strings, or code that cannot be
    read; never raises for odd code."""
    callees = [c for c in device_callees(model, kernel) if c.via is None]
    if not callees:
        return {}
    unit = cuda_source(model, kernel)
    if isinstance(unit, str):
        return {}
    facts = analyze(model, kernel)
    pointers = {p.name for p in facts.pointers}
    out: dict[str, str] = {}
    for c in callees:
        written = {pf.name for pf in c.facts.pointers if pf.mode in ("write", "readwrite")}
        fn, call = unit.node_at(c.span, ("function_definition",)), unit.node_at(c.call_span, ("call_expression",))
        args = call.child_by_field_name("arguments") if call is not None else None
        if fn is None or args is None or not written:
            continue
        values = [a for a in args.named_children if a.type != "comment"]
        for name, arg in zip(_param_names(fn, unit.src), values, strict=False):
            if name not in written:
                continue
            ids = {unit.t(i) for i in of_type(arg, "identifier")}
            hit = {(a.pointer if (a := facts.pointer_alias(i)) is not None else i) for i in ids}
            hit &= pointers
            if len(hit) == 1:
                out.setdefault(hit.pop(), c.name)
    return out
