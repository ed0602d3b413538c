"""One atomic per block instead of one per thread: privatize an accumulation into a uniform address
(``cuda.privatize_atomic``).

``atomicAdd(result, x[i])`` in every thread sends the whole grid's values to one address, where the atomics
serialize. The rewrite keeps the kernel's code and gives each thread a register accumulator: the update becomes
``htam_acc += static_cast<T>(value)`` (the contribution's expression exactly as written, converted as the atomic
converts it), so a guard, a ternary contribution, a grid-stride loop or several updates per thread all keep their
meaning, and a thread that never reaches the update contributes the identity (0 for a sum, the type's lowest value
for a max, its highest for a min). At the end of the body the block combines the registers: warp shuffles, one
value per warp in a ``__shared__`` array of 32 (a block has at most 1024 threads), the first warp combines those,
and one thread issues the kernel's own atomic, to the same address, once per block.

The combine is block-size generic: it reads ``blockDim`` at run time and handles a last, partial warp (each
shuffle's mask names the warp's threads that exist, and a value from past them is not combined), so it is correct
for any block of up to 1024 threads, 1-D or (read as the linear rank) 3-D, whatever the launch; the launches' block
size, when the analysis knows it, is only reported. A body with an early ``return`` runs inside a lambda called in
place (``[&] { ...body... }();``): its ``return`` then ends the thread's contributions but not the thread, which
still reaches the block's barrier.

Facts come from the analysis layer (:class:`~htam_core.source.analysis.facts.UniformAtomic`: the address is the same
in every thread of a block, read by the uniformity analysis; a per-block accumulation such as
``atomicAdd(&acc[blockIdx.y], v)`` is one too). Refused: no such atomic, two different ones, other accesses of the
accumulated pointer, an address that reads a local a later statement changes (or any local when the body needs the
lambda), a sum of a 16-bit float or vector type, a max or min whose element type is not one known integer type
(a template type, a float).

Numerics: a float or double sum adds the same terms in another order (``reorders_only``; the atomics' order was
not fixed either); integer sums, max and min are exact.

Idea sources: the CUDA samples' ``reduction`` example and Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA,
2007); NVIDIA developer blog, "Faster Parallel Reductions on Kepler" (Luitjens, 2014: warp shuffles, then one
atomic per block); Kirk and Hwu, "Programming Massively Parallel Processors", "Reduction" (privatization).
"""

from __future__ import annotations

import math
import re

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.facts import Access, UniformAtomic
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, block_thread
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import compose_after, register
from htam_core.types.profile import Profile

#: The step that makes an elementwise body a grid-stride loop over a device-sized grid
#: (:mod:`htam_core.transforms.cuda_loops`).
GRID_STRIDE = "cuda.grid_stride"
ACC = "htam_acc"
PART = "htam_part"
#: Element types a register sum and a warp shuffle take (``atomicAdd``'s 32- and 64-bit overloads).
ADD_TYPES = frozenset({*"float double int unsigned".split(), "unsigned int", "unsigned long long",
                       "unsigned long long int"})
#: The identity of ``atomicMax`` / ``atomicMin`` per integer type (the type's lowest / highest value).
MINMAX_IDENTITY: dict[str, tuple[str, str]] = {
    "int": ("(-2147483647 - 1)", "2147483647"),
    "unsigned int": ("0u", "0xffffffffu"), "unsigned": ("0u", "0xffffffffu"),
    "long long": ("(-9223372036854775807LL - 1)", "9223372036854775807LL"),
    "long long int": ("(-9223372036854775807LL - 1)", "9223372036854775807LL"),
    "unsigned long long": ("0ull", "0xffffffffffffffffull"),
    "unsigned long long int": ("0ull", "0xffffffffffffffffull"),
}
FLOATS = frozenset("float double".split())
#: Element types whose sum is not privatized: 16-bit floats (``__half``, ``at::Half``, ``__nv_bfloat16``: a warp
#: shuffle of ATen's types does not exist, and a 16-bit register sum rounds differently) and vector types.
NO_SUM = re.compile(r"half|bfloat16|[a-z][234]$", re.IGNORECASE)


def _groups(unit: CudaUnit) -> list[list[UniformAtomic]]:
    """The uniform atomics grouped by (function, pointer, address as written), in source order."""
    out: dict[tuple[str, str, str], list[UniformAtomic]] = {}
    for a in unit.facts.uniform_atomics:
        out.setdefault((a.update.fn, a.update.pointer, a.address_text), []).append(a)
    return list(out.values())


