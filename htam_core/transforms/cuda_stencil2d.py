"""A 2-D stencil's window through a shared-memory tile with halo: the 2-D form of ``cuda.stencil_smem_tile``
(:mod:`htam_core.transforms.cuda_stencil` dispatches here when the kernel's window is 2-D).

``in[(y + dy) * W + (x + dx)]`` for ``|dx|, |dy| <= R`` reads every input element once per thread whose window
holds it. The rewrite stages the block's window, its ``BY x BX`` elements and the halo (``(BY + 2R) x (BX + 2R)``;
any other window offsets alike), in a static ``__shared__ T tile[BY + hy][BX + hx]``: the block's threads load it
cooperatively with a loop strided by the block's thread count at the top of the kernel, where every thread runs,
then ``__syncthreads()``, and each window read becomes a read of the tile. The loads are guarded so that exactly the
elements the original reads are loaded (:func:`~htam_core.source.analysis.stencil2d.tile_conditions_2d`, from the
bounds checks as written, per axis), so no element the original would not read is read out of range; the original's
checks stay in place, so each window read reads a slot that was loaded.

The block must be one constant ``(BX, BY)`` at every launch (a ``dim3`` of constants, a macro, a ``constexpr``): the
tile is sized by it. Otherwise, and for a kernel that reads ``threadIdx.z``, a bound or the pointer assigned in the
body, launches that bind different template arguments, or a tile over the block's static shared memory, refused in
one line.

Idea source: the 2-D tiled stencil with halo cells (Kirk and Hwu, "Programming Massively Parallel Processors",
ch. 8, "strategy 2": a tile of input elements larger than the block's output, loaded in several passes).
"""

from __future__ import annotations

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.facts import Stencil2D, sym
from htam_core.source.analysis.stencil import ELEMENT, c_condition, c_text
from htam_core.source.analysis.stencil2d import ELEMENT_Y, tile_conditions_2d
from htam_core.transforms._cuda import CudaUnit, delete_statement_edit
from htam_core.transforms.base import TextEdit

__all__ = ["Tile2D", "assigned_name", "block_2d", "clamp_text", "condition_2d", "dead_alias_edits",
           "guard_lines", "head_2d", "insert_top", "local_terms", "read_edits_2d", "reassigned_2d"]

#: The tile's name (as the 1-D step's).
TILE = "htam_tile"
_BX, _BY, _BDX, _BDY = sym("blockIdx.x"), sym("blockIdx.y"), sym("blockDim.x"), sym("blockDim.y")


def assigned_name(unit: CudaUnit, names: set[str]) -> str | None:
    """The first of ``names`` that the kernel's body assigns or increments, or ``None``."""
    for w in syn.writes(unit.body):
        target = w.child_by_field_name("left") or w.child_by_field_name("argument")
        if target is not None and unit.t(target).strip() in names:
            return unit.t(target).strip()
    return None


def insert_top(unit: CudaUnit, lines: list[str]) -> TextEdit:
    """An edit inserting ``lines`` at the top of the kernel's body, each on its own line at the body's indent."""
    stmts = list(unit.body.named_children)
    ind = syn.indent_of(unit.src, stmts[0].start_byte) if stmts else "    "
    return unit.insert(unit.body.start_byte + 1, "".join(f"\n{ind}{ln}" for ln in lines))


def dead_alias_edits(unit: CudaUnit, pointer: str, spans: list[tuple[int, int]]) -> list[TextEdit]:
    """Edits deleting the declarations of the pointer-offset locals into ``pointer`` (``const float *row = in + y *
    W;``) that nothing reads once the reads at the file bytes ``spans`` read the tile: each such local's every use
    lies in one of ``spans`` or in the declaration of another such local. A declaration statement is deleted only
    when every name it declares is such a local (its line with it when it stands alone on it)."""
    dead = {al.name: al for al in unit.facts.pointer_aliases if al.pointer == pointer}
    changed = True
    while changed:
        inside = spans + [al.span for al in dead.values()]
        keep = {n for n in dead if any(not any(s <= r.start_byte + unit.base and r.end_byte + unit.base <= e
                                                for s, e in inside)
                                       for r in syn.references(unit.body, unit.src, n))}
        changed = bool(keep)
        dead = {n: al for n, al in dead.items() if n not in keep}
    stmts: dict[tuple[int, int], int] = {}
    for al in dead.values():
        stmts[al.span] = stmts.get(al.span, 0) + 1
    return [delete_statement_edit(unit, span) for span, n in stmts.items()
            if unit.src[span[0] - unit.base:span[1] - unit.base].count(b"=") == n]


