"""Triton kernel facts: program-id and arange axes, loops (column tiles), reductions, masked loads and
stores, ``tl.dot`` operand dtypes, accumulators, and the launches with their ``tl.constexpr`` bindings.

Python expressions are turned into sympy the same way as CUDA ones (:class:`PyAffine`): integer
literals and bound constants become numbers, other names symbols, ``//``, ``%`` and calls opaque.
Constants come from the kernel's ``tl.constexpr`` arguments at the first launch site (keyword or
positional, through :func:`~htam_core.source.analysis.constants.python_constants` at the site), their
defaults, and module-level constants. Vocabulary: ``triton.language``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import sympy
from tree_sitter import Node

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import python_constants, python_int, python_literal
from htam_core.source.analysis.facts import (
    Accumulator,
    Dim,
    KernelFacts,
    LaunchFacts,
    LoopFact,
    OnlineStat,
    PointerFacts,
    TritonAxis,
    TritonBound,
    TritonDot,
    TritonFacts,
    TritonLoop,
    TritonMemOp,
    TritonReduction,
    combine,
    sym,
)
from htam_core.source.analysis.loops import symbolic_trip_count
from htam_core.source.analysis.online import online_pairs
from htam_core.source.analysis.syntax import of_type, text, walk
from htam_core.source.analysis.triton_calls import _is_tl, _kw, _positional, _short, assignments_to
from htam_core.source.analysis.triton_names import TritonNames
from htam_core.source.analysis.triton_types import pointer_types
from htam_core.source.analysis.unit import PythonSource
from htam_core.source.model import Kernel
from htam_core.types.constexpr import read_constexpr

TL_PREFIXES = ("tl.", "triton.language.")
TL_REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "cumsum", "cumprod"}
_TL_MAX = {"maximum": "max", "minimum": "min", "max": "max", "min": "min"}
_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "tf32", "int8")


class PyAffine:
    """Python expression -> sympy, with ``bindings`` for constant names and ``defs`` for single local definitions."""

    def __init__(self, src: bytes, bindings: dict[str, Any], defs: dict[str, Node]) -> None:
        self.src = src
        self.bindings = bindings
        self.defs = defs

    def expr(self, node: Node | None, depth: int = 0) -> sympy.Expr | None:
        """The sympy form of ``node`` (``None`` when ``node`` is ``None``)."""
        if node is None or depth > 30:
            return None
        t = node.type
        tx = text(node, self.src)
        if t == "integer":
            v = python_int(tx)
            return sympy.Integer(v) if v is not None else None
        if t == "parenthesized_expression" and node.named_child_count == 1:
            return self.expr(node.named_children[0], depth + 1)
        if t == "identifier":
            if tx in self.bindings and isinstance(self.bindings[tx], int):
                return sympy.Integer(self.bindings[tx])
            return sym(tx)
        if t == "binary_operator":
            a = self.expr(node.child_by_field_name("left"), depth + 1)
            b = self.expr(node.child_by_field_name("right"), depth + 1)
            op = text(node.child_by_field_name("operator"), self.src)
            if a is None or b is None:
                return None
            return combine(op, a, b)
        if t == "unary_operator":
            a = self.expr(node.named_children[-1], depth + 1) if node.named_children else None
            return -a if a is not None and tx.startswith("-") else a
        if t == "call":
            fn = text(node.child_by_field_name("function"), self.src)
            args = [a for a in node.child_by_field_name("arguments").named_children if a.type != "keyword_argument"]
            vals = [self.expr(a, depth + 1) for a in args]
            if fn.rsplit(".", 1)[-1] == "cdiv" and len(vals) == 2 and None not in vals:
                return sympy.ceiling(vals[0] / vals[1])  # type: ignore[operator]
        return sympy.Symbol(f"expr({' '.join(tx.split())})")


#: Keyword arguments of ``tl.load``/``tl.store`` that steer the caches (recorded as :attr:`TritonMemOp.hints`).
CACHE_HINT_KWARGS = ("cache_modifier", "eviction_policy", "volatile")


def _root_name(node: Node | None, src: bytes) -> str | None:
    """First identifier of a pointer expression (``in_ptr + r * s + cols`` -> ``in_ptr``)."""
    for n in walk(node) if node is not None else []:
        if n.type == "identifier":
            return text(n, src)
        if n.type == "call":
            return None
    return None


def launch_calls(psrc: PythonSource, kernel: Kernel) -> list[tuple[Node, Any]]:
    """``(call node, LaunchSite)`` of each of the kernel's ``k[grid](...)`` launches (the one Triton launch finder)."""
    out = []
    calls = [c for c in of_type(psrc.root, "call") if c.child_by_field_name("function") is not None
             and c.child_by_field_name("function").type == "subscript"]
    for site in kernel.launch_sites:
        if site.span is None:
            continue
        hits = [c for c in calls if c.start_byte < site.span.end and c.end_byte > site.span.start
                and text(c.child_by_field_name("function").child_by_field_name("value"), psrc.src).split(".")[-1]
                == kernel.name]
        if hits:
            out.append((min(hits, key=lambda c: abs(c.start_byte - site.span.start)), site))
    return out


def memop_mask(call: Node, op: str, src: bytes) -> Node | None:
    """The mask of a ``tl.load``/``tl.store``/``tl.atomic_*`` call, by keyword (``mask=m``) or by position
    (``tl.load(p, m)``, ``tl.store(p, v, m)``, ``tl.atomic_add(p, v, m)``); ``None`` when it has none."""
    kw = _kw(call, "mask", src)
    if kw is not None:
        return kw
    pos = _positional(call)
    k = 1 if op == "load" else 2
    return pos[k] if len(pos) > k else None


