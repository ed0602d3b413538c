"""A 1-D stencil's window through a shared-memory tile with halo (``cuda.stencil_smem_tile``); a 2-D stencil's
(``in[(y + dy) * W + (x + dx)]``, :attr:`~htam_core.source.analysis.KernelFacts.stencils2d`) is staged by the same
step in a 2-D tile (:mod:`htam_core.transforms.cuda_stencil2d`).

``for (j = -R; j <= R; ++j) acc += w[j + R] * in[i + j];`` reads every element of ``in`` ``2R + 1`` times from
global memory, once per thread whose window holds it. The rewrite stages the block's window, its ``B`` elements and
the halo of ``R`` on each side (``B + 2R`` elements; any other window offsets alike), in shared memory once: the
block's threads load it cooperatively at the top of the kernel, where every thread runs (a thread that returns
early, later, still reaches the barrier), then ``__syncthreads()``, and each window read becomes a read of the
tile. The loads are guarded so that exactly the elements the original reads are loaded
(:func:`~htam_core.source.analysis.stencil.tile_conditions`, from the bounds checks as written: an early return
on the thread's index, a check of ``i + j`` per element, a ``?:``), so no element the original would not read is
read out of range; the original's checks stay in place, so each window read reads a slot that was loaded.

The window is the analysis layer's normal form (:class:`~htam_core.source.analysis.facts.Stencil`). The tile is
a static ``__shared__ T tile[B + W]`` when every launch gives one constant 1-D block ``B`` (the constant extent the
index names, ``blockIdx.x * 256 + threadIdx.x``, must be it); its load spells ``B``, so the block-size step reads the
kernel as one that hard-codes its block and does not retune it under the tile. Otherwise the tile is dynamic shared
memory of ``blockDim.x + W`` elements and each launch passes ``(block + W) * sizeof(T)``, its block expression
written once more (refused for a ``dim3`` variable, a launch that passes shared memory or a stream already, or a
block expression with an effect). Refused in one line: no window in the normal form (the analysis layer says why),
launches that bind different template arguments, reads of ``threadIdx.y``/``z``, a bound or the pointer assigned in
the body (the tile is loaded at the top).

Idea source: the shared-memory 1-D stencil with halo (NVIDIA, "CUDA C/C++ Basics", Supercomputing 2010 tutorial;
Kirk and Hwu, "Programming Massively Parallel Processors", tiled convolution with halo cells).
"""

from __future__ import annotations

import re
from typing import TypeVar

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.facts import KernelFacts, Stencil, Stencil2D, Stencil3D, sym
from htam_core.source.analysis.stencil import ELEMENT, c_condition, c_text, tile_conditions
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, dead_local_edits, smem_edit
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_stencil2d import (
    TILE,
    Tile2D,
    assigned_name,
    block_2d,
    clamp_text,
    condition_2d,
    dead_alias_edits,
    head_2d,
    insert_top,
    read_edits_2d,
    reassigned_2d,
)
from htam_core.transforms.cuda_stencil3d import (
    Tile3D,
    block_3d,
    condition_3d,
    head_3d,
    read_edits_3d,
    reassigned_3d,
)
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: Static shared memory a block may declare (bytes); the tile is sized with 8 bytes an element at most.
SMEM_LIMIT = 48 * 1024
#: A window fact of any dimension (:func:`_spelled`).
_W = TypeVar("_W", Stencil, Stencil2D, Stencil3D)
#: A call, an assignment, an increment or a brace list: a launch argument that must not be evaluated twice.
_EFFECTS = re.compile(r"[(={]|\+\+|--")
#: A 64-bit integer type as declared.
_WIDE = re.compile(r"\b(?:size_t|ssize_t|ptrdiff_t|u?int64_t|long|index_t)\b")


def _block(unit: CudaUnit, st: Stencil) -> int | None | str:
    """The block's thread count along x that every launch gives (1-D); ``None`` when the launches give a block
    that is not constant (the tile then takes dynamic shared memory); or why there is no tile size."""
    launches = unit.facts.launches
    if not launches:
        return f"{unit.kernel.name} has no launch in sight; the tile's size needs the block"
    if any(len(la.block) != 1 and any(d.value != 1 for d in la.block[1:]) for la in launches):
        return "a launch gives a block of more than one dimension; the tile is one row of a 1-D block"
    xs = {la.block[0].value if la.block else None for la in launches}
    if len(xs) != 1 or None in xs:
        return None if st.extent == sym("blockDim.x") else (
            f"the index steps blocks by {st.extent}, which the launches do not all give as a constant")
    b = xs.pop()
    if st.extent.is_Integer and int(st.extent) != b:
        return f"the index steps blocks by {st.extent} but the launch gives {b} threads"
    return int(b)  # type: ignore[arg-type]


