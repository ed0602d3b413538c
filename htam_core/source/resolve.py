"""Resolve launch-configuration expressions through local definitions.

``k<<<grid, block>>>`` usually names variables (``dim3 grid(...)``, ``const int threads = 256``)
and ``k[grid](BLOCK_SIZE=BLOCK_SIZE)`` names Python locals. The resolved form replaces a bare
name by the expression it was last given before the launch, in the launching function (then at
file scope). In CUDA, names of compile-time constants inside the result (``#define N 256``,
``const``/``constexpr`` integers set from a literal) are replaced by their literal value, so that
``dim3 grid(DIV_UP(cols, kBlock))`` becomes ``dim3(DIV_UP(cols, 128))``. Python values are
resolved one name deep only (Python names can be rebound anywhere). Nothing is evaluated.
"""

from __future__ import annotations

import tree_sitter as ts

from htam_core.source.analysis.constants import dict_lookup, evaluate, literal_value
from htam_core.source.analysis.syntax import file_scope_nodes
from htam_core.source.frames import Frame
from htam_core.source.parsing import captures, node_text


def const_eval(node: ts.Node | None, consts: dict[str, str]) -> int | float | None:
    """Value of a C constant expression with names looked up in ``consts`` (name -> value text); the
    evaluator is :func:`htam_core.source.analysis.constants.evaluate`."""
    return evaluate(node, dict_lookup(consts))


Q_C_DECL = """
(init_declarator declarator: (identifier) @name value: (_) @value) @init
(declaration type: (_) @type declarator: (function_declarator declarator: (identifier) @fname
  parameters: (parameter_list) @fparams)) @fdecl
(assignment_expression left: (identifier) @aname operator: "=" right: (_) @avalue) @assign
"""


class CudaResolver:
    """Resolve CUDA launch-config expressions of one tree (see module docstring).

    Args:
        frame: the parsed buffer.
        root: the tree's root.
        macros: object-like ``#define`` name -> value text of the file.
    """

    def __init__(self, frame: Frame, root: ts.Node, macros: dict[str, str]) -> None:
        self.frame = frame
        self.root = root
        self.file_consts: dict[str, str] = {}
        for name, value in macros.items():
            if literal_value(value) is not None:
                self.file_consts[name] = value.strip()
        self._scopes: dict[int, list[tuple[int, str, str, ts.Node, bool]]] = {}
        for decl in file_scope_nodes(root, "declaration"):
            for name, _pos, prefix, node, const in self._defs(decl, top_level=True):
                value = const_eval(node, self.file_consts) if const and not prefix else None
                if value is not None:
                    self.file_consts.setdefault(name, str(value))
        self.consts_key = "\n".join(f"{k}={v}" for k, v in sorted(self.file_consts.items()))

    def _defs(self, scope: ts.Node, top_level: bool = False) -> list[tuple[str, int, str, ts.Node, bool]]:
        """``(name, position, prefix, value node, is const)`` definitions under ``scope``."""
        out: list[tuple[str, int, str, ts.Node, bool]] = []
        caps = captures("cuda", Q_C_DECL, scope)
        for init in caps.get("init", []):
            decl = init.parent
            if decl is None or decl.type != "declaration":
                continue
            if top_level and _inside_function(decl):
                continue
            name = node_text(init.child_by_field_name("declarator"))
            value = init.child_by_field_name("value")
            if value is None:
                continue
            quals = {node_text(c) for c in decl.children if c.type == "type_qualifier"}
            const = bool(quals & {"const", "constexpr"})
            prefix = ""
            if value.type in ("argument_list", "initializer_list"):
                prefix = node_text(decl.child_by_field_name("type"))
            out.append((name, init.start_byte, prefix, value, const))
        seen: set[int] = set()
        for decl in caps.get("fdecl", []):
            if top_level or decl.start_byte in seen:
                continue
            seen.add(decl.start_byte)
            # every declarator of `dim3 grid(a, b), threads(c, d);`, not only the first
            for fd in decl.children_by_field_name("declarator"):
                if fd.type != "function_declarator":
                    continue
                name = node_text(fd.child_by_field_name("declarator"))
                params = fd.child_by_field_name("parameters")
                if params is not None:
                    out.append((name, fd.start_byte, node_text(decl.child_by_field_name("type")), params, False))
        for assign in caps.get("assign", []):
            if top_level:
                continue
            left = assign.child_by_field_name("left")
            right = assign.child_by_field_name("right")
            if left is not None and right is not None:
                out.append((node_text(left), assign.start_byte, "", right, False))
        out.sort(key=lambda d: d[1])
        return out

    def _local_defs(self, call: ts.Node) -> list[tuple[int, str, str, ts.Node, bool]]:
        fn = call.parent
        while fn is not None and fn.type != "function_definition":
            fn = fn.parent
        if fn is None:
            return []
        key = fn.start_byte
        if key not in self._scopes:
            self._scopes[key] = [(d[1], d[0], d[2], d[3], d[4]) for d in self._defs(fn)]
        return self._scopes[key]

    def _consts_before(self, call: ts.Node) -> dict[str, str]:
        consts = dict(self.file_consts)
        for pos, name, prefix, node, const in self._local_defs(call):
            if pos < call.start_byte and const and not prefix:
                value = const_eval(node, consts)
                if value is not None:
                    consts[name] = str(value)
        return consts

    def resolve(self, expr: ts.Node, call: ts.Node) -> str:
        """The resolved source text of launch-config expression ``expr`` of launch ``call``."""
        defs = self._local_defs(call)
        prefix, node = "", expr
        for _ in range(4):
            if node.type not in ("identifier", "type_identifier") or prefix:
                break
            name = node_text(node)
            found = None
            for pos, dname, dprefix, dnode, _const in defs:
                if dname == name and pos < call.start_byte:
                    found = (dprefix, dnode)
            if found is None:
                break
            prefix, node = found
        return prefix + _substitute(node, self._consts_before(call))

    def resolve_template_args(self, args: ts.Node, call: ts.Node) -> str:
        """Template argument list with compile-time constants replaced by their values."""
        return _substitute(args, self._consts_before(call))


