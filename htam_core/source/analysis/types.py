"""Type aliases resolved in the unit: ``typedef float floatX;`` and ``using floatX = float;``, through the
preprocessor branch the build takes.

Production CUDA often spells its element type through an alias chosen by the preprocessor::

    #if defined(ENABLE_BF16)
    typedef __nv_bfloat16 floatX;
    #else
    typedef float floatX;
    #endif

:func:`resolve_type` follows such aliases (chains included) to the type they name. A definition inside
``#if``/``#elif``/``#else``/``#ifdef``/``#ifndef`` counts only when its branch is decided by ``defined(NAME)``
tests against the unit's own ``#define`` lines (the build the engine compiles, with no ``-D`` flags); any other
condition leaves the alias unresolved, and the name is returned as written. A ``-D`` flag given at build time
can pick another branch: candidates are compiled and verified with the harness's own flags, so a wrong choice
fails verification, never silently passes.

:class:`TypeEnv` holds a unit's type names once (built by :attr:`CudaSource.types
<htam_core.source.analysis.unit.CudaSource.types>`, given by every view of a kernel as ``KernelView.types``): the
aliases, resolved on demand and remembered, and the kernel's template parameters, so every step that asks what a
declared type is (``I total = 0;`` after ``typedef int64_t I;``) gets the one answer.

Idea source: ISO C11 6.10.1 (conditional inclusion) and 6.7.8 (type definitions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.syntax import of_type, unwrap_parens

_BRANCHES = ("preproc_if", "preproc_ifdef", "preproc_elif", "preproc_elifdef", "preproc_else")


def _envs(env: ConstEnv) -> list[ConstEnv]:
    """The unit, then its local headers (nearest include first)."""
    return [env, *(ConstEnv(h.src, h.root) for h in reversed(env.headers()))]


def _is_defined(env: ConstEnv, name: str) -> bool:
    """``name`` has a ``#define`` (with or without a value) in the unit or its local headers."""
    for e in _envs(env):
        for pd in of_type(e.root, ("preproc_def", "preproc_function_def")):
            if e.t(pd.child_by_field_name("name")) == name:
                return True
    return False


def _condition(env: ConstEnv, cond: Node | None) -> bool | None:
    """The value of a ``#if``/``#elif`` condition made of ``defined(X)``, ``!``, ``&&`` and ``||``, else ``None``."""
    if cond is None:
        return None
    cond = unwrap_parens(cond)
    if cond.type == "preproc_defined":
        ids = [c for c in cond.named_children if c.type == "identifier"]
        return _is_defined(env, env.t(ids[0])) if len(ids) == 1 else None
    if cond.type == "unary_expression" and env.t(cond.child_by_field_name("operator")) == "!":
        inner = _condition(env, cond.child_by_field_name("argument"))
        return None if inner is None else not inner
    if cond.type == "binary_expression" and env.t(cond.child_by_field_name("operator")) in ("&&", "||"):
        a = _condition(env, cond.child_by_field_name("left"))
        b = _condition(env, cond.child_by_field_name("right"))
        if a is None or b is None:
            return None
        return (a and b) if env.t(cond.child_by_field_name("operator")) == "&&" else (a or b)
    return None


def _branch_taken(env: ConstEnv, branch: Node) -> bool | None:
    """Whether the build takes ``branch`` (a ``#if``/``#ifdef``/``#elif``/``#else`` node), else ``None``."""
    if branch.type == "preproc_ifdef":
        name = branch.child_by_field_name("name")
        if name is None:
            return None
        defined = _is_defined(env, env.t(name))
        return defined if env.t(branch.children[0]).strip() == "#ifdef" else not defined
    own = True if branch.type == "preproc_else" else _condition(env, branch.child_by_field_name("condition"))
    if own is None:
        return None
    # an #elif or #else is taken only when every earlier branch of its chain was not
    prev = branch.parent
    while prev is not None and prev.type in ("preproc_if", "preproc_elif", "preproc_ifdef") and \
            prev.child_by_field_name("alternative") == branch:
        earlier = _branch_taken(env, prev)
        if earlier is None:
            return None
        if earlier:
            return False
        branch, prev = prev, prev.parent
    return own


def is_active(env: ConstEnv, node: Node) -> bool | None:
    """Whether ``node`` (a file-level definition) is compiled: every enclosing preprocessor branch is taken.
    ``None`` when some branch cannot be decided."""
    child, p = node, node.parent
    while p is not None:
        if p.type in _BRANCHES and p.child_by_field_name("alternative") != child and \
                p.child_by_field_name("condition") != child:
            taken = _branch_taken(env, p)
            if taken is not True:
                return taken
        child, p = p, p.parent
    return True


