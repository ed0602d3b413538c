"""The one reader of a kernel's barriers and of its shared-memory spellings.

Barriers in normal form: every spelling of a block-wide barrier is the same fact, a :class:`Barrier` of scope
``"block"`` (``__syncthreads()``, ``cg::sync(cta)`` and ``cooperative_groups::sync(cta)`` on a thread-block
handle, ``cta.sync()`` / ``block.sync()`` on such a handle, ``cooperative_groups::this_thread_block().sync()``
and ``cg::this_thread_block().sync()``); a warp-level barrier (``__syncwarp()``, ``tile.sync()`` /
``cg::sync(tile)`` on a ``thread_block_tile`` or ``tiled_partition`` handle) is a distinct fact of scope
``"warp"``: it does not order the shared-memory writes of other warps. A thread-block handle is a local declared
``cg::thread_block cta = ...`` (any namespace spelling) or ``auto cta = cg::this_thread_block();``. The spellings
come from the CUDA C++ Programming Guide, "Cooperative Groups" (``thread_block::sync()`` "is equivalent to
``__syncthreads()``") and "Synchronization Functions".

Shared-memory spellings (:func:`shared_accessor_locals`): a local pointer initialized from a shared-memory
accessor struct (``T *sdata = SharedMemory<T>();``, a struct or class of the unit whose body declares an
``extern __shared__`` array, the cuda-samples idiom for typed dynamic shared memory) is a shared array itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from htam_core.source.analysis.syntax import of_type, strip_casts, text

__all__ = ["Barrier", "BarrierScope", "barriers", "shared_accessor_locals", "shared_accessors"]

BarrierScope = Literal["block", "warp", "grid"]

_TILE_DECL = re.compile(r"\bthread_block_tile\s*<[^;{}]*?>\s*([A-Za-z_]\w*)\s*=")


@dataclass(frozen=True)
class Barrier:
    """One barrier call of a kernel, in normal form.

    Attributes:
        scope: ``"block"`` (all threads of the block: ``__syncthreads()`` and its cooperative-groups spellings),
            ``"warp"`` (``__syncwarp()``, a tile's ``sync``) or ``"grid"`` (a cooperative launch's grid group).
        text: the call as written (``"cg::sync(cta)"``).
        line: 1-based line in the file.
        span: file bytes of the call expression.
        statement: file bytes of the expression statement when the call is the whole statement
            (``cg::sync(cta);``), else ``None``.
    """

    scope: BarrierScope
    text: str
    line: int
    span: tuple[int, int]
    statement: tuple[int, int] | None = None


def _qualified_tail(name: str) -> tuple[str, str]:
    """``("cg", "sync")`` for ``"cg::sync"``; ``("", "sync")`` for ``"sync"`` (spaces and template arguments
    dropped)."""
    name = "".join(name.split()).split("<", 1)[0]
    head, _, tail = name.rpartition("::")
    return head, tail


def _handles(body: Node, src: bytes) -> dict[str, BarrierScope]:
    """Locals of ``body`` that hold a cooperative group: ``{name: "block"}`` for a thread block, ``{name: "warp"}``
    for a tile (``thread_block_tile<32>``, ``tiled_partition(...)``), ``{name: "grid"}`` for a grid group."""
    out: dict[str, BarrierScope] = {}
    # `cg::thread_block_tile<32> tile = ...;` parses as a comparison expression, not a declaration: read its text
    for m in _TILE_DECL.finditer(text(body, src)):
        out[m.group(1)] = "warp"
    for decl in of_type(body, "declaration"):
        typ = "".join(text(decl.child_by_field_name("type"), src).split())
        for d in decl.children_by_field_name("declarator"):
            if d.type != "init_declarator":
                continue
            name = text(d.child_by_field_name("declarator"), src)
            value = "".join(text(d.child_by_field_name("value"), src).split())
            if "thread_block_tile" in typ or "tiled_partition" in value:
                out[name] = "warp"
            elif _qualified_tail(typ)[1] == "grid_group" or (
                    typ == "auto" and _qualified_tail(value.split("(", 1)[0])[1] == "this_grid"):
                out[name] = "grid"
            elif _qualified_tail(typ)[1] == "thread_block" or (
                    typ == "auto" and _qualified_tail(value.split("(", 1)[0])[1] == "this_thread_block"):
                out[name] = "block"
    return out


def _scope_of(call: Node, src: bytes, handles: dict[str, BarrierScope]) -> BarrierScope | None:
    """The barrier scope of ``call`` (a ``call_expression``), or ``None`` when it is no barrier."""
    fn = call.child_by_field_name("function")
    if fn is None:
        return None
    args = call.child_by_field_name("arguments")
    argv = [a for a in args.named_children if a.type != "comment"] if args is not None else []
    if fn.type == "field_expression":  # obj.sync()
        if text(fn.child_by_field_name("field"), src) != "sync" or argv:
            return None
        obj = strip_casts(fn.child_by_field_name("argument"))
        if obj.type == "identifier":
            return handles.get(text(obj, src))
        if obj.type == "call_expression":
            inner = _qualified_tail(text(obj.child_by_field_name("function"), src))
            if inner[1] == "this_thread_block" and inner[0] in ("", "cg", "cooperative_groups"):
                return "block"
            if inner[1] == "this_grid" and inner[0] in ("", "cg", "cooperative_groups"):
                return "grid"
            if inner[1] == "tiled_partition":
                return "warp"
        return None
    head, tail = _qualified_tail(text(fn, src))
    if head == "" and tail == "__syncthreads" and not argv:
        return "block"
    if head == "" and tail == "__syncwarp":
        return "warp"
    if tail == "sync" and len(argv) == 1 and (head in ("cg", "cooperative_groups") or head.endswith(
            "::cooperative_groups")):
        arg = strip_casts(argv[0])
        if arg.type == "identifier":
            return handles.get(text(arg, src))
        made = _qualified_tail(text(arg.child_by_field_name("function"), src))[1] if arg.type == "call_expression" \
            else ""
        if made in ("this_thread_block", "this_grid"):
            return "block" if made == "this_thread_block" else "grid"
    return None


def barriers(body: Node, src: bytes, base: int = 0) -> tuple[Barrier, ...]:
    """Every barrier call under ``body`` (a kernel's ``compound_statement``) in normal form, in source order.

    Args:
        body: the tree-sitter node of the kernel body.
        src: the UTF-8 buffer the nodes index.
        base: file offset of ``src[0]`` (spans are file offsets; CUDA in a Python string starts later).

    Returns:
        the :class:`Barrier` facts; calls that are no barrier (``__syncthreads_count``, an unknown object's
        ``sync()``) are left out.
    """
    handles = _handles(body, src)
    out: list[Barrier] = []
    for call in of_type(body, "call_expression"):
        scope = _scope_of(call, src, handles)
        if scope is None:
            continue
        stmt = call.parent
        whole = stmt is not None and stmt.type == "expression_statement" and stmt.named_child_count == 1
        out.append(Barrier(scope, text(call, src), src[: call.start_byte].count(b"\n") + 1,
                           (call.start_byte + base, call.end_byte + base),
                           (stmt.start_byte + base, stmt.end_byte + base) if whole and stmt is not None else None))
    return tuple(out)


def _is_extern_shared(decl: Node, src: bytes) -> bool:
    quals = {text(c, src) for c in decl.children if c.type in ("type_qualifier", "storage_class_specifier")}
    return "__shared__" in quals and "extern" in quals


def shared_accessors(root: Node, src: bytes) -> frozenset[str]:
    """Names of the structs and classes of the unit whose body declares an ``extern __shared__`` array: typed
    views of a launch's dynamic shared memory (``SharedMemory<T>``; a call ``SharedMemory<T>()`` converts to a
    pointer into it)."""
    out: set[str] = set()
    for spec in of_type(root, ("struct_specifier", "class_specifier")):
        name, body = spec.child_by_field_name("name"), spec.child_by_field_name("body")
        if name is not None and body is not None and any(_is_extern_shared(d, src)
                                                         for d in of_type(body, "declaration")):
            out.add(text(name, src))
    return frozenset(out)


def shared_accessor_locals(body: Node, root: Node, src: bytes) -> dict[str, Node]:
    """Local pointers of ``body`` initialized from a shared-memory accessor (:func:`shared_accessors`:
    ``T *sdata = SharedMemory<T>();``, casts allowed), each with its ``init_declarator`` node: accesses through
    them are shared-memory accesses."""
    accessors = shared_accessors(root, src)
    out: dict[str, Node] = {}
    if not accessors:
        return out
    for decl in of_type(body, "declaration"):
        for d in decl.children_by_field_name("declarator"):
            if d.type != "init_declarator" or d.child_by_field_name("value") is None:
                continue
            cur = d.child_by_field_name("declarator")
            if cur is None or cur.type != "pointer_declarator":
                continue
            while cur is not None and cur.type == "pointer_declarator":
                cur = cur.child_by_field_name("declarator")
            value = strip_casts(d.child_by_field_name("value"))
            fn = value.child_by_field_name("function") if value.type == "call_expression" else None
            if cur is not None and cur.type == "identifier" and fn is not None and \
                    _qualified_tail(text(fn, src))[1] in accessors:
                out[text(cur, src)] = d
    return out
