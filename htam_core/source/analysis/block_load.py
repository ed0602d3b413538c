"""The one-element-per-thread guarded load into a shared slot before a block tree, in normal form.

A block reduction starts with every thread putting one element (or the combine's identity past the end) into its
shared slot. Kernel developers spell that in several equivalent ways; all of them mean "``array[slot]`` gets
``src[i]`` when ``i < n``, else the identity"::

    sdata[tid] = (i < n) ? in[i] : 0.0f;                     // a conditional
    sdata[tid] = (i >= n) ? 0.0f : in[i];                     // the same, the other way round
    float v = 0.0f; if (i < n) { v = in[i]; } sdata[tid] = v; // a register zeroed, then loaded when in range
    T v = identity; if (i < n) v = in[i]; sdata[tid] = v;     // the same without braces
    float v = (i < n) ? in[i] : 0.0f; sdata[tid] = v;         // a register from a conditional
    float v; if (i < n) v = in[i]; else v = 0.0f; sdata[tid] = v;
    if (i < n) sdata[tid] = in[i]; else sdata[tid] = 0.0f;    // an if/else store
    sdata[tid] = 0.0f; if (i < n) sdata[tid] = in[i];         // the identity stored, then overwritten in range

A guard term may read the element itself, the branch then being a value the same for every element (a count
or a selection)::

    sdata[tid] = (i < n && in[i] > thr) ? 1u : 0u;            // (i < n) ? (in[i] > thr ? 1u : 0u) : 0u

The slot may also receive a per-element expression of the loaded value, on either side of the guard::

    sdata[tid] = (i < n) ? in[i] * in[i] : 0.0f;              // f(in[i]) in the guarded branch
    sdata[tid] = (i < n) ? a[i] * b[i] : 0.0f;                // several reads at the same index
    float v = (i < n) ? in[i] : 0.0f; sdata[tid] = v * v;     // f(register) stored: past the bound, f(identity)

An expression is accepted when it has no effect, calls only :data:`PURE_MATH`, and reads no other value that
differs between threads; a function of the register (:attr:`GuardedLoad.stored`) stores ``f(identity)`` past the
bound, which :attr:`GuardedLoad.identity_kept` tells apart from the identity itself.

:func:`guarded_block_load` reads any of them as one :class:`GuardedLoad`: the statements it spans, the register
if any (and whether code after the store still reads it), the shared array and slot, the global thread index
``i``, the bound ``n`` and any other guard terms (``i < n && i % 2 == 0``), the source pointer and the identity.
The guard is read through :func:`~htam_core.source.analysis.guards.positive_terms` (so ``!(i >= n)`` and ``n > i``
are ``i < n``), the load and the store through the kernel's access facts (casts, ``static_cast`` and a casting
macro around the load allowed). A transform that rewrites the load (several elements per thread) replaces exactly
the spanned statements. The idea is the usual normalization of a conditional definition to a guarded value
(if-conversion, as in SSA's phi of two definitions), restricted to straight-line statements of the kernel body.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.builtins import PURE_MATH, plain_name
from htam_core.source.analysis.constants import is_zero_value
from htam_core.source.analysis.facts import Access
from htam_core.source.analysis.forms import KernelView
from htam_core.source.analysis.guards import GuardTerm, positive_terms
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import (
    effect_free,
    statements,
    strip_casts,
    unwrap_parens,
)
from htam_core.source.analysis.uniformity import kernel_uniformity, thread_uniform

__all__ = ["GuardedLoad", "NO_LOAD", "PURE_MATH", "guarded_block_load", "pure_expression"]

#: The one-argument ones of :data:`PURE_MATH` that map zero to zero.
_ZERO_KEEPING = frozenset({"fabsf", "fabs", "abs", "sqrtf", "sqrt", "tanhf", "tanh"})

#: Why a kernel has no guarded block load at all (no statement of the body reads as one).
NO_LOAD = ("no one-element load into a shared slot guarded by the global index (`shared[tid] = (i < n) ? in[i] : "
           "identity;`, or the same through an `if` or a register) before a block tree")

@dataclass(frozen=True)
class GuardedLoad:
    """The one-element-per-thread guarded load into a shared slot, in normal form (see the module docstring).

    Attributes:
        stmts: the consecutive statements of the kernel body that make it, in source order (the last is the store).
        store: the statement that writes the shared slot (``stmts[-1]``).
        array: the shared array (``"sdata"``).
        slot: its index as written (``"tid"``).
        index: the global thread index along x the guard bounds and the load reads at (``"i"``).
        bound: the bound's text (``"n"`` of ``i < n``).
        extra: the guard's other positive terms, each split at the uses of :attr:`index` (``("", " % 2 == 0")`` for
            ``i % 2 == 0``), so :meth:`extra_at` can write them for another index; empty for a plain ``i < n``.
        src: the source pointer as written at the load (``"in"``).
        value: the loaded value as written (casts and casting macros kept: ``"static_cast<acc_t>(in[i])"``) split
            at the uses of :attr:`index`, so :meth:`value_at` can write it for another index.
        identity: the value past the bound as written (``"0.0f"``, ``"T(0)"``).
        load: the global read's access fact.
        write: the shared write's access fact.
        register: the local the value goes through before the store (``"v"``), else ``None``.
        register_type: its declared type as written when the load's statements declare it (``"float"``), else
            ``None`` (the value then keeps the type it is stored with).
        register_read_after: code after the store reads :attr:`register`.
        index_read_after: code after the store reads :attr:`index` (per-element work after the tree).
        stored: the expression of the register stored into the slot (``v * v``), split at the register's uses;
            empty when the register itself is stored.
        identity_kept: past the bound the slot receives :attr:`identity` itself (no :attr:`stored` function, or
            a zero identity that the function keeps zero: ``v * v``, ``fabsf(v)``, ``v * scale``).
    """

    stmts: tuple[Node, ...]
    store: Node
    array: str
    slot: str
    index: str
    bound: str
    extra: tuple[tuple[str, ...], ...]
    src: str
    value: tuple[str, ...]
    identity: str
    load: Access
    write: Access
    register: str | None = None
    register_type: str | None = None
    register_read_after: bool = False
    index_read_after: bool = False
    stored: tuple[str, ...] = ()
    identity_kept: bool = True

    def stored_at(self, value: str) -> str:
        """What the slot receives for the element ``value`` (C text): :attr:`stored` applied to it, else ``value``."""
        return f"({value})".join(self.stored) if self.stored else value

    def value_at(self, name: str) -> str:
        """The loaded value for index ``name`` (a C identifier): ``"in[name]"``, casts as written."""
        return name.join(self.value)

    def extra_at(self, name: str) -> str:
        """The guard's other terms for index ``name`` (a C identifier) joined by ``&&``, ``""`` when none."""
        if len(self.extra) == 1:
            return name.join(self.extra[0])
        return " && ".join(f"({name.join(parts)})" for parts in self.extra)