def module_value(root: Node, name: str, src: bytes) -> Node | None:
    """The right-hand side of the only module-level assignment ``name = ...`` (a module constant), or ``None``."""
    assigns = [st.named_children[0] for st in root.named_children
               if st.type == "expression_statement" and st.named_children
               and st.named_children[0].type == "assignment"
               and text(st.named_children[0].child_by_field_name("left"), src) == name]
    return assigns[0].child_by_field_name("right") if len(assigns) == 1 else None


def single_local(host: Node, name: str, before: int, src: bytes) -> Node | None:
    """The right-hand side of the only assignment to ``name`` in ``host`` when it is a plain one that precedes
    ``before``, else ``None``."""
    assigns = assignments_to(host, name, src)
    if len(assigns) != 1 or assigns[0].type != "assignment" or assigns[0].start_byte > before:
        return None
    return assigns[0].child_by_field_name("right")


def grid_expression(grid: Node, host: Node | None, before: int, src: bytes) -> Node:
    """A launch's grid expression (``grid``: the subscript of ``k[grid](...)``; ``host``: the function that launches,
    the launch at byte ``before``), following ``grid = ...`` and the single ``return`` of ``def grid(meta): ...`` in the
    host; ``grid`` itself otherwise."""
    if grid.type == "identifier" and host is not None:
        v = single_local(host, text(grid, src), before, src)
        if v is not None:
            return v
        for fd in of_type(host, "function_definition"):
            if text(fd.child_by_field_name("name"), src) == text(grid, src):
                rets = of_type(fd, "return_statement")
                if len(rets) == 1 and rets[0].named_children:
                    return rets[0].named_children[0]
    return grid


def grid_is_function(grid: Node, host: Node | None, before: int, src: bytes) -> bool:
    """True when a launch's grid (as in :func:`grid_expression`) is a function of the launch's meta-parameters: a
    ``lambda``, written in the launch or assigned to the local it names, or a function the host defines by that
    name."""
    if grid.type == "lambda":
        return True
    if grid.type == "identifier" and host is not None:
        v = single_local(host, text(grid, src), before, src)
        if v is not None and v.type == "lambda":
            return True
        return any(text(fd.child_by_field_name("name"), src) == text(grid, src)
                   for fd in of_type(host, "function_definition"))
    return False


def grid_tuple(call: Node, host: Node | None, src: bytes) -> Node | None:
    """The tuple a launch ``k[grid](...)`` runs over, whatever the spelling: written in the launch
    (``k[(n_rows,)]``), in a local (``grid = (n_rows,)``), in a lambda (``lambda meta: (n_rows,)``, inline or in a
    local) or returned by a grid function (``def grid(meta): return (n_rows,)``); ``None`` when the grid is no
    tuple or reads its meta-parameter (it then follows a constexpr of the launch). The one reader of a launch's
    grid tuple."""
    fn = call.child_by_field_name("function")
    g = fn.child_by_field_name("subscript") if fn is not None and fn.type == "subscript" else None
    meta: str | None = None
    if g is not None and g.type == "identifier" and host is not None:
        name = text(g, src)
        v = single_local(host, name, call.start_byte, src)
        if v is not None:
            g = v
        else:
            fd = next((f for f in of_type(host, "function_definition")
                       if text(f.child_by_field_name("name"), src) == name), None)
            rets = of_type(fd, "return_statement") if fd is not None else []
            if len(rets) != 1 or not rets[0].named_children:
                return None
            params = fd.child_by_field_name("parameters")  # type: ignore[union-attr]
            names = [text(p, src) for p in params.named_children if p.type == "identifier"] if params else []
            meta, g = (names[0] if names else None), rets[0].named_children[0]
    if g is not None and g.type == "lambda":
        params = g.child_by_field_name("parameters")
        names = [text(p, src) for p in params.named_children if p.type == "identifier"] if params else []
        meta, g = (names[0] if names else None), g.child_by_field_name("body")
    if g is not None and g.type == "parenthesized_expression" and g.named_child_count == 1 \
            and g.named_children[0].type == "tuple":
        g = g.named_children[0]
    if g is None or g.type not in ("tuple", "parenthesized_expression"):
        return None
    if meta is not None and any(text(i, src) == meta for i in of_type(g, "identifier")):
        return None
    return g


def grid_meta(call: Node, host: Node | None, src: bytes) -> str | None:
    """The name of the meta-parameter of a launch's grid lambda or grid function (``meta`` in ``lambda meta:
    ...`` or ``def grid(meta):``), or ``None`` when the grid is a plain tuple."""
    fn = call.child_by_field_name("function")
    g = fn.child_by_field_name("subscript") if fn is not None and fn.type == "subscript" else None
    if g is not None and g.type == "identifier" and host is not None:
        name = text(g, src)
        v = single_local(host, name, call.start_byte, src)
        fd = None if v is not None else next((f for f in of_type(host, "function_definition")
                                              if text(f.child_by_field_name("name"), src) == name), None)
        g = v if v is not None else fd
    if g is None or g.type not in ("lambda", "function_definition"):
        return None
    params = g.child_by_field_name("parameters")
    names = [text(p, src) for p in params.named_children if p.type == "identifier"] if params is not None else []
    return names[0] if names else None


