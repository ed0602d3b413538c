"""Lanes on columns for a column sum (``cuda.lane_columns``): threads own columns, the rows are split between warps.

A column sum whose threads split the summed index, one warp or one block per column, reads ``dout[i * OC + col]``
with ``i`` starting at the thread's lane: the 32 lanes of a warp are ``OC`` elements apart, so every load of the
loop is uncoalesced (one 32-byte sector per element). The analysis layer finds these loops
(:meth:`~htam_core.source.analysis.facts.KernelFacts.column_split_loops`: the read's stride across the loop is its
stride across consecutive threads, neither 0 nor 1, and the column is the same for the whole group). The rewrite
swaps the roles::

    __shared__ float htam_part[32][32];
    int col = blockIdx.x * 32 + threadIdx.x;           // lanes on 32 consecutive columns
    <declarations the loop or the write need>
    float sum = 0.0f;
    if (col < COLS) {
        for (int i = threadIdx.y; i < BT; i += blockDim.y) { <the loop body as it was> }   // warps split the rows
    }
    htam_part[threadIdx.y][threadIdx.x] = sum;          // the warps' partial sums meet in shared memory
    __syncthreads();
    if (threadIdx.y == 0) {
        for (int htam_r = 1; htam_r < blockDim.y; htam_r++) { sum += htam_part[htam_r][threadIdx.x]; }
        if (col < COLS) { <the kernel's one write, with its combined total replaced by sum> }
    }

and every launch becomes ``<<<(COLS + 31) / 32, dim3(32, (B + 31) / 32)>>>`` for its block size ``B`` (the same
threads per block, rounded up to whole warps). Each column is still summed over the same rows and written once, by
one thread. The number of columns ``COLS`` is the kernel's own guard (``if (col >= OC) return;``, or the guarded
block ``if (col < OC) { … }`` that ends the body, read as that early return) or, for one block
per column (``col = blockIdx.x``), the launch's grid, passed to the kernel as a parameter.

Few columns and many rows (a bias gradient: 768 columns give 24 blocks for 132 SMs) get their rows split over a
second grid dimension as well (:mod:`~htam_core.transforms._lane_split`): where the column count, the row count and
the block size are constants at a launch and the column blocks are fewer than two per SM, the launch gets
``dim3((COLS + 31) / 32, G)`` blocks, the loop starts at ``blockIdx.y * blockDim.y + threadIdx.y`` with step
``gridDim.y * blockDim.y``, and the write adds each block's partial sum with ``atomicAdd`` (only for an output the
kernel adds its total into: ``+=``, ``out[c] = out[c] + total``, ``atomicAdd``). A plain store at that shape
keeps the form above, and the candidate says why its rows are not split and that it may be slower (too few
blocks); unknown counts keep the form above too.

Refused, each with its reason: no such loop; the column not held in one local; statements before the loop other
than declarations and the column guard; a loop nested in another statement; a loop body or bound that reads thread
indices or thread-dependent locals; not exactly one global write, after the loop, guarded by ``… == 0`` (one
thread per group); a total combined other than by sums (``cg::reduce`` with ``cg::plus``, ``+=`` of shuffles) or
read from shared memory; an unknown column count; a launch whose block is not 1-D or whose arguments do not match
the parameters; no launch in the file (the grid must follow).

Idea source: llm.c ``dev/cuda/matmul_backward_bias.cu`` kernel 4 (one block per 32 columns, warps over rows,
combined in shared memory) after kernels 2 and 3 (a warp or a block per column); CUDA C++ Best Practices Guide,
"Coalesced Access to Global Memory".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from htam_core.source.analysis import ColumnSplit, LoopFact, sym
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.accumulate import output_read_elsewhere
from htam_core.source.analysis.guards import bounds_guard, open_guarded_block
from htam_core.source.analysis.loops import for_parts
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.tree_finish import WarpFinish, tree_left, warp_finish
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    launch_dims_edit,
    param_names,
    statement_list,
)
from htam_core.transforms._grid_loop import index_loop, loop_text
from htam_core.transforms._lane_split import (
    SPLIT_BELOW_PER_SM,
    accumulating_write,
    column_count,
    launch_groups,
    rows_of,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_register_tiling import sm_count_of
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

WIDTH = 32
_THREAD_WORDS = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"})


@dataclass
class _Plan:
    """What the rewrite keeps: the loop, the column variable, the guard bound, the kept declarations, the write."""

    split: ColumnSplit
    fact: LoopFact
    loop: Node
    col: str
    acc_decl: Node
    kept: list[Node]
    bound: Node | None
    bound_param: str | None
    write: Node
    combined: set[str]
    tree_reads: tuple[Node, ...] = ()  # ``sh[0]`` in the write: the block tree's total, replaced by the sum


def _ids(unit: CudaUnit, node: Node) -> list[Node]:
    return syn.identifiers(node)


def _declared(unit: CudaUnit, decl: Node) -> list[str]:
    """Names a declaration statement declares."""
    out = []
    for d in decl.children_by_field_name("declarator"):
        cur: Node | None = d
        while cur is not None and not syn.is_identifier(cur):
            cur = cur.child_by_field_name("declarator")
        if cur is not None:
            out.append(unit.t(cur))
    return out


def _value(decl: Node) -> Node | None:
    d = decl.children_by_field_name("declarator")
    if len(d) != 1 or not syn.is_init_declarator(d[0]):
        return None
    return d[0].child_by_field_name("value")


def _column_var(unit: CudaUnit, split: ColumnSplit, pre: list[Node]) -> tuple[str, Node] | str:
    """The local declared before the loop that holds the column, and its declaration."""
    f = unit.facts
    values = {t.name: t.expr for t in f.thread_indices}
    values.update({n: sym(b) for n, b in f.builtin_aliases})
    for st in pre:
        if syn.is_declaration(st):
            names = _declared(unit, st)
            if len(names) == 1 and names[0] in values and sympy.expand(values[names[0]] - split.column) == 0:
                return names[0], st
    return f"the column `{split.column}` the threads share is not held in one local variable declared before the loop"


def _guard(unit: CudaUnit, st: Node, col: str, opened: Node | None = None) -> Node | None:
    """``X`` of the column guard ``if (col >= X) return;`` in any spelling the analysis layer reads as the early
    return of ``col < X`` (``if (X <= col) { return; }``, ``if (!(col < X)) return;``), or of the guarded block
    ``opened`` (``if (col < X) { … }`` ending the body, opened by :func:`column_loop`) when ``st`` is it; else
    ``None``."""
    if not syn.is_if(st):
        return None
    g = bounds_guard(st, None, unit.src)
    if isinstance(g, str) or g.form != ("if" if st == opened else "return"):
        return None
    return g.single(col)


def _lane_zero_write(unit: CudaUnit, st: Node) -> Node | None:
    """The one expression statement of ``if (E == 0) { stmt; }`` (one thread of the group writes), else ``None``."""
    if not syn.is_if(st) or st.child_by_field_name("alternative") is not None:
        return None
    cond = syn.unwrap_parens(st.child_by_field_name("condition"))
    if syn.is_condition_clause(cond):
        cond = syn.unwrap_parens(cond.named_children[0])
    if not syn.is_binary(cond) or unit.t(cond.child_by_field_name("operator")) != "==":
        return None
    if "0" not in (unit.t(cond.child_by_field_name("left")), unit.t(cond.child_by_field_name("right"))):
        return None
    cons = st.child_by_field_name("consequence")
    body = statement_list(cons) if cons is not None and syn.is_block(cons) else [cons]
    return body[0] if len(body) == 1 and body[0] is not None and syn.is_expression_statement(body[0]) else None


def _sum_combine(unit: CudaUnit, value: Node) -> bool:
    """A value that sums the group's partials: ``cg::reduce(g, v, cg::plus<T>{})`` or a shuffle added with ``+=``."""
    v = syn.unwrap_parens(value)
    if not syn.is_call(v):
        return False
    fn = unit.t(v.child_by_field_name("function")).split("<", 1)[0].split("::")[-1]
    if fn == "reduce":
        args = v.child_by_field_name("arguments")
        return args is not None and len(args.named_children) == 3 and "plus" in unit.t(args.named_children[2])
    return fn.startswith("__shfl") and v.parent is not None and syn.is_assignment(v.parent) and \
        unit.t(v.parent.child_by_field_name("operator")) == "+="


