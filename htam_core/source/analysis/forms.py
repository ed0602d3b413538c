"""The CUDA forms the transforms match, read from nodes in one place: a builtin field (``blockIdx.x``), the global
index ``blockIdx.d * S + threadIdx.d`` in any operand order, a written node, the parts of a bound check, and the
elementwise shape ``i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) body`` with why a kernel does not have it.

The functions read a kernel through a view that gives its text and facts: the analysis layer's
:class:`~htam_core.source.analysis.unit.CudaSource` with its :class:`~htam_core.source.analysis.facts.KernelFacts`
(:class:`KernelView`), which the transforms' editing view of a kernel is too. Nodes are offsets into the view's
``src``; facts' spans are file offsets (``src[0]`` is file offset ``base``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.facts import KernelFacts, sym
from htam_core.source.analysis.guards import (
    BoundsGuard,
    GuardTerm,
    bounds_guard,
    describe_form,
    exit_condition,
)
from htam_core.source.analysis.launch_bounds import launch_bounds_node  # noqa: F401  (re-exported)
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.sync import Barrier
from htam_core.source.analysis.syntax import side_effect_free, statements, strip_casts
from htam_core.source.analysis.types import TypeEnv
from htam_core.source.analysis.unit import CudaSource


class HasText(Protocol):
    """Anything that gives a node's source text (a parsed unit, or a transform's view of one)."""

    def t(self, node: Node | None) -> str:
        """Source text of ``node`` (``""`` for ``None``)."""
        ...


class KernelView(HasText, Protocol):
    """A kernel's parsed unit with its facts: the bytes, the file offset of ``src[0]``, the body and the facts
    (:class:`KernelText`, or a transform's editing view of the kernel)."""

    @property
    def src(self) -> bytes:
        """The unit's bytes."""
        ...

    @property
    def base(self) -> int:
        """File offset of ``src[0]``."""
        ...

    @property
    def body(self) -> Node:
        """The kernel's body (a block)."""
        ...

    @property
    def facts(self) -> KernelFacts:
        """The kernel's facts."""
        ...

    def file_byte(self, node: Node) -> int:
        """File offset of ``node``'s start."""
        ...

    def node_at(self, span: tuple[int, int], types: tuple[str, ...] = ()) -> Node | None:
        """The node whose file bytes are exactly ``span`` (a fact's span), optionally of one of ``types``; ``None``
        when the span is not one node of the unit."""
        ...

    @property
    def types(self) -> TypeEnv:
        """The type names the unit gives the kernel: its ``typedef``/``using`` aliases and template parameters
        (:class:`~htam_core.source.analysis.types.TypeEnv`), built once per unit."""
        ...


@dataclass(frozen=True)
class KernelText:
    """A :class:`KernelView` of the analysis layer: a kernel's parsed unit and its facts.

    Attributes:
        source: the kernel's parsed unit (:func:`~htam_core.source.analysis.unit.cuda_source`).
        facts: its facts (:func:`htam_core.source.analysis.analyze`).
    """

    source: CudaSource
    facts: KernelFacts

    @property
    def src(self) -> bytes:
        """The unit's bytes."""
        return self.source.src

    @property
    def base(self) -> int:
        """File offset of ``src[0]``."""
        return self.source.base

    @property
    def body(self) -> Node:
        """The kernel's body."""
        return self.source.body

    def t(self, node: Node | None) -> str:
        """Source text of ``node`` (``""`` for ``None``)."""
        return self.source.t(node)

    def file_byte(self, node: Node) -> int:
        """File offset of ``node``'s start."""
        return self.source.file_byte(node)

    def node_at(self, span: tuple[int, int], types: tuple[str, ...] = ()) -> Node | None:
        """The node whose file bytes are exactly ``span`` (:meth:`CudaSource.node_at`)."""
        return self.source.node_at(span, types)

    @property
    def types(self) -> TypeEnv:
        """The unit's type names (:attr:`CudaSource.types`)."""
        return self.source.types


def barriers_in(view: KernelView, node: Node) -> list[Barrier]:
    """The barriers (:attr:`KernelFacts.barriers`, every spelling in normal form: ``__syncthreads()``,
    ``cg::sync(cta)``, ``cta.sync()``, ``__syncwarp()``) whose call lies inside ``node``."""
    lo, hi = view.file_byte(node), node.end_byte + view.base
    return [b for b in view.facts.barriers if lo <= b.span[0] and b.span[1] <= hi]


def builtin_field(unit: HasText, node: Node) -> str | None:
    """``"blockIdx.x"`` for a ``blockIdx.x``-like field expression (casts stripped), else ``None``."""
    node = strip_casts(node)
    if not syn.is_field(node):
        return None
    arg, fld = node.child_by_field_name("argument"), node.child_by_field_name("field")
    if arg is None or fld is None or unit.t(arg) not in ("blockIdx", "blockDim", "threadIdx", "gridDim"):
        return None
    return f"{unit.t(arg)}.{unit.t(fld)}"


def _binary(unit: HasText, node: Node, op: str) -> tuple[Node, Node] | None:
    node = strip_casts(node)
    if not syn.is_binary(node) or unit.t(node.child_by_field_name("operator")) != op:
        return None
    return node.child_by_field_name("left"), node.child_by_field_name("right")


def global_index_parts(unit: HasText, expr: Node) -> tuple[str, Node] | None:
    """Match ``blockIdx.d * S + threadIdx.d`` (any operand order, casts allowed).

    Returns ``(d, S)`` where ``S`` is the block-stride expression (``blockDim.d`` or a constant such
    as ``TILE``), else ``None``.
    """
    plus = _binary(unit, expr, "+")
    if plus is None:
        return None
    for mul_side, tid_side in (plus, plus[::-1]):
        tid = builtin_field(unit, tid_side)
        mul = _binary(unit, mul_side, "*")
        if tid is None or not tid.startswith("threadIdx.") or mul is None:
            continue
        d = tid[-1]
        for bi, stride in (mul, mul[::-1]):
            if builtin_field(unit, bi) == f"blockIdx.{d}":
                return d, strip_casts(stride)
    return None


def is_global_index(unit: HasText, expr: Node, dim: str = "x") -> bool:
    """True for ``blockIdx.d * blockDim.d + threadIdx.d`` in any operand order, with optional casts."""
    parts = global_index_parts(unit, expr)
    return parts is not None and parts[0] == dim and builtin_field(unit, parts[1]) == f"blockDim.{dim}"


def is_lvalue(node: Node) -> bool:
    """True when ``node`` is written: assigned, compound-assigned, incremented or address-taken."""
    p = node.parent
    while p is not None and syn.is_parenthesized(p):
        node, p = p, p.parent
    if p is None:
        return False
    if syn.is_assignment(p) and p.child_by_field_name("left") == node:
        return True
    if syn.is_update(p):
        return True
    if syn.is_address_of(p):
        return True
    return False



@dataclass
class Elementwise:
    """The ``i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) body`` shape of an elementwise kernel.

    Attributes:
        decl: the index declaration statement.
        name: the index variable.
        type: the index type as written, without ``const`` (``"int"``, ``"int64_t"``).
        gid: the global-index expression.
        guard: the ``if`` statement (``if (i < n) S`` or ``if (i >= n) return;``).
        bound: the bound expression ``n``.
        form: ``"if"`` (body inside the guard) or ``"return"`` (early exit, body follows).
        stmts: the guarded statements.
        consequence: the guarded statement node for ``form == "if"``.
        extra: the guard's other terms, which read neither the index nor a thread index (``n > 0`` in ``if (i < n
            && n > 0)``), joined as one condition in parentheses, or ``""``: the same for every element, so a
            rewrite keeps them as a condition of the whole loop.
        predicate: the guard's other terms that test the element (``v[i] != 0`` in ``if (i < n && v[i] != 0)``;
            ``flag[i]`` in ``if (i >= n || !flag[i]) return;``), as one positive condition in parentheses
            (``"(v[i] != 0)"``), or ``""``: a rewrite that loops over the elements keeps it inside the loop's body.
        skip: the negation of :attr:`predicate` as an early exit writes it (``v[i] == 0``, ``!flag[i]``), or ``""``.
        alternative: the guard's ``else`` that changes nothing (``else { return; }`` ending the kernel, ``else {}``:
            :func:`~htam_core.source.analysis.guards.noop_else`), else ``None``; part of :attr:`guard`.
    """

    decl: Node
    name: str
    type: str
    gid: Node
    guard: Node
    bound: Node
    form: str
    stmts: list[Node]
    consequence: Node | None = None
    extra: str = ""
    predicate: str = ""
    skip: str = ""
    alternative: Node | None = None

    def else_span(self) -> tuple[int, int] | None:
        """The bytes ``(start, end)`` from the end of :attr:`consequence` to the end of :attr:`guard` (its no-op
        ``else``), which a rewrite that keeps the consequence but changes the guard's header deletes; ``None``
        without such an ``else``."""
        if self.alternative is None or self.consequence is None:
            return None
        return self.consequence.end_byte, self.guard.end_byte

    @property
    def deduced_type(self) -> bool:
        """The index is declared ``auto`` (its type is its value's: a cast cannot name it as written)."""
        return self.type.split() == ["auto"]


def cond_parts(unit: KernelView, cond: Node) -> tuple[str, str, Node] | None:
    """``(var, op, bound)`` for ``var < bound`` / ``bound > var`` (op normalized to var on the left)."""
    cond = syn.unwrap_parens(cond)
    if syn.is_condition_clause(cond):
        inner = cond.child_by_field_name("value")
        if inner is None:
            return None
        cond = syn.unwrap_parens(inner)
    if not syn.is_binary(cond):
        return None
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    op = unit.t(cond.child_by_field_name("operator"))
    flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
    if syn.is_identifier(syn.unwrap_parens(left)):
        return unit.t(syn.unwrap_parens(left)), op, right
    if syn.is_identifier(syn.unwrap_parens(right)) and op in flip:
        return unit.t(syn.unwrap_parens(right)), flip[op], left
    return None


def _bad_body(unit: KernelView, stmts: list[Node], index: str) -> str | None:
    """Why ``stmts`` cannot become a loop body, or ``None``."""
    for s in stmts:
        for b in barriers_in(unit, s):
            return f"the guarded code uses {b.text} (a {b.scope} barrier)"
        for n in syn.walk(s):
            if syn.is_return(n):
                return "the guarded code returns early"
            if syn.is_loop_exit(n):
                loop = n.parent
                while loop is not None and loop not in stmts and not syn.is_breakable(loop):
                    loop = loop.parent
                if loop is None or loop in stmts and not syn.is_breakable(loop):
                    return "the guarded code uses break/continue"
            if syn.is_identifier(n) and unit.t(n) in ("__syncthreads", "__syncwarp", "blockIdx", "threadIdx"):
                return f"the guarded code uses {unit.t(n)}"
            if syn.is_field(n) and unit.t(n.child_by_field_name("argument")) in (
                "blockIdx", "threadIdx"
            ):
                return f"the guarded code uses {unit.t(n)}"
            if syn.is_identifier(n) and unit.t(n) == index and is_lvalue(n):
                return f"the guarded code modifies {index}"
    return None


def _is_global_x(unit: KernelView, name: str, decl: Node) -> bool:
    """``name`` (declared by ``decl``) is exactly ``blockIdx.x * blockDim.x + threadIdx.x`` by the analysis
    layer's thread-index facts, however it is spelled (``blockIdx.x * bs + tid`` with ``int tid = threadIdx.x;``
    and ``int bs = blockDim.x;``, ``threadIdx.x + blockDim.x * blockIdx.x``, or ``blockIdx.x * BLOCK + threadIdx.x``
    with ``BLOCK`` a constant or template argument equal to the 1-D block of every launch in the file)."""
    tx, bx, bdx = (sym(n) for n in ("threadIdx.x", "blockIdx.x", "blockDim.x"))
    span = (unit.file_byte(decl), decl.end_byte + unit.base)
    strides = [bdx]
    launches = unit.facts.launches
    blocks = {la.block[0].value for la in launches if la.block and all(d.value == 1 for d in la.block[1:])}
    if launches and len(blocks) == 1 and len(launches) == sum(1 for la in launches if la.block):
        (b,) = blocks
        if isinstance(b, int) and b > 0:
            strides.append(sympy.Integer(b))  # blockIdx.x * BLOCK + threadIdx.x, BLOCK the block of every launch
    return any(t.name == name and t.span == span and t.is_global
               and any(sympy.expand(t.expr - (bx * st + tx)) == 0 for st in strides)
               for t in unit.facts.thread_indices)


def _thread_locals_used(unit: KernelView, stmts: list[Node], decl: Node) -> str | None:
    """Why ``stmts`` read a thread-dependent local declared before the index declaration ``decl`` (``int tid =
    threadIdx.x;``): a rewrite that gives a thread several elements would keep its first value."""
    before = {t.name for t in unit.facts.thread_indices if t.span[0] < unit.file_byte(decl)}
    for st in stmts:
        for n in syn.identifiers(st):
            if unit.t(n) in before:
                return f"the guarded code uses {unit.t(n)}, which holds a thread index"
    return None


_BUILTINS = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})


