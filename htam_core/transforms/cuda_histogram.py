"""Shared-memory privatization of a global-atomic histogram (``cuda.smem_histogram``).

``atomicAdd(&hist[data[i]], 1)`` in a grid-stride or guarded loop sends every element to a global atomic on one of a
few contended bins. The rewrite gives each block a private histogram in shared memory: zeroed cooperatively, a
``__syncthreads()``, the kernel's own atomic now on the shared bins, a ``__syncthreads()``, then one global
``atomicAdd`` per nonzero bin per block. The bin count is the update's index extent from the analysis layer
(:class:`~htam_core.source.analysis.facts.AtomicUpdate`: the index reduced modulo a constant or a parameter, or a
byte, else the element count of the buffer every launch in the file passes, from its allocation, in which case an
index at or above the count still updates the global buffer): a compile-time count (literal, ``#define``, template parameter, kept as written) gives a static array, a
parameter count dynamic shared memory sized at every launch. A parameter count whose launches cannot be edited
(the kernel is launched from another file) gets the launch-independent form: a static array of :data:`CAP` bins,
used when the count fits (a block-uniform test at run time), the global atomics as before otherwise. An early
bounds check that holds every ``return`` of the kernel (``if (i >= n) return;``, 1-D or 2-D) becomes the guarded
body it stands for, so every thread reaches the barriers. Refused: an unknown or too large bin count, any other
``return`` (a thread would skip a barrier), other uses of the histogram pointer, an atomic whose old value is used.

The step makes the textbook privatized histogram whole (:func:`grid_edits`): each block pays the zeroing and the
flush of all its bins whatever its share of the elements, so where the launches in the file can be edited, a
guarded one-element body also becomes a grid-stride loop and every launch whose grid is not a small constant is
capped at :data:`PER_SM` blocks per SM (a kernel already written as a grid-stride loop only gets the cap). Without
an editable launch the privatization is made alone; with a 2-D grid (or another shape the grid-stride loop does not
take) too, and the description says why the grid is kept. Integer bins count exactly; float bins add the same terms in another order (``reorders_only``).

Idea sources: the CUDA samples' ``histogram`` example (per-block sub-histograms merged at the end); Kirk and Hwu,
"Programming Massively Parallel Processors", "Parallel histogram computation" (privatization); NVIDIA developer
blog, "GPU Pro Tip: Fast Histograms Using Shared Atomics on Maxwell" (Kulikov, 2015).
"""

from __future__ import annotations

import dataclasses

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.facts import AtomicUpdate
from htam_core.source.analysis.guards import BoundsGuard, bounds_guard
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    block_thread,
    include_insert_point,
    param_names,
    smem_edit,
    statement_list,
    wrap_grid,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS, SM_GRID_HELPER, SM_GRID_TEXT
from htam_core.transforms.cuda_loops import grid_stride_body_edits
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

#: Bytes per bin of the element types a shared-memory ``atomicAdd`` takes.
BIN_BYTES = {"int": 4, "unsigned int": 4, "unsigned": 4, "float": 4, "unsigned long long": 8,
             "unsigned long long int": 8, "double": 8}
#: Bin types whose sums are exact in any order (the others, float and double, are sums reordered by the step).
EXACT_BINS = frozenset({"int", "unsigned int", "unsigned", "unsigned long long", "unsigned long long int"})
#: Static shared memory a block may declare (bytes).
SMEM_LIMIT = 48 * 1024
NAME = "htam_hist"
#: Bins of the launch-independent form: a parameter bin count whose launches cannot be given dynamic shared memory
#: (none in the file) is privatized in a static array of this many bins when the count fits, at run time.
CAP = 1024
#: Blocks per SM of the capped grid the step writes (a few resident blocks per SM hide the atomics' latency).
PER_SM = 8
#: A constant grid of at most this many blocks is already a few blocks per SM (8 per SM of a 128-SM GPU): its
#: launches are left as written.
SMALL_GRID = 1024


