"""A thread-per-row running sum (a scan along each row), in normal form (:class:`RowScan`).

A first row-scan kernel gives every thread a whole row and a serial running value, stored at each step::

    size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;   // the thread-per-row index (forms.elementwise)
    if (r >= rows) return;                                      // or if (r < rows) { ... } around the rest
    int acc = 0;                                                // any start value
    for (size_t c = 0; c < cols; ++c) {                         // int, unsigned or size_t counters, any start
        acc += in[r * cols + c];                                // the update: sum, product, or max/min by call
        out[r * cols + c] = acc;                                // the store (before the update: exclusive)
    }

Neighbouring threads read ``cols`` elements apart, so every load is uncoalesced, and the running value makes the
loop a prefix scan, not a reduction (:mod:`htam_core.source.analysis.running_sum`). :func:`row_scan` reads such a
kernel as one :class:`RowScan`: the thread-per-row shape, the loop's header as written, the accumulator with its
type and combine, the element expression, the store split at the accumulator, inclusive or exclusive, and the
statements outside the loop that write memory. A step that gives each row to a warp walks the row in chunks of
32 columns with a warp scan and a carry between chunks; everything it needs is here, so it walks no syntax.

The loop's body must be exactly the update and the store; the element and the store's value have no effect and
do not read the accumulator otherwise; the store's address moves with the loop variable; the accumulator is of a
type ``__shfl_up_sync`` takes (:data:`~htam_core.source.analysis.prefix_loop.SHUFFLE_TYPES` or a template type,
through the unit's ``typedef``/``using`` aliases: :func:`~htam_core.source.analysis.prefix_loop.shuffle_type`);
an integer sum or product reads integer elements (a conversion at every step would not survive the regrouping).
A running max/min written as a comparison and a choice is refused (its tie and NaN rules would need the choice
itself in the scan). Idea sources: Blelloch, "Prefix Sums and Their Applications" (1990); the CUDA C++
Programming Guide, "Warp Shuffle Functions" (the ``__shfl_up_sync`` inclusive scan); CUB's ``WarpScan`` with a
running prefix carried between tiles (``BlockScanRunningPrefixOp``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.block_load import pure_expression
from htam_core.source.analysis.facts import Accumulator, LoopFact, sym
from htam_core.source.analysis.forms import Elementwise, KernelView, elementwise
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.prefix_loop import (
    EXACT_TYPES,
    SHUFFLE_TYPES,
    _integer_summand,
    pieces,
    shuffle_type,
)
from htam_core.source.analysis.syntax import effect_free, statements, unwrap_parens

__all__ = ["FLOATING_TYPES", "MINMAX_CALLS", "RowScan", "row_scan"]

#: Calls read as a running max or min step ``acc = f(acc, e)``.
MINMAX_CALLS = frozenset({"fmaxf", "fminf", "fmax", "fmin", "max", "min"})
#: Floating-point element types, as written or bound at a launch (their sums and products depend on the order).
FLOATING_TYPES = frozenset({"float", "double", "half", "__half", "__nv_bfloat16", "nv_bfloat16", "at::Half",
                            "at::BFloat16", "c10::Half", "c10::BFloat16", "long double"})


@dataclass(frozen=True)
class RowScan:
    """A thread-per-row running value in normal form (see the module docstring).

    Attributes:
        ew: the thread-per-row shape (index, bounds check, guarded statements: :class:`Elementwise`).
        loop: the loop's fact.
        loop_stmt: the loop statement.
        var: the loop variable; ``var_type`` its declared type as written (``"size_t"``).
        start: the loop's start as written (``"0"``).
        bound: the loop's bound as written, parenthesized unless a name or a literal (``"cols"``).
        acc: the accumulator; ``acc_type`` its declared type as written, without ``const`` (``"int"``, ``"T"``,
            ``"I"``); ``acc_resolved`` the type that names through the unit's aliases (``"int64_t"`` for ``I`` after
            ``typedef int64_t I;``; :attr:`KernelView.types`).
        op: ``"sum"``, ``"prod"``, ``"max"`` or ``"min"``.
        combine: the combine of two partial values as a format of ``{a}`` and ``{b}`` (``"{a} + {b}"``,
            ``"fmaxf({a}, {b})"``).
        element: the element's value as written (``"in[r * cols + c]"``; ``"-(x[c])"`` for ``acc -= x[c]``).
        inclusive: the store follows the update (``out = acc`` after ``acc += e``); else it stores the value before.
        store: the store's text split at its uses of the accumulator (``("out[r * cols + c] = ", ";")``).
        exact: the scan gives the same values as the loop in any grouping (integers, max/min).
        lane_writes: statements of the guarded body outside the loop that write memory (one thread did them; a
            warp per row has one lane do them).
    """

    ew: Elementwise
    loop: LoopFact
    loop_stmt: Node
    var: str
    var_type: str
    start: str
    bound: str
    acc: str
    acc_type: str
    op: str
    combine: str
    element: str
    inclusive: bool
    store: tuple[str, ...]
    exact: bool
    lane_writes: tuple[Node, ...]
    acc_resolved: str = ""

    def store_of(self, value: str) -> str:
        """The store with ``value`` (a C identifier) in place of the accumulator."""
        return value.join(self.store)

    def combined(self, a: str, b: str) -> str:
        """The combine of ``a`` and ``b`` (C text)."""
        return self.combine.format(a=a, b=b)

    def floating(self, instantiations: Iterable[tuple[str, Iterable[str]]] = ()) -> bool | None:
        """Whether the running value is of a floating type (whose sums and products change with their order):
        ``acc_type`` itself, or for a type template parameter the types the kernel's launches instantiate it with
        (``instantiations``: :attr:`~htam_core.source.analysis.facts.KernelFacts.type_instantiations`), ``True``
        when one of them is floating; ``None`` for a template parameter no launch binds."""
        typ = self.acc_resolved or self.acc_type
        if typ in SHUFFLE_TYPES:
            return typ in FLOATING_TYPES
        bound = dict((n, tuple(ts)) for n, ts in instantiations).get(typ, ())
        if not bound:
            return None
        return any(" ".join(t.replace("const", " ").split()) in FLOATING_TYPES for t in bound)


def _op_of(view: KernelView, asg: Node, acc: str) -> tuple[str, str, Node, bool] | None:
    """``(op, combine format, element node, negated)`` of an update ``acc += e``, ``acc -= e``, ``acc *= e``,
    ``acc = acc + e`` (either order), ``acc = acc * e`` or ``acc = f(acc, e)`` with ``f`` in :data:`MINMAX_CALLS`,
    else ``None``."""
    op, right = view.t(asg.child_by_field_name("operator")), asg.child_by_field_name("right")
    if right is None:
        return None
    if op in ("+=", "-=", "*="):
        return ("prod", "{a} * {b}", right, False) if op == "*=" else ("sum", "{a} + {b}", right, op == "-=")
    r = unwrap_parens(right) if op == "=" else None
    if syn.is_binary(r) and view.t(r.child_by_field_name("operator")) in ("+", "*"):
        left, other = r.child_by_field_name("left"), r.child_by_field_name("right")
        e = other if view.t(left) == acc else left if view.t(other) == acc else None
        times = view.t(r.child_by_field_name("operator")) == "*"
        return None if e is None else (("prod", "{a} * {b}", e, False) if times else ("sum", "{a} + {b}", e, False))
    fn = view.t(r.child_by_field_name("function")) if syn.is_call(r) else None
    args = [a for a in r.child_by_field_name("arguments").named_children if not syn.is_comment(a)] if fn else []
    if fn not in MINMAX_CALLS or len(args) != 2:
        return None
    mine = [a for a in args if view.t(unwrap_parens(a)) == acc]
    if len(mine) != 1:
        return None
    other = args[1] if mine[0] is args[0] else args[0]
    return ("max" if "max" in fn else "min"), fn + "({a}, {b})", other, False


def _assignment(stmt: Node) -> Node | None:
    """The assignment an expression statement ``x = ...;`` holds, else ``None``."""
    if not syn.is_expression_statement(stmt) or not stmt.named_children:
        return None
    asg = stmt.named_children[0]
    return asg if syn.is_assignment(asg) else None


@dataclass(frozen=True)
class _Header:
    """The loop's header as written: the variable, its type, the start and the bound."""

    var: str
    type: str
    start: str
    bound: Node