def _smem_edits(unit: CudaUnit, extra: int, etype: str) -> list[TextEdit] | str:
    """Per launch, the dynamic shared memory of the tile, ``(block + extra) * sizeof(T)``, or why it cannot be
    added (a launch that passes shared memory or a stream already, a block that is not one integer expression or
    that would be evaluated twice)."""
    if not unit.launches_editable or len(unit.launches) != len(unit.facts.launches):
        return "the launches cannot be edited to pass the tile's dynamic shared memory"
    if any(unit.t(d).lstrip().startswith("extern") for d in syn.declarations(unit.body)):
        return "the kernel already declares dynamic shared memory"
    out = []
    for la, lf in zip(unit.launches, unit.facts.launches, strict=True):
        arg = unit.t(la.block).strip() if la.block is not None else ""
        if len(lf.block) != 1 or lf.block[0].text.strip() != arg:
            return f"the launch on line {la.site.line} passes a dim3 block"
        if _EFFECTS.search(arg):
            return f"the block {arg} on line {la.site.line} calls or assigns; it would be evaluated twice"
        edit = smem_edit(unit, la, f"({arg} + {extra}) * sizeof({etype})")
        if isinstance(edit, str):
            return edit
        out.append(edit)
    return out


def _refusal(unit: CudaUnit) -> Stencil | Stencil2D | Stencil3D | str:
    """The window to stage (1-D, else 2-D, else 3-D), or one line why none is."""
    facts = unit.facts
    if not facts.stencils and not facts.stencils2d and not facts.stencils3d:
        two_d = any(b.startswith("threadIdx.y") for b in facts.builtins_read)
        three_d = any(b.startswith("threadIdx.z") for b in facts.builtins_read)
        return (facts.stencil3d_refusal if three_d else "") or (facts.stencil2d_refusal if two_d else "") or \
            facts.stencil_refusal or (
            "no window read: no pointer is read at the global thread index plus offsets, in a loop of constant "
            "range or unrolled")
    if len({la.bindings for la in facts.launches}) > 1:
        return "the launches bind different template arguments; the window's radius and tile would differ"
    if TILE.encode() in unit.src:
        return f"{TILE} is already declared"
    if facts.stencils3d:
        changed = reassigned_3d(unit, facts.stencils3d[0])
        return f"the kernel assigns {changed}, which the window's load reads; the tile is loaded before it" \
            if changed else facts.stencils3d[0]
    if not facts.stencils:
        return _refusal_2d(unit, facts.stencils2d[0])
    if any(b.startswith(("threadIdx.y", "threadIdx.z")) for b in facts.builtins_read):
        return "the kernel reads threadIdx.y or threadIdx.z; the tile is one row of a 1-D block"
    changed = _reassigned(unit, facts.stencils[0])
    if changed:
        return f"the kernel assigns {changed}, which the window's bounds read; the tile is loaded before it"
    return facts.stencils[0]


def _refusal_2d(unit: CudaUnit, st: Stencil2D) -> Stencil2D | str:
    """The 2-D window to stage, or one line why it is not staged."""
    if any(b.startswith("threadIdx.z") for b in unit.facts.builtins_read):
        return "the kernel reads threadIdx.z; the 2-D tile covers one layer of the block"
    changed = reassigned_2d(unit, st)
    if changed:
        return f"the kernel assigns {changed}, which the window's load reads; the tile is loaded before it"
    return st


def _reassigned(unit: CudaUnit, st: Stencil) -> str | None:
    """A parameter the tile's load conditions read (``n``), or the window's pointer, that the body writes, so the
    value at the top of the body, where the tile is loaded, may not be the one the original's reads see."""
    names = {s.name for g in tile_conditions(st) for t in g for s in t.free_symbols} - {ELEMENT.name}
    names.add(st.pointer)
    names |= {s.name for b in st.clamp if b is not None for s in b.free_symbols}
    return assigned_name(unit, names)


