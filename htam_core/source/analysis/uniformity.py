"""Uniform values: whether a name or an expression of a CUDA kernel holds the same value in every thread of a
block, or in every thread of the grid.

A value is *uniform* over a scope when every thread of it computes the same value at the same point of the
kernel. :func:`thread_uniform` answers that for an expression and :func:`uniform_name` for a name, from the kernel
body's syntax, conservatively (``False`` when in doubt):

- ``threadIdx`` differs between the threads of a block; ``blockIdx`` between blocks (so it is uniform over a
  ``"block"``, not over the ``"grid"``); ``blockDim`` and ``gridDim`` are uniform over the grid, and ``gridDim``
  is not when the caller asks for a value that holds *whatever the grid* (``any_grid``: a step that changes the
  launch).
- Calls whose value differs between threads: warp intrinsics (``__shfl_*``, ``__ballot_sync``, ``__activemask``),
  atomics (their old value), clocks, ``curand``, cooperative-groups ranks (``thread_rank()``, ``thread_index()``;
  ``group_index()``/``block_rank()`` over the grid), ``this_grid()`` with ``any_grid``, a function of the unit or a
  template parameter whose code may read the indices (:attr:`Uniformity.hidden`), and a macro whose text reads a
  varying builtin (:attr:`Uniformity.macros`).
- A name that is not a local of the body (a parameter never written, a template parameter, a constant, an
  object-like macro of constants) is uniform. A local is uniform when each of its initializers and writes reads
  only uniform values and runs under uniform control: every enclosing ``if``/``switch``/loop condition, the left
  operand of an enclosing ``&&``/``||``, and every ``break``/``continue``/``return`` inside an enclosing loop or
  ``switch`` is decided by uniform values. A name written in a loop whose trip count is uniform stays uniform (its
  value at each point is the same in every thread); one written under ``if (threadIdx.x == 0)``, in a loop that
  starts at ``threadIdx.x`` or that a thread-dependent ``break`` leaves is not.
- A range-based ``for`` variable is uniform when its range is (and the loop is left under uniform control).
- A local array, reference or structured binding, a local whose address is taken (``&x``), that an inline ``asm``
  writes or that is passed to a hidden function, and any local written in a kernel with a ``goto`` are not
  uniform; a name declared twice (shadowing) is read as one name, so it is uniform only if every declaration is.

Idea source: divergence (uniformity) analysis of SIMT programs: Coutinho, Sampaio, Pereira and Meira, "Divergence
Analysis and Optimizations" (PACT 2011), and LLVM's ``UniformityAnalysis`` (values and control dependence on
thread-varying sources), restricted to one kernel body's syntax.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.builtins import is_atomic_builtin
from htam_core.source.analysis.forms import KernelView
from htam_core.source.analysis.nodes import Node

__all__ = ["Scope", "Uniformity", "kernel_uniformity", "thread_position", "thread_uniform", "uniform_name"]

#: Over which threads a value must be the same: the threads of one block, or every thread of the grid.
Scope = Literal["block", "grid"]

#: Calls whose value differs between the threads of one block: warp intrinsics, atomics' old values (see
#: :func:`~htam_core.source.analysis.builtins.is_atomic_builtin`), clocks, random numbers, a thread's
#: cooperative-groups rank (CUDA C++ Programming Guide, "Warp Shuffle Functions", "Warp Vote Functions",
#: "Time Function", "Cooperative Groups").
_THREAD_CALLS = re.compile(r"__shfl\w*|__ballot\w*|__any\w*|__all\w*|__match\w*|__activemask|__lanemask\w*"
                           r"|__reduce\w*|__uni\w*|clock|clock64|__globaltimer|curand\w*|thread_rank|thread_index"
                           r"|meta_group_rank|lane_id|laneid")
#: Calls whose value is the same in a block but differs between blocks: the block's rank, and the block-wide
#: barrier votes (``__syncthreads_count``).
_BLOCK_CALLS = re.compile(r"group_index|block_index|block_rank|__syncthreads_\w+|cluster\w*rank")
#: Calls whose value changes with the grid: the grid group (its ``size()``, ``num_blocks()``).
_GRID_CALLS = re.compile(r"this_grid|this_multi_grid")

#: Calls whose value is the calling thread's position in its block, warp or tile (cooperative groups' ranks, a lane
#: id helper); their object and arguments must be uniform.
_POSITION_CALLS = re.compile(r"thread_rank|thread_index|meta_group_rank|lane_id|laneid")
#: Operators of an index computation (``threadIdx.x % 32``, ``threadIdx.y * blockDim.x + threadIdx.x``).
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"})

_OBJECTS: dict[str, frozenset[str]] = {"block": frozenset({"threadIdx"}), "grid": frozenset({"threadIdx", "blockIdx"})}
#: How many locals deep a name is followed before it counts as not uniform.
_DEPTH = 8


@dataclass(frozen=True)
class Uniformity:
    """What deciding uniformity needs of one kernel (build it with :func:`kernel_uniformity`).

    Attributes:
        text: the source text of a node of the kernel's parse.
        body: the kernel's body: its locals are the names declared or written there.
        macros: ``(macro, builtin)`` for each builtin read in the text of a macro the body uses
            (:attr:`~htam_core.source.analysis.facts.KernelFacts.macro_builtins`: ``("GID", "threadIdx.x")``).
        hidden: the functions the body calls whose code may read the thread or block indices
            (:attr:`~htam_core.source.analysis.facts.KernelFacts.index_calls`).
    """

    text: Callable[[Node], str]
    body: Node
    macros: tuple[tuple[str, str], ...] = ()
    hidden: frozenset[str] = frozenset()
    _defs: dict[str, list[tuple[Node, tuple[Node, ...]]] | None] = field(default_factory=dict, compare=False,
                                                                          repr=False)
    _pointers: list[frozenset[str]] = field(default_factory=list, compare=False, repr=False)


def kernel_uniformity(view: KernelView) -> Uniformity:
    """The :class:`Uniformity` of a kernel view (its body, macros and hidden calls from its facts)."""
    return Uniformity(view.t, view.body, view.facts.macro_builtins, frozenset(view.facts.index_calls))


@dataclass(frozen=True)
class _Ask:
    """One question: the kernel, the builtin objects that vary over the scope, and the calls that do."""

    u: Uniformity
    objects: frozenset[str]
    calls: tuple[re.Pattern[str], ...]


def _ask(u: Uniformity, scope: Scope, any_grid: bool) -> _Ask:
    if scope not in _OBJECTS:
        raise ValueError(f"scope must be 'block' or 'grid', not {scope!r}")
    objects = _OBJECTS[scope] | ({"gridDim"} if any_grid else set())
    calls = (_THREAD_CALLS, *((_BLOCK_CALLS,) if scope == "grid" else ()), *((_GRID_CALLS,) if any_grid else ()))
    return _Ask(u, frozenset(objects), calls)


def thread_uniform(u: Uniformity, node: Node, *, scope: Scope = "grid", any_grid: bool = False) -> bool:
    """``node`` (an expression of the kernel) has the same value in every thread of ``scope`` (module docstring).

    Args:
        u: the kernel (:func:`kernel_uniformity`).
        node: an expression (or any node) of the kernel's parse.
        scope: ``"block"`` (``blockIdx`` is uniform) or ``"grid"`` (it is not).
        any_grid: the value must also be the same whatever grid the kernel is launched with (``gridDim`` and the
            grid group vary).

    Returns:
        ``True`` when uniform; ``False`` when it differs between threads or cannot be told.

    Raises:
        ValueError: ``scope`` is not ``"block"`` or ``"grid"``.
    """
    return _expr(_ask(u, scope, any_grid), node, frozenset())


def uniform_name(u: Uniformity, name: str, *, scope: Scope = "grid", any_grid: bool = False) -> bool:
    """The name ``name`` (a local, a parameter, a constant or a macro of the kernel) holds the same value in every
    thread of ``scope`` wherever the body reads it (arguments and errors as :func:`thread_uniform`)."""
    return _name(_ask(u, scope, any_grid), name, frozenset())


def thread_position(u: Uniformity, node: Node) -> bool:
    """``node`` differs between the threads of a block only through the thread's position in it: it is computed,
    by arithmetic alone, from ``threadIdx`` (any axis), a cooperative-groups rank (``block.thread_rank()``,
    ``tile.thread_rank()``, ``block.thread_index().x``) and values the same in every block (``blockDim.x``, a
    parameter: not ``blockIdx``, so the global index ``i`` is not a position in the block), directly or through
    locals whose every definition is such (``lane = threadIdx.x % 32``, ``tid = threadIdx.y * blockDim.x +
    threadIdx.x``). ``if (position == 0)`` then selects threads by where they sit in the block, not by the data they
    read; a load (``keys[i]``), a comparison, a call of any other function or a varying macro is not a position.
    ``False`` for a value uniform over the block. Raises nothing.

    Args:
        u: the kernel (:func:`kernel_uniformity`).
        node: an expression of the kernel's parse.

    Idea source: the thread-selection guards of the CUDA samples' ``reduction`` (``if (tid == 0)``, ``if (lane ==
    0)``), told apart from a per-element predicate by the value dependence of divergence analysis (module docstring).
    """
    return not _expr(_ask(u, "block", False), node, frozenset()) and _position(_ask(u, "grid", False), node,
                                                                                 frozenset())


def _position(a: _Ask, node: Node, seen: frozenset[str]) -> bool:
    """``node`` is uniform over the grid or a position (:func:`thread_position`; ``seen``: locals being decided)."""
    node = syn.strip_casts(node)
    if _expr(a, node, frozenset()):  # uniform in its own right (the locals being decided are not)
        return True
    if syn.is_identifier(node):
        return _position_name(a, a.u.text(node), seen)
    if syn.is_field(node):
        obj = node.child_by_field_name("argument")
        return obj is not None and (a.u.text(obj).strip() == "threadIdx" or (syn.is_call(obj)
                                                                              and _position(a, obj, seen)))
    if syn.is_call(node):
        return bool(_POSITION_CALLS.fullmatch(_callee(a, node))) and all(_expr(a, c, frozenset())
                                                                          for c in _call_operands(node))
    if syn.is_binary(node) and a.u.text(node.child_by_field_name("operator")) in _ARITHMETIC:
        return all(_position(a, node.child_by_field_name(f), seen) for f in ("left", "right"))  # type: ignore[arg-type]
    if syn.is_unary(node) and a.u.text(node.child_by_field_name("operator")) in ("-", "+", "~"):
        return _position(a, node.child_by_field_name("argument"), seen)  # type: ignore[arg-type]
    return False


def _position_name(a: _Ask, name: str, seen: frozenset[str]) -> bool:
    """The local ``name`` holds a position: each definition is one, under uniform control."""
    if name in a.objects or name in seen or _macro_varies(a, name) or name in a.u.hidden:
        return name in seen
    defs = _definitions(a.u, name)
    if not defs or len(seen) >= _DEPTH:
        return False
    inner = seen | {name}
    return all(_control(a, at, frozenset()) and all(_position(a, v, inner) for v in values[-1:]) and
               not _compound(a, at) for at, values in defs)


def _compound(a: _Ask, at: Node) -> bool:
    """``at`` (a definition) is a compound write (``x += v``, ``x++``): it adds to the earlier value."""
    op = at.child_by_field_name("operator")
    return syn.is_update(at) or (syn.is_assignment(at) and op is not None and a.u.text(op) != "=")


def _expr(a: _Ask, node: Node, seen: frozenset[str]) -> bool:
    """``node`` reads only uniform names and calls (``seen``: the names being decided)."""
    if syn.is_identifier(node):
        return _name(a, a.u.text(node), seen, address_only=_address_use(a.u, node))
    if syn.is_call(node):
        return not _varying_call(a, node) and all(_expr(a, c, seen) for c in _call_operands(node))
    return all(_expr(a, c, seen) for c in node.named_children)


def _call_operands(call: Node) -> list[Node]:
    """What a call evaluates besides its callee's name: the arguments, and the object of a method call."""
    fn, args = call.child_by_field_name("function"), call.child_by_field_name("arguments")
    out = [args] if args is not None else []
    if syn.is_field(fn):
        obj = fn.child_by_field_name("argument")  # type: ignore[union-attr]
        out += [obj] if obj is not None else []
    return out


