"""Output contracts at a launch: who reads a kernel's per-block outputs, and whether a new grid can follow.

A kernel that writes one result per block (``if (tid == 0) partial[blockIdx.x] = sdata[0];``, the per-block
outputs of :meth:`~htam_core.source.analysis.facts.KernelFacts.per_block_outputs`) has as many outputs as blocks.
A step that changes the number of blocks (a new block size when the grid is computed from it, fewer blocks with
several elements per thread) changes the output's length, so it is correct only where whoever reads the outputs
reads as many as there are blocks. This module reads that at one launch: the launching host function *owns* the
contract when

* the grid is a local of the host declared once and never assigned (``int blocks = (n + 255) / 256;``, or the one
  component of ``dim3 grid(blocks, 1, 1)`` that is such a local), so every later use of the count in the host
  (the partials' allocation, the loop that finishes them, the next pass's length) reads the new count; and
* every per-block output is a buffer the host declares itself (a local, not a parameter of the host: a caller's
  buffer was sized by the caller) and allocates with that count: every call that takes its address reads the
  count (``cudaMalloc(&partial, blocks * sizeof(float));``).

Otherwise the caller's contract is unknown (a parameter count, an output buffer passed in, an inline grid), and
the launch and the output's shape cannot be changed together.

Idea source: M. Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007): each block writes its partial
result, and the host, or a second pass over ``blocks`` partials, reads one per block.
"""

from __future__ import annotations

import sympy
from tree_sitter import Node

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.facts import Access, KernelFacts, LoopFact, stride_of, sym
from htam_core.source.analysis.syntax import of_type, unwrap_parens
from htam_core.source.analysis.unit import SiteLaunch


def _refs(env: ConstEnv, node: Node, name: str) -> bool:
    """``node`` mentions the identifier ``name``."""
    return any(env.t(i) == name for i in of_type(node, "identifier"))


def _takes_address(env: ConstEnv, call: Node, name: str) -> bool:
    """``call`` passes ``&name`` (an allocation: ``cudaMalloc(&partial, bytes)``)."""
    args = call.child_by_field_name("arguments")
    for a in args.named_children if args is not None else []:
        a = unwrap_parens(a)
        if a.type == "pointer_expression" and env.t(a.child_by_field_name("operator")) == "&" and \
                env.t(unwrap_parens(a.child_by_field_name("argument"))) == name:
            return True
        if a.type == "cast_expression" and _refs(env, a, name) and "&" in env.t(a):
            return True
    return False


def _declares(env: ConstEnv, body: Node | None, name: str) -> bool:
    """``body`` (a host's body) declares the local ``name`` (``float *partial;``, ``float *p = nullptr;``)."""
    if body is None:
        return False
    for decl in of_type(body, "declaration"):
        for d in decl.children_by_field_name("declarator"):
            while d is not None and d.type != "identifier":
                d = d.child_by_field_name("declarator")
            if d is not None and env.t(d) == name:
                return True
    return False


def grid_count_local(env: ConstEnv, launch: SiteLaunch) -> str | None:
    """The host local that holds the launch's block count (the grid itself, or the one component of a ``dim3``
    grid that is a local), declared once and never assigned; ``None`` otherwise."""
    host = launch.host
    if host is None:
        return None
    g = unwrap_parens(launch.grid)
    for _ in range(2):
        if g.type != "identifier":
            return None
        name = env.t(g)
        inits = env.local_inits(host, name)
        if len(inits) != 1 or env.assigned_in(host, name):
            return None
        init = inits[0]
        if init.type not in ("argument_list", "initializer_list"):
            return name
        parts = init.named_children
        if not parts or any(env.t(p).strip() not in ("1", "1u") for p in parts[1:]):
            return None
        g = unwrap_parens(parts[0])
    return None


