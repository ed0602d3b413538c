"""Template arguments of a kernel followed from its launches through templated host functions.

A kernel launched as ``add_kernel<T, kBlock><<<...>>>`` inside ``template <typename T> void add(...)`` gets its
``T`` from the calls of ``add``: ``add<float>(...)`` binds it to ``float``. :func:`template_arguments` follows a
template argument that is the host function's own template parameter to the explicit template arguments of that
function's calls, up to :data:`MAX_HOPS` host functions (C++17, [temp.arg]: an explicit template argument list
binds the parameters in order). A call that deduces its arguments (``add(a, b, c, n)``) binds nothing that can be
read here, so the answer says it is incomplete. Read by the CUDA facts (the pointee type of ``const T *a``) and
by the ``__device__`` helpers bound through a template parameter (``callees.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.syntax import text, walk

#: How many host functions a template argument is followed through.
MAX_HOPS = 3


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
                arg = " ".join(args[pos].lstrip("&").split())
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
                    out.add(arg)
        frontier = nxt
    return TemplateArguments(frozenset(out), complete and found)

