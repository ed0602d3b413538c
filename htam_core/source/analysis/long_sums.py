"""The kernel's ``float`` outputs that are long accumulations: many terms summed in float32 into one element.

A float32 running sum of ``n`` terms rounds at every addition; its error grows up to about ``n * u * sum|x|``
(``u = 2**-24``) and, once the sum is large next to each term, the additions stagnate (a sum of 2^25 terms of
similar size ends percents off the exact value). A kernel that sums this way is the user's own oracle, so a
candidate that sums in another order (a tree, warp shuffles, per-block partials) can be *closer* to the exact
sum than the start. The verify layer checks such outputs against a float64 reference of the start
(:mod:`htam_core.verify.long_sum_rule`). Read here, once:

* ``"atomic"``: a float ``atomicAdd`` whose address the threads share (a
  :class:`~htam_core.source.analysis.facts.UniformAtomic` of op ``"add"``: ``atomicAdd(loss, v)``,
  ``atomicAdd(&out[0], v)``, ``atomicAdd(out + blockIdx.y, v)``); each element receives one term per thread that
  shares it. A histogram (a bin per datum) is no such atomic: its bins each take few terms, from threads the data
  chooses.
* ``"loop"``: a ``float`` accumulator of a loop whose trip count is a runtime value (``for (k = 0; k < K; ++k)
  acc += a[k] * b[k];``) stored or atomically added into a float output after the loop, or a float output updated
  in place (``out[r] += v``) in such a loop at an index the loop does not move. A loop that strides by the block or
  grid is left out (its trip count per thread is a launch's choice, not the problem's).

Idea source: Higham, "Accuracy and Stability of Numerical Algorithms", ch. 4 (summation), and the stagnation of a
recursive float sum it describes.
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.facts import Access, LongSum, LoopFact, PointerFacts, UniformAtomic
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.unit import CudaSource


def _float_pointer(p: PointerFacts | None) -> bool:
    return p is not None and p.value_type == "float"


def _shared_dims(a: UniformAtomic) -> tuple[str, ...] | None:
    """The grid dimensions whose blocks share the atomic's address: those whose ``blockIdx`` its index does not
    read (``None`` when the index is unreadable)."""
    index = a.update.index
    if index is None:
        return None
    read = {s.name for s in index.free_symbols}
    return tuple(d for d in "xyz" if f"blockIdx.{d}" not in read)


def _atomic_sums(atomics: tuple[UniformAtomic, ...], ptrs: dict[str, PointerFacts]) -> list[LongSum]:
    return [LongSum(a.update.pointer, "atomic", a.scope, a.update.line, None, _shared_dims(a)) for a in atomics
            if a.op == "add" and (a.value_type or a.element_type) == "float" and _float_pointer(ptrs.get(a.update.pointer))]


def _runtime_loop(lp: LoopFact) -> bool:
    """A loop whose trip count is a runtime value of the problem (not a constant, not a block/grid stride)."""
    return lp.trip_value is None and not lp.strides_threads and not lp.grid_stride


def _target_pointer(src: CudaSource, left: Node) -> str | None:
    """The parameter an element store's left side writes (``out[r]``, ``*out``), else ``None``."""
    left = syn.unwrap_parens(left)
    if syn.is_subscript(left):
        base = left.child_by_field_name("argument")
        return src.env.t(base) if syn.is_identifier(base) else None
    if syn.is_pointer_expression(left) and src.env.t(left).startswith("*"):
        arg = syn.unwrap_parens(left.child_by_field_name("argument"))
        return src.env.t(arg) if syn.is_identifier(arg) else None
    return None


def _stores_of(src: CudaSource, name: str, after: int) -> list[tuple[str, int]]:
    """``(pointer, line)`` of the element stores and atomic adds after file byte ``after`` whose value reads the
    local ``name`` (``out[row] = acc``, ``*res = alpha * acc``, ``atomicAdd(&out[r], acc)``)."""
    found: list[tuple[str, int]] = []
    for a in syn.assignments(src.body):
        right = a.child_by_field_name("right")
        if src.span(a)[0] >= after and right is not None and syn.references(right, src.src, name):
            ptr = _target_pointer(src, a.child_by_field_name("left"))
            if ptr is not None:
                found.append((ptr, src.line(a)))
    for c in syn.calls(src.body):
        args = [x for x in (c.child_by_field_name("arguments").named_children if c.child_by_field_name("arguments")
                            else []) if not syn.is_comment(x)]
        if src.span(c)[0] >= after and src.env.t(c.child_by_field_name("function")) == "atomicAdd" \
                and len(args) == 2 and syn.references(args[1], src.src, name):
            ptr = _address_pointer(src, args[0])
            if ptr is not None:
                found.append((ptr, src.line(c)))
    return found


