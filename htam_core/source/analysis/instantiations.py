"""Template arguments of a kernel followed from its launches through templated host functions.

A kernel launched as ``add_kernel<T, kBlock><<<...>>>`` inside ``template <typename T> void add(...)`` gets its
``T`` from the calls of ``add``: ``add<float>(...)`` binds it to ``float``. :func:`template_arguments` follows a
template argument that is the host function's own template parameter to the explicit template arguments of that
function's calls, up to :data:`MAX_HOPS` host functions (C++17, [temp.arg]: an explicit template argument list
binds the parameters in order). A call that deduces its arguments (``add(a, b, c, n)``) binds nothing that can be
read here, so the answer says it is incomplete. Read by the CUDA facts (the pointee type of ``const T *a``) and
by the ``__device__`` helpers bound through a template parameter (``callees.py``).

A launch inside a dispatch macro's lambda (``DISPATCH(x.scalar_type(), "op", [&] { k<scalar_t><<<...>>>(...); })``)
binds ``scalar_t`` to the types the macro declares it as: a ``using scalar_t = __nv_bfloat16;`` (or ``typedef``) in
the body of a function-like macro of the file, or the types of PyTorch's ``AT_DISPATCH_*`` macros
(:data:`AT_DISPATCH_TYPES`, ATen's ``Dispatch.h``: ``AT_DISPATCH_FLOATING_TYPES`` runs the lambda for ``float``
and ``double``) (:func:`dispatch_alias`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.macros import MacroTable, arg_spans, macro_table, substituted
from htam_core.source.analysis.syntax import text, walk

#: How many host functions a template argument is followed through.
MAX_HOPS = 3
#: The element types PyTorch's dispatch macros bind ``scalar_t`` to (ATen ``Dispatch.h``), by macro name; an
#: ``..._AND(...)``/``..._AND2(...)`` form adds the ``at::ScalarType`` arguments it names (:data:`_SCALAR_TYPES`).
AT_DISPATCH_TYPES = {
    "AT_DISPATCH_FLOATING_TYPES": ("float", "double"),
    "AT_DISPATCH_FLOATING_TYPES_AND_HALF": ("float", "double", "at::Half"),
    "AT_DISPATCH_REDUCED_FLOATING_TYPES": ("at::Half", "at::BFloat16"),
    "AT_DISPATCH_FLOATING_TYPES_AND": ("float", "double"),
    "AT_DISPATCH_FLOATING_TYPES_AND2": ("float", "double"),
    "AT_DISPATCH_FLOATING_TYPES_AND3": ("float", "double"),
}
_SCALAR_TYPES = {"Half": "at::Half", "BFloat16": "at::BFloat16", "Float": "float", "Double": "double"}


@dataclass(frozen=True)
class TemplateArguments:
    """What the launches of one kernel bind one template parameter to.

    Attributes:
        texts: the arguments reached, as written with spaces normalized (``"float"``, ``"naive"``), each
            one that is no template parameter of its host function.
        complete: every call on the way names its template arguments explicitly up to this parameter, and some
            launch was found (``False``: some caller deduces them or passes fewer, so ``texts`` may miss a type).
    """

    texts: frozenset[str]
    complete: bool


def function_name(fn: Node, src: bytes) -> str | None:
    """The plain name of the ``function_definition`` ``fn`` (``add`` for ``void add<T>(...)``), or ``None``."""
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    name = d.child_by_field_name("declarator") if d is not None else None
    if name is None:
        return None
    if name.type == "template_function":
        name = name.child_by_field_name("name")
    return text(name, src) if name is not None and name.type == "identifier" else None


def template_param_names(fn: Node, src: bytes) -> list[str]:
    """The parameter names of the ``template<...>`` around ``fn`` (in order), or ``[]``."""
    par = fn.parent
    if par is None or par.type != "template_declaration":
        return []
    plist = par.child_by_field_name("parameters")
    out = []
    for p in plist.named_children if plist is not None else []:
        words = text(p, src).split("=")[0].replace("...", " ").split()
        out.append(words[-1] if words else "")
    return out


def template_args(call_fn: Node, src: bytes) -> list[str]:
    """The template arguments of ``f<a, b>`` as written (``[]`` for a plain name)."""
    if call_fn.type != "template_function":
        return []
    args = call_fn.child_by_field_name("arguments")
    return [text(a, src).strip() for a in (args.named_children if args is not None else []) if a.type != "comment"]


def called_name(fn: Node | None, src: bytes) -> str | None:
    """The plain name a call or template use names (``add`` for ``add<float>``), or ``None``."""
    if fn is None:
        return None
    if fn.type == "template_function":
        fn = fn.child_by_field_name("name")
    return text(fn, src) if fn is not None and fn.type == "identifier" else None


def template_arguments(root: Node, src: bytes, name: str, position: int,
                       stop: frozenset[str] = frozenset()) -> TemplateArguments:
    """The arguments bound to template parameter ``position`` of function or kernel ``name`` by its uses under
    ``root`` (launches and calls ``name<...>``, and ``name<...>`` taken as a value), followed through host
    functions' template parameters. An argument in ``stop`` is an answer even where it also names a host
    template parameter. Never raises for odd code."""
    out: set[str] = set()
    complete = True
    found = False
    frontier = [(name, position)]
    seen: set[tuple[str, int]] = set()
    for hop in range(MAX_HOPS + 1):
        nxt: list[tuple[str, int]] = []
        for fname, pos in frontier:
            if (fname, pos) in seen:
                continue
            seen.add((fname, pos))
            for n in walk(root):
                if n.type not in ("call_expression", "template_function"):
                    continue
                fn = n if n.type == "template_function" else n.child_by_field_name("function")
                if called_name(fn, src) != fname:
                    continue
                if fn is None or fn.type != "template_function":
                    if n.type == "call_expression":
                        complete = False  # a call that deduces the arguments
                    continue
                if n.type == "template_function" and n.parent is not None and n.parent.type == "call_expression":
                    continue  # seen as its call
                found = True
                args = template_args(fn, src)
                if pos >= len(args):
                    complete = False
                    continue
                arg = scope_alias(n, src, " ".join(args[pos].lstrip("&").split()))
                host = n.parent
                while host is not None and host.type != "function_definition":
                    host = host.parent
                hname = function_name(host, src) if host is not None else None
                tps = template_param_names(host, src) if host is not None else []
                if arg not in stop and hname and arg in tps:
                    if hop == MAX_HOPS:
                        complete = False
                    nxt.append((hname, tps.index(arg)))
                else:
                    out.update(dispatch_alias(n, src, arg) or (arg,))
        frontier = nxt
    return TemplateArguments(frozenset(out), complete and found)



def _alias_in_block(block: Node, before: int, src: bytes, name: str) -> tuple[Node, str] | None:
    """``(declaration, aliased type)`` of the last ``using name = T;`` or ``typedef T name;`` among ``block``'s
    statements that end before byte ``before``, or ``None``."""
    found = None
    for d in block.named_children:
        if d.end_byte > before:
            break
        if d.type == "alias_declaration":
            decl, typ = d.child_by_field_name("name"), d.child_by_field_name("type")
        elif d.type == "type_definition":
            decl, typ = d.child_by_field_name("declarator"), d.child_by_field_name("type")
        else:
            continue
        if decl is not None and typ is not None and text(decl, src) == name:
            found = (d, " ".join(text(typ, src).split()))
    return found


def scope_alias(node: Node, src: bytes, name: str) -> str:
    """The type ``name`` stands for at ``node`` through block-scope aliases of the functions and lambdas around
    it (``using accscalar_t = scalar_t;`` in a dispatch lambda, ``using scalar_t = float;`` in ``main``): the
    nearest declaration before ``node`` in the innermost block that has one, followed through chains of such
    aliases, each aliased type read where its declaration stands (so ``using T = T;`` names the outer ``T``, as
    C++17 [basic.scope.pdecl] says); ``name`` itself where no block declares it. Every step looks only before the
    last declaration followed, so the chain ends; a declaration is never followed twice. Never raises."""
    followed: set[int] = set()
    before, p = node.start_byte, node.parent
    while p is not None:
        hit = _alias_in_block(p, before, src, name) if p.type == "compound_statement" else None
        if hit is None or hit[0].start_byte in followed:
            p = p.parent
            continue
        followed.add(hit[0].start_byte)
        name, before = hit[1], hit[0].start_byte
    return name


def _declares_in(body: str, name: str) -> tuple[str, ...]:
    """The types the text ``body`` itself declares ``name`` as (``using scalar_t = __nv_bfloat16;``, ``typedef
    float scalar_t;``), in order."""
    n = re.escape(name)
    found = re.findall(rf"\busing\s+{n}\s*=\s*([^;]+?)\s*;", body) + \
        re.findall(rf"\btypedef\s+([^;]+?)\s+{n}\s*;", body)
    return tuple(dict.fromkeys(" ".join(t.split()) for t in found))


def _macro_declares(body: str, name: str, table: MacroTable | None = None, at: int = 0,
                    active: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The types a macro body declares ``name`` as (``using scalar_t = __nv_bfloat16;``, ``typedef float
    scalar_t;``), in order; where the body declares none itself, those the function-like macros of ``table`` it
    calls declare with their arguments substituted (``MY_CASE(ScalarType::Float, float, __VA_ARGS__)`` whose body
    says ``using scalar_t = type;``), a macro never read inside its own expansion (``active``, the preprocessor's
    rule, C11 6.10.3.4) and no deeper than :data:`MAX_HOPS` macros."""
    found = _declares_in(body, name)
    if found or table is None or len(active) > MAX_HOPS:
        return found
    out: list[str] = []
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", body):
        d = table.at(m.group(1), at)
        if d is None or d.name in active:
            continue
        spans, _ = arg_spans(body, m.end() - 1)
        inner = substituted(d, [body[s:e] for s, e in spans]) if spans is not None else None
        if inner is not None:
            out += _macro_declares(inner, name, table, at, active | {d.name})
    return tuple(dict.fromkeys(out))


