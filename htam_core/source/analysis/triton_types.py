"""The element types of a Triton kernel's pointer parameters that the kernel's own code shows.

A Triton signature types every pointer (``*fp32``, ``*i64``), and the source does not write them: the static
compile must pick them. A value loaded through a pointer and then used where only an integer may stand shows
that the pointer holds integers, and a float guess would not compile (``invalid operands of type pointer<fp32>
and triton.language.float32`` for ``x_ptr + tl.load(idx_ptr + row)``). The integer uses read here:

* an address: the pointer argument of ``tl.load``/``tl.store``/``tl.atomic_*``, the ``offsets``/``shape``/
  ``strides`` of ``tl.make_block_ptr`` and the offsets of ``tl.advance``;
* a loop bound: the arguments of ``range``/``tl.range`` (CSR row pointers: ``for k in range(start, end)``);
* a bitwise operation (``&``, ``|``, ``^``, ``<<``, ``>>``; floats have none);
* an equality test (``==``/``!=``) with an integer literal (``label != -100``);
* a cast to an integer type (``tl.load(p).to(tl.int32)``);
* a store through a pointer already known to hold integers.

A value flows from a load to such a use through assignments (``j = tl.load(idx_ptr + row)``), integer
arithmetic (``+ - * // %`` and the bitwise operators; ``/`` gives a float and stops the flow), broadcasting
(``j[:, None]``, ``tl.broadcast_to``, ``tl.reshape``, ``tl.expand_dims``), hints (``tl.multiple_of``), casts
(``.to(...)``), ``tl.minimum``/``tl.maximum`` and the value operands of ``tl.where``; any other call (``tl.argmax``,
``tl.sum``) stops it. The width is not shown by the use: the type is ``int64``, PyTorch's index type.

Idea source: type inference by use (the integer operands Triton's semantic analysis requires: ``tl.semantic``'s
pointer arithmetic and bitwise checks).
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from htam_core.source.analysis.facts import TritonPointerType
from htam_core.source.analysis.syntax import of_type, text
from htam_core.source.analysis.triton_calls import _is_tl, _kw, _positional, _short, assignments_to
from htam_core.source.analysis.unit import PythonSource

__all__ = ["INT_DTYPE", "pointer_types"]

#: The integer element type given to an index pointer (the width the use cannot show: PyTorch's index type).
INT_DTYPE = "int64"
_ARITH = frozenset({"+", "-", "*", "//", "%", "<<", ">>", "&", "|", "^"})
_BITWISE = frozenset({"<<", ">>", "&", "|", "^"})
_INT_NAMES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
#: ``tl`` calls a value flows through, and which positional arguments carry it (``None``: all).
_PASSING: dict[str, tuple[int, ...] | None] = {
    "where": (1, 2), "minimum": None, "maximum": None, "broadcast_to": (0,), "reshape": (0,), "view": (0,),
    "expand_dims": (0,), "multiple_of": (0,), "max_contiguous": (0,), "ravel": (0,), "abs": (0,)}
_MEMOPS = ("load", "store")

#: One integer use: the expression, the phrase that names the use, its line.
Seed = tuple[Node, str, int]


def _flow(node: Node | None, psrc: PythonSource, names: set[str], loads: list[Node]) -> None:
    """Collect the names and the ``tl.load`` calls whose value reaches ``node``'s value through integer-preserving
    operations (see the module docstring) into ``names`` and ``loads``."""
    if node is None:
        return
    t = node.type
    if t == "identifier":
        names.add(text(node, psrc.src))
    elif t in ("parenthesized_expression", "unary_operator"):
        for c in node.named_children:
            _flow(c, psrc, names, loads)
    elif t == "binary_operator":
        if text(node.child_by_field_name("operator"), psrc.src) in _ARITH:
            _flow(node.child_by_field_name("left"), psrc, names, loads)
            _flow(node.child_by_field_name("right"), psrc, names, loads)
    elif t == "subscript":
        _flow(node.child_by_field_name("value"), psrc, names, loads)
    elif t == "call":
        _flow_call(node, psrc, names, loads)


def _flow_call(call: Node, psrc: PythonSource, names: set[str], loads: list[Node]) -> None:
    fn = call.child_by_field_name("function")
    if fn is not None and fn.type == "attribute" and text(fn.child_by_field_name("attribute"), psrc.src) == "to":
        _flow(fn.child_by_field_name("object"), psrc, names, loads)  # x.to(tl.int64): the value of x
        return
    callee = psrc.callee(call)
    if not _is_tl(callee):
        return
    short = _short(callee)
    if short == "load":
        loads.append(call)
        return
    if short in _PASSING:
        pos = _positional(call)
        keep = _PASSING[short]
        for i, a in enumerate(pos):
            if keep is None or i in keep:
                _flow(a, psrc, names, loads)


def _is_int_literal(node: Node, psrc: PythonSource) -> bool:
    if node.type == "unary_operator" and node.named_children:
        node = node.named_children[-1]
    return node.type == "integer" or (node.type == "identifier" and text(node, psrc.src) in ("True", "False"))


def _address_seeds(psrc: PythonSource) -> list[Seed]:
    """The addresses and loop bounds of the kernel body."""
    out: list[Seed] = []
    for c in of_type(psrc.body, "call"):
        callee = psrc.callee(c)
        short = _short(callee)
        pos = _positional(c)
        if _is_tl(callee) and (short in _MEMOPS or short.startswith("atomic_")):
            ptr = _kw(c, "pointer", psrc.src) or (pos[0] if pos else None)
            if ptr is not None:
                out.append((ptr, "used in an address", psrc.line(c)))
        elif _is_tl(callee) and short in ("make_block_ptr", "advance"):
            args = [_kw(c, k, psrc.src) for k in ("shape", "strides", "offsets")] + pos[1:]
            out.extend((e, "used in a block pointer", psrc.line(c)) for a in args if a is not None
                       for e in (a.named_children if a.type in ("tuple", "list") else [a]))
        elif callee in ("range", "tl.range"):
            out.extend((a, "used as a loop bound", psrc.line(c)) for a in pos)
    return out


def _operator_seeds(psrc: PythonSource) -> list[Seed]:
    """Operands of bitwise operations, of equality tests with an integer literal, and receivers of integer casts."""
    out: list[Seed] = []
    src = psrc.src
    for b in of_type(psrc.body, "binary_operator"):
        if text(b.child_by_field_name("operator"), src) in _BITWISE:
            out.extend((b.child_by_field_name(f), "used in a bitwise operation", psrc.line(b)) for f in ("left", "right")
                       if b.child_by_field_name(f) is not None)
    for cmp in of_type(psrc.body, "comparison_operator"):
        ops = [text(o, src) for o in cmp.children if not o.is_named]
        operands = cmp.named_children
        if ops in (["=="], ["!="]) and len(operands) == 2:
            for a, b in ((operands[0], operands[1]), (operands[1], operands[0])):
                if _is_int_literal(b, psrc) and not _is_int_literal(a, psrc):
                    out.append((a, "compared with an integer", psrc.line(cmp)))
    for c in of_type(psrc.body, "call"):
        fn = c.child_by_field_name("function")
        pos = _positional(c)
        target = _kw(c, "dtype", src) or (pos[0] if pos else None)
        if fn is not None and fn.type == "attribute" and text(fn.child_by_field_name("attribute"), src) == "to" \
                and target is not None and text(target, src).rsplit(".", 1)[-1] in _INT_NAMES:
            obj = fn.child_by_field_name("object")
            if obj is not None and (obj.type == "identifier" or (obj.type == "call" and _short(psrc.callee(obj)) == "load")):
                out.append((obj, f"cast to {text(target, src).rsplit('.', 1)[-1]}", psrc.line(c)))
    return out


def _store_seeds(psrc: PythonSource, pointer_of: Callable[[Node | None], str | None], ints: set[str]) -> list[Seed]:
    """The values stored through pointers already known to hold integers."""
    out: list[Seed] = []
    for c in of_type(psrc.body, "call"):
        callee = psrc.callee(c)
        if not (_is_tl(callee) and _short(callee) == "store"):
            continue
        pos = _positional(c)
        ptr = _kw(c, "pointer", psrc.src) or (pos[0] if pos else None)
        value = _kw(c, "value", psrc.src) or (pos[1] if len(pos) > 1 else None)
        if value is not None and pointer_of(ptr) in ints:
            out.append((value, f"stored through the integer pointer {pointer_of(ptr)}", psrc.line(c)))
    return out


def _spread(psrc: PythonSource, seeds: list[Seed], pointer_of: Callable[[Node | None], str | None],
            found: dict[str, TritonPointerType]) -> None:
    """Follow each seed's value back through assignments to the loads it comes from; mark their pointers."""
    seen: set[str] = set()
    work = list(seeds)
    while work:
        node, why, line = work.pop()
        names: set[str] = set()
        loads: list[Node] = []
        _flow(node, psrc, names, loads)
        for ld in loads:
            pos = _positional(ld)
            p = pointer_of(_kw(ld, "pointer", psrc.src) or (pos[0] if pos else None))
            if p is not None and p not in found:
                found[p] = TritonPointerType(p, INT_DTYPE, f"a value loaded through it is {why}", line)
        for name in sorted(names - seen):
            seen.add(name)
            for a in assignments_to(psrc.body, name, psrc.src):
                work.append((a.child_by_field_name("right"), why, line))


def pointer_types(psrc: PythonSource, pointers: list[str],
                  pointer_of: Callable[[Node | None], str | None]) -> tuple[TritonPointerType, ...]:
    """The integer pointer parameters of the Triton kernel in ``psrc``.

    Args:
        psrc: the kernel's parsed file.
        pointers: the kernel's pointer parameters, in order.
        pointer_of: the pointer parameter an address expression is based on (``None`` for none), following
            the kernel's single-assignment aliases (``row_ptr = x_ptr + row * stride``).

    Returns:
        One :class:`TritonPointerType` per pointer parameter whose loaded values have an integer use (see the
        module docstring), in ``pointers`` order; nothing is said of the others. Raises nothing.
    """
    found: dict[str, TritonPointerType] = {}
    _spread(psrc, _address_seeds(psrc) + _operator_seeds(psrc), pointer_of, found)
    while True:
        before = len(found)
        _spread(psrc, _store_seeds(psrc, pointer_of, set(found)), pointer_of, found)
        if len(found) == before:
            break
    return tuple(found[p] for p in pointers if p in found)
