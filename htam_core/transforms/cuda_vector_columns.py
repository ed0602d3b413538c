"""Several adjacent columns per thread with 16-byte row loads (``cuda.vector_columns``) for a thread-per-column sum.

A column sum with one thread per column (``int c = blockIdx.x * blockDim.x + threadIdx.x; for (i …) s +=
x[i * C + c];``) is coalesced, but every lane loads 2 or 4 bytes per row. The analysis layer finds these loops
(:meth:`~htam_core.source.analysis.facts.KernelFacts.thread_column_loops`). The rewrite gives each thread
``htam_V = 16 / sizeof(E)`` adjacent columns (``E`` the element type of the moving reads)::

    int c = (blockIdx.x * blockDim.x + threadIdx.x) * htam_V;
    if (c >= C) return;                                    // the kernel's own column guard
    float htam_acc[htam_V];  (each set to the accumulator's initial value)
    for (i …) {                                            // the loop's own header
        if (c + htam_V <= C && every row address 16-byte aligned) {
            one 16-byte load per moving pointer; the body once per column k on element k of the load
        } else {
            the body once per column k < C - c, scalar
        }
    }
    for (k …) if (c + k < C) { the statements after the loop, for column c + k and htam_acc[k] }

and every launch's grid x shrinks by ``htam_V`` (rounded up). Each column is summed over the same rows in the same
order as before, so the results are the same bit for bit.

The same fact also finds the lanes-on-columns form, whose warps split the rows (``for (r = warp; r < n; r +=
warps) s += x[r * C + base + lane];`` before a combine of the warps' partials, llm.c kernel 4 and the form
``cuda.lane_columns`` writes with a warp number). There each lane takes ``htam_V`` adjacent columns of one row
instead: lane ``l`` loads columns ``base + (l % htam_G) * htam_V ..`` of row ``warp * htam_V + l / htam_G``
(``htam_G = 32 / htam_V``) with one 16-byte load, so a warp still reads its 32 columns, ``htam_V`` rows at a time,
and the block every row once. After the loop shuffles add up the lanes on the same columns and give lane ``l`` its
own column's partial back, so the kernel's combine (shared memory read by a sum loop, or ``atomicAdd``) and the
launch stay as they are. Another summation order: equal up to float rounding. Refused there: a statement before
the loop that may return (every lane must reach the shuffles), an accumulator type a shuffle does not move, a loop
that writes or reads shared memory or reads a lane-dependent value besides its reads, a partial used other than
in a sum with the other warps'.

Refused, each with its reason: no such loop; the column not ``blockIdx.x * blockDim.x + threadIdx.x`` in one
local; no column guard ``if (c >= C) return;`` (a guarded block ``if (c < C) { … }`` that ends the body is the same
guard, :func:`~htam_core.source.analysis.guards.open_guarded_block`; one with an ``else`` or with statements after
it is refused); other statements before the loop that depend on the column; a
loop that is not the last loop or is nested; statements after it that combine threads (shuffles, barriers) or
return; an element type unknown or a template parameter (the launch must compute ``htam_V``); a grid whose x
component is not written at the launch; no launch in the file.

Idea source: llm.c ``dev/cuda/matmul_backward_bias.cu`` kernel 7 (``x128`` loads of adjacent columns, one
accumulator per column) after kernel 5; NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized
Memory Access" (Luitjens, 2013).
"""

from __future__ import annotations

import sympy

from htam_core.source.analysis import Accumulator, ColumnSplit, LoopFact, sym
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.guards import bounds_guard, early_return_text
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, block_extent_hazard, statement_list
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_lane_columns import (
    _THREAD_WORDS,
    _declared,
    _guard,
    _line,
    _reindent,
    _value,
    _with,
    column_loop,
)
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

_WARP_WORDS = ("__shfl", "__syncthreads", "__syncwarp", "reduce", "return", "__ballot")


def _element(unit: CudaUnit, pointer: str) -> str | None:
    pf = unit.facts.pointer(pointer)
    if pf is None or not (pf.element_type or pf.value_type):
        return None
    words = [w for w in (pf.element_type or pf.value_type or "").split() if w not in ("const", "volatile")]
    return " ".join(words) or None