def _bin_type(unit: CudaUnit, u: AtomicUpdate) -> str | None:
    """The histogram's element type without qualifiers (``"unsigned int"``; an alias such as ``uint`` resolved by the
    analysis layer, :attr:`PointerFacts.value_type`), when a shared atomicAdd takes it."""
    pf = unit.facts.pointer(u.pointer)
    written = (pf.value_type or pf.element_type or "") if pf else ""
    t = " ".join(w for w in written.split() if w not in ("const", "volatile"))
    return t if t in BIN_BYTES else None


def _refusal(unit: CudaUnit) -> str | tuple[AtomicUpdate, ...]:
    """The histogram updates to privatize (one or more ``atomicAdd`` on one pointer with one bin count: the
    vectorized form htam writes has a vector path and a scalar tail), or why there are none that can be."""
    facts = unit.facts
    ups = facts.histogram_updates()
    if not ups:
        return "no global atomicAdd whose index depends on loaded data (not a histogram)"
    if len({u.pointer for u in ups}) > 1:
        return f"data-indexed atomicAdd updates of {len({u.pointer for u in ups})} arrays; one histogram is handled"
    for u in ups:
        why = _update_refusal(unit, u)
        if why is not None:
            return why
    if len({(u.extent, u.extent_param, u.extent_text) for u in ups}) > 1:
        return (f"the {len(ups)} updates of {ups[0].pointer} have different bin counts "
                f"({', '.join(sorted({str(u.extent_text) for u in ups}))})")
    others = [a for a in facts.accesses if a.pointer == ups[0].pointer
              and not any(u.call_span[0] <= a.span[0] < u.call_span[1] for u in ups)]
    if others:
        return f"{ups[0].pointer} is also accessed on line {others[0].line}, outside the atomicAdd"
    if facts.returns and not isinstance(_early_exit(unit), BoundsGuard):
        return (f"the kernel returns on line {facts.returns[0]}, other than in one early bounds check (`if (i >= n) "
                "return;`) that the step can turn into a guarded body; every thread must reach the barriers around "
                "the private histogram")
    if NAME.encode() in unit.src:
        return f"{NAME} is already declared"
    return ups


def _early_exit(unit: CudaUnit) -> BoundsGuard | None:
    """The kernel body's early bounds check (``if (i >= n) return;``, ``if (x >= w || y >= h) return;``: the
    analysis layer's :func:`~htam_core.source.analysis.guards.bounds_guard` in its ``"return"`` form, the first
    ``if`` of the body) when it holds every ``return`` of the kernel (:attr:`KernelFacts.returns`), else ``None``.
    Its body then runs exactly under ``if (<positive condition>) { ... }``, which every thread passes through, so
    the barriers around the private histogram can go before and after it."""
    stmts = statement_list(unit.body)
    k = next((j for j, st in enumerate(stmts) if syn.is_if(st)), None)
    if k is None:
        return None
    g = bounds_guard(stmts[k], stmts[k + 1:], unit.src)
    if not isinstance(g, BoundsGuard) or g.form != "return":
        return None
    first = unit.line(g.stmt)
    last = first + unit.src[g.stmt.start_byte:g.stmt.end_byte].count(b"\n")
    return g if all(first <= r <= last for r in unit.facts.returns) else None


def _guard_edits(unit: CudaUnit, g: BoundsGuard) -> list[TextEdit]:
    """The early return ``g`` written as the guarded body it stands for: ``if (i >= n) return; A; B;`` becomes
    ``if (!(i >= n)) { A; B; }`` (two edits at the guard and after the body's last statement, so the update's own
    edit inside the body does not overlap them)."""
    cond = g.stmt.child_by_field_name("condition")
    ind = syn.indent_of(unit.src, g.stmt.start_byte)
    return [unit.edit(g.stmt.start_byte, g.stmt.end_byte,
                      f"if (!{unit.t(cond)}) {{  // the early return as a guarded body: every thread reaches the "
                      "barriers"),
            unit.edit(g.body[-1].end_byte, g.body[-1].end_byte, f"\n{ind}}}")]