def _assignments(unit: CudaUnit, scope: list[Node], name: str) -> list[Node | None]:
    """Values given to ``name`` in ``scope`` (declarations and assignments); ``None`` for an update without one
    (``name++``, ``&name``)."""
    out: list[Node | None] = []
    for st in scope:
        for d in syn.init_declarators(st):
            if unit.t(d.child_by_field_name("declarator")) == name:
                out.append(d.child_by_field_name("value"))
        for a in syn.assignments(st):
            if unit.t(a.child_by_field_name("left")) == name:
                out.append(a.child_by_field_name("right"))
        for u in syn.writes_or_addresses(st):
            if unit.t(u.child_by_field_name("argument")) == name and (syn.is_update(u) or
                                                                       unit.t(u).startswith("&")):
                out.append(None)
    return out


def column_loop(unit: CudaUnit, split: ColumnSplit
                ) -> tuple[LoopFact, Node, list[Node], list[Node], Node | None] | str:
    """The loop of a column split (a fact of the analysis layer), its node, the body's statements before and after
    it, and the guarded block opened around it (``None`` when the loop is a statement of the body); or why the loop
    is not a statement of the kernel's body.

    A loop inside ``if (c < n) { … }`` that ends the body is read as following the early return ``if (c >= n)
    return;`` (:func:`~htam_core.source.analysis.guards.open_guarded_block`): the ``if`` is then the last statement
    before the consequence's statements, and :func:`_guard` reads it as the column guard."""
    fact = unit.facts.loops[split.loop]
    loop = unit.node_at(fact.span, syn.FOR_LOOP)
    opened = open_guarded_block(statement_list(unit.body), loop, unit.src) if loop is not None else None
    if isinstance(opened, str):
        return f"the column loop on line {fact.line} {opened}"
    if loop is None or opened is None:
        return f"the column loop on line {fact.line} is not a statement of {unit.kernel.name}'s body (it is nested)"
    stmts, block = opened
    at = stmts.index(loop)
    return fact, loop, stmts[:at], stmts[at + 1:], block