@dataclass(frozen=True)
class _Def:
    """One statement read as a definition of ``target``: ``target = value;`` (``cond`` None), ``if (cond) target =
    value;`` or ``if (cond) target = value; else target = other;``; a declaration without initializer has no
    value. ``declared``: the statement is a declaration."""

    target: Node
    value: Node | None
    cond: Node | None = None
    other: Node | None = None
    declared: bool = False


@dataclass(frozen=True)
class _Guarded:
    """A guarded value ``cond ? yes : no`` and the statements that define it (``first`` .. ``last`` of the body)."""

    target: Node
    cond: Node
    yes: Node
    no: Node
    first: int
    last: int
    declared: bool


def _assignment(view: KernelView, stmt: Node | None) -> tuple[Node, Node] | None:
    """``(left, right)`` of a statement ``left = right;`` (a plain ``=``; braces around one statement allowed)."""
    inner = statements(stmt)
    if len(inner) != 1 or not syn.is_expression_statement(inner[0]) or not inner[0].named_children:
        return None
    asg = inner[0].named_children[0]
    if not syn.is_assignment(asg) or view.t(asg.child_by_field_name("operator")) != "=":
        return None
    left, right = asg.child_by_field_name("left"), asg.child_by_field_name("right")
    return (left, right) if left is not None and right is not None else None


def _declared(stmt: Node) -> _Def | None:
    """A declaration of one plain name (``float v = 0.0f;``, ``T v;``) as a definition."""
    decls = stmt.children_by_field_name("declarator")
    if len(decls) != 1:
        return None
    d = decls[0]
    if syn.is_identifier(d):
        return _Def(d, None, declared=True)
    name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
    if syn.is_init_declarator(d) and syn.is_identifier(name) and value is not None and name is not None:
        return _Def(name, value, declared=True)
    return None