def _update_refusal(unit: CudaUnit, u: AtomicUpdate) -> str | None:
    """Why the one update ``u`` cannot count into shared bins, or ``None``."""
    if u.base_span is None:
        return (f"the update on line {u.line} does not address one element of {u.pointer} (`&{u.pointer}[index]` "
                f"or `{u.pointer} + index`)")
    if u.statement is None:
        return f"the old value returned by the atomicAdd on line {u.line} is used"
    if _bin_type(unit, u) is None:
        pf = unit.facts.pointer(u.pointer)
        return f"the bins are of type {pf.element_type if pf else '?'}, which a shared-memory atomicAdd does not take"
    if u.extent is None and u.extent_param is None:
        return (f"the bin count is unknown: the index `{u.index_text}` is not checked against a bound nor reduced "
                "modulo a constant or a parameter, not a byte, and no launch in this file passes a buffer of a "
                f"compile-time size as {u.pointer}")
    return None


def _update_edit(unit: CudaUnit, u: AtomicUpdate, *, capped: bool) -> TextEdit:
    """The kernel's update moved to the shared bins: in place for an index the kernel bounds; under
    ``htam_private`` in the capped form; and for a count only the launches give (:attr:`AtomicUpdate.extent_from`
    ``"launch"``), the index read once into ``htam_k`` and sent to the shared bins when below the count, to the
    global buffer as before otherwise (no update is dropped)."""
    if not capped and u.extent_from == "index":
        return unit.replace_span(u.base_span, NAME)  # type: ignore[arg-type]
    st0, st1 = u.statement  # type: ignore[misc]
    text = unit.src[st0 - unit.base:st1 - unit.base].decode()
    shared = _respell(text, st0, {u.base_span: NAME})  # type: ignore[dict-item]
    if capped:  # the update picks the shared bins where they hold the count, the global ones otherwise
        return unit.replace_span((st0, st1), f"if (htam_private) {shared} else {text}")
    i0, i1 = u.index_span  # type: ignore[misc]
    ind = syn.indent_of(unit.src, st0 - unit.base)
    return unit.replace_span((st0, st1), "\n".join([
        f"{{  // the launches pass {u.extent_text} bins: an index below that counts in this block's bins",
        f"{ind}    const auto htam_k = {unit.src[i0 - unit.base:i1 - unit.base].decode()};",
        f"{ind}    if ((unsigned long long)htam_k < (unsigned long long)({u.extent_text})) "
        f"{_respell(text, st0, {u.base_span: NAME, u.index_span: 'htam_k'})}",  # type: ignore[dict-item]
        f"{ind}    else {_respell(text, st0, {u.index_span: 'htam_k'})}  "  # type: ignore[dict-item]
        f"// any other index updates {u.pointer} as before",
        f"{ind}}}"]))


def _large_grid(unit: CudaUnit, la: Launch) -> bool:
    """The launch's grid is not a compile-time constant of at most :data:`SMALL_GRID` blocks (one the cap would
    leave as written on most devices)."""
    c = unit.resolve(la.grid, la.host)  # type: ignore[arg-type]
    return c is None or c.value > SMALL_GRID


def grid_edits(unit: CudaUnit) -> list[TextEdit] | str:
    """The edits that let each privatized block count many elements, or why the grid is kept (one line).

    A privatized block zeroes and flushes all its bins whatever its share of the elements: under a grid that covers
    ``n`` with one element per thread that fixed cost is paid ``n / blockDim`` times and dominates a small
    per-thread body. The kernel's guarded one-element body becomes a grid-stride loop
    (:func:`~htam_core.transforms.cuda_loops.grid_stride_body_edits`; a kernel whose coverage along x is already
    decided by grid-stride loops alone, :meth:`KernelFacts.covers_any_launch`, keeps its loops) and every launch
    whose grid is not a compile-time constant is capped at :data:`PER_SM` blocks per SM (``htam_sm_grid``, read on
    the device at run time). Counts stay exact: each element is still counted once, in whichever block takes it.

    Idea source: NVIDIA developer blog, "GPU Pro Tip: Fast Histograms Using Shared Atomics on Maxwell" (a grid-stride
    privatized histogram over a fixed grid); "CUDA Pro Tip: Write Flexible Kernels with Grid-Stride Loops".
    """
    if not unit.launches_editable:
        return f"{unit.kernel.name} has no launch in this file whose grid a step may change"
    launches = [la for la in unit.launches if la.grid is not None and _large_grid(unit, la)]
    if not launches:
        return f"every launch passes a constant grid of at most {SMALL_GRID} blocks, already a few per SM"
    body: list[TextEdit] | str = []
    if not unit.facts.grid_stride_loops:
        body = grid_stride_body_edits(unit)
    elif not unit.facts.covers_any_launch("x"):
        return "the kernel's grid-stride loops do not alone decide what each thread covers along x"
    caps = [wrap_grid(unit, la, f"{SM_GRID_HELPER}({{}}, {PER_SM})") for la in launches]
    bad = body if isinstance(body, str) else next((c for c in caps if isinstance(c, str)), None)
    if isinstance(bad, str):
        return bad
    helper = [] if SM_GRID_HELPER.encode() in unit.src else [unit.insert(include_insert_point(unit), SM_GRID_TEXT)]
    return helper + body + [c for c in caps if not isinstance(c, str)]  # type: ignore[operator]


