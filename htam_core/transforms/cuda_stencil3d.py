"""A 3-D stencil's window through a shared-memory tile with halo: the 3-D form of ``cuda.stencil_smem_tile``
(:mod:`htam_core.transforms.cuda_stencil` dispatches here when the kernel's window is 3-D).

``in[IDX(x + dx, y + dy, z + dz)]`` reads every input element once per thread whose window holds it (7 times for a
7-point Jacobi). The rewrite stages the block's window, its ``BZ x BY x BX`` elements and the halo, in a static
``__shared__ T tile[BZ + hz][BY + hy][BX + hx]``, loaded cooperatively at the top of the kernel by a loop strided by
the block's thread count, then ``__syncthreads()``; each window read becomes a read of the tile. As in 2-D
(:mod:`htam_core.transforms.cuda_stencil2d`), the loads are guarded so that exactly the elements the original reads
are loaded (:func:`~htam_core.source.analysis.stencil3d.tile_conditions_3d`), and the original's checks stay.

This is the textbook's first 3-D step (a full 3-D input tile, every neighbour from shared memory); the "2.5-D"
form that marches a 2-D tile along z with the z neighbours in registers restructures the kernel's loop nest and is
not made here. The block must be one constant ``(BX, BY, BZ)`` at every launch.

Idea source: Kirk, Hwu and El Hajj, "Programming Massively Parallel Processors", 4th ed., ch. 8 ("Shared memory
tiling for stencil sweep"; thread coarsening in z and register tiling are its later steps).
"""

from __future__ import annotations

import sympy

from htam_core.source.analysis.facts import Stencil3D, sym
from htam_core.source.analysis.stencil import ELEMENT, c_text
from htam_core.source.analysis.stencil2d import ELEMENT_Y
from htam_core.source.analysis.stencil3d import ELEMENT_Z, tile_conditions_3d
from htam_core.transforms._cuda import CudaUnit
from htam_core.transforms.base import TextEdit
from htam_core.transforms.cuda_stencil2d import (
    TILE,
    assigned_name,
    guard_lines,
    insert_top,
    spell_load_condition,
)

__all__ = ["Tile3D", "block_3d", "condition_3d", "head_3d", "read_edits_3d", "reassigned_3d"]

_B = [sym(f"blockIdx.{d}") for d in "xyz"]
_BD = [sym(f"blockDim.{d}") for d in "xyz"]
_NAMES = {ELEMENT: "htam_ex", ELEMENT_Y: "htam_ey", ELEMENT_Z: "htam_ez"}


def block_3d(unit: CudaUnit, st: Stencil3D) -> tuple[int, int, int] | str:
    """The block ``(BX, BY, BZ)`` every launch gives as constants, or one line why the tile has no size."""
    launches = unit.facts.launches
    if not launches:
        return f"{unit.kernel.name} has no launch in sight; the 3-D tile's size needs the block"
    dims = {la.block_shape for la in launches}
    if None in dims or len(dims) != 1:
        return "the launches do not give one constant 3-D block; the 3-D tile is sized at compile time by the block"
    block = dims.pop()
    r = st.reads[0]
    for e, b, axis in zip((r.x.extent, r.y.extent, r.z.extent), block, "xyz", strict=True):  # type: ignore[arg-type]
        if e.is_Integer and int(e) != b:
            return f"the index steps blocks along {axis} by {e} but the launch gives {b} threads"
    return block  # type: ignore[return-value]


def reassigned_3d(unit: CudaUnit, st: Stencil3D) -> str | None:
    """A name the tile's load reads (a bound, a pitch, the pointer) that the body assigns, or ``None``."""
    names = {s.name for g in tile_conditions_3d(st) for t in g for s in t.free_symbols}
    names |= {s.name for s in (st.pitch.free_symbols | st.plane.free_symbols)} | {st.pointer}
    return assigned_name(unit, names - {s.name for s in _NAMES})


