"""One thread per element instead of one thread per row (``cuda.thread_per_element``): the coalescing remap
for a thread-per-row kernel whose row loop carries nothing from one element to the next.

A kernel ``i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { pre; for (c = 0; c < C; ++c) body(c) }``
in which neighbouring threads walk rows ``C`` elements apart (the analysis layer's row loop: an access with
stride 1 in ``c``, or ``S`` in a loop over groups of ``S`` consecutive elements such as a RoPE pair loop
``x[2 * p]``, ``x[2 * p + 1]`` (:meth:`KernelFacts.element_groups`: one thread per group then), and a
``threadIdx.x`` stride that is neither 0 nor 1) makes every load and store of the loop uncoalesced: the 32 lanes of a warp touch 32 different rows. When the loop body is independent per element
(no accumulator, no scalar carried across iterations, every store moves with ``c``), each element can get its
own thread::

    const long long htam_e = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // element index
    if (htam_e < (long long)(n) * (C)) {                                          // every element of the rows
        int i = (int)(htam_e / (C));                                              // its row
        pre;
        const int c = (int)(htam_e % (C));                                        // its column
        body(c)
    }

the canonical one-element-per-thread form (``if (idx < n)`` with ``n`` the product of the extents, each index
derived from ``idx`` by ``/`` and ``%``), which the per-lane steps read (the float4 step,
``cuda.vectorize_float4``, vectorizes it). The early-return guard (``if (i >= n) return;``) becomes the same
``if``; an ``auto`` row index keeps its type through an alias declared before the guard; the loop body keeps its
own braces where a name it declares is declared before it in ``pre``. Consecutive lanes now take consecutive ``c`` of one row, so the loop's stride-1 accesses are coalesced along
x. Every launch's 1-D grid is multiplied by ``C`` (the row length with the launch's arguments substituted for
the kernel's parameters); the block is unchanged. ``pre`` (index arithmetic, a gathered row id ``ix =
inp[i]``) runs once per element instead of once per row; its loads hit the cache.

Refused, each with its reason: no thread-per-row shape (``elementwise`` in :mod:`._cuda`), not exactly one
loop over ``[0, C)`` by 1 as the guarded block's last statement, a nested loop, a loop that accumulates or
assigns a variable declared outside it, a store inside the loop that does not move with ``c``, a store outside
the loop (it would run ``C`` times), a row length that is not built from kernel parameters and constants, a
row loop whose accesses are already coalesced along x, ``__syncthreads``/shared memory/warp-level calls, and
kernels without a launch in the file (the grid must follow).

Idea source: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory" (map consecutive threads to
consecutive addresses); the "one thread per output element" mapping of elementwise kernels.
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.facts import LoopFact
from htam_core.source.analysis.forms import Elementwise, elementwise, is_lvalue
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.running_sum import running_sum_refusal
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, Launch, param_names, wrap_grid
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import propose, register
from htam_core.types.profile import Profile

_COOPERATION = ("__syncthreads", "__syncwarp", "__shfl_sync", "__shfl_xor_sync", "__shfl_down_sync",
                "__shfl_up_sync", "__ballot_sync", "warpSize", "__shared__")


def _declared_names(scope: Node, unit: CudaUnit) -> set[str]:
    """Names declared by any declaration under ``scope`` (through pointer/array/reference declarators)."""
    out: set[str] = set()
    for decl in syn.declarations(scope):
        for d in decl.children_by_field_name("declarator"):
            n = d.child_by_field_name("declarator") if syn.is_init_declarator(d) else d
            while n is not None and not syn.is_identifier(n):
                n = n.child_by_field_name("declarator")
            if n is not None:
                out.add(unit.t(n))
    return out


def _bound_at(unit: CudaUnit, la: Launch, bound: Node, params: list[str]) -> str | None:
    """The row length ``bound`` as text at launch ``la``: each kernel parameter replaced by the launch's
    argument; ``None`` when the launch's arguments do not line up with the parameters."""
    vals = la.arguments
    if len(vals) != len(params):
        return None
    by_name = dict(zip(params, vals, strict=True))
    renames = [(n, f"({unit.t(by_name[unit.t(n)])})") for n in syn.identifiers(bound)
               if unit.t(n) in by_name]
    return syn.one_line(unit.src, bound, bound.start_byte, bound.end_byte, renames)


def _reindent(text: str, indent: str) -> str:
    """``text`` (lines of code, the first one's indentation already cut) with the common indentation of its
    other lines replaced by ``indent``; each line ends with a newline, blank lines are dropped at both ends."""
    lines = text.strip("\n").split("\n")
    rest = [ln for ln in lines[1:] if ln.strip()]
    cut = min((len(ln) - len(ln.lstrip()) for ln in rest), default=0)
    first = lines[0].strip()
    out = [first] if first else []
    out += [ln[cut:].rstrip() for ln in lines[1:]]
    return "".join(f"{indent}{ln}\n" if ln.strip() else "\n" for ln in out).rstrip("\n") + "\n"


