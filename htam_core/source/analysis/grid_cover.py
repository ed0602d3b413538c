"""How a launch's grid covers the kernel's work along one axis: a ceil-division of the work by the block, or a
floor (exact) division.

A 1-D launch sizes its grid from the work ``W`` and the block ``B`` in one of two ways:

* **ceil-division**: ``(W + B - 1) / B``, ``(W - 1) / B + 1``, ``cdiv(W, B)``, ``DIV_UP(W, B)`` (a function or a
  macro that expands to one of these), ``W / B + (W % B != 0)``, ``ceil(W / (float)B)``: every one of the ``W``
  elements gets a thread, and a bounds check in the kernel keeps the extra threads of the last block out;
* **floor division**: ``W / B``, ``W >> log2(B)``: ``B * (W / B)`` threads, exactly ``W`` only when ``B`` divides
  ``W``; the kernel relies on that exact division or leaves the last ``W % B`` elements unprocessed.

A step that changes the block keeps a ceil-division a ceil-division (the grid follows the block):
:func:`block_literals` gives the block's literals in a grid written with them (``(n + 255) / 256``) and their new
values, when the grid's form with them changed is the ceil-division of the same work by the new block. A floor
division does not survive the change: with a larger block it covers fewer elements. The block-size step reads
:func:`launch_cover` to rewrite such a grid into the ceil-division that the kernel's bounds check makes exact
(``i < n`` with ``n`` the grid's work at the launch) or, without that check, to leave the block as it is.

Read from the launch facts' sympy forms (:attr:`~htam_core.source.analysis.facts.Dim.expr`: locals followed,
constants folded, macros and one-line helpers expanded) and the kernel's first bounds check
(:func:`~htam_core.source.analysis.guards.first_bounds_guard`).

Idea source: the CUDA C++ Programming Guide's vector-add launch ``(N + threadsPerBlock - 1) / threadsPerBlock``
and its bounds check; the CUDA C++ Best Practices Guide, "Thread and Block Heuristics".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import literal_value
from htam_core.source.analysis.cuda import Affine
from htam_core.source.analysis.facts import KernelFacts, LaunchFacts
from htam_core.source.analysis.forms import param_names
from htam_core.source.analysis.guards import enclosing_bounds, first_bounds_guard
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.unit import CudaSource

__all__ = ["DIMS", "GridCover", "block_literals", "division_operands", "grid_rounding", "index_bound", "launch_cover"]

DIMS = ("x", "y", "z")
GridKind = Literal["ceil", "floor", "other"]
#: ``call(ceil(n / 256.0))``, ``call(ceilf((float)n / 256.0f))``: a floating ceil of a quotient.
_CEIL_CALL = re.compile(r"^call\(\s*(?:std::)?ceilf?\(.*/.*\)\s*\)$")


@dataclass(frozen=True)
class GridCover:
    """How one launch's grid covers the work along one axis.

    Attributes:
        kind: ``"ceil"`` (every element of the work gets a thread), ``"floor"`` (``B * (W / B)`` threads: the
            exact division the kernel relies on), ``"other"`` (a constant, a device-sized or an unread grid).
        work: the work ``W`` the grid divides, sympy over the launching function's names (``None`` when not read).
        bound: the kernel parameter that its first bounds check compares the global index along the axis with
            (``n`` of ``if (i < n)`` or ``if (i >= n) return;``), ``None`` without such a check.
        bound_is_work: that parameter receives ``W`` at this launch: a ceil-division of ``W`` by any block covers
            exactly the elements the check lets through.
    """

    kind: GridKind
    work: sympy.Expr | None = None
    bound: str | None = None
    bound_is_work: bool = False


def _split_const(e: sympy.Expr) -> tuple[sympy.Expr, int]:
    """``(W, c)`` with ``e = W + c``, ``c`` an integer constant."""
    c, rest = sympy.sympify(e).as_coeff_Add()
    return rest, int(c) if c.is_Integer else 0


def _is_block(d: sympy.Expr, block: int, dim: str) -> bool:
    """``d`` is the block extent: the constant ``block``, or a ``dim3``'s member along ``dim`` (``block.x``, read
    as the opaque ``expr(block.x)``)."""
    return d == block or (isinstance(d, sympy.Symbol) and re.fullmatch(rf"expr\(\s*\w+\s*\.\s*{dim}\s*\)", d.name)
                          is not None)


def _quotient(e: sympy.Expr, block: int, dim: str) -> tuple[sympy.Expr, sympy.Expr] | None:
    """``(A, B)`` of ``div(A, B)`` or ``A >> log2(B)`` with ``B`` the block extent (:func:`_is_block`), else
    ``None``."""
    name = getattr(getattr(e, "func", None), "__name__", "")
    if name == "div" and len(e.args) == 2 and _is_block(e.args[1], block, dim):
        return e.args[0], e.args[1]
    if name == "op_62_62" and len(e.args) == 2 and e.args[1].is_Integer and 2 ** int(e.args[1]) == block:
        return e.args[0], sympy.Integer(block)
    return None


def _ceil_work(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr | None:
    """``W`` when the dividend ``a`` is ``W + b - 1`` (``W`` free of ``b``), else ``None``."""
    work, c = _split_const(sympy.expand(a - b + 1) if not b.is_Integer else a)
    if b.is_Integer:
        return work if c == int(b) - 1 else None
    return sympy.expand(a - b + 1) if b not in sympy.expand(a - b + 1).free_symbols else None


def _floor_work(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr | None:
    """``a`` when it is the work of a floor division by ``b``: no constant term, free of ``b``."""
    return a if _split_const(a)[1] == 0 and b not in a.free_symbols else None


def grid_rounding(grid: sympy.Expr | None, block: int | None, dim: str = "x") -> tuple[GridKind, sympy.Expr | None]:
    """``(kind, W)`` of a grid component ``grid`` (sympy, :attr:`Dim.expr`) for a block extent ``block``
    (threads) along ``dim``: ``div(W + B - 1, B)``, ``div(W - 1, B) + 1``, ``div(W, B) + (W % B != 0)`` and a
    floating ceil are ``"ceil"``; ``div(W, B)`` and ``W >> log2(B)`` are ``"floor"``; anything else (``W``
    ``None``) ``"other"``. ``B`` is the constant or a ``dim3``'s member (``block.x``)."""
    if grid is None or block is None or block <= 1:
        return "other", None
    if isinstance(grid, sympy.Symbol) and _CEIL_CALL.match(grid.name):
        return "ceil", None
    q = _quotient(grid, block, dim)
    if q is not None:
        if (w := _ceil_work(*q)) is not None:
            return "ceil", w
        return ("floor", q[0]) if _floor_work(*q) is not None else ("other", None)
    rest, c = _split_const(grid)
    q = _quotient(rest, block, dim)
    if q is not None and c == 1:
        work, k = _split_const(q[0])
        return ("ceil", work) if k == -1 else ("other", None)
    if isinstance(grid, sympy.Add) and len(grid.args) == 2:
        for a, b in (grid.args, grid.args[::-1]):
            q = _quotient(a, block, dim)
            if q is not None and getattr(b.func, "__name__", "") == "op_33_61" and str(q[0]) in str(b):
                return "ceil", q[0]
    return "other", None