def _plan(unit: CudaUnit) -> _Plan | str:
    f = unit.facts
    splits = f.column_split_loops()
    name = unit.kernel.name
    if not splits:
        return (f"{name} has no column sum whose threads split the summed index (a loop from a thread index with a "
                "`sum` accumulator reading `S * i + column`, S neither 0 nor 1: lanes on rows)")
    split = splits[0]
    placed = column_loop(unit, split)
    if isinstance(placed, str):
        return placed
    fact, loop, pre, post, opened = placed
    got = _column_var(unit, split, pre)
    if isinstance(got, str):
        return got
    col, col_decl = got
    acc = fact.accumulators[0]
    acc_decl = unit.node_at(acc.decl_span, syn.DECLARATION) if acc.decl_span else None
    if acc_decl is None or acc_decl not in pre or acc.type is None:
        return f"the accumulator {acc.name} is not declared with its type before the loop on line {fact.line}"
    parts = _before_loop(unit, pre, col, opened)
    if isinstance(parts, str):
        return parts
    bound, decls, opaque = parts
    writes = [a for a in f.global_accesses() if a.kind != "read"]
    spans = {(a.span, a.line) for a in writes}
    owners = {next((st for st in post if st.start_byte + unit.base <= s[0] and s[1] <= st.end_byte + unit.base),
                   None) for s, _ in spans}
    if not writes or len(owners) != 1 or None in owners:
        return f"{name} does not write global memory from exactly one statement after the column loop"
    owner = next(iter(owners))
    finish = warp_finish(unit, owner, WIDTH)  # type: ignore[arg-type]
    write = finish.write if finish is not None else _lane_zero_write(unit, owner)  # type: ignore[arg-type]
    if write is None:
        return (f"the write on line {writes[0].line} is not one statement guarded by `… == 0` (one thread of the "
                "group writing the column's total)")
    if any(sympy.expand(a.index - split.column) != 0 for a in writes if a.index is not None) or \
            any(a.index is None for a in writes):
        return f"the write on line {writes[0].line} is not at the summed column"
    tree = _tree_total(unit, post, owner, write, acc.name, finish)  # type: ignore[arg-type]
    if isinstance(tree, str):
        return tree
    tree_reads, tree_array = tree
    if tree_array:
        decls.pop(tree_array, None)
    params = set(param_names(unit))
    locals_ = set(decls) | opaque | {col, acc.name, fact.var or ""}
    if any(a.space == "shared" for a in f.accesses_in(fact)):
        return f"the column loop on line {fact.line} reads shared memory, which the rewrite does not fill"
    for st in post:
        for d in syn.declarations(st):
            locals_.update(_declared(unit, d))
    combined: set[str] = set()
    in_write = ({unit.t(i) for i in _ids(unit, write)} & locals_) - {tree_array} - {unit.t(n) for n in tree_reads}
    for n in sorted(in_write - {col} - (set(decls) - {acc.name})):
        if n == fact.var:
            return f"the write on line {writes[0].line} reads the loop variable {n}"
        values = _assignments(unit, post, n)
        if n != acc.name and not values:
            return f"`{n}` in the write on line {writes[0].line} is not computed after the column loop"
        if any(v is None or not _sum_combine(unit, v) for v in values):
            return (f"`{n}` is computed from the partial sums by something other than a sum of the group "
                    "(cg::reduce with cg::plus, or += of shuffles)")
        combined.add(n)
    if not tree_reads and (not combined or (combined == {acc.name} and not _assignments(unit, post, acc.name))):
        return f"the partial sums of {acc.name} are not combined across the group before the write"
    parts = [loop.child_by_field_name("condition"), loop.child_by_field_name("body")]
    kept = _kept(unit, decls, {col, acc.name, fact.var or ""} | combined, [*parts, write, bound])
    if isinstance(kept, str):
        return kept
    used = {unit.t(i) for n in parts if n is not None for i in _ids(unit, n)} - {fact.var}
    for n in sorted(used):
        if n in _THREAD_WORDS:
            return f"the column loop on line {fact.line} reads {n}; after the swap the thread indices change meaning"
        if n in locals_ and n not in {col, acc.name} and n not in _kept_names(unit, kept):
            return f"the column loop on line {fact.line} reads `{n}`, which depends on the thread's place in its group"
    bound_param = _count_param(unit, split, col, bound, params)
    if bound_param is not None and bound_param.startswith("!"):
        return bound_param[1:]
    return _Plan(split, fact, loop, col, acc_decl, kept, bound, bound_param, write, combined, tree_reads)


