"""Several elements per thread before a block reduction (``cuda.coarsen_reduction``).

A block reduction that loads one element per thread into shared memory::

    sdata[tid] = (i < n) ? in[i] : 0.0f;      // i = blockIdx.x * blockDim.x + threadIdx.x
    __syncthreads();
    ... shared-memory (or warp) tree over sdata ...

becomes a grid-stride accumulation into a register, then the same tree::

    float htam_v = 0.0f;
    for (unsigned int htam_j = i; htam_j < n; htam_j += blockDim.x * gridDim.x) htam_v += in[htam_j];
    sdata[tid] = htam_v;

and the launch gets ``F`` times fewer blocks. The grid-stride loop covers every element exactly once for any
grid, so the result is the same combination of the inputs (float sums in another order). Where the kernel
writes one partial result per block (``partial[blockIdx.x]``), the number of partials changes with the grid:
the block count is then changed where the host declares it (``unsigned int blocks = ...``), so that the host's
other uses of that count (``n = blocks`` before the next pass, a buffer size) follow. A grid written inline at
the launch with a per-block output is refused. The load, its bound, the shared array and the combine are read
from the analysis facts (the shared write, the global read with stride 1 along ``threadIdx.x`` and
``blockDim.x`` along ``blockIdx.x``, the tree loop's update of the array).

Idea source: M. Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007), kernel 7 (multiple elements
per thread, "algorithm cascading"); CUDA C++ Best Practices Guide, grid-stride loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import Access, sym
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    per_block_output_hazard,
    statement_list,
    strip_casts,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_reduction import COMBINE_FUNCS, element_type
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: elements per thread of the candidates
FACTORS = (8, 4)


@dataclass
class BlockLoad:
    """The one-element-per-thread load ``array[slot] = (idx < bound) ? src[idx] : identity;`` of a block reduction."""

    stmt: Node
    array: str
    slot: str
    index: str
    bound: str
    src: str
    identity: str
    etype: str
    itype: str
    combine: str


def _cond_less(unit: CudaUnit, cond: Node) -> tuple[str, str] | None:
    c = strip_casts(syn.unwrap_parens(cond))
    if not syn.is_binary(c) or unit.t(c.child_by_field_name("operator")) != "<":
        return None
    left = strip_casts(c.child_by_field_name("left"))
    if not syn.is_identifier(left):
        return None
    return unit.t(left), unit.t(c.child_by_field_name("right"))


def _combine_of(unit: CudaUnit, array: str, after: list[Node]) -> str | None:
    """``"+"`` or a :data:`COMBINE_FUNCS` name: how the tree loop after the load combines ``array``'s entries
    (``a[t] += a[t + s]``, ``a[t] = a[t] + a[t + s]``, ``a[t] = fmaxf(a[t], a[t + s])``)."""
    facts = unit.facts
    for st in after:
        if not syn.is_loop(st):
            continue
        loop = facts.loop_at(unit.file_byte(st))
        if loop is None:
            continue
        writes = [a for a in facts.accesses_in(loop) if a.pointer == array and a.kind in ("write", "readwrite")]
        for w in writes:
            node = unit.node_at(w.span)
            asg = node.parent if node is not None else None
            if asg is None or not syn.is_assignment(asg):
                continue
            op = unit.t(asg.child_by_field_name("operator"))
            right = syn.unwrap_parens(asg.child_by_field_name("right"))
            if op == "+=":
                return "+"
            if op == "=" and syn.is_binary(right) and unit.t(right.child_by_field_name("operator")) == "+":
                return "+"
            if op == "=" and syn.is_call(right) and unit.t(right.child_by_field_name("function")) in (
                    COMBINE_FUNCS):
                return unit.t(right.child_by_field_name("function"))
        return None
    return None


def match_block_load(unit: CudaUnit) -> BlockLoad | str:
    """The kernel's one-element load before its block tree, or why there is none."""
    facts = unit.facts
    stmts = statement_list(unit.body)
    for k, st in enumerate(stmts):
        if not syn.is_expression_statement(st) or not st.named_children:
            continue
        asg = st.named_children[0]
        if not syn.is_assignment(asg) or unit.t(asg.child_by_field_name("operator")) != "=":
            continue
        left, right = asg.child_by_field_name("left"), syn.unwrap_parens(asg.child_by_field_name("right"))
        wr = _access_at(unit, left)
        if wr is None or wr.space != "shared" or not syn.is_conditional(right):
            continue
        gate = _cond_less(unit, right.child_by_field_name("condition"))
        rd = _access_at(unit, strip_casts(syn.unwrap_parens(right.child_by_field_name("consequence"))))
        if gate is None or rd is None or rd.space != "global" or rd.kind != "read":
            continue
        var, bound = gate
        tix = next((t for t in facts.thread_indices if t.name == var), None)
        if tix is None or not tix.is_global or tix.dims != ("x",):
            return f"the load's index {var} is not the global thread index along x"
        if rd.stride("threadIdx.x") != 1 or rd.stride("blockIdx.x") in (None, 0) or rd.index_text != var:
            return f"the load `{unit.t(right.child_by_field_name('consequence'))}` is not src[{var}]"
        per_block = rd.stride("blockIdx.x")
        threads = {la.threads for la in facts.launches}
        if per_block != sym("blockDim.x") and not (per_block is not None and per_block.is_Integer
                                                  and threads == {int(per_block)}):
            return (f"{var} advances {per_block} per block, not the block size of every launch; a grid-stride "
                    "loop would skip or repeat elements")
        combine = _combine_of(unit, wr.pointer, stmts[k + 1:])
        if combine is None:
            return f"no tree loop after the load combines {wr.pointer} with + or {'/'.join(COMBINE_FUNCS)}"
        if any(lp.grid_stride for lp in facts.loops):
            return "the kernel already has a grid-stride loop"
        etype = element_type(unit, wr.pointer)
        if etype is None:
            return f"the element type of {wr.pointer} is not declared in the kernel"
        load = syn.unwrap_parens(right.child_by_field_name("consequence"))
        src = unit.t(strip_casts(load).child_by_field_name("argument"))
        return BlockLoad(st, wr.pointer, wr.index_text, var, bound, src, unit.t(right.child_by_field_name("alternative")),
                         etype, tix.type.replace("const", "").strip(), combine)
    if any(lp.grid_stride or (lp.strides_threads and lp.accumulators) for lp in facts.loops):
        return "each thread already accumulates several elements (a strided loop) before the tree"
    return "no `shared[tid] = (i < n) ? in[i] : identity;` load before a block tree"


