"""Overlap of shared-memory views: several local pointers carved out of one shared buffer.

A kernel that reduces several values per element in one tree often splits one dynamic shared buffer into
arrays::

    extern __shared__ float smem[];
    float *smin = smem, *smax = smem + blockDim.x;   // two views of blockDim.x elements each

Each view is a :class:`~htam_core.source.analysis.facts.PointerAlias` (its base and its element offset, affine in
the builtins). A rewrite that changes which entries of each array a step writes (sequential addressing of a tree)
keeps each array's result only when the arrays do not share an entry among the ones the tree touches:
:func:`overlapping_views` names the first two arrays whose ranges ``[offset, offset + extent)`` in the same base may
overlap. Idea source: interval disjointness of affine offsets, with the offsets as the analysis layer derives them.
"""

from __future__ import annotations

import sympy

from htam_core.source.analysis.facts import KernelFacts

__all__ = ["overlapping_views"]


def _base(facts: KernelFacts, name: str) -> tuple[str, sympy.Expr | None]:
    """``(base, offset)`` of ``name`` (itself at 0 when it is no view); the offset is ``None`` for a view that
    re-types the elements (its offsets are not in the base's elements)."""
    alias = facts.pointer_alias(name)
    if alias is None:
        return name, sympy.Integer(0)
    return alias.pointer, None if alias.vector else alias.offset


def _at_least(expr: sympy.Expr) -> bool:
    """``expr`` is provably ``>= 0``: a number that is, or a polynomial in the builtins (``blockDim.x``, which are
    positive) with no negative coefficient."""
    expr = sympy.expand(expr)
    if expr.is_number:
        return bool(expr >= 0)
    syms = expr.free_symbols
    if not all(str(s).startswith(("blockDim.", "gridDim.")) for s in syms) or not expr.is_polynomial(*syms):
        return False  # another variable, or an integer division (`blockDim.x / 2`): not proved
    return all(c >= 0 for c in sympy.Poly(expr, *syms).coeffs())


def overlapping_views(facts: KernelFacts, names: list[str], extent: sympy.Expr) -> tuple[str, str] | None:
    """The first two of the arrays ``names`` whose first ``extent`` elements may share memory, else ``None``.

    Args:
        facts: the kernel's facts (its :attr:`~KernelFacts.pointer_aliases`).
        names: shared arrays or local pointers into them, as written.
        extent: the elements of each array in use (``blockDim.x`` as ``sym("blockDim.x")``, or a number).

    Two names are apart when they have different bases, or the same base with offsets that differ by at least
    ``extent`` for every launch (provably, from the offsets' affine forms). A view that re-types the elements is
    never proved apart from another view of its base.
    """
    seen: list[tuple[str, tuple[str, sympy.Expr | None]]] = []
    for name in names:
        mine = _base(facts, name)
        for other, theirs in seen:
            if mine[0] != theirs[0]:
                continue
            if mine[1] is None or theirs[1] is None:
                return other, name
            d = mine[1] - theirs[1]
            if not (_at_least(d - extent) or _at_least(-d - extent)):
                return other, name
        seen.append((name, mine))
    return None
