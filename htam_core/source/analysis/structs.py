"""The number fields of a struct a kernel takes by value (``struct Weights { float wa, wb, wc; };``), read from its
definition in the file or its local headers.

A harness passes buffers and numbers; a struct of numbers is a list of numbers in a fixed order. This module
reads that list once, from the syntax tree: :func:`struct_layout` gives each field that holds a number (nested
structs, CUDA vector types such as ``float3`` and fixed-size arrays are opened down to their numbers) with its C
access path (``wa``, ``s.x``, ``c[1]``), its C type and its harness dtype, or the one reason the struct cannot be
passed as numbers (a union, a base class, a bit-field, a field of a type htam does not read). A field that points
to numbers (``const float *in``) is a field too, marked as a pointer: the harness passes it a buffer.
:func:`field_values` maps the values a host program gives the struct (a brace list in field order with C's brace
elision, designated initializers ``.wa = 0.5f``, field assignments ``w.wa = 0.5f;``) onto those fields.

Idea source: ISO C++ [dcl.init.aggr] (aggregate initialization in member order, brace elision, members without an
initializer value-initialized), the CUDA vector types (``float3`` is ``{x, y, z}``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.includes import local_headers
from htam_core.source.analysis.syntax import parse_cuda
from htam_core.source.parsing import node_text

#: Harness dtype of each C number type a struct field may have.
NUMBER_TYPES: dict[str, str] = {
    "float": "float32", "double": "float64", "int": "int32", "signed": "int32", "signed int": "int32",
    "unsigned": "int32", "unsigned int": "int32", "int32_t": "int32", "uint32_t": "int32", "long": "int64",
    "long int": "int64", "long long": "int64", "long long int": "int64", "unsigned long": "int64",
    "unsigned long long": "int64", "int64_t": "int64", "uint64_t": "int64", "size_t": "int64",
    "ptrdiff_t": "int64", "short": "int16", "int16_t": "int16", "unsigned short": "int16", "uint16_t": "int16", "char": "int8", "signed char": "int8",
    "int8_t": "int8", "unsigned char": "uint8", "uint8_t": "uint8", "bool": "bool",
}
_VECTOR_SCALARS = {"float": "float", "double": "double", "int": "int", "long": "long", "longlong": "long long",
                   "short": "short", "char": "char"}
_LANES = ("x", "y", "z", "w")
#: At most this many numbers in one struct (a larger one is an array, better passed as a buffer).
MAX_FIELDS = 64
_DEPTH = 4
_SPECIFIERS = ("struct_specifier", "class_specifier", "union_specifier")


@dataclass(frozen=True)
class StructField:
    """One number of a struct passed by value.

    Attributes:
        path: its C access after the variable (``wa``, ``s.x``, ``c[1]``).
        ctype: its C type as declared (``float``, ``unsigned int``); of a pointer field, the type it points to.
        dtype: its harness dtype (:data:`NUMBER_TYPES`); of a pointer field, its elements'.
        pointer: a pointer to numbers (``const float *in``): a buffer, not a number.
        const: a pointer field's elements are declared ``const`` (the kernel only reads them).
    """

    path: str
    ctype: str
    dtype: str
    pointer: bool = False
    const: bool = False

    @property
    def suffix(self) -> str:
        """The path as part of a Python name: ``s.x`` -> ``s__x``, ``c[1]`` -> ``c__1``."""
        return self.path.replace("[", "__").replace("]", "").replace(".", "__")


@dataclass(frozen=True)
class _Member:
    """A member of a struct: a number (``dtype``), a struct (``members``), or an array of either (``count``)."""

    name: str
    ctype: str
    dtype: str | None = None
    members: tuple[_Member, ...] = ()
    count: int | None = None
    pointer: bool = False
    const: bool = False


@dataclass(frozen=True)
class StructLayout:
    """The number fields of struct ``type`` (:func:`struct_layout`).

    Attributes:
        type: the struct's name as the kernel's parameter spells it.
        fields: its numbers in declaration order (empty when ``unsupported``).
        unsupported: why the struct cannot be passed as numbers, naming the field (``None``: it can).
        empty: the struct has no non-static data member (a stateless functor, ``struct Gelu { __device__ float
            operator()(float) const; };``): a default-constructed object holds nothing to pass, so a harness may
            pass one as it is (its ``unsupported`` still says it holds no number field).
    """

    type: str
    fields: tuple[StructField, ...] = ()
    unsupported: str | None = None
    members: tuple[_Member, ...] = ()
    empty: bool = False


class _Unsupported(Exception):  # noqa: N818 - a reason, raised while reading
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _definitions(roots: Sequence[Node], name: str, seen: frozenset[str] = frozenset()) -> Iterator[Node]:
    """The ``struct``/``class``/``union`` specifiers with a body that define ``name`` (by tag or by typedef),
    followed through ``typedef struct Tag Name;`` (``seen``: the names followed so far; a cycle of such typedefs
    ends there)."""
    if name in seen:
        return
    seen = seen | {name}
    for root in roots:
        stack = [root]
        while stack:
            n = stack.pop()
            stack.extend(n.named_children)
            if n.type not in _SPECIFIERS:
                continue
            tag = n.child_by_field_name("name")
            typedef = n.parent is not None and n.parent.type == "type_definition" and any(
                node_text(d).strip("* ") == name for d in n.parent.children_by_field_name("declarator"))
            if tag is not None and node_text(tag).split("::")[-1] == name or typedef:
                if n.child_by_field_name("body") is not None:
                    yield n
                elif tag is not None and node_text(tag) != name:  # typedef struct Tag Name;
                    yield from _definitions(roots, node_text(tag), seen)


def struct_definition(roots: Sequence[Node], type_name: str) -> Node | None:
    """The ``struct``/``class``/``union`` specifier with a body that defines ``type_name`` under ``roots`` (by tag,
    ``ns::`` left off, or by typedef, through ``typedef struct Tag Name;``), the first one found; ``None`` when
    none does. ``type_name`` is the bare name (``Params``): the one reader of where a struct is defined."""
    return next(_definitions(roots, type_name), None)


@dataclass(frozen=True)
class FieldDeclarator:
    """One declarator of a struct's field declaration, as written (:func:`field_declarators`).

    Attributes:
        name: the field's name when ``plain``, else the declarator's text.
        text: the declarator's whole text (``*__restrict__ out``, ``c[3]``).
        stars: the pointer levels, outermost first, each with its qualifiers (``*``, ``* __restrict__``,
            ``* const``); ``()`` for a field that is no pointer.
        plain: under its stars (and array size) the declarator is a field name (not a reference, a function
            pointer or a parenthesized declarator).
        array: the field is an array (``c[3]``, ``*a[4]``); ``size`` is its size node (``None``: ``c[]``).
        bitfield: the declaration is a bit-field (``unsigned f : 3``).
        reference: the declarator is a reference (``float &r``).
    """

    name: str
    text: str
    stars: tuple[str, ...] = ()
    plain: bool = True
    array: bool = False
    size: Node | None = None
    bitfield: bool = False
    reference: bool = False


def field_declarators(decl: Node) -> list[FieldDeclarator]:
    """The declarators of the ``field_declaration`` ``decl`` in order (``float *x, *y;`` gives two): the one
    reader of a field's name, pointer levels and array size for the harness's layout and the kernel analysis's
    struct parameters (:mod:`htam_core.source.analysis.struct_params`)."""
    bitfield = any(c.type == "bitfield_clause" for c in decl.children)
    return [_field_declarator(d, bitfield) for d in decl.children_by_field_name("declarator")]


def _field_declarator(d: Node, bitfield: bool) -> FieldDeclarator:
    """One declarator ``d`` read down through its pointer levels and array size."""
    node, stars = d, []
    while node.type == "pointer_declarator" and (inner := node.child_by_field_name("declarator")) is not None:
        stars.append(" ".join(d.text[node.start_byte - d.start_byte:inner.start_byte - d.start_byte]
                              .decode("utf-8", errors="replace").split()))
        node = inner
    array, size = node.type == "array_declarator", None
    if array:
        size = node.child_by_field_name("size")
        node = node.child_by_field_name("declarator") or node
    plain = node.type == "field_identifier"
    return FieldDeclarator(node_text(node) if plain else node_text(d), node_text(d), tuple(stars), plain, array,
                           size, bitfield, node.type == "reference_declarator")


def declared_type(decl: Node) -> str:
    """The text of the field declaration ``decl`` before its first declarator, spaces normalised (``const float``,
    ``struct Buf``, ``unsigned int``): the declared type its declarators share."""
    first = decl.children_by_field_name("declarator")
    end = first[0].start_byte if first else decl.end_byte
    return " ".join(decl.text[:end - decl.start_byte].decode("utf-8", errors="replace").split())


def _number_typedefs(roots: Sequence[Node]) -> dict[str, str]:
    """``typedef float real;`` / ``using real = float;``: alias -> the number type it names."""
    out: dict[str, str] = {}
    for root in roots:
        for n in root.named_children:
            if n.type == "type_definition":
                t = " ".join(node_text(n.child_by_field_name("type")).split())
                for d in n.children_by_field_name("declarator"):
                    if t in NUMBER_TYPES and d.type == "type_identifier":
                        out[node_text(d)] = t
            elif n.type == "alias_declaration":
                t = " ".join(node_text(n.child_by_field_name("type")).split())
                if t in NUMBER_TYPES:
                    out[node_text(n.child_by_field_name("name"))] = t
    return out


def _vector(ctype: str) -> tuple[str, int] | None:
    """``float3`` -> ``("float", 3)``: a CUDA vector type's scalar and lane count."""
    head, lanes = ctype.rstrip("1234"), ctype[len(ctype.rstrip("1234")):]
    unsigned = head.startswith("u") and head[1:] in _VECTOR_SCALARS
    scalar = _VECTOR_SCALARS.get(head[1:] if unsigned else head)
    if scalar is None or lanes not in ("1", "2", "3", "4"):
        return None
    return (f"unsigned {scalar}" if unsigned else scalar), int(lanes)