def index_bound(source: CudaSource, facts: KernelFacts, dim: str) -> str | None:
    """The kernel parameter that the kernel's bounds check compares its global index along ``dim`` with, or
    ``None``: its first bounds check (``if (i < n)``, ``if (i >= n) return;``, the index a local
    :class:`ThreadIndex`), else the one bound that every global access indexed by the thread's position along
    ``dim`` runs under (``s[tid] = (i < n) ? in[i] : 0.0f``, ``if (i < n) y[i] = ...`` after other statements)."""
    ti = facts.thread_index(dim)
    if ti is None:
        return None
    names = param_names(source)
    stmts = [c for c in source.body.named_children if not syn.is_comment(c)]
    found = first_bounds_guard(stmts, source.src)
    if found is not None and not isinstance(found[1], str) and (b := found[1].bounds().get(ti.name)) is not None:
        return source.t(b).strip() if source.t(b).strip() in names else None
    moving = {f"threadIdx.{dim}", f"blockIdx.{dim}"}
    bounds = {enclosing_bounds(source.root, a.span[0] - source.base, a.span[1] - source.base, source.src).get(ti.name)
              for a in facts.global_accesses() if a.index is not None
              and moving <= {str(x) for x in a.index.free_symbols}}
    (one,) = bounds if len(bounds) == 1 else (None,)
    return one.strip() if one is not None and one.strip() in names else None


def launch_cover(source: CudaSource, facts: KernelFacts, launch: LaunchFacts, axis: int) -> GridCover:
    """How ``launch``'s grid covers the work along ``axis`` (0 for x) of the kernel (:class:`GridCover`), its block
    extent read from the launch's constant block."""
    if axis >= len(launch.grid) or axis >= len(launch.block):
        return GridCover("other")
    kind, work = grid_rounding(launch.grid[axis].expr, launch.block[axis].value, DIMS[axis])
    bound = index_bound(source, facts, DIMS[axis])
    names = param_names(source)
    at_launch = launch.arg_exprs[names.index(bound)] if bound in names and names.index(bound) < len(
        launch.arg_exprs) else None
    same = work is not None and at_launch is not None and sympy.simplify(at_launch - work) == 0
    return GridCover(kind, work, bound, bool(same))


