"""Several elements per thread before a block reduction (``cuda.coarsen_reduction``).

A block reduction that loads one element per thread into shared memory::

    sdata[tid] = (i < n) ? in[i] : 0.0f;      // i = blockIdx.x * blockDim.x + threadIdx.x
    __syncthreads();
    ... shared-memory (or warp) tree over sdata ...

becomes a grid-stride accumulation into a register, then the same tree::

    float htam_v = 0.0f;
    for (long long htam_j = i; htam_j < n; htam_j += (long long)blockDim.x * gridDim.x) htam_v += in[htam_j];
    sdata[tid] = htam_v;

and the launch gets ``F`` times fewer blocks. The grid-stride loop covers every element exactly once for any
grid, so the result is the same combination of the inputs (float sums in another order). Where the kernel
writes one partial result per block (``partial[blockIdx.x]``), the number of partials changes with the grid:
the block count is then changed where the host declares it (``unsigned int blocks = ...``), so that the host's
other uses of that count (``n = blocks`` before the next pass, a buffer size) follow. A grid written inline at
the launch with a per-block output is refused. Where the block's result goes to one atomic total instead (the
grid is free: :mod:`~htam_core.transforms.cuda_coarsen_grid`), the loop runs over a grid sized to the device, and a
whole-block tree with its atomic becomes a warp-shuffle block combine with one atomic per block, in the same step. The load is the analysis layer's guarded block load
(:func:`~htam_core.source.analysis.block_load.guarded_block_load`), in any of its spellings: the conditional above,
a register zeroed and loaded under ``if (i < n)``, an ``if``/``else`` store, the identity stored and then
overwritten in range; its statements are replaced by the accumulation and the one store. A kernel that reads the
load's register or index after the store (per-element work after the tree) is refused: with fewer blocks, the
elements past the new grid would not reach that code. Other guard terms (``i < n && i % 2 == 0``) guard
each element of the loop. The combine is read from the tree loop's update of the array; a sum whose value past the
bound is not zero (``constants.is_zero_value``) is refused, since each thread would add it once. A slot that
receives a per-element expression (``sdata[tid] = v * v;``, ``(i < n) ? a[i] * b[i] : 0.0f``) accumulates that
expression of each element; the accumulator still starts at the identity, so a function of the register that does
not keep the identity past the bound (``v + 1.0f``) is refused.

Idea source: M. Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007), kernel 7 (multiple elements
per thread, "algorithm cascading"); CUDA C++ Best Practices Guide, grid-stride loops.
"""

from __future__ import annotations