def _callee(a: _Ask, call: Node) -> str:
    """The called name without namespace, template arguments or object (``cg::this_grid`` -> ``this_grid``,
    ``g.thread_rank`` -> ``thread_rank``)."""
    fn = call.child_by_field_name("function")
    if syn.is_field(fn):
        return a.u.text(fn.child_by_field_name("field")).strip()  # type: ignore[union-attr]
    return a.u.text(fn).split("<", 1)[0].rsplit("::", 1)[-1].strip()


def _varying_call(a: _Ask, call: Node) -> bool:
    name = _callee(a, call)
    return (any(p.fullmatch(name) for p in a.calls) or is_atomic_builtin(name) or name in a.u.hidden
            or _macro_varies(a, name))


def _macro_varies(a: _Ask, name: str) -> bool:
    """``name`` is a macro whose text reads a builtin that varies over the question's scope."""
    return any(m == name and b.split(".")[0] in a.objects for m, b in a.u.macros)


def _name(a: _Ask, name: str, seen: frozenset[str], address_only: bool = False) -> bool:
    """The name ``name`` is uniform (module docstring): not a varying builtin, and every definition of it reads
    uniform values under uniform control. With ``address_only`` (a pointer's own value is read, as in an alignment
    test ``reinterpret_cast<uintptr_t>(p) & 15``), the writes through the pointer (``p[i] = v``, ``*p = v``,
    ``p->f = v``) are not definitions of it: they change the memory it points to, not the address."""
    if name in a.objects or _macro_varies(a, name) or name in a.u.hidden:
        return False
    if name in seen:
        return True  # its own earlier value (`tail += 4`): uniform when every write is
    defs = _definitions(a.u, name)
    if defs is not None and address_only:
        defs = [(at, values) for at, values in defs if not _written_through(at)]
    if defs is None or (defs and len(seen) >= _DEPTH):
        return False
    seen = seen | {name}
    return all(_control(a, at, seen) and all(_expr(a, v, seen) for v in values) for at, values in defs)