def _access_at(unit: CudaUnit, node: Node | None) -> Access | None:
    if node is None:
        return None
    span = (unit.file_byte(node), node.end_byte + unit.base)
    return next((a for a in unit.facts.accesses if a.span == span), None)


def _per_block_output(unit: CudaUnit) -> bool:
    """True when the kernel writes one partial result per block (:meth:`KernelFacts.per_block_outputs`)."""
    return bool(unit.facts.per_block_outputs())


def _count_edit(unit: CudaUnit, launch: Launch, name: str, factor: int, per_block: bool, depth: int = 0
                ) -> TextEdit | str | None:
    """The edit dividing the block count held by the host variable ``name`` by ``factor`` where it is declared
    (``int blocks = ...;`` or the one component of ``dim3 grid(blocks, 1, 1)``, followed one level to ``blocks``
    for a per-block output), ``None`` when ``name`` is not a local declared once, or why it cannot."""
    line = launch.site.line
    inits = unit.local_inits(launch.host, name) if launch.host is not None else []
    if len(inits) != 1 or unit.assigned_in(launch.host, name):
        if not per_block:
            return None
        if not inits:
            return (f"the block count {name} on line {line} comes from the caller, and the kernel writes one result "
                    f"per block: the caller reads {name} results, so the grid cannot shrink here")
        return (f"the block count {name} on line {line} is assigned more than once; the host's count of per-block "
                "results could not follow")
    init = inits[0]
    if syn.is_brace_or_call_list(init):  # dim3 grid(blocks, 1, 1): the one non-1 component
        if not init.named_children:
            return f"the grid {name} on line {line} is not 1-D"
        init = init.named_children[0]
        inner = syn.unwrap_parens(init)
        if per_block and depth == 0 and unit.t(inner).isidentifier():  # a name: follow it to its declaration
            found = _count_edit(unit, launch, unit.t(inner), factor, per_block, depth + 1)
            if found is not None:
                return found
    return unit.replace(init, f"(({unit.t(init)}) + {factor - 1}) / {factor}")