def _at_dispatch(name: str, args: Node | None, src: bytes) -> tuple[str, ...]:
    """The types PyTorch's dispatch macro ``name`` binds ``scalar_t`` to, with the ``at::ScalarType`` arguments of
    an ``_AND`` form (``at::ScalarType::Half``, ``at::kBFloat16``); ``()`` for another name."""
    base = AT_DISPATCH_TYPES.get(name)
    if base is None:
        return ()
    extra = []
    if "_AND" in name and not name.endswith("_HALF") and args is not None:
        for a in args.named_children:
            m = re.fullmatch(r"(?:at::|c10::)?(?:ScalarType::|k)(\w+)", "".join(text(a, src).split()))
            if m and m.group(1) in _SCALAR_TYPES:
                extra.append(_SCALAR_TYPES[m.group(1)])
    return tuple(dict.fromkeys((*base, *extra)))


def dispatch_alias(node: Node, src: bytes, name: str) -> tuple[str, ...]:
    """The types a dispatch macro around ``node`` binds the type name ``name`` to: the nearest enclosing call of a
    function-like macro of the file whose body declares it (``using name = T;``), or of a PyTorch ``AT_DISPATCH_*``
    macro when ``name`` is ``scalar_t``; ``()`` when no enclosing macro call declares it. Never raises."""
    table = macro_table(src)
    p = node.parent
    while p is not None:
        fn = p.child_by_field_name("function") if p.type == "call_expression" else None
        if fn is not None and fn.type == "identifier":
            macro = text(fn, src)
            d = table.at(macro, p.start_byte)
            found = _macro_declares(d.body, name, table, p.start_byte, frozenset({macro})) if d is not None else ()
            if not found and name == "scalar_t":
                found = _at_dispatch(macro, p.child_by_field_name("arguments"), src)
            if found:
                return found
        p = p.parent
    return ()
