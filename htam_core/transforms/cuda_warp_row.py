"""CUDA thread-per-row -> warp-per-row (``cuda.warp_per_row``).

A naive row kernel gives each thread a whole row: ``row = blockIdx.x * blockDim.x + threadIdx.x``, a guard
``row < rows``, then loops ``for (j = 0; j < cols; ++j)`` over the row (or the same counted loop written
``int j = 0; while (j < cols) { ...; ++j; }``, the step last: ``j++``, ``j += 1``, ``j = j + 1``). Neighbouring threads then read
addresses ``cols`` elements apart, so every load is uncoalesced. The transform gives each row to a warp:

* ``row`` becomes the global *warp* index and a lane index ``htam_lane = threadIdx.x & 31`` is added;
* every loop over the row starts at the lane and steps by 32, so the lanes of a warp read consecutive
  elements (coalesced);
* a scalar that a loop reduces (``acc += e``; ``m = fmaxf(m, e)`` and the ``fminf``/``max``/``min``/
  ``fmax``/``fmin`` forms) is all-reduced over the warp after that loop with ``__shfl_xor_sync``, so every
  lane holds the row's value, as the one thread did before;
* an arg-max/arg-min ``if (v > best) { best = v; bi = c; }`` (the analysis layer's
  :func:`~htam_core.source.analysis.argreduce.arg_step`) is all-reduced as the pair ``(best, bi)``: the more
  extreme value wins, and on equal values the index the original's tie rule keeps (the first for a strict
  comparison, the last for ``>=``/``<=``), so the lanes agree with the one thread on every tie;
* a loop may start anywhere (``best = p[0]; for (c = 1; ...)``): the lanes start at ``start + lane``; a max, min
  or arg step keeps its starting value in every lane (combining it again changes nothing), a sum keeps a starting
  value other than 0 on lane 0 only, so the lanes' partial sums add up to the one thread's;
* a perfect nest of two loops from 0 whose bounds do not depend on each other (``for n < N: for i < HW:``, the
  per-channel statistics of an NCHW tensor) is read as one index ``f`` in ``[0, N * HW)`` (``n = f / HW``,
  ``i = f % HW``) and split over the lanes like one loop;
* a running max or min written as a comparison and a choice (``m = x > m ? x : m``, ``m = m > x ? m : x``,
  ``if (x > m) m = x;``: the analysis layer's :func:`~htam_core.source.analysis.select.select_step`) is
  all-reduced with the same comparison and branch order, so ties and NaN choose as in the one thread, and a loop that is
  the merged max/sum pass of ``cuda.online_softmax`` (:func:`htam_core.transforms.cuda_softmax.online_pair`)
  gets an all-reduce of the ``(max, sum)`` pairs, so the two steps compose in either order;
* a loop that keeps Welford's running mean and M2 (the analysis layer's
  :class:`~htam_core.source.analysis.facts.WelfordStat`: ``d = v - m; m += d / (i + 1); M2 += d * (v - m)``, an
  explicit counter or the loop variable as the count) gives each lane its own count (``i + 1`` becomes the lane's
  ``i / 32 + 1``), and after the loop five shuffle-xor steps merge the lanes' ``(count, mean, M2)`` by Chan, Golub
  and LeVeque's formula (:mod:`htam_core.transforms.row_welford`), so every lane holds the row's mean and M2 and the
  code after the loop is unchanged; M2 and an explicit counter must start at 0;
* a statement outside the loops that writes memory (``out[row] = acc;``) runs on lane 0 only;
* every launch of the kernel gets 32 times as many blocks (the block size must be a multiple of 32, so a
  warp never straddles two rows' guards; a block size known only at run time, a launcher argument, is rounded
  up to a multiple of 32 at the launch when nothing else in the kernel depends on it).

The kernel must have exactly that shape; anything the rewrite cannot prove safe is refused with a reason
(another use of the thread index, a loop not stepping by 1 up to ``< n``, a scalar updated in a loop in another
way, an arg step whose index is not the loop variable, a nest three deep or triangular, a memory write inside a
loop whose address does not depend on the loop variable, ...). Float sums are added in a different order, so
results differ in the last bits. Idea sources: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory";
NVIDIA developer blog, "Faster Parallel Reductions on Kepler" (Luitjens, 2014) for the warp-shuffle all-reduce;
CUB's ``ArgMax`` (a key-value reduction keeping the first index) for the pair; loop collapsing (OpenMP's
``collapse(2)``) for the nest; Welford (1962) and Chan, Golub and LeVeque (1979) for the mean/M2 merge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.argreduce import ArgStep, arg_step
from htam_core.source.analysis.constants import is_zero_value, literal_value
from htam_core.source.analysis.facts import WelfordStat
from htam_core.source.analysis.forms import Elementwise, elementwise, is_lvalue
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.running_sum import running_sum_refusal
from htam_core.source.analysis.select import Selection, select_step
from htam_core.source.analysis.syntax import effect_free
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    launch_dims_edit,
    references,
    statement_list,
    wrap_grid,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_softmax import OnlinePair, online_pair, pair_all_reduce
from htam_core.transforms.registry import register
from htam_core.transforms.row_welford import warp_welford_merge
from htam_core.types.profile import Profile

LANE = "htam_lane"
WARP = 32
#: Reduction functions accepted in ``x = f(x, e)``; max/min forms do not care about the starting value.
MINMAX = ("fmaxf", "fminf", "fmax", "fmin", "max", "min")
#: A reduction step's op: ``"+"``, a min/max function, ``"argmax"``/``"argmin"`` (and their ``" index"`` halves),
#: or the :class:`Selection` of a max/min written as a comparison and a choice (all-reduced with that comparison).
Op = str | Selection


@dataclass(frozen=True)
class RowMap:
    """How the elements of a row are dealt to the threads that share it, and how their partial values meet (a warp
    per row here, :data:`WARP_MAP`; a block per row in :mod:`htam_core.transforms.cuda_block_row`).

    Attributes:
        lane: the C expression of a thread's place among the row's threads (``threadIdx.x & 31``).
        stride: how far a thread steps along the row (``32``, ``blockDim.x``), C text.
        row: the format turning the thread-per-row index into the row index (``"({}) / 32"``).
        reduce: ``(name, op, indent)`` -> the text after a loop that all-reduces one scalar over the threads.
        arg_reduce: ``(arg step, value type, index type, indent)`` -> the text that all-reduces an arg pair.
        pair_reduce: ``(max, sum, max type, sum type, max function, exp, indent)`` -> the text that all-reduces the
            running-max/sum pairs of the merged online max/sum loop of ``cuda.online_softmax``.
        welford_reduce: ``(mean, M2, count, mean type, M2 type, count type, counter or None, indent)`` -> the text
            that merges the threads' Welford triples (:func:`~htam_core.transforms.row_welford.warp_welford_merge`),
            or ``None`` when this way of sharing a row cannot merge them.
    """

    lane: str
    stride: str
    row: str
    reduce: Callable[[str, str, str], str]
    arg_reduce: Callable[[ArgStep, str, str, str], str]
    pair_reduce: Callable[[str, str, str, str, str | None, str, str], str]
    welford_reduce: Callable[[str, str, str, str, str, str, str | None, str], str] | None = None


def _is_zero(text: str) -> bool:
    """The initializer is zero however written (``0.0f``, ``T(0)``): the analysis layer's reading."""
    return is_zero_value(text)


