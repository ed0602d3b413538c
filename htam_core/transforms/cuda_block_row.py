"""CUDA thread-per-row -> block-per-row (``cuda.block_per_row``).

The same kernels as :mod:`htam_core.transforms.cuda_warp_row` (``row = blockIdx.x * blockDim.x + threadIdx.x``, a
guard ``row < rows``, loops along the row), for the case where there are few rows and each is long: 64 channels
of 100352 elements give a warp per row 64 warps on a device of 132 SMs, nearly idle. Here each row gets a whole
block:

* ``row`` becomes the block's index (the thread-per-row index divided by ``blockDim.x``) and the thread's place
  in the row, ``htam_lane``, is ``threadIdx.x``;
* every loop over the row (a perfect 2-deep nest read as one index, a loop starting after an element: the shapes
  :func:`~htam_core.transforms.cuda_warp_row.warp_row_edits` reads) starts at the thread and steps by
  ``blockDim.x``, so the threads of a block read consecutive elements;
* every scalar a loop reduces (a sum, a max/min however written, an arg-max/arg-min pair with its tie rule, the
  running-max/sum pair of the merged pass ``cuda.online_softmax`` writes, rescaled as it combines) is
  all-reduced over the block right after the loop: a ``__shfl_xor_sync`` butterfly in each warp, one partial per
  warp in ``__shared__`` memory, then every thread combines the partials in the same order, so every thread holds
  the row's value (a second pass that reads the mean, as per-channel variance does, reads the same value in every
  thread);
* a statement outside the loops that writes memory runs on thread 0 only;
* each launch starts one block per thread it started before (the old grid times the old block: one block per row,
  the blocks past the last row leave at the guard) of 256 threads, or 512 when the analysis layer reads rows of at
  least 32768 elements at that launch (:func:`~htam_core.source.analysis.row_launch.row_launches`).

The rewrite is correct for any number and length of rows at run time (the block size is a multiple of 32 and at
most 1024, the guard is the same for all threads of a block, so the barriers are reached by all or none); the
sizes the host code launches with only choose the block size and rank the step against a warp per row
(``few_long_rows`` in the knowledge base). Refused with a reason: whatever a warp per row refuses, a loop that
walks a column (a block would read elements a row apart), a kernel that reads ``blockDim``/``gridDim`` outside its
global index, a block that is not 1-D, and ``__launch_bounds__`` below 64 threads (a lower bound than the chosen
size caps it). Idea sources: NVIDIA developer blog, "Faster Parallel Reductions on Kepler" (Luitjens, 2014:
``blockReduceSum``, warp shuffles then one value per warp in shared memory); the block-per-channel batch-norm
statistics kernels of cuDNN/PyTorch (``batch_norm_collect_statistics``).
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.argreduce import ArgStep
from htam_core.source.analysis.forms import Elementwise, elementwise
from htam_core.source.analysis.row_launch import row_launches
from htam_core.source.analysis.select import Selection
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    launch_dims_edit,
    param_names,
    wrap_grid,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_softmax import pair_all_reduce, pair_combine
from htam_core.transforms.cuda_warp_row import (
    Op,
    RowMap,
    arg_order,
    column_walk,
    launch_dim_read,
    reduced_text,
    sums_reordered,
    warp_all_reduce,
    warp_arg_all_reduce,
    warp_row_edits,
)
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: Threads per block, and per block for rows at least :data:`LONG` elements long.
BLOCK, BIG_BLOCK, LONG = 256, 512, 32768


def _combine(name: str, op: Op, other: str) -> str:
    """The statement folding the value ``other`` into ``name`` with the loop's reduction ``op`` (a selection keeps
    the loop's own comparison)."""
    if isinstance(op, Selection):
        return op.assign(name, other)
    if op == "+":
        return f"{name} += {other};"
    return f"{name} = {op}({name}, {other});"


def _block(indent: str, lines: list[str]) -> str:
    """``lines`` as a braced block at ``indent``, on a new line."""
    return "".join(f"\n{indent}{ln}" for ln in ["{", *[f"    {x}" for x in lines], "}"])


