"""A 2-D output computed from one flattened 1-D thread index: the facts a rewrite needs to give the kernel a 2-D
thread index instead (row on y, column on x) and a 2-D launch.

The shape (any integer type for the index, the row and the column; ``W`` a parameter, a ``#define``, a
``constexpr`` or a template parameter)::

    int idx = blockIdx.x * blockDim.x + threadIdx.x;   // the flattened index (optional: inline in the split)
    int row = idx / W;                                  // the row
    int col = idx % W;                                  // or `idx - row * W`; one declaration may hold both
    if (row < M) { body }                               // or `if (row >= M) return;`, `if (idx < M * W)`,
                                                        // `if (idx >= M * W) return;`, `row < M && col < W`

proved from the analysis layer's facts: the row and column locals are ``div(g, W)`` and ``mod(g, W)`` of the global
x index ``g`` (:meth:`~htam_core.source.analysis.facts.KernelFacts.flat_index_split`, ``idx - row * W`` reads as
``mod``), the kernel writes exactly one global element, outside any loop, at ``row * W + col`` (so the output's row
stride is ``W``: one output per thread, the split the output's own), nothing else reads the thread or block index,
there is no shared memory, barrier or grid-stride loop, and the bounds check bounds the rows by ``M`` (a term on
the column must be ``col < W``; one on the flat index must be ``idx < M * W`` with ``W`` one factor as written).

Refused, each in one line: no such split; a row or column that is not a named local declared before the bounds
check; a declaration that declares other names too; a grid-stride loop (the remap would leave rows uncovered);
two outputs per thread or an output whose row stride is not ``W``; a bounds check with other terms.

Idea source: the row-major flattening ``i = row * W + col`` and its inverse; the CUDA C++ Programming Guide's 2-D
``dim3`` launch of the matrix-multiplication example (one thread per output, row on y and column on x).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.facts import Access, KernelFacts, Span, ThreadIndex, fold_divmod
from htam_core.source.analysis.guards import closing_bounds_guard
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import statements, strip_casts, unwrap_parens
from htam_core.source.analysis.unit import CudaSource

__all__ = ["FlatRemap", "flat_remap"]


@dataclass(frozen=True)
class FlatRemap:
    """The proved flat-index form of a kernel (:func:`flat_remap`).

    Attributes:
        index: the flattened index local (``idx``), ``None`` when the split reads the builtins inline.
        row, col: the row and column locals.
        width: the row length ``W`` as written at the row's division (``"NC"``).
        rows: the row bound ``M`` as written (``"M"``).
        form: the bounds check's form, ``"if"`` (a guarded body) or ``"return"`` (an early return).
        condition: file bytes of the bounds check's condition, parentheses included.
        decls: file bytes of the declaration statements of the index, the row and the column (in source order,
            each once).
        index_used: the index is read outside those declarations and the bounds check (``C[idx] = acc``): the
            rewrite declares it again as ``row * W + col``.
        output: the one global write (at ``row * W + col``).
    """

    index: ThreadIndex | None
    row: ThreadIndex
    col: ThreadIndex
    width: str
    rows: str
    form: str
    condition: Span
    decls: tuple[Span, ...]
    index_used: bool
    output: Access


def _same(a: sympy.Expr, b: sympy.Expr) -> bool:
    """``a == b`` in the index algebra (expanded, a row and column split folded back)."""
    return sympy.expand(fold_divmod(a) - fold_divmod(b)) == 0


def _value(source: CudaSource, stmt: Node, name: str) -> Node | None:
    """The initializer of local ``name`` in declaration statement ``stmt`` (casts and parentheses removed)."""
    for d in syn.init_declarators(stmt):
        if source.t(syn.declared_identifier(d)) == name:
            v = d.child_by_field_name("value")
            return unwrap_parens(strip_casts(v)) if v is not None else None
    return None


def _declared_names(source: CudaSource, stmt: Node) -> set[str]:
    """Every name the declaration statement ``stmt`` declares."""
    return {source.t(syn.declared_identifier(d)) for d in stmt.children_by_field_name("declarator")}


def _locals(facts: KernelFacts, g: sympy.Expr, w: sympy.Expr
            ) -> tuple[ThreadIndex | None, ThreadIndex, ThreadIndex] | str:
    """The index, row and column locals of the split ``(g, w)``, or why they are not named locals."""
    div, mod = sympy.Function("div"), sympy.Function("mod")
    idx = [t for t in facts.thread_indices if _same(t.expr, g) and not t.expr.atoms(div, mod)]
    rows = [t for t in facts.thread_indices if sympy.expand(t.expr - div(g, w)) == 0]
    cols = [t for t in facts.thread_indices if sympy.expand(t.expr - mod(g, w)) == 0
            or sympy.expand(t.expr - (g - w * div(g, w))) == 0]
    if len(rows) != 1 or len(cols) != 1:
        return f"the row ({g} / {w}) and the column ({g} % {w}) are not each one named local"
    if len(idx) > 1:
        return f"more than one local holds the flattened index ({', '.join(t.name for t in idx)})"
    known = {t.name for t in (*idx, rows[0], cols[0])}
    other = [t.name for t in facts.thread_indices if t.name not in known]
    if other:
        return f"the local {other[0]} reads the thread index too; only the row and the column may"
    return (idx[0] if idx else None), rows[0], cols[0]


def _width_text(source: CudaSource, stmts: list[Node], row: ThreadIndex) -> tuple[Node, str] | str:
    """``(declaration, W as written)`` of the row's ``idx / W``, or why it is not written so."""
    stmt = next((s for s in stmts if source.span(s) == row.span and syn.is_declaration(s)), None)
    if stmt is None:
        return f"the row {row.name} is not declared at the top of the kernel body"
    v = _value(source, stmt, row.name)
    if v is None or not syn.is_binary(v) or source.t(v.child_by_field_name("operator")) != "/":
        return f"the row {row.name} is not written as a division of the flattened index"
    return stmt, source.t(v.child_by_field_name("right")).strip()


