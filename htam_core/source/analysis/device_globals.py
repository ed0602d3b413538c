"""The ``__device__`` variables a CUDA kernel names: its outputs (and inputs) that are no pointer parameter.

``__device__ unsigned int g_count;`` at file scope, ``__device__ int hist[256];``, ``static __device__ float
total;``, one declared in a namespace or in a local header the file includes (``#include "counters.cuh"`` of the
same folder) is a :class:`~htam_core.source.analysis.facts.DeviceGlobal`: its element type, whether it is one
variable or an array, its element count from the declaration (a constant extent: a literal, a ``#define``, a
``constexpr``) and its qualified name. A name the kernel's parameters or body declare again hides the variable and is
left out; so is a name two visible declarations give (two namespaces), and a ``__constant__`` or ``__shared__``
variable (the kernel cannot write the first; the second is per block). ``extern __device__`` declarations are left
out too: the variable is defined in another unit, which the harness does not compile with this one.

Idea source: CUDA C++ Programming Guide, "Variable Memory Space Specifiers"; ISO C++ [basic.link] (a ``static``
or unnamed-namespace variable has internal linkage).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.facts import DeviceGlobal
from htam_core.source.analysis.includes import local_headers
from htam_core.source.analysis.syntax import of_type, parse_cuda
from htam_core.source.analysis.unit import CudaSource
from htam_core.source.model import Kernel

__all__ = ["BaseNames", "declarations_before", "kernel_globals", "unit_globals"]

_WORD = re.compile(rb"[A-Za-z_]\w*")
#: Words of a declaration's head that are no part of the element type.
_NOT_TYPE = frozenset({"__device__", "static", "volatile", "const", "inline", "__managed__", "extern",
                       "__restrict__", "thread_local"})


class BaseNames(dict):
    """``{name: pointer type text}`` of the names an access may go through (the kernel's pointer parameters and its
    ``__device__`` arrays and variables), with :attr:`scalars`: the names of the ``__device__`` variables that are
    one value (``&g_count`` is their address, ``g_count`` their value)."""

    def __init__(self, names: dict[str, str | None], scalars: frozenset[str] = frozenset()) -> None:
        """``names``: name -> its pointer type as text (``"float*"``); ``scalars``: those that are one variable."""
        super().__init__(names)
        self.scalars = scalars


@dataclass(frozen=True)
class _Decl:
    """One declarator of a ``__device__`` declaration, before the kernel's use of it is known."""

    glob: DeviceGlobal
    node: Node


def _head(decl: Node, data: bytes) -> bytes:
    """The bytes of ``decl`` before its first declarator (qualifiers, memory space, type)."""
    first = decl.child_by_field_name("declarator")
    return data[decl.start_byte:first.start_byte if first is not None else decl.end_byte]


def _namespaces(decl: Node, data: bytes) -> tuple[list[str], bool] | None:
    """The names of the namespaces around ``decl``, outermost first, and whether one of them is unnamed; ``None``
    for a declaration inside a function or a class (no namespace-scope variable)."""
    names: list[str] = []
    anonymous = False
    node = decl.parent
    while node is not None:
        if node.type == "namespace_definition":
            n = node.child_by_field_name("name")
            if n is None:
                anonymous = True
            else:
                names.insert(0, data[n.start_byte:n.end_byte].decode("utf-8", "replace"))
        elif node.type in ("function_definition", "compound_statement", "class_specifier", "struct_specifier"):
            return None
        node = node.parent
    return names, anonymous


def _extents(declarator: Node, env: ConstEnv, data: bytes) -> tuple[Node, list[tuple[int | None, str]]]:
    """The identifier node of ``declarator`` and its array extents, outermost first, as ``(value, text)``."""
    dims: list[tuple[int | None, str]] = []
    node = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
    while node is not None and node.type == "array_declarator":
        size = node.child_by_field_name("size")
        text = data[size.start_byte:size.end_byte].decode("utf-8", "replace") if size is not None else ""
        v = env.value(size, None) if size is not None else None
        dims.insert(0, (v if isinstance(v, int) and v > 0 else None, " ".join(text.split())))
        node = node.child_by_field_name("declarator")
    return node, dims  # type: ignore[return-value]


