"""A CUDA kernel's identity and which kernel a ``<<<...>>>`` launch runs.

Two kernels of one file may share a name: ``f32::scale`` and ``f64::scale`` in two namespaces, two overloads
``scale(float*)`` and ``scale(double*)``, or ``S::k`` a static member of a struct. A kernel is therefore known by its
*qualified name* (the namespaces and enclosing classes, anonymous namespaces left out because their members are
named without them) and, for overloads of one qualified name, its *signature* (``scale(double*, double, int)``).

A launch belongs to a kernel only when its callee resolves to it, by the rules of C++ name lookup
(ISO C++ [basic.lookup.unqual], [namespace.udir], [over.match]), read as far as a single file allows:

* the callee's qualifier (``f64::scale``, ``::scale``) is looked up from the namespace the launch is written in
  outwards, the innermost namespace holding a match winning; ``using namespace`` directives visible before the
  launch add their namespaces' kernels at file level;
* among overloads, the argument count and the declared types of the arguments that can be read (a variable
  declared in the launching function, a literal, ``&x``, a cast) select the kernel: a pointer argument must
  point to the parameter's element type (template parameters match anything); when every argument's type is
  known, the most exact matches break a tie (an unknown argument could make any candidate the better one).

When a launch still names several kernels of different identities it is *ambiguous*: it is given to each of them
with :attr:`~htam_core.source.model.LaunchSite.ambiguous` listing the choices, and no step changes it. A kernel
with a single candidate of its name keeps today's reading (every launch by that name is its own), and template
instantiations of one template are one kernel. Facts are read once here; transforms ask
:func:`ambiguous_launch_reason`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from tree_sitter import Node

from htam_core.source.model import Kernel, LaunchSite
from htam_core.source.parsing import node_text

__all__ = ["ambiguous_launch_reason", "arg_types", "declared_scope", "identity", "launch_scope", "mark_overloads",
           "normal_type", "resolve_launch", "unclosed_scope", "using_namespaces"]

_SCOPES = ("namespace_definition", "class_specifier", "struct_specifier", "union_specifier")
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class"}
_ALIASES = {"half": "__half", "nv_bfloat16": "__nv_bfloat16", "signed": "int", "unsigned": "unsigned int"}


def _scope_name(node: Node) -> str | None:
    """The name a scope node gives its members' qualified names (``None``: an anonymous namespace or class)."""
    n = node.child_by_field_name("name")
    return " ".join(node_text(n).split()).replace(" ", "") if n is not None else None


def declared_scope(node: Node, *, classes: bool = True) -> str:
    """The ``::``-joined scope that encloses ``node`` (a kernel's definition or a launch's call): the names of the
    enclosing namespaces (``namespace a::b`` counts as two) and, when ``classes``, structs and classes; anonymous
    ones are left out, since their members are named without them. ``""`` at file scope."""
    names: list[str] = []
    cur = node.parent
    while cur is not None:
        if cur.type in _SCOPES and (classes or cur.type == "namespace_definition"):
            name = _scope_name(cur)
            if name:
                names.append(name)
        cur = cur.parent
    return "::".join(reversed(names))


def qualified_kernel_name(container: Node, declarator: Node | None, name: str) -> str:
    """The qualified name of the kernel ``name`` defined by ``container`` (its definition, or the template or
    ``extern "C"`` around it) with the function declarator ``declarator``: the enclosing scopes, then the
    qualifier written in the declarator (``__global__ void S::k(...)`` defined outside ``struct S``)."""
    scope = declared_scope(container)
    cur = declarator
    while cur is not None and cur.type not in ("qualified_identifier", "identifier", "field_identifier"):
        cur = cur.child_by_field_name("declarator")
    written = re.sub(r"<[^<>]*>", "", " ".join(node_text(cur).split())).replace(" ", "") if cur is not None else name
    parts = [p for p in (scope, written.lstrip(":")) if p]
    return "::".join(parts) if parts else name


def launch_scope(call: Node) -> str:
    """The namespace path a launch is written in (classes and anonymous namespaces left out)."""
    return declared_scope(call, classes=False)