def block_reduce(name: str, op: Op, indent: str) -> str:
    """The block all-reduce of scalar ``name`` with reduction ``op`` (``"+"``, a min/max function, a :class:`Selection`): the
    warp butterfly, lane 0 of each warp stores its partial in shared memory, a barrier, every thread combines the
    partials in warp order (so all hold the same value), and a barrier before the slots could be written again.
    Needs a block of a multiple of 32 threads, every one of which reaches it."""
    part = f"htam_part_{name}"
    warp = warp_all_reduce(name, op, "").lstrip("\n").split("\n")
    return _block(indent, [f"__shared__ decltype({name}) {part}[32];", *warp,
                           f"if ((threadIdx.x & 31) == 0) {part}[threadIdx.x >> 5] = {name};",
                           "__syncthreads();", f"{name} = {part}[0];",
                           "for (unsigned htam_w = 1; htam_w < (blockDim.x >> 5); ++htam_w)",
                           f"    {_combine(name, op, f'{part}[htam_w]')}", "__syncthreads();"])


def block_arg_reduce(a: ArgStep, v_type: str, i_type: str, indent: str) -> str:
    """The block all-reduce of the ``(extreme, index)`` pair of arg step ``a``: the warp all-reduce of
    :mod:`~htam_core.transforms.cuda_warp_row`, then the warps' pairs through shared memory, combined by every
    thread with the same rule (the more extreme value, on equal values the index the tie rule keeps), so every
    thread ends with the pair the one thread found. ``v_type``/``i_type``: the declared types (the warp step's
    locals)."""
    (better, tie), b, i = arg_order(a), a.value, a.index
    pv, pi = f"htam_pv_{b}", f"htam_pi_{b}"
    warp = warp_arg_all_reduce(a, v_type, i_type, "").lstrip("\n").split("\n")
    return _block(indent, [f"__shared__ decltype({b}) {pv}[32];", f"__shared__ decltype({i}) {pi}[32];", *warp,
                           f"if ((threadIdx.x & 31) == 0) {{ {pv}[threadIdx.x >> 5] = {b}; {pi}[threadIdx.x >> 5] = {i}; }}",
                           "__syncthreads();", f"{b} = {pv}[0]; {i} = {pi}[0];",
                           "for (unsigned htam_w = 1; htam_w < (blockDim.x >> 5); ++htam_w)",
                           f"    if ({pv}[htam_w] {better} {b} || ({pv}[htam_w] == {b} && {pi}[htam_w] {tie} {i})) "
                           f"{{ {b} = {pv}[htam_w]; {i} = {pi}[htam_w]; }}", "__syncthreads();"])


def block_pair_reduce(m: str, s: str, m_type: str, s_type: str, fn: str | None, exp: str, indent: str) -> str:
    """The block all-reduce of the running-max/sum pairs ``(m, s)`` of the merged online max/sum loop: the warp
    all-reduce of :func:`~htam_core.transforms.cuda_softmax.pair_all_reduce`, then the warps' pairs through shared
    memory, folded by every thread in warp order with the same rescaling
    (:func:`~htam_core.transforms.cuda_softmax.pair_combine`)."""
    pm, ps = f"htam_pm_{m}", f"htam_ps_{s}"
    warp = pair_all_reduce(m, s, m_type, s_type, fn, exp, "0xffffffffu", "").split("\n")
    fold = pair_combine(m, s, m_type, fn, exp, f"{pm}[htam_w]", f"{ps}[htam_w]")
    return _block(indent, [f"__shared__ decltype({m}) {pm}[32];", f"__shared__ decltype({s}) {ps}[32];", *warp,
                           f"if ((threadIdx.x & 31) == 0) {{ {pm}[threadIdx.x >> 5] = {m}; {ps}[threadIdx.x >> 5] = {s}; }}",
                           "__syncthreads();", f"{m} = {pm}[0]; {s} = {ps}[0];",
                           "for (unsigned htam_w = 1; htam_w < (blockDim.x >> 5); ++htam_w) {",
                           *[f"    {x}" for x in fold], "}", "__syncthreads();"])


#: A block per row: threads ``threadIdx.x`` step by ``blockDim.x``, block all-reduces.
BLOCK_MAP = RowMap("threadIdx.x", "blockDim.x", "({}) / blockDim.x", block_reduce, block_arg_reduce,
                   block_pair_reduce)