def _condition(stmt: Node) -> Node | None:
    """The expression of an ``if`` statement's condition."""
    cond = stmt.child_by_field_name("condition")
    if cond is not None and syn.is_condition_clause(cond):
        if cond.child_by_field_name("initializer") is not None:
            return None  # `if (T x = ...; cond)`: a statement of its own before the test
        cond = cond.child_by_field_name("value")
    return cond


def _definition(view: KernelView, stmt: Node) -> _Def | None:
    """``stmt`` read as a :class:`_Def`, else ``None``."""
    if syn.is_declaration(stmt):
        return _declared(stmt)
    if not syn.is_if(stmt):
        found = _assignment(view, stmt)
        return _Def(found[0], found[1]) if found is not None else None
    cond, yes = _condition(stmt), _assignment(view, stmt.child_by_field_name("consequence"))
    if cond is None or yes is None:
        return None
    alt = stmt.child_by_field_name("alternative")
    if alt is None:
        return _Def(yes[0], yes[1], cond)
    alt_body = alt.named_children[-1] if syn.is_else_clause(alt) and alt.named_children else alt
    no = _assignment(view, alt_body)
    if no is None or view.t(no[0]) != view.t(yes[0]):
        return None
    return _Def(yes[0], yes[1], cond, no[1])


def _guarded_at(view: KernelView, stmts: list[Node], k: int) -> _Guarded | None:
    """The guarded value defined from statement ``k`` on: a conditional, an if/else, or a plain value (the
    identity) followed by ``if (cond) target = value;``."""
    d = _definition(view, stmts[k])
    if d is None:
        return None
    if d.cond is not None and d.other is not None:
        return _Guarded(d.target, d.cond, d.value, d.other, k, k, d.declared)  # type: ignore[arg-type]
    value = unwrap_parens(d.value) if d.value is not None else None
    if d.cond is None and value is not None and syn.is_conditional(value):
        cond, yes, no = (value.child_by_field_name(f) for f in ("condition", "consequence", "alternative"))
        if cond is not None and yes is not None and no is not None:
            return _Guarded(d.target, cond, yes, no, k, k, d.declared)
    if d.cond is not None or k + 1 >= len(stmts):
        return None
    nxt = _definition(view, stmts[k + 1])
    if (nxt is None or nxt.cond is None or nxt.other is not None or nxt.declared or d.value is None
            or view.t(nxt.target) != view.t(d.target)):
        return None
    return _Guarded(d.target, nxt.cond, nxt.value, d.value, k, k + 1, d.declared)  # type: ignore[arg-type]


def _access(view: KernelView, node: Node) -> Access | None:
    """The access fact written exactly at ``node`` (file bytes), else ``None``."""
    span = (view.file_byte(node), node.end_byte + view.base)
    return next((a for a in view.facts.accesses if a.span == span), None)


@dataclass(frozen=True)
class _Split:
    """A guarded value's global read ``acc`` at subscript ``node`` (``value``: with its casts, as written), the
    other branch ``ident`` and the positive ``terms`` under which the read is the value."""

    acc: Access
    node: Node
    value: Node
    ident: Node
    terms: list[GuardTerm]


def pure_expression(view: KernelView, node: Node) -> bool:
    """``node`` (an expression of ``view``'s kernel) writes nothing and calls only :data:`PURE_MATH`, casts
    (``static_cast``, ``float(x)``, and ``T(x)`` of a type ``T`` the kernel body names, a template parameter for
    instance), calls :func:`~htam_core.source.analysis.syntax.effect_free` accepts, or pure functions of the unit
    (:attr:`~htam_core.source.analysis.facts.KernelFacts.pure_calls`: ``above(x[i], thr)`` with ``__device__ bool
    above(float v, float t) { return v > t; }``). Raises nothing."""
    types = {view.t(t) for t in syn.type_names(view.body)}
    pure = set(view.facts.pure_calls)
    for n in syn.walk(node):
        if syn.is_write(n):
            return False
        fn = view.t(n.child_by_field_name("function")) if syn.is_call(n) else None
        args = n.child_by_field_name("arguments") if fn is not None else None
        cast = fn in types and args is not None and len(args.named_children) == 1
        helper = fn is not None and plain_name(fn) in pure
        if fn is not None and fn not in PURE_MATH and not cast and not helper and not effect_free(n):
            return False
    return True


