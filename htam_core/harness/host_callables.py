"""Launches the host code reaches through a callable object: a lambda stored in a variable, a functor's ``operator()``.

Host code often wraps a launch in a callable and calls it later::

    auto launch = [&](double alpha, double beta) {
        const int threads = 128;
        k<<<(m + threads - 1) / threads, threads>>>(m, alpha, A, beta, y);
    };
    launch(1.5, 0.5);

    struct Launcher { dim3 block; void operator()(const float* A, float* G, int n) const { k<<<grid, block>>>(...); } };
    Launcher launch{dim3(16, 16)};
    launch(A, G, n);

The harness inference (:mod:`htam_core.harness.infer_cuda`) reads a launch's values in the scope the program has
there. For a lambda that is the scope at the lambda's first call after its definition (a ``[&]`` capture sees the
enclosing function's variables as they are then), with the lambda's parameters bound to that call's arguments and
its body run up to the launch (:func:`enter_lambda`). For a functor it is the scope at a call of an object of the
class, with ``operator()``'s parameters bound to the call's arguments and the class's data members to the object's
values: its brace initializer in member order, member assignments after it, or the members' default initializers
(:func:`functor_calls`, :func:`member_scope`).

Idea source: the C++ closure type ([expr.prim.lambda.closure]: a lambda is an object whose ``operator()`` runs
its body, captured entities by reference being the enclosing ones) and aggregate initialization
([dcl.init.aggr]: the brace list initializes the members in declaration order, the rest take their default member
initializers).
"""

from __future__ import annotations

import re
from typing import Any

import tree_sitter as ts

from htam_core.harness.cu_eval import (
    Dim3,
    Program,
    Scope,
    StructValue,
    Unknown,
    line_of,
)
from htam_core.source.parsing import node_text

__all__ = ["enclosing_lambda", "enter_lambda", "functor_calls", "functor_class", "lambda_call", "member_scope"]

_CLASS = ("struct_specifier", "class_specifier")


def enclosing_lambda(node: ts.Node, fn: ts.Node) -> ts.Node | None:
    """The innermost ``lambda_expression`` of host function ``fn`` that holds ``node`` (a launch), else ``None``."""
    cur = node.parent
    while cur is not None and cur != fn:
        if cur.type == "lambda_expression":
            return cur
        cur = cur.parent
    return None


def _lambda_variable(lam: ts.Node) -> str | None:
    """The variable a lambda is stored in (``auto launch = [&](...) {...};``), else ``None``."""
    parent = lam.parent
    if parent is None or parent.type != "init_declarator":
        return None
    name = parent.child_by_field_name("declarator")
    return node_text(name) if name is not None and name.type == "identifier" else None


def lambda_call(fn: ts.Node, lam: ts.Node) -> tuple[ts.Node | None, str]:
    """The first call of the lambda ``lam`` in ``fn`` after its definition (``launch(1.5, 0.5)``): ``(call, "")``, or
    ``(None, why)`` when the lambda is not stored in a variable or that variable is never called in ``fn``."""
    name = _lambda_variable(lam)
    if name is None:
        return None, (f"the launch is inside a lambda (line {line_of(lam)}) that is not stored in a variable, so htam "
                      "does not find its call")
    body = fn.child_by_field_name("body")
    stack, calls = [body] if body is not None else [], []
    while stack:
        n = stack.pop()
        if n.type == "call_expression" and n.start_byte >= lam.end_byte:
            f = n.child_by_field_name("function")
            if f is not None and f.type == "identifier" and node_text(f) == name:
                calls.append(n)
        stack.extend(n.named_children)
    if not calls:
        return None, f"the launch is inside the lambda `{name}` (line {line_of(lam)}), which is never called after it"
    return min(calls, key=lambda c: c.start_byte), ""


def enter_lambda(prog: Program, lam: ts.Node, call: ts.Node, outer: Scope, stop: int) -> Scope:
    """The scope at byte ``stop`` (a launch) in the body of lambda ``lam`` called by ``call``: the enclosing
    function's scope at the call (``outer``, run up to it by the caller), the lambda's parameters bound to the
    call's arguments, its body run up to ``stop``.

    Raises:
        Unreached: ``stop`` lies under a condition of the lambda's body that is false here.
    """
    inner = Scope(parent=outer)
    prog.bind_params(lam, call, outer, inner)
    body = lam.child_by_field_name("body")
    if body is not None:
        prog.run_until(body, inner, stop)
    return inner