def _count_param(unit: CudaUnit, split: ColumnSplit, col: str, bound: Node | None, params: set[str]) -> str | None:
    """Where the column count comes from: ``None`` for the guard's bound ``bound`` (when the launch can compute it),
    the parameter that receives the grid for one block per column without a guard, or ``"!reason"``."""
    name = unit.kernel.name
    if bound is not None:
        bad = [unit.t(i) for i in _ids(unit, bound) if unit.t(i) not in params and unit.resolve(i) is None]
        return f"!the column count `{unit.t(bound)}` reads {', '.join(bad)}, which the launch cannot compute" \
            if bad else None
    if split.column != sym("blockIdx.x"):
        return (f"!{name} has no column guard `if ({col} >= n) return;` and its column is not blockIdx.x (the "
                "column count is unknown)")
    got = _grid_param(unit)
    return got or f"!{name} has no launch site in this file; its grid must follow"


def _before_loop(unit: CudaUnit, pre: list[Node], col: str, opened: Node | None
                 ) -> tuple[Node | None, dict[str, Node], set[str]] | str:
    """The statements before the column loop read as ``(column bound, declarations by name, names assigned by
    dropped statements)``, or why one of them cannot be kept or dropped."""
    bound: Node | None = None
    decls: dict[str, Node] = {}
    opaque: set[str] = set()
    for st in pre:
        g = _guard(unit, st, col, opened)
        if g is not None and bound is None:
            bound = g
        elif syn.is_name_declaration(st):
            for n in _declared(unit, st) if syn.is_declaration(st) else []:
                decls[n] = st
        elif syn.is_expression_statement(st) and not unit.barriers_in(st) and not any(
                unit.t(c.child_by_field_name("function")).startswith(("atomic", "__syncthreads"))
                for c in syn.calls(st)):
            # dropped; what it assigns (also `cg::thread_block_tile<32> warp = …`, which parses as an expression)
            # may not be read by the parts kept
            opaque.update(unit.t(a.child_by_field_name("left")) for a in syn.assignments(st))
        else:
            return (f"the statement on line {_line(unit, st)} before the column loop is "
                    f"neither a declaration nor the column guard `if ({col} >= n) return;`")
    return bound, decls, opaque