def host_owns_outputs(env: ConstEnv, launch: SiteLaunch, params: list[str], outputs: list[str],
                      shrink: bool = False) -> str | None:
    """``None`` when the host of ``launch`` owns the contract of the per-block ``outputs`` (kernel parameter names;
    ``params`` all the kernel's parameter names in order), as the module docstring says; else why not, one
    sentence. With ``shrink`` (the step only ever gives fewer blocks), a buffer the caller passed in is large
    enough, and the contract holds when the host passes the count on after the launch (``n = blocks;`` before the
    next pass, ``finish(partial, blocks)``): whoever reads the partials then reads the new count. A host that
    only launches leaves the reading to its caller, who reads its own count."""
    line = launch.site.line
    count = grid_count_local(env, launch)
    if count is None:
        return (f"the block count of the launch on line {line} is not a local of its host declared once, so the "
                "reader of the per-block outputs may expect another count")
    host = launch.host
    assert host is not None
    for out in outputs:
        if out not in params or params.index(out) >= len(launch.site.args):
            return f"the launch on line {line} does not pass {out}"
        arg = launch.site.args[params.index(out)].strip()
        if not arg.isidentifier():
            return f"the per-block output {out} is `{arg}` at the launch on line {line}, not a buffer of the host"
        if shrink and any(env.t(i) == count and i.start_byte >= launch.call.end_byte
                          for i in of_type(host, "identifier")):
            continue  # the host passes the count on after the launch: its reader reads the new count
        if not _declares(env, host.child_by_field_name("body"), arg):
            return (f"the per-block output {arg} of the launch on line {line} comes from the caller, who sized it "
                    "for its own block count")
        allocs = [c for c in of_type(host, "call_expression") if _takes_address(env, c, arg)]
        if not allocs or not all(_refs(env, c, count) for c in allocs):
            return (f"the host does not allocate the per-block output {arg} with the block count {count} "
                    f"(`cudaMalloc(&{arg}, {count} * sizeof(...))`; line {line})")
    return None


# --- the block as a segment: whether the block size is part of the kernel's results -------------------------------
#
# A kernel whose threads combine each other's values through shared memory (a scan, a tree of maxima) over exactly
# the elements their block loaded (``s[tid] = in[blockIdx.x * BLOCK + tid]``), and that stores the combined value
# per element (``out[gid] = s[tid]``, ``y[i] = x[i] - s[0]``), computes one result per *segment* of ``BLOCK``
# elements: another block size gives other segments, hence other results. Where the combined values leave only
# through atomics or one output per block (the host or a later pass sums them), or the block strides over a range of
# run-time length (a row per block, a tile loop over ``K``), the block size only sets how many threads share the
# work: the results are equal up to the order of float operations. Idea source: G. Blelloch, "Prefix Sums and Their
# Applications" (1990) and M. Harris, "Parallel Prefix Sum (Scan) with CUDA" (GPU Gems 3, ch. 39): a block scans
# its own segment, and a separate pass adds the segments' totals when a whole-array result is meant.


