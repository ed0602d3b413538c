"""Grid-stride loops, in any spelling, and the dimensions along which no launch decides what a thread covers.

A grid-stride loop starts each thread at its global index and steps by the number of threads of the grid::

    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) ...

Its iterations cover ``0 .. n - 1`` exactly once for *any* grid and *any* block (the start takes each residue
modulo the stride once; the stride is the grid's thread count). The same loop is written many ways, and all of
them are read here from the affine forms of the analysis layer, never from the text: the stride in the header
of a ``for``, a ``while`` loop or a ``do { } while`` under the same bound check, with the index declared before
it; the stride in a local (``int stride = gridDim.x * blockDim.x;``); ``size_t``/``int64_t`` indices behind
casts; a grid group's ``thread_rank()`` with ``size()`` or ``num_threads()`` as the stride
(``cg::this_grid()``); one loop per dimension (a 2-D grid-stride loop over rows along ``y`` and columns along
``x``); and a block extent given as a constant (``blockIdx.x * BS + threadIdx.x`` stepping ``BS * gridDim.x``
with ``BS`` a template argument equal to the block), recorded as the loop's :attr:`GridStrideLoop.extent`.

A kernel's coverage along a dimension is *launch-free* (:func:`grid_stride_facts`) when every read of that
dimension's ``threadIdx``/``blockIdx``/``blockDim``/``gridDim`` (directly, through a cooperative-groups query,
or through a local declared once and never changed) is spent in the start or the stride of such a loop, and
nothing else reads them: no ``if (threadIdx.x == 0)``, no per-block output at ``blockIdx.x``, no macro or
called function that reads them out of sight, no ``break`` or ``return`` that ends a loop after a pass that
depends on the grid. Then the block size and the grid may change independently: the launch steps read this.

Idea source: NVIDIA developer blog, "CUDA Pro Tip: Write Flexible Kernels with Grid-Stride Loops" (Harris, 2013);
CUDA C++ Programming Guide, "Cooperative Groups" (``grid_group::thread_rank``, ``size``, ``num_threads``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import sympy
from tree_sitter import Node

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.facts import DIMS, GridStrideLoop, sym
from htam_core.source.analysis.loops import for_parts
from htam_core.source.analysis.syntax import of_type, strip_casts, unwrap_parens, walk
from htam_core.source.analysis.uniformity import Uniformity, thread_uniform, uniform_name

_LOOPS = ("for_statement", "while_statement", "do_statement")
_STOPS = _LOOPS + ("switch_statement", "lambda_expression")


class _Reader(Protocol):
    """What this module needs of the analysis layer's affine reader (:class:`~htam_core.source.analysis.cuda.Affine`)."""

    env: ConstEnv
    func: Node

    def expr(self, node: Node | None, depth: int = 0) -> sympy.Expr | None:
        """The sympy form of ``node``."""

    def builtin(self, node: Node) -> str | None:
        """``"blockIdx.x"`` for a builtin field expression, else ``None``."""

    def _cg_call(self, node: Node) -> sympy.Expr | None:
        """The index form of a cooperative-groups query, else ``None``."""


@dataclass(frozen=True)
class _Header:
    var: str
    start: Node
    bound: Node
    step: Node
    #: nodes whose text may name ``var`` outside the loop (its declaration, a do-loop's entry check)
    outside: tuple[Node, ...]
    #: ``var`` is declared in the ``for`` header: C scopes it to the loop (another loop's ``i`` is another variable)
    scoped: bool = False


def _condition(node: Node | None) -> Node | None:
    """The expression of a loop condition (``condition_clause`` and parentheses unwrapped)."""
    if node is not None and node.type == "condition_clause":
        kids = [c for c in node.named_children if c.type != "comment"]
        node = kids[0] if len(kids) == 1 else None
    return unwrap_parens(node) if node is not None else None


def _less_than(env: ConstEnv, cond: Node | None) -> tuple[str, Node] | None:
    """``(var, bound)`` of ``var < bound`` (or ``bound > var``), casts stripped from ``var``."""
    cond = _condition(cond)
    if cond is None or cond.type != "binary_expression":
        return None
    op = env.t(cond.child_by_field_name("operator"))
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if left is None or right is None:
        return None
    if op == "<" and strip_casts(left).type == "identifier":
        return env.t(strip_casts(left)), right
    if op == ">" and strip_casts(right).type == "identifier":
        return env.t(strip_casts(right)), left
    return None