def using_namespaces(call: Node) -> tuple[str, ...]:
    """The namespaces named by the ``using namespace X;`` directives visible at the launch ``call``: those written
    before it in the blocks, function bodies, namespaces and file that enclose it, as written."""
    out: list[str] = []
    cur = call.parent
    while cur is not None:
        for child in cur.children:
            if child.start_byte >= call.start_byte:
                break
            if child.type == "using_declaration" and any(c.type == "namespace" for c in child.children):
                target = child.named_children[-1] if child.named_children else None
                if target is not None:
                    out.append(node_text(target).replace(" ", "").lstrip(":"))
        cur = cur.parent
    return tuple(out)


def normal_type(text: str | None) -> str | None:
    """``text`` (a declared type, ``const float* __restrict__``) as the element type and its pointer depth
    (``float*``): qualifiers, spaces and reference marks dropped, ``half`` read as ``__half``; ``None`` for none."""
    if not text:
        return None
    stars = text.count("*") + text.count("[")
    words = [w for w in re.split(r"[\s*&\[\]]+", re.sub(r"\[[^\]]*\]", "[", text)) if w and w not in _QUALIFIERS]
    if not words:
        return None
    base = _ALIASES.get(" ".join(words), " ".join(words))
    return base + "*" * stars


def _declared_in(fn: Node, name: str, before: int) -> str | None:
    """The declared type of the variable ``name`` in the function ``fn`` (a parameter or a declaration before byte
    ``before``), written as ``float*``; ``None`` when not found."""
    found: str | None = None
    stack = [fn]
    while stack:
        node = stack.pop()
        if node.start_byte >= before:
            continue
        if node.type in ("declaration", "parameter_declaration"):
            typ = node.child_by_field_name("type")
            for d in node.children_by_field_name("declarator"):
                stars, cur = 0, d
                while cur is not None and cur.type != "identifier":
                    stars += cur.type in ("pointer_declarator", "array_declarator")
                    cur = cur.child_by_field_name("declarator")
                if cur is not None and node_text(cur) == name and typ is not None:
                    found = node_text(typ) + "*" * stars
        stack.extend(node.children)
    return found


def _arg_type(arg: Node, fn: Node | None, before: int) -> str | None:
    """The type of one launch argument when it can be read without a compiler, else ``None``."""
    if arg.type == "number_literal":
        t = node_text(arg).lower()
        if t.startswith("0x") or not re.search(r"[.e]", t):
            return "int"
        return "float" if t.endswith("f") else "double"
    if arg.type == "cast_expression":
        typ = arg.child_by_field_name("type")
        return " ".join(node_text(typ).split()) if typ is not None else None
    if arg.type == "pointer_expression" and node_text(arg).startswith("&"):
        inner = _arg_type(arg.child_by_field_name("argument"), fn, before)
        return inner + "*" if inner else None
    if arg.type == "parenthesized_expression" and arg.named_child_count == 1:
        return _arg_type(arg.named_children[0], fn, before)
    if arg.type == "identifier" and fn is not None:
        return _declared_in(fn, node_text(arg), before)
    return None


def arg_types(call: Node) -> tuple[str | None, ...]:
    """The normal type (:func:`normal_type`) of each argument of the launch ``call``, ``None`` where unread."""
    fn = call.parent
    while fn is not None and fn.type != "function_definition":
        fn = fn.parent
    args = call.child_by_field_name("arguments")
    nodes = [a for a in (args.named_children if args is not None else []) if a.type != "comment"]
    return tuple(normal_type(_arg_type(a, fn, call.start_byte)) for a in nodes)


def identity(kernel: Kernel) -> str:
    """How ``kernel`` is told apart from the other kernels of its file: its signature for an overload, else its
    qualified name (its name at file scope); :attr:`Kernel.identity`."""
    return kernel.identity


def signature(kernel: Kernel) -> str:
    """``qualified_name(param types)`` of ``kernel``, types as :func:`normal_type` writes them."""
    types = [normal_type(p.type) or (p.type or "?") for p in kernel.params]
    return f"{kernel.qualified_name or kernel.name}({', '.join(types)})"


