"""One vector load or store per group of ``S`` consecutive elements in a loop that walks such groups (the group
half of ``cuda.vectorize_float4``).

A loop whose step ``p`` reads and writes the elements ``base + S * p + k``, ``0 <= k < S`` (a RoPE pair loop:
``x[2 * p]``, ``x[2 * p + 1]``; the analysis layer's :meth:`KernelFacts.element_groups`), keeps its header and
body, but each group moves as one ``S``-element vector (``float2`` for two floats, ``float4`` for four, an
``alignas(S * sizeof(T))`` struct for other element types)::

    if (((unsigned long long)&x[2 * (0)] | (unsigned long long)&o[2 * (0)]) & 7ull) == 0ull) {   // first groups
        for (int p = 0; p < HS / 2; p++) {
            const float2 htam_g0 = *reinterpret_cast<const float2 *>(&x[2 * p]);
            float2 htam_g1;
            { float x0 = htam_g0.x, x1 = htam_g0.y; htam_g1.x = ...; htam_g1.y = ...; }
            *reinterpret_cast<float2 *>(&o[2 * p]) = htam_g1;
        }
    } else
        for (int p = 0; p < HS / 2; p++) { ...the loop as written... }

Every step still runs once per group, so the loop's start, step and bound, and the loop variable's other uses,
stay as written. The group's address moves by ``S`` elements a step, so the address of a thread's first group
(the loop variable replaced by its start) decides the alignment of all of them; when one is not aligned the loop
runs as written. Reads and writes of a group are the whole group (the analysis fact requires it), so the vector
copy touches nothing the loop does not. Refused: ``S * sizeof(T)`` that is no power of two up to 16 bytes or of
unknown size, an access through its address (``__ldg(&x[2 * p])``, ``atomicAdd``), under a condition in the loop,
through a macro, a store that does not move with the loop, a nested loop, ``break``/``continue``, a group address
that reads a value set in the loop.

Idea source: NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized Memory Access"
(Luitjens, 2013); the paired ``float2`` loads of rotary-embedding kernels.
"""

from __future__ import annotations

from htam_core.source.analysis import ElementGroup, LoopFact
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import SIZEOF
from htam_core.source.analysis.nodes import Node
from htam_core.transforms._cuda import CudaUnit
from htam_core.transforms.base import TextEdit

_FLOAT_VECTORS = {2: "float2", 4: "float4"}


def _vector_type(unit: CudaUnit, g: ElementGroup) -> tuple[str, str, str] | str:
    """``(element type, vector type, lane access prefix)`` of group ``g``: ``(E, "float2", "")`` (lanes ``.x .y``)
    for floats, ``("T", "htam_gN_t", ".v")`` (a struct) otherwise; or why there is none."""
    pf = unit.facts.pointer(g.pointer)
    words = [w for w in ((pf.element_type or pf.value_type or "") if pf else "").split() if w not in
             ("const", "volatile")]
    elem = " ".join(words)
    if pf is not None and pf.float_elements and g.width in _FLOAT_VECTORS:
        return elem, _FLOAT_VECTORS[g.width], ""
    size = SIZEOF.get(elem) if pf is None or not pf.templated else None
    nbytes = size * g.width if size else 0
    if not nbytes or nbytes > 16 or nbytes & (nbytes - 1):
        return (f"a group of {g.width} `{elem or '?'}` elements of {g.pointer} is not a vector of 2, 4, 8 or 16 "
                "bytes of a known size")
    return elem, "", ".v"


def _address_taken(unit: CudaUnit, sub: Node) -> bool:
    """True when subscript ``sub`` is the operand of ``&`` (``__ldg(&x[2 * p])``, ``atomicAdd(&x[i], v)``)."""
    p = sub.parent
    while p is not None and syn.is_parenthesized(p):
        p = p.parent
    return p is not None and syn.is_pointer_expression(p) and unit.t(p).startswith("&")


def _check(unit: CudaUnit, fact: LoopFact, node: Node, groups: tuple[ElementGroup, ...]) -> str | None:
    """Why the group loop ``fact`` cannot move its groups as vectors, or ``None``."""
    body = node.child_by_field_name("body")
    if unit.facts.children(fact):
        return f"the loop on line {fact.line} has a nested loop"
    if syn.jumps(body):
        return f"the loop on line {fact.line} has `{unit.t(syn.jumps(body)[0])}`"
    if fact.var is None or unit.assigned_in(body, fact.var):
        return f"the loop body changes {fact.var}"
    grouped = {id(a) for g in groups for _k, a in g.accesses}
    for a in unit.facts.accesses_in(fact):
        if a.space == "global" and id(a) not in grouped and a.kind != "read":
            return f"the store `{a.shown}` does not move with {fact.var}"
    for g in groups:
        for _k, a in g.accesses:
            sub = unit.node_at(a.span, syn.SUBSCRIPT)
            if sub is None or a.macro or _address_taken(unit, sub):
                return f"`{a.shown}` is not a plain subscript"
            if fact.id in a.guarded:
                return f"`{a.shown}` on line {a.line} runs under a condition inside the loop"
            for n in syn.identifiers(sub):
                if unit.t(n) != fact.var and (unit.assigned_in(body, unit.t(n)) or _declared(unit, body, unit.t(n))):
                    return f"the group address `{unit.t(sub)}` reads {unit.t(n)}, which is set inside the loop"
    return None


