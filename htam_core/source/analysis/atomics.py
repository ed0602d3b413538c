"""Atomic updates of one element and the number of elements their index can reach (CUDA).

``atomicAdd(&hist[data[i]], 1)`` is an :class:`~htam_core.source.analysis.facts.AtomicUpdate` of ``hist``; its
index's extent is read off the index as written: an enclosing ``if`` that checks it against a bound
(``if (b < NUM_BINS)``, ``if (v >= 0 && v < num_bins)``), or, followed through locals declared once, ``x % K`` with
``K`` a compile-time constant (a literal, ``#define``, ``constexpr`` or template parameter, kept as written so that a
template stays generic), ``x % n`` with ``n`` a scalar kernel parameter, ``x & M`` with ``M`` a constant (``M + 1`` values), or a load of an ``unsigned char``
(256 values); failing those, the element count of the buffer every launch in the file passes for the updated
pointer (``cudaMalloc(&bins, NBINS * sizeof(float))``, marked as coming from the launches: the kernel does not check
it). A histogram's bin count is this extent; the shared-memory privatization transform reads it. Also the
lines of the body's ``return`` statements (an early return skips a barrier placed after it).

An ``atomicAdd``/``atomicMax``/``atomicMin`` whose address is the same in every thread of a block (``*result``
through ``atomicAdd(result, v)``, ``&out[0]``, ``out + k`` with ``k`` uniform, ``&acc[blockIdx.y]``: a per-block
accumulation is covered too, since privatizing needs the address uniform over the block only) is a
:class:`~htam_core.source.analysis.facts.UniformAtomic`, read with the uniformity analysis; a cast address (another
element type), a shared-memory address, an atomic whose old value is used and one that only a few threads of a
block run (under ``if (tid == 0)``, ``if (lane == 0)``: the block or warp combined its values already) are not.

Idea source: the privatized histogram of the CUDA samples' ``histogram`` example and of Kirk and Hwu, "Programming
Massively Parallel Processors", chapter "Parallel histogram computation".
"""

from __future__ import annotations

from typing import Literal

from tree_sitter import Node

from htam_core.source.analysis.builtins import is_atomic_builtin
from htam_core.source.analysis.facts import Access, AtomicUpdate, PointerFacts, UniformAtomic
from htam_core.source.analysis.launch_buffers import launch_buffer_extent
from htam_core.source.analysis.syntax import of_type, strip_casts, unwrap_parens
from htam_core.source.analysis.uniformity import Uniformity, thread_position, thread_uniform
from htam_core.source.analysis.unit import CudaSource
from htam_core.source.model import Kernel

#: Element types of a load whose value is one of 256 indices.
BYTE_TYPES = frozenset({"unsigned char", "uint8_t", "std::uint8_t", "unsigned __int8", "uchar"})


def _follow(src: CudaSource, node: Node) -> Node:
    """``node`` without parentheses and casts, an identifier followed to its one initializer when it is a local
    declared once and never assigned (at most four steps)."""
    node = strip_casts(unwrap_parens(node))
    for _ in range(4):
        if node.type != "identifier":
            break
        name = src.env.t(node)
        inits = src.env.local_inits(src.func, name)
        if len(inits) != 1 or src.env.assigned_in(src.func, name):
            break
        node = strip_casts(unwrap_parens(inits[0]))
    return node


def _bound(src: CudaSource, kernel: Kernel, node: Node) -> tuple[int | None, str | None, str | None]:
    """``(value, parameter, text)`` of a bin-count expression: a compile-time constant or a scalar kernel parameter
    that the kernel never assigns; all ``None`` otherwise. A constant's text keeps the casts written around it
    (``static_cast<int>(Bins::Count)``: an ``enum class`` member is no integer without its cast)."""
    env = src.env
    written = unwrap_parens(node)
    node = strip_casts(written)
    c = env.const(node, src.func)
    if c is not None:
        return (c.value, None, env.t(written)) if c.value > 0 else (None, None, None)
    scalars = {p.name for p in kernel.params if not p.is_pointer}
    if node.type == "identifier" and env.t(node) in scalars and not env.assigned_in(src.func, env.t(node)):
        return None, env.t(node), env.t(node)
    return None, None, None


