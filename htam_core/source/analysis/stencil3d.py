"""3-D window reads (stencils) in one normal form, computed from the index forms
(:class:`~htam_core.source.analysis.facts.Stencil3D`).

A kernel reads a 3-D window of one pointer when every read of that pointer is ``in[(z + cz + w) * Q + (y + cy + v) *
P + x + cx + u]``: ``x``, ``y``, ``z`` the thread's global indices (``blockIdx.d * B + threadIdx.d``, ``B`` the
block's extent or a constant), ``P`` and ``Q`` the row and plane pitches (the index's strides in ``threadIdx.y`` and
``threadIdx.z``: ``NX`` and ``NX * NY`` for ``((z * NY + y) * NX + x)``), ``cx``/``cy``/``cz`` small integers and
``u``/``v``/``w`` window loops of constant range (each may be absent: a 7-point Jacobi written out has none). As in
2-D (:mod:`~htam_core.source.analysis.stencil2d`), the index is the analysis layer's affine form (access macros,
``size_t`` casts, locals), and each condition a read runs under must bound one axis's global index or element
coordinate; the elements the block reads through one read are the product of the three 1-D sets, so the tile loads
their union (:func:`tile_conditions_3d`) and no other element. A clamped index is not read in 3-D.

Idea source: the 3-D tiled stencil with halo (Kirk, Hwu and El Hajj, "Programming Massively Parallel Processors",
4th ed., ch. 8: an input tile of ``(T + 2R)^3`` loaded into shared memory, the output read from it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import sympy

from htam_core.source.analysis.facts import (
    Access,
    LoopFact,
    PointerAlias,
    PointerFacts,
    Stencil3D,
    Stencil3DRead,
    sym,
)
from htam_core.source.analysis.stencil import ELEMENT, _other_use, _read_conditions, computed_name
from htam_core.source.analysis.stencil2d import _axis_read, _loop_ok
from htam_core.source.analysis.transpose import ExprOf, access_bounds
from htam_core.source.analysis.unit import CudaSource

__all__ = ["ELEMENT_Z", "find_stencil3d", "tile_conditions_3d"]

#: The symbol of the element's plane (its z coordinate) in :func:`tile_conditions_3d`; its row is
#: :data:`~htam_core.source.analysis.stencil2d.ELEMENT_Y`, its column
#: :data:`~htam_core.source.analysis.stencil.ELEMENT`.
ELEMENT_Z = sym("stencil.ez")
_EY = sym("stencil.ey")
_T = [sym(f"threadIdx.{d}") for d in "xyz"]
_B = [sym(f"blockIdx.{d}") for d in "xyz"]
_BD = [sym(f"blockDim.{d}") for d in "xyz"]
_G = [sym(f"stencil.{d}") for d in "xyz"]
_E = [sym("stencil.ex"), _EY, ELEMENT_Z]
_BUILTINS = set(_T) | set(_B) | set(_BD)
_KINDS = ("subscript_expression", "pointer_expression", "call_expression")
#: the largest constant offset read along y or z (a window wider than this is not a stencil's)
_REACH = 8


def _pitches(a: Access, loop_vars: set[sympy.Symbol]) -> tuple[sympy.Expr, sympy.Expr] | str:
    """The row and plane pitches of read ``a``, or why it has none."""
    if a.kind != "read" or a.vector or a.index is None:
        return f"{a.pointer} is written or read as vectors or at an index that is not affine"
    if a.stride("threadIdx.x") != 1:
        return f"the read {a.index_text} does not move by one with threadIdx.x"
    out = []
    for d in "yz":
        p = a.stride(f"threadIdx.{d}")
        if p is None or p == 0 or p.free_symbols & (_BUILTINS | loop_vars):
            return f"the read {a.index_text} does not move by a pitch with threadIdx.{d}"
        out.append(sympy.expand(p))
    return out[0], out[1]


def _loops(a: Access, loops: tuple[LoopFact, ...], steps: list[sympy.Expr]) -> list[LoopFact | None] | str:
    """The window loops moving read ``a`` along x, y and z (by ``steps``: 1, the row and the plane pitch)."""
    found: list[LoopFact | None] = [None, None, None]
    for lid in a.loops:
        lp = loops[lid]
        s = a.stride(lp.var) if lp.var else sympy.Integer(0)
        if s == 0:
            continue
        axis = next((k for k, st in enumerate(steps) if s is not None and sympy.expand(s - st) == 0), -1)
        if axis < 0 or found[axis] is not None or not _loop_ok(lp):
            return f"the read {a.index_text} moves with loop variable {lp.var} by {s}, not by one, a row or a plane"
        found[axis] = lp
    return found


def _split(rest: sympy.Expr, pitch: sympy.Expr, plane: sympy.Expr) -> tuple[int, int, int] | None:
    """The smallest ``(cx, cy, cz)`` with ``rest == cz * plane + cy * pitch + cx``, or ``None``."""
    best = None
    for cz, cy in itertools.product(range(-_REACH, _REACH + 1), repeat=2):
        cx = sympy.expand(rest - cz * plane - cy * pitch)
        if cx.is_Integer and abs(int(cx)) <= _REACH and (best is None or
                                                          abs(cz) + abs(cy) + abs(int(cx)) < sum(map(abs, best))):
            best = (int(cx), cy, cz)
    return best


def _offsets(a: Access, steps: list[sympy.Expr], lps: list[LoopFact | None]) -> tuple[list[int], list] | str:
    """``([cx, cy, cz], [Bx, By, Bz])`` of read ``a`` (its constant offsets and block extents), or why not."""
    idx = sympy.expand(a.index - sum((st * sym(lp.var) for st, lp in zip(steps, lps, strict=True) if lp),
                                     sympy.Integer(0)))
    why = f"the read {a.index_text} is not at the global thread index (x, y, z) plus constants"
    ext = [sympy.expand(sympy.cancel(idx.coeff(b) / st)) for b, st in zip(_B, steps, strict=True)]
    if any(e != bd and not (e.is_Integer and e > 0) for e, bd in zip(ext, _BD, strict=True)):
        return why
    g = sum((st * (e * b + t) for st, e, b, t in zip(steps, ext, _B, _T, strict=True)), sympy.Integer(0))
    got = _split(sympy.expand(idx - g), steps[1], steps[2])
    return why if got is None else (list(got), ext)


def _axis_terms(bounds: tuple, subs: dict[sympy.Symbol, sympy.Expr], banned: set[sympy.Symbol]
                ) -> list[list[sympy.Expr]] | str:
    """The read's conditions as ``d > 0`` terms per axis ``[x, y, z, none]``, or why one mixes the axes."""
    out: list[list[sympy.Expr]] = [[], [], [], []]
    for b in bounds:
        t = sympy.expand(sympy.expand(b.hi - b.lo).subs(subs, simultaneous=True))
        axes = [k for k in range(3) if t.free_symbols & {_G[k], _E[k]}]
        one = len(axes) <= 1 and not t.free_symbols & banned and all(
            t.coeff(_G[k]) in (-1, 0, 1) and len(t.free_symbols & {_G[k], _E[k]}) <= 1 for k in axes)
        if not one:
            return "a condition of the window read is not a bound on one axis's thread index or element coordinate"
        out[axes[0] if axes else 3].append(t)
    return out


