"""A counted loop's parts as syntax nodes, in whichever form it is written: ``for (T v = a; v < b; v <<= 1)``, or
the ``while``/``do`` loop that the loop facts read as one (``T v = a; do { ...; v <<= 1; } while (v < b);``,
:func:`~htam_core.source.analysis.loops.c_while_header`).

The transforms that replace a loop statement (the reduction-tree steps) read its variable, start, condition and
update here, so they accept every form the facts accept, and learn which statements a ``while``/``do`` form adds
(the initialisation before the loop, the update at the end of its body) so that a rewrite as a ``for`` loop
removes them. Idea source: the equivalence of ``for (init; cond; update) body`` and ``init; while (cond) { body
update; }`` without ``continue`` (ISO C++, [stmt.for]).
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import KernelView
from htam_core.source.analysis.loops import declared_type, for_parts
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import exact_node, unwrap_parens


@dataclass(frozen=True)
class CountedLoop:
    """One counted loop's parts (module docstring).

    Attributes:
        loop: the loop statement.
        kind: ``"for"``, ``"while"`` or ``"do"`` (the form written).
        var: the loop variable.
        type: its declared type as written (``"unsigned int"``).
        init: the start value's expression.
        cond: the condition expression (parentheses stripped).
        update: the update expression (``s <<= 1``).
        init_stmt: for a ``while``/``do`` loop, the statement before it that sets ``var``; else ``None``.
        update_stmt: for a ``while``/``do`` loop, the body's last statement (the update); else ``None``.
    """

    loop: Node
    kind: str
    var: str
    type: str
    init: Node
    cond: Node
    update: Node
    init_stmt: Node | None = None
    update_stmt: Node | None = None


def counted_loop(view: KernelView, loop: Node) -> CountedLoop | str:
    """The :class:`CountedLoop` of ``loop`` (a ``for`` loop declaring one variable in its header, or a ``while``/``do``
    loop the facts read as counted, whose variable is named nowhere else), else why not, in one line."""
    if syn.is_for(loop):
        return _for_loop(view, loop)
    fact = view.facts.loop_at(view.file_byte(loop))
    if fact is None or not syn.is_loop(loop):
        return "the statement is not a loop"
    if fact.header_refusal:
        return fact.header_refusal
    if fact.init_span is None or fact.update_span is None or fact.var is None:
        return (f"the {fact.kind} loop is not a counted loop (a variable set just before it and updated once, as the "
                "last statement of its body)")
    if fact.var_outside:
        return (f"the {fact.kind} loop's variable {fact.var} is used outside the loop and its initialisation, so it "
                "cannot become a for loop's own variable")
    init_stmt = _node(view, fact.init_span)
    update_stmt = _node(view, fact.update_span)
    cond = loop.child_by_field_name("condition")
    if init_stmt is None or update_stmt is None or cond is None:
        return f"the {fact.kind} loop's statements are not found"
    if syn.is_condition_clause(cond) and cond.named_child_count == 1:
        cond = cond.named_children[0]
    got = _start(view, init_stmt, fact.var)
    if got is None:
        return f"{fact.var} is not declared with its initial value just before the {fact.kind} loop"
    typ, init = got
    return CountedLoop(loop, fact.kind, fact.var, typ, init, unwrap_parens(cond), update_stmt.named_children[0],
                       init_stmt, update_stmt)


def _node(view: KernelView, span: tuple[int, int]) -> Node | None:
    """The statement of the kernel at file bytes ``span``."""
    return exact_node(view.body, span[0] - view.base, span[1] - view.base,
                      ("declaration", "expression_statement"))


def _start(view: KernelView, init_stmt: Node, var: str) -> tuple[str, Node] | None:
    """``(type, value)`` of the declaration ``T var = value;`` before a ``while``/``do`` loop; ``None`` for a plain
    assignment (the declaration's type is then elsewhere, and the variable outlives the loop)."""
    if not syn.is_declaration(init_stmt):
        return None
    ds = syn.init_declarators(init_stmt)
    if len(ds) != 1 or view.t(ds[0].child_by_field_name("declarator")) != var:
        return None
    value = ds[0].child_by_field_name("value")
    return (declared_type(init_stmt, view.t), value) if value is not None else None


def _for_loop(view: KernelView, loop: Node) -> CountedLoop | str:
    """The parts of ``for (T s = A; cond; update)`` (the loop header's one reader,
    :func:`~htam_core.source.analysis.loops.for_parts`), else why not."""
    p = for_parts(loop, view.t)
    if p is None or not syn.is_declaration(p.init):
        return "the loop variable is not declared in the loop header"
    if not p.declared or p.var is None or not syn.is_identifier(p.var_node):
        return "the loop header does not declare one variable"
    if p.start is None:
        return "the loop variable has no initial value"
    if p.cond is None or p.update is None:
        return "the loop header has no condition or no update"
    return CountedLoop(loop, "for", p.var, p.type, p.start, p.cond, p.update)
