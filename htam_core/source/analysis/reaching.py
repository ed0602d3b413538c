"""The value a local variable of a host function holds at a launch: its nearest dominating definition.

``int blocks = (n + threads - 1) / threads; k<<<blocks, threads>>>(...)`` and ``int gx, gy; gx = (w + 31) / 32;
... dim3 grid(gx, gy);`` hold the grid in a variable. :func:`reaching_value` gives the expression such a variable
holds where it is read: the last declaration with an initializer, or plain ``name = value;`` statement, before the
read, in a block that encloses the read (so it runs on every path to it), when nothing writes the variable between
the two (nor inside a loop around the read that the definition is outside of), and nothing writes a name the value
reads: the value's text then means, at the read, what the variable does.

Idea source: reaching definitions on straight-line code (Aho, Lam, Sethi, Ullman, "Compilers", 9.2.4), restricted
to definitions that dominate the read.
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis.syntax import of_type, text

__all__ = ["assigned_values", "reaching_definition", "reaching_value"]

_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
_WRITES = ("assignment_expression", "update_expression")


def _definitions(scope: Node, name: str, src: bytes) -> list[tuple[Node, Node]]:
    """``(statement, value)`` of each definition of ``name`` in ``scope``: an ``init_declarator`` with a value, or a
    plain ``name = value;`` expression statement."""
    out = []
    for d in of_type(scope, "init_declarator"):
        decl, v = d.child_by_field_name("declarator"), d.child_by_field_name("value")
        if decl is not None and _declared_name(decl, src) == name and v is not None \
                and v.type not in ("argument_list", "initializer_list") and d.parent is not None:
            out.append((d.parent, v))
    for a in of_type(scope, "assignment_expression"):
        left, op = a.child_by_field_name("left"), a.child_by_field_name("operator")
        if left is not None and left.type == "identifier" and text(left, src) == name and op is not None \
                and text(op, src) == "=" and a.parent is not None and a.parent.type == "expression_statement":
            out.append((a.parent, a.child_by_field_name("right") or a))
    return out


def _writes(scope: Node, names: set[str], src: bytes) -> list[Node]:
    """Every assignment, increment or address-taking of one of ``names`` in ``scope``."""
    out = []
    for a in of_type(scope, _WRITES):
        target = a.child_by_field_name("left") or a.child_by_field_name("argument")
        if target is not None and target.type == "identifier" and text(target, src) in names:
            out.append(a)
    for u in of_type(scope, "pointer_expression"):
        arg = u.child_by_field_name("argument")
        if text(u, src).startswith("&") and arg is not None and text(arg, src) in names:
            out.append(u)
    return out


def _encloses(node: Node, at: int) -> bool:
    return node.start_byte <= at < node.end_byte


def _dominates(stmt: Node, at: int) -> bool:
    """Whether statement ``stmt`` runs on every path to byte ``at``: it lies directly in a block that holds ``at``."""
    parent = stmt.parent
    return parent is not None and parent.type in ("compound_statement", "translation_unit") and _encloses(parent, at)


def _loops_around(scope: Node, at: int) -> list[Node]:
    return [lp for lp in of_type(scope, _LOOPS) if _encloses(lp, at)]


def _defining_scope(scope: Node, name: str, src: bytes) -> Node:
    """``scope``, or for a lambda that defines no ``name`` the function (or lambda) around it that does."""
    while scope.type == "lambda_expression" and not _definitions(scope, name, src):
        outer = scope.parent
        while outer is not None and outer.type not in ("function_definition", "lambda_expression"):
            outer = outer.parent
        if outer is None:
            return scope
        scope = outer
    return scope


def reaching_value(scope: Node, name: str, at: int, src: bytes) -> Node | None:
    """The expression the local ``name`` holds at byte ``at`` of ``scope`` (a host function; ``src`` its unit's
    bytes), by the module's rule, or ``None`` when no single definition reaches it so (a write between, a
    definition in a branch, a name of the value written after it). A lambda that defines no ``name`` reads the
    one of the function around it (a launch in ``AT_DISPATCH_*(..., [&] { k<<<blocks, threads>>>(...); })``
    reads the host function's ``blocks``). Errors: none."""
    found = _reaching(scope, name, at, src)
    if found is None:
        return None
    stmt, value, loops = found
    for w in _writes(_defining_scope(scope, name, src), _reads(value, src), src):
        if stmt.end_byte <= w.start_byte < at or any(_encloses(lp, w.start_byte) for lp in loops):
            return None
    return value


def reaching_definition(scope: Node, name: str, at: int, src: bytes) -> Node | None:
    """The value of the definition of ``name`` that reaches byte ``at`` (as :func:`reaching_value`), also when a
    name the value reads is written after it (``int blocks = (n + 255) / 256; n -= 1;``): where the value the
    variable holds at ``at`` was computed, which is where an edit of that value goes; its text need not mean the
    same at ``at``. ``None`` when no single dominating definition reaches ``at``. Errors: none."""
    found = _reaching(scope, name, at, src)
    return found[1] if found is not None else None


def _reads(value: Node, src: bytes) -> set[str]:
    """The names ``value`` reads."""
    return {text(n, src) for n in of_type(value, "identifier")}


def _reaching(scope: Node, name: str, at: int, src: bytes) -> tuple[Node, Node, list[Node]] | None:
    """``(statement, value, loops around at outside the statement)`` of the nearest dominating definition of
    ``name`` before ``at`` that nothing overwrites before ``at``, and whose value does not read ``name``."""
    scope = _defining_scope(scope, name, src)
    defs = [(s, v) for s, v in _definitions(scope, name, src) if s.end_byte <= at and _dominates(s, at)]
    if not defs:
        return None
    stmt, value = max(defs, key=lambda d: d[0].start_byte)
    loops = [lp for lp in _loops_around(scope, at) if not _encloses(lp, stmt.start_byte)]
    for w in _writes(scope, {name}, src):
        if _encloses(stmt, w.start_byte):
            continue
        if stmt.end_byte <= w.start_byte < at or any(_encloses(lp, w.start_byte) for lp in loops):
            return None
    if name in _reads(value, src):  # `g = g * 2`: the value reads the variable's earlier value
        return None
    return stmt, value, loops


def _spelled(node: Node | None, src: bytes) -> str:
    """The text of ``node`` with whitespace dropped (``buf . data`` is ``buf.data``)."""
    return "".join(text(node, src).split())


def assigned_values(scope: Node, target: str, src: bytes) -> list[Node]:
    """Every value given to ``target`` (a name, or a member spelled ``buf.data``/``b->p``, whitespace ignored)
    anywhere in ``scope``, before or after any point and on any path: each declaration's initializer and each
    plain ``target = value`` (in a branch, a loop, a ``for`` header too), in source order. The may-values beside
    :func:`reaching_value`'s must-value: what ``target`` may hold somewhere. Errors: none."""
    out: list[tuple[int, Node]] = []
    for d in of_type(scope, "init_declarator"):
        decl, v = d.child_by_field_name("declarator"), d.child_by_field_name("value")
        if decl is not None and v is not None and _declared_name(decl, src) == target:
            out.append((d.start_byte, v))
    for a in of_type(scope, "assignment_expression"):
        left, op, right = (a.child_by_field_name(f) for f in ("left", "operator", "right"))
        if op is not None and text(op, src) == "=" and right is not None and _spelled(left, src) == target:
            out.append((a.start_byte, right))
    return [v for _, v in sorted(out, key=lambda p: p[0])]


def _declared_name(decl: Node, src: bytes) -> str:
    """The name a declarator declares, through pointer declarators (``n``, ``*p``, ``*const p``); ``""`` for
    another declarator (a reference, ``float *&r = a``, names ``a``'s storage, not a value of its own)."""
    while decl.type == "pointer_declarator" and decl.child_by_field_name("declarator") is not None:
        decl = decl.child_by_field_name("declarator")  # type: ignore[assignment]
    return text(decl, src) if decl.type == "identifier" else ""