def _grid_edit(unit: CudaUnit, launch: Launch, factor: int, per_block: bool) -> TextEdit | str:
    """The edit giving ``launch`` ``factor`` times fewer blocks, or why it cannot (:func:`_grid_count_edit`); with
    per-block outputs, only where the host keeps their contract (:func:`per_block_output_hazard` with ``shrink``:
    the host reads the partials with the count, or allocates them with it)."""
    e = _grid_count_edit(unit, launch, factor, per_block)
    if isinstance(e, TextEdit) and per_block and (why := per_block_output_hazard(unit, launch, shrink=True)):
        return why  # the caller reads its own count of partials: fewer blocks would leave some unwritten
    return e


def _grid_count_edit(unit: CudaUnit, launch: Launch, factor: int, per_block: bool) -> TextEdit | str:
    """The edit giving ``launch`` ``factor`` times fewer blocks (rounded up), or why it cannot. Where the kernel
    writes one result per block (its output contract), the count is changed where the host declares it, so the
    host's other uses follow; a count the caller passes in (a launcher parameter) is refused, since the caller
    reads that many results."""
    dims = unit.dims_of(launch.grid, launch.host)
    if len(dims) != 1:
        return f"the grid on line {launch.site.line} is not 1-D"
    g = syn.unwrap_parens(launch.grid)
    if syn.is_identifier(g) and launch.host is not None:
        found = _count_edit(unit, launch, unit.t(g), factor, per_block)
        if found is not None:
            return found
    if per_block:
        return (f"the grid on line {launch.site.line} is an expression at the launch, and the kernel writes one "
                "result per block: put the block count in a variable the host also uses")
    return unit.replace(launch.grid, f"(({unit.t(launch.grid)}) + {factor - 1}) / {factor}")


@register
class CudaCoarsenReduction(CudaTransform):
    """One-element-per-thread block reduction -> grid-stride register accumulation, ``F`` times fewer blocks."""

    id = "cuda.coarsen_reduction"
    languages = CUDA_LANGS
    summary = "accumulate several elements per thread (grid-stride) before the block reduction; fewer blocks"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate per factor of :data:`FACTORS` (8 and 4 elements per thread)."""
        m = match_block_load(unit)
        if isinstance(m, str):
            return self.not_applicable(m)
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; the grid cannot shrink")
        per_block = _per_block_output(unit)
        acc = "htam_v"
        update = f"{acc} += {m.src}[htam_j];" if m.combine == "+" else f"{acc} = {m.combine}({acc}, {m.src}[htam_j]);"
        indent = syn.indent_of(unit.src, m.stmt.start_byte)
        body = (f"{m.etype} {acc} = {m.identity};\n"
                f"{indent}for ({m.itype} htam_j = {m.index}; htam_j < {m.bound}; htam_j += blockDim.x * gridDim.x)\n"
                f"{indent}    {update}\n"
                f"{indent}{m.array}[{m.slot}] = {acc};")
        out: list[Candidate] = []
        reasons: list[str] = []
        for f in FACTORS:
            edits: list[TextEdit] = [unit.replace(m.stmt, body)]
            for la in unit.launches:
                e = _grid_edit(unit, la, f, per_block)
                if isinstance(e, str):
                    reasons.append(e)
                    break
                edits.append(e)
            else:
                out.append(self.candidate(
                    model,
                    f"accumulate about {f} elements per thread of {kernel.name} in a register (grid-stride) before "
                    f"the {m.array} tree, with {f}x fewer blocks" + (" (the host's block count follows)" if per_block
                                                                     else ""),
                    {"elements_per_thread": f, "combine": m.combine, "per_block_output": per_block},
                    edits,
                ))
        if not out:
            return self.not_applicable(reasons[0])
        return out
