"""The segment prefix loop: each thread sums its block's segment up to its own element, in normal form.

A first scan kernel often gives every thread its own serial loop over the block's segment, from the block's first
element up to the thread's own (``O(blockDim)`` loads per thread)::

    int seg = blockIdx.x * blockDim.x;            // the block's first element (or blockIdx.x * BLOCK)
    int i = seg + threadIdx.x;
    if (i >= n) return;                           // or if (i < n) { ... } around the rest
    float s = 0.0f;
    for (int j = seg; j <= i; ++j) s += in[j];    // j < i: an exclusive scan; s = s + f(in[j]) too
    out[i] = s;

:func:`segment_prefix_loop` reads any such kernel as one :class:`PrefixLoop`: the loop, its accumulator and type,
inclusive or exclusive, the element expression split at the loop variable (so it can be written for the thread's
own index), the bounds check (early return or guarded body) and the store. The start and the end are read off the
loop facts (:attr:`LoopFact.start`, :attr:`LoopFact.bound`, locals substituted): the start is ``blockIdx.x * B``
with ``B`` the block (``blockDim.x``, or a constant every launch in the file uses as its block), the end the start
plus ``threadIdx.x``. The element expression has no effect, calls only
:data:`~htam_core.source.analysis.block_load.PURE_MATH` or casts, reads global memory only at the loop variable
and reads no other value that differs between the threads of a block. The accumulator starts at zero and nothing
else reads it, so the loop is a plain prefix sum of the elements: a block-wide scan computes the same sums in
another order. The idea source is the textbook's scan chapter (Kirk and Hwu, "Programming Massively Parallel
Processors", "Parallel scan": the sequential per-thread prefix as the work-inefficient start) and the CUDA
Programming Guide's warp shuffle functions (``__shfl_up_sync`` scans within a warp).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.block_load import pure_expression
from htam_core.source.analysis.constants import is_zero_value
from htam_core.source.analysis.facts import Accumulator, LoopFact, sym
from htam_core.source.analysis.forms import KernelView
from htam_core.source.analysis.guards import BoundsGuard, closing_bounds_guard
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import statements, unwrap_parens
from htam_core.source.analysis.uniformity import kernel_uniformity, thread_uniform

__all__ = ["EXACT_TYPES", "MAX_BLOCK", "NO_LOOP", "SHUFFLE_TYPES", "PrefixLoop", "pieces", "segment_prefix_loop",
           "shuffle_type"]

#: Integer accumulator types ``__shfl_up_sync`` takes, as the unit's aliases resolve (:meth:`TypeEnv.resolve`):
#: its ``int``, ``unsigned int``, ``long``, ``unsigned long``, ``long long`` and ``unsigned long long`` overloads,
#: in any spelling, and the ``<cstdint>`` names that stand for one of them (``int64_t`` is ``long`` or ``long
#: long``). Their sums, products, maxima and minima are exact in any grouping.
EXACT_TYPES = frozenset({"int", "signed", "signed int", "unsigned", "unsigned int", "long", "long int", "signed long",
                         "long long", "long long int", "signed long long", "unsigned long", "unsigned long int",
                         "unsigned long long", "unsigned long long int", "int32_t", "uint32_t", "int64_t", "uint64_t",
                         "size_t", "ptrdiff_t"})
#: Accumulator types ``__shfl_up_sync`` takes (a template type parameter is accepted as well).
SHUFFLE_TYPES = EXACT_TYPES | {"float", "double"}
#: Integer types as a pointee may be written (an integer sum converts at every step; float elements would not).
_INTEGER = re.compile(r"^(?:(?:unsigned|signed) )?(?:char|short|int|long|long long)(?: int)?$|^unsigned$|"
                      r"^(?:std::)?u?int(?:8|16|32|64)_t$|^(?:std::)?size_t$")
#: The most threads a block may have.
MAX_BLOCK = 1024
#: Why a kernel has no segment prefix loop at all.
NO_LOOP = ("no segment prefix loop (`for (j = blockIdx.x * blockDim.x; j <= i; ++j) acc += in[j];` then "
           "`out[i] = acc;`, under `if (i < n)` or after `if (i >= n) return;`)")


@dataclass(frozen=True)
class PrefixLoop:
    """A segment prefix loop in normal form (see the module docstring).

    Attributes:
        loop: the loop's fact.
        accumulator: the accumulator's fact (op ``"sum"``, zero start).
        acc_type: its declared type as written (``"float"``, ``"T"``).
        inclusive: ``j <= i`` (the thread's own element summed) rather than ``j < i``.
        element: the summed expression as written, split at the uses of the loop variable (``("in[", "]")``).
        index: the thread's own index as written at the bounds check and the store (``"i"``).
        condition: the positive bounds check (``"i < n"``) under which the thread stores.
        guard: ``"return"`` (an early return before the loop) or ``"if"`` (a guarded body around it).
        guard_stmt: the bounds check's ``if`` statement.
        decl: the accumulator's declaration statement.
        loop_stmt: the loop statement.
        store: the statement that stores the accumulator at the thread's own index.
        end_byte: fragment offset where the guarded code ends (the store's end, or the guarded body's).
        block: threads per block of every launch in the file when all agree and are constant, else ``None``.
        block_problem: why the block cannot run a warp scan (unknown, not a multiple of 32, too large, not 1-D),
            or ``None``.
    """

    loop: LoopFact
    accumulator: Accumulator
    acc_type: str
    inclusive: bool
    element: tuple[str, ...]
    index: str
    condition: str
    guard: Literal["return", "if"]
    guard_stmt: Node
    decl: Node
    loop_stmt: Node
    store: Node
    end_byte: int
    block: int | None
    block_problem: str | None

    def element_at(self, name: str) -> str:
        """The summed expression for the element ``name`` (a C identifier): ``"in[name]"``."""
        return name.join(self.element)


def pieces(view: KernelView, node: Node, name: str) -> tuple[str, ...]:
    """The text of ``node`` split at its uses of the name ``name`` (``a[i] + i`` at ``i``: ``("a[", "] + ", "")``),
    so that a rewrite can put another expression where the name stood."""
    parts, at = [], node.start_byte
    for u in syn.references(node, view.src, name):
        parts.append(view.src[at:u.start_byte].decode())
        at = u.end_byte
    parts.append(view.src[at:node.end_byte].decode())
    return tuple(parts)


def _summand(view: KernelView, stmt: Node, acc: str) -> Node | None:
    """The summand ``e`` of an update ``acc += e;``, ``acc = acc + e;`` or ``acc = e + acc;`` (one statement,
    braces allowed), else ``None``."""
    inner = statements(stmt)
    if len(inner) != 1 or not syn.is_expression_statement(inner[0]) or not inner[0].named_children:
        return None
    asg = inner[0].named_children[0]
    if not syn.is_assignment(asg) or view.t(asg.child_by_field_name("left")) != acc:
        return None
    op, right = view.t(asg.child_by_field_name("operator")), asg.child_by_field_name("right")
    if op == "+=":
        return right
    r = unwrap_parens(right) if op == "=" and right is not None else None
    if r is None or not syn.is_binary(r) or view.t(r.child_by_field_name("operator")) != "+":
        return None
    left, other = r.child_by_field_name("left"), r.child_by_field_name("right")
    return other if view.t(left) == acc else left if view.t(other) == acc else None


def _element_problem(view: KernelView, e: Node, var: str, acc: str) -> str | None:
    """Why the summand ``e`` is not an element expression of the loop variable ``var``, or ``None``."""
    reads = [a for n in syn.subscripts(e) for a in view.facts.accesses
             if a.span == (view.file_byte(n), n.end_byte + view.base)]
    if not reads or any(a.space != "global" or a.kind != "read" or a.index_text != var for a in reads):
        return f"the summand `{view.t(e)}` does not read global memory at [{var}] only"
    if syn.references(e, view.src, acc) or not pure_expression(view, e):
        return f"the summand `{view.t(e)}` has an effect or reads the accumulator"
    u = kernel_uniformity(view)
    ptrs = {a.pointer for a in reads}
    for n in syn.identifiers(e):
        called = n.parent is not None and syn.is_call(n.parent) and n.parent.child_by_field_name("function") == n
        name = view.t(n)
        if name not in ptrs and name != var and not called and not thread_uniform(u, n, scope="block"):
            return f"the summand `{view.t(e)}` reads {name}, which differs between threads"
    return None


def _integer_summand(view: KernelView, e: Node) -> bool:
    """The summand ``e`` reads only pointers to integers (:attr:`PointerFacts.value_type`) and writes no number
    with a point or an exponent: an integer sum of it is the same in any order and with any grouping."""
    for n in syn.subscripts(e):
        pf = view.facts.pointer(view.t(n.child_by_field_name("argument")))
        typ = " ".join(w for w in ((pf.value_type or pf.element_type or "") if pf else "").split()
                       if w not in ("const", "volatile"))
        if not _INTEGER.match(typ):
            return False
    return not any(c in view.t(x).lower() for x in syn.numbers(e) for c in ".ef" if not view.t(x).lower().startswith("0x"))


def _segment_start(view: KernelView, lp: LoopFact) -> sympy.Expr | None:
    """The block size ``B`` of a loop from ``blockIdx.x * B`` to ``blockIdx.x * B + threadIdx.x`` (``blockDim.x``
    or an integer), else ``None``."""
    if lp.kind != "for" or lp.var is None or lp.start is None or lp.bound is None or lp.cmp not in ("<", "<="):
        return None
    if lp.update != "+" or lp.step != 1 or sympy.expand(lp.bound - lp.start) != sym("threadIdx.x"):
        return None
    b = sympy.expand(lp.start).coeff(sym("blockIdx.x"))
    if sympy.expand(lp.start - b * sym("blockIdx.x")) != 0:
        return None
    return b if b == sym("blockDim.x") or (b.is_Integer and int(b) > 0) else None


def _block(view: KernelView, b: sympy.Expr) -> tuple[int | None, str | None]:
    """``(block, problem)``: the launches' common block and why a warp scan cannot run on it (``b``: the segment
    length, ``blockDim.x`` or a constant that must equal the block)."""
    f = view.facts
    if any(x.startswith(("threadIdx.y", "threadIdx.z", "blockDim.y", "blockDim.z")) for x in f.builtins_read):
        return None, "the kernel reads threadIdx.y or threadIdx.z; the scan is over a 1-D block"
    blocks = {tuple(d.value for d in la.block) for la in f.launches}
    if not blocks or any(None in b_ or any(v != 1 for v in b_[1:]) or not b_ for b_ in blocks):
        return None, ("the block size is not a constant 1-D block at a launch in this file; the warp scan needs "
                      f"a block of a multiple of 32 threads, at most {MAX_BLOCK}")
    sizes = {b_[0] for b_ in blocks}
    if len(sizes) > 1:
        return None, f"the launches use different blocks ({', '.join(map(str, sorted(sizes)))})"
    n = sizes.pop()
    if b.is_Integer and int(b) != n:
        return n, f"the segment is {b} elements but the launches use blocks of {n} threads"
    if n % 32 or n > MAX_BLOCK:
        return n, f"the block of {n} threads is not a multiple of 32 of at most {MAX_BLOCK} (whole warps scan)"
    return n, None


def shuffle_type(view: KernelView, acc: Accumulator) -> tuple[str, str] | None:
    """``(written, resolved)`` of the accumulator's type when ``__shfl_up_sync`` takes it, else ``None``: the type
    as declared without ``const`` (``"I"``, ``"T"``), and the type it names through the unit's aliases
    (:attr:`KernelView.types`: ``typedef int64_t I;`` gives ``"int64_t"``), which is in :data:`SHUFFLE_TYPES` or
    is a template parameter of the kernel. A rewrite declares with the written type, and asks the resolved one
    whether integer arithmetic is exact (:data:`EXACT_TYPES`)."""
    written = " ".join(w for w in (acc.type or "").split() if w != "const")
    resolved = view.types.resolve(written)
    return (written, resolved) if resolved in SHUFFLE_TYPES or view.types.is_template(written) else None


def _store(view: KernelView, stmt: Node, lp: LoopFact, acc: str) -> str | None:
    """The index name of a store ``p[i] = f(acc);`` at the thread's own element (``lp.bound``), else ``None``."""
    inner = statements(stmt)
    asg = inner[0].named_children[0] if len(inner) == 1 and inner[0].named_children else None
    if asg is None or not syn.is_assignment(asg) or view.t(asg.child_by_field_name("operator")) != "=":
        return None
    left, right = asg.child_by_field_name("left"), asg.child_by_field_name("right")
    if not syn.is_subscript(left) or right is None or not syn.references(right, view.src, acc):
        return None
    span = (view.file_byte(left), left.end_byte + view.base)
    w = next((a for a in view.facts.accesses if a.span == span and a.kind == "write" and a.space == "global"), None)
    if w is None or w.index is None or sympy.expand(w.index - lp.bound) != 0:  # type: ignore[operator]
        return None
    return w.index_text if w.index_text.isidentifier() else None


