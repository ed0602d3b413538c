"""Whether a loop's accumulator is a running value written out at each step (a prefix sum along a row) or a
reduction whose value is used after the loop: the fact a refusal's advice reads to say what the loop is.

A thread-per-row loop ``acc += in[r * C + c]; out[r * C + c] = acc;`` keeps a running sum and stores it at every
element: an inclusive scan (Blelloch, "Prefix Sums and Their Applications", 1990), which lanes that each hold a
partial value cannot finish with one combine at the end. ``acc += in[r * C + c];`` followed by ``out[r] = acc``
after the loop is a reduction. The difference is read from the access facts (a global store inside the loop that
moves with the loop variable) and the store's value (it names an accumulator of the loop).
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.facts import Access, LoopFact
from htam_core.source.analysis.forms import KernelView
from htam_core.source.analysis.nodes import Node

__all__ = ["running_writes"]


def running_writes(view: KernelView, loop: LoopFact) -> tuple[Access, ...]:
    """The global stores inside ``loop`` that move with its variable and store a value naming one of its
    accumulators (``out[r * C + c] = acc``, ``out[i] = acc * scale``): the writes of a running value.

    Args:
        view: the kernel's text and facts.
        loop: one of ``view.facts.loops``.

    Returns:
        The stores in source order; empty for a loop without accumulators or variable, or a reduction.
    """
    names = {a.name for a in loop.accumulators}
    if not names or loop.var is None:
        return ()
    out: list[Access] = []
    for a in view.facts.accesses_in(loop):
        if a.space != "global" or a.kind == "read" or a.index is None:
            continue
        s = a.stride(loop.var)
        if s is not None and s == 0:
            continue
        node = _node(view, a.span)
        p = node.parent if node is not None else None
        while p is not None and syn.is_parenthesized(p):
            p = p.parent
        value = p.child_by_field_name("right") if p is not None and syn.is_assignment(p) else None
        if value is not None and any(view.t(n) in names for n in syn.identifiers(value)):
            out.append(a)
    return tuple(out)


def _node(view: KernelView, span: tuple[int, int]) -> Node | None:
    """The node of ``view``'s body whose file bytes are ``span``."""
    for n in syn.walk(view.body):
        if view.file_byte(n) == span[0] and n.end_byte + view.base == span[1]:
            return n
    return None
