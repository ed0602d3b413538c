"""1-D window reads (stencils) in one normal form, computed from the affine index forms
(:class:`~htam_core.source.analysis.facts.Stencil`).

A kernel reads a 1-D window of one pointer when every read of that pointer is ``in[g + c + j]`` or ``in[g + c]``:
``g = blockIdx.x * B + threadIdx.x`` the global thread index along x (``B`` is ``blockDim.x`` or a constant block
extent), ``c`` an integer and ``j`` the variable of a loop of constant range counting up by one (``for (j = -R; j
<= R; ++j)``, ``for (j = 0; j < 2 * R + 1; j++)`` with an offset in the index, ``j < R + 1``; ``R`` a literal, a
``#define``, a ``constexpr`` or a template parameter bound at the launch). Nothing is matched on the spelling: the
index is the analysis layer's affine form, through locals (``int i = ...``), casts, ``size_t``/``int64_t`` indices,
pointer-offset locals and access macros; unrolled windows (``in[i - 1] + in[i] + in[i + 1]``) are reads of width
one.

How the original keeps its reads in range is read too, as it is written (:func:`access_bounds`): each condition a
read runs under, a guarded body, an early ``return``/``continue``, a ``?:`` or an ``if``/``else``, is a term ``d >
0`` either on the thread's global index (``i >= R``, ``i < n - R``: :attr:`StencilRead.thread_terms`) or on the
element read (``i + j >= 0``, ``i + j < n``: :attr:`StencilRead.element_terms`). From them,
:func:`tile_conditions` gives the exact set of elements the threads of one block read, so a shared-memory tile
loads those and no other (no read out of range that the original would not make). A clamped index
(``in[min(max(i + j, 0), n - 1)]``, clamp-to-edge) is read as the coordinate it clamps with the clamp beside it
(:mod:`~htam_core.source.analysis.clamp`, :func:`common_clamp`): the tile's slot for coordinate ``e`` then holds the
element at the clamped ``e``, the value every read of that slot reads.

Idea source: the shared-memory 1-D stencil with halo of the CUDA C++ Programming Guide's and NVIDIA's "CUDA C/C++
Basics" (2010) slides; guards normalized to ``d > 0`` affine terms as in polyhedral loop-bound analysis.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

import sympy

from htam_core.source.analysis.builtins import is_load_builtin
from htam_core.source.analysis.clamp import Clamp, clamp_locals, unclamp
from htam_core.source.analysis.facts import (
    Access,
    LoopFact,
    PointerAlias,
    PointerFacts,
    Stencil,
    StencilRead,
    stride_of,
    sym,
)
from htam_core.source.analysis.offsets import loop_bound_reads
from htam_core.source.analysis.syntax import text, walk
from htam_core.source.analysis.transpose import ExprOf, access_bounds
from htam_core.source.analysis.unit import CudaSource

__all__ = ["ELEMENT", "THREAD", "c_condition", "c_text", "common_clamp", "computed_name", "find_stencil", "tile_conditions"]

#: The symbol of the thread's global index ``g`` in :attr:`StencilRead.thread_terms`.
THREAD = sym("stencil.i")
#: The symbol of the element read in :attr:`StencilRead.element_terms` and in :func:`tile_conditions`.
ELEMENT = sym("stencil.e")

_TX, _BX, _BDX = sym("threadIdx.x"), sym("blockIdx.x"), sym("blockDim.x")
_KINDS = ("subscript_expression", "pointer_expression", "call_expression")
#: the builtins' and this module's symbol names begin so
_OWN_PREFIXES = ("threadIdx.", "blockIdx.", "blockDim.", "gridDim.", "stencil.")


def _window_loop(a: Access, loops: tuple[LoopFact, ...]) -> LoopFact | None | str:
    """The loop whose variable moves read ``a`` (``None``: no enclosing loop's variable is in its index), or why
    the read is not a window read."""
    found: LoopFact | None = None
    for lid in a.loops:
        lp = loops[lid]
        s = a.stride(lp.var) if lp.var else sympy.Integer(0)
        if s == 0:
            continue
        if s is None:
            return f"the read {a.index_text} is not affine in loop variable {lp.var} (a wrapped index is not read)"
        if found is not None or s != 1:
            return f"the read {a.index_text} moves with loop variable {lp.var} by {s}, not by one in one loop"
        if lp.update != "+" or lp.step != 1 or lp.cmp not in ("<", "<=") or lp.trip_value is None \
                or not (lp.start is not None and lp.start.is_Integer):
            return f"the loop over {lp.var} does not count up by one over a constant range"
        found = lp
    return found


def _offset(a: Access, var: str | None) -> tuple[int, sympy.Expr] | str:
    """``(c, B)`` for a read ``a`` whose index is ``blockIdx.x * B + threadIdx.x + c (+ var)``, or why not."""
    idx = sympy.expand(a.index - (sym(var) if var else 0))  # type: ignore[operator]
    if a.stride("threadIdx.x") != 1:
        return f"the read {a.index_text} does not move by one with threadIdx.x"
    extent = sympy.expand(idx.coeff(_BX))
    rest = sympy.expand(idx - extent * _BX - _TX)
    if extent not in (_BDX,) and not (extent.is_Integer and extent > 0):
        return f"the read {a.index_text} is not at the global thread index along x plus a constant"
    if not rest.is_Integer:
        return f"the read {a.index_text} is not at the global thread index along x plus a constant"
    return int(rest), extent


def _split_terms(bounds: Iterable, var: str | None, extent: sympy.Expr, c: int
                 ) -> tuple[tuple[sympy.Expr, ...], tuple[sympy.Expr, ...]] | str:
    """The read's conditions (``lo < hi`` bounds) as ``d > 0`` terms on the thread's global index and on the
    element read, or why one is neither."""
    g = extent * _BX + _TX
    thread: list[sympy.Expr] = []
    element: list[sympy.Expr] = []
    for b in bounds:
        d = sympy.expand(b.hi - b.lo)
        if var is not None and sym(var) in d.free_symbols:
            e = sympy.expand(d.subs(sym(var), ELEMENT - g - c))
            if e.free_symbols & {_TX, _BX, _BDX, sym(var)}:
                return "a condition on the window's loop variable is not a bound on the element read"
            element.append(e)
            continue
        t = sympy.expand(d.subs(_TX, THREAD - extent * _BX))
        if t.free_symbols & {_TX, _BX, _BDX} or t.coeff(THREAD) not in (-1, 0, 1) or \
                sympy.expand(t - t.coeff(THREAD) * THREAD).has(THREAD):
            return "a condition of the window read is not a bound on the global thread index or the element read"
        thread.append(t)
    return tuple(thread), tuple(element)


def _read(src: CudaSource, expr: ExprOf, a: Access, loops: tuple[LoopFact, ...]) -> StencilRead | str:
    """One read of the window pointer in normal form, or why it is not one."""
    if a.kind != "read" or a.vector or a.index is None:
        return f"{a.pointer} is written or read as vectors or at an index that is not affine (a clamped index)"
    lp = _window_loop(a, loops)
    if isinstance(lp, str):
        return lp
    off = _offset(a, lp.var if lp else None)
    if isinstance(off, str):
        return off
    c, extent = off
    node = src.node_at(a.span, _KINDS)
    bounds = access_bounds(node, src.body, src.src, expr) if node is not None else None
    if bounds is None:
        return f"the conditions of the read {a.index_text} are not conjunctions of bounds"
    terms = _split_terms(bounds, lp.var if lp else None, extent, c)
    if isinstance(terms, str):
        return terms
    if any(t.free_symbols & {sym(lp.var) for lp in loops if lp.var} for t in terms[0] + terms[1]):
        return f"a condition of the read {a.index_text} depends on a loop's variable other than the window's"
    first = int(lp.start) if lp else 0  # type: ignore[arg-type]
    last = first + (lp.trip_value or 1) - 1 if lp else 0
    return StencilRead(a, c, lp.var if lp else None, first, last, terms[0], terms[1], extent)


def _window_like(reads: list[Access], loops: tuple[LoopFact, ...]) -> bool:
    """Two reads at a constant distance, or a read moving with a constant-trip loop as with threadIdx.x."""
    for a in reads:
        for lid in a.loops:
            lp = loops[lid]
            if lp.var and lp.trip_value is not None and a.stride(lp.var) != 0 \
                    and a.stride(lp.var) == a.stride("threadIdx.x"):
                return True
    idx = [a.index for a in reads if a.index is not None]
    return any(sympy.expand(x - y).is_number and sympy.expand(x - y) != 0 for k, x in enumerate(idx)
               for y in idx[k + 1:])


def _opaque_window(reads: list[Access], loops: tuple[LoopFact, ...]) -> str:
    """The index text of a read inside a constant-trip loop whose variable it names but not affinely
    (``in[min(max(i + j, 0), n - 1)]``), ``""`` for none."""
    for a in reads:
        for lid in a.loops:
            lp = loops[lid]
            if not lp.var or lp.trip_value is None or not re.search(rf"\b{re.escape(lp.var)}\b", a.index_text):
                continue
            if a.index is None or sym(lp.var) not in a.index.free_symbols or a.stride(lp.var) is None:
                return a.index_text
    return ""


def _other_use(src: CudaSource, name: str, reads: list[Access], aliases: tuple[PointerAlias, ...]) -> str:
    """Why pointer ``name`` is not only read by plain loads (``""`` when it is): a use of the name outside every read
    and every pointer-offset local's declaration (a pointer passed on), a read through a load intrinsic
    (``__ldg(in + i)``), or a read whose address is taken (``__ldg(&in[i])``)."""
    spans = [(a.span[0] - src.base, a.span[1] - src.base) for a in reads]
    spans += [(al.span[0] - src.base, al.span[1] - src.base) for al in aliases if al.pointer == name]
    for n in walk(src.body):
        if n.type == "identifier" and text(n, src.src) == name and \
                not any(s <= n.start_byte and n.end_byte <= e for s, e in spans):
            return f"{name} is used on line {n.start_point[0] + 1} other than by a plain read ({text(n.parent, src.src)})"
    for a in reads:
        node = src.node_at(a.span)
        fn = node.child_by_field_name("function") if node is not None and node.type == "call_expression" else None
        if fn is not None and is_load_builtin(text(fn, src.src).split("<", 1)[0].split("::")[-1].strip()):
            # __ldg(in + i): a load intrinsic's read (a macro call such as AT(img, y, x, w) is a plain read)
            return (f"{name} is used on line {node.start_point[0] + 1} other than by a plain read "
                    f"({text(node, src.src)})")
        p = node.parent if node is not None else None
        while p is not None and p.type == "parenthesized_expression":
            p = p.parent
        if p is not None and p.type == "pointer_expression" and text(p, src.src).lstrip().startswith("&"):
            return f"the read {a.index_text} of {name} takes the element's address ({text(p.parent, src.src)})"
    return ""


def find_stencil(src: CudaSource, expr: ExprOf, loops: tuple[LoopFact, ...], pointers: tuple[PointerFacts, ...],
                 aliases: tuple[PointerAlias, ...] = (), scalars: Iterable[str] | None = None) -> Stencil | str:
    """The kernel's 1-D window read (:class:`~htam_core.source.analysis.facts.Stencil`), or one line saying why
    the window the kernel reads is not read (``""`` when no pointer is read at neighbouring offsets).

    Args:
        src: the kernel's parsed unit.
        expr: the affine reader of an expression node (``Affine.expr`` with the kernel's bindings).
        loops: the kernel's loops (:attr:`KernelFacts.loops`).
        pointers: the kernel's pointer parameters with their read and write sets.
        aliases: the kernel's pointer-offset locals (their declarations are uses of the pointer, not reads).
        scalars: the kernel's scalar parameters; when given, a window whose bounds read any other value (a local
            the body computes, ``int n = dims[0];``) is not one: a tile loaded at the top of the body cannot read it.

    A read whose value bounds a loop (:func:`~htam_core.source.analysis.offsets.loop_bound_reads`: CSR's
    ``row_ptr[r]`` and ``row_ptr[r + 1]``) is an offset, not a window element, and is left out.
    """
    why = ""
    bounds = set(loop_bound_reads(loops, (a for pf in pointers for a in pf.reads), aliases))
    for pf in pointers:
        raw = [a for a in pf.reads if a.space == "global" and a not in bounds]  # offsets (p[r], p[r + 1]): no window
        pairs = [unclamp(src, expr, a) or (a, {}) for a in raw]
        reads = [a for a, _ in pairs]
        if not reads or not _window_like(reads, loops):
            opaque = _opaque_window(raw, loops)
            why = why or (f"the read {opaque} of {pf.name} moves with a window loop's variable but its index is not "
                          "affine (a wrapped index is not read)" if opaque else "")
            continue
        got = _of_pointer(src, expr, loops, pf, reads, aliases, [_clamp_1d(a.index, c) for a, (_, c) in
                                                                   zip(raw, pairs, strict=True)])
        if isinstance(got, str):
            why = why or got
            continue
        got = replace(got, clamp_locals=clamp_locals(src, [s for _, c in pairs for s in c]))
        name = computed_name([t for g in tile_conditions(got) for t in g] + [b for b in got.clamp if b is not None],
                             scalars)
        if name:
            why = why or f"the window's bounds read {name}, which the kernel computes; a tile would be loaded before it"
            continue
        return got
    return why


_Sides = tuple[sympy.Expr | None, sympy.Expr | None]


def _clamp_1d(index: sympy.Expr | None, clamps: dict[sympy.Symbol, Clamp]) -> _Sides | str:
    """The clamp of a read's coordinate along x (``in[min(max(i + j, 0), n - 1)]``: the whole index a clamp of a
    coordinate moving by one with ``threadIdx.x``), ``(None, None)`` for none, or why a clamp is not that."""
    if not clamps:
        return None, None
    s, c = next(iter(clamps.items()))
    if len(clamps) != 1 or index is None or sympy.expand(index - s) != 0 or stride_of(c.inner, "threadIdx.x") != 1:
        return "a clamped index is not the clamp of one coordinate moving with threadIdx.x"
    return c.lo, c.hi


def _of_pointer(src: CudaSource, expr: ExprOf, loops: tuple[LoopFact, ...], pf: PointerFacts, reads: list[Access],
                aliases: tuple[PointerAlias, ...], sides: list[_Sides | str]) -> Stencil | str:
    """The 1-D window of pointer ``pf`` read by ``reads`` (clamped indices read as their coordinates, each read's
    clamp in ``sides``), or why it is not one."""
    if pf.mode != "read":
        return f"{pf.name} is not only read by the kernel"
    other = _other_use(src, pf.name, reads, aliases)
    if other:
        return other
    got = [_read(src, expr, a, loops) for a in reads]
    bad = [g for g in got + sides if isinstance(g, str)]
    if bad:
        return bad[0]  # type: ignore[return-value]
    rs = tuple(replace(g, clamp=c) for g, c in zip(got, sides, strict=True))  # type: ignore[arg-type]
    if len({r.extent for r in rs}) != 1:
        return f"the reads of {pf.name} use different block extents"
    clamp = common_clamp(rs)
    return clamp if isinstance(clamp, str) else Stencil(pf.name, rs[0].extent, rs, clamp)


def computed_name(exprs: Iterable[sympy.Expr], scalars: Iterable[str] | None) -> str:
    """The first name ``exprs`` read that is neither a builtin (``blockIdx.x``), nor this module's own symbols, nor
    one of ``scalars`` (the kernel's scalar parameters): a value the kernel computes (``load(dims[0])``, a local
    assigned in a loop); ``""`` when there is none or ``scalars`` is ``None``."""
    if scalars is None:
        return ""
    known = set(scalars)
    names = sorted({s.name for e in exprs for s in e.free_symbols})
    return next((n for n in names if n not in known and not n.startswith(_OWN_PREFIXES)), "")


def _read_conditions(r: StencilRead, lo: int, hi: int) -> tuple[sympy.Expr, ...] | None:
    """The terms ``d > 0`` (over :data:`ELEMENT`, ``blockIdx.x``, ``blockDim.x`` and the parameters) under which
    some thread of the block reads element ``ELEMENT`` through read ``r``, the tile covering ``[b0 + lo, b0 + B -
    1 + hi]``; ``None`` when no thread does."""
    b0 = r.extent * _BX
    last = b0 + r.extent - 1
    lowers = [t for t in r.thread_terms if t.coeff(THREAD) == 1]
    uppers = [t for t in r.thread_terms if t.coeff(THREAD) == -1]
    out = list(r.element_terms) + [t for t in r.thread_terms if t.coeff(THREAD) == 0]
    out += [t.subs(THREAD, ELEMENT - r.lo) for t in lowers] + [t.subs(THREAD, last) for t in lowers]
    out += [t.subs(THREAD, ELEMENT - r.hi) for t in uppers] + [t.subs(THREAD, b0) for t in uppers]
    out += [lw + up - 1 for lw in lowers for up in uppers]  # some index passes both bounds
    if r.lo > lo:
        out.append(ELEMENT - r.lo - b0 + 1)
    if r.hi < hi:
        out.append(last + r.hi - ELEMENT + 1)
    terms: list[sympy.Expr] = []
    for t in (sympy.expand(t) for t in out):
        if t.is_number:
            if t <= 0:
                return None
        elif t not in terms:
            terms.append(t)
    return tuple(terms)


def tile_conditions(st: Stencil) -> tuple[tuple[sympy.Expr, ...], ...]:
    """The elements the threads of one block read, as a disjunction of conjunctions of terms ``d > 0`` over
    :data:`ELEMENT` (the element's index), ``blockIdx.x``, ``blockDim.x`` and the kernel's parameters: element
    ``e`` of the block's window ``[b0 + st.lo, b0 + B - 1 + st.hi]`` is read by the original exactly when one
    conjunction holds. An empty conjunction is always true; an empty tuple: no element is read."""
    out: list[tuple[sympy.Expr, ...]] = []
    for r in _merged(st.reads):
        got = _read_conditions(r, st.lo, st.hi)
        if got is not None and got not in out:
            out.append(got)
    return tuple(out)


def _merged(reads: tuple[StencilRead, ...]) -> list[StencilRead]:
    """The reads with the same conditions and touching offset ranges merged into one read of the joint range
    (``in[i - 1]``, ``in[i]``, ``in[i + 1]`` under one check read ``[-1, 1]``): the elements some thread reads
    through any of them are those it reads through the merged one."""
    out: list[StencilRead] = []
    for r in sorted(reads, key=lambda r: (str(r.thread_terms), str(r.element_terms), r.lo)):
        prev = out[-1] if out else None
        if prev is not None and (prev.thread_terms, prev.element_terms) == (r.thread_terms, r.element_terms) \
                and r.lo <= prev.hi + 1:
            out[-1] = replace(prev, first=prev.first, last=max(prev.hi, r.hi) - prev.offset)
        else:
            out.append(r)
    return out


def _factors(f: sympy.Expr) -> list[sympy.Expr]:
    """``[x, x]`` for ``x**2`` (a symbol to a small positive integer power, spelled as a product), else ``[f]``."""
    if f.is_Pow and f.base.is_Symbol and f.exp.is_Integer and 1 < int(f.exp) <= 4:
        return [f.base] * int(f.exp)
    return [f]


def c_text(e: sympy.Expr, names: Mapping[sympy.Symbol, str], cast: str) -> str | None:
    """C text of the affine (or product-of-symbols) integer expression ``e``: symbols in ``names`` spelled as
    mapped, any other symbol (a builtin, a parameter) as ``((cast)name)`` so that unsigned operands do not turn the
    arithmetic unsigned, a power (``N**2``) as a product; ``None`` for an expression with an opaque part
    (``div``, ``mod``)."""
    parts: list[str] = []
    for mono, coeff in sorted(sympy.expand(e).as_coefficients_dict().items(), key=lambda kv: str(kv[0])):
        factors = [f for g in ([] if mono == 1 else list(mono.args) if mono.is_Mul else [mono])
                   for f in _factors(g)]
        if not all(f.is_Symbol for f in factors) or not coeff.is_Integer:
            return None
        spelled = [names.get(f, f"(({cast}){f.name})") for f in factors]
        k = int(coeff)
        body = " * ".join(spelled) if spelled else str(abs(k))
        if spelled and abs(k) != 1:
            body = f"{abs(k)} * {body}"
        parts.append(("- " if k < 0 else "+ ") + body)
    if not parts:
        return "0"
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def c_condition(d: sympy.Expr, names: Mapping[sympy.Symbol, str], cast: str) -> str | None:
    """C text of the condition ``d > 0`` (:func:`c_text` spelling), the positive terms on one side and the negative
    ones on the other: ``e + 1 > 0`` is ``e >= 0``, ``n - e > 0`` is ``e < n``, ``32 - e > 0`` is ``e < 32``;
    ``None`` as :func:`c_text`."""
    e = sympy.expand(d)
    k = e.as_coeff_Add()[0] if e.as_coeff_Add()[0].is_Integer else sympy.Integer(0)
    rest = sympy.expand(e - k)
    pos = sum((t for t in sympy.Add.make_args(rest) if t.as_coeff_Mul()[0] > 0), sympy.Integer(0))
    neg = sympy.expand(pos - rest)
    if pos == 0 and k != 0 and neg != 0:  # k - e > 0: e < k (``htam_c < 32``, not ``0 >= -31 + htam_c``)
        below = c_text(neg, names, cast)
        return None if below is None else f"{below} < {k}"
    left, right = c_text(pos, names, cast), c_text(neg - k + 1 if k else neg, names, cast)
    if left is None or right is None:
        return None
    return f"{right} < {left}" if k == 0 else f"{left} >= {right}"


def _reaches_within(r: StencilRead, bound: sympy.Expr, side: str) -> bool:
    """Every element read ``r`` reaches (its coordinate before any clamp) is at least ``bound`` (``side`` ``"lo"``)
    or at most it (``"hi"``), by its own conditions: the thread's global index is at least 0, each lower term
    ``i + k > 0`` gives ``i >= 1 - k``, each upper term ``k - i > 0`` gives ``i <= k - 1``; the element terms bound
    the element alike."""
    sign = 1 if side == "lo" else -1
    reach = r.lo if side == "lo" else r.hi
    limits = [sympy.Integer(0) + reach] if side == "lo" else []  # the thread's index is never negative
    limits += [1 - sympy.expand(t - sign * THREAD) + reach if side == "lo" else sympy.expand(t + THREAD) - 1 + reach
               for t in r.thread_terms if t.coeff(THREAD) == sign]
    limits += [1 - sympy.expand(t - ELEMENT) if side == "lo" else sympy.expand(t + ELEMENT) - 1
               for t in r.element_terms if t.coeff(ELEMENT) == sign]
    for m in limits:
        gap = sympy.expand(sign * (m - bound))
        if gap.is_number and gap >= 0:
            return True
    return False


def common_clamp(reads: Iterable[StencilRead]) -> tuple[sympy.Expr | None, sympy.Expr | None] | str:
    """The clamp ``(lo, hi)`` a tile slot holds along one axis so that every read of the axis reads the value it
    reads in the original (clamp-to-edge: the tile's slot for coordinate ``e`` holds the element at the clamped
    ``e``): the bound each side's clamped reads share, when every read that does not clamp that side provably
    reaches only elements inside it; or one line why there is none (reads clamping to different bounds, a read
    that may reach past the clamp unclamped). ``(None, None)`` when no read clamps."""
    rs = list(reads)
    out: list[sympy.Expr | None] = []
    for k, side in enumerate(("lo", "hi")):
        bounds = {sympy.expand(r.clamp[k]) for r in rs if r.clamp[k] is not None}  # type: ignore[arg-type]
        if len(bounds) > 1:
            return "the window's reads clamp their coordinate to different bounds"
        b = bounds.pop() if bounds else None
        if b is not None and any(r.clamp[k] is None and not _reaches_within(r, b, side) for r in rs):
            return ("a window read that is not clamped may reach past the bound the others clamp to; the tile holds "
                    "one value a slot")
        out.append(b)
    return out[0], out[1]
