"""Element-copy transposes, computed from the affine index forms (:class:`~htam_core.source.analysis.facts.Transpose`).

A kernel is a transpose when its only global accesses are one load and one store of a function of the loaded value
(the value itself, ``-v``, ``2.f * v``, ``(half)v``, the conjugate ``make_float2(v.x, -v.y)`` of ``float2 v = in[i]``:
:attr:`Transpose.value`, read by :func:`_stored_value`), and the
indices, read as affine forms over ``threadIdx``/``blockIdx``/``blockDim``/``gridDim`` and loop variables, are
``in[row * cols + col]`` and ``out[col * rows + row]`` for two parameters ``rows`` and ``cols`` (the same one for a
square matrix). The row is the coefficient of ``cols`` in the load's index and the column the rest; the store's
index must be their swap over ``rows``. Nothing is matched on the spelling: locals, casts, ``int64_t`` or
``unsigned`` indices, cooperative-groups indices, macros for sizes, loops over rows (``for (j = 0; j < TILE; j +=
ROWS)``, ``for (k = 0; k < 4; ++k)``) and template arguments bound at the launch are all read the same way.

The store's bounds checks are read too (:func:`access_bounds`): the ``if`` conditions around it and the early exits
(``if (x >= cols) return;``, ``if (y + j >= rows) continue;``) before it, each term normalized to ``lo < hi``. A
transpose whose checks are all ``row < rows`` or ``col < cols`` moves every element of the matrix the grid reaches
exactly once, so a rewrite that moves the whole ``rows x cols`` matrix (whatever the grid) keeps its output
contract. Idea source: NVIDIA developer blog, "An Efficient Matrix Transpose in CUDA C/C++" (Harris, 2013);
normalizing guards to half-open bounds as in polyhedral loop-bound analysis.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import sympy
from tree_sitter import Node

from htam_core.source.analysis.facts import BUILTINS, Access, Bound, LoopFact, Transpose, sym
from htam_core.source.analysis.guards import GuardTerm, positive_terms
from htam_core.source.analysis.syntax import strip_casts, text, unwrap_parens, walk
from htam_core.source.analysis.unit import CudaSource

__all__ = ["LOADED", "access_bounds", "condition_bounds", "find_transposes", "grid_sides", "grid_strides", "stride_text",
           "tile_coverage", "uniform_part"]

#: An expression node -> its affine form (the analysis layer's ``Affine.expr``), ``None`` when unreadable.
ExprOf = Callable[[Node], "sympy.Expr | None"]

_EXITS = ("return_statement", "continue_statement")
_JUMPS = ("return_statement", "continue_statement", "break_statement", "goto_statement")


def _bound(term: GuardTerm, expr: ExprOf) -> Bound | None:
    """The :class:`Bound` of one positive term (``a <= b`` is ``a < b + 1``; ``a > b`` is ``b < a``), or ``None``
    for a term that is not an ordering comparison of two readable expressions."""
    if term.compare is None:
        return None
    left, op, right = term.compare
    a, b = expr(left), expr(right)
    if a is None or b is None:
        return None
    forms = {"<": (a, b), "<=": (a, b + 1), ">": (b, a), ">=": (b, a + 1)}
    if op not in forms:
        return None
    lo, hi = forms[op]
    return Bound(sympy.expand(lo), sympy.expand(hi))


def _condition(stmt: Node) -> Node | None:
    """The expression of an ``if``'s condition (``condition_clause`` unwrapped)."""
    cond = stmt.child_by_field_name("condition")
    if cond is not None and cond.type == "condition_clause":
        cond = cond.child_by_field_name("value")
    return cond