def division_operands(node: Node, src: bytes) -> tuple[Node, str, Node] | None:
    """``(dividend, operator, divisor)`` of a grid expression written ``W / B`` or ``W >> k`` (parentheses
    around it dropped), else ``None``: the nodes a step rewrites into a ceil-division."""
    node = syn.unwrap_parens(node)
    if not syn.is_binary(node):
        return None
    op = node.child_by_field_name("operator")
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    op_text = src[op.start_byte:op.end_byte].decode() if op is not None else ""
    if left is None or right is None or op_text not in ("/", ">>"):
        return None
    return left, op_text, right




def _integral(text: str) -> int | None:
    """The value of number literal ``text`` when it is an integer (``256``, ``256u``, ``256.0f``), else ``None``."""
    v = literal_value(text)
    return int(v) if v is not None and float(v).is_integer() else None


def _function_of(node: Node) -> Node | None:
    """The function (or lambda) around ``node``, ``None`` at file scope."""
    p = node.parent
    while p is not None and p.type not in ("function_definition", "lambda_expression"):
        p = p.parent
    return p


def _form(source: CudaSource, grid: Node, literals: dict[int, int], names: bool = False) -> sympy.Expr | None:
    """The sympy form of grid component ``grid`` read as the launch facts read a grid (locals followed, ceil-division
    helpers and macros read), the number literals starting at the bytes of ``literals`` read as their values;
    ``names=True`` reads every name as itself (``n`` of ``int n = 4096;`` stays ``n``)."""
    host = _function_of(grid)
    if host is None:
        return None
    reader = Affine(source.env, host, set(), ceil_div_calls=True, reaching=True)
    reader.literals = literals
    reader.names_as_symbols = names
    return reader.expr(grid)


def _rounding(source: CudaSource, grid: Node, literals: dict[int, int], block: int, dim: str,
              ) -> tuple[str | None, sympy.Expr | None]:
    """:func:`grid_rounding` of ``grid``'s form (:func:`_form`); a grid whose locals fold to a number
    (``(n + 255) / 256`` after ``int n = 4096;``) is read with its names kept, so its ceil-division shows."""
    form = _form(source, grid, literals)
    if form is not None and form.is_number:
        form = _form(source, grid, literals, names=True)
    return grid_rounding(form, block, dim)


def block_literals(source: CudaSource, grid: Node, old: int, new: int, dim: str = "x") -> list[tuple[Node, int]] | str | None:
    """The block's number literals in grid component ``grid`` (a node of ``source``'s tree, locals already followed:
    ``(n + 255) / 256``) with the value each takes when the block extent along ``dim`` goes from ``old`` to
    ``new`` threads (``old`` -> ``new``, ``old - 1`` -> ``new - 1``).

    One reading decides: the grid's sympy form (:func:`grid_rounding`) must be a ceil-division of some work ``W``
    by ``old``, and its form with those literals changed the ceil-division of the same ``W`` by ``new`` (so a
    literal of the block's value inside ``W``, ``(256 * m + 255) / 256``, refuses; ``W / 256 + (W % 256 != 0)``
    follows). A floating ceil (``ceil(n / 256.0)``) is read whole: it follows when the block's literal is its only
    one. Returns the ``(literal, new value)`` pairs, ``None`` when ``grid`` has no literal ``old`` (the grid does
    not follow the block), or the one-line reason it does not follow it right. Errors: none.
    Idea source: the CUDA C++ Programming Guide's ``(N + threadsPerBlock - 1) / threadsPerBlock``."""
    lits = [(n, v) for n in syn.numbers(grid) if (v := _integral(source.t(n))) in (old, old - 1)]
    if not any(v == old for _, v in lits):
        return None
    moved = {n.start_byte: new if v == old else new - 1 for n, v in lits}
    kind, work = _rounding(source, grid, {}, old, dim)
    if kind != "ceil":
        return f"the grid {source.t(grid)!r} uses {old} but is not a ceil-division by the block size {old}"
    new_kind, new_work = _rounding(source, grid, moved, new, dim)
    whole = work is None and new_work is None and len(lits) == 1
    if new_kind != "ceil" or not (whole or (work is not None and new_work is not None
                                             and sympy.simplify(work - new_work) == 0)):
        return f"the grid {source.t(grid)!r} uses {old} also outside its ceil-division by the block size"
    return [(n, moved[n.start_byte]) for n, _ in lits]
