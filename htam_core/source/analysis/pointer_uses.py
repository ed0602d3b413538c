"""How one use of a pointer name is used, where the use is not an access ``p[i]``: an address test (the pointer
converted to an integer only to test its bits, as an alignment check does) or an element read through a cast
view of the pointer (``reinterpret_cast<const float4 *>(p + off)[k]``, the form htam's float4 steps write).

The analysis layer reads a pointer's mode through these (an address test touches no memory and lets no pointer
escape), and the transforms that wrap loads ask them instead of testing node types. ``t`` is the text function
of the parsed unit the nodes belong to (``ConstEnv.t``, a transform's ``unit.t``).

Idea source: pointer-escape analysis as in compilers' alias analysis (a pointer converted to an integer escapes
unless the integer only feeds comparisons; LLVM's ``PointerMayBeCaptured`` treats a ``ptrtoint`` feeding only an
``icmp`` the same way), restricted to what source text shows.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from htam_core.source.analysis.builtins import is_load_builtin

__all__ = ["address_test", "const_view_read", "in_load_builtin"]

Text = Callable[[Node | None], str]

_POINTER_CASTS = ("reinterpret_cast<", "static_cast<", "const_cast<")
#: One-word integer type names a functional cast ``T(p)`` of a pointer may spell.
_INTEGER_TYPES = frozenset({"size_t", "uintptr_t", "intptr_t", "ptrdiff_t", "uint64_t", "int64_t", "unsigned",
                            "long", "std::size_t", "std::uintptr_t", "std::intptr_t", "std::uint64_t"})
_COMPARISONS = ("==", "!=", "<", ">", "<=", ">=")


def _is_address_of(n: Node | None, t: Text) -> bool:
    return n is not None and n.type == "pointer_expression" and t(n).startswith("&")


def _cast_call(n: Node | None, t: Text) -> str:
    """The target type text of the named cast ``n`` is (``reinterpret_cast<const float4 *>(x)``, spaces
    dropped: ``"constfloat4*"``) when ``n`` is a named cast of one argument, else ``""``."""
    if n is None or n.type != "call_expression":
        return ""
    args = n.child_by_field_name("arguments")
    fn = t(n.child_by_field_name("function")).replace(" ", "")
    if args is None or len(args.named_children) != 1 or not fn.startswith(_POINTER_CASTS):
        return ""
    return fn.split("<", 1)[1].rsplit(">", 1)[0]


def _arithmetic_up(cur: Node, t: Text) -> Node | None:
    """The parent of ``cur`` when it keeps ``cur``'s address: parentheses, ``cur + off``, ``off + cur``,
    ``cur - off``; else ``None``."""
    up = cur.parent
    if up is None:
        return None
    if up.type == "parenthesized_expression":
        return up
    if up.type == "binary_expression":
        op = t(up.child_by_field_name("operator"))
        if op == "+" or (op == "-" and up.child_by_field_name("left") == cur):
            return up
    return None


def _address_of_use(use: Node, t: Text) -> Node:
    """The largest expression around ``use`` (a pointer name, or an access ``p[e]``) whose value is still an
    address made from it: through parentheses, pointer arithmetic (``p + off``, ``off + p``, ``p - off``), the
    address of an element (``&p[e]``) and casts to another pointer type (``(const void *)p``,
    ``reinterpret_cast<const char *>(p)``). ``use`` itself when none of these is around it."""
    cur = use
    while (up := cur.parent) is not None:
        if (nxt := _arithmetic_up(cur, t)) is not None:
            cur = nxt
        elif cur.type == "subscript_expression" and _is_address_of(up, t):
            cur = up
        elif up.type == "subscript_expression" and up.child_by_field_name("argument") == cur and \
                _is_address_of(up.parent, t):
            cur = up.parent  # type: ignore[assignment]
        elif up.type == "cast_expression" and up.child_by_field_name("value") == cur and \
                "*" in t(up.child_by_field_name("type")):
            cur = up
        elif up.type == "argument_list" and "*" in _cast_call(up.parent, t):
            cur = up.parent  # type: ignore[assignment]
        else:
            break
    return cur


def _integer_cast(use: Node, t: Text) -> Node | None:
    """The cast that converts ``use`` (a pointer name or an access ``p[e]``), or an address made from it
    (:func:`_address_of_use`: ``p + off``, ``&p[e]``), to an integer (``(uintptr_t)p``, ``(size_t)(p + 4 * i)``,
    ``reinterpret_cast<unsigned long long>(&p[i])``, ``size_t(p)``): its target type names no pointer or
    reference. ``None`` else."""
    up = _address_of_use(use, t).parent
    while up is not None and up.type == "parenthesized_expression":
        up = up.parent
    if up is not None and up.type == "cast_expression" and up.child_by_field_name("value") is not None:
        typ = t(up.child_by_field_name("type"))
        return up if "*" not in typ and "&" not in typ else None
    if up is None or up.type != "argument_list" or len(up.named_children) != 1 or up.parent is None:
        return None
    call = up.parent
    fn = t(call.child_by_field_name("function")).replace(" ", "")
    if fn in _INTEGER_TYPES:
        return call  # a functional cast: `size_t(p)`, `uintptr_t(p + i)`
    if not fn.startswith(("reinterpret_cast<", "static_cast<", "std::bit_cast<", "__builtin_bit_cast<")):
        return None
    target = fn.split("<", 1)[1]
    return call if "*" not in target and "&" not in target else None


def address_test(use: Node, t: Text) -> bool:
    """``use`` (a pointer name, or an access ``p[e]``) is converted to an integer only to test the address's bits,
    as an alignment check does (``(reinterpret_cast<uintptr_t>(p) & 15) == 0``, ``if ((size_t)p % 16)``, ``bool ok
    = ((size_t)a | (size_t)b) % 16 == 0``, ``(reinterpret_cast<unsigned long long>(p + 4 * i) & 15ull) == 0ull``,
    ``((size_t)&p[i] & 15) == 0``): the integer flows through arithmetic into a comparison or a condition, so no
    memory is touched and no pointer is made from it. ``t``: the unit's text function."""
    q = _integer_cast(use, t)
    while q is not None and q.parent is not None and q.parent.type in ("parenthesized_expression",
                                                                        "binary_expression"):
        q = q.parent
        if q.type == "binary_expression" and t(q.child_by_field_name("operator")) in _COMPARISONS + ("&&", "||"):
            return True
    up = q.parent if q is not None else None
    if up is not None and up.type == "unary_expression" and t(up.child_by_field_name("operator")) == "!":
        return True
    return up is not None and (up.type == "condition_clause" or (
        up.type == "conditional_expression" and up.child_by_field_name("condition") == q))