def _types(unit: CudaUnit, a: UniformAtomic) -> tuple[str, ...]:
    """The concrete element types the accumulation runs with, each resolved through the unit's ``typedef``/``using``
    aliases (the analysis layer's type facts, :attr:`CudaUnit.types`: ``u64`` -> ``unsigned long long``): a
    template parameter's instantiations in the file (``()`` when it has none), else the element's resolved type."""
    inst = dict(unit.facts.type_instantiations)
    if a.element_type in inst:
        return tuple(unit.types.resolve(t) for t in inst[a.element_type])
    return (unit.types.resolve(a.value_type or a.element_type),)


def identity(unit: CudaUnit, a: UniformAtomic) -> str | None:
    """The identity of the accumulation as CUDA text (``"0"`` for a sum, converted to the element type when that is a
    template parameter, an alias or a macro; a max's lowest / a min's highest value of the integer type), or
    ``None`` for a sum of a 16-bit float or vector type (:data:`NO_SUM`: no register sum and shuffle of it here) or
    a max or min of a type that is not one integer type known here."""
    types = _types(unit, a)
    if a.op == "add" and any(NO_SUM.search(t) for t in types):
        return None
    if a.op == "add":  # a type read through a template parameter, an alias or a macro: converted from 0
        return "0" if unit.types.resolve(a.element_type) in ADD_TYPES else f"static_cast<{a.element_type}>(0)"
    if len(types) != 1 or types[0] not in MINMAX_IDENTITY:
        return None
    # a template parameter counts only where every launch binds it to that one type (its resolved value type)
    if unit.types.is_template(a.element_type) and unit.types.resolve(a.value_type) != types[0]:
        return None
    return MINMAX_IDENTITY[types[0]][0 if a.op == "max" else 1]


def _refusal(unit: CudaUnit) -> str | list[UniformAtomic]:
    """The updates to privatize (one address, one atomic function), or why there are none that can be."""
    facts = unit.facts
    groups = _groups(unit)
    if not groups:
        some = facts.atomics or any(c.startswith("atomic") for c, _ in facts.collectives)
        return ("no atomic update into one address shared by a block's threads" if some else
                "no atomic update") + " (atomicAdd/atomicMax/atomicMin on a thread-uniform global address)"
    if len(groups) > 1:
        return (f"{len(groups)} accumulations into uniform addresses ("
                + ", ".join(f"{g[0].update.fn}({g[0].address_text}, ...)" for g in groups) + "); one is privatized")
    ups = groups[0]
    first = ups[0]
    calls = {a.update.call_span for a in ups}
    others = [x for x in facts.atomics if x.pointer == first.update.pointer and x.call_span not in calls]
    if others:
        return f"{first.update.pointer} is also updated by the {others[0].fn} on line {others[0].line}"

    def address(x: Access) -> bool:  # the access is an update's address (in its call, not in its value)
        return any(a.update.call_span[0] <= x.span[0] and x.span[1] <= a.update.call_span[1]
                   and not (a.value_span[0] <= x.span[0] and x.span[1] <= a.value_span[1]) for a in ups)

    outside = [x for x in facts.accesses if x.pointer == first.update.pointer and not address(x)]
    if outside:
        return f"{first.update.pointer} is also accessed on line {outside[0].line}, outside the atomic"
    if facts.returns and first.address_locals:
        return (f"the address `{first.address_text}` reads {', '.join(first.address_locals)}, and the kernel "
                f"returns early on line {facts.returns[0]}: the block's combine at the end cannot read it")
    if not first.stable:
        return (f"the address `{first.address_text}` reads {', '.join(first.address_locals)}, which is not declared "
                "once at the body's top level and never changed: the end of the body cannot read it again")
    if identity(unit, first) is None:
        types = ", ".join(_types(unit, first))
        return (f"a per-thread {first.op} of {first.element_type} ({types}) is not privatized here (sums of float, "
                "double and integers; max and min of int, unsigned and 64-bit integers)")
    if ACC.encode() in unit.src or PART.encode() in unit.src:
        return f"{ACC} or {PART} is already declared"
    return ups


def _combine(op: str, acc: str, value: str, when: str = "") -> str:
    """C text that folds ``value`` (a name) into ``acc`` (only when the C condition ``when`` holds, if given)."""
    if op == "add":
        return f"if ({when}) {acc} += {value};" if when else f"{acc} += {value};"
    better = f"{value} {'>' if op == 'max' else '<'} {acc}"
    return f"if ({when + ' && ' if when else ''}{better}) {acc} = {value};"