class _Reader:
    """Reads the members of struct definitions found under ``roots``."""

    def __init__(self, roots: Sequence[Node]) -> None:
        self.roots = roots
        self.aliases = _number_typedefs(roots)

    def members(self, spec: Node, where: str, depth: int) -> tuple[_Member, ...]:
        if spec.type == "union_specifier":
            raise _Unsupported(f"{where} is a union")
        if depth > _DEPTH:
            raise _Unsupported(f"{where} nests structs more than {_DEPTH} deep")
        if any(c.type == "base_class_clause" for c in spec.children):
            raise _Unsupported(f"{where} derives from another class")
        body = spec.child_by_field_name("body")
        out: list[_Member] = []
        for item in body.named_children if body is not None else []:
            if item.type == "field_declaration":
                out.extend(self._field(item, where, depth))
            elif item.type in ("function_definition", "declaration") and self._constructor(item, spec):
                raise _Unsupported(f"{where} has a constructor that takes arguments")
        return tuple(out)

    def _constructor(self, item: Node, spec: Node) -> bool:
        """A constructor with parameters (``Params(int n)``): ``T w{}`` would not compile."""
        tag = spec.child_by_field_name("name")
        fd = item.child_by_field_name("declarator")
        if tag is None or fd is None or fd.type != "function_declarator":
            return False
        params = fd.child_by_field_name("parameters")
        return node_text(fd.child_by_field_name("declarator")) == node_text(tag) and params is not None and \
            params.named_child_count > 0

    def _field(self, decl: Node, where: str, depth: int) -> list[_Member]:
        if any(c.type == "storage_class_specifier" for c in decl.children):
            return []  # a static member is no part of the object
        ty = decl.child_by_field_name("type")
        const = any(c.type == "type_qualifier" and node_text(c) == "const" for c in decl.children)
        out = []
        for d in field_declarators(decl):
            name, count, pointer = self._declarator(d, where)
            field = f"{where}'s field `{name}`"
            if const and not pointer:
                raise _Unsupported(f"{field} is const")
            out.append(self._pointer(ty, name, field, const) if pointer else self._member(ty, name, field, depth,
                                                                                           count))
        return out

    def _pointer(self, ty: Node | None, name: str, field: str, const: bool) -> _Member:
        """A pointer field: to numbers (a buffer the harness passes), else unsupported."""
        ctype = " ".join(node_text(ty).replace("std::", "").split()) if ty is not None else ""
        number = self.aliases.get(ctype, ctype)
        if number not in NUMBER_TYPES:
            raise _Unsupported(f"{field} is a pointer to `{ctype}`, not to numbers")
        return _Member(name, number, NUMBER_TYPES[number], pointer=True, const=const)

    def _declarator(self, d: FieldDeclarator, where: str) -> tuple[str, int | None, bool]:
        """``(name, array length or None, is a pointer)`` of a field's declarator."""
        if d.bitfield:
            raise _Unsupported(f"{where}'s field `{d.text}` is a bit-field")
        if d.stars:
            name = d.text.split("*")[-1].split()[-1] if "*" in d.text else d.text
            if len(d.stars) > 1 or not d.plain or d.array:
                raise _Unsupported(f"{where}'s field `{name}` is a pointer to pointers, or an array of pointers")
            if "const" in d.stars[0].split():
                raise _Unsupported(f"{where}'s field `{name}` is a const pointer")
            return d.name, None, True
        if d.reference:
            raise _Unsupported(f"{where}'s field `{d.text.lstrip('& ')}` is a reference")
        if d.array:
            if d.size is None or d.size.type != "number_literal" or not d.plain:
                raise _Unsupported(f"{where}'s field `{d.text}` is an array whose size htam does not read")
            return d.name, int(node_text(d.size).rstrip("uUlL"), 0), False
        return d.text, None, False

    def _member(self, ty: Node | None, name: str, field: str, depth: int, count: int | None) -> _Member:
        ctype = " ".join(node_text(ty).replace("std::", "").split()) if ty is not None else ""
        if ty is not None and ty.type in _SPECIFIERS and \
                ty.child_by_field_name("body") is not None:
            return _Member(name, ctype, members=self.members(ty, field, depth + 1), count=count)
        number = self.aliases.get(ctype, ctype)
        if number in NUMBER_TYPES:
            return _Member(name, number, NUMBER_TYPES[number], count=count)
        vec = _vector(ctype)
        if vec is not None and vec[0] in NUMBER_TYPES:
            lanes = tuple(_Member(c, vec[0], NUMBER_TYPES[vec[0]]) for c in _LANES[:vec[1]])
            return _Member(name, ctype, members=lanes, count=count)
        spec = next(_definitions(self.roots, ctype.removeprefix("struct ").removeprefix("class ").strip()), None)
        if spec is None:
            raise _Unsupported(f"{field} is a `{ctype}`, which is no number or struct of numbers htam reads")
        return _Member(name, ctype, members=self.members(spec, field, depth + 1), count=count)


