"""The row split of ``cuda.lane_columns``: more blocks for a column sum with few columns and many rows.

Lanes on columns give ``(columns + 31) / 32`` blocks; a bias gradient with 768 columns gets 24 blocks, which leave
most of an H100's 132 SMs idle (a measured 0.42x on an H200 for a block-per-column kernel of 8192 rows). Where the
column count, the row count and the block size are constants at a launch
(:meth:`~htam_core.source.analysis.facts.LaunchFacts.value_at`) and the columns give fewer than
:data:`SPLIT_BELOW_PER_SM` blocks per SM, the rows are split over a second grid dimension: ``gridDim.y`` row groups
(:func:`row_groups`: about :data:`SPLIT_TARGET_PER_SM` blocks per SM in all, and never fewer rows than warps per
group), each block walking the rows ``blockIdx.y * blockDim.y + threadIdx.y``, step ``gridDim.y * blockDim.y``.
Each block then holds a partial sum of its 32 columns, and the partials of a column are added into the output
with ``atomicAdd`` (:func:`accumulating_write`). That is the same total only when the kernel adds its column total
into the output (``out[c] += total``, ``out[c] = out[c] + total``, ``atomicAdd(&out[c], total)``, with the total
entering linearly: ``0.5f * total``) and reads the output nowhere else; a plain store ``out[c] = total`` would
need an output known to be zero before the launch, which the kernel does not show, so such a kernel keeps one row
group (the candidate names the reason).
The float additions change order (and with the atomics, from run to run): the candidate is checked at the
reordered-sum tolerance (``reorders_only``).

Idea source: llm.c ``dev/cuda/matmul_backward_bias.cu``: its faster versions give each column block several row
groups whose partial sums are combined with ``atomicAdd`` into ``dbias`` (a ``+=`` output); CUDA C++ Best
Practices Guide, "Occupancy" (enough blocks to keep every SM busy).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis import sym
from htam_core.source.analysis.accumulate import accumulation, linear_in
from htam_core.source.analysis.nodes import Node
from htam_core.transforms._cuda import CudaUnit, Launch

#: Lanes on columns split the rows over ``gridDim.y`` when the column blocks are fewer than this many per SM.
SPLIT_BELOW_PER_SM = 2
#: Blocks per SM the row split aims for (column blocks times row groups).
SPLIT_TARGET_PER_SM = 4
#: Columns (lanes) per block of the lanes-on-columns form.
WIDTH = 32


def row_groups(cols: int, rows: int, threads: int, sm_count: int) -> int:
    """Row groups (``gridDim.y``) for a lanes-on-columns launch: 1 when ``ceil(cols / 32)`` blocks already give
    :data:`SPLIT_BELOW_PER_SM` per SM, else enough groups for about :data:`SPLIT_TARGET_PER_SM` blocks per SM,
    bounded so that every group has at least one row per warp (``rows // warps``, ``warps = ceil(threads / 32)``).

    Args:
        cols: columns summed (the kernel's column count at the launch).
        rows: rows summed per column (the loop's bound at the launch).
        threads: threads per block of the original launch (the new block is ``dim3(32, ceil(threads / 32))``).
        sm_count: SMs of the target device.
    """
    blocks = -(-cols // WIDTH)
    if cols <= 0 or blocks >= SPLIT_BELOW_PER_SM * sm_count:
        return 1
    warps = -(-threads // WIDTH)
    return max(1, min(-(-SPLIT_TARGET_PER_SM * sm_count // blocks), rows // max(warps, 1)))


def rows_of(bound: sympy.Expr | None, cmp: str | None) -> sympy.Expr | None:
    """The row count a column loop ``for (i = lane; i < bound; …)`` covers at most: ``bound`` for ``<``,
    ``bound + 1`` for ``<=``, ``None`` otherwise."""
    if bound is None or cmp not in ("<", "<="):
        return None
    return bound if cmp == "<" else bound + 1


def launch_groups(unit: CudaUnit, launch: Launch, cols: sympy.Expr | None, rows: sympy.Expr | None,
                  params: Sequence[str], sm_count: int) -> tuple[int, int | None]:
    """``(row groups, column blocks)`` for one launch: the groups of :func:`row_groups` where the launch's
    grid is 1-D and the column count ``cols``, the row count ``rows`` (sympy over the kernel's parameters) and the
    block size are constants there; ``(1, None)`` otherwise (the unsplit form)."""
    lf = unit.launch_facts(launch)
    if lf is None or len(lf.grid) != 1 or lf.threads is None:
        return 1, None
    c, r = lf.value_at(cols, params), lf.value_at(rows, params)
    if c is None or r is None:
        return 1, None
    return row_groups(c, r, lf.threads, sm_count), -(-c // WIDTH)


def column_count(unit: CudaUnit, bound: Node | None, bound_param: str | None, params: Sequence[str]
                 ) -> sympy.Expr | None:
    """The column count as a sympy expression over the parameters: the guard's bound when it is one parameter
    (``if (o >= OC) return;``), or the parameter that receives the grid (one block per column); else ``None``."""
    if bound is not None:
        name = unit.t(syn.unwrap_parens(bound)).strip()
        return sym(name) if syn.is_identifier(syn.unwrap_parens(bound)) and name in params else None
    return sym(bound_param) if bound_param else None


def accumulating_write(unit: CudaUnit, write: Node, totals: Sequence[Node], text: Callable[[Node], str]
                       ) -> str | tuple[str]:
    """The write of a column's total as an ``atomicAdd`` of the block's partial (``(text,)``), or why the partials
    of several blocks cannot be added into the output (one line).

    Args:
        unit: the kernel's unit.
        write: the expression statement that writes the column's total (one thread of the group).
        totals: the nodes in ``write`` that hold the total (the combined sum, ``sh[0]``).
        text: a node of ``write`` -> its rewritten text (the totals renamed to the block's partial sum).

    Accepted: the analysis layer's :func:`~htam_core.source.analysis.accumulate.accumulation` forms (``out[c] +=
    e``, ``-=``, ``out[c] = out[c] + e``, ``atomicAdd(&out[c], e)``) with ``e`` linear in the total
    (:func:`~htam_core.source.analysis.accumulate.linear_in`); an output read elsewhere is checked by the caller
    (:func:`~htam_core.source.analysis.accumulate.output_read_elsewhere`)."""
    acc = accumulation(unit, write)
    line = unit.line(write)
    shown = " ".join(unit.t(write).rstrip(";").split())
    if acc is None:
        return (f"the write on line {line} (`{shown}`) stores the column's total rather than adding it to the "
                "output, so the partial sums of several blocks could only be combined into an output known to be "
                "zero before the launch")
    if not linear_in(unit, acc.term, totals):
        return (f"the write on line {line} (`{shown}`) adds `{' '.join(unit.t(acc.term).split())}`, not the "
                "column's total times a factor, so the blocks' partial sums would not add up to it")
    if acc.atomic:
        return (text(write),)
    value = " ".join(text(acc.term).split())
    if acc.negated:
        value = f"-{value}" if re.fullmatch(r"\w+", value) else f"-({value})"
    return (f"atomicAdd(&{' '.join(text(acc.target).split())}, {value});",)