def _tree_total(unit: CudaUnit, post: list[Node], owner: Node, write: Node, acc: str, finish: WarpFinish | None = None
                ) -> tuple[tuple[Node, ...], str] | str:
    """The block's total read from shared memory by the write (``dbias[o] = … + sh[0]``) when the statements between
    the column loop and the write only fold the partial sums ``acc`` through a shared-memory reduction tree
    (:meth:`~htam_core.source.analysis.facts.KernelFacts.shared_tree_loops`): ``sh[tid] = acc;``, barriers and the
    tree. With a warp-shuffle ``finish`` (:class:`~htam_core.source.analysis.tree_finish.WarpFinish`), the tree
    must leave the block's partial sums in the elements ``sh[tid + 32 * j]`` its lanes read (the tree stops at that
    many elements), and the total is the finish's variable in the write. Returns the ``sh[0]`` nodes (the
    variable's, with a finish) and the array's name (``((), "")`` when the write reads no shared memory), or why the
    shared reads are not such a total. Idea source: llm.c's ``matmul_backward_bias`` kernel 1 (one block per
    column, a shared tree) and its kernel 4 (the rewrite's form)."""
    f = unit.facts
    at = finish.decl if finish is not None else write
    lo, hi = at.start_byte + unit.base, at.end_byte + unit.base
    reads = [a for a in f.accesses if a.space == "shared" and lo <= a.span[0] < hi]
    if not reads:
        return (), ""
    line = reads[0].line
    arrays = {a.pointer for a in reads}
    offsets = sorted(sympy.expand(a.index - (sym("threadIdx.x") if finish else 0)) if a.index is not None else -1
                     for a in reads)
    if len(arrays) != 1 or offsets != [WIDTH * j if finish else 0 for j in range(len(reads))]:
        return f"the write on line {line} reads shared memory other than the total `{reads[0].pointer}[0]`" \
            if finish is None else (f"the warp on line {line} does not read `{reads[0].pointer}[tid + 32 * j]`, one "
                                    "element per lane and tree remainder, as the block's partial sums")
    arr = next(iter(arrays))
    trees = [lp for lp in f.shared_tree_loops()
             if any(a.space == "shared" and a.pointer == arr for a in f.accesses_in(lp))]
    if finish is not None and (len(trees) != 1 or tree_left(trees[0]) != WIDTH * len(reads)):
        left = tree_left(trees[0]) if len(trees) == 1 else None
        return (f"the shared-memory tree over `{arr}` does not stop where the warp on line {line} takes over (the "
                f"warp adds {WIDTH * len(reads)} partial sums, the tree leaves {left or 'an unknown number of'})")
    tree_nodes = {unit.node_at(lp.span, syn.FOR_LOOP) for lp in trees}
    why = (f"the write on line {line} reads `{arr}[0]`, but the statements before it are not only `{arr}[thread] = "
           f"{acc};`, barriers and one shared-memory reduction tree over `{arr}`")
    if len(trees) != 1 or post.index(owner) != len(post) - 1:
        return why
    stored = False
    tx = sym("threadIdx.x")
    for st in post[:post.index(owner)]:
        if st in tree_nodes or (syn.is_expression_statement(st) and unit.barriers_in(st)):
            continue
        lo, hi = st.start_byte + unit.base, st.end_byte + unit.base
        acc_st = [a for a in f.accesses if lo <= a.span[0] < hi]
        sets = syn.assignments(st)
        if not stored and syn.is_expression_statement(st) and len(acc_st) == 1 and acc_st[0].space == "shared" \
                and acc_st[0].pointer == arr and acc_st[0].kind == "write" and acc_st[0].index is not None \
                and sympy.expand(acc_st[0].index - tx) == 0 and len(sets) == 1 \
                and unit.t(sets[0].child_by_field_name("right")).strip() == acc:
            stored = True
            continue
        return why
    if not stored:
        return why
    if finish is not None:
        return tuple(i for i in _ids(unit, write) if unit.t(i) == finish.var), arr
    nodes = tuple(n for a in reads if (n := unit.node_at(a.span, syn.SUBSCRIPT)) is not None)
    return (nodes, arr) if len(nodes) == len(reads) else why


def _kept_names(unit: CudaUnit, kept: list[Node]) -> set[str]:
    return {n for d in kept for n in _declared(unit, d)}


def _line(unit: CudaUnit, node: Node) -> int:
    return unit.src[:node.start_byte].count(b"\n") + 1


def _kept(unit: CudaUnit, decls: dict[str, Node], own: set[str], roots: list[Node | None]) -> list[Node] | str:
    """The declarations before the loop that the loop, the write and the column count need (transitively), in
    source order; or why one of them cannot stay (it depends on the thread's place in its group)."""
    f = unit.facts
    thread_names = {t.name for t in f.thread_indices} | {n for n, _ in f.builtin_aliases}
    need: list[str] = [unit.t(i) for r in roots if r is not None for i in _ids(unit, r)]
    keep: dict[int, Node] = {}
    while need:
        n = need.pop()
        d = decls.get(n)
        if n in own or d is None or d.start_byte in keep:
            continue
        words = {unit.t(i) for i in _ids(unit, d)}
        typ = unit.t(d.child_by_field_name("type"))
        if words & _THREAD_WORDS or (n in thread_names) or "cg::" in typ or "cooperative_groups" in typ \
                or "thread_block" in typ:
            return (f"`{n}` (line {_line(unit, d)}) depends on the thread's place in its "
                    "group and is read by the column loop or the write")
        keep[d.start_byte] = d
        need.extend(words)
    return [keep[k] for k in sorted(keep)]


