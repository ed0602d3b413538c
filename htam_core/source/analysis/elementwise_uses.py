"""How the guarded code of a one-element-per-thread kernel (:class:`~htam_core.source.analysis.forms.Elementwise`)
uses its index and its pointer parameters: the facts a vectorizing rewrite needs to give one thread ``V``
consecutive elements and run the guarded code once per lane with the index ``i`` replaced by ``base + k``.

* A pointer read and written only as ``P[i]`` is *vectorized*: one vector load before the lanes, one vector store
  after them, the lanes reading and writing its element.
* A pointer the kernel never writes (``PointerFacts.mode == "read"``) may also be read at other addresses
  (``scale[i / cols]``, ``wte[tok * C + c]``, ``x[i - 1]``): those reads are *gathers*, left as written, so each
  lane reads what its element's thread read.
* Every other use of ``i`` (``i / cols``, ``i % C``, ``i == 0``) is an *index use*: a lane evaluates it with its
  own element's index, so it computes what that element's thread computed.

Refused, because a thread running the lanes one after another would not compute what the threads did side by side:

* a pointer written at an address other than ``P[i]`` (``*(out + off) = v``, ``hist[r] += 1``, ``atomicAdd``):
  two lanes may meet at one address, and a vectorized pointer's lane would read its vector's stale copy;
* a pointer written as ``P[i]`` and also used at another address (``y[i] = y[i + 1]``): a lane would read the
  copy in the vector loaded before the lanes, not memory;
* a variable declared outside the guarded code and written inside it (``acc += x[i]`` with ``acc`` declared before
  the guard, a parameter ``n`` decremented): each thread had its own copy for one element, the lanes would share one.

Not given a per-lane form either: guarded code with a loop that uses the index beyond ``P[i]`` (a thread per row,
``for (j ...) s += x[row * n + j]``): its loop is the one to vectorize (the loop form), and lanes would each run it.

Barriers, warp intrinsics, ``blockIdx``/``threadIdx``, early returns and writes to ``i`` itself are refused before,
by :func:`~htam_core.source.analysis.forms.elementwise`.

Idea source: NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized Memory Access"
(Luitjens, 2013): one thread moves a vector of consecutive elements; the per-lane index is the textbook
thread-coarsening substitution ``i -> base + k`` (Kirk & Hwu, "Programming Massively Parallel Processors", ch. 6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import SIZEOF
from htam_core.source.analysis.facts import Access, KernelFacts, sym
from htam_core.source.analysis.forms import Elementwise, KernelView, is_lvalue
from htam_core.source.analysis.nodes import Node


@dataclass
class ElementwiseUses:
    """The uses of the index and the pointers in the guarded code of an elementwise kernel.

    Attributes:
        reads: the vectorized pointers read (as ``P[i]``).
        writes: the vectorized pointers written (as ``P[i]``).
        cond_writes: the vectorized pointers written only under a condition of their own (their vector is loaded
            first, so a lane that does not write keeps memory's value).
        subs: each ``P[i]`` subscript of a vectorized pointer with the pointer's name, to become the lane's
            element.
        gathers: the pointers read at other addresses, never written by the kernel; their reads stay as written.
        index_uses: the uses of the index other than the ``P[i]`` of ``subs``, each the whole use around it
            (:func:`~htam_core.source.analysis.nodes.use_site`: ``r = i / cols``), in source order: a lane evaluates
            each with its own element's index.
    """

    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    cond_writes: set[str] = field(default_factory=set)
    subs: list[tuple[Node, str]] = field(default_factory=list)
    gathers: list[str] = field(default_factory=list)
    index_uses: list[Node] = field(default_factory=list)

    @property
    def vectorized(self) -> list[str]:
        """The vectorized pointers, sorted."""
        return sorted(self.reads | self.writes)


def _at_index(unit: KernelView, ref: Node, index: str) -> Node | None:
    """The subscript ``P[index]`` whose array is the identifier ``ref``, else ``None``."""
    sub = ref.parent
    if sub is None or not syn.is_subscript(sub) or sub.child_by_field_name("argument") != ref:
        return None
    return sub if unit.t(sub.child_by_field_name("indices")).strip("[] ") == index else None


def _pointer_refs(unit: KernelView, ew: Elementwise, names: list[str]) -> dict[str, list[Node]]:
    """Every reference to each pointer of ``names`` in the guarded code, in source order."""
    refs: dict[str, list[Node]] = {n: [] for n in names}
    for s in ew.stmts:
        for ref in syn.identifiers(s):
            if unit.t(ref) in refs:
                refs[unit.t(ref)].append(ref)
    return refs


def _read_only(unit: KernelView, name: str) -> bool:
    """The kernel provably never writes through pointer ``name`` (the analysis layer's pointer facts)."""
    pf = unit.facts.pointer(name)
    return pf is not None and pf.mode in ("read", "unused")


def same_index(a: sympy.Expr, b: sympy.Expr) -> bool:
    """``a == b`` for C integers: each ``mod(x, m)`` read as ``x - m * div(x, m)`` (C's ``x % m == x - m * (x / m)``
    for any signs, ``m != 0``), each ``div`` kept as an opaque term, and the difference expanded to 0. So ``b * T *
    C + t * C + c`` with ``b = i / C / T``, ``t = i / C % T``, ``c = i % C`` is ``i``."""
    mod, div = sympy.Function("mod"), sympy.Function("div")
    diff = (a - b).replace(mod, lambda x, m: x - m * div(x, m))
    return sympy.expand(diff) == 0


def element_writes(facts: KernelFacts) -> tuple[Access, ...]:
    """The global stores a one-element-per-thread kernel's 16-byte vector form widens: in a kernel without loops,
    scalar stores to a pointee narrower than 16 bytes (``SIZEOF``) at the thread's own element along x, either the
    1-D global thread index however split and rejoined (``out[idx]``, ``out[b*T*C + t*C + c]`` with ``b, t, c``
    split from ``idx``: :func:`same_index`), or, in a 2-D or 3-D grid, an element that moves by 1 with the global x
    index (``out[((size_t)c * Ho + r) * Wo + q]`` with ``q = blockIdx.x * blockDim.x + threadIdx.x`` and ``r``,
    ``c`` from y and z: the column the row form gives 16 bytes of per thread,
    :mod:`~htam_core.source.analysis.rows2d`).

    None when the data comes only from loads strided along ``threadIdx.x`` (``rgba[4 * i + k]``, a pooling window
    ``in[2 * q + k]`` in any spelling: ``p[1]``, ``*(p + 1)``, ``__ldg(p + 1)``): those loads would stay scalar,
    and widening the stores alone moves none of the traffic that matters, so the vector forms refuse it.

    Args:
        facts: the kernel's analysis facts.

    Returns:
        The stores, in source order; empty for a kernel with loops (their stores are the loop forms' business).

    Idea source: NVIDIA's "CUDA Pro Tip: Increase Performance with Vectorized Memory Access" (Luitjens, 2013): the
    gain is in the loads and stores that move the data, 16 bytes per lane."""
    if facts.loops:
        return ()
    reads = [a for a in facts.global_accesses() if a.kind != "write"]
    if any(a.pattern("x") == "strided" for a in reads) and not any(a.pattern("x") == "contiguous" for a in reads):
        return ()
    gid = sym("blockIdx.x") * sym("blockDim.x") + sym("threadIdx.x")
    out: list[Access] = []
    for a in facts.global_accesses():
        pf = facts.pointer(a.pointer)
        size = SIZEOF.get(pf.value_type or "") if pf is not None else None
        if a.kind == "read" or a.vector or a.index is None or size is None or size >= 16:
            continue
        if same_index(a.index, gid) or _column_store(a):
            out.append(a)
    return tuple(out)


def _column_store(a: Access) -> bool:
    """``a`` moves by 1 with the global x index (``blockIdx.x * blockDim.x + threadIdx.x``) and its element also
    depends on a y or z index: a store of a 2-D/3-D grid's row at the thread's column."""
    names = {s.name for s in a.index.free_symbols} if a.index is not None else set()
    other = any(n.endswith((".y", ".z")) and n.startswith(("threadIdx.", "blockIdx.")) for n in names)
    return other and a.stride("threadIdx.x") == 1 and a.stride("blockIdx.x") == sym("blockDim.x")


def _element_index(unit: KernelView, ew: Elementwise) -> sympy.Expr | None:
    """The index's value over the thread and block indices (the analysis layer's thread-index fact of ``ew.decl``)."""
    span = (unit.file_byte(ew.decl), ew.decl.end_byte + unit.base)
    return next((t.expr for t in unit.facts.thread_indices if t.name == ew.name and t.span == span), None)


def _node_at(unit: KernelView, ew: Elementwise, span: tuple[int, int]) -> Node | None:
    """The outermost node of the guarded code whose file bytes are ``span``."""
    for s in ew.stmts:
        for n in syn.walk(s):
            if unit.file_byte(n) == span[0] and n.end_byte + unit.base == span[1]:
                return n
    return None


def _accesses_at_index(unit: KernelView, ew: Elementwise, name: str) -> list[Node] | None:
    """Every access of pointer ``name`` as the node that makes it, when the analysis layer sees them all (the
    pointer does not escape) and each addresses the element of the index however it is spelled (``*(out + i)``,
    ``out_btc`` with ``float *out_btc = out + b * T * C + t * C + c``), else ``None``."""
    pf, want = unit.facts.pointer(name), _element_index(unit, ew)
    if pf is None or pf.mode == "unknown" or want is None:
        return None
    nodes: list[Node] = []
    for a in {a.span: a for a in (*pf.reads, *pf.writes)}.values():
        node = _node_at(unit, ew, a.span)
        if node is None or a.vector or a.macro or a.index is None or not same_index(a.index, want):
            return None
        nodes.append(node)
    return nodes


def _classify(unit: KernelView, ew: Elementwise, name: str, refs: list[Node], out: ElementwiseUses) -> str | None:
    """File pointer ``name``'s references ``refs`` into ``out`` (vectorized ``P[i]``, gather), or say why its
    uses have no per-lane form."""
    at = [(r, _at_index(unit, r, ew.name)) for r in refs]
    other = [r for r, sub in at if sub is None]
    spelled = _accesses_at_index(unit, ew, name) if other else None
    if spelled:  # every access is the index's element, spelled through pointer arithmetic or its parts
        at, other = [(node, node) for node in spelled], []
    if other and not _read_only(unit, name):
        use = syn.use_site(other[0])
        where = f"`{' '.join(unit.t(use).split())}`"
        if len(other) == len(refs):
            return (f"{name} is written or escapes at an address other than {name}[{ew.name}] ({where}): lanes run "
                    "one after another could meet at one address")
        return (f"{name} is written as {name}[{ew.name}] and also used at another address ({where}): a lane would "
                "read its vector's copy, not memory")
    if other:
        out.gathers.append(name)
    top = set(ew.stmts)
    for _ref, sub in at:
        if sub is not None:
            out.subs.append((sub, name))
            _file_access(unit, ew, sub, name, top, out)
    return None


def _file_access(unit: KernelView, ew: Elementwise, sub: Node, name: str, top: set[Node],
                 out: ElementwiseUses) -> None:
    """Record the ``P[i]`` access ``sub`` as a read, a write, or both, and a write under a condition of its own."""
    parent = sub.parent
    if not is_lvalue(sub):
        out.reads.add(name)
        return
    out.writes.add(name)
    stmt = parent.parent if parent is not None else None
    compound = parent is not None and unit.t(parent.child_by_field_name("operator")) != "="
    if compound or syn.is_update(parent):
        out.reads.add(name)
    if stmt is None or not syn.is_expression_statement(stmt) or not (
        stmt in top or (stmt.parent is not None and stmt.parent in top and syn.is_block(stmt.parent)
                        and ew.form == "if")
    ):
        out.cond_writes.add(name)


def _declared_names(unit: KernelView, stmts: list[Node]) -> set[str]:
    """The names declared in ``stmts`` (at any depth): each declarator's first name, through ``*p``, ``a[N]``,
    ``&r`` and ``x = v``."""
    out: set[str] = set()
    for s in stmts:
        for d in syn.declarations(s):
            for decl in d.children_by_field_name("declarator"):
                target = decl.child_by_field_name("declarator") if syn.is_init_declarator(decl) else decl
                names = syn.identifiers(target) if target is not None else []
                if names:
                    out.add(unit.t(names[0]))
    return out


def _outer_writes(unit: KernelView, ew: Elementwise) -> str | None:
    """Why the guarded code writes a variable declared outside it (the lanes of one thread would share it)."""
    declared = _declared_names(unit, ew.stmts)
    for s in ew.stmts:
        for ref in syn.identifiers(s):
            name = unit.t(ref)
            if name not in declared and name != ew.name and is_lvalue(ref):
                return (f"the guarded code writes {name}, declared outside it: each thread had its own for one "
                        "element; one thread's lanes would share it")
    return None


def elementwise_uses(unit: KernelView, ew: Elementwise, names: list[str]) -> ElementwiseUses | str:
    """The uses of the index and of the pointer parameters ``names`` in the guarded code of ``ew``, or why they
    have no per-lane form (the cases in this module's docstring).

    Args:
        unit: the kernel's text and facts.
        ew: its elementwise shape (:func:`~htam_core.source.analysis.forms.elementwise`).
        names: the pointer parameters the kernel uses.

    Returns:
        :class:`ElementwiseUses`, or a one-line reason.
    """
    out = ElementwiseUses()
    for name, refs in _pointer_refs(unit, ew, names).items():
        why = _classify(unit, ew, name, refs, out)
        if why:
            return why
    why = _outer_writes(unit, ew)
    if why:
        return why
    spans = [(sub.start_byte, sub.end_byte) for sub, _ in out.subs]
    for s in ew.stmts:
        for ref in syn.identifiers(s):
            if unit.t(ref) == ew.name and not any(a <= ref.start_byte and ref.end_byte <= b for a, b in spans):
                out.index_uses.append(syn.use_site(ref))
    if out.index_uses and any(syn.loops(s) for s in ew.stmts):
        return (f"{ew.name} is used other than as the index of a pointer (`{' '.join(unit.t(out.index_uses[0]).split())}`) "
                "in code with a loop: a thread per row or per item whose loop is the one to vectorize, not its "
                f"{ew.name}")
    return out
