"""The 2-D remap of a flattened 1-D thread index (``cuda.flat_index_2d``): a kernel that splits one global x index
into a row and a column (``row = idx / W; col = idx % W``) on a 1-D launch gets ``col`` from the global x index,
``row`` from the global y index, the bounds check ``row < M && col < W`` (the names as the user wrote them), and
every launch a ``dim3(16, 16)`` block with a ``((W + 15) / 16, (M + 15) / 16)`` grid, in the launch's own file
wherever it is. The form is proved by the analysis layer (:func:`~htam_core.source.analysis.flat2d.flat_remap`:
one output per thread at ``row * W + col``, the bounds check on the rows); the launch's 1-D grid must cover the
``M * W`` outputs (a ceil-division of ``M * W`` by the block, or a constant grid of at least as many threads), so
the 2-D grid computes the same outputs. With no launch found the step is refused: the grid is what it changes.

On a matmul it is the step before the shared-memory and register tiles, which need a 2-D block
(:func:`compose_after_remap`).

Idea source: the CUDA C++ Programming Guide's matrix-multiplication example (a 2-D ``dim3`` block and grid, one
thread per output, row on y and column on x).
"""

from __future__ import annotations

import sympy

from htam_core.source.analysis.flat2d import FlatRemap, flat_remap
from htam_core.source.analysis.grid_cover import grid_rounding
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    delete_statement_edit,
    launch_dims_edit,
    param_names,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS, bounds_edit
from htam_core.transforms.cuda_tiling import constant_size, constant_value
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: The block of the 2-D launch (threads along x and y).
TILE = 16

#: Words of the 64-bit integer types, in which a thread index is computed with a cast (the builtins' product is an
#: ``unsigned int``, which any other type, a deduced one included, takes as it is).
_WIDE = ("long", "size_t", "int64", "ptrdiff_t", "intptr_t")


def _index(t: str, dim: str) -> str:
    """The global index along ``dim`` in type ``t`` (a wider type multiplies in that type, as the user's did)."""
    base = f"blockIdx.{dim} * blockDim.{dim} + threadIdx.{dim}"
    bare = t.replace("const ", "").strip()
    wide = any(w in bare for w in _WIDE)
    return f"({bare})blockIdx.{dim} * blockDim.{dim} + threadIdx.{dim}" if wide else base


def _indent(unit: CudaUnit, start: int) -> str:
    """The whitespace before file byte ``start`` on its line."""
    s = start - unit.base
    line = unit.src.rfind(b"\n", 0, s) + 1
    pre = unit.src[line:s].decode()
    return pre if not pre.strip() else "    "


def body_edits(unit: CudaUnit, fr: FlatRemap) -> list[TextEdit]:
    """The kernel-body edits of the remap ``fr``: the first declaration becomes the column, the row (and the index
    again, ``row * W + col``, when the body reads it), the other declarations go, and the bounds check becomes
    ``row < M && col < W`` in its own form (a guarded body or an early return)."""
    first, *rest = fr.decls
    ind = _indent(unit, first[0])
    lines = [f"{fr.col.type} {fr.col.name} = {_index(fr.col.type, 'x')};",
             f"{fr.row.type} {fr.row.name} = {_index(fr.row.type, 'y')};"]
    if fr.index is not None and fr.index_used:
        lines.append(f"{fr.index.type} {fr.index.name} = {fr.row.name} * ({fr.width}) + {fr.col.name};")
    edits = [unit.replace_span(first, ("\n" + ind).join(lines))]
    edits += [delete_statement_edit(unit, s) for s in rest]
    cond = (f"({fr.row.name} < {fr.rows} && {fr.col.name} < {fr.width})" if fr.form == "if"
            else f"({fr.row.name} >= {fr.rows} || {fr.col.name} >= {fr.width})")
    return [*edits, unit.replace_span(fr.condition, cond)]