def _leaves(members: Sequence[_Member], prefix: str = "") -> Iterator[StructField]:
    for m in members:
        for path in [f"{prefix}{m.name}[{i}]" for i in range(m.count)] if m.count is not None else \
                [f"{prefix}{m.name}"]:
            if m.dtype is not None:
                yield StructField(path, m.ctype, m.dtype, m.pointer, m.const)
            else:
                yield from _leaves(m.members, f"{path}.")


def struct_layout(roots: Sequence[Node], type_name: str) -> StructLayout | None:
    """The number fields of the struct ``type_name`` defined under ``roots`` (a file's and its local headers'
    syntax trees).

    Args:
        roots: root nodes to look for the definition in (the file's, its headers').
        type_name: the parameter's type without qualifiers (``Weights``, ``struct Weights``, ``ns::Params``).

    Returns:
        ``None`` when no struct, class or union of that name is defined there; else its layout (a pointer to
        numbers is a field too, :attr:`StructField.pointer`), whose ``unsupported`` names the field that keeps it
        from being passed as numbers and buffers (a pointer to anything but numbers, a union, a ``std::vector``, a
        bit-field, a const member, a constructor with arguments, more than :data:`MAX_FIELDS` fields).
    """
    name = type_name.replace("struct ", "").replace("class ", "").replace("union ", "").strip().split("::")[-1]
    spec = next(_definitions(roots, name), None)
    if spec is None:
        return None
    where = f"`{name}`"
    try:
        members = _Reader(roots).members(spec, where, 0)
    except _Unsupported as e:
        return StructLayout(name, unsupported=e.reason)
    fields = tuple(_leaves(members))
    if not fields:
        return StructLayout(name, unsupported=f"{where} holds no number field", empty=not members)
    if len(fields) > MAX_FIELDS:
        return StructLayout(name, unsupported=f"{where} holds {len(fields)} numbers (htam passes at most "
                                              f"{MAX_FIELDS}; pass them as a buffer)")
    return StructLayout(name, fields, None, members)


