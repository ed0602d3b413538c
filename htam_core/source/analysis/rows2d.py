"""The 2-D one-element-per-thread shape whose lanes walk the contiguous index: the facts a rewrite needs to give
each thread ``V`` consecutive values of that index (``V`` columns of one row) with 16-byte loads and stores.

The shape (any order of the two declarations, any statements between them that do not read the column)::

    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;   // the column: the global index along x
    size_t r = (size_t)blockIdx.y * blockDim.y + threadIdx.y;   // anything that does not depend on x
    if (r < M && c < N) { body }           // or `if (r >= M || c >= N) return; body`, `if (!(...)) return;`

The column ``c`` is the *contiguous index*: every global access in the body moves by 1 or by 0 element when ``c``
moves by 1 (the analysis layer's affine index forms, :meth:`~htam_core.source.analysis.facts.Access.stride` along
``threadIdx.x``), so the arrays indexed ``r * N + c`` and the per-column ones (``v[c]``) are contiguous in it and the
per-row ones (``u[r]``) are the same for every column of a row. A bounds check with one term ``c < N`` on the column
and any others (``r < M``, ``flag``) that do not read it.

Each access is filed as a *vector* access (one 16-byte copy of the ``V`` lanes' elements, loaded before the lanes
and stored after them) or left *scalar* (each lane reads or writes it with its own column, as the thread did). A
vector access is a subscript ``P[index]`` of stride 1 that runs unconditionally in the body (not inside an ``if``,
``?:``, ``&&``/``||`` or a loop), whose index and array name nothing declared in the body, not address-taken; a
pointer the body writes is a vector only when every access to it is one and the same vector (a lane would
otherwise read the vector's stale copy, or another lane's element through memory). Everything else stays scalar,
which is what each thread did. So the lanes, run one after another, compute what the ``V`` threads computed side
by side.

Refused, each with one line: no column declared as the global x index; a column read before its bounds check or
by a guard term other than ``c < N``; statements after a guarded block; a body that returns, breaks out, uses a
barrier, shared memory, ``threadIdx``/``blockIdx`` or another thread index along x, calls a function that reads
the thread indices, writes the column or a variable declared outside it; a statement before the bounds check that
reads the thread's x (its value would be one thread's, not one column's); a global access that moves by neither 0 nor 1 with
the column (not contiguous along x: map threadIdx.x to the contiguous index first), or whose index is not affine;
an access in a loop that moves with the column (each lane would loop over it with scalar loads: a matmul-like loop
wants tiling, not a vector copy);
no access left to move as a vector.

Idea source: NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized Memory Access" (Luitjens,
2013), applied per row; the per-lane column is the thread-coarsening substitution ``c -> c0 + k`` (Kirk & Hwu,
"Programming Massively Parallel Processors", ch. 6); BLAS ``sger`` kernels with ``float4`` columns per thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.elementwise_uses import _declared_names, _outer_writes
from htam_core.source.analysis.forms import (
    Elementwise,
    KernelView,
    _bad_body,
    _is_global_x,
    first_check,
    is_lvalue,
)
from htam_core.source.analysis.guards import BoundsGuard, bounds_guard
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import side_effect_free, statements

__all__ = ["ContiguousRows", "RowVector", "contiguous_rows"]


@dataclass
class RowVector:
    """One vector access of :class:`ContiguousRows`: the subscripts ``array[index]`` of one pointer at one index.

    Attributes:
        pointer: the pointer parameter (aliases followed: ``row[c]`` with ``float *row = A + r * N`` is ``A``).
        array: the subscript's array as written (``A``, ``row``), declared outside the body.
        index: the index as written, whitespace collapsed (``r * N + c``); it names nothing declared in the body.
        subs: the subscript nodes in the body, in source order.
        read: some subscript is read (a compound assignment ``+=`` reads too), so the vector is loaded first.
        written: some subscript is written, so the vector is stored after the lanes.
    """

    pointer: str
    array: str
    index: str
    subs: list[Node] = field(default_factory=list)
    read: bool = False
    written: bool = False


@dataclass
class ContiguousRows:
    """A 2-D kernel with one element per thread whose column (the global x index) is its contiguous index.

    Attributes:
        shape: the column's declaration, bounds check and body as an :class:`Elementwise` (``name`` the column,
            ``gid`` its initializer ``blockIdx.x * blockDim.x + threadIdx.x``, ``bound`` the ``N`` of ``c < N``,
            ``stmts`` the guarded statements, ``form`` ``"if"`` or ``"return"``).
        guard: the bounds check as read by :func:`~htam_core.source.analysis.guards.bounds_guard`.
        vectors: the vector accesses, in source order of their first subscript.
        scalar: the other global accesses as written (``u[r]``), each left to the lanes.
        column_used: the guarded code reads the column other than in the vector subscripts (a scalar access
            ``w[c]``, a value ``(float)c``), so each lane needs its own column declared.
    """

    shape: Elementwise
    guard: BoundsGuard
    vectors: list[RowVector]
    scalar: list[str]
    column_used: bool = True


def _column(view: KernelView) -> tuple[Node, str, str, Node] | None:
    """``(declaration, name, type, initializer)`` of the kernel's one top-level column declaration (the global
    index along x by the analysis layer's thread-index facts, declared alone), or ``None``."""
    xs = [t for t in view.facts.thread_indices if t.is_global and t.dims == ("x",)]
    by_span = {(view.file_byte(s), s.end_byte + view.base): s for s in statements(view.body)}
    found = [(t, by_span[t.span]) for t in xs if t.span in by_span and _is_global_x(view, t.name, by_span[t.span])]
    if len(found) != 1:
        return None
    t, decl = found[0]
    inits = [d for d in decl.named_children if syn.is_init_declarator(d)]
    value = inits[0].child_by_field_name("value") if len(inits) == 1 else None
    if value is None:
        return None
    typ = view.src[decl.start_byte : inits[0].start_byte].decode().replace("const ", "").strip()
    return decl, t.name, typ, value


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def _guard(view: KernelView, decl: Node, name: str) -> tuple[BoundsGuard, Node] | str:
    """The bounds check after the column's declaration and its column bound ``N``, or why there is none."""
    stmts = statements(view.body)
    rest = stmts[stmts.index(decl) + 1 :]
    k = first_check(rest, view.src, name, f"the column {name}")
    if isinstance(k, str):
        return k
    g = bounds_guard(rest[k], rest[k + 1 :], view.src)
    if isinstance(g, str):
        return f"the bounds check {view.t(rest[k].child_by_field_name('condition'))}: {g}"
    mine = [t for t in g.terms if name in _words(t.text)]
    if len(mine) != 1 or mine[0].var != name or mine[0].bound is None:
        return f"the bounds check {g.condition} does not bound the column {name} by one `{name} < N`"
    x_locals = {t.name for t in view.facts.thread_indices if "x" in t.dims} - {name}
    for t in g.terms:
        if t is not mine[0] and (_words(t.text) & (x_locals | {"threadIdx", "blockIdx"}) or not side_effect_free(t.text)):
            return f"the bounds check's term `{t.text}` depends on the thread's x or has a side effect"
    if g.form == "if" and rest[k + 1 :]:
        return "statements follow the guarded block"
    return g, mine[0].bound