def _declared(unit: CudaUnit, scope: Node, name: str) -> bool:
    """True when a declaration inside ``scope`` declares ``name``."""
    for decl in syn.declarations(scope):
        for d in decl.children_by_field_name("declarator"):
            n = d.child_by_field_name("declarator") if syn.is_init_declarator(d) else d
            while n is not None and syn.is_wrapping_declarator(n):
                n = n.child_by_field_name("declarator")
            if n is not None and syn.is_identifier(n) and unit.t(n) == name:
                return True
    return False


def _text(unit: CudaUnit, node: Node, renames: list[tuple[Node, str]]) -> str:
    """The text of ``node`` with each ``(inner node, text)`` of ``renames`` replaced (line breaks kept)."""
    out = bytearray(unit.src[node.start_byte:node.end_byte])
    for n, new in sorted(renames, key=lambda x: -x[0].start_byte):
        out[n.start_byte - node.start_byte:n.end_byte - node.start_byte] = new.encode()
    return out.decode()


def _start_text(unit: CudaUnit, node: Node) -> str:
    """The loop variable's start as written (``0`` of ``int p = 0`` or of ``p = 0``), else ``""``."""
    init = node.child_by_field_name("initializer")
    if init is not None and syn.is_declaration(init):
        ds = [d for d in init.named_children if syn.is_init_declarator(d)]
        return unit.t(ds[0].child_by_field_name("value")) if len(ds) == 1 else ""
    if init is not None and syn.is_assignment(init) and unit.t(init.child_by_field_name("operator")) == "=":
        return unit.t(init.child_by_field_name("right"))
    return ""


def rewrite_groups(unit: CudaUnit, fact: LoopFact) -> TextEdit | str:
    """The edit moving each element group of loop ``fact`` (:meth:`KernelFacts.element_groups`) as one vector,
    with an alignment check on each thread's first groups and the loop as written as the fallback; or why not."""
    groups = unit.facts.element_groups(fact)
    node = unit.node_at(fact.span, syn.FOR_LOOP)
    if not groups or node is None or fact.kind != "for":
        return f"the loop on line {fact.line} walks no groups of consecutive elements"
    why = _check(unit, fact, node, groups)
    if why is not None:
        return why
    if not _start_text(unit, node):
        return f"the loop on line {fact.line} does not start its one variable at a value as written"
    types = [_vector_type(unit, g) for g in groups]
    bad = next((t for t in types if isinstance(t, str)), None)
    if bad is not None:
        return bad  # type: ignore[return-value]
    return _edit(unit, fact, node, groups, types)  # type: ignore[arg-type]


def _edit(unit: CudaUnit, fact: LoopFact, node: Node, groups: tuple[ElementGroup, ...],
          types: list[tuple[str, str, str]]) -> TextEdit:
    """The text of :func:`rewrite_groups` for checked ``groups`` and their vector ``types``."""
    body = node.child_by_field_name("body")
    start = _start_text(unit, node)
    decls, stores, renames, checks = [], [], [], []
    for i, (g, (elem, vec, lane)) in enumerate(zip(groups, types, strict=True)):
        name = f"htam_g{i}"
        vtype = vec or f"{name}_t"
        first = unit.node_at(next(a for k, a in g.accesses if k == 0).span, syn.SUBSCRIPT)
        at_start = _text(unit, first, [(n, f"({start})") for n in syn.identifiers(first) if unit.t(n) == fact.var])
        checks.append(f"reinterpret_cast<unsigned long long>(&{' '.join(at_start.split())})")
        addr = " ".join(unit.t(first).split())
        if not vec:
            decls.append(f"struct alignas({g.width} * sizeof({elem})) {vtype} {{ {elem} v[{g.width}]; }};")
        if any(a.kind != "write" for _k, a in g.accesses):
            decls.append(f"{'const ' if all(a.kind == 'read' for _k, a in g.accesses) else ''}{vtype} {name} = "
                         f"*reinterpret_cast<const {vtype} *>(&{addr});")
        else:
            decls.append(f"{vtype} {name};")
        if any(a.kind != "read" for _k, a in g.accesses):
            stores.append(f"*reinterpret_cast<{vtype} *>(&{addr}) = {name};")
        for k, a in g.accesses:
            lane_k = f"{lane}[{k}]" if lane else "." + "xyzw"[k]
            renames.append((unit.node_at(a.span, syn.SUBSCRIPT), f"{name}{lane_k}"))
    mask = " | ".join(f"({c} & (alignof({t[1] or f'htam_g{i}_t'}) - 1))" for i, (c, t) in enumerate(
        zip(checks, types, strict=True)))
    ind = syn.indent_of(unit.src, node.start_byte)
    head = unit.src[node.start_byte:body.start_byte].decode().rstrip()
    structs = [d for d in decls if d.startswith("struct")]
    inner = [d for d in decls if not d.startswith("struct")]
    text = "\n".join([
        "{",
        *(f"    {s}" for s in structs),
        f"    if (({mask}) == 0ull) {{",
        f"        {head} {{",
        *(f"            {d}" for d in inner),
        "            " + _text(unit, body, renames).replace("\n", "\n        "),
        *(f"            {s}" for s in stores),
        "        }",
        "    } else",
        "        " + unit.t(node).replace("\n", "\n    "),
        "}",
    ]).replace("\n", "\n" + ind)
    if fact.pragma_span is not None and syn.only_space_before(unit.src, node.start_byte):
        line = syn.line_start(unit.src, fact.pragma_span[0] - unit.base)
        return unit.edit(line, node.end_byte, ind + text)
    return unit.replace(node, text)