def _always(t: sympy.Expr) -> bool:
    """``t > 0`` for every block: a positive constant plus non-negative multiples of ``blockIdx.x``."""
    k, rest = t.as_coeff_Add()
    return k > 0 and rest.free_symbols <= {sym("blockIdx.x")} and all(
        c >= 0 for c in sympy.Poly(rest, sym("blockIdx.x")).coeffs()) if rest != 0 else k > 0


def _condition(st: Stencil, cast: str, block: int | None) -> str | None:
    """The C condition under which element ``htam_e`` of the tile is loaded (``""``: always), ``None`` when a term
    cannot be spelled."""
    groups = tile_conditions(st)
    if block:  # the static tile's block, spelled as a number; a term then true for every block is left out
        groups = tuple(tuple(t for t in (sympy.expand(t.subs(sym("blockDim.x"), block)) for t in g)
                             if not _always(t)) for g in groups)
    names = {ELEMENT: "htam_e"}
    spelled: list[str] = []
    for g in groups:
        terms = [c_condition(t, names, cast) for t in g]
        if any(t is None for t in terms):
            return None
        if not terms:
            return ""
        spelled.append(" && ".join(terms))  # type: ignore[arg-type]
    if not spelled:  # no thread reads the window: nothing to stage
        return None
    return spelled[0] if len(spelled) == 1 else " || ".join(f"({s})" for s in spelled)


def _spelled(unit: CudaUnit, st: _W) -> _W:
    """The window ``st`` as the spelled facts hold it (:attr:`CudaUnit.spelled_facts`: ``N`` where the folded facts
    read ``#define N 1024``'s value), so that the edit's bounds and pitch keep the user's names and follow them when
    they change (``-DN=2048``). A window whose offsets read a named constant (``in[i + k]``, ``k`` from ``-R`` to
    ``R``) is found again with that name folded (the tile's shape is fixed by its value anyway), one name at a
    time; ``st`` itself when no spelled reading holds a window of the same pointer and shape."""
    got = _same_window(unit.spelled_facts, st)
    if got is not None:
        return got
    f = unit.spelled_facts
    exprs = [a.index for a in f.accesses if a.pointer == st.pointer]
    exprs += [e for lp in f.loops for e in (lp.start, lp.bound, lp.step) if e is not None]
    names = sorted({s.name for e in exprs for s in e.free_symbols if s.name.isidentifier()}
                   - {p.name for p in unit.kernel.params} - {lp.var for lp in f.loops})
    for n in names[:4]:
        got = _same_window(unit.spelled_facts_folding(frozenset({n})), st)
        if got is not None:
            return got
    return st


def _same_window(f: KernelFacts, st: _W) -> _W | None:
    """The window of ``f`` of the same kind, pointer, offsets and reads as ``st``, else ``None``."""
    pool: tuple = f.stencils if isinstance(st, Stencil) else f.stencils2d if isinstance(st, Stencil2D) \
        else f.stencils3d
    return next((s for s in pool if s.pointer == st.pointer and s.lo == st.lo and s.hi == st.hi
                 and len(s.reads) == len(st.reads)), None)


def _grouped(cond: str) -> str:
    """``cond`` parenthesized when it is a disjunction, so that a conjunction with it keeps its meaning."""
    return f"({cond})" if " || " in cond else cond


def _etype(unit: CudaUnit, pointer: str) -> str:
    """The element type of ``pointer`` without its qualifiers (``""`` when unknown)."""
    pf = unit.facts.pointer(pointer)
    return " ".join(w for w in (pf.element_type or "").split()
                    if w not in ("const", "volatile", "__restrict__")) if pf else ""


def _wide(unit: CudaUnit, st: Stencil | Stencil2D) -> bool:
    """The window's indices or sizes compute in a 64-bit type: a read's index casts to one, or a thread-index local
    or a scalar parameter is declared with one (``int64_t index``, ``size_t n``)."""
    types = [ti.type for ti in unit.facts.thread_indices]
    types += [p.type or "" for p in unit.kernel.params if not p.is_pointer]
    return any(r.access.wide_index for r in st.reads) or any(_WIDE.search(t) for t in types)