def _mask_bound(src: CudaSource, node: Node) -> tuple[int | None, str | None, str | None]:
    """The bin count of ``x & M`` (either operand) with ``M`` a compile-time constant >= 0: ``M + 1`` (the result's
    bits are a subset of ``M``'s, so it lies in ``[0, M]``), the text ``(M) + 1`` as written; all ``None``
    otherwise."""
    for side in ("right", "left"):
        m = strip_casts(unwrap_parens(node.child_by_field_name(side)))  # type: ignore[arg-type]
        c = src.env.const(m, src.func)
        if c is not None and c.value >= 0:
            return c.value + 1, None, f"({src.env.t(m)}) + 1"
    return None, None, None


def _conjuncts(node: Node, src: CudaSource) -> list[Node]:
    """The operands of a chain of ``&&`` (parentheses dropped)."""
    node = unwrap_parens(node)
    if node.type == "binary_expression" and src.env.t(node.child_by_field_name("operator")) == "&&":
        return [*_conjuncts(node.child_by_field_name("left"), src),  # type: ignore[arg-type]
                *_conjuncts(node.child_by_field_name("right"), src)]  # type: ignore[arg-type]
    return [node]


def _guard_bound(src: CudaSource, kernel: Kernel, call: Node, idx: Node
                 ) -> tuple[int | None, str | None, str | None]:
    """The bin count an enclosing ``if`` checks the index against: ``if (b < NUM_BINS)``, ``if (v >= 0 && v < n)``
    or ``NUM_BINS > b`` around the update, the index spelled as in the subscript (a local must never be assigned)."""
    env = src.env
    idx = strip_casts(unwrap_parens(idx))
    if idx.type == "identifier" and env.assigned_in(src.func, env.t(idx)):
        return None, None, None
    key = " ".join(env.t(idx).split())
    for cond in _guarding_conditions(src, call):
        if cond.type == "condition_clause":
            cond = cond.child_by_field_name("value") or (cond.named_children[0] if cond.named_children else None)
        for c in _conjuncts(cond, src) if cond is not None else []:
            op = env.t(c.child_by_field_name("operator")) if c.type == "binary_expression" else ""
            left, right = c.child_by_field_name("left"), c.child_by_field_name("right")
            if left is None or right is None or op not in ("<", ">"):
                continue
            small, big = (left, right) if op == "<" else (right, left)
            if " ".join(env.t(strip_casts(unwrap_parens(small))).split()) == key:
                found = _bound(src, kernel, big)
                if found != (None, None, None):
                    return found
    return None, None, None


def _guarding_conditions(src: CudaSource, call: Node) -> list[Node]:
    """The conditions of the ``if`` statements whose consequence holds ``call``, innermost first, up to the body."""
    out: list[Node] = []
    node = call
    while node.parent is not None and node != src.body:
        parent = node.parent
        cons = parent.child_by_field_name("consequence") if parent.type == "if_statement" else None
        if cons is not None and cons.start_byte <= call.start_byte < cons.end_byte:
            cond = parent.child_by_field_name("condition")
            if cond is not None:
                out.append(cond)
        node = parent
    return out


def _extent(src: CudaSource, kernel: Kernel, call: Node, idx: Node, pointers: dict[str, PointerFacts]
            ) -> tuple[int | None, str | None, str | None]:
    """``(extent, parameter, text)`` of the index ``idx`` of the update ``call`` (see the module docstring); all
    ``None`` when unbounded."""
    guarded = _guard_bound(src, kernel, call, idx)
    if guarded != (None, None, None):
        return guarded
    env = src.env
    node = _follow(src, idx)
    if node.type == "binary_expression" and env.t(node.child_by_field_name("operator")) == "%":
        return _bound(src, kernel, node.child_by_field_name("right"))  # type: ignore[arg-type]
    if node.type == "binary_expression" and env.t(node.child_by_field_name("operator")) == "&":
        return _mask_bound(src, node)
    if node.type == "subscript_expression":
        base = strip_casts(unwrap_parens(node.child_by_field_name("argument")))  # type: ignore[arg-type]
        pf = pointers.get(env.t(base)) if base.type == "identifier" else None
        if pf is not None and (pf.element_type or "").replace("const ", "").strip() in BYTE_TYPES:
            return 256, None, "256"
    return None, None, None


def _address_spans(src: CudaSource, addr: Node) -> list[tuple[int, int]]:
    """The spans an access at the address ``addr`` may be recorded at: the address as written, without its
    parentheses and casts (one layer at a time), and the operand of a leading ``&``."""
    out, node = [], addr
    for _ in range(8):
        out.append(src.span(node))
        inner = strip_casts(unwrap_parens(node))
        if inner == node and node.type == "pointer_expression" and src.env.t(node).startswith("&"):
            inner = node.child_by_field_name("argument") or node
        if inner == node:
            break
        node = inner
    return out


