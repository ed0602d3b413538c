"""Clamped coordinates: an index coordinate held to a range, ``min(max(x + dx, 0), W - 1)``, read as the coordinate
it clamps and its bounds (:class:`Clamp`).

The usual clamp-to-edge boundary of image kernels reads a neighbour at the nearest pixel inside the image. It is
written with ``min``/``max`` in either nesting and argument order (``min(max(e, L), H)``, ``max(L, min(e, H))``,
``std::min``, ``::max``), one-sided (``max(x - 1, 0)``), or with ``?:`` whose condition compares the coordinate
with the value of the other branch (``x > 0 ? x - 1 : 0``, ``x + 1 < W ? x + 1 : W - 1``, nested for both sides).
The reading is semantic: each branch and argument is the analysis layer's affine form, and a ``?:`` is a clamp only
when its condition is exactly "the coordinate is below (above) the bound" for the bound its other branch holds.

The affine reader keeps such an index part as one opaque symbol (``call(min(max(x + dx, 0), W - 1))``);
:func:`unclamp` finds the expression the symbol stands for in the kernel's body and gives the read with the clamped
coordinate in its place, and the clamps it took out.

Idea source: clamp-to-edge addressing (``cudaAddressModeClamp`` of CUDA texture fetches; the replicate border of
image-processing libraries), read as ``min``/``max`` bounds as in polyhedral bound analysis.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import sympy
from tree_sitter import Node

from htam_core.source.analysis.facts import Access
from htam_core.source.analysis.syntax import strip_casts, text, walk
from htam_core.source.analysis.transpose import ExprOf, condition_bounds
from htam_core.source.analysis.unit import CudaSource

__all__ = ["Clamp", "clamp_locals", "clamp_of", "unclamp"]

#: Symbol names of the builtins that make a coordinate move with the thread.
_THREAD_PREFIXES = ("threadIdx.", "blockIdx.")
#: The node kinds the affine reader keeps as an opaque symbol, and the symbol's prefix for each.
_OPAQUE = {"call_expression": "call", "conditional_expression": "expr"}


@dataclass(frozen=True)
class Clamp:
    """``min(max(inner, lo), hi)``: a coordinate held to ``[lo, hi]`` (either side may be absent).

    Attributes:
        inner: the coordinate clamped, an affine form (``x + dx``).
        lo: the lowest value it is held to (``0``), over the parameters; ``None`` for no lower clamp.
        hi: the highest (``W - 1``); ``None`` for no upper clamp.
    """

    inner: sympy.Expr
    lo: sympy.Expr | None = None
    hi: sympy.Expr | None = None

    @property
    def bare(self) -> bool:
        """No side is clamped: the plain coordinate."""
        return self.lo is None and self.hi is None


def _moves(e: sympy.Expr) -> bool:
    """``e`` reads a thread or block index (a coordinate, not a bound)."""
    return any(s.name.startswith(_THREAD_PREFIXES) for s in e.free_symbols)


def _opaque(e: sympy.Expr) -> bool:
    """``e`` has a part the affine reader could not read (a call, a ``?:``, a load)."""
    return any(s.name.startswith(("call(", "expr(", "load(")) for s in e.free_symbols)


def _with_side(c: Clamp, bound: sympy.Expr, side: str) -> Clamp | None:
    """``c`` with ``bound`` as its ``side`` (``"lo"``/``"hi"``), ``None`` when that side is clamped already or a
    lower bound would go outside an upper one (``min(max(...))`` and ``max(min(...))`` agree when lo <= hi)."""
    if getattr(c, side) is not None:
        return None
    return replace(c, **{side: bound})


def _split(a: Clamp | None, b: Clamp | None) -> tuple[Clamp, sympy.Expr] | None:
    """The argument that is a coordinate and the other's value (a bound), ``None`` unless exactly one moves."""
    if a is None or b is None:
        return None
    if _moves(a.inner) and b.bare and not _moves(b.inner):
        return a, b.inner
    if _moves(b.inner) and a.bare and not _moves(a.inner):
        return b, a.inner
    return None


def _call(node: Node, src: bytes, expr: ExprOf, depth: int) -> Clamp | None:
    """``min(a, b)``/``max(a, b)`` (any namespace) as a clamp of the moving argument, else ``None``."""
    fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
    name = "".join(text(fn, src).split()).split("::")[-1]
    vals = [a for a in (args.named_children if args is not None else []) if a.type != "comment"]
    if name not in ("min", "max") or len(vals) != 2:
        return None
    got = _split(clamp_of(vals[0], src, expr, depth + 1), clamp_of(vals[1], src, expr, depth + 1))
    return None if got is None else _with_side(got[0], got[1], "hi" if name == "min" else "lo")