def _written_through(at: Node) -> bool:
    """``at`` (a definition of :func:`_definitions`) writes memory through a pointer rather than the name itself:
    its target is a subscript, a dereference or an ``->`` field (``p[i] = v``, ``*p += v``, ``p->n = v``)."""
    target = at.child_by_field_name("left") or at.child_by_field_name("argument")
    while syn.is_parenthesized(target):
        target = target.named_children[0] if target.named_children else None  # type: ignore[union-attr]
    if syn.is_field(target):
        op = target.child_by_field_name("operator")  # type: ignore[union-attr]
        return op is not None and op.type == "->"
    return syn.is_subscript(target) or (syn.is_pointer_expression(target) and not syn.is_address_of(target))


def _address_use(u: Uniformity, use: Node) -> bool:
    """``use`` (an identifier) reads a pointer's own value, not the memory behind it: the name is declared a
    pointer (a parameter or a local of the kernel), and the use is not the base of a subscript, dereference or
    field (``reinterpret_cast<uintptr_t>(p)``, ``p != nullptr``, ``q = p + 4``)."""
    parent = use.parent
    if syn.is_memory_reference(parent) and parent.child_by_field_name("argument") == use:  # type: ignore[union-attr]
        return False
    if not u._pointers:  # the names declared pointers in the function (its parameters and body), read once
        scope = u.body.parent if u.body.parent is not None else u.body
        u._pointers.append(frozenset(u.text(syn.identifiers(d)[0]) for d in syn.walk(scope)
                                     if syn.is_pointer_declarator(d) and syn.identifiers(d)))
    return u.text(use) in u._pointers[0]


