"""The grid-free form of ``cuda.coarsen_reduction``: a block tree whose result is combined atomically into one total.

A block reduction that sends its result to one address of the whole grid::

    sdata[tid] = (i < n) ? in[i] * in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) { if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
                                                     __syncthreads(); }
    if (tid == 0) atomicAdd(out, sdata[0]);

computes a total that does not depend on how the elements are split among the blocks (the analysis layer's
:meth:`~htam_core.source.analysis.KernelFacts.grid_free_result`: the atomic is the kernel's only global output, and
here the tree combines with the atomic's own operation and sends ``sdata[0]`` from thread 0). The grid is then
free: the add during the load becomes a grid-stride loop over a grid sized to the device (``htam_sm_grid(blocks,
per_sm)``: at most ``per_sm`` blocks per SM, read on the device at run time), correct for any ``n``. When the tree is
one whole-block tree (interleaved or sequential addressing, in the spellings :func:`~htam_core.transforms.
cuda_reduction.match_tree` and the warp finish read) the step makes the whole rung at once::

    float htam_acc = 0.0f;
    for (long long htam_j = i; htam_j < n; htam_j += (long long)blockDim.x * gridDim.x) htam_acc += in[htam_j] * in[htam_j];
    { ...warp shuffles, one value per warp in shared memory, the first warp finishes, one atomicAdd per block... }

with the block combine of ``cuda.privatize_atomic`` (block-size generic). Otherwise (the tree already rewritten, a
block-size mismatch, a type that combine does not take) the tree is kept and only the accumulation and the grid
change. A kernel that writes one partial per block is not grid-free: its grid keeps the rules of
:mod:`~htam_core.transforms.cuda_coarsen`.

Idea source: NVIDIA developer blog, "Faster Parallel Reductions on Kepler" (Luitjens, 2014: a grid-stride sum over
a grid sized to the SMs, warp shuffles, one atomic per block); "CUDA Pro Tip: Write Flexible Kernels with
Grid-Stride Loops"; M. Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007), kernel 7.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.block_load import GuardedLoad
from htam_core.source.analysis.facts import UniformAtomic
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.select import Selection
from htam_core.source.analysis.types import resolve_type
from htam_core.transforms._cuda import CudaUnit, references, statement_list
from htam_core.transforms.cuda_atomic_privatize import ACC, PART, block_combine, identity
from htam_core.transforms.cuda_reduction import (
    THREAD_X,
    Combine,
    _binary,
    _is_int,
    _is_sync,
    _launch_problem,
    _operand,
    match_tree,
)
from htam_core.transforms.cuda_warp_reduce import _sequential

#: Blocks per SM of the device-sized grid, first candidate first (the rung's form writes 4).
PER_SM = (4, 8)
#: The atomic operation each tree combine agrees with.
OPS: dict[str, str] = {"+": "add", "max": "max", "fmaxf": "max", "fmax": "max", "min": "min", "fminf": "min",
                       "fmin": "min"}


@dataclass
class BlockLoad:
    """The guarded block load of a reduction (:class:`~htam_core.source.analysis.block_load.GuardedLoad`, any
    spelling) with what the rewrite adds: the register type ``etype`` (the shared array's element type), the loop
    index type ``itype`` (the global index's declared type) and the tree's ``combine`` (``"+"`` or a
    :data:`COMBINE_FUNCS` name, or ``"max"``/``"min"`` with ``select``, the comparison and choice the tree's combine
    is written as: the accumulation then chooses with it)."""

    form: GuardedLoad
    etype: str
    itype: str
    combine: str
    select: Selection | None = None


@dataclass
class GridFree:
    """A block tree whose result is sent to one grid-wide total, so the grid is free.

    Attributes:
        result: the atomic that sends the block's result (:class:`~htam_core.source.analysis.facts.UniformAtomic`).
        finish: the kernel body's statement that holds it (``if (tid == 0) atomicAdd(out, sdata[0]);``).
        ident: the identity of the block combine (:func:`~htam_core.transforms.cuda_atomic_privatize.identity`),
            ``None`` when the whole rung is not made.
        kept: why the tree is kept (the accumulation and grid only), ``""`` when the whole rung is made.
    """

    result: UniformAtomic
    finish: Node
    ident: str | None
    kept: str


def same_type(unit: CudaUnit, m: BlockLoad, res: UniformAtomic) -> bool:
    """The tree's array and the atomic's element hold the same type, aliases resolved (``acc_t`` and ``float``
    under ``using acc_t = float;``; a template parameter only as itself)."""
    return resolve_type(unit.env, m.etype) == resolve_type(unit.env, res.element_type)


def _finish_statement(unit: CudaUnit, res: UniformAtomic, after: list[Node]) -> Node | None:
    """The statement of ``after`` (the body's statements after the load) that is ``if (T == 0) atomic(...);`` with
    ``T`` the thread's index along x in any spelling and the atomic its only statement, else ``None``."""
    span = res.update.statement
    for st in after:
        if span is None or not syn.is_if(st) or st.child_by_field_name("alternative") is not None:
            continue
        cons = st.child_by_field_name("consequence")
        inner = statement_list(cons) if cons is not None and syn.is_block(cons) else [cons]
        if len(inner) != 1 or inner[0] is None or unit.file_byte(inner[0]) != span[0]:
            continue
        clause = st.child_by_field_name("condition")
        cond = clause.child_by_field_name("value") if clause is not None else None
        eq = _binary(unit, syn.unwrap_parens(cond), ("==",)) if cond is not None else None
        if eq is None:
            return None
        _, a, b = eq
        zero, other = (a, b) if _is_int(unit, a, 0) else (b, a)
        return st if _is_int(unit, zero, 0) and _operand(unit, other) == THREAD_X else None
    return None


def grid_free(unit: CudaUnit, m: BlockLoad) -> GridFree | str:
    """The grid-free form of the block load ``m``'s reduction, or why its grid is not free (the caller then keeps
    the fixed factors). Grid-free: the kernel's only global output is one atomic into a grid-wide address
    (:meth:`~htam_core.source.analysis.KernelFacts.grid_free_result`) with the tree's operation, of the tree's
    ``array[0]``, by thread 0 of each block."""
    res = unit.facts.grid_free_result()
    if res is None:
        return "the kernel's output is not one atomic into a grid-wide address"
    if OPS.get(m.combine) != res.op:
        return f"the tree combines with {m.combine} but the block's result goes to {res.update.fn}"
    value = unit.node_at(res.value_span)
    bare = syn.strip_casts(value) if value is not None else None
    if bare is None or unit.t(bare).replace(" ", "") != f"{m.form.array}[0]" or (
            bare != syn.unwrap_parens(value) and not same_type(unit, m, res)):  # type: ignore[arg-type]
        return (f"the block sends `{unit.t(value) if value else '?'}`, not the tree's {m.form.array}[0] "
                f"(converted to the type it holds at most)")
    stmts = statement_list(unit.body)
    after = stmts[stmts.index(m.form.store) + 1:]
    finish = _finish_statement(unit, res, after)
    if finish is None:
        return f"the {res.update.fn} on line {res.update.line} is not run by thread 0 alone, directly in the body"
    kept = _rung_problem(unit, m, res, after[:after.index(finish)], after[after.index(finish) + 1:])
    return GridFree(res, finish, None if kept else identity(unit, res), kept)


def _rung_problem(unit: CudaUnit, m: BlockLoad, res: UniformAtomic, tree: list[Node], rest: list[Node]) -> str:
    """Why the statements ``tree`` between the load and the atomic are not replaced by the block combine (they
    must be one whole-block tree over ``m``'s array and block barriers; nothing in ``rest`` reads the array), or
    ``""``."""
    if m.select is not None:
        return "the tree's combine is a comparison and a choice, which the block combine does not write"
    loops = [st for st in tree if not _is_sync(unit, st)]
    if len(loops) != 1 or not syn.is_for(loops[0]):
        return "the statements between the load and the atomic are not one tree loop and barriers"
    if m.form.write.index is None or str(m.form.write.index) != THREAD_X:
        return f"the load's slot `{m.form.slot}` is not the thread's index along x"
    seq = _sequential(unit, loops[0])
    tree_ = match_tree(unit, loops[0]) if isinstance(seq, str) else None
    if isinstance(tree_, str):
        return f"the tree loop is not a whole-block tree: {tree_}"
    combs, value = (seq[2], seq[4]) if tree_ is None else (tree_.combines, tree_.bound_value)  # type: ignore[index]
    if len(combs) > 1:
        return (f"the tree loop combines {len(combs)} arrays ({', '.join(c.array for c in combs)}); the block "
                "combine sends one")
    array = combs[0].array
    if array != m.form.array:
        return f"the tree loop combines {array}, not {m.form.array}"
    why, _ = _launch_problem(unit, value, runtime_ok=True)
    if why:
        return why
    if not same_type(unit, m, res) or identity(unit, res) is None:
        return f"the combine of {m.etype} into {res.update.fn} of {res.element_type} is not made in registers here"
    if any(ref.start_byte >= st.start_byte for st in rest for ref in references(unit.body, unit.src, array)):
        return f"{array} is read after the atomic"
    if ACC.encode() in unit.src or PART.encode() in unit.src:
        return f"{ACC} or {PART} is already declared"
    return ""


def tree_combines(unit: CudaUnit, after: list[Node]) -> list[Combine]:
    """The combines of the first loop among ``after`` (the body's statements after the load) when it is a whole-block
    tree (interleaved or sequential addressing), else ``[]``."""
    for st in after:
        if not syn.is_loop(st):
            continue
        seq = _sequential(unit, st)
        if not isinstance(seq, str):
            return seq[2]
        tree = match_tree(unit, st)
        return [] if isinstance(tree, str) else tree.combines
    return []


def several_arrays(unit: CudaUnit, after: list[Node]) -> str | None:
    """Why the add during load is not made: the first tree loop among ``after`` (the body's statements after the
    load) reduces several shared arrays in one step (a min and a max, a sum and a sum of squares), while the step
    accumulates one value per thread; ``None`` when it reduces one or is no tree."""
    combs = tree_combines(unit, after)
    if len(combs) < 2:
        return None
    return (f"the tree loop reduces {', '.join(c.array for c in combs)} together; the add during load accumulates "
            "one value per thread, for a tree of one array")


def rung_text(unit: CudaUnit, gf: GridFree, indent: str) -> str:
    """The block combine and its one atomic (:func:`~htam_core.transforms.cuda_atomic_privatize.block_combine`)
    as text after a statement indented with ``indent`` (each line after a newline)."""
    assert gf.ident is not None
    return "".join(f"\n{indent}{ln}" for ln in block_combine(unit, gf.result, gf.ident))