def heuristics_dict(top: Node, src: bytes) -> Node | None:
    """The dictionary literal of the kernel's ``@triton.heuristics({...})`` decorator (``top``: the decorated
    definition), or ``None``."""
    if top.type != "decorated_definition":
        return None
    for d in top.named_children:
        call = d.named_children[0] if d.type == "decorator" and d.named_children else None
        if call is None or call.type != "call":
            continue
        if text(call.child_by_field_name("function"), src).rsplit(".", 1)[-1] != "heuristics":
            continue
        pos = _positional(call)
        kw = _kw(call, "values", src)
        arg = pos[0] if pos else kw
        return arg if arg is not None and arg.type == "dictionary" else None
    return None


def launch_argument(call: Node, kernel: Kernel, param: str, src: bytes) -> Node | None:
    """The expression launch ``call`` passes for ``param``, as a keyword (``BLOCK=64``) or by position (the
    ``k``-th positional argument for the ``k``-th parameter); ``None`` when the launch leaves it to its default
    or to ``@triton.autotune``/``@triton.heuristics``. The one reader of a launch's argument for a parameter."""
    kw = _kw(call, param, src)
    if kw is not None:
        return kw
    names = [p.name for p in kernel.params]
    pos = _positional(call)
    k = names.index(param) if param in names else -1
    return pos[k] if 0 <= k < len(pos) and pos[k].type != "list_splat" and not any(
        a.type in ("list_splat", "dictionary_splat") for a in pos[:k]) else None


def _bindings_at(psrc: PythonSource, kernel: Kernel, call: Node) -> dict[str, int]:
    """``tl.constexpr`` parameters bound to integers at launch ``call``."""
    names = python_constants(psrc.src, call.start_byte, psrc.root)
    out: dict[str, int] = {}
    params = [p.name for p in kernel.params]
    args = call.child_by_field_name("arguments")
    pos = [a for a in (args.named_children if args is not None else []) if a.type not in ("keyword_argument", "comment")]

    def value(node: Node) -> int | None:
        t = text(node, psrc.src).strip()
        v = python_int(t)
        if v is None and t.isidentifier():
            w = names.get(t)
            v = w if isinstance(w, int) and not isinstance(w, bool) else None
        return v

    for k, a in enumerate(pos):
        if k < len(params) and kernel.params[k].is_constexpr:
            v = value(a)
            if v is not None:
                out[params[k]] = v
    for a in args.named_children if args is not None else []:
        if a.type == "keyword_argument":
            name = text(a.child_by_field_name("name"), psrc.src)
            v = value(a.child_by_field_name("value"))
            if v is not None and name in params:
                out[name] = v
    return out


def triton_facts(psrc: PythonSource, kernel: Kernel) -> KernelFacts:
    """The :class:`KernelFacts` of Triton ``kernel`` located in ``psrc``."""
    src = psrc.src
    sites = launch_calls(psrc, kernel)
    per_launch = [_bindings_at(psrc, kernel, c) for c, _ in sites]
    bindings: dict[str, Any] = {k: v for k, v in python_constants(src, None, psrc.root).items()
                                if isinstance(v, int) and not isinstance(v, bool)}
    for p in kernel.params:
        d = python_int(p.default) if p.default else None
        if d is not None:
            bindings[p.name] = d
        else:
            bindings.pop(p.name, None)
    if per_launch:
        bindings.update(per_launch[0])
    assigns: dict[str, list[Node]] = {}
    for a in of_type(psrc.body, "assignment"):
        left = a.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            assigns.setdefault(text(left, src), []).append(a)
    aff = PyAffine(src, bindings, {})
    axes = _axes(psrc, aff, assigns)
    loops = _loops(psrc, aff)
    reductions, memops, dots, math_calls = _calls(psrc, kernel, assigns)
    tile_loops, tile_blocks = _tile_loops(psrc, kernel, loops, axes)
    pointers = []
    for p in kernel.params:
        # an atomic (tl.atomic_add) reads the value it updates: read-modify-write
        reads = any(m.pointer == p.name and (m.op == "load" or m.op.startswith("atomic_")) for m in memops)
        writes = any(m.pointer == p.name and m.op != "load" for m in memops)
        if not (reads or writes or p.is_pointer):
            continue
        mode = "readwrite" if reads and writes else "write" if writes else "read" if reads else "unused"
        pointers.append(PointerFacts(p.name, mode))  # type: ignore[arg-type]
    launches = tuple(_launch(psrc, c, site, b) for (c, site), b in zip(sites, per_launch, strict=True))
    consts = tuple(sorted((k, v) for k, v in bindings.items() if k in {p.name for p in kernel.params}
                          or k in {text(i, src) for i in of_type(psrc.body, "identifier")}))
    pid0 = [a.name for a in axes if a.kind == "program_id" and a.axis == 0]
    tf = TritonFacts(axes, reductions, memops, dots, tuple(tile_loops), math_calls,
                     autotuned="autotune" in kernel.attributes, grouped_program_ids=_grouped(psrc, axes, assigns),
                     bounds=_bounds(psrc, axes, assigns),
                     program_id_calls=sum(1 for c in of_type(psrc.body, "call")
                                          if _is_tl(psrc.callee(c))
                                          and _short(psrc.callee(c)) == "program_id"),
                     row_dependents=tuple(derived_names(psrc, pid0, assigns)) if pid0 else (),
                     arange_dependents=tuple(derived_names(psrc, [a.name for a in axes if a.kind == "arange"])),
                     control_names=_control_names(psrc), loops=tuple(_loop_names(psrc, n, lp.id) for lp, n in loops
                                                                     if n.type == "for_statement"),
                     tensor_shapes=tuple(text(_positional(c)[0], src) for c in of_type(psrc.body, "call")
                                         if _short(psrc.callee(c)) in ("zeros", "full")
                                         and _is_tl(psrc.callee(c)) and _positional(c)),
                     tile_params=_tile_params(psrc, kernel),
                     pointer_types=pointer_types(psrc, [p.name for p in kernel.params if p.is_pointer],
                                                 pointer_resolver(psrc, kernel, assigns)),
                     switch_values=_switch_values(psrc, kernel), tile_blocks=tuple(tile_blocks),
                     unroll_feeds=_unroll_feeds(psrc, kernel, loops, [c for c, _ in sites]))
    online = tuple(OnlineStat(lp.id, m, s, lp.line) for lp, n in loops for m, s in online_pairs(n, src))
    return KernelFacts(kernel.name, kernel.language, consts, tuple(lp for lp, _ in loops), (), tuple(pointers),
                       (), launches, tf, online_stats=online)