def block_2d(unit: CudaUnit, st: Stencil2D) -> tuple[int, int] | str:
    """The block ``(BX, BY)`` every launch gives as constants, or one line why the tile has no size."""
    launches = unit.facts.launches
    if not launches:
        return f"{unit.kernel.name} has no launch in sight; the 2-D tile's size needs the block"
    dims = {la.block_shape for la in launches}
    if None in dims or any(d[2] != 1 for d in dims if d is not None):  # type: ignore[index]
        return "a launch does not give a constant 2-D block; the 2-D tile is sized at compile time by the block"
    if len(dims) != 1:
        return "the launches give different blocks; the 2-D tile is sized by one block"
    bx, by, _ = dims.pop()  # type: ignore[misc]
    r = st.reads[0]
    for e, b, axis in ((r.x.extent, bx, "x"), (r.y.extent, by, "y")):
        if e.is_Integer and int(e) != b:
            return f"the index steps blocks along {axis} by {e} but the launch gives {b} threads"
    return bx, by


def reassigned_2d(unit: CudaUnit, st: Stencil2D) -> str | None:
    """A name the tile's load reads (a bound such as ``W``, the pitch, the window's pointer) that the body
    assigns, so its value at the top of the body, where the tile is loaded, may not be the one the reads see."""
    names = {s.name for g in tile_conditions_2d(st) for t in g for s in t.free_symbols}
    names |= {s.name for s in st.pitch.free_symbols | st.base.free_symbols} | {st.pointer}
    names |= {s.name for ax in st.clamps for b in ax if b is not None for s in b.free_symbols}
    names -= {ELEMENT.name, ELEMENT_Y.name}
    return assigned_name(unit, names)


def _always(t: sympy.Expr) -> bool:
    """``t > 0`` for every block: a positive constant plus non-negative multiples of the block indices."""
    k, rest = t.as_coeff_Add()
    if rest == 0:
        return bool(k > 0)
    if k <= 0 or not rest.free_symbols <= {_BX, _BY}:
        return False
    return all(c >= 0 for c in sympy.Poly(rest, _BX, _BY).coeffs())


def _implied_dropped(terms: list[sympy.Expr]) -> list[sympy.Expr]:
    """``terms`` (a conjunction of ``t > 0``) without the terms another one implies (``t - u`` a non-negative
    constant: ``W - e + 1 > 0`` follows from ``W - e > 0``)."""
    uniq = list(dict.fromkeys(terms))
    return [t for t in uniq if not any(u != t and sympy.expand(t - u).is_number and sympy.expand(t - u) >= 0
                                       for u in uniq)]


def condition_2d(st: Stencil2D, cast: str, block: tuple[int, int]) -> str | None:
    """The C condition under which element ``(htam_ey, htam_ex)`` of the tile is loaded (``""``: always); ``None``
    when a term cannot be spelled or no thread reads the window. The terms every read's conjunction holds (the
    extents' checks, ``W >= 3``) are spelled once, before the disjunction of the rest; a term on where the element
    lies in the tile (``htam_c <= 31``) is spelled over the tile's slot and left out when every slot holds it
    (:func:`local_terms`); each read's conjunction stands on its own line."""
    subs = {_BDX: block[0], _BDY: block[1]}
    tile = Tile2D(st, block)
    groups = [_implied_dropped([t for t in (sympy.expand(t.subs(subs)) for t in g) if not _always(t)])
              for g in tile_conditions_2d(st)]
    starts = {ELEMENT: (block[0] * _BX + tile.lx, _C, tile.cols), ELEMENT_Y: (block[1] * _BY + tile.ly, _R, tile.rows)}
    local = [g for g in (local_terms(g, starts) for g in groups) if g is not None]
    names = {ELEMENT: "htam_ex", ELEMENT_Y: "htam_ey", _C: "htam_c", _R: "htam_r"}
    return spell_load_condition(local, names, cast) if local else None