def _body_reason(view: KernelView, shape: Elementwise) -> str | None:
    """Why the guarded statements cannot run once per lane, or ``None``."""
    why = _bad_body(view, shape.stmts, shape.name) or _outer_writes(view, shape)
    if why:
        return why
    x_locals = {t.name for t in view.facts.thread_indices if "x" in t.dims} - {shape.name}
    start, end = view.file_byte(shape.stmts[0]), shape.stmts[-1].end_byte + view.base
    if any(a.space == "shared" and start <= a.span[0] < end for a in view.facts.accesses):
        return "the guarded code uses shared memory, laid out for one element per thread"
    stmts = statements(view.body)
    for s in stmts[: stmts.index(shape.guard)]:
        if s is not shape.decl and (_words(view.t(s)) & x_locals or re.search(r"\b(threadIdx|blockIdx)\s*\.\s*x\b",
                                                                              view.t(s))):
            return (f"`{' '.join(view.t(s).split())[:60]}` reads the thread's x before the bounds check: one thread's "
                    "columns would share its value")
    for s in shape.stmts:
        for n in syn.identifiers(s):
            if view.t(n) in x_locals:
                return f"the guarded code reads {view.t(n)}, another thread index along x"
            if view.t(n) in view.facts.index_calls:
                return f"the guarded code calls {view.t(n)}, which reads the thread indices itself"
    return None