def _grid_param(unit: CudaUnit) -> str | None:
    """The parameter that receives every launch's 1-D grid count (one block per column), ``"!reason"`` when a
    launch does not pass it, ``None`` without launches."""
    names = param_names(unit)
    found: set[str] = set()
    for la in unit.launches:
        dims = unit.dims_of(la.grid, la.host)
        args = _args(la)
        if len(dims) != 1 or args is None or len(args) != len(names):
            return f"!the launch on line {la.site.line} has no 1-D grid or its arguments do not match the parameters"
        g = " ".join(unit.t(dims[0]).split())
        hit = [p for p, a in zip(names, args, strict=True) if " ".join(unit.t(a).split()) == g]
        if not hit:
            return (f"!the grid `{g}` on line {la.site.line} (one block per column) is not passed to the kernel, so "
                    "the kernel cannot check its column count")
        found.add(hit[0])
    if len(found) > 1:
        return "!the launches pass the column count in different parameters"
    return next(iter(found)) if found else None


def _args(la: Launch) -> list[Node] | None:
    return la.arguments


def _with(unit: CudaUnit, node: Node, renames: list[tuple[Node, str]]) -> str:
    """``node``'s text with each ``(inner node, text)`` replaced (formatting kept)."""
    out = bytearray(unit.src[node.start_byte:node.end_byte])
    for n, new in sorted(renames, key=lambda x: -x[0].start_byte):
        out[n.start_byte - node.start_byte:n.end_byte - node.start_byte] = new.encode()
    return out.decode()


def _atom(unit: CudaUnit, node: Node) -> str:
    """``node``'s text, parenthesized unless it is a name or a number."""
    t = " ".join(unit.t(node).split())
    return t if syn.is_name_or_number(node) else f"({t})"


def _reindent(text: str, extra: str) -> str:
    lines = text.split("\n")
    return "\n".join([lines[0]] + [extra + ln if ln.strip() else ln for ln in lines[1:]])


def _loop_text(unit: CudaUnit, p: _Plan, start: str, step: str) -> str | None:
    """The loop with its start and step replaced (``threadIdx.y``, ``blockDim.y``: the warps split the rows;
    ``blockIdx.y * blockDim.y + threadIdx.y``, ``gridDim.y * blockDim.y`` with row groups), or ``None``."""
    init = p.loop.child_by_field_name("initializer")
    upd = p.loop.child_by_field_name("update")
    if init is None or upd is None or not syn.is_assignment(upd) or \
            unit.t(upd.child_by_field_name("operator")) != "+=":
        return None
    value = _value(init) if syn.is_declaration(init) else (
        init.child_by_field_name("right") if syn.is_assignment(init) else None)
    old_step = upd.child_by_field_name("right")
    if value is None or old_step is None:
        return None
    wide = _wide_loop(unit, p, start, step) if "gridDim" in step else None  # rows split over the grid's y
    return wide if wide is not None else _with(unit, p.loop, [(value, start), (old_step, step)])


def _wide_loop(unit: CudaUnit, p: _Plan, start: str, step: str) -> str | None:
    """The row loop ``for (T i = ...; i < bound; ...) body`` of a 32-bit ``T`` as a loop over a 64-bit counter from
    ``start`` by ``step`` that declares ``i`` in its body (:func:`~htam_core.transforms._grid_loop.index_loop`): with
    the rows split over the grid's y (``gridDim.y * blockDim.y``) the step is larger than the loop's own, so a
    32-bit ``i`` would wrap near the top of ``T`` where the kernel's loop did not (without the split the step,
    ``blockDim.y``, is at most the warp's 32 it replaces). ``None`` (the header is edited in place) for a
    64-bit ``T``, a variable declared outside the loop (read after it), or a test other than ``i < b``/``i <= b``."""
    parts = for_parts(p.loop, unit.t)
    body = p.loop.child_by_field_name("body")
    if parts is None or not parts.declared or parts.var is None or parts.bound is None or body is None or \
            parts.cmp not in ("<", "<=") or len(_declared(unit, parts.init)) != 1 or \
            unit.types.is_wide_integer(parts.type):
        return None
    loop = index_loop(unit.types, parts.var, parts.type, start, unit.t(parts.bound), step, cmp=parts.cmp)
    return loop_text(loop, unit.t(body), syn.is_block(body), syn.indent_of(unit.src, p.loop.start_byte))