def _ladder(loop: LoopFact, dim: str, block: int | None) -> bool:
    """``loop`` walks offsets over the block (a doubling or halving offset, or a start or bound that reads
    ``blockDim`` or is the block size): ``for (s = blockDim.x / 2; s > 0; s >>= 1)``, ``for (d = 1; d < BS; d *= 2)``."""
    if loop.update in ("<<", ">>", "*", "/"):
        return True
    ends = [e for e in (loop.start, loop.bound) if e is not None]
    return any(f"blockDim.{dim}" in {str(s) for s in e.free_symbols} or
               (block is not None and e.is_Integer and int(e) in (block, block // 2, block - 1)) for e in ends)


def combine_reads(facts: KernelFacts, dim: str, block: int | None) -> list[Access]:
    """The shared-memory reads through which a thread reads *another* thread's slot along ``dim`` (block size
    ``block`` threads when known): a slot all threads read (``s[0]``, no ``threadIdx``), a remapped slot
    (``warp_sums[tid % 32]``), or the own slot moved by an offset loop over the block (``s[tid - d]`` in a scan,
    ``s[tid + s]`` in a tree). A fixed neighbour offset (a stencil's ``s[tid + 1]``) is not one: a halo'd tile reads
    the same neighbours for any block. An unreadable index counts (nothing shows that it is the own slot)."""
    tid = sym(f"threadIdx.{dim}")
    out = []
    for a in facts.accesses:
        if a.space != "shared" or a.kind == "write":
            continue
        if a.index is None or tid not in a.index.free_symbols:
            out.append(a)
            continue
        rest = sympy.expand(a.index - tid * stride_of(a.index, str(tid))) if stride_of(a.index, str(tid)) else None
        if rest is None or tid in rest.free_symbols:
            out.append(a)
            continue
        names = {str(s) for s in rest.free_symbols}
        if any(facts.loops[i].var in names and _ladder(facts.loops[i], dim, block) for i in a.loops):
            out.append(a)
    return out


def _block_linear(facts: KernelFacts, a: Access, dim: str, block: int | None) -> bool:
    """``a``'s index steps by a multiple of the block per block (``blockIdx.x * blockDim.x``, ``blockIdx.x * 512``
    for a block of 512) and runs once, or in a constant-trip or grid-stride loop: the block's own segment."""
    c = stride_of(a.index, f"blockIdx.{dim}")
    if c is None or c == 0:
        return False
    names = {str(s) for s in c.free_symbols}
    if f"blockDim.{dim}" not in names and not (block and c.is_Integer and int(c) % block == 0):
        return False
    return all(facts.loops[i].trip_value is not None or facts.loops[i].grid_stride for i in a.loops)


def _per_element_writes(facts: KernelFacts, dim: str) -> list[Access]:
    """The global stores (not atomics) whose index reads ``threadIdx.<dim>``: one result per element."""
    return [a for a in facts.accesses if a.space == "global" and a.kind != "read" and a.index is not None and
            f"threadIdx.{dim}" in {str(s) for s in a.index.free_symbols} and
            not any(x.call_span[0] <= a.span[0] and a.span[1] <= x.call_span[1] for x in facts.atomics)]


def block_segment_results(facts: KernelFacts, dim: str, block: int | None) -> str | None:
    """Why the block size along ``dim`` (``block`` threads when known) is part of the kernel's results, one
    sentence, or ``None``: its threads combine each other's values (:func:`combine_reads`) over the segment their
    block loaded (a global read at ``blockIdx * block + ...``) and store the result per element (see the section's
    comment above), or a thread reads a range or element placed by its block's extent rather than by its own
    global index (:func:`block_extent_results`: a loop from the block's first element to the thread's). Nothing is
    raised; unreadable kernels give ``None`` unless all three are seen."""
    return _shared_segment_results(facts, dim, block) or block_extent_results(facts, dim, block)


def _shared_segment_results(facts: KernelFacts, dim: str, block: int | None) -> str | None:
    """:func:`block_segment_results` for a combine through shared memory."""
    combine = combine_reads(facts, dim, block)
    source = [a for a in facts.accesses if a.space == "global" and a.kind != "write" and a.index is not None
              and _block_linear(facts, a, dim, block)]
    writes = _per_element_writes(facts, dim)
    if not (combine and source and writes):
        return None
    c, s, w = combine[0], source[0], writes[0]
    at = c.index_text.replace(" ][ ", "][")  # a 2-D shared array's index as written: buf[1 - pout][tid - offset]
    seg = f"{block}-element segment" if block else "segment"
    return (f"the block size is part of {facts.kernel}'s results: its threads combine each other's values "
            f"(`{c.pointer}[{at}]`, line {c.line}) over the {seg} each block loads "
            f"(`{s.shown}`) and store the result per element (`{w.shown}`, "
            f"line {w.line}), so another block size would change the results")


# --- the block's extent in what a thread reads -------------------------------------------------------------------
#
# A thread's own elements are placed by its global index ``g = blockIdx.x * blockDim.x + threadIdx.x`` (however
# spelled: a local, the ``BLOCK`` macro of the launch, a cooperative group's ``group_index().x * size()``). Any other
# use of the block's extent in what it reads - the block's first element ``blockIdx.x * blockDim.x`` as a segment
# start or a loop's first index, ``threadIdx.x`` alone as a loop bound next to ``g``, ``(g / blockDim.x) *
# blockDim.x`` - makes the element read, or the range combined, depend on the block size, so another block gives
# other results. A grid-stride step (``blockDim.x * gridDim.x``), a block-stride loop (``for (j = threadIdx.x; ...;
# j += blockDim.x)``) and a read at the same place as one of the kernel's own stores (a coarsened thread's ``in[i +
# blockDim.x]`` next to ``out[i + blockDim.x]``) do not. Idea source: Blelloch (1990) and Harris (GPU Gems 3,
# ch. 39), as above: a per-block segment scan, here written as a per-thread loop over the segment.

_G, _B = sympy.Symbol("htam_global_index"), sympy.Symbol("htam_block_extent")


def _in_global_terms(e: sympy.Expr, dim: str, block: int | None) -> sympy.Expr:
    """``e`` with the block's extent as one symbol and ``threadIdx.<dim>`` written through the global index
    (``threadIdx = g - blockIdx * extent``): a term ``blockIdx * k * block`` of a known ``block`` counts as
    ``k`` extents (the launch's block written as a constant: a ``BLOCK`` macro, a ``constexpr``, an enumerator or a
    template argument equal to it), also inside a division or remainder (``(blockIdx.x * THREADS + threadIdx.x) /
    cols``, the row of the thread's element, is a function of the global index)."""
    bx, bd, tx = sym(f"blockIdx.{dim}"), sym(f"blockDim.{dim}"), sym(f"threadIdx.{dim}")
    return sympy.expand(_as_extents(e.subs(bd, _B), bx, block).subs(tx, _G - bx * _B))


def _as_extents(e: sympy.Expr, bx: sympy.Symbol, block: int | None) -> sympy.Expr:
    """``e`` with each term ``k * block * blockIdx`` written ``k * extent * blockIdx`` (see :func:`_in_global_terms`),
    in the arguments of its functions (``div``, ``mod``) too."""
    if not block:
        return e
    terms = []
    for t in sympy.Add.make_args(sympy.expand(e)):
        factors = [f.func(*[_as_extents(a, bx, block) for a in f.args]) if isinstance(f, sympy.Function) else f
                   for f in sympy.Mul.make_args(t)]
        t = sympy.Mul(*factors)
        num, rest = sympy.Mul(*[x for x in sympy.Mul.make_args(t) if x != bx]).as_coeff_Mul()
        if bx in sympy.Mul.make_args(t) and _B not in t.free_symbols and num.is_Integer and num != 0 \
                and int(num) % block == 0:
            t = (int(num) // block) * rest * _B * bx  # cols * BLOCK * blockIdx: cols extents
        terms.append(t)
    return sympy.Add(*terms)


def _placed_by_block(e: sympy.Expr | None, dim: str, block: int | None, index_only: bool = False) -> bool:
    """``e`` reads the block's extent other than through the global index or a grid-stride step (with
    ``index_only``, only through the block index: ``(i / blockDim.x) * blockDim.x`` is a function of the element
    index ``i`` while ``blockDim`` stays)."""
    if e is None:
        return False
    g = _in_global_terms(e, dim, block)
    grid = sym(f"gridDim.{dim}")
    return sym(f"blockIdx.{dim}") in g.free_symbols or not index_only and any(
        _B in t.free_symbols and grid not in t.free_symbols for t in sympy.Add.make_args(g))


def _uses_global_index(facts: KernelFacts, a: Access, dim: str, block: int | None) -> bool:
    """``a``'s index reads the global index along ``dim`` (directly or through a loop variable started at it), and
    no other use of the block index (``out[threadIdx.x]`` alone is a place within the block)."""
    exprs = [a.index] + [lp.start for lp in facts.loops if lp.id in a.loops and lp.var is not None
                         and a.index is not None and sym(lp.var) in a.index.free_symbols]
    places = [_in_global_terms(e, dim, block).free_symbols for e in exprs if e is not None]
    return any(_G in p and sym(f"blockIdx.{dim}") not in p for p in places)


def _extent_loop(facts: KernelFacts, dim: str, block: int | None,
                 index_only: bool) -> tuple[LoopFact, sympy.Expr] | None:
    """A loop whose variable indexes a global read and whose first or last index is placed by the block's extent
    (block-stride loops from ``threadIdx`` excepted), with that end."""
    for a in facts.accesses:
        if a.space != "global" or a.kind == "write" or a.index is None:
            continue
        for lp in (facts.loops[i] for i in a.loops):
            if lp.var is None or sym(lp.var) not in a.index.free_symbols:
                continue
            strided = lp.strides_threads and sym(f"blockIdx.{dim}") not in (lp.start or sympy.S.Zero).free_symbols
            for end in ([] if strided else [lp.start]) + [lp.bound]:
                if _placed_by_block(end, dim, block, index_only):
                    return lp, end  # type: ignore[return-value]
    return None


def block_extent_results(facts: KernelFacts, dim: str, block: int | None, index_only: bool = False) -> str | None:
    """Why the kernel's per-element results depend on the block's extent along ``dim`` (``block`` threads when
    known) through what its threads read, one sentence, or ``None`` (see the section's comment above): a loop over
    a global buffer whose first or last index is placed by the block, or a global read placed by it that is not at
    one of the kernel's own stores. Only a kernel that stores per element at its global index is read (per-block
    outputs and grid-wide totals have their own contracts); a read of one value per block of a kernel indexed by
    ``blockDim`` is :meth:`~htam_core.source.analysis.facts.KernelFacts.per_block_inputs`'s. ``index_only``: only
    places read through the block index (for a step that keeps ``blockDim`` and gives each thread more elements:
    a place computed from the element index and ``blockDim`` alone stays where it was)."""
    writes = [w for w in _per_element_writes(facts, dim) if _uses_global_index(facts, w, dim, block)]
    if not writes:
        return None
    head = f"the block size is part of {facts.kernel}'s results"
    if found := _extent_loop(facts, dim, block, index_only):
        lp, end = found
        which = "starts" if end is lp.start else "ends"
        return (f"{head}: the loop over {lp.var} on line {lp.line} {which} at `{end}`, a place set by the block's "
                "extent rather than by the thread's global index, so another block size would combine other "
                "elements")
    stores = [_in_global_terms(w.index, dim, block) for w in writes if w.index is not None]
    skip = {a.span for a in facts.per_block_inputs(dim)}
    for a in facts.accesses:
        if a.space != "global" or a.kind == "write" or a.span in skip or \
                not _placed_by_block(a.index, dim, block, index_only):
            continue
        assert a.index is not None
        here = _in_global_terms(a.index, dim, block)
        if any(not ({sym(f"blockIdx.{dim}"), _B} & sympy.expand(here - s).free_symbols) for s in stores):
            continue
        return (f"{head}: it reads {a.shown} on line {a.line}, a place set by the block's "
                "extent rather than by the thread's global index, so another block size would read other elements")
    return None


def block_size_numerics(facts: KernelFacts, dim: str, block: int | None) -> str:
    """How a new block size along ``dim`` changes the results of a kernel whose block is not a segment
    (:func:`block_segment_results` is ``None``): ``"exact"`` (no thread reads another's shared slot), ``"order"``
    (the combined values leave only through atomics or per-block outputs, or each block combines a range of
    run-time length: the same terms, in another order) or ``"unknown"`` (a combine whose reach this analysis cannot
    show: a static run must not take its results as equal)."""
    if not combine_reads(facts, dim, block):
        return "exact"
    if not _per_element_writes(facts, dim):
        return "order"
    spans = [a for a in facts.accesses if a.space == "global" and a.kind != "write" and any(
        facts.loops[i].trip_value is None and not facts.loops[i].grid_stride for i in a.loops)]
    return "order" if spans else "unknown"
