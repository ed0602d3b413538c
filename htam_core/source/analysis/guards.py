"""The one reader of a kernel's bounds checks: ``if (row < M && col < N) { body }`` and its early-return forms
``if (row >= M || col >= N) return;`` / ``if (!(row < M && col < N)) return;`` followed by the body.

Every transform that looks for "a bounds check" (grid-stride loops, thread per element, warp per row, the
matmul tilings, the transpose tile, the column kernels) reads it here, so that both forms are accepted wherever
one is, and a refusal can name the form it saw (:attr:`BoundsGuard.form`).

A guard is read as a conjunction of *positive* terms (the condition under which the body runs): for the
guarded-body form the ``&&`` terms of the condition; for the early-return form the negation of the condition,
pushed through ``||`` and ``!`` by De Morgan (``row >= M`` becomes ``row < M``, ``!(a && b)`` becomes ``a``,
``b``). A term ``var < bound`` (either way round: ``bound > var``) names its variable and bound; any other term
is kept by its positive text. The idea is the usual normalization of a guard to a conjunction of half-open
bounds (as in polyhedral loop-bound analysis), restricted to what a transform can reuse verbatim.

An ``else`` branch that changes nothing is part of the guarded-body form (:func:`noop_else`): an empty one
(``else {}``, ``else ;``) anywhere, and a bare ``else return;`` / ``else { return; }`` where nothing runs after the
``if`` (the kernel's last statement): ``if (i < n) { ... } else { return; }`` runs exactly what ``if (i < n) { ...
}`` runs. :attr:`BoundsGuard.alternative` keeps it, so a rewrite of the ``if``'s header can drop it with the header
(:func:`else_span`). An ``else`` that does work is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from htam_core.source.analysis.syntax import statements, text, unwrap_parens

__all__ = ["BoundsGuard", "GuardTerm", "bounds_guard", "positive_terms", "closing_bounds_guard", "describe_form",
           "early_return_text", "else_span", "enclosing_bounds", "exit_condition", "first_bounds_guard", "noop_else",
           "open_guarded_block"]

_NEGATE = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}


@dataclass(frozen=True)
class GuardTerm:
    """One positive term of a bounds check.

    Attributes:
        node: the term as written in the source (for the early-return form, the term that is negated).
        text: the positive term's text (``"row < M"`` for a written ``row >= M``).
        var: the variable of a ``var < bound`` term (either way round), else ``None``.
        bound: the bound expression node of that term, else ``None``.
        compare: the positive comparison ``(left, op, right)`` of a comparison term (``op`` one of ``< <= > >=
            == !=``, already negated for the early-return form), else ``None``.
    """

    node: Node
    text: str
    var: str | None = None
    bound: Node | None = None
    compare: tuple[Node, str, Node] | None = None


@dataclass(frozen=True)
class BoundsGuard:
    """A bounds check at statement level.

    Attributes:
        stmt: the ``if`` statement.
        form: ``"if"`` (the body is the consequence) or ``"return"`` (an early exit; the body follows it).
        terms: the positive terms, in source order.
        body: the guarded statements (the consequence's statements, or the statements after the early return).
        condition: the positive condition in parentheses: the condition as written for ``"if"``,
            ``"(row < M && col < N)"`` built from the terms for ``"return"``.
        end_byte: where the guarded code ends (the ``if`` statement's end, or the last following statement's).
        alternative: the ``else_clause`` of a guarded body whose ``else`` changes nothing (:func:`noop_else`), else
            ``None``; ``stmt`` (and :attr:`end_byte`) include it.
    """

    stmt: Node
    form: Literal["if", "return"]
    terms: tuple[GuardTerm, ...]
    body: tuple[Node, ...]
    condition: str
    end_byte: int
    alternative: Node | None = None

    def bounds(self) -> dict[str, Node]:
        """``{var: bound node}`` of the ``var < bound`` terms."""
        return {t.var: t.bound for t in self.terms if t.var is not None and t.bound is not None}

    def others(self) -> tuple[GuardTerm, ...]:
        """The terms that are not ``var < bound``."""
        return tuple(t for t in self.terms if t.var is None)

    def single(self, var: str) -> Node | None:
        """The bound ``n`` when the guard is exactly ``var < n`` (in either form), else ``None``."""
        if len(self.terms) == 1 and self.terms[0].var == var:
            return self.terms[0].bound
        return None


def _statements(node: Node | None) -> list[Node]:
    """The statements of a consequence (:func:`~htam_core.source.analysis.syntax.statements`: comments and the
    ``#pragma`` lines of loops excluded)."""
    return statements(node)


def _condition(stmt: Node) -> Node | None:
    """The expression inside ``if (...)``'s parentheses (``condition_clause`` unwrapped)."""
    cond = stmt.child_by_field_name("condition")
    if cond is None:
        return None
    if cond.type == "condition_clause":
        value = cond.child_by_field_name("value")
        if value is None:
            return None
        cond = value
    return unwrap_parens(cond)


def _split(node: Node, op: str, src: bytes) -> list[Node]:
    """The operands of a chain of binary ``op`` (``a && b && c``), parentheses stripped, in source order."""
    out: list[Node] = []
    stack = [node]
    while stack:
        n = unwrap_parens(stack.pop())
        if n.type == "binary_expression" and text(n.child_by_field_name("operator"), src) == op:
            stack += [n.child_by_field_name("right"), n.child_by_field_name("left")]
        else:
            out.append(n)
    return out


def _is_not(node: Node, src: bytes) -> Node | None:
    """The operand of ``!X``, else ``None``."""
    if node.type == "unary_expression" and text(node.child_by_field_name("operator"), src) == "!":
        arg = node.child_by_field_name("argument")
        return unwrap_parens(arg) if arg is not None else None
    return None


def _term(node: Node, src: bytes, negate: bool) -> GuardTerm:
    """The positive :class:`GuardTerm` of comparison ``node`` (``negate``: the node is the exit condition)."""
    n = unwrap_parens(node)
    if n.type == "binary_expression":
        op = text(n.child_by_field_name("operator"), src)
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if op in _NEGATE and left is not None and right is not None:
            pos = _NEGATE[op] if negate else op
            for var, bnd, o in ((left, right, pos), (right, left, _FLIP[pos])):
                if o == "<" and unwrap_parens(var).type == "identifier":
                    return GuardTerm(node, f"{text(unwrap_parens(var), src)} < {text(bnd, src)}",
                                     text(unwrap_parens(var), src), bnd, (left, pos, right))
            return GuardTerm(node, f"{text(left, src)} {pos} {text(right, src)}", compare=(left, pos, right))
    return GuardTerm(node, f"!({text(n, src)})" if negate else text(n, src))


def _positive_terms(cond: Node, src: bytes, exit_: bool) -> list[GuardTerm]:
    """The positive terms of ``cond``: its ``&&`` terms, or (``exit_``) the De Morgan negation of its ``||``
    terms; ``!X`` flips the sense of ``X``."""
    inner = _is_not(cond, src)
    if inner is not None:
        return _positive_terms(inner, src, not exit_)
    if not exit_:
        out: list[GuardTerm] = []
        for t in _split(cond, "&&", src):
            sub = _is_not(t, src)
            out += _positive_terms(t, src, False) if sub is not None else [_term(t, src, False)]
        return out
    out = []
    for t in _split(cond, "||", src):
        sub = _is_not(t, src)
        out += _positive_terms(sub, src, False) if sub is not None else [_term(t, src, True)]
    return out


def positive_terms(cond: Node, src: bytes, exit_: bool) -> list[GuardTerm]:
    """The positive :class:`GuardTerm` s of condition ``cond`` (an expression node, parentheses allowed): the
    terms under which the guarded code runs, for a guarded body (``exit_`` false) or an early exit such as ``if
    (cond) return;`` or ``continue;`` (``exit_`` true: the De Morgan negation)."""
    return _positive_terms(unwrap_parens(cond), src, exit_)


def enclosing_bounds(root: Node, start: int, end: int, src: bytes) -> dict[str, str]:
    """``{var: bound as written}`` of the ``var < bound`` terms that hold where the bytes ``start:end`` of ``src``
    run, from the conditions around them: each enclosing ``if`` whose consequence holds them and each ``?:`` whose
    true branch does (``(i < n) ? in[i] : 0.0f`` gives ``{"i": "n"}``; an ``else`` branch gives nothing). The
    innermost bound of a variable wins. An early ``return`` is not read here (:func:`first_bounds_guard`)."""
    node: Node | None = root.descendant_for_byte_range(start, end)
    out: dict[str, str] = {}
    while node is not None and node.parent is not None:
        parent = node.parent
        if parent.type in ("if_statement", "conditional_expression") and \
                node == parent.child_by_field_name("consequence"):
            cond = _condition(parent) if parent.type == "if_statement" else parent.child_by_field_name("condition")
            for t in positive_terms(cond, src, False) if cond is not None else ():
                if t.var is not None and t.bound is not None:
                    out.setdefault(t.var, text(t.bound, src))
        node = parent
    return out


def _is_bare_return(node: Node | None) -> bool:
    """``return;`` or ``{ return; }``."""
    body = _statements(node)
    return len(body) == 1 and body[0].type == "return_statement" and not body[0].named_child_count


def _ends_function(stmt: Node) -> bool:
    """Nothing runs after statement ``stmt`` in its function: it is the last statement of its block, and each
    enclosing statement up to the function's body is an ``if`` (or its ``else``) or a block that it ends (a loop,
    ``switch`` or ``do`` around it runs more)."""
    node = stmt
    while node.parent is not None:
        parent = node.parent
        if parent.type == "compound_statement":
            if any(c.start_byte >= node.end_byte for c in _statements(parent)):
                return False
            if parent.parent is not None and parent.parent.type == "function_definition":
                return True
        elif parent.type not in ("if_statement", "else_clause"):
            return False
        node = parent
    return False


def noop_else(stmt: Node) -> Node | None | str:
    """The ``else`` of ``if`` statement ``stmt`` when it changes nothing, ``None`` when there is no ``else``, or
    why it is not a no-op (one clause).

    A no-op ``else`` is empty (``else {}``, ``else ;``, anywhere) or a bare ``return;`` (``else return;``, ``else {
    return; }``) where nothing runs after ``stmt`` in the kernel (:func:`_ends_function`): returning there skips
    nothing, so the ``if`` runs exactly what it runs without its ``else``.

    Returns:
        the ``else_clause`` node, ``None``, or ``"the bounds check has an else branch that does work"`` / ``"…
        whose return skips the statements after the check"``.
    """
    alt = stmt.child_by_field_name("alternative")
    if alt is None:
        return None
    inner = next((c for c in alt.named_children if c.type != "comment"), None) if alt.type == "else_clause" else alt
    body = [b for b in _statements(inner) if not (b.type == "expression_statement" and not b.named_child_count)]
    if not body:
        return alt
    if _is_bare_return(inner):
        return alt if _ends_function(stmt) else "the bounds check's else branch returns before the statements after it"
    return "the bounds check has an else branch that does work"


def else_span(guard: BoundsGuard) -> tuple[int, int] | None:
    """The bytes ``(start, end)`` from the end of ``guard``'s consequence to the end of its no-op ``else``
    (:attr:`BoundsGuard.alternative`), which a rewrite that keeps the consequence but changes the ``if``'s header
    (into a loop's) deletes; ``None`` when the guard has no ``else``."""
    if guard.alternative is None:
        return None
    cons = guard.stmt.child_by_field_name("consequence")
    return (cons.end_byte if cons is not None else guard.alternative.start_byte), guard.alternative.end_byte


def bounds_guard(stmt: Node, following: Sequence[Node] | None, src: bytes) -> BoundsGuard | str:
    """Read the ``if`` statement ``stmt`` (``following``: the statements after it in its block) as a bounds
    check, or say why it is not one.

    Args:
        stmt: a tree-sitter ``if_statement`` node of a C/CUDA tree.
        following: the statements after ``stmt`` in the same block (the body of an early-return guard);
            ``None``: not wanted (a caller that reads only the condition; the body is then empty).
        src: the UTF-8 buffer the nodes index (byte offsets).

    Returns:
        the :class:`BoundsGuard`, or one sentence: not an ``if``, an ``else`` branch that does something
        (:func:`noop_else`), an early exit that does more than ``return;`` or has an ``else``, or an early return
        with nothing after it.
    """
    if stmt.type != "if_statement":
        return "it is not an `if` statement"
    cons = stmt.child_by_field_name("consequence")
    if _is_bare_return(cons) and stmt.child_by_field_name("alternative") is not None:
        return "the early return has an else branch (its statements can follow the `if` instead)"
    alt = noop_else(stmt)
    if isinstance(alt, str):
        return alt
    cond = _condition(stmt)
    if cond is None:
        return "the bounds check has no plain condition"
    if _is_bare_return(cons):
        if following is not None and not following:
            return "nothing follows the early return"
        terms = _positive_terms(cond, src, True)
        rest = tuple(following or ())
        return BoundsGuard(stmt, "return", tuple(terms), rest, "(" + " && ".join(t.text for t in terms) + ")",
                           rest[-1].end_byte if rest else stmt.end_byte)
    if any(n.type == "return_statement" for n in _statements(cons)):
        return "the bounds check's branch returns after other statements"
    terms = _positive_terms(cond, src, False)
    return BoundsGuard(stmt, "if", tuple(terms), tuple(_statements(cons)),
                       text(stmt.child_by_field_name("condition"), src), stmt.end_byte, alt)


def first_bounds_guard(stmts: Sequence[Node], src: bytes) -> tuple[int, BoundsGuard | str] | None:
    """The index in ``stmts`` of the first ``if`` statement and its reading by :func:`bounds_guard`, or ``None``
    when no statement of ``stmts`` is an ``if``."""
    for i, s in enumerate(stmts):
        if s.type == "if_statement":
            return i, bounds_guard(s, stmts[i + 1:], src)
    return None


def closing_bounds_guard(stmts: Sequence[Node], src: bytes) -> BoundsGuard | str:
    """The bounds check that guards the rest of a kernel body ``stmts``: its first ``if`` statement read by
    :func:`bounds_guard`, which must be the last statement in the guarded-body form (an early return guards
    everything after it); else why not (no ``if``, not a bounds check, statements after the guarded body)."""
    found = first_bounds_guard(stmts, src)
    if found is None:
        return "no bounds check"
    g = found[1]
    if isinstance(g, str):
        return g
    if g.form == "if" and stmts[-1] != g.stmt:
        return f"{describe_form(g, src)} is not the kernel's last statement"
    return g


def describe_form(guard: BoundsGuard, src: bytes) -> str:
    """How a refusal names the guard's form (``src``: the buffer its nodes index): ``"the guarded body `if (row <
    M && col < N) { … }`"`` or ``"the early return `if (row >= M || col >= N) return;`"`` (as written)."""
    cond = text(guard.stmt.child_by_field_name("condition"), src)
    if guard.form == "return":
        return f"the early return `if {cond} return;`"
    return f"the guarded body `if {cond} {{ … }}`"


def open_guarded_block(stmts: Sequence[Node], target: Node, src: bytes) -> tuple[list[Node], Node | None] | str | None:
    """The statements of a kernel body ``stmts`` with statement ``target`` among them, a guarded body opened: the
    guarded body and the early return are one normal form.

    ``if (c < n) { A; target; B; }`` as the body's last statement (no ``else``, or one that changes nothing:
    :func:`noop_else`) runs ``A; target; B;`` exactly when ``if (c >= n) return; A; target; B;`` does, so its statements are read as following the guard: the result
    is the statements before the ``if``, the ``if`` itself (the guard, read by :func:`bounds_guard` in its ``"if"``
    form), then the consequence's statements.

    Args:
        stmts: the statements of the kernel's body (:func:`~htam_core.source.analysis.syntax.statements`).
        target: the statement sought (a loop).
        src: the buffer the nodes index.

    Returns:
        ``(statements, None)`` when ``target`` is one of ``stmts``; ``(statements, the if)`` when it is a statement
        of a guarded body opened as above; one clause (``"is inside `if (c < n) { … }`, which has an else
        branch that does work"``) when it is in the consequence of a body-level ``if`` whose guard semantics differ from an early
        return (an ``else``, statements after the block, a ``return`` in it); ``None`` when it is elsewhere.
    """
    if target in stmts:
        return list(stmts), None
    owner = next((k for k, st in enumerate(stmts) if st.start_byte <= target.start_byte < st.end_byte), None)
    if owner is None or stmts[owner].type != "if_statement":
        return None
    stmt = stmts[owner]
    inner = _statements(stmt.child_by_field_name("consequence"))
    if target not in inner:
        return None
    where = f"is inside the guarded block `if {text(stmt.child_by_field_name('condition'), src)} {{ … }}`"
    alt = noop_else(stmt)
    if isinstance(alt, str):
        return f"{where}, which has an else branch that does work"
    if owner != len(stmts) - 1:
        return f"{where}, and statements follow that block (only a block that ends the kernel reads as an early return)"
    g = bounds_guard(stmt, None, src)
    if isinstance(g, str):
        return f"{where}: {g}"
    return [*stmts[:owner], stmt, *inner], stmt


def _exit_part(t: GuardTerm, src: bytes) -> str:
    """The negation of the positive term ``t`` as written for an exit: ``var >= bound``, a comparison negated,
    ``!x`` for a name, element, call or field, else ``!(term)``."""
    if t.var is not None and t.bound is not None:
        return f"{t.var} >= {text(t.bound, src)}"
    if t.compare is not None:
        left, op, right = t.compare
        return f"{text(left, src)} {_NEGATE[op]} {text(right, src)}"
    node = unwrap_parens(t.node)
    if not t.text.startswith("!(") and node.type in ("identifier", "subscript_expression", "call_expression",
                                                     "field_expression"):
        return f"!{t.text}"
    return f"!({t.text})"


def exit_condition(terms: Sequence[GuardTerm], src: bytes) -> str:
    """The condition under which code guarded by the positive ``terms`` does not run, as an early exit writes it:
    each term negated (:func:`_exit_part`: ``i >= n``, ``v[i] == 0``, ``!flag[i]``), ``||`` between them."""
    return " || ".join(_exit_part(t, src) for t in terms)


def early_return_text(guard: BoundsGuard, src: bytes) -> str:
    """``guard``'s condition as the early return it stands for: ``if (c >= n) return;`` for ``c < n`` or ``n > c``
    (each ``var < bound`` term as ``var >= bound``, another comparison negated, another term as ``!(term)``, ``||``
    between the terms); ``src`` is the buffer its nodes index."""
    return f"if ({exit_condition(guard.terms, src)}) return;"
