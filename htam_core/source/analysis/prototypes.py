"""The declarations (prototypes) of a kernel other than its definition: ``__global__ void k(float*, const float*,
int);`` in a header, in the launching file, or above the definition.

A step that changes a kernel's parameter types edits each declaration with the definition. What must match: a
pointer parameter's pointee ``const`` is part of the function's type, so a definition with ``const float *a``
and a declaration with ``float *`` are two different functions (the launch calls the declared one, which is
never defined: nvcc's link fails with an undefined reference). ``__restrict__`` on the pointer itself is a
top-level qualifier, not part of the type (ISO C++ [dcl.fct]: top-level cv-qualifiers of a parameter are dropped
from the function type; nvcc treats ``__restrict__`` alike, the mangled name is the same), so a declaration
without it still names the definition; it is written there too, to keep the two alike.

:func:`prototypes` reads the declarations of a kernel in one parsed CUDA text: for each, its parameters with
what a pointer parameter holds and where ``const`` and ``__restrict__`` go (named ``float *a`` and unnamed
``float*`` alike). Idea source: ISO C++ [dcl.fct] (parameter-type-list, top-level qualifiers), [basic.link]
(one definition for a declared function).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.syntax import of_type, parse_cuda, text

_RESTRICT = frozenset({"__restrict__", "__restrict", "restrict"})


@dataclass(frozen=True)
class ProtoParam:
    """One parameter of a declaration.

    Attributes:
        pointer: a single-level pointer (``float *a``, ``float*``); the other fields are meaningful only then.
        const: the pointee is ``const``.
        restrict: the pointer is ``__restrict__``.
        const_at: file byte where ``const `` is inserted (the parameter's start).
        restrict_at: file byte where the ``__restrict__`` text is inserted.
        restrict_text: that text (``"__restrict__ "`` before a name, ``" __restrict__"`` after an unnamed ``*``).
    """

    pointer: bool
    const: bool = False
    restrict: bool = False
    const_at: int = 0
    restrict_at: int = 0
    restrict_text: str = ""


@dataclass(frozen=True)
class Prototype:
    """A declaration of the kernel that is not its definition.

    Attributes:
        span: file bytes of the declaration.
        line: its 1-based line in the parsed text.
        params: its parameters, in order.
    """

    span: tuple[int, int]
    line: int
    params: tuple[ProtoParam, ...]


def _param(p: Node, src: bytes, base: int) -> ProtoParam:
    """The :class:`ProtoParam` of one ``parameter_declaration``."""
    decl = p.child_by_field_name("declarator")
    if decl is None or decl.type not in ("pointer_declarator", "abstract_pointer_declarator"):
        return ProtoParam(False)
    inner = decl.child_by_field_name("declarator")
    if inner is not None and inner.type != "identifier":
        return ProtoParam(False)  # a pointer to a pointer, an array of pointers, a function pointer
    const = any(c.type == "type_qualifier" and text(c, src) == "const" for c in p.children)
    restrict = any(c.type == "type_qualifier" and text(c, src) in _RESTRICT for c in decl.children)
    if inner is not None:
        at, ins = inner.start_byte, "__restrict__ "
    else:
        at, ins = decl.end_byte, " __restrict__"
    return ProtoParam(True, const, restrict, p.start_byte + base, at + base, ins)


def prototypes(root: Node, src: bytes, name: str, definition: tuple[int, int] | None = None,
               base: int = 0) -> tuple[Prototype, ...]:
    """The declarations of kernel ``name`` in the CUDA tree ``root`` of ``src``, in source order.

    Args:
        root, src: a parsed CUDA text (:func:`~htam_core.source.analysis.syntax.parse_cuda`) and its bytes.
        name: the kernel's name.
        definition: unit bytes of the kernel's definition, left out.
        base: file offset of ``src[0]`` (a CUDA string in a Python file); spans and insert points are file bytes.
    """
    out = []
    for fd in of_type(root, "function_declarator"):
        if definition is not None and definition[0] <= fd.start_byte < definition[1]:
            continue
        ident = fd.child_by_field_name("declarator")
        decl = fd.parent
        if ident is None or text(ident, src) != name or decl is None or decl.type != "declaration":
            continue
        plist = fd.child_by_field_name("parameters")
        params = [c for c in (plist.named_children if plist else []) if c.type == "parameter_declaration"]
        out.append(Prototype((decl.start_byte + base, decl.end_byte + base), decl.start_point[0] + 1,
                             tuple(_param(p, src, base) for p in params)))
    return tuple(out)


def file_prototypes(data: bytes, name: str) -> tuple[Prototype, ...]:
    """The declarations of kernel ``name`` in the CUDA/C++ file ``data`` (a header), parsed here."""
    return prototypes(parse_cuda(data).root_node, data, name)
