"""16-byte vectorization of strided and row loops, with a scalar tail (the loop half of ``cuda.vectorize_float4``).

A loop ``for (T v = S; v < B; v += D) body`` whose every global access is ``P[base + v]`` (stride 1 in ``v``,
``base`` fixed during the loop) becomes, for ``float`` elements::

    {
        long long htam_tail = 0;
        if ((((unsigned long long)(P + base) | ...) & 15ull) == 0ull) {     // every base 16-byte aligned
            const T htam_n4 = (B) / 4;
            for (long long htam_v4 = S; htam_v4 < htam_n4; htam_v4 += D) {
                float4 loads of P + base at htam_v4; body four times on .x .y .z .w; float4 stores
            }
            htam_tail = htam_n4 * 4;
        }
        for (long long htam_gi = htam_tail + S; htam_gi < B; htam_gi += D) {  // scalar tail, or everything
            T v = (T)htam_gi;
            body
        }
    }

The counters of a grid-stride loop (a step with ``gridDim``: :attr:`LoopFact.grid_stride`) are 64-bit
(:mod:`~htam_core.transforms._grid_loop`): with a 32-bit ``T``, ``htam_tail + S`` and the last steps would wrap near
the top of ``T`` where the loop was right. A ``T`` that is already 64-bit is the counters' type, and ``v`` stays the
tail loop's variable. A loop stepping by a warp's or a block's width, or by 1, keeps ``T`` for every counter (as in
the form above before the 64-bit note): its last step passes the bound by less than a block, the range in which the
start's own ``blockIdx.x * blockDim.x + threadIdx.x`` is right, and 64-bit counters in a row's inner loop cost
registers and instructions for no case the start handled.

Other element types (``__nv_bfloat16``, ``half``, ``double``, a template parameter ``T``) take the generic form:
``constexpr int htam_V = 16 / sizeof(widest element type)``, one local ``struct alignas(htam_V * sizeof(E))
{ E v[htam_V]; }`` per pointer (so the copy is one 16-byte, or for narrower types of a mixed loop 8-byte, load or
store), the main loop over ``[0, B / htam_V)`` and the body once per element in a ``#pragma unroll`` lane loop.
A pointer whose element address is taken in the loop (``__ldcs(&p[v])``, ``atomicAdd(&p[v], x)``) keeps scalar
accesses at the lane's element index, and a read among them is still judged by its stride like the plain load (a
read that moves by neither 0 nor 1 with the loop refuses it). ``__ldg(&p[i])`` (:data:`LOAD_INTRINSICS`) is a
load of ``p[i]``: judged like the plain load (so ``__ldg(&B[k * N + col])`` refuses a loop over ``k`` exactly as
``B[k * N + col]`` does), and widened to ``__ldg`` of a ``float4`` (the plain 16-byte load in the generic form).

The loop's threads keep their start ``S`` and stride ``D``, which partition ``[0, B)`` among them (a thread's own
row from 0 by 1, a block- or grid-stride loop from the thread's index, a warp's lanes by 32); they partition
``[0, B/4)`` the same way, and the tail loop from ``htam_tail``. So every element is visited once. When a base is
not 16-byte aligned the scalar loop does all the work. Loops, strides, bases and the read and write sets come
from the analysis facts. ``v`` may appear as those indices and as a value (``v == target``: lane ``c`` of float4
index ``htam_v4`` is element ``4 * htam_v4 + c``); loads the loop does not move (``scale[row]``, stride 0 in ``v``)
stay scalar, and a pointer declared in the loop from values the loop does not change (``float* y = out + r * n;``)
is used through its initializer outside it.

Idea source: NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized Memory Access"
(Luitjens, 2013).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from htam_core.source.analysis import LoopFact, PointerFacts, sym
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import SIZEOF
from htam_core.source.analysis.forms import is_lvalue
from htam_core.source.analysis.loops import for_parts
from htam_core.source.analysis.nodes import Node
from htam_core.transforms._cuda import CudaUnit, statement_list, strip_casts
from htam_core.transforms._grid_loop import IndexLoop, counter_type, header, index_loop, loop_text
from htam_core.transforms.base import TextEdit
from htam_core.transforms.cuda_vector_groups import rewrite_groups


@dataclass
class VecLoop:
    """One loop that can take float4: its node and fact, header texts and its accesses ``(subscript, base text)``."""

    node: Node
    fact: LoopFact
    type: str
    start: str
    bound: str
    step: str
    subs: list[tuple[Node, str, str]]  # (subscript node, pointer text usable outside the body, base text)
    uses: list[Node] = field(default_factory=list)  # value uses of the loop variable (not as an index)
    types: list[str] = field(default_factory=list)  # element type of each of ``subs`` (``float``, ``T``, ...)
    #: subscript start byte -> (call node, intrinsic) of a load written through its address (``__ldg(&p[i])``)
    wrapped: dict[int, tuple[Node, str]] = field(default_factory=dict)

    @property
    def float4(self) -> bool:
        """True when every moved access is to ``float`` elements (the ``float4`` form); else the generic 16-byte
        form (``16 / sizeof`` elements of the widest type per step)."""
        return all(t == "float" for t in self.types)


def _header(unit: CudaUnit, loop: Node, var: str) -> tuple[str, str, str, str] | str:
    """``(type, start, bound, step)`` as written of ``for (T var = start; var < bound; var += step)`` (``bound > var``
    too), read by the analysis layer's one reader of a ``for`` header
    (:func:`~htam_core.source.analysis.loops.for_parts`); ``step`` is ``"1"`` for ``++var``; or why not."""
    p = for_parts(loop, unit.t)
    if p is None or not syn.is_declaration(p.init):
        return f"the loop over {var} does not declare its variable"
    if not p.declared:
        return f"the loop over {var} declares several variables"
    upd = p.update
    if upd is not None and not syn.is_assignment(upd) and upd.child_by_field_name("left") is not None:
        upd = upd.child_by_field_name("left")  # `c += s, i = c`: the stride of the two-variable loop's counter
    step = unit.t(upd.child_by_field_name("right")) if syn.is_assignment(upd) else "1"
    test = p.test
    # the two-variable loop (`for (T i = c; c < n; c += s, i = c)`) compares its counter, not its variable
    bound = p.bound if p.bound is not None else test.child_by_field_name("right") if syn.is_binary(test) else None
    return p.type, unit.t(p.start), unit.t(bound), step


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
    inner = syn.unwrap_parens(idx.named_children[0]) if idx is not None and idx.named_children else None
    if inner is None:
        return None
    inner = strip_casts(inner)
    if syn.is_identifier(inner) and unit.t(inner) == var:
        return "0"
    if syn.is_binary(inner) and unit.t(inner.child_by_field_name("operator")) == "+":
        left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
        for a, b in ((left, right), (right, left)):
            if syn.is_identifier(strip_casts(syn.unwrap_parens(a))) and unit.t(strip_casts(
                    syn.unwrap_parens(a))) == var:
                return unit.t(b)
    return None


_NOT_SPLIT = ("the loop on line {line} is not a loop that splits a range among its threads (the form "
              "`for ({var} = thread index; {var} < n; {var} += threads)`)")


def match_loop(unit: CudaUnit, fact: LoopFact) -> VecLoop | str:
    """The loop ``fact`` as a :class:`VecLoop`, or why it cannot take float4."""
    f = unit.facts
    var = fact.var
    node = unit.node_at(fact.span, syn.FOR_LOOP)
    if node is None or var is None or fact.kind != "for":
        return f"the loop on line {fact.line} is not a `for` over one variable"
    if fact.cmp != "<" or fact.update != "+" or not _partitions(unit, fact):
        return _NOT_SPLIT.format(line=fact.line, var=var)
    if f.children(fact):
        return f"the loop on line {fact.line} has a nested loop"
    head = _header(unit, node, var)
    if isinstance(head, str):
        return head
    accs = [a for a in f.accesses_in(fact) if a.space == "global"]
    if not accs:
        return f"the loop on line {fact.line} accesses no global memory"
    body = node.child_by_field_name("body")
    jumps = syn.jumps(body)
    if jumps:
        return (f"the loop on line {fact.line} has `{unit.t(jumps[0])}`, which in a float4 step would skip the "
                "other lanes")
    subs: list[tuple[Node, str, str]] = []
    types: list[str] = []
    written_ptrs = {a.pointer for a in accs if a.kind != "read"}
    subs_of = {id(a): unit.node_at(a.span, syn.SUBSCRIPT) for a in accs}
    # a pointer whose element address is taken (`__ldcs(&p[i])`, `atomicAdd(&p[i], v)`) keeps scalar accesses:
    # the address must stay in global memory, and a vector copy would miss a write made through it
    # a read-only load intrinsic (`__ldg(&p[i])`) is a load of p[i]: judged, and widened, like the plain load
    wrapped = {id(a): w for a in accs if a.kind == "read" and a.pointer not in written_ptrs
               and subs_of[id(a)] is not None and (w := load_wrapper(unit, subs_of[id(a)])) is not None}
    by_address = {a.pointer for a in accs if subs_of[id(a)] is not None and id(a) not in wrapped
                  and _address_taken(unit, subs_of[id(a)])}
    for a in accs:
        sub = subs_of[id(a)]
        pf = f.pointer(a.pointer)
        if a.pointer in by_address and sub is not None and not a.vector:
            if a.kind == "read" and a.stride(var) not in (0, 1):
                # judged like the plain load: `__ldcs(&B[k * N + col])` does not make a stride-N read contiguous
                return f"`{a.shown}` in the loop on line {fact.line} is not a stride-1 access in {var}"
            continue  # stays a scalar access; its index reads the lane's element index
        if sub is not None and not a.vector and a.kind == "read" and a.stride(var) == 0 and \
                a.pointer not in written_ptrs:
            continue  # a load the loop does not move (`scale[row]`): every lane reads it as before
        if sub is None or a.vector or a.stride(var) != 1:
            return f"`{a.shown}` in the loop on line {fact.line} is not a stride-1 access in {var}"
        if fact.id in a.guarded:
            return (f"`{a.shown}` on line {a.line} runs under a condition inside the loop on line "
                    f"{fact.line}: a 16-byte access would also touch the elements the condition skips")
        elem = _element(pf)
        if elem is None:
            return f"{a.pointer} has an unknown element type"
        types.append(elem)
        base = _base(unit, sub, var)
        if base is None:
            return f"the index `{a.index_text}` is not `base + {var}`"
        if any(unit.assigned_in(body, unit.t(n)) for n in syn.identifiers(sub.child_by_field_name("indices")) if unit.t(n) != var):
            return f"the base of `{a.shown}` changes inside the loop"
        ptr = _pointer_outside(unit, body, sub.child_by_field_name("argument"), var)
        if ptr is None:
            return (f"the pointer of `{a.shown}` is set inside the loop on line {fact.line} from "
                    "values that change there")
        subs.append((sub, ptr, base))
    if not subs:
        return f"no global access in the loop on line {fact.line} moves with {var} (other than through its address)"
    uses = _value_uses(unit, body, var, {s.start_byte for s, _, _ in subs})
    if unit.assigned_in(body, var):
        return f"the loop body changes {var}"
    covered_ranges = [(s.start_byte, s.end_byte) for s, _, _ in subs]
    if any(a <= u.start_byte < b for u in uses for a, b in covered_ranges):
        return f"{var} is used inside the index of a float load or store other than as `base + {var}`"
    kept = {s.start_byte for s, _, _ in subs}
    wraps = {subs_of[i].start_byte: w for i, w in wrapped.items() if subs_of[i].start_byte in kept}  # type: ignore[union-attr]
    return VecLoop(node, fact, head[0].replace("const", "").strip(), head[1], head[2], head[3], subs, uses, types,
                   wraps)


def _value_uses(unit: CudaUnit, body: Node, var: str, covered: set[int]) -> list[Node]:
    """The uses of the loop variable ``var`` in ``body`` other than inside the subscripts that start at the bytes
    ``covered`` (the accesses a float4 step widens): value uses (``i == target``), where lane ``c`` of float4 index
    ``v`` is element ``4 * v + c``."""
    uses: list[Node] = []
    for n in syn.identifiers(body):
        if unit.t(n) != var:
            continue
        p = n.parent
        while p is not None and not syn.is_subscript(p) and p != body:
            p = p.parent
        if p is None or not syn.is_subscript(p) or p.start_byte not in covered:
            uses.append(n)
    return uses


def _element(pf: PointerFacts | None) -> str | None:
    """The element type to vector-load a pointer's elements as: ``float`` when it resolves to ``float`` (the
    float4 form), else the type as written without qualifiers (``T``, ``floatX``, ``__nv_bfloat16``); ``None``
    when unknown. A type template parameter stays as written even when this unit launches only ``<float>``
    (:attr:`PointerFacts.templated`): another translation unit may instantiate it with ``double``."""
    if pf is None or not (pf.value_type or pf.element_type):
        return None
    if pf.value_type == "float" and not pf.templated:
        return "float"
    words = [w for w in (pf.element_type or pf.value_type or "").split() if w not in ("const", "volatile")]
    return " ".join(words) or None


#: Load intrinsics that are plain loads of their element (``T __ldg(const T *)``: the read-only data cache, which a
#: 16-byte load of a ``const __restrict__`` pointer takes too), each with a ``float4`` overload. The cache-policy
#: loads (``__ldcs`` ...) are not: a vector copy would drop their policy, so they stay scalar.
LOAD_INTRINSICS = ("__ldg",)


def load_wrapper(unit: CudaUnit, sub: Node) -> tuple[Node, str] | None:
    """``(call, intrinsic)`` when subscript ``sub`` is loaded as ``__ldg(&p[i])`` (any of
    :data:`LOAD_INTRINSICS`, the address its only argument), else ``None``."""
    p = sub.parent
    while p is not None and syn.is_parenthesized(p):
        p = p.parent
    if p is None or not syn.is_pointer_expression(p) or not unit.t(p).startswith("&"):
        return None
    args = p.parent
    call = args.parent if args is not None and syn.is_argument_list(args) else None
    if call is None or not syn.is_call(call) or len(args.named_children) != 1:
        return None
    fn = unit.t(call.child_by_field_name("function")).strip()
    return (call, fn) if fn in LOAD_INTRINSICS else None


def _address_taken(unit: CudaUnit, sub: Node) -> bool:
    """True when subscript ``sub`` is the operand of ``&`` (``&p[i]``)."""
    p = sub.parent
    while p is not None and syn.is_parenthesized(p):
        p = p.parent
    return p is not None and syn.is_pointer_expression(p) and unit.t(p).startswith("&")


def _pointer_outside(unit: CudaUnit, body: Node, arg: Node, var: str) -> str | None:
    """The pointer text to use outside the loop body for a subscript's ``arg``: as written when it is not set in the
    body, ``(init)`` for a local declared once in the body (``float* row = out + r * n;``) whose initializer reads
    nothing set in the body (nor ``var``); ``None`` otherwise."""
    name = unit.t(arg)
    inits = _declared_in(unit, body, name) if syn.is_identifier(arg) else []
    if not inits:
        return None if unit.assigned_in(body, name) else name
    if len(inits) != 1 or inits[0] is None or unit.assigned_in(body, name):
        return None
    for n in syn.identifiers(inits[0]):
        if unit.t(n) == var or _declared_in(unit, body, unit.t(n)) or unit.assigned_in(body, unit.t(n)):
            return None
    return f"({' '.join(unit.t(inits[0]).split())})"


def _declared_in(unit: CudaUnit, scope: Node, name: str) -> list[Node | None]:
    """The initializers (``None`` when uninitialized) of every declaration of ``name`` inside ``scope``, through
    pointer, reference and array declarators (``float* p = ...``)."""
    out: list[Node | None] = []
    for decl in syn.declarations(scope):
        for d in decl.children_by_field_name("declarator"):
            value = d.child_by_field_name("value") if syn.is_init_declarator(d) else None
            n = d.child_by_field_name("declarator") if syn.is_init_declarator(d) else d
            while n is not None and syn.is_wrapping_declarator(n):
                n = n.child_by_field_name("declarator")
            if n is not None and syn.is_identifier(n) and unit.t(n) == name:
                out.append(value)
    return out


def _lane(unit: CudaUnit, v: VecLoop, names: dict[int, str], lane: str, width: str) -> str:
    """The loop body as lane ``lane`` (``"0"``..``"3"``, or the lane variable) of a vector step of ``width``
    elements: accesses renamed, the loop variable's value uses replaced by the lane's element index
    ``htam_v4 * width + lane``."""
    body = v.node.child_by_field_name("body")
    out = syn.one_line(unit.src, body, body.start_byte, body.end_byte,
                       [(v.wrapped[sub.start_byte][0] if sub.start_byte in v.wrapped else sub, names[sub.start_byte])
                        for sub, _p, _b in v.subs]
                       + [(u, f"(({v.type})(htam_v4 * {width} + {lane}))") for u in v.uses])
    return out if syn.is_block(body) else "{ " + out + " }"


def _divides_16(elem: str) -> bool:
    """Whether the element type's size is known (the analysis layer's ``SIZEOF``) and divides 16 bytes."""
    size = SIZEOF.get(" ".join(elem.replace("const", " ").split()))
    return size is not None and 16 % size == 0


def width_text(types: list[str]) -> str:
    """The generic form's elements per step: 16 bytes of the widest element type (``16 / sizeof(T)``). A type
    whose size may not divide 16 (a template parameter, a struct: 12 or 32 bytes) gets one element per step
    then (``16 % sizeof(T) == 0 ? 16 / sizeof(T) : 1``), so the width is never 0 nor a non-power-of-two
    alignment."""
    widest = f"sizeof({types[0]})"
    for t in types[1:]:
        widest = f"(sizeof({t}) > {widest} ? sizeof({t}) : {widest})"
    if all(_divides_16(t) for t in types):
        return f"16 / {widest}"
    return f"(16 % {widest} == 0 ? 16 / {widest} : 1)"


def align_text(elem: str) -> str:
    """The ``alignas`` of the per-pointer vector struct: ``htam_V`` elements' bytes, or the element's own
    alignment when those bytes are not a power of two (a 12-byte element, or one element per step)."""
    if _divides_16(elem):
        return f"htam_V * sizeof({elem})"
    b = f"htam_V * sizeof({elem})"
    return f"(htam_V > 1 && ({b} & ({b} - 1)) == 0 ? {b} : alignof({elem}))"


def _counters(unit: CudaUnit, v: VecLoop) -> tuple[str, IndexLoop]:
    """The type of the counters ``htam_tail`` and ``htam_v4`` of loop ``v``'s vector form, and its scalar tail loop.
    A grid-stride loop (:attr:`LoopFact.grid_stride`, or a step the analysis could not read) counts in 64 bits:
    ``htam_tail + start`` and its last steps cannot wrap (:mod:`~htam_core.transforms._grid_loop`). A loop stepping
    by a block's or a warp's width, or by 1, keeps its type: it passes its bound by less than a block, within the
    range where the start itself is right."""
    t, var, start = v.type, v.fact.var, f"htam_tail + {v.start}"
    if v.fact.grid_stride or v.fact.step is None:
        return counter_type(unit.types, t), index_loop(unit.types, var, t, start, v.bound, v.step)
    return t, IndexLoop(header(var, t, start, f"{var} < {v.bound}", v.step), "")


def rewrite(unit: CudaUnit, v: VecLoop) -> TextEdit:
    """The edit replacing loop ``v`` with its vector main loop, alignment check and scalar tail: ``float4`` when
    every moved element is a float, else a 16-byte struct per pointer (``htam_V = 16 / sizeof(widest)`` elements,
    ``alignas`` its size, so that the copy is one 16- or 8-byte load) with the body in an unrolled lane loop. The
    loop's ``#pragma`` line (:attr:`LoopFact.pragma`) is dropped with it: the block that replaces it is no loop."""
    keys: dict[tuple[str, str], str] = {}
    names: dict[int, str] = {}
    elem: dict[str, str] = {}
    loaded: set[str] = set()
    written: set[str] = set()
    body = v.node.child_by_field_name("body")
    top = set(statement_list(body)) if syn.is_block(body) else {body}
    for (sub, ptr, base), typ in zip(v.subs, v.types, strict=True):
        key = keys.setdefault((ptr, base), f"htam_q{len(keys)}")
        elem[key] = typ
        names[sub.start_byte] = key
        if sub.start_byte not in v.wrapped and is_lvalue(sub):  # `__ldg(&p[i])` takes an address only to load
            written.add(key)
            asg = sub.parent
            plain = (asg is not None and syn.is_assignment(asg)
                     and unit.t(asg.child_by_field_name("operator")) == "=" and asg.parent in top)
            if not plain:
                loaded.add(key)
        else:
            loaded.add(key)
    ptr_of = {k: (p, b) for (p, b), k in keys.items()}
    align = " | ".join(f"reinterpret_cast<unsigned long long>({p} + ({b}))" for p, b in ptr_of.values())
    t, ind = v.type, syn.indent_of(unit.src, v.node.start_byte)
    width = "4" if v.float4 else "htam_V"
    ctype, tail = _counters(unit, v)
    lines = ["{", f"    {ctype} htam_tail = 0;"]
    if not v.float4:
        lines.append(f"    constexpr int htam_V = {width_text(sorted(set(v.types)))};")
        lines += [f"    struct alignas({align_text(elem[k])}) {k}_t {{ {elem[k]} v[htam_V]; }};" for k in ptr_of]
    lines += [
        f"    if ((({align}) & 15ull) == 0ull) {{",
        f"        const {t} htam_n4 = ({v.bound}) / {width};",
        f"        {header('htam_v4', ctype, v.start, 'htam_v4 < htam_n4', v.step)} {{",
    ]
    vec = {k: "float4" if v.float4 else f"{k}_t" for k in ptr_of}
    intrinsic: dict[str, set[str]] = {}
    for sub, _p, _b in v.subs:
        intrinsic.setdefault(names[sub.start_byte], set()).add(v.wrapped.get(sub.start_byte, (None, ""))[1])
    for k, (p, b) in ptr_of.items():
        fn = next(iter(intrinsic[k])) if len(intrinsic[k]) == 1 else ""
        if k in loaded and fn and v.float4:  # `__ldg(&p[i])` widens to the intrinsic's float4 overload
            lines.append(f"            {vec[k]} {k}4 = {fn}(reinterpret_cast<const {vec[k]} *>({p} + ({b})) + htam_v4);")
        elif k in loaded:
            lines.append(f"            {vec[k]} {k}4 = reinterpret_cast<const {vec[k]} *>({p} + ({b}))[htam_v4];")
        else:
            lines.append(f"            {vec[k]} {k}4;")
    if v.float4:
        for i, c in enumerate("xyzw"):
            decls = " ".join(f"float {k} = {k}4.{c};" if k in loaded else f"float {k};" for k in ptr_of)
            stores = " ".join(f"{k}4.{c} = {k};" for k in ptr_of if k in written)
            lines.append(f"            {{ {decls} {_lane(unit, v, names, str(i), width)} {stores} }}")
    else:
        decls = " ".join(f"{elem[k]} {k} = {k}4.v[htam_l];" if k in loaded else f"{elem[k]} {k};" for k in ptr_of)
        stores = " ".join(f"{k}4.v[htam_l] = {k};" for k in ptr_of if k in written)
        lines += ["            #pragma unroll",
                  "            for (int htam_l = 0; htam_l < htam_V; ++htam_l) {",
                  f"                {decls} {_lane(unit, v, names, 'htam_l', width)} {stores}",
                  "            }"]
    for k, (p, b) in ptr_of.items():
        if k in written:
            lines.append(f"            reinterpret_cast<{vec[k]} *>({p} + ({b}))[htam_v4] = {k}4;")
    lines += [
        "        }",
        f"        htam_tail = htam_n4 * {width};",
        "    }",
        "    " + loop_text(tail, unit.t(body).replace("\n", "\n    "), syn.is_block(body), "    ", "\n        "),
        "}",
    ]
    text = "\n".join(lines).replace("\n", "\n" + ind)
    if v.fact.pragma_span is not None and syn.only_space_before(unit.src, v.node.start_byte):
        # the loop is restructured into a block: its `#pragma unroll` line has no loop left to apply to, so it goes
        start = syn.line_start(unit.src, v.fact.pragma_span[0] - unit.base)
        return unit.edit(start, v.node.end_byte, ind + text)
    return unit.replace(v.node, text)


def vectorize_loops(unit: CudaUnit) -> tuple[list[TextEdit], list[int]] | str:
    """Edits vectorizing every loop of the kernel that can take float4 (or, for a loop over groups of ``S``
    consecutive elements, one ``S``-element vector per group: :func:`rewrite_groups`), with their lines; or why
    none can."""
    edits: list[TextEdit] = []
    lines: list[int] = []
    reasons: list[str] = []
    for fact in unit.facts.loops:
        m = match_loop(unit, fact)
        # a loop over groups of S consecutive elements (`x[2 * p]`, `x[2 * p + 1]`): one S-element vector a group
        g = rewrite_groups(unit, fact) if isinstance(m, str) and unit.facts.element_groups(fact) else m
        if isinstance(g, str):
            reasons.append(g)
            continue
        if any(e.start_byte <= fact.span[0] < e.end_byte for e in edits):
            continue
        edits.append(g if isinstance(g, TextEdit) else rewrite(unit, g))
        lines.append(fact.line)
    if not edits:
        return reasons[0] if reasons else "the kernel has no loop"
    return edits, lines