def _guard_terms(unit: KernelView, g: BoundsGuard, name: str, per_element: bool) -> tuple[str, str, str] | None:
    """The guard ``g``'s terms other than its one ``name < n`` split by what they read, each group joined as one
    condition in parentheses (``""`` when empty), and the per-element terms' negation as an early exit writes it
    (:func:`exit_condition`: ``v[i] == 0``, ``!flag[i]``): ``(invariant, per_element, skip)``. An invariant term (``n > 0``) reads
    neither ``name``, a builtin nor a thread-index local; a per-element term (``v[i] != 0``, ``flag[i]``, the
    negated ``v[i] == 0`` of an early return) reads ``name`` but no builtin nor other thread-index local, so it is a
    condition on the element alone (taken only with ``per_element``). Every term must be free of side effects
    (:func:`side_effect_free`). ``None`` when a term is neither, or the guard has no such other term.

    Idea source: the normalization of a guard to a conjunction (:mod:`~htam_core.source.analysis.guards`): the
    bound is the conjunct on the index; the rest are per-element predicates, which a loop over the elements keeps
    inside its body (evaluated under the bound, as ``&&`` and the early return evaluate them for ``i < n``)."""
    bounds, others = g.bounds(), g.others()
    if set(bounds) != {name} or len(g.terms) != len(others) + 1 or not others:
        return None
    thread_locals = {t.name for t in unit.facts.thread_indices} - {name}
    invariant: list[str] = []
    element: list[GuardTerm] = []
    for t in others:
        words = set(re.findall(r"[A-Za-z_]\w*", t.text))
        if words & (thread_locals | _BUILTINS) or not side_effect_free(t.text):
            return None
        if name in words and not per_element:
            return None
        if name in words:
            element.append(t)
        else:
            invariant.append(f"({t.text})")
    pred = " && ".join(f"({t.text})" for t in element)
    return ("(" + " && ".join(invariant) + ")" if invariant else "",
            f"({pred})" if len(element) > 1 else pred, exit_condition(element, unit.src) if element else "")