def _guarded(unit: CudaUnit, ew: Elementwise, node: Node, var: str, n: str) -> str:
    """The one-element-per-thread guard that replaces the row guard ``ew.guard`` (``if (i < rows) { pre; for (c
    ...) body }`` or its early return): ``if (htam_e < (long long)(rows) * (n)) { i = htam_e / n; pre; c =
    htam_e % n; body }``, the canonical elementwise form (:func:`~htam_core.source.analysis.forms.elementwise`)
    that the per-lane steps (``cuda.vectorize_float4``) read. The bound is exact for the rows the threads had:
    ``htam_e / n < rows`` exactly when ``htam_e < rows * n`` for ``htam_e >= 0``, ``n > 0``; with ``n <= 0`` the
    row loop ran no iteration and no element passes (every launch's grid, multiplied by ``n``, is then empty).
    The loop's body is spliced into the guarded block, unless a name it declares is declared in ``pre`` (or is
    the loop variable's there): it then keeps its own braces."""
    src, ind = unit.src, syn.indent_of(unit.src, ew.guard.start_byte)
    inner = ind + "    "
    # an `auto` row index keeps its value's type through an alias declared before the guard (the guarded code of
    # the canonical form reads no thread or block index)
    itype = "htam_row_t" if ew.deduced_type else ew.type
    cast = "" if ew.deduced_type else f"({itype})"  # the alias converts implicitly (the analysis reads no cast)
    init = node.child_by_field_name("initializer")
    typ = unit.t(init.child_by_field_name("type")).replace("const", "").strip() if init is not None and \
        syn.is_declaration(init) else "long long"
    pre = ew.stmts[:-1]
    alias = f"using htam_row_t = decltype({' '.join(unit.t(ew.gid).split())});  // the row index's type\n{ind}"
    out = [alias if ew.deduced_type else "",
           f"if (htam_e < (long long)({unit.t(ew.bound)}) * ({n})) {{  // one thread per element of the rows\n",
           f"{inner}{itype} {ew.name} = {cast}(htam_e / ({n}));  // its row\n"]
    if pre:
        out.append(_reindent(src[pre[0].start_byte : node.start_byte].decode(), inner))
    body = node.child_by_field_name("body")
    text = unit.t(body)[1:-1] if syn.is_block(body) else unit.t(body)
    clash = _declared_names(body, unit) & (_pre_names(unit, pre) | {var, ew.name, "htam_e"}) or \
        var in _pre_names(unit, pre)
    col = f"const {typ} {var} = ({typ})(htam_e % ({n}));  // its place in the row\n"
    if clash:
        out.append(f"{inner}{{\n{inner}    {col}{_reindent(text, inner + '    ')}{inner}}}\n")
    else:
        out.append(f"{inner}{col}{_reindent(text, inner)}")
    return "".join(out) + f"{ind}}}"


#: The steps a refusal may point to, by what the row loop is: ``(transform id, strategy id, words)``, tried in order.
_ALTERNATIVES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "reduction": (("cuda.warp_per_row", "warp_per_row", "one warp per row"),
                  ("cuda.block_per_row", "block_per_row", "one block per row")),
    "running": (("cuda.row_scan", "row_scan", "one warp per row with a warp scan and a carry"),
                ("cuda.block_scan", "block_scan", "a block-wide scan")),
}


def _accumulating(unit: CudaUnit, fact: LoopFact, model: SourceModel | None, kernel: Kernel | None) -> str:
    """Why a row loop with accumulators is not dealt out one element per thread, saying what the loop is from the
    facts: a running value stored at each step (a prefix scan, :func:`~htam_core.source.analysis.running_sum.
    running_sum_refusal`) or a reduction; another step is named only when it is made on this kernel (so the advice
    never points to a step that is itself refused)."""
    running = running_sum_refusal(unit, fact.line)
    if running is not None:
        what, kind = running, "running"
    else:
        what = (f"the loop on line {fact.line} accumulates {', '.join(a.name for a in fact.accumulators)} across "
                "the row: a reduction")
        kind = "reduction"
    fits = ""
    if model is not None and kernel is not None:
        for tid, step, words in _ALTERNATIVES[kind]:
            if tid in what:  # the running-sum line already names the step (running_sum_refusal)
                break
            if not isinstance(propose(tid, model, kernel), NotApplicable):
                fits = f"; {words} fits ({step})"
                break
    return f"{what}{fits}"


def _pre_names(unit: CudaUnit, pre: list[Node]) -> set[str]:
    """The names the statements ``pre`` declare (at any depth)."""
    return set().union(*(_declared_names(s, unit) for s in pre)) if pre else set()