def _host_value(unit: CudaUnit, la: Launch, text: str) -> tuple[str, sympy.Expr] | str:
    """``(host spelling, sympy value)`` at launch ``la`` of the kernel's size ``text`` (a parameter's argument, or
    a compile-time constant), or why it cannot be read there."""
    names = param_names(unit)
    lf = unit.launch_facts(la)
    if text in names:
        i = names.index(text)
        if i >= len(la.site.args) or lf is None or i >= len(lf.arg_exprs) or lf.arg_exprs[i] is None:
            return f"the launch on line {la.site.line} does not pass {text} as an integer expression"
        return la.site.args[i].strip(), lf.arg_exprs[i]
    host, value = constant_size(unit, la, text), constant_value(unit, la, text)
    if host is None or value is None:
        return f"{text} is neither a parameter of {unit.kernel.name} nor a compile-time constant"
    return host, sympy.Integer(value)


def _covers(unit: CudaUnit, la: Launch, work: sympy.Expr) -> str | None:
    """Why launch ``la``'s 1-D grid does not provably give every one of the ``work`` outputs a thread, or ``None``."""
    lf = unit.launch_facts(la)
    where = f"the launch on line {la.site.line}"
    if lf is None or not lf.grid or not lf.block:
        return f"{where} is not read"
    if any(d.value != 1 for d in (*lf.grid[1:], *lf.block[1:])):
        return f"{where} is not 1-D"
    grid, block = lf.grid[0].expr, lf.block[0].value
    if block is None or grid is None:
        return f"{where} has a block or grid that is not read"
    if grid.is_Integer and work.is_Integer:
        return None if int(grid) * block >= int(work) else f"{where} runs fewer threads than the {work} outputs"
    kind, w = grid_rounding(grid, block, "x")
    if kind != "ceil" or w is None or sympy.simplify(w - work) != 0:
        return f"{where} does not cover rows * row length ({work}) outputs with a ceil-division"
    return None


def launch_edits(unit: CudaUnit, fr: FlatRemap) -> list[TextEdit] | str:
    """Every launch's edits to a ``TILE x TILE`` block and a grid over (columns, rows), with the
    ``__launch_bounds__`` kept valid; or why a launch cannot take them (not found, not 1-D, not covering)."""
    if not unit.launches:
        return f"no launch of {unit.kernel.name} found; the 2-D grid cannot be written"
    edits: list[TextEdit] = []
    for la in unit.launches:
        if la.block is None:
            return f"the launch on line {la.site.line} has no block argument"
        m, w = _host_value(unit, la, fr.rows), _host_value(unit, la, fr.width)
        if isinstance(m, str) or isinstance(w, str):
            return m if isinstance(m, str) else str(w)
        why = _covers(unit, la, m[1] * w[1])
        if why is not None:
            return why
        grid = [f"(({w[0]}) + {TILE - 1}) / {TILE}", f"(({m[0]}) + {TILE - 1}) / {TILE}"]
        edits += [launch_dims_edit(unit, la, la.grid, grid), launch_dims_edit(unit, la, la.block, [str(TILE)] * 2)]
    bounds = bounds_edit(unit, None, TILE * TILE)
    if isinstance(bounds, str):
        return bounds
    return [*edits, *([bounds] if bounds is not None else [])]


def remap_edits(unit: CudaUnit) -> list[TextEdit] | str:
    """All the edits of the remap (body and launches), or one line why the kernel is not remapped."""
    fr = flat_remap(unit.source, unit.facts)
    if isinstance(fr, str):
        return fr
    launches = launch_edits(unit, fr)
    if isinstance(launches, str):
        return launches
    return [*body_edits(unit, fr), *launches]


@register
class CudaFlatIndex2D(CudaTransform):
    """A flattened 1-D thread index split into row and column -> a 2-D thread index and a 2-D launch."""

    id = "cuda.flat_index_2d"
    languages = CUDA_LANGS
    summary = "2-D thread index (row on y, column on x) for a 1-D launch split by idx / W and idx % W"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate: the remap of :func:`remap_edits` (16x16 blocks), else why not in one line."""
        edits = remap_edits(unit)
        if isinstance(edits, str):
            return self.not_applicable(edits)
        return [self.candidate(model, f"map {kernel.name}'s row and column to a 2-D thread index (blocks of "
                               f"{TILE}x{TILE} threads, a 2-D grid over the output)", {"threads": [TILE, TILE]}, edits)]