def _definitions(env: ConstEnv, name: str) -> list[tuple[Node, str]]:
    """``(definition node, aliased type text)`` of every ``typedef``/``using`` of ``name`` in the unit."""
    out = []
    for d in of_type(env.root, ("type_definition", "alias_declaration")):
        if d.type == "type_definition":
            decl, typ = d.child_by_field_name("declarator"), d.child_by_field_name("type")
        else:
            decl, typ = d.child_by_field_name("name"), d.child_by_field_name("type")
        if decl is not None and typ is not None and decl.type == "type_identifier" and env.t(decl) == name:
            out.append((d, " ".join(env.t(typ).split())))
    return out


def resolve_type(env: ConstEnv, name: str, depth: int = 0) -> str:
    """The type ``name`` stands for after ``typedef``/``using`` aliases in the build's preprocessor branch
    (``"floatX"`` -> ``"float"``); ``name`` itself when it is no alias or the branch cannot be decided.

    Args:
        env: the unit's constants (its source, tree and ``#define`` lines).
        name: a type name as written (``"floatX"``; qualifiers already dropped).
        depth: recursion depth (chains of aliases; stops at 8).
    """
    if depth > 8 or not name.replace("_", "").replace("::", "").isalnum():
        return name
    for e in _envs(env):
        defs = _definitions(e, name)
        if not defs:
            continue
        active = {typ for d, typ in defs if is_active(e, d) is True}
        if len(active) != 1 or any(is_active(e, d) is None for d, _ in defs):
            return name
        return resolve_type(env, active.pop(), depth + 1)
    return name


#: The ``<cstdint>``/``<cstddef>`` integer names a kernel may write with ``std::`` or ``::`` before them.
_STD_INTEGERS = frozenset({"size_t", "ptrdiff_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
                           "int64_t", "uint64_t", "intptr_t", "uintptr_t"})
#: The ``<cstdint>``/``<cstddef>`` names of 64-bit integers on the LP64 hosts nvcc builds for.
_WIDE_STD = frozenset({"size_t", "ptrdiff_t", "ssize_t", "int64_t", "uint64_t", "intptr_t", "uintptr_t"})
#: Qualifiers that do not change which type a name is (``const I`` is an ``I``).
_QUALIFIERS = frozenset({"const", "volatile", "__restrict__", "__restrict", "restrict"})


@dataclass(frozen=True)
class TypeEnv:
    """The type names a kernel's unit gives: its ``typedef``/``using`` aliases in the build's preprocessor branch
    (:func:`resolve_type`, the unit and its local headers) and the kernel's template parameters. Built once per
    parsed unit (:attr:`~htam_core.source.analysis.unit.CudaSource.types`), and read through every view of a
    kernel (:class:`~htam_core.source.analysis.forms.KernelView`), so a step that asks what type a declaration
    names gets the same answer as every other.

    Attributes:
        env: the unit's constants (its source, tree and ``#define`` lines, and its local headers).
        template_params: the names of the kernel's template parameters (``T`` of ``template <typename T>``).
    """

    env: ConstEnv
    template_params: frozenset[str] = frozenset()
    _seen: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def resolve(self, written: str | None) -> str:
        """The type ``written`` names: qualifiers (``const``, ``volatile``) dropped, aliases followed (``I`` of
        ``typedef int64_t I;`` -> ``"int64_t"``, ``using I = long long;`` -> ``"long long"``), ``std::`` dropped
        before a standard integer name (``std::int64_t`` -> ``"int64_t"``); ``""`` for ``None``. A name that is
        no alias (a template parameter, a builtin type, one whose branch is undecided) is returned as written,
        words joined by one space."""
        name = " ".join(w for w in (written or "").split() if w not in _QUALIFIERS)
        if name not in self._seen:
            got = resolve_type(self.env, name) if name else ""
            bare = got.removeprefix("::").removeprefix("std::")
            self._seen[name] = bare if bare in _STD_INTEGERS else got
        return self._seen[name]

    def is_wide_integer(self, written: str | None) -> bool:
        """``written`` names a 64-bit integer type once aliases are followed (:meth:`resolve`): ``long long``,
        ``int64_t``, ``size_t``, ``ptrdiff_t``, ``long`` (64-bit on the LP64 hosts nvcc builds for) in any
        spelling (``long long int``, ``unsigned long``, ``std::size_t``, ``I`` after ``typedef int64_t I;``).
        ``False`` for a 32-bit or narrower integer, for ``auto``, a template parameter, or a name not resolved:
        a caller that needs a counter that cannot wrap then widens it, which is right for any of them.
        Idea source: the LP64 data model (System V AMD64 ABI, "Fundamental Types"); C11 7.20.1.1."""
        name = self.resolve(written)
        core = [w for w in name.split() if w not in ("signed", "unsigned", "int")]
        return core in (["long"], ["long", "long"]) or name in _WIDE_STD

    def is_template(self, written: str | None) -> bool:
        """``written`` names one of the kernel's template parameters (through an alias too: ``using I = T;``)."""
        return self.resolve(written) in self.template_params