def const_view_read(use: Node, t: Text, *, deref: bool = False) -> tuple[Node, str] | None:
    """The element read through a cast view that ``use`` (a pointer name) is the base of, and the view's element
    type: ``(reinterpret_cast<const float4 *>(p + off)[k], "float4")`` for ``use`` = ``p``, also through a C cast
    (``((const float4 *)p)[k]``) and the address of an element (``use`` may then be ``p`` or ``p[i]``); with
    ``deref``, a dereference of the view too (``*reinterpret_cast<const T *>(&p[i])``, the form htam's vectorized
    loads write: a read, though not one ``__ldg`` wraps). The cast is to a pointer to ``const`` and the element is read only (not assigned,
    incremented nor address-taken). ``None`` for any other use."""
    cur = _element_address(use, t)
    while (nxt := _arithmetic_up(cur, t)) is not None:
        cur = nxt
    up = cur.parent
    target = ""
    if up is not None and up.type == "argument_list":
        target, view = _cast_call(up.parent, t), up.parent
    elif up is not None and up.type == "cast_expression" and up.child_by_field_name("value") == cur:
        target, view = t(up.child_by_field_name("type")).replace(" ", ""), up
    if not target.startswith("const") or not target.endswith("*") or target.count("*") != 1:
        return None
    while view.parent is not None and view.parent.type == "parenthesized_expression":
        view = view.parent
    sub = view.parent
    if sub is None or sub.child_by_field_name("argument") != view or _written(sub, t) or not (
            sub.type == "subscript_expression" or (deref and sub.type == "pointer_expression" and t(sub).startswith("*"))):
        return None
    return sub, target.removeprefix("const").removesuffix("*")


def _element_address(use: Node, t: Text) -> Node:
    """``&p[e]`` when ``use`` is the name ``p`` or the access ``p[e]`` of it (the base of a view of the element's
    address: ``*reinterpret_cast<const T *>(&p[i])``), else ``use``."""
    if use.type != "subscript_expression":
        up = use.parent
        if up is None or up.type != "subscript_expression" or up.child_by_field_name("argument") != use:
            return use
        use = up
    return use.parent if _is_address_of(use.parent, t) else use  # type: ignore[return-value]


def _written(node: Node, t: Text) -> bool:
    """``node`` (through parentheses) is assigned, compound-assigned, incremented or address-taken."""
    cur, p = node, node.parent
    while p is not None and p.type == "parenthesized_expression":
        cur, p = p, p.parent
    if p is None:
        return False
    return (p.type == "assignment_expression" and p.child_by_field_name("left") == cur) or \
        p.type == "update_expression" or _is_address_of(p, t)


def in_load_builtin(access: Node, t: Text) -> bool:
    """``access`` (an element expression ``p[i]``) is already the argument of a load intrinsic:
    ``__ldg(&p[i])``."""
    up = access.parent
    while up is not None and up.type == "parenthesized_expression":
        up = up.parent
    if not _is_address_of(up, t):
        return False
    args = up.parent  # type: ignore[union-attr]
    while args is not None and args.type == "parenthesized_expression":
        args = args.parent
    return args is not None and args.type == "argument_list" and args.parent is not None and \
        is_load_builtin(t(args.parent.child_by_field_name("function")))
