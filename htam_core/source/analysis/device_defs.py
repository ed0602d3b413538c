"""The function definitions of a CUDA unit by name, and which of them are ``__device__`` helpers a call can be
followed into.

A kernel's call ``helper(...)`` names a function of its file; :func:`device_functions` maps each name defined
exactly once with ``__device__`` in its head (``__host__ __device__``, ``inline``, ``static``, ``__forceinline__``
ones included), and not a ``__global__`` kernel, to its definition. The one place this is decided, for the
helpers' facts (:mod:`~htam_core.source.analysis.callees`) and their purity
(:mod:`~htam_core.source.analysis.pure_calls`).
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis.instantiations import function_name
from htam_core.source.analysis.syntax import of_type

__all__ = ["definition_head", "device_functions", "unit_functions"]

_DEVICE = b"__device__"
_GLOBAL = b"__global__"


def definition_head(fn: Node, src: bytes) -> bytes:
    """The bytes of the definition ``fn`` before its body (qualifiers, return type, declarator)."""
    body = fn.child_by_field_name("body")
    return src[fn.start_byte : body.start_byte if body is not None else fn.end_byte]


def unit_functions(root: Node, data: bytes) -> dict[str, list[Node]]:
    """Name -> the function definitions of the unit with that name (without namespace), in source order.

    Args:
        root: the unit's parse tree root.
        data: the unit's bytes.
    """
    functions: dict[str, list[Node]] = {}
    for fn in of_type(root, "function_definition"):
        name = function_name(fn, data)
        if name:
            functions.setdefault(name, []).append(fn)
    return functions


def device_functions(root: Node, data: bytes) -> dict[str, Node]:
    """Name -> definition of each ``__device__`` function of the unit defined exactly once (module docstring):
    the helpers a kernel's call can be followed into. Overloads are left out (which one a call picks is not read
    here).

    Args:
        root: the unit's parse tree root.
        data: the unit's bytes.
    """
    return {n: fns[0] for n, fns in unit_functions(root, data).items() if len(fns) == 1
            and _DEVICE in definition_head(fns[0], data) and _GLOBAL not in definition_head(fns[0], data)}
