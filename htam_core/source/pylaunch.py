"""cupy launches of a CUDA kernel read as CUDA: each ``kern((grid,), (block,), (args...))`` call as the ``<<<>>>``
launch of a host function, so the analysis layer reads its grid and block like any launch and a step that changes
the launch edits the Python call.

A cupy kernel object (``kern = cp.RawKernel(src, "vadd")``, ``kern = module.get_function("vadd")``) is launched
with ``kern(grid, block, args, shared_mem=0)``, ``grid`` and ``block`` an int or a tuple of up to three ints.
:func:`cupy_launches` finds those calls in one Python file and writes each as CUDA text in pieces
(:class:`Piece`): the grid and block components, and the single assignments of the names they use
(``BLOCK = 256`` becomes ``const int BLOCK = 256;``), are *mapped* pieces whose C text has the length of the
Python text it stands for (``//`` is written ``/ ``), so a byte of the C text is a byte of the Python file; the
rest (the host function around the launch) is glue no step may edit. :func:`python_text` writes a step's new
C text of a mapped piece back as Python (``/`` as ``//``), or refuses what Python would read otherwise.

The grid and block may also be names assigned such a tuple once (``threads = (16, 16)``; its items are then the
components, where they are assigned). A component is read only when it is an integer expression Python and C
evaluate alike: integer literals, names,
``+ - * // % << >>`` and parentheses, no unary minus (``-(-n // 256)`` rounds the other way in C), no calls or
attributes (``math.ceil``, ``x.size``). A launch with another component is left to the caller (it is still
found, not editable). A name assigned once before the launch (in its function, else at module level) to such an
expression is declared with its value; it is mapped only when every use of the name in the file is in this
launch's configuration, so a step never changes a value some other code reads (:attr:`Piece.fixed` says why). Other names are ``int``
parameters of the host function (unknown values), the kernel's arguments parameters of the kernel's types.

Where the idea comes from: cupy's ``RawKernel.__call__(grid, block, args, *, shared_mem=0)`` (cupy documentation,
"User-Defined Kernels"); CUDA's ``dim3`` launch configuration; Python's floor division against C's truncating
one (they agree on non-negative operands).
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass

#: Python tokens a mapped component may hold besides names and integer literals
_OPS = frozenset({"+", "-", "*", "//", "%", "<<", ">>", "(", ")"})
#: C tokens a step's new text of a mapped piece may hold (read back as Python)
_C_TOKEN = re.compile(r"\s+|(?P<num>\d+)[uUlL]*(?![\w.])|(?P<name>[A-Za-z_]\w*)|<<|>>|[-+*/%()]")
#: names Python and C spell differently or that C reserves: a component using one is not read
_RESERVED = frozenset({"int", "float", "double", "char", "long", "short", "unsigned", "signed", "void", "const",
                       "auto", "true", "false", "this", "new", "delete", "operator", "template", "typename",
                       "True", "False", "None", "dim3", "sizeof", "static", "struct", "class", "return"})


@dataclass(frozen=True)
class Piece:
    """A piece of the CUDA text that stands for one cupy launch.

    Attributes:
        text: the C text.
        span: the Python file's bytes it stands for, byte for byte (a mapped piece), or ``None`` (glue).
        fixed: why a step may not edit the mapped piece (its value is read elsewhere too), or ``""``.
    """

    text: str
    span: tuple[int, int] | None = None
    fixed: str = ""


@dataclass(frozen=True)
class CupyLaunch:
    """One cupy call launching the kernel, written as CUDA.

    Attributes:
        span: the call's bytes in the file (UTF-8 offsets, end exclusive).
        line: 1-based line of the call.
        grid, block: the grid and block arguments as written in Python.
        pieces: a host function whose ``<<<>>>`` launch is the call (mapped pieces and glue, in order).
        launch_piece: index in ``pieces`` of the first grid component (a mapped piece inside the launch).
    """

    span: tuple[int, int]
    line: int
    grid: str
    block: str
    pieces: tuple[Piece, ...]
    launch_piece: int


def python_text(c_text: str) -> str | None:
    """A step's new C text of a mapped piece written as Python: ``/`` becomes ``//`` and integer suffixes go;
    ``None`` when the text holds anything else (a call, a cast, ``dim3``, a ternary), which Python would read
    differently or not at all."""
    out, pos = [], 0
    while pos < len(c_text):
        m = _C_TOKEN.match(c_text, pos)
        if m is None:
            return None
        tok = m.group(0)
        if m.group("name") and (m.group("name") in _RESERVED or c_text[m.end():].lstrip().startswith("(")):
            return None
        out.append("//" if tok == "/" else m.group("num") or tok)
        pos = m.end()
        if tok == "/" and c_text.startswith("  ", pos):  # ``//`` was read as ``/ ``: the space is the slash's
            pos += 1
    return "".join(out)


def cupy_handles(tree: ast.Module, name: str) -> set[str]:
    """Names bound to a cupy kernel object of kernel ``name`` in ``tree``: ``x = cp.RawKernel(src, "name")``
    (or ``name="name"``), ``x = module.get_function("name")``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        call = node.value
        fn = call.func
        fname = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        named = [k.value for k in call.keywords if k.arg == "name"]
        picked = call.args[:1] if fname == "get_function" else (call.args[1:2] + named if fname == "RawKernel" else [])
        if any(isinstance(a, ast.Constant) and a.value == name for a in picked):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def _dotted(node: ast.expr) -> str:
    """``h`` or ``module.h`` for a name or an attribute of a name, else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


def handle_calls(tree: ast.Module, handles: set[str]) -> list[ast.Call]:
    """Calls ``h(grid, block, ...)`` of the handles (names, or ``module.h``), in source order."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _dotted(n.func) in handles
             and len(n.args) >= 2]
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def imported_handles(tree: ast.Module, module: str, handles: set[str]) -> set[str]:
    """How the Python file ``tree`` names the kernel objects ``handles`` of module ``module`` it imports:
    ``from module import h`` (``h``, or its ``as`` name), ``import module`` (``module.h``, or ``m.h`` for
    ``import module as m``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == module and not node.level:
            out.update(a.asname or a.name for a in node.names if a.name in handles)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[-1] == module:
                    local = a.asname or a.name
                    out.update(f"{local}.{h}" for h in handles)
    return out


class _File:
    """One Python file's text, tree and byte offsets."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        self.text = text
        self.tree = tree
        self.starts = [0]
        for ln in text.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(ln.encode("utf-8")))
        self.data = text.encode("utf-8")

    def span(self, node: ast.AST) -> tuple[int, int]:
        """File bytes of ``node`` (``ast`` columns are UTF-8 offsets)."""
        return (self.starts[node.lineno - 1] + node.col_offset,  # type: ignore[attr-defined]
                self.starts[(node.end_lineno or node.lineno) - 1] + (node.end_col_offset or 0))  # type: ignore[attr-defined]

    def source(self, node: ast.AST) -> str:
        """``node``'s text."""
        s, e = self.span(node)
        return self.data[s:e].decode("utf-8")