def _header(view: KernelView, lp: LoopFact) -> _Header | str:
    """The :class:`_Header` of ``for (T c = s; c < n; ++c)`` or ``n > c`` (the loop's header fact,
    :attr:`LoopFact.header`: ``<``, step 1; ``n`` effect-free and not reading ``c``), or why the loop is not one."""
    h = lp.header
    if h is None or h.cmp != "<" or lp.update != "+" or lp.step != 1:
        return f"the loop on line {lp.line} is not `for (T c = start; c < n; ++c)`"
    start, bound = view.node_at(h.start), view.node_at(h.bound)
    if start is None or bound is None or syn.references(bound, view.src, h.var) or not effect_free(bound):
        return f"the bound of the loop on line {lp.line} reads {h.var} or has an effect"
    return _Header(h.var, h.type, view.t(start), bound)


def _loop_and_acc(view: KernelView, ew: Elementwise) -> tuple[Node, LoopFact, Accumulator] | str:
    """The one loop of the guarded body (no other loop anywhere in it) and its one running accumulator."""
    loops = [s for s in ew.stmts if syn.is_for(s)]
    if len(loops) != 1 or any(syn.loops(s) for s in ew.stmts if s is not loops[0]):
        return "the guarded body is not one row loop (a running value scanned along the row)"
    lp = view.facts.loop_at(view.file_byte(loops[0]))
    if lp is None or lp.kind != "for" or len(lp.accumulators) != 1:
        return "the row loop does not carry exactly one running value"
    body = loops[0].child_by_field_name("body")
    if body is None or syn.loops(body) or syn.jumps(body):
        return f"the loop on line {lp.line} holds another loop or a jump"
    return loops[0], lp, lp.accumulators[0]


