"""CUDA thread-per-row -> warp-per-row (``cuda.warp_per_row``).

A naive row kernel gives each thread a whole row: ``row = blockIdx.x * blockDim.x + threadIdx.x``, a guard
``row < rows``, then loops ``for (j = 0; j < cols; ++j)`` over the row. Neighbouring threads then read
addresses ``cols`` elements apart, so every load is uncoalesced. The transform gives each row to a warp:

* ``row`` becomes the global *warp* index and a lane index ``htam_lane = threadIdx.x & 31`` is added;
* every loop over the row starts at the lane and steps by 32, so the lanes of a warp read consecutive
  elements (coalesced);
* a scalar that a loop reduces (``acc += e``; ``m = fmaxf(m, e)`` and the ``fminf``/``max``/``min``/
  ``fmax``/``fmin`` forms) is all-reduced over the warp after that loop with ``__shfl_xor_sync``, so every
  lane holds the row's value, as the one thread did before;
* a running max written ``if (x > m) m = x;`` is all-reduced with the same comparison, and a loop that is
  the merged max/sum pass of ``cuda.online_softmax`` (:func:`htam_core.transforms.cuda_softmax.online_pair`)
  gets an all-reduce of the ``(max, sum)`` pairs, so the two steps compose in either order;
* a statement outside the loops that writes memory (``out[row] = acc;``) runs on lane 0 only;
* every launch of the kernel gets 32 times as many blocks (the block size must be a multiple of 32, so a
  warp never straddles two rows' guards; a block size known only at run time, a launcher argument, is rounded
  up to a multiple of 32 at the launch when nothing else in the kernel depends on it).

The kernel must have exactly that shape; anything the rewrite cannot prove safe is refused with a reason
(another use of the thread index, a loop not over ``0..n`` by 1, a scalar updated in a loop in another way,
a sum whose starting value is not 0, a nested loop, a memory write inside a loop whose address does not
depend on the loop variable, ...). Float sums are added in a different order, so results differ in the last
bits. Idea sources: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; NVIDIA developer
blog, "Faster Parallel Reductions on Kepler" (Luitjens, 2014) for the warp-shuffle all-reduce.
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import is_zero_value
from htam_core.source.analysis.forms import Elementwise, elementwise, is_lvalue
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    launch_dims_edit,
    references,
    wrap_grid,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_softmax import OnlinePair, max_step, online_pair, pair_all_reduce
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

LANE = "htam_lane"
WARP = 32
#: Reduction functions accepted in ``x = f(x, e)``; max/min forms do not care about the starting value.
MINMAX = ("fmaxf", "fminf", "fmax", "fmin", "max", "min")
#: The reduction "op" of a running max written ``if (x > m) m = x;`` (all-reduced with the same comparison).
IF_MAX = "if >"


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


def _loop_header(unit: CudaUnit, loop: Node) -> tuple[str, Node, Node, Node] | str:
    """``(var, init value node, bound node, update node)`` of ``for (int j = 0; j < E; ++j)``, or why not."""
    init, cond, upd = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
    line = unit.src[: loop.start_byte].count(b"\n") + 1
    if init is None or cond is None or upd is None:
        return f"the loop on line {line} is not a counted for loop"
    var = value = None
    if syn.is_declaration(init):
        ds = [d for d in init.named_children if syn.is_init_declarator(d)]
        if len(ds) == 1:
            var, value = unit.t(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")
    if var is None or value is None or not _is_zero(unit.t(value)):
        return f"the loop on line {line} does not declare its variable starting at 0"
    cond = syn.unwrap_parens(cond)
    if not syn.is_binary(cond) or unit.t(cond.child_by_field_name("left")) != var \
            or unit.t(cond.child_by_field_name("operator")) != "<":
        return f"the loop on line {line} is not `{var} < n`"
    bound = cond.child_by_field_name("right")
    if references(bound, unit.src, var):
        return f"the bound of the loop on line {line} depends on {var}"
    step = unit.t(upd).replace(" ", "")
    if step not in (f"++{var}", f"{var}++", f"{var}+=1", f"{var}={var}+1"):
        return f"the loop on line {line} does not step {var} by 1"
    return var, value, bound, upd


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


def _guarded_max(unit: CudaUnit, n: Node, name: str) -> Node | None:
    """The ``if (E > m) m = E;`` statement around assignment ``n`` to ``name`` (a running max), else ``None``."""
    p = n.parent.parent if n.parent is not None else None
    if p is not None and syn.is_block(p):
        p = p.parent
    if p is None or not syn.is_if(p):
        return None
    ms = max_step(unit, p)
    return p if ms is not None and ms.name == name else None


def _all_reduce(name: str, op: str, indent: str) -> str:
    if op == IF_MAX:  # the same comparison as the loop's `if (x > m) m = x;`
        step = (f"{{ const auto htam_v = __shfl_xor_sync(0xffffffffu, {name}, htam_o); "
                f"if (htam_v > {name}) {name} = htam_v; }}")
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
    return (f"the loop on line {fact.line} walks a column: `{acc.pointer}[{acc.index_text}]` moves "
            f"{acc.stride(fact.var)} elements per step of {fact.var}")


def warp_row_edits(unit: CudaUnit, ew: Elementwise) -> tuple[list[TextEdit], dict[str, object]] | str:
    """The kernel-body edits of the rewrite and a summary (reduced scalars, loops), or why it is refused."""
    if LANE in unit.t(unit.body):
        return f"{unit.kernel.name} already uses {LANE}"
    stmts = ew.stmts
    loops = [s for s in stmts if syn.is_for(s)]
    if not loops:
        return f"{unit.kernel.name} has no loop over the row inside its bound check"
    for s in stmts:
        if not syn.is_for(s) and syn.loops(s):
            return "a loop is nested in another statement of the guarded body"
    scalars = _declared_scalars(unit, stmts)
    edits: list[TextEdit] = []
    reduced: list[dict[str, str]] = []
    for loop in loops:
        head = _loop_header(unit, loop)
        if isinstance(head, str):
            return head
        var, value, _bound, upd = head
        body = loop.child_by_field_name("body")
        line = unit.src[: loop.start_byte].count(b"\n") + 1
        if body is None or syn.loops(body):
            return f"the loop on line {line} contains another loop"
        local = set(_declared_scalars(unit, [c for c in syn.walk(body) if syn.is_declaration(c)]))
        pair = online_pair(unit, body)
        if pair is not None:
            why = _online_pair_check(unit, scalars, pair, line)
            if why:
                return why
            edits.append(unit.replace(value, LANE))
            edits.append(unit.replace(upd, f"{var} += {WARP}"))
            indent = syn.indent_of(unit.src, loop.start_byte)
            m_type, s_type = (_scalar_type(unit, scalars[n]) for n in (pair.m, pair.s))
            edits.append(unit.insert(loop.end_byte, "\n" + pair_all_reduce(
                pair.m, pair.s, m_type, s_type, pair.fn, pair.exp, "0xffffffffu", indent)))
            reduced.append({"name": f"{pair.m}, {pair.s}", "op": "online max/sum"})
            continue
        ops: dict[str, str] = {}
        for n in syn.walk(body):
            if not syn.is_write(n):
                continue
            ident = _written_identifier(n)
            if ident is None:
                continue
            name = unit.t(ident)
            if name == var:
                return f"the loop on line {line} modifies {var}"
            if name in local:
                continue
            if name not in scalars:
                return f"the loop on line {line} writes {name}, which is not a local of the guarded body"
            op, step = _reduction(unit, n, name), n
            guarded = _guarded_max(unit, n, name)
            if op is None and guarded is not None:
                op, step = IF_MAX, guarded
            if op is None or name in ops:
                return (f"the loop on line {line} updates {name} in a way that is not one sum/max/min reduction "
                        "step")
            ops[name] = op
            others = [r for r in references(body, unit.src, name)
                      if not (step.start_byte <= r.start_byte < step.end_byte)]
            if others:
                return (f"the loop on line {line} reads {name} while it reduces into it; a lane holds only a "
                        "partial value there")
        for w in _writes_memory(body):
            target = w.child_by_field_name("left") if syn.is_assignment(w) else \
                w.child_by_field_name("argument")
            if not references(target, unit.src, var):
                return f"the loop on line {line} writes {unit.t(target)}, whose address does not depend on {var}"
        for name, op in ops.items():
            if op != "+":
                continue
            decl = scalars[name]
            init = decl.child_by_field_name("value") if syn.is_init_declarator(decl) else None
            if init is None or not _is_zero(unit.t(init)):
                return f"the sum {name} does not start at 0, so a per-lane partial sum would count it 32 times"
            between = [r for r in references(unit.body, unit.src, name)
                       if decl.end_byte <= r.start_byte < loop.start_byte and is_lvalue(r)]
            if between:
                return f"{name} is changed before the loop on line {line} sums into it"
        edits.append(unit.replace(value, LANE))
        edits.append(unit.replace(upd, f"{var} += {WARP}"))
        indent = syn.indent_of(unit.src, loop.start_byte)
        if ops:
            edits.append(unit.insert(loop.end_byte, "".join(_all_reduce(n, o, indent) for n, o in ops.items())))
            reduced += [{"name": n, "op": o} for n, o in ops.items()]
    for s in stmts:
        if syn.is_for(s):
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
    edits.append(unit.replace(ew.gid, f"({unit.t(ew.gid)}) / {WARP}"))
    edits.append(unit.insert(ew.decl.start_byte, f"const int {LANE} = threadIdx.x & {WARP - 1};\n{decl_indent}"))
    return edits, {"reduced": reduced, "loops": len(loops)}


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
    for f in syn.fields(unit.body):
        obj = unit.t(f.child_by_field_name("argument"))
        if obj in ("blockDim", "gridDim") and not (ew.gid.start_byte <= f.start_byte < ew.gid.end_byte):
            return (f"the block size on line {line} is not a compile-time constant, and the kernel reads "
                    f"`{unit.t(f)}` outside its global index (rounding the block up would change it)")
    x = unit.t(dims[0].expr)
    return launch_dims_edit(unit, la, la.block, [f"(({x}) + {WARP - 1}) / {WARP} * {WARP}"])  # type: ignore[arg-type]


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
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; its grid must grow 32x")
        rounded: list[TextEdit] = []
        for la in unit.launches:
            threads = unit.block_threads(la)
            if threads is None:
                e = _round_runtime_block(unit, ew, la)
                if isinstance(e, str):
                    return self.not_applicable(e)
                rounded.append(e)
            elif threads % WARP:
                return self.not_applicable(f"the block size on line {la.site.line} is not a constant multiple of {WARP}")
            dims = unit.dims_of(la.grid, la.host)
            if len(dims) != 1:
                return self.not_applicable(f"the grid on line {la.site.line} is not 1-D")
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
        column = next((w for w in (_column_walk(unit, s) for s in ew.stmts if syn.is_for(s)) if w), None)
        grid = [wrap_grid(unit, la, "({}) * " + str(WARP)) for la in unit.launches] + rounded
        bad = next((g for g in grid if isinstance(g, str)), None)
        if bad:
            return self.not_applicable(bad)
        names = ", ".join(str(r["name"]) for r in summary["reduced"]) or "none"  # type: ignore[index,union-attr]
        return [
            self.candidate(
                model,
                (f"give each column walk of {kernel.name} to a warp: its lanes split the rows ({column}; {WARP}x the "
                 f"warps in flight, but each load touches 32 rows: only a measurement says whether it pays), warp "
                 f"all-reduce of {names}, {WARP}x the blocks (float sums change order)" if column else
                 f"give each row of {kernel.name} to a warp: its {summary['loops']} row loop(s) stride by 32 from "
                 f"the lane, warp all-reduce of {names}, {WARP}x the blocks (float sums change order)")
                + ("; a block size known only at run time is rounded up to a multiple of 32" if rounded else ""),
                {"reduced": summary["reduced"], "launches": len(unit.launches), "rounded_blocks": len(rounded)},
                edits + grid,  # type: ignore[operator]
            )
        ]