def file_struct_layout(text: str, path: str | None, type_name: str) -> StructLayout | None:
    """:func:`struct_layout` of ``type_name`` in the CUDA text ``text`` of file ``path`` and the local headers it
    includes (``None`` for ``path``: the text alone)."""
    src = text.encode("utf-8")
    return struct_layout([h.root for h in local_headers(src, path)] + [parse_cuda(src).root_node], type_name)


def _brace(members: Sequence[_Member], values: Iterator[object], prefix: str, out: dict[str, object]) -> None:
    """Assign a brace list's ``values`` to ``members`` in order; a nested tuple is a nested brace list (of a
    struct, or of an array's elements), a plain value fills the next number (brace elision)."""
    for m in members:
        if m.count is None:
            _assign_one(m, f"{prefix}{m.name}", values, out)
            continue
        v = next(values, _END)
        if v is _END:
            return
        elem = _Member(m.name, m.ctype, m.dtype, m.members)
        stream = iter(v) if isinstance(v, tuple) else _chain(v, values)
        for i in range(m.count):
            _assign_one(elem, f"{prefix}{m.name}[{i}]", stream, out)


def _assign_one(m: _Member, path: str, values: Iterator[object], out: dict[str, object]) -> None:
    """The next of a brace list's ``values`` for the member ``m`` at ``path`` (:func:`_give`)."""
    v = next(values, _END)
    if v is not _END:
        _give(m, path, v, out, values)


