"""Block-per-row with the row kept in registers (``cuda.row_in_registers``), for multi-pass thread-per-row kernels.

A thread-per-row kernel that walks its row several times (a max pass, a sum pass, a write pass; the mean,
variance and normalize passes of a layer norm) reads the row from memory in every pass, with each thread
``cols`` elements away from its neighbour. The rewrite gives each row to a block of ``B`` threads:

* ``row`` becomes ``blockIdx.x`` (the bound check is the same for the whole block, so barriers are safe);
* every row loop ``for (j = S; j < cols; ++j) body`` (``S`` a constant index, 0 or more: ``m = row[0]; for (j =
  1; ...)``) becomes ``PER = ceil(COLS / B)`` unrolled steps, step ``e`` handling ``j = threadIdx.x + e * B`` when
  ``S <= j < cols`` (consecutive threads: consecutive elements; element ``j`` is always register ``e`` of thread
  ``j % B``, whatever the pass's start);
* the row read in two or more passes is loaded once, in the first pass that reads it, into ``float
  htam_row[PER]`` and read from there afterwards (the registers hold the thread's strided slice of the row); that
  pass loads from the smallest start of the passes that read the row, so a later pass from 0 finds element 0
  (the guarded body has no early return, so that later pass runs: the load reads no element the original does
  not);
* each scalar a pass reduces (the loop's accumulators from the analysis facts: sums starting at 0, max, min, a
  max/min written as a comparison and a choice) is all-reduced over the block after that pass (warp shuffles,
  then one value per warp in shared memory), so every thread holds the row's value as the one thread did before;
  a max/min written ``m = x > m ? x : m`` (or ``if (x > m) m = x;``) is combined with its own comparison, so ties
  and NaN choose as in the one thread;
* memory writes outside the loops run on thread 0; the launch gets one block of ``B`` threads per row.

``COLS`` sizes the register array: the loop bound's value when it is a compile-time constant of the kernel, or
the constant that every launch in the file passes for a runtime width parameter. A launch's value is no contract
on the parameter (another caller may pass any width), so then each pass runs in registers only when ``cols <=
PER * B`` and otherwise as the original pass over a block-strided loop (``j = threadIdx.x; j < cols; j += B``),
reading memory; the kernel stays correct for every width. A runtime width with no constant at all is refused
(the register array needs a size). Float sums are
added in another order. Idea sources: the "one block per row, row in registers" softmax/layernorm kernels of
Apex and llm.c; NVIDIA blog "Faster Parallel Reductions on Kepler" (Luitjens, 2014) for the block all-reduce.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import Accumulator, LoopFact
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import elementwise
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.running_sum import running_sum_refusal
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, Launch, launch_dims_edit, references
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_register_tiling import _param_index
from htam_core.transforms.cuda_tiling import constant_size
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: threads per row (block size) of the candidates
BLOCK = 256
#: most register elements per thread
MAX_PER_THREAD = 32
_OPS = {"sum": "+", "max": "fmaxf", "min": "fminf"}


@dataclass
class RowLoop:
    """A pass over the row: its node, fact, the cached subscripts in it and its constant start index."""

    node: Node
    fact: LoopFact
    cached: list[Node]
    start: int = 0


def _zero(text: str | None) -> bool:
    try:
        return text is not None and float(text.strip().rstrip("fF")) == 0.0
    except ValueError:
        return False


def _all_reduce(acc: Accumulator, k: int, indent: str) -> str:
    """A block all-reduce of the pass's accumulator ``acc`` (warp butterfly, then the warps' values through shared
    memory), the ``k``-th of the kernel; a max/min written as a choice combines with its own comparison
    (:meth:`~htam_core.source.analysis.select.Selection.assign`), the others with ``+``/``fmaxf``/``fminf``."""
    name, typ, op, sel = acc.name, acc.type or "float", _OPS[acc.op], acc.select
    if sel is not None:
        shfl = f"{{ const {typ} htam_v = __shfl_xor_sync(0xffffffffu, {name}, htam_o); {sel.assign(name, 'htam_v')} }}"
        across = sel.assign(name, f"htam_red{k}[htam_w]")
    else:
        comb = (lambda a, b: f"{a} + {b}") if op == "+" else (lambda a, b: f"{op}({a}, {b})")
        shfl = f"{name} = {comb(name, f'__shfl_xor_sync(0xffffffffu, {name}, htam_o)')};"
        across = f"{name} = {comb(name, f'htam_red{k}[htam_w]')};"
    warps = BLOCK // 32
    lines = [
        "{",
        f"    for (int htam_o = 16; htam_o > 0; htam_o >>= 1) {shfl}",
        f"    __shared__ {typ} htam_red{k}[{warps}];",
        f"    if ((threadIdx.x & 31) == 0) htam_red{k}[threadIdx.x >> 5] = {name};",
        "    __syncthreads();",
        f"    {name} = htam_red{k}[0];",
        f"    for (int htam_w = 1; htam_w < {warps}; ++htam_w) {across}",
        "    __syncthreads();",
        "}",
    ]
    return "\n" + "\n".join(indent + ln for ln in lines)


def _row_width(unit: CudaUnit, bound: Node) -> tuple[int, bool] | str:
    """A bound on the row width ``bound`` that sizes the register array, and whether it is the kernel's own.

    Returns ``(value, True)`` when ``bound`` is a compile-time constant of the kernel (a literal, ``#define``,
    ``constexpr``, template argument): every row has that width. Returns ``(value, False)`` when ``bound`` is a
    runtime parameter that every launch in the file passes as the same constant: that value sizes the register
    path only, since other callers may pass any width, and the rewrite keeps a block-strided loop for wider rows.
    A reason string when neither holds.
    """
    c = unit.resolve(bound, unit.func)
    if c is not None and isinstance(c.value, int):
        return c.value, True
    name = unit.t(bound)
    i = _param_index(unit, name)
    vals = set()
    for la in unit.launches:
        if i is None or i >= len(la.site.args):
            vals.add(None)
            continue
        v = unit.env.value_of_text(la.site.args[i], la.call.start_byte)
        vals.add(v if isinstance(v, int) else None)
    if not vals or None in vals or len(vals) != 1:
        return (f"the row width {name} is a runtime value with no compile-time bound (a constant, #define, template "
                "argument or the same constant at every launch); the register cache needs one")
    return vals.pop(), False  # type: ignore[return-value]


def _rows_at(unit: CudaUnit, la: Launch, i: int | None, name: str) -> str | None:
    """The host text of the row count ``name`` at launch ``la``: the argument passed for kernel parameter ``i``,
    or, for a compile-time constant (``i`` is ``None``), its spelling there (:func:`constant_size`)."""
    if i is None:
        return constant_size(unit, la, name)
    return la.site.args[i].strip() if i < len(la.site.args) else None


def _pass_text(rl: RowLoop, inner: str, original: str, width: str, per: int, fixed: bool, indent: str,
               low: int) -> str:
    """The text replacing one pass: ``per`` unrolled steps of ``B`` consecutive elements over ``inner`` (the body
    reading the register slice), element ``j`` in register ``j / B`` of thread ``j % B``, run for ``low <= j <
    width`` (``low``: the pass's start, or the smaller start the loading pass loads from); when the width is not
    fixed (``fixed`` false: a runtime parameter whose launches in the file pass one constant), that path runs only
    for rows of at most ``per * B`` elements and ``original`` (the pass's own body, reading memory) runs over a
    block-strided loop from the pass's start for wider rows, so the kernel stays correct for any width. The guard
    is the same for the whole block, so the all-reduces after it stay safe."""
    var = rl.fact.var
    lower = f"{var} >= {low} && " if low else ""
    fast = (f"#pragma unroll\n{indent}for (int htam_e = 0; htam_e < {per}; ++htam_e) {{\n"
            f"{indent}    const int {var} = threadIdx.x + htam_e * {BLOCK};\n"
            f"{indent}    if ({lower}{var} < {width}) {inner}\n{indent}}}")
    if fixed:
        return fast
    fast = fast.replace(f"\n{indent}", f"\n{indent}    ")
    first = f"{rl.start} + threadIdx.x" if rl.start else "threadIdx.x"
    return (f"if ({width} <= {per * BLOCK}) {{  // the row fits the registers\n{indent}    {fast}\n{indent}}} else {{  "
            f"// a wider row: the same pass, read from memory\n{indent}    for (int {var} = {first}; {var} < {width}; "
            f"{var} += {BLOCK}) {original}\n{indent}}}")


def _pass_start(unit: CudaUnit, lp: LoopFact) -> tuple[Node, int] | str:
    """The loop node and constant start of a pass ``for (j = S; j < cols; ++j)`` (``S`` an integer, 0 or more), or
    why the pass has another form."""
    node = unit.node_at(lp.span, syn.FOR_LOOP)
    if node is None or lp.step != 1 or lp.cmp != "<" or lp.start is None:
        return f"the pass on line {lp.line} is not `for (j = S; j < cols; ++j)`"
    if not lp.start.is_Integer or int(lp.start) < 0:
        return (f"the pass on line {lp.line} starts at `{lp.start}`, not at a constant index (0 or more): its "
                "elements cannot be matched to the registers of the other passes")
    return node, int(lp.start)


def _load_start(loops: list[RowLoop], readers: list[int]) -> int:
    """The first element the loading pass (``readers[0]``, the first pass that reads the cached row) loads: the
    smallest start of the passes in ``readers``, so a later pass that starts before the loading pass finds its first
    elements in registers. Loading them early reads nothing the original does not: the passes are statements of
    the guarded body, which has no early return (:func:`~htam_core.source.analysis.forms.elementwise`), so the
    later pass runs and reads them."""
    return min(loops[k].start for k in readers)


def _nan_note(loops: list[RowLoop]) -> str:
    """The description's note when a pass's max/min lets a NaN candidate replace the running value (``m = m > x ? m :
    x``): the threads meet the elements in another order, so a row holding a NaN may end with another value."""
    nan = [a.name for rl in loops for a in rl.fact.accumulators if a.select is not None and a.select.nan_enters]
    return f"; a row holding a NaN may end with another {', '.join(nan)} (its step lets a NaN in)" if nan else ""


def _reduction_problem(unit: CudaUnit, rl: RowLoop, body: Node, acc: Accumulator) -> str | None:
    """Why the accumulator ``acc`` of pass ``rl`` (loop body ``body``) cannot be all-reduced over the block, or
    ``None``: it must be a sum from 0, a max or a min (:data:`_OPS`), read only by its own update inside the pass."""
    if acc.op not in _OPS:
        return f"the pass on line {rl.fact.line} reduces {acc.name} with {acc.op}"
    if acc.op == "sum" and not _zero(acc.init_text):
        return f"the sum {acc.name} does not start at 0; per-thread partials would count its start {BLOCK} times"
    upd = acc.span
    if any(not (upd[0] <= unit.file_byte(r) < upd[1]) for r in references(body, unit.src, acc.name)):
        return running_sum_refusal(unit, rl.fact.line) or (
            f"the pass on line {rl.fact.line} reads {acc.name} while it reduces into it; a thread holds only a "
            "partial value there")
    return None


@register
class CudaRowInRegisters(CudaTransform):
    """Multi-pass thread-per-row kernel -> one block per row, each thread's slice of the row in registers."""

    id = "cuda.row_in_registers"
    languages = CUDA_LANGS
    summary = "one block per row, the row cached in registers across passes, block all-reduce of the statistics"

    def propose_unit(  # noqa: C901 - one refusal per unmet condition
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate with :data:`BLOCK` threads per row."""
        ew = elementwise(unit)
        if isinstance(ew, str):
            return self.not_applicable(f"not a thread-per-row kernel: {ew}")
        f = unit.facts
        rows = list(f.row_passes())
        if len(rows) < 2:
            return self.not_applicable(f"{kernel.name} does not walk its row in two or more passes")
        if len(rows) != len(f.loops):
            return self.not_applicable("a loop of the kernel is not a pass over the row")
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; its grid must change")
        loops: list[RowLoop] = []
        bound_node = None
        for lp in rows:
            head = _pass_start(unit, lp)
            if isinstance(head, str):
                return self.not_applicable(head)
            node = head[0]
            cond = syn.unwrap_parens(node.child_by_field_name("condition"))
            bn = cond.child_by_field_name("right")
            if bound_node is not None and unit.t(bn) != unit.t(bound_node):
                return self.not_applicable("the passes do not share one row width")
            bound_node = bn
            loops.append(RowLoop(node, lp, [], head[1]))
        found = _row_width(unit, bound_node)  # type: ignore[arg-type]
        if isinstance(found, str):
            return self.not_applicable(found)
        width, fixed = found
        per = -(-width // BLOCK)
        if per > MAX_PER_THREAD:
            return self.not_applicable(f"a row of {width} elements needs {per} registers per thread at {BLOCK} threads "
                                       f"(more than {MAX_PER_THREAD})")
        # the row read in several passes: the same pointer and index (stride 1 in the pass variable)
        reads: dict[tuple[str, str], list[tuple[int, Node]]] = {}
        for k, rl in enumerate(loops):
            var = rl.fact.var
            for a in f.accesses_in(rl.fact):
                if a.space != "global" or a.kind != "read" or a.stride(var) != 1:  # type: ignore[arg-type]
                    continue
                sub = unit.node_at(a.span, syn.SUBSCRIPT)
                if sub is not None:
                    key = (unit.t(sub.child_by_field_name("argument")), unit.t(sub.child_by_field_name("indices")))
                    reads.setdefault(key, []).append((k, sub))
        cached_key = max((key for key, v in reads.items() if len({k for k, _ in v}) >= 2),
                         key=lambda key: len(reads[key]), default=None)
        if cached_key is None:
            return self.not_applicable("no row is read in two passes with the same index; nothing to keep in registers")
        pointer = next(a.pointer for a in f.accesses if a.space == "global" and unit.node_at(a.span) is not None
                       and any(unit.node_at(a.span) == s for _, s in reads[cached_key]))
        pf = f.pointer(pointer)
        if pf is None or pf.writes or pf.mode == "unknown":
            return self.not_applicable(f"{pointer} is written or escapes in the kernel; its values cannot be cached")
        for k, sub in reads[cached_key]:
            loops[k].cached.append(sub)
        etype = pf.element_type or "float"
        low = _load_start(loops, sorted({k for k, _ in reads[cached_key]}))
        # accumulators: sum from 0, max, min; read only at their update inside the pass
        edits: list[TextEdit] = []
        reduced: list[str] = []
        first_load = min(k for k, _ in reads[cached_key])
        for k, rl in enumerate(loops):
            body = rl.node.child_by_field_name("body")
            why = next((w for acc in rl.fact.accumulators if (w := _reduction_problem(unit, rl, body, acc))), None)
            if why:
                return self.not_applicable(why)
            for n in syn.writes(body):
                t = n.child_by_field_name("left") or n.child_by_field_name("argument")
                t = syn.unwrap_parens(t) if t is not None else None
                if t is not None and syn.is_identifier(t) and unit.t(t) not in {a.name for a in rl.fact.accumulators}:
                    declared = any(unit.t(d.child_by_field_name("declarator") or d) == unit.t(t)
                                   for d in syn.init_declarators(body))
                    if not declared:
                        return self.not_applicable(f"the pass on line {rl.fact.line} writes {unit.t(t)}, which is "
                                                   "not one of its reductions")
            text = bytearray(unit.src[body.start_byte : body.end_byte])
            for sub in sorted(rl.cached, key=lambda s: -s.start_byte):
                text[sub.start_byte - body.start_byte : sub.end_byte - body.start_byte] = b"htam_row[htam_e]"
            inner = text.decode()
            if not syn.is_block(body):
                inner = "{ " + inner + " }"
            if k == first_load:
                own = f"if ({rl.fact.var} >= {rl.start}) " if rl.start > low else ""
                inner = "{ htam_row[htam_e] = " + f"{cached_key[0]}{cached_key[1]}; {own}" + inner + " }"
            indent = syn.indent_of(unit.src, rl.node.start_byte)
            new = _pass_text(rl, inner, unit.t(body), unit.t(bound_node), per, fixed, indent,
                             low if k == first_load else rl.start)
            for i, acc in enumerate(rl.fact.accumulators):
                new += _all_reduce(acc, len(reduced) + i, indent)
            reduced += [acc.name for acc in rl.fact.accumulators]
            edits.append(unit.replace(rl.node, new))
        # writes outside the passes run once per row
        in_loops = [lp.span for lp in rows]
        for s in ew.stmts:
            if any(sp[0] <= unit.file_byte(s) < sp[1] for sp in in_loops) or syn.is_for(s):
                continue
            writes = [a for a in f.accesses if a.space == "global" and a.kind != "read"
                      and unit.file_byte(s) <= a.span[0] < s.end_byte + unit.base]
            if writes:
                if syn.is_declaration(s):
                    return self.not_applicable(f"`{unit.t(s)}` both declares a variable and writes memory")
                edits.append(unit.replace(s, f"if (threadIdx.x == 0) {{ {unit.t(s)} }}"))
        decl_indent = syn.indent_of(unit.src, ew.decl.start_byte)
        edits.append(unit.replace(ew.gid, "blockIdx.x"))
        edits.append(unit.insert(ew.decl.start_byte, f"{etype} htam_row[{per}];\n{decl_indent}"))
        rows_i = _param_index(unit, unit.t(ew.bound))
        for la in unit.launches:
            if (rows_at := _rows_at(unit, la, rows_i, unit.t(ew.bound))) is None or la.block is None:
                return self.not_applicable(f"the row count {unit.t(ew.bound)} is neither a kernel parameter passed "
                                           f"at line {la.site.line} nor a compile-time constant")
            if len(unit.dims_of(la.grid, la.host)) != 1:
                return self.not_applicable(f"the grid on line {la.site.line} is not 1-D")
            edits.append(launch_dims_edit(unit, la, la.grid, [rows_at]))
            edits.append(launch_dims_edit(unit, la, la.block, [str(BLOCK)]))
        return [self.candidate(
            model,
            f"one block of {BLOCK} threads per row of {kernel.name}: each thread keeps {per} elements of "
            f"{cached_key[0]} in registers across the {len(loops)} passes, block all-reduce of "
            f"{', '.join(reduced) or 'nothing'} (float sums change order)"
            + ("" if fixed else f"; a row wider than {per * BLOCK} runs each pass from memory") + _nan_note(loops),
            {"block": BLOCK, "per_thread": per, "cached": cached_key[0], "reduced": reduced, "row_width": width,
             "wider_rows_loop": not fixed},
            edits,
        )]