import dataclasses
import re

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis import sym
from htam_core.source.analysis.block_load import NO_LOAD, guarded_block_load
from htam_core.source.analysis.constants import is_zero_value
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import initializer_effect_free
from htam_core.source.analysis.types import TypeEnv
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    dead_local_edits,
    include_insert_point,
    per_block_output_hazard,
    statement_list,
    wrap_grid,
)
from htam_core.transforms._grid_loop import own_loop
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_atomic_privatize import ACC
from htam_core.transforms.cuda_coarsen_grid import (
    PER_SM,
    BlockLoad,
    GridFree,
    grid_free,
    rung_text,
    several_arrays,
    tree_combines,
)
from htam_core.transforms.cuda_launch import CUDA_LANGS, SM_GRID_HELPER, SM_GRID_TEXT
from htam_core.transforms.cuda_reduction import COMBINE_FUNCS, element_type
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: elements per thread of the candidates
FACTORS = (8, 4)
#: Element types whose sums are exact in any order.
_EXACT = frozenset({"int", "unsigned", "unsigned int", "long long", "unsigned long long"})


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
    """The kernel's one-element load before its block tree (the analysis layer's guarded block load, in any
    spelling), or why there is none or why it cannot become a grid-stride accumulation."""
    facts = unit.facts
    m = guarded_block_load(unit)
    if isinstance(m, str):
        if m == NO_LOAD and any(lp.grid_stride or (lp.strides_threads and lp.accumulators) for lp in facts.loops):
            return "each thread already accumulates several elements (a strided loop) before the tree"
        return m
    stmts = statement_list(unit.body)
    why = several_arrays(unit, stmts[stmts.index(m.store) + 1:])
    if why:
        return why
    if m.register_read_after or m.index_read_after:
        name = m.register if m.register_read_after else m.index
        return (f"{name} is read after the load into {m.array}: with several elements per thread and fewer "
                "blocks it would stand for the thread's first element only")
    per_block = m.load.stride("blockIdx.x")
    threads = {la.threads for la in facts.launches}
    if per_block != sym("blockDim.x") and not (per_block is not None and per_block.is_Integer
                                              and threads == {int(per_block)}):
        return (f"{m.index} advances {per_block} per block, not the block size of every launch; a grid-stride "
                "loop would skip or repeat elements")
    combine = _combine_of(unit, m.array, stmts[stmts.index(m.store) + 1:])
    combs = tree_combines(unit, stmts[stmts.index(m.store) + 1:]) if combine is None else []
    select = combs[0].select if len(combs) == 1 and combs[0].array == m.array else None
    combine = combs[0].op if select is not None else combine
    if combine is None:
        return f"no tree loop after the load combines {m.array} with + or {'/'.join(COMBINE_FUNCS)}"
    if not m.identity_kept:
        return (f"past the bound the slot receives `{m.stored_at(m.identity)}`, not the identity `{m.identity}`: "
                "each thread would combine it once, where the kernel combines it once per slot past the bound")
    if combine == "+" and not is_zero_value(m.identity):
        return (f"the value past the bound, `{m.identity}`, is not read as zero: each thread would add it once, "
                "where the kernel adds it once per slot past the bound")
    if any(lp.grid_stride for lp in facts.loops):
        return "the kernel already has a grid-stride loop"
    etype = element_type(unit, m.array)
    if etype is None:
        return f"the element type of {m.array} is not declared in the kernel"
    tix = next(t for t in facts.thread_indices if t.name == m.index)
    return BlockLoad(m, etype, tix.type.replace("const", "").strip(), combine, select)


def _accumulation(unit: CudaUnit, m: BlockLoad) -> TextEdit:
    """The edit replacing the load's statements with the grid-stride accumulation into ``htam_v`` and the one
    store ``array[slot] = htam_v;``."""
    f = m.form
    indent = syn.indent_of(unit.src, f.stmts[0].start_byte)
    body = _accumulation_text(unit.types, m, "htam_v", indent) + f"\n{indent}{f.array}[{f.slot}] = htam_v;"
    return unit.edit(f.stmts[0].start_byte, f.store.end_byte, body)