def _invariant_terms(unit: KernelView, g: BoundsGuard, name: str) -> str | None:
    """The guard ``g``'s terms other than ``name < n`` as one condition (``"(n > 0)"``) when each reads neither
    ``name``, a builtin nor a thread-index local and has no side effect (:func:`_guard_terms`), else ``None``."""
    split = _guard_terms(unit, g, name, False)
    return split[0] if split is not None else None



def first_check(rest: list[Node], src: bytes, name: str, what: str) -> int | str:
    """The index in ``rest`` (the statements after the declaration of the index ``name``) of its bound check, the
    first ``if``; or why there is none: ``what`` (``i``, ``the column c``) read before it, or no ``if`` follows."""
    for j, s in enumerate(rest):
        if syn.is_if(s):
            return j
        if syn.references(s, src, name):
            return f"{what} is used before its bound check"
    return f"no bound check on {what} follows its declaration"

def elementwise(unit: KernelView, *, invariant_terms: bool = False,
                per_element_terms: bool = False) -> Elementwise | str:
    """Match the elementwise shape in the kernel body, or say why it does not match.

    ``invariant_terms``: also match a guard with terms that are the same for every element (``if (i < n && n >
    0)``), given in :attr:`Elementwise.extra`; a caller that passes it keeps them as a condition of the whole
    loop. ``per_element_terms`` (with ``invariant_terms``): also match a guard whose other terms are conditions on
    the element (``if (i < n && v[i] != 0)``, ``if (i >= n || !flag[i]) return;``), given in
    :attr:`Elementwise.predicate`; a caller that passes it keeps them as a condition inside the loop's body, or
    refuses with :func:`predicate_reason`."""
    stmts = statements(unit.body)
    for k, s in enumerate(stmts):
        if not syn.is_declaration(s):
            continue
        inits = [d for d in s.named_children if syn.is_init_declarator(d)]
        if len(inits) != 1:
            continue
        value = inits[0].child_by_field_name("value")
        name_node = inits[0].child_by_field_name("declarator")
        if value is None or name_node is None or not syn.is_identifier(name_node) or not (
                is_global_index(unit, value) or _is_global_x(unit, unit.t(name_node), s)):
            continue
        name = unit.t(name_node)
        typ = unit.src[s.start_byte : inits[0].start_byte].decode().replace("const ", "").strip()
        rest = stmts[k + 1 :]
        j = first_check(rest, unit.src, name, name)
        if isinstance(j, str):
            return j
        g = bounds_guard(rest[j], rest[j + 1 :], unit.src)
        cond_text = unit.t(rest[j].child_by_field_name("condition"))
        if isinstance(g, str):
            return g if "else" in g or "nothing" in g else f"the bound check {cond_text}: {g}"
        bound = g.single(name)
        split = _guard_terms(unit, g, name, per_element_terms) if invariant_terms and bound is None else None
        if split is not None:
            bound = g.bounds()[name]
        if bound is None:
            return _not_a_bound(unit, g, name)
        if g.form == "if" and rest[j + 1 :]:
            return "statements follow the guarded block"
        body = list(g.body)
        why = _bad_body(unit, body, name) or _thread_locals_used(unit, body, s)
        if why:
            return why
        cons = g.stmt.child_by_field_name("consequence") if g.form == "if" else None
        return Elementwise(s, name, typ, value, g.stmt, bound, g.form, body, cons, *(split or ("", "", "")),
                           alternative=g.alternative)
    gs = unit.facts.grid_stride_loops
    if gs:  # the index is a grid-stride loop's own: that is the shape, not a missing declaration
        return (f"the kernel is a grid-stride loop over {gs[0].var} (line {gs[0].line}), not one element per thread "
                f"under `if ({gs[0].var} < n)`")
    return "no `i = blockIdx.x * blockDim.x + threadIdx.x` index declaration before a bound check"


