"""Arg-max and arg-min steps: a running extreme kept together with the index where it was seen.

A row scan that keeps the position of its largest (or smallest) element writes one conditional update of a pair::

    if (v > best) { best = v; bi = c; }          // arg-max, the first index of the maximum wins
    if (p[c] >= best) { bi = c; best = p[c]; }   // arg-max, the last index wins (>=), assignments in any order
    if (best > v) { best = v; bi = c; }          // arg-min (the extreme on the right of the comparison)

:func:`arg_step` reads one such ``if`` statement as an :class:`ArgStep`: the kind (``"argmax"``/``"argmin"``), the
extreme's name, the companion index's name, the candidate value and the index it is stored with, and the tie rule
(a strict comparison keeps the first index at which the extreme is seen in the loop's order, a non-strict one the
last). The pair is a reduction of ``(value, index)`` under the lexicographic order "more extreme value, then the
index the tie rule prefers", so it can be split over threads and combined again (for example with warp shuffles).
Idea source: the arg-max reductions of CUB (``cub::ArgMax``, a key-value pair reduction that keeps the first index
on ties).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import statements, unwrap_parens

__all__ = ["ArgStep", "arg_step"]

#: comparison -> (kind when the candidate is on the left, strict)
_CMP = {">": ("argmax", True), ">=": ("argmax", False), "<": ("argmin", True), "<=": ("argmin", False)}
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


@dataclass(frozen=True)
class ArgStep:
    """One arg-max/arg-min update ``if (E > best) { best = E; idx = I; }`` (see the module docstring).

    Attributes:
        kind: ``"argmax"`` or ``"argmin"``.
        value: the name of the running extreme (``"best"``).
        index: the name of its companion index (``"bi"``).
        candidate: the compared value ``E`` (the node in the condition).
        index_value: the value ``I`` stored into the index (``c``).
        first: the comparison is strict, so the first index of the extreme in loop order wins; else the last.
        stmt: the ``if`` statement.
    """

    kind: Literal["argmax", "argmin"]
    value: str
    index: str
    candidate: Node
    index_value: Node
    first: bool
    stmt: Node


def _text(src: bytes, node: Node) -> str:
    return "".join(src[node.start_byte:node.end_byte].decode().split())


def _plain_assignments(src: bytes, block: Node | None) -> list[tuple[str, Node]] | None:
    """``(target, value)`` of the statements of ``block`` when each is ``name = value;``, else ``None``."""
    out = []
    for st in statements(block) if block is not None else []:
        asg = st.named_children[0] if syn.is_expression_statement(st) and st.named_children else None
        if not syn.is_assignment(asg) or _text(src, asg.child_by_field_name("operator")) != "=":
            return None
        left = unwrap_parens(asg.child_by_field_name("left"))
        if not syn.is_identifier(left):
            return None
        out.append((_text(src, left), asg.child_by_field_name("right")))
    return out


def _comparison(src: bytes, stmt: Node) -> tuple[str, Node, Node] | None:
    """``(operator, left, right)`` of the ``if``'s condition when it is one comparison."""
    cond = stmt.child_by_field_name("condition")
    if cond is not None and syn.is_condition_clause(cond):
        cond = cond.child_by_field_name("value")
    cond = unwrap_parens(cond) if cond is not None else None
    if not syn.is_binary(cond) or _text(src, cond.child_by_field_name("operator")) not in _CMP:
        return None
    return _text(src, cond.child_by_field_name("operator")), cond.child_by_field_name("left"), \
        cond.child_by_field_name("right")


def arg_step(src: bytes, stmt: Node) -> ArgStep | None:
    """Read ``stmt`` (a node of the parse of ``src``) as an arg-max/arg-min update, else ``None``.

    The ``if`` has no ``else``, its condition is one comparison of a name ``best`` with a value ``E``, and its body is
    exactly two plain assignments, in either order: ``best = E`` (the same text as the compared value) and ``idx = I``
    for another name; neither ``E`` nor ``I`` reads ``best`` or ``idx``.
    """
    if not syn.is_if(stmt) or stmt.child_by_field_name("alternative") is not None:
        return None
    cmp = _comparison(src, stmt)
    body = _plain_assignments(src, stmt.child_by_field_name("consequence"))
    if cmp is None or body is None or len(body) != 2 or body[0][0] == body[1][0]:
        return None
    op, left, right = cmp
    for cand, other, o in ((left, right, op), (right, left, _FLIP[op])):
        other = unwrap_parens(other)
        if not syn.is_identifier(other):
            continue
        best = _text(src, other)
        sets = dict(body)
        idx = next((n for n in sets if n != best), None)
        if best not in sets or idx is None or _text(src, sets[best]) != _text(src, cand):
            continue
        if any(syn.references(n, src, name) for n in (cand, sets[idx]) for name in (best, idx)):
            return None
        kind, strict = _CMP[o]
        return ArgStep(kind, best, idx, cand, sets[idx], strict, stmt)  # type: ignore[arg-type]
    return None