def _update(a: UniformAtomic, value: str) -> str:
    """The statement that replaces the atomic: the contribution converted as the atomic converts it, folded into
    the thread's register."""
    cast = f"static_cast<{a.element_type}>({value})"
    if a.op == "add":
        return f"{ACC} += {cast};"
    return f"{{ const {a.element_type} htam_v = {cast}; {_combine(a.op, ACC, 'htam_v')} }}"


def _shuffles(a: UniformAtomic) -> list[str]:
    """A warp's combine of ``htam_acc`` with shuffles down; a lane past the warp's threads is not combined."""
    return [
        "for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {",
        f"    const {a.element_type} htam_y = __shfl_down_sync(htam_mask, {ACC}, htam_o);",
        f"    {_combine(a.op, ACC, 'htam_y', 'htam_lane + htam_o < htam_width')}",
        "}",
    ]


def block_combine(unit: CudaUnit, a: UniformAtomic, ident: str) -> list[str]:
    """The lines (unindented) that combine every thread's ``htam_acc`` in the block and issue one atomic: warp
    shuffles, one value per warp in shared memory, the first warp's shuffles, thread 0's atomic."""
    t, nt = block_thread(unit)
    return [
        f"{{  // one {a.update.fn} per block: the threads' values combined in the block first",
        f"    __shared__ {a.element_type} {PART}[32];  // one value per warp (a block has at most 32 warps)",
        f"    const unsigned htam_t = {t}, htam_nt = {nt};",
        "    const unsigned htam_lane = htam_t % 32u, htam_warp = htam_t / 32u;",
        "    const unsigned htam_left = htam_nt - htam_warp * 32u;",
        "    const unsigned htam_width = htam_left < 32u ? htam_left : 32u;  // this warp's threads (the last may be "
        "partial)",
        "    const unsigned htam_mask = htam_width == 32u ? 0xffffffffu : (1u << htam_width) - 1u;",
        *(f"    {ln}" for ln in _shuffles(a)),
        f"    if (htam_lane == 0) {PART}[htam_warp] = {ACC};",
        "    __syncthreads();",
        "    if (htam_warp == 0) {",
        f"        {ACC} = htam_lane < (htam_nt + 31u) / 32u ? {PART}[htam_lane] : {ident};",
        *(f"        {ln}" for ln in _shuffles(a)),
        f"        if (htam_lane == 0) {a.update.fn}({a.address_text}, {ACC});",
        "    }",
        "}",
    ]


def _launch_threads(unit: CudaUnit) -> list[int]:
    """The threads per block of the kernel's launches in the file whose block is constant, sorted."""
    return sorted({math.prod(d.value for d in la.block) for la in unit.facts.launches  # type: ignore[misc]
                   if la.block and all(d.value for d in la.block)})


def _indent_body(unit: CudaUnit) -> list[TextEdit]:
    """Four spaces at the start of every non-blank line inside the body's braces (the code the lambda holds); the
    lines of the ``{`` and the ``}`` are left as they are."""
    src = unit.src
    out = []
    pos = src.find(b"\n", unit.body.start_byte) + 1
    end = syn.line_start(src, unit.body.end_byte - 1)
    while 0 < pos < end:
        nxt = src.find(b"\n", pos)
        if src[pos:nxt].strip():
            out.append(unit.insert(pos, "    "))
        pos = nxt + 1
    return out