def _conditional(view: KernelView, sub: Node, top: set[Node]) -> str | None:
    """Why the subscript ``sub`` runs only on some paths of its top-level statement (one of ``top``), or ``None``
    when it runs whenever the statement does (a condition itself always runs): ``"loop"`` when it sits in a loop
    inside the statement (the statement itself included), which wins over ``"branch"``: in a branch of an ``if`` or
    a ``?:``, or on the right of ``&&``/``||``."""
    why = None
    n: Node | None = sub
    while n is not None and n not in top:
        p = n.parent
        if p is None:
            return why or "branch"  # not under the statement: never read as always running
        if syn.is_loop(p):
            return "loop"
        if (syn.is_if(p) or syn.is_conditional(p)) and n != p.child_by_field_name("condition"):
            why = "branch"
        if syn.is_binary(p) and view.t(p.child_by_field_name("operator")) in ("&&", "||") and \
                n != p.child_by_field_name("left"):
            why = "branch"
        n = p
    return why


def _vector_key(view: KernelView, sub: Node, why: str | None, declared: set[str]) -> tuple[str, str] | None:
    """``(array, index)`` texts when the stride-1 subscript ``sub`` (conditional for the reason ``why``, see
    :func:`_conditional`) can be one lane of a vector copy, else ``None`` (it stays scalar)."""
    if not syn.is_subscript(sub) or why is not None:
        return None
    p = sub.parent
    while p is not None and syn.is_parenthesized(p):
        p = p.parent
    if syn.is_address_of(p):
        return None
    arg, idx = sub.child_by_field_name("argument"), sub.child_by_field_name("indices")
    if arg is None or idx is None or not syn.is_identifier(arg):
        return None
    if any(view.t(n) in declared for n in syn.identifiers(idx)) or view.t(arg) in declared:
        return None
    return view.t(arg), " ".join(view.t(idx).strip("[] ").split())


def _node_at(view: KernelView, stmts: list[Node], span: tuple[int, int]) -> Node | None:
    """The outermost node of ``stmts`` whose file bytes are ``span``."""
    for s in stmts:
        for n in syn.walk(s):
            if view.file_byte(n) == span[0] and n.end_byte + view.base == span[1]:
                return n
    return None