def _step_of(env: ConstEnv, node: Node, var: str) -> Node | None:
    """The ``s`` of ``var += s`` or ``var = var + s`` / ``var = s + var``, else ``None``."""
    if node.type != "assignment_expression" or env.t(node.child_by_field_name("left")) != var:
        return None
    op, right = env.t(node.child_by_field_name("operator")), node.child_by_field_name("right")
    if op == "+=":
        return right
    if op == "=" and right is not None:
        r = unwrap_parens(strip_casts(right))
        if r.type == "binary_expression" and env.t(r.child_by_field_name("operator")) == "+":
            a, b = r.child_by_field_name("left"), r.child_by_field_name("right")
            if env.t(strip_casts(a)) == var:
                return b
            if env.t(strip_casts(b)) == var:
                return a
    return None


def _writes(env: ConstEnv, scope: Node, var: str) -> list[Node]:
    """The assignments and increments of ``var`` in ``scope``, and its address taken."""
    out = []
    for a in of_type(scope, ("assignment_expression", "update_expression")):
        target = a.child_by_field_name("left") or a.child_by_field_name("argument")
        if target is not None and target.type == "identifier" and env.t(target) == var:
            out.append(a)
    out += [u for u in of_type(scope, "pointer_expression")
            if env.t(u).startswith("&") and env.t(u.child_by_field_name("argument")) == var]
    return out


def _declared_start(r: _Reader, var: str, loop: Node) -> Node | None:
    """The initializer of ``var``'s one declaration in the kernel, when it comes before ``loop``."""
    inits = r.env.local_inits(r.func, var)
    if len(inits) != 1 or inits[0].end_byte > loop.start_byte:
        return None
    return inits[0]


def _body_update(r: _Reader, loop: Node, var: str) -> Node | None:
    """The one statement of a ``while``/``do`` body that steps ``var`` (``var += stride;``), at the body's top level."""
    body = loop.child_by_field_name("body")
    if body is None or body.type != "compound_statement":
        return None
    steps = [s.named_children[0] for s in body.named_children
             if s.type == "expression_statement" and s.named_children
             and _step_of(r.env, s.named_children[0], var) is not None]
    return steps[0] if len(steps) == 1 else None


def _entry_guard(r: _Reader, loop: Node) -> Node | None:
    """The ``if`` whose condition is the ``do`` loop's own, with the loop its whole branch (``if (i < n) { do
    {...} while (i < n); }``): a ``do`` body runs once before its condition is read."""
    p = loop.parent
    if p is not None and p.type == "compound_statement" and len(p.named_children) == 1:
        p = p.parent
    if p is None or p.type != "if_statement" or p.child_by_field_name("alternative") is not None:
        return None
    same = " ".join(r.env.t(_condition(p.child_by_field_name("condition"))).split())
    return p if same == " ".join(r.env.t(_condition(loop.child_by_field_name("condition"))).split()) else None


def _header(r: _Reader, loop: Node) -> _Header | None:
    """The parts of a grid-stride-shaped loop (index, start, bound, step), or ``None``."""
    env = r.env
    lt = _less_than(env, loop.child_by_field_name("condition"))
    if lt is None:
        return None
    var, bound = lt
    outside: list[Node] = []
    scoped = False
    head = for_parts(loop, env.t)  # the one reader of a for header
    if head is not None:
        init, upd = head.init, head.update
        step = _step_of(env, upd, var) if upd is not None else None
        if step is None and upd is not None and upd.type == "comma_expression":
            return _two_variable(r, loop, var, bound)
        allowed = [upd]
        start = None
        if head.declared and head.var == var:
            start, scoped = head.start, True
        elif init is not None and init.type == "assignment_expression" and head.var == var:
            start, allowed = head.start, [upd, init]
        elif init is None:
            start = _declared_start(r, var, loop)
            outside = [start.parent] if start is not None else []
    else:
        upd = _body_update(r, loop, var)
        step = _step_of(env, upd, var) if upd is not None else None
        allowed = [upd]
        start = _declared_start(r, var, loop)
        outside = [start.parent] if start is not None else []
        if loop.type == "do_statement":
            guard = _entry_guard(r, loop)
            if guard is None:
                return None
            outside.append(guard.child_by_field_name("condition"))
    if start is None or step is None:
        return None
    if any(w not in allowed for w in _writes(env, loop if scoped else r.func, var)):
        return None
    return _Header(var, start, bound, step, tuple(outside), scoped)


