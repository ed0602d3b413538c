"""Loop headers and trip counts: the one trip counter of the project.

:func:`count_iterations` runs the header ``for (v = start; v CMP bound; v UPDATE= step)`` on integers
(so ``s >>= 1`` reduction trees and ``i *= 2`` count right); :func:`symbolic_trip_count` gives the
closed form ``ceil((bound - start) / step)`` (``<``), ``floor((bound - start) / step) + 1`` (``<=``) and
their mirror images for decreasing loops, ``ceil(log_s(bound / start))`` for ``v *= s``, as sympy expressions over runtime names (assuming the
loop runs at least once: a symbolic count is not clamped at 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy
from tree_sitter import Node

from htam_core.source.analysis.syntax import strip_casts, unwrap_parens

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


def c_for_header(loop: Node, t: Callable[[Node | None], str], expr: Callable[[Node | None], Any]) -> dict[str, Any]:
    """The parts of a C ``for`` header: ``var``, ``start``, ``cmp`` (variable on the left), ``bound``, ``update``
    (``"+"``, ``"-"``, ``"*"``, ``"<<"``, ``">>"``, ``"/"``) and ``step``; keys are missing when unreadable.

    Args:
        loop: a ``for_statement`` node (anything else gives ``{}``).
        t: source text of a node.
        expr: the value of an expression node in the caller's terms (a sympy expression, a constant), or ``None``.
    """
    out: dict[str, Any] = {}
    if loop.type != "for_statement":
        return out
    init, cond, upd = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
    var = None
    if init is not None and init.type == "declaration":
        ds = [d for d in init.named_children if d.type == "init_declarator"]
        if len(ds) == 1:
            var = t(ds[0].child_by_field_name("declarator"))
            out["start"] = expr(ds[0].child_by_field_name("value"))
    elif init is not None and init.type == "assignment_expression":
        var = t(init.child_by_field_name("left"))
        out["start"] = expr(init.child_by_field_name("right"))
    if var is None:
        return out
    out["var"] = var
    cond = unwrap_parens(cond) if cond is not None else None
    if cond is not None and cond.type == "binary_expression":
        left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        op = t(cond.child_by_field_name("operator"))
        if left is not None and t(strip_casts(left)) == var:
            out["cmp"], out["bound"] = op, expr(right)
        elif right is not None and t(strip_casts(right)) == var:
            out["cmp"], out["bound"] = FLIP.get(op, op), expr(left)
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
    return out