def mark_overloads(kernels: Sequence[Kernel]) -> None:
    """Give each kernel that shares its qualified name with a kernel of another signature the attribute
    ``overload`` (its :func:`signature`), which :func:`identity` and ``--kernel`` then use. A template kernel and
    its explicit specializations (``template <> __global__ void k<float>(float*)``) stay one kernel. A kernel whose
    plain name kernels of other identities share (``f32::scale``, ``f64::scale``) gets ``shared_name``, which
    :attr:`~htam_core.source.model.Kernel.key` reads."""
    by_name: dict[str, set[str]] = {}
    groups: dict[str, list[Kernel]] = {}
    for k in kernels:
        groups.setdefault(k.qualified_name or k.name, []).append(k)
    for group in groups.values():
        if any(k.text.lstrip().startswith("template") for k in group):
            continue  # a template and its specializations are one kernel, as before
        if len({signature(k) for k in group}) > 1:
            for k in group:
                k.attributes = {**k.attributes, "overload": signature(k)}  # a new dict: cached kernels share theirs
    for k in kernels:
        by_name.setdefault(k.name, set()).add(identity(k))
    for k in kernels:  # its plain name selects no single kernel: Kernel.key is its identity
        if len(by_name[k.name]) > 1:
            k.attributes = {**k.attributes, "shared_name": True}


def _qualifier(site: LaunchSite) -> tuple[str, bool]:
    """``(qualifier, rooted)`` of the launch's callee: ``("f64", False)`` for ``f64::scale<<<``, ``("", True)`` for
    ``::scale``; template arguments dropped."""
    text = re.sub(r"<[^<>]*>", "", (site.qualified_name or site.kernel_name).replace(" ", ""))
    rooted = text.startswith("::")
    parts = text.lstrip(":").split("::")
    return "::".join(parts[:-1]), rooted


def _scope_of(kernel: Kernel) -> str:
    qn = kernel.qualified_name or kernel.name
    return qn[: -len(kernel.name) - 2] if qn.endswith("::" + kernel.name) else ""


def _join(*parts: str) -> str:
    return "::".join(p for p in parts if p)


def _looked_up(site: LaunchSite, cands: list[Kernel]) -> list[Kernel]:
    """The candidates name lookup finds from the launch's scope: the innermost enclosing namespace holding a
    kernel of the callee's (qualified) name, with the ``using namespace`` namespaces joining at file scope."""
    qual, rooted = _qualifier(site)
    levels = [""] if rooted else []
    if not rooted:
        parts = site.scope.split("::") if site.scope else []
        levels = ["::".join(parts[:i]) for i in range(len(parts), -1, -1)]
    for level in levels:
        targets = {_join(level, qual)}
        if level == "" and not rooted:
            targets |= {_join(u, qual) for u in site.using} | {_join(s, u, qual) for u in site.using
                                                                for s in levels if s}
        found = [k for k in cands if _scope_of(k) in targets]
        if found:
            return found
    return cands  # nothing matches as written (a macro or alias): keep every candidate


def _fits(kernel: Kernel, types: tuple[str | None, ...]) -> int | None:
    """How well the argument types fit ``kernel``: ``None`` when they rule it out (the count, or a pointer to
    another element type), else the number of exact matches."""
    params = kernel.params
    required = sum(1 for p in params if p.default is None)
    if types and not required <= len(types) <= len(params):
        return None
    tmpl = {w for t in kernel.attributes.get("template_params", []) for w in re.findall(r"\w+", str(t))}
    score = 0
    for arg, p in zip(types, params, strict=False):
        want = normal_type(p.type)
        if arg is None or want is None or set(re.findall(r"\w+", want)) & tmpl:
            continue
        if arg == want:
            score += 1
        elif want.endswith("*") and arg.endswith("*") and arg.rstrip("*") != "void":
            return None
    return score


def resolve_launch(site: LaunchSite, cands: list[Kernel]) -> tuple[list[Kernel], bool]:
    """``(kernels, ambiguous)``: the kernels among ``cands`` (those named like the callee) that the launch ``site``
    runs, and whether it could not be narrowed to one identity. One candidate is taken as is."""
    if len(cands) <= 1:
        return cands, False
    found = _looked_up(site, cands)
    scored = [(s, k) for k in found if (s := _fits(k, site.arg_types)) is not None] or [(0, k) for k in found]
    kept = [k for _, k in scored]
    if len({identity(k) for k in kept}) > 1 and site.arg_types and None not in site.arg_types:
        best = max(s for s, _ in scored)  # every argument's type is known: the most exact matches wins
        kept = [k for s, k in scored if s == best]
    return kept, len({identity(k) for k in kept}) > 1


