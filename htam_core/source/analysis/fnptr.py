"""Launches through function pointers: which kernels ``kernel<<<grid, block>>>(...)`` may run when ``kernel`` is
a pointer variable, or ``table[i]<<<...>>>`` an element of a table of kernels.

Teaching samples often pick a kernel at run time and launch it through a pointer (``kernel = &transposeNaive;``
in a ``switch`` over the kernels, then one ``kernel<<<grid, threads>>>(...)`` for all of them), or keep the
kernels in an array (``KernelFn table[] = {&copy, &naive};``). Such a call is a launch site of every kernel the
pointer is given: its grid, block and arguments are those kernels' launch configuration, and a step that edits
that configuration edits the launch of all of them (:func:`pointer_kernels` names them, so a step can refuse).

The values read: a declaration's initializer and every assignment of the variable (or of an element of the
table) in the launching function, and file-scope declarations of the same name; each value is a kernel name,
``&name``, ``name<T>`` or ``&ns::name<T, 4>``, or a brace list of those. Other values (a call's result, a
parameter) give no name: the launch is then read only for the kernels that are named.
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis.syntax import of_type, text, unwrap_parens

__all__ = ["pointer_kernels", "pointer_variable"]


def pointer_variable(fn: Node, src: bytes) -> str | None:
    """The variable a launch's callee ``fn`` reads a kernel from: ``kernel`` for ``kernel<<<...>>>``,
    ``table`` for ``table[i]<<<...>>>``; ``None`` for any other callee form."""
    fn = unwrap_parens(fn)
    if fn.type == "pointer_expression" and text(fn, src).startswith("*"):
        fn = unwrap_parens(fn.child_by_field_name("argument") or fn)
    if fn.type == "subscript_expression":
        fn = fn.child_by_field_name("argument") or fn
    return text(fn, src) if fn.type == "identifier" else None


def pointer_kernels(fn: Node, src: bytes) -> tuple[str, ...]:
    """The function names a launch through the pointer or table ``fn`` may run (see the module docstring), in
    the order they are first given; ``()`` when ``fn`` is no pointer variable or no value names a function.

    ``fn`` is the callee node of a ``<<<>>>`` call in the tree of ``src`` (UTF-8 bytes). Names are unqualified
    and without template arguments (``&ns::k<float>`` -> ``k``); the caller decides which are kernels."""
    var = pointer_variable(fn, src)
    if var is None:
        return ()
    out: list[str] = []
    for scope in _scopes(fn):
        for value in _values(scope, var, src, top=scope.parent is None):
            for name in _names(value, src):
                if name not in out and name != var:
                    out.append(name)
    return tuple(out)


def _scopes(node: Node) -> list[Node]:
    """The function that holds ``node`` (when it is in one) and the tree's root."""
    out: list[Node] = []
    cur: Node | None = node.parent
    while cur is not None:
        if cur.type == "function_definition" and not out:
            out.append(cur)
        if cur.parent is None:
            out.append(cur)
        cur = cur.parent
    return out


def _values(scope: Node, var: str, src: bytes, top: bool) -> list[Node]:
    """Initializers and assigned values of ``var`` (or of its elements) in ``scope``; at the root
    (``top``) only declarations outside any function count."""
    out: list[Node] = []
    for decl in (_top_level_inits(scope) if top else of_type(scope, "init_declarator")):
        value = decl.child_by_field_name("value")
        if value is not None and _declared_name(decl.child_by_field_name("declarator"), src) == var:
            out.append(value)
    if top:
        return out
    for asg in of_type(scope, "assignment_expression"):
        left, right = asg.child_by_field_name("left"), asg.child_by_field_name("right")
        if left is None or right is None:
            continue
        left = unwrap_parens(left)
        if left.type == "subscript_expression":
            left = left.child_by_field_name("argument") or left
        if left.type == "identifier" and text(left, src) == var:
            out.append(right)
    return out


def _top_level_inits(root: Node) -> list[Node]:
    """The ``init_declarator`` nodes of file-scope declarations (namespaces and ``extern "C"`` blocks included),
    read without walking into function bodies: the root is searched once per pointer launch."""
    out: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        for c in node.named_children:
            if c.type == "declaration":
                out.extend(d for d in c.children_by_field_name("declarator") if d.type == "init_declarator")
            elif c.type in ("namespace_definition", "linkage_specification", "declaration_list",
                            "preproc_if", "preproc_ifdef", "preproc_else"):
                stack.append(c)
    return out


def _declared_name(declarator: Node | None, src: bytes) -> str | None:
    """The identifier a declarator declares (``(*kernel)(...)``, ``(*table[])(...)``, ``table2[]``)."""
    cur = declarator
    while cur is not None:
        if cur.type == "identifier":
            return text(cur, src)
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            named = [c for c in cur.named_children if c.type != "comment"]
            nxt = named[0] if cur.type in ("parenthesized_declarator", "pointer_declarator") and named else None
        cur = nxt
    return None


def _names(value: Node, src: bytes) -> list[str]:
    """Function names a pointer value gives: ``k``, ``&k``, ``k<T>``, ``&ns::k``, a brace list of those."""
    value = unwrap_parens(value)
    if value.type == "initializer_list":
        return [n for v in value.named_children for n in _names(v, src)]
    if value.type == "pointer_expression" and text(value, src).startswith("&"):
        value = unwrap_parens(value.child_by_field_name("argument") or value)
    while value.type in ("qualified_identifier", "template_function"):
        nxt = value.child_by_field_name("name")
        if nxt is None:
            break
        value = nxt
    return [text(value, src)] if value.type == "identifier" else []
