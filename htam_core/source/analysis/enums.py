"""Enumerators of a CUDA/C++ unit: the names an ``enum`` declares, where they are visible and how to get their value.

``enum { BLOCK = 256 };``, ``enum Sizes { TILE = 32, HALF = TILE / 2 };``, ``enum { A, B, C };`` (0, 1, 2),
``enum class E : int { K = 8 };`` and enums inside a namespace or a class (``Cfg::BLOCK``) declare compile-time
integer constants (C++17 [dcl.enum]): an enumerator without ``= value`` is the previous one plus one, the first one
is 0. :func:`enumerators` reads them from the syntax tree only, each with the names a use may spell it by
(:attr:`Enumerator.names`); the value is computed by the one constant evaluator
(:class:`~htam_core.source.analysis.constants.ConstEnv`), which looks an enumerator up after the locals and the
file-scope declarations of the same name (a local of the same name hides it, [basic.scope.block]).

Names ([dcl.enum] 11, [basic.lookup.qual]): an unscoped enumerator is a member of the scope that holds its enum, so
``BLOCK`` and ``ns::BLOCK`` for one in ``namespace ns``, ``Cfg::BLOCK`` for one in ``struct Cfg`` (only qualified: a
class member is not visible outside it), and ``Sizes::TILE`` through its enum's name (C++11); a scoped enumerator
(``enum class``/``enum struct``) only through its enum's name: ``E::K``. Every qualified name is also read with the
outer namespaces written (``ns::Cfg::BLOCK``). An enum declared in a function body is visible in that function only.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from htam_core.source.analysis.syntax import of_type, text

__all__ = ["Enumerator", "enumerators", "namespace_path"]

#: the node types whose name qualifies the members they hold
_CLASS_TYPES = ("struct_specifier", "class_specifier", "union_specifier")


@dataclass(frozen=True)
class Enumerator:
    """One enumerator as declared.

    Attributes:
        name: its identifier (``BLOCK``).
        node: the ``enumerator`` node.
        value: its ``= value`` expression node, ``None`` when implicit.
        previous: the enumerator before it in the same enum (its value plus one is this one's when ``value`` is
            ``None``), ``None`` for the first.
        siblings: the names of the enum's enumerators (visible unqualified in each other's values).
        function: the function whose body declares the enum, ``None`` at file, namespace or class scope.
        namespaces: the names of the namespaces around the enum, outermost first (its scope for an unqualified
            use: the innermost enclosing namespace of the use that starts with them wins).
        names: every spelling a use may name it by (``("BLOCK", "ns::BLOCK")``), whitespace removed.
        scoped: its enum is an ``enum class``/``enum struct``: its enumerators do not convert to ``int`` implicitly
            ([dcl.enum] 10), so an edit spells the value, never the name, where an integer is meant.
    """

    name: str
    node: Node
    value: Node | None
    previous: Enumerator | None
    siblings: tuple[str, ...]
    function: Node | None
    namespaces: tuple[str, ...]
    names: tuple[str, ...]
    scoped: bool = False


def namespace_path(node: Node, src: bytes) -> tuple[str, ...]:
    """The names of the named namespaces around ``node``, outermost first (an anonymous one adds nothing)."""
    out: list[str] = []
    p = node.parent
    while p is not None:
        if p.type == "namespace_definition":
            n = p.child_by_field_name("name")
            if n is not None:
                out.extend(reversed(text(n, src).replace(" ", "").split("::")))  # namespace a::b { }
        p = p.parent
    return tuple(reversed(out))


def _scopes(spec: Node, src: bytes) -> tuple[list[tuple[str, bool]], Node | None]:
    """The named scopes around enum ``spec`` (``(name, is_class)``, outermost first) and the function around it."""
    out: list[tuple[str, bool]] = []
    function = None
    p = spec.parent
    while p is not None:
        if p.type in ("function_definition", "lambda_expression") and function is None:
            function = p
        if p.type == "namespace_definition" and (n := p.child_by_field_name("name")) is not None:
            out.extend((part, False) for part in reversed(text(n, src).replace(" ", "").split("::")))
        elif p.type in _CLASS_TYPES and (n := p.child_by_field_name("name")) is not None:
            out.append((text(n, src).replace(" ", ""), True))
        p = p.parent
    return list(reversed(out)), function


def _names(name: str, enum_name: str, scoped: bool, scopes: list[tuple[str, bool]]) -> tuple[str, ...]:
    """The spellings of enumerator ``name`` (see the module docstring)."""
    out: list[str] = []
    in_class = any(is_class for _, is_class in scopes)
    heads = [[s for s, _ in scopes[k:]] for k in range(len(scopes) + 1)]  # every suffix of the scope path
    for head in heads:
        if not scoped and (head or not in_class):
            out.append("::".join([*head, name]))
        if enum_name:
            out.append("::".join([*head, enum_name, name]))
    return tuple(dict.fromkeys(out))


def enumerators(root: Node, src: bytes) -> dict[str, list[Enumerator]]:
    """Every enumerator under ``root`` by each of its names (:attr:`Enumerator.names`), in source order. Reads the
    syntax tree only; never raises for odd code (an ``enum`` without a body declares nothing)."""
    out: dict[str, list[Enumerator]] = {}
    for spec in of_type(root, "enum_specifier"):
        body = spec.child_by_field_name("body")
        if body is None:
            continue
        scoped = any(c.type in ("class", "struct") for c in spec.children)
        en = spec.child_by_field_name("name")
        enum_name = text(en, src).replace(" ", "") if en is not None else ""
        scopes, function = _scopes(spec, src)
        nodes = [c for c in body.named_children if c.type == "enumerator"]
        siblings = tuple(text(c.child_by_field_name("name"), src) for c in nodes)
        previous: Enumerator | None = None
        for node, name in zip(nodes, siblings, strict=True):
            e = Enumerator(name, node, node.child_by_field_name("value"), previous, siblings, function,
                           tuple(s for s, is_class in scopes if not is_class), _names(name, enum_name, scoped, scopes),
                           scoped)
            for n in e.names:
                out.setdefault(n, []).append(e)
            previous = e
    return out