def _always(t: sympy.Expr) -> bool:
    """``t > 0`` for every block: a positive constant plus non-negative multiples of the block indices."""
    k, rest = t.as_coeff_Add()
    if rest == 0:
        return bool(k > 0)
    if k <= 0 or not rest.free_symbols <= set(_B):
        return False
    return all(c >= 0 for c in sympy.Poly(rest, *_B).coeffs())


def condition_3d(st: Stencil3D, cast: str, block: tuple[int, int, int]) -> str | None:
    """The C condition under which element ``(htam_ez, htam_ey, htam_ex)`` of the tile is loaded (``""``:
    always); ``None`` when a term cannot be spelled or no thread reads the window."""
    subs = dict(zip(_BD, block, strict=True))
    groups = [[t for t in dict.fromkeys(sympy.expand(t.subs(subs)) for t in g) if not _always(t)]
              for g in tile_conditions_3d(st)]
    return spell_load_condition(groups, _NAMES, cast)


class Tile3D:
    """The tile's shape: the block, the window's lowest offsets and its extents beyond the block, per axis."""

    def __init__(self, st: Stencil3D, block: tuple[int, int, int]) -> None:
        """``st``: the window; ``block``: the launch's constant block ``(x, y, z)``."""
        self.lo, self.block = st.lo, block
        self.extra = tuple(h - lo for h, lo in zip(st.hi, st.lo, strict=True))

    @property
    def dims(self) -> tuple[int, int, int]:
        """The tile's extents ``(x, y, z)``."""
        return (self.block[0] + self.extra[0], self.block[1] + self.extra[1], self.block[2] + self.extra[2])

    @property
    def slots(self) -> int:
        """The tile's elements."""
        return self.dims[0] * self.dims[1] * self.dims[2]


def head_3d(unit: CudaUnit, st: Stencil3D, etype: str, tile: Tile3D, cast: str, cond: str) -> TextEdit | None:
    """The tile's declaration, its guarded cooperative load and the barrier, at the top of the body; ``None``
    when a pitch cannot be spelled."""
    pitch, plane = c_text(st.pitch, {}, cast), c_text(st.plane, {}, cast)
    starts = [c_text(b * _B[k] + tile.lo[k], {}, cast) for k, b in enumerate(tile.block)]
    if pitch is None or plane is None or None in starts:
        return None
    (nx, ny, nz), (bx, by, bz) = tile.dims, tile.block
    lines = [f"// the block's window of {st.pointer} (its {bz} x {by} x {bx} elements and the halo) read once from "
             "global memory, loaded where the original reads",
             f"__shared__ {etype} {TILE}[{nz}][{ny}][{nx}];",
             f"for (int htam_k = (threadIdx.z * {by} + threadIdx.y) * {bx} + threadIdx.x; htam_k < {tile.slots}; "
             f"htam_k += {bx * by * bz}) {{",
             f"    const int htam_p = htam_k / {nx * ny}, htam_r = htam_k / {nx} % {ny}, htam_c = htam_k % {nx};",
             f"    const {cast} htam_ez = {starts[2]} + htam_p, htam_ey = {starts[1]} + htam_r, "
             f"htam_ex = {starts[0]} + htam_c;",
             *guard_lines(cond, f"{TILE}[htam_p][htam_r][htam_c] = {st.pointer}[htam_ez * {plane} + "
                                f"htam_ey * {pitch} + htam_ex];"),
             "}",
             "__syncthreads();  // every thread reaches it: the tile is complete before any window read"]
    return insert_top(unit, lines)


def read_edits_3d(unit: CudaUnit, st: Stencil3D, tile: Tile3D) -> list[TextEdit]:
    """Each window read of the stencil's pointer turned into a read of the tile at the same offsets."""
    out = []
    for r in st.reads:
        at = []
        for k, p in zip("zyx", (r.z, r.y, r.x), strict=True):
            shift = p.offset - tile.lo["xyz".index(k)]
            at.append(f"[threadIdx.{k}{f' + {shift}' if shift else ''}{' + ' + p.var if p.var else ''}]")
        out.append(unit.replace_span(r.access.span, TILE + "".join(at)))
    return out
