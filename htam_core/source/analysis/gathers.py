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
    """

    pointer: str
    target: str
    stride: sympy.Expr
    line: int


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
            out.append(GatherIndex(src, a.pointer, stride, a.line))
    return tuple(out)