def _description(kernel: str, ups: tuple[AtomicUpdate, ...], kind: str, bins: str, cap_why: str | None,
                 grid: list[TextEdit] | str) -> str:
    """The candidate's one-paragraph description: the privatization, where the bin count comes from, the
    launch-independent form's cap, and the grid-stride loop with the capped grid (or why the grid is kept)."""
    ptr = ups[0].pointer
    desc = (f"privatize {ptr} in {kernel}: each block counts into a {kind} shared-memory histogram of "
            f"{bins} bins, then adds each nonzero bin to {ptr} with one atomicAdd")
    if isinstance(grid, list):
        desc = (f"{desc}; the elements are taken in a grid-stride loop over a grid capped at {PER_SM} blocks per SM, "
                "so each block's zeroing and flush of its bins is paid a few times per SM, not once per "
                "blockDim elements")
    elif grid != f"{kernel} has no launch in this file whose grid a step may change":
        desc += f" (the grid is kept as launched: {grid})"
    if any(x.extent_from == "launch" for x in ups):
        desc += (f" ({bins} is the size of the buffer the launches pass as {ptr}; the kernel does not check "
                 f"the index, so an index outside it updates {ptr} in global memory as before)")
    if cap_why is not None:
        desc += (f" (launch-independent form, {cap_why}: a static array of {CAP} bins, used when {bins} <= {CAP}; "
                 "larger counts keep the global atomics)")
    return desc


def _respell(text: str, start: int, reps: dict[tuple[int, int], str]) -> str:
    """``text`` (the file bytes from ``start``) with each file span of ``reps`` replaced by its text, in any order
    (the base may follow the index: ``k + bins``)."""
    raw = text.encode()
    for (a, b), rep in sorted(reps.items(), reverse=True):
        raw = raw[:a - start] + rep.encode() + raw[b - start:]
    return raw.decode()