def _bare_exit(stmt: Node) -> bool:
    """``if (c) return;`` / ``if (c) continue;`` (braces allowed), with no ``else``."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return False
    cons = stmt.child_by_field_name("consequence")
    if cons is not None and cons.type == "compound_statement":
        inner = [c for c in cons.named_children if c.type != "comment"]
        cons = inner[0] if len(inner) == 1 else None
    return cons is not None and cons.type in _EXITS and not cons.named_child_count


def _terms(cond: Node | None, src: bytes, exit_: bool, expr: ExprOf) -> list[Bound] | None:
    if cond is None:
        return None
    out = [_bound(t, expr) for t in positive_terms(cond, src, exit_)]
    return None if any(b is None for b in out) else out  # type: ignore[return-value]


def condition_bounds(cond: Node, src: bytes, expr: ExprOf) -> list[Bound] | None:
    """The :class:`Bound` s of the positive terms of condition ``cond`` (``x > 0 && x < W`` gives ``0 < x`` and
    ``x < W``), ``None`` when a term is not an ordering comparison of two readable expressions."""
    return _terms(cond, src, False, expr)


def _branch(p: Node, child: Node) -> str | None:
    """Which part of the ``if`` or ``?:`` ``p`` holds ``child``: ``"condition"``, ``"consequence"`` or
    ``"alternative"`` (an ``else`` branch, whose terms are the condition's negation), ``None`` for none."""
    for name in ("condition", "consequence", "alternative"):
        if child == p.child_by_field_name(name):
            return name
    return None


def access_bounds(node: Node, body: Node, src: bytes, expr: ExprOf) -> tuple[Bound, ...] | None:
    """The conditions under which ``node`` (inside the kernel body ``body``) runs, as :class:`Bound` s: the
    positive terms of each ``if`` or ``?:`` whose branch holds it (an ``else`` branch or the ``:`` side: the
    condition's negation), and of each early ``return``/``continue`` before it in an enclosing block (negated).
    ``None`` when a condition (or, for an ``else`` side, its negation) is not a conjunction of ordering
    comparisons, or when something else decides whether it runs (``&&``/``||``, a jump inside an earlier
    statement)."""
    out: list[Bound] = []
    child, p = node, node.parent
    while p is not None:
        if p.type in ("if_statement", "conditional_expression"):
            branch = _branch(p, child)
            if branch is None:
                return None
            if branch != "condition":
                got = _terms(_condition(p), src, branch == "alternative", expr)
                if got is None:
                    return None
                out += got
        elif p.type == "else_clause":
            pass  # its if_statement reads the branch
        elif p.type == "binary_expression" and child == p.child_by_field_name("right") and \
                text(p.child_by_field_name("operator"), src) in ("&&", "||"):
            return None
        elif p.type == "compound_statement":
            for s in p.named_children:
                if s.start_byte >= child.start_byte:
                    break
                if _bare_exit(s):
                    got = _terms(_condition(s), src, True, expr)
                    if got is None:
                        return None
                    out += got
                elif any(n.type in _JUMPS for n in walk(s)):
                    return None
        if p == body:
            return tuple(out)
        child, p = p, p.parent
    return tuple(out)


def _store_of(node: Node, src: bytes) -> Node | None:
    """The value stored by the plain assignment whose left side is ``node`` (casts stripped), else ``None``."""
    child, p = node, node.parent
    while p is not None and p.type == "parenthesized_expression":
        child, p = p, p.parent
    if p is None or p.type != "assignment_expression" or p.child_by_field_name("left") != child:
        return None
    if text(p.child_by_field_name("operator"), src) != "=":
        return None
    value = p.child_by_field_name("right")
    return strip_casts(unwrap_parens(value)) if value is not None else None


def _split(index: sympy.Expr, size: sympy.Symbol) -> tuple[sympy.Expr, sympy.Expr] | None:
    """``(a, b)`` with ``index == a * size + b`` and neither depending on ``size``, else ``None``."""
    e = sympy.expand(index)
    a = e.coeff(size)
    b = sympy.expand(e - a * size)
    if a == 0 or size in a.free_symbols or size in b.free_symbols:
        return None
    return sympy.expand(a), b


def _strided(e: sympy.Expr, params: set[str]) -> bool:
    """``e`` is a row stride the tile can spell: a polynomial with integer coefficients of scalar parameters, of
    compile-time sizes (``sizeof(T)``, read as an opaque ``expr(sizeof(T))``) and of the integer quotients
    (``div``) of such polynomials (``pitch / sizeof(float)``), reading at least one parameter."""
    if not e.free_symbols or not any(str(s) in params for s in e.free_symbols):
        return False
    return all(str(s) in params or _compile_time(s) for s in e.free_symbols) and stride_text(e) is not None


def _compile_time(s: sympy.Basic) -> bool:
    """The opaque symbol of a ``sizeof``: the same number for the whole launch."""
    return str(s).startswith("expr(sizeof") and str(s).endswith(")")


def stride_text(e: sympy.Expr) -> str | None:
    """C text of the row stride ``e`` (:func:`_strided`: parameters, ``sizeof`` terms, integer products and sums,
    ``div`` as C's ``/`` of integers), e.g. ``"(pitch / sizeof(float))"``; ``None`` for anything else. Read by a
    transform to write the stride the kernel's own index used."""
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        name = str(e)
        return name[len("expr("):-1] if _compile_time(e) else name
    if isinstance(e, sympy.Function) and e.func.__name__ == "div" and len(e.args) == 2:
        a, b = (stride_text(x) for x in e.args)
        return None if a is None or b is None else f"({a} / {b})"
    if e.is_Mul or e.is_Add:
        parts = [stride_text(x) for x in e.args]
        if any(x is None for x in parts) or any(x.is_Number and not x.is_Integer for x in e.args):
            return None
        return "(" + (" * " if e.is_Mul else " + ").join(p for p in parts if p is not None) + ")"
    return None


def _stride_candidates(index: sympy.Expr, params: set[str]) -> list[sympy.Expr]:
    """The expressions ``index`` may be ``row * stride + col`` over: the scalar parameters it reads (the dense
    sizes first, as before), then each term's factors that are strides of their own (:func:`_strided`:
    ``pitch / sizeof(float)``, ``lda``)."""
    names = sorted((s for s in index.free_symbols if str(s) in params), key=str)
    out: list[sympy.Expr] = list(names)
    for t in sympy.Add.make_args(sympy.expand(index)):
        for f in sympy.Mul.make_args(t):
            if not f.is_Symbol and _strided(f, params) and f not in out:
                out.append(f)
    return out


def _split_any(index: sympy.Expr, size: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr] | None:
    """``(a, b)`` with ``index == a * size + b`` and neither reading ``size`` (a symbol or a stride expression
    such as ``div(pitch, 4)``), else ``None``."""
    if size.is_Symbol:
        return _split(index, size)  # type: ignore[arg-type]
    e = sympy.expand(index)
    a = e.coeff(size)
    b = sympy.expand(e - a * size)
    if a == 0 or a.has(size) or b.has(size):
        return None
    return sympy.expand(a), b


def _signs(e: sympy.Expr) -> int:
    """``1`` when every term of the affine form ``e`` that reads a symbol has a positive number as its factor
    (the builtins and loop variables count up from 0), ``-1`` when every one has a negative one, ``0`` otherwise
    (and for a number)."""
    terms = [t for t in sympy.Add.make_args(sympy.expand(e)) if t.free_symbols]
    signs = {1 if t.as_coeff_Mul()[0] > 0 else -1 for t in terms}
    return signs.pop() if len(signs) == 1 else 0


def _orient(a: sympy.Expr, b: sympy.Expr) -> tuple[sympy.Expr, bool, bool] | None:
    """``(forward, a reversed, b reversed)``: the coordinate the read's form ``a`` and the write's form ``b`` of
    one axis both name, each either that coordinate ``v`` or its reversal ``E - 1 - v`` (its uniform part ``E``
    already moved to the base: ``-v`` plus a number here). The same form is the coordinate itself (no reversal);
    two forms whose varying parts are opposite are a reversed and a forward one (the forward one: every
    coefficient positive, ``y`` against ``-1 - y``); two negative forms with the same varying part are both
    reversed (the coordinate: their varying part negated). ``None`` for anything else. Idea source: a rotation
    by 90 degrees or a flip is a transpose whose one coordinate runs backwards (``out[x * H + (H - 1 - y)]``)."""
    if sympy.expand(a - b) == 0:
        return a, False, False
    va, vb = (sympy.expand(e - e.subs({s: 0 for s in e.free_symbols})) for e in (a, b))
    if sympy.expand(va + vb) == 0 and _signs(va) != 0:
        return (a, False, True) if _signs(va) > 0 else (b, True, False)
    if sympy.expand(va - vb) == 0 and _signs(va) < 0:
        return -va, True, True
    return None


#: The roles of a transpose's indices: ``(row, col, write stride, read stride, read reversed, write reversed)``,
#: each ``reversed`` a pair ``(row axis, column axis)`` (:attr:`Transpose.read_reversed`).
Roles = tuple[sympy.Expr, sympy.Expr, sympy.Expr, sympy.Expr, tuple[bool, bool], tuple[bool, bool]]


def _roles(ri: sympy.Expr, wi: sympy.Expr, params: Iterable[str], varying: set[str]) -> Roles | None:
    """The :data:`Roles` when read index ``ri`` is ``row * read_stride + col`` and write index ``wi`` is ``col *
    write_stride + row`` (the strides parameters, the matrix's sides for a dense transpose, or leading dimensions
    of their own: ``lda``, ``pitch``, ``pitch / sizeof(T)``), ``row`` and ``col`` distinct forms over ``varying``
    symbols only; either side may read a coordinate reversed (:func:`_orient`: ``H - 1 - y`` for ``y``, its
    uniform part already in the base), which the roles record."""
    names = set(params)
    for c in _stride_candidates(ri, names):
        rc = _split_any(ri, c)
        if rc is None:
            continue
        row, col = rc
        if not row.free_symbols or not col.free_symbols or sympy.expand(row - col) == 0:
            continue
        if not {str(s) for s in row.free_symbols | col.free_symbols} <= varying:
            continue
        if not all(e.is_polynomial(*e.free_symbols) for e in (row, col)):
            continue
        for r in _stride_candidates(wi, names):
            wc = _split_any(wi, r)
            if wc is None:
                continue
            rows_axis, cols_axis = _orient(row, wc[1]), _orient(col, wc[0])
            if rows_axis is not None and cols_axis is not None:
                return (rows_axis[0], cols_axis[0], r, c, (rows_axis[1], cols_axis[1]),
                        (rows_axis[2], cols_axis[2]))
    return None


#: The sets of ``blockIdx`` dimensions tried as batch dimensions, fewest first (``()``: a plain transpose).
_BATCHES: tuple[tuple[str, ...], ...] = ((), ("z",), ("y",), ("x",), ("y", "z"), ("x", "z"), ("x", "y"))


def _uniform(e: sympy.Expr, batch: tuple[str, ...], params: set[str]) -> bool:
    """``e`` is the same for every thread of a block and for every block along the dimensions not in ``batch``:
    its symbols are scalar parameters, ``gridDim`` and ``blockIdx.<d>`` for ``d`` in ``batch`` (no ``blockDim``:
    a rewrite may change the block)."""
    ok = {f"blockIdx.{d}" for d in batch} | {f"gridDim.{d}" for d in "xyz"} | params
    return all(str(s) in ok for s in e.free_symbols)


def uniform_part(index: sympy.Expr, batch: tuple[str, ...], params: set[str]) -> sympy.Expr:
    """The sum of the terms of the expanded ``index`` that are uniform (:func:`_uniform`): a batch slice's base
    offset (``b * R * C`` with ``b = blockIdx.z``, a pointer rebased by it) or a parameter's shift (``off + ...``).
    A bare number stays with the row and the column (``y + 1`` is a shifted row, not a base)."""
    terms = sympy.Add.make_args(sympy.expand(index))
    return sympy.Add(*(t for t in terms if t.free_symbols and _uniform(t, batch, params)))


def _batched_roles(read: Access, write: Access, params: set[str], loops: tuple[LoopFact, ...]
                   ) -> tuple[tuple[str, ...], tuple[sympy.Expr, ...]] | None:
    """``(batch, (row, col, rows, cols, read_base, write_base))``: the first batch set of :data:`_BATCHES` under
    which the indices less their uniform parts (:func:`uniform_part`) are a transpose (:func:`_roles`) whose row
    and column do not read the batch dimensions; ``None`` when none is."""
    if read.index is None or write.index is None:
        return None
    for batch in _BATCHES:
        rb, wb = uniform_part(read.index, batch, params), uniform_part(write.index, batch, params)
        varying = {b for b in BUILTINS if not (b.startswith("blockIdx.") and b[-1] in batch)}
        varying |= {lp.var for lp in loops if lp.var}
        roles = _roles(sympy.expand(read.index - rb), sympy.expand(write.index - wb), params, varying)
        if roles is not None:
            return batch, (*roles, rb, wb)
    return None


def _bounds_fit(bounds: tuple[Bound, ...], row: sympy.Expr, col: sympy.Expr, strides: tuple[sympy.Expr, sympy.Expr],
                uniform: Callable[[sympy.Expr], bool], params: set[str]
                ) -> tuple[tuple[Bound, ...], tuple[Bound, ...], sympy.Expr, sympy.Expr] | None:
    """``(element bounds, uniform bounds, rows, cols)``: the bounds split into the element's checks ``row < rows``
    / ``col < cols`` and those with both sides uniform (a batch check such as ``b < batch``), with the matrix's
    extents: the parameter each side is checked against, else (unchecked, the grid alone decides) the stride
    ``strides`` gives that side (``(write stride, read stride)``: a dense matrix's sides). ``None`` when a bound is
    neither, a side is checked against something other than a scalar parameter, or against two."""
    own: list[Bound] = []
    uni: list[Bound] = []
    sides: dict[int, set[sympy.Expr]] = {0: set(), 1: set()}
    for b in bounds:
        k = next((k for k, v in enumerate((row, col)) if sympy.expand(b.lo - v) == 0), None)
        if k is not None and (b.hi in strides or (b.hi.is_Symbol and str(b.hi) in params)):
            own.append(b)
            sides[k].add(b.hi)
        elif uniform(b.lo) and uniform(b.hi):
            uni.append(b)
        else:
            return None
    if any(len(v) > 1 for v in sides.values()):
        return None
    rows, cols = (next(iter(sides[k])) if sides[k] else strides[k] for k in (0, 1))
    return tuple(own), tuple(uni), rows, cols


def _loop_bounds(write: Access, loops: tuple[LoopFact, ...], sides: tuple[tuple[sympy.Expr, sympy.Expr], ...]
                 ) -> tuple[Bound, ...]:
    """The conditions ``var < bound`` of the counting-up loops around ``write`` that are one of ``sides``
    (``(row, rows)``, ``(col, cols)``): a loop over rows ``for (r = threadIdx.y; r < rows; r += blockDim.y)``
    checks the row as an ``if`` would."""
    out: list[Bound] = []
    for lp in loops:
        if lp.id not in write.loops or not lp.var or lp.update != "+" or lp.bound is None or \
                lp.cmp not in ("<", "<="):
            continue
        b = Bound(sym(lp.var), sympy.expand(lp.bound + (1 if lp.cmp == "<=" else 0)))
        if any(sympy.expand(b.lo - v) == 0 and sympy.expand(b.hi - n) == 0 for v, n in sides):
            out.append(b)
    return tuple(out)


def find_transposes(src: CudaSource, expr: ExprOf, accesses: tuple[Access, ...], loops: tuple[LoopFact, ...],
                    params: Iterable[str]) -> tuple[Transpose, ...]:
    """The kernel's :class:`~htam_core.source.analysis.facts.Transpose` (a tuple of at most one).

    A term of an index that is uniform across the block (:func:`uniform_part`: a batch offset from a ``blockIdx``
    dimension the row and the column do not read, through the index or a rebased pointer) is the slice's base,
    not part of the row or the column: ``out[b*R*C + c*R + r] = in[b*R*C + r*C + c]`` is a transpose of each
    ``R x C`` slice.

    Args:
        src: the kernel's parsed unit.
        expr: the affine reader of an expression node (``Affine.expr`` with the kernel's bindings).
        accesses: the kernel's memory accesses (:attr:`KernelFacts.accesses`).
        loops: the kernel's loops (their variables may appear in the row or the column).
        params: the kernel's scalar parameter names (the sizes must be parameters).

    Returns:
        ``()`` unless the only accesses are one global load and one global store of its value (no shared memory,
        no atomics) with transposed affine indices (less their uniform bases), and every bounds check of the store
        is ``row < rows``, ``col < cols`` or uniform.
    """
    if any(a.space != "global" for a in accesses) or len(accesses) != 2:
        return ()
    reads = [a for a in accesses if a.kind == "read"]
    writes = [a for a in accesses if a.kind == "write"]
    if len(reads) != 1 or len(writes) != 1:
        return ()
    r, w = reads[0], writes[0]
    if r.vector or w.vector or r.pointer == w.pointer or r.loops != w.loops:
        return ()
    names = set(params)
    found = _batched_roles(r, w, names, loops)
    if found is None:
        return ()
    batch, (row, col, wstride, rstride, rrev, wrev, rbase, wbase) = found
    kinds = ("subscript_expression", "pointer_expression")
    wnode, rnode = src.node_at(w.span, kinds), src.node_at(r.span, kinds)
    if wnode is None or rnode is None:
        return ()
    value = _stored_value(src, wnode, rnode, expr, names)
    if value is None:
        return ()
    bounds = access_bounds(wnode, src.body, src.src, expr)
    split = None if bounds is None else _bounds_fit(bounds, row, col, (wstride, rstride),
                                                    lambda e: _uniform(e, batch, names), names)
    if split is None:
        return ()
    own, uni, rows, cols = split
    if rrev != (False, False) or wrev != (False, False):  # the reversal's extent E leaves the base
        rbase, wbase = _reversed_bases(r, w, (row, col), (rows, cols), (rstride, wstride), (rrev, wrev))
        if not all(_uniform(e, batch, names) for e in (rbase, wbase)):
            return ()
    lbs = _loop_bounds(w, loops, ((row, rows), (col, cols)))
    return (Transpose(r, w, row, col, rows, cols, own, src.span(src.body), batch, rbase, wbase, uni,
                      lbs, value, rstride, wstride, rrev, wrev),)


def _reversed_bases(read: Access, write: Access, coords: tuple[sympy.Expr, sympy.Expr],
                    sides: tuple[sympy.Expr, sympy.Expr], strides: tuple[sympy.Expr, sympy.Expr],
                    reversed_: tuple[tuple[bool, bool], tuple[bool, bool]]) -> tuple[sympy.Expr, sympy.Expr]:
    """``(read base, write base)``: what is left of each index once the element's place, ``R * read stride +
    C`` and ``C' * write stride + R'`` with a reversed coordinate ``sides[k] - 1 - coords[k]`` (``k`` 0 for the
    row, 1 for the column), is taken off; ``0`` for ``out[x * H + (H - 1 - y)]`` checked ``y < H``."""
    (row, col), (rows, cols) = coords, sides

    def place(rev: tuple[bool, bool]) -> tuple[sympy.Expr, sympy.Expr]:
        return (rows - 1 - row if rev[0] else row), (cols - 1 - col if rev[1] else col)
    rr, rc = place(reversed_[0])
    wr, wc = place(reversed_[1])
    assert read.index is not None and write.index is not None  # _batched_roles read both
    return (sympy.expand(read.index - (rr * strides[0] + rc)), sympy.expand(write.index - (wc * strides[1] + wr)))


#: The placeholder that stands for the loaded element in :attr:`Transpose.value` (an identifier, so that putting any
#: postfix expression in its place keeps the expression's parse).
LOADED = "htam_v"
_BUILTIN_NAMES = ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize")


def _stored_value(src: CudaSource, wnode: Node, rnode: Node, expr: ExprOf, params: set[str]) -> str | None:
    """The stored value of the store ``wnode`` as a C expression of :data:`LOADED` (the element ``rnode`` loads),
    or ``None`` when it is not a function of that one element and of kernel-uniform values.

    The value is the load itself (casts and parentheses aside: :data:`LOADED`), an expression holding the load
    once (``2.f * in[i]``, ``-in[i]``, ``(half)in[i]``), or an expression of one local declared once from the
    load and never written again, named nowhere else (``float2 v = in[i]; out[j] = make_float2(v.x, -v.y);``).
    Its other names must be scalar parameters, compile-time constants, called functions (a function of the unit
    only when its body reads no memory through a subscript or a pointer and no thread or block index) or fields;
    no assignment, increment or builtin index may appear in it."""
    value = _store_of(wnode, src.src)
    if value is None:
        return None
    right = wnode.parent
    while right is not None and right.type != "assignment_expression":
        right = right.parent
    raw = right.child_by_field_name("right") if right is not None else None
    if raw is None:
        return None
    local = _loaded_local(src, rnode)
    inside = raw.start_byte <= rnode.start_byte and rnode.end_byte <= raw.end_byte
    if not inside and local is None:
        return None
    holes: list[Node] = [rnode] if inside else [n for n in walk(raw) if n.type == "identifier"
                                                and text(n, src.src) == local]
    if not holes or not _uniform_rest(src, raw, holes, expr, params):
        return None
    if local is not None and not inside and any(
            not (raw.start_byte <= n.start_byte < raw.end_byte or _in_decl_of(n, rnode))
            for n in walk(src.body) if n.type == "identifier" and text(n, src.src) == local):
        return None
    out, pos = [], raw.start_byte
    for h in sorted(holes, key=lambda n: n.start_byte):
        out += [src.src[pos:h.start_byte].decode(), LOADED]
        pos = h.end_byte
    out.append(src.src[pos:raw.end_byte].decode())
    return " ".join("".join(out).split())


def _in_decl_of(n: Node, rnode: Node) -> bool:
    """``n`` is the declarator name of the declaration whose initializer is the load ``rnode``."""
    d = rnode.parent
    return d is not None and d.type == "init_declarator" and d.child_by_field_name("declarator") == n


def _loaded_local(src: CudaSource, rnode: Node) -> str | None:
    """The name of the local ``T v = <load>;`` (``rnode`` its whole initializer, casts aside), declared once in the
    kernel and never written again, else ``None``."""
    node = rnode
    while node.parent is not None and node.parent.type in ("parenthesized_expression", "cast_expression"):
        node = node.parent
    d = node.parent
    if d is None or d.type != "init_declarator" or d.child_by_field_name("value") != node:
        return None
    name_node = d.child_by_field_name("declarator")
    if name_node is None or name_node.type != "identifier":
        return None
    name = text(name_node, src.src)
    decls = [n for n in walk(src.body) if n.type == "init_declarator"
             and text(n.child_by_field_name("declarator"), src.src) == name]
    return name if len(decls) == 1 and not src.env.assigned_in(src.func, name) else None


def _uniform_rest(src: CudaSource, raw: Node, holes: list[Node], expr: ExprOf, params: set[str]) -> bool:
    """Every name of ``raw`` outside ``holes`` is kernel-uniform or a called function that reads no memory or
    index (see :func:`_stored_value`), and ``raw`` writes nothing."""
    def in_hole(n: Node) -> bool:
        return any(h.start_byte <= n.start_byte < h.end_byte for h in holes)
    for n in walk(raw):
        if in_hole(n):
            continue
        if n.type in ("assignment_expression", "update_expression", "subscript_expression") or (
                n.type == "pointer_expression"):
            return False
        if n.type != "identifier":
            continue
        name = text(n, src.src)
        p = n.parent
        if p is not None and p.type == "template_function" and p.child_by_field_name("name") == n:
            n, p = p, p.parent  # static_cast<T>(x), f<T>(x): the call's function
        if p is not None and p.type == "call_expression" and p.child_by_field_name("function") == n:
            if not _pure_function(src, name):
                return False
            continue
        if name in _BUILTIN_NAMES:
            return False
        e = expr(n)
        if name not in params and not (e is not None and e.is_number) and src.env.value(n, src.func) is None:
            return False
    return True


def _pure_function(src: CudaSource, name: str) -> bool:
    """A call of ``name`` reads no memory and no index: it is not defined in the unit (a library or intrinsic
    function such as ``make_float2``, ``__float2half``), or its definition's body has no subscript, no pointer
    dereference and no builtin index."""
    for fn in walk(src.root):
        if fn.type != "function_definition":
            continue
        decl = fn.child_by_field_name("declarator")
        inner = decl.child_by_field_name("declarator") if decl is not None else None
        if inner is None or text(inner, src.src).split("::")[-1] != name:
            continue
        body = fn.child_by_field_name("body")
        return body is not None and not any(
            n.type in ("subscript_expression", "pointer_expression") or
            (n.type == "identifier" and text(n, src.src) in _BUILTIN_NAMES) for n in walk(body))
    return True


def _values(lp: LoopFact, subs: dict) -> list[int] | None:
    """The values of loop ``lp``'s variable when its start, bound and step are integers once ``subs`` (the block's
    extents) are put in and it counts up by ``+`` under ``<``/``<=`` (at most 4096 of them), else ``None``."""
    if lp.update != "+" or lp.cmp not in ("<", "<=") or None in (lp.start, lp.bound, lp.step):
        return None
    start, bound, step = (sympy.sympify(e).subs(subs) for e in (lp.start, lp.bound, lp.step))
    if not all(e.is_Integer for e in (start, bound, step)) or int(step) <= 0:
        return None
    end = int(bound) + (1 if lp.cmp == "<=" else 0)
    vals = list(range(int(start), end, int(step)))
    return vals if len(vals) <= 4096 else None


def grid_sides(t: Transpose) -> tuple[str, str] | None:
    """``(column dimension, row dimension)``: the ``blockIdx`` dimension (``"x"``, ``"y"`` or ``"z"``) that the
    transpose ``t``'s column advances with and the one its row advances with, when each reads exactly one such
    dimension, the two differ and neither picks a batch slice; else ``None`` (a loop over the rows, a flat index,
    a grid-stride spelling). The launch's grid was sized along those dimensions for those sides (``((cols + 31) /
    32, (rows + 31) / 32)`` for ``col = blockIdx.x * 32 + threadIdx.x``), so a rewrite that walks tiles with the
    grid keeps every block busy by stepping tile columns along the first and tile rows along the second."""
    sides = []
    for e in (t.col, t.row):
        ds = [d for d in "xyz" if sym(f"blockIdx.{d}") in e.free_symbols]
        if len(ds) != 1 or ds[0] in t.batch:
            return None
        sides.append(ds[0])
    return (sides[0], sides[1]) if sides[0] != sides[1] else None


def grid_strides(t: Transpose, block: tuple[int, int] | None) -> tuple[int, int] | None:
    """``(column stride, row stride)``: how far the transpose ``t``'s column and row advance from one block to the
    next along their grid sides (:func:`grid_sides`), with ``blockDim`` the launch's ``block`` (``(x, y)``, ``z``
    1) when it is given; ``None`` when there are no such sides or a stride is not a number (``blockIdx.x *
    blockDim.x`` under an unknown block). ``(32, 32)`` for ``col = blockIdx.x * 32 + threadIdx.x`` and ``row =
    blockIdx.y * 32 + threadIdx.y``, or for ``blockIdx.x * blockDim.x + threadIdx.x`` under a 32x32 block: the
    launch's grid then has one block per 32x32 tile of the matrix."""
    sides = grid_sides(t)
    if sides is None:
        return None
    subs = {sym("blockDim.x"): block[0], sym("blockDim.y"): block[1], sym("blockDim.z"): 1} if block else {}
    out = []
    for e, d in zip((t.col, t.row), sides, strict=True):
        k = sympy.expand(e.subs(subs)).coeff(sym(f"blockIdx.{d}"))
        if not k.is_Integer:
            return None
        out.append(int(k))
    return out[0], out[1]


def tile_coverage(t: Transpose, loops: tuple[LoopFact, ...], block: tuple[int, int]) -> str | None:
    """Why the threads of one ``block[0] x block[1]`` block do not move their own tile of the matrix exactly once,
    or ``None`` when they do or when it cannot be told (a loop whose range is not a number, an index that reads the
    grid). A block's tile is ``[0, S_r) x [0, S_c)`` at block ``(0, 0)``, ``S_r`` and ``S_c`` the strides of the row
    and the column along the ``blockIdx`` dimension each advances with; enumerating the block's threads and the
    loops' iterations must give each of its cells once, so that consecutive blocks tile the matrix as a rewrite that
    moves the whole matrix does. Read by the transpose tile before it replaces a kernel launched with that block."""
    subs = {sym("blockDim.x"): block[0], sym("blockDim.y"): block[1], sym("blockDim.z"): 1}
    row, col = t.row.subs(subs), t.col.subs(subs)
    dims = {}
    for name, e in (("row", row), ("col", col)):
        ds = [d for d in "xyz" if e.coeff(sym(f"blockIdx.{d}")) != 0]
        if len(ds) != 1 or not e.coeff(sym(f"blockIdx.{ds[0]}")).is_Integer:
            return None
        dims[name] = (ds[0], int(e.coeff(sym(f"blockIdx.{ds[0]}"))))
    if dims["row"][0] == dims["col"][0] or min(dims["row"][1], dims["col"][1]) <= 0:
        return None
    # every thread of the block runs the store, whether its index reads threadIdx or not
    ranges: list[tuple[sympy.Symbol, list[int]]] = [(sym("threadIdx.x"), list(range(block[0]))),
                                                    (sym("threadIdx.y"), list(range(block[1])))]
    free = (row.free_symbols | col.free_symbols) - {sym(f"blockIdx.{d}") for d in "xyz"} - {s for s, _ in ranges}
    byvar = {lp.var: lp for lp in loops if lp.var and lp.id in t.write.loops}
    for s in sorted(free, key=str):
        lp = byvar.get(str(s))
        vals = _values(lp, subs) if lp is not None else None
        if vals is None:
            return None
        ranges.append((s, vals))
    at0 = {sym(f"blockIdx.{d}"): 0 for d in "xyz"}
    syms = [s for s, _ in ranges]
    f = sympy.lambdify(syms, (row.subs(at0), col.subs(at0)), "math")
    seen: dict[tuple[int, int], int] = {}
    total = 1
    for _, vs in ranges:
        total *= len(vs)
    if total > 1 << 16:
        return None
    for point in itertools.product(*(vs for _, vs in ranges)):
        cell = tuple(int(v) for v in f(*point))
        seen[cell] = seen.get(cell, 0) + 1  # type: ignore[index]
    sr, sc = dims["row"][1], dims["col"][1]
    want = {(r, c) for r in range(sr) for c in range(sc)}
    if set(seen) != want:
        return (f"a {block[0]}x{block[1]} block moves {len(set(seen) & want)} of the {sr}x{sc} cells of its tile"
                f"{' and cells outside it' if set(seen) - want else ''}; moving the whole matrix would change "
                "which elements are written")
    if any(n > 1 for n in seen.values()):
        return f"a {block[0]}x{block[1]} block writes some cells of its tile more than once"
    return None