def _tile_loops(psrc: PythonSource, kernel: Kernel, loops: list[tuple[LoopFact, Node]],
                axes: tuple[TritonAxis, ...]) -> tuple[list[int], list[tuple[int, str, bool]]]:
    """The tile loops (:attr:`TritonFacts.tile_loops`: stepping by an arange length, or combining the loop variable
    with an arange: ``range(0, N, BLOCK)``, ``for t in tl.static_range(NUM_TILES)`` over ``t * BLOCK +
    tl.arange(0, BLOCK)``) and their :attr:`TritonFacts.tile_blocks`."""
    src = psrc.src
    arange_sizes = {a.size for a in axes if a.kind == "arange" and a.size is not None}
    arange_vars = {a.name for a in axes if a.kind == "arange"}
    tile_loops = []
    tile_blocks: list[tuple[int, str, bool]] = []
    heur = _heuristics_reads(psrc)
    for lp, node in loops:
        body = node.child_by_field_name("body")
        uses_tile = lp.var is not None and body is not None and any(
            lp.var in {text(i, src) for i in of_type(a, "identifier")}
            and any(text(i, src) in arange_vars or text(i, src) == "arange" for i in of_type(a, "identifier"))
            for a in of_type(body, "assignment"))
        block = _tile_index_block(psrc, kernel, lp.var, body) if uses_tile and lp.step == 1 else None
        header = _range_names(psrc, node)
        if lp.step is not None and (lp.step in arange_sizes or uses_tile) and lp.step != 1:
            tile_loops.append(lp.id)
            step = header[2] if header is not None else set()
            if len(step) == 1 and (b := next(iter(step))) in kernel.constexpr_params:
                bound = header[1] if header is not None else {b}
                tile_blocks.append((lp.id, b, lp.kind == "range" and b not in bound
                                    and not bound & set(kernel.constexpr_params)))
        elif block is not None:  # for t in tl.static_range(NUM_TILES): c = t * BLOCK + tl.arange(0, BLOCK)
            tile_loops.append(lp.id)
            count = header[1] if header is not None else set()
            # it follows the block only where every name of the count is recomputed from the block by the heuristic
            follows = bool(count) and all(block in heur.get(c, ()) for c in count)
            tile_blocks.append((lp.id, block, follows))
    return tile_loops, tile_blocks


def _unroll_feeds(psrc: PythonSource, kernel: Kernel, loops: list[tuple[LoopFact, Node]],
                  calls: list[Node]) -> tuple[str, ...]:
    """:attr:`TritonFacts.unroll_feeds`: the names read by the launch arguments that set a ``tl.static_range``
    count (directly, or through the ``@triton.heuristics`` function that computes the count), in first-use order."""
    src = psrc.src
    heur = _heuristics_reads(psrc)
    params: list[str] = []
    for lp, node in loops:
        header = _range_names(psrc, node) if lp.kind == "static_range" else None
        for c in sorted(set().union(*header)) if header is not None else []:
            if c not in kernel.constexpr_params:
                continue
            params.extend(r for r in heur.get(c, (c,)) if r in {p.name for p in kernel.params})
    out: list[str] = []
    for p in dict.fromkeys(params):
        for call in calls:
            arg = launch_argument(call, kernel, p, src)
            if arg is not None:
                out.extend(text(i, src) for i in [arg, *of_type(arg, "identifier")] if i.type == "identifier")
    return tuple(dict.fromkeys(out))


def _tile_index_block(psrc: PythonSource, kernel: Kernel, var: str | None, body: Node | None) -> str | None:
    """The ``tl.constexpr`` block ``P`` of a loop whose variable counts tiles (``t * P + tl.arange(0, P)`` in its
    body: ``for t in tl.static_range(NUM_TILES)``), else ``None``."""
    if var is None or body is None:
        return None
    src = psrc.src
    for op in of_type(body, "binary_operator"):
        if text(op.child_by_field_name("operator"), src) != "*":
            continue
        sides = [text(op.child_by_field_name(f), src) for f in ("left", "right")]
        if var in sides:
            other = sides[1 - sides.index(var)]
            if other in kernel.constexpr_params:
                return other
    return None


def _range_names(psrc: PythonSource, loop: Node) -> tuple[set[str], set[str], set[str]] | None:
    """The names read by the start, the end and the step of a ``range``/``tl.range``/``tl.static_range`` loop
    header (``range(C)`` has start and step ``set()``), or ``None`` for another loop."""
    it = loop.child_by_field_name("right")
    if it is None or it.type != "call" or _short(psrc.callee(it)) not in ("range", "static_range"):
        return None
    pos = _positional(it)
    if not 1 <= len(pos) <= 3:
        return None

    def names(n: Node) -> set[str]:
        return {text(i, psrc.src) for i in [n, *of_type(n, "identifier")] if i.type == "identifier"}
    parts = [pos[0]] if len(pos) == 1 else pos
    start = names(parts[0]) if len(parts) > 1 else set()
    end = names(parts[1] if len(parts) > 1 else parts[0])
    return start, end, names(parts[2]) if len(parts) == 3 else set()