def _per_element(view: KernelView, node: Node, skip: list[Node]) -> bool:
    """``node`` is a per-element expression: :func:`_pure`, and every name it reads outside the nodes of ``skip``
    (the loads, the register) and the called functions is the same in every thread (:func:`_uniform`)."""
    spans = [(k.start_byte, k.end_byte) for k in skip]
    for n in syn.identifiers(node):
        inside = any(a <= n.start_byte < b for a, b in spans)
        called = n.parent is not None and syn.is_call(n.parent) and n.parent.child_by_field_name("function") == n
        if not inside and not called and not _uniform(view, n):
            return False
    return pure_expression(view, node)


def _reads_in(view: KernelView, load: Node) -> tuple[Access, Node] | None:
    """The first global read of a per-element expression ``load`` (``in[i] * in[i]``, ``a[i] * b[i]``) and its
    subscript, when all its global reads are at the same index and it is :func:`_per_element`; else ``None``."""
    found = [(a, n) for n in syn.subscripts(load) if (a := _access(view, n)) is not None and a.space == "global"]
    if not found or any(a.kind != "read" or a.index_text != found[0][0].index_text for a, _ in found):
        return None
    return found[0] if _per_element(view, load, [n for _, n in found]) else None


def _split_load(view: KernelView, g: _Guarded) -> _Split | None:
    """The :class:`_Split` of a guarded value with a global read in one branch (the condition negated when the
    read is in the ``else`` branch): the read itself (casts allowed) or a per-element expression of reads at
    one index (:func:`_reads_in`)."""
    for load, ident, exit_ in ((g.yes, g.no, False), (g.no, g.yes, True)):
        node = strip_casts(load)
        acc = _access(view, node) if syn.is_subscript(node) else None
        if acc is None and not syn.is_subscript(node) and (found := _reads_in(view, load)) is not None:
            acc, node = found
        if acc is not None and acc.space == "global" and acc.kind == "read":
            return _Split(acc, node, unwrap_parens(load), ident, positive_terms(g.cond, view.src, exit_))
    return _split_in_guard(view, g)


def _split_in_guard(view: KernelView, g: _Guarded) -> _Split | None:
    """The :class:`_Split` of a guarded value whose element is read in the guard, not in a branch: ``(i < n &&
    x[i] > thr) ? 1u : 0u`` is ``(i < n) ? (x[i] > thr ? 1u : 0u) : 0u``, a count or selection where the guard's
    term reading ``x[i]`` (a per-element test, :func:`_reads_in`) becomes an extra term and the chosen branch a
    value that is the same for every element (``1u``, ``w``). ``None`` when no guard term reads an element or the
    branch is not such a value."""
    for value, ident, exit_ in ((g.yes, g.no, False), (g.no, g.yes, True)):
        if any(_access(view, n) is not None for n in syn.subscripts(value)) or not _per_element(view, value, []):
            continue
        terms = positive_terms(g.cond, view.src, exit_)
        for term in terms:
            found = _reads_in(view, unwrap_parens(term.node))
            if found is not None and any(t.var == found[0].index_text and t.bound is not None for t in terms):
                return _Split(found[0], found[1], unwrap_parens(value), ident, terms)
    return None


def _keeps_zero(view: KernelView, node: Node, name: str) -> bool:
    """``node`` is zero whenever the name ``name`` is: ``name`` itself, a product or quotient with a factor that
    is, a sum or difference of such, a negation, a cast, or a :data:`_ZERO_KEEPING` call of such."""
    node = strip_casts(node)
    if syn.is_identifier(node):
        return view.t(node) == name
    if syn.is_unary(node) and view.t(node.child_by_field_name("operator")) == "-":
        return _keeps_zero(view, node.child_by_field_name("argument"), name)
    if syn.is_call(node):
        args = node.child_by_field_name("arguments").named_children
        return (view.t(node.child_by_field_name("function")) in _ZERO_KEEPING and len(args) == 1
                and _keeps_zero(view, args[0], name))
    if not syn.is_binary(node):
        return False
    op, left, right = (node.child_by_field_name(f) for f in ("operator", "left", "right"))
    zl, zr = _keeps_zero(view, left, name), _keeps_zero(view, right, name)
    return {"*": zl or zr, "/": zl and not syn.references(right, view.src, name),
            "+": zl and zr, "-": zl and zr}.get(view.t(op), False)