#: The tile slot's column and row (``htam_c``, ``htam_r``): the element is the tile's start plus them.
_C, _R = sym("htam_c"), sym("htam_r")


def local_terms(terms: list[sympy.Expr], starts: dict[sympy.Symbol, tuple[sympy.Expr, sympy.Symbol, int]]
                ) -> list[sympy.Expr] | None:
    """``terms`` (a conjunction of ``t > 0`` over the element's coordinates) with each term that, once the element
    is written as the tile's start plus the slot (``starts``: element symbol -> (the tile's start along that axis,
    the slot's symbol, the tile's extent)), reads the slot alone spelled over the slot (``htam_c <= 31`` for
    ``32 * blockIdx.x >= -30 + htam_ex``), and left out when every slot ``0 .. extent - 1`` holds it; ``None``
    when no slot does (the read loads nothing). Other terms are kept as they are. Idea source: interval reasoning
    over a loop index's range, as a compiler's bounds-check elimination does."""
    out: list[sympy.Expr] = []
    for t in terms:
        local = sympy.expand(t.subs({e: s0 + slot for e, (s0, slot, _) in starts.items()}, simultaneous=True))
        slots = [(slot, n) for _, slot, n in starts.values() if local.has(slot)]
        if len(slots) != 1 or local.free_symbols != {slots[0][0]} or not local.is_polynomial(slots[0][0]) \
                or sympy.degree(local, slots[0][0]) != 1:
            out.append(t)
            continue
        slot, n = slots[0]
        lo, hi = local.subs(slot, 0), local.subs(slot, n - 1)
        if min(lo, hi) > 0:
            continue
        if max(lo, hi) <= 0:
            return None
        out.append(local)
    return list(dict.fromkeys(out))


def spell_load_condition(groups: list[list[sympy.Expr]], names: dict[sympy.Symbol, str], cast: str) -> str | None:
    """The C condition of a tile element's load from ``groups`` (one conjunction of ``t > 0`` terms per window read,
    over the tile element's symbols ``names``): the terms every group holds spelled once, then the disjunction of
    the rest (``""``: always); ``None`` when there is no group or a term cannot be spelled (shared by the 2-D and
    3-D tiles)."""
    if not groups:
        return None
    common = [t for t in groups[0] if all(t in g for g in groups[1:])]
    rest = [[t for t in g if t not in common] for g in groups]
    spelled = [[c_condition(t, names, cast) for t in g] for g in [common, *rest]]
    if any(t is None for g in spelled for t in g):
        return None
    parts = list(dict.fromkeys(" && ".join(g) for g in spelled[1:]))  # type: ignore[arg-type]
    either = "" if any(not p for p in parts) else parts[0] if len(parts) == 1 else \
        "(" + "\n || ".join(f"({p})" for p in parts) + ")"
    head = " && ".join(spelled[0])  # type: ignore[arg-type]
    return f"{head}\n && {either}" if head and "\n" in either else " && ".join(x for x in [head, either] if x)


def guard_lines(cond: str, statement: str) -> list[str]:
    """The lines of ``if (cond) statement`` in the load loop's body (indented by four): on one line when ``cond``
    is one line, else each of its lines (a read's conjunction, :func:`spell_load_condition`) on its own, with the
    statement below them (shared by the 2-D and 3-D tiles)."""
    if not cond:
        return [f"    {statement}"]
    first, *more = cond.split("\n")
    if not more:
        return [f"    if ({cond}) {statement}"]
    return [f"    if ({first}", *(f"        {m}" for m in more[:-1]), f"        {more[-1]})", f"        {statement}"]