def _not_a_bound(unit: KernelView, g: BoundsGuard, name: str) -> str:
    """Why the guard ``g`` of index ``name`` is not read as its bound check: its form as written, and, when its
    other terms are conditions on the element (:func:`_guard_terms`), that they are."""
    why = (f"the bound check is {describe_form(g, unit.src)}, not `if ({name} < n) {{ … }}` "
           f"(nor its early return `if ({name} >= n) return;`)")
    split = _guard_terms(unit, g, name, True)
    if split is not None and split[1]:
        why += f": besides the bound `{name} < {unit.t(g.bounds()[name])}` it tests the element, `{split[1][1:-1]}`"
    return why


def _declared_before(unit: KernelView, guard: Node) -> set[str]:
    """The names the kernel body's statements before ``guard`` declare (``float acc = 0.0f;``, ``int seen;``,
    ``float buf[4];``)."""
    names: set[str] = set()
    for st in statements(unit.body):
        if st.start_byte >= guard.start_byte:
            break
        if not syn.is_declaration(st):
            continue
        for d in st.children_by_field_name("declarator"):
            while d is not None and not syn.is_identifier(d):
                d = d.child_by_field_name("declarator")
            if d is not None:
                names.add(unit.t(d))
    return names


def carried_locals(unit: KernelView, ew: Elementwise) -> list[str]:
    """The locals declared before the bound check that the guarded code updates from their own value (``acc +=
    v[i]``, ``++count``) or writes while a term of the guard reads them (``if (i < n && !done) { done = 1; … }``).
    With one element per thread each starts from its declared value; a rewrite that gives a thread several
    elements (a grid-stride loop, the lanes of a vector) would carry it from one element to the next, so such a
    rewrite refuses them (the names, in source order; empty when none)."""
    names = _declared_before(unit, ew.guard) - {ew.name}
    guard_words = set(re.findall(r"[A-Za-z_]\w*", f"{ew.extra} {ew.predicate}"))
    out: list[str] = []
    for st in ew.stmts:
        for n in syn.identifiers(st):
            name = unit.t(n)
            if name not in names or name in out or not is_lvalue(n):
                continue
            p = n.parent
            while syn.is_parenthesized(p):
                p = p.parent  # type: ignore[union-attr]
            own_value = syn.is_update(p) or (syn.is_assignment(p) and unit.t(p.child_by_field_name("operator")) != "=")
            if own_value or name in guard_words:
                out.append(name)
    return out


