"""The fields of a kernel parameter that is a struct passed by value (CUDA).

A kernel often takes its buffers and sizes in one struct copied to the device at the launch::

    struct NormParams { const float *x; float *out; long long n; };
    __global__ void vec_norm2(NormParams p) { ... atomicAdd(p.out, p.x[i] * p.x[i]); ... }

The struct lives in the kernel's parameter space, so ``p.x`` is as fixed over the kernel as a pointer parameter
would be, and ``p.n`` as a scalar one. Each field of such a parameter is read here as a parameter of its own, named
``p.x`` (:class:`~htam_core.source.model.Param`, with no ``span``: it is not declared in the parameter list), so that
the analysis reads ``p.x[i]`` as a load of the buffer ``p.x``, ``atomicAdd(p.out, v)`` as an atomic on ``p.out`` and
``i < p.n`` as a bound. The struct must be defined in the unit (``struct``, ``class`` or ``typedef struct``); a
parameter that the body assigns or takes the address of, or whose fields it assigns, is left out (its fields are
then not fixed), and so is a reference (``const P &p``: host memory, not valid for a kernel) or a pointer to one.

Idea source: the CUDA C++ Programming Guide, "Function Parameters" (``__global__`` parameters, structs included, are
passed to the device through constant memory).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from htam_core.source.analysis.syntax import of_type, parse_cuda, unwrap_parens
from htam_core.source.analysis.unit import CudaSource
from htam_core.source.model import Kernel, Param

__all__ = ["field_params", "struct_definitions", "struct_fields", "struct_type_name"]

#: Words of a parameter's type that do not name the struct.
_SKIP = frozenset({"const", "struct", "class", "volatile", "__restrict__"})


def _named_struct(node: Node, src: bytes, name: str) -> Node | None:
    """The ``field_declaration_list`` of ``node`` (a ``struct_specifier``, ``class_specifier`` or ``type_definition``)
    when it defines the type ``name``."""
    if node.type == "type_definition":
        spec = node.child_by_field_name("type")
        names = [src[d.start_byte:d.end_byte].decode() for d in node.children_by_field_name("declarator")]
        return spec.child_by_field_name("body") if spec is not None and name in names else None
    n = node.child_by_field_name("name")
    if n is not None and src[n.start_byte:n.end_byte].decode() == name:
        return node.child_by_field_name("body")
    return None


def _field_param(src: bytes, decl: Node, declarator: Node, owner: str) -> Param | None:
    """The field ``declarator`` of ``decl`` as a parameter named ``owner.field``; ``None`` for an array, a function
    pointer or a nested declarator it does not read."""
    d, stars = declarator, []
    while d.type == "pointer_declarator":
        inner = d.child_by_field_name("declarator")
        if inner is None:
            return None
        stars.append(" ".join(src[d.start_byte:inner.start_byte].decode().split()))
        d = inner
    if d.type != "field_identifier":
        return None
    first = decl.children_by_field_name("declarator")[0]
    base = " ".join(src[decl.start_byte:first.start_byte].decode().split())
    typ = " ".join([base, *stars]) if stars else base
    return Param(f"{owner}.{src[d.start_byte:d.end_byte].decode()}", typ, is_pointer=bool(stars),
                 is_const=bool(stars) and "const" in base.split(), is_restrict="__restrict__" in " ".join(stars))


def struct_fields(src: CudaSource, type_name: str, owner: str, depth: int = 0) -> tuple[Param, ...]:
    """The fields of the struct ``type_name`` defined in the unit, as parameters named ``owner.field`` (in
    declaration order), those of a nested struct member as well (``p.buf.data``, three levels at most); ``()``
    when the unit defines no such struct, or a field is not one this module reads (an array, a bit-field: the
    struct is then not read at all)."""
    for node in of_type(src.root, ("struct_specifier", "class_specifier", "type_definition")):
        body = _named_struct(node, src.src, type_name)
        if body is None:
            continue
        out: list[Param] = []
        for decl in body.named_children:
            if decl.type in ("comment", "access_specifier", ":"):  # `public:` names no field
                continue
            if decl.type != "field_declaration" or not decl.children_by_field_name("declarator"):
                return ()
            for dd in decl.children_by_field_name("declarator"):
                fp = _field_param(src.src, decl, dd, owner)
                if fp is None:
                    return ()
                inner = struct_type_name(fp)
                nested = struct_fields(src, inner, fp.name, depth + 1) if inner is not None and depth < 2 else ()
                out += [fp, *nested]
        return tuple(out)
    return ()


def _changed(src: CudaSource, name: str) -> bool:
    """The body assigns, increments or takes the address of ``name`` or of one of its fields."""
    for a in of_type(src.body, ("assignment_expression", "update_expression")):
        target = a.child_by_field_name("left") or a.child_by_field_name("argument")
        while target is not None and target.type in ("field_expression", "parenthesized_expression"):
            target = unwrap_parens(target).child_by_field_name("argument") if target.type == "field_expression" \
                else unwrap_parens(target)
        if target is not None and target.type == "identifier" and src.env.t(target) == name:
            return True
    taken = re.compile(rf"&\s*\(?\s*{re.escape(name)}\b(?!\s*\.)")
    return any(taken.match(src.env.t(u)) for u in of_type(src.body, "pointer_expression"))


def struct_type_name(p: Param) -> str | None:
    """The type name of parameter ``p`` when it may be a struct passed by value (one name besides ``const`` and
    ``struct``: ``Params``, ``const struct P``, ``ns::P``, without the namespace), else ``None`` (a pointer, a
    reference, a template type with arguments)."""
    typ = p.type or ""
    named = [w for w in typ.split() if w not in _SKIP]
    if p.is_pointer or "&" in typ or "*" in typ or "<" in typ or len(named) != 1:
        return None
    return named[0].split("::")[-1]


def field_params(src: CudaSource, kernel: Kernel) -> tuple[Param, ...]:
    """The fields of each kernel parameter that is a struct passed by value (module docstring), as parameters named
    ``p.field``, in parameter then declaration order."""
    out: list[Param] = []
    for p in kernel.params:
        name = struct_type_name(p)
        if name is not None and not _changed(src, p.name):
            out += struct_fields(src, name, p.name)
    return tuple(out)


def struct_definitions(text: bytes, names: set[str]) -> str:
    """The source text of the struct definitions in ``text`` (a file's text before a kernel), each ending in ``;``,
    one a line, when one of them defines a struct named in ``names`` (:func:`struct_type_name` of the kernel's
    parameters; the others are kept for a nested member's type), else ``""``: what a kernel read on its own needs
    besides its text to read its struct parameters' fields."""
    if not names or not re.search(rb"\b(?:struct|class)\b", text):
        return ""
    nodes = [n for n in of_type(parse_cuda(text).root_node, ("struct_specifier", "class_specifier", "type_definition"))
             if n.type == "type_definition" or n.child_by_field_name("body") is not None]
    if not any(_named_struct(n, text, name) is not None for n in nodes for name in names):
        return ""
    out = [text[n.start_byte:n.end_byte].decode("utf-8", errors="replace") for n in nodes
           if n.parent is None or n.parent.type != "type_definition"]
    return "".join(f"{t if t.rstrip().endswith(';') else t + ';'}\n" for t in out)