@register
class CudaSmemHistogram(CudaTransform):
    """A global-atomic histogram -> a per-block shared-memory histogram merged with one atomic per bin."""

    id = "cuda.smem_histogram"
    languages = CUDA_LANGS
    summary = "privatize a global-atomic histogram in shared memory (one global atomicAdd per bin per block)"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate: the privatized kernel (static shared bins for a compile-time count; dynamic shared bins
        with the launches' shared-memory size for a parameter count)."""
        ups = _refusal(unit)
        if isinstance(ups, str):
            return self.not_applicable(ups)
        u = ups[0]
        btype = _bin_type(unit, u)
        assert btype is not None
        edits: list[TextEdit] = []
        cap_why: str | None = None  # why the launches could not size dynamic shared memory (capped form)
        if u.extent is not None:
            size = u.extent * BIN_BYTES[btype]
            if size > SMEM_LIMIT:
                return self.not_applicable(f"{u.extent} bins of {btype} take {size} bytes; a block has "
                                           f"{SMEM_LIMIT} bytes of static shared memory")
            decl = f"__shared__ {btype} {NAME}[{u.extent_text}];  // this block's private histogram"
            bins = u.extent_text
        else:
            launch = self._launch_edits(unit, u, btype)
            bins = u.extent_param
            if isinstance(launch, str):
                cap_why = launch
                decl = (f"__shared__ {btype} {NAME}[{CAP}];  // this block's private histogram, "
                        f"used when {bins} <= {CAP}")
            else:
                edits += launch
                decl = f"extern __shared__ {btype} {NAME}[];  // this block's private histogram ({bins} bins)"
        t0, nt = block_thread(unit)
        loop = f"for (int htam_b = {t0}; htam_b < {bins}; htam_b += {nt})"
        stmts = [s for s in unit.body.named_children if not syn.is_comment(s)]
        ind = syn.indent_of(unit.src, stmts[0].start_byte) if stmts else "    "
        when = "" if cap_why is None else "if (htam_private) "
        head = [decl, f"{when}{loop} {NAME}[htam_b] = 0;", "__syncthreads();"]
        if cap_why is not None:
            head.insert(1, f"const bool htam_private = {bins} <= {CAP};  // else the global atomics as before")
        tail = ["__syncthreads();  // the block's counts are complete: one global atomicAdd per nonzero bin",
                f"{when}{loop}", f"    if ({NAME}[htam_b] != 0) atomicAdd(&{u.pointer}[htam_b], {NAME}[htam_b]);"]
        open_ = unit.body.start_byte + 1
        edits.append(unit.insert(open_, "".join(f"\n{ind}{ln}" for ln in head)))
        edits += [_update_edit(unit, x, capped=cap_why is not None) for x in ups]
        close = unit.body.end_byte - 1
        if syn.only_space_before(unit.src, close):
            start = syn.line_start(unit.src, close)
            edits.append(unit.insert(start, "".join(f"{ind}{ln}\n" for ln in tail)))
        else:
            edits.append(unit.insert(close, "".join(f"\n{ind}{ln}" for ln in tail) + "\n"))
        early = _early_exit(unit) if unit.facts.returns else None
        grid = grid_edits(unit) if early is None else (
            "the early return became a guarded body, and the grid-stride loop with a capped grid is left out")
        edits += grid if isinstance(grid, list) else _guard_edits(unit, early) if early is not None else []
        edits.sort(key=lambda e: e.start_byte)
        kind = "static" if u.extent is not None else "dynamic" if cap_why is None else "capped"
        params = {"bins": u.extent if u.extent is not None else u.extent_param, "shared": kind, "type": btype,
                  "blocks_per_sm": PER_SM if isinstance(grid, list) else None}
        c = self.candidate(model, _description(kernel.name, ups, kind, str(bins), cap_why, grid), params, edits)
        c.changes_numerics = c.reorders_only = btype not in EXACT_BINS  # float bins: the adds' order changes
        return [dataclasses.replace(c, helpers={SM_GRID_HELPER: SM_GRID_TEXT}) if isinstance(grid, list) else c]

    def _launch_edits(self, unit: CudaUnit, u: AtomicUpdate, btype: str) -> list[TextEdit] | str:
        """Per launch, the dynamic shared-memory size ``(bins) * sizeof(T)`` from the bin-count argument, or why
        it cannot be added."""
        if not unit.launches:
            return f"{unit.kernel.name} has no launch in this file; the dynamic shared memory cannot be sized"
        if any(s.startswith("extern") and "__shared__" in s for s in
               (unit.t(d) for d in syn.declarations(unit.body))):
            return "the kernel already declares dynamic shared memory"
        idx = param_names(unit).index(u.extent_param)  # type: ignore[arg-type]
        out = []
        for la in unit.launches:
            if la.block is None or idx >= len(la.site.args):
                return f"the launch on line {la.site.line} has no block or too few arguments"
            arg = la.site.args[idx].strip()
            if any(tok in arg for tok in ("(", "=", "++", "--")):
                return f"the bin-count argument {arg} on line {la.site.line} calls or assigns; it would be evaluated twice"
            edit = smem_edit(unit, la, f"({arg}) * sizeof({btype})")
            if isinstance(edit, str):
                return edit
            out.append(edit)
        return out