def _guard(view: KernelView) -> tuple[BoundsGuard, list[Node], list[Node]] | str:
    """``(bounds check, statements before it, guarded statements)`` of the kernel body, or why there is none."""
    stmts = statements(view.body)
    g = closing_bounds_guard(stmts, view.src)
    if isinstance(g, str):
        return NO_LOOP if g == "no bounds check" else f"{NO_LOOP}: {g}"
    at = stmts.index(g.stmt)
    return g, stmts[:at], list(g.body) if g.form == "return" else statements(g.stmt.child_by_field_name("consequence"))


def _declaration(view: KernelView, nodes: list[Node], acc: Accumulator) -> Node | None:
    """The statement among ``nodes`` that declares only the accumulator (its :attr:`Accumulator.decl_span`)."""
    for s in nodes:
        if syn.is_declaration(s) and acc.decl_span is not None and view.file_byte(s) == acc.decl_span[0] \
                and len(s.children_by_field_name("declarator")) == 1:
            return s
    return None


def _read(view: KernelView, guard: BoundsGuard, before: list[Node], body: list[Node]) -> PrefixLoop | str:
    """The :class:`PrefixLoop` of a kernel whose guarded statements are ``body`` (``before``: the body's statements
    before the bounds check), or why it is not one."""
    loops = [s for s in body if syn.is_for(s)]
    if len(loops) != 1 or len(body) < 2 or body[-2] is not loops[0]:
        return NO_LOOP
    loop, store = loops[0], body[-1]
    lp = view.facts.loop_at(view.file_byte(loop))
    b = _segment_start(view, lp) if lp is not None else None
    if lp is None or b is None or len(lp.accumulators) != 1:
        return NO_LOOP
    acc = lp.accumulators[0]
    decl = _declaration(view, before + body[:-2], acc)
    e = _summand(view, loop.child_by_field_name("body"), acc.name)
    if acc.op != "sum" or e is None or decl is None or not is_zero_value(acc.init_text or ""):
        return f"{NO_LOOP}: the loop on line {lp.line} is not `{acc.name} += element` from zero"
    if len(body) > 3 or (len(body) == 3 and body[0] is not decl):
        return f"{NO_LOOP}: other statements run beside the loop on line {lp.line}"
    return _finish(view, guard, lp, acc, decl, loop, store, e, b)


