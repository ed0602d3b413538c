"""Shared-memory panels for a register-tiled dot-product nest (``cuda.smem_panel_tiling``): each thread of a block
already computes a TM x TN tile of outputs, each from its own dot loop over global memory; the block's TM*blockDim
rows of both operands are staged in shared memory, BK elements of the reduction at a time, and every thread's
TM x TN products come from there (``float4`` fragment loads when the operands are ``float``).

The shape it takes (read off the analysis layer's facts, never off the spelling):

    for (io = 0; io < TM; ++io)            // rows of the thread's tile
      for (jo = 0; jo < TN; ++jo) {        // columns of the thread's tile
        acc = <constant>;
        for (s = 0; s < K; ++s) acc += A[...] * B[...];
        <epilogue: stores of acc>
      }

where ``A``'s index is ``base_A + RA * (TM * threadIdx.dA + io) + s`` and ``B``'s ``base_B + RB * (TN * threadIdx.dB +
jo) + s`` (both operands read along their rows: the NT layout of ``q @ k^T``; ``RA``/``RB`` the row strides, the bases
free of the thread and the loops: block offsets, a batch offset on ``blockIdx.z`` included). The nest may be in the
kernel or in a ``__device__`` helper the kernel calls (directly, or through a function-pointer template argument,
:func:`htam_core.source.analysis.callees.device_callees`). The block's tile is TM*blockDim.dA x TN*blockDim.dB (the
launch's constant block). An early ``if (cond) return;`` before the nest whose condition reads no memory (a triangle
skip) becomes a return after the staging: every thread of the block must load its share and reach each
``__syncthreads()``; a block none of whose threads stores leaves before loading (``__syncthreads_or``).

Each output still sums the same products in the same order (the staging loop walks the reduction in BK steps and a
last partial step without zero padding), so the result is the same as the original's. Refusals say what does not
fit. Idea source: llm.c's ``trimat_forward.cu`` (kernels 2-4, shared-memory panels of q and k); the CUDA C++
Programming Guide, "Shared Memory"; S. Boehm, "How to Optimize a CUDA Matmul Kernel" (2022), vectorized
shared-memory fragment loads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.callees import DeviceCallee, device_callees
from htam_core.source.analysis.facts import BUILTINS, Access, KernelFacts, LoopFact, sym
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, statement_list
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: Reduction depths tried, deepest first (the panels of a 128-row tile at BK 32 take 33 KiB of fp32).
DEPTHS = (32, 16)
#: Static shared memory a block may use without an opt-in (bytes).
SMEM_LIMIT = 48 * 1024
#: Padding (elements) of each panel row: keeps rows 16-byte aligned and spreads the staging stores over banks.
PAD = 4
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fF]?")
_THREADS = tuple(f"threadIdx.{d}" for d in "xyz")


def c_expr(e: sympy.Expr) -> str:
    """C text of an index expression of the analysis layer (sums and products of integers and names; ``div``/``mod``
    are C's truncating ``/`` and ``%``, as the analysis reads them).

    Raises:
        ValueError: a part with no C spelling (a power with a non-integer exponent, another function).
    """
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return e.name
    if e.is_Add:
        terms = [c_expr(a) for a in e.as_ordered_terms()]
        out = terms[0]
        for t in terms[1:]:
            out += f" - {t[1:]}" if t.startswith("-") else f" + {t}"
        return f"({out})"
    if e.is_Mul:
        coeff, rest = e.as_coeff_Mul()
        factors = [c_expr(f) for f in sympy.Mul.make_args(rest)]
        body = " * ".join(factors)
        if coeff == 1:
            return body
        if coeff == -1:
            return f"-{body}"
        return f"{c_expr(coeff)} * {body}"
    if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:
        return " * ".join([c_expr(e.base)] * int(e.exp))
    if isinstance(e, sympy.Function) and e.func.__name__ in ("div", "mod") and len(e.args) == 2:
        op = "/" if e.func.__name__ == "div" else "%"
        return f"(({c_expr(e.args[0])}) {op} ({c_expr(e.args[1])}))"
    raise ValueError(f"no C spelling for {e}")


@dataclass(frozen=True)
class Target:
    """The function holding the nest: the kernel itself (``callee`` ``None``) or a ``__device__`` helper."""

    facts: KernelFacts
    func: Node
    params: tuple[str, ...]
    callee: DeviceCallee | None


@dataclass(frozen=True)
class PanelNest:
    """A matched nest (see the module docstring)."""

    target: Target
    rows: LoopFact
    cols: LoopFact
    dot: LoopFact
    a: Access
    b: Access
    a_row: sympy.Expr
    b_row: sympy.Expr
    a_base: sympy.Expr
    b_base: sympy.Expr
    dim_a: str
    dim_b: str
    tm: int
    tn: int
    acc: str
    acc_type: str
    init: str
    bound: str
    etype: str
    early: tuple[Node, ...]


def _function_params(unit: CudaUnit, fn: Node) -> tuple[str, ...]:
    """The named parameters of the function definition ``fn`` (of ``unit``'s text), in order."""
    return tuple(n for n in syn.function_parameter_names(fn, unit.src) if n)


def _simple_count(lp: LoopFact) -> bool:
    return lp.var is not None and lp.start == 0 and lp.step == 1 and lp.update == "+" and lp.cmp == "<"


def _row_part(a: Access, row: LoopFact, col: LoopFact, dot: LoopFact, tile: int) -> tuple | str:
    """``(row stride, thread dim, base)`` of an operand read ``base + R * (tile * threadIdx.d + row.var) + dot.var``."""
    assert a.index is not None and row.var and col.var and dot.var
    r = a.stride(row.var)
    if a.stride(dot.var) != 1:
        return f"`{a.shown}` is not read along its row (stride {a.stride(dot.var)} in {dot.var})"
    if r is None or r == 0 or a.stride(col.var) != 0:
        return f"`{a.shown}` does not move by rows with {row.var} alone"
    dims = [d for d, t in zip("xyz", _THREADS, strict=True) if a.stride(t) != 0]
    if len(dims) != 1 or a.stride(f"threadIdx.{dims[0]}") is None or sympy.expand(
            a.stride(f"threadIdx.{dims[0]}") - tile * r) != 0:
        return (f"`{a.shown}` does not give each thread {tile} consecutive rows along one "
                "thread dimension")
    zero = {sym(n): 0 for n in (*_THREADS, row.var, col.var, dot.var)}
    base = sympy.expand(a.index.subs(zero))
    t = sym(f"threadIdx.{dims[0]}")
    if sympy.expand(a.index - (base + r * (tile * t + sym(row.var)) + sym(dot.var))) != 0:
        return f"`{a.shown}` is not affine in the thread, the tile and the reduction"
    return r, dims[0], base


def match_nest(unit: CudaUnit, target: Target) -> PanelNest | str:
    """The register-tiled NT dot nest of ``target``, or why there is none (one line)."""
    f = target.facts
    dots = f.matmul_loops()
    if not dots:
        return "no dot-product loop (a sum of products of two operands over a shared index)"
    why = ""
    for dot in dots:
        m = _match_one(unit, target, dot)
        if not isinstance(m, str):
            return m
        why = why or m
    return why


def _match_one(unit: CudaUnit, target: Target, dot: LoopFact) -> PanelNest | str:  # noqa: C901 - one check a line
    f = target.facts
    if not _simple_count(dot) or dot.bound is None:
        return f"the dot loop on line {dot.line} is not `for (s = 0; s < K; ++s)`"
    if dot.parent is None or f.loops[dot.parent].parent is None:
        return f"the dot loop on line {dot.line} is not inside two loops over a thread's tile of outputs"
    cols = f.loops[dot.parent]
    rows = f.loops[cols.parent]  # type: ignore[index]
    for lp in (rows, cols):
        if not _simple_count(lp) or not lp.trip_value:
            return f"the loop on line {lp.line} is not `for (v = 0; v < TILE; ++v)` with a constant TILE"
    if rows.parent is not None:
        return f"the tile loops on line {rows.line} are inside another loop"
    inside = [a for a in f.accesses if dot.id in a.loops]
    reads = [a for a in inside if a.kind == "read" and a.space == "global" and not a.vector and not a.guarded
             and a.index is not None]
    if len(inside) != 2 or len(reads) != 2:
        return f"the dot loop on line {dot.line} does more than read two global operands"
    a, b = reads
    if a.stride(rows.var or "") == 0:
        a, b = b, a
    ra = _row_part(a, rows, cols, dot, rows.trip_value)  # type: ignore[arg-type]
    if isinstance(ra, str):
        return ra
    rb = _row_part(b, cols, rows, dot, cols.trip_value)  # type: ignore[arg-type]
    if isinstance(rb, str):
        return rb
    if ra[1] == rb[1]:
        return f"both operands give rows along threadIdx.{ra[1]}; the tile needs one thread dimension each"
    allowed = set(target.params) | {f"{b_}.{d}" for b_ in ("blockIdx", "blockDim", "gridDim") for d in "xyz"}
    for name, expr in (("row stride", ra[0]), ("row stride", rb[0]), ("panel offset", ra[2]), ("panel offset", rb[2]),
                       ("reduction bound", dot.bound)):
        bad = sorted(s.name for s in expr.free_symbols if s.name not in allowed)
        if bad:
            return (f"the {name} `{expr}` reads {', '.join(bad)}, not a parameter or a block index: the staging "
                    "code before the nest could not spell it")
        try:
            c_expr(expr)
        except ValueError as e:
            return f"the {name} has no C spelling ({e})"
    if len(dot.accumulators) != 1 or dot.accumulators[0].op != "sum":
        return f"the dot loop on line {dot.line} does not keep exactly one sum"
    acc = dot.accumulators[0]
    if acc.type not in ("float", "double") or acc.decl_span is None or acc.init_text is None:
        return f"the accumulator {acc.name} is not a float or double declared with an initial value"
    if not _NUMBER.fullmatch(acc.init_text.strip()):
        return f"the accumulator {acc.name} starts from `{acc.init_text}`, not a constant"
    if not (cols.span[0] <= acc.decl_span[0] < cols.span[1]) or dot.span[0] <= acc.decl_span[0] < dot.span[1]:
        return f"the accumulator {acc.name} is not declared in the tile loop around the dot loop"
    ptypes = {p.name: p for p in f.pointers}
    types = {(ptypes[x.pointer].value_type or ptypes[x.pointer].element_type or "").replace("const", "").strip()
             if x.pointer in ptypes else "" for x in (a, b)}
    if len(types) != 1 or "" in types:
        return "the two operands do not have one known element type"
    why = _body_shape(unit, target, dot, rows, acc.name, acc.span, (a, b))
    if isinstance(why, str):
        return why
    written = {p.name for p in f.pointers if p.writes or p.mode in ("write", "readwrite", "unknown")}
    if {a.pointer, b.pointer} & written:
        return (f"{', '.join(sorted({a.pointer, b.pointer} & written))} is written in the function too: staged "
                "panels would not see its stores")
    between = _between(unit, acc.decl_span, dot.span)
    if any(unit.t(n) == acc.name for s in between for n in syn.identifiers(s)):
        return f"{acc.name} is changed between its declaration and the dot loop"
    return PanelNest(target, rows, cols, dot, a, b, ra[0], rb[0], ra[2], rb[2], ra[1], rb[1],
                     rows.trip_value, cols.trip_value, acc.name, acc.type, acc.init_text.strip(),  # type: ignore[arg-type]
                     c_expr(dot.bound), types.pop(), why)


def _between(unit: CudaUnit, first: tuple[int, int], last: tuple[int, int]) -> list[Node]:
    """The statements of the block holding the statement at file bytes ``last`` that lie after file bytes
    ``first`` and before ``last``."""
    node = unit.node_at(last, syn.FOR_LOOP)
    block = node.parent if node is not None else None
    if block is None:
        return []
    return [s for s in block.named_children if first[1] <= unit.file_byte(s) and s.end_byte + unit.base <= last[0]]


def _body_shape(unit: CudaUnit, target: Target, dot: LoopFact, rows: LoopFact, acc: str,
                update_span: tuple[int, int], ops: tuple[Access, Access]) -> tuple[Node, ...] | str:
    """The early ``if (c) return;`` statements before the nest (to move after the staging), or why the function
    around the nest cannot take ``__syncthreads()``."""
    fn = target.func
    body = fn.child_by_field_name("body")
    if body is None:
        return "the function holding the nest has no body"
    if target.facts.barriers or any(a.space == "shared" for a in target.facts.accesses):
        return "the function already uses shared memory or __syncthreads()"
    loop_node = unit.node_at(dot.span, syn.FOR_LOOP)
    lb = loop_node.child_by_field_name("body") if loop_node is not None else None
    inner = statement_list(lb) if lb is not None and syn.is_block(lb) else ([lb] if lb else [])
    if len(inner) != 1 or unit.source.span(inner[0]) != update_span and unit.source.span(inner[0].named_children[0]) != update_span:
        return f"the dot loop on line {dot.line} does more than `{acc} += a * b`"
    prod = syn.unwrap_parens(inner[0].named_children[0].child_by_field_name("right")) \
        if inner[0].named_children and syn.is_assignment(inner[0].named_children[0]) else None
    if prod is None or not syn.is_binary(prod) or unit.t(prod.child_by_field_name("operator")) != "*" or {
            unit.source.span(syn.unwrap_parens(prod.child_by_field_name(s))) for s in ("left", "right")} != {o.span for o in ops}:
        return f"the dot loop on line {dot.line} does not add the product of its two reads"
    nest = unit.node_at(rows.span, syn.FOR_LOOP)
    if nest is None or nest.parent != body:
        return "the tile loops are not a statement of the function's body (a branch or a block holds them)"
    for n in syn.function_exits(nest):
        return f"line {unit.source.line(n)}: a {unit.t(n).split()[0]} inside the tile loops"
    early: list[Node] = []
    for s in statement_list(body):
        if s == nest:
            break
        spans = [a.span for a in target.facts.accesses]
        reads_memory = any(s.start_byte + unit.base <= sp[0] < s.end_byte + unit.base for sp in spans)
        if syn.is_declaration(s) and not reads_memory and not syn.calls(s):
            continue
        cons = s.child_by_field_name("consequence") if syn.is_if(s) else None
        cons_stmts = statement_list(cons) if cons is not None and syn.is_block(cons) else [cons]
        if (cons is not None and s.child_by_field_name("alternative") is None and len(cons_stmts) == 1
                and cons_stmts[0] is not None and syn.is_return(cons_stmts[0])
                and cons_stmts[0].named_child_count == 0 and not reads_memory
                and not syn.effects(s.child_by_field_name("condition"))):
            why = _index_relation(unit, target.facts, _condition(s))
            if why:
                return why
            early.append(s)
            continue
        return (f"line {unit.source.line(s)}: `{unit.t(s).splitlines()[0]}` before the tile loops is neither a "
                "declaration without memory accesses nor an early `if (...) return;`")
    return tuple(early)


def _condition(stmt: Node) -> Node:
    """An ``if`` statement's condition without its parentheses (``condition_clause`` or a parenthesized one)."""
    c = stmt.child_by_field_name("condition")
    if c is not None and syn.is_condition_clause(c) and c.child_by_field_name("value") is not None:
        c = c.child_by_field_name("value")
    return syn.unwrap_parens(c)  # type: ignore[arg-type]


def _index_relation(unit: CudaUnit, facts: KernelFacts, cond: Node) -> str | None:
    """Why the early return's condition ``cond`` is not a relation between thread and block indices alone (a
    triangle skip such as ``j0 > i0``), or ``None``. A condition on a size (``i0 >= n``) is a bounds check: the
    threads it stops would load panel rows past the data, so it is refused."""
    pure = {t.name for t in facts.thread_indices if all(x.name in BUILTINS for x in t.expr.free_symbols)}
    for n in syn.names_and_fields(cond):
        if syn.is_field(n):
            continue
        p = n.parent
        if p is not None and syn.is_field(p) and unit.t(p).replace(" ", "") in BUILTINS:
            continue
        if unit.t(n) not in pure:
            return (f"the early return `if ({unit.t(cond)}) return;` reads {unit.t(n)}, which is not a thread or block "
                    "index: a bounds check, and the threads it stops would load panel rows past it")
    return None


def _targets(unit: CudaUnit, model: SourceModel, kernel: Kernel) -> tuple[list[Target], list[str]]:
    """The kernel itself and every ``__device__`` helper it calls that can take the staging, with the reasons
    for the helpers that cannot."""
    out = [Target(unit.facts, unit.func, _function_params(unit, unit.func), None)]
    reasons: list[str] = []
    for c in device_callees(model, kernel):
        fn = unit.node_at(c.span, syn.FUNCTION)
        if fn is None:
            continue
        if not c.top_level:
            reasons.append(f"{c.name}: its call in {kernel.name} is inside a branch or a loop")
            continue
        if c.other_callers:
            reasons.append(f"{c.name}: also called from {', '.join(c.other_callers)}")
            continue
        if not c.returns_void:
            reasons.append(f"{c.name}: returns a value")
            continue
        why = _thread_exit_before(unit, c)
        if why:
            reasons.append(f"{c.name}: {why}")
            continue
        out.append(Target(c.facts, fn, _function_params(unit, fn), c))
    return out, reasons


def _thread_exit_before(unit: CudaUnit, c: DeviceCallee) -> str | None:
    """Why some threads of a block may not reach the call of ``c`` (a ``return`` under a condition that reads a
    thread index, before the call), or ``None``."""
    names = {t.name for t in unit.facts.thread_indices if t.dims}
    for r in syn.returns(unit.body):
        if r.start_byte + unit.base >= c.statement_span[0]:
            continue
        n = r.parent
        while n is not None and n != unit.body:
            if syn.is_compound_statement(n):
                cond = n.child_by_field_name("condition")
                ids = {unit.t(i) for i in syn.names_and_fields(cond)} if cond else set()
                if any(i.startswith("threadIdx") for i in ids) or ids & names:
                    return f"line {unit.source.line(r)}: a thread-dependent return before the call"
            n = n.parent
    return None


def _block(unit: CudaUnit) -> tuple[int, int] | str:
    shapes = {la.block_shape for la in unit.facts.launches}
    if not unit.facts.launches:
        return f"{unit.kernel.name} has no launch in this file; the block shape (the tile's extent) is unknown"
    if None in shapes:
        return "a launch's block is not a constant; the tile's extent is unknown"
    if len(shapes) != 1:
        return "the launches use different block shapes"
    bx, by, bz = shapes.pop()  # type: ignore[misc]
    if bz != 1:
        return f"the block has {bz} threads in z; the panels are for 2-D blocks"
    return bx, by


@register
class CudaSmemPanelTiling(CudaTransform):
    """A register-tiled NT dot nest -> both operands' row panels staged in shared memory."""

    id = "cuda.smem_panel_tiling"
    part_of = "cuda.smem_tiling_matmul"  # its fallback for an already register-tiled nest (strategy smem_tiling)
    languages = CUDA_LANGS
    summary = "stage both operand panels of a register-tiled (TMxTN per thread) NT dot nest in shared memory"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate per reduction depth of :data:`DEPTHS` that fits :data:`SMEM_LIMIT`, for the kernel or
        each helper it calls whose nest matches (see the module docstring)."""
        block = _block(unit)
        targets, reasons = _targets(unit, model, kernel)
        nests: list[PanelNest] = []
        for t in targets:
            m = match_nest(unit, t)
            if isinstance(m, str):
                reasons.append(f"{t.callee.name if t.callee else kernel.name}: {m}")
            else:
                nests.append(m)
        if not nests:
            return self.not_applicable("no register-tiled NT dot nest: " + "; ".join(reasons))
        if isinstance(block, str):
            return self.not_applicable(block)
        out: list[Candidate] = []
        for n in nests:
            bd = {"x": block[0], "y": block[1]}
            if n.dim_a not in bd or n.dim_b not in bd:
                reasons.append("the tile's rows are on threadIdx.z")
                continue
            bm, bn = n.tm * bd[n.dim_a], n.tn * bd[n.dim_b]
            esize = 8 if unit.types.resolve(n.etype) == "double" else 4
            where = f"{n.target.callee.name} (called by {kernel.name})" if n.target.callee else kernel.name
            for bk in DEPTHS:
                smem = (bm + PAD + bn + PAD) * bk * esize
                if smem > SMEM_LIMIT:
                    reasons.append(f"{bm}+{bn} rows x {bk} take {smem} bytes of shared memory")
                    continue
                edits = self._edits(unit, n, block, bm, bn, bk)
                vec = unit.types.resolve(n.etype) == "float" and n.tm % 4 == 0 and n.tn % 4 == 0
                out.append(self.candidate(
                    model,
                    f"stage the {bm}-row panel of {n.a.pointer} and the {bn}-row panel of {n.b.pointer} in shared "
                    f"memory in {where}, {bk} elements of the reduction at a time ({n.tm}x{n.tn} outputs per "
                    f"thread from shared memory{', float4 fragments' if vec else ''}; same sums in the same order)",
                    {"bk": bk, "bm": bm, "bn": bn, "tm": n.tm, "tn": n.tn, "layout": "NT", "float4": vec,
                     "callee": n.target.callee.name if n.target.callee else None,
                     "batched": any(x.stride("blockIdx.z") not in (None, 0) for x in (n.a, n.b))},
                    edits,
                ))
        if not out:
            return self.not_applicable("; ".join(reasons))
        return out

    def _edits(self, unit: CudaUnit, n: PanelNest, block: tuple[int, int], bm: int, bn: int, bk: int) -> list[TextEdit]:
        """The staging code before the nest (the early returns moved after it) and the dot loop replaced by a read of
        the thread's accumulator."""
        nest = unit.node_at(n.rows.span, syn.FOR_LOOP)
        dot = unit.node_at(n.dot.span, syn.FOR_LOOP)
        assert nest is not None and dot is not None
        et, at = n.etype, n.acc_type
        threads = block[0] * block[1]
        tid = "threadIdx.x" if block[1] == 1 else f"threadIdx.y * {block[0]} + threadIdx.x"
        vec = unit.types.resolve(et) == "float" and n.tm % 4 == 0 and n.tn % 4 == 0
        ta, tb = f"threadIdx.{n.dim_a}", f"threadIdx.{n.dim_b}"
        K = n.bound
        a_at = (f"{n.a.pointer}[{c_expr(n.a_base)} + {c_expr(n.a_row)} * htam_r + htam_s0 + htam_c]")
        b_at = (f"{n.b.pointer}[{c_expr(n.b_base)} + {c_expr(n.b_row)} * htam_r + htam_s0 + htam_c]")
        skip = " || ".join(f"({unit.t(_condition(s))})" for s in n.early)

        step = _step_lines(n, et, vec, ta, tb)
        lines = [
            f"// shared-memory panels: the block's {bm} rows of {n.a.pointer} and {bn} rows of {n.b.pointer}, "
            f"{bk} elements of the reduction at a time; each thread's {n.tm}x{n.tn} sums from there",
            *([f"const bool htam_skip = {skip};",
               "if (__syncthreads_or(!htam_skip) == 0) return;  // no thread of this block stores"] if skip else []),
            f"__shared__ alignas(16) {et} htam_pa[{bk}][{bm} + {PAD}];  // stored reduction-major",
            f"__shared__ alignas(16) {et} htam_pb[{bk}][{bn} + {PAD}];",
            f"{at} htam_acc[{n.tm}][{n.tn}];",
            f"for (int htam_u = 0; htam_u < {n.tm}; ++htam_u)",
            f"    for (int htam_w = 0; htam_w < {n.tn}; ++htam_w) htam_acc[htam_u][htam_w] = {n.init};",
            f"const int htam_tid = {tid};",
            f"for (int htam_s0 = 0; htam_s0 < {K}; htam_s0 += {bk}) {{",
            f"    for (int htam_l = htam_tid; htam_l < {bm * bk}; htam_l += {threads}) {{",
            f"        const int htam_r = htam_l / {bk}, htam_c = htam_l % {bk};",
            f"        htam_pa[htam_c][htam_r] = htam_s0 + htam_c < {K} ? {a_at} : ({et})0;",
            "    }",
            f"    for (int htam_l = htam_tid; htam_l < {bn * bk}; htam_l += {threads}) {{",
            f"        const int htam_r = htam_l / {bk}, htam_c = htam_l % {bk};",
            f"        htam_pb[htam_c][htam_r] = htam_s0 + htam_c < {K} ? {b_at} : ({et})0;",
            "    }",
            "    __syncthreads();",
            f"    if (htam_s0 + {bk} <= {K}) {{  // a whole step",
            "#pragma unroll",
            f"        for (int htam_kk = 0; htam_kk < {bk}; ++htam_kk) {{",
            *["            " + s for s in step],
            "        }",
            "    } else {  // the last, partial step: only its own elements, so every sum keeps its terms",
            f"        for (int htam_kk = 0; htam_s0 + htam_kk < {K}; ++htam_kk) {{",
            *["            " + s for s in step],
            "        }",
            "    }",
            "    __syncthreads();",
            "}",
            *(["if (htam_skip) return;"] if skip else []),
        ]
        indent = syn.indent_of(unit.src, nest.start_byte)
        text = "\n".join(ln.lstrip() if ln.lstrip().startswith("#") else indent + ln for ln in lines) + "\n"
        edits = [unit.edit(syn.line_start(unit.src, nest.start_byte), syn.line_start(unit.src, nest.start_byte), text),
                 unit.replace(dot, f"{n.acc} = htam_acc[{n.rows.var}][{n.cols.var}];")]
        for s in n.early:  # evaluated where it was (htam_skip), returned after the staging
            edits.append(unit.edit(syn.line_start(unit.src, s.start_byte), _line_end(unit.src, s.end_byte), ""))
        return edits


def _step_lines(n: PanelNest, et: str, vec: bool, ta: str, tb: str) -> list[str]:
    """One reduction step of a thread's sums: its ``tm`` elements of the A panel and ``tn`` of the B panel read into
    registers (as ``float4`` when ``vec``), then the ``tm x tn`` products added to ``htam_acc``; ``ta``/``tb``: the
    thread index along each panel's rows, ``et`` the element type."""

    def frag(name: str, panel: str, t: str, tile: int) -> list[str]:
        if vec:
            return [f"for (int htam_v = 0; htam_v < {tile}; htam_v += 4) {{",
                    f"    const float4 htam_q = *reinterpret_cast<const float4 *>(&{panel}[htam_kk][{t} * {tile} + "
                    "htam_v]);",
                    f"    {name}[htam_v] = htam_q.x; {name}[htam_v + 1] = htam_q.y; {name}[htam_v + 2] = htam_q.z; "
                    f"{name}[htam_v + 3] = htam_q.w;",
                    "}"]
        return [f"for (int htam_v = 0; htam_v < {tile}; ++htam_v) {name}[htam_v] = {panel}[htam_kk][{t} * {tile} "
                "+ htam_v];"]

    return [
        f"{et} htam_a[{n.tm}], htam_b[{n.tn}];",
        "#pragma unroll",
        *frag("htam_a", "htam_pa", ta, n.tm),
        "#pragma unroll",
        *frag("htam_b", "htam_pb", tb, n.tn),
        "#pragma unroll",
        f"for (int htam_u = 0; htam_u < {n.tm}; ++htam_u) {{",
        "#pragma unroll",
        f"    for (int htam_w = 0; htam_w < {n.tn}; ++htam_w) htam_acc[htam_u][htam_w] += htam_a[htam_u] * "
        "htam_b[htam_w];",
        "}",
    ]


def _line_end(src: bytes, pos: int) -> int:
    """The byte after the newline that ends the line holding ``pos`` (the end of ``src`` when there is none)."""
    nl = src.find(b"\n", pos)
    return len(src) if nl < 0 else nl + 1