def _uniform(view: KernelView, node: Node) -> bool:
    """``node`` has the same value in every thread whatever the grid (no ``threadIdx``/``blockIdx``/``gridDim``,
    directly or through a local: :func:`~htam_core.source.analysis.uniformity.thread_uniform` over the grid with
    ``any_grid``), so it is the same for every element a thread covers once it covers several."""
    return thread_uniform(kernel_uniformity(view), node, scope="grid", any_grid=True)


def _pieces(view: KernelView, node: Node, index: str) -> list[str]:
    """The text of ``node`` split at its uses of the name ``index``."""
    parts, at = [], node.start_byte
    for u in syn.references(node, view.src, index):
        parts.append(view.src[at:u.start_byte].decode())
        at = u.end_byte
    parts.append(view.src[at:node.end_byte].decode())
    return parts


def _extra_parts(view: KernelView, term: GuardTerm, index: str) -> tuple[str, ...] | str:
    """The positive text of an extra guard term split at the uses of ``index``, or why it cannot follow the index
    to the other elements of a thread (an effect, or a value that differs between threads)."""
    node = unwrap_parens(term.node)
    if not pure_expression(view, node):
        return f"the guard term `{term.text}` is not side-effect free"
    if not _per_element(view, node, syn.references(node, view.src, index)):
        return f"the guard term `{term.text}` reads a value that differs between threads"
    if term.compare is not None:
        left, op, right = term.compare
        a, b = _pieces(view, left, index), _pieces(view, right, index)
        return tuple(a[:-1] + [f"{a[-1]} {op} {b[0]}"] + b[1:])
    parts = _pieces(view, node, index)
    if term.text != view.t(node):  # negated: `!(X)`
        parts[0] = "!(" + parts[0]
        parts[-1] = parts[-1] + ")"
    return tuple(parts)


def _stored(view: KernelView, value: Node, register: str) -> Node | None:
    """The per-element function of ``register`` that a store writes (``v * v``, ``fabsf(v)``), ``None`` when it
    stores the register itself or something else (another per-thread value, an effect)."""
    uses = syn.references(value, view.src, register)
    if not uses or view.t(unwrap_parens(value)) == register or not _per_element(view, value, uses):
        return None
    return value


def _store_of(view: KernelView, stmts: list[Node], g: _Guarded
              ) -> tuple[int, Access, str | None, Node | None] | None:
    """``(statement number, shared write, register, stored function)`` of the store of guarded value ``g``: the
    definition itself when its target is a shared slot, else the next statement ``array[slot] = register;`` or
    ``array[slot] = f(register);`` (the function's node then last)."""
    target = _access(view, g.target) if syn.is_subscript(g.target) else None
    if target is not None:
        return (g.last, target, None, None) if target.space == "shared" and target.kind == "write" else None
    if not syn.is_identifier(g.target) or g.last + 1 >= len(stmts):
        return None
    found = _assignment(view, stmts[g.last + 1])
    if found is None or not syn.is_subscript(found[0]):
        return None
    reg = view.t(g.target)
    fn = None if view.t(unwrap_parens(found[1])) == reg else _stored(view, found[1], reg)
    if view.t(unwrap_parens(found[1])) != reg and fn is None:
        return None
    write = _access(view, found[0])
    if write is None or write.space != "shared" or write.kind != "write":
        return None
    return g.last + 1, write, reg, fn


def _bare_declaration(view: KernelView, stmt: Node, name: str) -> bool:
    """``stmt`` declares the one name ``name`` without a value (``float v;``)."""
    d = _declared(stmt) if syn.is_declaration(stmt) else None
    return d is not None and d.value is None and view.t(d.target) == name


def _global_x(view: KernelView) -> set[str]:
    """The kernel's global thread indices along x (``i = blockIdx.x * blockDim.x + threadIdx.x``)."""
    return {t.name for t in view.facts.thread_indices if t.is_global and t.dims == ("x",)}