@register
class CudaPrivatizeAtomic(CudaTransform):
    """Every thread's atomic into one address -> a register per thread, a block combine, one atomic per block."""

    id = "cuda.privatize_atomic"
    languages = CUDA_LANGS
    summary = ("privatize an atomic into one address: a register per thread, a warp-shuffle block combine, one "
               "atomic per block")
    changes_numerics = True
    reorders_only = True

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate: the updates folded into a register, the block's combine and one atomic at the body's end
        (inside-a-lambda form when the body returns early)."""
        ups = _refusal(unit)
        if isinstance(ups, str):
            return self.not_applicable(ups)
        a = ups[0]
        ident = identity(unit, a)
        assert ident is not None
        edits = [unit.replace_span(u.update.statement, _update(u, unit.t(unit.node_at(u.value_span))))  # type: ignore[arg-type]
                 for u in ups]
        edits += self._frame(unit, a, ident)
        edits.sort(key=lambda e: e.start_byte)
        cand = self.candidate(model, self._description(unit, kernel, a, len(ups)), self._params(unit, a), edits)
        cand.changes_numerics = cand.reorders_only = self._reorders(unit, a)
        return self._grid_stride_first(unit, model, kernel, profile) + [cand]

    def _grid_stride_first(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
                           ) -> list[Candidate]:
        """The coarsened form, first when it can be made: a one-element-per-thread body whose atomic is the kernel's
        only output into a grid-wide total (:meth:`~htam_core.source.analysis.KernelFacts.grid_total`: the total
        is the same for any grid) becomes a grid-stride loop over a grid capped at a multiple of the SM count
        (``cuda.grid_stride``, launches in this file), then privatized: each thread sums many elements in its
        register and the grid sends a few thousand atomics instead of one per block of the original grid. ``[]``
        when the body is not elementwise, the kernel already strides, the launch cannot be edited here, or the
        result is per block."""
        if not unit.facts.grid_total() or kernel.features.has_grid_stride_loop or not unit.launches_editable:
            return []
        composed = compose_after(GRID_STRIDE, self, model, kernel, profile)
        if isinstance(composed, NotApplicable):
            return []
        for c in composed:
            c.params = {**c.params, "form": "grid_stride"}
        return composed

    def _frame(self, unit: CudaUnit, a: UniformAtomic, ident: str) -> list[TextEdit]:
        """The accumulator's declaration after the body's ``{`` and the block's combine before its ``}`` (with the
        lambda around the body's code when it returns early)."""
        stmts = [s for s in unit.body.named_children if not syn.is_comment(s)]
        ind = syn.indent_of(unit.src, stmts[0].start_byte) if stmts else "    "
        lam = bool(unit.facts.returns)
        head = [f"{a.element_type} {ACC} = {ident};  // this thread's part of {a.address_text} (one "
                f"{a.update.fn} per block at the end)"]
        if lam:
            head.append("[&] {  // the kernel's code: its `return` ends this thread's part, not the thread")
        tail = ["}();"] if lam else []
        tail += block_combine(unit, a, ident)
        out = [unit.insert(unit.body.start_byte + 1, "".join(f"\n{ind}{ln}" for ln in head))]
        close = unit.body.end_byte - 1
        if syn.only_space_before(unit.src, close):
            out.append(unit.insert(syn.line_start(unit.src, close), "".join(f"{ind}{ln}\n" for ln in tail)))
        else:
            out.append(unit.insert(close, "".join(f"\n{ind}{ln}" for ln in tail) + "\n"))
        return out + (_indent_body(unit) if lam else [])

    def _params(self, unit: CudaUnit, a: UniformAtomic) -> dict[str, object]:
        """The candidate's parameters: operation, scope, type, the launches' threads per block (or ``"runtime"``)
        and the form (``"inline"``, or ``"in_lambda"`` for a body that returns early)."""
        return dict(op=a.op, scope=a.scope, type=a.element_type, block=_launch_threads(unit) or "runtime",
                    form="in_lambda" if unit.facts.returns else "inline")

    def _description(self, unit: CudaUnit, kernel: Kernel, a: UniformAtomic, n: int) -> str:
        """One sentence: what is privatized, the block-size generic combine, and the form."""
        known = _launch_threads(unit)
        block = f"; the launches use {', '.join(map(str, known))} threads" if known else ""
        per = "the grid" if a.scope == "grid" else "the block"
        desc = (f"one {a.update.fn} per block into {a.address_text} in {kernel.name} (block-size generic: any block "
                f"of up to 1024 threads, blockDim read at run time{block}): each thread folds its "
                f"{'contribution' if n == 1 else f'{n} updates'} into a register, the block combines them with warp "
                f"shuffles and one value per warp in shared memory, and one thread sends the block's result instead "
                f"of every thread of {per} contending for that address")
        if unit.facts.returns:
            desc += (f" (the body runs in a lambda so that its return on line {unit.facts.returns[0]} still "
                     "reaches the block's combine)")
        return desc + ("; float sums change order" if self._reorders(unit, a) else "")

    def _reorders(self, unit: CudaUnit, a: UniformAtomic) -> bool:
        """The combine changes the order of floating-point additions (a sum of float, double or an unknown
        template type)."""
        return a.op == "add" and any(t in FLOATS or t not in ADD_TYPES for t in _types(unit, a) or ("?",))