def _ternary(node: Node, src: bytes, expr: ExprOf, depth: int) -> Clamp | None:
    """``c ? a : b`` as a clamp: one branch a bound ``V``, the other a coordinate ``e`` (clamped or not), and ``V``
    taken exactly when ``e < V`` (a lower clamp) or ``e > V`` (an upper one); else ``None``."""
    cond = node.child_by_field_name("condition")
    yes = clamp_of(node.child_by_field_name("consequence"), src, expr, depth + 1)
    no = clamp_of(node.child_by_field_name("alternative"), src, expr, depth + 1)
    got = _split(yes, no)
    bounds = condition_bounds(cond, src, expr) if cond is not None else None
    if got is None or bounds is None or len(bounds) != 1:
        return None
    c, v = got
    d = sympy.expand(bounds[0].hi - bounds[0].lo)  # the condition is d > 0
    takes_v = d if yes is not None and not _moves(yes.inner) else sympy.expand(1 - d)
    if sympy.expand(takes_v - (v - c.inner)) == 0:
        return _with_side(c, v, "lo")
    if sympy.expand(takes_v - (c.inner - v)) == 0:
        return _with_side(c, v, "hi")
    return None


def clamp_of(node: Node | None, src: bytes, expr: ExprOf, depth: int = 0) -> Clamp | None:
    """The clamp expression ``node`` is (see the module docstring); a plain readable expression is a bare
    :class:`Clamp` of itself; ``None`` for anything else (a clamp of a clamp on the same side, a wrap-around, a
    part the affine reader cannot read).

    Args:
        node: an expression node of the kernel's unit.
        src: the unit's bytes.
        expr: the affine reader (``Affine.expr`` with the kernel's bindings).
        depth: the nesting depth so far (bounded).
    """
    if node is None or depth > 8:
        return None
    node = strip_casts(node)
    if node.type == "call_expression":
        got = _call(node, src, expr, depth)
        if got is not None:
            return got
    elif node.type == "conditional_expression":
        return _ternary(node, src, expr, depth)
    e = expr(node)
    return None if e is None or _opaque(e) else Clamp(sympy.expand(e))


def _symbol_clamp(src: CudaSource, expr: ExprOf, s: sympy.Symbol) -> Clamp | None:
    """The clamp the opaque symbol ``s`` stands for: every expression of the kernel's body spelled as ``s`` reads
    as the same clamp of a moving coordinate; else ``None``."""
    found: set[Clamp | None] = set()
    for n in walk(src.body):
        kind = _OPAQUE.get(n.type)
        if kind and s.name == f"{kind}({' '.join(text(n, src.src).split())})":
            found.add(clamp_of(n, src.src, expr))
    if len(found) != 1:
        return None
    c = found.pop()
    return c if c is not None and not c.bare and _moves(c.inner) else None


def unclamp(src: CudaSource, expr: ExprOf, a: Access) -> tuple[Access, dict[sympy.Symbol, Clamp]] | None:
    """Read ``a`` with each clamped part of its index replaced by the coordinate it clamps (``in[min(max(y + dy,
    0), H - 1) * W + x]`` reads as ``in[(y + dy) * W + x]``), with the clamps taken out keyed by the symbol the
    affine reader gave each part (its coefficient in :attr:`Access.index` says which axis it is); ``a`` itself and
    ``{}`` when the index has no opaque part; ``None`` when an opaque part is not a clamp.

    Args:
        src: the kernel's parsed unit.
        expr: the affine reader.
        a: one access of the kernel.
    """
    if a.index is None:
        return None
    parts = [s for s in a.index.free_symbols if s.name.startswith(("call(", "expr("))]
    if not parts:
        return a, {}
    clamps: dict[sympy.Symbol, Clamp] = {}
    for s in parts:
        c = _symbol_clamp(src, expr, s)
        if c is None:
            return None
        clamps[s] = c
    index = sympy.expand(a.index.subs({s: c.inner for s, c in clamps.items()}, simultaneous=True))
    return replace(a, index=index), clamps


def clamp_locals(src: CudaSource, clamps: Iterable[sympy.Symbol]) -> tuple[str, ...]:
    """The locals declared with one of the clamps ``clamps`` (the affine reader's symbols) as their initializer
    (``int xx = min(max(x + dx, 0), W - 1);``): once every read through them reads a tile, a rewrite may find them
    unread."""
    names = {c.name for c in clamps}
    out: list[str] = []
    for n in walk(src.body):
        value = n.child_by_field_name("value") if n.type == "init_declarator" else None
        decl = n.child_by_field_name("declarator") if value is not None else None
        if value is None or decl is None or decl.type != "identifier":
            continue
        v = strip_casts(value)
        kind = _OPAQUE.get(v.type)
        if kind and f"{kind}({' '.join(text(v, src.src).split())})" in names:
            out.append(text(decl, src.src))
    return tuple(dict.fromkeys(out))