def _two_variable(r: _Reader, loop: Node, counter: str, bound: Node) -> _Header | None:
    """PyTorch's two-variable header ``for (T i = c; c < n; c += s, i = c)`` (``c`` declared once before the loop)
    read as the grid-stride loop over ``i``: it starts where ``c`` does, steps by ``s``, and ``i`` equals ``c`` at
    every test. ``None`` when ``c`` is written anywhere else, or ``i`` anywhere but the copy."""
    env = r.env
    init, upd = loop.child_by_field_name("initializer"), unwrap_parens(loop.child_by_field_name("update"))
    ds = [d for d in init.named_children if d.type == "init_declarator"] if init is not None and \
        init.type == "declaration" else []
    value = ds[0].child_by_field_name("value") if len(ds) == 1 else None
    stride, copy = upd.child_by_field_name("left"), upd.child_by_field_name("right")
    if value is None or stride is None or copy is None or env.t(strip_casts(unwrap_parens(value))) != counter:
        return None
    var = env.t(ds[0].child_by_field_name("declarator"))
    step, start = _step_of(env, stride, counter), _declared_start(r, counter, loop)
    if step is None or start is None or copy.type != "assignment_expression" or \
            env.t(copy.child_by_field_name("operator")) != "=" or env.t(copy.child_by_field_name("left")) != var or \
            env.t(strip_casts(unwrap_parens(copy.child_by_field_name("right")))) != counter:
        return None
    if any(w != stride for w in _writes(env, r.func, counter)) or \
            any(w != copy for w in _writes(env, loop, var)):
        return None
    return _Header(var, start, bound, step, (start.parent,), True)


def _leaves_early(loop: Node) -> bool:
    """A ``break``, ``return`` or ``goto`` ends ``loop`` (or the kernel) from inside it, or a ``continue`` skips
    a ``while``/``do`` loop's step."""
    for n in walk(loop):
        if n.type in ("return_statement", "goto_statement"):
            return True
        if n.type in ("break_statement", "continue_statement"):
            owner = n.parent
            while owner is not None and owner.type not in _STOPS:
                owner = owner.parent
            if owner == loop and (n.type == "break_statement" or loop.type != "for_statement"):
                return True
    return False


def _dim_of(start: sympy.Expr, step: sympy.Expr) -> tuple[str, sympy.Expr, sympy.Expr] | None:
    """``(dim, extent, base)`` when ``start`` is ``base + blockIdx.d * E + threadIdx.d`` and ``step`` is
    ``E * gridDim.d`` for ``E`` either ``blockDim.d`` or a constant; ``base`` (``0`` for the plain loop) reads no
    thread or block index (whether its names are the same in every thread is :func:`_uniform_base`'s question)."""
    start, step = sympy.expand(start), sympy.expand(step)
    for d in DIMS:
        bi, bd, gd, ti = (sym(f"{b}.{d}") for b in ("blockIdx", "blockDim", "gridDim", "threadIdx"))
        e = start.coeff(bi)
        if e == 0 or not (e == bd or (e.is_Integer and int(e) > 0)):
            continue
        base = sympy.expand(start - e * bi - ti)
        if sympy.expand(step - e * gd) == 0 and not any(
                s.name.startswith(("threadIdx.", "blockIdx.")) for s in base.free_symbols):
            return d, e, base
    return None


def _uniform_base(r: _Reader, u: Uniformity, base: sympy.Expr) -> bool:
    """Every name of a grid-stride loop's start offset ``base`` holds the same value in every thread of the grid
    (:func:`~htam_core.source.analysis.uniformity.uniform_name`), and none is the launch's ``blockDim``/``gridDim``,
    so the loop still covers ``base .. bound - 1`` exactly once for any grid (a vectorized body's scalar tail starts
    there). A value the affine reader keeps opaque (``load(p[0])``, ``call(f(n))``) is uniform when every
    expression of the kernel written so is."""
    for s in base.free_symbols:
        name = s.name
        if name.startswith(("blockDim.", "gridDim.")):
            return False
        opaque = _OPAQUE.fullmatch(name)
        if opaque is None:
            if not uniform_name(u, name, scope="grid"):
                return False
            continue
        same = [n for n in walk(r.func) if " ".join(r.env.t(n).split()) == opaque.group(1)]
        if not same or not all(thread_uniform(u, n, scope="grid") for n in same):
            return False
    return True


#: The name of a value the affine reader keeps opaque (``load(p[0])``, ``call(f(n))``, ``expr(...)``).
_OPAQUE = re.compile(r"(?:load|call|expr)\((.*)\)", re.S)


@dataclass
class _Loop:
    fact: GridStrideLoop
    node: Node
    slots: tuple[Node, ...]
    outside: tuple[Node, ...]
    scoped: bool


def _grid_stride_loops(r: _Reader, u: Uniformity, loop_nodes: list[Node], lines: list[int]) -> list[_Loop]:
    out: list[_Loop] = []
    for k, ln in enumerate(loop_nodes):
        h = _header(r, ln)
        if h is None or _leaves_early(ln):
            continue
        start, step = r.expr(h.start), r.expr(h.step)
        if start is None or step is None:
            continue
        found = _dim_of(start, step)
        if found is None or (found[2] != 0 and not _uniform_base(r, u, found[2])):
            continue
        bound = r.expr(h.bound)
        if bound is not None and sym(h.var) in bound.free_symbols:
            continue
        out.append(_Loop(GridStrideLoop(k, found[0], h.var, found[1], bound, lines[k]), ln, (h.start, h.step),
                         h.outside, h.scoped))
    return out