def _file(view: KernelView, shape: Elementwise) -> tuple[list[RowVector], list[str]] | str:
    """The body's global accesses filed as vectors and scalars (this module's docstring), or why one moves by
    neither 0 nor 1 element with the column."""
    start, end = view.file_byte(shape.stmts[0]), shape.stmts[-1].end_byte + view.base
    top, declared = set(shape.stmts), _declared_names(view, shape.stmts)
    keys: dict[tuple[str, str], RowVector] = {}
    scalar: list[str] = []
    scalar_ptrs: set[str] = set()
    for a in view.facts.global_accesses():
        if not (start <= a.span[0] < end):
            continue
        stride = a.stride("threadIdx.x")
        if a.vector or a.index is None or stride is None or stride not in (0, 1):
            return (f"`{a.shown}` moves by {stride if stride is not None else 'an unknown step'} "
                    f"elements when the column {shape.name} moves by 1: not contiguous along threadIdx.x (map "
                    "threadIdx.x to the contiguous index first)")
        sub = _node_at(view, shape.stmts, a.span)
        why = _conditional(view, sub, top) if sub is not None else None
        if stride == 1 and why == "loop":
            return (f"`{a.shown}` in the loop on line {a.line} moves with the column {shape.name}: "
                    "each lane would run the loop with its own scalar load where the threads' loads were coalesced "
                    "side by side (a loop over the column's data wants tiling or coarsening, not a vector copy)")
        key = _vector_key(view, sub, why, declared) if stride == 1 and sub is not None and not a.macro else None
        pf = view.facts.pointer(a.pointer)
        if key is None or pf is None or pf.mode == "unknown":
            scalar.append(f"{a.shown}")
            scalar_ptrs.add(a.pointer)
            continue
        v = keys.setdefault(key, RowVector(a.pointer, key[0], key[1]))
        v.subs.append(sub)  # type: ignore[arg-type]
        _read_write(sub, v)  # type: ignore[arg-type]
    return _settle(view, keys, scalar, scalar_ptrs)


def _read_write(sub: Node, v: RowVector) -> None:
    """Mark ``v`` read and/or written by the subscript ``sub``."""
    if not is_lvalue(sub):
        v.read = True
        return
    v.written = True
    p = sub.parent
    op = p.child_by_field_name("operator") if p is not None and syn.is_assignment(p) else None
    if syn.is_update(p) or (op is not None and op.type != "="):
        v.read = True


def _settle(view: KernelView, keys: dict[tuple[str, str], RowVector], scalar: list[str], scalar_ptrs: set[str]
            ) -> tuple[list[RowVector], list[str]] | str:
    """Drop the vectors of a written pointer that has another access (its accesses all stay scalar)."""
    per_ptr: dict[str, int] = {}
    for v in keys.values():
        per_ptr[v.pointer] = per_ptr.get(v.pointer, 0) + 1
    written = {v.pointer for v in keys.values() if v.written}
    vectors: list[RowVector] = []
    for v in keys.values():
        if v.pointer in written and (per_ptr[v.pointer] > 1 or v.pointer in scalar_ptrs):
            scalar += [f"{v.pointer}[{v.index}]"] * len(v.subs)
        else:
            vectors.append(v)
    if not vectors:
        return "no global access of the guarded code moves with the column as a whole vector (each runs " \
               "under a condition, in a loop, through its address, or beside another access of a written pointer)"
    vectors.sort(key=lambda v: v.subs[0].start_byte)
    return vectors, scalar


def contiguous_rows(view: KernelView) -> ContiguousRows | str | None:
    """The kernel as a :class:`ContiguousRows`, or one line saying why it is not one (the cases of this module's
    docstring).

    Args:
        view: the kernel's text and analysis facts (a :class:`~htam_core.source.analysis.forms.KernelView`).

    Returns:
        :class:`ContiguousRows`, the reason as a string, or ``None`` when the kernel declares no column index
        (not a 2-D kernel of this shape at all: the caller's own reason stands).
    """
    col = _column(view)
    if col is None:
        return None
    decl, name, typ, value = col
    g = _guard(view, decl, name)
    if isinstance(g, str):
        return g
    guard, bound = g
    body = list(guard.body)
    if not body:
        return "the bounds check guards no statement"
    cons = guard.stmt.child_by_field_name("consequence") if guard.form == "if" else None
    shape = Elementwise(decl, name, typ, value, guard.stmt, bound, guard.form, body, cons, alternative=guard.alternative)
    why = _body_reason(view, shape)
    if why:
        return why
    filed = _file(view, shape)
    if isinstance(filed, str):
        return filed
    spans = [(s.start_byte, s.end_byte) for v in filed[0] for s in v.subs]
    used = any(view.t(n) == name and not any(a <= n.start_byte < b for a, b in spans)
               for s in body for n in syn.identifiers(s))
    return ContiguousRows(shape, guard, *filed, column_used=used)
