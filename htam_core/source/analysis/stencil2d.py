"""2-D window reads (stencils) in one normal form, computed from the index forms
(:class:`~htam_core.source.analysis.facts.Stencil2D`).

A kernel reads a 2-D window of one pointer when every read of that pointer is ``in[(y + cy + v) * P + x + cx +
u]``: ``x = blockIdx.x * BX + threadIdx.x`` and ``y = blockIdx.y * BY + threadIdx.y`` the thread's global indices
(``BX`` is ``blockDim.x`` or a constant block extent, ``BY`` likewise), ``P`` the row pitch (the index's stride in
``threadIdx.y``: a parameter ``W``, a ``pitch``, ``W + 2 * R``, a constant), ``cx``/``cy`` integers and ``u``/``v``
the variables of window loops of constant range counting up by one (``v`` moving the index by ``P``, ``u`` by one;
either may be absent: a 5-point Jacobi written out has neither). Nothing is matched on the spelling: the index is
the analysis layer's form, through locals, the samples' ``bx``/``tx`` aliases, casts, 64-bit indices, pointer-offset
locals (``const float *row = in + y * W``) and access macros.

The conditions a read runs under (a guarded body, an early ``return``/``continue``, a ``?:``) are read per axis:
each is a term ``d > 0`` on one axis's global index (``x >= R``, ``y < H - R``), on the element's coordinate along
one axis (``x + dx >= 0``, ``yy < H``), or on the parameters alone; a condition that mixes the axes (``x + y < n``,
a check of the flattened index) is not read. Since the block's threads form a rectangle and the window loops have
constant ranges, the elements the block reads through one read are the product of the 1-D sets of each axis, each
the exact set of :func:`~htam_core.source.analysis.stencil.tile_conditions` for that axis; the tile loads their
union over the reads (:func:`tile_conditions_2d`) and no other element.

Idea source: the 2-D tiled stencil with halo cells (Kirk and Hwu, "Programming Massively Parallel Processors",
ch. 8; the CUDA samples' ``convolutionTexture``/FDTD kernels); per-axis guards as in polyhedral bound analysis.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import sympy

from htam_core.source.analysis.clamp import Clamp, clamp_locals, unclamp
from htam_core.source.analysis.facts import (
    Access,
    LoopFact,
    PointerAlias,
    PointerFacts,
    Stencil2D,
    Stencil2DRead,
    StencilRead,
    stride_of,
    sym,
)
from htam_core.source.analysis.stencil import (
    ELEMENT,
    THREAD,
    _other_use,
    _read_conditions,
    c_text,
    common_clamp,
    computed_name,
)
from htam_core.source.analysis.transpose import ExprOf, access_bounds
from htam_core.source.analysis.unit import CudaSource

__all__ = ["ELEMENT_Y", "find_stencil2d", "tile_conditions_2d"]

#: The symbol of the element's row (its y coordinate) in :func:`tile_conditions_2d`; its column is
#: :data:`~htam_core.source.analysis.stencil.ELEMENT`.
ELEMENT_Y = sym("stencil.ey")

_TX, _TY, _BX, _BY = sym("threadIdx.x"), sym("threadIdx.y"), sym("blockIdx.x"), sym("blockIdx.y")
_BDX, _BDY = sym("blockDim.x"), sym("blockDim.y")
_X, _Y, _EX = sym("stencil.x"), sym("stencil.y"), sym("stencil.ex")
_BUILTINS = {_TX, _TY, _BX, _BY, _BDX, _BDY, sym("threadIdx.z"), sym("blockIdx.z"), sym("blockDim.z")}
#: The block-uniform builtins a plane's offset and a condition on no axis may read (``c = blockIdx.z; if (c >= C)``).
_PLANE = {sym("blockIdx.z"), sym("blockDim.z")}
_KINDS = ("subscript_expression", "pointer_expression", "call_expression")


def _pitch(a: Access, loop_vars: set[sympy.Symbol]) -> sympy.Expr | str:
    """The row pitch of read ``a`` (its index's stride in ``threadIdx.y``), or why it has none."""
    if a.kind != "read" or a.vector or a.index is None:
        return f"{a.pointer} is written or read as vectors or at an index that is not affine (a clamped index)"
    if a.stride("threadIdx.x") is None:
        return f"the read {a.index_text} is not affine in threadIdx.x (a wrapped index is not read)"
    if a.stride("threadIdx.x") != 1:
        return f"the read {a.index_text} does not move by one with threadIdx.x"
    p = a.stride("threadIdx.y")
    if p is None or p == 0 or p.free_symbols & (_BUILTINS | loop_vars):
        return f"the read {a.index_text} does not move by a row pitch with threadIdx.y"
    return sympy.expand(p)


def _loop_ok(lp: LoopFact) -> bool:
    """The loop counts up by one over a constant range from a constant start."""
    return lp.update == "+" and lp.step == 1 and lp.cmp in ("<", "<=") and lp.trip_value is not None \
        and lp.start is not None and lp.start.is_Integer


def _window_loops(a: Access, loops: tuple[LoopFact, ...], pitch: sympy.Expr
                  ) -> tuple[LoopFact | None, LoopFact | None] | str:
    """The loops whose variables move read ``a`` along x (by one) and along y (by the pitch), or why not."""
    found: list[LoopFact | None] = [None, None]
    for lid in a.loops:
        lp = loops[lid]
        s = a.stride(lp.var) if lp.var else sympy.Integer(0)
        if s == 0:
            continue
        axis = 0 if s == 1 else 1 if s is not None and sympy.expand(s - pitch) == 0 else -1
        if axis < 0 or found[axis] is not None:
            return f"the read {a.index_text} moves with loop variable {lp.var} by {s}, not by one or a row"
        if not _loop_ok(lp):
            return f"the loop over {lp.var} does not count up by one over a constant range"
        found[axis] = lp
    return found[0], found[1]


def _split_rest(rest: sympy.Expr, pitch: sympy.Expr) -> tuple[int, int, sympy.Expr] | None:
    """``(cx, cy, base)`` with ``rest == base + cy * pitch + cx``: ``cx``/``cy`` integers (for a constant pitch,
    ``|cx| <= pitch / 2``) and ``base`` the part of ``rest`` that is neither a constant nor a constant number of rows
    (a plane's offset, ``blockIdx.z * H * W``; ``0`` for none); ``None`` when the constants do not split so."""
    rest = sympy.expand(rest)
    if pitch.is_Integer:
        k, base = rest.as_coeff_Add()
        if not k.is_Integer or pitch <= 0:
            return None
        cy = int(sympy.floor(sympy.Rational(int(k), int(pitch)) + sympy.Rational(1, 2)))
        return int(k) - cy * int(pitch), cy, base
    if not pitch.free_symbols:
        return None
    s = sorted(pitch.free_symbols, key=str)[0]
    k = pitch.coeff(s)
    if not k.is_Integer or k == 0 or sympy.expand(pitch - k * s).has(s):
        return None
    cy = sympy.expand(rest.coeff(s) / k).as_coeff_Add()[0]
    cx, base = sympy.expand(rest - cy * pitch).as_coeff_Add()
    return (int(cx), int(cy), base) if cx.is_Integer and cy.is_Integer else None


def _offsets(a: Access, pitch: sympy.Expr, u: str | None, v: str | None, banned: set[sympy.Symbol]
             ) -> tuple[int, int, sympy.Expr, sympy.Expr, sympy.Expr] | str:
    """``(cx, cy, BX, BY, base)`` for a read ``a`` at ``base + (y + cy + v) * pitch + x + cx + u``, ``base`` an
    offset the same for every thread of a block (a plane's, ``blockIdx.z * H * W``: it reads none of ``banned``,
    the thread indices, ``blockIdx.x``/``y`` and the loop variables), or why not."""
    idx = sympy.expand(a.index - (sym(u) if u else 0) - (pitch * sym(v) if v else 0))  # type: ignore[operator]
    ex = sympy.expand(idx.coeff(_BX))
    ey = sympy.expand(sympy.cancel(idx.coeff(_BY) / pitch))
    why = f"the read {a.index_text} is not at the global thread index (x, y) plus constants"
    for e, bd in ((ex, _BDX), (ey, _BDY)):
        if e != bd and not (e.is_Integer and e > 0):
            return why
    got = _split_rest(sympy.expand(idx - ex * _BX - _TX - pitch * (ey * _BY + _TY)), pitch)
    if got is None:
        return why
    if got[2].free_symbols & banned:
        return f"the read {a.index_text} is at the global thread index (x, y) plus an offset that differs " \
               "between the threads of a block"
    if c_text(got[2], {}, "int") is None:
        return f"the read {a.index_text} is at the global thread index (x, y) plus a plane offset that is not a sum " \
               "of products of block indices and parameters (a division or a remainder)"
    return got[0], got[1], ex, ey, got[2]


def _axis_of(t: sympy.Expr) -> str | None:
    """``"x"``, ``"y"``, ``""`` (no axis) for a condition term over one axis's symbols, ``None`` for a mixed one
    or one with a thread coefficient other than -1, 0, 1."""
    xs, ys = t.free_symbols & {_X, _EX}, t.free_symbols & {_Y, ELEMENT_Y}
    if (xs and ys) or len(xs) > 1 or len(ys) > 1:
        return None
    for g in (_X, _Y):
        if t.coeff(g) not in (-1, 0, 1) or sympy.expand(t - t.coeff(g) * g).has(g):
            return None
    return "x" if xs else "y" if ys else ""


def _axis_terms(bounds: tuple, subs: dict[sympy.Symbol, sympy.Expr], banned: set[sympy.Symbol]
                ) -> dict[str, list[sympy.Expr]] | str:
    """The read's conditions (``lo < hi``) as ``d > 0`` terms per axis, over ``_X``/``_EX`` (x), ``_Y``/
    ``ELEMENT_Y`` (y) or neither (``""``), or why one is none of them."""
    out: dict[str, list[sympy.Expr]] = {"x": [], "y": [], "": []}
    for b in bounds:
        t = sympy.expand(sympy.expand(b.hi - b.lo).subs(subs, simultaneous=True))
        axis = None if t.free_symbols & banned else _axis_of(t)
        if axis is None:
            return "a condition of the window read is not a bound on one axis's thread index or element coordinate"
        out[axis].append(t)
    return out


def _axis_read(a: Access, c: int, lp: LoopFact | None, terms: list[sympy.Expr], g: sympy.Symbol,
               e: sympy.Symbol, extent: sympy.Expr) -> StencilRead:
    """One axis of a 2-D read as a 1-D :class:`StencilRead` over ``THREAD``/``ELEMENT``."""
    first = int(lp.start) if lp else 0  # type: ignore[arg-type]
    last = first + (lp.trip_value or 1) - 1 if lp else 0
    thread = tuple(sympy.expand(t.subs(g, THREAD)) for t in terms if not t.has(e))
    element = tuple(sympy.expand(t.subs(e, ELEMENT)) for t in terms if t.has(e))
    return StencilRead(a, c, lp.var if lp else None, first, last, thread, element, extent)


_Sides = tuple[sympy.Expr | None, sympy.Expr | None]


def _clamp_axes(index: sympy.Expr, clamps: dict[sympy.Symbol, Clamp]) -> tuple[_Sides, _Sides] | str:
    """The clamps of a read's index (its form before :func:`~htam_core.source.analysis.clamp.unclamp`) per axis,
    ``((x lo, x hi), (y lo, y hi))``: a clamp added to the index of a coordinate moving by one with ``threadIdx.x``
    clamps the column, one multiplied by the row pitch of a coordinate moving by one with ``threadIdx.y`` the row;
    or why a clamp is neither (a clamp of the flattened index)."""
    sides: list[_Sides] = [(None, None), (None, None)]
    for s, c in clamps.items():
        tx, ty = stride_of(c.inner, "threadIdx.x"), stride_of(c.inner, "threadIdx.y")
        k = sympy.expand(index).coeff(s)
        k = None if sympy.expand(index - k * s).has(s) or k.has(s) else k
        axis = 0 if (tx, ty, k) == (1, 0, 1) else 1 if (tx, ty) == (0, 1) and k is not None and k != 0 and \
            not k.free_symbols & _BUILTINS else -1
        if axis < 0 or sides[axis] != (None, None):
            return "a clamped index is not a clamp of the column plus the row pitch times a clamp of the row"
        sides[axis] = (c.lo, c.hi)
    return sides[0], sides[1]


def _read(src: CudaSource, expr: ExprOf, a: Access, loops: tuple[LoopFact, ...], pitch: sympy.Expr
          ) -> tuple[Stencil2DRead, sympy.Expr] | str:
    """One read of the window pointer in the 2-D normal form with its block-uniform base offset (a plane's,
    :func:`_offsets`), or why it is not one."""
    lps = _window_loops(a, loops, pitch)
    if isinstance(lps, str):
        return lps
    u, v = (lp.var if lp else None for lp in lps)
    banned = {_TX, _TY, sym("threadIdx.z"), _BX, _BY} | {sym(lp.var) for lp in loops if lp.var}
    off = _offsets(a, pitch, u, v, banned)
    if isinstance(off, str):
        return off
    cx, cy, ex, ey, base = off
    node = src.node_at(a.span, _KINDS)
    bounds = access_bounds(node, src.body, src.src, expr) if node is not None else None
    if bounds is None:
        return f"the conditions of the read {a.index_text} are not conjunctions of bounds"
    subs: dict[sympy.Symbol, sympy.Expr] = {_TX: _X - ex * _BX, _TY: _Y - ey * _BY}
    if u:
        subs[sym(u)] = _EX - _X - cx
    if v:
        subs[sym(v)] = ELEMENT_Y - _Y - cy
    terms = _axis_terms(bounds, subs, (_BUILTINS - _PLANE) | banned)
    if isinstance(terms, str):
        return terms
    return Stencil2DRead(a, _axis_read(a, cx, lps[0], terms["x"] + terms[""], _X, _EX, ex),
                         _axis_read(a, cy, lps[1], terms["y"], _Y, ELEMENT_Y, ey)), base


def _neighbours(reads: list[Access], loops: tuple[LoopFact, ...]) -> bool:
    """Reads of one pointer that move with ``threadIdx.y`` and either differ by a constant or sit in a loop of
    constant trip count whose variable moves them: a 2-D window candidate."""
    if not any(a.index is not None and a.stride("threadIdx.y") not in (None, 0) for a in reads):
        return False
    if any(loops[i].var and loops[i].trip_value is not None and a.stride(loops[i].var) not in (None, 0)  # type: ignore[arg-type]
           for a in reads for i in a.loops):
        return True
    idx = [a.index for a in reads if a.index is not None]
    return any(not sympy.expand(x - y).has(_TX, _TY) and sympy.expand(x - y) != 0
               for k, x in enumerate(idx) for y in idx[k + 1:])


def _clamped(rs: list[Stencil2DRead], sides: list[tuple[_Sides, _Sides] | str]) -> Stencil2D | str:
    """The reads ``rs`` with their clamps ``sides`` (per read, per axis) and the window's clamp per axis
    (:func:`~htam_core.source.analysis.stencil.common_clamp`) as a :class:`Stencil2D` with no pointer or pitch
    yet, or why the clamps do not fit one tile."""
    bad = [s for s in sides if isinstance(s, str)]
    if bad:
        return bad[0]
    out = [replace(r, x=replace(r.x, clamp=s[0]), y=replace(r.y, clamp=s[1]))  # type: ignore[index]
           for r, s in zip(rs, sides, strict=True)]
    cx, cy = common_clamp(r.x for r in out), common_clamp(r.y for r in out)
    if isinstance(cx, str) or isinstance(cy, str):
        return cx if isinstance(cx, str) else cy  # type: ignore[return-value]
    return Stencil2D("", sympy.Integer(0), tuple(out), (cx, cy))


def _of_pointer(src: CudaSource, expr: ExprOf, loops: tuple[LoopFact, ...], pf: PointerFacts,
                reads: list[Access], aliases: tuple[PointerAlias, ...],
                sides: list[tuple[_Sides, _Sides] | str]) -> Stencil2D | str:
    """The 2-D window of pointer ``pf`` read by ``reads`` (clamped parts read as their coordinates, the clamps per
    read and axis in ``sides``), or why it is not one."""
    if pf.mode != "read":
        return f"{pf.name} is not only read by the kernel"
    other = _other_use(src, pf.name, reads, aliases)
    if other:
        return other
    loop_vars = {sym(lp.var) for lp in loops if lp.var}
    pitches = [_pitch(a, loop_vars) for a in reads]
    bad = [p for p in pitches if isinstance(p, str)]
    if bad:
        return bad[0]
    if len({sympy.expand(p) for p in pitches}) != 1:  # type: ignore[arg-type]
        return f"the reads of {pf.name} use different row pitches"
    pitch = sympy.expand(pitches[0])  # type: ignore[arg-type]
    got = [_read(src, expr, a, loops, pitch) for a in reads]
    bad = [g for g in got if isinstance(g, str)]
    if bad:
        return bad[0]
    rs = [g[0] for g in got if not isinstance(g, str)]
    if len({(r.x.extent, r.y.extent) for r in rs}) != 1:
        return f"the reads of {pf.name} use different block extents"
    bases = {g[1] for g in got if not isinstance(g, str)}
    if len(bases) != 1:
        return f"the reads of {pf.name} are at different plane offsets"
    st = _clamped(rs, sides)
    return st if isinstance(st, str) else replace(st, pointer=pf.name, pitch=pitch, base=bases.pop())


def find_stencil2d(src: CudaSource, expr: ExprOf, loops: tuple[LoopFact, ...], pointers: tuple[PointerFacts, ...],
                   aliases: tuple[PointerAlias, ...] = (), scalars: Iterable[str] | None = None) -> Stencil2D | str:
    """The kernel's 2-D window read (:class:`~htam_core.source.analysis.facts.Stencil2D`), or one line saying why
    the window the kernel reads is not read (``""`` when no pointer is read at neighbouring offsets along a 2-D
    thread index).

    Args:
        src: the kernel's parsed unit.
        expr: the affine reader of an expression node (``Affine.expr`` with the kernel's bindings).
        loops: the kernel's loops (:attr:`KernelFacts.loops`).
        pointers: the kernel's pointer parameters with their read and write sets.
        aliases: the kernel's pointer-offset locals (their declarations are uses of the pointer, not reads).
        scalars: the kernel's scalar parameters; when given, a window whose bounds or pitch read any other value (a
            local the body computes, ``int W = dims[0];``) is not one: a tile loaded at the top cannot read it.
    """
    why = ""
    for pf in pointers:
        raw = [a for a in pf.reads if a.space == "global"]
        pairs = [unclamp(src, expr, a) or (a, {}) for a in raw]
        reads = [a for a, _ in pairs]
        if not reads or not _neighbours(reads, loops):
            continue
        sides = [_clamp_axes(a.index, c) if c and a.index is not None else ((None, None), (None, None))
                 for a, (_, c) in zip(raw, pairs, strict=True)]
        got = _of_pointer(src, expr, loops, pf, reads, aliases, sides)
        if not isinstance(got, str):
            got = replace(got, clamp_locals=clamp_locals(src, [s for _, c in pairs for s in c]))
            bounds = [b for ax in got.clamps for b in ax if b is not None]
            name = computed_name([t for g in tile_conditions_2d(got) for t in g] + [got.pitch, got.base, *bounds],
                                 scalars)
            if not name:
                return got
            got = f"the window's bounds, row pitch or plane offset read {name}, which the kernel computes; a tile " \
                  "would be loaded before it"
        why = why or got
    return why


def _box(r: Stencil2DRead) -> tuple[int, int, int, int]:
    """The offsets ``(x lo, x hi, y lo, y hi)`` read ``r`` reaches."""
    return r.x.lo, r.x.hi, r.y.lo, r.y.hi


def _with_box(r: Stencil2DRead, b: tuple[int, int, int, int]) -> Stencil2DRead:
    """``r`` reaching the offsets of box ``b`` (its conditions kept)."""
    return replace(r, x=replace(r.x, offset=b[0], first=0, last=b[1] - b[0]),
                   y=replace(r.y, offset=b[2], first=0, last=b[3] - b[2]))


def _merge_axis(boxes: list[tuple[int, int, int, int]], axis: int) -> list[tuple[int, int, int, int]]:
    """Boxes with the same range on the other axis and touching ranges on ``axis`` (0: x, 1: y) merged."""
    lo, hi = 2 * axis, 2 * axis + 1

    def other(b: tuple[int, int, int, int]) -> tuple[int, ...]:
        return b[0:2] if axis else b[2:4]

    out: list[tuple[int, int, int, int]] = []
    for b in sorted(boxes, key=lambda b: (other(b), b[lo])):
        prev = out[-1] if out else None
        if prev is not None and other(prev) == other(b) and b[lo] <= prev[hi] + 1:
            m = list(prev)
            m[hi] = max(prev[hi], b[hi])
            out[-1] = (m[0], m[1], m[2], m[3])
        else:
            out.append(b)
    return out


def _merged(reads: tuple[Stencil2DRead, ...]) -> list[Stencil2DRead]:
    """The reads with the same conditions whose boxes touch along a row (then along a column) merged into one:
    the elements some thread reads through them are those it reads through the merged box."""
    groups: dict[tuple, list[Stencil2DRead]] = {}
    for r in reads:
        key = (r.x.thread_terms, r.x.element_terms, r.y.thread_terms, r.y.element_terms)
        groups.setdefault(key, []).append(r)
    out: list[Stencil2DRead] = []
    for rs in groups.values():
        boxes = _merge_axis(_merge_axis(sorted({_box(r) for r in rs}), 0), 1)
        out += [_with_box(rs[0], b) for b in boxes]
    return out


def tile_conditions_2d(st: Stencil2D) -> tuple[tuple[sympy.Expr, ...], ...]:
    """The elements the threads of one block read, as a disjunction of conjunctions of terms ``d > 0`` over
    :data:`~htam_core.source.analysis.stencil.ELEMENT` (the element's column), :data:`ELEMENT_Y` (its row), the
    block indices and extents and the kernel's parameters: element ``(e, ey)`` of the block's window is read by the
    original exactly when one conjunction holds. An empty conjunction is always true; an empty tuple: no element
    is read."""
    (xlo, ylo), (xhi, yhi) = st.lo, st.hi
    out: list[tuple[sympy.Expr, ...]] = []
    for r in _merged(st.reads):
        cx = _read_conditions(r.x, xlo, xhi)
        cy = _read_conditions(r.y, ylo, yhi)
        if cx is None or cy is None:
            continue
        cy = tuple(sympy.expand(t.subs({ELEMENT: ELEMENT_Y, _BX: _BY}, simultaneous=True)) for t in cy)
        got = tuple(dict.fromkeys(cx + cy))
        if got not in out:
            out.append(got)
    return tuple(out)
