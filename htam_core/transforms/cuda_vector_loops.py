"""``float4`` vectorization of strided and row loops, with a scalar tail (the loop half of ``cuda.vectorize_float4``).

A loop ``for (T v = S; v < B; v += D) body`` whose every global access is ``P[base + v]`` (stride 1 in ``v``,
``base`` fixed during the loop, ``float`` elements) becomes::

    {
        T htam_tail = 0;
        if ((((unsigned long long)(P + base) | ...) & 15ull) == 0ull) {     // every base 16-byte aligned
            const T htam_n4 = (B) / 4;
            for (T htam_v4 = S; htam_v4 < htam_n4; htam_v4 += D) {
                float4 loads of P + base at htam_v4; body four times on .x .y .z .w; float4 stores
            }
            htam_tail = htam_n4 * 4;
        }
        for (T v = htam_tail + S; v < B; v += D) body                       // scalar tail, or everything
    }

The loop's threads keep their start ``S`` and stride ``D``, which partition ``[0, B)`` among them (a thread's own
row from 0 by 1, a block- or grid-stride loop from the thread's index, a warp's lanes by 32); they partition
``[0, B/4)`` the same way, and the tail loop from ``htam_tail``. So every element is visited once. When a base is
not 16-byte aligned the scalar loop does all the work. Loops, strides, bases and the read and write sets come
from the analysis facts; ``v`` may appear only as those indices.

Idea source: NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized Memory Access"
(Luitjens, 2013).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
from tree_sitter import Node

from htam_core.source.analysis import LoopFact, sym
from htam_core.transforms import _ts
from htam_core.transforms._cuda import CudaUnit, _is_lvalue, statement_list, strip_casts
from htam_core.transforms.base import TextEdit


@dataclass
class VecLoop:
    """One loop that can take float4: its node and fact, header texts and its accesses ``(subscript, base text)``."""

    node: Node
    fact: LoopFact
    type: str
    start: str
    bound: str
    step: str
    subs: list[tuple[Node, str, str]]  # (subscript node, pointer text as written, base text)


def _header(unit: CudaUnit, loop: Node, var: str) -> tuple[str, str, str, str] | str:
    init = loop.child_by_field_name("initializer")
    if init is None or init.type != "declaration":
        return f"the loop over {var} does not declare its variable"
    ds = [d for d in init.named_children if d.type == "init_declarator"]
    if len(ds) != 1:
        return f"the loop over {var} declares several variables"
    typ = unit.t(init.child_by_field_name("type"))
    cond = _ts.unwrap_parens(loop.child_by_field_name("condition"))
    bound = unit.t(cond.child_by_field_name("right")) if cond is not None and cond.type == "binary_expression" else ""
    upd = loop.child_by_field_name("update")
    step = "1"
    if upd is not None and upd.type == "assignment_expression":
        step = unit.t(upd.child_by_field_name("right"))
    return typ, unit.t(ds[0].child_by_field_name("value")), bound, step


def _partitions(unit: CudaUnit, fact: LoopFact) -> bool:
    """True when the loop's start and step partition ``[0, bound)`` among the threads that run it: from 0 by 1
    (one thread), from ``threadIdx.x`` by the block's x size, from the global index by the grid's size, or from
    the lane ``threadIdx.x % D`` by ``D``."""
    start, step = fact.start, fact.step
    if start is None or step is None:
        return False
    tx, bdx, bx, gdx = (sym(n) for n in ("threadIdx.x", "blockDim.x", "blockIdx.x", "gridDim.x"))
    block_x = {la.block_shape[0] for la in unit.facts.launches if la.block_shape is not None}
    if start == 0 and step == 1:
        return True
    if start == tx:
        return step == bdx or (step.is_Integer and block_x == {int(step)})
    if sympy.expand(start - (bdx * bx + tx)) == 0:
        return sympy.expand(step - bdx * gdx) == 0
    return bool(step.is_Integer and start == sympy.Function("mod")(tx, step))


def _base(unit: CudaUnit, sub: Node, var: str) -> str | None:
    idx = sub.child_by_field_name("indices")
    inner = _ts.unwrap_parens(idx.named_children[0]) if idx is not None and idx.named_children else None
    if inner is None:
        return None
    inner = strip_casts(inner)
    if inner.type == "identifier" and unit.t(inner) == var:
        return "0"
    if inner.type == "binary_expression" and unit.t(inner.child_by_field_name("operator")) == "+":
        left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
        for a, b in ((left, right), (right, left)):
            if strip_casts(_ts.unwrap_parens(a)).type == "identifier" and unit.t(strip_casts(
                    _ts.unwrap_parens(a))) == var:
                return unit.t(b)
    return None


def match_loop(unit: CudaUnit, fact: LoopFact) -> VecLoop | str:
    """The loop ``fact`` as a :class:`VecLoop`, or why it cannot take float4."""
    f = unit.facts
    var = fact.var
    node = unit.node_at(fact.span, ("for_statement",))
    if node is None or var is None or fact.kind != "for":
        return f"the loop on line {fact.line} is not a `for` over one variable"
    if fact.cmp != "<" or fact.update != "+" or not _partitions(unit, fact):
        return f"the loop on line {fact.line} does not split [0, bound) among its threads with `{var} < n`"
    if f.children(fact):
        return f"the loop on line {fact.line} has a nested loop"
    head = _header(unit, node, var)
    if isinstance(head, str):
        return head
    accs = [a for a in f.accesses_in(fact) if a.space == "global"]
    if not accs:
        return f"the loop on line {fact.line} accesses no global memory"
    body = node.child_by_field_name("body")
    subs: list[tuple[Node, str, str]] = []
    for a in accs:
        sub = unit.node_at(a.span, ("subscript_expression",))
        pf = f.pointer(a.pointer)
        if sub is None or a.vector or a.stride(var) != 1:
            return f"`{a.pointer}[{a.index_text}]` in the loop on line {fact.line} is not a stride-1 access in {var}"
        if pf is None or pf.value_type != "float":
            shown = "an unknown type" if pf is None else (
                pf.element_type if pf.element_type == pf.value_type else f"{pf.element_type} ({pf.value_type})")
            return f"{a.pointer} points to {shown}, not float"
        base = _base(unit, sub, var)
        if base is None:
            return f"the index `{a.index_text}` is not `base + {var}`"
        if any(unit.assigned_in(body, unit.t(n)) for n in _ts.of_type(sub.child_by_field_name("indices"),
                                                                       "identifier") if unit.t(n) != var):
            return f"the base of `{a.pointer}[{a.index_text}]` changes inside the loop"
        subs.append((sub, unit.t(sub.child_by_field_name("argument")), base))
    covered = {s.start_byte for s, _, _ in subs}
    for n in _ts.of_type(body, "identifier"):
        if unit.t(n) != var:
            continue
        p = n.parent
        while p is not None and p.type not in ("subscript_expression",) and p != body:
            p = p.parent
        if p is None or p.type != "subscript_expression" or p.start_byte not in covered:
            return f"{var} is used other than as the index of a float load or store"
    if unit.assigned_in(body, var):
        return f"the loop body changes {var}"
    return VecLoop(node, fact, head[0].replace("const", "").strip(), head[1], head[2], head[3], subs)


def _lane(unit: CudaUnit, v: VecLoop, names: dict[int, str]) -> str:
    body = v.node.child_by_field_name("body")
    out = _ts.one_line(unit.src, body, body.start_byte, body.end_byte,
                       [(sub, names[sub.start_byte]) for sub, _p, _b in v.subs])
    return out if body.type == "compound_statement" else "{ " + out + " }"


def rewrite(unit: CudaUnit, v: VecLoop) -> TextEdit:
    """The edit replacing loop ``v`` with its float4 main loop, alignment check and scalar tail."""
    keys: dict[tuple[str, str], str] = {}
    names: dict[int, str] = {}
    loaded: set[str] = set()
    written: set[str] = set()
    body = v.node.child_by_field_name("body")
    top = set(statement_list(body)) if body.type == "compound_statement" else {body}
    for sub, ptr, base in v.subs:
        key = keys.setdefault((ptr, base), f"htam_q{len(keys)}")
        names[sub.start_byte] = key
        if _is_lvalue(sub):
            written.add(key)
            asg = sub.parent
            plain = (asg is not None and asg.type == "assignment_expression"
                     and unit.t(asg.child_by_field_name("operator")) == "=" and asg.parent in top)
            if not plain:
                loaded.add(key)
        else:
            loaded.add(key)
    ptr_of = {k: (p, b) for (p, b), k in keys.items()}
    align = " | ".join(f"reinterpret_cast<unsigned long long>({p} + ({b}))" for p, b in ptr_of.values())
    lane = _lane(unit, v, names)
    t, ind = v.type, _ts.indent_of(unit.src, v.node.start_byte)
    lines = [
        "{",
        f"    {t} htam_tail = 0;",
        f"    if ((({align}) & 15ull) == 0ull) {{",
        f"        const {t} htam_n4 = ({v.bound}) / 4;",
        f"        for ({t} htam_v4 = {v.start}; htam_v4 < htam_n4; htam_v4 += {v.step}) {{",
    ]
    for k, (p, b) in ptr_of.items():
        if k in loaded:
            lines.append(f"            float4 {k}4 = reinterpret_cast<const float4 *>({p} + ({b}))[htam_v4];")
        else:
            lines.append(f"            float4 {k}4;")
    for c in "xyzw":
        decls = " ".join(f"float {k} = {k}4.{c};" if k in loaded else f"float {k};" for k in ptr_of)
        stores = " ".join(f"{k}4.{c} = {k};" for k in ptr_of if k in written)
        lines.append(f"            {{ {decls} {lane} {stores} }}")
    for k, (p, b) in ptr_of.items():
        if k in written:
            lines.append(f"            reinterpret_cast<float4 *>({p} + ({b}))[htam_v4] = {k}4;")
    var = v.fact.var
    lines += [
        "        }",
        "        htam_tail = htam_n4 * 4;",
        "    }",
        f"    for ({t} {var} = htam_tail + {v.start}; {var} < {v.bound}; {var} += {v.step})",
        "        " + unit.t(body).replace("\n", "\n    "),
        "}",
    ]
    text = "\n".join(lines).replace("\n", "\n" + ind)
    return unit.replace(v.node, text)


def vectorize_loops(unit: CudaUnit) -> tuple[list[TextEdit], list[int]] | str:
    """Edits vectorizing every loop of the kernel that can take float4, with their lines; or why none can."""
    edits: list[TextEdit] = []
    lines: list[int] = []
    reasons: list[str] = []
    for fact in unit.facts.loops:
        m = match_loop(unit, fact)
        if isinstance(m, str):
            reasons.append(m)
            continue
        if any(e.start_byte <= fact.span[0] < e.end_byte for e in edits):
            continue
        edits.append(rewrite(unit, m))
        lines.append(fact.line)
    if not edits:
        return reasons[0] if reasons else "the kernel has no loop"
    return edits, lines