def _inside_function(node: ts.Node) -> bool:
    cur = node.parent
    while cur is not None:
        if cur.type in ("function_definition", "compound_statement"):
            return True
        cur = cur.parent
    return False


def _substitute(node: ts.Node, consts: dict[str, str]) -> str:
    """Text of ``node`` (whitespace-normalized) with constant names replaced by their values."""
    base = node.start_byte
    text = node.text or b""
    edits: list[tuple[int, int, str]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("identifier", "type_identifier") and node_text(n) in consts:
            parent = n.parent
            if parent is not None and parent.type == "call_expression" and parent.child_by_field_name("function") == n:
                continue
            edits.append((n.start_byte - base, n.end_byte - base, consts[node_text(n)]))
            continue
        stack.extend(n.children)
    for s, e, v in sorted(edits, reverse=True):
        text = text[:s] + v.encode() + text[e:]
    out = text.decode("utf-8", errors="replace")
    return " ".join(out.split())


Q_PY_DEFS = """
(assignment left: (identifier) @name right: (_) @value) @assign
(function_definition name: (identifier) @fname parameters: (parameters) @params body: (block . (return_statement (_) @ret) .)) @fdef
"""


class PythonResolver:
    """Resolve Triton launch-config expressions one name deep (see module docstring)."""

    def __init__(self, root: ts.Node) -> None:
        self.root = root
        self._scopes: dict[int, list[tuple[int, str, str]]] = {}
        #: set when a resolution looked at module scope (the launch-site cache then skips it)
        self.used_module = False

    def _defs(self, scope: ts.Node) -> list[tuple[int, str, str]]:
        key = scope.start_byte if scope.type != "module" else -1
        if key in self._scopes:
            return self._scopes[key]
        out: list[tuple[int, str, str]] = []
        caps = captures("python", Q_PY_DEFS, scope)
        for assign in caps.get("assign", []):
            if scope.type == "module" and _py_inside_function(assign):
                continue
            out.append((assign.start_byte, node_text(assign.child_by_field_name("left")),
                        " ".join(node_text(assign.child_by_field_name("right")).split())))
        for fdef in caps.get("fdef", []):
            if fdef == scope:
                continue
            if scope.type == "module" and _py_inside_function(fdef):
                continue
            params = node_text(fdef.child_by_field_name("parameters"))[1:-1]
            body = fdef.child_by_field_name("body")
            ret = body.named_children[0].named_children[0] if body is not None else None
            if ret is not None:
                out.append((fdef.start_byte, node_text(fdef.child_by_field_name("name")),
                            f"lambda {params}: {' '.join(node_text(ret).split())}"))
        out.sort()
        self._scopes[key] = out
        return out

    def resolve(self, expr: ts.Node, call: ts.Node) -> str:
        """Resolved text of ``expr`` used in launch ``call``."""
        text = " ".join(node_text(expr).split())
        if expr.type != "identifier":
            return text
        scopes: list[ts.Node] = []
        cur = call.parent
        while cur is not None:
            if cur.type == "function_definition":
                scopes.append(cur)
            cur = cur.parent
        scopes.append(self.root)
        for scope in scopes:
            if scope is self.root or scope.type == "module":
                self.used_module = True
            found = None
            for pos, name, value in self._defs(scope):
                if name == text and (pos < call.start_byte or scope.type == "module"):
                    found = value
            if found is not None:
                return found
        return text


def _py_inside_function(node: ts.Node) -> bool:
    cur = node.parent
    while cur is not None:
        if cur.type in ("function_definition", "class_definition"):
            return True
        cur = cur.parent
    return False