def _index_problem(view: KernelView, acc: Access, var: str) -> str | None:
    """Why the load ``acc`` guarded by ``var < bound`` is not ``src[var]`` at the global thread index along x."""
    if var not in _global_x(view):
        return f"the load's index {var} is not the global thread index along x"
    if acc.index_text != var or acc.stride("threadIdx.x") != 1 or acc.stride("blockIdx.x") in (None, 0):
        return f"the load `{acc.shown}` is not {acc.pointer}[{var}]"
    return None


def _guard_problem(view: KernelView, sp: _Split) -> tuple[str, Node, list[tuple[str, ...]]] | str:
    """``(index, bound, other terms split at the index)`` of a guarded load's guard, or why the load is not at
    the global thread index along x or its guard differs between threads."""
    acc = sp.acc
    bounds = sorted((t for t in sp.terms if t.var is not None and t.bound is not None),
                    key=lambda t: (t.var != acc.index_text, t.var not in _global_x(view)))
    if not bounds:
        return f"the load `{view.t(sp.node)}` is not guarded by `{acc.index_text} < bound`"
    var, bound = bounds[0].var, bounds[0].bound
    assert var is not None and bound is not None
    why = _index_problem(view, acc, var)
    if why is None and (syn.references(bound, view.src, var) or not _uniform(view, bound)):
        why = f"the bound `{view.t(bound)}` of the load differs between threads"
    extra = [_extra_parts(view, t, var) for t in sp.terms if t is not bounds[0]]
    why = why or next((e for e in extra if isinstance(e, str)), None)
    return why if why is not None else (var, bound, [e for e in extra if not isinstance(e, str)])


def _load_at(view: KernelView, stmts: list[Node], k: int) -> GuardedLoad | str | None:
    """The :class:`GuardedLoad` whose statements start at ``stmts[k]``, why the guarded load there is not one,
    or ``None`` when no guarded load into a shared slot starts there."""
    g = _guarded_at(view, stmts, k)
    sp = _split_load(view, g) if g is not None else None
    store = _store_of(view, stmts, g) if g is not None and sp is not None else None
    if g is None or sp is None or store is None:
        return None
    guard = _guard_problem(view, sp)
    if isinstance(guard, str):
        return guard
    var, bound, extra = guard
    last, write, register, fn = store
    after = {view.t(r) for s in stmts[last + 1:] for r in syn.identifiers(s)}
    if register and k > 0 and not g.declared and _bare_declaration(view, stmts[k - 1], register):
        k -= 1  # `float v;` right before: the register's declaration belongs to the load
    rtype = view.t(syn.declaration_type(stmts[k])) if register and syn.is_declaration(stmts[k]) else None
    return GuardedLoad(tuple(stmts[k:last + 1]), stmts[last], write.pointer, write.index_text, var, view.t(bound),
                       tuple(extra), view.t(sp.node.child_by_field_name("argument")),
                       tuple(_pieces(view, sp.value, var)), view.t(sp.ident), sp.acc, write, register, rtype,
                       register in after, var in after, *_stored_parts(view, fn, register, view.t(sp.ident)))


def _stored_parts(view: KernelView, fn: Node | None, register: str | None, identity: str
                  ) -> tuple[tuple[str, ...], bool]:
    """``(GuardedLoad.stored, GuardedLoad.identity_kept)`` of the stored function ``fn`` of ``register``."""
    if fn is None or register is None:
        return (), True
    return tuple(_pieces(view, fn, register)), is_zero_value(identity) and _keeps_zero(view, fn, register)


def guarded_block_load(view: KernelView) -> GuardedLoad | str:
    """The kernel's one-element-per-thread guarded load into a shared slot (:class:`GuardedLoad`, any spelling
    of the module docstring), read from the statements of the kernel body in order, or why there is none.

    Args:
        view: the kernel's parsed unit with its facts (:class:`~htam_core.source.analysis.forms.KernelView`).

    Returns:
        the first guarded load of the body, or one sentence: the guarded load found is not at the global thread
        index along x, its bound or another guard term differs between threads, or there is none
        (:data:`NO_LOAD`).
    """
    stmts = statements(view.body)
    why: str | None = None
    for k in range(len(stmts)):
        found = _load_at(view, stmts, k)
        if isinstance(found, GuardedLoad):
            return found
        why = why or found
    return why or NO_LOAD
