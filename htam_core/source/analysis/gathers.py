"""Gather indices: a buffer whose loaded values index another buffer (``table[ids[t] * C + c]``).

The affine index analysis (:mod:`htam_core.source.analysis.cuda`) writes a value loaded from memory inside an
index as the symbol ``load(ids[t])`` (``call(__ldg(&ids[t]))`` through the read-only load), through locals
(``int tok = ids[t]; table[tok * C + c]``) and pointer-offset locals (``const float *row = table + ids[t] * C;
row[c]``). Where such a symbol appears linearly in a global access's index, its coefficient is the number of
elements of the indexed buffer that one index value steps over (``C`` for an embedding row, ``1`` for
``src[idx[i]]``), so the index values of a valid input lie in ``[0, len(target) / stride)``. The harness
inference draws integer index inputs from that range instead of guessing it.

Idea source: the gather/scatter access classification of data-dependent indices (Kirk and Hwu, "Programming
Massively Parallel Processors", histogram and sparse chapters); our own affine facts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import sympy

from htam_core.source.analysis.facts import KernelFacts

#: ``load(ids[...])`` or ``call(__ldg(&ids[...]))``: the symbol of a value loaded from buffer ``ids``.
_LOADED = re.compile(r"^(?:load\(\s*|call\(\s*__ldg\(\s*&\s*)([A-Za-z_]\w*)\s*\[")


@dataclass(frozen=True)
class GatherIndex:
    """Values loaded from ``pointer`` used as an index into ``target``.

    Attributes:
        pointer: the buffer the index values come from (a pointer parameter, aliases followed: ``ids``).
        target: the buffer they index (``table``).
        stride: elements of ``target`` per index value (sympy over the kernel's parameters: ``C``; ``1``).
        line: 1-based line of the access into ``target``.
        offset: the rest of the access's index, ``index - stride * value`` (sympy; ``r * V`` for ``row[idx[r]]``
            with ``row = x + r * V``, ``i % C`` for ``table[ids[i / C] * C + i % C]``).
        text: the index as written at the access (``"idx[r]"``).
    """

    pointer: str
    target: str
    stride: sympy.Expr
    line: int
    offset: sympy.Expr = sympy.Integer(0)
    text: str = ""


@dataclass(frozen=True)
class IndexBound:
    """The values a gather's index may take so that its access stays inside its range, at known sizes.

    Attributes:
        high: the number of valid index values (``[0, high)``).
        row: the elements of the range the index moves in: the length of one row (``V`` for ``x[r * V + idx[r]]``)
            or, with no row offset, the whole buffer's.
        in_row: the index moves inside one row of ``row`` elements that a row offset selects.
        proven: the index's other terms are bounded by the rule below; ``False``: they may reach past ``row``
            (``x[i + idx[i]]``), and ``high`` is the whole buffer's bound, a guess.
    """

    high: int
    row: int
    in_row: bool
    proven: bool


def _source_pointer(facts: KernelFacts, symbol: sympy.Symbol) -> str | None:
    """The pointer parameter a load symbol (``load(row[t])``) reads, local pointer aliases followed; else
    ``None``."""
    m = _LOADED.match(str(symbol))
    if m is None:
        return None
    alias = facts.pointer_alias(m.group(1))  # its pointer is the parameter the chain points into
    name = alias.pointer if alias is not None else m.group(1)
    return name if facts.pointer(name) is not None else None


def gather_indices(facts: KernelFacts) -> tuple[GatherIndex, ...]:
    """Every global access of ``facts`` whose index is linear in a value loaded from a pointer parameter
    (:class:`GatherIndex`): ``table[ids[i / C] * C + i % C]`` gives ``(ids, table, C)``. An index where the loaded
    value is not a linear term (``t[ids[i] * ids[i]]``, ``t[ids[i] % n]``) or whose coefficient reads loaded data
    gives nothing."""
    out: list[GatherIndex] = []
    for a in facts.accesses:
        if a.space != "global" or a.index is None or a.vector:
            continue
        for s in a.index.free_symbols:
            src = _source_pointer(facts, s)  # type: ignore[arg-type]
            if src is None:
                continue
            expr = sympy.expand(a.index)
            stride = sympy.simplify(sympy.diff(expr, s))
            if stride == 0 or any(_LOADED.match(str(x)) for x in stride.free_symbols) or \
                    any(f.has(s) for f in expr.atoms(sympy.Function)):
                continue
            out.append(GatherIndex(src, a.pointer, stride, a.line, sympy.expand(expr - stride * s), a.index_text))
    return tuple(out)


def _terms(offset: sympy.Expr, stride: int) -> tuple[int, list[int], bool, bool]:
    """Split a gather's other index terms (sizes substituted) into the constant, the steps of its row terms (a
    coefficient larger than ``stride``: ``V`` of ``r * V``), whether there are terms moving by less than one index
    step (``c`` of ``ids[t] * C + c``, assumed inside it as the gather's stride says) and whether every term is one
    of these."""
    const, rows, small, bounded = 0, [], False, True
    for t in sympy.Add.make_args(offset):
        coeff, rest = t.as_coeff_Mul()
        if not coeff.is_Integer:
            bounded = False
        elif rest == 1:
            const += int(coeff)
        elif int(coeff) <= 0 or int(coeff) == stride:
            bounded = False  # a term moving backwards, or by whole index steps (``x[i + idx[i]]``)
        elif int(coeff) > stride:
            rows.append(int(coeff))
        else:
            small = True
    return const, rows, small, bounded


def index_bound(g: GatherIndex, length: int, values: dict[str, int], params: frozenset[str]) -> IndexBound | None:
    """The valid values of ``g``'s index (:class:`IndexBound`) into a target of ``length`` elements.

    The access reads ``target[stride * v + offset]``. Terms of ``offset`` that move by more than one index step
    are a row offset (``r * V``): rows are ``M`` elements apart (the gcd of their steps), and ``v`` must keep the
    access inside its row, ``stride * v + const + (stride - 1) < M``, whatever row a thread reads. Without one,
    ``v`` indexes the whole buffer. Terms moving by less than ``stride`` are the element inside one index step
    (``+ c``, ``i % C``).

    Args:
        g: a gather of :func:`gather_indices`.
        length: the elements of ``g.target``.
        values: the kernel's integer parameters at their known values (``{"V": 512}``).
        params: every scalar parameter's name: one left without a value makes a term unknown.

    Returns:
        ``None`` when the stride is not a positive integer at ``values``; else the bound, ``proven = False``
        (and the whole buffer's bound) when the offset has a term the rule cannot bound.
    """
    stride = g.stride.subs({s: values[str(s)] for s in g.stride.free_symbols if str(s) in values})
    if not stride.is_Integer or int(stride) <= 0 or length <= 0:
        return None
    s = int(stride)
    offset = sympy.expand(g.offset.subs({x: values[str(x)] for x in g.offset.free_symbols if str(x) in values}))
    const, rows, small, bounded = _terms(offset, s)
    unknown = any(str(x) in params and str(x) not in values for x in offset.free_symbols)
    inner = s - 1 if small else 0  # the element inside one index step reaches at most stride - 1
    whole = max(1, length // s)
    if unknown or not bounded:
        return IndexBound(whole, length, bool(rows), False)
    row = math.gcd(*rows) if rows else length
    high = (min(row, length) - 1 - const - inner) // s + 1
    if high < 1:
        return IndexBound(whole, length, bool(rows), False)
    return IndexBound(high, row, bool(rows), True)
