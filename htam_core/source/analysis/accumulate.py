"""How a statement writes a value into an output element: added to it (``out[c] += e``, ``out[c] = out[c] + e``,
``atomicAdd(&out[c], e)``) or stored over it (``out[c] = e``), and whether ``e`` is linear in a given value.

A step that splits a sum over several blocks may add each block's partial into the output only when the kernel
adds its total into the output with the total entering linearly (``0.5f * total``): then the partials' sum is
the total's contribution. A store would need an output known to be zero before the launch.

Read from nodes in one place (the transforms ask, :mod:`htam_core.transforms._lane_split`); the functions take a
view with the node texts (:class:`~htam_core.source.analysis.forms.HasText`) or a kernel view with its facts
(:class:`~htam_core.source.analysis.forms.KernelView`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import HasText, KernelView
from htam_core.source.analysis.nodes import Node


@dataclass(frozen=True)
class Accumulation:
    """A statement that adds ``term`` into the element ``target``.

    Attributes:
        target: the element written (``dbias[o]``).
        term: the expression added (``shared[0]``, ``0.5f * s``).
        negated: the statement subtracts it (``-=``).
        atomic: the statement is already ``atomicAdd(&target, term)``.
    """

    target: Node
    term: Node
    negated: bool = False
    atomic: bool = False


def _inside(node: Node, inner: Node) -> bool:
    return node.start_byte <= inner.start_byte and inner.end_byte <= node.end_byte


def linear_in(unit: HasText, node: Node, values: Sequence[Node]) -> bool | None:
    """``True`` when ``node`` is linear in the value held by ``values`` (one of those nodes, scaled by a factor free
    of them, divided by such a divisor, or a sum or difference of such terms), ``False`` when it reads none of them,
    ``None`` when it reads them otherwise (``v * v``, ``v + 1``, a call of ``v``)."""
    n = syn.unwrap_parens(node)
    if any(n.start_byte == t.start_byte and n.end_byte == t.end_byte for t in values):
        return True
    if not any(_inside(n, t) for t in values):
        return False
    if not syn.is_binary(n):
        return None
    op = unit.t(n.child_by_field_name("operator"))
    a, b = (linear_in(unit, n.child_by_field_name(s), values) for s in ("left", "right"))
    if op in ("+", "-"):
        return True if a and b else None
    if op == "*" and {a, b} == {True, False}:
        return True
    return True if op == "/" and a is True and b is False else None


def accumulation(unit: HasText, stmt: Node) -> Accumulation | None:
    """The :class:`Accumulation` an expression statement is (``t += e``, ``t -= e``, ``t = t + e``, ``t = e + t``,
    ``atomicAdd(&t, e)``), or ``None`` (a store ``t = e``, anything else)."""
    expr = stmt.named_children[0] if syn.is_expression_statement(stmt) and stmt.named_children else None
    if syn.is_call(expr) and unit.t(expr.child_by_field_name("function")) == "atomicAdd":
        args = [a for a in expr.child_by_field_name("arguments").named_children if not syn.is_comment(a)]
        addr = syn.unwrap_parens(args[0]) if len(args) == 2 else None
        if addr is None or not unit.t(addr).startswith("&"):
            return None
        return Accumulation(addr.child_by_field_name("argument") or addr, args[1], atomic=True)
    if not syn.is_assignment(expr):
        return None
    op = unit.t(expr.child_by_field_name("operator"))
    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    if op in ("+=", "-="):
        return Accumulation(left, right, negated=op == "-=")
    r = syn.unwrap_parens(right)
    if op != "=" or not syn.is_binary(r) or unit.t(r.child_by_field_name("operator")) != "+":
        return None
    same = "".join(unit.t(left).split())  # the element as written, spaces aside (`out[ c ]` is `out[c]`)
    a, b = r.child_by_field_name("left"), r.child_by_field_name("right")
    if "".join(unit.t(a).split()) == same:
        return Accumulation(left, b)
    return Accumulation(left, a) if "".join(unit.t(b).split()) == same else None


def output_read_elsewhere(view: KernelView, stmt: Node) -> str | None:
    """Why partial sums of several blocks could not be added into what ``stmt`` writes: the kernel reads that
    global pointer outside ``stmt`` (a block would read a value other blocks are still adding to), with the line;
    ``None`` when it does not."""
    f = view.facts
    lo, hi = stmt.start_byte + view.base, stmt.end_byte + view.base
    outs = {a.pointer for a in f.global_accesses() if a.kind != "read" and lo <= a.span[0] < hi}
    for a in f.global_accesses():
        if a.kind == "read" and a.pointer in outs and not lo <= a.span[0] < hi:
            return f"the kernel reads its output {a.pointer} on line {a.line}, outside the write"
    return None