def _address_pointer(src: CudaSource, addr: Node) -> str | None:
    """The parameter an atomic's address points into (``&out[r]``, ``out + r``, ``out``), else ``None``."""
    addr = syn.unwrap_parens(addr)
    if syn.is_address_of(addr):
        return _target_pointer(src, addr.child_by_field_name("argument"))
    while syn.is_binary(addr):
        addr = syn.unwrap_parens(addr.child_by_field_name("left"))
    return src.env.t(addr) if syn.is_identifier(addr) else None


def _loop_sums(src: CudaSource, loops: tuple[LoopFact, ...], ptrs: dict[str, PointerFacts]) -> list[LongSum]:
    out: list[LongSum] = []
    for lp in loops:
        if not _runtime_loop(lp):
            continue
        for acc in lp.accumulators:
            if acc.op != "sum" or acc.type != "float":
                continue
            out += [LongSum(p, "loop", "thread", line, lp.trip_count) for p, line in _stores_of(src, acc.name, lp.span[1])
                    if _float_pointer(ptrs.get(p))]
    return out


def _in_place_sums(loops: tuple[LoopFact, ...], ptrs: dict[str, PointerFacts]) -> list[LongSum]:
    """``out[r] += v`` inside a runtime loop that does not move ``r``: one element, one term per iteration."""
    by_id = {lp.id: lp for lp in loops}
    out: list[LongSum] = []
    for p in ptrs.values():
        if not _float_pointer(p):
            continue
        for acc in p.writes:
            lp = _still_index_loop(acc, by_id)
            if acc.kind == "readwrite" and acc.space == "global" and lp is not None:
                out.append(LongSum(p.name, "loop", "thread", acc.line, lp.trip_count))
    return out


def _still_index_loop(acc: Access, by_id: dict[int, LoopFact]) -> LoopFact | None:
    """The innermost runtime loop around ``acc`` whose variable its index does not read, else ``None``."""
    if not acc.loops or acc.index is None:
        return None
    lp = by_id.get(acc.loops[-1])
    if lp is None or not _runtime_loop(lp) or lp.var is None:
        return None
    return None if any(s.name == lp.var for s in acc.index.free_symbols) else lp


def long_sums(src: CudaSource, loops: tuple[LoopFact, ...], pointers: tuple[PointerFacts, ...],
              atomics: tuple[UniformAtomic, ...]) -> tuple[LongSum, ...]:
    """The kernel's long float32 accumulations into float outputs (module docstring), one per update, in line order.

    Args:
        src: the kernel's parsed unit.
        loops: its loops (:class:`LoopFact`, with their accumulators).
        pointers: its pointer facts (the element types: only ``float`` outputs count; ``double`` already sums
            precisely, ``half`` is another matter).
        atomics: its thread-uniform atomics (:func:`~htam_core.source.analysis.atomics.uniform_atomics`).

    Idea source: Higham, "Accuracy and Stability of Numerical Algorithms", ch. 4.
    """
    ptrs = {p.name: p for p in pointers}
    found = _atomic_sums(atomics, ptrs) + _loop_sums(src, loops, ptrs) + _in_place_sums(loops, ptrs)
    unique = {(s.pointer, s.line, s.kind): s for s in found}
    return tuple(sorted(unique.values(), key=lambda s: (s.line, s.pointer)))


def terms_at(s: LongSum, grid: tuple[int, ...] | None, block: tuple[int, ...] | None,
             values: dict[str, int]) -> int | None:
    """The number of terms one element of ``s`` receives at a launch, when the sizes are known, else ``None``.

    Args:
        s: the long sum.
        grid, block: the launch's grid and block components (``(blocks_x, blocks_y, ...)``), ``None`` when unknown.
        values: the integer values of the kernel's names (``{"K": 4096}``) for a loop's trip count.

    An atomic receives one term per thread of the blocks that share its address (:attr:`LongSum.shared_dims`: the
    whole grid for ``atomicAdd(loss, v)``, the blocks along x of one row for ``out + blockIdx.y``; an upper bound
    when a guard skips threads past the data); a loop's sum, its trip count.
    """
    if s.kind == "loop":
        if s.terms is None:
            return None
        v = s.terms.subs({sym: values[sym.name] for sym in s.terms.free_symbols if sym.name in values})
        return int(v) if getattr(v, "is_Integer", False) else None
    if grid is None or block is None:
        return None
    if s.shared_dims is None:
        return None
    blocks = _product(tuple(g for d, g in zip("xyz", grid, strict=False) if d in s.shared_dims))
    return _product(block) * blocks


def _product(xs: tuple[int, ...]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