def _steps(view: KernelView, loop: Node, lp: LoopFact, acc: Accumulator) -> tuple[Node, Node, bool] | str:
    """``(update assignment, store assignment, inclusive)`` of a loop body of exactly those two statements."""
    st = statements(loop.child_by_field_name("body"))
    asgs = [_assignment(s) for s in st]
    if len(st) != 2 or None in asgs:
        return f"the loop on line {lp.line} is not just the update of {acc.name} and a store of it"
    ups = [k for k, a in enumerate(asgs) if view.t(a.child_by_field_name("left")) == acc.name]  # type: ignore[union-attr]
    if len(ups) != 1:
        return f"the loop on line {lp.line} is not just the update of {acc.name} and a store of it"
    return asgs[ups[0]], asgs[1 - ups[0]], ups[0] == 0  # type: ignore[return-value]


def _store_problem(view: KernelView, store: Node, lp: LoopFact, acc: str) -> str | None:
    """Why ``store`` is not ``p[f(c)] = g(acc)`` (a global write whose address moves with the loop variable, a value
    with no effect), or ``None``."""
    left, right = store.child_by_field_name("left"), store.child_by_field_name("right")
    span = (view.file_byte(left), left.end_byte + view.base) if left is not None else None
    w = next((a for a in view.facts.accesses if a.span == span and a.kind == "write"), None)
    if view.t(store.child_by_field_name("operator")) != "=" or w is None or right is None:
        return f"the loop on line {lp.line} does not store {acc} to memory with `=`"
    if w.index is None or sym(lp.var or "") not in w.index.free_symbols or (w.space != "global"):
        return f"the store `{view.t(store)}` does not write global memory at an address that moves with {lp.var}"
    if not syn.references(right, view.src, acc) or not pure_expression(view, right) \
            or any(syn.references(left, view.src, n) for n in (acc,)) or not pure_expression(view, left):
        return f"the store `{view.t(store)}` has an effect or does not store {acc}"
    return None