def _heuristics_reads(psrc: PythonSource) -> dict[str, tuple[str, ...]]:
    """``{constexpr: kernel arguments its @triton.heuristics function reads}`` (``"NUM_TILES": lambda args:
    triton.cdiv(args["N"], args["BLOCK_N"])`` -> ``("N", "BLOCK_N")``): the constexprs Triton recomputes from
    those arguments at every launch."""
    d = heuristics_dict(psrc.top, psrc.src)
    out: dict[str, tuple[str, ...]] = {}
    for pair in (d.named_children if d is not None else []):
        if pair.type != "pair":
            continue
        key = text(pair.child_by_field_name("key"), psrc.src).strip().strip("'\"")
        if key.isidentifier():
            out[key] = tuple(re.findall(r"""\[\s*["'](\w+)["']\s*\]""", text(pair.child_by_field_name("value"),
                                                                             psrc.src)))
    return out


def _tile_params(psrc: PythonSource, kernel: Kernel) -> tuple[str, ...]:
    """The constexpr parameters that end a ``tl.arange(0, P)`` or step a ``range``/``tl.range`` loop."""
    src = psrc.src
    used: set[str] = set()
    for c in of_type(psrc.body, "call"):
        callee = psrc.callee(c)
        pos = _positional(c)
        if callee == "tl.arange" and len(pos) == 2 and python_int(text(pos[0], src)) == 0:
            used.add(text(pos[1], src))
        elif callee in ("range", "tl.range", "tl.static_range") and len(pos) == 3:
            used.add(text(pos[2], src))
    return tuple(p.name for p in kernel.params if p.is_constexpr and p.name in used)


def _axes(psrc: PythonSource, aff: PyAffine, assigns: dict[str, list[Node]]) -> tuple[TritonAxis, ...]:
    src = psrc.src
    out = []
    for name, nodes in assigns.items():
        for a in nodes:
            right = a.child_by_field_name("right")
            calls = [c for c in of_type(right, "call")] if right is not None else []
            for c in calls:
                callee = psrc.callee(c)
                if not _is_tl(callee):
                    continue
                pos = _positional(c)
                if _short(callee) == "program_id":
                    ax = pos[0] if pos else _kw(c, "axis", src)
                    v = python_int(text(ax, src)) if ax is not None else None
                    out.append(TritonAxis(name, "program_id", v if v is not None else 0, 1, None, psrc.line(a),
                                          None, psrc.span(a), psrc.span(c)))
                elif _short(callee) == "arange" and len(pos) == 2:
                    size = None
                    lo, hi = aff.expr(pos[0]), aff.expr(pos[1])
                    if lo is not None and hi is not None:
                        size = hi - lo
                    axis, ndim = _broadcast_axis(psrc, name)
                    out.append(TritonAxis(name, "arange", axis, ndim, size, psrc.line(a), " ".join(text(pos[1], src).split()),
                                          psrc.span(a), psrc.span(c)))
    out.sort(key=lambda x: x.line)
    return tuple(out)


def derived_names(psrc: PythonSource, roots: list[str], assigns: dict[str, list[Node]] | None = None) -> list[str]:
    """``roots`` and every name assigned (anywhere in the kernel, ``=`` or ``+=``-style) from an expression that
    reads one of them, transitively, roots first then discovery order (the one dependence closure over
    assignments; ``assigns`` is accepted for callers that hold the plain-assignment index, and not needed)."""
    return dependents(psrc.body, psrc.src, roots)


def dependents(body: Node, src: bytes, roots: list[str]) -> list[str]:
    """``roots`` and every name assigned in ``body`` (``=`` or ``+=``-style) from an expression that reads one of
    them, transitively: the dependence closure of :func:`derived_names` for any kernel body (the transforms' units
    hold the body and the file's bytes). Raises nothing."""
    out = list(dict.fromkeys(roots))
    derived = set(out)
    stmts = [(text(a.child_by_field_name("left"), src), a.child_by_field_name("right"))
             for a in of_type(body, ("assignment", "augmented_assignment"))
             if a.child_by_field_name("left") is not None and a.child_by_field_name("left").type == "identifier"]
    changed = True
    while changed:
        changed = False
        for name, right in stmts:
            if name in derived or right is None:
                continue
            if {text(i, src) for i in of_type(right, "identifier")} & derived:
                derived.add(name)
                out.append(name)
                changed = True
    return out


def program_axis(call: Node, src: bytes) -> str:
    """The axis a ``tl.program_id(...)`` call names, as written (``axis=`` or positional; ``"0"`` when none is
    given): ``"0"``, ``"1"``, ``"2"``, or the text of an axis that is not a literal (``"AX"``)."""
    args = call.child_by_field_name("arguments")
    kids = args.named_children if args is not None else []
    if not kids:
        return "0"
    a = kids[0].child_by_field_name("value") if syn.is_keyword_argument(kids[0]) else kids[0]
    return text(a, src).strip() if a is not None else "0"


def _is_program_id(call: Node, src: bytes, names: TritonNames) -> bool:
    fn = call.child_by_field_name("function")
    return fn is not None and names.canonical(text(fn, src)) == "tl.program_id"


def read_program_axes(body: Node, src: bytes, names: TritonNames) -> frozenset[str]:
    """Every program axis ``body`` reads with ``tl.program_id`` (:func:`program_axis` form; ``names``: how the file
    spells ``triton.language``)."""
    return frozenset(program_axis(c, src) for c in syn.py_calls(body) if _is_program_id(c, src, names))