def _totals(unit: CudaUnit, p: _Plan) -> list[Node]:
    """The nodes of the write that hold the column's total: names of the combined sums and the tree's ``sh[0]``."""
    return [i for i in _ids(unit, p.write) if unit.t(i) in p.combined] + list(p.tree_reads)


def _rename(unit: CudaUnit, p: _Plan) -> Callable[[Node], str]:
    """A node of the write -> its text with the totals replaced by the accumulator (the thread's column sum)."""
    acc = p.fact.accumulators[0].name
    totals = _totals(unit, p)
    return lambda n: _with(unit, n, [(t, acc) for t in totals
                                     if n.start_byte <= t.start_byte and t.end_byte <= n.end_byte])


@dataclass
class _Split:
    """The row groups of each launch (1: unsplit), the column blocks where known, and the write's text."""

    groups: list[int]
    col_blocks: list[int | None]
    write: str
    refused: str = ""  # why a launch that needs the split keeps one row group (the write stores the total)

    @property
    def split(self) -> bool:
        """Some launch splits the rows over ``gridDim.y``."""
        return any(g > 1 for g in self.groups)


def _split(unit: CudaUnit, p: _Plan, sm_count: int) -> _Split:
    """The row groups per launch (:func:`~htam_core.transforms._lane_split.launch_groups`) and the write (an
    ``atomicAdd`` of the block's partial where a launch splits). Where a launch needs the split but the write
    cannot take partial sums (a plain store, an output read elsewhere), every launch keeps one row group and
    :attr:`_Split.refused` says why (the unsplit form may leave most SMs idle: the candidate says so)."""
    params = param_names(unit)
    cols = column_count(unit, p.bound, p.bound_param, params)
    rows = rows_of(p.fact.bound, p.fact.cmp)
    per = [launch_groups(unit, la, cols, rows, params, sm_count) for la in unit.launches]
    rename = _rename(unit, p)
    out = _Split([g for g, _ in per], [b for _, b in per], rename(p.write))
    if not out.split:
        return out
    why = output_read_elsewhere(unit, p.write)
    made = accumulating_write(unit, p.write, _totals(unit, p), rename) if why is None else why
    if isinstance(made, str):
        blocks = next(b for g, b in per if g > 1)
        return _Split([1] * len(per), out.col_blocks, out.write,
                      f"lanes on columns leave {unit.kernel.name} {blocks} blocks for {sm_count} SMs (fewer than "
                      f"{SPLIT_BELOW_PER_SM} per SM), and its rows are not split over more blocks: {made}")
    out.write = made[0]
    return out


def _launch_edits(unit: CudaUnit, p: _Plan, s: _Split) -> list[TextEdit] | str:
    """Every launch's new grid (``(columns + 31) / 32`` blocks, times its row groups along y) and block
    (``dim3(32, warps)``), or why a launch cannot be rewritten."""
    names = param_names(unit)
    edits: list[TextEdit] = []
    for la, groups in zip(unit.launches, s.groups, strict=True):
        block = unit.dims_of(la.block, la.host) if la.block is not None else []
        args = _args(la)
        if len(block) != 1 or args is None or len(args) != len(names):
            return f"the launch on line {la.site.line} has no 1-D block or its arguments do not match the parameters"
        by = dict(zip(names, args, strict=True))
        if p.bound is not None:
            cols = _with(unit, p.bound, [(i, _atom(unit, by[unit.t(i)])) for i in _ids(unit, p.bound)
                                         if unit.t(i) in by])
        else:
            cols = unit.t(unit.dims_of(la.grid, la.host)[0])
        b = unit.t(block[0])
        grid = [f"(({' '.join(cols.split())}) + {WIDTH - 1}) / {WIDTH}"] + ([str(groups)] if groups > 1 else [])
        edits.append(launch_dims_edit(unit, la, la.grid, grid))
        edits.append(launch_dims_edit(unit, la, la.block, [str(WIDTH), f"(({b}) + {WIDTH - 1}) / {WIDTH}"]))
    return edits


