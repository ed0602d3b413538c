"""The one grammar and query cache of the analysis layer, and the node helpers every fact builder uses.

Grammars and compiled queries come from :mod:`htam_core.source.parsing` (compiled once per process).
This module adds what the fact builders and the transforms share on top of it: parsing a buffer,
walking nodes, stripping parentheses and casts, and the CUDA ``dim3 g(a, b)`` parse fix. All offsets
are byte offsets into UTF-8 text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tree_sitter import Node, Tree

from htam_core.source.analysis.builtins import is_load_builtin
from htam_core.source.analysis.macros import transparent_argument
from htam_core.source.parsing import GrammarName, captures, language, matches, new_parser, node_text, query
from htam_core.source.positions import parse_bytes
from htam_core.source.preproc import parse_view

__all__ = [
    "PURE_BUILTIN_CALLS", "GrammarName", "brace_dim3", "captures", "effect_free", "exact_node",
    "initializer_effect_free", "language", "loop_pragma", "matches", "node_text", "of_type", "parse", "parse_cuda",
    "query", "smallest_covering", "statement_start", "statements", "side_effect_free", "strip_casts", "strip_pointer", "text",
    "unwrap_parens", "walk",
]

#: The tree-sitter node types of a C/CUDA loop statement a ``#pragma`` can belong to.
_PRAGMA_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")


def parse(src: bytes, grammar: GrammarName) -> Tree:
    """Parse UTF-8 ``src`` with ``grammar`` (a fresh parser each call: parsers are not thread-safe).

    Lone ``\r`` line endings are parsed as ``\n`` (:func:`htam_core.source.positions.parse_bytes`: same
    length, so offsets hold); texts are read from ``src`` itself, so an edit keeps the file's line endings.
    CUDA qualifier macros (``#define RESTRICT __restrict__``) are parsed as the qualifiers they stand for
    (:func:`htam_core.source.preproc.parse_view`, same length too)."""
    data = parse_bytes(src)
    return new_parser(grammar).parse(parse_view(data) if grammar == "cuda" else data)


def text(node: Node | None, src: bytes) -> str:
    """Source text of ``node`` in buffer ``src`` (``""`` for ``None``)."""
    if node is None:
        return ""
    return src[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def walk(node: Node) -> Iterator[Node]:
    """Pre-order walk over ``node`` and all its descendants (named and anonymous)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def of_type(node: Node, types: str | Iterable[str]) -> list[Node]:
    """Descendants of ``node`` (itself included) whose type is in ``types``, in source order."""
    wanted = {types} if isinstance(types, str) else set(types)
    return [n for n in walk(node) if n.type in wanted]


#: The nodes that hold file-scope declarations: namespaces, ``extern "C"`` blocks, template declarations,
#: preprocessor branches and the parser's error recovery.
FILE_SCOPES = frozenset({"translation_unit", "namespace_definition", "declaration_list", "linkage_specification",
                         "template_declaration", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                         "ERROR"})


def file_scope_nodes(root: Node, types: str | Iterable[str]) -> list[Node]:
    """The nodes of ``types`` at file scope under ``root`` (a translation unit): in namespaces, ``extern "C"``
    blocks, template declarations and preprocessor branches too (:data:`FILE_SCOPES`), never inside a function
    body. Scope by scope, outer before inner (the unit's own nodes first), each scope's in source order; a node
    of ``types`` is not walked into."""
    wanted = {types} if isinstance(types, str) else set(types)
    out: list[Node] = []
    queue = [root]
    for scope in queue:
        for c in scope.named_children:
            if c.type in wanted:
                out.append(c)
            elif c.type in FILE_SCOPES:
                queue.append(c)
    return out


def smallest_covering(root: Node, start: int, end: int, types: Iterable[str]) -> Node | None:
    """The smallest node of one of ``types`` that covers the byte range ``[start, end)``, or ``None``."""
    wanted = set(types)
    n: Node | None = root.descendant_for_byte_range(start, max(start, end - 1))
    while n is not None:
        if n.type in wanted and n.start_byte <= start and n.end_byte >= end:
            return n
        n = n.parent
    return None


def exact_node(root: Node, start: int, end: int, types: Iterable[str] = ()) -> Node | None:
    """The node spanning exactly bytes ``[start, end)`` (the outermost one of ``types`` when given), or ``None``."""
    wanted = set(types)
    n: Node | None = root.descendant_for_byte_range(start, max(start, end - 1))
    while n is not None and (n.start_byte > start or n.end_byte < end):
        n = n.parent
    while n is not None and n.start_byte == start and n.end_byte == end:
        if not wanted or n.type in wanted:
            return n
        n = n.parent
    return None


def loop_pragma(node: Node) -> Node | None:
    """The ``#pragma`` line (a ``preproc_call`` node: ``#pragma unroll``, ``#pragma unroll 4``) that directly
    precedes the loop statement ``node`` in its block, comments between them allowed, else ``None`` (also when
    ``node`` is not a loop).

    A pragma before a loop belongs to that loop (CUDA C++ Programming Guide, "#pragma unroll": it applies to the
    loop that immediately follows), so the statement reader :func:`statements` attaches it to the loop rather than
    listing it as a statement of its own."""
    if node.type not in _PRAGMA_LOOPS:
        return None
    prev = node.prev_named_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_named_sibling
    if prev is None or prev.type != "preproc_call":
        return None
    directive = prev.child_by_field_name("directive")
    return prev if directive is not None and directive.text == b"#pragma" else None


def _attached_pragma(node: Node) -> bool:
    """``node`` is a ``#pragma`` that directly precedes a loop (comments between allowed): part of that loop."""
    if node.type != "preproc_call":
        return False
    nxt = node.next_named_sibling
    while nxt is not None and nxt.type == "comment":
        nxt = nxt.next_named_sibling
    return nxt is not None and loop_pragma(nxt) == node


def statements(block: Node | None) -> list[Node]:
    """The statements of a block: a ``compound_statement``'s named children without comments and without the
    ``#pragma`` lines that belong to the loop after them (:func:`loop_pragma`); any other statement node is a
    block of one; ``None`` is empty. The one statement reader of the analysis layer and the transforms, so that a
    loop spelled with ``#pragma unroll`` (or ``#pragma unroll 4``) in front of it is the same statement as
    without."""
    if block is None:
        return []
    if block.type != "compound_statement":
        return [block]
    return [c for c in block.named_children if c.type != "comment" and not _attached_pragma(c)]


def statement_start(node: Node) -> int:
    """The first byte of statement ``node`` with what belongs to it: a loop's ``#pragma`` line
    (:func:`loop_pragma`) is part of the loop, so code inserted before the loop goes before its pragma and the
    pragma stays attached to its loop."""
    p = loop_pragma(node)
    return p.start_byte if p is not None else node.start_byte


def unwrap_parens(node: Node) -> Node:
    """Strip ``parenthesized_expression`` wrappers."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def strip_casts(node: Node) -> Node:
    """Strip parentheses, C casts and ``static_cast<T>(...)`` around a CUDA expression, also when written through a
    function-like macro of the file that only casts its argument (``TO_F(in[i])`` with
    ``#define TO_F(x) ((float)(x))``; :func:`~htam_core.source.analysis.macros.transparent_argument`)."""
    while True:
        node = unwrap_parens(node)
        if node.type == "cast_expression" and node.child_by_field_name("value") is not None:
            node = node.child_by_field_name("value")  # type: ignore[assignment]
            continue
        fn = node.child_by_field_name("function") if node.type == "call_expression" else None
        if fn is not None and fn.type == "template_function":
            name = fn.child_by_field_name("name")
            args = node.child_by_field_name("arguments")
            if name is not None and name.text == b"static_cast" and args is not None and args.named_child_count == 1:
                node = args.named_children[0]
                continue
        if fn is not None and fn.type == "identifier":
            arg = transparent_argument(node)
            if arg is not None:
                node = arg
                continue
        return node


#: The C++ named casts a pointer argument may be written through (``reinterpret_cast<const float *>(p)``).
_NAMED_CASTS = (b"static_cast", b"reinterpret_cast", b"const_cast")


def _is_zero(node: Node | None) -> bool:
    """``node`` is the integer literal zero (``0``, ``0u``, ``0L``, ``0x0``)."""
    if node is None or node.type != "number_literal" or node.text is None:
        return False
    digits = node.text.decode("ascii", errors="replace").rstrip("uUlLzZ")
    try:
        return int(digits, 0) == 0
    except ValueError:
        return False


def _pointer_step(node: Node) -> Node | None:
    """The pointer ``node`` spells one step more plainly, or ``None``: the argument of a named cast
    (``reinterpret_cast<T *>(p)``, ``const_cast<T *>(p)``), ``p`` for ``&p[0]`` and for ``p + 0``/``0 + p``."""
    fn = node.child_by_field_name("function") if node.type == "call_expression" else None
    if fn is not None and fn.type == "template_function":
        name, args = fn.child_by_field_name("name"), node.child_by_field_name("arguments")
        if name is not None and name.text in _NAMED_CASTS and args is not None and args.named_child_count == 1:
            return args.named_children[0]
    arg = node.child_by_field_name("argument") if node.type == "pointer_expression" else None
    if arg is not None and node.children[0].type == "&" and arg.type == "subscript_expression":
        idx = arg.child_by_field_name("indices")
        if idx is not None and idx.named_child_count == 1 and _is_zero(idx.named_children[0]):
            return arg.child_by_field_name("argument")
    op = node.child_by_field_name("operator") if node.type == "binary_expression" else None
    if op is not None and op.type == "+":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if _is_zero(right) or _is_zero(left):
            return left if _is_zero(right) else right
    return None


def strip_pointer(node: Node) -> Node:
    """The pointer expression ``node`` with what does not change the address it holds stripped: parentheses, C
    casts and C++ named casts (``(float *)p``, ``reinterpret_cast<const float4 *>(p)``, ``const_cast<T *>(p)``),
    ``&p[0]`` and ``p + 0`` read as ``p``; :func:`strip_casts` first, so a cast-only macro of the file is seen
    through too. ``p + n`` is left whole (another address). Idea source: C11 6.5.3.2 (``&*E`` and ``&E[0]`` are
    ``E``) and 6.3.2.3 (a pointer cast keeps the address)."""
    while True:
        node = strip_casts(node)
        inner = _pointer_step(node)
        if inner is None:
            return node
        node = inner


def brace_dim3(src: bytes) -> bytes:
    """Bytes to parse: ``dim3 g(a, b);`` rewritten as ``dim3 g{a, b};`` (same length).

    tree-sitter reads ``dim3 g(expr, ...)`` as a function declaration (C++'s most vexing parse) and
    mangles the arguments; with braces they parse as expressions. Offsets are unchanged.
    """
    tree = parse(src, "cuda")
    buf = bytearray(src)
    for decl in of_type(tree.root_node, "declaration"):
        if text(decl.child_by_field_name("type"), src) != "dim3":
            continue
        for d in decl.children_by_field_name("declarator"):
            plist = d.child_by_field_name("parameters") if d.type == "function_declarator" else None
            if plist is not None and src[plist.start_byte : plist.start_byte + 1] == b"(":
                buf[plist.start_byte] = ord("{")
                buf[plist.end_byte - 1] = ord("}")
    return bytes(buf)


def parse_cuda(src: bytes) -> Tree:
    """Parse CUDA ``src`` with ``dim3 g(...)`` declarations read as constructions (see :func:`brace_dim3`)."""
    return parse(brace_dim3(src), "cuda")


#: The C++ casts written as template calls: reading a value through one has no side effect.
_CAST_CALLS = frozenset({"static_cast", "reinterpret_cast", "const_cast"})
#: Calls of no argument with no effect beyond their value, by name, with the namespaces that may qualify them: the
#: cooperative-groups handle of the thread's block (``cg::this_thread_block()``).
PURE_BUILTIN_CALLS = {"this_thread_block": frozenset({"", "cg", "cooperative_groups", "::cooperative_groups"})}
#: Expression kinds that write, or sequence effects, or make code that runs elsewhere.
_EFFECT_KINDS = ("assignment_expression", "update_expression", "comma_expression", "lambda_expression")


def _pure_builtin(fn: Node, args: Node) -> bool:
    """``fn(args)`` is a call of :data:`PURE_BUILTIN_CALLS` with no argument."""
    head, _, name = "".join(node_text(fn).split()).rpartition("::")
    return args.named_child_count == 0 and head in PURE_BUILTIN_CALLS.get(name, ())


def _effect_free_call(n: Node) -> bool:
    """The call ``n`` only reads: a C++ cast, a functional cast of a builtin type, a load intrinsic (one argument
    each), or a call of :data:`PURE_BUILTIN_CALLS`."""
    fn, args = n.child_by_field_name("function"), n.child_by_field_name("arguments")
    if fn is None or args is None:
        return False
    name = fn.child_by_field_name("name") if fn.type == "template_function" else None
    cast = name is not None and node_text(name) in _CAST_CALLS
    one = (cast or fn.type == "primitive_type" or is_load_builtin(node_text(fn))) and args.named_child_count == 1
    return one or _pure_builtin(fn, args)


def effect_free_call(call: Node) -> bool:
    """The call expression ``call`` itself only reads (its arguments aside): a C++ cast, a functional cast of a
    builtin type, a load intrinsic, or a call of :data:`PURE_BUILTIN_CALLS` (as :func:`effect_free` accepts one).
    Raises nothing."""
    return call.type == "call_expression" and _effect_free_call(call)


def effect_free(node: Node) -> bool:
    """True when the C/CUDA expression ``node`` (any node of a parsed unit: an initializer, a loop bound, a launch
    argument) can be evaluated twice with the same result and no effect: names, literals, fields, subscripts,
    operators, initializer lists and casts (C casts, ``static_cast<T>(x)``, functional casts ``int(x)`` of a builtin
    type), CUDA's load intrinsics, which only read (``__ldg(&v[i])``, the form ``cuda.ldg`` writes), and the calls of
    :data:`PURE_BUILTIN_CALLS` (``cg::this_thread_block()``), with no other call, assignment, increment, decrement,
    comma or lambda. ``False`` for a node with a parse error in it. Raises nothing."""
    if node.has_error:
        return False
    for n in walk(node):
        if n.type in _EFFECT_KINDS or (n.type == "call_expression" and not _effect_free_call(n)):
            return False
    return True


def initializer_effect_free(declarator: Node) -> bool:
    """True when the declarator ``declarator`` (one of a declaration's ``declarator`` children) declares its name
    with no initializer, or with one that is :func:`effect_free`: deleting the declaration, once nothing reads the
    name, changes nothing else. Raises nothing."""
    value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
    return value is None or effect_free(value)


def side_effect_free(expr: str) -> bool:
    """:func:`effect_free` for the C/CUDA expression text ``expr`` (a launch argument as written, a guard's term):
    ``False`` for text that is not one expression."""
    tree = parse(f"auto __htam_v = ({expr});".encode(), "cuda")
    root = tree.root_node
    if root.has_error or len(root.named_children) != 1 or root.named_children[0].type != "declaration":
        return False
    return effect_free(root.named_children[0])


def visible_init(inits: list[Node], at: int) -> list[Node]:
    """Of the initializers ``inits`` of one name's declarations in a function, the one whose declaration is in
    scope at byte ``at`` (C++ block scope: declared before ``at`` in the innermost block, or ``for`` statement,
    around ``at`` that declares the name), as a list of one; ``[]`` when none is. Idea source: the C++ standard's
    block scope rule ([basic.scope.block]): a name declared in a block is local to it, and an inner declaration
    hides an outer one."""
    best: tuple[int, Node] | None = None
    for v in inits:
        block = v.parent
        while block is not None and block.type not in ("compound_statement", "for_statement", "function_definition"):
            block = block.parent
        if block is None or not (v.start_byte < at < block.end_byte) or block.start_byte > at:
            continue
        if best is None or block.start_byte > best[0]:
            best = (block.start_byte, v)
    return [best[1]] if best is not None else []
