"""The fields of a kernel parameter that is a struct passed by value (CUDA).

A kernel often takes its buffers and sizes in one struct copied to the device at the launch::

    struct NormParams { const float *x; float *out; long long n; };
    __global__ void vec_norm2(NormParams p) { ... atomicAdd(p.out, p.x[i] * p.x[i]); ... }

The struct lives in the kernel's parameter space, so ``p.x`` is as fixed over the kernel as a pointer parameter
would be, and ``p.n`` as a scalar one. Each field of such a parameter is read here as a parameter of its own, named
``p.x`` (:class:`~htam_core.source.model.Param`, with no ``span``: it is not declared in the parameter list), so that
the analysis reads ``p.x[i]`` as a load of the buffer ``p.x``, ``atomicAdd(p.out, v)`` as an atomic on ``p.out`` and
``i < p.n`` as a bound. The struct must be defined in the unit (``struct``, ``class``, ``typedef struct``, in a
namespace too); where it is defined and how each field is declared are read by
:mod:`htam_core.source.analysis.structs`, the one reader of a struct's definition (the harness reads its number
fields with it too): this module only decides which parameters are such structs and names their fields. A
parameter that the body assigns or takes the address of, or whose fields it assigns, is left out (its fields are
then not fixed), and so is a reference (``const P &p``: host memory, not valid for a kernel) or a pointer to one.

Idea source: the CUDA C++ Programming Guide, "Function Parameters" (``__global__`` parameters, structs included, are
passed to the device through constant memory).
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis.structs import (
    FieldDeclarator,
    declared_type,
    field_declarators,
    struct_definition,
)
from htam_core.source.analysis.syntax import of_type, parse_cuda, unwrap_parens
from htam_core.source.analysis.unit import CudaSource
from htam_core.source.model import Kernel, Param

__all__ = ["field_params", "struct_definitions", "struct_fields", "struct_type_name"]

#: Words of a parameter's type that do not name the struct.
_SKIP = frozenset({"const", "struct", "class", "volatile", "__restrict__"})
#: Members of a struct's body that name no field and do not keep it from being read.
_NO_FIELD = frozenset({"comment", "access_specifier", ":"})


def _field_param(base: str, d: FieldDeclarator, owner: str) -> Param | None:
    """The field ``d`` (declared with the type ``base``) as a parameter named ``owner.field`` (a bit-field is a
    number like any other); ``None`` for an array, a reference, a function pointer or a nested declarator it does
    not read."""
    if not d.plain or d.array:
        return None
    typ = " ".join([base, *d.stars]) if d.stars else base
    return Param(f"{owner}.{d.name}", typ, is_pointer=bool(d.stars),
                 is_const=bool(d.stars) and "const" in base.split(), is_restrict="__restrict__" in " ".join(d.stars))


def _declaration_params(src: CudaSource, decl: Node, owner: str, depth: int) -> list[Param] | None:
    """The fields of the field declaration ``decl`` as parameters, each followed by its nested struct's fields;
    ``None`` when one of them is not read (the struct is then not read at all)."""
    out: list[Param] = []
    base = declared_type(decl)
    for d in field_declarators(decl):
        fp = _field_param(base, d, owner)
        if fp is None:
            return None
        inner = struct_type_name(fp)
        out += [fp, *(struct_fields(src, inner, fp.name, depth + 1) if inner is not None and depth < 2 else ())]
    return out


def struct_fields(src: CudaSource, type_name: str, owner: str, depth: int = 0) -> tuple[Param, ...]:
    """The fields of the struct ``type_name`` defined in the unit, as parameters named ``owner.field`` (in
    declaration order), those of a nested struct member as well (``p.buf.data``, three levels at most); ``()``
    when the unit defines no such struct (or a union), or a member is not one this module reads (an array, a
    method: the struct is then not read at all). A ``static`` member is no field."""
    spec = struct_definition([src.root], type_name)
    body = spec.child_by_field_name("body") if spec is not None and spec.type != "union_specifier" else None
    if body is None:
        return ()
    out: list[Param] = []
    for decl in body.named_children:
        if decl.type in _NO_FIELD or _static(decl):
            continue
        got = _declaration_params(src, decl, owner, depth) \
            if decl.type == "field_declaration" and decl.children_by_field_name("declarator") else None
        if got is None:
            return ()
        out += got
    return tuple(out)


def _static(decl: Node) -> bool:
    """``decl`` declares a ``static`` member (no part of the object)."""
    return decl.type == "field_declaration" and any(c.type == "storage_class_specifier" for c in decl.children)


def _changed(src: CudaSource, name: str) -> bool:
    """The body assigns, increments or takes the address of ``name`` or of one of its fields."""
    for a in of_type(src.body, ("assignment_expression", "update_expression")):
        target = a.child_by_field_name("left") or a.child_by_field_name("argument")
        while target is not None and target.type in ("field_expression", "parenthesized_expression"):
            target = unwrap_parens(target).child_by_field_name("argument") if target.type == "field_expression" \
                else unwrap_parens(target)
        if target is not None and target.type == "identifier" and src.env.t(target) == name:
            return True
    return any(_address_of(src, u, name) for u in of_type(src.body, "pointer_expression"))


def _address_of(src: CudaSource, u: Node, name: str) -> bool:
    """``u`` (a ``pointer_expression``) is ``&name`` or ``&(name)``, the whole struct's address (``&p.x`` is a
    field's, read by the kernel analysis as any pointer)."""
    op, arg = u.child_by_field_name("operator"), u.child_by_field_name("argument")
    if op is None or op.type != "&" or arg is None:
        return False
    arg = unwrap_parens(arg)
    return arg.type == "identifier" and src.env.t(arg) == name


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
    if not names or (b"struct" not in text and b"class" not in text):  # no definition to parse for
        return ""
    root = parse_cuda(text).root_node
    if not any(struct_definition([root], name) is not None for name in names):
        return ""
    nodes = [n for n in of_type(root, ("struct_specifier", "class_specifier", "type_definition"))
             if n.type == "type_definition" or n.child_by_field_name("body") is not None]
    out = [text[n.start_byte:n.end_byte].decode("utf-8", errors="replace") for n in nodes
           if n.parent is None or n.parent.type != "type_definition"]
    return "".join(f"{t if t.rstrip().endswith(';') else t + ';'}\n" for t in out)