def _description(kernel: str, p: _Plan, s: _Split) -> str:
    """The candidate's one-paragraph description (the row groups and the atomic combine when split)."""
    text = (f"put the lanes of {kernel} on 32 consecutive columns and split the rows between the warps "
            f"(the reads on line {p.fact.line} become coalesced; stride {p.split.stride} between lanes before); "
            "the partial sums meet in shared memory and the launches get (columns + 31) / 32 blocks of "
            "dim3(32, warps)")
    if s.refused:
        return f"{text}; {s.refused} (it may be slower than the original)"
    if not s.split:
        return text
    parts = [f"{b} x {g} = {b * g} blocks" for g, b in zip(s.groups, s.col_blocks, strict=True) if g > 1 and b]
    return (f"{text}; too few column blocks for the device, so the rows are also split over gridDim.y row groups "
            f"({', '.join(parts)}) and each block adds its columns' partial sums to the output with atomicAdd")


@register
class CudaLaneColumns(CudaTransform):
    """Put the lanes on columns of a column sum whose threads split the rows (the warps split the rows instead)."""

    id = "cuda.lane_columns"
    languages = CUDA_LANGS
    changes_numerics = True
    reorders_only = True  # each column sums the same rows, in another order (per warp, then across warps/blocks)
    summary = ("coalesce a column sum: lanes on 32 consecutive columns, warps split the rows, partial sums combined "
               "in shared memory; new launch grid and block (rows also split over gridDim.y when columns are few)")

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate (the body rewritten and every launch's grid and block), or why not."""
        p = _plan(unit)
        if isinstance(p, str):
            return self.not_applicable(p)
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; its grid must follow")
        s = _split(unit, p, sm_count_of(profile))
        start, step = ("blockIdx.y * blockDim.y + threadIdx.y", "gridDim.y * blockDim.y") if s.split else (
            "threadIdx.y", "blockDim.y")
        loop = _loop_text(unit, p, start, step)
        if loop is None:
            return self.not_applicable(f"the loop on line {p.fact.line} is not `for (… = start; …; v += step)`")
        edits = _launch_edits(unit, p, s)
        if isinstance(edits, str):
            return self.not_applicable(edits)
        edits.append(unit.replace(unit.body, self._body(unit, p, loop, s.write, s.split)))
        params: dict[str, object] = {"stride_before": str(p.split.stride), "width": WIDTH,
                                     "launches": len(unit.launches)}
        if s.split:
            params.update(row_groups=list(s.groups), column_blocks=list(s.col_blocks))
        if s.refused:
            params.update(row_split_refused=s.refused)
        return [self.candidate(model, _description(kernel.name, p, s), params, edits)]

    @staticmethod
    def _body(unit: CudaUnit, p: _Plan, loop: str, write: str, split: bool) -> str:
        stmts = statement_list(unit.body)
        ind = syn.indent_of(unit.src, stmts[0].start_byte) or "    "
        step = ind
        acc = p.fact.accumulators[0]
        cols = unit.t(p.bound) if p.bound is not None else p.bound_param
        typ = acc.type
        lines = [
            "{",
            f"{ind}// lanes on columns (cuda.lane_columns): threadIdx.x owns column {p.col}, the warps "
            + ("of the gridDim.y row groups split the rows; each block adds its partial sums with atomicAdd"
               if split else "(threadIdx.y) split the rows"),
            f"{ind}__shared__ {typ} htam_part[{WIDTH}][{WIDTH}];",
            f"{ind}int {p.col} = blockIdx.x * {WIDTH} + threadIdx.x;",
            *[f"{ind}{' '.join(unit.t(d).split())}" for d in p.kept],
            f"{ind}{' '.join(unit.t(p.acc_decl).split())}",
            f"{ind}if ({p.col} < {cols}) {{",
            f"{ind}{step}{_reindent(loop, step)}",
            f"{ind}}}",
            f"{ind}htam_part[threadIdx.y][threadIdx.x] = {acc.name};",
            f"{ind}__syncthreads();",
            f"{ind}if (threadIdx.y == 0) {{",
            f"{ind}{step}for (int htam_r = 1; htam_r < blockDim.y; htam_r++) {{",
            f"{ind}{step}{step}{acc.name} += htam_part[htam_r][threadIdx.x];",
            f"{ind}{step}}}",
            f"{ind}{step}if ({p.col} < {cols}) {{",
            f"{ind}{step}{step}{_reindent(write, step + step)}",
            f"{ind}{step}}}",
            f"{ind}}}",
            "}",
        ]
        return "\n".join(lines)