@register
class CudaStencilSmemTile(CudaTransform):
    """A 1-D window read (``in[i + j]``, ``j`` in ``[-R, R]``), or a 2-D one (``in[(y + dy) * W + x + dx]``) -> the
    block's window staged in a shared tile."""

    id = "cuda.stencil_smem_tile"
    languages = CUDA_LANGS
    summary = "stage a 1-D or 2-D stencil's window (block + halo) in shared memory once per block"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate: the tile declared and loaded (guarded as the original's reads) at the top of the body, a
        barrier, and each window read of the stencil's pointer turned into a read of the tile."""
        st = _refusal(unit)
        if isinstance(st, str):
            return self.not_applicable(st)
        if isinstance(st, Stencil2D):
            return self._propose_2d(unit, model, kernel, st)
        if isinstance(st, Stencil3D):
            return self._propose_3d(unit, model, kernel, st)
        block = _block(unit, st)
        if isinstance(block, str):
            return self.not_applicable(block)
        etype = _etype(unit, st.pointer)
        extra = st.hi - st.lo
        if not etype or (block or 0) + extra > SMEM_LIMIT // 8:
            return self.not_applicable(f"the tile of {block or 'blockDim.x'} + {extra} elements of {etype or '?'} "
                                       "does not fit a block's shared memory")
        cast, sp = "long long" if _wide(unit, st) else "int", _spelled(unit, st)
        cond, index = _condition(sp, cast, block), clamp_text("htam_e", sp.clamp, cast)
        if cond is None or index is None:
            return self.not_applicable("the window's reads have a bound that is not an integer expression, or no "
                                       "thread reads the window")
        edits = [self._head(unit, st, etype, block, cast, (cond, index))]
        if block is None:
            smem = _smem_edits(unit, extra, etype)
            if isinstance(smem, str):
                return self.not_applicable(f"the block is not one constant and {smem}")
            edits += smem
        for r in st.reads:
            shift = f" + {r.offset - st.lo}" if r.offset != st.lo else ""
            var = f" + {r.var}" if r.var else ""
            edits.append(unit.replace_span(r.access.span, f"{TILE}[threadIdx.x{shift}{var}]"))
        spans = [r.access.span for r in st.reads]
        edits += dead_alias_edits(unit, st.pointer, spans) + dead_local_edits(unit, st.clamp_locals, spans)
        edits.sort(key=lambda e: e.start_byte)
        threads = f"{block} threads" if block else "blockDim.x threads (dynamic shared memory sized at the launch)"
        desc = (f"stage the window of {st.pointer} in {kernel.name} in shared memory: each block of {threads} loads "
                f"its elements and a halo of {-st.lo} before, {st.hi} after once, then the window reads the tile")
        return [self.candidate(model, desc, dict(block=block or "launch", halo=[-st.lo, st.hi]), edits)]

    def _propose_2d(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, st: Stencil2D
                    ) -> list[Candidate] | NotApplicable:
        """The 2-D form (:mod:`htam_core.transforms.cuda_stencil2d`): a static ``(BY + hy) x (BX + hx)`` tile
        loaded at the top of the body, a barrier, each window read a read of the tile."""
        block = block_2d(unit, st)
        if isinstance(block, str):
            return self.not_applicable(block)
        tile, etype = Tile2D(st, block), _etype(unit, st.pointer)
        if not etype or tile.rows * tile.cols > SMEM_LIMIT // 8:
            return self.not_applicable(f"the tile of {tile.rows} x {tile.cols} elements of {etype or '?'} does not "
                                       "fit a block's static shared memory")
        cast, sp = "long long" if _wide(unit, st) else "int", _spelled(unit, st)
        cond = condition_2d(sp, cast, block)
        head = head_2d(unit, sp, etype, tile, cast, cond) if cond is not None else None
        if head is None:
            return self.not_applicable("the window's reads have a bound or a row pitch that is not an integer "
                                       "expression, or no thread reads the window")
        spans = [r.access.span for r in st.reads]
        dead = dead_alias_edits(unit, st.pointer, spans) + dead_local_edits(unit, st.clamp_locals, spans)
        edits = sorted([head, *read_edits_2d(unit, st, tile), *dead], key=lambda e: e.start_byte)
        desc = (f"stage the 2-D window of {st.pointer} in {kernel.name} in shared memory: each block of "
                f"{block[0]} x {block[1]} threads loads its {tile.rows} x {tile.cols} tile (the halo: "
                f"{-tile.lx}/{tile.hx + tile.lx} columns, {-tile.ly}/{tile.hy + tile.ly} rows) once, then the window "
                "reads the tile")
        return [self.candidate(model, desc, dict(block=list(block), halo=[-tile.lx, tile.hx + tile.lx, -tile.ly,
                                                                          tile.hy + tile.ly]), edits)]

    def _propose_3d(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, st: Stencil3D
                    ) -> list[Candidate] | NotApplicable:
        """The 3-D form (:mod:`htam_core.transforms.cuda_stencil3d`): a static ``(BZ + hz) x (BY + hy) x (BX + hx)``
        tile loaded at the top of the body, a barrier, each window read a read of the tile."""
        block = block_3d(unit, st)
        if isinstance(block, str):
            return self.not_applicable(block)
        tile, etype = Tile3D(st, block), _etype(unit, st.pointer)
        if not etype or tile.slots > SMEM_LIMIT // 8:
            return self.not_applicable(f"the tile of {' x '.join(map(str, tile.dims[::-1]))} elements of "
                                       f"{etype or '?'} does not fit a block's static shared memory")
        cast = "long long"  # a plane pitch times z passes 2^31 on a 1290^3 grid: the load computes in 64 bits
        cond = condition_3d(sp := _spelled(unit, st), cast, block)
        head = head_3d(unit, sp, etype, tile, cast, cond) if cond is not None else None
        if head is None:
            return self.not_applicable("the window's reads have a bound or a pitch that is not an integer "
                                       "expression, or no thread reads the window")
        dead = dead_alias_edits(unit, st.pointer, [r.access.span for r in st.reads])
        edits = sorted([head, *read_edits_3d(unit, st, tile), *dead], key=lambda e: e.start_byte)
        desc = (f"stage the 3-D window of {st.pointer} in {kernel.name} in shared memory: each block of "
                f"{' x '.join(map(str, block))} threads loads its {' x '.join(map(str, tile.dims))} tile once, then "
                "the window reads the tile (the z neighbours too: a full 3-D tile, not the 2.5-D march)")
        return [self.candidate(model, desc, dict(block=list(block), halo=[-v for v in st.lo] + list(st.hi)), edits)]

    def _head(self, unit: CudaUnit, st: Stencil, etype: str, block: int | None, cast: str, load_at: tuple[str, str]
              ) -> TextEdit:
        """The tile's declaration, its guarded cooperative load and the barrier, at the top of the body. A static
        tile spells the block it is sized for (``256 * blockIdx.x``): the load hard-codes the block, as the launch
        step reads such an index, so the block is not retuned under the tile. A dynamic tile reads ``blockDim.x``
        and its size follows the launch's block expression. ``load_at``: the load's condition and the index it
        reads (``htam_e``, clamped as the kernel clamps its coordinate)."""
        cond, index = load_at
        extent = sympy.Integer(block) if block else sym("blockDim.x")
        b0 = c_text(extent * sym("blockIdx.x"), {}, cast)
        shift = f"- {-st.lo}" if st.lo <= 0 else f"+ {st.lo}"
        load = f"{TILE}[htam_k] = {st.pointer}[{index}];"
        extra = st.hi - st.lo
        size, step = (f"{block + extra}", f"{block}") if block else (f"blockDim.x + {extra}", "blockDim.x")
        decl = [f"__shared__ {etype} {TILE}[{size}];"] if block else [
            "extern __shared__ unsigned char htam_smem[];  // (blockDim.x + halo) elements, sized at the launch",
            f"{etype} *{TILE} = reinterpret_cast<{etype} *>(htam_smem);"]
        lines = [f"// the block's window of {st.pointer} (its elements and the halo) read once from global memory, "
                 "loaded where the original reads", *decl,
                 f"for (int htam_j = 0; htam_j < {size}; htam_j += {step}) {{",
                 "    const int htam_k = htam_j + threadIdx.x;",
                 f"    const {cast} htam_e = {b0} + htam_k {shift};",
                 f"    if (htam_k < {size}{' && ' + _grouped(cond) if cond else ''}) {load}",
                 "}",
                 "__syncthreads();  // every thread reaches it: the tile is complete before any window read"]
        return insert_top(unit, lines)