def _finish(view: KernelView, guard: BoundsGuard, lp: LoopFact, acc: Accumulator, decl: Node, loop: Node,
            store: Node, e: Node, b: sympy.Expr) -> PrefixLoop | str:
    """The :class:`PrefixLoop` once the loop and the update are read, or why the rest (the element, the store, the
    bounds check, the accumulator's type) does not fit."""
    why = _element_problem(view, e, lp.var or "", acc.name)
    if why is not None:
        return why
    index = _store(view, store, lp, acc.name)
    if index is None:
        return f"the statement after the loop on line {lp.line} does not store {acc.name} at the thread's own element"
    term = guard.single(index)
    if term is None or syn.references(term, view.src, index) or not thread_uniform(kernel_uniformity(view), term,
                                                                                    scope="block"):
        return f"the bounds check is not `{index} < n` with n the same in every thread"
    typ = shuffle_type(view, acc)
    if typ is None:
        return f"{acc.name} is of type {acc.type}, which __shfl_up_sync does not take"
    t = typ[0]
    if typ[1] in EXACT_TYPES and not _integer_summand(view, e):
        return f"the integer {acc.name} sums the non-integer `{view.t(e)}`, converted at every step"
    used = [len(syn.references(n, view.src, acc.name)) for n in (view.body, decl, loop, store)]
    if used[0] != sum(used[1:]):
        return f"{acc.name} is read outside the loop and the store"
    if len(syn.returns(view.body)) != (1 if guard.form == "return" else 0):
        return "the kernel returns elsewhere; every thread must reach the scan's barriers"
    block, problem = _block(view, b)
    end = (guard.stmt.end_byte if guard.form == "if" else store.end_byte)
    bound = view.t(term) if syn.is_simple_operand(unwrap_parens(term)) else f"({view.t(unwrap_parens(term))})"
    return PrefixLoop(lp, acc, t, lp.cmp == "<=", pieces(view, e, lp.var or ""), index,
                      f"{index} < {bound}", guard.form, guard.stmt, decl, loop, store, end, block, problem)


def segment_prefix_loop(view: KernelView) -> PrefixLoop | str:
    """The kernel's segment prefix loop (:class:`PrefixLoop`, any spelling of the module docstring), or why there
    is none.

    Args:
        view: the kernel's parsed unit with its facts (:class:`~htam_core.source.analysis.forms.KernelView`).

    Returns:
        the loop in normal form (its :attr:`PrefixLoop.block_problem` says whether the launches' block can run a
        warp scan), or one sentence: no such loop (:data:`NO_LOOP`), or the part that does not fit.
    """
    found = _guard(view)
    if isinstance(found, str):
        return found
    return _read(view, *found)
