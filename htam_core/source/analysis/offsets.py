"""Loaded values that bound loops or index memory: offsets arrays (CSR's ``row_ptr``) and index buffers.

The affine index analysis (:mod:`htam_core.source.analysis.cuda`) writes a value loaded from memory as the symbol
``load(p[e])`` (``call(__ldg(&p[e]))`` through the read-only load), through locals (``int start = row_ptr[r];``) and
pointer-offset locals. Where such a symbol is a loop's start or bound, the read is a *bound read*: its value says
how far a loop runs, it is not data the kernel computes with. Two bound reads of one pointer at neighbouring
elements, the start and the end of one loop (``for (j = p[r]; j < p[r + 1]; ++j)``), make ``p`` an *offsets
array*: its elements are non-decreasing positions into the buffers the loop indexes (CSR's row pointers, a
segment list's boundaries); so do a lane's share of that range (``for (j = p[r] + lane; j < p[r + 1]; j += 32)``,
``j += blockDim.x``: a warp or a block per row). Such neighbouring reads are not a stencil window (:mod:`~htam_core.source.analysis.stencil`
leaves them out), and a harness fills such an array with sorted positions, not random integers.

Idea source: the compressed sparse row format's ``row_ptr`` (Saad, "Iterative Methods for Sparse Linear Systems",
sec. 3.4; Bell and Garland, "Efficient Sparse Matrix-Vector Multiplication on CUDA", 2008); our own affine facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import sympy

from htam_core.source.analysis.facts import Access, KernelFacts, LoopFact, PointerAlias

__all__ = ["OffsetsLoop", "index_sources", "loaded_read", "loop_bound_reads", "offsets_loops"]

#: ``load(p[e])`` or ``call(__ldg(&p[e]))``: the pointer as written and the index text of a loaded element.
_LOADED = re.compile(r"^(?:load\(\s*|call\(\s*__ldg\(\s*&\s*)([A-Za-z_]\w*)\s*\[(.*)\]\s*\)(?:\s*\))?$")
#: A name followed by ``[``: an element of that array named anywhere inside an opaque symbol's text.
_NAMED = re.compile(r"([A-Za-z_]\w*)\s*\[")


@dataclass(frozen=True)
class OffsetsLoop:
    """A loop that runs from one loaded element of ``pointer`` to the next: ``for (j = p[r]; j < p[r + 1]; ++j)``.

    Attributes:
        pointer: the offsets array (a pointer parameter, aliases followed: ``row_ptr``).
        loop: the loop's id (:attr:`KernelFacts.loops`).
        line: the loop header's 1-based line.
        targets: the pointer parameters the loop's variable indexes inside it (``vals``, ``col_idx``), in source
            order: the offsets are positions into them.
        first, last: the start's and the bound's reads as written, the pointer parameter named (``"row_ptr[row]"``,
            ``"row_ptr[row + 1]"``).
        thread_rows: the start's index moves with ``threadIdx`` (``row_ptr[row]``, ``row`` the global thread
            index): each thread walks its own row, so the lanes of a warp walk 32 rows (uncoalesced).
    """

    pointer: str
    loop: int
    line: int
    targets: tuple[str, ...]
    first: str = ""
    last: str = ""
    thread_rows: bool = False


def _norm(text: str) -> str:
    return " ".join(text.split())


def loaded_read(symbol: sympy.Basic, aliases: Iterable[PointerAlias] = ()) -> tuple[str, str] | None:
    """The ``(pointer, index text)`` of a loaded-element symbol (``load(rp[row + 1])`` gives ``("row_ptr", "row +
    1")`` when ``rp`` is a pointer-offset local of ``row_ptr``), or ``None`` for any other symbol. The index text
    is whitespace-normalized, as :func:`_norm` makes :attr:`Access.index_text`."""
    m = _LOADED.match(str(symbol))
    if m is None:
        return None
    name = next((a.pointer for a in aliases if a.name == m.group(1)), m.group(1))
    return name, _norm(m.group(2))


def _bound_symbols(lp: LoopFact) -> set[sympy.Basic]:
    return {s for e in (lp.start, lp.bound) if e is not None for s in e.free_symbols}


def loop_bound_reads(loops: Iterable[LoopFact], accesses: Iterable[Access],
                     aliases: Iterable[PointerAlias] = ()) -> tuple[Access, ...]:
    """The global reads whose loaded value is a term of some loop's start or bound (``row_ptr[r]`` and
    ``row_ptr[r + 1]`` of ``for (j = row_ptr[r]; j < row_ptr[r + 1]; ++j)``, also through ``int start =
    row_ptr[r];``), in source order. A read is matched to a symbol by its pointer (aliases followed) and its index
    as written; a read made through a macro is not matched."""
    aliases = tuple(aliases)
    loaded = {r for lp in loops for s in _bound_symbols(lp) if (r := loaded_read(s, aliases)) is not None}
    return tuple(a for a in accesses if a.space == "global" and a.kind == "read" and not a.macro
                 and (a.pointer, _norm(a.index_text)) in loaded)


#: Launch extents, all positive: a step over them (``blockDim.x``, ``blockDim.x * gridDim.x``) counts up.
_EXTENT = re.compile(r"^(?:blockDim|gridDim)\.[xyz]$|^warpSize$")
#: The thread and launch builtins: a lane's offset into a row's range names only these (``threadIdx.x & 31``).
_BUILTIN = re.compile(r"^(?:threadIdx|blockIdx|blockDim|gridDim)\.[xyz]$|^warpSize$")


def _counts_up(step: sympy.Expr | None) -> bool:
    """``step`` is positive: a positive number, or a polynomial in launch extents (``blockDim.x``, ``32``,
    ``blockDim.x * gridDim.x``) with positive coefficients."""
    if step is None:
        return False
    if not step.free_symbols:
        return bool(step.is_number and step > 0)
    if any(_EXTENT.match(str(s)) is None for s in step.free_symbols):
        return False
    try:
        return all(c > 0 for c in sympy.Poly(step, *step.free_symbols).coeffs())
    except sympy.PolynomialError:
        return False


def _lane_offset(rest: sympy.Expr) -> bool:
    """``rest``, the span of a loop less ``p[r + 1] - p[r]``, is none or a thread's offset into the row (``-(threadIdx.x
    & 31)`` of ``j = p[r] + lane``): it names only thread and launch builtins, no loaded value and no parameter."""
    return all(_BUILTIN.match(str(s)) is not None for s in rest.free_symbols)


def _range_reads(facts: KernelFacts, lp: LoopFact) -> tuple[Access, Access] | None:
    """``(lo, hi)``: the two bound reads whose difference bounds the values ``lp``'s variable takes
    (``for (j = p[r]; j < p[r + 1]; ++j)``, ``j <= p[r + 1] - 1``, ``for (t = 0; t < p[r + 1] - p[r]; ++t)``; a
    lane's share of the range, ``for (j = p[r] + lane; j < p[r + 1]; j += 32)`` or ``j += blockDim.x``: the rest
    of the span names no loaded value), or ``None``."""
    if lp.var is None or lp.update != "+" or lp.start is None or lp.bound is None or not _counts_up(lp.step):
        return None
    span = {"<": lp.bound - lp.start, "!=": lp.bound - lp.start, "<=": lp.bound + 1 - lp.start}.get(lp.cmp or "")
    if span is None:
        return None
    span = sympy.expand(span)
    reads = loop_bound_reads(facts.loops, facts.accesses, facts.pointer_aliases)
    by_symbol = {s: next((a for a in reads if (a.pointer, _norm(a.index_text)) == got), None)
                 for s in span.free_symbols if (got := loaded_read(s, facts.pointer_aliases)) is not None}
    hi = next((s for s in by_symbol if span.coeff(s) == 1), None)
    lo = next((s for s in by_symbol if span.coeff(s) == -1), None)
    if hi is None or lo is None or not _lane_offset(sympy.expand(span - hi + lo)):
        return None
    return by_symbol[lo], by_symbol[hi]  # type: ignore[return-value]


def offsets_loops(facts: KernelFacts) -> tuple[OffsetsLoop, ...]:
    """The loops whose variable takes ``p[e + 1] - p[e]`` values, one loaded element of a pointer parameter to the
    next, counting up by a positive step (:class:`OffsetsLoop`): ``for (j = p[r]; j < p[r + 1]; ++j)`` (``<``,
    ``!=``, ``<= p[r + 1] - 1``), ``for (t = 0; t < p[r + 1] - p[r]; ++t)``, through locals too."""
    out: list[OffsetsLoop] = []
    for lp in facts.loops:
        got = _range_reads(facts, lp)
        if got is None:
            continue
        lo, hi = got
        if lo.pointer != hi.pointer or lo.index is None or hi.index is None \
                or sympy.expand(hi.index - lo.index) != 1 or facts.pointer(lo.pointer) is None:
            continue
        targets = [a.pointer for a in facts.accesses if a.space == "global" and lp.id in a.loops
                   and a.stride(lp.var or "") not in (None, 0) and a.pointer != lo.pointer]
        rows = any(lo.stride(f"threadIdx.{d}") not in (None, 0) for d in "xyz")
        out.append(OffsetsLoop(lo.pointer, lp.id, lp.line, tuple(dict.fromkeys(targets)),
                               f"{lo.pointer}[{_norm(lo.index_text)}]", f"{hi.pointer}[{_norm(hi.index_text)}]", rows))
    return tuple(out)


def _names_in(facts: KernelFacts, exprs: Iterable[sympy.Expr | None]) -> set[str]:
    """The pointer parameters (aliases followed) whose elements any symbol of ``exprs`` names, loaded or inside an
    opaque call or expression (``call(min(v[i], n))``)."""
    out: set[str] = set()
    for e in exprs:
        for s in (e.free_symbols if e is not None else ()):
            for name in _NAMED.findall(str(s)):
                alias = facts.pointer_alias(name)
                out.add(alias.pointer if alias is not None else name)
    return out


def index_sources(facts: KernelFacts) -> frozenset[str] | None:
    """The pointer parameters whose loaded values may reach an index, an address or a loop's range: named by a
    symbol of an access's index, an atomic's index, a pointer-offset local's offset or a loop's start or bound.
    ``None`` when some index cannot be read (an access whose index is unknown): then any buffer may be one."""
    if any(a.index is None for a in facts.accesses):
        return None
    exprs: list[sympy.Expr | None] = [a.index for a in facts.accesses]
    exprs += [x.index for x in facts.atomics]
    exprs += [al.offset for al in facts.pointer_aliases]
    exprs += [e for lp in facts.loops for e in (lp.start, lp.bound)]
    names = _names_in(facts, exprs) | _names_in(facts, [sympy.Symbol(x.index_text) for x in facts.atomics
                                                        if x.index is None and x.index_text])
    return frozenset(names & {p.name for p in facts.pointers})