def address_target(src: CudaSource, addr: Node, pointer: str) -> tuple[Node, Node] | None:
    """``(base, index)`` nodes of an atomic's address that names one element of ``pointer``: ``&p[k]``,
    ``&(p[k])``, ``p + k``, ``k + p`` and ``(p + k)``, under casts of the whole address (``(unsigned int *)(p + k)``,
    which keep the element the index counts in ``p``'s type); ``None`` for any other address (``(T *)p + k`` counts
    ``k`` in the cast's type, an alias, a member). Idea source: C's ``p + k == &p[k]`` (ISO C 6.5.6, 6.5.2.1)."""
    node = strip_casts(unwrap_parens(addr))
    if node.type == "pointer_expression" and src.env.t(node).startswith("&"):
        sub = unwrap_parens(node.child_by_field_name("argument") or node)
        if sub.type != "subscript_expression":
            return None
        base = sub.child_by_field_name("argument")
        idx_list = sub.child_by_field_name("indices") or sub.child_by_field_name("index")
        idx_kids = [c for c in idx_list.named_children if c.type != "comment"] if idx_list is not None else []
        ok = base is not None and base.type == "identifier" and src.env.t(base) == pointer and len(idx_kids) == 1
        return (base, idx_kids[0]) if ok else None  # type: ignore[return-value]
    if node.type != "binary_expression" or src.env.t(node.child_by_field_name("operator")) != "+":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    for base, idx in ((left, right), (right, left)):
        if base is not None and idx is not None and base.type == "identifier" and src.env.t(base) == pointer:
            return base, idx
    return None


def atomic_updates(src: CudaSource, kernel: Kernel, accesses: tuple[Access, ...],
                   pointers: tuple[PointerFacts, ...], declared: dict[str, tuple[int, str]] | None = None
                   ) -> tuple[AtomicUpdate, ...]:
    """The atomic updates (``atomic*`` calls) of the kernel's body whose address is an access the analysis read
    (``&p[i]``, ``p + i``), in source order.

    Args:
        src: the kernel's parsed unit (with the template bindings of its first launch in ``src.env``).
        kernel: the kernel (its parameters).
        accesses: the kernel's accesses (:attr:`KernelFacts.accesses`); the update's pointer and index are theirs.
        pointers: the kernel's pointer facts (element types), those of its ``__device__`` variables included.
        declared: ``__device__`` array name -> ``(element count, count as written)`` from its declaration: the
            extent of an update of it whose index the kernel does not bound (``extent_from == "declaration"``).
    """
    env = src.env
    by_span = {a.span: a for a in accesses}
    ptrs = {p.name: p for p in pointers}
    out: list[AtomicUpdate] = []
    for call in of_type(src.body, "call_expression"):
        fn = env.t(call.child_by_field_name("function")).split("<", 1)[0].split("::")[-1].strip()
        args = call.child_by_field_name("arguments")
        kids = [c for c in args.named_children if c.type != "comment"] if args is not None else []
        if not is_atomic_builtin(fn) or len(kids) < 2:
            continue
        acc = next((by_span[sp] for sp in _address_spans(src, kids[0]) if sp in by_span), None)
        if acc is None:
            continue
        target = address_target(src, kids[0], acc.pointer)
        base_span, idx = (src.span(target[0]), target[1]) if target is not None else (None, None)
        extent, param, text = _extent(src, kernel, call, idx, ptrs) if idx is not None else (None, None, None)
        origin: Literal["index", "launch", "declaration"] = "index"
        if idx is not None and extent is None and param is None and acc.pointer in (declared or {}):
            (extent, text), origin = (declared or {})[acc.pointer], "declaration"
        elif idx is not None and extent is None and param is None and acc.space == "global":
            at_launch = launch_buffer_extent(src, kernel, acc.pointer, _element_type(ptrs.get(acc.pointer))[0])
            if at_launch is not None:
                (extent, text), origin = at_launch, "launch"
        stmt = call.parent
        statement = src.span(stmt) if stmt is not None and stmt.type == "expression_statement" else None
        out.append(AtomicUpdate(fn, acc.pointer, acc.space, acc.index, acc.index_text, " ".join(env.t(kids[1]).split()),
                                src.span(call), base_span, statement, src.line(call), acc.loops, extent, param, text,
                                origin, src.span(idx) if idx is not None else None))
    return tuple(out)