def program_axes_of(node: Node, src: bytes, names: TritonNames, axes: dict[str, frozenset[str]]) -> frozenset[str]:
    """The program axes the expression ``node`` depends on through ``+ - *`` and ``tl.arange`` only: its own
    ``tl.program_id`` calls and the names of ``axes`` (:func:`pid_axes`) it reads; empty when it goes through
    ``%`` or ``//`` (a value that wraps around is no longer one program's own slice) or depends on none."""
    found: set[str] = set()
    for n in walk(node):
        if syn.is_binary_operator(n) and text(n.child_by_field_name("operator"), src) in ("%", "//"):
            return frozenset()
        if syn.is_py_call(n) and _is_program_id(n, src, names):
            found.add(program_axis(n, src))
        if syn.is_identifier(n) and text(n, src) in axes:
            found |= axes[text(n, src)]
    return frozenset(found)


def pid_axes(body: Node, src: bytes, names: TritonNames) -> dict[str, frozenset[str]]:
    """For each name of ``body`` whose value depends on ``tl.program_id`` through ``+ - *`` and ``tl.arange`` only,
    the program axes it depends on (:func:`program_axes_of`): the program-id closure of :func:`dependents`, resolved
    per axis and cut at ``%``/``//``, read in source order (a name gets the axes of its last such assignment).

    Args:
        body: a Triton kernel's body (Python tree).
        src: the bytes ``body`` was parsed from.
        names: how the file spells ``triton.language`` (``tl``, ``language``, ``triton.language``).

    Returns:
        ``{name: axes}`` (``{"pid": {"0"}, "offs": {"0"}}``); names that depend on no program id are absent.
    """
    axes: dict[str, frozenset[str]] = {}
    for a in syn.py_assignments(body):
        left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
        if left is None or right is None or not syn.is_identifier(left):
            continue
        dep = program_axes_of(right, src, names, axes)
        if dep:
            axes[text(left, src)] = dep
    return axes


def _bounds(psrc: PythonSource, axes: tuple[TritonAxis, ...], assigns: dict[str, list[Node]]) -> tuple[TritonBound, ...]:
    """Comparisons ``offs < n`` (or ``n > offs``) with ``offs`` derived from an arange and ``n`` a plain name."""
    src = psrc.src
    out: list[TritonBound] = []
    for ax in axes:
        if ax.kind != "arange" or ax.end_text is None:
            continue
        dep = set(derived_names(psrc, [ax.name], assigns))
        for c in of_type(psrc.body, "comparison_operator"):
            kids = c.named_children
            ops = [text(x, src) for x in c.children if not x.is_named]
            if len(kids) != 2 or len(ops) != 1 or ops[0] not in ("<", ">"):
                continue
            lo, hi = (kids[0], kids[1]) if ops[0] == "<" else (kids[1], kids[0])
            if hi.type == "identifier" and {text(i, src) for i in of_type(lo, "identifier")} & dep \
                    and text(hi, src) not in dep:
                b = TritonBound(ax.name, ax.end_text, text(hi, src), psrc.line(c))
                if b not in out:
                    out.append(b)
    return tuple(out)