def _lane_writes(view: KernelView, ew: Elementwise, loop: Node) -> tuple[Node, ...] | str:
    """The statements of the guarded body outside the loop that write memory, or why one cannot run on one lane
    (it also sets a variable the lanes go on to use)."""
    out = []
    for s in ew.stmts:
        if s is loop:
            continue
        ws = syn.writes(s)
        mem = [w for w in ws if syn.is_memory_reference(unwrap_parens(
            w.child_by_field_name("left") if syn.is_assignment(w) else w.child_by_field_name("argument")))]
        if not mem and not any(view.t(c.child_by_field_name("function")).startswith("atomic") for c in syn.calls(s)):
            continue
        if syn.is_declaration(s) or len(mem) != len(ws):
            return f"`{view.t(s)}` both writes memory and sets a variable; one lane alone cannot run it"
        out.append(s)
    return tuple(out)


def _finish(view: KernelView, ew: Elementwise, loop: Node, lp: LoopFact, acc: Accumulator) -> RowScan | str:
    """The :class:`RowScan` once the loop and its accumulator are found, or the part that does not fit."""
    head = _header(view, lp)
    if isinstance(head, str):
        return head
    steps = _steps(view, loop, lp, acc)
    if isinstance(steps, str):
        return steps
    update, store, inclusive = steps
    if acc.select is not None:
        return (f"{acc.name} is a running {acc.op} written as a comparison and a choice; the scan combines with a "
                "call (fmaxf, max, ...) only")
    got = _op_of(view, update, acc.name)
    if got is None:
        return f"the update `{view.t(update)}` is not a sum, product, or max/min call of {acc.name}"
    op, combine, e, negated = got
    if syn.references(e, view.src, acc.name) or not pure_expression(view, e):
        return f"the element `{view.t(e)}` has an effect or reads {acc.name}"
    why = _store_problem(view, store, lp, acc.name)
    if why:
        return why
    typ = shuffle_type(view, acc)
    if typ is None:
        return f"{acc.name} is of type {acc.type}, which __shfl_up_sync does not take"
    t, integer = typ[0], typ[1] in EXACT_TYPES
    exact = integer or op in ("max", "min")
    if integer and op in ("sum", "prod") and not _integer_summand(view, e):
        return f"the integer {acc.name} takes the non-integer `{view.t(e)}`, converted at every step"
    writes = _lane_writes(view, ew, loop)
    if isinstance(writes, str):
        return writes
    element = f"-({view.t(e)})" if negated else view.t(e)
    b = unwrap_parens(head.bound)
    bound = view.t(b) if syn.is_simple_operand(b) else f"({view.t(b)})"
    return RowScan(ew, lp, loop, head.var, head.type, head.start, bound, acc.name, t, op, combine, element,
                   inclusive, pieces(view, store.parent, acc.name), exact, writes, typ[1])


def row_scan(view: KernelView) -> RowScan | str:
    """The kernel's thread-per-row running value (:class:`RowScan`), or why it has none in this form.

    Args:
        view: the kernel's parsed unit with its facts (:class:`~htam_core.source.analysis.forms.KernelView`).

    Returns:
        the scan in normal form, or one sentence: not a thread-per-row kernel, or the part that does not fit.
    """
    ew = elementwise(view)
    if isinstance(ew, str):
        return f"not a thread-per-row kernel: {ew}"
    found = _loop_and_acc(view, ew)
    if isinstance(found, str):
        return found
    loop, lp, acc = found
    if view.facts.reduction_dim(lp) != "row":  # every read moves by 1 with the variable: the row is contiguous
        return (f"the loop on line {lp.line} does not walk a row owned by one thread (its reads do not move by one "
                f"element per step of {lp.var})")
    return _finish(view, ew, loop, lp, acc)