def return_lines(src: CudaSource) -> tuple[int, ...]:
    """The 1-based lines of the ``return`` statements in the kernel's body (lambdas' own returns excluded)."""
    out = []
    for r in of_type(src.body, "return_statement"):
        up = r.parent
        while up is not None and up != src.body and up.type != "lambda_expression":
            up = up.parent
        if up == src.body:
            out.append(src.line(r))
    return tuple(out)


#: The atomic functions that accumulate a reduction, with the operation each applies.
REDUCING_ATOMICS: dict[str, Literal["add", "max", "min"]] = {"atomicAdd": "add", "atomicMax": "max",
                                                             "atomicMin": "min"}
_QUALIFIERS = frozenset({"const", "volatile", "__restrict__", "restrict"})


def _declared_name(node: Node, src: CudaSource) -> str | None:
    """The name a declarator declares (through ``*``, ``&``, ``[]`` and an initializer), else ``None``."""
    while node.type != "identifier":
        inner = node.child_by_field_name("declarator")
        if inner is None:
            return None
        node = inner
    return src.env.t(node)


def body_locals(src: CudaSource) -> dict[str, list[Node]]:
    """Name -> the declarations of the kernel body that declare it (lambdas' own excluded), in source order."""
    out: dict[str, list[Node]] = {}
    for d in of_type(src.body, "declaration"):
        for c in d.children_by_field_name("declarator"):
            name = _declared_name(c, src)
            if name is not None:
                out.setdefault(name, []).append(d)
    return out


def _guarded(src: CudaSource, call: Node) -> bool:
    """An enclosing ``if``, ``?:``, loop or an early ``return`` decides whether a thread reaches ``call``."""
    node = call
    while node.parent is not None and node != src.body:
        node = node.parent
        if node.type in ("if_statement", "conditional_expression", "for_statement", "while_statement",
                         "do_statement", "switch_statement"):
            return True
    return bool(return_lines(src))


def _single(src: CudaSource, call: Node, uniform: Uniformity) -> bool:
    """An enclosing ``if`` runs ``call`` only in the threads at a given position of the block or warp: one of the
    condition's ``&&`` conjuncts compares a thread's position (:func:`~htam_core.source.analysis.uniformity.
    thread_position`: ``threadIdx.x``, ``lane = threadIdx.x % 32``, ``block.thread_rank()``) with a value uniform
    over the block (``if (tid == 0)``, ``if (lane == 0)``, ``if (threadIdx.x == blockDim.x - 1)``) or is ``!``
    of a position (``if (!threadIdx.x)``): a few threads of a block run it, after the block or warp combined its
    values. A test of the data (``keys[i] == key``, ``!done[i]``) selects elements, not threads, and is not one."""
    for cond in _guarding_conditions(src, call):
        if cond.type == "condition_clause":
            cond = cond.child_by_field_name("value") or (cond.named_children[0] if cond.named_children else None)
        if cond is not None and any(_selects_position(src, c, uniform) for c in _conjuncts(cond, src)):
            return True
    return False


def _selects_position(src: CudaSource, term: Node, uniform: Uniformity) -> bool:
    """``term`` is ``position == uniform`` (either order) or ``!position`` (:func:`_single`)."""
    op = src.env.t(term.child_by_field_name("operator")) if term.type in ("binary_expression",
                                                                          "unary_expression") else ""
    if op == "!":
        arg = term.child_by_field_name("argument")
        return arg is not None and thread_position(uniform, arg)
    if op != "==":
        return False
    left, right = term.child_by_field_name("left"), term.child_by_field_name("right")
    return left is not None and right is not None and any(
        thread_position(uniform, a) and thread_uniform(uniform, b, scope="block") for a, b in ((left, right),
                                                                                               (right, left)))


def _element_type(pf: PointerFacts | None) -> tuple[str, str | None]:
    """The element type as written without qualifiers, and resolved (``None`` when unknown)."""
    written = (pf.element_type or "") if pf is not None else ""
    etype = " ".join(w for w in written.replace("*", " ").split() if w not in _QUALIFIERS)
    value = " ".join(w for w in (pf.value_type or "").split() if w not in _QUALIFIERS) if pf is not None else ""
    return etype, value or None


