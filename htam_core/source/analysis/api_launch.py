"""Kernel launches written through the CUDA runtime API instead of ``<<<...>>>``.

``cudaLaunchKernel((const void*)k, grid, block, args, smem, stream)`` (and ``cudaLaunchCooperativeKernel``, with
the same slots) takes the kernel, the grid and block, an array of the addresses of the kernel's arguments
(``void* args[] = {&a, &b, &n};``), the dynamic shared-memory bytes and the stream; ``cudaLaunchKernelEx(&config,
k, a, b, n)`` takes a ``cudaLaunchConfig_t`` whose ``gridDim``, ``blockDim``, ``dynamicSmemBytes`` and ``stream``
fields were set (``config.gridDim = dim3(64);`` or a designated initializer ``{.gridDim = ..., .blockDim = ...}``)
and the kernel's arguments themselves. :func:`api_launch` reads one such call as a
:class:`~htam_core.source.analysis.launch.LaunchCall` whose ``config`` nodes are the expressions in the grid, block,
shared-bytes and stream slots (for ``Ex``, the values assigned to the fields), so every reader and editor of
launches reads and edits them as it does a ``<<<...>>>``'s; ``kernel_args`` are the ``x`` of each ``&x`` of the
arguments array (``()`` with ``args_known=False`` when that array cannot be read), or ``Ex``'s trailing arguments.

The kernel is read through the casts a caller writes (``(const void*)k``, ``(void*)&k``,
``reinterpret_cast<const void*>(k)``, ``k<float>``).

Idea source: CUDA Runtime API reference, "Execution Control" (``cudaLaunchKernel``, ``cudaLaunchKernelEx``,
``cudaLaunchCooperativeKernel``, ``cudaLaunchConfig_t``).
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis.launch import LaunchCall, callee_name, host_of
from htam_core.source.analysis.nodes import declared_identifier
from htam_core.source.analysis.syntax import of_type, strip_pointer, text

__all__ = ["API_LAUNCHERS", "api_launch", "api_launch_calls", "api_kernel_node"]

#: runtime functions that launch a kernel given like ``cudaLaunchKernel`` (kernel, grid, block, args, smem, stream)
_SLOTTED = ("cudaLaunchKernel", "cudaLaunchCooperativeKernel")
#: runtime function that launches a kernel given a ``cudaLaunchConfig_t`` and the kernel's arguments
_EX = "cudaLaunchKernelEx"
#: every runtime launcher this module reads
API_LAUNCHERS = (*_SLOTTED, _EX)
#: ``cudaLaunchConfig_t`` fields in the order of the ``<<<...>>>`` slots
_EX_FIELDS = ("gridDim", "blockDim", "dynamicSmemBytes", "stream")


def _args(call: Node) -> list[Node]:
    """The call's argument nodes, comments left out."""
    alist = call.child_by_field_name("arguments")
    return [a for a in (alist.named_children if alist is not None else []) if a.type != "comment"]


def _launcher(call: Node, src: bytes) -> str:
    """The runtime launcher ``call`` calls (``"cudaLaunchKernel"``), or ``""``."""
    fn = call.child_by_field_name("function")
    if fn is not None and fn.type == "template_function":
        fn = fn.child_by_field_name("name")
    name = text(fn, src).split("::")[-1].strip() if fn is not None else ""
    return name if name in API_LAUNCHERS else ""


def _uncast(node: Node, src: bytes) -> Node:
    """``node`` without the casts, parentheses and ``&`` around it: ``(const void*)&k`` -> ``k`` (the casts through
    :func:`~htam_core.source.analysis.syntax.strip_pointer`, then the ``&`` that takes a function's address)."""
    while True:
        node = strip_pointer(node)
        arg = node.child_by_field_name("argument") if node.type == "pointer_expression" else None
        if arg is None or not text(node, src).startswith("&"):
            return node
        if arg.type == "pointer_expression":
            return arg
        node = arg


def api_kernel_node(call: Node, src: bytes) -> Node | None:
    """The node naming the kernel a runtime launch ``call`` runs (``k``, ``ns::k``, ``k<float>``), through its casts;
    ``None`` when ``call`` is not one of :data:`API_LAUNCHERS` or names no function. Errors: none."""
    name = _launcher(call, src)
    args = _args(call)
    pos = 1 if name == _EX else 0
    if not name or len(args) <= pos:
        return None
    node = _uncast(args[pos], src)
    return node if node.type in ("identifier", "qualified_identifier", "template_function") else None