def unit_globals(root: Node, data: bytes, env: ConstEnv, header: str = "") -> list[DeviceGlobal]:
    """The ``__device__`` variables declared at namespace scope in one parsed unit, in source order.

    Args:
        root: the unit's parse tree root.
        data: the unit's bytes (node offsets index these).
        env: the unit's constants (array extents are read with it).
        header: the unit's path when it is an included header, ``""`` for the kernel's file.
    """
    out: list[DeviceGlobal] = []
    for decl in of_type(root, "declaration"):
        words = {w.decode() for w in _WORD.findall(_head(decl, data))}
        if "__device__" not in words or words & {"__constant__", "__shared__", "extern"} or \
                decl.child_by_field_name("type") is None:
            continue
        scope = _namespaces(decl, data)
        if scope is None:
            continue
        spaces, anonymous = scope
        tnode = decl.child_by_field_name("type")
        etype = " ".join(w for w in data[tnode.start_byte:tnode.end_byte].decode("utf-8", "replace").split()
                         if w not in _NOT_TYPE)
        quals = " ".join(w for w in words if w in ("const", "volatile"))
        for d in decl.children_by_field_name("declarator"):
            ident, dims = _extents(d, env, data)
            if ident is None or ident.type != "identifier" or d.type == "pointer_declarator" or \
                    (d.type == "init_declarator" and (d.child_by_field_name("declarator") or d).type
                     == "pointer_declarator") or "const" in quals:
                continue
            name = data[ident.start_byte:ident.end_byte].decode("utf-8", "replace")
            init = d.child_by_field_name("value") if d.type == "init_declarator" else None
            counts = [v for v, _ in dims]
            out.append(DeviceGlobal(
                name, "::".join([*spaces, name]), etype, not dims,
                1 if not dims else (math.prod(counts) if None not in counts else None),  # type: ignore[arg-type]
                "1" if not dims else " * ".join(t if len(dims) == 1 else f"({t})" for _, t in dims),
                "static" in words or anonymous,
                " ".join(data[init.start_byte:init.end_byte].decode("utf-8", "replace").split()) if init else "",
                data.count(b"\n", 0, decl.start_byte) + 1, header))
    return out


def _hidden(src: CudaSource, kernel: Kernel) -> set[str]:
    """The names the kernel's parameters and body declare (they hide a file-scope variable of that name)."""
    names = {p.name for p in kernel.params}
    for d in of_type(src.func, ("declaration", "parameter_declaration", "lambda_expression")):
        for c in of_type(d, "identifier"):
            parent = c.parent
            if parent is not None and parent.type in ("init_declarator", "array_declarator", "pointer_declarator",
                                                      "reference_declarator", "declaration",
                                                      "parameter_declaration") and \
                    parent.child_by_field_name("declarator") == c:
                names.add(src.env.t(c))
    return names


def kernel_globals(src: CudaSource, kernel: Kernel) -> dict[str, DeviceGlobal]:
    """Name as the body spells it -> the ``__device__`` variable, for those the kernel's body names (module
    docstring: hidden, ambiguous, ``__constant__`` and ``extern`` ones left out); the name is qualified
    (``ns::g``) when the body writes it so.

    Args:
        src: the kernel's parsed unit (its root, text and local headers).
        kernel: the kernel (its parameters hide names).
    """
    found = unit_globals(src.root, src.src, src.env)
    for h in src.env.headers():
        found += unit_globals(h.root, h.src, ConstEnv(h.src, h.root), str(h.path))
    by_name: dict[str, list[DeviceGlobal]] = {}
    for g in found:
        by_name.setdefault(g.name, []).append(g)
        if g.qualified != g.name:
            by_name.setdefault(g.qualified, []).append(g)
    hidden = _hidden(src, kernel)
    used = {"".join(src.env.t(n).split()) for n in of_type(src.body, ("identifier", "qualified_identifier"))
            if n.parent is None or n.parent.type != "qualified_identifier"}  # ns::g is one name, not g
    out: dict[str, DeviceGlobal] = {}
    for name in sorted(used & set(by_name)):
        gs = by_name[name]
        if len(gs) != 1 or name.split("::")[0] in hidden:
            continue
        g = gs[0]
        out[name] = DeviceGlobal(name, g.qualified, g.element_type, g.scalar, g.count, g.count_text, g.static,
                                 g.initializer, g.line, g.header)
    return out


def declarations_before(data: bytes, path: str | None) -> str:
    """The ``__device__`` variables declared in ``data`` (a CUDA file's bytes before a kernel) and in the local
    headers it includes, as declarations to read a kernel's text after: ``__device__ T name[count];`` inside its
    namespaces, ``static`` kept, the extent as its value when known (the macros behind it may not come along).

    Args:
        data: the file's bytes before the kernel.
        path: the file's path (its local headers are read next to it); ``None`` for in-memory text.
    """
    tree = parse_cuda(data)
    found = unit_globals(tree.root_node, data, ConstEnv(data, tree.root_node, path=path))
    for h in local_headers(data, path):
        found += unit_globals(h.root, h.src, ConstEnv(h.src, h.root), str(h.path))
    out = []
    for g in found:
        spaces = g.qualified.split("::")[:-1]
        dims = "" if g.scalar else f"[{g.count if g.count else g.count_text}]"
        decl = f"{'static ' if g.static and not spaces else ''}__device__ {g.element_type} {g.name}{dims};"
        out.append("".join(f"namespace {s} {{ " for s in spaces) + decl + " }" * len(spaces))
    return "".join(f"{d}\n" for d in out)