def _definitions(u: Uniformity, name: str) -> list[tuple[Node, tuple[Node, ...]]] | None:
    """``(where, values read)`` for each declaration and write of the local ``name`` in the body (empty for a
    name that is not a local), or ``None`` when its value cannot be followed (module docstring)."""
    if name not in u._defs:
        u._defs[name] = _read_definitions(u, name)
    return u._defs[name]


def _read_definitions(u: Uniformity, name: str) -> list[tuple[Node, tuple[Node, ...]]] | None:
    out: list[tuple[Node, tuple[Node, ...]]] = []
    for decl in syn.declarations(u.body):
        for d in decl.children_by_field_name("declarator"):
            found = _declared(u, d, name)
            if found is False:
                return None
            if found is not True and found is not None:
                out.append(found)
    for loop in syn.range_for_loops(u.body):
        d, right = loop.child_by_field_name("declarator"), loop.child_by_field_name("right")
        found = _declared(u, d, name) if d is not None else None
        if found is False or (found is not None and right is None):
            return None
        if found is not None:
            out.append((loop, (right,)))  # type: ignore[arg-type]  # each element of the range in turn
    for w in syn.writes(u.body):
        target = w.child_by_field_name("left") or w.child_by_field_name("argument")
        if target is None or _base_name(u, target) != name:
            continue
        right = w.child_by_field_name("right")
        out.append((w, tuple(v for v in (target, right) if v is not None)))
    if out and _escapes(u, name):
        return None
    return out