def _declared_scalars(unit: CudaUnit, stmts: list[Node]) -> dict[str, Node]:
    """Scalar locals (plain identifiers, not pointers or arrays) declared by top-level statements -> their
    init_declarator (or identifier) node."""
    out: dict[str, Node] = {}
    for s in stmts:
        if not syn.is_declaration(s):
            continue
        for d in s.named_children:
            target = d.child_by_field_name("declarator") if syn.is_init_declarator(d) else d
            if target is not None and syn.is_identifier(target):
                out[unit.t(target)] = d
    return out


@dataclass(frozen=True)
class _Head:
    """A counted loop ``for (T var = start; var < bound; ++var)``: its nodes, the variable's declared type, the
    exclusive bound as C text (``(q) + 1`` for ``var <= q``) and, for ``var != bound``, the condition node (a lane
    that steps past the bound must stop: the rewrite writes ``var < bound``)."""

    var: str
    start: Node
    bound: Node
    upd: Node
    type: str
    limit: str
    cond: Node | None = None


def _loop_header(unit: CudaUnit, loop: Node) -> _Head | str:
    """The :class:`_Head` of a ``for`` loop counting up by 1 to a bound (``j < E``, ``E > j``, ``j <= E``, ``j !=
    E``; ``S`` any value that does not read ``j``), read from the analysis layer's loop header
    (:attr:`~htam_core.source.analysis.facts.LoopFact.header`), or why not."""
    line = unit.line(loop)
    fact = unit.facts.loop_at(unit.file_byte(loop))
    h = fact.header if fact is not None else None
    if fact is None or h is None:
        why = fact.header_problem if fact is not None and fact.header_problem else "is not a counted for loop"
        return f"the loop on line {line} {why}"
    if h.cmp not in ("<", "<=", "!="):
        return f"the loop on line {line} is not `{h.var} < n`"
    if not h.unit_step or h.exclusive is None:
        return f"the loop on line {line} does not step {h.var} by 1"
    start, bound, upd = (unit.node_at(sp) for sp in (h.start, h.bound, h.update))
    if start is None or bound is None or upd is None:
        return f"the loop on line {line} is not a counted for loop"
    if references(bound, unit.src, h.var):
        return f"the bound of the loop on line {line} depends on {h.var}"
    cond = unit.node_at(h.cond) if h.cmp == "!=" else None
    return _Head(h.var, start, bound, upd, h.type, h.exclusive, cond)


def _unit_steps(var: str) -> tuple[str, ...]:
    """The spellings (spaces removed) of a step of ``var`` by 1."""
    return f"++{var}", f"{var}++", f"{var}+=1", f"{var}={var}+1"