def _moving_reads(unit: CudaUnit, split: ColumnSplit) -> tuple[str, list[tuple[str, Node]]] | str:
    """The element type of the global reads that walk the column of ``split``
    (:meth:`~htam_core.source.analysis.facts.KernelFacts.column_reads`) and ``[(pointer, subscript node)]`` of each,
    or why they cannot be widened (unknown or different element types, a read that is no subscript)."""
    moving = list(unit.facts.column_reads(split))
    types = sorted({_element(unit, a.pointer) or "" for a in moving})
    if "" in types or len(types) != 1:
        return "the moving reads have unknown or different element types"
    subs = []
    for a in moving:
        node = unit.node_at(a.span, syn.SUBSCRIPT)
        if node is None:
            return f"the read `{a.shown}` is not a subscript"
        subs.append((a.pointer, node))
    return types[0], subs


def _address(unit: CudaUnit, sub: Node, body: Node) -> str:
    """The text of the subscript ``sub`` with the locals the loop ``body`` declares before it (``const int at =
    r * n + col; … A[at]``) replaced by their initial values, so the address can be tested and loaded at the top
    of the body, before those declarations; locals the body assigns again stay as written (the caller refuses
    them)."""
    decls = [st for st in (statement_list(body) if syn.is_block(body) else []) if syn.is_declaration(st)
             and st.end_byte <= sub.start_byte]
    values = {}
    for st in decls:
        names, v = _declared(unit, st), _value(st)
        if len(names) == 1 and v is not None:
            values[names[0]] = f"({_per_column(unit, v, [], values)})"
    return _per_column(unit, sub, [], values)


def _reassigned(unit: CudaUnit, body: Node, subs: list[tuple[str, Node]]) -> str | None:
    """A local of the loop ``body`` that a moving read's index names and the body assigns after declaring it
    (its value at the read is not its initial one), or ``None``."""
    names = {unit.t(i) for _, n in subs for i in syn.identifiers(n)}
    for a in syn.assignments(body):
        left = a.child_by_field_name("left")
        if left is not None and unit.t(left) in names:
            return unit.t(left)
    return None


def _per_column(unit: CudaUnit, body: Node, whole: list[tuple[Node, str]], names: dict[str, str]) -> str:
    """The loop body ``body`` as one line for column ``htam_k``: each ``(node, text)`` of ``whole`` replaced as a
    whole, the identifiers outside them renamed by ``names``, comments dropped (braces of a compound body too)."""
    inner = syn.is_block(body)
    text, b0 = unit.t(body)[1:-1] if inner else unit.t(body), body.start_byte + (1 if inner else 0)
    renames: list[tuple[Node, str]] = [(c, "") for c in syn.comments(body)] + list(whole)
    taken = {b for n, _ in whole for b in range(n.start_byte, n.end_byte)}
    renames += [(i, names[unit.t(i)]) for i in syn.identifiers(body)
                if i.start_byte not in taken and unit.t(i) in names]
    out = bytearray(text.encode())
    for n, new in sorted(renames, key=lambda x: -x[0].start_byte):
        out[n.start_byte - b0:n.end_byte - b0] = new.encode()
    return syn.join_lines(out.decode())