def _before(host: Node, at: int, kind: str) -> list[Node]:
    """The ``kind`` nodes of ``host`` that end before byte ``at`` and whose statement lies in a block around
    ``at`` (so it ran on every path to it), in source order."""
    out = []
    for n in of_type(host, kind):
        stmt = n.parent
        while stmt is not None and stmt.type not in ("expression_statement", "declaration"):
            stmt = stmt.parent
        block = stmt.parent if stmt is not None else None
        if n.end_byte <= at and block is not None and block.start_byte <= at < block.end_byte:
            out.append(n)
    return out


def _array_args(call: Node, host: Node | None, slot: Node, src: bytes) -> tuple[Node, ...] | None:
    """The ``x`` of each ``&x`` of the ``void* args[] = {&x, ...}`` array passed in ``slot``, or ``None``."""
    arr = _uncast(slot, src)
    if arr.type == "initializer_list":
        inits: Node | None = arr
    elif arr.type == "identifier" and host is not None:
        name = text(arr, src)
        found = [d for d in _before(host, call.start_byte, "init_declarator")
                 if (dn := d.child_by_field_name("declarator")) is not None and _declared(dn, src) == name]
        value = found[-1].child_by_field_name("value") if found else None
        inits = value if value is not None and value.type == "initializer_list" else None
    else:
        inits = None
    if inits is None:
        return None
    items = [c for c in inits.named_children if c.type != "comment"]
    if any(c.type != "pointer_expression" or not text(c, src).startswith("&") for c in items):
        return None
    return tuple(c.child_by_field_name("argument") for c in items)  # type: ignore[misc]


def _declared(decl: Node, src: bytes) -> str:
    """The name a declarator declares (``args`` of ``*args[]``; ``""`` when it names none)."""
    ident = declared_identifier(decl)
    return text(ident, src) if ident is not None else ""


def _ex_fields(call: Node, host: Node | None, cfg: Node, src: bytes) -> dict[str, Node]:
    """The value each ``cudaLaunchConfig_t`` field of ``&config`` holds at ``call``: the last assignment
    ``config.field = value;`` before it, else the config's designated initializer."""
    var = _uncast(cfg, src)
    if var.type != "identifier" or host is None:
        return {}
    name = text(var, src)
    out: dict[str, Node] = {}
    for d in _before(host, call.start_byte, "init_declarator"):
        dn, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
        if dn is not None and _declared(dn, src) == name and value is not None:
            out = {}
            for pair in (p for p in value.named_children if p.type == "initializer_pair"):
                key, v = text(pair.child_by_field_name("designator"), src).lstrip("."), pair.child_by_field_name("value")
                if v is not None:
                    out[key] = v
    for a in _before(host, call.start_byte, "assignment_expression"):
        left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
        arg = left.child_by_field_name("argument") if left is not None and left.type == "field_expression" else None
        if arg is not None and right is not None and text(arg, src) == name and text(a.child_by_field_name("operator"), src) == "=":
            out[text(left.child_by_field_name("field"), src)] = right  # type: ignore[union-attr]
    return out


def api_launch(call: Node, src: bytes) -> LaunchCall | None:
    """The runtime launch ``call`` (see the module docstring) as a :class:`LaunchCall` with ``api`` set to the
    launcher's name, or ``None`` when ``call`` is not one, names no kernel, or its grid and block cannot be read
    (an ``Ex`` config whose ``gridDim``/``blockDim`` is not assigned in the launching function). Errors: none."""
    fn = api_kernel_node(call, src)
    if fn is None:
        return None
    name, args, host = _launcher(call, src), _args(call), host_of(call)
    if name == _EX:
        fields = _ex_fields(call, host, args[0], src)
        config: list[Node] = []
        for f in _EX_FIELDS:
            if f not in fields:
                break
            config.append(fields[f])
        kargs: tuple[Node, ...] | None = tuple(args[2:])
    else:
        config = [args[k] for k in (1, 2, 4, 5) if k < len(args)]
        kargs = _array_args(call, host, args[3], src) if len(args) > 3 else None
    if len(config) < 2:
        return None
    tail = args[3] if name != _EX and len(args) == 4 else None
    return LaunchCall(call, fn, tuple(config), host, kernel_args=kargs or (), api=name, args_known=kargs is not None,
                      smem_after=tail)


def api_launch_calls(root: Node, src: bytes, kernel_name: str | None = None) -> list[LaunchCall]:
    """Every runtime launch under ``root`` (:func:`api_launch`; of ``kernel_name`` only, when given), in source
    order. Errors: none."""
    out = []
    for call in of_type(root, "call_expression"):
        lc = api_launch(call, src) if _launcher(call, src) else None
        if lc is not None and (kernel_name is None or callee_name(lc.fn, src) == kernel_name):
            out.append(lc)
    return sorted(out, key=lambda c: c.call.start_byte)