def attach_resolved(site: LaunchSite, cands: list[Kernel]) -> None:
    """Give ``site`` to the kernels among ``cands`` it runs (:func:`resolve_launch`), marked ambiguous when it may
    run several."""
    kept, ambiguous = resolve_launch(site, cands)
    if ambiguous:
        site = replace(site, ambiguous=tuple(identity(k) for k in kept))
    for k in kept:
        k.launch_sites.append(site)


def ambiguous_launch_reason(kernel: Kernel, spans: Sequence[tuple[int, int]], *, reads: bool = False) -> str | None:
    """Why an edit over the byte ranges ``spans`` may not be made: it changes a launch of ``kernel`` that may run
    another kernel of the same name as well, or, with ``reads`` (a step computed from the launches' block size),
    the kernel has such a launch at all. ``None`` otherwise."""
    for s in kernel.launch_sites:
        touched = s.span is not None and any(a < s.span.end and b > s.span.start for a, b in spans)
        if s.ambiguous and (touched or reads):
            return (f"the launch on line {s.line} may run {' or '.join(s.ambiguous)} (its callee and argument types "
                    f"do not tell which): htam neither changes it nor reads its block size; qualify the call or cast its "
                    f"arguments")
    return None


_SCOPE_WORDS = {"namespace_definition": "namespace", "linkage_specification": "extern block",
                "class_specifier": "class", "struct_specifier": "struct", "union_specifier": "union"}


def unclosed_scope(definition: Node) -> str | None:
    """When a scope around the function ``definition`` had its closing ``}`` invented by the parser (a MISSING
    node): the innermost scope around it, whose ``}`` its body may have taken, in words (``"namespace ops"``,
    ``"extern block"``); else ``None``.

    A kernel whose ``{`` is never closed inside a namespace, an ``extern "C" {}`` block or a struct takes that
    scope's ``}`` as its own end and parses clean; the scope is then left open. The parser cannot say which ``{``
    lacks its ``}``: the kernel is taken as the half-typed one when it is the last suspect of the open scope (no
    ``__global__`` and no other parse error after it there), so the complete kernels before a half-typed one
    are never blamed. (An ERROR node right after a definition is not taken as a sign: code nvcc accepts
    leaves some, such as a ``__cluster_dims__`` header of the next kernel.)"""
    cur = definition.parent
    while cur is not None and cur.type != "function_definition":  # a function around it is recovered on its own
        owner = cur.parent
        if owner is not None and owner.type in _SCOPE_WORDS and cur.child_count and cur.children[-1].is_missing \
                and cur.children[-1].type == "}":
            return _scope_words(definition) if _last_suspect(cur, definition.end_byte) else None
        cur = owner
    return None


def _last_suspect(scope_body: Node, after: int) -> bool:
    """Whether nothing in the open ``scope_body`` after byte ``after`` is a more likely culprit than the definition
    that ends there: no later ``__global__`` (a half-typed kernel that follows is the one to blame, and the
    complete kernels before it are not, even one typed inside a function body) and no ERROR or other MISSING node
    outside function bodies (a half-typed declaration)."""
    last = scope_body.children[-1]
    # (node, inside a body): in a function body an ERROR node is no sign (code nvcc accepts leaves some), but a
    # ``__global__`` there always is: a kernel cannot be defined inside a function, so it is a half-typed one whose
    # ``{`` took the rest of the scope (``__global__ void k(float* y) {`` typed inside a host launcher)
    stack = [(c, False) for c in scope_body.children if c.end_byte > after and c is not last]
    while stack:
        node, in_body = stack.pop()
        if node.type == "__global__" or (not in_body and (node.is_error or node.is_missing)):
            return False
        if node.type in ("comment", "preproc_include"):
            continue
        body = in_body or (node.type == "compound_statement" and not node.has_error)
        stack.extend((c, body) for c in node.children if c.end_byte > after)
    return True


def _scope_words(definition: Node) -> str:
    """The innermost scope around ``definition`` in words: the one whose ``}`` its body may have taken."""
    cur = definition.parent
    while cur is not None and cur.type not in _SCOPE_WORDS:
        cur = cur.parent
    if cur is None:
        return "scope"
    name = cur.child_by_field_name("name")
    return f"{_SCOPE_WORDS[cur.type]} {node_text(name)}" if name is not None else _SCOPE_WORDS[cur.type]