def functor_class(fn: ts.Node) -> ts.Node | None:
    """The class (``struct_specifier``/``class_specifier`` with a name) whose ``operator()`` is ``fn``, else ``None``
    (``fn`` is another function, or an ``operator()`` defined outside its class)."""
    decl = fn.child_by_field_name("declarator")
    name = decl.child_by_field_name("declarator") if decl is not None else None
    if name is None or name.type != "operator_name" or not node_text(name).replace(" ", "").endswith("()"):
        return None
    cls = fn.parent.parent if fn.parent is not None and fn.parent.type == "field_declaration_list" else None
    return cls if cls is not None and cls.type in _CLASS and cls.child_by_field_name("name") is not None else None


def _class_name(cls: ts.Node) -> str:
    return node_text(cls.child_by_field_name("name")).split("::")[-1]


def functor_calls(prog: Program, cls: ts.Node) -> list[tuple[ts.Node, ts.Node, str]]:
    """``(host function, call, object)`` for each call of an object of class ``cls`` in a host function of the file:
    a variable declared there with the class as its type (``Launcher launch{...}; launch(A, G, n);``). The object is
    the variable's name. In file order."""
    name = _class_name(cls)
    out = []
    for fns in prog.functions.values():
        for fn in fns:
            body = fn.child_by_field_name("body")
            if body is None or fn == cls or cls.start_byte <= fn.start_byte < cls.end_byte:
                continue
            objects: set[str] = set()
            stack = [body]
            found: list[ts.Node] = []
            while stack:
                n = stack.pop()
                if n.type == "declaration" and re.sub(r"\b(const|struct|class)\b|\s", "", node_text(
                        n.child_by_field_name("type") or n)).split("::")[-1] == name:
                    for d in n.children_by_field_name("declarator"):
                        ident = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                        if ident is not None and ident.type == "identifier":
                            objects.add(node_text(ident))
                if n.type == "call_expression":
                    found.append(n)
                stack.extend(n.named_children)
            for c in sorted(found, key=lambda c: c.start_byte):
                f = c.child_by_field_name("function")
                if f is not None and f.type == "identifier" and node_text(f) in objects:
                    out.append((fn, c, node_text(f)))
    return sorted(out, key=lambda t: t[1].start_byte)


def _members(cls: ts.Node) -> list[tuple[str, str, ts.Node | None]]:
    """The data members of class ``cls`` in declaration order: ``(name, type as written, default initializer or
    None)``."""
    body = cls.child_by_field_name("body")
    out = []
    for f in body.named_children if body is not None else []:
        if f.type != "field_declaration" or "static" in node_text(f).split():
            continue
        default = f.child_by_field_name("default_value")
        ty = f.child_by_field_name("type")
        for d in f.children_by_field_name("declarator"):
            if d.type == "field_identifier":
                out.append((node_text(d), node_text(ty) if ty is not None else "", default))
    return out


def _member_value(v: Any, type_text: str) -> Any:
    """A member's value as its type reads it: a ``dim3`` member given a brace list of numbers is that ``dim3``."""
    if type_text.strip() == "dim3" and isinstance(v, tuple) and 0 < len(v) <= 3 and all(
            isinstance(c, int) for c in v):
        return Dim3(*v)
    return v


def member_scope(prog: Program, fn: ts.Node, cls: ts.Node, call: ts.Node, obj: str, outer: Scope) -> Scope:
    """The scope of ``operator()`` (``fn``) of class ``cls`` entered by ``call`` on object ``obj``: the class's data
    members valued as the object holds them (the brace initializer in member order, ``obj.m = v;`` assignments after
    it, else each member's default initializer; a member with none of these is unknown, with the reason), then
    ``fn``'s parameters bound to the call's arguments. Never raises: an unreadable value is kept as its reason."""
    try:
        value = outer.get(obj)
    except KeyError:
        value = None
    members = Scope(parent=prog.globals)
    fields = value.fields if isinstance(value, StructValue) and value.fields is not None else ()
    assigned = dict(value.assigned) if isinstance(value, StructValue) else {}
    for i, (name, type_text, default) in enumerate(_members(cls)):
        v: Any = _member_value(assigned.get(name, fields[i] if i < len(fields) else None), type_text)
        if v is None and default is not None:
            try:
                v = prog.ev(default.named_children[-1] if default.type == "initializer_list" and
                            default.named_child_count == 1 else default, members)
            except Unknown as e:
                v = e
        members.values[name] = v if v is not None else Unknown(
            f"member `{name}` of `{obj}` (line {line_of(call)}) has no value htam can read")
    inner = Scope(parent=members)
    prog.bind_params(fn, call, outer, inner)
    return inner