@register
class CudaVectorColumns(CudaTransform):
    """Give each thread of a thread-per-column sum 16 bytes of adjacent columns, loaded as one vector per row."""

    id = "cuda.vector_columns"
    languages = CUDA_LANGS
    summary = ("several adjacent columns per thread in a thread-per-column sum: one 16-byte load per row, one "
               "accumulator per column; the grid's x shrinks to match")

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate (the kernel body and every launch's grid x), or why not."""
        got = self._make(unit, kernel)
        if isinstance(got, str):
            return self.not_applicable(got)
        if hazard := block_extent_hazard(unit):  # several columns per thread: each block covers several extents
            return self.not_applicable(hazard)
        edits, line, width, warp = got
        if warp:
            text = (f"give each lane of {kernel.name} {width} adjacent columns of one row: the reads of the loop on "
                    f"line {line} become one 16-byte load per lane and row (a scalar path for unaligned rows), the "
                    "warp covering the same 32 columns several rows at a time; shuffles give each lane its column's "
                    "partial back before the combine; the launch stays")
        else:
            text = (f"give each thread of {kernel.name} {width} adjacent columns: the reads of the loop on line {line} "
                    "become one 16-byte load per row (a scalar path for the last columns and unaligned rows), one "
                    "accumulator per column; the launches' grid x shrinks to match")
        return [self.candidate(model, text, {"width": width, "launches": len(unit.launches), "warp_rows": warp},
                               edits)]

    def _make(self, unit: CudaUnit, kernel: Kernel) -> tuple[list[TextEdit], int, str, bool] | str:  # noqa: C901
        f = unit.facts
        name = kernel.name
        loops = f.thread_column_loops()
        if not loops:
            return (f"{name} has no thread-per-column sum with scalar reads (a loop whose start does not depend on "
                    "threadIdx.x, a `sum` accumulator reading `S * i + c`, c coalesced along threadIdx.x)")
        split = loops[0]
        if split.warp is not None:
            return _warp_rows(unit, split)
        placed = column_loop(unit, split)
        if isinstance(placed, str):
            return placed
        fact, loop, pre, post, opened = placed
        acc = fact.accumulators[0]
        col = next((t.name for t in f.thread_indices if t.is_global and t.expr == split.column), None)
        col_decl = next((st for st in pre if syn.is_declaration(st) and _declared(unit, st) == [col]), None)
        if col is None or col_decl is None:
            return f"the column `{split.column}` is not `blockIdx.x * blockDim.x + threadIdx.x` held in one local"
        acc_decl = unit.node_at(acc.decl_span, syn.DECLARATION) if acc.decl_span else None
        if acc_decl is None or acc_decl not in pre or acc.type is None or acc.init_text is None:
            return f"the accumulator {acc.name} is not declared with its type and initial value before the loop"
        guard = next((st for st in pre if _guard(unit, st, col, opened) is not None), None)
        if guard is None:
            return f"{name} has no column guard `if ({col} >= n) return;` (or `if ({col} < n) {{ … }}`) before the loop"
        bound = unit.t(_guard(unit, guard, col, opened))
        for st in pre:
            if st in (col_decl, acc_decl, guard):
                continue
            words = {unit.t(i) for i in syn.identifiers(st if st != opened else st.child_by_field_name("condition"))}
            if col in words or "threadIdx" in words or acc.name in words:
                return f"the statement `{' '.join(unit.t(st).split())[:60]}` before the loop depends on the column"
        for st in post:
            text = unit.t(st)
            if any(w in text for w in _WARP_WORDS) or unit.barriers_in(st) or syn.for_or_while_loops(st):
                return (f"the statement `{' '.join(text.split())[:60]}` after the loop combines threads, returns or "
                        "loops; only per-column statements can be repeated per column")
        got = _moving_reads(unit, split)
        if isinstance(got, str):
            return got
        elem, subs = got
        tmpl = unit.func.parent if unit.func.parent is not None and syn.is_template_declaration(unit.func.parent) \
            else None
        params = tmpl.child_by_field_name("parameters") if tmpl is not None else None
        if params is not None and elem in {unit.t(i) for i in syn.type_names(params)}:
            return f"the element type {elem} is a template parameter; the launch cannot compute the columns per thread"
        width = f"(16 / sizeof({elem}))"
        if not unit.launches:
            return f"{name} has no launch site in this file; its grid must shrink"
        edits: list[TextEdit] = []
        for la in unit.launches:
            dims = unit.dims_of(la.grid, la.host)
            if not dims or not (la.call.start_byte <= dims[0].start_byte < la.call.end_byte):
                return f"the grid's x on line {la.site.line} is not written at the launch"
            edits.append(unit.replace(dims[0], f"(({unit.t(dims[0])}) + {width} - 1) / {width}"))
        body_node = loop.child_by_field_name("body")
        if body_node is None:
            return f"the loop on line {fact.line} has no body"
        names = {col: f"({col} + htam_k)", acc.name: "htam_acc[htam_k]"}
        if (again := _reassigned(unit, body_node, subs)) is not None:
            return f"the index of a moving read names `{again}`, which the loop assigns; its value at the read is unknown"
        addr = {p: _address(unit, n, body_node) for p, n in subs}

        def rendered(vector: bool) -> str:
            return _per_column(unit, body_node, [(n, f"htam_{p}.v[htam_k]") for p, n in subs] if vector else [],
                               names)

        ind = syn.indent_of(unit.src, (pre or [loop])[0].start_byte) or "    "
        pointers = sorted({p for p, _ in subs})
        aligned = " && ".join(f"((unsigned long long)&{addr[p]} & 15ull) == 0ull" for p in dict(subs))
        loads = " ".join(f"htam_pack_{p} htam_{p} = *reinterpret_cast<const htam_pack_{p} *>(&{addr[p]});"
                         for p in dict(subs))
        packs = [f"struct alignas(16) htam_pack_{p} {{ {elem} v[htam_V]; }};" for p in pointers]
        header = _with(unit, loop, [(body_node, "")]).rstrip()
        post_renamed = ""
        if post:
            rn: list[tuple[Node, str]] = [(c, "") for st in post for c in syn.comments(st)]
            for st in post:
                for i in syn.identifiers(st):
                    if unit.t(i) == col:
                        rn.append((i, f"({col} + htam_k)"))
                    elif unit.t(i) == acc.name:
                        rn.append((i, "htam_acc[htam_k]"))
            post_renamed = " ".join(" ".join(_with(unit, st, [(n, t) for n, t in rn
                                                               if st.start_byte <= n.start_byte < st.end_byte]
                                                     ).split()) for st in post)
        col_init = col_decl.children_by_field_name("declarator")[0].child_by_field_name("value")
        lines = ["{",
                 f"{ind}// several adjacent columns per thread (cuda.vector_columns): one 16-byte load per row",
                 f"{ind}constexpr int htam_V = {width};",
                 *[f"{ind}{x}" for x in packs]]
        lines += [f"{ind}{x}" for x in _pre_lines(unit, pre, (col_decl, col_init), acc_decl, acc, opened)]
        lines += [
            f"{ind}{' '.join(header.split())} {{",
            f"{ind}{ind}if ({col} + htam_V <= {bound} && {aligned}) {{",
            f"{ind}{ind}{ind}{loads}",
            f"{ind}{ind}{ind}#pragma unroll",
            f"{ind}{ind}{ind}for (int htam_k = 0; htam_k < htam_V; htam_k++) {{ {rendered(True)} }}",
            f"{ind}{ind}}} else {{",
            f"{ind}{ind}{ind}for (int htam_k = 0; htam_k < htam_V && {col} + htam_k < {bound}; htam_k++) "
            f"{{ {rendered(False)} }}",
            f"{ind}{ind}}}",
            f"{ind}}}",
        ]
        if post:
            lines.append(f"{ind}for (int htam_k = 0; htam_k < htam_V && {col} + htam_k < {bound}; htam_k++) {{ "
                         f"{post_renamed} }}")
        lines.append("}")
        edits.append(unit.replace(unit.body, "\n".join(lines)))
        return edits, fact.line, width, False


def _pre_lines(unit: CudaUnit, pre: list[Node], col: tuple[Node, Node], acc_decl: Node, acc: Accumulator,
               opened: Node | None) -> list[str]:
    """The statements before the column loop, rewritten for ``htam_V`` columns per thread (unindented): the column
    declaration ``col`` (statement, initial value) times ``htam_V``, the accumulator ``acc`` (declared by
    ``acc_decl``) as one per column, the guarded block ``opened`` around the loop as its early return (the same
    guard, :func:`~htam_core.source.analysis.guards.early_return_text`), the others as written."""
    out: list[str] = []
    for st in pre:
        if st == col[0]:
            out.append(" ".join(_with(unit, st, [(col[1], f"({unit.t(col[1])}) * htam_V")]).split()))
        elif st == opened:
            g = bounds_guard(st, None, unit.src)
            out.append(early_return_text(g, unit.src) if not isinstance(g, str) else unit.t(st))
        elif st == acc_decl:
            out.append(f"{acc.type} htam_acc[htam_V];")
            out.append(f"for (int htam_k = 0; htam_k < htam_V; htam_k++) htam_acc[htam_k] = {acc.init_text};")
        else:
            out.append(_reindent(unit.t(st), ""))
    return out


#: Accumulator types a warp shuffle moves as they are.
_SHUFFLED = frozenset({"float", "double", "int", "unsigned", "unsigned int", "long long", "unsigned long long"})


def _placed(unit: CudaUnit, split: ColumnSplit) -> tuple[Node, Node, str | None, str] | str:
    """Where the loop of a warp-rows column sum is: ``(loop, statement of the body holding it, column bound or
    None, column variable or "")``; the statement is the loop itself or a column guard ``if (c < X) { loop }``
    (the form ``cuda.lane_columns`` writes). The reason otherwise."""
    fact = unit.facts.loops[split.loop]
    loop = unit.node_at(fact.span, syn.FOR_LOOP)
    stmts = statement_list(unit.body)
    if loop is not None and loop in stmts:
        return loop, loop, None, ""
    block = loop.parent if loop is not None else None
    guard = block.parent if block is not None and syn.is_block(block) else None
    if loop is None or guard is None or not syn.is_if(guard) or guard not in stmts or \
            guard.child_by_field_name("alternative") is not None or statement_list(block) != [loop]:
        return (f"the column loop on line {fact.line} is neither a statement of {unit.kernel.name}'s body nor the "
                "only statement of a column guard `if (c < n) { … }` there")
    g = bounds_guard(guard, None, unit.src)
    values = {t.name: t.expr for t in unit.facts.thread_indices}
    terms = g.bounds() if not isinstance(g, str) and g.form == "if" and not g.others() else {}
    col, bound = next(iter(terms.items())) if len(terms) == 1 else (None, None)
    if col is None or bound is None or col not in values or sympy.expand(values[col] - split.column) != 0:
        return f"the guard on line {_line(unit, guard)} around the column loop is not `column < n`"
    return loop, guard, unit.t(bound), col


def _warp_rows(unit: CudaUnit, split: ColumnSplit  # noqa: C901
               ) -> tuple[list[TextEdit], int, str, bool] | str:
    """The rewrite of a column sum whose warps split the rows (lane ``l`` on column ``base + l``), or why not.

    Each lane takes ``htam_V = 16 / sizeof(E)`` adjacent columns of one row: lane ``l`` reads columns
    ``base + (l % htam_G) * htam_V + k`` (``htam_G = 32 / htam_V`` lanes per row) of row
    ``warp * htam_V + l / htam_G`` (step: the warps times ``htam_V``), one 16-byte load when aligned (a scalar path
    otherwise), so a warp still covers the same 32 columns, ``htam_V`` rows at a time, and the block every row
    once. After the loop the lanes holding the same columns add up (``__shfl_down_sync`` by ``htam_G``, ...) and
    lane ``l`` takes column ``base + l``'s total back (``__shfl_sync`` from lane ``l / htam_V``), added to the
    accumulator: the statements after the loop see one partial per lane and column as before, over other rows
    of the warp. So only a combine that sums the warps' partials is allowed after the loop (a store to shared
    memory read back by a sum loop, or an ``atomicAdd``); the launch stays as it is.
    """
    f = unit.facts
    fact = f.loops[split.loop]
    acc = fact.accumulators[0]
    var = fact.var or ""
    placed = _placed(unit, split)
    if isinstance(placed, str):
        return placed
    loop, outer, bound, col = placed
    stmts = statement_list(unit.body)
    pre, post = stmts[:stmts.index(outer)], stmts[stmts.index(outer) + 1:]
    if split.warp == sym("blockDim.x"):
        if not unit.launches:
            return f"{unit.kernel.name} has no launch site in this file; its block's x must be 32 (a warp per row)"
        for la in unit.launches:
            dims = unit.dims_of(la.block, la.host) if la.block is not None else []
            if not dims or unit.t(dims[0]).strip() != "32":
                return (f"the block's x on line {la.site.line} is not 32, so the threadIdx.y rows of the block are "
                        "not its warps")
    for st in pre:
        if syn.returns(st):
            return (f"the statement on line {_line(unit, st)} before the loop may return; every lane of a warp must "
                    "reach the shuffles after the loop")
    acc_decl = unit.node_at(acc.decl_span, syn.DECLARATION) if acc.decl_span else None
    if acc_decl is None or acc_decl not in pre or unit.types.resolve(acc.type) not in _SHUFFLED:
        return (f"the accumulator {acc.name} is not declared before the loop with a type a warp shuffle moves "
                f"({', '.join(sorted(_SHUFFLED))})")
    inside = f.accesses_in(fact)
    if any(a.kind != "read" or a.space != "global" for a in inside):
        return f"the loop on line {fact.line} writes memory or reads shared memory; only its global reads widen"
    got = _moving_reads(unit, split)
    if isinstance(got, str):
        return got
    elem, subs = got
    body = loop.child_by_field_name("body")
    init, upd = loop.child_by_field_name("initializer"), loop.child_by_field_name("update")
    start = _value(init) if init is not None and syn.is_declaration(init) else None
    if body is None or start is None or upd is None or not syn.is_assignment(upd) or \
            unit.t(upd.child_by_field_name("operator")) != "+=":
        return f"the loop on line {fact.line} is not `for (int {var} = warp; …; {var} += warps)`"
    taken = {b for _, n in subs for b in range(n.start_byte, n.end_byte)}
    lanes = {t.name for t in f.thread_indices} | {n for n, _ in f.builtin_aliases} | _THREAD_WORDS
    cond = loop.child_by_field_name("condition")
    for i in syn.identifiers(body) + (syn.identifiers(cond) if cond is not None else []):
        n = unit.t(i)
        if i.start_byte not in taken and n != var and n in lanes:
            return f"the loop reads `{n}` outside its reads; it would change meaning per lane"
    why = _sum_combine_after(unit, acc.name, post, fact)
    if why is not None:
        return why
    subs_by = {p: n for p, n in subs}
    at = {p: f"&{unit.t(n)} + htam_off" for p, n in subs_by.items()}
    ind = syn.indent_of(unit.src, (pre or [loop])[0].start_byte) or "    "
    i2, i3 = ind * 2, ind * 3
    header = " ".join(_with(unit, loop, [(start, f"({unit.t(start)}) * htam_V + htam_l / htam_G"),
                                         (upd.child_by_field_name("right"),
                                          f"({unit.t(upd.child_by_field_name('right'))}) * htam_V"),
                                         (body, "")]).split())
    vector = _per_column(unit, body, [(n, f"htam_{p}.v[htam_k]") for p, n in subs], {acc.name: "htam_acc[htam_k]"})
    scalar = _per_column(unit, body, [(n, f"({at[p].replace(' + htam_off', '')})[htam_off + htam_k]")
                                      for p, n in subs], {acc.name: "htam_acc[htam_k]"})
    aligned = " && ".join(f"((unsigned long long)({a}) & 15ull) == 0ull" for a in at.values())
    loads = " ".join(f"htam_pack_{p} htam_{p} = *reinterpret_cast<const htam_pack_{p} *>({a});"
                     for p, a in at.items())
    full = "0xffffffffu"
    in_range = f" && {col} + htam_off + htam_V <= {bound}" if bound is not None else ""
    scalar_guard = f"if ({col} + htam_off + htam_k < {bound}) " if bound is not None else ""
    lines = [
        "// 16-byte loads of adjacent columns (cuda.vector_columns): lane l reads columns "
        "(l % htam_G) * htam_V + k of row warp * htam_V + l / htam_G",
        "{",
        f"{ind}constexpr int htam_V = 16 / sizeof({elem}), htam_G = 32 / htam_V;",
        *[f"{ind}struct alignas(16) htam_pack_{p} {{ {elem} v[htam_V]; }};" for p in sorted(subs_by)],
        f"{ind}const int htam_l = threadIdx.x % 32, htam_off = (htam_l % htam_G) * htam_V - htam_l;",
        f"{ind}{acc.type} htam_acc[htam_V];",
        f"{ind}for (int htam_k = 0; htam_k < htam_V; htam_k++) htam_acc[htam_k] = 0;",
        f"{ind}{header} {{",
        f"{i2}if ({aligned}{in_range}) {{",
        f"{i3}{loads}",
        f"{i3}#pragma unroll",
        f"{i3}for (int htam_k = 0; htam_k < htam_V; htam_k++) {{ {vector} }}",
        f"{i2}}} else {{",
        f"{i3}for (int htam_k = 0; htam_k < htam_V; htam_k++) {scalar_guard}{{ {scalar} }}",
        f"{i2}}}",
        f"{ind}}}",
        f"{ind}// the lanes on the same columns (htam_G apart) add up; lane l takes its own column back",
        f"{ind}for (int htam_o = htam_G; htam_o < 32; htam_o *= 2)",
        f"{i2}for (int htam_k = 0; htam_k < htam_V; htam_k++) "
        f"htam_acc[htam_k] += __shfl_down_sync({full}, htam_acc[htam_k], htam_o);",
        f"{ind}for (int htam_k = 0; htam_k < htam_V; htam_k++) {{",
        f"{i2}{acc.type} htam_t = __shfl_sync({full}, htam_acc[htam_k], htam_l / htam_V);",
        f"{i2}if (htam_l % htam_V == htam_k) {acc.name} += htam_t;",
        f"{ind}}}",
        "}",
    ]
    text = ("\n" + ind).join(lines)
    return [unit.replace(outer, text)], fact.line, f"(16 / sizeof({elem}))", True


def _sum_combine_after(unit: CudaUnit, acc: str, post: list[Node], fact: LoopFact) -> str | None:  # noqa: C901
    """``None`` when the statements after the column loop ``fact`` use the warp's partial ``acc`` only to sum it
    with the other warps' partials: stored to a ``__shared__`` array, the value of an ``atomicAdd``, or added to
    (``acc += a[…]``) from that array, until it is reset (``acc = <number>;``) or so added to; every read of that
    array after the loop lies in a ``sum`` loop from 0 or 1 by 1 to the loop's number of warps (its step). The
    reason otherwise."""
    shared: set[str] = set()

    def array(n: Node) -> str:
        while syn.is_subscript(n):
            n = n.child_by_field_name("argument")
        return unit.t(n)

    def shared_read(n: Node) -> bool:
        return any(array(x) in shared for x in syn.subscripts(n))

    done = False
    for st in post:
        if done:
            break
        for i in syn.identifiers(st):
            p = i.parent
            if unit.t(i) != acc or p is None:
                continue
            op = unit.t(p.child_by_field_name("operator")) if syn.is_assignment(p) else ""
            if op == "=" and p.child_by_field_name("left") == i and \
                    syn.is_number(p.child_by_field_name("right")):
                done = True
                break
            if op == "=" and p.child_by_field_name("right") == i and \
                    syn.is_subscript(p.child_by_field_name("left")) and any(
                        a.space == "shared" and a.pointer == array(p.child_by_field_name("left"))
                        for a in unit.facts.accesses):
                shared.add(array(p.child_by_field_name("left")))
                continue
            if op == "+=" and p.child_by_field_name("left") == i and shared_read(p.child_by_field_name("right")):
                done = True
                break
            call = p.parent if syn.is_argument_list(p) else None
            if call is not None and unit.t(call.child_by_field_name("function")) == "atomicAdd" and \
                    p.named_children[-1] == i:
                continue
            return (f"`{' '.join(unit.t(st).split())[:60]}` uses the warp's partial {acc} other than summing it with "
                    "the other warps' (a store to shared memory read back by a sum loop, or atomicAdd)")
    f = unit.facts
    lo, hi = (post[0].start_byte + unit.base, post[-1].end_byte + unit.base) if post else (0, 0)
    for a in f.accesses:
        if a.pointer in shared and a.kind == "read" and lo <= a.span[0] < hi:
            inner = f.loops[a.loops[-1]] if a.loops else None
            if inner is None or not any(x.op == "sum" for x in inner.accumulators) or inner.step != 1 or \
                    inner.start not in (0, 1) or inner.cmp != "<" or inner.bound is None or fact.step is None or \
                    sympy.expand(inner.bound - fact.step) != 0:
                return (f"the shared partials `{a.pointer}` are read on line {a.line} outside a sum loop over the "
                        f"warps (from 0 or 1 to {fact.step}); only a sum of every warp's partial is allowed")
    return None