def _occurrences(r: _Reader, body: Node, dim: str, macros: frozenset[str]) -> list[Node]:
    """The nodes of ``body`` that read a builtin along ``dim``: field expressions, cooperative-groups queries, and
    the uses of the macros in ``macros`` (those that read a builtin in their text, counted along every dimension)."""
    names = {f"{b}.{dim}" for b in ("threadIdx", "blockIdx", "blockDim", "gridDim")}
    out: list[Node] = []
    for n in walk(body):
        if n.type == "field_expression" and r.builtin(n) in names:
            out.append(n)
        elif n.type == "identifier" and r.env.t(n) in macros:
            out.append(n)
        elif n.type == "call_expression":
            e = r._cg_call(n)
            if e is not None and any(s.name in names for s in e.free_symbols):
                out.append(n)
    return out


def _inside(n: Node, outer: Node) -> bool:
    return outer.start_byte <= n.start_byte and n.end_byte <= outer.end_byte


def _spent(r: _Reader, body: Node, n: Node, slots: list[Node], depth: int = 0) -> bool:
    """``n`` (a builtin read, or the use of a local holding one) feeds only the start or stride of a grid-stride
    loop: it lies in one of ``slots``, or in the initializer of a local declared once and never changed whose
    every use is itself spent."""
    if any(_inside(n, s) for s in slots):
        return True
    if depth > 4:
        return False
    p = n.parent
    while p is not None and p.type not in ("init_declarator", "expression_statement", "compound_statement"):
        p = p.parent
    if p is None or p.type != "init_declarator":
        return False
    value, decl = p.child_by_field_name("value"), p.child_by_field_name("declarator")
    if value is None or decl is None or decl.type != "identifier" or not _inside(n, value):
        return False
    name = r.env.t(decl)
    if len(r.env.local_inits(r.func, name)) != 1 or _writes(r.env, r.func, name):
        return False
    uses = [u for u in of_type(body, "identifier") if r.env.t(u) == name and u != decl]
    return all(_spent(r, body, u, slots, depth + 1) for u in uses)


def _var_stays_inside(r: _Reader, body: Node, lp: _Loop) -> bool:
    """Every use of the loop's index is in the loop, its declaration or a do loop's entry check (an index declared
    in a ``for`` header is the loop's own)."""
    if lp.scoped:
        return True
    keep = (lp.node, *lp.outside)
    return all(any(_inside(u, k) for k in keep) for u in of_type(body, "identifier") if r.env.t(u) == lp.fact.var)


def grid_stride_facts(r: _Reader, body: Node, loop_nodes: list[Node], lines: list[int], *,
                      hidden_reads: bool, macros: frozenset[str] = frozenset(), uniform: Uniformity | None = None
                      ) -> tuple[tuple[GridStrideLoop, ...], tuple[str, ...]]:
    """The kernel's grid-stride loops and the dimensions whose coverage no launch decides (module docstring).

    Args:
        r: the kernel's affine reader.
        body: the kernel's body.
        loop_nodes: every loop of the body, in source order (their index is the loop's id).
        lines: the 1-based line of each loop.
        hidden_reads: the kernel may read the thread indices out of sight (a function of the unit it calls): no
            dimension is then launch-free.
        macros: the macros the body uses whose text reads a builtin (``#define STRIDE (blockDim.x * gridDim.x)``):
            each use must be spent in a loop's start or stride like a builtin.
        uniform: the kernel's uniformity questions (:class:`~htam_core.source.analysis.uniformity.Uniformity`),
            asked of a loop's start offset; by default one over ``body`` that sees no macros or hidden calls.

    Returns:
        ``(loops, dims)``: the grid-stride loops in source order, and the launch-free dimensions (sorted).
    """
    u = uniform if uniform is not None else Uniformity(r.env.t, body)
    loops = _grid_stride_loops(r, u, loop_nodes, lines)
    free: list[str] = []
    for d in DIMS:
        on_d = [lp for lp in loops if lp.fact.dim == d and _var_stays_inside(r, body, lp)]
        if not on_d or hidden_reads:
            continue
        slots = [s for lp in on_d for s in lp.slots]
        if all(_spent(r, body, n, slots) for n in _occurrences(r, body, d, macros)):
            free.append(d)
    return tuple(lp.fact for lp in loops), tuple(free)