def _accumulation_text(types: TypeEnv, m: BlockLoad, acc: str, indent: str) -> str:
    """The declaration of the register ``acc`` at the identity and the grid-stride loop that accumulates every
    element of the thread into it (the lines after the first indented with ``indent``). Each element is loaded as
    written (casts kept), and converted to the load's register type where that differs from the array's. The loop
    counts in 64 bits unless the index is already that wide (:func:`~htam_core.transforms._grid_loop.own_loop`, with
    the unit's ``types``): a 32-bit counter would wrap past the top of its type where the kernel was right."""
    f = m.form
    value = f.value_at("htam_j")
    if f.register_type is not None and f.register_type != m.etype:  # the value went through a register of its type
        value = f"({f.register_type})({value})"
    value = f.stored_at(value)  # the per-element expression the slot received (`v * v`), of each element
    update = f"{acc} += {value};" if m.combine == "+" else f"{acc} = {m.combine}({acc}, {value});"
    if m.select is not None:  # the tree's own comparison and choice (a NaN is kept or dropped as there)
        update = f"{acc} = {m.select.combine(acc, value)};"
    if f.extra:
        update = f"if ({f.extra_at('htam_j')}) {update}"
    return (f"{m.etype} {acc} = {f.identity};\n"
            f"{indent}{own_loop(types, 'htam_j', m.itype, f.index, f.bound)}\n"
            f"{indent}    {update}")


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
        gf = grid_free(unit, m)
        if isinstance(gf, GridFree):
            return self._grid_free(unit, model, kernel, m, gf)
        per_block = _per_block_output(unit)
        load = _accumulation(unit, m)
        out: list[Candidate] = []
        reasons: list[str] = []
        for f in FACTORS:
            edits: list[TextEdit] = [load]
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
                    f"the {m.form.array} tree, with {f}x fewer blocks" + (" (the host's block count follows)" if per_block
                                                                     else ""),
                    {"elements_per_thread": f, "combine": m.combine, "per_block_output": per_block},
                    edits,
                ))
        if not out:
            return self.not_applicable(reasons[0])
        return out

    def _grid_free(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, m: BlockLoad, gf: GridFree
                   ) -> list[Candidate] | NotApplicable:
        """One candidate per :data:`~htam_core.transforms.cuda_coarsen_grid.PER_SM` for a tree whose result goes to
        one grid-wide atomic: the grid-stride accumulation over a grid of at most that many blocks per SM, and,
        when :func:`~htam_core.transforms.cuda_coarsen_grid.grid_free` allows it, the block combine with one
        atomic in place of the tree (else the tree is kept)."""
        f = m.form
        indent = syn.indent_of(unit.src, f.stmts[0].start_byte)
        if gf.kept:
            body = [_accumulation(unit, m)]
        else:
            text = _accumulation_text(unit.types, m, ACC, indent) + rung_text(unit, gf, indent)
            span = (f.stmts[0].start_byte, gf.finish.end_byte)
            body = [unit.edit(*span, text), *_unread_declarations(unit, span, text)]
        helper = [] if SM_GRID_HELPER.encode() in unit.src else [unit.insert(include_insert_point(unit), SM_GRID_TEXT)]
        out: list[Candidate] = []
        for per_sm in PER_SM:
            grids = [wrap_grid(unit, la, f"{SM_GRID_HELPER}({{}}, {per_sm})") for la in unit.launches]
            bad = next((g for g in grids if isinstance(g, str)), None)
            if bad is not None:
                return self.not_applicable(bad)
            cand = dataclasses.replace(self.candidate(
                model, self._grid_free_text(kernel, m, gf, per_sm),
                {"grid": "device", "blocks_per_sm": per_sm, "combine": m.combine, "per_block_output": False,
                 "form": "tree" if gf.kept else "block_combine"},
                [*helper, *body, *grids]), helpers={SM_GRID_HELPER: SM_GRID_TEXT})
            cand.changes_numerics = cand.reorders_only = m.combine == "+" and unit.types.resolve(m.etype) not in _EXACT
            out.append(cand)
        return out

    @staticmethod
    def _grid_free_text(kernel: Kernel, m: BlockLoad, gf: GridFree, per_sm: int) -> str:
        """The candidate's sentence: the grid-stride accumulation, the device-sized grid, the block's combine."""
        fn, addr = gf.result.update.fn, gf.result.address_text
        head = (f"accumulate the elements of {kernel.name} in a register with a grid-stride loop over a grid of at "
                f"most {per_sm} blocks per SM (read on the device at run time; correct for any n: the {fn} into "
                f"{addr} totals the blocks whatever their number)")
        if gf.kept:
            return head + f", then the {m.form.array} tree as before (kept: {gf.kept})"
        return head + (f", then combine the block with warp shuffles (one value per warp in shared memory, the "
                       f"first warp finishes) and send one {fn} per block in place of the {m.form.array} tree")


def _unread_declarations(unit: CudaUnit, span: tuple[int, int], text: str) -> list[TextEdit]:
    """Edits deleting the top-level declarations before the replaced code (kernel-relative bytes ``span``) of the
    locals only that code read and its replacement ``text`` does not (the tree's shared array, its accessor's
    view, ``tid``, the block's ``cta`` handle), when their initializers have no effect
    (:func:`~htam_core.source.analysis.syntax.initializer_effect_free`); the shared names stay declared otherwise.
    Raises nothing."""
    words = set(re.findall(r"[A-Za-z_]\w*", re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)))
    shared = {a.pointer for a in unit.facts.accesses if a.space == "shared"}  # `T *s = SharedMemory<T>();` too
    names: list[str] = []
    for decl in syn.declarations(unit.body):
        if decl.parent != unit.body or decl.end_byte > span[0]:
            continue
        for d in decl.children_by_field_name("declarator"):
            ident = syn.declared_identifier(d)
            if ident is not None and unit.t(ident) not in words and (
                    unit.t(ident) in shared or initializer_effect_free(d)):
                names.append(unit.t(ident))
    return dead_local_edits(unit, tuple(names), [(span[0] + unit.base, span[1] + unit.base)])