def predicate_reason(unit: HasText, ew: Elementwise, step: str) -> str | None:
    """Why a rewrite ``step`` (``"the float4 form"``) that does not keep a per-element condition refuses ``ew`` (of
    the kernel ``unit`` gives the text of): its guard tests the element besides the bound
    (:attr:`Elementwise.predicate`); ``None`` when it does not."""
    if not ew.predicate:
        return None
    return (f"the bound check `{ew.name} < {unit.t(ew.bound)}` also tests each element, `{ew.predicate[1:-1]}`, "
            f"so whether the body runs differs from element to element; {step} does not carry a condition per "
            "element")


def param_names(source: CudaSource) -> list[str]:
    """The kernel's parameter names in order (``""`` for an unnamed one), through pointer/reference/array
    declarators."""
    out: list[str] = []
    for p in source.params:
        n = p.child_by_field_name("declarator")
        while n is not None and not syn.is_identifier(n):
            n = n.child_by_field_name("declarator")
        out.append(source.t(n) if n is not None else "")
    return out


def uses_block_linear_index(source: CudaSource, dim: str) -> bool:
    """True when the kernel multiplies ``blockIdx.<dim>`` by something (each block owns a slice)."""
    for b in syn.binaries(source.body):
        if source.t(b.child_by_field_name("operator")) != "*":
            continue
        for side in ("left", "right"):
            s = b.child_by_field_name(side)
            if s is not None and source.t(syn.unwrap_parens(s)).replace(" ", "").endswith(f"blockIdx.{dim}"):
                return True
    return False