def _give(m: _Member, path: str, v: object, out: dict[str, object], rest: Iterator[object] | None = None) -> None:
    """The value ``v`` for the member ``m`` at ``path``: a brace list (a tuple) fills it (:func:`_fill`), a plain
    value sets a number; a plain value for a struct starts its brace elision, taking the values after it from
    ``rest`` (``None``: no list goes on, as for an assignment, and the value is left out)."""
    if isinstance(v, tuple):
        _fill(m, path, v, out)
    elif m.dtype is not None:
        out[path] = v
    elif rest is not None:
        _brace(m.members, _chain(v, rest), f"{path}.", out)


_END = object()


def _chain(first: object, rest: Iterator[object]) -> Iterator[object]:
    yield first
    yield from rest


def _fill(m: _Member, path: str, values: tuple[object, ...], out: dict[str, object]) -> None:
    """A brace list ``values`` (``{...}``) for the member ``m`` at ``path``: every number under it is set (those
    the list leaves out are value-initialized: 0)."""
    if m.dtype is not None:
        out[path] = 0
    for f in _leaves(m.members, f"{path}."):
        out[f.path] = 0
    if m.dtype is not None:
        if values:
            out[path] = values[0]
        return
    _brace(m.members, iter(values), f"{path}.", out)


def field_values(layout: StructLayout, brace: tuple[object, ...] | None,
                 assigned: Sequence[tuple[str, object]] = ()) -> dict[str, object]:
    """The values of ``layout``'s fields a host program gives, by path (a field it leaves unset is absent).

    Args:
        layout: the struct's layout (:func:`struct_layout`).
        brace: its brace initializer's values in order (a nested brace list is a tuple), ``None`` when it has
            none; every field the list does not reach is 0 (value-initialized), as in C++.
        assigned: ``(path, value)`` in program order, for designated initializers (``.wa = 0.5f``) and field
            assignments (``w.s.x = 1;``, path ``s.x``); a tuple value assigns a brace list to a nested struct.
    """
    out: dict[str, object] = {}
    if brace is not None:
        for f in layout.fields:
            out[f.path] = 0
        _brace(layout.members, iter(brace), "", out)
    for path, v in assigned:
        path = path.lstrip(".")
        target = _member_at(layout.members, path)
        if target is not None:
            _give(target, path, v, out)
    return out


def _member_at(members: Sequence[_Member], path: str) -> _Member | None:
    """The member (or array element) at ``path`` (``s.x``, ``c[1]``), ``None`` when there is none."""
    head, _, rest = path.partition(".")
    name, _, index = head.partition("[")
    m = next((m for m in members if m.name == name), None)
    if m is None or (m.count is None) != (not index):
        return None
    if index:
        m = _Member(m.name, m.ctype, m.dtype, m.members)
    if not rest:
        return m
    return _member_at(m.members, rest)