def match(unit: CudaUnit, model: SourceModel | None = None, kernel: Kernel | None = None
          ) -> tuple[Elementwise, Node, str, Node] | str:
    """``(shape, loop node, loop variable, row-length node)`` of a flattenable thread-per-row kernel, or why
    not (with ``model`` and ``kernel``, a refusal names another step only when it is made on this kernel)."""
    ew = elementwise(unit)
    if isinstance(ew, str):
        return f"not a thread-per-row kernel: {ew}"
    body_text = unit.t(unit.body)
    for b in unit.facts.barriers:
        return f"{unit.kernel.name} uses {b.text}; its threads cooperate, so their work cannot be re-dealt"
    for word in _COOPERATION:
        if word in body_text:
            return f"{unit.kernel.name} uses {word}; its threads cooperate, so their work cannot be re-dealt"
    loops = [s for s in ew.stmts if syn.is_loop(s) or syn.loops(s)]
    if len(loops) != 1 or not syn.is_for(loops[0]):
        return "the guarded code has no single top-level `for` loop over the row"
    node = loops[0]
    fact = unit.facts.loop_at(unit.file_byte(node))
    if fact is None or fact.var is None:
        return "the row loop is not a `for` over one variable"
    var = fact.var
    if fact.start != 0 or fact.step != 1 or fact.cmp != "<" or fact.update != "+":
        return f"the loop on line {fact.line} does not run {var} over [0, n) by 1"
    if unit.facts.children(fact):
        return f"the loop on line {fact.line} has a nested loop"
    if fact.accumulators:
        return _accumulating(unit, fact, model, kernel)
    if ew.stmts[-1] != node:
        return f"statements follow the row loop on line {fact.line}"
    if not unit.facts.is_row_loop(fact, groups=True):
        return (f"the loop on line {fact.line} is not an uncoalesced row loop: no access moves by 1 with {var} "
                "and by a row across threads")
    body = node.child_by_field_name("body")
    inside = _declared_names(body, unit)
    for n in syn.identifiers(body):
        if is_lvalue(n) and unit.t(n) not in inside:
            return f"the loop on line {fact.line} assigns {unit.t(n)}, which lives across iterations"
    jumps = syn.jumps(body)
    if jumps:
        return f"the loop on line {fact.line} has `{unit.t(jumps[0])}`"
    for a in unit.facts.global_accesses():
        in_loop = fact.id in a.loops
        if a.kind != "read" and not in_loop:
            return f"`{a.shown}` is written outside the row loop; it would be written once per element"
        if a.kind != "read" and a.stride(var) in (0, None):
            return f"the store `{a.shown}` does not move with {var}"
    cond = syn.unwrap_parens(node.child_by_field_name("condition"))
    bound = cond.child_by_field_name("right") if cond is not None and syn.is_binary(cond) else None
    if bound is None:
        return f"the loop on line {fact.line} has no readable bound"
    params = set(param_names(unit))
    local = _declared_names(unit.body, unit)
    for n in syn.identifiers(bound):
        name = unit.t(n)
        if name in local or (name not in params and unit.resolve(n) is None):
            return f"the row length `{unit.t(bound)}` uses {name}, which is not a kernel parameter or constant"
        if name in params and unit.assigned_in(unit.body, name):
            return f"the row length `{unit.t(bound)}` uses {name}, which the kernel changes"
    return ew, node, var, bound


@register
class CudaThreadPerElement(CudaTransform):
    """Give each element of a thread-per-row kernel's row loop its own thread (coalesced along x)."""

    id = "cuda.thread_per_element"
    languages = CUDA_LANGS
    summary = "one thread per element instead of per row: the row loop's index comes from the thread, grid x C"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate, or the reason the row loop cannot be dealt out one element per thread."""
        m = match(unit, model, kernel)
        if isinstance(m, str):
            return self.not_applicable(m)
        ew, node, var, bound = m
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; its grid must grow by the row length")
        params = param_names(unit)
        grid: list[TextEdit] = []
        for la in unit.launches:
            at = _bound_at(unit, la, bound, params)
            if at is None:
                return self.not_applicable(f"the launch on line {la.site.line} does not pass every parameter")
            e = wrap_grid(unit, la, "({}) * (" + at + ")")
            if isinstance(e, str):
                return self.not_applicable(e)
            grid.append(e)
        n = unit.t(bound)
        head = "const long long htam_e = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // one element per thread"
        last = ew.guard if ew.form == "if" else ew.stmts[-1]
        edits = [unit.replace(ew.decl, head), unit.edit(ew.guard.start_byte, last.end_byte,
                                                        _guarded(unit, ew, node, var, n)), *grid]
        return [
            self.candidate(
                model,
                f"give each element of {kernel.name}'s row loop its own thread ({var} from the thread index, "
                f"coalesced along x); every launch's grid grows by the row length {n}",
                {"loop_var": var, "row_length": n, "launches": len(unit.launches)},
                edits,
            )
        ]