def _c_form(src: str) -> tuple[str, set[str]] | None:
    """``src`` (a Python expression) as C text of the same length and the names it uses, or ``None`` when it is not
    an integer expression both languages read alike (see the module docstring)."""
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(src).readline)
                if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT,
                                  tokenize.DEDENT)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    if any(t.start[0] != 1 or t.end[0] != 1 for t in toks):
        return None  # one line only: C and Python break lines differently
    names: set[str] = set()
    prev = None
    for i, t in enumerate(toks):
        if t.type == tokenize.NAME:
            nxt = toks[i + 1].string if i + 1 < len(toks) else ""
            if t.string in _RESERVED or keyword.iskeyword(t.string) or nxt in ("(", ".") or not t.string.isascii():
                return None
            names.add(t.string)
        elif t.type == tokenize.NUMBER:
            if not re.fullmatch(r"[1-9]\d*|0", t.string):
                return None
        elif t.type != tokenize.OP or t.string not in _OPS:
            return None
        elif t.string == "-" and (prev is None or (prev.type == tokenize.OP and prev.string != ")")):
            return None  # unary minus
        prev = t
    return src.replace("//", "/ "), names


@dataclass
class _Scope:
    """What the names of one launch's configuration stand for."""

    file: _File
    call: ast.Call
    func: ast.FunctionDef | ast.AsyncFunctionDef | None
    decls: list[tuple[str, ast.expr]]
    free: list[str]
    used: list[tuple[int, int]]