def _read(src: CudaSource, expr: ExprOf, a: Access, loops: tuple[LoopFact, ...], steps: list[sympy.Expr]
          ) -> Stencil3DRead | str:
    """One read of the window pointer in the 3-D normal form, or why it is not one."""
    lps = _loops(a, loops, steps)
    if isinstance(lps, str):
        return lps
    off = _offsets(a, steps, lps)
    if isinstance(off, str):
        return off
    (c, ext), node = off, src.node_at(a.span, _KINDS)
    bounds = access_bounds(node, src.body, src.src, expr) if node is not None else None
    if bounds is None:
        return f"the conditions of the read {a.index_text} are not conjunctions of bounds"
    subs: dict[sympy.Symbol, sympy.Expr] = {}
    for k in range(3):
        subs[_T[k]] = _G[k] - ext[k] * _B[k]
        if lps[k]:
            subs[sym(lps[k].var)] = _E[k] - _G[k] - c[k]  # type: ignore[arg-type, union-attr]
    terms = _axis_terms(bounds, subs, _BUILTINS | {sym(lp.var) for lp in loops if lp.var})
    if isinstance(terms, str):
        return terms
    parts = [_axis_read(a, c[k], lps[k], terms[k] + (terms[3] if k == 0 else []), _G[k], _E[k], ext[k])
             for k in range(3)]
    return Stencil3DRead(a, parts[0], parts[1], parts[2])