def _row_bound(source: CudaSource, stmts: list[Node], names: tuple[str, str, str | None], width: str
               ) -> tuple[str, str, Span, Node] | str:
    """``(M as written, form, condition span, guard statement)`` of the kernel's bounds check on the row (or on
    the flat index, ``idx < M * W``), or why it is not one that the 2-D check can replace."""
    row, col, idx = names
    g = closing_bounds_guard(stmts, source.src)
    if isinstance(g, str):
        return f"no bounds check on the rows ({g})"
    rows: list[str] = []
    for t in g.terms:
        bound = source.t(t.bound).strip() if t.bound is not None else ""
        if t.var == row:
            rows.append(bound)
        elif t.var == col and bound == width:
            continue
        elif t.var is not None and t.var == idx and t.bound is not None:
            b = unwrap_parens(t.bound)
            sides = ([source.t(b.child_by_field_name(f)).strip() for f in ("left", "right")]
                     if syn.is_binary(b) and source.t(b.child_by_field_name("operator")) == "*" else [])
            if width not in sides:
                return f"the bounds check `{t.text}` is not {idx} < M * {width}"
            rows.append(sides[1 - sides.index(width)])
        else:
            return f"the bounds check's term `{t.text}` is not on the row, the column (< {width}) or the flat index"
    if not rows:
        return f"the bounds check does not bound the row {row}"
    cond = g.stmt.child_by_field_name("condition")
    return rows[0], g.form, source.span(cond), g.stmt


def _output(facts: KernelFacts, g: sympy.Expr) -> Access | str:
    """The one global write, at ``row * W + col`` outside any loop, or why there is not exactly one."""
    writes = [a for a in facts.accesses if a.space == "global" and a.kind != "read"]
    if len(writes) != 1 or facts.atomics:
        return f"the kernel writes {len(writes) + len(facts.atomics)} global elements per thread, not one output"
    w = writes[0]
    if w.loops or w.index is None:
        return f"the output {w.pointer} is written inside a loop, not once per thread"
    if not _same(w.index, g):
        return (f"the output {w.pointer}[{w.index_text}] is not written at row * W + col: its row stride is not "
                "the split's row length")
    return w


def flat_remap(source: CudaSource, facts: KernelFacts) -> FlatRemap | str:
    """The proved flat-index form of the kernel in ``source`` (its facts ``facts``), or one line why the kernel
    does not have it (see the module docstring). Raises nothing."""
    if facts.grid_stride_loops:
        return "a grid-stride loop walks the thread index; a 2-D index would leave its later rows uncovered"
    split = facts.flat_index_split()
    if split is None:
        return "no flattened 1-D thread index split into a row (idx / W) and a column (idx % W)"
    g, w = split
    if any(a.space == "shared" for a in facts.accesses) or facts.barriers:
        return "the kernel uses shared memory or barriers; the remap changes which threads share a block"
    found = _locals(facts, g, w)
    if isinstance(found, str):
        return found
    idx, row, col = found
    stmts = statements(source.body)
    wt = _width_text(source, stmts, row)
    if isinstance(wt, str):
        return wt
    row_stmt, width = wt
    out = _output(facts, g)
    if isinstance(out, str):
        return out
    bound = _row_bound(source, stmts, (row.name, col.name, idx.name if idx else None), width)
    if isinstance(bound, str):
        return bound
    rows, form, cond, guard = bound
    decl_spans = sorted({t.span for t in (idx, row, col) if t is not None})
    decl_stmts = [s for s in stmts if source.span(s) in decl_spans]
    if len(decl_stmts) != len(decl_spans) or decl_stmts[0].start_byte > guard.start_byte:
        return "the index, the row and the column are not declared at the top of the body, the first before the bounds check"
    mine = {t.name for t in (idx, row, col) if t is not None}
    if any(_declared_names(source, s) - mine for s in decl_stmts):
        return "a declaration of the index, the row or the column declares other names too"
    used = False
    if idx is not None:
        skip = [*(source.span(s) for s in decl_stmts), cond]
        used = any(not any(a <= source.file_byte(r) < b for a, b in skip)
                   for r in syn.references(source.body, source.src, idx.name))
    del row_stmt
    return FlatRemap(idx, row, col, width, rows, form, cond, tuple(decl_spans), used, out)