class Tile2D:
    """The tile's shape: the block ``(bx, by)``, the window's lowest offsets ``(lx, ly)`` and its extents beyond
    the block ``(hx, hy)`` (``2R`` each for a symmetric window)."""

    def __init__(self, st: Stencil2D, block: tuple[int, int]) -> None:
        """``st``: the window; ``block``: the launch's constant block ``(x, y)``."""
        (self.lx, self.ly), (hix, hiy) = st.lo, st.hi
        self.bx, self.by = block
        self.hx, self.hy = hix - self.lx, hiy - self.ly

    @property
    def cols(self) -> int:
        """Elements in one tile row."""
        return self.bx + self.hx

    @property
    def rows(self) -> int:
        """Tile rows."""
        return self.by + self.hy


def head_2d(unit: CudaUnit, st: Stencil2D, etype: str, tile: Tile2D, cast: str, cond: str) -> TextEdit | None:
    """The tile's declaration, its guarded cooperative load (one loop over the tile's flattened slots, strided by
    the block's thread count) and the barrier, inserted at the top of the body; ``None`` when the pitch or the
    plane's offset cannot be spelled. The load reads the block's plane: the window's block-uniform offset
    (:attr:`~htam_core.source.analysis.facts.Stencil2D.base`, ``blockIdx.z * H * W``) is added to each element's."""
    pitch, base = c_text(st.pitch, {}, cast), c_text(st.base, {}, cast)
    if pitch is None or base is None:
        return None
    x0 = c_text(tile.bx * _BX + tile.lx, {}, cast)
    y0 = c_text(tile.by * _BY + tile.ly, {}, cast)
    cx, cy = (clamp_text(n, c, cast) for n, c in zip(("htam_ex", "htam_ey"), st.clamps, strict=True))
    if cx is None or cy is None:
        return None
    threads = tile.bx * tile.by
    plane = "" if st.base == 0 else f"{base} + "
    lines = [f"// the block's window of {st.pointer} (its {tile.by} x {tile.bx} elements and the halo) read once "
             "from global memory, loaded where the original reads",
             f"__shared__ {etype} {TILE}[{tile.rows}][{tile.cols}];",
             f"for (int htam_k = threadIdx.y * {tile.bx} + threadIdx.x; htam_k < {tile.rows * tile.cols}; "
             f"htam_k += {threads}) {{",
             f"    const int htam_r = htam_k / {tile.cols}, htam_c = htam_k % {tile.cols};",
             f"    const {cast} htam_ey = {y0} + htam_r, htam_ex = {x0} + htam_c;",
             *guard_lines(cond, f"{TILE}[htam_r][htam_c] = {st.pointer}[{plane}{cy} * {pitch} + {cx}];"),
             "}",
             "__syncthreads();  // every thread reaches it: the tile is complete before any window read"]
    return insert_top(unit, lines)


def clamp_text(name: str, clamp: tuple[sympy.Expr | None, sympy.Expr | None], cast: str) -> str | None:
    """``name`` held to the clamp ``(lo, hi)`` as the kernel clamps its coordinate (``min(max(htam_ex, 0), ((int)W)
    - 1)``; ``max`` or ``min`` alone for one side, ``name`` for none), both arguments of each call of type ``cast``;
    ``None`` when a bound cannot be spelled."""
    out = name
    for bound, fn in zip(clamp, ("max", "min"), strict=True):
        if bound is None:
            continue
        b = c_text(bound, {}, cast)
        if b is None:
            return None
        out = f"{fn}({out}, {b if cast == 'int' else f'({cast})({b})'})"
    return out


def read_edits_2d(unit: CudaUnit, st: Stencil2D, tile: Tile2D) -> list[TextEdit]:
    """Each window read of the stencil's pointer turned into a read of the tile at the same offsets."""
    out = []
    for r in st.reads:
        row = f"threadIdx.y{_plus(r.y.offset - tile.ly)}{' + ' + r.y.var if r.y.var else ''}"
        col = f"threadIdx.x{_plus(r.x.offset - tile.lx)}{' + ' + r.x.var if r.x.var else ''}"
        out.append(unit.replace_span(r.access.span, f"{TILE}[{row}][{col}]"))
    return out


def _plus(k: int) -> str:
    """`` + k`` for a positive ``k``, ``""`` for zero (offsets into the tile are never negative)."""
    return f" + {k}" if k else ""
