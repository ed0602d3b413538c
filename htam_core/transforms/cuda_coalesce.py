"""Coalescing by remapping the thread index (``cuda.coalesce_remap``): swap the x and y roles of a 2-D kernel.

A 2-D kernel whose contiguous (last) array index comes from ``threadIdx.y`` makes the 32 lanes of a warp, which
differ in ``threadIdx.x``, touch addresses a whole row apart: every load and store is uncoalesced. Relabeling the
two dimensions, ``x <-> y`` in every ``threadIdx``/``blockIdx``/``blockDim``/``gridDim`` of the kernel and in the
components of every launch's grid and block, gives each thread the same work as before (the same outputs, the
same loop order), only with consecutive lanes on the contiguous index. The decision comes from the analysis
layer's affine index strides: the rewrite is offered when fewer global accesses are strided along the new x
than along the old one.

A block wider along x than along y (``dim3 block(64, 4)``, the row on x) keeps its shape: swapping it too would
leave a warp only 4 consecutive elements of the contiguous index. The grid's x and y then trade places, each
redivided by the block side that now covers it (``(rows + 63) / 64, (cols + 3) / 4`` becomes ``(cols + 63) / 64,
(rows + 3) / 4``), when both block sides are constants the kernel reads only through ``blockDim`` (no shared memory,
no index hard-coding them) and each grid component is a ceil-division by its block side; otherwise grid and block
are both swapped, as for a square or tall block.

Refused: kernels that depend on which threads share a warp (shuffles, ``__syncwarp``, ``warpSize``, ballots),
kernels calling a device function that reads the thread indices itself, kernels reading an x or y builtin inside a
macro's text (``#define TX(i) (threadIdx.x + (i))``: the edit cannot reach it), kernels without a launch in the file
(the grid must follow), and kernels where the swap does not reduce the strided accesses. A grid's y component is
limited to 65535 blocks, so a grid x larger than that fails to launch after the swap (the verifier sees it).

Idea source: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; S. Boehm, "How to Optimize a
CUDA Matmul Kernel" (2022), kernel 2 (global memory coalescing).
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.reaching import reaching_value
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Dim,
    Launch,
    launch_dims_edit,
    stale_comment_notes,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS, grid_literal_edits
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_WARP_LEVEL = ("__shfl_sync", "__shfl_xor_sync", "__shfl_up_sync", "__shfl_down_sync", "__syncwarp", "warpSize",
               "__ballot_sync", "__activemask", "__any_sync", "__all_sync", "__match_any_sync", "__reduce_add_sync")
_SWAP = {"x": "y", "y": "x"}
#: Comment phrases that state which thread dimension runs over what (they get a note of the swap).
_DIM_WORDS = ("x runs", "y runs", "rows on x", "columns on x", "rows on y", "columns on y", "x over", "y over",
              "row on x", "column on x", "row on y", "column on y", "row from x", "column from x", "row from y",
              "column from y")


def _strided(unit: CudaUnit, dim: str) -> list[str]:
    """Global accesses whose index strides along ``threadIdx.<dim>`` (neither 0 nor 1), as written."""
    return [f"{a.shown}" for a in unit.facts.global_accesses() if a.pattern(dim) == "strided"]


def _device_helpers_with_builtins(unit: CudaUnit) -> list[str]:
    """Functions of the file, other than the kernel, that read thread indices and that the kernel calls."""
    called = {unit.t(c.child_by_field_name("function")) for c in syn.calls(unit.body)}
    out = []
    for f in syn.function_definitions(unit.root):
        if f == unit.func:
            continue
        decl = f.child_by_field_name("declarator")
        name = unit.t(decl.child_by_field_name("declarator")) if decl is not None and syn.is_function_declarator(decl) else ""
        if name in called and any(unit.t(i) in _BUILTINS for i in syn.identifiers(f)):
            out.append(name)
    return out


def _wide_x_grid(unit: CudaUnit, la: Launch) -> list[str] | None:
    """The launch's new grid components when its block keeps its shape, else ``None`` (swap grid and block).

    A block wider along x than along y (``dim3 block(64, 4)``) would become ``(4, 64)`` with the grid and block
    swapped, so a warp would span only 4 consecutive elements of the contiguous index. When both block extents are
    compile-time constants, the kernel reads them only through ``blockDim`` (no index hard-codes them, no shared
    memory sized by them), and each grid component is a ceil-division by its block extent (``(n + 63) / 64``,
    ``CEIL_DIV(n, TX)``), the block stays and the grid's x and y trade places, each redivided by the block extent
    that now covers it: ``dim3 grid((2 * W + 63) / 64, (2 * H + 3) / 4)`` for ``((2 * H + 63) / 64,
    (2 * W + 3) / 4)``, so the grid still covers every element.

    Idea source: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory" (the warp's 32 lanes on the
    contiguous index, a block's x a multiple of 32).
    """
    dims = unit.block_dims(la)
    grid = [_held(unit, la, c) for c in unit.dims_of(la.grid, la.host)]
    if not dims or len(dims) < 2 or len(grid) < 2 or dims[0].const is None or dims[1].const is None:
        return None
    bx, by = dims[0].const.value, dims[1].const.value
    if bx <= by or any(a.space == "shared" for a in unit.facts.accesses):
        return None
    if unit.facts.fixed_block_extents("x", bx) or unit.facts.fixed_block_extents("y", by):
        return None
    new_x, new_y = _redivide(unit, grid[1], dims[1], dims[0]), _redivide(unit, grid[0], dims[0], dims[1])
    if new_x is None or new_y is None:
        return None
    return [new_x, new_y, *(unit.t(c) for c in grid[2:])]


def _held(unit: CudaUnit, la: Launch, comp: Node) -> Node:
    """The grid component ``comp`` of launch ``la``, or, when it is a variable of the launching function
    (``int gx = (w + 63) / 64;`` or ``gx = ...;`` before ``dim3 grid(gx, gy)``), the value it holds there
    (:func:`~htam_core.source.analysis.reaching.reaching_value`, followed a few times), whose text means the same at
    the launch."""
    node = syn.unwrap_parens(comp)
    for _ in range(4):
        value = reaching_value(la.host, unit.t(node), node.start_byte, unit.src) \
            if la.host is not None and syn.is_identifier(node) else None
        if value is None:
            break
        node = syn.unwrap_parens(value)
    return node


def _redivide(unit: CudaUnit, comp: Node, old: Dim, new: Dim) -> str | None:
    """The text of the grid component ``comp``, a ceil-division by the block extent ``old``, as one by ``new``
    (a literal: ``(n + 3) / 4`` -> ``(n + 63) / 64``; a name: ``CEIL_DIV(n, TY)`` -> ``CEIL_DIV(n, TX)``), or
    ``None`` when ``comp`` is not such a ceil-division."""
    assert old.const is not None and new.const is not None
    text, start = unit.t(comp), unit.file_byte(comp)
    if syn.is_number(old.expr):
        made = grid_literal_edits(unit, comp, old.const.value, new.const.value)
        if not isinstance(made, list):
            return None
        for e in sorted(made, key=lambda e: -e.start_byte):
            text = text[: e.start_byte - start] + e.new_text + text[e.end_byte - start :]
        return text
    name, other = unit.t(old.expr), unit.t(new.expr)
    top = syn.unwrap_parens(comp)
    right = top.child_by_field_name("right") if syn.is_binary(top) else None
    call_args = top.child_by_field_name("arguments") if syn.is_call(top) else None
    args = call_args.named_children if call_args is not None else []
    if not ((right is not None and unit.t(right) == name) or (args and unit.t(args[-1]) == name and "div" in unit.t(
            top.child_by_field_name("function")).lower())) or not syn.is_identifier(old.expr):
        return None
    for ident in sorted(syn.identifiers(comp), key=lambda n: -n.start_byte):
        if unit.t(ident) == name:
            text = text[: ident.start_byte - comp.start_byte] + other + text[ident.end_byte - comp.start_byte :]
    return text


@register
class CudaCoalesceRemap(CudaTransform):
    """Swap the x and y thread/block dimensions of a 2-D kernel so that lanes walk the contiguous index."""

    id = "cuda.coalesce_remap"
    languages = CUDA_LANGS
    summary = "coalesce by swapping the x and y thread dimensions (kernel builtins and launch grid/block)"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate, or why the swap would not help or is not safe."""
        fields = [n for n in syn.fields(unit.body)
                  if unit.t(n.child_by_field_name("argument")) in _BUILTINS
                  and unit.t(n.child_by_field_name("field")) in _SWAP]
        if not any(unit.t(n.child_by_field_name("field")) == "y" for n in fields):
            return self.not_applicable(f"{kernel.name} uses no y thread or block index; there is nothing to swap")
        words = {unit.t(i) for i in syn.identifiers(unit.body)}
        warp = sorted((words & set(_WARP_LEVEL)) | {b.text for b in unit.facts.barriers if b.scope == "warp"})
        if warp:
            return self.not_applicable(f"{kernel.name} uses {', '.join(warp)}; swapping x and y changes which "
                                       "threads share a warp")
        helpers = _device_helpers_with_builtins(unit)
        if helpers:
            return self.not_applicable(f"{kernel.name} calls {', '.join(helpers)}, which reads the thread indices "
                                       "itself; swap its dimensions by hand")
        hidden = [f"{b} in {m}" for m, b in unit.facts.macro_builtins if b.split(".")[-1] in _SWAP]
        if hidden:
            return self.not_applicable(
                f"{kernel.name} reads {', '.join(hidden[:3])} inside a macro; swapping x and y in the kernel's "
                "text would not reach the macro's, so swap them there by hand")
        before, after = _strided(unit, "x"), _strided(unit, "y")
        if not before:  # whether the swap would help comes first: without a launch site it is still true
            return self.not_applicable(f"no global access of {kernel.name} is strided along threadIdx.x")
        if len(after) >= len(before):
            return self.not_applicable(
                f"swapping x and y does not make more accesses coalesced ({len(before)} strided along x now: "
                f"{', '.join(before[:3])}; {len(after)} would be after the swap)")
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; its grid must be swapped too")
        edits: list[TextEdit] = [unit.replace(n.child_by_field_name("field"), _SWAP[unit.t(n.child_by_field_name(
            "field"))]) for n in fields]
        kept: list[str] = []
        for la in unit.launches:
            if la.block is None:
                return self.not_applicable(f"the launch on line {la.site.line} has no block argument")
            wide = _wide_x_grid(unit, la)
            if wide is not None:  # the block stays, its wide x now on the contiguous index; the grid follows
                edits.append(launch_dims_edit(unit, la, la.grid, wide))
                kept.append(", ".join(unit.t(c) for c in unit.dims_of(la.block, la.host)))
                continue
            for expr in (la.grid, la.block):
                comps = [unit.t(c) for c in unit.dims_of(expr, la.host)] + ["1"]
                edits.append(launch_dims_edit(unit, la, expr, [comps[1], comps[0], *comps[2:-1]]))
        edits += stale_comment_notes(unit, "thread dimensions x and y swapped (coalescing)", list(_DIM_WORDS), edits)
        return [self.candidate(
            model,
            f"swap the x and y thread dimensions of {kernel.name} and of its launch grid and block: the accesses "
            f"{', '.join(before[:3])} become coalesced along threadIdx.x (same work per thread)" + (
                f"; the block ({kept[0]}) keeps its wide x, now on the contiguous index, and the grid's x and y trade "
                "places, each divided by the block side that now covers it" if kept else ""),
            {"strided_before": len(before), "strided_after": len(after)},
            edits,
        )]
