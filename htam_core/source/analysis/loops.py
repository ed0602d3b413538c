"""Loop headers and trip counts: the one trip counter of the project.

:func:`count_iterations` runs the header ``for (v = start; v CMP bound; v UPDATE= step)`` on integers
(so ``s >>= 1`` reduction trees and ``i *= 2`` count right); :func:`symbolic_trip_count` gives the
closed form ``ceil((bound - start) / step)`` (``<``), ``floor((bound - start) / step) + 1`` (``<=``) and
their mirror images for decreasing loops, ``ceil(log_s(bound / start))`` for ``v *= s``, as sympy expressions over runtime names (assuming the
loop runs at least once: a symbolic count is not clamped at 0).

A ``for`` header has one reader, :func:`for_parts` (its parts as nodes: the variable, its declared type, the
start, the bound with the variable on either side, the update); the other readers are views of it:
:func:`c_for_header` (values, for the loop facts and the trip counter), :func:`counted_header` (source spans and
texts for a rewrite that edits the header, the bound normalized to an exclusive one: ``k <= q`` counts to
``q + 1``; ``LoopFact.header``), :func:`~htam_core.source.analysis.counted.counted_loop` (nodes, for the steps
that rewrite a loop in any of its forms) and the grid-stride reader. :func:`c_while_header` reads a ``while`` or
``do`` loop as the counted ``for`` loop it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sympy
from tree_sitter import Node

from htam_core.source.analysis.syntax import of_type, statements, strip_casts, unwrap_parens

_CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "!=": lambda a, b: a != b}
_UPD = {"+": lambda a, s: a + s, "-": lambda a, s: a - s, "*": lambda a, s: a * s,
        "<<": lambda a, s: a << s, ">>": lambda a, s: a >> s, "/": lambda a, s: int(a / s) if s else a}
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!=", "==": "=="}


def count_iterations(start: int, cmp: str, bound: int, update: str, step: int, limit: int = 1 << 20) -> int | None:
    """Iterations of ``for (v = start; v cmp bound; v update= step)``; ``None`` when an operator is unknown,
    the loop does not progress, or it runs more than ``limit`` times."""
    c, u = _CMP.get(cmp), _UPD.get(update)
    if c is None or u is None or not all(isinstance(x, int) for x in (start, bound, step)):
        return None
    n, v = 0, start
    while c(v, bound):
        n += 1
        nv = u(v, step)
        if nv == v or n > limit:
            return None
        v = nv
    return n


def symbolic_trip_count(start: sympy.Expr | None, cmp: str | None, bound: sympy.Expr | None,
                        update: str | None, step: sympy.Expr | None) -> sympy.Expr | None:
    """Trip count as a sympy expression (see module docstring); integer when everything is constant."""
    if start is None or bound is None or step is None or cmp is None or update is None:
        return None
    if all(isinstance(x, sympy.Integer) for x in (start, bound, step)):
        n = count_iterations(int(start), cmp, int(bound), update, int(step))
        return sympy.Integer(n) if n is not None else None
    if step == 0:
        return None
    if update == "+" and cmp == "<":
        return sympy.ceiling((bound - start) / step)
    if update == "+" and cmp == "<=":
        return sympy.floor((bound - start) / step) + 1
    if update == "+" and cmp == "!=":
        return (bound - start) / step
    if update == "-" and cmp == ">":
        return sympy.ceiling((start - bound) / step)
    if update == "-" and cmp == ">=":
        return sympy.floor((start - bound) / step) + 1
    if update in (">>", "/") and cmp == ">" and bound == 0 and step in (1, 2):
        return sympy.floor(sympy.log(start, 2)) + 1
    if update in ("*", "<<") and cmp == "<" and step.is_Integer and int(step) > 0:
        base = 2 ** int(step) if update == "<<" else int(step)
        if base > 1:
            return sympy.ceiling(sympy.log(bound / start, base))
    return None


@dataclass(frozen=True)
class ForParts:
    """The parts of a C ``for`` header as syntax nodes: the one reader of a ``for`` header, which every other view
    builds on (:func:`c_for_header`: values; :func:`counted_header`: file spans and the exclusive bound;
    :func:`~htam_core.source.analysis.counted.counted_loop`: nodes for a rewrite).

    Attributes:
        loop: the ``for_statement``.
        init: the initializer (a declaration, an assignment, any expression), or ``None`` when empty.
        declared: ``init`` is a declaration with exactly one initialized declarator (``T v = a``, ``T v = a, w``).
        var: the loop variable: that declarator's name as written, or the target of an initializing assignment
            (``for (v = a; ...)``); ``None`` otherwise.
        var_node: the node ``var`` is read from (the declarator, or the assignment's left side), or ``None``.
        type: for a declaration, its declared type as written, qualifiers included (``"unsigned int"``); else ``""``.
        start: the starting value (the declarator's initializer, or the assignment's right side), or ``None``.
        cond: the condition as written, or ``None`` when empty.
        bound: the other side of the condition when it is a binary expression with ``var`` on one side (casts
            stripped, parentheses opened), else ``None``.
        cmp: the condition's operator with ``var`` on the left (``n > k`` reads ``<``), else ``None``.
        update: the update expression, or ``None`` when empty.
    """

    loop: Node
    init: Node | None
    declared: bool
    var: str | None
    var_node: Node | None
    type: str
    start: Node | None
    cond: Node | None
    bound: Node | None
    cmp: str | None
    update: Node | None

    @property
    def test(self) -> Node | None:
        """The condition with parentheses stripped (``(s < n)`` reads ``s < n``), or ``None``."""
        return unwrap_parens(self.cond) if self.cond is not None else None


def declared_type(decl: Node, t: Callable[[Node | None], str]) -> str:
    """The type a declaration gives its names as written, qualifiers included: the text of its parts before its
    first declarator (``"unsigned int"`` of ``unsigned int s = 1;``, ``"const float"``), words joined by one space.

    Args:
        decl: a ``declaration`` node.
        t: source text of a node.
    """
    first = decl.child_by_field_name("declarator")
    end = first.start_byte if first is not None else decl.end_byte
    return " ".join(t(c) for c in decl.children if c.end_byte <= end and c.type != ";")


def for_parts(loop: Node, t: Callable[[Node | None], str]) -> ForParts | None:
    """The :class:`ForParts` of a ``for`` loop (``None`` for any other statement).

    Args:
        loop: a syntax node (a ``for_statement`` gives its parts).
        t: source text of a node.
    """
    if loop.type != "for_statement":
        return None
    init, cond, upd = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
    var_node = start = None
    typ, declared = "", False
    if init is not None and init.type == "declaration":
        ds = [d for d in init.named_children if d.type == "init_declarator"]
        if len(ds) == 1:
            declared, var_node, start = True, ds[0].child_by_field_name("declarator"), ds[0].child_by_field_name("value")
            typ = declared_type(init, t)
    elif init is not None and init.type == "assignment_expression":
        var_node, start = init.child_by_field_name("left"), init.child_by_field_name("right")
    var = t(var_node) if var_node is not None else None
    cmp, bound = _compare(cond, var, t) if var is not None else (None, None)
    return ForParts(loop, init, declared, var, var_node, typ, start, cond, bound, cmp, upd)


def c_for_header(loop: Node, t: Callable[[Node | None], str], expr: Callable[[Node | None], Any]) -> dict[str, Any]:
    """The parts of a C ``for`` header (:func:`for_parts`) as values: ``var``, ``start``, ``cmp`` (variable on the
    left), ``bound``, ``update`` (``"+"``, ``"-"``, ``"*"``, ``"<<"``, ``">>"``, ``"/"``) and ``step``; keys are
    missing when unreadable.

    Args:
        loop: a ``for_statement`` node (anything else gives ``{}``).
        t: source text of a node.
        expr: the value of an expression node in the caller's terms (a sympy expression, a constant), or ``None``.
    """
    p = for_parts(loop, t)
    out: dict[str, Any] = {}
    if p is None or p.var is None:
        return out
    out["start"], out["var"] = expr(p.start), p.var
    if p.cmp is not None:
        out["cmp"], out["bound"] = p.cmp, expr(p.bound)
    _read_update(p.update, p.var, t, expr, out)
    if "cmp" not in out:
        out.update(_two_variable(loop, p.var, t, expr))
    return out


def _compare(cond: Node | None, var: str | None, t: Callable[[Node | None], str]) -> tuple[str | None, Node | None]:
    """``(cmp, bound)`` of a loop condition ``cond`` that compares ``var`` (either side; ``cmp`` with ``var`` on
    the left), else ``(None, None)``. Parentheses and a ``condition_clause`` around it are opened."""
    cond = unwrap_parens(cond) if cond is not None else None
    if cond is not None and cond.type == "condition_clause" and cond.named_child_count == 1:
        cond = unwrap_parens(cond.named_children[0])
    if var is None or cond is None or cond.type != "binary_expression":
        return None, None
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    op = t(cond.child_by_field_name("operator"))
    if left is not None and t(strip_casts(left)) == var:
        return op, right
    if right is not None and t(strip_casts(right)) == var:
        return FLIP.get(op, op), left
    return None, None


def _two_variable(loop: Node, var: str, t: Callable[[Node | None], str], expr: Callable[[Node | None], Any]
                  ) -> dict[str, Any]:
    """The header of PyTorch's two-variable loop ``for (T i = c; c < n; c += s, i = c)`` read over ``i``:
    ``start`` the value ``c`` holds at entry (its last setting before the loop), ``cmp``/``bound`` from the test of
    ``c``, ``update``/``step`` from its stride, and ``counter`` (``c``); ``{}`` for any other header. The copy
    ``i = c`` in the update (after the stride, as is written) and the start ``i = c`` make ``i`` equal to ``c`` at
    every test, so the loop visits the same ``i`` as ``for (T i = start; i < n; i += s)``; a body that writes ``c``
    or ``i`` is not read so (ATen's ``CUDA_KERNEL_LOOP_TYPE``)."""
    init, cond, upd = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
    ds = [d for d in init.named_children if d.type == "init_declarator"] if init is not None else []
    value = strip_casts(unwrap_parens(ds[0].child_by_field_name("value"))) if len(ds) == 1 else None
    upd = unwrap_parens(upd) if upd is not None else None
    if value is None or value.type != "identifier" or upd is None or upd.type != "comma_expression":
        return {}
    counter = t(value)
    step, copy = upd.child_by_field_name("left"), upd.child_by_field_name("right")
    right = copy.child_by_field_name("right") if copy is not None and copy.type == "assignment_expression" else None
    if right is None or _target(copy, t) != var or t(copy.child_by_field_name("operator")) != "=" or \
            t(strip_casts(unwrap_parens(right))) != counter:
        return {}
    out: dict[str, Any] = {}
    _read_condition(cond, counter, t, expr, out)
    out.pop("bound_node", None)
    _read_update(step, counter, t, expr, out)
    before = _init_before(loop, counter, t)
    body = loop.child_by_field_name("body")
    written = {_target(w, t) for w in of_type(body, _WRITES)} if body is not None else set()
    if "cmp" not in out or "update" not in out or before is None or written & {var, counter}:
        return {}
    return {**out, "start": expr(before[1]), "counter": counter}


def _read_condition(cond: Node | None, var: str, t: Callable[[Node | None], str], expr: Callable[[Node | None], Any],
                    out: dict[str, Any]) -> None:
    """Set ``out["cmp"]``/``out["bound"]``/``out["bound_node"]`` from the loop condition ``cond`` when it compares
    ``var`` (either side: :func:`_compare`)."""
    cmp, bound = _compare(cond, var, t)
    if cmp is not None:
        out["cmp"], out["bound"], out["bound_node"] = cmp, expr(bound), bound


def _read_update(upd: Node | None, var: str, t: Callable[[Node | None], str], expr: Callable[[Node | None], Any],
                 out: dict[str, Any]) -> None:
    """Set ``out["update"]``/``out["step"]`` from the update expression ``upd`` of ``var`` (``++v``, ``v += k``,
    ``v <<= 1``, ``v = v * 2``)."""
    if upd is not None and upd.type == "update_expression" and t(upd.child_by_field_name("argument")) == var:
        out["update"], out["step"] = ("+" if "++" in t(upd) else "-"), sympy.Integer(1)
    elif upd is not None and upd.type == "assignment_expression" and t(upd.child_by_field_name("left")) == var:
        op = t(upd.child_by_field_name("operator"))
        right = upd.child_by_field_name("right")
        if op == "=":  # i = i + s
            r = strip_casts(right) if right is not None else None
            if r is not None and r.type == "binary_expression" and t(r.child_by_field_name("left")) == var:
                out["update"] = t(r.child_by_field_name("operator"))
                out["step"] = expr(r.child_by_field_name("right"))
        else:
            out["update"], out["step"] = op[:-1], expr(right)


def c_while_header(loop: Node, t: Callable[[Node | None], str], expr: Callable[[Node | None], Any],
                   const: Callable[[Node | None], int | None] | None = None) -> dict[str, Any]:
    """A ``while`` or ``do``/``while`` loop read as the counted ``for`` loop it is: the same keys as
    :func:`c_for_header`, plus ``init`` (the statement before the loop that sets the variable) and ``step_stmt``
    (the body's last statement, the update), or ``{"refusal": why}`` for a loop of that shape that cannot be
    read so; ``{}`` for any other loop.

    The shape: ``T v = a; ... while (v CMP b) { ...; v OP= k; }`` or ``T v = a; ... do { ...; v OP= k; } while
    (v CMP b);``, the variable set by a declaration or a plain assignment before the loop in the same block (later
    statements up to the loop leave it alone), written in the loop only by the body's last statement, and no
    ``continue`` of the loop (which would skip the update, where a ``for`` loop runs it). A ``do`` loop runs its
    body once before its first test, so it is the ``for`` loop only when that test is provably true (``a`` and
    ``b`` integer constants with ``a CMP b``); otherwise it is refused.

    Args:
        loop: a ``while_statement`` or ``do_statement`` node.
        t: source text of a node.
        expr: the value of an expression node in the caller's terms (a sympy expression, a constant), or ``None``.
        const: an expression node's integer value when it is a compile-time constant (``BLOCK >> 1``), or ``None``;
            the ``do`` loop's first test reads it where ``expr`` gives no integer.
    """
    if loop.type not in ("while_statement", "do_statement"):
        return {}
    stmts = statements(loop.child_by_field_name("body"))
    last = stmts[-1] if stmts else None
    if last is None or last.type != "expression_statement" or last.named_child_count != 1:
        return {}
    upd = last.named_children[0]
    var = _target(upd, t)
    out: dict[str, Any] = {}
    if var is None:
        return {}
    _read_update(upd, var, t, expr, out)
    if "update" not in out or any(w != upd and _target(w, t) == var for w in of_type(loop, _WRITES)):
        return {}
    _read_condition(loop.child_by_field_name("condition"), var, t, expr, out)
    init = _init_before(loop, var, t)
    if "cmp" not in out or init is None:
        return {}
    kind = "do" if loop.type == "do_statement" else "while"
    if any(_owner(c) == loop for c in of_type(loop, "continue_statement")):
        return {"refusal": f"the {kind} loop's `continue` skips the update `{t(upd)}` at the end of its body"}
    out.update(var=var, start=expr(init[1]), init=init[0], step_stmt=last)
    bound_node = out.pop("bound_node", None)
    first = {**out, **({"start": const(init[1]), "bound": const(bound_node)} if const is not None else {})}
    if kind == "do" and not _first_test_holds(out) and not _first_test_holds(first):
        return {"refusal": f"the do/while loop runs its body once before testing `{t(loop.child_by_field_name('condition'))}`"
                           f", which is not provably true at entry ({var} = {t(init[1])}), so it is not read as a "
                           "counted loop"}
    return out


_WRITES = ("assignment_expression", "update_expression")


def _target(w: Node, t: Callable[[Node | None], str]) -> str | None:
    """The name an assignment or increment writes (``s`` of ``s <<= 1``, ``++s``), else ``None``."""
    if w.type == "update_expression":
        n = w.child_by_field_name("argument")
    elif w.type == "assignment_expression":
        n = w.child_by_field_name("left")
    else:
        return None
    n = unwrap_parens(n) if n is not None else None
    return t(n) if n is not None and n.type == "identifier" else None


def _owner(node: Node) -> Node | None:
    """The innermost loop (or ``switch``, for a ``break``) around ``node``."""
    p = node.parent
    while p is not None and p.type not in ("for_statement", "while_statement", "do_statement", "for_range_loop"):
        p = p.parent
    return p


def _init_before(loop: Node, var: str, t: Callable[[Node | None], str]) -> tuple[Node, Node] | None:
    """``(statement, value)`` of the last statement before ``loop`` in its block that sets ``var``: a one-name
    declaration ``T var = value;`` or ``var = value;``; ``None`` when another statement writes ``var`` or takes
    its address after it, or there is none."""
    prev = loop.prev_named_sibling
    while prev is not None:
        if prev.type == "declaration":
            ds = [d for d in prev.named_children if d.type in ("init_declarator", "identifier")]
            names = [t(d.child_by_field_name("declarator")) if d.type == "init_declarator" else t(d) for d in ds]
            if var in names:
                value = ds[0].child_by_field_name("value") if len(ds) == 1 and ds[0].type == "init_declarator" else None
                return (prev, value) if value is not None else None
        if prev.type == "expression_statement" and prev.named_child_count == 1:
            a = prev.named_children[0]
            if a.type == "assignment_expression" and t(a.child_by_field_name("operator")) == "=" and \
                    _target(a, t) == var:
                return prev, a.child_by_field_name("right")
        if any(_target(w, t) == var for w in of_type(prev, _WRITES)) or any(
                t(p) == f"&{var}" or t(p).replace(" ", "") == f"&{var}" for p in of_type(prev, "pointer_expression")):
            return None
        prev = prev.prev_named_sibling
    return None


def _first_test_holds(h: dict[str, Any]) -> bool:
    """The loop condition ``var cmp bound`` is true for the start value (both integer constants)."""
    start, bound, c = h.get("start"), h.get("bound"), _CMP.get(h.get("cmp") or "")
    ints = all(isinstance(x, (int, sympy.Integer)) for x in (start, bound))
    return bool(c is not None and ints and c(int(start), int(bound)))  # type: ignore[arg-type]


@dataclass(frozen=True)
class CountedHeader:
    """The header of ``for (T var = start; var CMP bound; UPDATE)`` as source spans, for a rewrite that edits it.

    Attributes:
        var: the loop variable, declared by the header.
        type: the variable's declared type as written (``"int"``, ``"int64_t"``).
        start: bytes of the starting value (the caller's offsets, :func:`counted_header`'s ``span``).
        bound: bytes of the bound expression as written (either side of the comparison).
        cond: bytes of the whole condition (``k <= q``).
        update: bytes of the update expression (``++k``, ``k += 1``).
        cmp: the comparison with the variable on the left (``"<"``, ``"<="``, ``"!="``, ...).
        unit_step: the update adds 1 to the variable (``++k``, ``k++``, ``k += 1``, ``k = k + 1``).
        exclusive: the exclusive upper bound as C text when the loop counts up by 1 to a bound: the bound as
            written for ``k < n``, ``n > k`` and ``k != n`` (which stop at the same ``k`` when the start is not
            past ``n``), ``(q) + 1`` for ``k <= q`` and ``q >= k``; ``None`` for any other loop.
    """

    var: str
    type: str
    start: tuple[int, int]
    bound: tuple[int, int]
    cond: tuple[int, int]
    update: tuple[int, int]
    cmp: str
    unit_step: bool
    exclusive: str | None


def _unit_step(upd: Node, var: str, t: Callable[[Node | None], str]) -> bool:
    """``upd`` adds 1 to ``var``: ``++var``, ``var++``, ``var += 1``, ``var = var + 1`` (spaces ignored)."""
    return t(upd).replace(" ", "") in (f"++{var}", f"{var}++", f"{var}+=1", f"{var}={var}+1")


def counted_header(loop: Node, t: Callable[[Node | None], str],
                   span: Callable[[Node], tuple[int, int]]) -> CountedHeader | str:
    """The :class:`CountedHeader` of a ``for`` loop that declares its variable with a starting value and compares
    it with a bound (either side), or why not (one clause naming what is missing); a view of :func:`for_parts`.

    Args:
        loop: a ``for_statement`` node.
        t: source text of a node.
        span: the bytes of a node in the caller's offsets (file offsets for the analysis facts).
    """
    p = for_parts(loop, t)
    if p is None or p.init is None or p.cond is None or p.update is None:
        return "is not a counted for loop"
    if not p.declared or p.start is None or p.var is None:
        return "does not declare its variable with a starting value"
    test = p.test
    if p.cmp not in FLIP or p.bound is None or test is None:
        return f"does not compare {p.var} with a bound"
    unit = _unit_step(p.update, p.var, t)
    exclusive = None
    if unit and p.cmp in ("<", "!="):
        exclusive = t(p.bound)
    elif unit and p.cmp == "<=":
        exclusive = f"({t(p.bound)}) + 1"
    return CountedHeader(p.var, p.type, span(p.start), span(p.bound), span(test), span(p.update), p.cmp, unit,
                         exclusive)