def _switch_values(psrc: PythonSource, kernel: Kernel) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The string literals each constexpr parameter is compared with (``ACTIVATION == "silu"``, ``"gelu" !=
    MODE``): :attr:`~htam_core.source.analysis.facts.TritonFacts.switch_values`."""
    src = psrc.src
    names = {p.name for p in kernel.params if p.is_constexpr}
    found: dict[str, list[str]] = {}
    for cmp in of_type(psrc.body, "comparison_operator"):
        ops = [text(c, src) for c in cmp.children if not c.is_named]
        if ops not in (["=="], ["!="]) or len(cmp.named_children) != 2:
            continue
        a, b = cmp.named_children
        for name, lit in ((a, b), (b, a)):
            v = read_constexpr(text(lit, src)) if lit.type == "string" else None
            if name.type == "identifier" and text(name, src) in names and isinstance(v, str):
                values = found.setdefault(text(name, src), [])
                values.extend([v] if v not in values else [])
    return tuple((n, tuple(v)) for n, v in found.items())


def _control_names(psrc: PythonSource) -> tuple[str, ...]:
    """Names read by ``if``/``elif``/``while`` conditions and by ``range(...)`` loop headers."""
    src = psrc.src
    out: list[str] = []
    for n in walk(psrc.body):
        cond = None
        if n.type in ("if_statement", "elif_clause", "while_statement"):
            cond = n.child_by_field_name("condition")
        elif n.type == "for_statement":
            cond = n.child_by_field_name("right")
        elif n.type == "conditional_expression" and len(n.named_children) == 3:
            cond = n.named_children[1]
        for i in of_type(cond, "identifier") if cond is not None else []:
            if text(i, src) not in out:
                out.append(text(i, src))
    return tuple(out)


def _loop_names(psrc: PythonSource, loop: Node, loop_id: int) -> TritonLoop:
    """The name-level view of one ``for`` loop (:class:`TritonLoop`)."""
    src = psrc.src
    body = loop.child_by_field_name("body")
    left, right = loop.child_by_field_name("left"), loop.child_by_field_name("right")
    header = " ".join(f"{text(left, src)} in {text(right, src)}".split())
    targets: set[int] = set()
    writes: list[str] = []
    for a in of_type(body, ("assignment", "augmented_assignment")) if body is not None else []:
        lt = a.child_by_field_name("left")
        for i in ([lt] if lt is not None and lt.type == "identifier" else
                  of_type(lt, "identifier") if lt is not None and lt.type in ("pattern_list", "tuple_pattern") else []):
            if a.type == "assignment":
                targets.add(i.start_byte)
            if text(i, src) not in writes:
                writes.append(text(i, src))
    reads: list[str] = []
    for i in of_type(body, "identifier") if body is not None else []:
        if i.start_byte in targets or (i.parent is not None and i.parent.type == "attribute"
                                       and i.parent.child_by_field_name("attribute") == i):
            continue
        if i.parent is not None and i.parent.type == "keyword_argument" and i.parent.child_by_field_name("name") == i:
            continue
        if text(i, src) not in reads:
            reads.append(text(i, src))
    stmts = tuple(psrc.span(c) for c in (body.named_children if body is not None else []) if c.type != "comment")
    return TritonLoop(loop_id, header, tuple(reads), tuple(writes), stmts)


def _grouped(psrc: PythonSource, axes: tuple[TritonAxis, ...], assigns: dict[str, list[Node]]) -> bool:
    """Whether program ids are already swizzled (see :attr:`TritonFacts.grouped_program_ids`)."""
    src = psrc.src
    derived = set(derived_names(psrc, [a.name for a in axes if a.kind == "program_id"], assigns))
    for c in of_type(psrc.body, "call"):
        callee = psrc.callee(c)
        short = _short(callee)
        if short == "swizzle2d" and _is_tl(callee):
            return True
        if (short == "minimum" and _is_tl(callee)) or callee == "min":
            if {text(i, src) for i in of_type(c.child_by_field_name("arguments"), "identifier")} & derived:
                return True
    return False


def _broadcast_axis(psrc: PythonSource, name: str) -> tuple[int, int]:
    """Axis and rank a 1-D arange variable is used along: ``v[None, :]`` -> (1, 2), ``v[:, None]`` -> (0, 2)."""
    src = psrc.src
    for s in of_type(psrc.body, "subscript"):
        if text(s.child_by_field_name("value"), src) != name:
            continue
        subs = [c for c in s.children_by_field_name("subscript")]
        kinds = [("none" if text(c, src) == "None" else "slice" if c.type == "slice" else "other") for c in subs]
        if len(kinds) == 2 and "none" in kinds and "slice" in kinds:
            return kinds.index("slice"), 2
    return 0, 1


def _loops(psrc: PythonSource, aff: PyAffine) -> list[tuple[LoopFact, Node]]:
    src = psrc.src
    nodes = [n for n in walk(psrc.body) if n.type in ("for_statement", "while_statement")]
    index = {n.start_byte: k for k, n in enumerate(nodes)}
    out = []
    for k, n in enumerate(nodes):
        parent, depth = None, 0
        p = n.parent
        while p is not None and p != psrc.body:
            if p.start_byte in index and p.type in ("for_statement", "while_statement"):
                parent = index[p.start_byte] if parent is None else parent
                depth += 1
            p = p.parent
        kind, var, start, bound, step = "while", None, None, None, None
        if n.type == "for_statement":
            kind = "for"
            left, it = n.child_by_field_name("left"), n.child_by_field_name("right")
            var = text(left, src) if left is not None and left.type == "identifier" else None
            if it is not None and it.type == "call":
                short = _short(text(it.child_by_field_name("function"), src))
                if short in ("range", "static_range"):
                    kind = short
                    pos = _positional(it)
                    vals = [aff.expr(x) for x in pos]
                    if len(vals) == 1:
                        start, bound, step = sympy.Integer(0), vals[0], sympy.Integer(1)
                    elif len(vals) in (2, 3):
                        start, bound = vals[0], vals[1]
                        step = vals[2] if len(vals) == 3 else sympy.Integer(1)
        trip = symbolic_trip_count(start, "<", bound, "+", step) if kind in ("range", "static_range") else None
        out.append((LoopFact(
            id=k, line=psrc.line(n), span=psrc.span(n), kind=kind, var=var, start=start, bound=bound, step=step,
            cmp="<" if bound is not None else None, update="+" if step is not None else None, trip_count=trip,
            trip_value=int(trip) if trip is not None and trip.is_Integer else None, depth=depth, parent=parent,
            accumulators=_accumulators(psrc, n, nodes)), n))
    return out


def _dtype_of_init(node: Node | None, src: bytes) -> str | None:
    if node is None:
        return None
    for w in _FLOAT_DTYPES:
        if re.search(rf"\.{w}\b", text(node, src)):  # tl.float32 under any alias of triton.language
            return w
    return None


def _accumulators(psrc: PythonSource, loop: Node, loops: list[Node]) -> tuple[Accumulator, ...]:
    src = psrc.src
    out = []
    seen: set[str] = set()
    body = loop.child_by_field_name("body")
    for a in of_type(body, ("assignment", "augmented_assignment")) if body is not None else []:
        owner = a.parent
        while owner is not None and owner.type not in ("for_statement", "while_statement"):
            owner = owner.parent
        if owner != loop:
            continue
        left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier":
            continue
        name = text(left, src)
        kind = None
        if a.type == "augmented_assignment":
            kind = {"+=": "sum", "-=": "sum", "*=": "prod"}.get(text(a.child_by_field_name("operator"), src))
        elif right.type == "binary_operator":
            op = text(right.child_by_field_name("operator"), src)
            sides = {text(right.child_by_field_name("left"), src), text(right.child_by_field_name("right"), src)}
            if op in ("+", "*") and name in sides:
                kind = "sum" if op == "+" else "prod"
        elif right.type == "call":
            callee = psrc.callee(right)
            if _is_tl(callee) and _short(callee) in _TL_MAX and name in [text(x, src) for x in _positional(right)]:
                kind = _TL_MAX[_short(callee)]
        if kind is None or name in seen:
            continue
        init = None
        for b in of_type(psrc.body, "assignment"):
            if b.start_byte >= loop.start_byte:
                break
            if text(b.child_by_field_name("left"), src) == name:
                init = b
        if init is None:
            continue
        value = init.child_by_field_name("right")
        init_text = text(value, src)
        fills = {psrc.callee(c) for c in of_type(value, "call")} & {"tl.zeros", "tl.full"}
        if not of_type(right, "call") and not fills \
                and not isinstance(python_literal(init_text), float):
            continue  # a pointer or index moving by a stride, not a reduction
        seen.add(name)
        out.append(Accumulator(name, kind, _dtype_of_init(value, src), psrc.line(a), psrc.span(a),  # type: ignore[arg-type]
                               psrc.span(init), text(value, src) if value is not None else None))
    return tuple(out)


def pointer_resolver(psrc: PythonSource, kernel: Kernel, assigns: dict[str, list[Node]]
                     ) -> Callable[[Node | None], str | None]:
    """The function that names the parameter an address expression is based on (``in_ptr + r * s + cols`` ->
    ``"in_ptr"``), following the kernel's single-assignment locals (``row_ptr = in_ptr + r * s``; ``assigns``: the
    plain assignments of the body by name), ``None`` when it is based on no parameter."""
    src = psrc.src
    params = {p.name for p in kernel.params}
    aliases: dict[str, str] = {}
    for name, nodes in assigns.items():
        if len(nodes) == 1:
            r = _root_name(nodes[0].child_by_field_name("right"), src)
            if r is not None and r != name:
                aliases[name] = r

    def base(n: Node | None) -> str | None:
        r = _root_name(n, src)
        for _ in range(8):
            if r in params or r not in aliases:
                break
            r = aliases[r]
        return r if r in params else None

    return base


def _calls(psrc: PythonSource, kernel: Kernel, assigns: dict[str, list[Node]]
           ) -> tuple[tuple[TritonReduction, ...], tuple[TritonMemOp, ...], tuple[TritonDot, ...], tuple[str, ...]]:
    src = psrc.src
    reds, mem, dots, maths = [], [], [], []
    base = pointer_resolver(psrc, kernel, assigns)

    def dtype(n: Node) -> str | None:
        tx = text(n, src)
        for _ in range(4):
            for w in _FLOAT_DTYPES:
                if re.search(rf"\.to\((\w+\.)+{w}\)$", tx) or re.search(rf"dtype=(\w+\.)+{w}\b", tx):
                    return w
            if n.type == "identifier" and text(n, src) in assigns and len(assigns[text(n, src)]) >= 1:
                n = assigns[text(n, src)][-1].child_by_field_name("right")  # type: ignore[assignment]
                tx = text(n, src)
                continue
            break
        return None

    for c in of_type(psrc.body, "call"):
        callee = psrc.callee(c)
        if not _is_tl(callee):
            continue
        short = _short(callee)
        pos = _positional(c)
        if short in TL_REDUCTIONS:
            ax = _kw(c, "axis", src) or (pos[1] if len(pos) > 1 else None)
            target = None
            p = c.parent
            while p is not None and p.type not in ("assignment", "augmented_assignment", "block"):
                p = p.parent
            if p is not None and p.type != "block":
                target = text(p.child_by_field_name("left"), src)
            reds.append(TritonReduction(short, python_int(text(ax, src)) if ax is not None else None, target,
                                        psrc.line(c), psrc.span(c)))
        elif short in ("load", "store") or short.startswith("atomic_"):
            hints = tuple(h for h in CACHE_HINT_KWARGS if _kw(c, h, src) is not None)
            mem.append(TritonMemOp(short, base(pos[0] if pos else None), memop_mask(c, short, src) is not None,
                                   _kw(c, "other", src) is not None or (short == "load" and len(pos) > 2),
                                   psrc.line(c), psrc.span(c), hints))
        elif short == "dot" and len(pos) >= 2:
            ip = _kw(c, "input_precision", src)
            dots.append(TritonDot(text(pos[0], src), text(pos[1], src), dtype(pos[0]), dtype(pos[1]), psrc.line(c),
                                  psrc.span(c), text(ip, src).strip("\"'") if ip is not None else None))
        elif short not in maths and short not in ("program_id", "arange", "zeros", "full", "where", "num_programs"):
            maths.append(short)
    return tuple(reds), tuple(mem), tuple(dots), tuple(maths)


def _launch(psrc: PythonSource, call: Node, site: Any, bindings: dict[str, int]) -> LaunchFacts:
    src = psrc.src
    grid = call.child_by_field_name("function").child_by_field_name("subscript")
    dims: list[Dim] = []
    g = grid
    if g is not None and g.type == "identifier":
        resolved = (site.resolved_config or {}).get("grid")
        dims = [Dim(resolved or text(g, src), None, psrc.span(g))]
    elif g is not None and g.type in ("tuple", "expression_list", "parenthesized_expression"):
        for e in g.named_children:
            v = python_int(text(e, src))
            dims.append(Dim(" ".join(text(e, src).split()), v, psrc.span(e)))
    elif g is not None:
        dims = [Dim(" ".join(text(g, src).split()), python_int(text(g, src)), psrc.span(g))]
    host = call.parent
    while host is not None and host.type != "function_definition":
        host = host.parent
    kwargs = tuple((k, v) for k, v in (site.config or {}).items() if k != "grid")
    return LaunchFacts(site.line, psrc.span(call),
                       text(host.child_by_field_name("name"), src) if host is not None else None,
                       tuple(dims), (), None, (), tuple(sorted(bindings.items())), kwargs)
