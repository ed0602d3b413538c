"""Running max/min steps written as a selection: the running value and a candidate are compared, one is kept.

Besides a call (``m = fmaxf(m, x)``, read by the loop facts directly), a kernel developer keeps the largest (or
smallest) element seen so far by comparing and choosing::

    m = x > m ? x : m;        // max: the candidate replaces m when the comparison holds
    m = (m < x) ? x : m;      // the same comparison written the other way round
    m = m > x ? m : x;        // max: m stays while it is larger, else the candidate
    if (x > m) m = x;         // the statement form (braces or not)
    m = x < m ? x : m;        // min

:func:`select_step` reads one such statement as a :class:`SelectStep`: the running value's name, the candidate
and the :class:`Selection` (the comparison as written and which branch takes the candidate). A comparison with a
NaN is false, so the forms that take the candidate when the comparison holds never let a NaN in (like ``fmaxf``,
which ignores a NaN operand), while those that keep the running value when it holds take a NaN candidate; on equal
values each keeps what it keeps. A rewrite that combines partial extremes (a warp or block all-reduce) therefore
combines with the original's own comparison (:meth:`Selection.combine`), never with ``fmaxf``, so every row
without NaN gets the value the one thread found. Idea source: the comparison semantics of IEEE 754 (an unordered
comparison is false) and the CUDA Math API's ``fmaxf`` (a NaN operand is ignored).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import statements, unwrap_parens

__all__ = ["SelectStep", "Selection", "select_step"]

_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


@dataclass(frozen=True)
class Selection:
    """How a running extreme chooses between itself and a candidate, as written.

    Attributes:
        op: the comparison operator as written (``>``, ``>=``, ``<``, ``<=``).
        cand_left: the candidate is the left operand of the comparison (``x > m``), else the right (``m < x``).
        cand_true: the candidate is taken when the comparison holds (``x > m ? x : m``), else when it fails
            (``m > x ? m : x``).
        statement: written as ``if (x > m) m = x;`` rather than as a conditional expression.
    """

    op: str
    cand_left: bool
    cand_true: bool
    statement: bool = False

    @property
    def kind(self) -> Literal["max", "min"]:
        """``"max"`` or ``"min"``: the extreme the selection keeps on ordered (non-NaN) values."""
        larger = (self.op if self.cand_left else _FLIP[self.op]) in (">", ">=")  # `cand OP m` asks "cand larger?"
        return "max" if larger == self.cand_true else "min"

    @property
    def nan_enters(self) -> bool:
        """A NaN candidate replaces the running value (the candidate is taken when the comparison fails)."""
        return not self.cand_true

    def combine(self, acc: str, cand: str) -> str:
        """The C expression choosing between ``acc`` (running value) and ``cand`` with this very comparison and
        branch order, e.g. ``v > m ? v : m`` for ``m = x > m ? x : m`` (both arguments are C expressions; one that
        is not a name or an indexed name is parenthesized)."""
        acc, cand = _operand(acc), _operand(cand)
        left, right = (cand, acc) if self.cand_left else (acc, cand)
        yes, no = (cand, acc) if self.cand_true else (acc, cand)
        return f"{left} {self.op} {right} ? {yes} : {no}"

    def assign(self, acc: str, cand: str) -> str:
        """The C statement that makes the step with ``cand`` into the variable ``acc`` in the form it was written:
        ``if (v > m) m = v;`` for the statement form, ``m = v > m ? v : m;`` for a conditional expression."""
        if self.statement:
            left, right = (_operand(cand), acc) if self.cand_left else (acc, _operand(cand))
            return f"if ({left} {self.op} {right}) {acc} = {cand};"
        return f"{acc} = {self.combine(acc, cand)};"


@dataclass(frozen=True)
class SelectStep:
    """One running max/min step written as a selection (see the module docstring).

    Attributes:
        name: the running value (``m``).
        candidate: the compared value (the node of the comparison that is not ``m``).
        selection: the comparison and branch order.
        stmt: the statement (``expression_statement`` or ``if``) that makes the step.
        target: the node written (the name, or the indexed element of :func:`select_step`'s ``element`` form).
    """

    name: str
    candidate: Node
    selection: Selection
    stmt: Node
    target: Node | None = None


def _operand(expr: str) -> str:
    """``expr`` as an operand of a comparison or a conditional: as it is when a name or an indexed name."""
    return expr if re.fullmatch(r"[\w.]+(\[[\w.]+\])*", expr.strip()) else f"({expr})"


def _text(src: bytes, node: Node | None) -> str:
    return "".join(src[node.start_byte:node.end_byte].decode().split()) if node is not None else ""


def _comparison(src: bytes, cond: Node | None) -> tuple[str, Node, Node] | None:
    """``(operator, left, right)`` when ``cond`` (a condition, parentheses or a condition clause around it) is one
    ordering comparison."""
    if cond is not None and syn.is_condition_clause(cond):
        cond = cond.child_by_field_name("value")
    cond = unwrap_parens(cond) if cond is not None else None
    op = _text(src, cond.child_by_field_name("operator")) if syn.is_binary(cond) else ""
    if op not in _FLIP:
        return None
    return op, cond.child_by_field_name("left"), cond.child_by_field_name("right")


def _step(src: bytes, name: str, cmp: tuple[str, Node, Node], taken: Node, kept: Node | None,
          stmt: Node) -> SelectStep | None:
    """The step when the comparison ``cmp`` is between ``name`` and a candidate ``E``, ``taken`` (the branch chosen
    when it holds) and ``kept`` (the other; ``None`` for the statement form, which keeps ``name``) are ``E`` and
    ``name`` in some order, and ``E`` does not read ``name``."""
    op, left, right = cmp
    sides = [_text(src, unwrap_parens(n)) for n in (left, right)]
    if sides.count(name) != 1:
        return None
    cand_left = sides[1] == name
    cand = left if cand_left else right
    branches = [_text(src, unwrap_parens(taken)), name if kept is None else _text(src, unwrap_parens(kept))]
    if sorted(branches) != sorted([name, _text(src, unwrap_parens(cand))]) or syn.references(cand, src, name):
        return None
    return SelectStep(name, cand, Selection(op, cand_left, branches[0] != name, kept is None), stmt)


def _assignment(stmt: Node | None) -> Node | None:
    """The ``a = b`` of an expression statement (or the assignment itself), else ``None``."""
    if syn.is_expression_statement(stmt) and stmt is not None and stmt.named_children:
        stmt = stmt.named_children[0]
    return stmt if syn.is_assignment(stmt) and stmt is not None and \
        stmt.child_by_field_name("operator").type == "=" else None


def _target_ok(node: Node | None, element: bool) -> bool:
    """``node`` may hold the running value: a name, or with ``element`` also an indexed element (``s[tid]``)."""
    return syn.is_identifier(node) or (element and syn.is_subscript(node))


def select_step(src: bytes, stmt: Node, element: bool = False) -> SelectStep | None:
    """Read ``stmt`` (a node of the parse of ``src``: an expression statement, an assignment or an ``if``) as a
    running max/min step written as a selection, else ``None``.

    Accepted: ``m = C ? A : B`` where ``C`` compares ``m`` with a value ``E`` (``>``, ``>=``, ``<``, ``<=``, either
    order) and ``{A, B}`` are ``E`` and ``m``; and ``if (C) m = E;`` (no ``else``, one statement, braces or not).
    ``E`` must not read ``m``; texts are compared without whitespace. With ``element``, ``m`` may also be an indexed
    element (``sdata[tid] = sdata[tid + s] > sdata[tid] ? sdata[tid + s] : sdata[tid];``, a tree's combine): its
    :attr:`SelectStep.name` is then the element's text without whitespace, and the caller reads the two indices.
    """
    if syn.is_if(stmt):
        body = stmt.child_by_field_name("consequence")
        inner = statements(body) if syn.is_block(body) else [body] if body is not None else []
        a = _assignment(inner[0]) if len(inner) == 1 and stmt.child_by_field_name("alternative") is None else None
        target = unwrap_parens(a.child_by_field_name("left")) if a is not None else None
        cmp = _comparison(src, stmt.child_by_field_name("condition"))
        if a is None or cmp is None or not _target_ok(target, element):
            return None
        got = _step(src, _text(src, target), cmp, a.child_by_field_name("right"), None, stmt)
        return replace(got, target=target) if got is not None else None
    a = _assignment(stmt)
    target = unwrap_parens(a.child_by_field_name("left")) if a is not None else None
    right = unwrap_parens(a.child_by_field_name("right")) if a is not None else None
    if a is None or not _target_ok(target, element) or not syn.is_conditional(right):
        return None
    cmp = _comparison(src, right.child_by_field_name("condition"))
    if cmp is None:
        return None
    owner = stmt if syn.is_expression_statement(stmt) else a
    got = _step(src, _text(src, target), cmp, right.child_by_field_name("consequence"),
                right.child_by_field_name("alternative"), owner)
    return replace(got, target=target) if got is not None else None