def _enclosing(tree: ast.Module, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost function whose lines hold ``call``."""
    best = None
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.lineno <= call.lineno <= (n.end_lineno or 0):
            if best is None or n.lineno >= best.lineno:
                best = n
    return best


def _single_assign(nodes: Sequence[ast.AST], name: str, before: int) -> ast.expr | None | bool:
    """The value of the one plain assignment ``name = value`` among ``nodes`` (walked), on a line before
    ``before``; ``None`` when there is no store of ``name``; ``False`` when there are several or another kind."""
    stores = [n for root in nodes for n in ast.walk(root)
              if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)]
    if not stores:
        return None
    assigns = [n for root in nodes for n in ast.walk(root) if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    if len(stores) != 1 or len(assigns) != 1 or assigns[0].lineno >= before:
        return False
    return assigns[0].value


def _value_of(scope: _Scope, name: str) -> ast.expr | None:
    """The value ``name`` holds at the launch: its single plain assignment before it, in the launch's function,
    else at module level; ``None`` for a parameter, a name assigned otherwise or more than once, or none."""
    func = scope.func
    params = {a.arg for a in (func.args.args + func.args.kwonlyargs + func.args.posonlyargs)} if func else set()
    if name in params:
        return None
    value: ast.expr | None | bool = _single_assign(func.body, name, scope.call.lineno) if func is not None else None
    if value is None:
        value = _single_assign(scope.file.tree.body, name, scope.call.lineno if func is None else 1 << 30)
        if value is not None and value is not False and func is not None \
                and any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(scope.file.tree)):
            value = False
    return value if isinstance(value, ast.expr) else None


def _resolve(scope: _Scope, name: str, depth: int = 0) -> None:
    """Declare ``name`` (its single assignment, its own names first) or make it a free parameter."""
    if name in scope.free or any(n == name for n, _ in scope.decls):
        return
    value = _value_of(scope, name)
    form = _c_form(scope.file.source(value)) if value is not None and depth < 8 else None
    if form is None or not isinstance(value, ast.expr):
        scope.free.append(name)
        return
    for n in sorted(form[1]):
        _resolve(scope, n, depth + 1)
    scope.decls.append((name, value))


def _mapped(scope: _Scope, name: str, spans: list[tuple[int, int]]) -> bool:
    """Whether every read of ``name`` in the file lies in ``spans`` (the launch's configuration and the values
    declared for it)."""
    for n in ast.walk(scope.file.tree):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
            s, e = scope.file.span(n)
            if not any(a <= s and e <= b for a, b in spans):
                return False
    return True


def _components(scope: _Scope, node: ast.expr) -> tuple[list[ast.expr], str]:
    """The components of a cupy grid/block argument (a tuple or list of ints, one int, or a name assigned such a
    tuple once, ``threads = (16, 16)``), and why a step may not edit them (the name is read elsewhere too)."""
    if isinstance(node, ast.Name):
        value = _value_of(scope, node.id)
        if isinstance(value, ast.Tuple | ast.List):
            fixed = "" if _mapped(scope, node.id, [scope.file.span(node)]) else \
                f"{node.id} is read elsewhere in the file too, so the cupy launch's {node.id} (line {value.lineno}) " \
                "is not changed for it"
            return list(value.elts), fixed
    return (list(node.elts) if isinstance(node, ast.Tuple | ast.List) else [node]), ""


def _arg_names(f: _File, call: ast.Call, nparams: int) -> list[str | None]:
    """The kernel arguments of ``call`` as names (``cp.int32(n)`` is ``n``), ``None`` for another expression."""
    args = call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "args"), None)
    items = list(args.elts) if isinstance(args, ast.Tuple | ast.List) else []
    out: list[str | None] = []
    for a in items[:nparams]:
        if isinstance(a, ast.Call) and len(a.args) == 1 and not a.keywords:
            a = a.args[0]
        out.append(a.id if isinstance(a, ast.Name) and a.id not in _RESERVED else None)
    return out + [None] * (nparams - len(out))


def cupy_launches(text: str, name: str, params: Sequence[tuple[str, str]], handles: set[str] | None = None
                  ) -> list[CupyLaunch]:
    """The cupy launches of kernel ``name`` in the Python file ``text``, each written as CUDA.

    Args:
        text: the Python file.
        name: the kernel's name (the string given to ``RawKernel``/``get_function``).
        params: the kernel's parameters as ``(name, type as written)``, in order.
        handles: the names of the kernel objects to follow (default: those this file binds, :func:`cupy_handles`).

    Returns:
        The launches whose every grid and block component is readable, in source order; ``[]`` for a file that
        does not parse.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    f = _File(text, tree)
    out = []
    for call in handle_calls(tree, cupy_handles(tree, name) if handles is None else handles):
        one = _launch(f, call, name, params)
        if one is not None:
            out.append(one)
    return out


def _launch(f: _File, call: ast.Call, name: str, params: Sequence[tuple[str, str]]) -> CupyLaunch | None:
    """One call as CUDA pieces, or ``None`` when a component is not readable."""
    scope = _Scope(f, call, _enclosing(f.tree, call), [], [], [])
    (grid, grid_fixed), (block, block_fixed) = _components(scope, call.args[0]), _components(scope, call.args[1])
    if not 1 <= len(grid) <= 3 or not 1 <= len(block) <= 3:
        return None
    forms = [_c_form(f.source(c)) for c in grid + block]
    if any(x is None for x in forms):
        return None
    for form in forms:
        for n in sorted(form[1]):  # type: ignore[index]
            _resolve(scope, n)
    spans = [f.span(c) for c in grid + block] + [f.span(v) for _, v in scope.decls]
    args = _arg_names(f, call, len(params))
    types = {a: params[i][1] for i, a in enumerate(args) if a is not None}
    free = list(dict.fromkeys([*scope.free, *(a for a in args if a is not None)]))
    if any(n in _RESERVED or n == name or not n.isidentifier() for n in free):
        return None
    decl = ", ".join(f"{types.get(n, 'int')} {n}" for n in free if not any(d == n for d, _ in scope.decls))
    pieces = [Piece("")]  # the host function's head, written once its parameters are known
    for n, v in scope.decls:
        value = _c_form(f.source(v))[0]  # type: ignore[index]
        fixed = "" if _mapped(scope, n, spans) else \
            f"{n} is read elsewhere in the file too, so the cupy launch's value of {n} (line {v.lineno}) is not " \
            "changed for it"
        pieces += [Piece(f"    const int {n} = "), Piece(value, f.span(v), fixed), Piece(";\n")]
    pieces.append(Piece(f"    {name}<<<"))
    first = len(pieces)
    for comps, sep, fixed in ((grid, ", ", grid_fixed), (block, "", block_fixed)):
        pieces.append(Piece("dim3(" if len(comps) > 1 else ""))
        for j, c in enumerate(comps):
            pieces += [Piece(_c_form(f.source(c))[0], f.span(c), fixed),  # type: ignore[index]
                       Piece(", " if j < len(comps) - 1 else "")]
        pieces.append(Piece((")" if len(comps) > 1 else "") + sep))
    smem = next((k.value for k in call.keywords if k.arg == "shared_mem"), None)
    if smem is not None:  # the dynamic shared memory: its value when a literal, else unknown
        known = isinstance(smem, ast.Constant) and isinstance(smem.value, int) and smem.value >= 0
        pieces.append(Piece(f", {smem.value}" if known else ", htam_shared_mem"))  # type: ignore[union-attr]
        decl += "" if known else (", " if decl else "") + "int htam_shared_mem"
    pieces.append(Piece(">>>(" + ", ".join(a if a is not None else "{}" for a in args) + ");\n}\n"))
    pieces[0] = Piece(f"\nstatic void htam_cupy_{call.lineno}_{call.col_offset}({decl}) {{\n")
    return CupyLaunch(f.span(call), call.lineno, f.source(call.args[0]), f.source(call.args[1]), tuple(pieces),
                      first + 1)