def _while_header(unit: CudaUnit, loop: Node, prev: Node | None) -> tuple[_Head, Node] | str:
    """The :class:`_Head` and the step statement of a counted ``while``: ``T j = S;`` declared by the statement
    ``prev`` just before it, then ``while (j < E) { ...; ++j; }`` whose last statement steps ``j`` by 1 (``j++``,
    ``j += 1``, ``j = j + 1``); the same loop as ``for (T j = S; j < E; ++j) { ... }``, or why it is not one."""
    line = unit.src[: loop.start_byte].count(b"\n") + 1
    cond, body = loop.child_by_field_name("condition"), loop.child_by_field_name("body")
    if syn.is_condition_clause(cond):
        cond = cond.child_by_field_name("value") or (cond.named_children[0] if cond.named_children else None)  # type: ignore[union-attr]
    st = statement_list(body) if syn.is_block(body) else []
    ds = [d for d in prev.named_children if syn.is_init_declarator(d)] if syn.is_declaration(prev) else []
    if cond is None or not st or len(ds) != 1 or not syn.is_expression_statement(st[-1]):
        return (f"the while loop on line {line} is not a counted loop (`T j = start;` just before it, a body ending "
                "in `++j;`)")
    var, value = unit.t(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")
    upd = st[-1].named_children[0] if st[-1].named_children else None
    if value is None or upd is None or unit.t(upd).replace(" ", "") not in _unit_steps(var):
        return f"the while loop on line {line} does not end its body by stepping {var} (declared just before it) by 1"
    cond = syn.unwrap_parens(cond)
    if not syn.is_binary(cond) or unit.t(cond.child_by_field_name("left")) != var \
            or unit.t(cond.child_by_field_name("operator")) != "<":
        return f"the while loop on line {line} is not `{var} < n`"
    bound = cond.child_by_field_name("right")
    if references(bound, unit.src, var):
        return f"the bound of the loop on line {line} depends on {var}"
    return _Head(var, value, bound, upd, unit.t(syn.declaration_type(prev)), unit.t(bound)), st[-1]


def _inner_loop(unit: CudaUnit, loop: Node) -> Node | None:
    """The one statement of ``loop``'s body when it is itself a ``for`` loop (a perfect 2-deep nest), else ``None``."""
    body = loop.child_by_field_name("body")
    st = statement_list(body) if syn.is_block(body) else [body] if body is not None else []
    return st[0] if len(st) == 1 and syn.is_for(st[0]) else None


@dataclass
class _Walk:
    """One loop (or perfect 2-deep nest) to split over the lanes: the outer loop statement, the counted headers
    (outer first), the body that runs once per element and the outer loop's line."""

    loop: Node
    heads: list[_Head]
    body: Node
    line: int
    step: Node | None = None  # a counted while's step statement (``++j;``), not a step of the body's reductions


def _while_walk(unit: CudaUnit, loop: Node, prev: Node | None) -> _Walk | str:
    """The :class:`_Walk` of a counted ``while`` (:func:`_while_header`), or why it cannot be split over the lanes:
    any jump (a ``continue`` would skip the step), a loop inside it."""
    line = unit.src[: loop.start_byte].count(b"\n") + 1
    got = _while_header(unit, loop, prev)
    if isinstance(got, str):
        return got
    body = loop.child_by_field_name("body")
    if body is None or syn.jumps(body) or syn.loops(body):
        return f"the while loop on line {line} leaves early, skips its step or holds another loop"
    return _Walk(loop, [got[0]], body, line, got[1])


def _walk_of(unit: CudaUnit, loop: Node, prev: Node | None = None) -> _Walk | str:
    """The :class:`_Walk` of a loop of the guarded body (``prev``: the statement before it, where a counted
    ``while`` declares its variable), or why it cannot be split over the lanes: a loop that is not counted, or a
    nest deeper than two, whose inner loop does not start at 0 or whose bounds depend on each other."""
    if syn.is_while(loop):
        return _while_walk(unit, loop, prev)
    line = unit.src[: loop.start_byte].count(b"\n") + 1
    head = _loop_header(unit, loop)
    if isinstance(head, str):
        return head
    if any(not syn.is_continue(j) for j in syn.jumps(loop.child_by_field_name("body"))):
        return (f"the loop on line {line} can leave early (break, return or goto): each lane would stop at its own "
                "element")
    inner = _inner_loop(unit, loop)
    if inner is None:
        body = loop.child_by_field_name("body")
        if body is None or syn.loops(body):
            return f"the loop on line {line} contains another loop that is not its only statement"
        return _Walk(loop, [head], body, line)
    ih = _loop_header(unit, inner)
    if isinstance(ih, str):
        return ih
    body = inner.child_by_field_name("body")
    if body is None or syn.loops(body):
        return f"the loops on line {line} nest more than two deep"
    if not all(_is_zero(unit.t(h.start)) for h in (head, ih)):
        return f"the loops nested on line {line} do not both start at 0, so they cannot be read as one index"
    if any(references(n, unit.src, head.var) for n in (ih.start, ih.bound)):
        return f"the inner loop on line {line} depends on {head.var}, so the nest is not one index range"
    if not all(effect_free(h.bound) for h in (head, ih)):
        return f"a bound of the loops nested on line {line} has an effect; the nest reads each bound once"
    return _Walk(loop, [head, ih], body, line)


def _flat_nest(unit: CudaUnit, w: _Walk, after: str, stride: str) -> TextEdit:
    """The edit replacing a perfect nest ``for (a = 0; a < A; ++a) for (b = 0; b < B; ++b) S`` with one index
    ``f`` in ``[0, A * B)`` split over the lanes (``a = f / B``, ``b = f % B``, the same order of elements), followed
    by ``after`` (the all-reduces); ``stride``: the threads sharing a row (C text). The count is 0 when either bound
    is not positive, as the nest runs no step. The pair ``(a, b)`` is divided out once, then carried along: each step
    adds ``stride / B`` to ``a`` and ``stride % B`` to ``b``, with one carry when ``b`` reaches ``B`` (a 64-bit
    division per element would cost more than the element's load); the carry sits in the loop's update, so a
    ``continue`` in the body keeps it."""
    (h1, h2), ind = w.heads, syn.indent_of(unit.src, w.loop.start_byte)
    a, b = f"({h1.limit})", f"({h2.limit})"
    text = (f"for (long long htam_f = {LANE}, htam_fn = {a} > 0 && {b} > 0 ? (long long){a} * {b} : 0, "
            f"htam_b = {b} > 0 ? {b} : 1, htam_q = htam_f / htam_b, htam_r = htam_f % htam_b, "
            f"htam_dq = ({stride}) / htam_b, htam_dr = ({stride}) % htam_b;\n"
            f"{ind}     htam_f < htam_fn;\n"
            f"{ind}     htam_f += {stride}, htam_r += htam_dr, htam_q += htam_dq + (htam_r >= htam_b), "
            f"htam_r -= htam_r >= htam_b ? htam_b : 0) {{\n"
            f"{ind}    const {h1.type} {h1.var} = ({h1.type})htam_q;\n"
            f"{ind}    const {h2.type} {h2.var} = ({h2.type})htam_r;\n"
            f"{ind}    {unit.t(w.body)}\n{ind}}}")
    return unit.replace(w.loop, text + after)


def _written_identifier(node: Node) -> Node | None:
    """The identifier an assignment/update writes when it is a plain variable, else ``None``."""
    target = node.child_by_field_name("left") if syn.is_assignment(node) else \
        node.child_by_field_name("argument")
    target = syn.unwrap_parens(target) if target is not None else None
    return target if target is not None and syn.is_identifier(target) else None


def _writes_memory(node: Node) -> list[Node]:
    """Assignments/updates under ``node`` whose target is memory (``a[i]``, ``*p``, ``p->f``)."""
    out = []
    for n in syn.walk(node):
        if not syn.is_write(n):
            continue
        target = n.child_by_field_name("left") if syn.is_assignment(n) else n.child_by_field_name("argument")
        target = syn.unwrap_parens(target) if target is not None else None
        if target is not None and syn.is_memory_reference(target):
            out.append(n)
    return out


def _reduction(unit: CudaUnit, n: Node, name: str) -> str | None:
    """``"+"`` or the min/max function when ``n`` updates ``name`` as a reduction step, else ``None``."""
    if not syn.is_assignment(n):
        return None
    op, right = unit.t(n.child_by_field_name("operator")), n.child_by_field_name("right")
    if op == "+=":
        return None if references(right, unit.src, name) else "+"
    if op != "=":
        return None
    call = syn.unwrap_parens(right)
    if not syn.is_call(call) or unit.t(call.child_by_field_name("function")) not in MINMAX:
        return None
    args = [a for a in call.child_by_field_name("arguments").named_children if not syn.is_comment(a)]
    if len(args) != 2:
        return None
    mine = [a for a in args if unit.t(syn.unwrap_parens(a)) == name]
    other = [a for a in args if a not in mine]
    if len(mine) != 1 or references(other[0], unit.src, name):
        return None
    return unit.t(call.child_by_field_name("function"))


def _selected(unit: CudaUnit, n: Node, name: str) -> tuple[Selection, Node] | None:
    """The selection and whole statement of a running max/min step written as a choice (``m = x > m ? x : m``,
    ``if (x > m) m = x;``: the analysis layer's :func:`~htam_core.source.analysis.select.select_step`) when the
    assignment ``n`` to ``name`` is one, else ``None``."""
    stmt = n.parent if n.parent is not None and syn.is_expression_statement(n.parent) else n
    owner = stmt.parent.parent if stmt.parent is not None and syn.is_block(stmt.parent) else stmt.parent
    for cand in (stmt, owner):
        step = select_step(unit.src, cand) if cand is not None else None
        if step is not None and step.name == name:
            return step.selection, step.stmt
    return None


def _op_name(op: Op) -> str:
    """The op as the candidate's summary names it (a selection: its kind and the comparison it keeps, and whether a
    NaN candidate enters: then a row holding a NaN may end with another value, the lanes meeting it in another
    order)."""
    if isinstance(op, str):
        return op
    return f"{op.kind} ({op.assign('m', 'v')}{' a NaN enters' if op.nan_enters else ''})"


def warp_all_reduce(name: str, op: Op, indent: str) -> str:
    """The text after a loop that all-reduces scalar ``name`` over a warp with ``__shfl_xor_sync`` (a butterfly of 5
    steps, every lane ends with the warp's value), by the loop's reduction ``op`` (``"+"``, a min/max function, or
    the :class:`Selection` of a max/min written as a comparison and a choice, combined with that same comparison),
    each line at ``indent``."""
    if isinstance(op, Selection):  # the same comparison and branch order as the loop's step
        step = (f"{{ const auto htam_v = __shfl_xor_sync(0xffffffffu, {name}, htam_o); "
                f"{op.assign(name, 'htam_v')} }}")
    elif op == "+":
        step = f"{name} += __shfl_xor_sync(0xffffffffu, {name}, htam_o);"
    else:
        step = f"{name} = {op}({name}, __shfl_xor_sync(0xffffffffu, {name}, htam_o));"
    return f"\n{indent}for (int htam_o = {WARP // 2}; htam_o > 0; htam_o >>= 1)\n{indent}    {step}"


def _scalar_type(unit: CudaUnit, decl: Node) -> str:
    """The declared type of the scalar whose init_declarator (or identifier) is ``decl``."""
    stmt = decl.parent
    while stmt is not None and not syn.is_declaration(stmt):
        stmt = stmt.parent
    return unit.t(stmt.child_by_field_name("type")) if stmt is not None else "float"


def _online_pair_check(unit: CudaUnit, scalars: dict[str, Node], pair: OnlinePair, line: int) -> str | None:
    """Why the merged online max/sum loop on ``line`` cannot be split over lanes, or ``None``."""
    for name in (pair.m, pair.s):
        if name not in scalars:
            return f"the loop on line {line} reduces {name}, which is not a local of the guarded body"
    init = scalars[pair.s].child_by_field_name("value") if syn.is_init_declarator(scalars[pair.s]) else None
    if init is None or not _is_zero(unit.t(init)):
        return f"the sum {pair.s} does not start at 0, so a per-lane partial sum would count it 32 times"
    return None


def _column_walk(unit: CudaUnit, loop: Node) -> str | None:
    """Whether ``loop`` is no walk along a row: a global access moves with its variable by a known stride other than 1
    (the analysis layer's :meth:`~htam_core.source.analysis.KernelFacts.strided_walk`: a column walk such as
    ``A[r * cols + c]`` over ``r``), so lanes on consecutive values of the variable would read elements that far
    apart; ``None`` for a row walk."""
    fact = unit.facts.loop_at(unit.file_byte(loop))
    acc = unit.facts.strided_walk(fact) if fact is not None else None
    if fact is None or acc is None or fact.var is None:
        return None
    return (f"the loop on line {fact.line} walks a column: `{acc.shown}` moves "
            f"{acc.stride(fact.var)} elements per step of {fact.var}")


def arg_order(a: ArgStep) -> tuple[str, str]:
    """The comparisons that combine two pairs of arg step ``a``: ``(better, tie)``, a value ``better`` than the held
    one wins (``">"`` for an arg-max), and on equal values an index ``tie`` than the held one (``"<"``: the first
    index, for a strict comparison; ``">"``: the last)."""
    return (">" if a.kind == "argmax" else "<"), ("<" if a.first else ">")


def column_walk(unit: CudaUnit, ew: Elementwise) -> str | None:
    """Why the first loop of the guarded body (the inner loop of a nest) that walks a column is one
    (:func:`_column_walk`), or ``None`` when every loop walks a row."""
    return next((w for w in (_column_walk(unit, _inner_loop(unit, s) or s) for s in ew.stmts if syn.is_for(s)) if w),
                None)


def reduced_text(reduced: list[dict[str, str]]) -> tuple[str, str]:
    """The names of the reduced scalars of a row rewrite's summary (``"s, q"``, ``"none"``) and the note that float
    sums change order (``""`` when every reduction is a max, min or arg step, which are exact), with the NaN note
    of a selection that lets a NaN in."""
    names = ", ".join(str(r["name"]) for r in reduced) or "none"
    exact = not sums_reordered(reduced)
    nan = ("; a row holding a NaN may end with another value (its step lets a NaN in)"
           if any("NaN" in str(r["op"]) for r in reduced) else "")
    return names, ("" if exact else " (float sums change order)") + nan


def sums_reordered(reduced: list[dict[str, str]]) -> bool:
    """Whether a row rewrite's all-reduce adds terms in another order (some reduced scalar is a sum, not a max,
    min or arg step): its candidate is then checked at the reordered-sum tolerance (``reorders_only``), as every
    other step that splits a sum over lanes is."""
    return not all(str(r["op"]).startswith(("arg", "f", "max", "min")) for r in reduced)


def warp_arg_all_reduce(a: ArgStep, v_type: str, i_type: str, indent: str) -> str:
    """A butterfly all-reduce of the ``(extreme, index)`` pairs of arg step ``a``: the more extreme value wins, and
    on equal values the index the loop's tie rule keeps (the smaller for a strict comparison, else the larger), so
    every lane ends with the pair the one thread found."""
    (better, tie), b, i = arg_order(a), a.value, a.index
    lines = [f"for (int htam_o = {WARP // 2}; htam_o > 0; htam_o >>= 1) {{",
             f"    const {v_type} htam_ov = __shfl_xor_sync(0xffffffffu, {b}, htam_o);",
             f"    const {i_type} htam_oi = __shfl_xor_sync(0xffffffffu, {i}, htam_o);",
             f"    if (htam_ov {better} {b} || (htam_ov == {b} && htam_oi {tie} {i})) {{ {b} = htam_ov; {i} = htam_oi; }}",
             "}"]
    return "".join(f"\n{indent}{ln}" for ln in lines)


def _step_of(unit: CudaUnit, n: Node, name: str, args: list[ArgStep]) -> tuple[Op | None, Node]:
    """The reduction op of the write ``n`` to ``name`` and the statement that makes the step: a sum/min/max
    (:func:`_reduction`), a running max/min written as a choice (:func:`_selected`), or one half of an arg step
    (``"argmax"``, ``"argmax index"``)."""
    arg = next((a for a in args if a.stmt.start_byte <= n.start_byte < a.stmt.end_byte
                and name in (a.value, a.index)), None)
    if arg is not None:
        return arg.kind + ("" if name == arg.value else " index"), arg.stmt
    op = _reduction(unit, n, name)
    chosen = _selected(unit, n, name) if op is None else None
    return chosen if chosen is not None else (op, n)


def _body_steps(unit: CudaUnit, w: _Walk, scalars: dict[str, Node], kept: frozenset[str] = frozenset()
                ) -> tuple[dict[str, Op], list[ArgStep]] | str:
    """The reduction steps of a walk's body: ``name -> op`` and the arg steps, or why a write is none of them
    (``kept``: names the analysis layer already read as a Welford recurrence of the loop, merged apart)."""
    body, line, loop_vars = w.body, w.line, [h.var for h in w.heads]
    local = set(_declared_scalars(unit, [c for c in syn.walk(body) if syn.is_declaration(c)]))
    args = [a for n in syn.walk(body) if syn.is_if(n) and (a := arg_step(unit.src, n)) is not None]
    ops: dict[str, Op] = {}
    for n in syn.walk(body):
        if w.step is not None and w.step.start_byte <= n.start_byte < w.step.end_byte:
            continue  # a counted while's own step
        ident = _written_identifier(n) if syn.is_write(n) else None
        name = unit.t(ident) if ident is not None else None
        if name is None or name in local or name in kept:
            continue
        if name in loop_vars:
            return f"the loop on line {line} modifies {name}"
        if name not in scalars:
            return f"the loop on line {line} writes {name}, which is not a local of the guarded body"
        op, step = _step_of(unit, n, name, args)
        if op is None or name in ops:
            return running_sum_refusal(unit, line) or (
                f"the loop on line {line} updates {name} in a way that is not one sum/max/min/arg-max/arg-min "
                "reduction step")
        ops[name] = op
        if any(not (step.start_byte <= r.start_byte < step.end_byte) for r in references(body, unit.src, name)):
            return running_sum_refusal(unit, line) or (
                f"the loop on line {line} reads {name} while it reduces into it; a lane holds only a partial value "
                "there")
    used = [a for a in args if ops.get(a.value) == a.kind]
    return {k: v for k, v in ops.items() if not (isinstance(v, str) and v.startswith("arg"))}, used


def _init_of(scalars: dict[str, Node], name: str) -> Node | None:
    decl = scalars[name]
    return decl.child_by_field_name("value") if syn.is_init_declarator(decl) else None


def _arg_problem(unit: CudaUnit, a: ArgStep, w: _Walk, scalars: dict[str, Node]) -> str | None:
    """Why arg step ``a`` of walk ``w`` cannot be split over lanes, or ``None``: the index it keeps must be the
    loop's own variable (lanes meet its values in increasing order), be initialized, and, for a tie rule that keeps
    the last index, start no larger than the loop (a lane that saw no element must lose every tie)."""
    var = w.heads[-1].var
    if len(w.heads) != 1 or unit.t(a.index_value) != var:
        return f"the loop on line {w.line} keeps {a.index} = `{unit.t(a.index_value)}`, not its own variable {var}"
    if a.index not in scalars or a.value not in scalars:
        return f"the loop on line {w.line} keeps {a.value} and {a.index}, which are not both locals of the guarded body"
    init = _init_of(scalars, a.index)
    if init is None or _init_of(scalars, a.value) is None:
        return f"{a.value} or {a.index} has no starting value before the loop on line {w.line}"
    i0, s0 = literal_value(unit.t(init)), literal_value(unit.t(w.heads[0].start))
    if not a.first and (i0 is None or s0 is None or i0 > s0):
        return (f"{a.index} keeps the last index of the extreme and starts at `{unit.t(init)}`, which is not a "
                f"number at most the loop's start: a lane that sees no element could win a tie")
    return None


def _sum_edits(unit: CudaUnit, name: str, w: _Walk, scalars: dict[str, Node]) -> list[TextEdit] | str:
    """The edits for a sum ``name`` split over lanes: none when it starts at 0; else its starting value stays on lane
    0 (the others start at 0), so the lanes' partial sums add up to the one thread's. Refused when it has no
    starting value or is changed between its declaration and the loop."""
    decl, init = scalars[name], _init_of(scalars, name)
    if init is None:
        return f"the sum {name} has no starting value before the loop on line {w.line}"
    if any(decl.end_byte <= r.start_byte < w.loop.start_byte and is_lvalue(r)
           for r in references(unit.body, unit.src, name)):
        return f"{name} is changed before the loop on line {w.line} sums into it"
    if _is_zero(unit.t(init)):
        return []
    stmt = decl.parent
    while stmt is not None and not syn.is_declaration(stmt):
        stmt = stmt.parent
    if syn.is_deduced_type(syn.declaration_type(stmt)):
        return f"the sum {name} starts at `{unit.t(init)}` and is declared auto: lanes 1..31 need a typed zero"
    return [unit.replace(init, f"{LANE} == 0 ? ({unit.t(init)}) : ({_scalar_type(unit, decl)})0")]


def _loop_edits(unit: CudaUnit, loop: Node, scalars: dict[str, Node],
                rm: RowMap, prev: Node | None = None) -> tuple[list[TextEdit], list[dict[str, str]]] | str:
    """The edits splitting one loop (or perfect nest) of the guarded body over the lanes and all-reducing what it
    reduces (``rm``: over a warp or a block), with the summary of the reductions, or why it cannot (``prev``: the
    statement before the loop, :func:`_walk_of`)."""
    w = _walk_of(unit, loop, prev)
    if isinstance(w, str):
        return w
    indent = syn.indent_of(unit.src, loop.start_byte)
    pair = online_pair(unit, w.body) if len(w.heads) == 1 else None
    if pair is not None:
        why = _online_pair_check(unit, scalars, pair, w.line)
        if why:
            return why
        m_type, s_type = (_scalar_type(unit, scalars[n]) for n in (pair.m, pair.s))
        after = rm.pair_reduce(pair.m, pair.s, m_type, s_type, pair.fn, pair.exp, indent)
        return _split_edits(unit, w, after, rm.stride), [{"name": f"{pair.m}, {pair.s}", "op": "online max/sum"}]
    wf = _welford_edits(unit, w, scalars, rm, indent)
    if isinstance(wf, str):
        return wf
    steps = _body_steps(unit, w, scalars, frozenset(n for n in (wf[2].mean, wf[2].m2, wf[2].count) if n)
                        if wf else frozenset())
    if isinstance(steps, str):
        return steps
    ops, args = steps
    for wr in _writes_memory(w.body):
        target = wr.child_by_field_name("left") if syn.is_assignment(wr) else wr.child_by_field_name("argument")
        if not any(references(target, unit.src, h.var) for h in w.heads):
            return (f"the loop on line {w.line} writes {unit.t(target)}, whose address does not depend on "
                    f"{w.heads[-1].var}")
    edits: list[TextEdit] = []
    for name in [n for n, o in ops.items() if o == "+"]:
        e = _sum_edits(unit, name, w, scalars)
        if isinstance(e, str):
            return e
        edits += e
    why = next((p for a in args if (p := _arg_problem(unit, a, w, scalars))), None)
    if why:
        return why
    after = "".join(rm.reduce(n, o, indent) for n, o in ops.items()) + "".join(
        rm.arg_reduce(a, _scalar_type(unit, scalars[a.value]), _scalar_type(unit, scalars[a.index]), indent)
        for a in args)
    reduced = [{"name": n, "op": _op_name(o)} for n, o in ops.items()] + [
        {"name": f"{a.value}, {a.index}", "op": f"{a.kind} ({'first' if a.first else 'last'} index)"} for a in args]
    if wf:
        edits, after = edits + wf[0], wf[1] + after
        reduced.append({"name": f"{wf[2].mean}, {wf[2].m2}" + (f", {wf[2].count}" if wf[2].count else ""),
                        "op": "welford (count, mean, M2)"})
    return edits + _split_edits(unit, w, after, rm.stride), reduced


def _welford_edits(unit: CudaUnit, w: _Walk, scalars: dict[str, Node], rm: RowMap, indent: str
                   ) -> tuple[list[TextEdit], str, WelfordStat] | str | None:
    """For a loop the analysis layer reads as Welford's recurrence (:class:`WelfordStat`), the edits that give each
    lane its own count (an implicit count ``i + 1`` becomes the lane's ``(i - start) / stride + 1``; an explicit
    counter already counts the lane's elements), the merge text after the loop (``rm.welford_reduce``) and the
    fact; ``None`` for any other loop; or why the recurrence cannot be split: its statistics are not locals of the
    guarded body, M2 or the counter does not start at 0 or changes before the loop, or ``rm`` cannot merge."""
    fact = unit.facts.loop_at(unit.file_byte(w.loop))
    wf = unit.facts.welford_at(fact) if fact is not None and len(w.heads) == 1 else None
    if wf is None:
        return None
    if rm.welford_reduce is None:
        return f"the loop on line {w.line} keeps Welford's mean and M2, which this row step cannot merge yet"
    names = [n for n in (wf.mean, wf.m2, wf.count) if n]
    if any(n not in scalars for n in names):
        return f"the loop on line {w.line} keeps Welford's {', '.join(names)}, which are not all locals of the guarded body"
    for n in names[1:]:
        init = _init_of(scalars, n)
        if init is None or not _is_zero(unit.t(init)):
            return f"{n} does not start at 0 before the loop on line {w.line}, so each lane would count its start"
        if any(scalars[n].end_byte <= r.start_byte < w.loop.start_byte and is_lvalue(r)
               for r in references(unit.body, unit.src, n)):
            return f"{n} is changed before the loop on line {w.line} keeps Welford's recurrence in it"
    h, edits = w.heads[0], []
    types = [_scalar_type(unit, scalars[n]) for n in (wf.mean, wf.m2)]
    span_start = "" if _is_zero(unit.t(h.start)) else f" - ({unit.t(h.start)})"
    if wf.count is not None:
        count, count_type = wf.count, _scalar_type(unit, scalars[wf.count])
    else:
        node = unit.node_at(wf.count_span) if wf.count_span is not None else None
        if node is None:
            return f"the count of the Welford loop on line {w.line} cannot be rewritten for each lane"
        lane_pos = f"({h.var}{span_start})" if span_start else h.var
        edits.append(unit.replace(node, f"({lane_pos} / {rm.stride} + 1)"))
        total = f"({h.limit}){span_start}"
        count, count_type = f"{total} > {LANE} ? ({total} - {LANE} + {rm.stride} - 1) / {rm.stride} : 0", h.type
    return edits, rm.welford_reduce(wf.mean, wf.m2, count, *types, count_type, wf.count, indent), wf


def _split_edits(unit: CudaUnit, w: _Walk, after: str, stride: str) -> list[TextEdit]:
    """The edits giving a walk's elements to the lanes (start at ``start + lane``, step ``stride``, 32 for a warp;
    a nest flattened, :func:`_flat_nest`) and inserting ``after`` (the all-reduces) behind the loop."""
    if len(w.heads) == 2:
        return [_flat_nest(unit, w, after, stride)]
    h = w.heads[0]
    start = LANE if _is_zero(unit.t(h.start)) else f"({unit.t(h.start)}) + {LANE}"
    edits = [unit.replace(h.start, start), unit.replace(h.upd, f"{h.var} += {stride}")]
    if h.cond is not None:  # `j != n` stepped by the lanes would pass n: `j < n` stops each lane
        edits.append(unit.replace(h.cond, f"{h.var} < {h.limit}"))
    return edits + ([unit.insert(w.loop.end_byte, after)] if after else [])


def _while_vars_kept(unit: CudaUnit, stmts: list[Node], scalars: dict[str, Node]) -> str | None:
    """Drop the variables of the counted ``while`` loops of ``stmts`` from ``scalars`` (they are loop variables,
    stepped by the lanes), or say why one cannot be: read after its loop, where each lane ends it elsewhere."""
    for k, loop in enumerate(stmts):
        got = _while_header(unit, loop, stmts[k - 1]) if k and syn.is_while(loop) else None
        if got is None or isinstance(got, str):
            continue
        var = got[0].var
        if any(references(s, unit.src, var) for s in stmts[k + 1:]):
            return f"{var} is read after its while loop; each lane ends that loop at another value"
        scalars.pop(var, None)
    return None


def warp_row_edits(unit: CudaUnit, ew: Elementwise, rm: RowMap | None = None) -> tuple[list[TextEdit], dict[str, object]] | str:
    """The kernel-body edits of the rewrite and a summary (reduced scalars, loops), or why it is refused.

    ``rm``: how a row is shared (:data:`WARP_MAP` by default; a block per row passes its own)."""
    rm = rm or WARP_MAP
    if LANE in unit.t(unit.body):
        return f"{unit.kernel.name} already uses {LANE}"
    stmts = ew.stmts
    loops = [s for s in stmts if syn.is_for_or_while(s)]
    if not loops:
        return f"{unit.kernel.name} has no loop over the row inside its bound check"
    for s in stmts:
        if not syn.is_for_or_while(s) and syn.loops(s):
            return "a loop is nested in another statement of the guarded body"
    scalars = _declared_scalars(unit, stmts)
    why = _while_vars_kept(unit, stmts, scalars)
    if why:
        return why
    edits: list[TextEdit] = []
    reduced: list[dict[str, str]] = []
    for loop in loops:
        k = stmts.index(loop)
        got = _loop_edits(unit, loop, scalars, rm, stmts[k - 1] if k else None)
        if isinstance(got, str):
            return got
        edits += got[0]
        reduced += got[1]
    for s in stmts:
        if syn.is_for_or_while(s):
            continue
        atomics = [c for c in syn.calls(s)
                   if unit.t(c.child_by_field_name("function")).startswith("atomic")]
        if not _writes_memory(s) and not atomics:
            continue
        if syn.is_declaration(s) or any(_written_identifier(n) is not None for n in syn.walk(s)
                                          if syn.is_write(n)):
            return f"`{unit.t(s)}` both writes memory and sets a variable; lane 0 alone cannot run it"
        edits.append(unit.replace(s, f"if ({LANE} == 0) {{ {unit.t(s)} }}"))
    decl_indent = syn.indent_of(unit.src, ew.decl.start_byte)
    edits.append(unit.replace(ew.gid, rm.row.format(unit.t(ew.gid))))
    edits.append(unit.insert(ew.decl.start_byte, f"const int {LANE} = {rm.lane};\n{decl_indent}"))
    return edits, {"reduced": reduced, "loops": len(loops)}


#: A warp per row: lanes ``threadIdx.x & 31`` step by 32, warp-shuffle all-reduces.
def warp_pair_reduce(m: str, s: str, m_type: str, s_type: str, fn: str | None, exp: str, indent: str) -> str:
    """The full-warp all-reduce of the online max/sum pairs ``(m, s)`` after their loop
    (:func:`~htam_core.transforms.cuda_softmax.pair_all_reduce`), on a new line."""
    return "\n" + pair_all_reduce(m, s, m_type, s_type, fn, exp, "0xffffffffu", indent)


def warp_welford_reduce(mean: str, m2: str, count: str, mean_type: str, m2_type: str, count_type: str,
                        counter: str | None, indent: str) -> str:
    """The full-warp merge of the lanes' Welford triples after their loop
    (:func:`~htam_core.transforms.row_welford.warp_welford_merge`, the lane being ``htam_lane``)."""
    return warp_welford_merge(mean, m2, count, mean_type, m2_type, count_type, LANE, counter, indent)


WARP_MAP = RowMap(f"threadIdx.x & {WARP - 1}", str(WARP), "({}) / " + str(WARP), warp_all_reduce, warp_arg_all_reduce,
                  warp_pair_reduce, warp_welford_reduce)


def launch_dim_read(unit: CudaUnit, ew: Elementwise) -> Node | None:
    """The first ``blockDim.*``/``gridDim.*`` the kernel reads outside its global index ``ew.gid``, else ``None``: a
    rewrite that changes the launch's block must not change what the rest of the kernel computes."""
    for f in syn.fields(unit.body):
        obj = unit.t(f.child_by_field_name("argument"))
        if obj in ("blockDim", "gridDim") and not (ew.gid.start_byte <= f.start_byte < ew.gid.end_byte):
            return f
    return None


def _round_runtime_block(unit: CudaUnit, ew: Elementwise, la: Launch) -> TextEdit | str:
    """The edit rounding a launch's run-time 1-D block size up to a multiple of 32, or why it cannot be done.

    A warp must not straddle two rows, so the block must be a multiple of 32 threads. When the block size is a
    run-time value (a launcher argument), rounding it up keeps every row covered: the grid grows 32x in blocks
    of at least as many threads, and the row guard drops the extra warps. That is only sound when nothing else
    in the kernel depends on the block's size: no ``blockDim``/``gridDim`` outside the global index, no shared
    memory, and no dynamic shared-memory size at the launch.
    """
    line = la.site.line
    dims = unit.block_dims(la)
    if not dims or len(dims) != 1:
        return f"the block on line {line} is not a 1-D block of a compile-time multiple of {WARP} threads"
    if len(la.config_args) > 2:
        return (f"the block size on line {line} is not a compile-time constant, and the launch sets a shared-memory "
                "size that may follow it")
    if any(a.space == "shared" for a in unit.facts.accesses):
        return f"the block size on line {line} is not a compile-time constant, and the kernel uses shared memory"
    read = launch_dim_read(unit, ew)
    if read is not None:
        return (f"the block size on line {line} is not a compile-time constant, and the kernel reads "
                f"`{unit.t(read)}` outside its global index (rounding the block up would change it)")
    x = unit.t(dims[0].expr)
    return launch_dims_edit(unit, la, la.block, [f"(({x}) + {WARP - 1}) / {WARP} * {WARP}"])  # type: ignore[arg-type]


def warp_launch_edits(unit: CudaUnit, ew: Elementwise) -> tuple[list[TextEdit], list[TextEdit]] | str:
    """The launch edits of a rewrite that gives each thread-per-row row to a warp: ``(grid edits, block edits)``,
    every launch's grid 32 times as many blocks and a run-time block size rounded up to a multiple of 32
    (:func:`_round_runtime_block`), or why a launch cannot take it (none in this file, a constant block that is
    not whole warps, a grid that is not 1-D, a grid the edit cannot wrap). A kernel launched from another file is
    read with its launches by the registry, so its launches are here too."""
    if not unit.launches:
        return f"{unit.kernel.name} has no launch site in this file; its grid must grow {WARP}x"
    rounded: list[TextEdit] = []
    for la in unit.launches:
        threads = unit.block_threads(la)
        if threads is None:
            e = _round_runtime_block(unit, ew, la)
            if isinstance(e, str):
                return e
            rounded.append(e)
        elif threads % WARP:
            return f"the block size on line {la.site.line} is not a constant multiple of {WARP}"
        if len(unit.dims_of(la.grid, la.host)) != 1:
            return f"the grid on line {la.site.line} is not 1-D"
    grid = [wrap_grid(unit, la, "({}) * " + str(WARP)) for la in unit.launches]
    bad = next((g for g in grid if isinstance(g, str)), None)
    return bad if isinstance(bad, str) else ([g for g in grid if not isinstance(g, str)], rounded)


@register
class CudaWarpPerRow(CudaTransform):
    """Give each row of a thread-per-row kernel to a warp (coalesced loops, shuffle all-reduce)."""

    id = "cuda.warp_per_row"
    languages = CUDA_LANGS
    summary = "one warp per row: lanes stride the row, __shfl_xor_sync all-reduce, 32x the blocks"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate, or the reason the kernel is not a thread-per-row kernel this rewrite can prove."""
        ew = elementwise(unit)
        if isinstance(ew, str):
            return self.not_applicable(f"not a thread-per-row kernel: {ew}")
        launch = warp_launch_edits(unit, ew)
        if isinstance(launch, str):
            return self.not_applicable(launch)
        grid, rounded = launch
        body = warp_row_edits(unit, ew)
        if isinstance(body, str):
            return self.not_applicable(body)
        edits, summary = body
        if not summary["reduced"] and not unit.facts.row_loops():
            # nothing to all-reduce and no row loop with lanes a row apart (KernelFacts.row_loops): the thread
            # index already spreads neighbouring elements over the lanes; a warp per "row" would move the lanes
            # onto the loop (another pixel, batch or channel) and make the accesses strided
            return self.not_applicable(f"{kernel.name}'s loops do not walk a row owned by one thread (its lanes "
                                       "already take neighbouring elements) and reduce nothing: a warp per row "
                                       "would only stride the lanes over the loop")
        column = column_walk(unit, ew)
        names, order = reduced_text(summary["reduced"])  # type: ignore[arg-type]
        cand = self.candidate(
            model,
            (f"give each column walk of {kernel.name} to a warp: its lanes split the rows ({column}; {WARP}x the "
             f"warps in flight, but each load touches 32 rows: only a measurement says whether it pays), warp "
             f"all-reduce of {names}, {WARP}x the blocks{order}" if column else
             f"give each row of {kernel.name} to a warp: its {summary['loops']} row loop(s) stride by 32 from "
             f"the lane, warp all-reduce of {names}, {WARP}x the blocks{order}")
            + ("; a block size known only at run time is rounded up to a multiple of 32" if rounded else ""),
            {"reduced": summary["reduced"], "launches": len(unit.launches), "rounded_blocks": len(rounded)},
            edits + grid + rounded,
        )
        cand.changes_numerics = cand.reorders_only = sums_reordered(summary["reduced"])  # type: ignore[arg-type]
        return [cand]