def _block_size(unit: CudaUnit, la: Launch) -> int | str:
    """The threads per block of launch ``la``'s rewrite (:data:`BIG_BLOCK` for rows known to be at least
    :data:`LONG` elements, else :data:`BLOCK`; no more than a ``__launch_bounds__`` limit), or why none fits."""
    lengths = [r.length for r in row_launches(unit.facts, param_names(unit)) if r.line == la.site.line]
    size = BIG_BLOCK if lengths and lengths[0] is not None and lengths[0] >= LONG else BLOCK
    lb = unit.launch_bounds()
    if lb is None:
        return size
    if lb.max_threads is None:
        return (f"the kernel's __launch_bounds__({lb.text}) is not a constant htam can read, and a block per row "
                f"launches {size} threads")
    size = min(size, lb.max_threads // 32 * 32)
    return size if size >= 64 else (f"the kernel's __launch_bounds__({lb.text}) allows fewer than 64 threads per "
                                    "block, too few to share a row")


def _launch_edits(unit: CudaUnit, la: Launch) -> tuple[list[TextEdit], int] | str:
    """The edits giving launch ``la`` one block per thread it started (grid times block) of the chosen size, and that
    size, or why not (a block that is not 1-D, a grid that is not 1-D, per-block outputs)."""
    dims = unit.block_dims(la)
    if la.block is None or not dims or len(dims) != 1:
        return f"the block on line {la.site.line} is not 1-D"
    size = _block_size(unit, la)
    if isinstance(size, str):
        return size
    threads = unit.block_threads(la)
    old = str(threads) if threads is not None else f"dim3({unit.t(la.block)}).x"
    grid = wrap_grid(unit, la, "({}) * " + old)
    if isinstance(grid, str):
        return grid
    # a constant block: its dim3 variable, when only this launch reads it, gets the new size (it stays read); a
    # run-time block is still read by the grid's count, so the launch alone gets the new size
    named = threads is not None and syn.is_identifier(syn.unwrap_parens(la.block))
    block = launch_dims_edit(unit, la, la.block, [str(size)]) if named else unit.replace(la.block, str(size))
    return [grid, block], size


def _kernel_problem(unit: CudaUnit, ew: Elementwise) -> str | None:
    """Why the kernel cannot share its rows over a block before its body is read, or ``None``."""
    if not unit.launches:
        return f"{unit.kernel.name} has no launch site in this file; its grid and block must change"
    read = launch_dim_read(unit, ew)
    if read is not None:
        return (f"{unit.kernel.name} reads `{unit.t(read)}` outside its global index, and a block per row changes "
                "the block and the grid")
    column = column_walk(unit, ew)
    if column:
        return f"{column}: a block's threads would read elements a row apart"
    return None


@register
class CudaBlockPerRow(CudaTransform):
    """Give each row of a thread-per-row kernel to a block (coalesced loops, block all-reduce, one block per row)."""

    id = "cuda.block_per_row"
    languages = CUDA_LANGS
    summary = "one block per row: threads stride the row by blockDim.x, warp shuffles + shared all-reduce"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate, or the reason the kernel is not a thread-per-row kernel this rewrite can prove."""
        ew = elementwise(unit)
        if isinstance(ew, str):
            return self.not_applicable(f"not a thread-per-row kernel: {ew}")
        why = _kernel_problem(unit, ew)
        if why:
            return self.not_applicable(why)
        body = warp_row_edits(unit, ew, BLOCK_MAP)
        if isinstance(body, str):
            return self.not_applicable(body)
        edits, summary = body
        if not summary["reduced"] and not unit.facts.row_loops():
            return self.not_applicable(f"{kernel.name}'s loops do not walk a row owned by one thread and reduce "
                                       "nothing: a block per row would only stride the threads over the loop")
        sizes: list[int] = []
        for la in unit.launches:
            got = _launch_edits(unit, la)
            if isinstance(got, str):
                return self.not_applicable(got)
            edits += got[0]
            sizes.append(got[1])
        names, order = reduced_text(summary["reduced"])  # type: ignore[arg-type]
        cand = self.candidate(
            model,
            f"give each row of {kernel.name} to a block of {'/'.join(str(s) for s in sorted(set(sizes)))} threads: "
            f"its {summary['loops']} row loop(s) stride by blockDim.x from the thread, block all-reduce of {names} "
            f"(warp shuffles, then the warps' partials in shared memory), one block per row{order}",
            {"reduced": summary["reduced"], "launches": len(unit.launches), "blocks": sizes},
            edits,
        )
        cand.changes_numerics = cand.reorders_only = sums_reordered(summary["reduced"])  # type: ignore[arg-type]
        return [cand]