def _declared(u: Uniformity, d: Node, name: str) -> tuple[Node, tuple[Node, ...]] | bool | None:
    """What the declarator ``d`` says of ``name``: ``None`` when it declares another name, ``False`` when it
    declares ``name`` as something whose value is not followed (an array, a reference), ``True`` for a plain
    declaration without a value, else ``(d, (value,))``."""
    inner = d.child_by_field_name("declarator") if syn.is_init_declarator(d) else d
    declared, plain = inner, True
    while declared is not None and not syn.is_identifier(declared):
        plain = plain and syn.is_pointer_declarator(declared)
        nxt = declared.child_by_field_name("declarator")
        declared = nxt if nxt is not None or not syn.is_wrapping_declarator(declared) else declared.named_children[-1]
    if declared is None:  # a structured binding (`auto [a, b] = ...`): its names are not followed
        return False if inner is not None and any(u.text(n) == name for n in syn.identifiers(inner)) else None
    if u.text(declared) != name:
        return None
    if not plain:
        return False
    value = d.child_by_field_name("value") if syn.is_init_declarator(d) else None
    return (d, (value,)) if value is not None else True


def _base_name(u: Uniformity, target: Node) -> str | None:
    """The variable a write's target writes: ``x`` of ``x``, ``x[i]``, ``x.f``, ``*x``, ``(x)``."""
    node: Node | None = target
    while node is not None and not syn.is_identifier(node):
        if not (syn.is_memory_reference(node) or syn.is_parenthesized(node)):
            return None
        node = node.child_by_field_name("argument") or (node.named_children[0] if node.named_children else None)
    return u.text(node) if node is not None else None


def _escapes(u: Uniformity, name: str) -> bool:
    """The local ``name`` may be written where its writes are not seen: its address is taken, an inline ``asm``
    writes it, it is passed to a hidden function, or the body has a ``goto``."""
    if any(syn.is_goto(j) for j in syn.jumps(u.body)):
        return True
    if any(_base_name(u, o) == name for o in syn.asm_outputs(u.body)):
        return True
    for p in syn.writes_or_addresses(u.body):
        arg = p.child_by_field_name("argument")
        if syn.is_address_of(p) and arg is not None and _base_name(u, arg) == name:
            return True
    return any(_callee_name(u, c) in u.hidden and any(u.text(x) == name for x in _arguments(c))
               for c in syn.calls(u.body))


def _callee_name(u: Uniformity, call: Node) -> str:
    return u.text(call.child_by_field_name("function")).split("<", 1)[0].rsplit("::", 1)[-1].strip()


def _arguments(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    return list(args.named_children) if args is not None else []


def _guard(p: Node, child: Node) -> Node | None:
    """The expression that decides whether ``child`` (a child of ``p``) runs: the condition of an ``if``, loop,
    ``switch`` or conditional, or the left operand of ``&&``/``||`` around its right one; else ``None``."""
    cond = p.child_by_field_name("condition")
    if cond is not None and cond != child:
        return cond
    if syn.is_binary(p) and p.child_by_field_name("right") == child:
        op = p.child_by_field_name("operator")
        if op is not None and op.type in ("&&", "||", "and", "or"):
            return p.child_by_field_name("left")
    return None


def _control(a: _Ask, at: Node, seen: frozenset[str]) -> bool:
    """Whether ``at`` runs is decided by uniform values: every guard around it up to the body, and every jump out
    of an enclosing loop or ``switch``."""
    child, p = at, at.parent
    while p is not None and child != a.u.body:
        g = _guard(p, child)
        if g is not None and not _expr(a, g, seen):
            return False
        loop = syn.is_breakable(p) or syn.is_range_for(p)
        if loop and not all(_guarded_by_uniform(a, j, p, seen) for j in syn.jumps(p)):
            return False
        child, p = p, p.parent
    return True


def _guarded_by_uniform(a: _Ask, node: Node, stop: Node, seen: frozenset[str]) -> bool:
    """Every guard around ``node`` up to ``stop`` reads only uniform values."""
    child, p = node, node.parent
    while p is not None and child != stop:
        g = _guard(p, child)
        if g is not None and not _expr(a, g, seen):
            return False
        child, p = p, p.parent
    return True
