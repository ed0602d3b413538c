"""Loops that keep a running mean and sum of squared deviations by Welford's recurrence.

Welford's update (B. P. Welford, "Note on a method for calculating corrected sums of squares and products",
Technometrics 4(3), 1962) keeps, per element ``v`` of a stream, the count ``n``, the mean ``m`` and ``M2`` (the sum
of squared deviations from the mean): ``n += 1; d = v - m; m += d / n; M2 += d * (v - m)``. Chan, Golub and LeVeque
("Updating formulae and a pairwise algorithm for computing sample variances", 1979) merge two such triples, so the
elements of a row may be split over threads and the triples combined after the loop. This module finds the loops that
keep the recurrence, from the tree alone, in the spellings a kernel writes it:

* the mean step ``m += d / N`` or ``m = m + d / N``, ``d`` being ``v - m`` inline or a local set to it in the loop;
* the count ``N`` either implicit, the loop variable plus a constant (``(float)(i + 1)``, ``i`` in a loop from 1,
  or a local set to it), or an explicit counter stepped by 1 earlier in the body (``n++``, ``n += 1.0f``,
  ``n = n + 1``);
* the M2 step ``M2 += d * (v - m)`` or ``M2 = M2 + d * d2`` after the mean step, one factor the deviation from the
  old mean, the other from the new (inline or a local ``d2 = v - m`` set after the mean step).

An exponential moving average (``m += a * (v - m)``), a constant divisor or any read of the statistics elsewhere in
the loop is no Welford recurrence. The facts layer keeps what this finds as
:class:`~htam_core.source.analysis.facts.WelfordStat`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.constants import literal_value
from htam_core.source.analysis.syntax import of_type, statements, strip_casts, text, unwrap_parens

__all__ = ["WelfordStep", "welford_steps"]

_JUMPS = ("break_statement", "continue_statement", "return_statement", "goto_statement")


@dataclass(frozen=True)
class WelfordStep:
    """One Welford recurrence found in a loop body (node offsets; :func:`welford_steps`).

    Attributes:
        mean: the running mean's name.
        m2: the running sum of squared deviations' name.
        count: the explicit counter's name, or ``None`` when the count is the loop variable plus a constant.
        value: the element's text as the deviations read it (``v``, ``(float)x[i]``).
        count_span: for an implicit count, the bytes of the expression ``var + k`` (node offsets), else ``None``.
        count_offset: for an implicit count, ``k`` (the count is ``var + k``), else ``0``.
    """

    mean: str
    m2: str
    count: str | None
    value: str
    count_span: tuple[int, int] | None
    count_offset: int


@dataclass(frozen=True)
class _Set:
    """A top-level statement of the body that sets a plain name: ``name op value`` (``op`` ``"="`` for a
    declaration, ``"++"`` for an increment, then ``value`` is ``None``)."""

    name: str
    op: str
    value: Node | None
    stmt: Node
    local: bool


def _norm(s: str) -> str:
    return "".join(s.split())


def _set_of(stmt: Node, src: bytes) -> _Set | None:
    """The :class:`_Set` of a statement ``T x = e;``, ``x op= e;``, ``x++;``/``++x;``, else ``None``."""
    if stmt.type == "declaration":
        ds = [d for d in stmt.named_children if d.type == "init_declarator"]
        if len(ds) != 1 or ds[0].child_by_field_name("declarator").type != "identifier":
            return None
        return _Set(text(ds[0].child_by_field_name("declarator"), src), "=", ds[0].child_by_field_name("value"),
                    stmt, True)
    if stmt.type != "expression_statement" or not stmt.named_children:
        return None
    e = unwrap_parens(stmt.named_children[0])
    if e.type == "update_expression":
        arg = unwrap_parens(e.child_by_field_name("argument"))
        op = text(e.child_by_field_name("operator"), src)
        return _Set(text(arg, src), "++", None, stmt, False) if arg.type == "identifier" and op == "++" else None
    if e.type != "assignment_expression":
        return None
    left = unwrap_parens(e.child_by_field_name("left"))
    if left.type != "identifier":
        return None
    return _Set(text(left, src), text(e.child_by_field_name("operator"), src), e.child_by_field_name("right"), stmt,
                False)


def _binary(node: Node, src: bytes) -> tuple[str, Node, Node] | None:
    """``(operator, left, right)`` of a binary expression (parentheses and casts stripped), else ``None``."""
    n = strip_casts(node)
    if n.type != "binary_expression":
        return None
    return text(n.child_by_field_name("operator"), src), n.child_by_field_name("left"), n.child_by_field_name("right")


class _Body:
    """The top-level statements of a loop body that set names, read in order."""

    def __init__(self, sets: list[_Set], src: bytes) -> None:
        self.sets, self.src = sets, src

    def def_before(self, name: str, k: int) -> tuple[int, _Set] | None:
        """The last ``=`` set of body-local ``name`` among the first ``k`` statements, with its index."""
        for j in range(k - 1, -1, -1):
            s = self.sets[j]
            if s.name == name:
                local = any(x.local and x.name == name for x in self.sets[: j + 1])
                return (j, s) if s.op == "=" and local and s.value is not None else None
        return None

    def diff(self, node: Node, m: str, k: int) -> tuple[str, int] | None:
        """``(value text, where)`` when ``node`` is ``v - m`` inline (``where`` = ``k``) or a local set to it by
        statement ``where`` < ``k``; else ``None``."""
        n = strip_casts(node)
        if n.type == "identifier":
            got = self.def_before(text(n, self.src), k)
            if got is None:
                return None
            inner = self.diff(got[1].value, m, got[0])  # type: ignore[arg-type]
            return (inner[0], got[0]) if inner is not None and inner[1] == got[0] else None
        b = _binary(n, self.src)
        if b is None or b[0] != "-" or text(strip_casts(b[2]), self.src) != m:
            return None
        return _norm(text(b[1], self.src)), k


def _count(body: _Body, node: Node, k: int, var: str | None) -> tuple[str | None, Node | None, int] | None:
    """The count divisor ``node`` of statement ``k``: ``(counter, None, 0)`` for an explicit counter stepped by 1
    earlier in the body; ``(None, expr, offset)`` for ``var + offset`` (inline or through a local); else ``None``."""
    src = body.src
    n = strip_casts(node)
    if n.type == "identifier":
        name = text(n, src)
        steps = [s for s in body.sets[:k] if s.name == name]
        if len(steps) == 1 and not steps[0].local and _is_unit_step(steps[0], src):
            return name, None, 0
        got = body.def_before(name, k)
        return _count(body, got[1].value, got[0], var) if got is not None else (  # type: ignore[arg-type]
            (None, n, 0) if name == var else None)
    b = _binary(n, src)
    if b is None or b[0] != "+" or var is None:
        return None
    for a, c in ((b[1], b[2]), (b[2], b[1])):
        off = literal_value(text(c, src))
        if text(strip_casts(a), src) == var and off is not None and float(off).is_integer():
            return None, n, int(off)
    return None


def _is_unit_step(s: _Set, src: bytes) -> bool:
    """``n++``, ``++n``, ``n += 1`` (``1.0f`` too), ``n = n + 1``."""
    if s.op == "++":
        return True
    if s.op == "+=" and s.value is not None:
        return literal_value(text(s.value, src)) == 1
    b = _binary(s.value, src) if s.op == "=" and s.value is not None else None
    return b is not None and b[0] == "+" and {_norm(text(b[1], src)), _norm(text(b[2], src))} in (
        {s.name, "1"}, {s.name, "1.0f"}, {s.name, "1.f"}, {s.name, "1.0"})


def _increment(s: _Set, src: bytes) -> Node | None:
    """What ``s`` adds to its name: ``x += e`` or ``x = x + e`` / ``x = e + x`` gives ``e``, else ``None``."""
    if s.value is None:
        return None
    if s.op == "+=":
        return s.value
    b = _binary(s.value, src) if s.op == "=" else None
    if b is None or b[0] != "+":
        return None
    for a, c in ((b[1], b[2]), (b[2], b[1])):
        if text(unwrap_parens(a), src) == s.name:
            return c
    return None


def _m2_step(body: _Body, k: int, m: str, old: tuple[str, int]) -> tuple[str, int] | None:
    """The M2 statement after the mean step ``k``: ``(name, index)``, one factor of its product the old deviation
    ``old`` (set before ``k``), the other ``v - m`` read after ``k``."""
    src = body.src
    for j in range(k + 1, len(body.sets)):
        s = body.sets[j]
        inc = _increment(s, src) if not s.local and s.name != m else None
        b = _binary(inc, src) if inc is not None else None
        if b is None or b[0] != "*":
            continue
        for a, c in ((b[1], b[2]), (b[2], b[1])):
            da, dc = body.diff(a, m, j), body.diff(c, m, j)
            if da is not None and dc is not None and da[0] == old[0] == dc[0] and da[1] < k <= dc[1] and \
                    strip_casts(a).type == "identifier":
                return s.name, j
    return None


def _reads_only_in(body_node: Node, name: str, allowed: list[Node], src: bytes) -> bool:
    """Every mention of ``name`` under ``body_node`` lies in one of the ``allowed`` statements."""
    return all(any(a.start_byte <= r.start_byte < a.end_byte for a in allowed)
               for r in of_type(body_node, "identifier") if text(r, src) == name)


def _step_at(body: _Body, k: int, var: str | None) -> WelfordStep | None:
    """The Welford recurrence whose mean step is statement ``k``, or ``None``."""
    s, src = body.sets[k], body.src
    inc = _increment(s, src) if not s.local else None
    b = _binary(inc, src) if inc is not None else None
    if b is None or b[0] != "/":
        return None
    if strip_casts(b[1]).type != "identifier":  # inline `(v - m) / n`: the M2 step needs the old deviation named
        return None
    old = body.diff(b[1], s.name, k)
    cnt = _count(body, b[2], k, var) if old is not None else None
    if old is None or cnt is None:
        return None
    m2 = _m2_step(body, k, s.name, old)
    if m2 is None:
        return None
    counter, expr, off = cnt
    return WelfordStep(s.name, m2[0], counter, old[0],
                       (expr.start_byte, expr.end_byte) if expr is not None else None, off)


def welford_steps(loop: Node, src: bytes, var: str | None) -> list[WelfordStep]:
    """The Welford recurrences ``loop`` keeps (a ``for``/``while`` node of a CUDA tree; ``src`` the buffer its
    offsets index; ``var`` the loop variable, for an implicit count), each once. The body must be a block with no
    jump; the mean, M2 and counter are set only by their steps and read only by them and by the deviations' locals;
    the element read does not read them. Empty when the loop keeps none."""
    body_node = loop.child_by_field_name("body")
    if body_node is None or body_node.type != "compound_statement" or of_type(body_node, _JUMPS):
        return []
    stmts = statements(body_node)
    body = _Body([x for x in (_set_of(s, src) for s in stmts) if x is not None], src)
    out: list[WelfordStep] = []
    for k in range(len(body.sets)):
        st = _step_at(body, k, var)
        if st is None or not _sound(body, body_node, st):
            continue
        out.append(st)
    return out


def _sound(body: _Body, body_node: Node, st: WelfordStep) -> bool:
    """The statistics of ``st`` are set only by their own steps and read only there and by the deviations, and the
    element read reads none of them."""
    src = body.src
    writers = {n: [s for s in body.sets if s.name == n] for n in (st.mean, st.m2, st.count) if n}
    if any(len(w) != 1 for w in writers.values()):
        return False
    devs = [s.stmt for s in body.sets if s.local and s.value is not None and
            body.diff(s.value, st.mean, len(body.sets)) is not None]
    allowed = [w[0].stmt for w in writers.values()] + devs
    names = [n for n in (st.mean, st.m2, st.count) if n]
    if any(n in {_norm(x) for x in _identifiers(st.value)} for n in names):
        return False
    # every write of the names in the body is one of the steps (no nested writes elsewhere)
    for a in of_type(body_node, ("assignment_expression", "update_expression")):
        tgt = a.child_by_field_name("left") or a.child_by_field_name("argument")
        if tgt is not None and text(unwrap_parens(tgt), src) in names and \
                not any(w.start_byte <= a.start_byte < w.end_byte for w in allowed[: len(writers)]):
            return False
    return all(_reads_only_in(body_node, n, allowed, src) for n in names)


def _identifiers(value: str) -> list[str]:
    """The identifier-like words of a text."""
    out, cur = [], ""
    for ch in value + " ":
        if ch.isalnum() or ch == "_":
            cur += ch
        else:
            if cur and not cur[0].isdigit():
                out.append(cur)
            cur = ""
    return out