def _of_pointer(src: CudaSource, expr: ExprOf, loops: tuple[LoopFact, ...], pf: PointerFacts,
                reads: list[Access], aliases: tuple[PointerAlias, ...]) -> Stencil3D | str:
    """The 3-D window of pointer ``pf`` read by ``reads``, or why it is not one."""
    if pf.mode != "read":
        return f"{pf.name} is not only read by the kernel"
    other = _other_use(src, pf.name, reads, aliases)
    if other:
        return other
    pitches = [_pitches(a, {sym(lp.var) for lp in loops if lp.var}) for a in reads]
    bad = [p for p in pitches if isinstance(p, str)]
    if bad:
        return bad[0]
    if len(set(pitches)) != 1:
        return f"the reads of {pf.name} use different row or plane pitches"
    pitch, plane = pitches[0]  # type: ignore[misc]
    got = [_read(src, expr, a, loops, [sympy.Integer(1), pitch, plane]) for a in reads]
    bad = [g for g in got if isinstance(g, str)]
    if bad:
        return bad[0]
    rs = tuple(g for g in got if not isinstance(g, str))
    if len({(r.x.extent, r.y.extent, r.z.extent) for r in rs}) != 1:
        return f"the reads of {pf.name} use different block extents"
    return Stencil3D(pf.name, pitch, plane, rs)


def _candidate(reads: list[Access]) -> bool:
    """Reads of one pointer that move with ``threadIdx.z`` and either sit in loops or differ by a constant."""
    idx = [a.index for a in reads if a.index is not None]
    if not any(a.stride("threadIdx.z") not in (None, 0) for a in reads):
        return False
    return any(a.loops for a in reads) or any(not sympy.expand(x - y).has(*_T) and sympy.expand(x - y) != 0
                                              for k, x in enumerate(idx) for y in idx[k + 1:])


def find_stencil3d(src: CudaSource, expr: ExprOf, loops: tuple[LoopFact, ...], pointers: tuple[PointerFacts, ...],
                   aliases: tuple[PointerAlias, ...] = (), scalars: Iterable[str] | None = None) -> Stencil3D | str:
    """The kernel's 3-D window read (:class:`~htam_core.source.analysis.facts.Stencil3D`), or one line saying why
    the window is not read (``""`` when no pointer is read at neighbouring offsets along a 3-D thread index).
    Arguments as :func:`~htam_core.source.analysis.stencil2d.find_stencil2d`."""
    why = ""
    for pf in pointers:
        reads = [a for a in pf.reads if a.space == "global"]
        if not _candidate(reads):
            continue
        got = _of_pointer(src, expr, loops, pf, reads, aliases)
        if not isinstance(got, str):
            name = computed_name([t for g in tile_conditions_3d(got) for t in g] + [got.pitch, got.plane], scalars)
            if not name:
                return got
            got = f"the window's bounds or pitches read {name}, which the kernel computes; a tile would be loaded " \
                  "before it"
        why = why or got
    return why


def tile_conditions_3d(st: Stencil3D) -> tuple[tuple[sympy.Expr, ...], ...]:
    """The elements the threads of one block read, as a disjunction of conjunctions of terms ``d > 0`` over
    :data:`~htam_core.source.analysis.stencil.ELEMENT` (column), ``ELEMENT_Y`` (row), :data:`ELEMENT_Z` (plane),
    the block indices and extents and the parameters (as
    :func:`~htam_core.source.analysis.stencil2d.tile_conditions_2d`, one conjunction per read)."""
    lo, hi = st.lo, st.hi
    out: list[tuple[sympy.Expr, ...]] = []
    for r in st.reads:
        parts = [_read_conditions(p, lo[k], hi[k]) for k, p in enumerate((r.x, r.y, r.z))]
        if any(p is None for p in parts):
            continue
        got = list(parts[0])  # type: ignore[arg-type]
        for k in (1, 2):
            got += [sympy.expand(t.subs({ELEMENT: _E[k], _B[0]: _B[k]}, simultaneous=True))
                    for t in parts[k]]  # type: ignore[union-attr]
        g = tuple(dict.fromkeys(got))
        if g not in out:
            out.append(g)
    return tuple(out)