def _uniform_atomic(src: CudaSource, u: AtomicUpdate, call: Node, ptrs: dict[str, PointerFacts],
                    uniform: Uniformity, decls: dict[str, list[Node]], single: bool = False,
                    fixed: frozenset[str] = frozenset()) -> UniformAtomic | None:
    """The :class:`UniformAtomic` of the update ``u`` (its call ``call``), or ``None`` when it is not one; with
    ``single``, only one that a few threads of a block run (:func:`_single`: the block's result), else only one
    that is not."""
    env = src.env
    args = call.child_by_field_name("arguments")
    kids = [c for c in args.named_children if c.type != "comment"] if args is not None else []
    op = REDUCING_ATOMICS.get(u.fn)
    if op is None or u.space != "global" or u.statement is None or len(kids) != 2:
        return None
    addr = unwrap_parens(kids[0])
    if strip_casts(addr) != addr or not thread_uniform(uniform, addr, scope="block") or \
            _single(src, call, uniform) != single:
        return None
    scope: Literal["grid", "block"] = "grid" if thread_uniform(uniform, addr, scope="grid") else "block"
    names = sorted({env.t(i) for i in of_type(addr, "identifier") if env.t(i) in decls or (
        env.t(i) not in fixed and env.assigned_in(src.func, env.t(i)))})
    stable = all(len(decls.get(n, ())) == 1 and decls[n][0].parent == src.body and not env.assigned_in(src.func, n)
                 for n in names)
    etype, vtype = _element_type(ptrs.get(u.pointer))
    return UniformAtomic(u, op, scope, " ".join(env.t(kids[0]).split()), src.span(kids[1]), etype, vtype,
                         tuple(names), stable, _guarded(src, call))


def uniform_atomics(src: CudaSource, atomics: tuple[AtomicUpdate, ...], pointers: tuple[PointerFacts, ...],
                    uniform: Uniformity, fixed: frozenset[str] = frozenset()) -> tuple[UniformAtomic, ...]:
    """The global reducing atomics (``atomicAdd``/``atomicMax``/``atomicMin``, result unused) of ``atomics`` whose
    address is the same in every thread of a block (module docstring), in source order.

    Args:
        src: the kernel's parsed unit.
        atomics: its atomic updates (:func:`atomic_updates`).
        pointers: its pointer facts (the updated element's type).
        uniform: the kernel's uniformity context (:class:`~htam_core.source.analysis.uniformity.Uniformity`).
        fixed: the names of the ``__device__`` variables the body names: their address (``&g_count``) is the same
            everywhere, so they are no local an address reads (``address_locals``), though ``&`` takes it.

    Idea source: privatization of a contended reduction variable (Kirk and Hwu, "Programming Massively Parallel
    Processors", "Parallel histogram computation" and "Reduction"; the CUDA samples' ``reduction`` example, whose
    blocks each write one partial).
    """
    calls = {src.span(c): c for c in of_type(src.body, "call_expression")}
    ptrs = {p.name: p for p in pointers}
    decls = body_locals(src)
    found = (_uniform_atomic(src, u, calls[u.call_span], ptrs, uniform, decls, fixed=fixed) for u in atomics
             if u.call_span in calls)
    return tuple(f for f in found if f is not None)


def result_atomics(src: CudaSource, atomics: tuple[AtomicUpdate, ...], pointers: tuple[PointerFacts, ...],
                   uniform: Uniformity, fixed: frozenset[str] = frozenset()) -> tuple[UniformAtomic, ...]:
    """The global reducing atomics of ``atomics`` into an address the same in every thread of the *grid* that only a
    few threads of a block run (``if (tid == 0) atomicAdd(out, sdata[0]);``: the block combined its values first
    and sends its result), in source order. Such a total does not depend on how the elements were split among the
    blocks, so the grid is free for a step that covers every element with any grid.

    Args and idea source: as :func:`uniform_atomics` (the second stage of the CUDA samples' ``reduction``, where the
    blocks' partials are combined atomically instead of by a second pass).
    """
    calls = {src.span(c): c for c in of_type(src.body, "call_expression")}
    ptrs = {p.name: p for p in pointers}
    decls = body_locals(src)
    found = (_uniform_atomic(src, u, calls[u.call_span], ptrs, uniform, decls, single=True, fixed=fixed)
             for u in atomics if u.call_span in calls)
    return tuple(f for f in found if f is not None and f.scope == "grid")
